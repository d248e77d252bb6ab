//! The `dbbench` suite (seed 000): LevelDB's db_bench / db_bench_sqlite3 benchmark list on
//! the B-tree map and on SQLite as a rowid table and `WITHOUT ROWID`, with db_bench's
//! 16-byte keys, 100-byte values and 100 KB values, reported per op in db_bench's line
//! format (instructions/op instead of micros/op).
//!
//! Adapted to the IC: a benchmark's N ops go in messages of 1,000 (db_bench's batch size;
//! one update must stay under 40B instructions), "autocommit" benchmarks run every write
//! in its own SQLite transaction inside those messages, and the sync variants are
//! left out (a canister has no fsync: an update commits atomically when it ends).

use std::fmt;

use anyhow::{anyhow, Result};

use clap::{ArgMatches, Args};

use super::grid::{store_dot, store_dot_plot, StoreColumn};
use super::scenario::{JournalMode, StoreKind};
use super::shared::{store_selected, Define, Header, Measure, Run};
use super::{pool, CommonArgs, DEFAULT_USD_PER_XDR};
use crate::bench_canister::{BenchClient, DbBenchReport, DbBenchWrite, Measured};
use crate::engine::cost::CyclesFees;
use crate::engine::{PageCounts, SnapshotId};
use crate::report::format::{per_row, thousands};
use crate::report::work::Kind;
use crate::report::{
    message_cells_legend, Block, Document, Plot, Report, ScenarioResult, Status, Table,
};
use crate::stores::{self, ModuleNeed};

/// `--suite dbbench`.
const SUITE: &str = "dbbench";

/// Ops per message: db_bench's `entries_per_batch` for the batched fills.
pub const OPS_PER_MESSAGE: u64 = 1_000;
/// db_bench's key size (`%016d`), shared with the canister, and default value size.
pub use bench_types::limits::dbbench::KEY_SIZE;
pub const VALUE_SIZE: u64 = 100;
/// The 100K benchmarks' value size.
pub const BIG_VALUE_SIZE: u64 = 100_000;
/// Largest N: keys have 16 digits, and the run should stay minutes, not hours.
pub const MAX_NUM: u64 = 1_000_000;

// What one message sends must be what the canister accepts per call.
const _: () = {
    use bench_types::limits::dbbench as canister;
    assert!(OPS_PER_MESSAGE <= canister::MAX_OPS_PER_CALL);
    assert!(BIG_VALUE_SIZE <= canister::MAX_VALUE_SIZE);
    assert!(MAX_NUM <= canister::MAX_KEY);
};

/// A key-value store of this suite: a schema of the store table (the map, SQLite's rowid
/// table and its `WITHOUT ROWID` table) in the suite's journal mode.
pub type KvStore = crate::stores::SchemaStore;

/// db_bench_sqlite3's default benchmarks, without the two sync fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bench {
    FillSeq,
    FillSeqBatch,
    FillRandom,
    FillRandBatch,
    Overwrite,
    OverwriteBatch,
    ReadRandom,
    ReadSeq,
    FillRand100K,
    FillSeq100K,
    /// db_bench's second `readseq`, on the fillseq100K database: renamed so results keys
    /// stay unique.
    ReadSeq100K,
    ReadRand100K,
}

