//! The `sysbench` suite (seed 004): sysbench's `sbtest` table and the 23 workloads of
//! Doltlite's sysbench-style suite, one sysbench event per update message. SQLite runs
//! all 23 in each `--sysbench-journal-modes`; the StableBTreeMap (rows by id plus a
//! second map as the index on k) runs the key-value subset. Per workload: store
//! instructions per event; the multiplier is SQLite ÷ map (seed 004's is Doltlite ÷
//! SQLite: candidate ÷ baseline), with section averages and a ceiling gate.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use clap::{ArgMatches, Args};

use super::dbbench::Totals;
use super::grid::{store_dot, store_dot_plot, table_headed};
use super::pool::Task;
use super::scenario::{JournalMode, StoreKind};
use super::shared::{default_from_flags, store_selected, Define, Header, Measure, Reads, Run};
use super::users::SplitMix64;
use super::{pool, CommonArgs};
use crate::bench_canister::BenchClient;
use crate::engine::SnapshotId;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{
    message_cells_legend, Block, Document, DotPoint, Plot, Report, ScenarioResult, Status,
};
use crate::stores::{self, ModuleNeed, SchemaStore};

/// Seed 004's 23 workloads, their sections and the parameters each message takes, shared
/// with the canister.
pub use bench_types::sysbench::{Section, Workload, WORKLOADS};

/// Events (update messages) per workload and store.
pub const EVENTS: u64 = 10;
/// sbtest1 rows per prefill message.
pub const PREFILL_CHUNK: u64 = 2_000;
const _: () = assert!(PREFILL_CHUNK <= bench_types::limits::sysbench::MAX_PREFILL);
/// groupby_scan reads 1,000 ids from a start in 1..=rows-1000.
pub const MIN_ROWS: u64 = 2_000;
/// The canister's most sbtest1 rows, and the rows of sbtest2 and the types table.
pub use bench_types::limits::sysbench::{MAX_ROWS, SIDE_ROWS};
pub const DEFAULT_ROWS: u64 = 10_000;
/// Seed 004's CI ceilings.
pub const DEFAULT_MAX_RATIO: f64 = 6.0;
pub const DEFAULT_MAX_SECTION_RATIO: f64 = 5.0;

/// `--suite sysbench`.
const SUITE: &str = "sysbench";

/// One scenario: a workload on the map, or on SQLite in one journal mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SysbenchScenario {
    pub workload: Workload,
    /// `None`: the map.
    pub journal_mode: Option<JournalMode>,
    /// The store table's schema it runs on (in that journal mode).
    pub store: SchemaStore,
}

pub struct Sysbench;

#[derive(Args)]
#[command(next_help_heading = "sysbench")]
pub struct SysbenchArgs {
    /// sbtest1 rows (2000..=1000000).
    #[arg(long, default_value_t = DEFAULT_ROWS)]
    sysbench_rows: u64,
    /// SQLite journal modes, comma-separated (default: the canister's own, PERSIST).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [JournalMode::Persist])]
    sysbench_journal_modes: Vec<JournalMode>,
    /// The gate: most SQLite ÷ map multiplier per workload (seed 004: 6).
    #[arg(long, default_value_t = DEFAULT_MAX_RATIO)]
    sysbench_max_ratio: f64,
    /// The gate: most section-average multiplier (seed 004: 5).
    #[arg(long, default_value_t = DEFAULT_MAX_SECTION_RATIO)]
    sysbench_max_section_ratio: f64,
}

/// The sysbench suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The map (key-value subset) for `btree`; SQLite per journal mode for `sqlite`.
    pub stores: Vec<StoreKind>,
    /// sbtest1 rows.
    pub rows: u64,
    /// SQLite's journal modes, in table order (default: the canister's, PERSIST).
    pub journal_modes: Vec<JournalMode>,
    /// The gate's ceilings.
    pub ceilings: Ceilings,
    pub seed: u64,
    pub usd_per_xdr: f64,
}

default_from_flags!(Sysbench => Config);

impl Config {
    /// Per store table schema of this suite that `stores` selects: the map (no SQL) runs
    /// the key-value subset once (it has no journal), SQLite all 23 per selected journal
    /// mode.
    pub fn matrix(&self) -> Vec<SysbenchScenario> {
        let mut out = Vec::new();
        for store in SchemaStore::of_suite(SUITE, &self.stores, &self.journal_modes) {
            let sql = store.store_kind().def().sql;
            out.extend(
                WORKLOADS
                    .into_iter()
                    .filter(|w| sql || w.on_map)
                    .map(|workload| SysbenchScenario {
                        workload,
                        journal_mode: store.journal_mode(),
                        store,
                    }),
            );
        }
        out
    }
}

