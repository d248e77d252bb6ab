//! A suite's work as tasks on `--jobs` workers. A task starts from a state (a snapshot any
//! worker can restore), sends its messages, and may take snapshots and spawn the tasks that
//! start from them, so that a store's fill goes on while what was measured on the way runs
//! beside it. Each worker runs on its own engine: the suite's for the calling thread, forks
//! of it for the others (threads), or, where the suite carries its tasks' results across
//! ([`run`]), a copy of the whole process each ([`processes`]); free workers take
//! the ready task of the highest priority.
//!
//! Every task is a unit of work in the suite's [`Recorder`] (a task may split itself into
//! several with [`Lane::step`]), so report.md can say where the wall time went.

use std::cell::RefCell;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use anyhow::{anyhow, Result};

use super::record::{set_lane, Open, Recorder, UnitId};

mod processes;
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
    /// A task the suite handed to [`run`]: with worker processes, the first process to
    /// claim it runs it (and what it spawns); the others skip it.
    claim: Option<usize>,
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
            claim: None,
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
    /// Worker `index` of `graph`, on `engine`, calling the graph's canister.
    fn new(index: usize, engine: &'a mut dyn Engine, graph: &'a Graph<'s>) -> Lane<'a, 's> {
        Lane {
            index,
            client: BenchClient::attach(engine, graph.canister),
            ctl: Ctl::new(graph),
            adopted: Vec::new(),
            profiling: Profiling::Off,
        }
    }

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
    /// With worker processes: who runs each task handed to [`run`].
    claims: Option<super::process::Claims>,
    /// With worker processes: the worker this process is.
    process_lane: AtomicUsize,
}

/// A process's progress: the tasks it finished; the tasks spawned here that only it can
/// run, and those every process spawns (each runs in one of them, once); the last finished.
/// Across processes the tasks are the shared ones once and everyone's own, a total that only
/// grows as tasks are spawned.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Counts {
    pub done: usize,
    pub own: usize,
    pub shared: usize,
    pub key: String,
}

