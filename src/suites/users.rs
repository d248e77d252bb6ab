//! The users stores that seed003 and lookups measure: prefill each store with `rows` rows
//! (ids 0, 10, 20, ...), snapshot, then run every scenario of the suite's plan from that
//! identical state.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, Result};
use candid::Principal;
use sha2::{Digest, Sha256};

use super::pool::{Chain, Lane, Recorder, State, Task, UnitId};
use super::scenario::{JournalMode, Operation, Position, Scenario, Store, StoreKind};
use super::{pool, CommonArgs, Exec, MemoryEstimate, Progress, DEFAULT_USD_PER_XDR, MEMORY_BASE};
use crate::bench_canister::{BenchClient, InsertReport, Measured, ReadReport, SqliteConfig};
use crate::engine::cost::CyclesFees;
use crate::engine::disk_cache::{self, Lookup, STATES};
use crate::engine::{Engine, ExportedState};
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{Report, ScenarioResult, Status};

/// Rows per prefill message. Fixed, not the canister's cap: where the fill's messages end
/// decides the heap layout every later count starts from (and the cached states' keys).
pub const PREFILL_CHUNK: u64 = 100_000;
/// Prefilled ids are multiples of this, so every other id is free for new rows.
pub const ID_STEP: u64 = 10;
/// The state both suites share: the stores and their rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Rows prefilled into each store.
    pub rows: u64,
    /// The stores measured (SQLite once per journal mode).
    pub stores: Vec<Store>,
    /// Bytes of the username payload per row.
    pub payload_size: u64,
    /// Seed of the random ids.
    pub seed: u64,
    /// USD per XDR for the price column.
    pub usd_per_xdr: f64,
}

impl Default for Config {
    fn default() -> Self {
        let mut stores = vec![Store::Heap, Store::BTree];
        stores.extend(JournalMode::ALL.map(Store::Sqlite));
        Self {
            rows: 1_000_000,
            stores,
            payload_size: 100,
            seed: 2026,
            usd_per_xdr: DEFAULT_USD_PER_XDR,
        }
    }
}

/// Bytes a store needs per row of `--rows`, as `tenths / 10 × (payload size + 50)`: what the
/// machine lends the run (resident memory plus the snapshots' memfds) at its peak, the
/// prefilled canister, its snapshot and the workers' copies of what they touch. From the
/// sizes at 1,000,000 rows of 100 bytes (the StableBTreeMap's 300 MB of stable memory,
/// shared by its snapshots; the heap map's 156 MB heap, live, frozen in its snapshot and
/// mapped by a worker; SQLite's 210 MB file in stable memory and 122 MB page cache on the
/// heap, and a snapshot per journal mode, whose fresh connection rewrites most of the page
/// cache), checked against runs at 1,000,000 and 3,000,000 rows (docs/performance.md,
/// "Memory"): the default run measured 1.79 GB on one job, 2.10 GB on two and 5.12 GB at
/// 3,000,000 rows, against 2.3 and 5.9 GB estimated.
const MEMORY_PER_ROW: [(StoreKind, u64); 3] = [
    (StoreKind::Heap, 30),
    (StoreKind::Btree, 20),
    // The canister's SQLite: its file and page cache.
    (StoreKind::Sqlite, 22),
];
/// And each journal mode measured: its snapshot's page cache.
const MEMORY_PER_ROW_PER_MODE: u64 = 8;

impl Config {
    /// The expected peak footprint of a run with these stores and rows. It does not depend
    /// on `--jobs`: every journal mode's state is counted, and the workers' copies of what
    /// their scenarios touch are small (the default run: 1.79 GB on one job, 2.10 on two).
    pub fn peak_memory(&self) -> u64 {
        let mut per_row: u64 = MEMORY_PER_ROW
            .iter()
            .filter(|(kind, _)| self.stores.iter().any(|s| s.store_kind() == *kind))
            .map(|(_, tenths)| tenths)
            .sum();
        let modes = self
            .stores
            .iter()
            .filter(|s| s.journal_mode().is_some())
            .count() as u64;
        per_row += modes * MEMORY_PER_ROW_PER_MODE;
        MEMORY_BASE + self.rows * per_row * (self.payload_size + 50) / 10
    }