/// The parameters of event `event` of `workload` on `rows` rows: ids, k values and range
/// starts drawn uniformly (from `seed` and the workload's name, so every store and mode
/// gets the same ones); inserts take fresh ids above the prefill.
pub fn params(workload: &str, rows: u64, seed: u64, event: u64) -> Vec<u64> {
    let h = workload
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(b as u64));
    let mut rng = SplitMix64::new(seed ^ h.rotate_left(20) ^ event.wrapping_mul(0x51B));
    let id = |rng: &mut SplitMix64| rng.below(rows) + 1;
    let start = |rng: &mut SplitMix64, width: u64| rng.below(rows - width) + 1;
    let ids = |rng: &mut SplitMix64, n: usize| -> Vec<u64> { (0..n).map(|_| id(rng)).collect() };
    let r = &mut rng;
    match workload {
        "oltp_point_select"
        | "oltp_index_scan"
        | "select_random_points"
        | "oltp_update_index"
        | "oltp_update_non_index" => ids(r, 10),
        "oltp_range_select"
        | "oltp_sum_range"
        | "oltp_order_range"
        | "oltp_distinct_range"
        | "covering_index_scan" => vec![start(r, 100)],
        "select_random_ranges" | "index_join" => vec![start(r, 10)],
        "groupby_scan" => vec![start(r, 1_000)],
        "index_join_scan" => vec![r.below(SIDE_ROWS.min(rows) - 50) + 1],
        "types_table_scan" | "table_scan" | "oltp_bulk_insert" => vec![id(r)],
        "oltp_read_only" => {
            let mut p = ids(r, 10);
            p.extend((0..4).map(|_| start(r, 100)));
            p
        }
        "oltp_insert" => (1..=10).map(|j| rows + event * 10 + j).collect(),
        "oltp_delete_insert" | "types_delete_insert" => ids(r, 5),
        "oltp_write_only" => ids(r, 3),
        "oltp_read_write" => {
            let mut p = ids(r, 10);
            p.extend((0..2).map(|_| start(r, 100)));
            p.extend(ids(r, 3));
            p
        }
        other => panic!("unknown sysbench workload {other}"),
    }
}

/// One row of a seed-004 table: a workload's instructions per event on the map and on
/// SQLite, and SQLite ÷ map ("--" when either is missing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    pub workload: String,
    pub btree: Option<f64>,
    pub sqlite: Option<f64>,
    pub ratio: Option<f64>,
}

/// One section: a journal mode's reads or writes, with the mean of its (unrounded) ratios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableSection {
    pub journal_mode: String,
    pub section: String,
    pub rows: Vec<TableRow>,
    pub average: Option<f64>,
}

pub use crate::report::compare::ratio;

/// The records' stores seed 004 compares: the map (this suite's schema without SQL) and
/// SQLite (its schema of a store with journal modes).
fn compared() -> (&'static str, &'static str) {
    let schemas = SchemaStore::of_suite(SUITE, &StoreKind::ALL, &[JournalMode::Persist]);
    let find = |pick: fn(&SchemaStore) -> bool| {
        schemas
            .iter()
            .find(|s| pick(s))
            .map(|s| s.record())
            .expect("the store table has the schemas sysbench compares")
    };
    (
        find(|s| !s.store_kind().def().sql),
        find(|s| s.journal_mode().is_some()),
    )
}

/// The tables, from a report's results: per journal mode, reads then writes.
pub fn sections(report: &Report) -> Vec<TableSection> {
    let per_event = |store: &str, mode: &str, workload: &str| {
        report
            .results
            .iter()
            .find(|r| r.store == store && r.journal_mode == mode && r.operation == workload)
            .filter(|r| r.status == Status::Ok)
            .map(|r| r.store_instructions_per_row)
    };
    let (map, sql) = compared();
    let mut modes: Vec<String> = Vec::new();
    for r in report.results.iter().filter(|r| r.store == sql) {
        if !modes.contains(&r.journal_mode) {
            modes.push(r.journal_mode.clone());
        }
    }
    let mut out = Vec::new();
    for mode in modes {
        for section in [Section::Reads, Section::Writes] {
            let rows: Vec<TableRow> = WORKLOADS
                .iter()
                .filter(|w| w.section == section)
                .map(|w| {
                    let btree = per_event(map, "", w.name);
                    let sqlite = per_event(sql, &mode, w.name);
                    TableRow {
                        workload: w.name.into(),
                        btree,
                        sqlite,
                        ratio: ratio(btree, sqlite),
                    }
                })
                .collect();
            let average = crate::report::compare::mean(rows.iter().filter_map(|r| r.ratio));
            out.push(TableSection {
                journal_mode: mode.clone(),
                section: section.name().into(),
                rows,
                average,
            });
        }
    }
    out
}

