//! canbench's text report: per-bench blocks, the summary and the "Only significant changes"
//! table. Plain text (canbench's piped form, without colours).

use std::fmt::Write;

use super::compare::BenchPages;
use super::compare::{Change, Entry, Values};
use super::results::{BenchResult, Measurement};
use crate::engine::PageCounts;

pub const DASHES: &str = "---------------------------------------------------";
/// Longer tables keep their first and last halves of this many rows.
pub const MAX_DISPLAYED_ROWS: usize = 50;
pub const LEGEND: &str =
    "ins = instructions, HI = heap_increase, SMI = stable_memory_increase, Δ% = percent change";

/// A value in a metric line: exact below 10,000, else two decimals and a spaced unit.
pub fn fmt_metric_value(v: u64) -> String {
    let f = v as f64;
    if v < 10_000 {
        v.to_string()
    } else if v < 1_000_000 {
        format!("{:.2} K", f / 1e3)
    } else if v < 1_000_000_000 {
        format!("{:.2} M", f / 1e6)
    } else if v < 1_000_000_000_000 {
        format!("{:.2} B", f / 1e9)
    } else {
        format!("{:.2} T", f / 1e12)
    }
}

fn with_unit(v: f64) -> (f64, &'static str) {
    for (div, unit) in [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")] {
        if v.abs() >= div {
            return (v / div, unit);
        }
    }
    (v, "")
}

/// Table values: exact below 1,000, else two decimals and an unspaced unit.
pub fn fmt_human_u64(v: u64) -> String {
    match with_unit(v as f64) {
        (s, "") => format!("{s}"),
        (s, unit) => format!("{s:.2}{unit}"),
    }
}

/// Signed deltas for the summary; 0 has no sign.
pub fn fmt_human_i64(v: i64) -> String {
    if v == 0 {
        return "0".to_string();
    }
    match with_unit(v as f64) {
        (s, "") => format!("{s:+.0}"),
        (s, unit) => format!("{s:+.2}{unit}"),
    }
}

/// Signed percent with two decimals; tiny values keep no forced sign.
pub fn fmt_human_percent(p: f64) -> String {
    if p.abs() < 0.01 {
        format!("{p:.2}%")
    } else {
        format!("{p:+.2}%")
    }
}

/// `    <metric>: <value>[ pages] <annotation>`
pub fn metric_line(metric: &str, value: u64, old: Option<u64>, noise_threshold: f64) -> String {
    let mut v = fmt_metric_value(value);
    if metric == "heap_increase" || metric == "stable_memory_increase" {
        v.push_str(" pages");
    }
    format!(
        "    {metric}: {v} {}\n",
        change_note(value, old, noise_threshold)
    )
}

/// canbench's note on a value against its previous one: `(new)`, `(no change)`, ...
pub fn change_note(value: u64, old: Option<u64>, noise_threshold: f64) -> String {
    match old {
        None => "(new)".to_string(),
        Some(0) if value == 0 => "(no change)".to_string(),
        Some(0) => "(regressed from 0)".to_string(),
        Some(old) => {
            let d = (value as f64 - old as f64) / old as f64 * 100.0;
            if d == 0.0 {
                "(no change)".to_string()
            } else if d.abs() < noise_threshold {
                format!("({d:.2}%) (change within noise threshold)")
            } else if d > 0.0 {
                format!("(regressed by {d:.2}%)")
            } else {
                format!("(improved by {:.2}%)", d.abs())
            }
        }
    }
}

fn measurement_lines(
    out: &mut String,
    new: &Measurement,
    old: Option<&Measurement>,
    t: f64,
    calls: bool,
) {
    if calls {
        out.push_str(&metric_line("calls", new.calls, old.map(|m| m.calls), t));
    }
    out.push_str(&metric_line(
        "instructions",
        new.instructions,
        old.map(|m| m.instructions),
        t,
    ));
    out.push_str(&metric_line(
        "heap_increase",
        new.heap_increase,
        old.map(|m| m.heap_increase),
        t,
    ));
    out.push_str(&metric_line(
        "stable_memory_increase",
        new.stable_memory_increase,
        old.map(|m| m.stable_memory_increase),
        t,
    ));
}

