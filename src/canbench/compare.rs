//! New results against old ones: one entry per bench total and per scope, canbench's
//! noise-threshold classification, the CSV file and the pull-request comment.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::results::{BenchResult, Measurement, Results};
use crate::engine::PageCounts;
use crate::report::comment::{self, count, Comment, Section};
use crate::report::compare::ratio;
use crate::report::format::{multiplier, pct_change, signed_thousands, thousands};

/// A metric's current and previous value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Values {
    pub curr: Option<u64>,
    pub prev: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    New,
    Improved,
    Regressed,
    Unchanged,
}

impl Values {
    pub fn new(curr: Option<u64>, prev: Option<u64>) -> Self {
        Values { curr, prev }
    }

    pub fn abs_delta(&self) -> Option<i64> {
        Some(self.curr? as i64 - self.prev? as i64)
    }

    /// Percent change; from 0 it is ±infinity (0 when both are 0).
    pub fn percent_diff(&self) -> Option<f64> {
        let delta = self.abs_delta()?;
        let prev = self.prev?;
        Some(if prev == 0 {
            match delta {
                d if d < 0 => f64::NEG_INFINITY,
                d if d > 0 => f64::INFINITY,
                _ => 0.0,
            }
        } else {
            delta as f64 / prev as f64 * 100.0
        })
    }

    /// A change strictly below the threshold (in percent) is noise.
    pub fn status(&self, noise_threshold: f64) -> Change {
        match (self.curr, self.prev) {
            (Some(_), None) => Change::New,
            (Some(_), Some(_)) => match self.percent_diff() {
                Some(p) if p.abs() < noise_threshold => Change::Unchanged,
                Some(p) if p < 0.0 => Change::Improved,
                Some(_) => Change::Regressed,
                None => Change::Unchanged,
            },
            // A removed bench is not tracked.
            _ => Change::Unchanged,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// `new` when the bench (total rows) or the scope has no previous result, else empty.
    pub status: String,
    pub bench: String,
    pub scope: Option<String>,
    pub calls: Values,
    pub instructions: Values,
    pub heap_increase: Values,
    pub stable_memory_increase: Values,
    /// This run's Wasm pages and what the vintage charged for them: on a total row the
    /// bench's query's, on a scope row those first touched in the query while the scope
    /// was open (see [`BenchPages`]); the results file keeps no pages.
    pub pages: Option<PageCounts>,
}

/// The Wasm pages of one bench's run: those its query accessed and wrote, and for each
/// scope those first touched in the query while the scope was open (summed over the
/// scope's calls as canbench-rs sums its instructions: over the union of its intervals,
/// so a scope nested in one of the same name counts its pages once). Each with what the
/// vintage charged for them. A scope is missing where its pages could not be attributed.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BenchPages {
    pub total: Option<PageCounts>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, PageCounts>,
}

impl Entry {
    pub fn full_name(&self) -> String {
        match &self.scope {
            Some(s) => format!("{}::{s}", self.bench),
            None => self.bench.clone(),
        }
    }