impl Bench {
    /// In db_bench_sqlite3's order (each benchmark runs on what the previous ones left).
    pub const ALL: [Bench; 12] = [
        Bench::FillSeq,
        Bench::FillSeqBatch,
        Bench::FillRandom,
        Bench::FillRandBatch,
        Bench::Overwrite,
        Bench::OverwriteBatch,
        Bench::ReadRandom,
        Bench::ReadSeq,
        Bench::FillRand100K,
        Bench::FillSeq100K,
        Bench::ReadSeq100K,
        Bench::ReadRand100K,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Bench::FillSeq => "fillseq",
            Bench::FillSeqBatch => "fillseqbatch",
            Bench::FillRandom => "fillrandom",
            Bench::FillRandBatch => "fillrandbatch",
            Bench::Overwrite => "overwrite",
            Bench::OverwriteBatch => "overwritebatch",
            Bench::ReadRandom => "readrandom",
            Bench::ReadSeq => "readseq",
            Bench::FillRand100K => "fillrand100K",
            Bench::FillSeq100K => "fillseq100K",
            Bench::ReadSeq100K => "readseq100K",
            Bench::ReadRand100K => "readrand100K",
        }
    }

    /// Starts on an empty store (db_bench opens a new database file).
    pub fn fresh(self) -> bool {
        matches!(
            self,
            Bench::FillSeq
                | Bench::FillSeqBatch
                | Bench::FillRandom
                | Bench::FillRandBatch
                | Bench::FillRand100K
                | Bench::FillSeq100K
        )
    }

    pub fn is_write(self) -> bool {
        !matches!(
            self,
            Bench::ReadRandom | Bench::ReadSeq | Bench::ReadSeq100K | Bench::ReadRand100K
        )
    }

    /// One SQLite transaction per write (db_bench's batch size 1) rather than per message.
    pub fn transaction_per_row(self) -> bool {
        matches!(
            self,
            Bench::FillSeq
                | Bench::FillRandom
                | Bench::Overwrite
                | Bench::FillRand100K
                | Bench::FillSeq100K
        )
    }

    pub fn value_size(self) -> u64 {
        match self {
            Bench::FillRand100K | Bench::FillSeq100K => BIG_VALUE_SIZE,
            _ => VALUE_SIZE,
        }
    }

    /// Ops for N entries (db_bench: N, or N/1000 for the 100K benchmarks).
    pub fn ops(self, num: u64) -> u64 {
        match self {
            Bench::FillRand100K | Bench::FillSeq100K | Bench::ReadSeq100K | Bench::ReadRand100K => {
                (num / 1_000).max(1)
            }
            _ => num,
        }
    }
}

impl fmt::Display for Bench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One measured line: a store and a benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DbBenchScenario {
    pub store: KvStore,
    pub bench: Bench,
}

/// db_bench's N in this suite: small, so the default run stays quick.
pub const DEFAULT_NUM: u64 = 10_000;

pub struct DbBench;

#[derive(Args)]
#[command(next_help_heading = "dbbench")]
pub struct DbBenchArgs {
    /// db_bench's N (entries); the 100K benchmarks use N/1000.
    #[arg(long, default_value_t = DEFAULT_NUM)]
    dbbench_num: u64,
    /// SQLite journal mode (db_bench_sqlite3 uses WAL).
    #[arg(long, value_enum, ignore_case = true, default_value_t = JournalMode::Wal)]
    dbbench_journal_mode: JournalMode,
}

/// The dbbench suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The map for `btree`; SQLite's rowid and WITHOUT ROWID tables for `sqlite`.
    pub stores: Vec<StoreKind>,
    /// db_bench's N (`--num`).
    pub num: u64,
    /// SQLite's journal mode (db_bench_sqlite3 uses WAL).
    pub journal_mode: JournalMode,
    pub usd_per_xdr: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            stores: StoreKind::ALL.to_vec(),
            num: DEFAULT_NUM,
            journal_mode: JournalMode::Wal,
            usd_per_xdr: DEFAULT_USD_PER_XDR,
        }
    }
}

impl Config {
    /// The stores measured: the store table's schemas of this suite (the map, then SQLite
    /// rowid and WITHOUT ROWID in `journal_mode`), each kept only if `stores` selects its
    /// store.
    pub fn kv_stores(&self) -> Vec<KvStore> {
        KvStore::of_suite(SUITE, &self.stores, &[self.journal_mode])
    }

