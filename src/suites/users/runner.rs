//! A users suite's run: its canisters made (`users/canister.rs`), then each store's
//! scenarios from its starting state, side by side on the run's workers, and the report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::Result;

use super::kept::{self, Recipe, SPAWNED};
use super::{
    check_rows, layout, record_of, record_sent, run_call, run_update, warm, Call, Config, Point,
};
use crate::bench_canister::{BenchClient, Module, RejectedCall};
use crate::engine::cost::MemoryTracker;
use crate::engine::Engine;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{Report, ScenarioResult, Status};
use crate::stores::{self, Layout, Prefill};
use crate::suites::canister::{
    self, fill, fill_name, rows_per_message, store_prefill, Fill, Keep, Made, ID_STEP,
};
use crate::suites::pool::{self, Lane, Recorder, State, Task, UnitId};
use crate::suites::scenario::{CacheState, Store, StoreKind};
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

/// Task priorities: the fill of a store filled after its canister's snapshot (the seed
/// layout's heap map) is the longest chain, then each SQLite mode's start (24 scenarios wait
/// for each), its warm start (a scan of the whole table, which the warm scenarios wait for),
/// then the scenarios.
const FILL_AFTER_SNAPSHOT: i64 = 100;
const MODE_START: i64 = 50;
const WARM_START: i64 = 40;
/// Writing the post-prefill state into the cache: no scenario waits for it, but it is one
/// long unit (0.2 s for the default run's 420 MB), better started early than left to the end.
const KEEP_STATE: i64 = 25;
const SCENARIO: i64 = 0;

/// Fills the stores, then runs `scenarios` (the suite's plan, in report order) each after
/// the warm-up messages its point says, from its store's start in its cache state, and
/// returns the report; `notes` follow the shared ones.
///
/// The work: each canister of the layout made (its module compiled while its cached
/// post-prefill state is read, the state loaded, or the prefill run and kept), the
/// canisters side by side; then on `exec.jobs` workers each store's start (its journal
/// mode set on a fresh connection, its warm start, the seed layout's heap map filled) and
/// its scenarios.
pub fn run_points(
    run: Run<'_>,
    cfg: &Config,
    scenarios: &[Point],
    notes: &[String],
    after: Option<&AfterScenarios<'_>>,
) -> Result<Report> {
    cfg.validate()?;
    let (session, exec) = (run.session, run.exec);
    let work = &session.work;
    let tracker = run.engine.replica().and_then(|r| {
        r.memory_tracker
            .map(|t| t.on(run.engine.host().unwrap_or_default()))
    });
    let modules = run.modules;
    let mut made = canister::make_all(
        run.engine,
        &layout::canisters(cfg),
        &|module| modules.get(module),
        cfg.filling(),
        exec.jobs,
        work,
        run.progress,
    )?;
    let mut client = attach(run.engine, &made)?;
    let setup_before = client.executed_instructions;
    let keeps: Vec<Option<Keep>> = made.iter_mut().map(|m| m.keep.take()).collect();
    let start = made[0].snapshot.clone();
    let (indices, slots, starts) = (
        exec.indices(scenarios.len()),
        pool::Slots::new(scenarios.len()),
        Starts {
            keep: after.is_some(),
            ..Starts::default()
        },
    );
    let plan = Plan {
        cfg,
        scenarios,
        indices: &indices,
        slots: &slots,
        starts: &starts,
        suite: session.suite(),
        engine_name: &session.engine_name,
    };
    let mut tasks: Vec<Task<'_>> = Vec::new();
    for (m, keep) in made.iter().zip(keeps) {
        if let Some(keep) = keep {
            let what = format!("the {} canister's post-prefill state", m.canister.name);
            tasks.push(keep_task(keep, &what, &m.units));
        }
        tasks.extend(plan.canister(m));
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
    pool::graph::run(&mut client, &start, exec, work, run.progress, tasks, carry)?;
    let outcomes = slots.take(&indices, &|i| scenarios[i].key())?;
    let measured = pool::Outcomes::new(
        outcomes,
        scenarios.len(),
        pool::sha256_hex(
            scenarios
                .iter()
                .map(|s| s.key() + "\n")
                .collect::<String>()
                .as_bytes(),
        ),
        exec.shard,
        setup_before + starts.setup.load(Ordering::Relaxed),
    );
    let header = Header {
        workload: crate::report::Workload {
            rows_before: cfg.rows,
            seed: cfg.seed,
            payload_size: cfg.payload_size,
        },
        prefill: Some(prefill_source(&made)),
        notes: shared_notes(cfg, tracker, notes),
    };
    let mut report = session.report(&client, header, measured);
    report.set_extra(crate::report::LAYOUT, &cfg.layout.name());
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

/// A client of the run's engine on the first canister made, its instructions those of
/// every canister's making: the graph's workers start from that canister's snapshot. A
/// canister made on an engine of its own is taken in.
fn attach<'e>(engine: &'e mut dyn Engine, made: &[Made]) -> Result<BenchClient<'e>> {
    let first = made
        .first()
        .ok_or_else(|| anyhow::anyhow!("internal error: a users run without a canister"))?;
    let canister = first.snapshot.canister();
    if let State::Shared(_) = first.snapshot {
        let id = pool::graph::local(engine, &first.snapshot)?;
        engine.restore(canister, id)?;
        engine.forget(id)?;
    }
    let mut client = BenchClient::attach(engine, canister);
    client.executed_instructions = made.iter().map(|m| m.executed).sum();
    Ok(client)
}