/// Seed 004's gate: a workload fails when its ratio is strictly above `max`, a section when
/// its average is strictly above `max_section`; also a SQLite workload that did not run.
/// One line per failure.
pub fn gate(sections: &[TableSection], max: f64, max_section: f64) -> Vec<String> {
    let mut out = Vec::new();
    for s in sections {
        for r in &s.rows {
            if r.sqlite.is_none() {
                out.push(format!(
                    "{} {} {}: no measurement",
                    s.journal_mode, s.section, r.workload
                ));
            }
            if let Some(x) = r.ratio.filter(|&x| x > max) {
                out.push(format!(
                    "{} {} {}: {x:.2}x > {max}x",
                    s.journal_mode, s.section, r.workload
                ));
            }
        }
        if let Some(a) = s.average.filter(|&a| a > max_section) {
            out.push(format!(
                "{} {} average: {a:.2}x > {max_section}x",
                s.journal_mode, s.section
            ));
        }
    }
    out
}

/// results.json's field for the gate's ceilings.
const CEILINGS: &str = "ceilings";

/// The report's gate failures with the ceilings it was run with (none if it has none).
pub fn report_gate(report: &Report) -> Vec<String> {
    match report.extra::<Ceilings>(CEILINGS) {
        Some(c) => gate(&sections(report), c.max, c.max_section),
        None => Vec::new(),
    }
}

/// The gate's ceilings, kept in the report so report.md can show the check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    pub max: f64,
    pub max_section: f64,
}

fn prefill(client: &mut BenchClient<'_>, store: &str, rows: u64) -> Result<()> {
    client
        .sysbench_reset(store, rows)?
        .value
        .map_err(|e| anyhow!("sysbench_reset({store}) failed: {e}"))?;
    let mut first = 1;
    while first <= rows {
        let count = PREFILL_CHUNK.min(rows - first + 1);
        client
            .sysbench_prefill(store, first, count, rows)?
            .value
            .map_err(|e| anyhow!("sysbench_prefill({store}, {first}, {count}) failed: {e}"))?;
        first += count;
    }
    Ok(())
}

/// The canister's store name and the results' journal mode of a scenario.
fn store_of(s: &SysbenchScenario) -> (&'static str, String) {
    (s.store.canister_name(SUITE), s.store.journal_column())
}

fn journal_suffix(journal: &str) -> String {
    if journal.is_empty() {
        String::new()
    } else {
        format!(" {journal}")
    }
}

/// plot-sysbench.svg: store instructions per event by workload, one marker per store.
fn plot(report: &Report) -> Option<Plot> {
    // Rows in seed 004's workload order, whichever store ran first.
    let rank = |name: &str| WORKLOADS.iter().position(|w| w.name == name);
    let mut points: Vec<DotPoint> = report
        .results
        .iter()
        .filter(|r| r.status == Status::Ok)
        .map(|r| store_dot(r, r.operation.clone()))
        .collect();
    points.sort_by_key(|p| rank(&p.row));
    store_dot_plot("sysbench", "sysbench", "event", points)
}

/// Seed 004's shape: per journal mode a Reads and a Writes table (map and SQLite
/// instructions per event, multiplier, average), then the ceiling check.
fn blocks(report: &Report) -> Vec<Block> {
    let heading = |level: usize, text: String| Block::Heading { level, text };
    let opt = |x: Option<f64>| x.map_or("--".to_string(), |v| thousands(v.round() as u64));
    let mul = crate::report::format::multiplier;
    let mut out = Vec::new();
    let mut mode = String::new();
    for s in sections(report) {
        if s.journal_mode != mode {
            mode = s.journal_mode.clone();
            out.push(heading(
                2,
                format!("SQLite {mode} vs StableBTreeMap (store instructions per event)"),
            ));
        }
        let title = if s.section == "reads" {
            "Reads"
        } else {
            "Writes"
        };
        out.push(heading(3, title.into()));
        let mut table = table_headed(&[
            "Test",
            "StableBTreeMap",
            &format!("SQLite {mode}"),
            "Multiplier",
        ]);
        for r in &s.rows {
            table.push(vec![
                r.workload.clone(),
                opt(r.btree),
                opt(r.sqlite),
                mul(r.ratio),
            ]);
        }
        table.push(vec![
            "Average".into(),
            String::new(),
            String::new(),
            mul(s.average),
        ]);
        out.push(Block::Table(table));
    }
    if let Some(c) = report.extra::<Ceilings>(CEILINGS) {
        out.push(heading(
            2,
            format!(
                "Performance Ceiling Check ({}x individual, {}x average)",
                c.max, c.max_section
            ),
        ));
        let failures = report_gate(report);
        out.push(Block::Text(if failures.is_empty() {
            "All tests within ceilings.\n".into()
        } else {
            failures.iter().map(|f| format!("- FAIL {f}\n")).collect()
        }));
    }
    out
}

