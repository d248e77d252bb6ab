//! The `upgrade` suite (issue 14, items 3 and 4): what upgrading a canister costs with each
//! store, what the first calls after it cost, and the largest store each one can still
//! upgrade.
//!
//! Each store gets one canister, filled once in steps (to 1,000 rows, snapshot, upgrade,
//! back to the snapshot, on to 10,000 rows, ...), upgraded at every size N to the same
//! module. Then, for one store, a real upgrade at the first size predicted to fail shows the
//! replica's error and the rollback.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use candid::Encode;
use clap::{ArgMatches, Args, Command, FromArgMatches};
use serde::Serialize;
use serde_json::Value;

use super::pool::Task;
use super::scenario::{JournalMode, Store, StoreKind};
use super::users::{self, ID_STEP, PREFILL_CHUNK};
use super::{pool, CommonArgs, Exec, MemoryEstimate, Plan, Progress, Suite, MEMORY_BASE};
use crate::bench_canister::{BenchClient, HeapConfig, SqliteConfig, UpgradeStats};
use crate::engine::cost::{CyclesFees, Limits};
use crate::engine::{Engine, InstallStage, MessageReport};
use crate::report::format::{compact, thousands};
use crate::report::svg::Axes;
use crate::report::work::Kind;
use crate::report::{
    Block, Document, LinePlot, Plot, PlotKind, Report, ScenarioResult, Series, Status, Table,
};
use bench_types::names::HeapEncoding;

pub struct Upgrade;

/// The sizes measured by default.
pub const SIZES: [u64; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// The limit run is only made at a size up to this many rows.
pub const MAX_LIMIT_RUN_ROWS: u64 = 10_000_000;
/// Rows of the two calibration points at the limit run's payload size.
pub const CALIBRATION_SIZES: [u64; 2] = [1_000, 10_000];
/// The replica lowers a canister's `install_code_debit` by this much per round
/// (`install_code_rate_limit`, rs/config/src/subnet_config.rs).
pub const INSTALL_CODE_RATE_LIMIT: u64 = 2_000_000_000;
/// The wasm32 heap maximum.
pub const MAX_HEAP_BYTES: u64 = 4 << 30;
/// Bytes of payload written per fill message at most, so large payloads fill in messages
/// far below the update instruction limit (at 100 bytes this is the canister's 100,000).
const FILL_BYTES_PER_MESSAGE: u64 = 10_000_000;
/// While the limit run's upgrade succeeds, it fills this much more (in parts per thousand)
/// and tries again.
const LIMIT_RUN_STEP_PERMILLE: u64 = 50;

/// The names of the suite's lists in results.json.
const POINTS: &str = "upgrade_points";
const LIMIT_RUN: &str = "upgrade_limit_run";

#[derive(Args)]
#[command(next_help_heading = "upgrade")]
struct UpgradeArgs {
    /// Store sizes N at which each store is upgraded, comma-separated; sizes above --rows
    /// are left out. The SQLite journal modes default to PERSIST (the canister's default)
    /// and OFF unless --journal-modes is given.
    #[arg(long, value_delimiter = ',', default_values_t = SIZES)]
    upgrade_sizes: Vec<u64>,
    /// Skip the real upgrade at the first size predicted to fail.
    #[arg(long)]
    no_limit_run: bool,
    /// Payload bytes per row of the limit run: larger rows reach the heap limits with fewer
    /// rows, so the failing upgrade is reached in reasonable time.
    #[arg(long, default_value_t = 10_000)]
    limit_payload_size: u64,
    /// Encodings of the heap store's pre_upgrade, comma-separated (candid, cbor): the heap
    /// store (when --stores has heap) is measured once per encoding.
    #[arg(long, value_delimiter = ',', default_values_t = HeapEncoding::NAMES.map(String::from))]
    heap_encodings: Vec<String>,
}

/// `--heap-encodings`, in the canister's order, duplicates dropped.
fn sorted_encodings(names: &[String]) -> Result<Vec<HeapEncoding>> {
    let mut picked = Vec::new();
    for name in names {
        let e = HeapEncoding::parse(name).map_err(|e| anyhow!("--heap-encodings: {e}"))?;
        if !picked.contains(&e) {
            picked.push(e);
        }
    }
    Ok(HeapEncoding::ALL
        .into_iter()
        .filter(|e| picked.contains(e))
        .collect())
}

/// A store as this suite measures it: the heap store once per encoding, or a store of the
/// other suites (StableBTreeMap, SQLite in a journal mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpgradeStore {
    Heap(HeapEncoding),
    Users(Store),
}

impl UpgradeStore {
    pub fn label(self) -> String {
        match self {
            UpgradeStore::Heap(HeapEncoding::Candid) => "heap (Candid)".into(),
            UpgradeStore::Heap(HeapEncoding::Cbor) => "heap (CBOR)".into(),
            UpgradeStore::Users(s) => s.label(),
        }
    }
    pub fn store_kind(self) -> StoreKind {
        match self {
            UpgradeStore::Heap(_) => StoreKind::Heap,
            UpgradeStore::Users(s) => s.store_kind(),
        }
    }
    /// As in the canister's method names.
    pub fn kind(self) -> &'static str {
        match self {
            UpgradeStore::Heap(_) => bench_types::names::HEAP,
            UpgradeStore::Users(s) => s.kind(),
        }
    }
    pub fn journal_mode(self) -> Option<JournalMode> {
        match self {
            UpgradeStore::Heap(_) => None,
            UpgradeStore::Users(s) => s.journal_mode(),
        }
    }
    /// Whether pre_upgrade serializes the rows (the heap store): the stores in stable memory
    /// keep them where they are.
    pub fn saved_on_upgrade(self) -> bool {
        matches!(self, UpgradeStore::Heap(_))
    }
    /// What tells two stores of one kind apart besides the journal mode (the heap store's
    /// encoding), in the record's `position` column.
    fn variant(self) -> String {
        match self {
            UpgradeStore::Heap(e) => e.name().into(),
            UpgradeStore::Users(_) => String::new(),
        }
    }
}

/// The upgrade suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub stores: Vec<UpgradeStore>,
    /// Ascending, each at most `rows`.
    pub sizes: Vec<u64>,
    pub rows: u64,
    pub payload_size: u64,
    pub seed: u64,
    pub usd_per_xdr: f64,
    /// The store of the limit run and its payload size, or None.
    pub limit_run: Option<(UpgradeStore, u64)>,
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        if self.stores.is_empty() {
            bail!("no store selected (--stores and at least one --journal-modes)");
        }
        if self.sizes.is_empty() {
            bail!(
                "no --upgrade-sizes at most --rows ({}): nothing to measure",
                self.rows
            );
        }
        if let Some(&n) = self.sizes.iter().find(|&&n| n < 200) {
            bail!("--upgrade-sizes must be at least 200 (the point lookup reads 100 rows around the middle), got {n}");
        }
        if self.payload_size == 0 {
            bail!("--payload-size must be at least 1");
        }
        if let Some((_, p)) = self.limit_run {
            if p == 0 {
                bail!("--limit-payload-size must be at least 1");
            }
        }
        Ok(())
    }

    /// One scenario per store, then the limit run.
    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .stores
            .iter()
            .map(|s| format!("upgrade/{}", s.label()))
            .collect();
        if let Some((store, _)) = self.limit_run {
            keys.push(format!("limit/{}", store.label()));
        }
        keys
    }
}

impl Suite for Upgrade {
    fn name(&self) -> &'static str {
        "upgrade"
    }

    fn args(&self, cmd: Command) -> Command {
        UpgradeArgs::augment_args(cmd)
    }

    fn plan(&self, matches: &ArgMatches, common: &CommonArgs) -> Result<Box<dyn Plan>> {
        let args = UpgradeArgs::from_arg_matches(matches)?;
        let mut common = common.clone();
        if matches.value_source("journal_modes") != Some(clap::parser::ValueSource::CommandLine) {
            common.journal_modes = vec![JournalMode::Persist, JournalMode::Off];
        }
        common.validate()?;
        let mut stores = Vec::new();
        // The heap store once per --heap-encodings, then the others.
        if common.has(StoreKind::Heap) {
            for e in sorted_encodings(&args.heap_encodings)? {
                stores.push(UpgradeStore::Heap(e));
            }
        }
        stores.extend(
            users::stores(&common)
                .into_iter()
                .filter(|s| *s != Store::Heap)
                .map(UpgradeStore::Users),
        );
        let sizes: Vec<u64> = super::sorted_unique(args.upgrade_sizes)
            .into_iter()
            .filter(|&n| n <= common.rows)
            .collect();
        let limit_run = match args.no_limit_run {
            true => None,
            false => limit_store(&stores).map(|s| (s, args.limit_payload_size)),
        };
        let cfg = Config {
            stores,
            sizes,
            rows: common.rows,
            payload_size: common.payload_size,
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
            limit_run,
        };
        cfg.validate()?;
        Ok(Box::new(cfg))
    }

    fn document(&self, report: &Report) -> Document {
        document(report)
    }
}

