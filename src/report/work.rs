//! Where a run's wall time went: the units of work a suite recorded (compiling, each fill
//! message, snapshots, scenarios, capacity probes, upgrades), each with its wall time, the
//! CPU time of the thread that ran it and what it waited for; from them the critical path
//! and a list-scheduling model of the wall time on other core counts. report.md gets the
//! summary ([`section`]), `work.csv` every unit ([`csv`]).
//!
//! The model: every unit takes its measured CPU time (what it costs on a core of its own,
//! without the other work of the machine) and may start once the units it waited for are
//! done; P cores take the ready units longest-remaining-path first. It leaves out what the
//! units do not hold (the CLI's own start and the writing of the files), and memory and
//! lock contention, which the measured wall time at more jobs shows.

use std::collections::BTreeMap;

use super::format::thousands;
use super::table::Table;

/// What a unit of work did.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Kind {
    /// Instrumenting and compiling the canister module, or loading it from the cache.
    Compile,
    /// Installing the canister, or loading a cached state into the engine.
    Install,
    /// A message that fills a store or sets it up (payload size, journal mode).
    Fill,
    /// A snapshot taken, or the engine of a worker forked from one.
    Snapshot,
    /// A measured scenario (its restore and messages).
    Scenario,
    /// One real call of a capacity search.
    Probe,
    /// An upgrade and what the suite measures around it.
    Upgrade,
    /// The suite's own work between the others (reading stats, writing the cache).
    Other,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Compile,
        Kind::Install,
        Kind::Fill,
        Kind::Snapshot,
        Kind::Scenario,
        Kind::Probe,
        Kind::Upgrade,
        Kind::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Compile => "compile",
            Kind::Install => "install",
            Kind::Fill => "fill",
            Kind::Snapshot => "snapshot",
            Kind::Scenario => "scenario",
            Kind::Probe => "probe",
            Kind::Upgrade => "upgrade",
            Kind::Other => "other",
        }
    }
}

/// One unit of work as it ran.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Unit {
    /// Its place in the log: units are numbered as they start (a worker process's after
    /// those of the process it was forked from), so every unit it waited for has a
    /// smaller id.
    pub id: usize,
    pub kind: Kind,
    /// What it was: `fill sqlite to 300,000 rows`, `scenario btree/middle/insert/1`.
    pub name: String,
    /// The units whose results it needed (it could not start before they ended).
    pub after: Vec<usize>,
    /// The worker that ran it (0: the suite's own thread).
    pub lane: usize,
    /// Seconds since the run started: when the units it needed were done, when it started
    /// and when it ended (start - ready: the time it waited for a free worker).
    pub ready: f64,
    pub start: f64,
    pub end: f64,
    /// CPU seconds (user and system) of the threads that ran it.
    pub cpu: f64,
    /// Page faults of its thread that the kernel resolved without I/O (the heap's dirty
    /// and access tracking, copy-on-write, fresh memory).
    pub minor_faults: u64,
    /// Times its thread slept (a lock it waited for, I/O) and was preempted (waited for a
    /// core).
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

impl Unit {
    pub fn wall(&self) -> f64 {
        (self.end - self.start).max(0.0)
    }

    /// What it waited for a free worker after the units it needed were done.
    pub fn queued(&self) -> f64 {
        (self.start - self.ready).max(0.0)
    }
}

/// A run's units of work, with how it ran them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkLog {
    pub units: Vec<Unit>,
    /// `--jobs` of the run.
    pub jobs: usize,
    /// The run's wall time over the same span as the units (from the suite's start).
    pub wall: f64,
    /// The machine's cores: a unit with threads of its own (the compile) could use them
    /// all whatever `jobs` was.
    pub cores: usize,
}

/// The core counts the model predicts the wall time for.
pub const MODEL_CORES: [usize; 6] = [1, 2, 4, 8, 16, 64];

impl WorkLog {
    pub fn total_cpu(&self) -> f64 {
        self.units.iter().map(|u| u.cpu).sum()
    }