    /// The estimate the CLI checks before `suite` runs with these settings, with smaller
    /// settings that need less: fewer journal modes, fewer rows.
    pub fn memory_estimate(&self, suite: &str) -> MemoryEstimate {
        let mut smaller = Vec::new();
        let modes: Vec<Store> = self
            .stores
            .iter()
            .copied()
            .filter(|s| s.journal_mode().is_some())
            .collect();
        if modes.len() > 1 {
            let one = Config {
                stores: self
                    .stores
                    .iter()
                    .copied()
                    .filter(|s| s.journal_mode().is_none() || *s == modes[0])
                    .collect(),
                ..self.clone()
            };
            let mode = modes[0]
                .journal_mode()
                .map(|m| m.to_string())
                .unwrap_or_default();
            smaller.push((format!("--journal-modes {mode}"), one.peak_memory()));
        }
        for rows in [1_000_000, 100_000] {
            if rows < self.rows {
                let fewer = Config {
                    rows,
                    ..self.clone()
                };
                smaller.push((format!("--rows {rows}"), fewer.peak_memory()));
            }
        }
        MemoryEstimate {
            bytes: self.peak_memory(),
            what: format!(
                "the {suite} suite with {} rows in {} store{}",
                thousands(self.rows),
                self.stores.len(),
                if self.stores.len() == 1 { "" } else { "s" }
            ),
            smaller,
        }
    }

