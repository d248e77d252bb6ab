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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
#[derive(Clone, Debug, PartialEq)]
pub struct Unit {
    /// Its place in the log: units are numbered as they start, so every unit it waited
    /// for has a smaller id.
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
}

/// The core counts the model predicts the wall time for.
pub const MODEL_CORES: [usize; 6] = [1, 2, 4, 8, 16, 64];

impl WorkLog {
    pub fn total_cpu(&self) -> f64 {
        self.units.iter().map(|u| u.cpu).sum()
    }

    /// What the model charges a unit: its CPU time.
    fn cost(u: &Unit) -> f64 {
        u.cpu.max(0.0)
    }

    /// The longest chain of units each waiting for the one before, by the units' costs:
    /// its length and its units in order. No wall time on any number of cores is shorter.
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
    /// every unit it waited for is done; a free core takes the ready unit with the longest
    /// path still ahead of it (ties: the earlier unit).
    pub fn modelled_wall(&self, cores: usize) -> f64 {
        let n = self.units.len();
        if n == 0 {
            return 0.0;
        }
        let cores = cores.max(1);
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
        let mut running: std::collections::BinaryHeap<std::cmp::Reverse<(Ordered, usize)>> =
            Default::default();
        let mut now = 0.0f64;
        let mut done = 0;
        while done < n {
            while running.len() < cores {
                let Some((_, std::cmp::Reverse(i))) = ready.pop() else {
                    break;
                };
                running.push(std::cmp::Reverse((
                    Ordered(now + Self::cost(&self.units[i])),
                    i,
                )));
            }
            let Some(std::cmp::Reverse((Ordered(end), i))) = running.pop() else {
                // Nothing runs and nothing is ready: a unit waits for a later one, which
                // the log never records; stop rather than loop.
                break;
            };
            now = end;
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
        "\nThe wall time a list-scheduling model of these units predicts: each unit takes its CPU time on a core and starts when the units it waited for are done; free cores take the unit with the longest path still ahead. It leaves out contention for memory and the kernel's locks, and the CLI's own start and file writing. Measured here: {} on {} job{} (the model: {}).\n\n",
        secs(log.wall),
        log.jobs,
        if log.jobs == 1 { "" } else { "s" },
        secs(log.modelled_wall(log.jobs)),
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
