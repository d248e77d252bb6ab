//! SQLite's page cache cold and warm: a small SQLite store's inserts, point reads and scans
//! measured on a newly opened connection (cold) and on a live one (warm: the whole table
//! read into the cache, then one message of the workload), under both replica vintages,
//! with exact counts; warm is cheaper for some and dearer for others.

use std::path::PathBuf;

use icbench::report::{self, Report};

use crate::support::{leak, ok_rows};

/// (cache, position, operation, batch, charged instructions, store instructions).
type Cell = (&'static str, &'static str, &'static str, u64, u64, u64);

/// `--replica 2026-07` (the memory tracker).
const TRACKER: [Cell; 30] = [
    ("cold", "middle", "insert", 1, 4_604_812, 3_578_975),
    ("cold", "middle", "insert", 100, 6_293_709, 5_267_872),
    ("cold", "middle", "point_lookup", 1, 1_054_871, 431_848),
    ("cold", "middle", "point_lookup", 100, 1_953_579, 1_330_556),
    ("cold", "middle", "range_scan", 1000, 4_190_049, 3_567_574),
    ("cold", "end", "insert", 1, 2_288_691, 1_262_854),
    ("cold", "end", "insert", 100, 3_137_881, 2_112_044),
    ("cold", "end", "point_lookup", 1, 1_054_851, 431_828),
    ("cold", "end", "point_lookup", 100, 1_980_810, 1_357_787),
    ("cold", "end", "range_scan", 1000, 4_190_049, 3_567_574),
    ("cold", "random", "insert", 1, 4_454_031, 3_339_489),
    ("cold", "random", "insert", 100, 10_671_772, 9_543_655),
    ("cold", "random", "point_lookup", 1, 983_584, 271_718),
    ("cold", "random", "point_lookup", 100, 2_802_223, 2_076_583),
    ("cold", "random", "range_scan", 1000, 4_103_665, 3_481_190),
    ("warm", "middle", "insert", 1, 2_386_933, 1_434_328),
    ("warm", "middle", "insert", 100, 5_318_166, 4_365_561),
    ("warm", "middle", "point_lookup", 1, 960_718, 332_287),
    ("warm", "middle", "point_lookup", 100, 1_839_716, 1_211_285),
    ("warm", "middle", "range_scan", 1000, 3_508_959, 2_802_278),
    ("warm", "end", "insert", 1, 2_226_803, 1_274_198),
    ("warm", "end", "insert", 100, 3_202_011, 2_249_406),
    ("warm", "end", "point_lookup", 1, 880_698, 252_267),
    ("warm", "end", "point_lookup", 100, 1_777_092, 1_148_661),
    ("warm", "end", "range_scan", 1000, 3_508_959, 2_802_278),
    ("warm", "random", "insert", 1, 2_745_218, 1_462_401),
    ("warm", "random", "insert", 100, 7_394_077, 6_101_114),
    ("warm", "random", "point_lookup", 1, 969_772, 252_157),
    ("warm", "random", "point_lookup", 100, 1_947_099, 1_136_248),
    ("warm", "random", "range_scan", 1000, 3_582_575, 2_875_894),
];

/// `--replica 2026-05` (before it).
const BEFORE: [Cell; 30] = [
    ("cold", "middle", "insert", 1, 649_812, 477_975),
    ("cold", "middle", "insert", 100, 2_027_709, 1_850_872),
    ("cold", "middle", "point_lookup", 1, 94_871, 31_848),
    ("cold", "middle", "point_lookup", 100, 993_579, 930_556),
    ("cold", "middle", "range_scan", 1000, 2_910_049, 2_847_574),
    ("cold", "end", "insert", 1, 236_691, 147_854),
    ("cold", "end", "insert", 100, 1_015_881, 923_044),
    ("cold", "end", "point_lookup", 1, 94_851, 31_828),
    ("cold", "end", "point_lookup", 100, 1_020_810, 957_787),
    ("cold", "end", "range_scan", 1000, 2_910_049, 2_847_574),
    ("cold", "random", "insert", 1, 659_031, 478_489),
    ("cold", "random", "insert", 100, 5_610_772, 5_351_655),
    ("cold", "random", "point_lookup", 1, 103_584, 31_718),
    ("cold", "random", "point_lookup", 100, 1_442_223, 1_356_583),
    ("cold", "random", "range_scan", 1000, 2_903_665, 2_841_190),
    ("warm", "middle", "insert", 1, 172_933, 77_328),
    ("warm", "middle", "insert", 100, 1_787_166, 1_672_561),
    ("warm", "middle", "point_lookup", 1, 80_718, 12_287),
    ("warm", "middle", "point_lookup", 100, 959_716, 891_285),
    ("warm", "middle", "range_scan", 1000, 2_628_959, 2_562_278),
    ("warm", "end", "insert", 1, 170_803, 77_198),
    ("warm", "end", "insert", 100, 1_002_011, 900_406),
    ("warm", "end", "point_lookup", 1, 80_698, 12_267),
    ("warm", "end", "point_lookup", 100, 977_092, 908_661),
    ("warm", "end", "range_scan", 1000, 2_628_959, 2_562_278),
    ("warm", "random", "insert", 1, 392_218, 275_401),
    ("warm", "random", "insert", 100, 3_293_077, 3_103_114),
    ("warm", "random", "point_lookup", 1, 89_772, 12_157),
    ("warm", "random", "point_lookup", 100, 987_099, 896_248),
    ("warm", "random", "range_scan", 1000, 2_622_575, 2_555_894),
];

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
            r.cache.as_str(),
            leak(&r.position),
            leak(&r.operation),
            r.batch,
            r.instructions,
            r.store_instructions,
        )
    })
}

fn charged(cells: &[Cell], cache: &str, position: &str, operation: &str, batch: u64) -> u64 {
    cells
        .iter()
        .find(|c| (c.0, c.1, c.2, c.3) == (cache, position, operation, batch))
        .unwrap_or_else(|| panic!("no {cache} {position}/{operation}/{batch}"))
        .4
}

#[test]
fn sqlite_cold_and_warm_under_the_memory_tracker() {
    let cells = cells(&run("2026-07"));
    assert_eq!(cells, TRACKER);
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
    assert_eq!(cells, BEFORE);
    let at = |cache, position, operation, batch| charged(&cells, cache, position, operation, batch);
    // Without page charges the cache only saves work: every warm cell of this table is
    // cheaper than its cold one.
    for c in cells.iter().filter(|c| c.0 == "warm") {
        assert!(c.4 < at("cold", c.1, c.2, c.3), "{c:?}");
    }
}