    pub fn metrics(&self) -> [&Values; 3] {
        [
            &self.instructions,
            &self.heap_increase,
            &self.stable_memory_increase,
        ]
    }
}

fn entry(bench: &str, scope: Option<&str>, new: &Measurement, old: Option<&Measurement>) -> Entry {
    let v = |f: fn(&Measurement) -> u64| Values::new(Some(f(new)), old.map(f));
    Entry {
        status: if old.is_none() { "new" } else { "" }.to_string(),
        bench: bench.to_string(),
        scope: scope.map(str::to_string),
        calls: v(|m| m.calls),
        instructions: v(|m| m.instructions),
        heap_increase: v(|m| m.heap_increase),
        stable_memory_increase: v(|m| m.stable_memory_increase),
        pages: None,
    }
}

/// Gives each row its pages, from `pages` by bench name: a total row the bench's query's,
/// a scope row the scope's.
pub fn set_pages(entries: &mut [Entry], pages: &BTreeMap<String, BenchPages>) {
    for e in entries.iter_mut() {
        let bench = pages.get(&e.bench);
        e.pages = match &e.scope {
            None => bench.and_then(|b| b.total),
            Some(s) => bench.and_then(|b| b.scopes.get(s).copied()),
        };
    }
}

/// Benches sorted by name, each total followed by its scopes (sorted).
pub fn entries(new: &Results, old: &Results) -> Vec<Entry> {
    let mut out = Vec::new();
    for (name, bench) in new {
        let old_bench: Option<&BenchResult> = old.get(name);
        out.push(entry(name, None, &bench.total, old_bench.map(|b| &b.total)));
        for (scope, m) in &bench.scopes {
            out.push(entry(
                name,
                Some(scope),
                m,
                old_bench.and_then(|b| b.scopes.get(scope)),
            ));
        }
    }
    out
}

/// What fails a run besides a failed bench (exit status 1). canbench itself never fails on a
/// regression, so by default nothing here does.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Gate {
    /// Any bench or scope whose metric regressed beyond the noise threshold fails.
    pub on_regression: bool,
    /// A ceiling on a bench's instructions multiplier (new ÷ base), strictly above fails.
    pub max_ratio: Option<f64>,
}

impl Gate {
    /// Why the gate fails, one line per failure; empty when it passes.
    pub fn failures(&self, entries: &[Entry], t: f64) -> Vec<String> {
        let mut out = Vec::new();
        for e in entries {
            if self.on_regression && class(e, t) == Class::Regressed {
                out.push(format!(
                    "{}: regressed ({})",
                    e.full_name(),
                    moved_metrics(e, t).join(", ")
                ));
            }
            if let (Some(max), None, Some(x)) = (self.max_ratio, &e.scope, instructions_ratio(e)) {
                if x > max {
                    out.push(format!("{}: {x:.2}x > {max}x instructions", e.full_name()));
                }
            }
        }
        out
    }

    fn describe(&self, t: f64) -> String {
        let mut parts = Vec::new();
        if self.on_regression {
            parts.push(format!("no regression of {t}% or more"));
        }
        if let Some(m) = self.max_ratio {
            parts.push(format!("no benchmark above {m}x its base instructions"));
        }
        parts.push("no failed benchmark".into());
        parts.join(", ")
    }
}

/// How one row (a bench total or a scope) moved, all metrics together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    New,
    /// Some metric regressed (another may have improved: canbench's `+/-`).
    Regressed,
    Improved,
    Unchanged,
}

fn class(e: &Entry, t: f64) -> Class {
    let statuses: Vec<Change> = e.metrics().iter().map(|v| v.status(t)).collect();
    if e.instructions.prev.is_none() {
        Class::New
    } else if statuses.contains(&Change::Regressed) {
        Class::Regressed
    } else if statuses.contains(&Change::Improved) {
        Class::Improved
    } else {
        Class::Unchanged
    }
}

const METRIC_NAMES: [&str; 3] = ["instructions", "heap_increase", "stable_memory_increase"];

/// `instructions +5.59%`, for each metric that moved beyond the threshold.
fn moved_metrics(e: &Entry, t: f64) -> Vec<String> {
    METRIC_NAMES
        .iter()
        .zip(e.metrics())
        .filter(|(_, v)| matches!(v.status(t), Change::Regressed | Change::Improved))
        .map(|(name, v)| {
            format!(
                "{name} {}",
                v.percent_diff().map(pct_change).unwrap_or_default()
            )
        })
        .collect()
}

/// The benches (totals, not scopes) that regressed beyond the threshold.
pub fn regressed_benches(entries: &[Entry], t: f64) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e.scope.is_none() && class(e, t) == Class::Regressed)
        .map(|e| e.bench.clone())
        .collect()
}

fn instructions_ratio(e: &Entry) -> Option<f64> {
    ratio(
        e.instructions.prev.map(|v| v as f64),
        e.instructions.curr.map(|v| v as f64),
    )
}

/// A page count, with the base before it when it moved: `0 → 13`.
fn pages(v: &Values) -> String {
    match (v.prev, v.curr) {
        (Some(p), Some(c)) if p != c => format!("{} → {}", thousands(p), thousands(c)),
        (_, Some(c)) => thousands(c),
        _ => "-".into(),
    }
}

