//! A users suite's run: the prefilled canister, then each store's scenarios from its
//! starting state, side by side on the run's workers, and the report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::Result;

use super::prefill::{fill, fill_name, prefilled, store_prefill, Keep, Prefilled};
use super::{
    check_rows, record_of, record_reply, run_call, run_update, warm, Call, Config, Point, ID_STEP,
    PREFILL_CHUNK,
};
use crate::bench_canister::{BenchClient, Module};
use crate::engine::cost::MemoryTracker;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{Report, ScenarioResult, Status};
use crate::stores::{self, Prefill};
use crate::suites::pool::{self, Lane, Recorder, State, Task, UnitId};
use crate::suites::scenario::{CacheState, Scenario, Store, StoreKind};
use crate::suites::shared::{Header, Run};

/// Work a suite adds after its scenarios, on the same canister: each store's starting
/// state (or why the canister refused it), the run's log and the report so far.
pub type AfterScenarios<'a> = dyn Fn(
        &mut BenchClient<'_>,
        &[(Store, Result<State, String>)],
        &Recorder,
        &mut Report,
    ) -> Result<()>
    + 'a;

/// Task priorities: the fill of a store filled alone (the heap map's) is the longest chain,
/// then each SQLite mode's start (24 scenarios wait for each), its warm start (a scan of the
/// whole table, which the warm scenarios wait for), then the scenarios.
const ALONE_FILL_FIRST: i64 = 100;
const MODE_START: i64 = 50;
const WARM_START: i64 = 40;
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
pub fn run(
    run: Run<'_>,
    cfg: &Config,
    scenarios: &[Scenario],
    notes: &[String],
    after: Option<&AfterScenarios<'_>>,
) -> Result<Report> {
    let points: Vec<Point> = scenarios.iter().copied().map(Point::of).collect();
    run_points(run, cfg, &points, notes, after)
}

