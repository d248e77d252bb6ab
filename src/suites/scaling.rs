//! The `scaling` suite: how each store's cost moves as it grows from 1,000 to 10,000,000
//! rows. Each store is filled once, incrementally (to 1,000, measure, on to 10,000, measure,
//! ...), in a canister of its own, so its memory is its own. At every size N the same
//! operations run from the snapshot taken at N: a 1-row insert in the middle and at a
//! random position, 100- and 1,000-row inserts in the middle, point lookups of 1 and 100 random keys
//! and a 1,000-row range scan; then the memory the store uses and what keeping it costs.

use std::collections::BTreeMap;
use std::sync::Mutex;

use anyhow::{anyhow, Result};
use clap::{ArgMatches, Args, Command, FromArgMatches};

use super::capacity::{self, Message};
use super::pool::{Join, Lane, Recorder, State, Task};
use super::scenario::{JournalMode, Operation, Position, Store, StoreKind};
use super::upgrade::UpgradeStore;
use super::users::{self, record_reply, run_call, Call, ID_STEP, PREFILL_CHUNK};
use super::{decision, pool, CommonArgs, Exec, MemoryEstimate, Plan, Progress, Suite, MEMORY_BASE};
use crate::bench_canister::{BenchClient, Stats};
use crate::engine::cost::{CyclesFees, Replica};
use crate::engine::Engine;
use crate::report::format::{per_row, thousands, usd};
use crate::report::svg::{Axes, LinePlot, Series};
use crate::report::work::Kind;
use crate::report::{Block, Document, Plot, PlotKind, Report, ScenarioResult, Table};

/// The sizes measured, up to `--scaling-max-rows`.
pub const SIZES: [u64; 5] = [1_000, 10_000, 100_000, 1_000_000, 10_000_000];
/// The smallest store the operations fit in (the range scan reads 1,000 rows).
pub const MIN_ROWS: u64 = 1_000;
/// The size whose state the capacity search runs on, when the run reaches it.
pub const CAPACITY_ROWS: u64 = 1_000_000;

/// What is measured at every size, in report order: (position, operation).
pub const OPERATIONS: [(Position, Operation); 7] = [
    (Position::Middle, Operation::Insert { rows: 1 }),
    (Position::Random, Operation::Insert { rows: 1 }),
    (Position::Middle, Operation::Insert { rows: 100 }),
    // For the cost of a million rows sent 1,000 per message (at N = 1,000 half of them
    // land past the last id).
    (Position::Middle, Operation::Insert { rows: 1_000 }),
    (Position::Random, Operation::PointLookups { keys: 1 }),
    (Position::Random, Operation::PointLookups { keys: 100 }),
    (Position::Middle, Operation::RangeScan { rows: 1_000 }),
];

/// `operation` of the memory records: the bytes the store's rows take (over the empty
/// canister) on the heap and in stable memory, and the storage cycles of the whole canister.
pub const HEAP_BYTES: &str = "heap_bytes";
pub const STABLE_BYTES: &str = "stable_bytes";
pub const STORAGE_30_DAYS: &str = "storage_30_days";
/// `operation` of the record of the whole install_code that upgrades a store at the largest
/// size (with its `pre_upgrade` and `post_upgrade` records, as the upgrade suite writes them).
pub const UPGRADE: &str = "upgrade";
/// Seconds in the 30 days the storage records cost.
const THIRTY_DAYS: u64 = 30 * 86_400;
/// The subnets the storage records are priced on, as the record's `position`.
const SUBNETS: [(&str, CyclesFees); 2] = [
    ("13-node subnet", CyclesFees::APPLICATION_13),
    ("34-node subnet", CyclesFees::APPLICATION_34),
];

pub struct Scaling;

#[derive(Args)]
#[command(next_help_heading = "scaling")]
struct ScalingArgs {
    /// The largest store measured: sizes 1,000, 10,000, ... up to it (and it, if it is not
    /// one of them).
    #[arg(long, default_value_t = 10_000_000)]
    scaling_max_rows: u64,
}

/// The scaling suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Store sizes, ascending.
    pub sizes: Vec<u64>,
    /// The store kinds, each filled once in a canister of its own.
    pub kinds: Vec<StoreKind>,
    pub payload_size: u64,
    pub seed: u64,
    pub usd_per_xdr: f64,
    /// The size at which each store's capacity is searched (real calls up to the
    /// per-message limits), if any.
    pub capacity_at: Option<u64>,
}

/// 1,000, 10,000, ... up to `max`, and `max` itself.
pub fn sizes_up_to(max: u64) -> Vec<u64> {
    let mut sizes: Vec<u64> = SIZES.into_iter().filter(|&n| n <= max).collect();
    if sizes.last() != Some(&max) {
        sizes.push(max);
    }
    sizes
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        if self.kinds.is_empty() {
            return Err(anyhow!("no store selected (--stores)"));
        }
        match self.sizes.first() {
            Some(&n) if n >= MIN_ROWS => Ok(()),
            first => Err(anyhow!(
                "--scaling-max-rows must be at least {} (the range scan reads 1,000 rows), got {}",
                thousands(MIN_ROWS),
                first.copied().unwrap_or_default()
            )),
        }
    }

    /// The usual users-suite settings for a store of `rows` rows: the ids and arguments
    /// every users scenario draws are the ones seed003 would draw at that size.
    fn users_at(&self, rows: u64) -> users::Config {
        users::Config {
            rows,
            stores: Vec::new(),
            payload_size: self.payload_size,
            seed: self.seed,
            usd_per_xdr: self.usd_per_xdr,
        }
    }
}

