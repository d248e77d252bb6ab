//! Two runs side by side: which scenarios got more or less expensive beyond the noise.
//! Matching ignores the engine, so an embedded run can be checked against PocketIC.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::format::{pct_change, thousands};
use super::table::{Align, Table};
use super::{Report, ScenarioResult, Status};

/// How a scenario moved between the base run and the new run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// A metric grew by at least the noise threshold.
    Regression,
    /// A metric shrank by at least the noise threshold, and none grew.
    Improvement,
    /// Both metrics moved less than the noise threshold (or neither run has numbers).
    Unchanged,
    /// Only in the new run.
    New,
    /// Only in the base run.
    Missing,
    /// Ok / refused / failed changed; worse (ok → refused → failed) counts as a regression.
    StatusChanged { worse: bool },
}

impl Change {
    fn label(self) -> &'static str {
        match self {
            Change::Regression => "regression",
            Change::Improvement => "improvement",
            Change::Unchanged => "unchanged",
            Change::New => "new",
            Change::Missing => "missing",
            Change::StatusChanged { worse: true } => "status worse",
            Change::StatusChanged { worse: false } => "status better",
        }
    }

    pub fn is_regression(self) -> bool {
        matches!(
            self,
            Change::Regression | Change::StatusChanged { worse: true }
        )
    }
}

/// One scenario of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct ComparisonEntry {
    /// `suite/store/journal_mode/position/operation/batch`.
    pub key: String,
    pub change: Change,
    pub base: Option<ScenarioResult>,
    pub new: Option<ScenarioResult>,
    /// % change of the charged `instructions`, when both runs have a number.
    pub instructions_pct: Option<f64>,
    /// % change of `store_instructions`, when both runs have a number.
    pub store_instructions_pct: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub noise_pct: f64,
    pub base_engine: String,
    pub new_engine: String,
    /// In report order (position, operation, batch, store).
    pub entries: Vec<ComparisonEntry>,
}

/// What identifies a scenario across runs; the engine is left out on purpose.
type Key = (String, String, String, String, String, u64);

fn key(r: &ScenarioResult) -> Key {
    (
        r.suite.clone(),
        r.store.clone(),
        r.journal_mode.clone(),
        r.position.clone(),
        r.operation.clone(),
        r.batch,
    )
}

/// Distinct values in order of first appearance.
fn first_seen<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn key_text(k: &Key) -> String {
    let mode = if k.2.is_empty() { "-" } else { k.2.as_str() };
    format!("{}/{}/{}/{}/{}/{}", k.0, k.1, mode, k.3, k.4, k.5)
}

/// Compares `new` against `base`. A change counts when |Δ%| ≥ `noise_pct` (canbench's rule:
/// unchanged only strictly inside the noise band); 2.0 is the usual threshold.
pub fn compare(base: &Report, new: &Report, noise_pct: f64) -> Comparison {
    let index = |report: &Report| {
        let mut map: HashMap<Key, ScenarioResult> = HashMap::new();
        let mut order = Vec::new();
        for r in &report.results {
            // A repeated scenario keeps its first result.
            if let Entry::Vacant(slot) = map.entry(key(r)) {
                order.push(slot.key().clone());
                slot.insert(r.clone());
            }
        }
        (map, order)
    };
    let (base_map, base_order) = index(base);
    let (mut new_map, new_order) = index(new);
    let mut keys = base_order;
    keys.extend(new_order.into_iter().filter(|k| !base_map.contains_key(k)));
    // Report order without knowing any suite: each dimension ranks by where its value first
    // appears (base, then new), so a suite's own order of positions, operations and stores
    // carries over; batches rank by size.
    let suites = first_seen(keys.iter().map(|k| k.0.clone()));
    let positions = first_seen(keys.iter().map(|k| k.3.clone()));
    let operations = first_seen(keys.iter().map(|k| k.4.clone()));
    let stores = first_seen(keys.iter().map(|k| (k.1.clone(), k.2.clone())));
    keys.sort_by_cached_key(|k| {
        (
            suites.iter().position(|v| *v == k.0),
            positions.iter().position(|v| *v == k.3),
            operations.iter().position(|v| *v == k.4),
            k.5,
            stores.iter().position(|(s, m)| *s == k.1 && *m == k.2),
        )
    });

    let entries = keys
        .into_iter()
        .map(|k| {
            let base = base_map.get(&k).cloned();
            let new = new_map.remove(&k);
            entry(key_text(&k), base, new, noise_pct)
        })
        .collect();
    Comparison {
        noise_pct,
        base_engine: base.engine.clone(),
        new_engine: new.engine.clone(),
        entries,
    }
}