/// [`run`] for points: each scenario after the warm-up messages its point says, from its
/// store's start in its cache state.
pub fn run_points(
    run: Run<'_>,
    cfg: &Config,
    scenarios: &[Point],
    notes: &[String],
    after: Option<&AfterScenarios<'_>>,
) -> Result<Report> {
    cfg.validate()?;
    let (session, exec) = (run.session, run.exec);
    let suite = session.suite();
    let work = &session.work;
    let engine_replica = run.engine.replica();
    let engine_host = run.engine.host().unwrap_or_default();
    let Prefilled {
        mut client,
        base,
        units: prefilled,
        source,
        keep,
        cache,
        mut beside,
    } = prefilled(
        run.engine,
        run.wasm,
        &other_modules(run.modules, cfg)?,
        cfg,
        work,
        run.progress,
    )?;
    for b in &beside {
        client.executed_instructions += b.executed;
    }
    let setup_before = client.executed_instructions;

    let indices = &exec.indices(scenarios.len());
    let plan = scenarios.iter().map(|s| s.key() + "\n").collect::<String>();
    let slots = pool::Slots::new(scenarios.len());
    let slots = &slots;
    let starts = Starts::default();
    let engine_name = session.engine_name.as_str();
    let starts = &starts;
    // Each canister's cache directory and post-prefill key, which its stores' warm starts
    // are kept under: the default module's, then those of `beside`, in order.
    let caches: Vec<Option<(PathBuf, [u8; 32])>> = std::iter::once(cache)
        .chain(beside.iter_mut().map(|b| b.cache.take()))
        .collect();
    let caches = &caches;
    // The scenarios of `store` in the cache state `cache`, from `start`.
    let scenarios_in =
        move |store: Store, cache: CacheState, start: Result<State, String>| -> Vec<Task<'_>> {
            indices
                .iter()
                .filter(|&&i| {
                    let s = &scenarios[i].scenario;
                    s.store == store && s.cache == cache
                })
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
    let scenarios_in = &scenarios_in;
    // From a store's (cold) start in the canister `canister` (of `caches`):
    // its cold scenarios, and the task that makes its warm start (when the plan has warm
    // scenarios of it, in this shard or not: every shard counts the same setup), which then
    // spawns them.
    let measure_in =
        move |store: Store, start: Result<State, String>, canister: usize| -> Vec<Task<'_>> {
            let mut tasks = scenarios_in(store, CacheState::Cold, start.clone());
            let warm = scenarios
                .iter()
                .any(|p| p.scenario.store == store && p.scenario.cache == CacheState::Warm);
            if warm {
                let task = warm_start_task(
                    store,
                    start,
                    starts,
                    cfg,
                    caches[canister].as_ref(),
                    scenarios_in,
                );
                // Another module's store: its warm start is handed to the graph, not spawned
                // by a journal mode's start; it opens a subtree as large, and goes as early,
                // so that worker processes (which cannot share a subtree) even out behind it.
                tasks.push(if canister == 0 {
                    task
                } else {
                    task.priority(MODE_START)
                });
            }
            tasks
        };
    // The same in the default module's canister.
    let measure_from = move |store: Store, start: Result<State, String>| -> Vec<Task<'_>> {
        measure_in(store, start, 0)
    };
    let base = &base;
    let mut tasks: Vec<Task<'_>> = Vec::new();
    if let Some(keep) = keep {
        tasks.push(keep_task(keep, "the post-prefill state", &prefilled));
    }
    for (canister, b) in (1..).zip(beside) {
        if let Some(keep) = b.keep {
            let what = format!("the {} module's post-prefill state", b.module.name);
            tasks.push(keep_task(keep, &what, &b.units));
        }
        for &store in cfg
            .stores
            .iter()
            .filter(|s| s.store_kind().module() == b.module)
        {
            starts.record(store, b.state.clone());
            let from = measure_in(store, b.state.clone(), canister);
            tasks.extend(from.into_iter().map(|t| t.after(&b.units)));
        }
    }
    for &store in &cfg.stores {
        if store.store_kind().module() != Module::DEFAULT {
            continue;
        }
        let prefill = store.store_kind().def().prefill;
        match (prefill, store.journal_mode()) {
            (Prefill::Alone, _) => {
                let name = fill_name(store.stem(), cfg.rows.min(PREFILL_CHUNK));
                let start = start_task(name, store, base, starts, &measure_from, move |lane| {
                    starts.set_up(lane, |lane| fill_alone(lane, cfg, store))?;
                    let noun = store.store_kind().def().noun;
                    lane.step(Kind::Snapshot, format!("snapshot of {noun}"));
                    Ok(Ok(lane.snapshot()?))
                });
                tasks.push(start.after(&prefilled).priority(ALONE_FILL_FIRST));
            }
            (Prefill::Shared, None) => {
                starts.record(store, Ok(base.clone()));
                tasks.extend(
                    measure_from(store, Ok(base.clone()))
                        .into_iter()
                        .map(|t| t.after(&prefilled)),
                );
            }
            (Prefill::Shared, Some(mode)) => {
                let name = format!("set SQLite's journal mode to {mode}");
                let start = start_task(name, store, base, starts, &measure_from, move |lane| {
                    starts.set_up(lane, |lane| mode_start(lane, store))
                });
                tasks.push(start.after(&prefilled).priority(MODE_START));
            }
        }
    }
    // With worker processes (not with `after`, which needs every store's start state in
    // this process), what their tasks leave: the scenarios' outcomes and the setup's
    // instructions.
    let setup_at_start = starts.setup.load(Ordering::Relaxed);
    let export = || -> Result<serde_json::Value> {
        Ok(serde_json::json!({
            "outcomes": slots.export()?,
            "setup": starts.setup.load(Ordering::Relaxed) - setup_at_start,
        }))
    };
    let import = |value: serde_json::Value| -> Result<()> {
        let setup = value["setup"]
            .as_u64()
            .ok_or_else(|| anyhow::anyhow!("a worker process handed in no setup count"))?;
        starts.setup.fetch_add(setup, Ordering::Relaxed);
        slots.import(value["outcomes"].clone())
    };
    let carry = pool::graph::Carry {
        export: &export,
        import: &import,
    };
    let carry = after.is_none().then_some(&carry);
    pool::graph::run_carried(&mut client, base, exec, work, run.progress, tasks, carry)?;
    let outcomes = slots.take(indices, &|i| scenarios[i].key())?;
    let measured = pool::Outcomes::new(
        outcomes,
        scenarios.len(),
        pool::sha256_hex(plan.as_bytes()),
        exec.shard,
        setup_before + starts.setup.load(Ordering::Relaxed),
    );
    let header = Header {
        rows_before: cfg.rows,
        seed: cfg.seed,
        payload_size: cfg.payload_size,
        prefill: Some(source.into()),
        notes: shared_notes(
            cfg,
            engine_replica.and_then(|r| r.memory_tracker.map(|t| t.on(engine_host))),
            notes,
        ),
    };
    let mut report = session.report(&client, header, measured);
    if let Some(after) = after {
        let executed = client.executed_instructions;
        let mut starts = std::mem::take(&mut *starts.lock());
        // In the order of the stores, as the suite lists them.
        starts.sort_by_key(|(s, _)| cfg.stores.iter().position(|x| x == s));
        after(&mut client, &starts, work, &mut report)?;
        report.executed_instructions += client.executed_instructions - executed;
        report.wall_seconds = session.elapsed();
        report.work = Some(work.log());
    }
    Ok(report)
}

