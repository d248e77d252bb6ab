//! SQLite's page cache cold and warm: a small SQLite store's inserts, point reads and scans
//! measured on a newly opened connection (cold) and on a live one (warm: the whole table
//! read into the cache, then one message of the workload), under both replica vintages,
//! with exact counts; warm is cheaper for some and dearer for others.

use std::path::PathBuf;

use icbench::report::{self, Report};

use crate::support::ok_rows;
use crate::support::table::Table;

/// (cache, position, operation, batch, charged instructions, store instructions).
type Cell = (String, String, String, u64, u64, u64);

fn run(replica: &str) -> Report {
    let out = std::env::temp_dir().join(format!(
        "icbench-page-cache-{}-{replica}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    crate::support::run_bench_into(
        &out,
        &[
            "--suite",
            "seed003",
            "--rows",
            "2000",
            "--stores",
            "sqlite",
            "--journal-modes",
            "PERSIST",
            "--batches",
            "1,100",
            "--replica",
            replica,
        ],
    );
    let path: PathBuf = out.join("results.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let report = report::from_json(&text).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    report
}

fn cells(report: &Report) -> Vec<Cell> {
    ok_rows(report, |r| {
        (
            r.cache.as_str().to_string(),
            r.position.clone(),
            r.operation.clone(),
            r.batch,
            r.instructions,
            r.store_instructions,
        )
    })
}

/// `cells` as a table.
fn table(cells: &[Cell]) -> String {
    let mut table = Table::new(&[
        "cache",
        "position",
        "operation",
        "batch",
        "charged",
        "store",
    ]);
    for (cache, position, operation, batch, charged, store) in cells {
        let numbers = [batch, charged, store].map(u64::to_string);
        table.row(
            [cache, position, operation]
                .map(String::clone)
                .into_iter()
                .chain(numbers),
        );
    }
    table.to_string()
}

fn charged(cells: &[Cell], cache: &str, position: &str, operation: &str, batch: u64) -> u64 {
    cells
        .iter()
        .find(|c| {
            (c.0.as_str(), c.1.as_str(), c.2.as_str(), c.3) == (cache, position, operation, batch)
        })
        .unwrap_or_else(|| panic!("no {cache} {position}/{operation}/{batch}"))
        .4
}

#[test]
fn sqlite_cold_and_warm_under_the_memory_tracker() {
    let cells = cells(&run("2026-07"));
    insta::assert_snapshot!(table(&cells));
    let at = |cache, position, operation, batch| charged(&cells, cache, position, operation, batch);
    // Warm is cheaper where the first message on a connection reads the path from stable
    // memory and writes page 1's change counter (a one-row insert, a scan)...
    assert!(at("warm", "middle", "insert", 1) < at("cold", "middle", "insert", 1));
    assert!(at("warm", "random", "range_scan", 1000) < at("cold", "random", "range_scan", 1000));
    // ... and dearer where the cached table's heap pages cost more than they save (an
    // append of 100 rows: 3,202,011 warm against 3,137,881 cold).
    assert!(at("warm", "end", "insert", 100) > at("cold", "end", "insert", 100));
}

#[test]
fn sqlite_cold_and_warm_before_the_memory_tracker() {
    let cells = cells(&run("2026-05"));
    insta::assert_snapshot!(table(&cells));
    let at = |cache, position, operation, batch| charged(&cells, cache, position, operation, batch);
    // Without page charges the cache only saves work: every warm cell of this table is
    // cheaper than its cold one.
    for c in cells.iter().filter(|c| c.0 == "warm") {
        assert!(c.4 < at("cold", &c.1, &c.2, c.3), "{c:?}");
    }
}
