//! The decision table: for each workload, the cheapest store (and SQLite mode) in a run's
//! own records, and how many times cheaper it is than the best other store. Generated from
//! the numbers, never written by hand; scaling opens its report with it and seed003 ends
//! with a short version.

use crate::report::format::thousands;
use crate::report::{Align, CacheState, Report, ScenarioResult, Status, Table};
use crate::stores;
use crate::suites::grid::{in_view, table_of};

/// A workload of the table: which records measure it and what one costs.
pub struct Workload {
    pub name: &'static str,
    /// Whether a record (at the table's size) measures this workload.
    pub pick: fn(&ScenarioResult) -> bool,
    /// The cost compared: lower is better.
    pub cost: fn(&ScenarioResult) -> u64,
    /// What the cost counts, for the table.
    pub unit: &'static str,
}

fn insert(r: &ScenarioResult, position: &str, batch: u64) -> bool {
    r.operation == "insert" && r.position == position && r.batch == batch
}

fn charged(r: &ScenarioResult) -> u64 {
    r.instructions
}

/// The message workloads every users suite measures, by the instructions the message is
/// charged (what cycles are paid for; queries are charged the same way when replicated).
pub const MESSAGE_WORKLOADS: [Workload; 6] = [
    Workload {
        name: "single-row writes",
        pick: |r| insert(r, "middle", 1),
        cost: charged,
        unit: "instructions per message",
    },
    Workload {
        name: "batched sequential writes (1,000 rows)",
        pick: |r| insert(r, "middle", 1_000),
        cost: charged,
        unit: "instructions per message",
    },
    Workload {
        name: "random writes (1 row)",
        pick: |r| insert(r, "random", 1),
        cost: charged,
        unit: "instructions per message",
    },
    Workload {
        name: "point reads (1 key)",
        pick: |r| r.operation == "point_lookup" && r.position == "random" && r.batch == 1,
        cost: charged,
        unit: "instructions per query",
    },
    Workload {
        name: "batched reads (100 keys)",
        pick: |r| r.operation == "point_lookup" && r.position == "random" && r.batch == 100,
        cost: charged,
        unit: "instructions per query",
    },
    Workload {
        name: "scans (1,000 rows)",
        pick: |r| r.operation == "range_scan" && r.batch == 1_000,
        cost: charged,
        unit: "instructions per query",
    },
];

/// One line of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub workload: &'static str,
    pub unit: &'static str,
    /// (label, cost) of the cheapest store.
    pub best: (String, u64),
    /// The cheapest store of another kind (else the next mode of the same kind), if any.
    pub next: Option<(String, u64)>,
    /// (label, replica error code or empty) of the stores whose record failed: they do not
    /// compete.
    pub failed: Vec<(String, String)>,
}

impl Decision {
    /// The workload as the tables name it, with the stores that failed it.
    pub fn workload_cell(&self) -> String {
        if self.failed.is_empty() {
            return self.workload.to_string();
        }
        let failed: Vec<String> = self
            .failed
            .iter()
            .map(|(label, code)| format!("{label} {}", fails(code)))
            .collect();
        format!("{}; {}", self.workload, failed.join(", "))
    }

    /// How many times cheaper the best is than the next.
    pub fn ratio(&self) -> Option<f64> {
        self.next
            .as_ref()
            .map(|(_, next)| *next as f64 / self.best.1.max(1) as f64)
    }
}

/// The decision for `workload` among the (cold) records at `rows_before`; `None` without an
/// ok record. Ties go to the store named first in the report.
pub fn decide(report: &Report, workload: &Workload, rows_before: u64) -> Option<Decision> {
    decide_in(report, workload, rows_before, CacheState::Cold)
}

