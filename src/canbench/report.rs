//! canbench's text report: per-bench blocks, the summary and the "Only significant changes"
//! table. Plain text (canbench's piped form, without colours).

use std::fmt::Write;

use super::compare::{Change, Entry, Values};
use super::results::{BenchResult, Measurement};

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
    let note = match old {
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
    };
    format!("    {metric}: {v} {note}\n")
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

/// One bench's block, from `Benchmark:` to its last metric line.
pub fn bench_block(name: &str, new: &BenchResult, old: Option<&BenchResult>, t: f64) -> String {
    let mut out = match old {
        Some(_) => format!("Benchmark: {name}\n"),
        None => format!("Benchmark: {name} (new)\n"),
    };
    out.push_str("  total:\n");
    measurement_lines(&mut out, &new.total, old.map(|o| &o.total), t, false);
    for (scope, m) in &new.scopes {
        let _ = write!(out, "\n  {scope} (scope):\n");
        measurement_lines(&mut out, m, old.and_then(|o| o.scopes.get(scope)), t, true);
    }
    out
}

/// A bench as the run prints it: a dash line, a blank line, the block, a blank line.
pub fn bench_section(name: &str, new: &BenchResult, old: Option<&BenchResult>, t: f64) -> String {
    format!("{DASHES}\n\n{}\n", bench_block(name, new, old, t))
}