/// The store the limit run shows: the first whose upgrade work grows with its rows (the
/// stores in stable memory upgrade in constant work and do not fail below 10,000,000 rows).
fn limit_store(stores: &[UpgradeStore]) -> Option<UpgradeStore> {
    stores.iter().copied().find(|s| s.saved_on_upgrade())
}

/// One measured upgrade, for the limits: kept in results.json.
#[derive(Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Point {
    /// The store's label.
    pub store: String,
    pub rows: u64,
    pub payload_size: u64,
    /// Measured at the limit run's payload size to predict its size (not a row of the
    /// upgrade table).
    pub calibration: bool,
    pub compile_instructions: u64,
    pub pre_upgrade_instructions: u64,
    pub post_upgrade_instructions: u64,
    pub upgrade_instructions: u64,
    /// Heap before the upgrade (the old module's, with the rows).
    pub heap_bytes_before: u64,
    /// Heap when pre_upgrade ends: the map and its encoded copy (Wasm memory never
    /// shrinks, so this is the peak).
    pub heap_bytes_pre_upgrade: u64,
    /// The new module's heap when post_upgrade ends (what wasm_memory_limit is checked on).
    pub heap_bytes_after: u64,
    pub stable_bytes_after: u64,
    /// The heap store's encoded size, as the canister reports it (0 for other stores).
    pub encoded_bytes: u64,
}

/// The limit run: the prediction it was made from and what happened.
#[derive(Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct LimitRun {
    pub store: String,
    pub payload_size: u64,
    pub predicted: Predicted,
    /// The size run (None when no limit is predicted within MAX_LIMIT_RUN_ROWS).
    pub rows: Option<u64>,
    /// The upgrade's error code and message, or None if it succeeded.
    pub error_code: Option<String>,
    pub error: Option<String>,
    /// After the failed upgrade: the module (as the `stats` query sees it), the rows the
    /// store reports and the 100-key lookup's rows found.
    pub rows_after: Option<u64>,
    pub lookup_rows_found: Option<u64>,
    /// The heap when the failing upgrade's pre_upgrade ended (or trapped).
    #[serde(default)]
    pub heap_bytes_in_pre_upgrade: Option<u64>,
    pub note: String,
}

/// The largest N each limit allows, from a straight line through the two largest measured
/// sizes; None when the measured cost does not grow with N.
#[derive(Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Predicted {
    /// install_code's 300B instructions (compilation and every hook together).
    pub instructions: Option<u64>,
    /// wasm_memory_limit (3 GiB by default): the heap while it holds the rows, and the new
    /// heap after post_upgrade.
    pub wasm_memory_limit: Option<u64>,
    /// The 4 GiB wasm32 heap during pre_upgrade (exempt from wasm_memory_limit), map and
    /// encoded copy together.
    pub heap_4gib: Option<u64>,
}

impl Predicted {
    /// The first size predicted to fail: one past the smallest limit.
    pub fn first_failing(&self) -> Option<u64> {
        [self.instructions, self.wasm_memory_limit, self.heap_4gib]
            .into_iter()
            .flatten()
            .min()
            .map(|n| n + 1)
    }
}

/// The largest n with `a + b n <= limit` for the line through the two largest points
/// `(n, y)`; None with fewer than two points or when y does not grow.
pub fn largest_within(points: &[(u64, u64)], limit: u64) -> Option<u64> {
    let mut pts = points.to_vec();
    pts.sort_unstable();
    let [.., (n1, y1), (n2, y2)] = pts[..] else {
        return None;
    };
    if n2 <= n1 || y2 <= y1 {
        return None;
    }
    let slope = (y2 - y1) as f64 / (n2 - n1) as f64;
    let intercept = y2 as f64 - slope * n2 as f64;
    let n = ((limit as f64 - intercept) / slope).floor();
    Some(if n < 0.0 { 0 } else { n as u64 })
}

/// Predicts the limits of one store from its points.
pub fn predict(points: &[&Point], limits: &Limits) -> Predicted {
    let line = |f: &dyn Fn(&Point) -> u64| -> Vec<(u64, u64)> {
        points.iter().map(|p| (p.rows, f(p))).collect()
    };
    let memory_limit = match limits.wasm_memory_limit {
        0 => MAX_HEAP_BYTES,
        l => l,
    };
    Predicted {
        instructions: largest_within(
            &line(&|p| p.upgrade_instructions),
            limits.max_instructions_per_install,
        ),
        wasm_memory_limit: largest_within(
            &line(&|p| p.heap_bytes_before.max(p.heap_bytes_after)),
            memory_limit,
        ),
        heap_4gib: largest_within(&line(&|p| p.heap_bytes_pre_upgrade), MAX_HEAP_BYTES),
    }
}

