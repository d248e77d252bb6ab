//! The sysbench suite (seed 004): its matrix, gate, tables, canister methods and an end-to-end run.

use super::*;

use icbench::report::{ScenarioResult, Status, Workload};
use icbench::suites::sysbench::{self, Section, TableRow, TableSection, WORKLOADS};

#[test]
fn sysbench_matrix_is_23_workloads_per_mode_and_the_maps_subset() {
    assert_eq!(WORKLOADS.len(), 23);
    let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
    assert_eq!(
        names,
        [
            "oltp_point_select",
            "oltp_range_select",
            "oltp_sum_range",
            "oltp_order_range",
            "oltp_distinct_range",
            "oltp_index_scan",
            "select_random_points",
            "select_random_ranges",
            "covering_index_scan",
            "groupby_scan",
            "index_join",
            "index_join_scan",
            "types_table_scan",
            "table_scan",
            "oltp_read_only",
            "oltp_bulk_insert",
            "oltp_insert",
            "oltp_update_index",
            "oltp_update_non_index",
            "oltp_delete_insert",
            "oltp_write_only",
            "types_delete_insert",
            "oltp_read_write",
        ]
    );
    let reads = WORKLOADS.iter().filter(|w| w.section == Section::Reads);
    assert_eq!(reads.count(), 15);
    let map: Vec<&str> = WORKLOADS
        .iter()
        .filter(|w| w.on_map)
        .map(|w| w.name)
        .collect();
    assert_eq!(
        map,
        [
            "oltp_point_select",
            "oltp_range_select",
            "oltp_sum_range",
            "oltp_index_scan",
            "select_random_points",
            "select_random_ranges",
            "covering_index_scan",
            "oltp_insert",
            "oltp_update_index",
            "oltp_update_non_index",
            "oltp_delete_insert",
            "oltp_write_only",
        ]
    );
    let mut cfg = sysbench::Config {
        journal_modes: vec![JournalMode::Wal, JournalMode::Delete],
        ..sysbench::Config::default()
    };
    let m = cfg.matrix();
    assert_eq!(m.len(), 12 + 2 * 23);
    assert!(m[..12].iter().all(|s| s.journal_mode.is_none()));
    assert!(m[12..35]
        .iter()
        .all(|s| s.journal_mode == Some(JournalMode::Wal)));
    assert!(m[35..]
        .iter()
        .all(|s| s.journal_mode == Some(JournalMode::Delete)));
    cfg.stores = vec![StoreKind::Btree];
    assert_eq!(cfg.matrix().len(), 12);
    assert!(cfg.validate().is_ok());
    cfg.rows = 1_999;
    assert!(cfg.validate().is_err());
    // Parameters: deterministic, inside the table, inserts above the prefill.
    for w in WORKLOADS {
        for event in 0..3 {
            let p = sysbench::params(w.name, 2_000, 7, event);
            assert_eq!(p, sysbench::params(w.name, 2_000, 7, event));
            // As many as the canister takes for the workload.
            assert_eq!(p.len(), w.params, "{}", w.name);
            assert!(p.iter().all(|&x| x >= 1), "{}", w.name);
            if w.name == "oltp_insert" {
                assert!(p.iter().all(|&x| x > 2_000));
            } else {
                assert!(p.iter().all(|&x| x <= 2_000), "{}: {p:?}", w.name);
            }
        }
    }
}

fn section(ratios: &[Option<f64>]) -> TableSection {
    let rows: Vec<TableRow> = ratios
        .iter()
        .enumerate()
        .map(|(i, &r)| TableRow {
            workload: format!("w{i}"),
            btree: r.map(|_| 100.0),
            sqlite: Some(r.map_or(50.0, |r| 100.0 * r)),
            ratio: r,
        })
        .collect();
    let known: Vec<f64> = ratios.iter().flatten().copied().collect();
    TableSection {
        journal_mode: "WAL".into(),
        section: "reads".into(),
        rows,
        average: (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64),
    }
}