fn entry(
    key: String,
    base: Option<ScenarioResult>,
    new: Option<ScenarioResult>,
    noise_pct: f64,
) -> ComparisonEntry {
    let (mut instructions_pct, mut store_instructions_pct) = (None, None);
    let change = match (&base, &new) {
        (None, None) => unreachable!("every key comes from one of the runs"),
        (None, Some(_)) => Change::New,
        (Some(_), None) => Change::Missing,
        (Some(b), Some(n)) if severity(&b.status) != severity(&n.status) => Change::StatusChanged {
            worse: severity(&n.status) > severity(&b.status),
        },
        (Some(b), Some(n)) if b.status != Status::Ok => {
            let _ = n; // both refused or both failed: nothing to measure
            Change::Unchanged
        }
        (Some(b), Some(n)) => {
            let deltas = [
                pct(b.instructions, n.instructions),
                pct(b.store_instructions, n.store_instructions),
            ];
            instructions_pct = Some(deltas[0]);
            store_instructions_pct = Some(deltas[1]);
            if deltas.iter().any(|&d| d >= noise_pct) {
                Change::Regression
            } else if deltas.iter().any(|&d| d <= -noise_pct) {
                Change::Improvement
            } else {
                Change::Unchanged
            }
        }
    };
    ComparisonEntry {
        key,
        change,
        base,
        new,
        instructions_pct,
        store_instructions_pct,
    }
}

/// ok < refused < failed: losing a number is worse than being refused by design.
fn severity(status: &Status) -> u8 {
    match status {
        Status::Ok => 0,
        Status::Refused(_) => 1,
        Status::Failed(_) => 2,
    }
}

/// % change from `base` to `new`; +inf when a zero base grew.
fn pct(base: u64, new: u64) -> f64 {
    if base == new {
        0.0
    } else if base == 0 {
        f64::INFINITY
    } else {
        (new as f64 - base as f64) * 100.0 / base as f64
    }
}

impl Comparison {
    pub fn has_regressions(&self) -> bool {
        self.entries.iter().any(|e| e.change.is_regression())
    }

    /// Entries whose change is `change`.
    pub fn count(&self, change: Change) -> usize {
        self.entries.iter().filter(|e| e.change == change).count()
    }

    /// A table of every scenario that changed (regressions first) and a summary line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if self.base_engine != self.new_engine {
            out.push_str(&format!(
                "Comparing engine `{}` (base) with `{}` (new).\n\n",
                self.base_engine, self.new_engine
            ));
        }
        let mut changed: Vec<&ComparisonEntry> = self
            .entries
            .iter()
            .filter(|e| e.change != Change::Unchanged)
            .collect();
        // Stable sort: within a class, report order is kept.
        changed.sort_by_key(|e| match e.change {
            c if c.is_regression() => 0,
            Change::StatusChanged { .. } => 1,
            Change::Improvement => 2,
            Change::New => 3,
            _ => 4,
        });
        if changed.is_empty() {
            out.push_str(&format!(
                "No scenario changed by {}% or more.\n",
                self.noise_pct
            ));
        } else {
            let headers = [
                "scenario",
                "change",
                "instr. base",
                "instr. new",
                "instr. Δ",
                "store base",
                "store new",
                "store Δ",
            ];
            let mut aligns = vec![Align::Left, Align::Left];
            aligns.extend([Align::Right; 6]);
            let mut table =
                Table::with_aligns(headers.iter().map(|h| h.to_string()).collect(), aligns);
            for e in changed {
                let value = |r: &Option<ScenarioResult>, f: fn(&ScenarioResult) -> u64| match r {
                    None => "-".to_string(),
                    Some(r) if r.status != Status::Ok => status_word(&r.status).to_string(),
                    Some(r) => thousands(f(r)),
                };
                let delta = |d: Option<f64>| d.map(pct_change).unwrap_or_else(|| "-".to_string());
                table.push(vec![
                    e.key.clone(),
                    e.change.label().to_string(),
                    value(&e.base, |r| r.instructions),
                    value(&e.new, |r| r.instructions),
                    delta(e.instructions_pct),
                    value(&e.base, |r| r.store_instructions),
                    value(&e.new, |r| r.store_instructions),
                    delta(e.store_instructions_pct),
                ]);
            }
            out.push_str(&table.render());
            out.push('\n');
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    /// `12 scenarios: 1 regression, 0 improvements, ... (noise ±2%)`.
    pub fn summary(&self) -> String {
        let worse = self.count(Change::StatusChanged { worse: true });
        let better = self.count(Change::StatusChanged { worse: false });
        let regressions = self.count(Change::Regression) + worse;
        format!(
            "{} scenarios: {} regression(s), {} improvement(s), {} unchanged, {} new, {} missing, {} status change(s) ({} worse); noise ±{}%",
            self.entries.len(),
            regressions,
            self.count(Change::Improvement),
            self.count(Change::Unchanged),
            self.count(Change::New),
            self.count(Change::Missing),
            worse + better,
            worse,
            self.noise_pct
        )
    }
}

fn status_word(status: &Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Refused(_) => "refused",
        Status::Failed(_) => "failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pct_handles_zero_base() {
        assert_eq!(pct(100, 105), 5.0);
        assert_eq!(pct(0, 0), 0.0);
        assert_eq!(pct(0, 1), f64::INFINITY);
    }

    #[test]
    fn exactly_the_noise_counts_as_a_change() {
        let mut b = super::super::fixture::result("btree", "", "middle", "insert", 1, 1_000);
        b.instructions = 1_000;
        let mut n = b.clone();
        n.instructions = 1_020;
        assert_eq!(
            entry("k".into(), Some(b), Some(n), 2.0).change,
            Change::Regression
        );
    }
}
