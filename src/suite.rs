//! The suites that share seed 003's canister state: prefill both stores with `rows` rows
//! (ids 0, 10, 20, ...), snapshot, then run every scenario of the suite's matrix from that
//! identical state. `seed003` inserts and reads; `lookups` (seed 001) reads B keys per message.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{anyhow, Result};

use crate::bench_canister::{BenchClient, InsertReport, Measured, ReadReport, SqliteConfig};
use crate::engine::cost::CyclesFees;
use crate::engine::{Engine, SnapshotId};
use crate::report::Report;
use crate::scenario::{JournalMode, Operation, Position, Scenario, ScenarioResult, Status, Store};

/// Rows per prefill message: the canister's cap per call.
pub const PREFILL_CHUNK: u64 = bench_types::limits::users::MAX_ROWS_PER_CALL;
/// Prefilled ids are multiples of this, so every other id is free for new rows.
pub const ID_STEP: u64 = 10;
/// USD per XDR (1 trillion cycles = 1 XDR). An assumption, printed with every report.
pub const DEFAULT_USD_PER_XDR: f64 = 1.36;

/// A named set of scenarios, selected with `--suite NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Suite {
    /// Seed 003: inserts at the middle, end and random positions, and three reads.
    Seed003,
    /// Seed 001: one query reads B keys, B in 1, 10, 25, 50, 100, unsorted and sorted.
    Lookups,
    /// Seed 000: LevelDB's db_bench benchmarks on the map and SQLite rowid / WITHOUT ROWID.
    DbBench,
    /// Seed 002: u64, ULID, UUIDv4 and hex keys on the map and three SQLite schemas.
    Keys,
    /// Seed 004: sysbench's sbtest workloads on SQLite per journal mode and on the map.
    Sysbench,
}

impl Suite {
    /// Every registered suite, in the order `--suite all` runs them.
    pub const ALL: [Suite; 5] = [
        Suite::Seed003,
        Suite::Lookups,
        Suite::DbBench,
        Suite::Keys,
        Suite::Sysbench,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Suite::Seed003 => "seed003",
            Suite::Lookups => "lookups",
            Suite::DbBench => "dbbench",
            Suite::Keys => "keys",
            Suite::Sysbench => "sysbench",
        }
    }

    /// `seed003`, a comma-separated list of names, or `all`; duplicates dropped, run order kept.
    pub fn parse_selection(text: &str) -> Result<Vec<Suite>, String> {
        let mut out = Vec::new();
        for part in text.split(',').map(str::trim) {
            let chosen: Vec<Suite> = if part.eq_ignore_ascii_case("all") {
                Suite::ALL.to_vec()
            } else {
                vec![part.parse()?]
            };
            for s in chosen {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Suite {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Suite::ALL
            .into_iter()
            .find(|x| x.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown suite {s:?}; accepted: {}, all",
                    Suite::ALL.map(Suite::name).join(", ")
                )
            })
    }
}

/// Keys per query in the `lookups` suite (seed 001's batch sizes).
pub const LOOKUP_BATCHES: [u64; 5] = [1, 10, 25, 50, 100];

/// The seed-003 suite's old name; the config now serves every prefilled suite.
pub type Seed003Config = SuiteConfig;

#[derive(Clone, Debug)]
pub struct SuiteConfig {
    pub suite: Suite,
    pub rows: u64,
    pub batches: Vec<u64>,
    pub stores: Vec<Store>,
    pub positions: Vec<Position>,
    pub payload_size: u64,
    pub seed: u64,
    pub reads: bool,
    pub usd_per_xdr: f64,
    /// Keys per query of the `lookups` suite.
    pub lookup_batches: Vec<u64>,
    /// db_bench's N (`--num`) for the `dbbench` suite.
    pub dbbench_num: u64,
    /// SQLite's journal mode in the `dbbench` suite (db_bench_sqlite3 uses WAL).
    pub dbbench_journal_mode: JournalMode,
    /// Rows per store and key type in the `keys` suite.
    pub keys_rows: u64,
    /// SQLite's journal mode in the `keys` suite (seed 002 used WAL).
    pub keys_journal_mode: JournalMode,
    /// sbtest1 rows in the `sysbench` suite.
    pub sysbench_rows: u64,
    /// SQLite's journal modes in the `sysbench` suite (default: the canister's, PERSIST).
    pub sysbench_journal_modes: Vec<JournalMode>,
    /// The sysbench gate: most SQLite ÷ map per workload, and per section average.
    pub sysbench_max_ratio: f64,
    pub sysbench_max_section_ratio: f64,
}