/// The benches and scopes of `old` that `new` does not have, but for the benches that
/// `failed`: names and base instructions.
fn removed(new: &Results, old: &Results, failed: &[(String, String)]) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (name, bench) in old {
        match new.get(name) {
            None if failed.iter().any(|(f, _)| f == name) => {}
            None => out.push((name.clone(), bench.total.instructions)),
            Some(now) => {
                for (scope, m) in &bench.scopes {
                    if !now.scopes.contains_key(scope) {
                        out.push((format!("{name}::{scope}"), m.instructions));
                    }
                }
            }
        }
    }
    out
}

/// The pull-request comment of a run (`new`, with the benches that `failed` and their
/// errors) against the results file (`old`): what moved first, regressions, improvements,
/// new, removed and failed benchmarks, then every row folded. Rows are bench totals and
/// scopes (`bench::scope`); a row regresses when any of its three metrics does. A page
/// touched is priced at `page_charge`, the memory tracker's charge on the run's host.
#[allow(clippy::too_many_arguments)]
pub fn comment(
    new: &Results,
    old: &Results,
    failed: &[(String, String)],
    graphs: &BTreeMap<String, PathBuf>,
    pages_touched: &BTreeMap<String, BenchPages>,
    page_charge: u64,
    t: f64,
    title: &str,
    gate: &Gate,
) -> Comment {
    let mut all = entries(new, old);
    set_pages(&mut all, pages_touched);
    let gone = removed(new, old, failed);
    let mut shown = vec![
        moved_section(&all, t, Class::Regressed, "Regressions", graphs),
        moved_section(&all, t, Class::Improved, "Improvements", &BTreeMap::new()),
        new_section(&all, t),
        removed_section(&gone),
        failed_section(failed),
    ];
    shown.retain(|s| !s.rows.is_empty());
    let n = |c: Class| all.iter().filter(|e| class(e, t) == c).count();
    let headline = comment::headline(
        title,
        n(Class::Regressed),
        n(Class::Improved),
        t,
        n(Class::Unchanged),
        &[
            (n(Class::New), "new"),
            (gone.len(), "removed"),
            (failed.len(), "failed"),
        ],
    );
    let verdict = comment::verdict(
        gate.failures(&all, t).len() + failed.len(),
        &gate.describe(t),
    );
    Comment {
        headline,
        paragraphs: vec![about(&all, gone.len(), t, page_charge), verdict],
        shown,
        details_summary: "Every benchmark and scope, with its instructions multiplier (new ÷ base)"
            .into(),
        details: vec![every_section(&all)],
        marker: None,
    }
}

/// A row's name in the comment, as code.
fn row_name(e: &Entry) -> String {
    format!("`{}`", e.full_name())
}

/// Instructions with thousands separators, `-` where there are none.
fn instructions(v: Option<u64>) -> String {
    v.map_or("-".into(), thousands)
}

/// This run's Wasm pages accessed plus written (what the memory tracker charges for);
/// the results file keeps none, so there is no base to show.
fn touched(e: &Entry) -> String {
    e.pages.map_or("-".into(), |p| thousands(p.counted()))
}

/// The rows of class `which` (regressions or improvements), with a graph column when
/// `graphs` has any.
fn moved_section(
    all: &[Entry],
    t: f64,
    which: Class,
    heading: &str,
    graphs: &BTreeMap<String, PathBuf>,
) -> Section {
    let with_graphs = !graphs.is_empty();
    let mut headers = vec![
        "benchmark",
        "base",
        "new",
        "change",
        "change %",
        "heap pages",
        "stable pages",
        "Wasm pages touched",
    ];
    if with_graphs {
        headers.push("differential flame graph");
    }
    let mut s = Section::new(heading, &headers);
    if with_graphs {
        s = s.align(headers.len() - 1, crate::report::Align::Left);
    }
    for e in all.iter().filter(|e| class(e, t) == which) {
        let mut row = vec![
            row_name(e),
            instructions(e.instructions.prev),
            instructions(e.instructions.curr),
            e.instructions
                .abs_delta()
                .map_or("-".into(), signed_thousands),
            e.instructions.percent_diff().map_or("-".into(), pct_change),
            pages(&e.heap_increase),
            pages(&e.stable_memory_increase),
            touched(e),
        ];
        if with_graphs {
            row.push(comment::graph_cell(
                graphs.get(&e.full_name()).map(PathBuf::as_path),
            ));
        }
        s.rows.push(row);
    }
    s
}