    /// Every scenario, per store in db_bench's benchmark order.
    pub fn matrix(&self) -> Vec<DbBenchScenario> {
        self.kv_stores()
            .into_iter()
            .flat_map(|store| Bench::ALL.map(|bench| DbBenchScenario { store, bench }))
            .collect()
    }
}

/// LevelDB's `Random` (Park–Miller), as db_bench draws its random keys; shared with the
/// canister, which builds db_bench's values with it.
pub use bench_types::rng::LevelDbRandom;

/// The keys of every benchmark for N entries, drawn as db_bench_sqlite3 draws them: one
/// `Random(301)` shared by the whole run in its benchmark order, the skipped fillrandsync
/// still drawing its N/100 keys so later benchmarks get db_bench's very keys.
/// Read sequential benchmarks have no keys (they read in key order).
pub fn keys(num: u64) -> Vec<(Bench, Vec<u64>)> {
    let mut rand = LevelDbRandom::new(301);
    let mut draw = |count: u64, range: u64| -> Vec<u64> {
        (0..count)
            .map(|_| u64::from(rand.next_u32()) % range)
            .collect()
    };
    let mut out = Vec::new();
    for bench in Bench::ALL {
        let n = bench.ops(num);
        let keys = match bench {
            Bench::FillSeq | Bench::FillSeqBatch | Bench::FillSeq100K => (0..n).collect(),
            Bench::ReadSeq | Bench::ReadSeq100K => Vec::new(),
            _ => draw(n, n),
        };
        out.push((bench, keys));
        if bench == Bench::FillRandom {
            // db_bench's fillrandsync comes next and draws N/100 keys below N/100.
            let _ = draw(num / 100, (num / 100).max(1));
        }
    }
    out
}

/// db_bench's result line with instructions for time:
/// `fillseq      :   52176.300 instructions/op;  116.0 bytes/op (10000 ops)`.
pub fn line(name: &str, instructions_per_op: f64, bytes_per_op: f64, ops: u64) -> String {
    format!("{name:<12} : {instructions_per_op:11.3} instructions/op; {bytes_per_op:8.1} bytes/op ({ops} ops)")
}

/// Sums the messages of one benchmark (shared with the keys and sysbench suites, whose
/// messages report the same `DbBenchReport`).
#[derive(Default)]
pub(crate) struct Totals {
    pub(crate) ops: u64,
    pub(crate) found: u64,
    pub(crate) bytes: u64,
    pub(crate) store_instructions: u64,
    pub(crate) instructions: u64,
    pub(crate) cycles: u128,
    pub(crate) heap_delta: i64,
    pub(crate) stable_delta: i64,
    pub(crate) heap_dirty: u64,
    pub(crate) stable_dirty: u64,
    pub(crate) pages: Option<PageCounts>,
    pub(crate) messages: u64,
    /// The messages' profiles added up, when the run profiles.
    pub(crate) profile: Option<crate::engine::Profile>,
}

impl Totals {
    pub(crate) fn add(&mut self, m: Measured<DbBenchReport>, update: bool) -> Result<(), String> {
        let r = m.value?;
        let msg = m.message;
        self.ops += r.ops;
        self.found += r.found;
        self.bytes += r.bytes;
        self.store_instructions += r.instructions;
        self.instructions += msg.instructions;
        if update {
            self.cycles += CyclesFees::APPLICATION_13.execution_cost(msg.instructions, false);
        }
        self.heap_delta += (msg.heap_bytes_after as i64 - msg.heap_bytes_before as i64) / 65536;
        self.stable_delta +=
            (msg.stable_bytes_after as i64 - msg.stable_bytes_before as i64) / 65536;
        self.heap_dirty += msg.heap_dirty_pages;
        self.stable_dirty += msg.stable_dirty_pages;
        self.pages = PageCounts::sum(self.pages, msg.pages.as_ref());
        self.messages += 1;
        crate::engine::Profile::add_to_sum(&mut self.profile, msg.profile.as_ref());
        Ok(())
    }

