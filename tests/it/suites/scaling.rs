//! The scaling suite: every operation at every size, the storage priced, and one worker's order.

use super::*;
use icbench::bench_canister::IdSequence;
use icbench::engine::cost::CyclesFees;
use icbench::report::Status;

#[test]
fn scaling_measures_every_operation_at_every_size_and_prices_the_storage() {
    let out = temp_dir("scaling");
    run_into(&out, &["--suite", "scaling", "--scaling-max-rows", "2000"]);
    let report = read_report(&out.join("scaling/results.json"));
    every_operation_and_the_storage_at_every_size(&report);
    // Ingress of add_users_btree(offset, step, count): 1,200,000 + 2,000 per byte of the
    // 15-byte method name and the 33-byte Candid argument (DIDL, 3 nat64 types, 24 bytes).
    let insert = report
        .results
        .iter()
        .find(|r| r.store == "btree" && r.operation == "insert" && r.position == "middle")
        .unwrap();
    assert_eq!(insert.ingress_cycles, 1_200_000 + 2_000 * (15 + 33));
    // A second size adds rows, so the range scan at 2,000 starts at id 5,000 (the middle).
    let scan = report
        .results
        .iter()
        .find(|r| r.rows_before == 2_000 && r.operation == "range_scan")
        .unwrap();
    assert_eq!(scan.args, "(5000 : nat64, 1000 : nat64)");
    assert!(out.join("scaling/plot-insert-middle-1.svg").is_file());
    let md = std::fs::read_to_string(out.join("scaling/report.md")).unwrap();
    assert_has(&md, "Storage for 30 days");
    assert_has(&md, "Inserting 1,000,000 rows at each size");
    // The decision table opens the report, at the largest size, with the storage row.
    let decision = md
        .find("## Which store is cheapest, at 2,000 rows")
        .expect("decision table");
    assert!(
        decision < md.find("## insert 1 row (middle)").unwrap(),
        "{md}"
    );
    assert_has(&md, "| storage for 30 days (whole canister)");

    upgrades_at_the_largest_size(&report, &md);
    stable_bytes_are_each_stores_own(&report);
}

/// Every operation ran at both sizes for the map and SQLite, and the whole canister's bytes
/// are priced as the replica's `memory_cost` prices them.
fn every_operation_and_the_storage_at_every_size(report: &Report) {
    let ops = [
        ("middle", "insert", 1),
        ("random", "insert", 1),
        ("middle", "insert", 100),
        ("middle", "insert", 1000),
        ("random", "point_lookup", 1),
        ("random", "point_lookup", 100),
        ("middle", "range_scan", 1000),
    ];
    for n in [1_000, 2_000] {
        for (store, mode) in [("btree", ""), ("sqlite", "OFF")] {
            for (position, operation, batch) in ops {
                let r = record_by(
                    &report.results,
                    &[
                        By::Store(store),
                        By::JournalMode(mode),
                        By::RowsBefore(n),
                        By::Position(position),
                        By::Operation(operation),
                        By::Batch(batch),
                    ],
                );
                assert_eq!(r.status, Status::Ok, "{r:?}");
                assert!(r.store_instructions > 0, "{r:?}");
            }
        }
        // Storage: the whole canister's bytes priced exactly as the replica's memory_cost.
        for (subnet, fees) in [
            ("13-node subnet", CyclesFees::APPLICATION_13),
            ("34-node subnet", CyclesFees::APPLICATION_34),
        ] {
            let r = report
                .results
                .iter()
                .find(|r| r.store == "btree" && r.rows_before == n && r.position == subnet)
                .unwrap();
            assert!(r.bytes > 0);
            // Under the newest vintage: the memory and the canister's base fee.
            let replica = icbench::engine::cost::Replica::NEWEST;
            assert_eq!(replica.base_per_second_fee, 10_000);
            assert_eq!(
                r.cycles as u128,
                fees.storage_cost(&replica, r.bytes, 30 * 86_400)
            );
        }
    }
}

/// The upgrade at the largest size only: one install_code per canister (SQLite once, in the
/// mode it was filled in), charged and priced as the replica does.
fn upgrades_at_the_largest_size(report: &Report, md: &str) {
    for (store, mode) in [("heap", ""), ("btree", ""), ("sqlite", "PERSIST")] {
        let of = |operation: &str| {
            let found: Vec<_> = report
                .results
                .iter()
                .filter(|r| r.store == store && r.operation == operation)
                .collect();
            assert_eq!(found.len(), 1, "{store} {operation}: {found:?}");
            found[0].clone()
        };
        let up = of("upgrade");
        assert_eq!(
            (
                up.journal_mode.as_str(),
                up.rows_before,
                up.batch,
                up.method.as_str()
            ),
            (mode, 2_000, 2_000, "install_code"),
        );
        assert_eq!(up.status, Status::Ok, "{up:?}");
        let (pre, post) = (of("pre_upgrade"), of("post_upgrade"));
        // The whole install_code: both hooks and compiling the module.
        assert!(
            pre.instructions > 0 && post.instructions > 0,
            "{pre:?} {post:?}"
        );
        assert!(
            up.instructions > pre.instructions + post.instructions,
            "{up:?}"
        );
        assert_eq!(
            up.cycles as u128,
            CyclesFees::APPLICATION_13.execution_cost(up.instructions, false)
        );
    }
    assert_has(md, "| upgrade (to a new build) ");
    assert_has(md, "## Upgrade to a new build at the largest size");
}