pub fn document(report: &Report) -> Document {
    let mut doc = Document {
        markdown: vec![message_cells_legend(report)],
        terminal: blocks(report),
        plots: Vec::new(),
    };
    if let Some(plot) = plot(report) {
        doc.markdown.push(Block::Heading {
            level: 2,
            text: "sysbench".into(),
        });
        doc.push_plot("sysbench: store instructions per event", plot);
    }
    doc.markdown.extend(blocks(report));
    doc
}

impl Define for Sysbench {
    type Args = SysbenchArgs;
    type Plan = Config;

    fn plan(args: SysbenchArgs, common: &CommonArgs, _: &ArgMatches) -> Result<Config> {
        Ok(Config {
            stores: common.stores.clone(),
            rows: args.sysbench_rows,
            // Given order kept: the first mode's tables come first.
            journal_modes: args.sysbench_journal_modes,
            ceilings: Ceilings {
                max: args.sysbench_max_ratio,
                max_section: args.sysbench_max_section_ratio,
            },
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
        })
    }

    fn gate(report: &Report) -> Vec<String> {
        report_gate(report)
    }

    const DOCUMENT: fn(&Report) -> Document = document;
    const READS: Reads = Reads::Only(&["stores", "seed", "usd_per_xdr"]);
}

impl Measure for Config {
    const SUITE: &'static str = SUITE;

    /// The modules its stores live in.
    fn modules(&self) -> Vec<ModuleNeed> {
        stores::needs(stores::measured_by(SUITE, &self.stores))
    }

    fn validate(&self) -> Result<()> {
        if self.rows < MIN_ROWS || self.rows > MAX_ROWS {
            return Err(anyhow!(
                "--sysbench-rows must be between {MIN_ROWS} and {MAX_ROWS}, got {}",
                self.rows
            ));
        }
        if self.journal_modes.is_empty() {
            return Err(anyhow!("--sysbench-journal-modes needs at least one mode"));
        }
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !ok(self.ceilings.max) || !ok(self.ceilings.max_section) {
            return Err(anyhow!(
                "--sysbench-max-ratio and --sysbench-max-section-ratio must be positive numbers"
            ));
        }
        store_selected(&self.stores, Self::SUITE)
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let cfg = self;
        let (session, exec) = (run.session, run.exec);
        let (work, engine_name) = (&session.work, &session.engine_name);
        let (mut client, installed) = session.install(run.engine, run.wasm)?;
        let canister = client.canister;
        let base = client.engine.snapshot(canister)?;
        let rows = cfg.rows;
        let scenarios = cfg.matrix();
        let workload = |client: &mut BenchClient<'_>, snapshot: SnapshotId, i: usize| {
            measure(client, cfg, engine_name, &scenarios[i], snapshot)
        };
        // One prefilled snapshot per store (the map, SQLite per journal mode), filled side by
        // side from the empty canister; every workload starts from its store's.
        let indices = exec.indices(scenarios.len());
        let plan = (0..scenarios.len())
            .map(|i| key(&scenarios[i]) + "\n")
            .collect::<String>();
        let slots = pool::Slots::new(scenarios.len());
        let setup = AtomicU64::new(0);
        let mut tasks = Vec::new();
        let mut stores_seen: Vec<SchemaStore> = Vec::new();
        for s in &scenarios {
            if stores_seen.contains(&s.store) {
                continue;
            }
            stores_seen.push(s.store);
            let (store, journal) = store_of(s);
            let label = format!("{store}{}", journal_suffix(&journal));
            let schema = s.store;
            let (scenarios, indices, slots, setup, workload) =
                (&scenarios, &indices, &slots, &setup, &workload);
            tasks.push(
                Task::new(Kind::Fill, format!("prefill {label}"), move |lane| {
                    lane.client.engine.restore(canister, base)?;
                    let before = lane.client.executed_instructions;
                    if let Some(mode) = schema.journal_mode() {
                        stores::set_journal_mode(&mut lane.client, mode)?.map_err(|e| {
                            anyhow!("setting journal_mode {mode} for sysbench: {e}")
                        })?;
                    }
                    prefill(&mut lane.client, store, rows)?;
                    setup.fetch_add(
                        lane.client.executed_instructions - before,
                        Ordering::Relaxed,
                    );
                    lane.step(Kind::Snapshot, format!("snapshot of {label}"));
                    let start = lane.snapshot()?;
                    for &i in indices.iter().filter(|&&i| scenarios[i].store == schema) {
                        let start = start.clone();
                        lane.spawn(
                            Task::new(
                                Kind::Scenario,
                                format!("scenario {}", key(&scenarios[i])),
                                move |lane| {
                                    let at = lane.local(&start)?;
                                    let r = workload(&mut lane.client, at, i)?;
                                    slots.put(i, r);
                                    Ok(())
                                },
                            )
                            .profiled(),
                        );
                    }
                    Ok(())
                })
                .after(&[installed])
                .priority(1),
            );
        }
        let setup_before = client.executed_instructions;
        let canister = client.canister;
        pool::graph::run(
            &mut client,
            &pool::State::Local(canister, base),
            exec,
            work,
            run.progress,
            tasks,
            None,
        )?;
        let outcomes = slots.take(&indices, &|i| key(&scenarios[i]))?;
        let measured = pool::Outcomes::new(
            outcomes,
            scenarios.len(),
            pool::sha256_hex(plan.as_bytes()),
            exec.shard,
            setup_before + setup.load(Ordering::Relaxed),
        );
        let header = Header {
            workload: crate::report::Workload {
                rows_before: rows,
                seed: cfg.seed,
                payload_size: 180,
            },
            prefill: None,
            notes: notes(cfg),
        };
        let mut report = session.report(&client, header, measured);
        report.set_extra(CEILINGS, &cfg.ceilings);
        Ok(report)
    }
}