    /// The measured part of a record that sums several messages (the keys and sysbench
    /// suites'), per `per` rows: priced as updates, with neither an ingress price nor one
    /// message's page map.
    pub(crate) fn record(&self, per: u64, usd_per_xdr: f64) -> ScenarioResult {
        ScenarioResult {
            instructions: self.instructions,
            instructions_per_row: self.instructions as f64 / per as f64,
            store_instructions: self.store_instructions,
            store_instructions_per_row: self.store_instructions as f64 / per as f64,
            cycles: self.cycles as u64,
            usd: self.cycles as f64 / 1e12 * usd_per_xdr,
            heap_pages_delta: 0,
            stable_pages_delta: self.stable_delta,
            heap_dirty_pages: self.heap_dirty,
            stable_dirty_pages: self.stable_dirty,
            pages: self.pages,
            bytes: self.bytes,
            ingress_cycles: 0,
            profile: String::new(),
            profile_data: self.profile.clone(),
            page_map_data: None,
            ..ScenarioResult::default()
        }
    }
}

/// Runs one benchmark's messages on the current state. `keys` are the keys to write or
/// look up, or for the sequential reads the start key of each message (the host knows
/// which keys are present, so the canister need not return where a message stopped).
fn run_bench(
    client: &mut BenchClient<'_>,
    store: KvStore,
    bench: Bench,
    keys: &[u64],
    ops: u64,
) -> Result<Result<Totals, String>> {
    let name = store.canister_name(SUITE);
    let mut totals = Totals::default();
    let mut done = 0;
    while done < ops {
        let n = OPS_PER_MESSAGE.min(ops - done);
        let slice = &keys[done as usize..(done + n) as usize];
        let measured = match bench {
            Bench::ReadSeq | Bench::ReadSeq100K => client.dbbench_read_seq(name, slice[0], n)?,
            Bench::ReadRandom | Bench::ReadRand100K => client.dbbench_read_random(name, slice)?,
            _ => client.dbbench_write(&DbBenchWrite {
                store: name.into(),
                keys: slice.to_vec(),
                value_size: bench.value_size(),
                first_value: done,
                transaction_per_row: bench.transaction_per_row(),
            })?,
        };
        if let Err(e) = totals.add(measured, bench.is_write()) {
            return Ok(Err(format!(
                "message {} of {bench}: {e}",
                totals.messages + 1
            )));
        }
        done += n;
    }
    Ok(Ok(totals))
}

#[allow(clippy::too_many_arguments)]
fn result(
    cfg: &Config,
    engine: &str,
    store: KvStore,
    bench: Bench,
    ops: u64,
    keys: &[u64],
    outcome: Result<Totals, String>,
    refused: bool,
) -> ScenarioResult {
    let method = match bench {
        Bench::ReadSeq | Bench::ReadSeq100K => "dbbench_read_seq",
        Bench::ReadRandom | Bench::ReadRand100K => "dbbench_read_random",
        _ => "dbbench_write",
    };
    let first: Vec<String> = keys.iter().take(3).map(|k| k.to_string()).collect();
    let messages = ops.div_ceil(OPS_PER_MESSAGE);
    let args = format!(
        "store {:?}, keys {}{}, value_size {}, {} per message, {messages} message(s){}",
        store.canister_name(SUITE),
        first.join(", "),
        if keys.len() > 3 { ", ..." } else { "" },
        if bench.is_write() {
            bench.value_size()
        } else {
            0
        },
        OPS_PER_MESSAGE.min(ops.max(1)),
        if bench.is_write() && bench.transaction_per_row() {
            ", a transaction per write"
        } else {
            ""
        }
    );
    let mut r = ScenarioResult {
        suite: SUITE.into(),
        engine: engine.into(),
        store: store.record().into(),
        journal_mode: store.journal_column(),
        position: "db_bench".into(),
        operation: bench.name().into(),
        batch: ops,
        rows_before: 0,
        method: method.into(),
        args,
        ..ScenarioResult::default()
    };
    match outcome {
        Err(reason) if refused => r.status = Status::Refused(reason),
        Err(reason) => r.status = Status::Failed(reason),
        Ok(t) if t.ops != ops => {
            r.status = Status::Failed(format!(
                "expected {ops} ops, the canister reports {}",
                t.ops
            ));
        }
        Ok(t) => {
            let n = ops.max(1) as f64;
            r.store_instructions = t.store_instructions;
            r.store_instructions_per_row = t.store_instructions as f64 / n;
            r.instructions = t.instructions;
            r.instructions_per_row = t.instructions as f64 / n;
            r.cycles = t.cycles as u64;
            r.usd = t.cycles as f64 / 1e12 * cfg.usd_per_xdr;
            r.heap_pages_delta = t.heap_delta;
            r.stable_pages_delta = t.stable_delta;
            r.heap_dirty_pages = t.heap_dirty;
            r.add_profile(t.profile.as_ref());
            r.stable_dirty_pages = t.stable_dirty;
            r.pages = t.pages;
            r.bytes = t.bytes;
            // Reads of absent keys are ops too (db_bench counts them); found is in bytes.
            let _ = t.found;
        }
    }
    r
}

