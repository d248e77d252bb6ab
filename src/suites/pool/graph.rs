//! A suite's work as tasks on `--jobs` workers. A task starts from a state (a snapshot any
//! worker can restore), sends its messages, and may take snapshots and spawn the tasks that
//! start from them, so that a store's fill goes on while what was measured on the way runs
//! beside it. Each worker runs on its own engine: the suite's for the calling thread, forks
//! of it for the others; free workers take the ready task of the highest priority.
//!
//! Every task is a unit of work in the suite's [`Recorder`] (a task may split itself into
//! several with [`Lane::step`]), so report.md can say where the wall time went.

use std::cell::RefCell;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};

use anyhow::{anyhow, Result};

use super::record::{set_lane, Open, Recorder, UnitId};
use super::{Exec, Progress};
use crate::bench_canister::BenchClient;
use crate::engine::{Engine, Profiling, SharedSnapshot, SnapshotId};
use crate::report::work::Kind;

/// A state tasks start from: a snapshot every worker can take in, or, on an engine whose
/// states cannot move (it cannot fork either, so there is one worker), one of its own, of
/// the canister it names.
#[derive(Clone, Debug)]
pub enum State {
    Shared(SharedSnapshot),
    Local(candid::Principal, SnapshotId),
}

impl State {
    /// The canister it is a state of: a plan's states may be of several canisters, one per
    /// module its stores live in.
    pub fn canister(&self) -> candid::Principal {
        match self {
            State::Shared(shared) => shared.canister,
            State::Local(canister, _) => *canister,
        }
    }
}

/// Work for a worker: what it is (for the log), how urgent, and what it does.
pub struct Task<'s> {
    kind: Kind,
    name: String,
    priority: i64,
    after: Vec<UnitId>,
    profiled: bool,
    park: bool,
    #[allow(clippy::type_complexity)]
    body: Box<dyn FnOnce(&mut Lane<'_, 's>) -> Result<()> + Send + 's>,
}

impl<'s> Task<'s> {
    pub fn new(
        kind: Kind,
        name: impl Into<String>,
        body: impl FnOnce(&mut Lane<'_, 's>) -> Result<()> + Send + 's,
    ) -> Task<'s> {
        Task {
            kind,
            name: name.into(),
            priority: 0,
            after: Vec::new(),
            profiled: false,
            park: false,
            body: Box::new(body),
        }
    }

    /// Free workers take the ready task of the highest priority first (then the earliest
    /// spawned).
    pub fn priority(mut self, priority: i64) -> Task<'s> {
        self.priority = priority;
        self
    }

    /// Units it needs besides the one that spawned it (for the log; the caller makes sure
    /// they are done, e.g. with a [`Join`]).
    pub fn after(mut self, units: &[UnitId]) -> Task<'s> {
        for u in units {
            if !self.after.contains(u) {
                self.after.push(*u);
            }
        }
        self
    }

    /// Measured work: with `--profile`, its messages are profiled.
    pub fn profiled(mut self) -> Task<'s> {
        self.profiled = true;
        self
    }

    /// Work that may leave the worker's canister large (a heap grown by gigabytes): the
    /// worker puts it back into the graph's first state when the task is done, rather than
    /// hold that memory until its next task.
    pub fn park(mut self) -> Task<'s> {
        self.park = true;
        self
    }
}

/// A task that runs once `count` others have [`Join::arrive`]d, after all of them.
pub struct Join<'s> {
    inner: Arc<Mutex<JoinInner<'s>>>,
}

struct JoinInner<'s> {
    remaining: usize,
    after: Vec<UnitId>,
    task: Option<Task<'s>>,
}

impl<'s> Clone for Join<'s> {
    fn clone(&self) -> Self {
        Join {
            inner: self.inner.clone(),
        }
    }
}

