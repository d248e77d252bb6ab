//! Recording a run's units of work: wall time, the CPU time and kernel counts of the thread
//! that ran each one, and the units it waited for ([`crate::report::work`] renders them).

use std::cell::Cell;
use std::sync::Mutex;
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
    all_threads: bool,
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
    fn now(all_threads: bool) -> ThreadClock {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let clock = if all_threads {
            libc::CLOCK_PROCESS_CPUTIME_ID
        } else {
            libc::CLOCK_THREAD_CPUTIME_ID
        };
        // SAFETY: `ts` is a valid timespec to write to.
        let cpu = if unsafe { libc::clock_gettime(clock, &mut ts) } == 0 {
            ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
        } else {
            0.0
        };
        let (minor_faults, voluntary, involuntary) = usage(all_threads);
        ThreadClock {
            cpu,
            minor_faults,
            voluntary,
            involuntary,
        }
    }
}

/// (minor faults, voluntary and involuntary context switches) of this thread, or of the
/// process; zeros where the platform does not count per thread.
fn usage(all_threads: bool) -> (u64, u64, u64) {
    #[cfg(target_os = "linux")]
    let who = if all_threads {
        libc::RUSAGE_SELF
    } else {
        libc::RUSAGE_THREAD
    };
    #[cfg(not(target_os = "linux"))]
    let who = if all_threads {
        libc::RUSAGE_SELF
    } else {
        return (0, 0, 0);
    };
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage to write to.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return (0, 0, 0);
    }
    (ru.ru_minflt as u64, ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

impl Recorder {
    /// A log whose clock starts now, for a run on `jobs` workers.
    pub fn new(jobs: usize) -> Recorder {
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
        self.run(kind, name.into(), after, false, f)
    }

    /// [`Recorder::unit`] for work that spreads over threads of its own (wasmtime compiles
    /// on every core): its CPU time is the whole process's, so nothing else should run
    /// meanwhile.
    pub fn unit_all_threads<R>(
        &self,
        kind: Kind,
        name: impl Into<String>,
        after: &[UnitId],
        f: impl FnOnce() -> R,
    ) -> (R, UnitId) {
        self.run(kind, name.into(), after, true, f)
    }

    fn run<R>(
        &self,
        kind: Kind,
        name: String,
        after: &[UnitId],
        all_threads: bool,
        f: impl FnOnce() -> R,
    ) -> (R, UnitId) {
        let open = self.begin(kind, name, after, all_threads);
        let out = f();
        let id = open.id;
        drop(open);
        (out, id)
    }

    /// Starts a unit on the calling thread (see [`Recorder::unit`]); [`Recorder::end`]
    /// ends it, on the same thread.
    pub fn begin(&self, kind: Kind, name: String, after: &[UnitId], all_threads: bool) -> Open<'_> {
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
            clock: ThreadClock::now(all_threads),
            all_threads,
            nested,
        }
    }

    /// Ends a unit [`Recorder::begin`] started (as dropping it does).
    pub fn end(&self, open: Open<'_>) {
        debug_assert!(std::ptr::eq(open.recorder, self));
        drop(open);
    }

    fn finish(&self, open: &Open<'_>) {
        let now = ThreadClock::now(open.all_threads);
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

    /// The log so far, with the wall time since the recorder started.
    pub fn log(&self) -> WorkLog {
        WorkLog {
            units: self.units.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            jobs: self.jobs,
            wall: self.elapsed(),
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
        let open = self.recorder.begin(kind, name.into(), &self.last, false);
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