/// Rows per store and key type in the keys suite: small, so the run stays quick.
pub const DEFAULT_KEYS_ROWS: u64 = 10_000;

/// db_bench's N in the dbbench suite: small, so the default run stays quick.
pub const DEFAULT_DBBENCH_NUM: u64 = 10_000;

impl Default for SuiteConfig {
    fn default() -> Self {
        let mut stores = vec![Store::BTree];
        stores.extend(JournalMode::ALL.map(Store::Sqlite));
        Self {
            suite: Suite::Seed003,
            rows: 1_000_000,
            batches: vec![1, 10, 100, 1_000, 10_000],
            stores,
            positions: Position::SEED003.to_vec(),
            payload_size: 100,
            seed: 2026,
            reads: true,
            usd_per_xdr: DEFAULT_USD_PER_XDR,
            lookup_batches: LOOKUP_BATCHES.to_vec(),
            dbbench_num: DEFAULT_DBBENCH_NUM,
            dbbench_journal_mode: JournalMode::Wal,
            keys_rows: DEFAULT_KEYS_ROWS,
            keys_journal_mode: JournalMode::Wal,
            sysbench_rows: crate::sysbench::DEFAULT_ROWS,
            sysbench_journal_modes: vec![JournalMode::Persist],
            sysbench_max_ratio: crate::sysbench::DEFAULT_MAX_RATIO,
            sysbench_max_section_ratio: crate::sysbench::DEFAULT_MAX_SECTION_RATIO,
        }
    }
}

/// Read operations measured per store and position.
pub const READS: [Operation; 3] = [
    Operation::PointLookups { keys: 1 },
    Operation::PointLookups { keys: 100 },
    Operation::RangeScan { rows: 1_000 },
];

impl SuiteConfig {
    /// Every scenario of the selected prefilled suite, in report order. The dbbench suite
    /// measures a sequence of benchmarks per store instead (`dbbench::matrix`), and the
    /// keys suite a fill per store and key type (`keys::matrix`).
    pub fn matrix(&self) -> Vec<Scenario> {
        match self.suite {
            Suite::Seed003 => self.seed003_matrix(),
            Suite::Lookups => self.lookups_matrix(),
            Suite::DbBench | Suite::Keys | Suite::Sysbench => Vec::new(),
        }
    }

    /// Per key order (draw order, then ascending), per store, every lookup batch. Both
    /// orders read the same keys, so the difference is the order alone.
    fn lookups_matrix(&self) -> Vec<Scenario> {
        let mut out = Vec::new();
        for position in [Position::Random, Position::Sorted] {
            for &store in &self.stores {
                for &keys in &self.lookup_batches {
                    out.push(Scenario {
                        store,
                        position,
                        operation: Operation::PointLookups { keys },
                    });
                }
            }
        }
        out
    }

    fn seed003_matrix(&self) -> Vec<Scenario> {
        let mut out = Vec::new();
        for &position in &self.positions {
            for &store in &self.stores {
                for &rows in &self.batches {
                    out.push(Scenario {
                        store,
                        position,
                        operation: Operation::Insert { rows },
                    });
                }
                if self.reads {
                    for operation in READS {
                        out.push(Scenario {
                            store,
                            position,
                            operation,
                        });
                    }
                }
            }
        }
        out
    }