impl Suite for Scaling {
    fn name(&self) -> &'static str {
        "scaling"
    }

    fn args(&self, cmd: Command) -> Command {
        ScalingArgs::augment_args(cmd)
    }

    fn plan(&self, matches: &ArgMatches, common: &CommonArgs) -> Result<Box<dyn Plan>> {
        let args = ScalingArgs::from_arg_matches(matches)?;
        common.validate()?;
        let mut kinds = common.stores.clone();
        kinds.sort();
        kinds.dedup();
        let sizes = sizes_up_to(args.scaling_max_rows);
        let capacity_at = sizes.contains(&CAPACITY_ROWS).then_some(CAPACITY_ROWS);
        let cfg = Config {
            sizes,
            kinds,
            payload_size: common.payload_size,
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
            capacity_at,
        };
        cfg.validate()?;
        Ok(Box::new(cfg))
    }

    fn document(&self, report: &Report) -> Document {
        document(report)
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
        let started = std::time::Instant::now();
        let engine_name = engine.name().to_string();
        let work = Recorder::new(exec.jobs);
        let (mut client, installed) = pool::install(engine, wasm, &work)?;
        let (empty, ready) = work.unit(Kind::Fill, "set the payload size", &[installed], || {
            client
                .set_payload_size(self.payload_size)?
                .value
                .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", self.payload_size))?;
            let canister = client.canister;
            pool::graph::snapshot(client.engine, canister)
        });
        let empty = empty?;
        let module_bytes = wasm.len() as u64;
        let largest = self.sizes.last().copied().unwrap_or_default();
        let new_build = super::upgrade::new_build(wasm)?;
        // One store per scenario of the plan: each fills its own copy of the empty canister
        // (`--shard` splits by store). The fills run side by side, and what is measured at
        // each size runs beside the fill going on.
        let kinds = &self.kinds;
        let indices = exec.indices(kinds.len());
        let plan = kinds
            .iter()
            .map(|k| k.as_str().to_string() + "\n")
            .collect::<String>();
        let grown: Vec<Grown> = kinds.iter().map(|_| Grown::default()).collect();
        let setup = client.executed_instructions;
        let ctx = Shared {
            cfg: self,
            engine: &engine_name,
            empty: &empty,
            wasm,
            new_build: &new_build,
        };
        let mut tasks = Vec::new();
        if !indices.is_empty() {
            // Compiling the new build the upgrades install overlaps the fills.
            let new_build = &new_build;
            tasks.push(
                Task::new(Kind::Compile, "compile the new build", move |lane| {
                    lane.client.engine.prepare(new_build)
                })
                .priority(COMPILE + (kinds.len() as i64 + 1) * BAND),
            );
        }
        let costliest = indices.iter().map(|&i| fill_cost(kinds[i])).max();
        let serial = exec.jobs <= 1;
        for (rank, &i) in indices.iter().enumerate() {
            let band = if serial {
                (indices.len() - rank) as i64 * BAND
            } else {
                0
            };
            let step = Step {
                kind: kinds[i],
                size: 0,
                filled: 0,
                from: None,
                base: None,
                priority: if serial {
                    band + SERIAL_FILL
                } else if Some(fill_cost(kinds[i])) == costliest {
                    CRITICAL_FILL
                } else {
                    FILL + fill_cost(kinds[i])
                },
                band,
            };
            tasks.push(grow(&ctx, step, &grown[i]).after(&[ready]));
        }
        pool::graph::run(&mut client, &empty, exec, &work, progress, tasks)?;
        let outcomes = pool::Outcomes::new(
            indices
                .iter()
                .map(|&i| (i, grown[i].records().into()))
                .collect(),
            kinds.len(),
            pool::sha256_hex(plan.as_bytes()),
            exec.shard,
            setup,
        );
        let notes = vec![
            format!(
                "Each store is filled once, in a canister of its own: ids 0, {ID_STEP}, 20, ... up to each size N in turn ({} rows per message), and every operation at N starts from the snapshot taken at N.",
                thousands(PREFILL_CHUNK)
            ),
            "SQLite is filled in the journal mode the canister opens it with (its default) and measured in that mode and in OFF, each set on a fresh connection at each size (a cold page cache, as in seed003).".into(),
            "Store instructions: ic0.performance_counter(0) around the store work inside the canister. Inserts are updates, reads are queries.".into(),
            format!(
                "Memory per row: heap bytes are the canister's heap at N over the same canister empty. The heap is Wasm memory, which never shrinks: a high-water mark (SQLite's grows with its page cache and file system). Stable bytes are the store's own size: the StableBTreeMap's virtual memory (its pages, as the memory manager counts them), SQLite's database file (page_count × page_size), 0 for the heap map (its rows live on the heap between upgrades). The canister's stable memory itself grows in the memory manager's buckets of 128 pages (8 MiB), which is what the storage fee charges: storage is the whole canister (heap, stable memory in whole buckets and the {}-byte module) for 30 days at 127,000 cycles per GiB per second, plus, from replica vintage 2026-05, 10,000 cycles per second for the canister (13 nodes; 34 nodes scaled by 34/13); USD at {} per XDR.",
                thousands(module_bytes),
                self.usd_per_xdr
            ),
            format!(
                "Upgrade: at {} rows each store's canister, as filled, is upgraded to a new build of its module (the same code, another module hash) after a checkpoint, as `--suite upgrade` does it and as a real upgrade ships one: one install_code (pre_upgrade, creating the execution state with the module's whole compilation, post_upgrade, one 300B budget), charged instructions and 5,000,000 + 1 cycle per instruction on 13 nodes. SQLite is upgraded once, filed under the journal mode it was filled in. A failed upgrade (a replica limit) is recorded with the replica's error and does not compete in the decision table.",
                thousands(largest)
            ),
        ];
        let mut report = Report {
            suite: "scaling".into(),
            engine: engine_name,
            rows_before: self.sizes.last().copied().unwrap_or_default(),
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
        if self.capacity_at.is_some() {
            report.set_extra(
                capacity::LIMITS,
                &capacity::RunLimits::from(&client.engine.limits()),
            );
        }
        outcomes.into_report(&mut report);
        report.work = Some(work.log());
        Ok(report)
    }

    fn memory_estimate(&self, exec: &Exec) -> Option<MemoryEstimate> {
        // `--shard` splits by store: a part fills only its own.
        let part = Config {
            kinds: exec
                .indices(self.kinds.len())
                .into_iter()
                .map(|i| self.kinds[i])
                .collect(),
            ..self.clone()
        };
        if part.kinds.is_empty() {
            return None;
        }
        let largest = part.sizes.last().copied().unwrap_or_default();
        let jobs = exec.jobs.min(part.kinds.len()).max(1);
        let mut smaller = Vec::new();
        if jobs > 1 {
            smaller.push(("--jobs 1".to_string(), part.peak_memory(1)));
        }
        for &max in SIZES.iter().rev().filter(|&&n| n < largest) {
            let cfg = part.up_to(max);
            let flag = format!("--scaling-max-rows {max}");
            smaller.push((flag.clone(), cfg.peak_memory(jobs)));
            if jobs > 1 {
                smaller.push((format!("{flag} --jobs 1"), cfg.peak_memory(1)));
            }
        }
        let shard = if exec.shard.is_whole() {
            String::new()
        } else {
            let names: Vec<&str> = part.kinds.iter().map(|k| k.as_str()).collect();
            format!(
                " (shard {}/{}: {})",
                exec.shard.index,
                exec.shard.count,
                names.join(", ")
            )
        };
        Some(MemoryEstimate {
            bytes: part.peak_memory(jobs),
            what: format!(
                "the scaling suite to {} rows on {jobs} job{}{shard}",
                thousands(largest),
                if jobs == 1 { "" } else { "s" }
            ),
            smaller,
        })
    }
}

