//! `icbench crosscheck`: the same small set of seed-003 scenarios on the embedded engine
//! and on PocketIC, and how far their instruction counts are apart.

use std::fmt::Write;

use crate::bench_canister::Module;
use crate::report::{Report, ScenarioResult, Status};
use crate::suites::scenario::{CacheState, JournalMode, Position, StoreKind};
use crate::suites::{seed003, users};

/// Default threshold, in percent of the PocketIC figure.
pub const DEFAULT_THRESHOLD: f64 = 1.0;

/// The fixed scenario set: 2,000 prefilled rows (the suite's minimum), batches 1, 10 and
/// 100, the default module's stores (the heap map, the B-tree map and SQLite in its DELETE
/// and OFF journal modes), every position, and the reads: 72 scenarios, a few seconds on
/// either engine.
pub fn config() -> seed003::Config {
    let default_module: Vec<StoreKind> = StoreKind::ALL
        .into_iter()
        .filter(|k| k.module() == Module::DEFAULT)
        .collect();
    seed003::Config {
        users: users::Config {
            rows: 2_000,
            stores: users::stores_of(&default_module, &[JournalMode::Delete, JournalMode::Off]),
            // Cold only: the set compares the engines' counts, which the cache's state does
            // not change how they are made.
            caches: vec![CacheState::Cold],
            ..users::Config::default()
        },
        batches: vec![1, 10, 100],
        // The default suite's positions; `sorted` reads the same ids as `random`.
        positions: Position::SEED003.to_vec(),
        ..seed003::Config::default()
    }
}

/// Which count is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// `ic0.performance_counter(0)` around the store work, reported by the canister itself:
    /// the same quantity on both engines.
    Store,
    /// The instructions the whole update message is charged. On PocketIC this is derived
    /// from the cycles balance (see `engine::pocket_ic`), so only inserts (updates) have it.
    Charged,
}

impl Metric {
    fn of(self, r: &ScenarioResult) -> u64 {
        match self {
            Metric::Store => r.store_instructions,
            Metric::Charged => r.instructions,
        }
    }
    fn applies_to(self, r: &ScenarioResult) -> bool {
        self == Metric::Store || r.operation == "insert"
    }
}

/// One scenario on both engines.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: String,
    pub embedded: Option<u64>,
    pub pocket_ic: Option<u64>,
    /// `(embedded - pocket_ic) / pocket_ic`, in percent; `None` when not comparable.
    pub deviation_percent: Option<f64>,
    /// Why the row fails the check, if it does.
    pub problem: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Crosscheck {
    pub metric: Metric,
    pub threshold: f64,
    pub rows: Vec<Row>,
}

fn key(r: &ScenarioResult) -> String {
    let mode = if r.journal_mode.is_empty() {
        "-"
    } else {
        &r.journal_mode
    };
    format!(
        "{}/{}/{}/{}/{}",
        r.store, mode, r.position, r.operation, r.batch
    )
}

/// Deviation of `embedded` from the replica's `pocket_ic`, in percent. Both zero agree; a
/// zero reference with a nonzero embedded count is an infinite deviation.
pub fn deviation_percent(embedded: u64, pocket_ic: u64) -> f64 {
    if pocket_ic == 0 {
        return if embedded == 0 { 0.0 } else { f64::INFINITY };
    }
    (embedded as f64 - pocket_ic as f64) / pocket_ic as f64 * 100.0
}