impl<'s> Join<'s> {
    pub fn new(count: usize, task: Task<'s>) -> Join<'s> {
        Join {
            inner: Arc::new(Mutex::new(JoinInner {
                remaining: count,
                after: Vec::new(),
                task: Some(task),
            })),
        }
    }

    /// The calling task is one of the `count`: the last to arrive spawns the task.
    pub fn arrive(&self, lane: &Ctl<'_, 's>) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.after.push(lane.current());
        inner.remaining = inner.remaining.saturating_sub(1);
        if inner.remaining == 0 {
            if let Some(task) = inner.task.take() {
                let after = std::mem::take(&mut inner.after);
                lane.spawn(task.after(&after));
            }
        }
    }

    /// Spawns the task now if nobody has to arrive (a join of zero tasks).
    pub fn start_if_empty(&self, lane: &Ctl<'_, 's>) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.remaining == 0 {
            if let Some(task) = inner.task.take() {
                lane.spawn(task);
            }
        }
    }
}

/// A worker while it runs a task: its engine (in `client`), and in `ctl` the task's unit
/// and what it spawns (apart from `client`, so a fill can step units between its messages).
pub struct Lane<'a, 's> {
    pub index: usize,
    pub client: BenchClient<'a>,
    pub ctl: Ctl<'a, 's>,
    adopted: Vec<(SharedSnapshot, SnapshotId)>,
    profiling: Profiling,
}

/// The running task's unit and the tasks it spawned.
pub struct Ctl<'a, 's> {
    graph: &'a Graph<'s>,
    open: RefCell<Option<Open<'s>>>,
    spawned: RefCell<Vec<Task<'s>>>,
}

impl<'a, 's> Ctl<'a, 's> {
    fn new(graph: &'a Graph<'s>) -> Ctl<'a, 's> {
        Ctl {
            graph,
            open: RefCell::new(None),
            spawned: RefCell::new(Vec::new()),
        }
    }

    /// The unit running now.
    pub fn current(&self) -> UnitId {
        self.open
            .borrow()
            .as_ref()
            .map(|o| o.id)
            .expect("a lane runs a unit while its task runs")
    }

    /// Queues `task` to start once the unit running now ends (it is after that unit).
    pub fn spawn(&self, task: Task<'s>) {
        self.spawned.borrow_mut().push(task);
    }

    /// Ends the unit running now (the tasks spawned in it become ready) and starts the
    /// next unit of this task, after it.
    pub fn step(&self, kind: Kind, name: impl Into<String>) {
        let previous = self.close();
        let open = self.graph.recorder.begin(kind, name.into(), &[previous]);
        *self.open.borrow_mut() = Some(open);
    }

    /// Ends the running unit and hands what it spawned to the workers.
    fn close(&self) -> UnitId {
        let open = self.open.borrow_mut().take().expect("a unit is running");
        let id = open.id;
        drop(open);
        let spawned = std::mem::take(&mut *self.spawned.borrow_mut());
        self.graph.push(spawned.into_iter().map(|t| t.after(&[id])));
        id
    }
}

impl<'a, 's> Lane<'a, 's> {
    /// The unit running now.
    pub fn current(&self) -> UnitId {
        self.ctl.current()
    }

    /// See [`Ctl::spawn`].
    pub fn spawn(&self, task: Task<'s>) {
        self.ctl.spawn(task)
    }

    /// See [`Ctl::step`].
    pub fn step(&self, kind: Kind, name: impl Into<String>) {
        self.ctl.step(kind, name)
    }

    /// Puts the state's canister into `state`; the lane's client then calls that canister.
    pub fn restore(&mut self, state: &State) -> Result<()> {
        let id = self.local(state)?;
        let canister = state.canister();
        self.client.canister = canister;
        self.client.engine.restore(canister, id)
    }

    /// `state` as a snapshot of this worker's engine (taken in for the rest of the task).
    pub fn local(&mut self, state: &State) -> Result<SnapshotId> {
        Ok(match state {
            State::Local(_, id) => *id,
            State::Shared(shared) => match self.adopted.iter().find(|(s, _)| s.same(shared)) {
                Some((_, id)) => *id,
                None => {
                    let id = self.client.engine.adopt(shared)?;
                    self.adopted.push((shared.clone(), id));
                    id
                }
            },
        })
    }

