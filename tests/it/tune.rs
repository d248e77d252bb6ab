//! `--suite tune`: the smallest search end to end, with the counts the cost model fixes: the
//! tracker's charge from the pages each message touched, the older vintage's from the 4 KiB
//! pages it wrote, both vintages executing the same instructions, and the records measured
//! beside the engine's vintage equal to a run under that vintage.

use std::path::Path;

use icbench::report::{self, Report, ScenarioResult, Status};
use icbench::suites::tune::WORKLOADS;

use crate::support::{bench_wasm_path, run_icbench, scratch_dir};

/// The smallest search: the defaults and one other page size, nothing else varied; the
/// heap map and the StableBTreeMap at their defaults beside.
const SMALLEST: [&str; 14] = [
    "--suite",
    "tune",
    "--rows",
    "2000",
    "--tune-page-sizes",
    "4096,65536",
    "--tune-settings",
    "page_size",
    "--tune-cache-sizes",
    "500000",
    "--journal-modes",
    "PERSIST",
    "--tune-synchronous",
    "OFF",
];

fn run(name: &str, extra: &[&str]) -> Report {
    let out = scratch_dir(name);
    let mut args = vec![
        "--quiet",
        "--wasm",
        bench_wasm_path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(&SMALLEST);
    args.extend_from_slice(extra);
    let (code, _, stderr) = run_icbench(&args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    read(&out.join("tune/results.json"))
}

fn read(path: &Path) -> Report {
    let text = std::fs::read_to_string(path).unwrap();
    report::from_json(&text).unwrap()
}

const PAGE: u64 = 80_000;

fn is_query(r: &ScenarioResult) -> bool {
    r.operation != "insert"
}

fn key(r: &ScenarioResult) -> (String, String, String, String, u64) {
    (
        r.store.trim_end_matches(" replica=2026-05").to_string(),
        r.journal_mode.clone(),
        r.position.clone(),
        r.operation.clone(),
        r.batch,
    )
}

#[test]
fn the_smallest_search_charges_each_vintage_by_its_own_rule_and_nothing_else_differs() {
    let report = run("tune-smallest", &[]);
    // Per workload: the heap map and the StableBTreeMap at their defaults, SQLite at the
    // defaults (page_size 4,096) and at page_size 65,536, each under 2026-07 and under
    // 2026-05 beside it.
    assert_eq!(report.results.len(), WORKLOADS.len() * 4 * 2);
    for (w, workload) in WORKLOADS.iter().enumerate() {
        let mine = &report.results[w * 8..w * 8 + 8];
        let stores: Vec<&str> = mine.iter().map(|r| r.store.as_str()).collect();
        assert_eq!(
            stores,
            [
                "heap",
                "heap replica=2026-05",
                "btree",
                "btree replica=2026-05",
                "sqlite page_size=4096 cache_size=500000 synchronous=OFF",
                "sqlite page_size=4096 cache_size=500000 synchronous=OFF replica=2026-05",
                "sqlite page_size=65536 cache_size=500000 synchronous=OFF",
                "sqlite page_size=65536 cache_size=500000 synchronous=OFF replica=2026-05",
            ],
            "{}",
            workload.name
        );
        for pair in mine.chunks(2) {
            let (now, old) = (&pair[0], &pair[1]);
            assert_eq!(key(now), key(old));
            assert_eq!(now.batch, workload.operation.rows());
            assert_eq!(now.status, Status::Ok, "{}: {:?}", now.store, now.status);
            assert_eq!(old.status, Status::Ok);
            let (p, q) = (now.pages.unwrap(), old.pages.unwrap());
            // The pages are the message's, whatever it is charged.
            assert_eq!(
                p,
                icbench::engine::PageCounts {
                    page_charge_instructions: p.page_charge_instructions,
                    ..q
                }
            );
            assert!(p.heap_wasm_pages_accessed > 0);
            // The tracker: 80,000 per page accessed, and per page written where writes are
            // tracked (not in queries).
            let written = p.heap_wasm_pages_written + p.stable_wasm_pages_written;
            let accessed = p.heap_wasm_pages_accessed + p.stable_wasm_pages_accessed;
            let tracked = if is_query(now) { 0 } else { written };
            assert_eq!(p.page_charge_instructions, PAGE * (accessed + tracked));
            // Before it: 1,000 per 4 KiB page written, the heap's only after an update.
            let heap = if is_query(now) {
                0
            } else {
                now.heap_dirty_pages
            };
            assert_eq!(
                q.page_charge_instructions,
                1_000 * (heap + now.stable_dirty_pages)
            );
            assert_eq!(old.heap_dirty_pages, now.heap_dirty_pages);
            // Everything else is the same execution.
            assert_eq!(
                now.instructions - p.page_charge_instructions,
                old.instructions - q.page_charge_instructions,
                "{} {}",
                now.store,
                workload.name
            );
            // The memory held after the message: the same state.
            assert_eq!(now.bytes, old.bytes);
            assert!(now.bytes > 0);
            // Each Wasm page written holds between 1 and 16 of the 4 KiB pages written.
            let stable = p.stable_wasm_pages_written;
            assert!(
                (stable..=16 * stable).contains(&now.stable_dirty_pages),
                "{}: {} OS pages in {stable} Wasm pages",
                workload.name,
                now.stable_dirty_pages
            );
        }
        // The heap map keeps nothing in stable memory.
        assert_eq!(mine[0].pages.unwrap().stable_wasm_pages_accessed, 0);
    }
}

#[test]
fn the_records_beside_are_those_of_a_run_under_that_vintage() {
    let both = run("tune-both", &[]);
    let old = run("tune-old", &["--replica", "2026-05"]);
    let beside: Vec<&ScenarioResult> = both
        .results
        .iter()
        .filter(|r| r.store.ends_with(" replica=2026-05"))
        .collect();
    // Both searches measure two page sizes per workload, so they measure the same.
    assert_eq!(beside.len(), old.results.len());
    for (b, o) in beside.into_iter().zip(&old.results) {
        let b = ScenarioResult {
            store: key(b).0,
            ..b.clone()
        };
        assert_eq!(
            serde_json::to_value(&b).unwrap(),
            serde_json::to_value(o).unwrap()
        );
    }
}