fn new_section(all: &[Entry], t: f64) -> Section {
    let mut added = Section::new(
        "New benchmarks",
        &[
            "benchmark",
            "instructions",
            "heap pages",
            "stable pages",
            "Wasm pages touched",
        ],
    );
    for e in all.iter().filter(|e| class(e, t) == Class::New) {
        added.rows.push(vec![
            row_name(e),
            instructions(e.instructions.curr),
            pages(&e.heap_increase),
            pages(&e.stable_memory_increase),
            touched(e),
        ]);
    }
    added
}

fn removed_section(gone: &[(String, u64)]) -> Section {
    let mut s = Section::new("Removed benchmarks", &["benchmark", "base"]);
    for (n, i) in gone {
        s.rows.push(vec![format!("`{n}`"), thousands(*i)]);
    }
    s
}

fn failed_section(failed: &[(String, String)]) -> Section {
    let mut s = Section::new("Failed benchmarks", &["benchmark", "error"])
        .align(1, crate::report::Align::Left);
    for (n, error) in failed {
        s.rows
            .push(vec![format!("`{n}`"), comment::cell(error, 300)]);
    }
    s
}

/// Every row, folded, with its instructions multiplier.
fn every_section(all: &[Entry]) -> Section {
    let mut every = Section::new(
        "Benchmarks and scopes",
        &[
            "benchmark",
            "base",
            "new",
            "change %",
            "multiplier",
            "heap pages",
            "stable pages",
            "Wasm pages touched",
        ],
    );
    for e in all {
        every.rows.push(vec![
            row_name(e),
            instructions(e.instructions.prev),
            instructions(e.instructions.curr),
            e.instructions.percent_diff().map_or("-".into(), pct_change),
            multiplier(instructions_ratio(e)),
            pages(&e.heap_increase),
            pages(&e.stable_memory_increase),
            touched(e),
        ]);
    }
    every
}

/// The paragraph under the headline: what was measured, the noise rule and how many
/// unchanged rows moved inside it.
fn about(all: &[Entry], removed: usize, t: f64, page_charge: u64) -> String {
    let within = all
        .iter()
        .filter(|e| {
            class(e, t) == Class::Unchanged
                && e.metrics()
                    .iter()
                    .any(|v| v.abs_delta().is_some_and(|d| d != 0))
        })
        .count();
    format!(
        "canbench's measurements of {} (benchmarks and their scopes, `bench::scope`) against the results file: instructions, and heap and stable memory increase in 64 KiB pages; `Wasm pages touched`: the 64 KiB pages of heap and stable memory this run's bench accessed plus those it wrote (what the memory tracker charges {} instructions each for; queries pay for the access only; on a scope's row, those first touched in the bench while the scope was open). A row regresses when any of the three grows by {t}% or more (canbench's noise threshold: strictly inside it is noise); {}.",
        count(all.len() + removed, "row", "rows"),
        thousands(page_charge),
        match within {
            0 => "no unchanged row moved at all".to_string(),
            k => format!(
                "{} of the unchanged rows moved by less than that",
                thousands(k as u64)
            ),
        }
    )
}

/// CSV percent: two decimals, and canbench's `1.0E99` for a change from 0.
pub fn fmt_csv_percent(p: f64) -> String {
    if p.is_infinite() {
        if p > 0.0 { "1.0E99" } else { "-1.0E99" }.to_string()
    } else {
        format!("{p:.2}%")
    }
}

fn csv_cells(v: &Values) -> [String; 3] {
    [
        v.curr.map(|c| c.to_string()).unwrap_or_default(),
        v.abs_delta().map(|d| d.to_string()).unwrap_or_default(),
        v.percent_diff().map(fmt_csv_percent).unwrap_or_default(),
    ]
}