/// One bench's block, from `Benchmark:` to its last metric line, with `pages` the page
/// lines under the total and each scope (--pages).
pub fn bench_block(
    name: &str,
    new: &BenchResult,
    old: Option<&BenchResult>,
    t: f64,
    pages: Option<&PagesShown>,
) -> String {
    let mut out = match old {
        Some(_) => format!("Benchmark: {name}\n"),
        None => format!("Benchmark: {name} (new)\n"),
    };
    out.push_str("  total:\n");
    measurement_lines(&mut out, &new.total, old.map(|o| &o.total), t, false);
    let page_lines = |scope| pages.map(|p| p.lines(scope, t)).unwrap_or_default();
    out.push_str(&page_lines(None));
    for (scope, m) in &new.scopes {
        let _ = write!(out, "\n  {scope} (scope):\n");
        measurement_lines(&mut out, m, old.and_then(|o| o.scopes.get(scope)), t, true);
        out.push_str(&page_lines(Some(scope)));
    }
    out
}

/// A bench's block as the run prints it: a dash line, a blank line, the block, a blank line.
pub fn section(block: &str) -> String {
    format!("{DASHES}\n\n{block}\n")
}

/// What follows the bench sections: a dash line, then with `summary` the summary and,
/// if anything changed significantly, the table (with this run's page columns when `pages`,
/// --pages), each closed by a dash line.
pub fn closing(entries: &[Entry], t: f64, summary_on: bool, pages: bool) -> String {
    let mut out = format!("{DASHES}\n");
    if summary_on {
        let _ = write!(out, "\n{}\n{DASHES}\n", summary(entries, t));
        let significant = significant(entries, t);
        if !significant.is_empty() {
            let _ = write!(
                out,
                "\nOnly significant changes:\n{}\n{DASHES}\n",
                table_paged(&significant, MAX_DISPLAYED_ROWS, pages)
            );
        }
    }
    out
}

/// canbench's percentile of sorted values: the value at its rank, or between the two
/// nearest ranks `mix(low, high, weight of high)`.
fn percentile<T: Copy>(sorted: &[T], pct: usize, mix: impl Fn(T, T, f64) -> T) -> T {
    let rank = pct as f64 / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    if lo == hi {
        sorted[lo]
    } else {
        mix(sorted[lo], sorted[hi], rank - lo as f64)
    }
}

fn percentile_f64(sorted: &[f64], pct: usize) -> f64 {
    percentile(sorted, pct, |lo, hi, w| lo * (1.0 - w) + hi * w)
}

fn percentile_i64(sorted: &[i64], pct: usize) -> i64 {
    percentile(sorted, pct, |lo, hi, w| {
        (lo as f64 * (1.0 - w) + hi as f64 * w).round() as i64
    })
}

fn range_line<T: Copy>(
    prefix: &str,
    sorted: &[T],
    fmt: impl Fn(T) -> String,
    pct: impl Fn(&[T], usize) -> T,
) -> String {
    let parts = [
        ("max", sorted[sorted.len() - 1]),
        ("p75", pct(sorted, 75)),
        ("median", pct(sorted, 50)),
        ("p25", pct(sorted, 25)),
        ("min", sorted[0]),
    ]
    .map(|(label, v)| format!("{label} {}", fmt(v)));
    format!("{prefix} [{}]\n", parts.join(" | "))
}