/// Stable bytes: each store's own size, from the canister filled as the suite fills it (two
/// messages, to 1,000 and to 2,000 rows): the map's pages, SQLite's file, nothing for the
/// heap map.
fn stable_bytes_are_each_stores_own(report: &Report) {
    let stable = |store: &str, n: u64| {
        report
            .results
            .iter()
            .find(|r| r.store == store && r.rows_before == n && r.operation == "stable_bytes")
            .unwrap()
            .bytes
    };
    let wasm = std::fs::read(wasm_path()).unwrap();
    let mut engine = icbench::engine::embedded::EmbeddedEngine::default();
    let mut c = icbench::bench_canister::BenchClient::install(&mut engine, &wasm).unwrap();
    c.set_payload_size(100).unwrap().value.unwrap();
    for store in ["btree", "sqlite"] {
        for from in [0, 1_000] {
            let inserted = c
                .add_users(store, IdSequence::new(from * 10, 10, 1_000))
                .unwrap()
                .value
                .unwrap();
            assert_eq!(inserted.rows_inserted, 1_000);
        }
    }
    let stats = c.stats().unwrap();
    let btree_pages = stats.btree_stable_pages.expect("this module reports it");
    assert!(btree_pages > 0 && stats.sqlite_page_count > 0, "{stats:?}");
    assert_eq!(stable("btree", 2_000), btree_pages * 65_536);
    assert_eq!(
        stable("sqlite", 2_000),
        stats.sqlite_page_count * stats.sqlite_page_size
    );
    assert_eq!(stable("heap", 2_000), 0);
}

#[test]
fn scaling_refuses_a_store_too_small_for_its_scan() {
    let (code, _, stderr) =
        icbench(&["--suite", "scaling", "--scaling-max-rows", "999", "--quiet"]);
    assert_eq!(code, 2, "{stderr}");
    assert_has(&stderr, "--scaling-max-rows must be at least 1,000");
}

/// On one worker the scaling suite measures one store after the other (its states are not
/// held while another store fills: the memory estimate for `--jobs 1` counts one store at
/// a time), and at each size it measures before the fill goes on; the results are those of
/// two workers.
#[test]
fn scaling_on_one_worker_finishes_a_store_before_the_next_and_measures_each_size_first() {
    let one = temp_dir("scaling-j1");
    let two = temp_dir("scaling-j2");
    run_into(
        &one,
        &[
            "--suite",
            "scaling",
            "--scaling-max-rows",
            "10000",
            "--jobs",
            "1",
        ],
    );
    run_into(
        &two,
        &[
            "--suite",
            "scaling",
            "--scaling-max-rows",
            "10000",
            "--jobs",
            "2",
        ],
    );
    assert!(
        std::fs::read(one.join("scaling/results.csv")).unwrap()
            == std::fs::read(two.join("scaling/results.csv")).unwrap(),
        "results.csv differs between --jobs 1 and --jobs 2"
    );
    let units = std::fs::read_to_string(one.join("scaling/work.csv")).unwrap();
    // Each unit's store, from its name, in the order the units started.
    let store_of = |name: &str| -> Option<&'static str> {
        if name.starts_with("compile ") || name.starts_with("install ") {
            // Before the stores' work: each module's canister.
            None
        } else if name.contains("sqlite-vfs") || name.contains("sqlite_vfs") {
            Some("sqlite-vfs")
        } else if name.contains("btree ") || name.contains("StableBTreeMap") {
            Some("btree")
        } else if name.contains("sqlite ") || name.contains("SQLite") {
            Some("sqlite")
        } else if name.contains("heap ") {
            Some("heap")
        } else {
            None
        }
    };
    let names: Vec<String> = units
        .lines()
        .skip(1)
        .map(|l| l.split('"').nth(1).unwrap().to_string())
        .collect();
    let mut order: Vec<&str> = Vec::new();
    for store in names.iter().filter_map(|n| store_of(n)) {
        if order.last() != Some(&store) {
            assert!(
                !order.contains(&store),
                "{store} came back after another store: {names:?}"
            );
            order.push(store);
        }
    }
    assert_eq!(order.len(), 4, "{names:?}");
    // The StableBTreeMap's operations at 1,000 rows come before its fill to 10,000.
    let at = |needle: &str| {
        names
            .iter()
            .position(|n| n.starts_with(needle))
            .unwrap_or_else(|| panic!("no unit {needle:?} in {names:?}"))
    };
    assert!(
        at("StableBTreeMap at 1,000 rows: ") < at("fill btree to 10,000 rows"),
        "{names:?}"
    );
}