impl Plan for Config {
    fn run(
        &self,
        engine: &mut dyn Engine,
        wasm: &[u8],
        exec: &Exec,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Report> {
        self.validate()?;
        let started = Instant::now();
        let engine_name = engine.name().to_string();
        let hook_charges = match engine.replica().and_then(|r| r.memory_tracker) {
            Some(_) => "the memory tracker's page charges",
            None => "the heap dirty-page charge after it",
        };
        let work = pool::Recorder::new(exec.jobs);
        let (mut client, installed) = pool::install(engine, wasm, &work)?;
        let build = new_build(wasm)?;
        let base = pool::graph::snapshot(client.engine, client.canister)?;
        let keys = self.keys();
        let stores = self.stores.len();
        let indices = exec.indices(keys.len());
        let plan = keys.iter().map(|k| k.clone() + "\n").collect::<String>();
        let setup = client.executed_instructions;
        let outcomes: Vec<Grown> = keys.iter().map(|_| Grown::default()).collect();
        let mut tasks = Vec::new();
        let order = Order {
            serial: exec.jobs <= 1,
            stores,
        };
        if !indices.is_empty() {
            // Compiling the new build the upgrades install overlaps the fills.
            let build = &build;
            tasks.push(
                Task::new(Kind::Compile, "compile the new build", move |lane| {
                    lane.client.engine.prepare(build)
                })
                .priority(order.compile()),
            );
        }
        let ctx = Shared {
            cfg: self,
            engine: &engine_name,
            new_build: &build,
            base: &base,
        };
        for &i in &indices {
            let out = &outcomes[i];
            let task = if i < stores {
                let step = Step {
                    store: self.stores[i],
                    size: 0,
                    from: None,
                    fill_priority: order.fill(i),
                    upgrade_priority: order.upgrade(i),
                };
                grow(&ctx, step, out)
            } else {
                let (store, payload) = self.limit_run.expect("the last scenario is the limit run");
                let ctx = &ctx;
                Task::new(
                    Kind::Fill,
                    format!("limit run: configure {}", store.label()),
                    move |lane| {
                        lane.restore(ctx.base)?;
                        let outcome = limit_run(
                            &mut lane.client,
                            self,
                            ctx.engine,
                            ctx.new_build,
                            store,
                            payload,
                        )?;
                        out.put(0, outcome);
                        Ok(())
                    },
                )
                .priority(order.limit_run())
                .park()
            };
            tasks.push(task.after(&[installed]));
        }
        pool::graph::run(&mut client, &base, exec, &work, progress, tasks)?;
        let measured = pool::Outcomes::new(
            indices
                .iter()
                .map(|&i| (i, outcomes[i].outcome()))
                .collect(),
            keys.len(),
            pool::sha256_hex(plan.as_bytes()),
            exec.shard,
            setup,
        );
        let mut notes = vec![
            format!("Each store has its own canister, filled once with ids 0, {ID_STEP}, 20, ... in steps to each size N ({}), with a snapshot at each N; the upgrade and the calls around it run on that snapshot, and filling continues from it.", self.sizes.iter().map(|n| thousands(*n)).collect::<Vec<_>>().join(", ")),
            format!("pre_upgrade / post_upgrade: `instructions` is what the engine meters for the hook (its Wasm, System API and stable-memory charges and {hook_charges}); `store_instructions` is ic0.performance_counter(0) inside the hook as the canister reports it (`upgrade_stats`; 0 where the canister does not report it). upgrade: the whole install_code as the replica meters it, to a new build (the same code with another module hash, as a real upgrade ships one), after a checkpoint: pre_upgrade + creating the new execution state (compiling the module, 6,000 instructions per Wasm instruction, plus the vintage's base cost) + post_upgrade, one shared 300B budget; its cycles are 5,000,000 + 1 per instruction (13-node subnet, prepaid at 300B and refunded); hooks carry no cycles of their own. upgrade_same_module (\"same module\"): the same install_code again on the same snapshot, with no checkpoint since the first installed the build: the replica expects the module compiled and (from vintage 2025-03) counts 1/100 of its compilation, so it is the upgrade less 99/100 of the compilation; a user meets it only when installing a module again soon (checkpoints come every few minutes)."),
            "warm_update / warm_query: a 1-row insert in the middle and a 100-key point lookup (query) on the canister as it was filled; first_update / first_query: the same calls right after the upgrade, on a fresh heap (SQLite's page cache, the B-tree header and every other heap cache are gone).".into(),
            format!("Rate limit: after an install_code the replica refuses the next one with IC0209 (\"is rate limited because it executed too many instructions in the previous install_code messages\") until the canister's install_code_debit, raised by the instructions used, has been lowered by {} per round. The embedded engine does not model this debit. No measured upgrade follows another on the same canister: each runs on the snapshot taken after filling, which took at least one more message (round) after the install, so the numbers are those of a user who spaces upgrades apart; the wait column says how many rounds that user waits after each upgrade.", thousands(INSTALL_CODE_RATE_LIMIT)),
        ];
        if self.limit_run.is_none() {
            notes.push("No limit run: no store selected saves its rows in pre_upgrade (the stores in stable memory upgrade in work that does not grow with N), or --no-limit-run.".into());
        }
        let mut report = Report {
            suite: "upgrade".into(),
            engine: engine_name,
            rows_before: self.sizes.last().copied().unwrap_or(0),
            seed: self.seed,
            payload_size: self.payload_size,
            wall_seconds: started.elapsed().as_secs_f64(),
            prefill: None,
            executed_instructions: client.executed_instructions,
            work: None,
            results: Vec::new(),
            notes,
            extra: Default::default(),
        };
        measured.into_report(&mut report);
        report.work = Some(work.log());
        Ok(report)
    }

    fn memory_estimate(&self, exec: &Exec) -> Option<MemoryEstimate> {
        let keys = self.keys().len();
        let indices = exec.indices(keys);
        if indices.is_empty() {
            return None;
        }
        let jobs = exec.jobs.min(indices.len()).max(1);
        let limit_run = self.limit_run.is_some() && indices.contains(&(keys - 1));
        // The scenarios without the limit run (all of them when it is not among them).
        let stores_only: Vec<usize> = indices
            .iter()
            .copied()
            .filter(|&i| !limit_run || i != keys - 1)
            .collect();
        let mut smaller = Vec::new();
        if jobs > 1 {
            smaller.push(("--jobs 1".to_string(), self.peak_memory(&indices, 1)));
        }
        if limit_run {
            smaller.push((
                "--no-limit-run".to_string(),
                self.peak_memory(&stores_only, jobs),
            ));
            if jobs > 1 {
                smaller.push((
                    "--no-limit-run --jobs 1".to_string(),
                    self.peak_memory(&stores_only, 1),
                ));
            }
        }
        if self.sizes.len() > 1 {
            let fewer = &self.sizes[..self.sizes.len() - 1];
            let cfg = Config {
                sizes: fewer.to_vec(),
                ..self.clone()
            };
            let sizes: Vec<String> = fewer.iter().map(|n| n.to_string()).collect();
            let flag = format!(
                "--upgrade-sizes {}{}",
                sizes.join(","),
                if limit_run { " --no-limit-run" } else { "" }
            );
            smaller.push((flag, cfg.peak_memory(&stores_only, jobs)));
        }
        let shard = if exec.shard.is_whole() {
            String::new()
        } else {
            format!(" (shard {}/{})", exec.shard.index, exec.shard.count)
        };
        Some(MemoryEstimate {
            bytes: self.peak_memory(&indices, jobs),
            what: format!(
                "the upgrade suite to {} rows{} on {jobs} job{}{shard}",
                thousands(self.sizes.last().copied().unwrap_or(0)),
                if limit_run { " with the limit run" } else { "" },
                if jobs == 1 { "" } else { "s" }
            ),
            smaller,
        })
    }
}

/// Bytes a store needs per row at its largest size, as `tenths / 10 × (payload size +
/// overhead)`: what the machine lends the run (resident memory plus the snapshots' memfds).
/// `upgrade_tenths` while the canister is upgraded there, `held_tenths` for its state and
/// its snapshots at the smaller sizes while they wait for their upgrades. From the upgrade points of
/// `--suite upgrade` at c5d7e43 (2026-11-23, docs/performance.md "Memory"): the heap map at
/// 1,000,000 rows of 100 bytes holds its heap (156 MB; 181 MB with the smaller sizes'
/// snapshots), and while upgrading it that heap frozen for the rollback, pre_upgrade's heap
/// with the encoded copy (390 MB), the encoded rows in stable memory (109 MB) and
/// post_upgrade's decoded heap (265 MB): 920 bytes a row, 7.7 × (100 + 20); the limit run's
/// upgrade at 98,000 rows of 10,000 bytes took 7.55 GB the same way, 7.7 × (10,000 + 20) a
/// row. SQLite holds its page cache on the heap (122 MB) and its file in stable memory
/// (210 MB), the StableBTreeMap 302 MB of stable memory; both keep their rows where they are
/// when upgraded and share them with their snapshots.
struct RowMemory {
    kind: StoreKind,
    upgrade_tenths: u64,
    held_tenths: u64,
    overhead: u64,
}

const MEMORY_PER_ROW: [RowMemory; 3] = [
    RowMemory {
        kind: StoreKind::Heap,
        upgrade_tenths: 77,
        held_tenths: 15,
        overhead: 20,
    },
    RowMemory {
        kind: StoreKind::Btree,
        upgrade_tenths: 20,
        held_tenths: 20,
        overhead: 50,
    },
    RowMemory {
        kind: StoreKind::Sqlite,
        upgrade_tenths: 30,
        held_tenths: 22,
        overhead: 50,
    },
];

/// The limit run at its peak, whatever its payload size: it fills the heap map until an
/// upgrade fails near the 4 GiB heap, and that upgrade holds the heap frozen for the
/// rollback, pre_upgrade's heap up to 4 GiB and the rows encoded in stable memory. Four
/// one-worker runs peaked at 8.03 to 8.22 GB with the base (docs/performance.md): 7.7 GB
/// and a margin.
const MEMORY_LIMIT_RUN: u64 = 8_000_000_000;

impl Config {
    /// Bytes a store needs at the largest size: (upgrading it, holding its states).
    fn store_memory(&self, store: UpgradeStore) -> (u64, u64) {
        let kind = store.store_kind();
        let largest = self.sizes.last().copied().unwrap_or(0);
        MEMORY_PER_ROW
            .iter()
            .find(|m| m.kind == kind)
            .map_or((0, 0), |m| {
                let row = largest * (self.payload_size + m.overhead);
                (row * m.upgrade_tenths / 10, row * m.held_tenths / 10)
            })
    }

    /// The peak of each scenario (`keys()`'s order) among `indices`: a store's upgrade at
    /// its largest size, or the limit run's.
    fn peaks(&self, indices: &[usize]) -> Vec<u64> {
        indices
            .iter()
            .map(|&i| match self.stores.get(i) {
                Some(&store) => self.store_memory(store).0,
                None => MEMORY_LIMIT_RUN,
            })
            .collect()
    }

