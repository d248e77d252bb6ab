//! How a stage measures: a filled store per page size (each fill a task whose measurements
//! follow it), every measurement under the engine's replica and the vintage beside it, and
//! the other stores at their defaults.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::{anyhow, Result};

use super::{Config, Setting, Workload, SEARCHED, WORKLOADS};
use crate::bench_canister::{BenchClient, SqliteConfig};
use crate::engine::cost::Replica;
use crate::report::format::thousands;
use crate::report::work::Kind;
use crate::report::{ScenarioResult, Status};
use crate::suites::canister;
use crate::suites::pool::{self, Lane, Recorder, State, Task, UnitId};
use crate::suites::scenario::{CacheState, Scenario, Store};
use crate::suites::users::{self, Call};
use crate::suites::{Exec, Progress};

/// What every stage shares.
#[derive(Clone, Copy)]
pub(super) struct StageEnv<'a> {
    pub(super) cfg: &'a Config,
    pub(super) exec: &'a Exec,
    pub(super) work: &'a Recorder,
    pub(super) after: &'a [UnitId],
    pub(super) suite_engine: &'a str,
    pub(super) current: Option<Replica>,
    pub(super) beside: Option<Replica>,
    /// Instructions of the setup (install, fills): every shard runs it.
    pub(super) setup: &'a AtomicU64,
}

pub(super) struct Ran {
    /// In the order of the candidates.
    pub(super) measured: Vec<(ScenarioResult, Option<ScenarioResult>)>,
    /// The units the stage ran: what comes after it waits for them.
    pub(super) units: Vec<UnitId>,
}

/// One measurement's results: under the engine's replica, and under the one beside it.
pub(super) type Slot = Mutex<Option<(ScenarioResult, Option<ScenarioResult>)>>;

/// Adds the unit a task runs in to `units`: what comes after the stage waits for them.
pub(super) fn unit_noter(
    units: &Mutex<Vec<UnitId>>,
) -> impl Fn(&Lane<'_, '_>) + Copy + Send + Sync + '_ {
    move |lane: &Lane<'_, '_>| {
        units
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(lane.current())
    }
}

