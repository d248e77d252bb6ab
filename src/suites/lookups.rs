//! The `lookups` suite (seed 001): one query reads B prefilled keys drawn uniformly, B in
//! 1, 10, 25, 50, 100, sent in draw order and sorted, on every store.

use anyhow::{anyhow, Result};
use clap::{ArgMatches, Args};

use super::scenario::{Operation, Position, Scenario};
use super::shared::{default_from_flags, Define, Reads, Run};
use super::users::{self, Point, UsersPlan};
use super::{sorted, CommonArgs};
use crate::report::{Document, Report};
use bench_types::limits::users::MAX_IDS_PER_CALL;

/// Keys per query (seed 001's batch sizes).
pub const LOOKUP_BATCHES: [u64; 5] = [1, 10, 25, 50, 100];

pub struct Lookups;

#[derive(Args)]
#[command(next_help_heading = "lookups")]
pub struct LookupsArgs {
    /// Keys per query, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = LOOKUP_BATCHES)]
    lookup_batches: Vec<u64>,
}

/// The lookups suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub users: users::Config,
    /// Keys per query.
    pub batches: Vec<u64>,
}

default_from_flags!(Lookups => Config);

impl Config {
    /// Per key order (draw order, then ascending), per store, every batch. Both orders read
    /// the same keys, so the difference is the order alone.
    pub fn matrix(&self) -> Vec<Scenario> {
        let lookups: Vec<Operation> = self
            .batches
            .iter()
            .map(|&keys| Operation::PointLookups { keys })
            .collect();
        let positions = [Position::Random, Position::Sorted];
        users::matrix(
            &positions,
            &self.users.stores,
            &lookups,
            &self.users.caches,
            &|_| true,
        )
    }
}

impl Define for Lookups {
    type Args = LookupsArgs;
    type Plan = Config;

    fn plan(args: LookupsArgs, common: &CommonArgs, _: &ArgMatches) -> Result<Config> {
        Ok(Config {
            users: users::Config::from_args(common, <Config as UsersPlan>::SUITE)?,
            batches: sorted(args.lookup_batches),
        })
    }

    const DOCUMENT: fn(&Report) -> Document = super::grid::document;
    const READS: Reads = Reads::Except(&[]);
}

impl UsersPlan for Config {
    const SUITE: &'static str = "lookups";

    fn validate(&self) -> Result<()> {
        if self.batches.is_empty() {
            return Err(anyhow!("--lookup-batches needs at least one batch size"));
        }
        // The keys travel as an id list.
        let max = MAX_IDS_PER_CALL.min(self.users.rows / 2);
        if let Some(b) = self.batches.iter().find(|&&b| b == 0 || b > max) {
            return Err(anyhow!(
                "lookup batch sizes must be between 1 and {max} (at most {MAX_IDS_PER_CALL} ids per call and half of --rows), got {b}"
            ));
        }
        Ok(())
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let note = "Lookups (seed 001): each cell is one query reading B prefilled keys drawn uniformly (get_users_{heap,btree,sqlite}_ids). \"random\" sends them in draw order, \"sorted\" sends the same keys in ascending order; the per-key figure is the cell divided by B.";
        users::run_points(run, &self.users, &self.points(), &[note.to_string()], None)
    }

    fn points(&self) -> Vec<Point> {
        self.matrix().into_iter().map(Point::of).collect()
    }

    fn users(&self) -> &users::Config {
        &self.users
    }
}