    /// The expected peak of the scenarios `indices` on `jobs` workers. One worker finishes
    /// a store before the next (see [`Order`]) and parks the limit run's canister when it
    /// is done, so it holds one scenario's states at a time: the largest peak. Several
    /// workers fill every store before upgrading any, so every store's states are held
    /// while the `jobs` largest peaks run.
    pub fn peak_memory(&self, indices: &[usize], jobs: usize) -> u64 {
        let mut peaks = self.peaks(indices);
        peaks.sort_unstable_by(|a, b| b.cmp(a));
        if jobs <= 1 {
            return MEMORY_BASE + peaks.first().copied().unwrap_or(0);
        }
        let held: u64 = indices
            .iter()
            .filter_map(|&i| self.stores.get(i))
            .map(|&s| self.store_memory(s).1)
            .sum();
        MEMORY_BASE + held + peaks.iter().take(jobs).sum::<u64>()
    }
}

/// Which ready task a free worker takes first.
///
/// On several workers the limit run (the longest task) starts first, the stores' fills go
/// on beside it one store after another, then compiling the new build (the limit run's
/// first upgrade has compiled it by then), then the upgrades. The one-worker order below
/// (with the new build compiled before the stores) made `--suite upgrade --jobs 2` take
/// 100 s instead of 62 s (2026-11-23): the compile waited 23 s on the limit run's own
/// compile of the same module, and the heap stores' upgrades met the limit run's heap of
/// gigabytes (an upgrade of 3.8 s of CPU took 15 s).
///
/// On one worker the limit run goes first too (its heap near 4 GiB is the suite's largest
/// state, best met while nothing else is held); then each store in a band of its own, the
/// first highest, where a size's upgrade goes before the fill to the next size: a store is
/// finished before the next starts, so the worker holds one store's states at a time, as
/// the memory estimate has it.
#[derive(Clone, Copy)]
struct Order {
    serial: bool,
    stores: usize,
}

/// Priorities on several workers (see [`Order`]).
const FILL: i64 = 100;
const COMPILE: i64 = 90;
const UPGRADE_AT: i64 = 10;
/// On one worker: each store's band, within which its upgrades go before its fills.
const BAND: i64 = 1_000;
const SERIAL_UPGRADE_AT: i64 = 20;
const SERIAL_FILL: i64 = 10;

impl Order {
    fn band(self, store: usize) -> i64 {
        (self.stores - store) as i64 * BAND
    }
    fn limit_run(self) -> i64 {
        match self.serial {
            true => (self.stores as i64 + 2) * BAND,
            false => FILL + self.stores as i64 + 1,
        }
    }
    fn compile(self) -> i64 {
        match self.serial {
            true => (self.stores as i64 + 1) * BAND,
            false => COMPILE,
        }
    }
    fn fill(self, store: usize) -> i64 {
        match self.serial {
            true => self.band(store) + SERIAL_FILL,
            false => FILL + (self.stores - store) as i64,
        }
    }
    fn upgrade(self, store: usize) -> i64 {
        match self.serial {
            true => self.band(store) + SERIAL_UPGRADE_AT,
            false => UPGRADE_AT,
        }
    }
}

/// A store's outcome as its tasks hand it in, by size (the order one worker gives).
#[derive(Default)]
struct Grown {
    parts: Mutex<BTreeMap<usize, pool::Outcome>>,
}

impl Grown {
    fn put(&self, at: usize, outcome: pool::Outcome) {
        self.parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(at, outcome);
    }

    fn outcome(&self) -> pool::Outcome {
        let parts = std::mem::take(&mut *self.parts.lock().unwrap_or_else(|e| e.into_inner()));
        let mut all = pool::Outcome::default();
        for (_, part) in parts {
            all.results.extend(part.results);
            for (name, items) in part.lists {
                match all.lists.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, have)) => have.extend(items),
                    None => all.lists.push((name, items)),
                }
            }
        }
        all
    }
}

/// Sets the store up on a fresh canister (payload size, SQLite's journal mode).
fn configure(client: &mut BenchClient<'_>, store: UpgradeStore, payload_size: u64) -> Result<()> {
    client
        .set_payload_size(payload_size)?
        .value
        .map_err(|e| anyhow!("set_payload_size({payload_size}) failed: {e}"))?;
    if let Some(mode) = store.journal_mode() {
        let config = SqliteConfig {
            journal_mode: Some(mode.to_string()),
            ..SqliteConfig::default()
        };
        let settings = client
            .configure_sqlite(&config)?
            .value
            .map_err(|e| anyhow!("configure_sqlite({mode}) failed: {e}"))?;
        if !settings.journal_mode.eq_ignore_ascii_case(mode.as_str()) {
            bail!("asked for {mode}, SQLite uses {}", settings.journal_mode);
        }
    }
    if let UpgradeStore::Heap(e) = store {
        let config = HeapConfig {
            encoding: Some(e.name().into()),
        };
        let settings = client
            .configure_heap(&config)?
            .value
            .map_err(|e| anyhow!("configure_heap failed: {e}"))?;
        if settings.encoding != e.name() {
            bail!(
                "asked for {}, the heap store uses {}",
                e.name(),
                settings.encoding
            );
        }
    }
    Ok(())
}

/// Fills the store from `from` to `to` rows (ids 0, 10, 20, ...).
fn fill(
    client: &mut BenchClient<'_>,
    store: UpgradeStore,
    payload_size: u64,
    from: u64,
    to: u64,
    before: &mut dyn FnMut(u64),
) -> Result<()> {
    let chunk = (FILL_BYTES_PER_MESSAGE / payload_size).clamp(1, PREFILL_CHUNK);
    users::fill(client, store.kind(), from, to, chunk, before, &mut |_| {})
        .with_context(|| format!("filling {}", store.label()))
}

/// Whether the canister answers `upgrade_stats`.
fn has_upgrade_stats(client: &mut BenchClient<'_>) -> Result<bool> {
    let out = client
        .engine
        .query(client.canister, "upgrade_stats", &Encode!()?)?;
    Ok(
        !matches!(&out.result, Err(r) if r.error_code == crate::engine::ErrorCode::CanisterMethodNotFound),
    )
}

fn stage(report: &MessageReport, which: InstallStage) -> MessageReport {
    report
        .stages
        .iter()
        .find(|(s, _)| *s == which)
        .map(|(_, r)| r.clone())
        .unwrap_or_default()
}

fn pages_delta(before: u64, after: u64) -> i64 {
    (after as i64 - before as i64) / 65536
}

/// A record of this suite with the store's columns filled in.
fn record(cfg_engine: &str, store: UpgradeStore, rows: u64, operation: &str) -> ScenarioResult {
    ScenarioResult {
        suite: "upgrade".into(),
        engine: cfg_engine.into(),
        store: store.kind().into(),
        journal_mode: store
            .journal_mode()
            .map(|m| m.to_string())
            .unwrap_or_default(),
        position: store.variant(),
        operation: operation.into(),
        rows_before: rows,
        ..ScenarioResult::default()
    }
}

fn fill_message(r: &mut ScenarioResult, m: &MessageReport) {
    r.instructions = m.instructions;
    r.instructions_per_row = m.instructions as f64 / r.batch.max(1) as f64;
    r.heap_pages_delta = pages_delta(m.heap_bytes_before, m.heap_bytes_after);
    r.stable_pages_delta = pages_delta(m.stable_bytes_before, m.stable_bytes_after);
    r.set_pages(m);
    r.add_profile(m.profile.as_ref());
}