/// The modules other than the default that `cfg`'s stores live in, with their bytes.
fn other_modules<'m>(
    modules: &'m stores::Modules<'_>,
    cfg: &Config,
) -> Result<Vec<(Module, &'m [u8])>> {
    cfg.modules()
        .into_iter()
        .filter(|need| need.module != Module::DEFAULT)
        .map(|need| Ok((need.module, modules.get(need.module)?)))
        .collect()
}

/// Writing a post-prefill state (`what`) into the cache, after `after`.
fn keep_task<'s>(keep: Keep, what: &str, after: &[UnitId]) -> Task<'s> {
    let (state, executed, dir, key) = keep;
    Task::new(
        Kind::Other,
        format!("keep {what} in the cache"),
        move |_| {
            store_prefill(state, executed, &dir, &key);
            Ok(())
        },
    )
    .after(after)
    .priority(KEEP_STATE)
}

/// The scenarios of a store that start from a state of its own, as a task: `start` makes
/// the state (or finds why the canister refuses the store) from the post-prefill `base`.
fn start_task<'s>(
    name: String,
    store: Store,
    base: &'s State,
    starts: &'s Starts,
    scenarios_from: &'s (dyn Fn(Store, Result<State, String>) -> Vec<Task<'s>> + Sync),
    start: impl FnOnce(&mut Lane<'_, 's>) -> Result<Result<State, String>> + Send + 's,
) -> Task<'s> {
    Task::new(Kind::Fill, name, move |lane| {
        lane.restore(base)?;
        let start = start(lane)?;
        starts.record(store, start.clone());
        for task in scenarios_from(store, start) {
            lane.spawn(task);
        }
        Ok(())
    })
}

/// The task that makes `store`'s warm start state from its cold one `cold` ([`warm::warm_start`])
/// and then spawns its warm scenarios (`scenarios_in`); a store refused cold is refused warm.
fn warm_start_task<'s>(
    store: Store,
    cold: Result<State, String>,
    starts: &'s Starts,
    cfg: &'s Config,
    cache: Option<&'s (PathBuf, [u8; 32])>,
    scenarios_in: &'s (dyn Fn(Store, CacheState, Result<State, String>) -> Vec<Task<'s>> + Sync),
) -> Task<'s> {
    let name = format!("warm start of {}: the whole table read", store.label());
    Task::new(Kind::Fill, name, move |lane| {
        let warm = match cold {
            Ok(cold) => {
                let (warm, executed) = warm::warm_start(lane, cfg, store, &cold, cache)?;
                starts.setup.fetch_add(executed, Ordering::Relaxed);
                Ok(warm)
            }
            Err(reason) => Err(reason),
        };
        for task in scenarios_in(store, CacheState::Warm, warm) {
            lane.spawn(task);
        }
        Ok(())
    })
    .priority(WARM_START)
}

/// Each store's starting state (or why the canister refused the store), for `after`, and
/// the instructions of the setup done in tasks (the heap map's fill, the journal modes):
/// every shard runs it, a joined report counts it once.
#[derive(Default)]
struct Starts {
    list: Mutex<Vec<(Store, Result<State, String>)>>,
    setup: AtomicU64,
}

impl Starts {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Store, Result<State, String>)>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, store: Store, start: Result<State, String>) {
        self.lock().push((store, start));
    }

    /// Runs `step` on the lane, its instructions counted as setup.
    fn set_up<T>(
        &self,
        lane: &mut Lane<'_, '_>,
        step: impl FnOnce(&mut Lane<'_, '_>) -> Result<T>,
    ) -> Result<T> {
        let before = lane.client.executed_instructions;
        let out = step(lane)?;
        self.setup.fetch_add(
            lane.client.executed_instructions - before,
            Ordering::Relaxed,
        );
        Ok(out)
    }
}

/// Fills a store filled alone on the lane's state, each message after the first a unit of
/// its own (the first is the task's).
fn fill_alone(lane: &mut Lane<'_, '_>, cfg: &Config, store: Store) -> Result<()> {
    let (client, ctl) = (&mut lane.client, &lane.ctl);
    let mut first = true;
    let stem = store.stem();
    fill(
        client,
        stem,
        0,
        cfg.rows,
        PREFILL_CHUNK,
        &mut |to| {
            if !std::mem::take(&mut first) {
                ctl.step(Kind::Fill, fill_name(stem, to));
            }
        },
        &mut |_| {},
    )
}