/// Measures each (workload, setting) of `candidates`, filling the page sizes not filled yet
/// (each fill a task whose measurements follow it).
pub(super) fn run_stage(
    client: &mut BenchClient<'_>,
    empty: &State,
    filled: &mut BTreeMap<u32, State>,
    candidates: &[(usize, Setting)],
    cache: CacheState,
    env: &StageEnv<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ran> {
    if candidates.is_empty() {
        return Ok(Ran {
            measured: Vec::new(),
            units: Vec::new(),
        });
    }
    let slots: Vec<Slot> = candidates.iter().map(|_| Mutex::new(None)).collect();
    let units: Mutex<Vec<UnitId>> = Mutex::new(Vec::new());
    let new_fills: Mutex<Vec<(u32, State)>> = Mutex::new(Vec::new());
    {
        let (slots, new_fills) = (&slots, &new_fills);
        let note_unit = unit_noter(&units);
        let measure = move |page_size: u32, state: State| -> Vec<Task<'_>> {
            let mut tasks = Vec::new();
            for (c, &(w, setting)) in candidates.iter().enumerate() {
                if setting.page_size != page_size {
                    continue;
                }
                let state = state.clone();
                let workload = &WORKLOADS[w];
                tasks.push(
                    Task::new(
                        Kind::Scenario,
                        format!("tune {}: {}, {cache}", workload.name, setting.describe()),
                        move |lane: &mut Lane<'_, '_>| {
                            note_unit(lane);
                            let out = now_and_beside(env, |vintage| {
                                let label = setting.store_label();
                                measure_under(
                                    lane, env, setting, label, workload, &state, vintage, cache,
                                )
                            })?;
                            *slots[c].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                            Ok(())
                        },
                    )
                    .profiled(),
                );
            }
            tasks
        };
        let measure = &measure;
        let mut tasks: Vec<Task<'_>> = Vec::new();
        let mut page_sizes: Vec<u32> = candidates.iter().map(|(_, s)| s.page_size).collect();
        page_sizes.sort_unstable();
        page_sizes.dedup();
        for page_size in page_sizes {
            if let Some(state) = filled.get(&page_size) {
                tasks.extend(
                    measure(page_size, state.clone())
                        .into_iter()
                        .map(|t| t.after(env.after)),
                );
                continue;
            }
            let rows = env.cfg.users.rows;
            tasks.push(
                Task::new(
                    Kind::Fill,
                    format!(
                        "fill SQLite (page_size {page_size}) to {} rows",
                        thousands(rows)
                    ),
                    move |lane| {
                        note_unit(lane);
                        lane.restore(empty)?;
                        let before = lane.client.executed_instructions;
                        set_page_size(&mut lane.client, page_size)?;
                        let state = fill_and_snapshot(
                            lane,
                            env,
                            SEARCHED.stem(),
                            before,
                            format!("snapshot of SQLite page_size {page_size}"),
                        )?;
                        note_unit(lane);
                        new_fills
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((page_size, state.clone()));
                        for task in measure(page_size, state) {
                            lane.spawn(task);
                        }
                        Ok(())
                    },
                )
                .after(env.after)
                .priority(1),
            );
        }
        pool::graph::run(client, empty, env.exec, env.work, progress, tasks, None)?;
    }
    for (page_size, state) in new_fills.into_inner().unwrap_or_else(|e| e.into_inner()) {
        filled.insert(page_size, state);
    }
    let measured = slots
        .into_iter()
        .zip(candidates)
        .map(|(slot, (w, setting))| {
            slot.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .ok_or_else(|| {
                    anyhow!(
                        "{} was not measured with {}",
                        WORKLOADS[*w].name,
                        setting.describe()
                    )
                })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Ran {
        measured,
        units: units.into_inner().unwrap_or_else(|e| e.into_inner()),
    })
}

/// An empty SQLite store set to `page_size` (it takes one before its first table).
fn set_page_size(client: &mut BenchClient<'_>, page_size: u32) -> Result<()> {
    let page = SqliteConfig {
        page_size: Some(page_size),
        ..SqliteConfig::default()
    };
    client
        .configure_sqlite(&page)?
        .value
        .map_err(|e| anyhow!("setting SQLite's page_size to {page_size} failed: {e}"))?;
    Ok(())
}

/// `measure` under the engine's replica, then under the vintage beside it, if any.
pub(super) fn now_and_beside(
    env: &StageEnv<'_>,
    mut measure: impl FnMut(Option<Replica>) -> Result<ScenarioResult>,
) -> Result<(ScenarioResult, Option<ScenarioResult>)> {
    let now = measure(None)?;
    let beside = env.beside.map(|old| measure(Some(old))).transpose()?;
    Ok((now, beside))
}

/// Fills `store` with the suite's rows from the canister's state now, counts what was sent
/// since `before` as setup (every shard runs it), and snapshots the store in a unit called
/// `what`.
pub(super) fn fill_and_snapshot(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    store: &str,
    before: u64,
    what: String,
) -> Result<State> {
    canister::fill(
        &mut lane.client,
        canister::Fill {
            store,
            from: 0,
            to: env.cfg.users.rows,
            payload_size: env.cfg.users.payload_size,
        },
        &mut |_| {},
        &mut |_| {},
    )?;
    env.setup.fetch_add(
        lane.client.executed_instructions - before,
        Ordering::Relaxed,
    );
    lane.step(Kind::Snapshot, what);
    lane.snapshot()
}

/// A store measured at its defaults beside the SQLite search: one of the default module's
/// (`cfg.others`) or of the tune variant's (`cfg.variants`).
pub(super) struct Beside<'a> {
    /// The shape of its calls.
    pub(super) store: Store,
    /// The store in its method names.
    pub(super) method_store: &'static str,
    /// The records' `store`.
    pub(super) record_store: String,
    /// For the fill's unit.
    pub(super) label: String,
    /// The empty state of its module at its value size, which its fill starts from.
    pub(super) start: &'a State,
    /// SQLite at these settings: its page size set before the fill, all of them before each
    /// message, as the search measures them (None: a store without settings).
    pub(super) sqlite: Option<Setting>,
}