/// Bytes per row of a store at the peak of its work at its largest size: memory the machine
/// has to lend (resident memory plus the snapshots' memfds, mapped or not), from the
/// 10,000,000-row runs of issue 22 (docs/performance.md, "Memory"). The heap map's 1.5 GB
/// heap and the memfd its snapshot is frozen into, then its failing pre_upgrade growing the
/// heap; SQLite's stable memory (1.1 GB), heap (its page cache, 1.2 GB), the snapshot of it, and
/// the snapshot of a journal mode set on a fresh connection (which rewrites most of the
/// page cache); the StableBTreeMap's stable memory (2.1 GB). Each store run alone to
/// 10,000,000 rows (`--shard K/3 --jobs 1`, e88694c, 2026-11-24) peaked at 3.47 GB (heap
/// map), 2.15 GB (StableBTreeMap) and 3.64 GB (SQLite): the process's own memory included,
/// which `MEMORY_BASE` covers. SQLite's figure was 510 bytes until a snapshot moved the live
/// heap into its copy instead of holding both while it was taken.
const MEMORY_PER_ROW: [(StoreKind, u64); 3] = [
    (StoreKind::Heap, 350),
    (StoreKind::Btree, 210),
    (StoreKind::Sqlite, 380),
];

/// The capacity search at 1,000,000 rows: the heap map's largest insert grows the heap by
/// about 2.2 GB in one message (`--scaling-max-rows 1000000` peaked at 2.72 GB). The stable
/// stores' searches write far less.
const MEMORY_CAPACITY_HEAP: u64 = 2_200_000_000;
const MEMORY_CAPACITY_STABLE: u64 = 600_000_000;

impl Config {
    /// The expected peak of a run on `jobs` workers. Each store has one peak: at its largest
    /// size, or in its capacity search if that needs more. The costliest store's fill holds
    /// a worker from start to end (the critical path goes first), so its peak can meet the
    /// peaks of as many other stores as there are other workers; on one worker the stores
    /// come one after the other.
    pub fn peak_memory(&self, jobs: usize) -> u64 {
        let jobs = jobs.max(1);
        let largest = self.sizes.last().copied().unwrap_or_default();
        let peak = |kind: StoreKind| {
            let per_row = MEMORY_PER_ROW
                .iter()
                .find(|(k, _)| *k == kind)
                .map_or(0, |(_, b)| *b);
            let search = match (self.capacity_at, kind) {
                (None, _) => 0,
                (Some(_), StoreKind::Heap) => MEMORY_CAPACITY_HEAP,
                (Some(_), _) => MEMORY_CAPACITY_STABLE,
            };
            (per_row * largest).max(search)
        };
        let critical = self.kinds.iter().copied().max_by_key(|&k| fill_cost(k));
        let mut others: Vec<u64> = self
            .kinds
            .iter()
            .copied()
            .filter(|&k| Some(k) != critical || jobs == 1)
            .map(peak)
            .collect();
        others.sort_unstable_by(|a, b| b.cmp(a));
        let peaks = match (jobs, critical) {
            (1, _) | (_, None) => others.first().copied().unwrap_or(0),
            (_, Some(k)) => peak(k) + others.iter().take(jobs - 1).sum::<u64>(),
        };
        MEMORY_BASE + peaks
    }

    /// `scaling_max_rows`'s sizes up to `max`, with this config's other settings.
    fn up_to(&self, max: u64) -> Config {
        let sizes = sizes_up_to(max);
        Config {
            capacity_at: sizes.contains(&CAPACITY_ROWS).then_some(CAPACITY_ROWS),
            sizes,
            ..self.clone()
        }
    }
}

/// The journal modes a SQLite store is measured in at each size: the one it was filled in
/// (the canister's default), then OFF.
fn sqlite_modes(default: JournalMode) -> Vec<JournalMode> {
    let mut modes = vec![default];
    if default != JournalMode::Off {
        modes.push(JournalMode::Off);
    }
    modes
}

/// What every task of the run reads.
struct Shared<'a> {
    cfg: &'a Config,
    engine: &'a str,
    /// The installed canister, empty.
    empty: &'a State,
    wasm: &'a [u8],
    /// What the upgrades install: a new build of `wasm`.
    new_build: &'a [u8],
}

/// A store's records as its tasks hand them in, kept in the order one worker measuring
/// them one after the other would give: by size, then the memory records, each mode's
/// operations and capacity searches, and the upgrade last.
#[derive(Default)]
struct Grown {
    parts: Mutex<BTreeMap<(usize, usize, usize), Vec<ScenarioResult>>>,
}

/// Where a store's records go in [`Grown`]: (size, column, part). Column 0 holds the
/// memory records; column `1 + m` the operations (part `1 + op`) and capacity searches
/// (`CAPACITY + message`) of the store's `m`-th mode.
const MEMORY: usize = 0;
const CAPACITY: usize = 100;

impl Grown {
    fn put(&self, at: (usize, usize, usize), records: Vec<ScenarioResult>) {
        self.parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(at, records);
    }

    fn records(&self) -> Vec<ScenarioResult> {
        let parts = std::mem::take(&mut *self.parts.lock().unwrap_or_else(|e| e.into_inner()));
        parts.into_values().flatten().collect()
    }

    /// The records of one mode's operations at one size, in order.
    fn operations(&self, size: usize, column: usize) -> Vec<ScenarioResult> {
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        (1..=OPERATIONS.len())
            .filter_map(|op| parts.get(&(size, column, op)))
            .flatten()
            .cloned()
            .collect()
    }
}