/// [`decide`] among the records of the page cache in `state` (warm: the warm records, and
/// the records of the stores without a page cache, whose one state they are).
pub fn decide_in(
    report: &Report,
    workload: &Workload,
    rows_before: u64,
    state: CacheState,
) -> Option<Decision> {
    let mut candidates: Vec<(&ScenarioResult, u64)> = Vec::new();
    let mut failed: Vec<(String, String)> = Vec::new();
    for r in report.results.iter().filter(|r| in_view(report, r, state)) {
        if let (true, Status::Failed(reason)) = (
            r.rows_before == rows_before && (workload.pick)(r),
            &r.status,
        ) {
            let entry = (stores::label(&r.store, &r.journal_mode), error_code(reason));
            if !failed.contains(&entry) {
                failed.push(entry);
            }
        }
        if r.rows_before == rows_before && r.status == Status::Ok && (workload.pick)(r) {
            // One candidate per store and mode (the first record of it).
            if !candidates
                .iter()
                .any(|(c, _)| c.store == r.store && c.journal_mode == r.journal_mode)
            {
                candidates.push((r, (workload.cost)(r)));
            }
        }
    }
    // Stable: equal costs keep report order.
    candidates.sort_by_key(|&(_, cost)| cost);
    let (best, best_cost) = *candidates.first()?;
    let next = candidates
        .iter()
        .skip(1)
        .find(|(r, _)| r.store != best.store)
        .or_else(|| candidates.get(1))
        .map(|(r, cost)| (stores::label(&r.store, &r.journal_mode), *cost));
    Some(Decision {
        workload: workload.name,
        unit: workload.unit,
        best: (stores::label(&best.store, &best.journal_mode), best_cost),
        next,
        failed,
    })
}

/// The replica's error code of a failure reason (`IC0539: ...`), else empty.
pub fn error_code(reason: &str) -> String {
    match reason.split_once(':') {
        Some((code, _)) if code.starts_with("IC") => code.to_string(),
        _ => String::new(),
    }
}

/// `fails (IC0539)`, or `fails` without a replica error code.
pub fn fails(code: &str) -> String {
    match code {
        "" => "fails".into(),
        code => format!("fails ({code})"),
    }
}

/// The full table: workload, cheapest store and its cost, the next store and its cost, and
/// the ratio.
pub fn table(decisions: &[Decision]) -> Table {
    use Align::{Left, Right};
    let mut t = table_of(&[
        ("Workload", Left),
        ("Cheapest", Left),
        ("Its cost", Right),
        ("Next best store", Left),
        ("Its cost", Right),
        ("Times cheaper", Right),
    ]);
    for d in decisions {
        let (next, next_cost) = d
            .next
            .as_ref()
            .map_or(("-".to_string(), "-".to_string()), |(l, c)| {
                (l.clone(), format!("{} {}", thousands(*c), d.unit))
            });
        t.push(vec![
            d.workload_cell(),
            d.best.0.clone(),
            format!("{} {}", thousands(d.best.1), d.unit),
            next,
            next_cost,
            d.ratio().map_or("-".into(), times),
        ]);
    }
    t
}

/// The short table: workload, cheapest store, how many times cheaper than which.
pub fn short_table(decisions: &[Decision]) -> Table {
    let mut t = table_of(&[
        ("Workload", Align::Left),
        ("Cheapest", Align::Left),
        ("Than the next best store", Align::Left),
    ]);
    for d in decisions {
        t.push(vec![
            d.workload_cell(),
            d.best.0.clone(),
            match (&d.next, d.ratio()) {
                (Some((label, _)), Some(x)) => format!("{} cheaper than {label}", times(x)),
                _ => "-".into(),
            },
        ]);
    }
    t
}

/// The short table of both states of the page cache, a live canister's (warm) first and a
/// newly opened connection's (cold) beside it: per workload, its warm and cold decisions.
pub fn short_table_beside(decisions: &[(Option<Decision>, Option<Decision>)]) -> Table {
    let mut t = table_of(&[
        ("Workload", Align::Left),
        ("Cheapest, warm", Align::Left),
        ("Than the next best store", Align::Left),
        ("Cheapest, cold", Align::Left),
        ("Than the next best store", Align::Left),
    ]);
    let cells = |d: &Option<Decision>| match d {
        None => ["-".to_string(), "-".to_string()],
        Some(d) => [
            d.best.0.clone(),
            match (&d.next, d.ratio()) {
                (Some((label, _)), Some(x)) => format!("{} cheaper than {label}", times(x)),
                _ => "-".into(),
            },
        ],
    };
    for (warm, cold) in decisions {
        let Some(named) = warm.as_ref().or(cold.as_ref()) else {
            continue;
        };
        let mut failed = named.failed.clone();
        for f in warm.iter().chain(cold).flat_map(|d| &d.failed) {
            if !failed.contains(f) {
                failed.push(f.clone());
            }
        }
        let workload = Decision {
            failed,
            ..named.clone()
        }
        .workload_cell();
        let mut row = vec![workload];
        row.extend(cells(warm));
        row.extend(cells(cold));
        t.push(row);
    }
    t
}