impl Beside<'_> {
    /// From its module's empty state to its filled one, counting the setup.
    fn fill(&self, lane: &mut Lane<'_, '_>, env: &StageEnv<'_>) -> Result<State> {
        lane.restore(self.start)?;
        let before = lane.client.executed_instructions;
        if let Some(setting) = self.sqlite {
            set_page_size(&mut lane.client, setting.page_size)?;
        }
        fill_and_snapshot(
            lane,
            env,
            self.method_store,
            before,
            format!("snapshot of the {}", self.label),
        )
    }

    /// One workload from its filled `state`.
    fn measure(
        &self,
        lane: &mut Lane<'_, '_>,
        env: &StageEnv<'_>,
        workload: &Workload,
        state: &State,
        vintage: Option<Replica>,
    ) -> Result<ScenarioResult> {
        match self.sqlite {
            Some(setting) => measure_under(
                lane,
                env,
                setting,
                self.record_store.clone(),
                workload,
                state,
                vintage,
                CacheState::Cold,
            ),
            None => measure_store(lane, env, self, workload, state, vintage),
        }
    }
}

/// The other stores (`besides`) at their defaults: each filled from its module's empty state
/// in a task of its own, then every workload of `workloads` measured from it, under the
/// engine's replica and beside it. Per workload (all of [`WORKLOADS`], empty where not
/// measured), per store in `besides` order: its records.
pub(super) fn measure_others(
    client: &mut BenchClient<'_>,
    empty: &State,
    stores: &[Beside<'_>],
    env: &StageEnv<'_>,
    workloads: &[usize],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Vec<Vec<ScenarioResult>>>> {
    let mut out = vec![Vec::new(); WORKLOADS.len()];
    if stores.is_empty() || workloads.is_empty() {
        return Ok(out);
    }
    type Slot = Mutex<Option<Vec<ScenarioResult>>>;
    let slots: Vec<Slot> = (0..stores.len() * WORKLOADS.len())
        .map(|_| Mutex::new(None))
        .collect();
    {
        let slots = &slots;
        let mut tasks = Vec::new();
        for (i, store) in stores.iter().enumerate() {
            let rows = env.cfg.users.rows;
            tasks.push(
                Task::new(
                    Kind::Fill,
                    format!("fill the {} to {} rows", store.label, thousands(rows)),
                    move |lane| {
                        let state = store.fill(lane, env)?;
                        for &w in workloads {
                            let state = state.clone();
                            lane.spawn(
                                Task::new(
                                    Kind::Scenario,
                                    format!("tune {}: the {}", WORKLOADS[w].name, store.label),
                                    move |lane: &mut Lane<'_, '_>| {
                                        let (now, beside) = now_and_beside(env, |vintage| {
                                            store.measure(lane, env, &WORKLOADS[w], &state, vintage)
                                        })?;
                                        let records = std::iter::once(now).chain(beside).collect();
                                        *slots[i * WORKLOADS.len() + w]
                                            .lock()
                                            .unwrap_or_else(|e| e.into_inner()) = Some(records);
                                        Ok(())
                                    },
                                )
                                .profiled(),
                            );
                        }
                        Ok(())
                    },
                )
                .after(env.after)
                .priority(2),
            );
        }
        pool::graph::run(client, empty, env.exec, env.work, progress, tasks, None)?;
    }
    let mut slots = slots
        .into_iter()
        .map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner()));
    for _ in stores {
        for records in out.iter_mut() {
            records.push(slots.next().flatten().unwrap_or_default());
        }
    }
    Ok(out)
}

/// One workload of a store without settings, from its filled `state`.
pub(super) fn measure_store(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    store: &Beside<'_>,
    workload: &Workload,
    state: &State,
    vintage: Option<Replica>,
) -> Result<ScenarioResult> {
    let (call, mut result) = record(
        env,
        store.store,
        store.record_store.clone(),
        workload,
        vintage,
        CacheState::Cold,
    );
    let kind = format!("_{}", store.store.kind());
    result.method = result
        .method
        .replacen(&kind, &format!("_{}", store.method_store), 1);
    lane.restore(state)?;
    send(
        lane,
        env,
        store.method_store,
        &call,
        workload,
        vintage,
        result,
    )
}