/// The 1-row insert and the 100-key lookup, in the middle of `rows` rows.
fn calls(
    client: &mut BenchClient<'_>,
    engine: &str,
    store: UpgradeStore,
    rows: u64,
    usd_per_xdr: f64,
    when: &str,
) -> Result<Vec<ScenarioResult>> {
    let middle = rows / 2 * ID_STEP;
    let mut out = Vec::new();
    // The query first: it changes nothing, so the insert after it is still the first change.
    let q = client.get_users(store.kind(), middle, ID_STEP, 100, false)?;
    let mut r = record(engine, store, rows, &format!("{when}_query"));
    r.batch = 100;
    r.method = format!("get_users_{}", store.kind());
    r.args = format!("({middle} : nat64, {ID_STEP} : nat64, 100 : nat64)");
    fill_message(&mut r, &q.message);
    match q.value {
        Ok(v) if v.rows_found == 100 => {
            r.store_instructions = v.instructions;
            r.store_instructions_per_row = v.instructions as f64 / 100.0;
            r.bytes = v.bytes_read;
        }
        Ok(v) => r.status = Status::Failed(format!("found {} of 100 rows", v.rows_found)),
        Err(e) => r.status = Status::Failed(e),
    }
    out.push(r);
    let u = client.add_users(store.kind(), middle + 1, ID_STEP, 1)?;
    let mut r = record(engine, store, rows, &format!("{when}_update"));
    r.batch = 1;
    r.method = format!("add_users_{}", store.kind());
    r.args = format!("({} : nat64, {ID_STEP} : nat64, 1 : nat64)", middle + 1);
    fill_message(&mut r, &u.message);
    match u.value {
        Ok(v) if v.rows_inserted == 1 => {
            r.store_instructions = v.instructions;
            r.store_instructions_per_row = v.instructions as f64;
            let cycles = CyclesFees::APPLICATION_13.execution_cost(u.message.instructions, false);
            r.cycles = cycles as u64;
            r.usd = cycles as f64 / 1e12 * usd_per_xdr;
        }
        Ok(v) => r.status = Status::Failed(format!("inserted {} of 1 row", v.rows_inserted)),
        Err(e) => r.status = Status::Failed(e),
    }
    out.push(r);
    Ok(out)
}

/// The name of the custom section [`new_build`] adds.
pub const BUILD_SECTION: &str = "icbench:build";

/// `wasm` as a new build ships it: the same code with another module hash. A custom section
/// (which no canister code reads and the replica's memory usage does not count, being no
/// `icp:` metadata) is appended, so every hook and every call costs the same and only what
/// the replica keys by the module hash (its compilation charge) can differ.
pub fn new_build(wasm: &[u8]) -> Result<Vec<u8>> {
    use wasm_encoder::Section;
    if !wasm.starts_with(b"\0asm") {
        bail!("a new build is made from a raw Wasm module (\\0asm...), not a gzipped one");
    }
    let mut out = wasm.to_vec();
    wasm_encoder::CustomSection {
        name: BUILD_SECTION.into(),
        data: b"a new build of the same code".as_slice().into(),
    }
    .append_to(&mut out);
    Ok(out)
}

/// Upgrades the canister to `new_build` after a checkpoint, as a user ships a new build
/// (its compilation paid in full), and returns the records of the upgrade and its hooks,
/// the point for the limits, and the upgrade's error if it failed. Scaling upgrades each
/// store at its largest size with it.
pub(super) fn upgrade(
    client: &mut BenchClient<'_>,
    engine: &str,
    store: UpgradeStore,
    rows: u64,
    payload_size: u64,
    new_build: &[u8],
    usd_per_xdr: f64,
) -> Result<(Vec<ScenarioResult>, Point, Option<crate::engine::Reject>)> {
    // Whatever was installed before was installed at least a checkpoint ago.
    client.engine.checkpoint();
    let out = client
        .engine
        .upgrade(client.canister, new_build, &Encode!()?)?;
    client.executed_instructions += out.report.instructions;
    let m = &out.report;
    // After a failed upgrade the canister's counts are the old ones: none are this upgrade's.
    let no_stats = || UpgradeStats {
        pre_upgrade_instructions: 0,
        post_upgrade_instructions: 0,
        encoded_bytes: 0,
        encoding: String::new(),
    };
    let stats = match &out.result {
        // A module from before the heap store has no upgrade_stats: 0 in the hook columns.
        Ok(_) if !has_upgrade_stats(client)? => no_stats(),
        Ok(_) => client.upgrade_stats()?,
        Err(_) => UpgradeStats {
            pre_upgrade_instructions: 0,
            post_upgrade_instructions: 0,
            encoded_bytes: 0,
            encoding: String::new(),
        },
    };
    let (pre, compile, post) = (
        stage(m, InstallStage::PreUpgrade),
        stage(m, InstallStage::Compilation),
        stage(m, InstallStage::PostUpgrade),
    );
    let status = match &out.result {
        Ok(_) => Status::Ok,
        Err(r) => Status::Failed(r.to_string()),
    };
    let mut records = Vec::new();
    for (op, report, counter, export, which) in [
        (
            "pre_upgrade",
            &pre,
            stats.pre_upgrade_instructions,
            "canister_pre_upgrade",
            InstallStage::PreUpgrade,
        ),
        (
            "post_upgrade",
            &post,
            stats.post_upgrade_instructions,
            "canister_post_upgrade",
            InstallStage::PostUpgrade,
        ),
    ] {
        let mut r = record(engine, store, rows, op);
        r.batch = rows;
        r.method = export.into();
        fill_message(&mut r, report);
        // A stage's own report has no profile: its part of the whole call's has.
        r.profile_data = m.profile.as_ref().and_then(|p| p.under(which.frame()));
        r.store_instructions = counter;
        r.store_instructions_per_row = counter as f64 / rows as f64;
        r.bytes = stats.encoded_bytes;
        r.status = status.clone();
        records.push(r);
    }
    let mut r = install_code_record(engine, store, rows, UPGRADE, &out, usd_per_xdr);
    r.bytes = stats.encoded_bytes;
    records.push(r);
    let point = Point {
        store: store.label(),
        rows,
        payload_size,
        calibration: false,
        compile_instructions: compile.instructions,
        pre_upgrade_instructions: pre.instructions,
        post_upgrade_instructions: post.instructions,
        upgrade_instructions: m.instructions,
        heap_bytes_before: m.heap_bytes_before,
        heap_bytes_pre_upgrade: pre.heap_bytes_after,
        heap_bytes_after: m.heap_bytes_after,
        stable_bytes_after: m.stable_bytes_after,
        encoded_bytes: stats.encoded_bytes,
    };
    Ok((records, point, out.result.err()))
}

/// The record of an upgrade's whole install_code: its instructions and cycles.
fn install_code_record(
    engine: &str,
    store: UpgradeStore,
    rows: u64,
    operation: &str,
    out: &crate::engine::CallOutcome,
    usd_per_xdr: f64,
) -> ScenarioResult {
    let mut r = record(engine, store, rows, operation);
    r.batch = rows;
    r.method = "install_code".into();
    r.args = format!(
        "(record {{ mode = variant {{ upgrade }}; wasm_module = <{}>; arg = (); }})",
        match operation {
            UPGRADE => "a new build: the same code, another module hash",
            _ => "the new build again, installed since the last checkpoint",
        }
    );
    fill_message(&mut r, &out.report);
    let cycles = CyclesFees::APPLICATION_13.execution_cost(out.report.instructions, false);
    r.cycles = cycles as u64;
    r.usd = cycles as f64 / 1e12 * usd_per_xdr;
    r.status = match &out.result {
        Ok(_) => Status::Ok,
        Err(r) => Status::Failed(r.to_string()),
    };
    r
}

/// The operation of an upgrade to a new build (its compilation paid in full).
pub const UPGRADE: &str = "upgrade";
/// The operation of the same upgrade again before a checkpoint: the module's hash is in the
/// replica's `expected_compiled_wasms`, so (from the 2025-03 vintage on) its compilation
/// counts 1/100.
pub const UPGRADE_SAME_MODULE: &str = "upgrade_same_module";

/// The upgrade to `new_build` once more, right after [`upgrade`] installed it (no checkpoint
/// between): only its compilation charge can differ from the first.
fn upgrade_same_module(
    client: &mut BenchClient<'_>,
    engine: &str,
    store: UpgradeStore,
    rows: u64,
    new_build: &[u8],
    usd_per_xdr: f64,
) -> Result<ScenarioResult> {
    let out = client
        .engine
        .upgrade(client.canister, new_build, &Encode!()?)?;
    client.executed_instructions += out.report.instructions;
    Ok(install_code_record(
        engine,
        store,
        rows,
        UPGRADE_SAME_MODULE,
        &out,
        usd_per_xdr,
    ))
}

