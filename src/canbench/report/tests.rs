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
            2.0,
            None
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
        bench_block("bench_scope_new", &new["bench_scope_new"], None, 2.0, None),
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
    let mut out = section(&bench_block(
        name,
        &result,
        old_results.get(name),
        2.0,
        None,
    ));
    out.push_str(&closing(
        &entries(&new_results, &old_results),
        2.0,
        true,
        false,
    ));
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

#[test]
fn page_lines_note_changes_only_against_known_figures() {
    let counts = |heap: u64| crate::engine::PageCounts {
        heap_wasm_pages_accessed: heap,
        heap_wasm_pages_written: heap,
        ..Default::default()
    };
    let now = BenchPages {
        total: Some(counts(4)),
        scopes: [("s".to_string(), counts(1))].into(),
    };
    let before = BenchPages {
        total: Some(counts(2)),
        scopes: BTreeMap::new(),
    };
    let shown = PagesShown {
        now: &now,
        before: Some(&before),
    };
    assert_eq!(
        shown.lines(None, 2.0),
        "    heap_wasm_pages_accessed: 4 (regressed by 100.00%)\n    heap_wasm_pages_written: 4 (regressed by 100.00%)\n    stable_wasm_pages_accessed: 0 (no change)\n    stable_wasm_pages_written: 0 (no change)\n    page_charge_instructions: 0 (no change)\n"
    );
    // A scope the previous run has no figures for shows its own alone; one whose pages
    // were not attributed says so.
    assert_eq!(
        shown.lines(Some("s"), 2.0),
        "    heap_wasm_pages_accessed: 1\n    heap_wasm_pages_written: 1\n    stable_wasm_pages_accessed: 0\n    stable_wasm_pages_written: 0\n    page_charge_instructions: 0\n"
    );
    assert_eq!(
        shown.lines(Some("other"), 2.0),
        "    Wasm pages: not counted (the run's note on stderr says why)\n"
    );
}