fn metric_summary(label: &str, entries: &[Entry], t: f64, pick: fn(&Entry) -> &Values) -> String {
    let (mut new, mut improved, mut regressed, mut unchanged) = (0, 0, 0, 0);
    let mut deltas = Vec::new();
    let mut percents = Vec::new();
    // Totals only: scope rows are not counted.
    for e in entries.iter().filter(|e| e.scope.is_none()) {
        let v = pick(e);
        deltas.extend(v.abs_delta());
        percents.extend(v.percent_diff());
        match v.status(t) {
            Change::New => new += 1,
            Change::Improved => improved += 1,
            Change::Regressed => regressed += 1,
            Change::Unchanged => unchanged += 1,
        }
    }
    let status = match (regressed > 0, improved > 0, new > 0) {
        (false, false, false) => "No significant changes 👍",
        (true, false, false) => "Regressions detected 🔴",
        (false, true, false) => "Improvements detected 🟢",
        (false, false, true) => "New benchmarks added ➕",
        (true, true, false) => "Regressions and improvements 🔴🟢",
        (true, false, true) => "Regressions and new benchmarks 🔴➕",
        (false, true, true) => "Improvements and new benchmarks 🟢➕",
        (true, true, true) => "Regressions, improvements, and new benchmarks 🔴🟢➕",
    };
    let total = new + improved + regressed + unchanged;
    let mut out = format!("  {label}:\n    status:   {status}\n");
    let _ = writeln!(
        out,
        "    counts:   [total {total} | regressed {regressed} | improved {improved} | new {new} | unchanged {unchanged}]"
    );
    if deltas.is_empty() {
        out.push_str("    change:   n/a\n");
    } else {
        deltas.sort();
        out.push_str(&range_line(
            "    change:  ",
            &deltas,
            fmt_human_i64,
            percentile_i64,
        ));
    }
    if percents.is_empty() {
        out.push_str("    change %: n/a\n");
    } else {
        percents.sort_by(|a, b| a.total_cmp(b));
        out.push_str(&range_line(
            "    change %:",
            &percents,
            fmt_human_percent,
            percentile_f64,
        ));
    }
    out
}

/// `Summary:` and the three metric sections.
pub fn summary(entries: &[Entry], t: f64) -> String {
    let mut out = String::from("Summary:\n");
    out.push_str(&metric_summary("instructions", entries, t, |e| {
        &e.instructions
    }));
    out.push('\n');
    out.push_str(&metric_summary("heap_increase", entries, t, |e| {
        &e.heap_increase
    }));
    out.push('\n');
    out.push_str(&metric_summary("stable_memory_increase", entries, t, |e| {
        &e.stable_memory_increase
    }));
    out
}

/// Entries with any new, improved or regressed metric, marked `new`, `+`, `-` or `+/-`,
/// sorted by instruction change (descending, none last), then status, then name.
pub fn significant(entries: &[Entry], t: f64) -> Vec<Entry> {
    let mut out: Vec<Entry> = entries
        .iter()
        .filter(|e| e.metrics().iter().any(|v| v.status(t) != Change::Unchanged))
        .map(|e| {
            let mut e = e.clone();
            if e.status.is_empty() {
                let has = |c| e.metrics().iter().any(|v| v.status(t) == c);
                e.status = match (has(Change::Regressed), has(Change::Improved)) {
                    (true, true) => "+/-",
                    (true, false) => "+",
                    (false, true) => "-",
                    (false, false) => "",
                }
                .to_string();
            }
            e
        })
        .collect();
    // Stable sorts, least significant key first.
    out.sort_by_key(|e| e.full_name());
    out.sort_by(|a, b| a.status.cmp(&b.status));
    out.sort_by(|a, b| {
        let key = |e: &Entry| e.instructions.percent_diff().unwrap_or(f64::MIN);
        key(b)
            .partial_cmp(&key(a))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out
}

/// The table, a blank line and the legend. Column widths are the longest cell in UTF-8
/// bytes while padding counts characters, so a column headed `ins Δ%` is one wider than
/// its text: canbench's exact layout.
pub fn table(entries: &[Entry], max_rows: usize) -> String {
    table_paged(entries, max_rows, false)
}

/// [`table`], with `pages` each row's page columns after canbench's and their legend.
pub fn table_paged(entries: &[Entry], max_rows: usize, pages: bool) -> String {
    let mut header = vec![
        "status", "name", "calls", "ins", "ins Δ%", "HI", "HI Δ%", "SMI", "SMI Δ%",
    ];
    if pages {
        header.extend(PAGE_TABLE_HEADER);
    }
    let mut rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let human = |v: &Values| v.curr.map(fmt_human_u64).unwrap_or_default();
            let pct = |v: &Values| v.percent_diff().map(fmt_human_percent).unwrap_or_default();
            vec![
                e.status.clone(),
                e.full_name(),
                if e.scope.is_some() {
                    human(&e.calls)
                } else {
                    String::new()
                },
                human(&e.instructions),
                pct(&e.instructions),
                human(&e.heap_increase),
                pct(&e.heap_increase),
                human(&e.stable_memory_increase),
                pct(&e.stable_memory_increase),
            ]
            .into_iter()
            .chain(pages.then(|| page_cells(e)).into_iter().flatten())
            .collect()
        })
        .collect();
    if rows.len() > max_rows {
        let omitted = rows.len() - max_rows;
        let head = max_rows / 2;
        let tail = max_rows - head;
        let mut marker = vec![String::new(); header.len()];
        marker[0] = "...".to_string();
        marker[1] = format!(
            "... {omitted} row{} omitted ...",
            if omitted == 1 { "" } else { "s" }
        );
        let mut kept: Vec<Vec<String>> = rows[..head].to_vec();
        kept.push(marker);
        kept.extend_from_slice(&rows[rows.len() - tail..]);
        rows = kept;
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |row: &[String]| {
        let mut s = String::from("|");
        for (i, (cell, &w)) in row.iter().zip(&widths).enumerate() {
            let _ = match i {
                0 => write!(s, " {cell:^w$} |"),
                1 => write!(s, " {cell:<w$} |"),
                _ => write!(s, " {cell:>w$} |"),
            };
        }
        s.push('\n');
        s
    };
    let mut out = line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    out.push('|');
    for w in &widths {
        out.push_str(&"-".repeat(w + 2));
        out.push('|');
    }
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row));
    }
    let _ = write!(out, "\n{LEGEND}\n");
    if pages {
        let _ = writeln!(out, "{PAGE_LEGEND}");
    }
    out
}

