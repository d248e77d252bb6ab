//! The `seed003` suite (the default): seed 003's table. Prefill every store, then insert
//! 1 to 10,000 rows in one message in the middle, at the end and at random positions, and
//! read them back (point lookups of 1 and 100 keys, a 1,000-row range scan).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args};

use super::capacity;
use super::pool::{self, Recorder, State};
use super::scenario::{CacheState, Operation, Position, Scenario, Store};
use super::shared::{default_from_flags, Define, Reads, Run};
use super::users::{self, Point, UsersPlan};
use super::{decision, sorted, CommonArgs};
use crate::bench_canister::BenchClient;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{Block, Document, Report, ScenarioResult};
use bench_types::limits::users::MAX_IDS_PER_CALL;

/// Read operations measured per store and position.
pub const READS: [Operation; 3] = [
    Operation::PointLookups { keys: 1 },
    Operation::PointLookups { keys: 100 },
    Operation::RangeScan { rows: 1_000 },
];

pub struct Seed003;

#[derive(Args)]
#[command(next_help_heading = "seed003 (the default suite)")]
pub struct Seed003Args {
    /// New rows per update message, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 10, 100, 1_000, 10_000])]
    batches: Vec<u64>,
    /// Where new rows go, comma-separated (sorted: random ids sent in ascending order).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Position::SEED003)]
    positions: Vec<Position>,
    /// Skip the read scenarios (point lookups, range scan).
    #[arg(long)]
    no_reads: bool,
    /// Confirm the capacity estimates with real calls at the limits (insert and lookup,
    /// every store and mode; each update call runs ~40B instructions, ~13 s here).
    #[arg(long)]
    confirm_capacity: bool,
    /// The largest insert batch measured warm (`--page-cache`); larger ones are measured
    /// cold only: warm, a batch that splits pages walks the whole cached table at COMMIT as
    /// a 1,000-row one does, and the 10,000-row messages would double the run's time.
    #[arg(long, default_value_t = WARM_MAX_BATCH)]
    warm_max_batch: u64,
}

/// The largest insert batch seed003 measures warm by default.
pub const WARM_MAX_BATCH: u64 = 1_000;

/// The seed003 suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub users: users::Config,
    /// New rows per update message.
    pub batches: Vec<u64>,
    /// The default batches more than half of `--rows` (left out, and the report says so).
    pub batches_left_out: Vec<u64>,
    pub positions: Vec<Position>,
    /// Whether to measure the reads too.
    pub reads: bool,
    /// Whether to confirm the capacity estimates with real calls.
    pub confirm_capacity: bool,
    /// The largest insert batch measured warm.
    pub warm_max_batch: u64,
}

default_from_flags!(Seed003 => Config);

impl Config {
    /// Per position, per store: every insert batch, then the reads.
    pub fn matrix(&self) -> Vec<Scenario> {
        let mut operations: Vec<Operation> = self
            .batches
            .iter()
            .map(|&rows| Operation::Insert { rows })
            .collect();
        if self.reads {
            operations.extend(READS);
        }
        let warm = |op: Operation| match op {
            Operation::Insert { rows } => rows <= self.warm_max_batch,
            _ => true,
        };
        users::matrix(
            &self.positions,
            &self.users.stores,
            &operations,
            &self.users.caches,
            &warm,
        )
    }
}