/// What every task of the run shares.
struct Shared<'s> {
    cfg: &'s Config,
    engine: &'s str,
    new_build: &'s [u8],
    /// The installed, empty canister.
    base: &'s pool::State,
}

/// How a store's fill goes on: from the state `from` at the previous size (None: the empty
/// canister, to be configured), to the run's size number `size`.
struct Step {
    store: UpgradeStore,
    size: usize,
    from: Option<pool::State>,
    fill_priority: i64,
    upgrade_priority: i64,
}

/// The task that fills the store to the next size, snapshots it there and spawns, from the
/// snapshot, the upgrade at that size and the fill on to the next. Each size is a task of
/// its own, so that an upgrade can run (and let go of its state) before the fill goes on.
fn grow<'s>(ctx: &'s Shared<'s>, step: Step, out: &'s Grown) -> pool::Task<'s> {
    let Step {
        store,
        size,
        from,
        fill_priority,
        upgrade_priority,
    } = step;
    let cfg = ctx.cfg;
    let n = cfg.sizes[size];
    let filled = size.checked_sub(1).map_or(0, |s| cfg.sizes[s]);
    let name = match from {
        None => format!("configure {}", store.label()),
        Some(_) => format!("go on filling {} to {} rows", store.label(), thousands(n)),
    };
    pool::Task::new(Kind::Fill, name, move |lane| {
        match &from {
            Some(from) => lane.restore(from)?,
            None => {
                lane.restore(ctx.base)?;
                if let Err(e) = configure(&mut lane.client, store, cfg.payload_size) {
                    let mut r = record(ctx.engine, store, 0, "upgrade");
                    r.status = Status::Refused(e.to_string());
                    out.put(0, vec![r].into());
                    return Ok(());
                }
            }
        }
        drop(from);
        let (client, ctl) = (&mut lane.client, &lane.ctl);
        fill(client, store, cfg.payload_size, filled, n, &mut |to| {
            ctl.step(Kind::Fill, users::fill_name(&store.label(), to))
        })?;
        lane.step(
            Kind::Snapshot,
            format!("snapshot of {} at {} rows", store.label(), thousands(n)),
        );
        let at_n = lane.snapshot()?;
        if size + 1 < cfg.sizes.len() {
            let next = Step {
                store,
                size: size + 1,
                from: Some(at_n.clone()),
                fill_priority,
                upgrade_priority,
            };
            lane.spawn(grow(ctx, next, out));
        }
        let name = format!("upgrade {} at {} rows", store.label(), thousands(n));
        lane.spawn(
            pool::Task::new(Kind::Upgrade, name, move |lane| {
                out.put(
                    size,
                    upgrade_at(lane, cfg, ctx.engine, ctx.new_build, store, n, &at_n)?,
                );
                Ok(())
            })
            .priority(upgrade_priority)
            .profiled(),
        );
        Ok(())
    })
    .priority(fill_priority)
}

/// At the state `at_n` of `n` rows: warm calls, the upgrade, the first calls after it, and
/// the same upgrade again from `at_n`.
fn upgrade_at(
    lane: &mut pool::Lane<'_, '_>,
    cfg: &Config,
    engine: &str,
    new_build: &[u8],
    store: UpgradeStore,
    n: u64,
    at_n: &pool::State,
) -> Result<pool::Outcome> {
    let mut results = Vec::new();
    lane.restore(at_n)?;
    let client = &mut lane.client;
    results.extend(calls(client, engine, store, n, cfg.usd_per_xdr, "warm")?);
    lane.restore(at_n)?;
    let client = &mut lane.client;
    let (records, point, failed) = upgrade(
        client,
        engine,
        store,
        n,
        cfg.payload_size,
        new_build,
        cfg.usd_per_xdr,
    )?;
    results.extend(records);
    if failed.is_none() {
        results.extend(calls(client, engine, store, n, cfg.usd_per_xdr, "first")?);
    }
    lane.restore(at_n)?;
    results.push(upgrade_same_module(
        &mut lane.client,
        engine,
        store,
        n,
        new_build,
        cfg.usd_per_xdr,
    )?);
    Ok(pool::Outcome {
        results,
        lists: vec![(POINTS, vec![serde_json::to_value(&point)?])],
    })
}

/// Calibrates at the limit payload, predicts the first failing size, and upgrades there for
/// real: the error, then a read proving the old module and rows are still there.
fn limit_run(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    engine: &str,
    new_build: &[u8],
    store: UpgradeStore,
    payload: u64,
) -> Result<pool::Outcome> {
    let canister = client.canister;
    if let Err(e) = configure(client, store, payload) {
        let run = LimitRun {
            store: store.label(),
            payload_size: payload,
            note: format!("not run: {e}"),
            ..LimitRun::default()
        };
        return Ok(pool::Outcome {
            results: Vec::new(),
            lists: vec![(LIMIT_RUN, vec![serde_json::to_value(&run)?])],
        });
    }
    let fresh = client.engine.snapshot(canister)?;
    let mut points = Vec::new();
    let mut filled = 0;
    for n in CALIBRATION_SIZES {
        fill(client, store, payload, filled, n, &mut |_| {})?;
        filled = n;
        let at_n = client.engine.snapshot(canister)?;
        let (_, mut point, failed) = upgrade(
            client,
            engine,
            store,
            n,
            payload,
            new_build,
            cfg.usd_per_xdr,
        )?;
        if let Some(r) = failed {
            bail!(
                "the calibration upgrade of {} at {n} rows failed: {r}",
                store.label()
            );
        }
        point.calibration = true;
        points.push(point);
        client.engine.restore(canister, at_n)?;
    }
    let limits = Limits::APPLICATION;
    let predicted = predict(&points.iter().collect::<Vec<_>>(), &limits);
    let mut run = LimitRun {
        store: store.label(),
        payload_size: payload,
        predicted: predicted.clone(),
        ..LimitRun::default()
    };
    let mut results = Vec::new();
    let chunk = (FILL_BYTES_PER_MESSAGE / payload).clamp(1, PREFILL_CHUNK);
    match predicted.first_failing() {
        Some(first) if first <= MAX_LIMIT_RUN_ROWS => {
            // The heap grows in steps (a Vec doubles, memory grows by pages), so the line
            // can be off: upgrade at the predicted size, and while that succeeds fill on by
            // 5% and try again. A successful upgrade keeps the rows (that is what it is for),
            // so filling goes on from it, as a user's would.
            client.engine.restore(canister, fresh)?;
            let mut rows = first.div_ceil(chunk) * chunk;
            let mut filled = 0;
            let mut succeeded = Vec::new();
            loop {
                fill(client, store, payload, filled, rows, &mut |_| {})?;
                filled = rows;
                let (mut records, mut point, failed) = upgrade(
                    client,
                    engine,
                    store,
                    rows,
                    payload,
                    new_build,
                    cfg.usd_per_xdr,
                )?;
                point.calibration = true;
                let heap_in_pre_upgrade = point.heap_bytes_pre_upgrade;
                points.push(point);
                let Some(reject) = failed else {
                    succeeded.push(thousands(rows));
                    let next =
                        (rows + rows * LIMIT_RUN_STEP_PERMILLE / 1000).div_ceil(chunk) * chunk;
                    if next > MAX_LIMIT_RUN_ROWS {
                        run.note = format!(
                            "no failure up to {} rows (upgrades succeeded at {})",
                            thousands(rows),
                            succeeded.join(", ")
                        );
                        break;
                    }
                    rows = next;
                    continue;
                };
                for r in &mut records {
                    r.operation = format!("limit_{}", r.operation);
                }
                results.extend(records);
                run.rows = Some(rows);
                run.heap_bytes_in_pre_upgrade = Some(heap_in_pre_upgrade);
                run.error_code = Some(reject.error_code.to_string());
                run.error = Some(reject.message.clone());
                // The reads after it: the old module answers with the rows it had (the
                // row count first: `calls` also inserts a row after its lookup).
                run.rows_after = Some(store_rows(client, store)?);
                let mut read = calls(
                    client,
                    engine,
                    store,
                    rows,
                    cfg.usd_per_xdr,
                    "after_failed_upgrade",
                )?;
                read.truncate(1);
                run.lookup_rows_found = Some(if read[0].status == Status::Ok { 100 } else { 0 });
                results.extend(read);
                run.note = format!(
                    "{} rows of {payload} bytes: the first size tried that fails, starting at the predicted first failing size {} and stepping by {}% ({}-row fill messages){}.",
                    thousands(rows),
                    thousands(first),
                    LIMIT_RUN_STEP_PERMILLE as f64 / 10.0,
                    thousands(chunk),
                    if succeeded.is_empty() {
                        String::new()
                    } else {
                        format!("; upgrades succeeded at {}", succeeded.join(", "))
                    }
                );
                break;
            }
        }
        Some(first) => {
            run.note = format!(
                "not run: the first failing size is predicted at {} rows, above {}",
                thousands(first),
                thousands(MAX_LIMIT_RUN_ROWS)
            );
        }
        None => {
            run.note =
                "not run: no limit predicted (the upgrade's work and heap do not grow with N)"
                    .into()
        }
    }
    let mut lists: Vec<(&'static str, Vec<Value>)> = vec![(
        POINTS,
        points
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?,
    )];
    lists.push((LIMIT_RUN, vec![serde_json::to_value(&run)?]));
    Ok(pool::Outcome { results, lists })
}

