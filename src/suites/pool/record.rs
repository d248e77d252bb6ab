//! Recording a run's units of work: wall time, the CPU time and kernel counts of the thread
//! that ran each one, and the units it waited for ([`crate::report::work`] renders them).
//! A compile also counts the threads wasmtime compiles on.

use std::cell::Cell;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use crate::report::work::{Kind, Unit, WorkLog};

/// A unit in a [`Recorder`]'s log, for the units that wait for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnitId(pub usize);

thread_local! {
    /// The worker this thread is (0: the suite's own thread).
    static LANE: Cell<usize> = const { Cell::new(0) };
    /// Set while the thread runs a unit: units do not nest (their CPU time would count twice).
    static IN_UNIT: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as worker `lane` for the units it records.
pub fn set_lane(lane: usize) {
    LANE.with(|l| l.set(lane));
}

/// The units of one suite's run, as they happen. Shared by the workers.
pub struct Recorder {
    started: Instant,
    jobs: usize,
    units: Mutex<Vec<Unit>>,
}

/// A unit that has started and not yet ended: it ends when dropped (or [`Recorder::end`]ed),
/// on the thread that began it.
pub struct Open<'r> {
    pub id: UnitId,
    recorder: &'r Recorder,
    clock: ThreadClock,
    compile: bool,
    nested: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.recorder.finish(self);
    }
}

/// A thread's CPU time and kernel counts at one moment.
#[derive(Clone, Copy, Default)]
struct ThreadClock {
    cpu: f64,
    minor_faults: u64,
    voluntary: u64,
    involuntary: u64,
}

impl ThreadClock {
    /// The calling thread's; for a compile (`compile`) also those of the compiler's
    /// threads, or the whole process's where they are not known.
    fn now(compile: bool) -> ThreadClock {
        let threads = match (compile, compiler_threads()) {
            (false, _) => return Self::read(libc::CLOCK_THREAD_CPUTIME_ID, RUSAGE_THREAD),
            (true, None) => return Self::read(libc::CLOCK_PROCESS_CPUTIME_ID, libc::RUSAGE_SELF),
            (true, Some(threads)) => threads,
        };
        let mut clock = Self::read(libc::CLOCK_THREAD_CPUTIME_ID, RUSAGE_THREAD);
        for t in threads.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            clock.cpu += cpu_seconds(t.clock);
            let (faults, voluntary, involuntary) = task_usage(t.tid);
            clock.minor_faults += faults;
            clock.voluntary += voluntary;
            clock.involuntary += involuntary;
        }
        clock
    }

    /// CPU time from `clock`, kernel counts from `getrusage(who)`.
    fn read(clock: libc::clockid_t, who: libc::c_int) -> ThreadClock {
        let (minor_faults, voluntary, involuntary) = usage(who);
        ThreadClock {
            cpu: cpu_seconds(clock),
            minor_faults,
            voluntary,
            involuntary,
        }
    }
}

fn cpu_seconds(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    if unsafe { libc::clock_gettime(clock, &mut ts) } == 0 {
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    } else {
        0.0
    }
}

#[cfg(target_os = "linux")]
const RUSAGE_THREAD: libc::c_int = libc::RUSAGE_THREAD;
/// Elsewhere there is no count per thread: [`usage`] gives zeros.
#[cfg(not(target_os = "linux"))]
const RUSAGE_THREAD: libc::c_int = -1;

/// (minor faults, voluntary and involuntary context switches) of this thread
/// ([`RUSAGE_THREAD`]) or of the process (`RUSAGE_SELF`); zeros where not counted.
fn usage(who: libc::c_int) -> (u64, u64, u64) {
    if who == -1 {
        return (0, 0, 0);
    }
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage to write to.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return (0, 0, 0);
    }
    (ru.ru_minflt as u64, ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

/// A thread of rayon's global pool, where wasmtime compiles.
struct CompilerThread {
    clock: libc::clockid_t,
    tid: i64,
}

/// The compiler's threads, once [`count_compiler_threads`] set up the pool; `None` when
/// the pool ran before it (or the platform cannot read another thread's clock).
fn compiler_threads() -> Option<&'static Mutex<Vec<CompilerThread>>> {
    COUNTING
        .get()
        .copied()
        .unwrap_or(false)
        .then_some(&COMPILER_THREADS)
}

/// Filled by the pool's threads as they start, which may be before the pool is known to
/// be ours ([`COUNTING`]).
static COMPILER_THREADS: Mutex<Vec<CompilerThread>> = Mutex::new(Vec::new());
static COUNTING: OnceLock<bool> = OnceLock::new();

/// Sets up rayon's global pool, on which wasmtime compiles, so that each of its threads
/// makes its CPU clock known: a compile unit then counts their CPU time and faults besides
/// its own thread's (two compiles at once would count each other's). The first call
/// decides; if the pool was already running (something compiled first), compile units
/// count the whole process instead, as they can only be sure of that.
fn count_compiler_threads() {
    COUNTING.get_or_init(|| {
        if !cfg!(target_os = "linux") {
            return false;
        }
        rayon::ThreadPoolBuilder::new()
            .start_handler(|_| {
                #[cfg(target_os = "linux")]
                {
                    let mut clock: libc::clockid_t = 0;
                    // SAFETY: this thread's own handle, and a clockid to write to.
                    let ok =
                        unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
                    // SAFETY: gettid has no preconditions.
                    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
                    if ok == 0 {
                        COMPILER_THREADS
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(CompilerThread { clock, tid });
                    }
                }
            })
            .build_global()
            .is_ok()
    });
}