/// Where the post-prefill states came from, for the report: `run`, `loaded from the
/// cache`, or how many of the canisters' were loaded.
fn prefill_source(made: &[Made]) -> String {
    let loaded = made.iter().filter(|m| m.loaded).count();
    match loaded {
        0 => "run".to_string(),
        n if n == made.len() => "loaded from the cache".to_string(),
        n => format!(
            "run ({n} of {} canisters loaded from the cache)",
            made.len()
        ),
    }
}

/// What the tasks of a run share: the plan, where its outcomes go, the stores' starts.
#[derive(Clone, Copy)]
struct Plan<'s> {
    cfg: &'s Config,
    scenarios: &'s [Point],
    /// The scenarios this shard measures.
    indices: &'s [usize],
    slots: &'s pool::Slots,
    starts: &'s Starts,
    suite: &'s str,
    engine_name: &'s str,
}

impl<'s> Plan<'s> {
    /// The work of one canister made: each of its stores from its start (the seed layout's
    /// heap map filled first, a SQLite store set to its journal mode first), after the
    /// canister's units.
    fn canister(self, made: &'s Made) -> Vec<Task<'s>> {
        let cache = made.cache.as_ref();
        let mut tasks = Vec::new();
        for &store in self.cfg.stores.iter() {
            let kind = store.store_kind();
            if !made.canister.holds(kind) {
                continue;
            }
            let start = made.start();
            let task = if made.canister.after.contains(&kind) {
                let name = fill_name(
                    kind.name(),
                    self.cfg.rows.min(rows_per_message(self.cfg.payload_size)),
                );
                self.start_task(name, store, start, cache, move |lane, start| {
                    lane.restore(start)?;
                    self.starts
                        .set_up(lane, |lane| fill_alone(lane, self.cfg, store))?;
                    let noun = store.store_kind().def().noun;
                    lane.step(Kind::Snapshot, format!("snapshot of {noun}"));
                    Ok(Ok(lane.snapshot()?))
                })
                .priority(FILL_AFTER_SNAPSHOT)
            } else if let Some(mode) = store.journal_mode() {
                let name = format!("set SQLite's journal mode to {mode}");
                self.start_task(name, store, start, cache, move |lane, start| {
                    self.starts
                        .set_up(lane, |lane| mode_start(lane, store, start, cache))
                })
                .priority(MODE_START)
            } else {
                self.starts.record(store, start.clone());
                tasks.extend(
                    self.measure_from(store, start, cache, false)
                        .into_iter()
                        .map(|t| t.after(&made.units)),
                );
                continue;
            };
            tasks.push(task.after(&made.units));
        }
        tasks
    }

    /// The scenarios of `store` in the cache state `cache`, from `start`.
    fn scenarios_in(
        self,
        store: Store,
        cache: CacheState,
        start: Result<State, String>,
        priority: i64,
    ) -> Vec<Task<'s>> {
        self.indices
            .iter()
            .filter(|&&i| {
                let s = &self.scenarios[i].scenario;
                s.store == store && s.cache == cache
            })
            .map(|&i| {
                let start = start.clone();
                let point = &self.scenarios[i];
                Task::new(
                    Kind::Scenario,
                    format!("scenario {}", point.key()),
                    move |lane: &mut Lane<'_, '_>| {
                        let r =
                            measure(lane, self.cfg, self.suite, self.engine_name, point, start)?;
                        self.slots.put(i, r);
                        Ok(())
                    },
                )
                .priority(priority)
                .profiled()
            })
            .collect()
    }