/// Priorities. The longest fill (the critical path) goes first and never waits. Then what
/// lets go of memory before what makes more: the operations on a state (the state goes with
/// the last of them), a mode's start; then the other stores' fills, so that their largest
/// states come while the longest fill's is still small; then the capacity searches and the
/// upgrades.
const CRITICAL_FILL: i64 = 100;
const COMPILE: i64 = 90;
const OPERATION: i64 = 60;
const MODE_START: i64 = 50;
const FILL: i64 = 40;
const SEARCH: i64 = 30;
/// On one worker nothing runs beside the fill, so nothing is gained by filling first: each
/// size is measured (capacity searches included) before the fill goes on, and a store is
/// done before the next one starts (its tasks' priorities are raised by a band of their
/// own), so that only one store's states are held at a time, as the estimate has it.
const SERIAL_FILL: i64 = 25;
const UPGRADE_LAST: i64 = 20;
/// The priorities of one store's tasks on one worker: the first store's band is the
/// highest.
const BAND: i64 = 1_000;

/// What a store's fill costs per row, relative to the others (the StableBTreeMap's messages
/// cost the most per row, then SQLite's, then the heap map's): the costliest selected
/// store's fill is the run's critical path.
fn fill_cost(kind: StoreKind) -> i64 {
    match kind {
        StoreKind::Btree => 3,
        StoreKind::Sqlite => 2,
        StoreKind::Heap => 1,
    }
}

/// How a store's fill goes: after the state `from` (None: the empty canister), on to size
/// `size` of the run's sizes.
struct Step {
    kind: StoreKind,
    size: usize,
    filled: u64,
    from: Option<State>,
    /// The empty canister's stats (its heap and journal mode), once known.
    base: Option<Stats>,
    /// The fill's priority: [`CRITICAL_FILL`] for the costliest store's, else [`FILL`] (on
    /// one worker: [`SERIAL_FILL`] in the store's band).
    priority: i64,
    /// Added to the priority of every other task of the store (see [`BAND`]).
    band: i64,
}

/// The task that fills the store of `kind` to the next size from the state the last one
/// left, snapshots it, spawns what is measured there and the fill on to the next size (or
/// the upgrade at the largest). Each size is a task of its own: from the snapshot, as a
/// worker measuring them one after the other restored it.
fn grow<'s>(ctx: &'s Shared<'s>, step: Step, out: &'s Grown) -> Task<'s> {
    let cfg = ctx.cfg;
    let Step {
        kind,
        size,
        filled,
        from,
        base,
        priority,
        band,
    } = step;
    let n = cfg.sizes[size];
    let first = format!(
        "{} {} to {} rows",
        if from.is_none() {
            "start"
        } else {
            "go on filling"
        },
        kind.as_str(),
        thousands(n)
    );
    Task::new(Kind::Other, first, move |lane| {
        let base = match (&from, base) {
            (None, _) => {
                lane.restore(ctx.empty)?;
                lane.client.stats()?
            }
            (Some(from), Some(base)) => {
                lane.restore(from)?;
                base
            }
            (Some(_), None) => return Err(anyhow!("a fill step without its base stats")),
        };
        drop(from);
        let stores = stores_of(kind, &base)?;
        let (client, ctl) = (&mut lane.client, &lane.ctl);
        users::fill(
            client,
            kind.as_str(),
            filled,
            n,
            PREFILL_CHUNK,
            &mut |to| ctl.step(Kind::Fill, users::fill_name(kind.as_str(), to)),
            &mut |_| {},
        )?;
        lane.step(
            Kind::Snapshot,
            format!("snapshot of {} at {} rows", kind.as_str(), thousands(n)),
        );
        let at_n = lane.snapshot()?;
        let stats = lane.client.stats()?;
        // PocketIC charges by its own replica: priced here by the newest vintage's rules.
        let replica = lane.client.engine.replica().unwrap_or(Replica::NEWEST);
        let module_bytes = ctx.wasm.len() as u64;
        out.put(
            (size, MEMORY, 0),
            memory_records(
                cfg,
                &replica,
                ctx.engine,
                stores[0],
                n,
                &base,
                &stats,
                module_bytes,
            ),
        );
        // The heap map's rows are the heap's: its bytes per row bound an insert.
        let heap_per_row =
            (stats.heap_pages.saturating_sub(base.heap_pages) * PAGE) as f64 / n as f64;
        for (m, &store) in stores.iter().enumerate() {
            let at = Place {
                size,
                column: 1 + m,
                n,
                heap_per_row: (store == Store::Heap).then_some(heap_per_row),
                band,
            };
            lane.spawn(measure_at(ctx, out, store, at, at_n.clone()));
        }
        if size + 1 < cfg.sizes.len() {
            let next = Step {
                kind,
                size: size + 1,
                filled: n,
                from: Some(at_n),
                base: Some(base),
                priority,
                band,
            };
            lane.spawn(grow(ctx, next, out));
        } else {
            let name = format!("upgrade {} at {} rows", kind.as_str(), thousands(n));
            let store = stores[0];
            lane.spawn(
                Task::new(Kind::Upgrade, name, move |lane| {
                    // From the snapshot: the canister as a worker that measured it first
                    // left it, its heap a view of the snapshot's.
                    lane.restore(&at_n)?;
                    let records =
                        upgrade_at(&mut lane.client, cfg, ctx.engine, store, n, ctx.new_build)?;
                    out.put((cfg.sizes.len(), MEMORY, 0), records);
                    Ok(())
                })
                .priority(priority.max(band + UPGRADE_LAST))
                .profiled()
                .park(),
            );
        }
        Ok(())
    })
    .priority(priority)
}

/// The stores a store kind is measured as: SQLite in its default journal mode (read from
/// the empty canister's `stats`), then OFF.
fn stores_of(kind: StoreKind, base: &Stats) -> Result<Vec<Store>> {
    Ok(match kind {
        StoreKind::Heap => vec![Store::Heap],
        StoreKind::Btree => vec![Store::BTree],
        StoreKind::Sqlite => {
            let default = JournalMode::parse(&base.journal_mode).map_err(|e| {
                anyhow!(
                    "the canister's SQLite journal mode {:?}: {e}",
                    base.journal_mode
                )
            })?;
            sqlite_modes(default)
                .into_iter()
                .map(Store::Sqlite)
                .collect()
        }
    })
}

/// Where a mode's measurements at one size go.
#[derive(Clone, Copy)]
struct Place {
    size: usize,
    column: usize,
    n: u64,
    heap_per_row: Option<f64>,
    /// See [`BAND`].
    band: i64,
}