/// One workload's events on its store, from its store's prefilled `snapshot`.
fn measure(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    engine_name: &str,
    s: &SysbenchScenario,
    snapshot: SnapshotId,
) -> Result<ScenarioResult> {
    let (canister, rows) = (client.canister, cfg.rows);
    let (store, journal) = store_of(s);
    client.engine.restore(canister, snapshot)?;
    let mut t = Totals::default();
    let mut failed = None;
    for event in 0..EVENTS {
        let p = params(s.workload.name, rows, cfg.seed, event);
        let m = client.sysbench_run(store, s.workload.name, &p)?;
        if let Err(e) = t.add(m, true) {
            failed = Some(e);
            break;
        }
    }
    Ok(ScenarioResult {
        suite: SUITE.into(),
        engine: engine_name.into(),
        store: s.store.record().into(),
        journal_mode: journal,
        position: s.workload.section.name().into(),
        operation: s.workload.name.into(),
        batch: EVENTS,
        rows_before: rows,
        method: "sysbench_run".into(),
        args: format!(
            "({store:?}, {:?}, <drawn params>) x {EVENTS} events",
            s.workload.name
        ),
        status: failed.map_or(Status::Ok, Status::Failed),
        ..t.record(EVENTS, cfg.usd_per_xdr)
    })
}

fn notes(cfg: &Config) -> Vec<String> {
    let rows = cfg.rows;
    let modes = cfg
        .journal_modes
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    vec![
            format!("sysbench (seed 004): sbtest1 with {rows} rows (id INTEGER PRIMARY KEY, k INTEGER, c CHAR(120), pad CHAR(60), index on k; sbtest2 and the types table {SIDE_ROWS} rows), prefilled {PREFILL_CHUNK} rows per update message. Every workload starts from the same prefilled snapshot and runs {EVENTS} events, one update message each; figures are store instructions (ic0.performance_counter around the store work, BEGIN/COMMIT included) per event. SQLite journal modes: {modes}."),
            "Multiplier = SQLite ÷ StableBTreeMap for the map's key-value subset (point selects, id ranges, k-index lookups, inserts, updates, deletes); \"--\" where the map has no version (seed 004's is Doltlite ÷ SQLite). Section average = mean of the unrounded multipliers.".into(),
            format!("Ceilings: a workload fails above {}x, a section average above {}x (strictly greater, as seed 004); a failure makes icbench exit with status 1 after writing every output.", cfg.ceilings.max, cfg.ceilings.max_section),
    ]
}

/// A workload's name in the plan and the progress: `sqlite-wal/oltp_read_only`.
fn key(s: &SysbenchScenario) -> String {
    let (store, journal) = store_of(s);
    format!("{store}{}/{}", journal_suffix(&journal), s.workload.name)
}