/// db_bench's output: per store a header and one line per benchmark.
pub fn lines(report: &Report) -> String {
    let mut out = String::new();
    let mut current = None;
    for r in report.results.iter().filter(|r| r.position == "db_bench") {
        let store = (r.store.clone(), r.journal_mode.clone());
        if current.as_ref() != Some(&store) {
            let label = match KvStore::of_record(&r.store, &r.journal_mode) {
                Some(store) => store.described(),
                None => format!("{} {}", r.store, r.journal_mode),
            };
            if current.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("{label}\n"));
            current = Some(store);
        }
        match &r.status {
            Status::Ok => {
                let bytes_per_op = r.bytes as f64 / r.batch.max(1) as f64;
                out.push_str(&line(
                    &r.operation,
                    r.store_instructions_per_row,
                    bytes_per_op,
                    r.batch,
                ));
            }
            Status::Refused(reason) | Status::Failed(reason) => {
                out.push_str(&format!("{:<12} : {reason}", r.operation));
            }
        }
        out.push('\n');
    }
    out
}

/// The dbbench suite's table: benchmarks by stores, store instructions per op (and the
/// key + value bytes per op), plus the charged instructions per op.
fn table(report: &Report, charged: bool) -> Table {
    let mut rows: Vec<String> = Vec::new();
    let mut columns: Vec<StoreColumn> = Vec::new();
    let selected: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| r.position == "db_bench")
        .collect();
    for r in &selected {
        if !rows.contains(&r.operation) {
            rows.push(r.operation.clone());
        }
        let c = StoreColumn::of(r);
        if !columns.contains(&c) {
            columns.push(c);
        }
    }
    let label = |c: &StoreColumn| match KvStore::of_record(&c.store, &c.journal_mode) {
        Some(store) => store.short_label(),
        None => c.label(),
    };
    let mut headers = vec!["Benchmark".to_string()];
    headers.extend(columns.iter().map(label));
    let mut table = Table::new(headers);
    for op in &rows {
        let mut cells = vec![op.clone()];
        for c in &columns {
            let r = selected
                .iter()
                .find(|r| &r.operation == op && StoreColumn::of(r) == *c);
            cells.push(match r {
                None => "-".into(),
                Some(r) if r.status != Status::Ok => "failed".into(),
                Some(r) if charged => per_row(r.instructions_per_row),
                Some(r) => format!(
                    "{} ({} B)",
                    per_row(r.store_instructions_per_row),
                    thousands(r.bytes / r.batch.max(1))
                ),
            });
        }
        table.push(cells);
    }
    table
}