/// SQLite at `setting` (labelled `label`), from a filled `state`: a fresh connection set to
/// it, then the workload; warm, the whole table read into the page cache and one message of
/// the workload before it (as the users suites' warm scenarios), so that cache_size bounds
/// what the cache holds.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure_under(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    setting: Setting,
    label: String,
    workload: &Workload,
    state: &State,
    vintage: Option<Replica>,
    cache: CacheState,
) -> Result<ScenarioResult> {
    let store = Store::new(SEARCHED, Some(setting.journal_mode));
    let (call, mut result) = record(env, store, label, workload, vintage, cache);
    result.journal_mode = setting.journal_mode.to_string();
    lane.restore(state)?;
    let applied = lane.client.configure_sqlite(&setting.config())?.value;
    match applied.map(|s| Setting::from_settings(&s)) {
        Err(reason) => {
            result.status = Status::Refused(reason);
            return Ok(result);
        }
        Ok(Err(e)) => return Err(e),
        Ok(Ok(actual)) if actual != setting => {
            result.status = Status::Refused(format!(
                "asked for {}, SQLite uses {}",
                setting.describe(),
                actual.describe()
            ));
            return Ok(result);
        }
        Ok(Ok(_)) => {}
    }
    if let Err(e) = warm_up(lane, env, store, store.kind(), workload, cache)? {
        result.status = Status::Failed(format!("warming the cache: {e}"));
        return Ok(result);
    }
    send(lane, env, store.kind(), &call, workload, vintage, result)
}

/// Warm (`cache` not cold): the whole table read into the page cache by one update, then
/// one message of the workload, on the store's connection as it is now (the users suites'
/// warm start). Cold: nothing. The inner error: a warm-up message that found or inserted
/// other rows than it should.
pub(super) fn warm_up(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    store: Store,
    method_store: &str,
    workload: &Workload,
    cache: CacheState,
) -> Result<Result<(), String>> {
    if cache.is_cold() {
        return Ok(Ok(()));
    }
    let scenario = Scenario {
        store,
        position: workload.position,
        operation: workload.operation,
        cache,
    };
    let rows = env.cfg.users.rows;
    let read_all = Call::Scan {
        offset: 0,
        count: 2 * rows,
    };
    let warm_up = Call::warm_up(&scenario, &env.cfg.users);
    for (call, expected) in [(read_all, rows), (warm_up.clone(), warm_up.rows())] {
        let reply = users::run_update(&mut lane.client, method_store, &call)?;
        if let Err(e) = users::check_rows(reply, expected, &call) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

/// A workload's record before it runs, and its call: `store` labelled `label`, with
/// ` replica=VINTAGE` after it when measured under the vintage beside.
pub(super) fn record(
    env: &StageEnv<'_>,
    store: Store,
    mut label: String,
    workload: &Workload,
    vintage: Option<Replica>,
    cache: CacheState,
) -> (Call, ScenarioResult) {
    let scenario = Scenario {
        store,
        position: workload.position,
        operation: workload.operation,
        cache,
    };
    let call = Call::for_scenario(&scenario, &env.cfg.users);
    if let Some(v) = vintage {
        label.push_str(&format!(" replica={}", v.name));
    }
    let result = ScenarioResult {
        suite: "tune".into(),
        engine: env.suite_engine.into(),
        store: label,
        position: workload.position.to_string(),
        operation: workload.operation.kind().into(),
        batch: workload.operation.rows(),
        rows_before: env.cfg.users.rows,
        method: scenario.method(),
        args: call.candid_args(),
        cache,
        ..ScenarioResult::default()
    };
    (call, result)
}

/// Sends the workload's message (under `vintage`'s rules when given, the engine's again
/// after it) and returns `result` filled from the reply, with the memory the canister holds
/// after it.
pub(super) fn send(
    lane: &mut Lane<'_, '_>,
    env: &StageEnv<'_>,
    method_store: &str,
    call: &Call,
    workload: &Workload,
    vintage: Option<Replica>,
    mut result: ScenarioResult,
) -> Result<ScenarioResult> {
    if let Some(v) = vintage {
        lane.client.engine.set_replica(v)?;
    }
    let reply = users::run_call(&mut lane.client, method_store, call);
    if let (Some(_), Some(current)) = (vintage, env.current) {
        lane.client.engine.set_replica(current)?;
    }
    let reply = reply?;
    let held = match &reply {
        users::Reply::Insert(m) => m.message.heap_bytes_after + m.message.stable_bytes_after,
        users::Reply::Read(m) => m.message.heap_bytes_after + m.message.stable_bytes_after,
    };
    users::record_reply(
        &mut result,
        reply,
        workload.operation,
        env.cfg.users.usd_per_xdr,
    );
    if result.status == Status::Ok {
        result.bytes = held;
    }
    Ok(result)
}