#[test]
fn sysbench_gate_fails_strictly_above_the_ceilings() {
    // Seed 004's multiplier: only with a positive baseline and a non-negative candidate.
    assert_eq!(sysbench::ratio(Some(2.0), Some(3.0)), Some(1.5));
    assert_eq!(sysbench::ratio(Some(0.0), Some(3.0)), None);
    assert_eq!(sysbench::ratio(None, Some(3.0)), None);
    assert_eq!(sysbench::ratio(Some(2.0), Some(-1.0)), None);
    assert_eq!(sysbench::ratio(Some(2.0), Some(0.0)), Some(0.0));
    // Exactly at the ceilings passes.
    assert!(sysbench::gate(&[section(&[Some(6.0), Some(4.0), None])], 6.0, 5.0).is_empty());
    // Just above a workload ceiling fails that workload only.
    let f = sysbench::gate(&[section(&[Some(6.000_001), Some(1.0)])], 6.0, 5.0);
    assert_eq!(f, ["WAL reads w0: 6.00x > 6x"]);
    // An average just above its ceiling fails the section; "--" rows are left out of it.
    let f = sysbench::gate(&[section(&[Some(5.0), Some(5.000_002), None])], 6.0, 5.0);
    assert_eq!(f, ["WAL reads average: 5.00x > 5x"]);
    // A workload SQLite did not measure fails.
    let mut s = section(&[Some(1.0)]);
    s.rows[0].sqlite = None;
    s.rows[0].ratio = None;
    assert_eq!(
        sysbench::gate(&[s], 6.0, 5.0),
        ["WAL reads w0: no measurement"]
    );
}

fn fake_result(store: &str, mode: &str, workload: &str, per_event: f64) -> ScenarioResult {
    ScenarioResult {
        suite: "sysbench".into(),
        engine: "embedded".into(),
        store: store.into(),
        journal_mode: mode.into(),
        position: "reads".into(),
        operation: workload.into(),
        batch: 10,
        rows_before: 2_000,
        method: "sysbench_run".into(),
        store_instructions: (per_event * 10.0) as u64,
        store_instructions_per_row: per_event,
        ..ScenarioResult::default()
    }
}

#[test]
fn sysbench_tables_pair_the_map_with_each_mode() {
    let mut results = vec![
        fake_result("btree", "", "oltp_point_select", 100.0),
        fake_result("sqlite", "WAL", "oltp_point_select", 700.0),
        fake_result("sqlite", "WAL", "table_scan", 9e9),
        fake_result("btree", "", "oltp_insert", 100.0),
        fake_result("sqlite", "WAL", "oltp_insert", 200.0),
    ];
    results[1].status = Status::Ok;
    let mut report = Report {
        suite: "sysbench".into(),
        engine: "embedded".into(),
        workload: Some(Workload {
            rows_before: 2_000,
            seed: 1,
            payload_size: 180,
        }),
        wall_seconds: 0.0,
        prefill: None,
        executed_instructions: 0,
        work: None,
        results,
        notes: vec![],
        extra: Default::default(),
    };
    // The field name results.json has always used for the ceilings.
    report.set_extra(
        "ceilings",
        &sysbench::Ceilings {
            max: 6.0,
            max_section: 5.0,
        },
    );
    let s = sysbench::sections(&report);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].section.as_str(), s[0].rows.len()), ("reads", 15));
    assert_eq!((s[1].section.as_str(), s[1].rows.len()), ("writes", 8));
    assert_eq!(s[0].rows[0].ratio, Some(7.0));
    assert_eq!(s[0].rows[13].workload, "table_scan");
    assert_eq!(s[0].rows[13].ratio, None);
    assert_eq!(s[0].average, Some(7.0));
    assert_eq!(s[1].average, Some(2.0));
    let failures = sysbench::report_gate(&report);
    assert!(failures.contains(&"WAL reads oltp_point_select: 7.00x > 6x".to_string()));
    assert!(failures.contains(&"WAL reads average: 7.00x > 5x".to_string()));
    // The 20 other workloads were not measured in this fake run.
    assert_eq!(failures.len(), 2 + 20);
    let md = report::markdown(&report, &sysbench::document(&report));
    let row = |cells: &[&str]| {
        md.lines().any(|l| {
            l.trim_matches('|')
                .split('|')
                .map(str::trim)
                .eq(cells.iter().copied())
        })
    };
    assert!(row(&["oltp_point_select", "100", "700", "7.00"]), "{md}");
    assert!(row(&["table_scan", "--", "9,000,000,000", "--"]), "{md}");
    assert!(row(&["Average", "", "", "7.00"]), "{md}");
    assert_has(&md, "\n### Reads\n");
    assert!(md.contains("\n## Performance Ceiling Check (6x individual, 5x average)\n"));
    assert!(md.contains("- FAIL WAL reads average: 7.00x > 5x"));
}