    /// The canister's state now, as a state other tasks can start from. The canister is then
    /// put into that state, as a task restoring it would: its heap becomes a view of the
    /// snapshot's, and the memory of the heap it had is given back.
    pub fn snapshot(&mut self) -> Result<State> {
        let canister = self.client.canister;
        let state = snapshot(self.client.engine, canister)?;
        self.restore(&state)?;
        Ok(state)
    }

    /// A snapshot of `canister` this worker's engine made otherwise than by snapshotting it
    /// (an imported state) as a state other tasks can start from.
    pub fn keep(&mut self, canister: candid::Principal, id: SnapshotId) -> Result<State> {
        let engine = &mut *self.client.engine;
        Ok(match engine.share(id)? {
            Some(shared) => {
                engine.forget(id)?;
                State::Shared(shared)
            }
            None => State::Local(canister, id),
        })
    }

    /// Lets go of the states this task took in (their memory goes once nothing else holds
    /// them).
    fn forget_adopted(&mut self) -> Result<()> {
        for (_, id) in std::mem::take(&mut self.adopted) {
            self.client.engine.forget(id)?;
        }
        Ok(())
    }
}

/// The canister's state on `engine` as a [`State`]: shared when the engine can share it
/// (the engine's own id is then released: the handle keeps the state).
pub fn snapshot(engine: &mut dyn Engine, canister: candid::Principal) -> Result<State> {
    let id = engine.snapshot(canister)?;
    Ok(match engine.share(id)? {
        Some(shared) => {
            engine.forget(id)?;
            State::Shared(shared)
        }
        None => State::Local(canister, id),
    })
}

/// `state` as a snapshot of `engine` (taken in if it is shared): for work on the suite's
/// own engine after the graph. The caller forgets it when done.
pub fn local(engine: &mut dyn Engine, state: &State) -> Result<SnapshotId> {
    match state {
        State::Local(_, id) => Ok(*id),
        State::Shared(shared) => engine.adopt(shared),
    }
}

/// What the workers share: the ready tasks and how many are still to finish.
pub struct Graph<'s> {
    queue: Mutex<Queue<'s>>,
    wake: Condvar,
    recorder: &'s Recorder,
    profile: bool,
    /// The state the workers' engines were forked at, where a [`Task::park`]ed one goes back.
    start: State,
    /// The canister of `start`, which a task's client calls until it restores another's
    /// state.
    canister: candid::Principal,
}

struct Queue<'s> {
    ready: BinaryHeap<Entry<'s>>,
    /// Queued plus running tasks: the graph is done when none is left.
    outstanding: usize,
    spawned: usize,
    finished: Vec<String>,
    failed: Option<anyhow::Error>,
}

struct Entry<'s> {
    priority: i64,
    seq: usize,
    task: Task<'s>,
}

impl PartialEq for Entry<'_> {
    fn eq(&self, other: &Self) -> bool {
        (self.priority, self.seq) == (other.priority, other.seq)
    }
}
impl Eq for Entry<'_> {}
impl PartialOrd for Entry<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // The highest priority first, then the earliest spawned.
        self.priority
            .cmp(&other.priority)
            .then(other.seq.cmp(&self.seq))
    }
}