/// Matches the scenarios of both runs and checks each against `threshold` percent. A
/// scenario missing from one run, or failed on either, fails the check too.
pub fn compare(
    embedded: &Report,
    pocket_ic: &Report,
    metric: Metric,
    threshold: f64,
) -> Crosscheck {
    let mut rows = Vec::new();
    for e in &embedded.results {
        if !metric.applies_to(e) {
            continue;
        }
        let k = key(e);
        let p = pocket_ic.results.iter().find(|p| key(p) == k);
        let mut row = Row {
            key: k,
            embedded: None,
            pocket_ic: None,
            deviation_percent: None,
            problem: None,
        };
        match p {
            None => row.problem = Some("missing from the PocketIC run".into()),
            Some(p) => match (&e.status, &p.status) {
                (Status::Ok, Status::Ok) => {
                    let (a, b) = (metric.of(e), metric.of(p));
                    let d = deviation_percent(a, b);
                    row.embedded = Some(a);
                    row.pocket_ic = Some(b);
                    row.deviation_percent = Some(d);
                    if d.abs() > threshold {
                        row.problem = Some(format!("deviation over {threshold}%"));
                    }
                }
                (se, sp) => {
                    row.problem = Some(format!(
                        "not measured on both: embedded {}, pocket-ic {}",
                        status_text(se),
                        status_text(sp)
                    ))
                }
            },
        }
        rows.push(row);
    }
    for p in &pocket_ic.results {
        let k = key(p);
        if metric.applies_to(p) && !rows.iter().any(|r| r.key == k) {
            rows.push(Row {
                key: k,
                embedded: None,
                pocket_ic: None,
                deviation_percent: None,
                problem: Some("missing from the embedded run".into()),
            });
        }
    }
    Crosscheck {
        metric,
        threshold,
        rows,
    }
}

fn status_text(s: &Status) -> String {
    match s {
        Status::Ok => "ok".into(),
        Status::Refused(r) => format!("refused ({r})"),
        Status::Failed(r) => format!("failed ({r})"),
    }
}

impl Crosscheck {
    pub fn failures(&self) -> usize {
        self.rows.iter().filter(|r| r.problem.is_some()).count()
    }

