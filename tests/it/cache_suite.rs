//! `--suite cache`: the sweep over W (update messages of the workload on the connection
//! before the measured one) for both SQLite bindings, with exact counts; its W = 0 and its
//! `full+1` are seed003's cold and warm cells of the same run, and its files carry W.

use std::path::Path;

use icbench::report::{self, CacheState, Report, ScenarioResult};

use crate::support::{leak, ok_rows};

/// (store, journal mode, position, operation, batch, W, charged instructions, store
/// instructions, heap pages accessed, stable pages accessed).
type Cell = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    u64,
    &'static str,
    u64,
    u64,
    u64,
    u64,
);

/// The sweep at 2,000 rows under `2026-07`: one-row inserts, then one-key lookups, per
/// position and store. A one-row insert is dearest on the fresh connection (W = 0);
/// ic-sqlite-vfs's random one-row insert costs about as much at W = 1 and in the warm state
/// as cold, and 1,996,373 at W = 3.
const SWEEP: [Cell; 32] = [
    (
        "sqlite", "PERSIST", "middle", "insert", 1, "0", 4_603_464, 3_657_507, 19, 8,
    ),
    (
        "sqlite", "PERSIST", "middle", "insert", 1, "1", 2_067_936, 1_114_439, 13, 2,
    ),
    (
        "sqlite", "PERSIST", "middle", "insert", 1, "3", 2_067_320, 1_034_486, 13, 2,
    ),
    (
        "sqlite", "PERSIST", "middle", "insert", 1, "full+1", 2_228_093, 1_274_357, 14, 2,
    ),
    (
        "sqlite-vfs",
        "",
        "middle",
        "insert",
        1,
        "0",
        3_652_655,
        2_708_026,
        14,
        4,
    ),
    (
        "sqlite-vfs",
        "",
        "middle",
        "insert",
        1,
        "1",
        1_987_186,
        1_038_344,
        10,
        2,
    ),
    (
        "sqlite-vfs",
        "",
        "middle",
        "insert",
        1,
        "3",
        1_987_186,
        1_038_344,
        10,
        2,
    ),
    (
        "sqlite-vfs",
        "",
        "middle",
        "insert",
        1,
        "full+1",
        1_987_752,
        1_038_592,
        10,
        2,
    ),
    (
        "sqlite",
        "PERSIST",
        "middle",
        "point_lookup",
        1,
        "0",
        1_054_980,
        431_848,
        10,
        2,
    ),
    (
        "sqlite",
        "PERSIST",
        "middle",
        "point_lookup",
        1,
        "1",
        796_437,
        172_431,
        9,
        0,
    ),
    (
        "sqlite",
        "PERSIST",
        "middle",
        "point_lookup",
        1,
        "3",
        803_636,
        172_506,
        9,
        0,
    ),
    (
        "sqlite",
        "PERSIST",
        "middle",
        "point_lookup",
        1,
        "full+1",
        882_054,
        252_426,
        10,
        0,
    ),
    (
        "sqlite-vfs",
        "",
        "middle",
        "point_lookup",
        1,
        "0",
        1_070_911,
        529_015,
        10,
        2,
    ),
    (
        "sqlite-vfs",
        "",
        "middle",
        "point_lookup",
        1,
        "1",
        874_779,
        332_593,
        10,
        0,
    ),
    (
        "sqlite-vfs",
        "",
        "middle",
        "point_lookup",
        1,
        "3",
        877_909,
        332_593,
        10,
        0,
    ),
    (
        "sqlite-vfs",
        "",
        "middle",
        "point_lookup",
        1,
        "full+1",
        957_909,
        412_593,
        11,
        0,
    ),
    (
        "sqlite", "PERSIST", "random", "insert", 1, "0", 4_454_459, 3_339_510, 19, 7,
    ),
    (
        "sqlite", "PERSIST", "random", "insert", 1, "1", 2_778_256, 1_655_368, 14, 4,
    ),
    (
        "sqlite", "PERSIST", "random", "insert", 1, "3", 2_777_319, 1_655_168, 14, 4,
    ),
    (
        "sqlite", "PERSIST", "random", "insert", 1, "full+1", 2_743_914, 1_622_306, 14, 4,
    ),
    (
        "sqlite-vfs",
        "",
        "random",
        "insert",
        1,
        "0",
        3_663_008,
        2_629_004,
        14,
        4,
    ),
    (
        "sqlite-vfs",
        "",
        "random",
        "insert",
        1,
        "1",
        3_578_694,
        2_541_278,
        14,
        4,
    ),
    (
        "sqlite-vfs",
        "",
        "random",
        "insert",
        1,
        "3",
        1_996_373,
        958_957,
        10,
        2,
    ),
    (
        "sqlite-vfs",
        "",
        "random",
        "insert",
        1,
        "full+1",
        3_580_870,
        2_541_510,
        14,
        4,
    ),
    (
        "sqlite",
        "PERSIST",
        "random",
        "point_lookup",
        1,
        "0",
        983_982,
        271_718,
        10,
        1,
    ),
    (
        "sqlite",
        "PERSIST",
        "random",
        "point_lookup",
        1,
        "1",
        974_731,
        262_006,
        10,
        1,
    ),
    (
        "sqlite",
        "PERSIST",
        "random",
        "point_lookup",
        1,
        "3",
        980_633,
        262_009,
        10,
        1,
    ),
    (
        "sqlite",
        "PERSIST",
        "random",
        "point_lookup",
        1,
        "full+1",
        969_814,
        252_157,
        11,
        0,
    ),
    (
        "sqlite-vfs",
        "",
        "random",
        "point_lookup",
        1,
        "0",
        1_080_221,
        449_104,
        10,
        2,
    ),
    (
        "sqlite-vfs",
        "",
        "random",
        "point_lookup",
        1,
        "1",
        980_187,
        350_060,
        10,
        1,
    ),
    (
        "sqlite-vfs",
        "",
        "random",
        "point_lookup",
        1,
        "3",
        983_893,
        350_076,
        10,
        1,
    ),
    (
        "sqlite-vfs",
        "",
        "random",
        "point_lookup",
        1,
        "full+1",
        1_046_499,
        412_682,
        12,
        0,
    ),
];