/// plot-dbbench.svg: store instructions per op, one row per benchmark and one marker per
/// store, on a log axis (db_bench's benchmarks have no batch axis).
fn plot(report: &Report) -> Option<Plot> {
    let points = report
        .results
        .iter()
        .filter(|r| r.position == "db_bench" && r.status == Status::Ok)
        .map(|r| store_dot(r, r.operation.clone()))
        .collect();
    store_dot_plot("dbbench", "db_bench", "op", points)
}

/// db_bench's lines, then store and charged instructions per op by benchmark and store.
pub fn document(report: &Report) -> Document {
    let plot = plot(report);
    let heading = |text: &str| Block::Heading {
        level: 2,
        text: text.into(),
    };
    let mut markdown = vec![message_cells_legend(report), heading("db_bench lines (instructions/op in place of micros/op: store work, ic0.performance_counter)")];
    if let Some(plot) = &plot {
        markdown.push(Block::Image {
            alt: "db_bench: store instructions per op".into(),
            file: plot.file.clone(),
        });
    }
    markdown.extend([
        Block::Code(lines(report)),
        heading("store instructions per op (key + value bytes per op)"),
        Block::Table(table(report, false)),
        heading("instructions charged per op (whole messages)"),
        Block::Table(table(report, true)),
    ]);
    Document {
        markdown,
        terminal: vec![
            Block::Code(lines(report)),
            heading("store instructions per op (key + value bytes per op)"),
            Block::Table(table(report, false)),
        ],
        plots: plot.into_iter().collect(),
    }
}

impl Define for DbBench {
    type Args = DbBenchArgs;
    type Plan = Config;

    fn plan(args: DbBenchArgs, common: &CommonArgs, _: &ArgMatches) -> Result<Config> {
        common.validate()?;
        Ok(Config {
            stores: common.stores.clone(),
            num: args.dbbench_num,
            journal_mode: args.dbbench_journal_mode,
            usd_per_xdr: common.usd_per_xdr,
        })
    }

    const DOCUMENT: fn(&Report) -> Document = document;
}

/// A store's benchmarks from one fresh benchmark up to the next one: they run in order on
/// one canister (each on what the previous left), independently of every other run.
struct Sequence {
    store: KvStore,
    /// Index into `Bench::ALL` of the first benchmark, and one past the last.
    benches: std::ops::Range<usize>,
    /// The store's empty state, and why the store was refused if it was.
    fresh: SnapshotId,
    refused: Option<String>,
}

impl Measure for Config {
    const SUITE: &'static str = SUITE;

    /// The modules its stores live in.
    fn modules(&self) -> Vec<ModuleNeed> {
        stores::needs(self.kv_stores().iter().map(|s| s.store_kind()))
    }

    fn validate(&self) -> Result<()> {
        if !(1_000..=MAX_NUM).contains(&self.num) {
            return Err(anyhow!(
                "--dbbench-num must be between 1000 and {MAX_NUM} (the 100K benchmarks use N/1000 ops), got {}",
                self.num
            ));
        }
        store_selected(&self.stores, Self::SUITE)
    }