/// `store` in its journal mode on a fresh connection, snapshotted; the reason when the
/// canister refuses it.
fn mode_start(lane: &mut Lane<'_, '_>, store: Store) -> Result<Result<State, String>> {
    let mode = store.journal_mode().expect("a store in a journal mode");
    Ok(match stores::set_journal_mode(&mut lane.client, mode)? {
        Ok(()) => {
            lane.step(Kind::Snapshot, format!("snapshot of {}", store.label()));
            Ok(lane.snapshot()?)
        }
        Err(reason) => Err(reason),
    })
}

/// The notes every users suite's report starts with; the suite's `notes` follow.
fn shared_notes(cfg: &Config, tracker: Option<MemoryTracker>, notes: &[String]) -> Vec<String> {
    // Under the memory tracker pages are charged during the message (performance_counter
    // sees them too); before it, 1,000 per heap page written, after the message.
    let page_charge = match tracker {
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
    let mut alone: Vec<StoreKind> = cfg.stores.iter().map(|s| s.store_kind()).collect();
    alone.retain(|k| k.def().prefill == Prefill::Alone);
    alone.dedup();
    for (i, kind) in alone.into_iter().enumerate() {
        let noun = kind.def().noun;
        let noun = noun[..1].to_uppercase() + &noun[1..];
        all_notes.insert(1 + i, format!("{noun} (`{}`) is filled after that snapshot and its scenarios start from a snapshot of their own, so its allocations do not change the other stores' counts.", kind.name()));
    }
    let mut own: Vec<StoreKind> = cfg.stores.iter().map(|s| s.store_kind()).collect();
    own.retain(|k| k.module() != Module::DEFAULT);
    own.dedup();
    for kind in own {
        let (noun, sql) = (kind.def().noun, kind.def().sql);
        let connection = if sql {
            ", on a newly opened connection"
        } else {
            ""
        };
        all_notes.push(format!("{noun} (`{}`) lives in a canister of its own, prefilled the same way; its scenarios start from that canister's snapshot{connection}.", kind.name()));
    }
    let cached: Vec<&str> = cfg
        .stores
        .iter()
        .filter(|s| s.store_kind().def().page_cache)
        .map(|s| s.store_kind().def().label)
        .collect();
    if cfg.measures(CacheState::Warm) && !cached.is_empty() {
        let mut kinds = cached;
        kinds.dedup();
        all_notes.push(format!("Warm (`--page-cache`, {}): the store's cold start after one update message that reads the whole table (`scan_users_{{stem}}_update(0, {})`), so that every page of the table is in the page cache, as in a live canister whose traffic has reached every page; each warm scenario then sends one message of its workload (the window of ids just below the measured one for middle and end positions, ids of a draw of its own at random; reads as their `_update` twins, since a query's heap changes are discarded) and measures the next. Cold: a fresh connection, the first message after an upgrade or a reopen. Stores without a page cache have one state, in both tables.", kinds.join(", "), thousands(2 * cfg.rows)));
    }
    all_notes.extend_from_slice(notes);
    all_notes
}

/// One point from its store's starting state (or the reason the store was refused).
fn measure(
    lane: &mut Lane<'_, '_>,
    cfg: &Config,
    suite: &str,
    engine_name: &str,
    point: &Point,
    start: Result<State, String>,
) -> Result<ScenarioResult> {
    let scenario = &point.scenario;
    let call = Call::after_warm_ups(scenario, cfg, point.warm_ups);
    let mut result = ScenarioResult {
        suite: suite.into(),
        engine: engine_name.into(),
        method: scenario.method(),
        args: call.candid_args(),
        ..record_of(point, cfg)
    };
    let fits = Call::warm_ups_fit(scenario, cfg.rows, point.warm_ups);
    match start.and_then(|state| fits.map(|()| state)) {
        Err(reason) => result.status = Status::Refused(reason),
        Ok(state) => {
            lane.restore(&state)?;
            let stem = scenario.store.stem();
            let mut warmed = Ok(());
            for (k, warm_up) in (1..).zip(Call::warm_ups(scenario, cfg, point.warm_ups)) {
                let reply = run_update(&mut lane.client, stem, &warm_up)?;
                warmed = check_rows(reply, warm_up.rows(), &warm_up);
                if let Err(e) = &mut warmed {
                    if point.warm_ups > 1 {
                        *e = format!("{k} of {}: {e}", point.warm_ups);
                    }
                    break;
                }
            }
            match warmed {
                Ok(()) => {
                    let reply = run_call(&mut lane.client, stem, &call)?;
                    record_reply(&mut result, reply, scenario.operation, cfg.usd_per_xdr);
                }
                Err(e) => result.status = Status::Failed(format!("the warm-up message: {e}")),
            }
        }
    }
    Ok(result)
}