fn read(dir: &Path) -> Report {
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    report::from_json(&text).unwrap()
}

fn cells(report: &Report) -> Vec<Cell> {
    ok_rows(report, |r| {
        let pages = r.pages.unwrap();
        (
            leak(&r.store),
            leak(&r.journal_mode),
            leak(&r.position),
            leak(&r.operation),
            r.batch,
            leak(&r.warm_ups),
            r.instructions,
            r.store_instructions,
            pages.heap_wasm_pages_accessed,
            pages.stable_wasm_pages_accessed,
        )
    })
}

#[test]
fn the_sweep_over_w_is_exact_and_meets_seed003_at_its_ends() {
    let out = crate::support::scratch_dir("cache-suite");
    let stdout = crate::support::run_bench_into(
        &out,
        &[
            "--suite",
            "seed003,cache",
            "--rows",
            "2000",
            "--stores",
            "btree,sqlite,sqlite-vfs",
            "--journal-modes",
            "PERSIST",
            "--batches",
            "1",
            "--no-reads",
            "--positions",
            "middle,random",
            "--cache-warmups",
            "0,1,3",
            "--cache-batches",
            "1",
            "--cache-lookups",
            "1",
            "--cache-positions",
            "middle,random",
            // The seed's layout, whose counts these are (the StableBTreeMap filled beside
            // ic-rusqlite): they did not move when each store got a canister of its own.
            "--layout",
            "shared",
        ],
    );
    let seed003 = read(&out);
    let cache = read(&out.join("cache"));
    assert_eq!(cells(&cache), SWEEP);

    // W = 0 is seed003's cold cell, `full+1` its warm one: the same message on the same
    // state, every count and page.
    let same = |a: &ScenarioResult, b: &ScenarioResult| {
        (
            a.instructions,
            a.store_instructions,
            a.pages,
            a.args.clone(),
        ) == (
            b.instructions,
            b.store_instructions,
            b.pages,
            b.args.clone(),
        )
    };
    let mut met = 0;
    for r in seed003.results.iter().filter(|r| r.store != "btree") {
        let w = if r.cache == CacheState::Cold {
            "0"
        } else {
            "full+1"
        };
        let swept = cache
            .results
            .iter()
            .find(|c| {
                (
                    &c.store,
                    &c.journal_mode,
                    &c.position,
                    &c.operation,
                    c.batch,
                    c.warm_ups.as_str(),
                ) == (
                    &r.store,
                    &r.journal_mode,
                    &r.position,
                    &r.operation,
                    r.batch,
                    w,
                )
            })
            .unwrap_or_else(|| panic!("no W={w} cell for {r:?}"));
        assert!(same(r, swept), "{r:?}\n{swept:?}");
        met += 1;
    }
    // 2 positions x 2 stores x cold and warm.
    assert_eq!(met, 8);

    // The files carry W: results.csv's column, the ids' suffix, a plot per workload.
    let csv = std::fs::read_to_string(out.join("cache/results.csv")).unwrap();
    assert!(
        csv.starts_with("suite,engine,store,journal_mode,cache,warm_ups,position,"),
        "{csv}"
    );
    assert!(csv.contains("\r\ncache,embedded,sqlite,PERSIST,warm,3,middle,insert,1,2000,"));
    let ids = report::scenario_ids(&cache.results);
    assert_eq!(ids[0], "sqlite-persist/middle/insert/1/w0");
    assert_eq!(ids[3], "sqlite-persist/middle/insert/1/wfull_1");
    assert!(out.join("cache/plot-middle-insert-1.svg").is_file());
    assert!(out.join("cache/plot-random-point_lookup-1.svg").is_file());
    assert!(stdout.contains("| workload"), "{stdout}");
    std::fs::remove_dir_all(&out).unwrap();
}
