//! The `cache` suite: how a SQLite message's cost moves with the state of SQLite's page
//! cache, the sweep behind what the users suites call warm (docs/suites.md). Per SQLite
//! store (ic-rusqlite per journal mode, ic-sqlite-vfs in its own canister) and workload, the
//! workload's message measured after W update messages of the same workload on the same
//! connection, from the store's cold start (W = 0 is the cold row of seed003), and in the
//! state the tables call warm (the whole table read, then one message: `full+1`). The
//! warm-ups are [`users::Call::warm_ups`], the starts those of the users suites'
//! runner (its warm start kept in the cache as seed003's).

use anyhow::{anyhow, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args};

use super::scenario::{CacheState, Operation, Position, Scenario, Store, StoreKind};
use super::shared::{default_from_flags, store_selected, Define, Reads, Run};
use super::users::{self, Point, UsersPlan};
use super::{sorted, CommonArgs};
use crate::report::format::thousands;
use crate::report::{Document, Report};
use bench_types::limits::users::MAX_IDS_PER_CALL;

mod document;

/// The suite's name: `--suite cache`, the store table's `suites` entries.
pub const SUITE: &str = "cache";

/// W, the warm-up messages before the measured one, by default: the first message on a
/// connection, then the decades up to the point where a one-row workload's cache stops
/// growing much (docs/warm-cache.md).
pub const WARM_UPS: [u64; 4] = [0, 10, 100, 1_000];
/// Rows per insert message by default: a message that splits no page, and one that splits
/// pages (and so walks the whole cache at COMMIT warm).
pub const BATCHES: [u64; 2] = [1, 100];
/// Keys per point lookup by default.
pub const LOOKUPS: [u64; 1] = [1];
/// The most warm-up messages one point may send: each is a message of its own (1,000 of a
/// 100-row random insert execute about 230 billion instructions at 1,000,000 rows, 45 s).
pub const MAX_WARM_UPS: u64 = 10_000;

pub struct Cache;

#[derive(Args)]
#[command(next_help_heading = "cache")]
pub struct CacheArgs {
    /// W: the update messages of the workload sent on the same connection before the
    /// measured one, from the store's cold start (0: the cold figure), comma-separated; the
    /// state the tables call warm (the whole table read, then one message) is measured beside.
    #[arg(long, value_delimiter = ',', default_values_t = WARM_UPS)]
    cache_warmups: Vec<u64>,
    /// Rows per insert message, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = BATCHES)]
    cache_batches: Vec<u64>,
    /// Keys per point lookup (a query, after W `_update` lookups), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = LOOKUPS)]
    cache_lookups: Vec<u64>,
    /// Skip the point lookups.
    #[arg(long)]
    cache_no_lookups: bool,
    /// Where the workload's ids go, comma-separated (sorted: random ids sent in ascending
    /// order).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Position::SEED003)]
    cache_positions: Vec<Position>,
}

/// The cache suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The stores and their rows: the SQLite stores measured, and the StableBTreeMap
    /// prefilled beside ic-rusqlite as the default run does (not measured).
    pub users: users::Config,
    /// W values, ascending.
    pub warm_ups: Vec<u64>,
    /// Rows per insert message.
    pub batches: Vec<u64>,
    /// Keys per point lookup (none: no lookups).
    pub lookups: Vec<u64>,
    pub positions: Vec<Position>,
    /// Whether W was given on the command line (then every W must fit every workload).
    pub warm_ups_given: bool,
}

default_from_flags!(Cache => Config);

/// The stores of `stores` the suite measures (those with a page cache), and in the seed
/// layout the StableBTreeMap where ic-rusqlite is one of them: that layout's default run
/// prefills both in one canister, and a canister without it has another heap layout (and
/// other counts).
fn prefilled_with(stores: &[Store], layout: users::Layout) -> Vec<Store> {
    let measured: Vec<Store> = stores
        .iter()
        .copied()
        .filter(|s| s.store_kind().measured_by(SUITE))
        .collect();
    let beside_sqlite = layout == users::Layout::Shared
        && measured
            .iter()
            .any(|s| s.store_kind().module() == StoreKind::Btree.module());
    let mut out = Vec::new();
    if beside_sqlite {
        out.push(Store::BTree);
    }
    out.extend(measured);
    out
}

impl Config {
    /// The measured stores: those with a page cache.
    fn measured(&self) -> impl Iterator<Item = Store> + '_ {
        self.users
            .stores
            .iter()
            .copied()
            .filter(|s| s.store_kind().measured_by(SUITE))
    }

    fn operations(&self) -> Vec<Operation> {
        let inserts = self.batches.iter().map(|&rows| Operation::Insert { rows });
        let lookups = self
            .lookups
            .iter()
            .map(|&keys| Operation::PointLookups { keys });
        inserts.chain(lookups).collect()
    }
}

impl Define for Cache {
    type Args = CacheArgs;
    type Plan = Config;