struct Queue<'s> {
    ready: BinaryHeap<Entry<'s>>,
    /// Queued plus running tasks: the graph is done when none is left.
    outstanding: usize,
    spawned: usize,
    /// Tasks another process claimed.
    skipped: usize,
    /// Tasks spawned here that no other process can take (the rest every process spawns).
    own_spawned: usize,
    /// Tasks worker processes finished.
    remote_finished: usize,
    /// Queued and running tasks no other process can take (spawned here).
    own: usize,
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
            q.own += task.claim.is_none() as usize;
            q.own_spawned += task.claim.is_none() as usize;
            q.ready.push(Entry {
                priority: task.priority,
                seq,
                task,
            });
        }
        self.publish_own(&q);
        drop(q);
        self.wake.notify_all();
    }

    /// With worker processes, tells the others how many of its own tasks this one has.
    fn publish_own(&self, q: &Queue<'s>) {
        if let Some(claims) = &self.claims {
            claims.set_own(self.process_lane.load(Ordering::Relaxed), q.own);
        }
    }

    /// The next task for worker `lane`, or None when the graph is done or failed.
    fn next(&self, lane: usize) -> Option<Task<'s>> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if q.failed.is_some() {
                return None;
            }
            if let Some(entry) = self.pick(&mut q, lane) {
                return Some(entry.task);
            }
            if q.outstanding == 0 {
                return None;
            }
            q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Ends a task another process runs, without running it.
    fn skip(&self) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.outstanding -= 1;
        q.skipped += 1;
        drop(q);
        self.wake.notify_all();
    }

    /// What this process knows of the graph's progress so far.
    fn counts(&self) -> Counts {
        let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        Counts {
            done: q.finished.len(),
            own: q.own_spawned,
            shared: q.spawned - q.own_spawned,
            key: q.finished.last().cloned().unwrap_or_default(),
        }
    }

    /// The ready task of the highest priority; with worker processes, a task that another
    /// process could take only while this one has no more of its own tasks than any other
    /// (they are the work no other process can share: what its tasks spawned), so that the
    /// stores' fills, and the scenarios they spawn, spread over the processes.
    fn pick(&self, q: &mut Queue<'s>, lane: usize) -> Option<Entry<'s>> {
        let Some(claims) = &self.claims else {
            return q.ready.pop();
        };
        let top = q.ready.peek()?;
        if top.task.claim.is_none() || claims.may_claim(lane) {
            return q.ready.pop();
        }
        let mut held = Vec::new();
        let mut own = None;
        while let Some(entry) = q.ready.pop() {
            if entry.task.claim.is_none() {
                own = Some(entry);
                break;
            }
            held.push(entry);
        }
        q.ready.extend(held);
        own.or_else(|| q.ready.pop())
    }

    fn finished(&self, name: String, own: bool, out: Result<()>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.outstanding -= 1;
        q.own -= own as usize;
        self.publish_own(&q);
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
        while let Some(task) = self.next(lane.index) {
            if let (Some(claims), Some(claim)) = (&self.claims, task.claim) {
                if !claims.take(claim, lane.index) {
                    self.skip();
                    continue;
                }
            }
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
            let own = task.claim.is_none();
            if out.is_ok() {
                // A panic must not leave the other workers waiting for this task forever:
                // it becomes the graph's error.
                let body = task.body;
                out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(lane)))
                    .unwrap_or_else(|panic| {
                        Err(anyhow!(
                            "internal error: task {:?} panicked: {}",
                            task.name,
                            panic_message(panic.as_ref())
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
            self.finished(task.name, own, out);
            between(self);
        }
    }
}

/// What a panic said (its `&str` or `String` payload), for the error it becomes.
pub(in crate::suites) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// What the tasks of a suite leave behind for it (results in slots, setup counts), carried
/// from a worker process to the suite's: what [`run`] needs to run workers as
/// processes.
pub struct Carry<'a> {
    /// In a worker process once its work is done: what its tasks handed in.
    pub export: &'a (dyn Fn() -> Result<serde_json::Value> + Sync),
    /// In the suite's process: one worker process's export, taken in.
    pub import: &'a (dyn Fn(serde_json::Value) -> Result<()> + Sync),
}

/// Runs `tasks` and everything they spawn on `exec.jobs` workers: the calling thread on
/// `client`'s engine, the others on forks of it taken at `start` (none when the engine
/// cannot fork). Instructions executed on every worker are added to
/// `client.executed_instructions`. The first error stops the workers before their next
/// task and is returned.
///
/// With `carry`, which says how their tasks' results come back, the workers other than the
/// calling thread's are processes of their own when the engine can fork its process
/// ([`crate::engine::Engine::fork_process`]): each task handed in here runs in the first
/// process to take it, with everything it spawns. Threads of one process share its page
/// tables, and the memory tracker changes them all the time: every change on one core
/// interrupts the other (a TLB shootdown), which took a quarter of the default run's CPU on
/// two cores. Results are the same either way.
pub fn run<'s>(
    client: &mut BenchClient<'_>,
    start: &State,
    exec: &Exec,
    recorder: &'s Recorder,
    progress: &mut dyn FnMut(Progress<'_>),
    mut tasks: Vec<Task<'s>>,
    carry: Option<&Carry<'_>>,
) -> Result<()> {
    let canister = client.canister;
    let processes = match carry {
        // Profiled runs switch to the profiled variant of the module, compiled when first
        // loaded: in this process, where wasmtime's compiler threads are.
        Some(carry) if exec.jobs > 1 && tasks.len() > 1 && !exec.profile => {
            for (i, task) in tasks.iter_mut().enumerate() {
                task.claim = Some(i);
            }
            Some((carry, super::process::Claims::new(tasks.len(), exec.jobs)?))
        }
        _ => None,
    };
    let mut graph = Graph {
        queue: Mutex::new(Queue {
            ready: BinaryHeap::new(),
            outstanding: 0,
            spawned: 0,
            skipped: 0,
            own_spawned: 0,
            remote_finished: 0,
            own: 0,
            finished: Vec::new(),
            failed: None,
        }),
        wake: Condvar::new(),
        recorder,
        profile: exec.profile,
        start: start.clone(),
        canister,
        claims: None,
        process_lane: AtomicUsize::new(0),
    };
    graph.push(tasks.into_iter());
    if let Some((carry, claims)) = processes {
        graph.claims = Some(claims);
        match processes::run(client, &graph, exec.jobs, carry, progress)? {
            processes::Ran::Done => return finish(&graph, progress),
            // The engine cannot fork its process: every task runs here, on threads.
            processes::Ran::NotForked => graph.claims = None,
        }
    }
    run_threads(client, start, exec, &graph, progress)?;
    finish(&graph, progress)
}

/// The graph's outcome once no worker runs: its first error, or every task done.
fn finish(graph: &Graph<'_>, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
    let mut q = graph.queue.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = q.failed.take() {
        return Err(e);
    }
    let done = q.finished.len() + q.remote_finished;
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

/// The workers as threads of this process: the calling thread and forks of its engine.
fn run_threads<'s>(
    client: &mut BenchClient<'_>,
    start: &State,
    exec: &Exec,
    graph: &Graph<'s>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<()> {
    let canister = client.canister;
    let recorder = graph.recorder;
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
    let (executed, spawn_error) = std::thread::scope(|scope| {
        let mut workers = Vec::new();
        let mut spawn_error = None;
        for (i, mut engine) in forks.into_iter().enumerate() {
            let spawned = crate::engine::embedded::spawn_scoped(
                scope,
                &format!("icbench-worker-{}", i + 1),
                move || {
                    set_lane(i + 1);
                    let mut lane = Lane::new(i + 1, engine.as_mut(), graph);
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
        let mut lane = Lane::new(0, &mut *client.engine, graph);
        let mut shown = 0;
        graph.work(&mut lane, &mut |g| {
            let c = g.counts();
            if c.done > shown {
                shown = c.done;
                progress(Progress::Scenario {
                    done: c.done,
                    total: c.own + c.shared,
                    key: &c.key,
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
    Ok(())
}

#[cfg(test)]
mod tests;