/// (minor faults, voluntary and involuntary context switches) of thread `tid` of this
/// process, from /proc; zeros if it cannot be read.
fn task_usage(tid: i64) -> (u64, u64, u64) {
    let faults = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
        .ok()
        .and_then(|stat| {
            // After the command name in parentheses: state is field 3, minflt field 10.
            let rest = &stat[stat.rfind(')')? + 2..];
            rest.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0);
    let status =
        std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        faults,
        field("voluntary_ctxt_switches:"),
        field("nonvoluntary_ctxt_switches:"),
    )
}

impl Recorder {
    /// A log whose clock starts now, for a run on `jobs` workers.
    pub fn new(jobs: usize) -> Recorder {
        count_compiler_threads();
        Recorder {
            started: Instant::now(),
            jobs,
            units: Mutex::new(Vec::new()),
        }
    }

    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Runs `f` as a unit of `kind` called `name` that needed the units `after` (all ended),
    /// on the calling thread; returns what `f` returned and the unit.
    pub fn unit<R>(
        &self,
        kind: Kind,
        name: impl Into<String>,
        after: &[UnitId],
        f: impl FnOnce() -> R,
    ) -> (R, UnitId) {
        self.run(kind, name.into(), after, f)
    }

    fn run<R>(
        &self,
        kind: Kind,
        name: String,
        after: &[UnitId],
        f: impl FnOnce() -> R,
    ) -> (R, UnitId) {
        let open = self.begin(kind, name, after);
        let out = f();
        let id = open.id;
        drop(open);
        (out, id)
    }

    /// Starts a unit on the calling thread (see [`Recorder::unit`]); [`Recorder::end`]
    /// ends it, on the same thread.
    /// A compile counts the compiler's threads too ([`count_compiler_threads`]).
    pub fn begin(&self, kind: Kind, name: String, after: &[UnitId]) -> Open<'_> {
        let compile = kind == Kind::Compile;
        let nested = IN_UNIT.with(|n| n.replace(true));
        debug_assert!(!nested, "unit {name:?} started inside another unit");
        let lane = LANE.with(|l| l.get());
        let mut units = self.units.lock().unwrap_or_else(|e| e.into_inner());
        let ready = after
            .iter()
            .filter_map(|a| units.get(a.0))
            .map(|u| u.end)
            .fold(0.0, f64::max);
        let id = units.len();
        let start = self.elapsed();
        units.push(Unit {
            id,
            kind,
            name,
            after: after.iter().map(|a| a.0).collect(),
            lane,
            ready: ready.min(start),
            start,
            end: start,
            cpu: 0.0,
            minor_faults: 0,
            voluntary_switches: 0,
            involuntary_switches: 0,
        });
        drop(units);
        Open {
            id: UnitId(id),
            recorder: self,
            clock: ThreadClock::now(compile),
            compile,
            nested,
        }
    }

    /// Ends a unit [`Recorder::begin`] started (as dropping it does).
    pub fn end(&self, open: Open<'_>) {
        debug_assert!(std::ptr::eq(open.recorder, self));
        drop(open);
    }

    fn finish(&self, open: &Open<'_>) {
        let now = ThreadClock::now(open.compile);
        let end = self.elapsed();
        let mut units = self.units.lock().unwrap_or_else(|e| e.into_inner());
        let u = &mut units[open.id.0];
        u.end = end;
        u.cpu = (now.cpu - open.clock.cpu).max(0.0);
        u.minor_faults = now.minor_faults.saturating_sub(open.clock.minor_faults);
        u.voluntary_switches = now.voluntary.saturating_sub(open.clock.voluntary);
        u.involuntary_switches = now.involuntary.saturating_sub(open.clock.involuntary);
        drop(units);
        IN_UNIT.with(|n| n.set(open.nested));
    }

    /// How many units have begun: [`Recorder::units_since`] of it are those begun after now.
    pub fn count(&self) -> usize {
        self.units.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The units begun at or after `first` (a [`Recorder::count`]), as a worker process
    /// hands them to its parent.
    pub fn units_since(&self, first: usize) -> Vec<Unit> {
        let units = self.units.lock().unwrap_or_else(|e| e.into_inner());
        units.get(first..).unwrap_or_default().to_vec()
    }

    /// Takes in the units a worker process recorded after it forked from this recorder's
    /// process, when it had `first` units: they are numbered after this log's own (so a
    /// unit still comes after every unit it waited for), their clock is this one's (both
    /// processes started it at the same instant).
    pub fn adopt(&self, first: usize, theirs: Vec<Unit>) {
        let mut units = self.units.lock().unwrap_or_else(|e| e.into_inner());
        let offset = units.len() - first;
        for mut unit in theirs {
            let renumber = |id: usize| if id >= first { id + offset } else { id };
            unit.id = renumber(unit.id);
            unit.after = unit.after.iter().map(|&a| renumber(a)).collect();
            units.push(unit);
        }
    }

    /// The log so far, with the wall time since the recorder started.
    pub fn log(&self) -> WorkLog {
        WorkLog {
            units: self.units.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            jobs: self.jobs,
            wall: self.elapsed(),
            cores: super::Exec::default_jobs(),
        }
    }
}