    /// From a store's (cold) start: its cold scenarios, and the task that makes its warm
    /// start (when the plan has warm scenarios of it, in this shard or not: every shard
    /// counts the same setup), which then spawns them. A warm start handed to the graph
    /// (`spawned` false) opens a subtree as large as a journal mode's start, and goes as
    /// early, so that worker processes (which cannot share a subtree) even out behind it.
    fn measure_from(
        self,
        store: Store,
        start: Result<State, String>,
        cache: Option<&'s (PathBuf, [u8; 32])>,
        spawned: bool,
    ) -> Vec<Task<'s>> {
        let base = if spawned { SPAWNED } else { 0 };
        let mut tasks = self.scenarios_in(store, CacheState::Cold, start.clone(), base + SCENARIO);
        let warm = self
            .scenarios
            .iter()
            .any(|p| p.scenario.store == store && p.scenario.cache == CacheState::Warm);
        if warm {
            let task = self.warm_start_task(store, start, cache);
            tasks.push(if spawned {
                task.priority(SPAWNED + WARM_START)
            } else {
                task.priority(MODE_START)
            });
        }
        tasks
    }

    /// The scenarios of a store that start from a state of their own, as a task: `make`
    /// makes the state (or finds why the canister refuses the store) from the canister's
    /// `start`, which it restores itself (a state loaded from the cache needs no restore).
    fn start_task(
        self,
        name: String,
        store: Store,
        start: Result<State, String>,
        cache: Option<&'s (PathBuf, [u8; 32])>,
        make: impl FnOnce(&mut Lane<'_, 's>, &State) -> Result<Result<State, String>> + Send + 's,
    ) -> Task<'s> {
        Task::new(Kind::Fill, name, move |lane| {
            let own = match start {
                Ok(start) => make(lane, &start)?,
                Err(reason) => Err(reason),
            };
            self.starts.record(store, own.clone());
            for task in self.measure_from(store, own, cache, true) {
                lane.spawn(task);
            }
            Ok(())
        })
    }

    /// The task that makes `store`'s warm start state from its cold one `cold`
    /// ([`warm::warm_start`]) and then spawns its warm scenarios; a store refused cold is
    /// refused warm.
    fn warm_start_task(
        self,
        store: Store,
        cold: Result<State, String>,
        cache: Option<&'s (PathBuf, [u8; 32])>,
    ) -> Task<'s> {
        let name = format!("warm start of {}: the whole table read", store.label());
        Task::new(Kind::Fill, name, move |lane| {
            let warm = match cold {
                Ok(cold) => {
                    let (warm, executed) = warm::warm_start(lane, self.cfg, store, &cold, cache)?;
                    self.starts.setup.fetch_add(executed, Ordering::Relaxed);
                    Ok(warm)
                }
                Err(reason) => Err(reason),
            };
            for task in self.scenarios_in(store, CacheState::Warm, warm, SPAWNED + SCENARIO) {
                lane.spawn(task);
            }
            Ok(())
        })
    }
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

/// Each store's starting state (or why the canister refused the store), for `after`, and
/// the instructions of the setup done in tasks (the heap map's fill, the journal modes):
/// every shard runs it, a joined report counts it once.
#[derive(Default)]
struct Starts {
    /// Whether the states are kept for `after`: else each goes with its last scenario (a
    /// SQLite journal mode's start is nearly a whole heap, 119 MB at 1,000,000 rows).
    keep: bool,
    list: Mutex<Vec<(Store, Result<State, String>)>>,
    setup: AtomicU64,
}