/// The task that starts `store` at `at_n` (SQLite: its journal mode set on a fresh
/// connection) and spawns its operations there, and its capacity searches after them at
/// the capacity size.
fn measure_at<'s>(
    ctx: &'s Shared<'s>,
    out: &'s Grown,
    store: Store,
    at: Place,
    at_n: State,
) -> Task<'s> {
    let cfg = ctx.cfg;
    let name = format!("start {} at {} rows", store.label(), thousands(at.n));
    Task::new(Kind::Fill, name, move |lane| {
        // SQLite in every mode (the fill's included) on a fresh connection, as seed003
        // measures it: the page cache the fill warmed would flatter one mode only.
        let start = match store {
            Store::Sqlite(mode) => {
                lane.restore(&at_n)?;
                match users::sqlite_mode(&mut lane.client, mode)? {
                    Ok(()) => {
                        lane.step(
                            Kind::Snapshot,
                            format!("snapshot of {} at {} rows", store.label(), thousands(at.n)),
                        );
                        Ok(lane.snapshot()?)
                    }
                    Err(reason) => Err(reason),
                }
            }
            _ => Ok(at_n),
        };
        let search = match (&start, cfg.capacity_at) {
            (Ok(start), Some(c)) if c == at.n => Some(Join::new(
                OPERATIONS.len(),
                capacity_at(ctx, out, store, at, start.clone()),
            )),
            _ => None,
        };
        for (op, (position, operation)) in OPERATIONS.into_iter().enumerate() {
            let start = start.clone();
            let search = search.clone();
            let name = format!(
                "{} at {} rows: {}",
                store.label(),
                thousands(at.n),
                operation_title(position, operation)
            );
            lane.spawn(
                Task::new(Kind::Scenario, name, move |lane| {
                    let r = measure(
                        lane, cfg, ctx.engine, store, at.n, position, operation, &start,
                    )?;
                    out.put((at.size, at.column, 1 + op), vec![r]);
                    if let Some(search) = search {
                        search.arrive(&lane.ctl);
                    }
                    Ok(())
                })
                .priority(at.band + OPERATION)
                .profiled(),
            );
        }
        Ok(())
    })
    .priority(at.band + MODE_START)
}

/// The task that, once a mode's operations at the capacity size are measured, spawns its
/// capacity searches (one per message, independent of each other) on `start`.
fn capacity_at<'s>(
    ctx: &'s Shared<'s>,
    out: &'s Grown,
    store: Store,
    at: Place,
    start: State,
) -> Task<'s> {
    let cfg = ctx.cfg;
    let name = format!("capacity of {} at {} rows", store.label(), thousands(at.n));
    Task::new(Kind::Other, name, move |lane| {
        let measured = out.operations(at.size, at.column);
        for (i, message) in capacity::Message::ALL.into_iter().enumerate() {
            let (start, measured) = (start.clone(), measured.clone());
            let name = format!("capacity search: {} {}", store.label(), message.operation());
            lane.spawn(
                Task::new(Kind::Probe, name, move |lane| {
                    let search = capacity::Context {
                        suite: "scaling",
                        engine: ctx.engine,
                        usd_per_xdr: cfg.usd_per_xdr,
                    };
                    let start = lane.local(&start)?;
                    let records = capacity::measure_message(
                        &mut lane.client,
                        &search,
                        store,
                        at.n,
                        start,
                        at.heap_per_row,
                        &measured.iter().collect::<Vec<_>>(),
                        message,
                    )?;
                    out.put((at.size, at.column, CAPACITY + i), records);
                    Ok(())
                })
                .priority(at.band + SEARCH)
                .profiled()
                .park(),
            );
        }
        Ok(())
    })
    .priority(at.band + SEARCH)
}

/// Upgrades the store's canister, as filled to `n` rows, to a new build of its module (a
/// real upgrade ships one, so its compilation is paid in full), as the upgrade suite does
/// it: the whole install_code and its hooks, filed under the mode the store was filled in.
/// A failed upgrade (a replica limit) is a record with the replica's error.
fn upgrade_at(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    engine_name: &str,
    store: Store,
    n: u64,
    new_build: &[u8],
) -> Result<Vec<ScenarioResult>> {
    let (mut records, _, _) = super::upgrade::upgrade(
        client,
        engine_name,
        UpgradeStore::Users(store),
        n,
        cfg.payload_size,
        new_build,
        cfg.usd_per_xdr,
    )?;
    for r in &mut records {
        r.suite = "scaling".into();
        r.position = "-".into();
    }
    Ok(records)
}

/// The operation's call at size `n`: seed003's at that size, but the range scan reads the
/// 1,000 rows around the middle (at N = 1,000, all of them).
fn call_at(cfg: &Config, n: u64, store: Store, position: Position, operation: Operation) -> Call {
    match operation {
        Operation::RangeScan { rows } => Call::Scan {
            offset: (n - rows) / 2 * ID_STEP,
            count: rows,
        },
        _ => Call::for_scenario(
            &super::scenario::Scenario {
                store,
                position,
                operation,
            },
            &cfg.users_at(n),
        ),
    }
}

fn base_record(
    engine_name: &str,
    store: Store,
    n: u64,
    position: &str,
    operation: &str,
) -> ScenarioResult {
    ScenarioResult {
        suite: "scaling".into(),
        engine: engine_name.into(),
        store: store.kind().into(),
        journal_mode: store
            .journal_mode()
            .map(|m| m.to_string())
            .unwrap_or_default(),
        position: position.into(),
        operation: operation.into(),
        rows_before: n,
        ..ScenarioResult::default()
    }
}

#[allow(clippy::too_many_arguments)]
fn measure(
    lane: &mut Lane<'_, '_>,
    cfg: &Config,
    engine_name: &str,
    store: Store,
    n: u64,
    position: Position,
    operation: Operation,
    start: &Result<State, String>,
) -> Result<ScenarioResult> {
    let scenario = super::scenario::Scenario {
        store,
        position,
        operation,
    };
    let call = call_at(cfg, n, store, position, operation);
    let mut result = base_record(engine_name, store, n, position.as_str(), operation.kind());
    result.batch = operation.rows();
    result.method = scenario.method();
    result.args = call.candid_args();
    match start {
        Err(reason) => result.status = crate::report::Status::Refused(reason.clone()),
        Ok(state) => {
            lane.restore(state)?;
            let reply = run_call(&mut lane.client, store.kind(), &call)?;
            record_reply(&mut result, reply, operation, cfg.usd_per_xdr);
        }
    }
    Ok(result)
}