/// `2.35x`, `12.4x`: two decimals where they matter.
fn times(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.2}x")
    } else {
        format!("{x:.1}x")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ScenarioResult;

    fn record(store: &str, mode: &str, instructions: u64) -> ScenarioResult {
        ScenarioResult {
            store: store.into(),
            journal_mode: mode.into(),
            operation: "insert".into(),
            position: "middle".into(),
            batch: 1,
            rows_before: 1_000,
            instructions,
            ..ScenarioResult::default()
        }
    }

    fn report(results: Vec<ScenarioResult>) -> Report {
        Report {
            wall_seconds: 0.0,
            ..crate::report::fixture::report(results)
        }
    }

    #[test]
    fn the_next_best_is_another_store_when_there_is_one() {
        let r = report(vec![
            record("btree", "", 50_000),
            record("sqlite", "WAL", 300_000),
            record("sqlite", "OFF", 20_000),
            record("sqlite", "MEMORY", 25_000),
        ]);
        let d = decide(&r, &MESSAGE_WORKLOADS[0], 1_000).unwrap();
        assert_eq!(d.best, ("SQLite OFF".to_string(), 20_000));
        assert_eq!(d.next, Some(("StableBTreeMap".to_string(), 50_000)));
        assert_eq!(d.ratio(), Some(2.5));
        // Only SQLite: the next mode.
        let only = report(vec![
            record("sqlite", "WAL", 30_000),
            record("sqlite", "OFF", 20_000),
        ]);
        let d = decide(&only, &MESSAGE_WORKLOADS[0], 1_000).unwrap();
        assert_eq!(d.next, Some(("SQLite WAL".to_string(), 30_000)));
    }

    #[test]
    fn failed_records_and_other_sizes_do_not_compete() {
        let mut failed = record("btree", "", 1);
        failed.status = Status::Failed("trap".into());
        let mut other_size = record("heap", "", 2);
        other_size.rows_before = 10;
        let r = report(vec![failed, other_size, record("sqlite", "OFF", 20_000)]);
        let d = decide(&r, &MESSAGE_WORKLOADS[0], 1_000).unwrap();
        assert_eq!(d.best.0, "SQLite OFF");
        assert_eq!(d.next, None);
        assert!(decide(&r, &MESSAGE_WORKLOADS[3], 1_000).is_none());
        let short = short_table(&[d]).render();
        assert!(
            short.contains("| single-row writes; StableBTreeMap fails | SQLite OFF"),
            "{short}"
        );
    }

    #[test]
    fn a_store_that_fails_is_named_with_its_replica_error_code() {
        let mut failed = record("heap", "", 1);
        failed.status = Status::Failed(
            "IC0539: Canister exceeded its current Wasm memory limit of 3221225472 bytes".into(),
        );
        let r = report(vec![
            failed,
            record("btree", "", 50_000),
            record("sqlite", "OFF", 60_000),
        ]);
        let d = decide(&r, &MESSAGE_WORKLOADS[0], 1_000).unwrap();
        assert_eq!(d.best, ("StableBTreeMap".to_string(), 50_000));
        assert_eq!(
            d.failed,
            vec![("heap BTreeMap".to_string(), "IC0539".to_string())]
        );
        let full = table(&[d]).render();
        assert!(
            full.contains("| single-row writes; heap BTreeMap fails (IC0539) | StableBTreeMap"),
            "{full}"
        );
    }
}
