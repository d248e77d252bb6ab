//! The users stores that seed003 and lookups measure: prefill each store with `rows` rows
//! (ids 0, 10, 20, ...), snapshot, then run every scenario of the suite's plan from that
//! identical state.

use std::collections::HashSet;
use std::time::Instant;

use anyhow::{anyhow, Result};
use candid::Principal;
use sha2::{Digest, Sha256};

use super::scenario::{JournalMode, Operation, Position, Scenario, Store, StoreKind};
use super::{pool, CommonArgs, Exec, Progress, DEFAULT_USD_PER_XDR};
use crate::bench_canister::{BenchClient, InsertReport, Measured, ReadReport, SqliteConfig};
use crate::engine::cost::CyclesFees;
use crate::engine::disk_cache::{self, Lookup, STATES};
use crate::engine::{Engine, SnapshotId};
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

impl Config {
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
/// measured, once. The heap map is not among them: see [`heap_start`].
fn prefilled_stores(cfg: &Config) -> Vec<&'static str> {
    [bench_types::names::BTREE, bench_types::names::SQLITE]
        .into_iter()
        .filter(|k| cfg.stores.iter().any(|s| s.kind() == *k))
        .collect()
}

/// Fills the stable stores with `rows` rows each: ids 0, 10, 20, ..., every row really inserted.
pub fn prefill(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    for store in prefilled_stores(cfg) {
        prefill_store(client, cfg, store, progress)?;
    }
    Ok(())
}

/// The heap store's starting snapshot, when it is measured: its rows are inserted after the
/// stable stores' snapshot, and its scenarios start from a snapshot of their own. The other
/// stores' scenarios start from the state without the heap map: its allocations (tens of
/// thousands of strings) change where later allocations land and so what malloc costs,
/// which moved their counts by up to 7% at 20,000 rows.
fn heap_start(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Option<SnapshotId>> {
    if !cfg.stores.contains(&Store::Heap) {
        return Ok(None);
    }
    prefill_store(client, cfg, bench_types::names::HEAP, progress)?;
    Ok(Some(client.engine.snapshot(client.canister)?))
}

/// Fills one store with `rows` rows: ids 0, 10, 20, ..., `PREFILL_CHUNK` per message.
fn prefill_store(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    store: &str,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    fill(client, store, 0, cfg.rows, PREFILL_CHUNK, &mut |done| {
        progress(Progress::Prefill {
            store,
            done,
            total: cfg.rows,
        })
    })
}

/// Inserts rows `from..to` of `store` (ids `from * ID_STEP`, then every `ID_STEP`), `chunk`
/// rows per message, and checks that each message inserted all of its rows; `after(done)`
/// follows every message. Every suite that grows a users store fills it here.
pub(super) fn fill(
    client: &mut BenchClient<'_>,
    store: &str,
    from: u64,
    to: u64,
    chunk: u64,
    after: &mut dyn FnMut(u64),
) -> Result<()> {
    let mut done = from;
    while done < to {
        let count = chunk.min(to - done);
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
/// snapshot (or why the canister refused it) and the report so far.
pub type AfterScenarios<'a> = dyn Fn(&mut BenchClient<'_>, &[(Store, Result<SnapshotId, String>)], &mut Report) -> Result<()>
    + 'a;

/// Prefills the stores, then runs `scenarios` (the suite's plan, in report order) each from
/// the post-prefill state of its store, and returns the report; `notes` follow the shared ones.
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
    let engine_name = engine.name().to_string();
    let engine_replica = engine.replica();
    // The post-prefill state is kept in the cache (when the engine can export it) and
    // loaded by the next run with the same parameters instead of prefilling again.
    let cache = match (disk_cache::dir(), prefill_key(engine, wasm, cfg)?) {
        (Some(dir), Some(key)) => Some((dir, key)),
        _ => None,
    };
    let loaded = cache
        .as_ref()
        .and_then(|(dir, key)| load_prefill(engine, wasm, dir, key));
    let prefill_source = if loaded.is_some() {
        "loaded from the cache"
    } else {
        "run"
    };
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
            let mut client = BenchClient::install(engine, wasm)?;
            client
                .set_payload_size(cfg.payload_size)?
                .value
                .map_err(|e| anyhow!("set_payload_size({}) failed: {e}", cfg.payload_size))?;
            prefill(&mut client, cfg, progress)?;
            if let Some((dir, key)) = &cache {
                store_prefill(&mut client, dir, key);
            }
            client
        }
    };
    let canister = client.canister;
    let base = client.engine.snapshot(canister)?;
    let heap_base = heap_start(&mut client, cfg, progress)?;

    // One starting snapshot per store: SQLite's journal mode is set on a fresh connection
    // after the prefill; a mode the canister refuses marks all that store's scenarios.
    let mut starts: Vec<(Store, Result<SnapshotId, String>)> = Vec::new();
    for &store in &cfg.stores {
        let start = match store.journal_mode() {
            None if store == Store::Heap => {
                Ok(heap_base.expect("heap_start ran: heap is selected"))
            }
            None => Ok(base),
            Some(mode) => sqlite_start(&mut client, base, mode)?,
        };
        starts.push((store, start));
    }

    let measured = pool::run_scenarios(
        &mut client,
        base,
        scenarios.len(),
        exec,
        &|i| scenarios[i].key(),
        progress,
        &|client, i| {
            let start = starts
                .iter()
                .find(|(s, _)| *s == scenarios[i].store)
                .map(|(_, st)| st.clone())
                .expect("every store has a start");
            measure(client, cfg, suite, &engine_name, &scenarios[i], start).map(Into::into)
        },
    )?;
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
    if heap_base.is_some() {
        all_notes.insert(1, "The heap map (`heap`) is filled after that snapshot and its scenarios start from a snapshot of their own, so its allocations do not change the other stores' counts.".into());
    }
    all_notes.extend_from_slice(notes);
    let mut report = Report {
        suite: suite.into(),
        engine: engine_name,
        rows_before: cfg.rows,
        seed: cfg.seed,
        payload_size: cfg.payload_size,
        wall_seconds: started.elapsed().as_secs_f64(),
        prefill: Some(prefill_source.into()),
        executed_instructions: client.executed_instructions,
        results: Vec::new(),
        notes: all_notes,
        extra: Default::default(),
    };
    measured.into_report(&mut report);
    if let Some(after) = after {
        let executed = client.executed_instructions;
        after(&mut client, &starts, &mut report)?;
        report.executed_instructions += client.executed_instructions - executed;
        report.wall_seconds = started.elapsed().as_secs_f64();
    }
    Ok(report)
}