// The Wasm pages in the report with `--pages`: under each bench's total and each scope
// the CSV's five page figures, with canbench's change notes against the previous run's
// where there is one (see `previous_pages`); and the table's page columns.

/// Picks one page figure.
type Figure = fn(&PageCounts) -> u64;

/// The five figures, by the CSV's names (in `compare::CSV_PAGE_HEADER`'s order).
const FIGURES: [(&str, Figure); 5] = [
    ("heap_wasm_pages_accessed", |p| p.heap_wasm_pages_accessed),
    ("heap_wasm_pages_written", |p| p.heap_wasm_pages_written),
    ("stable_wasm_pages_accessed", |p| {
        p.stable_wasm_pages_accessed
    }),
    ("stable_wasm_pages_written", |p| p.stable_wasm_pages_written),
    ("page_charge_instructions", |p| p.page_charge_instructions),
];

/// The table's page columns, in [`FIGURES`]' order, and their legend line.
const PAGE_TABLE_HEADER: [&str; 5] = ["HPA", "HPW", "SPA", "SPW", "PCI"];
const PAGE_LEGEND: &str = "HPA/HPW = heap Wasm pages accessed/written, SPA/SPW = stable Wasm pages accessed/written, PCI = page_charge_instructions (this run's)";

/// One bench's page figures for its block: this run's and the previous run's, if known.
pub struct PagesShown<'a> {
    pub now: &'a BenchPages,
    pub before: Option<&'a BenchPages>,
}

impl PagesShown<'_> {
    /// The lines under the total (`scope` None) or a scope: each figure, and its change
    /// against the previous figure where there is one.
    pub fn lines(&self, scope: Option<&str>, t: f64) -> String {
        let pick = |b: &BenchPages| match scope {
            None => b.total,
            Some(s) => b.scopes.get(s).copied(),
        };
        let Some(now) = pick(self.now) else {
            return "    Wasm pages: not counted (the run's note on stderr says why)\n".into();
        };
        let before = self.before.and_then(pick);
        FIGURES
            .iter()
            .map(|(name, figure)| {
                let note = before
                    .map(|b| format!(" {}", change_note(figure(&now), Some(figure(&b)), t)))
                    .unwrap_or_default();
                format!("    {name}: {}{note}\n", fmt_metric_value(figure(&now)))
            })
            .collect()
    }
}

/// A table row's page cells: this run's figures, empty where not counted.
fn page_cells(e: &Entry) -> Vec<String> {
    FIGURES
        .iter()
        .map(|(_, figure)| {
            e.pages
                .map(|p| fmt_human_u64(figure(&p)))
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests;