    fn plan(args: CacheArgs, common: &CommonArgs, matches: &ArgMatches) -> Result<Config> {
        store_selected(&common.stores, SUITE)?;
        let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
        if args.cache_no_lookups && given("cache_lookups") {
            let sizes: Vec<String> = args.cache_lookups.iter().map(u64::to_string).collect();
            return Err(anyhow!(
                "--cache-lookups {} and --cache-no-lookups contradict each other: give \
                 --cache-lookups to measure those lookups, or --cache-no-lookups to skip them",
                sizes.join(",")
            ));
        }
        let mut positions = args.cache_positions;
        positions.sort();
        let users = users::Config {
            rows: common.rows,
            stores: prefilled_with(
                &users::stores_of(&common.stores, &common.journal_modes),
                common.layout,
            ),
            payload_size: common.payload_size,
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
            // The sweep starts cold; its `full+1` point is the warm scenario's.
            caches: CacheState::ALL.to_vec(),
            layout: common.layout,
        };
        Ok(Config {
            users,
            warm_ups: sorted(args.cache_warmups),
            batches: sorted(args.cache_batches),
            lookups: if args.cache_no_lookups {
                Vec::new()
            } else {
                sorted(args.cache_lookups)
            },
            positions,
            warm_ups_given: matches.value_source("cache_warmups") == Some(ValueSource::CommandLine),
        })
    }

    const DOCUMENT: fn(&Report) -> Document = document::document;
    // It sweeps the warm-ups itself: no --page-cache.
    const READS: Reads = Reads::Except(&["page_cache"]);
}

impl UsersPlan for Config {
    const SUITE: &'static str = SUITE;

    fn validate(&self) -> Result<()> {
        if self.measured().next().is_none() {
            return Err(anyhow!(
                "no store of the cache suite selected (--stores sqlite,sqlite-vfs and at least one --journal-modes)"
            ));
        }
        if self.warm_ups.is_empty() {
            return Err(anyhow!("--cache-warmups needs at least one W"));
        }
        if let Some(w) = self.warm_ups.iter().find(|&&w| w > MAX_WARM_UPS) {
            return Err(anyhow!(
                "--cache-warmups {w}: at most {} warm-up messages a point (each is a message of its own)",
                thousands(MAX_WARM_UPS)
            ));
        }
        if self.positions.is_empty() {
            return Err(anyhow!("--cache-positions needs at least one position"));
        }
        let max = MAX_IDS_PER_CALL.min(self.users.rows / 2);
        for (flag, sizes) in [
            ("--cache-batches", &self.batches),
            ("--cache-lookups", &self.lookups),
        ] {
            if let Some(b) = sizes.iter().find(|&&b| b == 0 || b > max) {
                return Err(anyhow!(
                    "{flag}: sizes must be between 1 and {max} (at most {MAX_IDS_PER_CALL} ids per call and half of --rows), got {b}"
                ));
            }
        }
        if self.batches.is_empty() && self.lookups.is_empty() {
            return Err(anyhow!(
                "--cache-batches and --cache-lookups (or --cache-no-lookups) leave no workload"
            ));
        }
        // W given on the command line must fit every workload; the default W, a point
        // that does not fit is refused, with the reason, in the report.
        if self.warm_ups_given {
            for point in self.points() {
                let s = point.scenario;
                users::Call::warm_ups_fit(&s, self.users.rows, point.warm_ups)
                    .map_err(|e| anyhow!("--cache-warmups {}: {e}", point.warm_ups))?;
            }
        }
        Ok(())
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let note = format!(
            "The cache suite: each cell is the workload's message (seed003's call) measured after W update messages of the same workload on the same connection, from the store's cold start (W = 0 is seed003's cold figure); `full+1` is the state the tables call warm, the whole table read into the page cache by one update message, then one message of the workload. Warm-ups are the windows of ids just below the measured one at middle and end positions (each W replays its own), draws of their own at random; reads are measured as queries after `_update` warm-ups. W: {}.",
            self.warm_ups
                .iter()
                .map(|&w| thousands(w))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut notes = vec![note];
        if self.measured().count() < self.users.stores.len() {
            notes.push("The StableBTreeMap is prefilled beside ic-rusqlite, as in the default run, so that the canister's heap is the default run's; it is not measured here.".into());
        }
        users::run_points(run, &self.users, &self.points(), &notes, None)
    }

    /// Per position, per operation, per store: the point at each W from the cold start,
    /// then the tables' warm state.
    fn points(&self) -> Vec<Point> {
        let mut out = Vec::new();
        for &position in &self.positions {
            for operation in self.operations() {
                for store in self.measured() {
                    let at = |cache| Scenario {
                        store,
                        position,
                        operation,
                        cache,
                    };
                    out.extend(
                        self.warm_ups
                            .iter()
                            .map(|&w| Point::swept(at(CacheState::Cold), w)),
                    );
                    out.push(Point::swept(at(CacheState::Warm), users::WARM_UP_MESSAGES));
                }
            }
        }
        out
    }

    fn users(&self) -> &users::Config {
        &self.users
    }
}
