//! `--suite cache`: the sweep over W (update messages of the workload on the connection
//! before the measured one) for both SQLite bindings, with exact counts; its W = 0 and its
//! `full+1` are seed003's cold and warm cells of the same run, and its files carry W.

use std::path::Path;

use icbench::report::{self, CacheState, Report, ScenarioResult};

use crate::support::ok_rows;
use crate::support::table::Table;

fn read(dir: &Path) -> Report {
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    report::from_json(&text).unwrap()
}

/// The sweep's cells as a table.
fn cells(report: &Report) -> Table {
    let mut cells = Table::new(&[
        "store",
        "journal mode",
        "position",
        "operation",
        "batch",
        "W",
        "charged",
        "store instructions",
        "heap accessed",
        "stable accessed",
    ]);
    for row in ok_rows(report, |r| {
        let pages = r.pages.unwrap();
        [
            r.store.clone(),
            r.journal_mode.clone(),
            r.position.clone(),
            r.operation.clone(),
            r.batch.to_string(),
            r.warm_ups.clone(),
            r.instructions.to_string(),
            r.store_instructions.to_string(),
            pages.heap_wasm_pages_accessed.to_string(),
            pages.stable_wasm_pages_accessed.to_string(),
        ]
    }) {
        cells.row(row);
    }
    cells
}

/// The sweep at 2,000 rows under `2026-07`: one-row inserts, then one-key lookups, per
/// position and store. A one-row insert is dearest on the fresh connection (W = 0);
/// ic-sqlite-vfs's random one-row insert costs about as much at W = 1 and in the warm state
/// as cold.
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
    insta::assert_snapshot!(cells(&cache).to_string());

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