    /// How many cores a unit kept busy at once here: its CPU time over its wall time.
    /// One thread's unit comes out at about 1; the compile, which wasmtime spreads over
    /// every core, at up to the machine's cores.
    fn parallelism(u: &Unit) -> f64 {
        let wall = u.wall();
        if wall > 0.0 {
            (u.cpu / wall).max(1.0)
        } else {
            1.0
        }
    }

    /// The cores the model gives a unit when enough are free: its parallelism, rounded
    /// (so that a one-thread unit whose clocks disagree a little still takes one).
    fn cores_for(u: &Unit) -> usize {
        (Self::parallelism(u).round() as usize).max(1)
    }

    /// How long a unit runs in the model on `cores` cores: its CPU time spread over as
    /// many of them as it kept busy here, and no more (the model does not guess how a
    /// compile would scale past the cores it had).
    fn duration(u: &Unit, cores: usize) -> f64 {
        u.cpu.max(0.0) / Self::parallelism(u).min(cores.max(1) as f64)
    }

    /// What the critical path charges a unit: its duration with every core it can use.
    /// For a one-thread unit that is its CPU time; for the compile, its wall time here.
    fn cost(u: &Unit) -> f64 {
        Self::duration(u, Self::cores_for(u))
    }

    /// The longest chain of units each waiting for the one before, by the units' costs:
    /// its length and its units in order. No wall time on any number of cores is shorter,
    /// as long as no unit runs on more cores than it did here.
    pub fn critical_path(&self) -> (f64, Vec<usize>) {
        let n = self.units.len();
        let mut length = vec![0.0f64; n];
        let mut via: Vec<Option<usize>> = vec![None; n];
        for (i, u) in self.units.iter().enumerate() {
            let mut best = 0.0;
            for &d in &u.after {
                if d < i && length[d] > best {
                    best = length[d];
                    via[i] = Some(d);
                }
            }
            length[i] = best + Self::cost(u);
        }
        let Some(last) = (0..n).max_by(|&a, &b| length[a].total_cmp(&length[b])) else {
            return (0.0, Vec::new());
        };
        let mut path = vec![last];
        while let Some(prev) = via[*path.last().expect("path starts non-empty")] {
            path.push(prev);
        }
        path.reverse();
        (length[last], path)
    }

    /// The wall time of list-scheduling the units on `cores` cores: a unit is ready when
    /// every unit it waited for is done; free cores take the ready unit with the longest
    /// path still ahead of it (ties: the earlier unit), as many of them as the unit kept
    /// busy here ([`Self::cores_for`]) or as are free, whichever is fewer.
    pub fn modelled_wall(&self, cores: usize) -> f64 {
        self.schedule(cores, cores)
    }

    /// The model for the run as it went: `jobs` workers on the machine's cores.
    pub fn modelled_run(&self) -> f64 {
        self.schedule(self.jobs.max(1), self.run_cores())
    }

    /// The cores the run had: the machine's, and no fewer than its workers.
    fn run_cores(&self) -> usize {
        self.cores.max(self.jobs).max(1)
    }