/// A snapshot of the canister at `at` with SQLite on a fresh connection in journal `mode`,
/// or the reason the canister refused the mode.
pub(super) fn sqlite_start(
    client: &mut BenchClient<'_>,
    at: SnapshotId,
    mode: JournalMode,
) -> Result<Result<SnapshotId, String>> {
    client.engine.restore(client.canister, at)?;
    let config = SqliteConfig {
        journal_mode: Some(mode.to_string()),
        ..SqliteConfig::default()
    };
    Ok(match client.configure_sqlite(&config)?.value {
        Ok(settings) if settings.journal_mode.eq_ignore_ascii_case(mode.as_str()) => {
            Ok(client.engine.snapshot(client.canister)?)
        }
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

/// One scenario from its store's starting snapshot (or the reason the store was refused).
fn measure(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    suite: &str,
    engine_name: &str,
    scenario: &Scenario,
    start: Result<SnapshotId, String>,
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
        Ok(snapshot) => {
            let canister = client.canister;
            client.engine.restore(canister, snapshot)?;
            let reply = run_call(client, scenario.store.kind(), &call)?;
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
            result.heap_dirty_pages = message.heap_dirty_pages;
            result.stable_dirty_pages = message.stable_dirty_pages;
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

/// The cached post-prefill state, imported into the (fresh) engine: the canister and the
/// instructions the prefill executed. None (after saying why if something was wrong) when
/// the prefill must run.
fn load_prefill(
    engine: &mut dyn Engine,
    wasm: &[u8],
    dir: &std::path::Path,
    key: &[u8; 32],
) -> Option<(Principal, u64)> {
    match disk_cache::read(dir, STATES, key) {
        Ok(Lookup::Found(entry)) => {
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
                    let path = disk_cache::entry_path(dir, STATES, key);
                    eprintln!(
                        "warning: cache entry {}: {e:#}; running the prefill",
                        path.display()
                    );
                    None
                }
            }
        }
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

/// Keeps the post-prefill state; a cache that cannot take it costs one warning.
fn store_prefill(client: &mut BenchClient<'_>, dir: &std::path::Path, key: &[u8; 32]) {
    disk_cache::count_miss(STATES);
    let stored = client
        .engine
        .export_state(client.canister)
        .and_then(|state| {
            let executed = client.executed_instructions.to_le_bytes();
            disk_cache::write(dir, STATES, key, &executed, &state)
        });
    if let Err(e) = stored {
        disk_cache::warn_once("the post-prefill state cannot be kept in the cache", &e);
    }
}

fn pages_delta(before: u64, after: u64) -> i64 {
    (after as i64 - before as i64) / 65536
}