fn store_rows(client: &mut BenchClient<'_>, store: UpgradeStore) -> Result<u64> {
    Ok(match store {
        UpgradeStore::Heap(_) | UpgradeStore::Users(Store::Heap) => client.heap_stats()?.rows,
        UpgradeStore::Users(Store::BTree) => client.stats()?.btree_rows,
        UpgradeStore::Users(Store::Sqlite(_)) => client.stats()?.sqlite_rows,
    })
}

// ---- report ---------------------------------------------------------------------------

fn label_of(r: &ScenarioResult) -> String {
    let store = match (r.store.as_str(), r.journal_mode.as_str()) {
        ("sqlite", mode) => format!("SQLite {mode}"),
        ("btree", _) => "StableBTreeMap".into(),
        ("heap", _) => match HeapEncoding::parse(&r.position) {
            Ok(e) => UpgradeStore::Heap(e).label(),
            Err(_) => format!("heap ({})", r.position),
        },
        (other, _) => other.to_string(),
    };
    store
}

fn find<'a>(report: &'a Report, label: &str, rows: u64, op: &str) -> Option<&'a ScenarioResult> {
    report
        .results
        .iter()
        .find(|r| label_of(r) == label && r.rows_before == rows && r.operation == op)
}

fn cell(r: Option<&ScenarioResult>, f: impl Fn(&ScenarioResult) -> String) -> String {
    match r {
        Some(r) if r.status == Status::Ok => f(r),
        Some(r) => match &r.status {
            Status::Failed(e) | Status::Refused(e) => format!("failed: {e}"),
            Status::Ok => unreachable!(),
        },
        None => "-".into(),
    }
}

fn bytes(n: u64) -> String {
    if n >= 1 << 30 {
        return format!("{:.2} GiB", n as f64 / (1u64 << 30) as f64);
    }
    format!("{} MiB", compact(n as f64 / (1u64 << 20) as f64))
}

fn limit_cell(n: Option<u64>) -> String {
    match n {
        None => "none (does not grow)".into(),
        Some(n) if n > 10_000_000_000 => "> 10 billion".into(),
        Some(n) => format!("≈ {}", thousands(n)),
    }
}

pub fn document(report: &Report) -> Document {
    let points: Vec<Point> = report.extra(POINTS).unwrap_or_default();
    let runs: Vec<LimitRun> = report.extra(LIMIT_RUN).unwrap_or_default();
    let mut labels: Vec<String> = Vec::new();
    for r in &report.results {
        let l = label_of(r);
        if !r.operation.starts_with("limit_")
            && !r.operation.starts_with("after_failed")
            && !labels.contains(&l)
        {
            labels.push(l);
        }
    }
    let sizes = |label: &str| -> Vec<u64> {
        let mut v: Vec<u64> = report
            .results
            .iter()
            .filter(|r| label_of(r) == label && r.operation == "upgrade")
            .map(|r| r.rows_before)
            .collect();
        v.dedup();
        v
    };

    let mut upgrades = Table::new(
        [
            "Store",
            "Rows",
            "pre_upgrade",
            "(in hook)",
            "compilation",
            "post_upgrade",
            "(in hook)",
            "upgrade",
            "same module",
            "cycles",
            "heap before → after",
            "encoded",
            "wait (rounds)",
        ]
        .map(String::from)
        .to_vec(),
    );
    let mut firsts = Table::new(
        [
            "Store",
            "Rows",
            "warm_update",
            "first_update",
            "warm_query",
            "first_query",
        ]
        .map(String::from)
        .to_vec(),
    );
    let mut plots = Vec::new();
    let mut md = Vec::new();
    for label in &labels {
        for n in sizes(label) {
            let up = find(report, label, n, "upgrade");
            let pre = find(report, label, n, "pre_upgrade");
            let post = find(report, label, n, "post_upgrade");
            let point = points
                .iter()
                .find(|p| !p.calibration && &p.store == label && p.rows == n);
            upgrades.push(vec![
                label.clone(),
                thousands(n),
                cell(pre, |r| thousands(r.instructions)),
                cell(pre, |r| thousands(r.store_instructions)),
                point.map_or("-".into(), |p| thousands(p.compile_instructions)),
                cell(post, |r| thousands(r.instructions)),
                cell(post, |r| thousands(r.store_instructions)),
                cell(up, |r| thousands(r.instructions)),
                cell(find(report, label, n, UPGRADE_SAME_MODULE), |r| {
                    thousands(r.instructions)
                }),
                cell(up, |r| thousands(r.cycles)),
                point.map_or("-".into(), |p| {
                    format!(
                        "{} → {}",
                        bytes(p.heap_bytes_before),
                        bytes(p.heap_bytes_after)
                    )
                }),
                point.map_or("-".into(), |p| match p.encoded_bytes {
                    0 => "-".into(),
                    b => bytes(b),
                }),
                cell(up, |r| {
                    thousands(r.instructions.div_ceil(INSTALL_CODE_RATE_LIMIT))
                }),
            ]);
            let ratio = |warm: Option<&ScenarioResult>, first: Option<&ScenarioResult>| {
                cell(first, |f| match warm {
                    Some(w) if w.status == Status::Ok && w.instructions > 0 => format!(
                        "{} (×{:.2})",
                        thousands(f.instructions),
                        f.instructions as f64 / w.instructions as f64
                    ),
                    _ => thousands(f.instructions),
                })
            };
            let (wu, fu) = (
                find(report, label, n, "warm_update"),
                find(report, label, n, "first_update"),
            );
            let (wq, fq) = (
                find(report, label, n, "warm_query"),
                find(report, label, n, "first_query"),
            );
            firsts.push(vec![
                label.clone(),
                thousands(n),
                cell(wu, |r| thousands(r.instructions)),
                ratio(wu, fu),
                cell(wq, |r| thousands(r.instructions)),
                ratio(wq, fq),
            ]);
        }
        // The hooks are not stores: colours no store has, the same in every upgrade plot.
        let series = |op: &str| Series {
            label: op.to_string(),
            color: None,
            points: report
                .results
                .iter()
                .filter(|r| &label_of(r) == label && r.operation == op && r.status == Status::Ok)
                .map(|r| (r.rows_before as f64, r.instructions_per_row))
                .collect(),
        };
        let plot = LinePlot {
            title: format!("Upgrade of {label}: instructions per stored row"),
            unit_plural: "rows".into(),
            unit: "row".into(),
            series: vec![
                series("pre_upgrade"),
                series("post_upgrade"),
                series("upgrade"),
            ],
            axes: Some(Axes {
                x: "rows in the store".into(),
                y: "instructions per stored row".into(),
                x_unit: "rows".into(),
                y_unit: "instructions/row".into(),
            }),
        };
        if !plot.svg().is_empty() {
            let file = format!("plot-upgrade-{}.svg", slug(label));
            md.push(Block::Image {
                alt: format!("Upgrade of {label}"),
                file: file.clone(),
            });
            plots.push(Plot {
                file,
                kind: PlotKind::Lines(plot),
            });
        }
    }

    let limits = Limits::APPLICATION;
    let mut limit_table = Table::new(
        [
            "Store",
            "install_code 300B",
            "wasm_memory_limit 3 GiB",
            "4 GiB heap (pre_upgrade)",
            "first failing N",
            "real run",
        ]
        .map(String::from)
        .to_vec(),
    );
    for label in &labels {
        let own: Vec<&Point> = points
            .iter()
            .filter(|p| !p.calibration && &p.store == label)
            .collect();
        let predicted = predict(&own, &limits);
        let run = runs.iter().find(|r| &r.store == label);
        if own.len() < 2 {
            // Refused, or one size only: nothing to draw a line through.
            let mut row = vec![label.clone()];
            row.extend(["-"; 4].map(String::from));
            row.push(run.map_or("-".into(), run_cell));
            limit_table.push(row);
            continue;
        }
        limit_table.push(vec![
            label.clone(),
            limit_cell(predicted.instructions),
            limit_cell(predicted.wasm_memory_limit),
            limit_cell(predicted.heap_4gib),
            predicted
                .first_failing()
                .map_or("none".into(), |n| limit_cell(Some(n))),
            match run {
                None => "-".into(),
                Some(r) => run_cell(r),
            },
        ]);
    }

    let mut blocks = vec![
        Block::Heading {
            level: 2,
            text: "Upgrade cost (instructions; in hook = the canister's performance counter)".into(),
        },
        Block::Table(upgrades),
        Block::Heading {
            level: 2,
            text: "The first calls after the upgrade (instructions; × = against warm)".into(),
        },
        Block::Table(firsts),
        Block::Heading {
            level: 2,
            text: format!(
                "Limits at {} bytes per row (largest N predicted from a straight line through the two largest sizes measured)",
                thousands(report.payload_size)
            ),
        },
        Block::Table(limit_table),
    ];
    let mut terminal = blocks
        .iter()
        .map(|b| match b {
            Block::Heading { level, text } => Block::Heading {
                level: *level,
                text: text.clone(),
            },
            Block::Table(t) => Block::Table(t.clone()),
            Block::Text(t) => Block::Text(t.clone()),
            Block::Code(t) => Block::Code(t.clone()),
            Block::Image { alt, file } => Block::Image {
                alt: alt.clone(),
                file: file.clone(),
            },
        })
        .collect::<Vec<_>>();
    for run in &runs {
        let text = limit_run_text(run);
        blocks.push(Block::Heading {
            level: 2,
            text: format!("The limit run: {}", run.store),
        });
        blocks.push(Block::Text(text.clone()));
        terminal.push(Block::Text(text));
    }
    blocks.push(Block::Heading {
        level: 2,
        text: "Plots".into(),
    });
    blocks.extend(md);
    Document {
        markdown: blocks,
        terminal,
        plots,
    }
}