impl<'s> Graph<'s> {
    fn push(&self, tasks: impl Iterator<Item = Task<'s>>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        for task in tasks {
            let seq = q.spawned;
            q.spawned += 1;
            q.outstanding += 1;
            q.ready.push(Entry {
                priority: task.priority,
                seq,
                task,
            });
        }
        drop(q);
        self.wake.notify_all();
    }

    /// The next task, or None when the graph is done or failed.
    fn next(&self) -> Option<Task<'s>> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if q.failed.is_some() {
                return None;
            }
            if let Some(entry) = q.ready.pop() {
                return Some(entry.task);
            }
            if q.outstanding == 0 {
                return None;
            }
            q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn finished(&self, name: String, out: Result<()>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.outstanding -= 1;
        match out {
            Ok(()) => q.finished.push(name),
            Err(e) => {
                q.failed.get_or_insert(e);
            }
        }
        drop(q);
        self.wake.notify_all();
    }

    /// Runs tasks on `lane` until the graph is done; `between` is called between tasks.
    fn work(&self, lane: &mut Lane<'_, 's>, between: &mut dyn FnMut(&Graph<'s>)) {
        while let Some(task) = self.next() {
            let wanted = if task.profiled && self.profile {
                Profiling::Messages
            } else {
                Profiling::Off
            };
            let mut out = Ok(());
            lane.client.canister = self.canister;
            if wanted != lane.profiling {
                out = lane.client.engine.set_profiling(wanted);
                lane.profiling = wanted;
            }
            *lane.ctl.open.borrow_mut() = Some(self.recorder.begin(
                task.kind,
                task.name.clone(),
                &task.after,
            ));
            let park = task.park;
            if out.is_ok() {
                // A panic must not leave the other workers waiting for this task forever:
                // it becomes the graph's error.
                let body = task.body;
                out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(lane)))
                    .unwrap_or_else(|panic| {
                        let what = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        Err(anyhow!(
                            "internal error: task {:?} panicked: {what}",
                            task.name
                        ))
                    });
            }
            if park && out.is_ok() {
                out = lane.restore(&self.start);
            }
            lane.ctl.close();
            if let Err(e) = lane.forget_adopted() {
                out = out.and(Err(e));
            }
            if park {
                // The parked canister's stable memory pages and message buffers went back to
                // malloc, which keeps freed memory in its arenas: hand it back to the system
                // so that it does not sit under the next tasks' peaks (the upgrade suite's
                // one-worker floor after its limit run: 0.86 GB kept, 0.21 GB trimmed).
                #[cfg(all(target_os = "linux", target_env = "gnu"))]
                // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
                unsafe {
                    libc::malloc_trim(0);
                }
            }
            self.finished(task.name, out);
            between(self);
        }
    }
}