/// seed003's tables, then a short decision table at the run's size.
fn document(report: &Report) -> Document {
    let mut doc = super::grid::document(report);
    // Capacity first: the default run ends with the decision table.
    if let Some(table) = capacity::table(report) {
        let title = format!(
            "Capacity at {} rows: the largest batch per message, confirmed with real calls",
            thousands(report.workload().rows_before)
        );
        doc.push_table(&title, table);
        doc.markdown.push(Block::Text(capacity::explained(report)));
    } else if let Some(table) = capacity::estimate_table(report) {
        let title = format!(
            "Capacity at {} rows: the largest batch per message, estimated (`--suite scaling` confirms it)",
            thousands(report.workload().rows_before)
        );
        doc.push_table(&title, table);
        doc.markdown.push(Block::Text(
            "The message's instruction limit (an application subnet's: 40B per update, 5B per query) over the instructions charged per row by the largest middle insert and the largest middle lookup measured here. Instructions only: the heap map's memory, and how the cost per row moves with the batch, are for the real calls of `--suite scaling` (its capacity table), since SQLite's fixed cost per call spreads over more rows and a B-tree's does not, the real answer can be half or more than twice the estimate.\n".into(),
        ));
    }
    // A live canister's state (warm) is what the table judges when both are measured; cold
    // beside it.
    let decisions = if super::grid::views(report).len() > 1 {
        let decisions: Vec<(Option<decision::Decision>, Option<decision::Decision>)> =
            decision::MESSAGE_WORKLOADS
                .iter()
                .map(|w| {
                    let in_state = |state| {
                        decision::decide_in(report, w, report.workload().rows_before, state)
                    };
                    (in_state(CacheState::Warm), in_state(CacheState::Cold))
                })
                .filter(|(warm, cold)| warm.is_some() || cold.is_some())
                .collect();
        let states = "in a live canister (warm: SQLite's page cache holds the table; cold beside it: the first message after an upgrade; ";
        (!decisions.is_empty()).then(|| (states, decision::short_table_beside(&decisions)))
    } else {
        let decisions: Vec<decision::Decision> = decision::MESSAGE_WORKLOADS
            .iter()
            .filter_map(|w| decision::decide(report, w, report.workload().rows_before))
            .collect();
        (!decisions.is_empty()).then(|| ("(", decision::short_table(&decisions)))
    };
    if let Some((states, table)) = decisions {
        let title = format!(
            "Which store is cheapest at {} rows {states}charged instructions; `--suite scaling` for every size, storage and upgrades)",
            thousands(report.workload().rows_before)
        );
        doc.push_table(&title, table);
        push_judged_state(&mut doc);
    }
    doc
}

/// What state the decision table judges, and where the other one is measured.
fn push_judged_state(doc: &mut Document) {
    // Broken for the terminal (its lines stay within 120 characters); one paragraph in markdown.
    let text = "Each figure is one message from the store's start: the filled table, and a garbage-collected\nstore's collector with nothing to do, as between collections. `--suite sustained` sends\nsequences of messages, the collector's increments included.\n";
    doc.markdown.push(Block::Text(text.into()));
    doc.terminal.push(Block::Text(text.into()));
}

impl Define for Seed003 {
    type Args = Seed003Args;
    type Plan = Config;

    fn plan(args: Seed003Args, common: &CommonArgs, matches: &ArgMatches) -> Result<Config> {
        let mut positions = args.positions;
        positions.sort();
        let users = users::Config::from_args(common, <Config as UsersPlan>::SUITE)?;
        // The default batches fit the default rows; for fewer rows, those that fit.
        let mut batches = sorted(args.batches);
        let mut batches_left_out = Vec::new();
        if matches.value_source("batches") == Some(ValueSource::DefaultValue) {
            batches_left_out = batches
                .iter()
                .copied()
                .filter(|&b| b > users.rows / 2)
                .collect();
            batches.retain(|&b| b <= users.rows / 2);
        }
        Ok(Config {
            users,
            batches,
            batches_left_out,
            positions,
            reads: !args.no_reads,
            confirm_capacity: args.confirm_capacity,
            warm_max_batch: args.warm_max_batch,
        })
    }

    /// seed003 writes into `--out` itself, as before there were other suites.
    fn out_dir(base: &Path) -> PathBuf {
        base.to_path_buf()
    }

    const DOCUMENT: fn(&Report) -> Document = document;
    const READS: Reads = Reads::Except(&[]);
}

impl UsersPlan for Config {
    const SUITE: &'static str = "seed003";

