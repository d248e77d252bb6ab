//! The previous run's Wasm pages, for `--pages`. `canbench_results.yml` keeps no pages, so
//! the previous figures are the CSV's beside it,
//! and only on the rows whose canbench figures are the results file's: the CSV that the run
//! which persisted the file wrote (`--persist --csv`). A CSV of another run (written with
//! `--csv` alone, or by an older icbench without page columns) gives no previous figures
//! rather than wrong ones.

use std::collections::BTreeMap;
use std::path::Path;

use super::compare::{BenchPages, CSV_PAGE_HEADER};
use super::results::Results;
use crate::engine::PageCounts;

/// The previous results and the previous run's pages (`--pages`, else none).
pub type Previous<'a> = (&'a Results, &'a BTreeMap<String, BenchPages>);

/// The CSV's columns a row is matched by against the results file, name first.
const CANBENCH_COLUMNS: [&str; 5] = [
    "name",
    "scope_calls",
    "instructions",
    "heap_increase",
    "stable_memory_increase",
];

/// The previous run's pages by bench: the rows of the CSV at `csv_path` whose canbench
/// figures (instructions, heap and stable memory increase, a scope's calls) are those of
/// `old`, the results file's. None unless `wanted` (--pages), nor where the file is
/// missing or has no page columns.
pub fn previous(wanted: bool, csv_path: &Path, old: &Results) -> BTreeMap<String, BenchPages> {
    let mut out: BTreeMap<String, BenchPages> = BTreeMap::new();
    let Some(text) = wanted
        .then(|| std::fs::read_to_string(csv_path).ok())
        .flatten()
    else {
        return out;
    };
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name);
    let known = CANBENCH_COLUMNS
        .into_iter()
        .chain(CSV_PAGE_HEADER.split(','))
        .map(column)
        .collect::<Option<Vec<usize>>>();
    let Some(columns) = known else {
        return out;
    };
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() != header.len() {
            continue;
        }
        let cell = |i: usize| cells[columns[i]];
        let (bench, scope) = match cell(0).split_once("::") {
            Some((b, s)) => (b, Some(s)),
            None => (cell(0), None),
        };
        let measured = old.get(bench).and_then(|r| match scope {
            None => Some(&r.total),
            Some(s) => r.scopes.get(s),
        });
        let Some(m) = measured else {
            continue;
        };
        // canbench's CSV has calls on scope rows only.
        let calls = scope.map(|_| m.calls.to_string()).unwrap_or_default();
        let [instructions, heap, stable] =
            [m.instructions, m.heap_increase, m.stable_memory_increase].map(|v| v.to_string());
        let same = [calls, instructions, heap, stable]
            .iter()
            .enumerate()
            .all(|(i, expected)| cell(i + 1) == expected);
        let counts: Option<Vec<u64>> = (5..10).map(|i| cell(i).parse().ok()).collect();
        let (true, Some(c)) = (same, counts) else {
            continue;
        };
        let pages = PageCounts {
            heap_wasm_pages_accessed: c[0],
            heap_wasm_pages_written: c[1],
            stable_wasm_pages_accessed: c[2],
            stable_wasm_pages_written: c[3],
            page_charge_instructions: c[4],
        };
        let entry = out.entry(bench.to_string()).or_default();
        match scope {
            None => entry.total = Some(pages),
            Some(s) => {
                entry.scopes.insert(s.to_string(), pages);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canbench::results::{bench, m};

    #[test]
    fn previous_pages_are_the_csv_rows_of_the_results_file_s_run() {
        let dir = std::env::temp_dir().join(format!("icbench-page-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("r.csv");
        let old: Results = [
            (
                "a".to_string(),
                bench(m(1, 207, 0, 0), &[("s", m(3, 10, 0, 0))]),
            ),
            ("b".to_string(), bench(m(1, 300, 0, 1), &[])),
        ]
        .into();
        let header = format!("{},{CSV_PAGE_HEADER}", super::super::compare::CSV_HEADER);
        // a and a::s are the results file's; b's instructions are another run's; c is not
        // in the results file.
        std::fs::write(
            &csv,
            format!("{header}\n,a,,,,207,0,0.00%,0,0,0.00%,0,0,0.00%,3,2,1,0,80000\n,a::s,3,0,0.00%,10,0,0.00%,0,0,0.00%,0,0,0.00%,1,0,0,0,0\n,b,,,,301,1,0.33%,0,0,0.00%,1,0,0.00%,4,4,0,0,0\nnew,c,,,,5,,,0,,,0,,,1,1,0,0,0\n"),
        )
        .unwrap();
        assert!(previous(false, &csv, &old).is_empty());
        let got = previous(true, &csv, &old);
        let pages = |heap_accessed, heap_written, stable, charge| PageCounts {
            heap_wasm_pages_accessed: heap_accessed,
            heap_wasm_pages_written: heap_written,
            stable_wasm_pages_accessed: stable,
            stable_wasm_pages_written: 0,
            page_charge_instructions: charge,
        };
        let a = BenchPages {
            total: Some(pages(3, 2, 1, 80_000)),
            scopes: [("s".to_string(), pages(1, 0, 0, 0))].into(),
        };
        assert_eq!(got, [("a".to_string(), a)].into());
        // canbench's CSV alone (no page columns), or none, gives nothing.
        std::fs::write(
            &csv,
            format!(
                "{}\n,a,,,,207,0,0.00%,0,0,0.00%,0,0,0.00%\n",
                super::super::compare::CSV_HEADER
            ),
        )
        .unwrap();
        assert!(previous(true, &csv, &old).is_empty());
        assert!(previous(true, &dir.join("missing.csv"), &old).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