fn run_cell(r: &LimitRun) -> String {
    match (&r.rows, &r.error_code) {
        (Some(rows), Some(code)) => format!(
            "{code} at {} rows of {} B",
            thousands(*rows),
            thousands(r.payload_size)
        ),
        (Some(rows), None) => format!("succeeded at {} rows", thousands(*rows)),
        (None, _) => r.note.clone(),
    }
}

fn limit_run_text(r: &LimitRun) -> String {
    let p = &r.predicted;
    let mut t = format!(
        "Predicted at {} bytes per row from upgrades at {} rows: install_code 300B {}, wasm_memory_limit {}, 4 GiB heap {}.\n",
        thousands(r.payload_size),
        CALIBRATION_SIZES.map(thousands).join(" and "),
        limit_cell(p.instructions),
        limit_cell(p.wasm_memory_limit),
        limit_cell(p.heap_4gib),
    );
    t.push_str(&format!("Run: {}\n", r.note));
    if let (Some(code), Some(error)) = (&r.error_code, &r.error) {
        t.push_str(&format!(
            "\nThe upgrade failed with {code}:\n\n> {}\n\n",
            error.replace('\n', "\n> ")
        ));
        if let Some(heap) = r.heap_bytes_in_pre_upgrade {
            t.push_str(&format!(
                "The heap when pre_upgrade ended: {} bytes ({}; the wasm32 maximum is {} bytes).",
                thousands(heap),
                bytes(heap),
                thousands(MAX_HEAP_BYTES)
            ));
            if code == "IC0502" {
                t.push_str(" pre_upgrade is exempt from wasm_memory_limit, so only the 4 GiB wasm32 maximum stops it: a memory.grow past it returns -1 (on the replica too, fact sheet §3) and the Rust allocator aborts (`unreachable`). The heap was far below 4 GiB when it stopped: the encoded copy's Vec, doubling its capacity, asked for more than the rest of the 4 GiB (inferred from the sizes, not traced inside the canister). The straight-line prediction does not model that doubling, so it is only a first guess; the run steps on from it.");
            }
            t.push('\n');
        }
        t.push_str(&format!(
            "Afterwards the canister still runs its old module: `stats` reports {} rows in the store, and the 100-key lookup in the middle found {} rows.\n",
            r.rows_after.map_or("?".into(), thousands),
            r.lookup_rows_found.map_or("?".into(), thousands)
        ));
    }
    t
}

fn slug(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_within_follows_the_line_through_the_two_largest_points() {
        // y = 1,000 + 10 n: 10,000 = 1,000 + 10 n at n = 900.
        let pts = [(1, 5), (100, 2_000), (200, 3_000)];
        assert_eq!(largest_within(&pts, 10_000), Some(900));
        assert_eq!(largest_within(&pts, 500), Some(0));
        assert_eq!(largest_within(&[(10, 5), (20, 5)], 100), None);
        assert_eq!(largest_within(&[(10, 5)], 100), None);
    }

    #[test]
    fn the_first_failing_size_is_one_past_the_smallest_limit() {
        let p = Predicted {
            instructions: Some(500),
            wasm_memory_limit: None,
            heap_4gib: Some(300),
        };
        assert_eq!(p.first_failing(), Some(301));
        assert_eq!(Predicted::default().first_failing(), None);
    }

    #[test]
    fn the_estimate_counts_as_many_of_the_largest_peaks_as_workers() {
        let cfg = Config {
            stores: vec![
                UpgradeStore::Heap(HeapEncoding::Candid),
                UpgradeStore::Users(Store::BTree),
                UpgradeStore::Users(Store::Sqlite(JournalMode::Off)),
            ],
            sizes: vec![1_000, 1_000_000],
            rows: 1_000_000,
            payload_size: 100,
            seed: 1,
            usd_per_xdr: 1.0,
            limit_run: Some((UpgradeStore::Heap(HeapEncoding::Candid), 10_000)),
        };
        // At 1,000,000 rows of 100 bytes: the heap map 7.7 x 120 B a row, the
        // StableBTreeMap 2 x 150 B, SQLite 3 x 150 B; the limit run 8 GB.
        assert_eq!(
            cfg.peaks(&[0, 1, 2, 3]),
            vec![924_000_000, 300_000_000, 450_000_000, 8_000_000_000]
        );
        let all = [0, 1, 2, 3];
        assert_eq!(cfg.peak_memory(&all, 1), MEMORY_BASE + 8_000_000_000);
        // Several workers hold every store's states (1.5, 2 and 2.2 x 150 B a row) while
        // the largest peaks run.
        let held = 180_000_000 + 300_000_000 + 330_000_000;
        assert_eq!(
            cfg.peak_memory(&all, 2),
            MEMORY_BASE + held + 8_000_000_000 + 924_000_000
        );
        assert_eq!(
            cfg.peak_memory(&all, 3),
            MEMORY_BASE + held + 8_000_000_000 + 924_000_000 + 450_000_000
        );
        assert_eq!(cfg.peak_memory(&all, 16), cfg.peak_memory(&all, 4));
        // Without the limit run (or in a shard without it) the heap map's upgrade is the peak.
        assert_eq!(cfg.peak_memory(&[0, 1, 2], 1), MEMORY_BASE + 924_000_000);
        // The payload size counts: 1,000 bytes a row.
        let large = Config {
            payload_size: 1_000,
            ..cfg.clone()
        };
        assert_eq!(large.peaks(&[1]), vec![2_100_000_000]);
    }

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("SQLite PERSIST"), "sqlite-persist");
        assert_eq!(slug("heap (Candid)"), "heap-candid");
    }
}