#[test]
fn sysbench_methods_contract() {
    with_canister(|c| {
        let err = c.sysbench_reset("postgres", 10).unwrap().value.unwrap_err();
        assert_has(&err, "accepted: btree, sqlite");
        let err = c.sysbench_reset("sqlite", 0).unwrap().value.unwrap_err();
        assert_has(&err, "rows must be in 1..=1000000");
        let err = c
            .sysbench_run("sqlite", "oltp_point_select", &[1; 10])
            .unwrap()
            .value
            .unwrap_err();
        assert_has(&err, "call sysbench_reset");
        for store in ["btree", "sqlite"] {
            // SQLite: sbtest2 and the types table, min(rows, 1000) rows each.
            let side = if store == "sqlite" { 400 } else { 0 };
            assert_eq!(c.sysbench_reset(store, 200).unwrap().value, Ok(side));
            for (first, count) in [(0, 10), (195, 10), (1, 0), (1, 10_001)] {
                let r = c.sysbench_prefill(store, first, count, 200).unwrap().value;
                assert!(r.is_err(), "{store} {first} {count}: {r:?}");
            }
            assert_eq!(
                c.sysbench_prefill(store, 1, 200, 200).unwrap().value,
                Ok(200)
            );
            let run = |c: &mut BenchClient<'_>, w: &str, p: &[u64]| {
                c.sysbench_run(store, w, p).unwrap().value
            };
            let err = run(c, "tpcc", &[1]).unwrap_err();
            assert_has(&err, "unknown sysbench workload \"tpcc\"");
            let err = run(c, "oltp_point_select", &[1; 9]).unwrap_err();
            assert_has(&err, "takes 10 parameters, got 9");
            let err = run(c, "oltp_range_select", &[0]).unwrap_err();
            assert_has(&err, "outside 1..=");
            let err = run(c, "oltp_range_select", &[(1 << 40) + 1]).unwrap_err();
            assert_has(&err, "outside 1..=");
            // 10 point selects of present ids read 10 c values of 120 bytes.
            let r = run(c, "oltp_point_select", &[1, 2, 3, 4, 5, 6, 7, 8, 9, 200]).unwrap();
            assert_eq!((r.ops, r.found, r.bytes), (10, 10, 1_200), "{store}");
            assert!(r.instructions > 0);
            let r = run(c, "oltp_point_select", &[201; 10]).unwrap();
            assert_eq!((r.ops, r.found), (10, 0), "{store}");
            let r = run(c, "oltp_range_select", &[151]).unwrap();
            assert_eq!((r.ops, r.found), (1, 50), "{store}: ids 151..=200");
            // Inserting a present id is refused (SQLite's PRIMARY KEY, the map the same).
            let err = run(
                c,
                "oltp_insert",
                &[300, 301, 302, 303, 304, 305, 306, 307, 308, 5],
            )
            .unwrap_err();
            assert!(!err.is_empty());
            let r = run(
                c,
                "oltp_insert",
                &[300, 301, 302, 303, 304, 305, 306, 307, 308, 309],
            )
            .unwrap();
            assert_eq!((r.ops, r.found), (10, 10), "{store}");
            // k moves with k = k + 1: the index sees the row under its new k.
            let r = run(c, "oltp_update_index", &[1; 10]).unwrap();
            assert_eq!(r.found, 10, "{store}");
        }
        let err = c
            .sysbench_run("btree", "table_scan", &[1])
            .unwrap()
            .value
            .unwrap_err();
        assert_has(&err, "not in the map's key-value subset");
        // Every workload runs on SQLite (parameters drawn for 2,000 rows: ranges may run
        // past the 200 rows here, inserts go above every id used so far).
        for w in WORKLOADS {
            let p = sysbench::params(w.name, 2_000, 3, 0)
                .into_iter()
                .map(|x| {
                    if w.name == "oltp_insert" {
                        x + 1_000
                    } else {
                        x
                    }
                })
                .collect::<Vec<_>>();
            let r = c.sysbench_run("sqlite", w.name, &p).unwrap().value;
            assert!(r.is_ok(), "{}: {r:?}", w.name);
        }
        users_stores_untouched(c);
    });
}

#[test]
fn sysbench_end_to_end_is_deterministic_and_the_gate_sets_the_exit_status() {
    let args = ["--suite", "sysbench", "--sysbench-rows", "2000"];
    let (_, a, _, stdout) = end_to_end_twice("sysbench", &args);
    assert_eq!(a.results.len(), 12 + 23);
    for r in &a.results {
        assert_eq!(r.status, Status::Ok, "{r:?}");
        assert!(r.store_instructions > 0, "{r:?}");
    }
    assert_has(&stdout, "SQLite PERSIST vs StableBTreeMap");
    assert_has(&stdout, "All tests within ceilings.");
    // A ceiling below every multiplier: every file is still written, then exit status 1.
    let third = temp_dir("sysbench-3");
    let (stdout, stderr) = crate::support::run_bench_exit(
        &third,
        &[&args[..], &["--sysbench-max-ratio", "0.01"]].concat(),
        1,
    );
    assert_has(&stderr, "sysbench gate failed");
    assert_has(&stdout, "- FAIL PERSIST reads oltp_point_select");
    let c = read_report(&third.join("sysbench/results.json"));
    assert_eq!(a.results, c.results);
    assert!(third.join("sysbench/plot-sysbench.svg").is_file());
}