    /// Runs the suite: per store, db_bench's benchmarks in order, fresh ones from an empty
    /// store, the others on what the previous benchmark left.
    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let cfg = self;
        let (session, exec) = (run.session, run.exec);
        let (work, engine_name) = (&session.work, &session.engine_name);
        let (mut client, installed) = session.install(run.engine, run.wasm)?;
        let canister = client.canister;
        let num = cfg.num;
        let all_keys = keys(num);
        // The empty store, warm: journal mode set, table created, statements compiled.
        let base = client.engine.snapshot(canister)?;
        let mut sequences = Vec::new();
        let mut set_up = Vec::new();
        for store in cfg.kv_stores() {
            let open = work.begin(
                Kind::Fill,
                format!("set up {}", store.record()),
                &[installed],
            );
            client.engine.restore(canister, base)?;
            let refused = match store.journal_mode() {
                Some(mode) => stores::set_journal_mode(&mut client, mode)?.err(),
                None => None,
            };
            let name = store.canister_name(SUITE);
            client
                .dbbench_reset(name)?
                .value
                .map_err(|e| anyhow!("dbbench_reset({name}) failed: {e}"))?;
            let fresh = client.engine.snapshot(canister)?;
            set_up.push(open.id);
            work.end(open);
            for first in (0..Bench::ALL.len()).filter(|&b| Bench::ALL[b].fresh()) {
                let end = (first + 1..Bench::ALL.len())
                    .find(|&b| Bench::ALL[b].fresh())
                    .unwrap_or(Bench::ALL.len());
                sequences.push(Sequence {
                    store,
                    benches: first..end,
                    fresh,
                    refused: refused.clone(),
                });
            }
        }
        let measured = pool::run_scenarios(
            &mut client,
            base,
            sequences.len(),
            exec,
            work,
            &set_up,
            &|i| {
                let seq = &sequences[i];
                format!("{}/{}", seq.store.record(), Bench::ALL[seq.benches.start])
            },
            run.progress,
            &|client, i| {
                let seq = &sequences[i];
                let store = seq.store;
                let mut present = std::collections::BTreeSet::new();
                let mut results = Vec::new();
                client.engine.restore(canister, seq.fresh)?;
                for (bench, bench_keys) in &all_keys[seq.benches.clone()] {
                    let bench = *bench;
                    let (keys, ops): (Vec<u64>, u64) = match bench {
                        Bench::ReadSeq | Bench::ReadSeq100K => {
                            // db_bench reads min(reads, rows) rows in key order.
                            let sorted: Vec<u64> = present.iter().copied().collect();
                            let ops = bench.ops(num).min(sorted.len() as u64);
                            (sorted, ops)
                        }
                        _ => (bench_keys.clone(), bench_keys.len() as u64),
                    };
                    let outcome = match &seq.refused {
                        Some(reason) => Err(reason.clone()),
                        None => run_bench(client, store, bench, &keys, ops)?,
                    };
                    if bench.is_write() {
                        present.extend(bench_keys.iter().copied());
                    }
                    results.push(result(
                        cfg,
                        engine_name,
                        store,
                        bench,
                        ops,
                        &keys,
                        outcome,
                        seq.refused.is_some(),
                    ));
                }
                Ok(results.into())
            },
        )?;
        let header = Header {
            rows_before: 0,
            seed: 301,
            payload_size: VALUE_SIZE,
            prefill: None,
            notes: notes(num),
        };
        Ok(session.report(&client, header, measured))
    }
}

fn notes(num: u64) -> Vec<String> {
    vec![
            format!("db_bench (seed 000) with N = {num}: keys are 16-byte \"%016d\" numbers, values 100 bytes (100,000 for the 100K benchmarks) of db_bench's half-compressible buffer; random keys come from LevelDB's Random(301) shared across the run as in db_bench_sqlite3, so they are db_bench's keys."),
            format!("Ops go {OPS_PER_MESSAGE} per update message (db_bench's batch size; an update must stay under 40B instructions). fillseq, fillrandom, overwrite and the 100K fills run each write in its own SQLite transaction (db_bench's autocommit); the *batch benchmarks one transaction per message. Reads are queries of up to {OPS_PER_MESSAGE} ops."),
            "Time is replaced by instructions: \"instructions/op\" is ic0.performance_counter(0) around the store work, summed over the benchmark's messages and divided by its ops; \"charged\" adds the rest of each message as the replica bills it. bytes/op is key + value bytes written or found (db_bench_sqlite3's readseq counted only value bytes).".into(),
            "Left out: fillseqsync and fillrandsync (a canister has no fsync; an update commits when it ends), the WAL checkpoint db_bench runs after each write benchmark (SQLite checkpoints on its own here), and timing. db_bench's second readseq is named readseq100K.".into(),
    ]
}