    fn validate(&self) -> Result<()> {
        // Random positions send their ids as a list.
        if let Some(b) = self
            .batches
            .iter()
            .find(|&&b| b == 0 || b > MAX_IDS_PER_CALL)
        {
            return Err(anyhow!(
                "batch sizes must be between 1 and {MAX_IDS_PER_CALL}, got {b}"
            ));
        }
        let half = self.users.rows / 2;
        if let Some(b) = self.batches.iter().find(|&&b| b > half) {
            return Err(anyhow!(
                "--batches {b} is more than half of --rows {} ({half}): give smaller batches",
                self.users.rows
            ));
        }
        if self.reads {
            self.users.check_scan_rows("--no-reads leaves it out")?;
        }
        Ok(())
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let cfg = self;
        if cfg.confirm_capacity && !run.exec.shard.is_whole() {
            return Err(anyhow!(
                "--confirm-capacity needs every store's measured batches in one run: drop --shard"
            ));
        }
        let confirm: &users::AfterScenarios<'_> =
            &|client, starts, work, report| confirm_capacity(client, cfg, starts, work, report);
        let after = cfg.confirm_capacity.then_some(confirm);
        let mut notes = Vec::new();
        if !cfg.batches_left_out.is_empty() {
            let mut sizes: Vec<String> =
                cfg.batches_left_out.iter().map(|&b| thousands(b)).collect();
            let last = sizes.pop().unwrap_or_default();
            let sizes = match sizes.is_empty() {
                true => last,
                false => format!("{} and {last}", sizes.join(", ")),
            };
            notes.push(format!(
                "Batches of {sizes} rows (in `--batches`' default) are left out: a batch is at most half of `--rows` ({}).",
                thousands(cfg.users.rows / 2)
            ));
        }
        if cfg.users.measures(CacheState::Warm)
            && cfg.batches.iter().any(|&b| b > cfg.warm_max_batch)
        {
            notes.push(format!(
                "Insert batches of more than {} rows are measured cold only (`--warm-max-batch`).",
                thousands(cfg.warm_max_batch)
            ));
        }
        users::run_points(run, &cfg.users, &cfg.points(), &notes, after)
    }

    fn points(&self) -> Vec<Point> {
        self.matrix().into_iter().map(Point::of).collect()
    }

    fn users(&self) -> &users::Config {
        &self.users
    }
}

/// Each store's capacity on the prefilled state, from its middle inserts and lookups (the
/// shapes the capacity calls send), confirmed with real calls.
fn confirm_capacity(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    starts: &[(Store, Result<State, String>)],
    work: &Recorder,
    report: &mut Report,
) -> Result<()> {
    let engine = report.engine.clone();
    let ctx = capacity::Context {
        suite: "seed003",
        engine: &engine,
        usd_per_xdr: cfg.users.usd_per_xdr,
    };
    let (mut found, own) = (Vec::new(), client.canister);
    for (store, start) in starts {
        let Ok(start) = start else { continue };
        let mode = store.journal_column();
        let measured: Vec<&ScenarioResult> = report
            .results
            .iter()
            .filter(|r| {
                r.store == store.kind()
                    && r.journal_mode == mode
                    && r.position == "middle"
                    && r.cache.is_cold()
            })
            .collect();
        let (records, _) = work.unit(
            Kind::Probe,
            format!("capacity of {}", store.label()),
            &[],
            || -> Result<Vec<ScenarioResult>> {
                // A store of another module lives in a canister of its own.
                client.canister = start.canister();
                let at = pool::graph::local(client.engine, start)?;
                let records = capacity::measure_store(
                    client,
                    &ctx,
                    *store,
                    cfg.users.rows,
                    at,
                    None,
                    &measured,
                    &capacity::Message::ALL,
                )?;
                client.engine.forget(at)?;
                Ok(records)
            },
        );
        found.extend(records?);
    }
    client.canister = own;
    report.results.extend(found);
    report.set_extra(
        capacity::LIMITS,
        &capacity::RunLimits::from(&client.engine.limits()),
    );
    Ok(())
}