/// The stable bytes a store's rows take, from its own size rather than the canister's
/// stable memory (which the memory manager grows in 8 MiB buckets shared by the stores):
/// the StableBTreeMap's virtual memory, SQLite's database file; the heap map keeps its rows
/// on the heap between upgrades.
pub fn store_stable_bytes(store: Store, stats: &Stats) -> u64 {
    match store {
        Store::Heap => 0,
        // A module older than the field: the canister's stable memory, as before it.
        Store::BTree => stats.btree_stable_pages.unwrap_or(stats.stable_pages) * PAGE,
        Store::Sqlite(_) => stats.sqlite_page_count * stats.sqlite_page_size,
    }
}

/// Wasm and stable memory pages.
const PAGE: u64 = 65_536;

/// The heap bytes the store's `n` rows take (the canister at `n` over the empty one, in
/// 64 KiB pages), its own stable bytes, and the storage cycles of the whole canister (what
/// the storage fee charges) for 30 days under `replica`'s fees.
#[allow(clippy::too_many_arguments)]
fn memory_records(
    cfg: &Config,
    replica: &Replica,
    engine_name: &str,
    store: Store,
    n: u64,
    base: &Stats,
    stats: &Stats,
    module_bytes: u64,
) -> Vec<ScenarioResult> {
    let mut out = Vec::new();
    for (operation, bytes) in [
        (
            HEAP_BYTES,
            stats.heap_pages.saturating_sub(base.heap_pages) * PAGE,
        ),
        (STABLE_BYTES, store_stable_bytes(store, stats)),
    ] {
        let mut r = base_record(engine_name, store, n, "-", operation);
        r.batch = n;
        r.bytes = bytes;
        out.push(r);
    }
    let total = (stats.heap_pages + stats.stable_pages) * PAGE + module_bytes;
    for (subnet, fees) in SUBNETS {
        let mut r = base_record(engine_name, store, n, subnet, STORAGE_30_DAYS);
        r.batch = n;
        r.bytes = total;
        let cycles = fees.storage_cost(replica, total, THIRTY_DAYS);
        r.cycles = cycles as u64;
        r.usd = cycles as f64 / 1e12 * cfg.usd_per_xdr;
        out.push(r);
    }
    out
}

// ---- the report ---------------------------------------------------------------------

/// A column per store (and SQLite mode), in the order the records first name them.
fn store_columns(report: &Report) -> Vec<(String, String)> {
    let mut columns: Vec<(String, String)> = Vec::new();
    for r in &report.results {
        let key = (r.store.clone(), r.journal_mode.clone());
        if OPERATIONS.iter().any(|(_, o)| o.kind() == r.operation) && !columns.contains(&key) {
            columns.push(key);
        }
    }
    columns
}

fn column_label((store, mode): &(String, String)) -> String {
    decision::store_label(store, mode)
}

/// The store's colour in every plot (one table for every suite: `grid::StoreColumn::color_slot`).
fn color_slot((store, mode): &(String, String)) -> Option<usize> {
    super::grid::StoreColumn {
        store: store.clone(),
        journal_mode: mode.clone(),
    }
    .color_slot()
}

/// What the decision table compares at the largest size: the message workloads, the upgrade,
/// then the storage of the whole canister for 30 days on a 13-node subnet.
const STORAGE_WORKLOAD: decision::Workload = decision::Workload {
    name: "storage for 30 days (whole canister)",
    pick: |r| r.operation == STORAGE_30_DAYS && r.position == SUBNETS[0].0,
    cost: |r| r.cycles,
    unit: "cycles",
};

/// The upgrade at the largest size: the whole install_code's charged instructions.
const UPGRADE_WORKLOAD: decision::Workload = decision::Workload {
    name: "upgrade (to a new build)",
    pick: |r| r.operation == UPGRADE,
    cost: |r| r.instructions,
    unit: "instructions per upgrade",
};

fn sizes(report: &Report) -> Vec<u64> {
    let mut sizes: Vec<u64> = report.results.iter().map(|r| r.rows_before).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

fn find<'a>(
    report: &'a Report,
    column: &(String, String),
    n: u64,
    position: &str,
    operation: &str,
    batch: u64,
) -> Option<&'a ScenarioResult> {
    report.results.iter().find(|r| {
        r.store == column.0
            && r.journal_mode == column.1
            && r.rows_before == n
            && r.position == position
            && r.operation == operation
            && r.batch == batch
    })
}

/// The memory records of a store are filed under the mode it was filled in: the first
/// column of its kind.
fn memory_record<'a>(
    report: &'a Report,
    store: &str,
    n: u64,
    position: &str,
    operation: &str,
) -> Option<&'a ScenarioResult> {
    report.results.iter().find(|r| {
        r.store == store && r.rows_before == n && r.position == position && r.operation == operation
    })
}

fn operation_title(position: Position, operation: Operation) -> String {
    match operation {
        Operation::Insert { rows } => format!(
            "insert {} row{} ({position})",
            thousands(rows),
            if rows == 1 { "" } else { "s" }
        ),
        Operation::PointLookups { keys } => format!(
            "point lookup of {} key{} ({position})",
            thousands(keys),
            if keys == 1 { "" } else { "s" }
        ),
        Operation::RangeScan { rows } => format!("range scan of {} rows", thousands(rows)),
    }
}

fn file_stem(position: Position, operation: Operation) -> String {
    format!(
        "plot-{}-{}-{}",
        operation.kind(),
        position,
        operation.rows()
    )
}