    /// List scheduling with at most `workers` units at once on `cores` cores.
    fn schedule(&self, workers: usize, cores: usize) -> f64 {
        let n = self.units.len();
        if n == 0 {
            return 0.0;
        }
        let (mut free_workers, mut free) = (workers.max(1), cores.max(1));
        let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut waiting: Vec<usize> = vec![0; n];
        for (i, u) in self.units.iter().enumerate() {
            for &d in u.after.iter().filter(|&&d| d < i) {
                successors[d].push(i);
                waiting[i] += 1;
            }
        }
        // The longest path from each unit to the end (its own cost included).
        let mut ahead = vec![0.0f64; n];
        for i in (0..n).rev() {
            let next = successors[i].iter().map(|&s| ahead[s]).fold(0.0, f64::max);
            ahead[i] = Self::cost(&self.units[i]) + next;
        }
        // Ready units by (longest path ahead, earliest id); running ones by end time.
        let key = |i: usize| (Ordered(ahead[i]), std::cmp::Reverse(i));
        let mut ready: std::collections::BinaryHeap<(Ordered, std::cmp::Reverse<usize>)> =
            (0..n).filter(|&i| waiting[i] == 0).map(key).collect();
        // Running units by end time, with the cores each holds.
        let mut running: std::collections::BinaryHeap<std::cmp::Reverse<(Ordered, usize, usize)>> =
            Default::default();
        let mut now = 0.0f64;
        let mut done = 0;
        while done < n {
            while free > 0 && free_workers > 0 {
                let Some((_, std::cmp::Reverse(i))) = ready.pop() else {
                    break;
                };
                let unit = &self.units[i];
                let taken = Self::cores_for(unit).min(free);
                free -= taken;
                free_workers -= 1;
                running.push(std::cmp::Reverse((
                    Ordered(now + Self::duration(unit, taken)),
                    i,
                    taken,
                )));
            }
            let Some(std::cmp::Reverse((Ordered(end), i, taken))) = running.pop() else {
                // Nothing runs and nothing is ready: a unit waits for a later one, which
                // the log never records; stop rather than loop.
                break;
            };
            now = end;
            free += taken;
            free_workers += 1;
            done += 1;
            for &s in &successors[i] {
                waiting[s] -= 1;
                if waiting[s] == 0 {
                    ready.push(key(s));
                }
            }
        }
        now
    }
}

/// An f64 with a total order, for the model's heaps.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ordered(f64);

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

fn secs(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.0} s")
    } else if s >= 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.2} s")
    }
}