/// Runs `tasks` and everything they spawn on `exec.jobs` workers: the calling thread on
/// `client`'s engine, the others on forks of it taken at `start` (none when the engine
/// cannot fork). Instructions executed on every worker are added to
/// `client.executed_instructions`. The first error stops the workers before their next
/// task and is returned.
pub fn run<'s>(
    client: &mut BenchClient<'_>,
    start: &State,
    exec: &Exec,
    recorder: &'s Recorder,
    progress: &mut dyn FnMut(Progress<'_>),
    tasks: Vec<Task<'s>>,
) -> Result<()> {
    let canister = client.canister;
    let mut forks: Vec<Box<dyn Engine + Send>> = Vec::new();
    if exec.jobs > 1 {
        let (made, _) = recorder.unit(Kind::Snapshot, "fork the workers' engines", &[], || {
            let at = match start {
                State::Local(_, id) => *id,
                State::Shared(s) => client.engine.adopt(s)?,
            };
            let mut forks = Vec::new();
            for _ in 1..exec.jobs {
                match client.engine.fork(canister, at)? {
                    Some(fork) => forks.push(fork),
                    None => break,
                }
            }
            if let State::Shared(_) = start {
                client.engine.forget(at)?;
            }
            anyhow::Ok(forks)
        });
        forks = made?;
    }
    let graph = Graph {
        queue: Mutex::new(Queue {
            ready: BinaryHeap::new(),
            outstanding: 0,
            spawned: 0,
            finished: Vec::new(),
            failed: None,
        }),
        wake: Condvar::new(),
        recorder,
        profile: exec.profile,
        start: start.clone(),
        canister,
    };
    graph.push(tasks.into_iter());
    let (executed, spawn_error) = std::thread::scope(|scope| {
        let graph = &graph;
        let mut workers = Vec::new();
        let mut spawn_error = None;
        for (i, mut engine) in forks.into_iter().enumerate() {
            let spawned = crate::engine::embedded::spawn_scoped(
                scope,
                &format!("icbench-worker-{}", i + 1),
                move || {
                    set_lane(i + 1);
                    let mut lane = Lane {
                        index: i + 1,
                        client: BenchClient::attach(engine.as_mut(), canister),
                        ctl: Ctl::new(graph),
                        adopted: Vec::new(),
                        profiling: Profiling::Off,
                    };
                    graph.work(&mut lane, &mut |_| {});
                    let _ = lane.client.engine.set_profiling(Profiling::Off);
                    lane.client.executed_instructions
                },
            );
            match spawned {
                Ok(worker) => workers.push(worker),
                // The workers that started and the calling thread do the work.
                Err(e) => {
                    spawn_error.get_or_insert(e);
                }
            }
        }
        set_lane(0);
        let mut lane = Lane {
            index: 0,
            client: BenchClient::attach(&mut *client.engine, canister),
            ctl: Ctl::new(graph),
            adopted: Vec::new(),
            profiling: Profiling::Off,
        };
        let mut shown = 0;
        graph.work(&mut lane, &mut |g| {
            let q = g.queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.finished.len() > shown {
                shown = q.finished.len();
                progress(Progress::Scenario {
                    done: shown,
                    total: q.spawned,
                    key: q.finished.last().map_or("", |s| s.as_str()),
                });
            }
        });
        let mut executed = lane.client.executed_instructions;
        let _ = lane.client.engine.set_profiling(Profiling::Off);
        for w in workers {
            executed += w
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        }
        (executed, spawn_error)
    });
    if let Some(e) = spawn_error {
        eprintln!("warning: a worker thread could not start ({e}); its work ran on the others");
    }
    client.executed_instructions += executed;
    let mut q = graph.queue.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = q.failed.take() {
        return Err(e);
    }
    let done = q.finished.len();
    progress(Progress::Scenario {
        done,
        total: done,
        key: "",
    });
    if q.outstanding != 0 {
        return Err(anyhow!("{} tasks were not run", q.outstanding));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::embedded::EmbeddedEngine;
    use crate::suites::Shard;

    /// A fresh engine with a canister whose `add` update adds its argument byte to a counter
    /// in the heap and replies with the sum.
    fn counter_installed() -> (EmbeddedEngine, candid::Principal) {
        let wasm = wat::parse_str(
            r#"(module
              (import "ic0" "msg_arg_data_copy" (func $arg (param i32 i32 i32)))
              (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
              (import "ic0" "msg_reply" (func $reply))
              (memory (export "memory") 1)
              (func (export "canister_update add")
                (call $arg (i32.const 16) (i32.const 0) (i32.const 1))
                (i32.store (i32.const 0)
                  (i32.add (i32.load (i32.const 0)) (i32.load8_u (i32.const 16))))
                (call $append (i32.const 0) (i32.const 4))
                (call $reply)))"#,
        )
        .unwrap();
        let mut engine = EmbeddedEngine::default();
        let (canister, out) = engine.install(&wasm, &[]).unwrap();
        out.result.unwrap();
        (engine, canister)
    }

    fn add(lane: &mut Lane<'_, '_>, n: u8) -> Result<u32> {
        let canister = lane.client.canister;
        let out = lane.client.engine.update(canister, "add", &[n])?;
        let reply = out.result.map_err(|r| anyhow!("{r}"))?;
        Ok(u32::from_le_bytes(reply[..4].try_into().unwrap()))
    }

    /// A chain of two steps, each spawning readers of the state it left, and a join after
    /// every reader: results, units and their order of dependence, whatever the jobs.
    #[test]
    fn spawned_tasks_start_from_shared_states_and_joins_wait_for_all() {
        for jobs in [1, 2, 3] {
            let (mut engine, canister) = counter_installed();
            let mut client = BenchClient::attach(&mut engine, canister);
            let start = snapshot(client.engine, canister).unwrap();
            let rec = Recorder::new(jobs);
            let seen: Mutex<Vec<(u8, u32)>> = Mutex::new(Vec::new());
            let joined: Mutex<Option<usize>> = Mutex::new(None);
            let seen = &seen;
            let joined = &joined;
            let join = Join::new(
                4,
                Task::new(Kind::Other, "after every reader", move |_| {
                    *joined.lock().unwrap() = Some(seen.lock().unwrap().len());
                    Ok(())
                }),
            );
            let start_ref = &start;
            let chain = Task::new(Kind::Fill, "fill to 1", move |lane| {
                lane.restore(start_ref)?;
                for step in 1..=2u8 {
                    if step > 1 {
                        lane.step(Kind::Fill, format!("fill to {step}"));
                    }
                    add(lane, 1)?;
                    let state = lane.snapshot()?;
                    for reader in 0..2u8 {
                        let (state, join) = (state.clone(), join.clone());
                        lane.spawn(Task::new(
                            Kind::Scenario,
                            format!("read {step}.{reader}"),
                            move |lane| {
                                lane.restore(&state)?;
                                let sum = add(lane, 10)?;
                                seen.lock().unwrap().push((step, sum));
                                join.arrive(&lane.ctl);
                                Ok(())
                            },
                        ));
                    }
                }
                Ok(())
            })
            .priority(10);
            let exec = Exec {
                jobs,
                shard: Shard::WHOLE,
                profile: false,
            };
            run(&mut client, &start, &exec, &rec, &mut |_| {}, vec![chain]).unwrap();
            let mut seen = seen.lock().unwrap().clone();
            seen.sort();
            // Each reader saw the state of its step: 1 + 10, 2 + 10.
            assert_eq!(
                seen,
                vec![(1, 11), (1, 11), (2, 12), (2, 12)],
                "jobs {jobs}"
            );
            assert_eq!(*joined.lock().unwrap(), Some(4), "jobs {jobs}");
            let log = rec.log();
            let named = |name: &str| {
                log.units
                    .iter()
                    .find(|u| u.name == name)
                    .unwrap_or_else(|| panic!("no unit {name}"))
            };
            let (one, two) = (named("fill to 1"), named("fill to 2"));
            assert_eq!(two.after, vec![one.id]);
            assert_eq!(named("read 1.0").after, vec![one.id]);
            assert_eq!(named("read 2.1").after, vec![two.id]);
            let mut after = named("after every reader").after.clone();
            after.sort();
            let mut readers: Vec<usize> = log
                .units
                .iter()
                .filter(|u| u.name.starts_with("read "))
                .map(|u| u.id)
                .collect();
            readers.sort();
            assert_eq!(after, readers);
            assert!(log.units.iter().all(|u| u.lane < jobs.max(1)));
        }
    }

    #[test]
    fn an_error_or_a_panic_stops_the_graph_and_is_returned() {
        for (jobs, panics) in [(1, false), (2, false), (2, true)] {
            let (mut engine, canister) = counter_installed();
            let mut client = BenchClient::attach(&mut engine, canister);
            let start = snapshot(client.engine, canister).unwrap();
            let rec = Recorder::new(jobs);
            let ran = std::sync::atomic::AtomicUsize::new(0);
            let ran = &ran;
            let tasks: Vec<Task<'_>> = (0..20)
                .map(|i| {
                    Task::new(Kind::Scenario, format!("task {i}"), move |_| {
                        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i == 0 {
                            if panics {
                                panic!("task 0 fell over");
                            }
                            return Err(anyhow!("task 0 failed"));
                        }
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        Ok(())
                    })
                    .priority(20 - i)
                })
                .collect();
            let exec = Exec {
                jobs,
                shard: Shard::WHOLE,
                profile: false,
            };
            let err = run(&mut client, &start, &exec, &rec, &mut |_| {}, tasks).unwrap_err();
            let text = err.to_string();
            if panics {
                assert!(
                    text.contains("task \"task 0\" panicked: task 0 fell over"),
                    "{text}"
                );
            } else {
                assert_eq!(text, "task 0 failed");
            }
            // The failure stopped the workers before their next task (not checked after a
            // panic, whose report with a backtrace takes a while as the other worker goes on).
            let ran = ran.load(std::sync::atomic::Ordering::Relaxed);
            assert!(panics || ran <= jobs + 1, "jobs {jobs}: {ran}");
        }
    }
}