pub const CSV_HEADER: &str = "status,name,scope_calls,scope_calls Δ,scope_calls Δ%,instructions,instructions Δ,instructions Δ%,heap_increase,heap_increase Δ,heap_increase Δ%,stable_memory_increase,stable_memory_increase Δ,stable_memory_increase Δ%";
/// icbench's columns after canbench's: the Wasm pages and page charge of the bench's query
/// (total rows) or of the scope (scope rows: pages first touched while it was open).
pub const CSV_PAGE_HEADER: &str = "heap_wasm_pages_accessed,heap_wasm_pages_written,stable_wasm_pages_accessed,stable_wasm_pages_written,page_charge_instructions";

/// canbench's CSV (comma-separated, no quoting; calls only on scope rows), then icbench's
/// page columns.
pub fn csv(entries: &[Entry]) -> String {
    let mut out = format!("{CSV_HEADER},{CSV_PAGE_HEADER}\n");
    for e in entries {
        let mut row = vec![e.status.clone(), e.full_name()];
        if e.scope.is_some() {
            row.extend(csv_cells(&e.calls));
        } else {
            row.extend([String::new(), String::new(), String::new()]);
        }
        for v in e.metrics() {
            row.extend(csv_cells(v));
        }
        let pages = e.pages.map(|p| {
            [
                p.heap_wasm_pages_accessed,
                p.heap_wasm_pages_written,
                p.stable_wasm_pages_accessed,
                p.stable_wasm_pages_written,
                p.page_charge_instructions,
            ]
            .map(|n| n.to_string())
        });
        row.extend(pages.unwrap_or_default());
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::canbench::results::{bench, m};

    #[test]
    fn noise_threshold_classification() {
        let t = 2.0;
        assert_eq!(Values::new(Some(5), None).status(t), Change::New);
        assert_eq!(
            Values::new(Some(100), Some(100)).status(t),
            Change::Unchanged
        );
        assert_eq!(
            Values::new(Some(101), Some(100)).status(t),
            Change::Unchanged
        );
        // Exactly at the threshold is significant (strict comparison).
        assert_eq!(
            Values::new(Some(102), Some(100)).status(t),
            Change::Regressed
        );
        assert_eq!(Values::new(Some(98), Some(100)).status(t), Change::Improved);
        assert_eq!(
            Values::new(Some(99), Some(100)).status(t),
            Change::Unchanged
        );
        assert_eq!(Values::new(Some(1), Some(0)).status(t), Change::Regressed);
        assert_eq!(Values::new(Some(0), Some(0)).status(t), Change::Unchanged);
        assert_eq!(
            Values::new(Some(888), Some(841)).status(5.0),
            Change::Regressed
        );
        assert_eq!(
            Values::new(Some(888), Some(841)).status(6.0),
            Change::Unchanged
        );
        assert_eq!(Values::new(None, Some(1)).status(t), Change::Unchanged);
        assert_eq!(
            Values::new(Some(1), Some(0)).percent_diff(),
            Some(f64::INFINITY)
        );
    }

    #[test]
    fn csv_rows_match_canbench_unit_test() {
        // The rows of canbench-bin's csv_file test, built from results.
        // Five benches by their instructions, then one with a scope.
        let results = |instructions: [u64; 5], scoped: BenchResult| -> Results {
            [
                "bench_a_regression",
                "bench_b_no_change",
                "bench_c_improvement",
                "bench_d_positive_inf",
                "bench_e_from_10M_to_0",
            ]
            .into_iter()
            .zip(instructions)
            .map(|(n, i)| (n.to_string(), bench(m(1, i, 0, 0), &[])))
            .chain([("bench_f_with_scope".to_string(), scoped)])
            .collect()
        };
        let new = results(
            [11_000_000, 10_000_000, 9_000_000, 10_000_000, 0],
            bench(m(1, 5, 0, 1), &[("my_scope", m(100, 10_000_000, 0, 0))]),
        );
        let old = results(
            [10_000_000, 10_000_000, 10_000_000, 0, 10_000_000],
            bench(m(1, 5, 0, 0), &[("my_scope", m(50, 9_000_000, 0, 0))]),
        );
        // canbench's rows, each followed by icbench's five page cells (empty: no pages).
        let text: String = csv(&entries(&new, &old))
            .lines()
            .map(|l| {
                let canbench = l.rsplitn(6, ',').last().unwrap();
                assert!(l.ends_with(",,,,,") || l.ends_with(CSV_PAGE_HEADER), "{l}");
                format!("{canbench}\n")
            })
            .collect();
        assert_eq!(
            text,
            "status,name,scope_calls,scope_calls Δ,scope_calls Δ%,instructions,instructions Δ,instructions Δ%,heap_increase,heap_increase Δ,heap_increase Δ%,stable_memory_increase,stable_memory_increase Δ,stable_memory_increase Δ%
,bench_a_regression,,,,11000000,1000000,10.00%,0,0,0.00%,0,0,0.00%
,bench_b_no_change,,,,10000000,0,0.00%,0,0,0.00%,0,0,0.00%
,bench_c_improvement,,,,9000000,-1000000,-10.00%,0,0,0.00%,0,0,0.00%
,bench_d_positive_inf,,,,10000000,10000000,1.0E99,0,0,0.00%,0,0,0.00%
,bench_e_from_10M_to_0,,,,0,-10000000,-100.00%,0,0,0.00%,0,0,0.00%
,bench_f_with_scope,,,,5,0,0.00%,0,0,0.00%,1,1,1.0E99
,bench_f_with_scope::my_scope,100,50,100.00%,10000000,1000000,11.11%,0,0,0.00%,0,0,0.00%
"
        );
    }

    #[test]
    fn new_benches_and_new_scopes_have_empty_deltas() {
        let new: Results = [(
            "b".to_string(),
            bench(m(1, 207, 0, 0), &[("s", m(3, 10, 0, 0))]),
        )]
        .into();
        let old: Results = [("b".to_string(), bench(m(1, 207, 0, 0), &[]))].into();
        let e = entries(&new, &old);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].status.as_str(), e[1].status.as_str()), ("", "new"));
        assert_eq!(
            csv(&e).lines().nth(2).unwrap(),
            "new,b::s,3,,,10,,,0,,,0,,,,,,,"
        );
        // The bench's query's pages go on its total row, each scope's on the scope's row;
        // a scope whose pages are not known has empty cells.
        let mut e = entries(&new, &Results::new());
        let pages = PageCounts {
            heap_wasm_pages_accessed: 3,
            heap_wasm_pages_written: 2,
            stable_wasm_pages_accessed: 1,
            stable_wasm_pages_written: 0,
            page_charge_instructions: 4 * 80_000,
        };
        let scope = PageCounts {
            heap_wasm_pages_accessed: 1,
            page_charge_instructions: 80_000,
            ..PageCounts::default()
        };
        let bench_pages = |scopes: BTreeMap<String, PageCounts>| {
            let b = BenchPages {
                total: Some(pages),
                scopes,
            };
            [("b".to_string(), b)].into()
        };
        set_pages(&mut e, &bench_pages([("s".to_string(), scope)].into()));
        let text = csv(&e);
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "new,b,,,,207,,,0,,,0,,,3,2,1,0,320000"
        );
        assert_eq!(
            text.lines().nth(2).unwrap(),
            "new,b::s,3,,,10,,,0,,,0,,,1,0,0,0,80000"
        );
        set_pages(&mut e, &bench_pages(BTreeMap::new()));
        assert_eq!(
            csv(&e).lines().nth(2).unwrap(),
            "new,b::s,3,,,10,,,0,,,0,,,,,,,"
        );
    }

    #[test]
    fn a_page_touched_is_priced_on_the_runs_host() {
        use crate::engine::cost::Host;
        let charge = |host| about(&[], 0, 2.0, crate::report::tracker_page_charge(host));
        assert!(charge(Host::Linux).contains("the memory tracker charges 80,000 instructions each"));
        assert!(charge(Host::MacosArm64)
            .contains("the memory tracker charges 20,000 instructions each"));
    }
}