    /// A table, then one summary line.
    pub fn render(&self) -> String {
        let what = match self.metric {
            Metric::Store => "store instructions (ic0.performance_counter inside the canister)",
            Metric::Charged => {
                "charged instructions per update (PocketIC: from the cycles balance)"
            }
        };
        let mut out = format!("crosscheck: {what}, threshold {}%\n", self.threshold);
        let num = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
        let width = self
            .rows
            .iter()
            .map(|r| r.key.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let _ = writeln!(
            out,
            "{:<width$}  {:>14}  {:>14}  {:>10}",
            "scenario", "embedded", "pocket-ic", "deviation"
        );
        for r in &self.rows {
            let dev = match r.deviation_percent {
                Some(d) if d.is_finite() => format!("{d:+.3}%"),
                Some(_) => "inf".into(),
                None => "-".into(),
            };
            let _ = write!(
                out,
                "{:<width$}  {:>14}  {:>14}  {:>10}",
                r.key,
                num(r.embedded),
                num(r.pocket_ic),
                dev
            );
            if let Some(p) = &r.problem {
                let _ = write!(out, "  FAIL: {p}");
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "{} scenarios, {} over the threshold or not comparable",
            self.rows.len(),
            self.failures()
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::shared::Measure;

    fn result(
        engine: &str,
        store: &str,
        op: &str,
        batch: u64,
        store_i: u64,
        charged: u64,
    ) -> ScenarioResult {
        ScenarioResult {
            suite: "seed003".into(),
            engine: engine.into(),
            store: store.into(),
            journal_mode: if store == "sqlite" {
                "DELETE".into()
            } else {
                String::new()
            },
            position: "middle".into(),
            operation: op.into(),
            batch,
            rows_before: 2_000,
            instructions: charged,
            store_instructions: store_i,
            ..ScenarioResult::default()
        }
    }

    fn report(engine: &str, results: Vec<ScenarioResult>) -> Report {
        Report {
            suite: "seed003".into(),
            engine: engine.into(),
            wall_seconds: 0.0,
            ..crate::report::fixture::report(results)
        }
    }

    /// One scenario on both engines: store, operation, batch, then (store instructions,
    /// charged instructions) on the embedded engine and on PocketIC.
    type OnBoth<'a> = (&'a str, &'a str, u64, (u64, u64), (u64, u64));

    /// The embedded and the PocketIC report of the same scenarios.
    fn both(rows: &[OnBoth]) -> (Report, Report) {
        let side = |engine: &str, pick: fn(&OnBoth) -> (u64, u64)| {
            let results = rows.iter().map(|r| {
                let (store_i, charged) = pick(r);
                result(engine, r.0, r.1, r.2, store_i, charged)
            });
            report(engine, results.collect())
        };
        (side("embedded", |r| r.3), side("pocket-ic", |r| r.4))
    }

    #[test]
    fn deviation_is_relative_to_pocket_ic() {
        assert_eq!(deviation_percent(101, 100), 1.0);
        assert_eq!(deviation_percent(99, 100), -1.0);
        assert_eq!(deviation_percent(100, 100), 0.0);
        assert_eq!(deviation_percent(0, 0), 0.0);
        assert_eq!(deviation_percent(5, 0), f64::INFINITY);
        assert_eq!(deviation_percent(0, 200), -100.0);
    }

    #[test]
    fn store_metric_flags_exactly_the_rows_over_the_threshold() {
        let (e, p) = both(&[
            ("btree", "insert", 1, (10_100, 7), (10_000, 999)),
            ("sqlite", "insert", 1, (10_101, 7), (10_000, 999)),
            ("btree", "range_scan", 1000, (5_000, 0), (5_000, 0)),
        ]);
        let c = compare(&e, &p, Metric::Store, 1.0);
        assert_eq!(c.rows.len(), 3);
        // +1.00% is at the threshold: not over it. +1.01% is.
        assert_eq!(c.rows[0].key, "btree/-/middle/insert/1");
        assert_eq!(c.rows[0].deviation_percent, Some(1.0));
        assert_eq!(c.rows[0].problem, None);
        assert_eq!(c.rows[1].key, "sqlite/DELETE/middle/insert/1");
        assert!((c.rows[1].deviation_percent.unwrap() - 1.01).abs() < 1e-9);
        assert!(c.rows[1].problem.is_some());
        assert_eq!(c.rows[2].deviation_percent, Some(0.0));
        assert_eq!(c.failures(), 1);
        let text = c.render();
        assert!(text.contains("sqlite/DELETE/middle/insert/1"), "{text}");
        assert!(text.contains("+1.010%") && text.contains("FAIL"), "{text}");
        assert!(text.contains("3 scenarios, 1 over the threshold"), "{text}");
        // A looser threshold passes them all.
        assert_eq!(compare(&e, &p, Metric::Store, 1.5).failures(), 0);
    }

    #[test]
    fn charged_metric_compares_inserts_only() {
        let (e, p) = both(&[
            ("btree", "insert", 10, (1, 200), (1, 250)),
            ("btree", "point_lookup", 1, (1, 50), (1, 0)),
        ]);
        let c = compare(&e, &p, Metric::Charged, 1.0);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].embedded, Some(200));
        assert_eq!(c.rows[0].pocket_ic, Some(250));
        assert_eq!(c.rows[0].deviation_percent, Some(-20.0));
        assert_eq!(c.failures(), 1);
    }

    #[test]
    fn missing_or_failed_scenarios_fail_the_check() {
        let mut failed = result("pocket-ic", "btree", "insert", 1, 0, 0);
        failed.status = Status::Failed("IC0503: trapped".into());
        let e = report(
            "embedded",
            vec![
                result("embedded", "btree", "insert", 1, 100, 0),
                result("embedded", "btree", "insert", 10, 100, 0),
            ],
        );
        let p = report(
            "pocket-ic",
            vec![failed, result("pocket-ic", "sqlite", "insert", 1, 100, 0)],
        );
        let c = compare(&e, &p, Metric::Store, 1.0);
        assert_eq!(c.rows.len(), 3);
        assert!(c.rows[0]
            .problem
            .as_ref()
            .unwrap()
            .contains("failed (IC0503: trapped)"));
        assert_eq!(
            c.rows[1].problem.as_deref(),
            Some("missing from the PocketIC run")
        );
        assert_eq!(c.rows[2].key, "sqlite/DELETE/middle/insert/1");
        assert_eq!(
            c.rows[2].problem.as_deref(),
            Some("missing from the embedded run")
        );
        assert_eq!(c.failures(), 3);
    }

    #[test]
    fn the_fixed_set_is_valid_and_small() {
        let cfg = config();
        cfg.validate().unwrap();
        // 3 positions x 4 stores x (3 batches + 3 reads).
        assert_eq!(cfg.matrix().len(), 3 * 4 * (3 + 3));
    }
}