    pub fn validate(&self) -> Result<()> {
        if self.rows < 2_000 {
            return Err(anyhow!(
                "--rows must be at least 2000 (the range scan reads 1,000 rows), got {}",
                self.rows
            ));
        }
        // Each suite checks only the sizes it uses: a lookups run ignores --batches.
        match self.suite {
            Suite::Seed003 => {
                if let Some(b) = self.batches.iter().find(|&&b| b == 0 || b > PREFILL_CHUNK) {
                    return Err(anyhow!(
                        "batch sizes must be between 1 and {PREFILL_CHUNK}, got {b}"
                    ));
                }
                if self.batches.iter().any(|&b| b > self.rows / 2) {
                    return Err(anyhow!(
                        "batch sizes must be at most half of --rows ({})",
                        self.rows / 2
                    ));
                }
            }
            Suite::DbBench => crate::dbbench::validate(self)?,
            Suite::Keys => crate::keys::validate(self)?,
            Suite::Sysbench => crate::sysbench::validate(self)?,
            Suite::Lookups => {
                if self.lookup_batches.is_empty() {
                    return Err(anyhow!("--lookup-batches needs at least one batch size"));
                }
                let max = PREFILL_CHUNK.min(self.rows / 2);
                if let Some(b) = self.lookup_batches.iter().find(|&&b| b == 0 || b > max) {
                    return Err(anyhow!(
                        "lookup batch sizes must be between 1 and {max} (at most {PREFILL_CHUNK} and half of --rows), got {b}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The deterministic generator the draws use (SplitMix64), shared with the canister.
pub use bench_types::rng::SplitMix64;

/// `count` distinct ids absent from the prefill (not multiples of `ID_STEP`), uniformly over
/// the prefilled range, in draw order. The stream depends only on the seed and the batch.
pub fn random_absent_ids(seed: u64, rows: u64, count: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed ^ count.wrapping_mul(0xA24B_AED4_963E_E407));
    let mut seen = HashSet::new();
    let mut ids = Vec::with_capacity(count as usize);
    while (ids.len() as u64) < count {
        let id = rng.below(rows) * ID_STEP + 1 + rng.below(ID_STEP - 1);
        if seen.insert(id) {
            ids.push(id);
        }
    }
    ids
}

/// `count` distinct prefilled ids drawn uniformly, in draw order.
pub fn random_present_ids(seed: u64, rows: u64, count: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed ^ 0x5EED ^ count);
    let mut seen = HashSet::new();
    let mut ids = Vec::with_capacity(count as usize);
    while (ids.len() as u64) < count {
        let id = rng.below(rows) * ID_STEP;
        if seen.insert(id) {
            ids.push(id);
        }
    }
    ids
}

/// Progress events, for a progress bar.
pub enum Progress<'a> {
    Prefill {
        store: &'a str,
        done: u64,
        total: u64,
    },
    Scenario {
        done: usize,
        total: usize,
        key: &'a str,
    },
}

/// What to call for one scenario: the canister arguments in Candid text, for the report
/// and for users who want to reproduce a number with dfx.
enum Call {
    Insert { offset: u64, step: u64, count: u64 },
    InsertIds(Vec<u64>),
    Get { offset: u64, step: u64, count: u64 },
    GetIds(Vec<u64>),
    Scan { offset: u64, count: u64 },
}

impl Call {
    fn for_scenario(s: &Scenario, cfg: &SuiteConfig) -> Call {
        let rows = cfg.rows;
        let middle = rows / 2 * ID_STEP;
        match (s.operation, s.position) {
            (Operation::Insert { rows: n }, Position::Middle) => Call::Insert {
                offset: middle + 1,
                step: ID_STEP,
                count: n,
            },
            (Operation::Insert { rows: n }, Position::End) => Call::Insert {
                offset: rows * ID_STEP,
                step: 1,
                count: n,
            },
            (Operation::Insert { rows: n }, Position::Random) => {
                Call::InsertIds(random_absent_ids(cfg.seed, rows, n))
            }
            (Operation::Insert { rows: n }, Position::Sorted) => {
                let mut ids = random_absent_ids(cfg.seed, rows, n);
                ids.sort_unstable();
                Call::InsertIds(ids)
            }
            (Operation::PointLookups { keys }, Position::Middle) => Call::Get {
                offset: middle,
                step: ID_STEP,
                count: keys,
            },
            (Operation::PointLookups { keys }, Position::End) => Call::Get {
                offset: (rows - keys) * ID_STEP,
                step: ID_STEP,
                count: keys,
            },
            (Operation::PointLookups { keys }, Position::Random) => {
                Call::GetIds(random_present_ids(cfg.seed, rows, keys))
            }
            (Operation::PointLookups { keys }, Position::Sorted) => {
                let mut ids = random_present_ids(cfg.seed, rows, keys);
                ids.sort_unstable();
                Call::GetIds(ids)
            }
            (Operation::RangeScan { rows: n }, Position::Middle) => Call::Scan {
                offset: middle,
                count: n,
            },
            (Operation::RangeScan { rows: n }, Position::End) => Call::Scan {
                offset: (rows - n) * ID_STEP,
                count: n,
            },
            (Operation::RangeScan { rows: n }, Position::Random | Position::Sorted) => {
                let start = SplitMix64::new(cfg.seed ^ 0x5CA7).below(rows - n) * ID_STEP;
                Call::Scan {
                    offset: start,
                    count: n,
                }
            }
        }
    }

    fn candid_args(&self) -> String {
        let list = |ids: &[u64]| {
            let shown: Vec<String> = ids.iter().take(3).map(|i| format!("{i} : nat64")).collect();
            if ids.len() > 3 {
                format!(
                    "(vec {{ {}; ... }})  # {} ids, seed-drawn",
                    shown.join("; "),
                    ids.len()
                )
            } else {
                format!("(vec {{ {} }})", shown.join("; "))
            }
        };
        match self {
            Call::Insert {
                offset,
                step,
                count,
            }
            | Call::Get {
                offset,
                step,
                count,
            } => format!("({offset} : nat64, {step} : nat64, {count} : nat64)"),
            Call::InsertIds(ids) | Call::GetIds(ids) => list(ids),
            Call::Scan { offset, count } => format!("({offset} : nat64, {count} : nat64)"),
        }
    }
}

enum Reply {
    Insert(Measured<InsertReport>),
    Read(Measured<ReadReport>),
}

fn run_call(client: &mut BenchClient<'_>, store: &str, call: &Call) -> Result<Reply> {
    Ok(match call {
        Call::Insert {
            offset,
            step,
            count,
        } => Reply::Insert(client.add_users(store, *offset, *step, *count)?),
        Call::InsertIds(ids) => Reply::Insert(client.add_users_ids(store, ids)?),
        Call::Get {
            offset,
            step,
            count,
        } => Reply::Read(client.get_users(store, *offset, *step, *count, false)?),
        Call::GetIds(ids) => Reply::Read(client.get_users_ids(store, ids, false)?),
        Call::Scan { offset, count } => {
            Reply::Read(client.scan_users(store, *offset, *count, false)?)
        }
    })
}

/// Fills both stores with `rows` rows each: ids 0, 10, 20, ..., every row really inserted.
pub fn prefill(
    client: &mut BenchClient<'_>,
    cfg: &SuiteConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let stores: Vec<&str> = ["btree", "sqlite"]
        .into_iter()
        .filter(|k| cfg.stores.iter().any(|s| s.kind() == *k))
        .collect();
    for store in stores {
        let mut done = 0;
        while done < cfg.rows {
            let count = PREFILL_CHUNK.min(cfg.rows - done);
            let out = client.add_users(store, done * ID_STEP, ID_STEP, count)?;
            let report = out
                .value
                .map_err(|e| anyhow!("prefill of {store} failed at row {done}: {e}"))?;
            if report.rows_inserted != count {
                return Err(anyhow!(
                    "prefill of {store} inserted {} rows instead of {count}",
                    report.rows_inserted
                ));
            }
            done += count;
            progress(Progress::Prefill {
                store,
                done,
                total: cfg.rows,
            });
        }
    }
    Ok(())
}

/// Runs the whole suite on `engine` and returns the report.
pub fn run(
    engine: &mut dyn Engine,
    wasm: &[u8],
    cfg: &SuiteConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Report> {
    cfg.validate()?;
    if cfg.suite == Suite::DbBench {
        return crate::dbbench::run(engine, wasm, cfg, progress);
    }
    if cfg.suite == Suite::Keys {
        return crate::keys::run(engine, wasm, cfg, progress);
    }
    if cfg.suite == Suite::Sysbench {
        return crate::sysbench::run(engine, wasm, cfg, progress);
    }
    let started = Instant::now();
    let engine_name = engine.name().to_string();
    let mut client = BenchClient::install(engine, wasm)?;
    client
        .set_payload_size(cfg.payload_size)?
        .value
        .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", cfg.payload_size))?;
    prefill(&mut client, cfg, progress)?;
    let canister = client.canister;
    let base = client.engine.snapshot(canister)?;

    // One starting snapshot per store: SQLite's journal mode is set on a fresh connection
    // after the prefill; a mode the canister refuses marks all that store's scenarios.
    let mut starts: Vec<(Store, Result<SnapshotId, String>)> = Vec::new();
    for &store in &cfg.stores {
        let start = match store.journal_mode() {
            None => Ok(base),
            Some(mode) => {
                client.engine.restore(canister, base)?;
                let config = SqliteConfig {
                    journal_mode: Some(mode.to_string()),
                    ..SqliteConfig::default()
                };
                match client.configure_sqlite(&config)?.value {
                    Ok(settings) if settings.journal_mode.eq_ignore_ascii_case(mode.as_str()) => {
                        Ok(client.engine.snapshot(canister)?)
                    }
                    Ok(settings) => Err(format!(
                        "asked for {mode}, SQLite uses {}",
                        settings.journal_mode
                    )),
                    Err(e) => Err(e),
                }
            }
        };
        starts.push((store, start));
    }

    let scenarios = cfg.matrix();
    let fees = CyclesFees::APPLICATION_13;
    let mut results = Vec::with_capacity(scenarios.len());
    for (i, scenario) in scenarios.iter().enumerate() {
        let key = scenario.key();
        progress(Progress::Scenario {
            done: i,
            total: scenarios.len(),
            key: &key,
        });
        let call = Call::for_scenario(scenario, cfg);
        let mut result = ScenarioResult {
            suite: cfg.suite.name().into(),
            engine: engine_name.clone(),
            store: scenario.store.kind().into(),
            journal_mode: scenario
                .store
                .journal_mode()
                .map(|m| m.to_string())
                .unwrap_or_default(),
            position: scenario.position.to_string(),
            operation: scenario.operation.kind().into(),
            batch: scenario.operation.rows(),
            rows_before: cfg.rows,
            method: scenario.method(),
            args: call.candid_args(),
            ..ScenarioResult::default()
        };
        let start = starts
            .iter()
            .find(|(s, _)| *s == scenario.store)
            .map(|(_, st)| st.clone())
            .expect("every store has a start");
        match start {
            Err(reason) => result.status = Status::Refused(reason),
            Ok(snapshot) => {
                client.engine.restore(canister, snapshot)?;
                let (message, outcome) = match run_call(&mut client, scenario.store.kind(), &call)?
                {
                    Reply::Insert(m) => (
                        m.message,
                        m.value.map(|r| (r.instructions, r.rows_inserted)),
                    ),
                    Reply::Read(m) => (m.message, m.value.map(|r| (r.instructions, r.rows_found))),
                };
                match outcome {
                    Err(e) => result.status = Status::Failed(e),
                    Ok((store_instructions, rows)) if rows != scenario.operation.rows() => {
                        result.status = Status::Failed(format!(
                            "expected {} rows, the canister reports {rows}",
                            scenario.operation.rows()
                        ));
                        result.store_instructions = store_instructions;
                    }
                    Ok((store_instructions, _)) => {
                        let n = scenario.operation.rows() as f64;
                        result.store_instructions = store_instructions;
                        result.store_instructions_per_row = store_instructions as f64 / n;
                        result.instructions = message.instructions;
                        result.instructions_per_row = message.instructions as f64 / n;
                        if matches!(scenario.operation, Operation::Insert { .. }) {
                            let cycles = fees.execution_cost(message.instructions, false);
                            result.cycles = cycles as u64;
                            result.usd = cycles as f64 / 1e12 * cfg.usd_per_xdr;
                        }
                        result.heap_pages_delta =
                            pages_delta(message.heap_bytes_before, message.heap_bytes_after);
                        result.stable_pages_delta =
                            pages_delta(message.stable_bytes_before, message.stable_bytes_after);
                        result.heap_dirty_pages = message.heap_dirty_pages;
                        result.stable_dirty_pages = message.stable_dirty_pages;
                    }
                }
            }
        }
        results.push(result);
    }
    progress(Progress::Scenario {
        done: scenarios.len(),
        total: scenarios.len(),
        key: "",
    });
    let mut notes = vec![
            format!("Prefill: ids 0, {ID_STEP}, 20, ..., {} in each store, {PREFILL_CHUNK} rows per message; every scenario starts from the same snapshot.", (cfg.rows - 1) * ID_STEP),
            "Store instructions: ic0.performance_counter(0) around the store work inside the canister (what seed 003 reports). Charged: the whole message as the replica bills it, including 1,000 instructions per heap page dirtied.".into(),
            format!("Cycles: 13-node application subnet, 5,000,000 per update + 1 per instruction; USD at {} per XDR (1 XDR = 10^12 cycles; an assumption). Queries are free when not replicated.", cfg.usd_per_xdr),
            format!("Random positions: ids drawn with seed {}; SQLite journal modes are set on a fresh connection after the prefill.", cfg.seed),
        ];
    if cfg.suite == Suite::Lookups {
        notes.push("Lookups (seed 001): each cell is one query reading B prefilled keys drawn uniformly (get_users_{btree,sqlite}_ids). \"random\" sends them in draw order, \"sorted\" sends the same keys in ascending order; the per-key figure is the cell divided by B.".into());
    }
    Ok(Report {
        suite: cfg.suite.name().into(),
        engine: engine_name,
        rows_before: cfg.rows,
        seed: cfg.seed,
        payload_size: cfg.payload_size,
        wall_seconds: started.elapsed().as_secs_f64(),
        executed_instructions: client.executed_instructions,
        results,
        notes,
        page_stats: Vec::new(),
        ceilings: None,
    })
}

fn pages_delta(before: u64, after: u64) -> i64 {
    (after as i64 - before as i64) / 65536
}