/// The critical path in words: runs of units of one kind and name stem joined (`fill btree,
/// 10 messages, 4.1 s`).
fn path_text(log: &WorkLog, path: &[usize]) -> String {
    let mut parts: Vec<(String, usize, f64)> = Vec::new();
    for &i in path {
        let u = &log.units[i];
        let stem = stem(&u.name);
        match parts.last_mut() {
            Some((s, count, cost)) if *s == stem => {
                *count += 1;
                *cost += WorkLog::cost(u);
            }
            _ => parts.push((stem, 1, WorkLog::cost(u))),
        }
    }
    parts
        .iter()
        .map(|(stem, count, cost)| match count {
            1 => format!("{stem} ({})", secs(*cost)),
            n => format!("{stem} ×{n} ({})", secs(*cost)),
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

/// A unit's name without the part that numbers it in a run of its kind (`fill btree to
/// 300,000 rows` → `fill btree`): what the critical path groups by.
fn stem(name: &str) -> String {
    match name.find(" to ") {
        Some(at) if name.starts_with("fill ") => name[..at].to_string(),
        _ => name.to_string(),
    }
}

/// The report.md section: totals, the critical path, the model on [`MODEL_CORES`] and the
/// units by kind.
pub fn section(log: &WorkLog) -> String {
    let mut out = String::new();
    out.push_str("\n## Where the wall time went\n\n");
    if log.units.is_empty() {
        out.push_str("No units of work were recorded.\n");
        return out;
    }
    let cpu = log.total_cpu();
    let (length, path) = log.critical_path();
    out.push_str(&format!(
        "{} units of work (compiling, installing, each fill message, snapshots and forks, scenarios, capacity probes, upgrades; every unit in `work.csv`) took {} of CPU time on `--jobs {}` in {} of wall time. Critical path ({}): {}.\n",
        thousands(log.units.len() as u64),
        secs(cpu),
        log.jobs,
        secs(log.wall),
        secs(length),
        path_text(log, &path),
    ));
    out.push_str(&format!(
        "\nThe wall time a list-scheduling model of these units predicts: each unit takes its CPU time on a core (a unit that kept several cores busy here, such as the compile, takes as many as are free, up to that number, and its CPU time spread over them) and starts when the units it waited for are done; free cores take the unit with the longest path still ahead. It leaves out contention for memory and the kernel's locks, and the CLI's own start and file writing. Measured here: {} on {} job{} (the model of {} job{} on this machine's {} cores: {}).\n\n",
        secs(log.wall),
        log.jobs,
        if log.jobs == 1 { "" } else { "s" },
        log.jobs,
        if log.jobs == 1 { "" } else { "s" },
        log.run_cores(),
        secs(log.modelled_run()),
    ));
    let mut model = Table::new(
        ["cores", "modelled wall time", "speed-up over 1 core"]
            .map(String::from)
            .to_vec(),
    );
    let one = log.modelled_wall(1);
    for cores in MODEL_CORES {
        let wall = log.modelled_wall(cores);
        model.push(vec![
            cores.to_string(),
            secs(wall),
            format!("{:.2}x", if wall > 0.0 { one / wall } else { 1.0 }),
        ]);
    }
    out.push_str(&model.render());
    out.push('\n');
    let mut kinds = Table::new(
        [
            "work",
            "units",
            "CPU",
            "wall",
            "waited for a worker",
            "page faults",
            "sleeps (locks, I/O)",
            "preempted",
        ]
        .map(String::from)
        .to_vec(),
    );
    let mut by_kind: BTreeMap<Kind, Vec<&Unit>> = BTreeMap::new();
    for u in &log.units {
        by_kind.entry(u.kind).or_default().push(u);
    }
    for (kind, units) in by_kind {
        kinds.push(vec![
            kind.as_str().to_string(),
            thousands(units.len() as u64),
            secs(units.iter().map(|u| u.cpu).sum()),
            secs(units.iter().map(|u| u.wall()).sum()),
            secs(units.iter().map(|u| u.queued()).sum()),
            thousands(units.iter().map(|u| u.minor_faults).sum()),
            thousands(units.iter().map(|u| u.voluntary_switches).sum()),
            thousands(units.iter().map(|u| u.involuntary_switches).sum()),
        ]);
    }
    out.push_str(&kinds.render());
    out
}

/// `work.csv`: one line per unit, in the order they started.
pub fn csv(log: &WorkLog) -> String {
    let mut out = String::from(
        "id,kind,name,after,lane,ready,start,end,cpu,minor_faults,voluntary_switches,involuntary_switches\r\n",
    );
    for u in &log.units {
        let after: Vec<String> = u.after.iter().map(|a| a.to_string()).collect();
        out.push_str(&format!(
            "{},{},\"{}\",{},{},{:.6},{:.6},{:.6},{:.6},{},{},{}\r\n",
            u.id,
            u.kind.as_str(),
            u.name.replace('"', "\"\""),
            after.join(" "),
            u.lane,
            u.ready,
            u.start,
            u.end,
            u.cpu,
            u.minor_faults,
            u.voluntary_switches,
            u.involuntary_switches,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(id: usize, name: &str, cpu: f64, after: &[usize]) -> Unit {
        Unit {
            id,
            kind: Kind::Scenario,
            name: name.into(),
            after: after.to_vec(),
            lane: 0,
            ready: 0.0,
            start: 0.0,
            end: cpu,
            cpu,
            minor_faults: 0,
            voluntary_switches: 0,
            involuntary_switches: 0,
        }
    }

    /// A chain a (2) -> b (3), and c (4) and d (1) after a.
    fn log() -> WorkLog {
        WorkLog {
            units: vec![
                unit(0, "a", 2.0, &[]),
                unit(1, "b", 3.0, &[0]),
                unit(2, "c", 4.0, &[0]),
                unit(3, "d", 1.0, &[0]),
            ],
            jobs: 2,
            wall: 10.0,
            cores: 2,
        }
    }

    #[test]
    fn the_critical_path_is_the_longest_chain() {
        let (length, path) = log().critical_path();
        assert_eq!(length, 6.0);
        assert_eq!(path, vec![0, 2]);
    }

    #[test]
    fn the_model_schedules_the_longest_path_first() {
        let log = log();
        assert_eq!(log.modelled_wall(1), 10.0);
        // a; then c and b side by side, d after b.
        assert_eq!(log.modelled_wall(2), 6.0);
        assert_eq!(log.modelled_wall(3), 6.0);
        assert_eq!(log.modelled_wall(64), 6.0);
        assert_eq!(WorkLog::default().modelled_wall(4), 0.0);
    }

    /// A unit that kept `cores` cores busy: `cpu` seconds of CPU in `cpu / cores` of wall.
    fn spread(id: usize, name: &str, cpu: f64, cores: f64, after: &[usize]) -> Unit {
        let mut u = unit(id, name, cpu, after);
        u.kind = Kind::Compile;
        u.end = cpu / cores;
        u
    }

    #[test]
    fn a_unit_on_several_cores_counts_its_wall_time_on_the_path() {
        // A compile of 4 s of CPU in 2 s of wall, then b (3) and c (1).
        let log = WorkLog {
            units: vec![
                spread(0, "compile", 4.0, 2.0, &[]),
                unit(1, "b", 3.0, &[0]),
                unit(2, "c", 1.0, &[0]),
            ],
            jobs: 2,
            wall: 5.0,
            cores: 2,
        };
        assert_eq!(log.critical_path(), (5.0, vec![0, 1]));
        assert_eq!(log.modelled_wall(1), 8.0);
        assert_eq!(log.modelled_wall(2), 5.0);
        // No faster than it ran here on more cores.
        assert_eq!(log.modelled_wall(64), 5.0);
        // One job on this 2-core machine: the compile still has both cores, b and c one
        // after the other.
        let one_job = WorkLog { jobs: 1, ..log };
        assert_eq!(one_job.modelled_run(), 6.0);
        assert_eq!(one_job.modelled_wall(1), 8.0);
    }

    #[test]
    fn a_unit_on_several_cores_takes_the_cores_that_are_free() {
        // x (1) -> y (10) and a compile (4 s of CPU on 2 cores) -> b (9): both paths 11 s,
        // x first (the earlier unit).
        let log = WorkLog {
            units: vec![
                unit(0, "x", 1.0, &[]),
                unit(1, "y", 10.0, &[0]),
                spread(2, "compile", 4.0, 2.0, &[]),
                unit(3, "b", 9.0, &[2]),
            ],
            jobs: 2,
            wall: 13.0,
            cores: 2,
        };
        assert_eq!(log.critical_path().0, 11.0);
        assert_eq!(log.modelled_wall(1), 24.0);
        // x takes a core, the compile the other one alone (4 s); y from 1 s, b from 4 s.
        assert_eq!(log.modelled_wall(2), 13.0);
        // x on one core, the compile on two (2 s): y ends at 11 s, b at 11 s.
        assert_eq!(log.modelled_wall(3), 11.0);
    }

    #[test]
    fn one_thread_units_whose_clocks_disagree_take_one_core() {
        let mut log = log();
        // CPU time a little over wall time: still one core, charged its CPU time.
        for u in &mut log.units {
            u.end = u.cpu / 1.2;
        }
        assert_eq!(log.critical_path().0, 6.0);
        assert_eq!(log.modelled_wall(2), 6.0);
        assert_eq!(log.modelled_wall(1), 10.0);
    }

    #[test]
    fn fill_runs_are_named_once_on_the_path() {
        let mut log = log();
        log.units[0].name = "fill btree to 100,000 rows".into();
        log.units[2].name = "fill btree to 200,000 rows".into();
        let (_, path) = log.critical_path();
        assert_eq!(path_text(&log, &path), "fill btree ×2 (6.00 s)");
        let text = section(&log);
        assert!(
            text.contains("Critical path (6.00 s): fill btree ×2 (6.00 s)."),
            "{text}"
        );
        assert!(text.contains("| 64    |"), "{text}");
    }

    #[test]
    fn the_csv_quotes_names() {
        let mut log = log();
        log.units[1].name = "say \"hi\"".into();
        let text = csv(&log);
        assert!(text.contains(",\"say \"\"hi\"\"\",0,"), "{text}");
        assert_eq!(text.lines().count(), 5);
    }
}