pub fn document(report: &Report) -> Document {
    let mut doc = Document::default();
    if let Some(&largest) = sizes(report).last() {
        let decisions: Vec<decision::Decision> = decision::MESSAGE_WORKLOADS
            .iter()
            .chain([&UPGRADE_WORKLOAD, &STORAGE_WORKLOAD])
            .filter_map(|w| decision::decide(report, w, largest))
            .collect();
        let title = format!(
            "Which store is cheapest, at {} rows (charged instructions; storage in cycles)",
            thousands(largest)
        );
        doc.push_table(&title, decision::table(&decisions));
        doc.markdown.push(Block::Text(
            "Generated from this run's records: per workload the cheapest store (and SQLite journal mode), and how many times cheaper it is than the cheapest store of another kind. Messages are compared by the instructions they are charged (what cycles pay for), not by the store's own counter.\n".into(),
        ));
    }
    if let Some(table) = capacity::table(report) {
        let n = report
            .results
            .iter()
            .find(|r| r.operation == Message::Insert.operation())
            .map_or(0, |r| r.rows_before);
        let title = format!(
            "Capacity: the largest batch one message carries, on the {}-row state",
            thousands(n)
        );
        doc.push_table(&title, table);
        doc.markdown.push(Block::Text(capacity::explained(report)));
    }
    doc.markdown.push(Block::Text(
        "Cells are store instructions for one message (`ic0.performance_counter(0)` around the store work) at each store size N; every operation at N starts from the same snapshot.\n".into(),
    ));
    let columns = store_columns(report);
    let sizes = sizes(report);
    let labels: Vec<String> = columns.iter().map(column_label).collect();
    let headers = |first: &str| {
        let mut h = vec![first.to_string()];
        h.extend(labels.iter().cloned());
        h
    };
    for (position, operation) in OPERATIONS {
        let title = format!(
            "{}: store instructions per message, by rows in the store",
            operation_title(position, operation)
        );
        let mut table = Table::new(headers("Rows in the store"));
        for &n in &sizes {
            let mut row = vec![thousands(n)];
            for c in &columns {
                row.push(
                    match find(
                        report,
                        c,
                        n,
                        position.as_str(),
                        operation.kind(),
                        operation.rows(),
                    ) {
                        Some(r) if r.status == crate::report::Status::Ok => {
                            thousands(r.store_instructions)
                        }
                        Some(_) => "failed".into(),
                        None => "-".into(),
                    },
                );
            }
            table.push(row);
        }
        let plot = LinePlot {
            title: operation_title(position, operation),
            unit_plural: "rows".into(),
            unit: "row".into(),
            axes: Some(Axes {
                x: "rows in the store".into(),
                y: "store instructions per message".into(),
                x_unit: "rows".into(),
                y_unit: "instructions".into(),
            }),
            series: columns
                .iter()
                .zip(&labels)
                .map(|(c, label)| Series {
                    label: label.clone(),
                    color: color_slot(c),
                    points: sizes
                        .iter()
                        .filter_map(|&n| {
                            find(
                                report,
                                c,
                                n,
                                position.as_str(),
                                operation.kind(),
                                operation.rows(),
                            )
                            .filter(|r| r.status == crate::report::Status::Ok)
                            .map(|r| (n as f64, r.store_instructions as f64))
                        })
                        .collect(),
                })
                .collect(),
        };
        let file = format!("{}.svg", file_stem(position, operation));
        doc.push_table(&title, table);
        if !plot.svg().is_empty() {
            doc.markdown.push(Block::Image {
                alt: title.clone(),
                file: file.clone(),
            });
            doc.plots.push(Plot {
                file,
                kind: PlotKind::Lines(plot),
            });
        }
    }

    // Memory per row and storage, one column per store kind.
    let mut kinds: Vec<String> = Vec::new();
    for (store, _) in &columns {
        if !kinds.contains(store) {
            kinds.push(store.clone());
        }
    }
    let kind_label = |k: &str| decision::store_label(k, "");
    let mut memory = Table::new({
        let mut h = vec!["Rows in the store".to_string()];
        for k in &kinds {
            h.push(format!("{} heap B/row", kind_label(k)));
            h.push(format!("{} stable B/row", kind_label(k)));
        }
        h
    });
    let mut storage = Table::new({
        let mut h = vec!["Rows in the store".to_string()];
        for k in &kinds {
            h.push(format!("{} 13 nodes", kind_label(k)));
            h.push(format!("{} 34 nodes", kind_label(k)));
        }
        h
    });
    let mut bytes_series: Vec<Series> = Vec::new();
    for k in &kinds {
        // A kind's memory is its fill's: the colour of its first column (the mode it was
        // filled in, for SQLite).
        let first = columns.iter().find(|c| &c.0 == k);
        bytes_series.push(Series {
            label: first.map_or_else(|| kind_label(k), column_label),
            color: first.and_then(color_slot),
            points: Vec::new(),
        });
    }
    for &n in &sizes {
        let mut mem_row = vec![thousands(n)];
        let mut cost_row = vec![thousands(n)];
        for (i, k) in kinds.iter().enumerate() {
            let heap = memory_record(report, k, n, "-", HEAP_BYTES).map(|r| r.bytes);
            let stable = memory_record(report, k, n, "-", STABLE_BYTES).map(|r| r.bytes);
            for b in [heap, stable] {
                mem_row.push(b.map_or("-".into(), |b| per_row(b as f64 / n as f64)));
            }
            if let (Some(h), Some(s)) = (heap, stable) {
                bytes_series[i]
                    .points
                    .push((n as f64, (h + s) as f64 / n as f64));
            }
            for (subnet, _) in SUBNETS {
                cost_row.push(
                    memory_record(report, k, n, subnet, STORAGE_30_DAYS).map_or("-".into(), |r| {
                        format!("{} ({})", thousands(r.cycles), usd(r.usd))
                    }),
                );
            }
        }
        memory.push(mem_row);
        storage.push(cost_row);
    }
    // A million rows sent one per message and 1,000 per message, from the messages measured
    // at each size: execution and ingress apart, then the total. The store keeps growing
    // meanwhile, so this is the price at N, not of growing from N.
    let million = 1_000_000u64;
    let mut bulk = Table::new(
        [
            "Store",
            "Rows in the store",
            "Rows per message",
            "Messages",
            "Execution cycles",
            "Ingress cycles",
            "Total cycles",
            "Total USD",
        ]
        .map(String::from)
        .to_vec(),
    );
    for (c, label) in columns.iter().zip(&labels) {
        for &n in &sizes {
            for batch in [1, 1_000] {
                let Some(r) = find(report, c, n, "middle", "insert", batch)
                    .filter(|r| r.status == crate::report::Status::Ok)
                else {
                    continue;
                };
                let messages = million / batch;
                let execution = r.cycles as u128 * messages as u128;
                let ingress = r.ingress_cycles as u128 * messages as u128;
                let total = execution + ingress;
                // The record's USD per cycle (the run's --usd-per-xdr).
                let usd_total = r.usd * total as f64 / r.cycles.max(1) as f64;
                bulk.push(vec![
                    label.clone(),
                    thousands(n),
                    thousands(batch),
                    thousands(messages),
                    thousands(execution as u64),
                    thousands(ingress as u64),
                    thousands(total as u64),
                    usd(usd_total),
                ]);
            }
        }
    }
    let bulk_title = "Inserting 1,000,000 rows at each size: execution, ingress and total cycles (13-node subnet)";
    doc.push_table(bulk_title, bulk);
    doc.markdown.push(Block::Text(
        "Ingress: what sending the update from outside the IC adds, 1,200,000 cycles per message and 2,000 per byte of the method name and Candid argument. That is a lower bound: the newest replica counts the whole signed envelope (CBOR framing, sender key, signature: a few hundred bytes more per message).\n".into(),
    ));

    let memory_title =
        "Memory per row: the store's heap bytes over the empty canister and its own stable bytes";
    let storage_title =
        "Storage for 30 days: cycles (USD) for the whole canister, heap + stable memory + module";
    doc.push_table(memory_title, memory);
    doc.push_table(storage_title, storage);
    upgrade_section(report, &mut doc);
    let bytes_plot = LinePlot {
        title: "Memory per row (heap + stable)".into(),
        unit_plural: "rows".into(),
        unit: "row".into(),
        axes: Some(Axes {
            x: "rows in the store".into(),
            y: "bytes per row".into(),
            x_unit: "rows".into(),
            y_unit: "bytes/row".into(),
        }),
        series: bytes_series,
    };
    if !bytes_plot.svg().is_empty() {
        doc.markdown.push(Block::Image {
            alt: memory_title.into(),
            file: "plot-bytes-per-row.svg".into(),
        });
        doc.plots.push(Plot {
            file: "plot-bytes-per-row.svg".into(),
            kind: PlotKind::Lines(bytes_plot),
        });
    }
    doc
}