/// Units run one after the other on one thread, each after the one before: a store's fill,
/// message by message.
pub struct Chain<'r> {
    recorder: &'r Recorder,
    open: Option<Open<'r>>,
    last: Vec<UnitId>,
}

impl<'r> Chain<'r> {
    /// A chain whose first unit comes after the units `after`.
    pub fn new(recorder: &'r Recorder, after: &[UnitId]) -> Chain<'r> {
        Chain {
            recorder,
            open: None,
            last: after.to_vec(),
        }
    }

    /// Ends the unit running now, if any, and starts the next one after it.
    pub fn step(&mut self, kind: Kind, name: impl Into<String>) -> UnitId {
        self.stop();
        let open = self.recorder.begin(kind, name.into(), &self.last);
        let id = open.id;
        self.open = Some(open);
        id
    }

    /// Ends the unit running now, if any.
    pub fn stop(&mut self) {
        if let Some(open) = self.open.take() {
            self.last = vec![open.id];
        }
    }

    /// Ends the chain: what comes after it waits for these units.
    pub fn end(mut self) -> Vec<UnitId> {
        self.stop();
        std::mem::take(&mut self.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::embedded::memory::map_anonymous;

    /// The CPU time of the calling thread.
    fn own_cpu() -> f64 {
        cpu_seconds(libc::CLOCK_THREAD_CPUTIME_ID)
    }

    #[test]
    fn a_compile_counts_the_cpu_time_of_the_pool_it_compiles_on() {
        use rayon::prelude::*;
        let rec = Recorder::new(1);
        // Work on rayon's global pool, as wasmtime compiles, while the unit's own thread
        // waits; each task measures its own thread's CPU time.
        let ((on_pool, caller), compile) = rec.unit(Kind::Compile, "compile", &[], || {
            let before = own_cpu();
            let on_pool: f64 = (0..64u64)
                .into_par_iter()
                .map(|n| {
                    let start = own_cpu();
                    let x = (0..400_000u64).fold(n, |a, i| a.wrapping_mul(31).wrapping_add(i));
                    std::hint::black_box(x);
                    own_cpu() - start
                })
                .sum();
            (on_pool, own_cpu() - before)
        });
        let unit = &rec.log().units[compile.0];
        assert!(on_pool > 0.0);
        // Whether the pool's threads are counted one by one or, where the pool ran before
        // the recorder, as the whole process: more than the caller's own share.
        assert!(
            unit.cpu >= on_pool + caller * 0.99,
            "compile unit {} s, pool {on_pool} s, caller {caller} s",
            unit.cpu
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_thread_reads_the_same_faults_from_proc_as_from_getrusage() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        let before = usage(RUSAGE_THREAD);
        // One fault for certain: the first write to a fresh page.
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        let page = map_anonymous(4096, prot, libc::MAP_PRIVATE).expect("a fresh page");
        // SAFETY: our own page, written once and unmapped.
        unsafe {
            std::ptr::write_volatile(page, 1);
            libc::munmap(page.cast(), 4096);
        }
        let read = task_usage(tid);
        let after = usage(RUSAGE_THREAD);
        assert!(
            before.0 < read.0 && read.0 <= after.0,
            "{before:?} {read:?} {after:?}"
        );
        assert!(
            before.1 <= read.1 && read.1 <= after.1,
            "{before:?} {read:?} {after:?}"
        );
    }

    #[test]
    fn units_record_what_they_waited_for_and_their_thread() {
        let rec = Recorder::new(2);
        let (x, a) = rec.unit(Kind::Fill, "fill btree to 1,000 rows", &[], || 1 + 1);
        assert_eq!(x, 2);
        let (_, b) = std::thread::scope(|s| {
            s.spawn(|| {
                set_lane(3);
                rec.unit(Kind::Scenario, "scenario", &[a], || {
                    // Some CPU time to measure.
                    (0..200_000u64).map(|i| i * i % 7).sum::<u64>()
                })
            })
            .join()
            .unwrap()
        });
        let log = rec.log();
        assert_eq!(log.jobs, 2);
        assert_eq!(log.units.len(), 2);
        let (ua, ub) = (&log.units[a.0], &log.units[b.0]);
        assert_eq!(
            (ua.kind, ua.lane, ua.after.clone()),
            (Kind::Fill, 0, vec![])
        );
        assert_eq!(
            (ub.kind, ub.lane, ub.after.clone()),
            (Kind::Scenario, 3, vec![0])
        );
        assert!(ub.ready >= ua.end && ub.start >= ub.ready && ub.end >= ub.start);
        assert!(log.wall >= ub.end);
    }
}