    /// From the shared flags: the heap map for `heap`, the stable map for `btree`, SQLite
    /// once per journal mode for `sqlite`.
    pub fn from_args(common: &CommonArgs) -> Result<Config> {
        common.validate()?;
        let stores = stores(common);
        let cfg = Config {
            rows: common.rows,
            stores,
            payload_size: common.payload_size,
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<()> {
        if self.stores.is_empty() {
            return Err(anyhow!(
                "no store selected (--stores heap,btree,sqlite and at least one --journal-modes)"
            ));
        }
        if self.rows < 2_000 {
            return Err(anyhow!(
                "--rows must be at least 2000 (the range scan reads 1,000 rows), got {}",
                self.rows
            ));
        }
        Ok(())
    }
}

/// The stores `--stores` and `--journal-modes` select: the heap map for `heap`, the map for
/// `btree`, SQLite once per journal mode for `sqlite`.
pub fn stores(common: &CommonArgs) -> Vec<Store> {
    let mut stores = Vec::new();
    if common.has(StoreKind::Heap) {
        stores.push(Store::Heap);
    }
    if common.has(StoreKind::Btree) {
        stores.push(Store::BTree);
    }
    if common.has(StoreKind::Sqlite) {
        for m in JournalMode::ALL
            .into_iter()
            .filter(|m| common.journal_modes.contains(m))
        {
            stores.push(Store::Sqlite(m));
        }
    }
    stores
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

/// What to call for one scenario: the canister arguments in Candid text, for the report
/// and for users who want to reproduce a number with dfx.
pub(super) enum Call {
    Insert { offset: u64, step: u64, count: u64 },
    InsertIds(Vec<u64>),
    Get { offset: u64, step: u64, count: u64 },
    GetIds(Vec<u64>),
    Scan { offset: u64, count: u64 },
}

impl Call {
    pub(super) fn for_scenario(s: &Scenario, cfg: &Config) -> Call {
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

    pub(super) fn candid_args(&self) -> String {
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

pub(super) enum Reply {
    Insert(Measured<InsertReport>),
    Read(Measured<ReadReport>),
}

pub(super) fn run_call(client: &mut BenchClient<'_>, store: &str, call: &Call) -> Result<Reply> {
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

/// The stable stores the prefill fills (and the post-prefill cache keeps): each kind
/// measured, once. The heap map is not among them: its rows are inserted after the stable
/// stores' snapshot, and its scenarios start from a snapshot of their own. The other
/// stores' scenarios start from the state without the heap map: its allocations (tens of
/// thousands of strings) change where later allocations land and so what malloc costs,
/// which moved their counts by up to 7% at 20,000 rows.
fn prefilled_stores(cfg: &Config) -> Vec<&'static str> {
    [bench_types::names::BTREE, bench_types::names::SQLITE]
        .into_iter()
        .filter(|k| cfg.stores.iter().any(|s| s.kind() == *k))
        .collect()
}

/// Fills the stable stores with `rows` rows each: ids 0, 10, 20, ..., every row really
/// inserted, each message a unit of `chain`.
pub fn prefill(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    chain: &mut Chain<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    for store in prefilled_stores(cfg) {
        fill(
            client,
            store,
            0,
            cfg.rows,
            PREFILL_CHUNK,
            &mut |to| {
                chain.step(Kind::Fill, fill_name(store, to));
            },
            &mut |done| {
                progress(Progress::Prefill {
                    store,
                    done,
                    total: cfg.rows,
                })
            },
        )?;
    }
    chain.stop();
    Ok(())
}

/// The unit of the fill message that brings `store` to `to` rows.
pub fn fill_name(store: &str, to: u64) -> String {
    format!("fill {store} to {} rows", thousands(to))
}

/// Inserts rows `from..to` of `store` (ids `from * ID_STEP`, then every `ID_STEP`), `chunk`
/// rows per message, and checks that each message inserted all of its rows; `before(to)`
/// precedes the message that fills to `to` rows, `after(done)` follows every message. Every
/// suite that grows a users store fills it here.
pub(super) fn fill(
    client: &mut BenchClient<'_>,
    store: &str,
    from: u64,
    to: u64,
    chunk: u64,
    before: &mut dyn FnMut(u64),
    after: &mut dyn FnMut(u64),
) -> Result<()> {
    let mut done = from;
    while done < to {
        let count = chunk.min(to - done);
        before(done + count);
        let out = client.add_users(store, done * ID_STEP, ID_STEP, count)?;
        let report = out
            .value
            .map_err(|e| anyhow!("filling {store} failed at row {done}: {e}"))?;
        if report.rows_inserted != count {
            return Err(anyhow!(
                "filling {store} inserted {} rows instead of {count}",
                report.rows_inserted
            ));
        }
        done += count;
        after(done);
    }
    Ok(())
}

/// Work a suite adds after its scenarios, on the same canister: each store's starting
/// state (or why the canister refused it), the run's log and the report so far.
pub type AfterScenarios<'a> = dyn Fn(
        &mut BenchClient<'_>,
        &[(Store, Result<State, String>)],
        &Recorder,
        &mut Report,
    ) -> Result<()>
    + 'a;

/// Task priorities: the heap map's fill is the longest chain, then each SQLite mode's
/// start (24 scenarios wait for each), then the scenarios.
const HEAP_FILL_FIRST: i64 = 100;
const MODE_START: i64 = 50;
/// Writing the post-prefill state into the cache: no scenario waits for it, but it is one
/// long unit (0.2 s for the default run's 420 MB), better started early than left to the end.
const KEEP_STATE: i64 = 25;
const SCENARIO: i64 = 0;

/// Prefills the stores, then runs `scenarios` (the suite's plan, in report order) each from
/// the post-prefill state of its store, and returns the report; `notes` follow the shared ones.
///
/// The work: the module compiled while the cached post-prefill state is read, the state
/// loaded (or the prefill run and kept), then on `exec.jobs` workers side by side: the heap
/// map's fill and its scenarios, each SQLite journal mode set on a fresh connection and its
/// scenarios, and the StableBTreeMap's scenarios.
#[allow(clippy::too_many_arguments)]
pub fn run(
    engine: &mut dyn Engine,
    wasm: &[u8],
    cfg: &Config,
    suite: &str,
    scenarios: &[Scenario],
    notes: &[String],
    exec: &Exec,
    after: Option<&AfterScenarios<'_>>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Report> {
    cfg.validate()?;
    let started = Instant::now();
    let work = Recorder::new(exec.jobs);
    let engine_name = engine.name().to_string();
    let engine_replica = engine.replica();
    // The post-prefill state is kept in the cache (when the engine can export it) and
    // loaded by the next run with the same parameters instead of prefilling again. The
    // file is read while the module compiles.
    let cache = match (disk_cache::dir(), prefill_key(engine, wasm, cfg)?) {
        (Some(dir), Some(key)) => Some((dir, key)),
        _ => None,
    };
    let (compiled, read) = std::thread::scope(|scope| {
        let reading = cache.as_ref().map(|(dir, key)| {
            let work = &work;
            scope.spawn(move || {
                pool::record::set_lane(1);
                work.unit(
                    Kind::Install,
                    "read the cached post-prefill state",
                    &[],
                    || read_prefill(dir, key),
                )
            })
        });
        let compiled = pool::compile(engine, wasm, &work);
        let read = reading.map(|r| {
            r.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (compiled, read)
    });
    let compiled = compiled?;
    let (entry, read_unit) = match read {
        Some((entry, unit)) => (entry, vec![unit]),
        None => (None, Vec::new()),
    };
    let loaded = entry.and_then(|entry| {
        let after: Vec<UnitId> = [compiled].into_iter().chain(read_unit).collect();
        let (loaded, _) = work.unit(Kind::Install, "load the cached state", &after, || {
            import_prefill(engine, wasm, &entry, cache.as_ref())
        });
        loaded
    });
    let prefill_source = if loaded.is_some() {
        "loaded from the cache"
    } else {
        "run"
    };
    let mut chain = Chain::new(&work, &[compiled]);
    // The post-prefill state and the prefill's instructions, to write into the cache (a task
    // beside the scenarios).
    let mut keep: Option<(ExportedState, u64)> = None;
    let mut client = match loaded {
        Some((canister, executed)) => {
            let mut client = BenchClient::attach(engine, canister);
            client.executed_instructions = executed;
            for store in prefilled_stores(cfg) {
                progress(Progress::Prefill {
                    store,
                    done: cfg.rows,
                    total: cfg.rows,
                });
            }
            client
        }
        None => {
            chain.step(Kind::Install, "install the canister");
            let mut client = BenchClient::install(engine, wasm)?;
            chain.step(Kind::Fill, "set the payload size");
            client
                .set_payload_size(cfg.payload_size)?
                .value
                .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", cfg.payload_size))?;
            prefill(&mut client, cfg, &mut chain, progress)?;
            if cache.is_some() {
                chain.step(Kind::Snapshot, "take the post-prefill state for the cache");
                keep = take_prefill(&mut client);
            }
            client
        }
    };
    let canister = client.canister;
    chain.step(Kind::Snapshot, "snapshot after the prefill");
    let base = pool::graph::snapshot(client.engine, canister)?;
    let prefilled = chain.end();
    let setup_before = client.executed_instructions;

    let indices = exec.indices(scenarios.len());
    let plan = scenarios.iter().map(|s| s.key() + "\n").collect::<String>();
    let slots = pool::Slots::new(scenarios.len());
    let slots = &slots;
    // Each store's starting state (or why the canister refused the store), for `after`.
    let starts: Mutex<Vec<(Store, Result<State, String>)>> = Mutex::new(Vec::new());
    // Instructions of the setup done in tasks (the heap map's fill, the journal modes):
    // every shard runs it, a joined report counts it once.
    let setup = AtomicU64::new(0);
    let engine_name = engine_name.as_str();
    let measure_from = |store: Store, start: Result<State, String>| -> Vec<Task<'_>> {
        indices
            .iter()
            .filter(|&&i| scenarios[i].store == store)
            .map(|&i| {
                let start = start.clone();
                Task::new(
                    Kind::Scenario,
                    format!("scenario {}", scenarios[i].key()),
                    move |lane: &mut Lane<'_, '_>| {
                        let r = measure(lane, cfg, suite, engine_name, &scenarios[i], start)?;
                        slots.put(i, r);
                        Ok(())
                    },
                )
                .priority(SCENARIO)
                .profiled()
            })
            .collect()
    };
    let mut tasks: Vec<Task<'_>> = Vec::new();
    if let (Some((state, executed)), Some((dir, key))) = (keep, &cache) {
        tasks.push(
            Task::new(
                Kind::Other,
                "keep the post-prefill state in the cache",
                move |_| {
                    store_prefill(state, executed, dir, key);
                    Ok(())
                },
            )
            .after(&prefilled)
            .priority(KEEP_STATE),
        );
    }
    for &store in &cfg.stores {
        match store {
            Store::Heap => {
                let (base, starts, setup) = (&base, &starts, &setup);
                let measure_from = &measure_from;
                tasks.push(
                    Task::new(
                        Kind::Fill,
                        fill_name(bench_types::names::HEAP, cfg.rows.min(PREFILL_CHUNK)),
                        move |lane| {
                            lane.restore(base)?;
                            let before = lane.client.executed_instructions;
                            let (client, ctl) = (&mut lane.client, &lane.ctl);
                            let mut first = true;
                            fill(
                                client,
                                bench_types::names::HEAP,
                                0,
                                cfg.rows,
                                PREFILL_CHUNK,
                                &mut |to| {
                                    if !std::mem::take(&mut first) {
                                        ctl.step(
                                            Kind::Fill,
                                            fill_name(bench_types::names::HEAP, to),
                                        );
                                    }
                                },
                                &mut |_| {},
                            )?;
                            setup.fetch_add(
                                lane.client.executed_instructions - before,
                                Ordering::Relaxed,
                            );
                            lane.step(Kind::Snapshot, "snapshot of the heap map");
                            let start = lane.snapshot()?;
                            starts
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((store, Ok(start.clone())));
                            for task in measure_from(store, Ok(start)) {
                                lane.spawn(task);
                            }
                            Ok(())
                        },
                    )
                    .after(&prefilled)
                    .priority(HEAP_FILL_FIRST),
                );
            }
            Store::BTree => {
                starts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((store, Ok(base.clone())));
                tasks.extend(
                    measure_from(store, Ok(base.clone()))
                        .into_iter()
                        .map(|t| t.after(&prefilled)),
                );
            }
            Store::Sqlite(mode) => {
                let (base, starts, setup) = (&base, &starts, &setup);
                let measure_from = &measure_from;
                tasks.push(
                    Task::new(
                        Kind::Fill,
                        format!("set SQLite's journal mode to {mode}"),
                        move |lane| {
                            lane.restore(base)?;
                            let before = lane.client.executed_instructions;
                            let start = match sqlite_mode(&mut lane.client, mode)? {
                                Ok(()) => {
                                    lane.step(Kind::Snapshot, format!("snapshot of SQLite {mode}"));
                                    Ok(lane.snapshot()?)
                                }
                                Err(reason) => Err(reason),
                            };
                            setup.fetch_add(
                                lane.client.executed_instructions - before,
                                Ordering::Relaxed,
                            );
                            starts
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((store, start.clone()));
                            for task in measure_from(store, start) {
                                lane.spawn(task);
                            }
                            Ok(())
                        },
                    )
                    .after(&prefilled)
                    .priority(MODE_START),
                );
            }
        }
    }
    pool::graph::run(&mut client, &base, exec, &work, progress, tasks)?;
    let outcomes = slots.take(&indices, &|i| scenarios[i].key())?;
    let measured = pool::Outcomes::new(
        outcomes,
        scenarios.len(),
        pool::sha256_hex(plan.as_bytes()),
        exec.shard,
        setup_before + setup.load(Ordering::Relaxed),
    );
    let heap_measured = cfg.stores.contains(&Store::Heap);
    // Under the memory tracker pages are charged during the message (performance_counter
    // sees them too); before it, 1,000 per heap page written, after the message.
    let page_charge = match engine_replica.and_then(|r| r.memory_tracker) {
        Some(t) => format!(
            "{} instructions per 64 KiB page of heap or stable memory first touched and as much again per page first written (the memory tracker; in the store work too)",
            crate::report::format::thousands(t.os_page_overhead * t.os_pages_per_wasm_page)
        ),
        None => "1,000 instructions per heap page dirtied".to_string(),
    };
    let mut all_notes = vec![
            format!("Prefill: ids 0, {ID_STEP}, 20, ..., {} in each store, {PREFILL_CHUNK} rows per message; every scenario starts from the same snapshot.", (cfg.rows - 1) * ID_STEP),
            format!("Store instructions: ic0.performance_counter(0) around the store work inside the canister (what seed 003 reports). Charged: the whole message as the replica bills it, including {page_charge}."),
            format!("Cycles: 13-node application subnet, 5,000,000 per update + 1 per instruction; USD at {} per XDR (1 XDR = 10^12 cycles; an assumption). Queries are free when not replicated.", cfg.usd_per_xdr),
            format!("Random positions: ids drawn with seed {}; SQLite journal modes are set on a fresh connection after the prefill.", cfg.seed),
        ];
    if heap_measured {
        all_notes.insert(1, "The heap map (`heap`) is filled after that snapshot and its scenarios start from a snapshot of their own, so its allocations do not change the other stores' counts.".into());
    }
    all_notes.extend_from_slice(notes);
    let mut report = Report {
        suite: suite.into(),
        engine: engine_name.to_string(),
        rows_before: cfg.rows,
        seed: cfg.seed,
        payload_size: cfg.payload_size,
        wall_seconds: started.elapsed().as_secs_f64(),
        prefill: Some(prefill_source.into()),
        executed_instructions: client.executed_instructions,
        work: None,
        results: Vec::new(),
        notes: all_notes,
        extra: Default::default(),
    };
    measured.into_report(&mut report);
    if let Some(after) = after {
        let executed = client.executed_instructions;
        let mut starts = starts.into_inner().unwrap_or_else(|e| e.into_inner());
        // In the order of the stores, as the suite lists them.
        starts.sort_by_key(|(s, _)| cfg.stores.iter().position(|x| x == s));
        after(&mut client, &starts, &work, &mut report)?;
        report.executed_instructions += client.executed_instructions - executed;
        report.wall_seconds = started.elapsed().as_secs_f64();
    }
    report.work = Some(work.log());
    Ok(report)
}

/// Sets SQLite's journal `mode` on a fresh connection, on the canister's state now; the
/// reason when the canister refuses it.
pub(super) fn sqlite_mode(
    client: &mut BenchClient<'_>,
    mode: JournalMode,
) -> Result<Result<(), String>> {
    let config = SqliteConfig {
        journal_mode: Some(mode.to_string()),
        ..SqliteConfig::default()
    };
    Ok(match client.configure_sqlite(&config)?.value {
        Ok(settings) if settings.journal_mode.eq_ignore_ascii_case(mode.as_str()) => Ok(()),
        Ok(settings) => Err(format!(
            "asked for {mode}, SQLite uses {}",
            settings.journal_mode
        )),
        Err(e) => Err(e),
    })
}

/// What names a scenario's record (and so its id) before it runs.
fn record_of(scenario: &Scenario, cfg: &Config) -> ScenarioResult {
    ScenarioResult {
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
        ..ScenarioResult::default()
    }
}

/// The ids of the records `matrix` will give, in order (what `--profile` matches).
pub fn scenario_ids(matrix: &[Scenario], cfg: &Config) -> Vec<String> {
    let records: Vec<ScenarioResult> = matrix.iter().map(|s| record_of(s, cfg)).collect();
    crate::report::scenario_ids(&records)
}

/// One scenario from its store's starting state (or the reason the store was refused).
fn measure(
    lane: &mut Lane<'_, '_>,
    cfg: &Config,
    suite: &str,
    engine_name: &str,
    scenario: &Scenario,
    start: Result<State, String>,
) -> Result<ScenarioResult> {
    let call = Call::for_scenario(scenario, cfg);
    let mut result = ScenarioResult {
        suite: suite.into(),
        engine: engine_name.into(),
        method: scenario.method(),
        args: call.candid_args(),
        ..record_of(scenario, cfg)
    };
    match start {
        Err(reason) => result.status = Status::Refused(reason),
        Ok(state) => {
            lane.restore(&state)?;
            let reply = run_call(&mut lane.client, scenario.store.kind(), &call)?;
            record_reply(&mut result, reply, scenario.operation, cfg.usd_per_xdr);
        }
    }
    Ok(result)
}

/// Fills `result` from the canister's reply to `operation`: the store's own count, the
/// message's charge, cycles for inserts (queries are free when not replicated) and pages.
pub(super) fn record_reply(
    result: &mut ScenarioResult,
    reply: Reply,
    operation: Operation,
    usd_per_xdr: f64,
) {
    let fees = CyclesFees::APPLICATION_13;
    let (message, request_bytes, outcome) = match reply {
        Reply::Insert(m) => (
            m.message,
            m.request_bytes,
            m.value.map(|r| (r.instructions, r.rows_inserted)),
        ),
        Reply::Read(m) => (
            m.message,
            m.request_bytes,
            m.value.map(|r| (r.instructions, r.rows_found)),
        ),
    };
    match outcome {
        Err(e) => result.status = Status::Failed(e),
        Ok((store_instructions, rows)) if rows != operation.rows() => {
            result.status = Status::Failed(format!(
                "expected {} rows, the canister reports {rows}",
                operation.rows()
            ));
            result.store_instructions = store_instructions;
        }
        Ok((store_instructions, _)) => {
            let n = operation.rows() as f64;
            result.store_instructions = store_instructions;
            result.store_instructions_per_row = store_instructions as f64 / n;
            result.instructions = message.instructions;
            result.instructions_per_row = message.instructions as f64 / n;
            if matches!(operation, Operation::Insert { .. }) {
                let cycles = fees.execution_cost(message.instructions, false);
                result.cycles = cycles as u64;
                result.usd = cycles as f64 / 1e12 * usd_per_xdr;
                result.ingress_cycles = fees.ingress_cost(request_bytes) as u64;
            }
            result.heap_pages_delta =
                pages_delta(message.heap_bytes_before, message.heap_bytes_after);
            result.stable_pages_delta =
                pages_delta(message.stable_bytes_before, message.stable_bytes_after);
            result.set_pages(&message);
            // One message per record: its page map goes beside its profile.
            result.page_map_data = message.page_map.clone();
            result.add_profile(message.profile.as_ref());
        }
    }
}

/// The key of a post-prefill state: the engine's part (the module, the engine's
/// configuration and sources; None if it cannot keep states) and every input of the
/// prefill: the stores, rows, payload size, id step and chunk, and the code that sends it
/// (the source fingerprint of src/ and canisters/types, from build.rs).
fn prefill_key(engine: &dyn Engine, wasm: &[u8], cfg: &Config) -> Result<Option<[u8; 32]>> {
    let Some(engine_key) = engine.state_key(wasm)? else {
        return Ok(None);
    };
    let mut h = Sha256::new();
    h.update(b"icbench users prefill\0");
    h.update(engine_key);
    h.update(env!("CARGO_PKG_VERSION"));
    h.update(b"\0");
    h.update(env!("ICBENCH_SOURCE_FINGERPRINT"));
    h.update(format!(
        "\0stores={:?} rows={} payload_size={} id_step={ID_STEP} chunk={PREFILL_CHUNK}",
        prefilled_stores(cfg),
        cfg.rows,
        cfg.payload_size
    ));
    Ok(Some(h.finalize().into()))
}

/// The cached post-prefill state's entry, or None (after saying why if something was
/// wrong) when the prefill must run.
fn read_prefill(dir: &std::path::Path, key: &[u8; 32]) -> Option<disk_cache::Entry> {
    match disk_cache::read(dir, STATES, key) {
        Ok(Lookup::Found(entry)) => Some(entry),
        Ok(Lookup::Missing) => None,
        Ok(Lookup::Damaged(e)) => {
            eprintln!("warning: {e:#}; running the prefill");
            None
        }
        Err(e) => {
            disk_cache::warn_once("the cache cannot be read", &e);
            None
        }
    }
}

/// The cached post-prefill state `entry`, imported into the (fresh) engine: the canister and
/// the instructions the prefill executed. None (after saying why) when the entry does not
/// load and the prefill must run.
fn import_prefill(
    engine: &mut dyn Engine,
    wasm: &[u8],
    entry: &disk_cache::Entry,
    cache: Option<&(std::path::PathBuf, [u8; 32])>,
) -> Option<(Principal, u64)> {
    let imported = <[u8; 8]>::try_from(entry.meta())
        .map_err(|_| anyhow!("a meta part of {} bytes, not 8", entry.meta().len()))
        .and_then(|executed| {
            let canister = engine.import_state(wasm, entry.payload())?;
            Ok((canister, u64::from_le_bytes(executed)))
        });
    match imported {
        Ok(loaded) => {
            disk_cache::count_hit(STATES);
            Some(loaded)
        }
        Err(e) => {
            disk_cache::count_rejected(STATES);
            let path = cache
                .map(|(dir, key)| {
                    disk_cache::entry_path(dir, STATES, key)
                        .display()
                        .to_string()
                })
                .unwrap_or_default();
            eprintln!("warning: cache entry {path}: {e:#}; running the prefill");
            None
        }
    }
}

/// Takes the post-prefill state for the cache, with the prefill's instructions; an engine
/// that cannot give it costs one warning.
fn take_prefill(client: &mut BenchClient<'_>) -> Option<(ExportedState, u64)> {
    disk_cache::count_miss(STATES);
    match client.engine.export_state(client.canister) {
        Ok(state) => Some((state, client.executed_instructions)),
        Err(e) => {
            disk_cache::warn_once("the post-prefill state cannot be kept in the cache", &e);
            None
        }
    }
}

/// Keeps the post-prefill state; a cache that cannot take it costs one warning.
fn store_prefill(state: ExportedState, executed: u64, dir: &std::path::Path, key: &[u8; 32]) {
    let meta = executed.to_le_bytes();
    let stored = disk_cache::write_streamed(dir, STATES, key, &meta, |w| state.write_to(w));
    if let Err(e) = stored {
        disk_cache::warn_once("the post-prefill state cannot be kept in the cache", &e);
    }
}

fn pages_delta(before: u64, after: u64) -> i64 {
    (after as i64 - before as i64) / 65536
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_each_store_kind_once_and_each_journal_mode() {
        let cfg = Config::default();
        // The heap map 3, the StableBTreeMap 2, SQLite 2.2 and 0.8 per mode (six) times
        // (100 + 50) bytes a row.
        assert_eq!(cfg.peak_memory(), MEMORY_BASE + 1_000_000 * 120 * 150 / 10);
        let e = Config {
            rows: 10_000_000,
            ..cfg.clone()
        }
        .memory_estimate("seed003");
        assert_eq!(e.bytes, MEMORY_BASE + 18_000_000_000);
        assert_eq!(e.what, "the seed003 suite with 10,000,000 rows in 8 stores");
        let flags: Vec<&str> = e.smaller.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            flags,
            ["--journal-modes DELETE", "--rows 1000000", "--rows 100000"]
        );
        assert_eq!(e.smaller[0].1, MEMORY_BASE + 10_000_000 * 80 * 150 / 10);
        let btree = Config {
            stores: vec![Store::BTree],
            payload_size: 1_000,
            ..cfg
        };
        assert_eq!(
            btree.peak_memory(),
            MEMORY_BASE + 1_000_000 * 20 * 1_050 / 10
        );
    }
}