impl Starts {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Store, Result<State, String>)>> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, store: Store, start: Result<State, String>) {
        if self.keep {
            self.lock().push((store, start));
        }
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

/// Fills a store filled after its canister's snapshot (the seed layout's heap map) on the
/// lane's state, each message after the first a unit of its own (the first is the task's).
fn fill_alone(lane: &mut Lane<'_, '_>, cfg: &Config, store: Store) -> Result<()> {
    let (client, ctl) = (&mut lane.client, &lane.ctl);
    let mut first = true;
    let name = store.store_kind().name();
    fill(
        client,
        Fill {
            store: store.stem(),
            from: 0,
            to: cfg.rows,
            payload_size: cfg.payload_size,
        },
        &mut |to| {
            if !std::mem::take(&mut first) {
                ctl.step(Kind::Fill, fill_name(name, to));
            }
        },
        &mut |_| {},
    )
}

/// `store` in its journal mode on a fresh connection from `start`, snapshotted (loaded from
/// the cache at `cache` when a run with the same inputs kept it); the reason when the
/// canister refuses it.
fn mode_start(
    lane: &mut Lane<'_, '_>,
    store: Store,
    start: &State,
    cache: Option<&(PathBuf, [u8; 32])>,
) -> Result<Result<State, String>> {
    let mode = store.journal_mode().expect("a store in a journal mode");
    let recipe = Recipe {
        label: format!("{}'s start", store.label()),
        key: format!(
            "journal mode\0{}\0{:?}",
            store.label(),
            stores::journal_mode_config(mode)
        ),
    };
    let (state, _) = kept::start(lane, start, cache, &recipe, |lane| {
        lane.restore(start)?;
        Ok(match stores::set_journal_mode(&mut lane.client, mode)? {
            Ok(()) => {
                lane.step(Kind::Snapshot, format!("snapshot of {}", store.label()));
                Ok(lane.snapshot()?)
            }
            Err(reason) => Err(reason),
        })
    })?;
    Ok(state)
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
    let last = (cfg.rows - 1) * ID_STEP;
    let per_message = rows_per_message(cfg.payload_size);
    let prefill = match cfg.layout {
        Layout::Alone => format!("Prefill: each store in a canister of its own (`--layout alone`), only that store filled, with ids 0, {ID_STEP}, 20, ..., {last}, {per_message} rows per message; every scenario of a store starts from its canister's snapshot, so a store's counts are the same whichever other stores a run measures (`--layout shared` fills every store of a module in one canister, as seed 003 did)."),
        Layout::Shared => format!("Prefill: ids 0, {ID_STEP}, 20, ..., {last} in each store, {per_message} rows per message; every scenario starts from the same snapshot."),
    };
    let mut all_notes = vec![
            prefill,
            format!("Store instructions: ic0.performance_counter(0) around the store work inside the canister (what seed 003 reports). Charged: the whole message as the replica bills it, including {page_charge}."),
            format!("Cycles: 13-node application subnet, 5,000,000 per update + 1 per instruction; USD at {} per XDR (1 XDR = 10^12 cycles; an assumption). Queries are free when not replicated.", cfg.usd_per_xdr),
            format!("Random positions: ids drawn with seed {}; SQLite journal modes are set on a fresh connection after the prefill.", cfg.seed),
        ];
    if cfg.layout == Layout::Shared {
        shared_layout_notes(cfg, &mut all_notes);
    } else if cfg
        .stores
        .iter()
        .any(|s| s.store_kind().def().sql && !s.store_kind().def().journal_modes)
    {
        all_notes.push("A SQLite store without journal modes (its binding fixes them) is measured on a newly opened connection, reopened after its fill.".into());
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

/// The seed layout's notes: which store is filled after the shared snapshot, which live in
/// a canister of their own (another module's).
fn shared_layout_notes(cfg: &Config, all_notes: &mut Vec<String>) {
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
            if point.sequence {
                super::sequence::measure(&mut lane.client, cfg, point, &mut result)?;
                return Ok(result);
            }
            let stem = scenario.store.stem();
            let mut warmed = Ok(());
            for (k, warm_up) in (1..).zip(Call::warm_ups(scenario, cfg, point.warm_ups)) {
                warmed = match run_update(&mut lane.client, stem, &warm_up) {
                    Ok(reply) => check_rows(reply, warm_up.rows(), &warm_up),
                    Err(e) => match RejectedCall::of(&e) {
                        Some(rejected) => Err(rejected.to_string()),
                        None => return Err(e),
                    },
                };
                if let Err(e) = &mut warmed {
                    if point.warm_ups > 1 {
                        *e = format!("{k} of {}: {e}", point.warm_ups);
                    }
                    break;
                }
            }
            match warmed {
                Ok(()) => {
                    let reply = run_call(&mut lane.client, stem, &call);
                    record_sent(&mut result, reply, scenario.operation, cfg.usd_per_xdr)?;
                }
                Err(e) => result.status = Status::Failed(format!("the warm-up message: {e}")),
            }
        }
    }
    Ok(result)
}