/// What follows the bench sections: a dash line, then with `summary` the summary and,
/// if anything changed significantly, the table, each closed by a dash line.
pub fn closing(entries: &[Entry], t: f64, summary_on: bool) -> String {
    let mut out = format!("{DASHES}\n");
    if summary_on {
        let _ = write!(out, "\n{}\n{DASHES}\n", summary(entries, t));
        let significant = significant(entries, t);
        if !significant.is_empty() {
            let _ = write!(
                out,
                "\nOnly significant changes:\n{}\n{DASHES}\n",
                table(&significant, MAX_DISPLAYED_ROWS)
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
    let header = [
        "status", "name", "calls", "ins", "ins Δ%", "HI", "HI Δ%", "SMI", "SMI Δ%",
    ];
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
    let mut out = line(&header.map(String::from));
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
    out
}

#[cfg(test)]
mod tests {
    use super::super::compare::entries;
    use super::super::results::Results;
    use super::*;
    use std::collections::BTreeMap;

    use crate::canbench::results::{bench, m};
    use crate::report::format::cases;

    fn one(name: &str, total: Measurement) -> Results {
        [(name.to_string(), bench(total, &[]))].into()
    }

    #[test]
    fn number_formats() {
        cases(
            fmt_metric_value,
            &[
                (9_999, "9999"),
                (49_120, "49.12 K"),
                (3_385_780, "3.39 M"),
                (2_729_624_702, "2.73 B"),
                (12_000_000_000_000, "12.00 T"),
            ],
        );
        cases(
            fmt_human_u64,
            &[
                (795, "795"),
                (4_180, "4.18K"),
                (3_385_780, "3.39M"),
                (8_000, "8.00K"),
            ],
        );
        cases(
            fmt_human_i64,
            &[
                (0, "0"),
                (47, "+47"),
                (-3, "-3"),
                (-154_220, "-154.22K"),
                (15_400, "+15.40K"),
            ],
        );
        cases(
            fmt_human_percent,
            &[
                (5.588585, "+5.59%"),
                (-93.32, "-93.32%"),
                (0.0, "0.00%"),
                (0.004, "0.00%"),
                (f64::INFINITY, "+inf%"),
            ],
        );
    }

    #[test]
    fn metric_line_annotations() {
        // (metric, new value, old value, noise threshold in percent, the line)
        for (metric, value, old, t, line) in [
            (
                "instructions",
                888,
                Some(841),
                2.0,
                "    instructions: 888 (regressed by 5.59%)\n",
            ),
            (
                "instructions",
                207,
                None,
                2.0,
                "    instructions: 207 (new)\n",
            ),
            (
                "heap_increase",
                0,
                Some(0),
                2.0,
                "    heap_increase: 0 pages (no change)\n",
            ),
            (
                "stable_memory_increase",
                123,
                Some(0),
                2.0,
                "    stable_memory_increase: 123 pages (regressed from 0)\n",
            ),
            (
                "instructions",
                3_385_780,
                Some(3_540_000),
                2.0,
                "    instructions: 3.39 M (improved by 4.36%)\n",
            ),
            (
                "instructions",
                3_385_780,
                Some(3_540_000),
                5.0,
                "    instructions: 3.39 M (-4.36%) (change within noise threshold)\n",
            ),
            (
                "instructions",
                1003,
                Some(1000),
                2.0,
                "    instructions: 1003 (0.30%) (change within noise threshold)\n",
            ),
            ("calls", 10, Some(10), 2.0, "    calls: 10 (no change)\n"),
            (
                "heap_increase",
                62,
                Some(65),
                2.0,
                "    heap_increase: 62 pages (improved by 4.62%)\n",
            ),
        ] {
            assert_eq!(metric_line(metric, value, old, t), line);
        }
    }

    #[test]
    fn init_args_example_from_canbench_expected_output() {
        // canbench-bin/tests/expected/benchmark_works_with_init_args.txt: 888 against 841.
        let new = one("state_check", m(1, 888, 0, 0));
        let old = one("state_check", m(1, 841, 0, 0));
        assert_eq!(
            bench_block(
                "state_check",
                &new["state_check"],
                old.get("state_check"),
                2.0
            ),
            "Benchmark: state_check
  total:
    instructions: 888 (regressed by 5.59%)
    heap_increase: 0 pages (no change)
    stable_memory_increase: 0 pages (no change)
"
        );
        let e = entries(&new, &old);
        assert_eq!(
            summary(&e, 2.0),
            "Summary:
  instructions:
    status:   Regressions detected 🔴
    counts:   [total 1 | regressed 1 | improved 0 | new 0 | unchanged 0]
    change:   [max +47 | p75 +47 | median +47 | p25 +47 | min +47]
    change %: [max +5.59% | p75 +5.59% | median +5.59% | p25 +5.59% | min +5.59%]

  heap_increase:
    status:   No significant changes 👍
    counts:   [total 1 | regressed 0 | improved 0 | new 0 | unchanged 1]
    change:   [max 0 | p75 0 | median 0 | p25 0 | min 0]
    change %: [max 0.00% | p75 0.00% | median 0.00% | p25 0.00% | min 0.00%]

  stable_memory_increase:
    status:   No significant changes 👍
    counts:   [total 1 | regressed 0 | improved 0 | new 0 | unchanged 1]
    change:   [max 0 | p75 0 | median 0 | p25 0 | min 0]
    change %: [max 0.00% | p75 0.00% | median 0.00% | p25 0.00% | min 0.00%]
"
        );
        assert_eq!(
            table(&significant(&e, 2.0), MAX_DISPLAYED_ROWS),
            "| status | name        | calls | ins |  ins Δ% | HI |  HI Δ% | SMI |  SMI Δ% |
|--------|-------------|-------|-----|---------|----|--------|-----|---------|
|   +    | state_check |       | 888 |  +5.59% |  0 |  0.00% |   0 |   0.00% |

ins = instructions, HI = heap_increase, SMI = stable_memory_increase, Δ% = percent change
"
        );
    }

    #[test]
    fn new_bench_with_scopes_from_canbench_expected_output() {
        // reports_scopes_in_new_benchmark.txt
        let new: Results = [(
            "bench_scope_new".to_string(),
            bench(
                m(1, 4180, 0, 0),
                &[("scope_1", m(1, 1059, 0, 0)), ("scope_2", m(1, 795, 0, 0))],
            ),
        )]
        .into();
        let e = entries(&new, &Results::new());
        assert_eq!(
            bench_block("bench_scope_new", &new["bench_scope_new"], None, 2.0),
            "Benchmark: bench_scope_new (new)
  total:
    instructions: 4180 (new)
    heap_increase: 0 pages (new)
    stable_memory_increase: 0 pages (new)

  scope_1 (scope):
    calls: 1 (new)
    instructions: 1059 (new)
    heap_increase: 0 pages (new)
    stable_memory_increase: 0 pages (new)

  scope_2 (scope):
    calls: 1 (new)
    instructions: 795 (new)
    heap_increase: 0 pages (new)
    stable_memory_increase: 0 pages (new)
"
        );
        let s = summary(&e, 2.0);
        assert!(
            s.contains(
                "  instructions:
    status:   New benchmarks added ➕
    counts:   [total 1 | regressed 0 | improved 0 | new 1 | unchanged 0]
    change:   n/a
    change %: n/a
"
            ),
            "{s}"
        );
        assert_eq!(
            table(&significant(&e, 2.0), MAX_DISPLAYED_ROWS),
            "| status | name                     | calls |   ins |  ins Δ% | HI |  HI Δ% | SMI |  SMI Δ% |
|--------|--------------------------|-------|-------|---------|----|--------|-----|---------|
|  new   | bench_scope_new          |       | 4.18K |         |  0 |        |   0 |         |
|  new   | bench_scope_new::scope_1 |     1 | 1.06K |         |  0 |        |   0 |         |
|  new   | bench_scope_new::scope_2 |     1 |   795 |         |  0 |        |   0 |         |

ins = instructions, HI = heap_increase, SMI = stable_memory_increase, Δ% = percent change
"
        );
    }

    #[test]
    fn table_elides_middle_rows_like_canbench() {
        // canbench-bin's table test: five benches and one scope, all -10%.
        let mut new = Results::new();
        let mut old = Results::new();
        for i in 1..=5 {
            let mut scopes = BTreeMap::new();
            let mut old_scopes = BTreeMap::new();
            if i == 5 {
                scopes.insert("scope_0".to_string(), m(10, 9_000_000, 0, 0));
                old_scopes.insert("scope_0".to_string(), m(10, 10_000_000, 0, 0));
            }
            new.insert(
                format!("bench_{i}"),
                BenchResult {
                    total: m(1, 9_000_000, 0, 0),
                    scopes,
                },
            );
            old.insert(
                format!("bench_{i}"),
                BenchResult {
                    total: m(1, 10_000_000, 0, 0),
                    scopes: old_scopes,
                },
            );
        }
        let rows = significant(&entries(&new, &old), 2.0);
        assert_eq!(rows.len(), 6);
        assert_eq!(
            table(&rows, 3),
            "| status | name                   | calls |   ins |  ins Δ% | HI |  HI Δ% | SMI |  SMI Δ% |
|--------|------------------------|-------|-------|---------|----|--------|-----|---------|
|   -    | bench_1                |       | 9.00M | -10.00% |  0 |  0.00% |   0 |   0.00% |
|  ...   | ... 3 rows omitted ... |       |       |         |    |        |     |         |
|   -    | bench_5                |       | 9.00M | -10.00% |  0 |  0.00% |   0 |   0.00% |
|   -    | bench_5::scope_0       |    10 | 9.00M | -10.00% |  0 |  0.00% |   0 |   0.00% |

ins = instructions, HI = heap_increase, SMI = stable_memory_increase, Δ% = percent change
"
        );
        assert!(table(&rows, 5).contains("| ... 1 row omitted ... |"));
        assert!(!table(&rows, 6).contains("omitted"));
    }

    #[test]
    fn significance_status_and_order() {
        let mut new = Results::new();
        let mut old = Results::new();
        // (name, new (ins, heap), old (ins, heap))
        for (name, n, o) in [
            ("a_noise", (1010, 0), Some((1000, 0))),
            ("b_both", (1100, 1), Some((1000, 2))),
            ("c_improved", (500, 0), Some((1000, 0))),
            ("d_regressed", (2000, 0), Some((1000, 0))),
            ("e_new", (1, 0), None),
            ("f_heap_only", (1000, 5), Some((1000, 0))),
        ] {
            new.insert(name.to_string(), bench(m(1, n.0, n.1, 0), &[]));
            if let Some(o) = o {
                old.insert(name.to_string(), bench(m(1, o.0, o.1, 0), &[]));
            }
        }
        let rows = significant(&entries(&new, &old), 2.0);
        let got: Vec<(String, String)> = rows
            .iter()
            .map(|e| (e.status.clone(), e.full_name()))
            .collect();
        let want = [
            ("+", "d_regressed"),
            ("+/-", "b_both"),
            ("+", "f_heap_only"),
            ("-", "c_improved"),
            ("new", "e_new"),
        ];
        assert_eq!(
            got,
            want.map(|(s, n)| (s.to_string(), n.to_string())).to_vec()
        );
        let s = summary(&entries(&new, &old), 2.0);
        assert!(s.contains("    status:   Regressions, improvements, and new benchmarks 🔴🟢➕\n    counts:   [total 6 | regressed 2 | improved 1 | new 1 | unchanged 2]\n    change:   [max +1.00K | p75 +100 | median +10 | p25 0 | min -500]\n    change %: [max +100.00% | p75 +10.00% | median +1.00% | p25 0.00% | min -50.00%]\n"), "{s}");
        assert!(s.contains("  heap_increase:\n    status:   Regressions, improvements, and new benchmarks 🔴🟢➕\n    counts:   [total 6 | regressed 1 | improved 1 | new 1 | unchanged 3]\n    change:   [max +5 | p75 0 | median 0 | p25 0 | min -1]\n    change %: [max +inf% | p75 0.00% | median 0.00% | p25 0.00% | min -50.00%]\n"), "{s}");
    }

    /// Whole reports from canbench 0.7.0's own test suite (canbench-bin/tests/expected),
    /// rebuilt from the results they show. Values of 10,000 and more are printed rounded
    /// there, so any value that rounds the same stands in for them.
    fn full_report(new: (&str, BenchResult), old: Option<BenchResult>) -> String {
        let (name, result) = new;
        let new_results: Results = [(name.to_string(), result.clone())].into();
        let old_results: Results = old.map(|o| (name.to_string(), o)).into_iter().collect();
        let mut out = bench_section(name, &result, old_results.get(name), 2.0);
        out.push_str(&closing(&entries(&new_results, &old_results), 2.0, true));
        out
    }

    /// Asserts the whole report of `name` is canbench's expected `file`, kept byte for
    /// byte under tests/canbench_expected.
    fn assert_is_canbench_s(file: &str, name: &str, new: BenchResult, old: Option<BenchResult>) {
        let path = format!(
            "{}/tests/canbench_expected/{file}.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        let expected = std::fs::read_to_string(&path).unwrap();
        assert_eq!(full_report((name, new), old), expected, "{path}");
    }

    #[test]
    fn canbench_expected_whole_reports() {
        let total = |ins, heap, stable| bench(m(1, ins, heap, stable), &[]);
        let (new, old) = (total(888, 0, 0), total(841, 0, 0));
        assert_is_canbench_s(
            "benchmark_works_with_init_args",
            "state_check",
            new,
            Some(old),
        );
        let (new, old) = (total(307, 0, 123), total(0, 0, 0));
        let name = "stable_memory_increase_from_zero";
        assert_is_canbench_s(
            "benchmark_reports_regression_from_zero",
            name,
            new,
            Some(old),
        );
        let new = bench(m(1, 15_400, 0, 0), &[("scope_1", m(10, 7999, 0, 0))]);
        let old = bench(m(1, 0, 0, 0), &[("scope_1", m(10, 800, 1, 0))]);
        let file = "reports_repeated_scope_in_existing_benchmark";
        assert_is_canbench_s(file, "bench_repeated_scope_exists", new, Some(old));
        let (new, old) = (total(3_385_780, 62, 100), total(3_540_000, 65, 104));
        let name = "noisy_change_above_default_threshold_test";
        assert_is_canbench_s("noisy_change_above_default_threshold", name, new, Some(old));
        let scopes = [("scope_1", m(1, 970, 0, 0)), ("scope_2", m(1, 781, 0, 0))];
        let new = bench(m(1, 3834, 0, 0), &scopes);
        assert_is_canbench_s(
            "reports_scopes_in_new_benchmark",
            "bench_scope_new",
            new,
            None,
        );
    }
}