/// The upgrade of each store at the largest size: the hooks and the whole install_code.
fn upgrade_section(report: &Report, doc: &mut Document) {
    use crate::report::Status;
    let upgrades: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| r.operation == UPGRADE)
        .collect();
    if upgrades.is_empty() {
        return;
    }
    let mut table = Table::new(
        [
            "Store",
            "Rows in the store",
            "pre_upgrade",
            "post_upgrade",
            "install_code (charged)",
            "Cycles (USD)",
            "Result",
        ]
        .map(String::from)
        .to_vec(),
    );
    let mut errors = Vec::new();
    for up in upgrades {
        let label = decision::store_label(&up.store, &up.journal_mode);
        let hook = |op: &str| {
            report
                .results
                .iter()
                .find(|r| {
                    r.store == up.store
                        && r.journal_mode == up.journal_mode
                        && r.rows_before == up.rows_before
                        && r.operation == op
                })
                .map_or("-".into(), |r| thousands(r.instructions))
        };
        let result = match &up.status {
            Status::Ok => "ok".to_string(),
            Status::Failed(e) => {
                errors.push(format!("{label}: {e}"));
                decision::fails(&decision::error_code(e))
            }
            Status::Refused(e) => format!("refused: {e}"),
        };
        table.push(vec![
            label,
            thousands(up.rows_before),
            hook("pre_upgrade"),
            hook("post_upgrade"),
            thousands(up.instructions),
            format!("{} ({})", thousands(up.cycles), usd(up.usd)),
            result,
        ]);
    }
    let title =
        "Upgrade to a new build at the largest size: instructions charged per stage and for the whole install_code";
    doc.push_table(title, table);
    for blocks in [&mut doc.markdown, &mut doc.terminal] {
        for e in &errors {
            blocks.push(Block::Text(format!("Failed upgrade, {e}\n")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_decades_up_to_the_maximum_and_the_maximum() {
        assert_eq!(sizes_up_to(10_000_000), SIZES.to_vec());
        assert_eq!(sizes_up_to(1_000), vec![1_000]);
        assert_eq!(sizes_up_to(25_000), vec![1_000, 10_000, 25_000]);
    }

    #[test]
    fn the_estimate_counts_the_longest_fill_beside_as_many_other_peaks_as_workers() {
        let cfg = Config {
            sizes: sizes_up_to(10_000_000),
            kinds: StoreKind::ALL.to_vec(),
            payload_size: 100,
            seed: 1,
            usd_per_xdr: 1.0,
            capacity_at: Some(CAPACITY_ROWS),
        };
        // One worker: SQLite's peak alone (380 B/row); two: the StableBTreeMap's fill
        // (210 B/row) beside it; three: the heap map's (350 B/row) too.
        assert_eq!(cfg.peak_memory(1), 500_000_000 + 3_800_000_000);
        assert_eq!(
            cfg.peak_memory(2),
            500_000_000 + 2_100_000_000 + 3_800_000_000
        );
        assert_eq!(
            cfg.peak_memory(3),
            500_000_000 + 2_100_000_000 + 3_800_000_000 + 3_500_000_000
        );
        assert_eq!(cfg.peak_memory(8), cfg.peak_memory(3));
        // At 1,000,000 rows the capacity searches are the peaks: the heap map's (2.2 GB)
        // and the StableBTreeMap's (0.6 GB) can run side by side.
        let small = cfg.up_to(1_000_000);
        assert_eq!(small.peak_memory(1), 500_000_000 + 2_200_000_000);
        assert_eq!(
            small.peak_memory(2),
            500_000_000 + 600_000_000 + 2_200_000_000
        );
    }

    #[test]
    fn sqlite_is_measured_in_its_default_mode_then_off() {
        assert_eq!(
            sqlite_modes(JournalMode::Persist),
            vec![JournalMode::Persist, JournalMode::Off]
        );
        assert_eq!(sqlite_modes(JournalMode::Off), vec![JournalMode::Off]);
    }

    #[test]
    fn the_range_scan_reads_the_rows_around_the_middle() {
        let cfg = Config {
            sizes: vec![1_000],
            kinds: vec![StoreKind::Btree],
            payload_size: 100,
            seed: 1,
            usd_per_xdr: 1.0,
            capacity_at: None,
        };
        let scan = Operation::RangeScan { rows: 1_000 };
        let args = |n| call_at(&cfg, n, Store::BTree, Position::Middle, scan).candid_args();
        assert_eq!(args(1_000), "(0 : nat64, 1000 : nat64)");
        assert_eq!(args(10_000), "(45000 : nat64, 1000 : nat64)");
    }
}
