//! `--suite tune`: the smallest search end to end, with the counts the cost model fixes: the
//! tracker's charge from the pages each message touched, the older vintage's from the 4 KiB
//! pages it wrote, both vintages executing the same instructions, and the records measured
//! beside the engine's vintage equal to a run under that vintage.

use std::path::Path;

use icbench::bench_canister::{BenchClient, IdSequence, Module};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::report::{self, Report, ScenarioResult, Status};
use icbench::suites::tune::WORKLOADS;

use crate::support::{bench_wasm_path, icbench_bin, run_bench_into, scratch_dir};

/// The searches below that measure no store of the tune variant.
const NO_VARIANTS: [&str; 2] = ["--tune-variants", "none"];
/// ... and those that measure no other value size.
const NO_VALUE_SIZES: [&str; 2] = ["--tune-value-sizes", "none"];

/// The smallest search: the defaults and one other page size, nothing else varied; the
/// heap map and the StableBTreeMap at their defaults beside (ic-sqlite-vfs, searched in a
/// canister of its own, not: a second `--stores sqlite-vfs` adds it).
const SMALLEST: [&str; 16] = [
    "--suite",
    "tune",
    "--stores",
    "heap,btree,sqlite",
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
    run_bench_into(&out, &[&SMALLEST[..], extra].concat());
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
    let report = run("tune-smallest", &[NO_VARIANTS, NO_VALUE_SIZES].concat());
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
            check_the_cost_model(&pair[0], &pair[1], workload.name);
        }
        // The heap map keeps nothing in stable memory.
        assert_eq!(mine[0].pages.unwrap().stable_wasm_pages_accessed, 0);
    }
}

/// A record under 2026-07 and its twin under 2026-05: the tracker's charge from the pages
/// the message touched, the older vintage's from the 4 KiB pages it wrote, and the same
/// execution and memory otherwise.
fn check_the_cost_model(now: &ScenarioResult, old: &ScenarioResult, workload: &str) {
    {
        {
            let workload_rows = WORKLOADS
                .iter()
                .find(|w| w.name == workload)
                .unwrap()
                .operation
                .rows();
            assert_eq!(key(now), key(old));
            assert_eq!(now.batch, workload_rows);
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
                workload
            );
            // The memory held after the message: the same state.
            assert_eq!(now.bytes, old.bytes);
            assert!(now.bytes > 0);
            // Each Wasm page written holds between 1 and 16 of the 4 KiB pages written.
            let stable = p.stable_wasm_pages_written;
            assert!(
                (stable..=16 * stable).contains(&now.stable_dirty_pages),
                "{}: {} OS pages in {stable} Wasm pages",
                workload,
                now.stable_dirty_pages
            );
        }
    }
}

#[test]
fn the_records_beside_are_those_of_a_run_under_that_vintage() {
    let both = run("tune-both", &NO_VARIANTS);
    let old = run(
        "tune-old",
        &["--tune-variants", "none", "--replica", "2026-05"],
    );
    let beside: Vec<&ScenarioResult> = both
        .results
        .iter()
        .filter(|r| r.store.ends_with(" replica=2026-05"))
        .collect();
    // Both searches measure two page sizes per workload, so they measure the same.
    assert_eq!(beside.len(), old.results.len());
    for (b, o) in beside.into_iter().zip(&old.results) {
        same_but_the_store(b, key(b).0, o);
    }
}

/// `a`, its store named `store`, is `b` in every column.
fn same_but_the_store(a: &ScenarioResult, store: String, b: &ScenarioResult) {
    let a = ScenarioResult { store, ..a.clone() };
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        serde_json::to_value(b).unwrap()
    );
}

/// The tune variant's stores in the smallest search: each beside the default module's, in
/// order, charged by the same cost model; the bounded map answers through its own methods.
#[test]
fn the_variant_stores_are_measured_beside_the_default_modules() {
    let report = run("tune-variants", &NO_VALUE_SIZES);
    let stores = [
        "heap",
        "btree",
        "heap allocator=talc",
        "btree allocator=talc",
        "btree_bounded allocator=talc",
        "sqlite page_size=4096 cache_size=500000 synchronous=OFF",
        "sqlite page_size=65536 cache_size=500000 synchronous=OFF",
    ];
    assert_eq!(report.results.len(), WORKLOADS.len() * stores.len() * 2);
    for (w, workload) in WORKLOADS.iter().enumerate() {
        let mine = &report.results[w * 14..w * 14 + 14];
        for (pair, store) in mine.chunks(2).zip(stores) {
            assert_eq!(pair[0].store, store, "{}", workload.name);
            assert_eq!(pair[1].store, format!("{store} replica=2026-05"));
            assert_eq!(pair[0].status, Status::Ok, "{store}: {:?}", pair[0].status);
            check_the_cost_model(&pair[0], &pair[1], workload.name);
        }
        // The store of the method: the bounded map's own, the others' the default's.
        assert!(
            mine[8]
                .method
                .starts_with(&mine[2].method.replace("btree", "btree_bounded")),
            "{} / {}",
            mine[8].method,
            mine[2].method
        );
        assert_eq!(mine[6].method, mine[2].method);
        assert_eq!(mine[4].method, mine[0].method);
        // The heap map keeps nothing in stable memory, with either allocator.
        assert_eq!(mine[4].pages.unwrap().stable_wasm_pages_accessed, 0);
    }
    let search = &report.extra["tune"];
    assert_eq!(
        search["variant_module"].as_str(),
        Some(icbench::suites::pool::sha256_hex(&tune_wasm()).as_str())
    );
}

/// Other value sizes: after the search's records, per size ascending the heap map, the
/// StableBTreeMap and SQLite at its defaults, each filled alone at that size (the run's own
/// size not again, a size given twice once), charged by the same cost model; the run's
/// records the same as without them, and each size's the same as a run at that size.
#[test]
fn other_value_sizes_follow_the_search_as_a_run_at_that_size_measures_them() {
    // 100 is --payload-size, measured already: not again.
    let sizes = ["--tune-value-sizes", "1000,10,100"];
    let report = run("tune-value-sizes", &[&NO_VARIANTS[..], &sizes].concat());
    let sqlite = "sqlite page_size=4096 cache_size=500000 synchronous=OFF";
    let mut stores: Vec<String> = ["heap", "btree", sqlite]
        .into_iter()
        .chain(["sqlite page_size=65536 cache_size=500000 synchronous=OFF"])
        .map(String::from)
        .collect();
    for size in [10, 1_000] {
        for store in ["heap", "btree", sqlite] {
            stores.push(format!("{store} value_size={size}"));
        }
    }
    assert_eq!(report.results.len(), WORKLOADS.len() * stores.len() * 2);
    let per = stores.len() * 2;
    for (w, workload) in WORKLOADS.iter().enumerate() {
        let mine = &report.results[w * per..(w + 1) * per];
        for (pair, store) in mine.chunks(2).zip(&stores) {
            assert_eq!(&pair[0].store, store, "{}", workload.name);
            assert_eq!(pair[1].store, format!("{store} replica=2026-05"));
            check_the_cost_model(&pair[0], &pair[1], workload.name);
        }
    }
    let extra = &report.extra["tune"];
    assert_eq!(extra["value_sizes"], serde_json::json!([10, 1000]));

    // Exact, from a run: one row inserted into the StableBTreeMap of 2,000 rows of 10 and
    // of 1,000 bytes. At 1,000 bytes a node's values spill over more stable pages.
    let one_row = |size: u64| {
        let store = format!("btree value_size={size}");
        let r = report.results[..per]
            .iter()
            .find(|r| r.store == store)
            .unwrap();
        charged(r)
    };
    assert_eq!(WORKLOADS[0].name, "single-row writes");
    assert_eq!(one_row(10), (1_377_895, [7, 4, 3, 2]));
    // The same message as the default run measures it, its store alone in its canister.
    let users = crate::support::scratch_dir("tune-value-size-10-seed003");
    crate::support::run_bench_into(
        &users,
        &[
            "--rows",
            "2000",
            "--stores",
            "btree",
            "--payload-size",
            "10",
            "--batches",
            "1",
            "--positions",
            "middle",
            "--no-reads",
        ],
    );
    let seed003 = std::fs::read_to_string(users.join("results.json")).unwrap();
    let seed003 = icbench::report::from_json(&seed003).unwrap();
    assert_eq!(seed003.results[0].instructions, 1_377_895);
    assert_eq!(one_row(1_000), (2_207_031, [7, 4, 12, 3]));

    // By construction: the run's own records are those of a run without other sizes...
    let without = run(
        "tune-value-sizes-none",
        &[NO_VARIANTS, NO_VALUE_SIZES].concat(),
    );
    let at_run_size: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| !r.store.contains(" value_size="))
        .collect();
    assert_eq!(at_run_size.len(), without.results.len());
    for (a, b) in at_run_size.into_iter().zip(&without.results) {
        same_but_the_store(a, a.store.clone(), b);
    }
    // ... and a size's records are those of a run whose payload is that size.
    let at_10 = run(
        "tune-payload-10",
        &[&NO_VARIANTS[..], &NO_VALUE_SIZES, &["--payload-size", "10"]].concat(),
    );
    for r in &at_10.results {
        let (store, vintage) = match r.store.split_once(" replica=") {
            Some((store, v)) => (store, format!(" replica={v}")),
            None => (r.store.as_str(), String::new()),
        };
        if store.contains("page_size=65536") {
            continue;
        }
        let sized = format!("{store} value_size=10{vintage}");
        let twin = report
            .results
            .iter()
            .find(|x| {
                x.store == sized
                    && (&x.position, &x.operation, x.batch) == (&r.position, &r.operation, r.batch)
            })
            .unwrap_or_else(|| panic!("{sized}"));
        same_but_the_store(twin, r.store.clone(), r);
    }
}

/// `--tune-value-sizes` refuses what the canister's `set_payload_size` refuses: the bound
/// tune.rs keeps is the canister's.
#[test]
fn the_largest_value_size_is_the_largest_payload_the_canister_takes() {
    use icbench::suites::tune::MAX_VALUE_SIZE;
    let default = std::fs::read(bench_wasm_path()).unwrap();
    let mut engine = EmbeddedEngine::default();
    let mut client = BenchClient::install(&mut engine, &default).unwrap();
    let set = |client: &mut BenchClient<'_>, size| client.set_payload_size(size).unwrap().value;
    assert_eq!(set(&mut client, MAX_VALUE_SIZE), Ok(MAX_VALUE_SIZE));
    assert!(set(&mut client, MAX_VALUE_SIZE + 1)
        .unwrap_err()
        .contains("exceeds the maximum of 1048576 bytes"));
}

fn tune_wasm() -> Vec<u8> {
    Module::TUNE
        .ensure_built_with(true, Some(icbench_bin()))
        .expect("the tune variant builds")
}

/// Only the tune variant has the bounded store; the default module rejects its methods as
/// unknown, and the bound is enforced before any row is written.
#[test]
fn only_the_tune_variant_has_the_bounded_store() {
    let default = std::fs::read(bench_wasm_path()).unwrap();
    let mut engine = EmbeddedEngine::default();
    let mut client = BenchClient::install(&mut engine, &default).unwrap();
    let rejected = client
        .try_add_users("btree_bounded", IdSequence::new(0, 10, 3))
        .unwrap()
        .expect_err("the default module has no btree_bounded store");
    assert!(
        rejected
            .reject
            .to_string()
            .contains("add_users_btree_bounded"),
        "{}",
        rejected.reject
    );

    let tune = tune_wasm();
    let mut engine = EmbeddedEngine::default();
    let mut client = BenchClient::install(&mut engine, &tune).unwrap();
    let added = client
        .add_users("btree_bounded", IdSequence::new(0, 10, 3))
        .unwrap();
    assert_eq!(added.value.unwrap().rows_inserted, 3);
    let read = client
        .get_users("btree_bounded", IdSequence::new(0, 10, 3), false)
        .unwrap();
    let read = read.value.unwrap();
    assert_eq!((read.rows_found, read.bytes_read), (3, 300));
    let scanned = client.scan_users("btree_bounded", 0, 10, false).unwrap();
    assert_eq!(scanned.value.unwrap().rows_found, 3);
    client.set_payload_size(101).unwrap().value.unwrap();
    assert_eq!(
        client
            .add_users("btree_bounded", IdSequence::new(100, 10, 1))
            .unwrap()
            .value
            .unwrap_err(),
        "the payload (101 bytes) is larger than the bounded value type's max_size (100 bytes)"
    );
    assert_eq!(client.clear("btree_bounded").unwrap().value, Ok(3));
}

// ---- ic-sqlite-vfs: its own settings, in a canister of its own ----------------------------

/// Its records' store at `cache_size`.
fn vfs(cache_size: i64) -> String {
    format!("sqlite-vfs cache_size={cache_size}")
}

/// (charged instructions, [heap accessed, heap written, stable accessed, stable written]).
fn charged(r: &ScenarioResult) -> (u64, [u64; 4]) {
    let p = r.pages.unwrap();
    (
        r.instructions,
        [
            p.heap_wasm_pages_accessed,
            p.heap_wasm_pages_written,
            p.stable_wasm_pages_accessed,
            p.stable_wasm_pages_written,
        ],
    )
}

/// `--stores sqlite-vfs` alone: per workload its binding's cache_size (-32,768) and each
/// of `--tune-cache-sizes`, cold then warm, each beside under 2026-05, charged by the same
/// cost model; the counts exact (a cache of 5 pages cannot hold the 2,000-row table, so
/// warm it reads pages again); the report keeps what the binding fixes.
#[test]
fn ic_sqlite_vfs_is_searched_over_its_cache_size_cold_and_warm() {
    let out = scratch_dir("tune-vfs");
    let args = [
        "--suite",
        "tune",
        "--stores",
        "sqlite-vfs",
        "--rows",
        "2000",
        "--tune-cache-sizes",
        "5,-2000",
    ];
    run_bench_into(&out, &args);
    let report = read(&out.join("tune/results.json"));
    let sizes = [-32_768, -2_000, 5];
    assert_eq!(report.results.len(), WORKLOADS.len() * 12);
    for (w, workload) in WORKLOADS.iter().enumerate() {
        let mine = &report.results[w * 12..w * 12 + 12];
        for (i, pair) in mine.chunks(2).enumerate() {
            let store = vfs(sizes[i % 3]);
            assert_eq!(pair[0].store, store, "{}", workload.name);
            assert_eq!(pair[1].store, format!("{store} replica=2026-05"));
            assert_eq!(pair[0].cache.is_cold(), i < 3, "{store}");
            assert_eq!(pair[0].cache, pair[1].cache);
            assert_eq!(pair[0].journal_mode, "");
            assert!(
                pair[0].method.contains("_users_sqlite_vfs"),
                "{}",
                pair[0].method
            );
            check_the_cost_model(&pair[0], &pair[1], workload.name);
        }
    }
    let find = |workload: usize, store: String, cold: bool| {
        let w = &WORKLOADS[workload];
        report
            .results
            .iter()
            .find(|r| {
                r.store == store
                    && r.cache.is_cold() == cold
                    && r.position == w.position.as_str()
                    && r.operation == w.operation.kind()
                    && r.batch == w.operation.rows()
            })
            .unwrap()
    };
    assert_eq!(WORKLOADS[0].name, "single-row writes");
    assert_eq!(
        charged(find(0, vfs(-32_768), true)),
        (3_816_676, [15, 13, 4, 4])
    );
    assert_eq!(
        charged(find(0, vfs(-32_768), false)),
        (1_826_848, [9, 7, 2, 2])
    );
    // The whole table fits 2,000 KiB as it fits 32 MiB: the same counts.
    assert_eq!(
        charged(find(0, vfs(-2_000), false)),
        charged(find(0, vfs(-32_768), false))
    );
    assert_eq!(charged(find(0, vfs(5), false)), (2_410_860, [12, 10, 2, 2]));
    assert_eq!(WORKLOADS[5].name, "batched reads (100 keys)");
    assert_eq!(
        charged(find(5, vfs(-32_768), false)),
        (2_251_441, [14, 11, 0, 0])
    );
    assert_eq!(charged(find(5, vfs(5), false)), (3_887_938, [11, 8, 4, 0]));

    let search = &report.extra["tune"];
    let bindings = search["bindings"].as_array().unwrap();
    assert_eq!(bindings.len(), 1);
    assert_eq!(bindings[0]["defaults"], vfs(-32_768));
    let fixed: Vec<&str> = bindings[0]["fixed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().split(" (").next().unwrap())
        .collect();
    assert_eq!(
        fixed,
        [
            "journal_mode MEMORY",
            "page_size 16384",
            "synchronous OFF",
            "locking_mode EXCLUSIVE"
        ]
    );
}

/// With ic-rusqlite beside it, every other record is the run's without ic-sqlite-vfs,
/// byte for byte and in order (its search runs on an engine of its own, after them), and
/// its own follow each workload's: at its defaults only (the search varies page_size, which
/// its binding fixes), cold and warm.
#[test]
fn ic_sqlite_vfs_beside_the_search_leaves_every_other_record_as_it_was() {
    let alone = run("tune-without-vfs", &[NO_VARIANTS, NO_VALUE_SIZES].concat());
    let with = run(
        "tune-with-vfs",
        &[
            &NO_VARIANTS[..],
            &NO_VALUE_SIZES,
            &["--stores", "sqlite-vfs"],
        ]
        .concat(),
    );
    let (theirs, others): (Vec<&ScenarioResult>, Vec<&ScenarioResult>) = with
        .results
        .iter()
        .partition(|r| r.store.starts_with("sqlite-vfs "));
    assert_eq!(others.len(), alone.results.len());
    for (a, b) in others.into_iter().zip(&alone.results) {
        same_but_the_store(a, a.store.clone(), b);
    }
    assert_eq!(theirs.len(), WORKLOADS.len() * 4);
    let per = with.results.len() / WORKLOADS.len();
    for (w, workload) in WORKLOADS.iter().enumerate() {
        let last = &with.results[(w + 1) * per - 4..(w + 1) * per];
        let stores: Vec<(&str, bool)> = last
            .iter()
            .map(|r| (r.store.as_str(), r.cache.is_cold()))
            .collect();
        assert_eq!(
            stores,
            [
                ("sqlite-vfs cache_size=-32768", true),
                ("sqlite-vfs cache_size=-32768 replica=2026-05", true),
                ("sqlite-vfs cache_size=-32768", false),
                ("sqlite-vfs cache_size=-32768 replica=2026-05", false),
            ],
            "{}",
            workload.name
        );
    }
}

/// Without ic-rusqlite, a setting ic-sqlite-vfs's binding fixes, asked for on the command
/// line, is refused in one line naming why, exit status 2, before any work; with
/// ic-rusqlite beside it the same flags are that store's.
#[test]
fn a_setting_ic_sqlite_vfs_fixes_is_refused_in_the_tune_suite() {
    let dir = scratch_dir("tune-vfs-refused");
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let page = "page_size is fixed at 16384: ic-sqlite-vfs sets page_size 16384 itself on an \
                empty image (its VFS's sector and commit unit), and a later change needs \
                VACUUM, which cannot run inside its update transaction";
    let journal = "journal_mode is fixed at MEMORY: ic-sqlite-vfs keeps its rollback journal \
                   in heap memory (journal_mode MEMORY on every update connection) and has no \
                   WAL (its SQLite is built with SQLITE_OMIT_WAL)";
    let sync = "synchronous is fixed at OFF: ic-sqlite-vfs sets synchronous OFF on every \
                update connection: a message's writes reach stable memory at COMMIT and its \
                VFS's xSync does nothing, so there is nothing to sync";
    let tail = "the tune suite searches its cache_size, or add --stores sqlite";
    for (flags, line) in [
        (
            &["--tune-settings", "page_size"][..],
            format!("--tune-settings: the store sqlite-vfs cannot choose page_size ({page}); {tail}"),
        ),
        (
            &["--tune-settings", "cache_size,journal_mode"],
            format!("--tune-settings: the store sqlite-vfs cannot choose journal_mode ({journal}); {tail}"),
        ),
        (
            &["--tune-page-sizes", "4096"],
            format!("--tune-page-sizes: the store sqlite-vfs cannot choose page_size ({page}); {tail}"),
        ),
        (
            &["--tune-synchronous", "NORMAL"],
            format!("--tune-synchronous: the store sqlite-vfs cannot choose synchronous ({sync}); {tail}"),
        ),
    ] {
        let args = [&["--suite", "tune", "--stores", "sqlite-vfs", "--out", out][..], flags].concat();
        let (code, stdout, stderr) = crate::support::run_icbench(&args);
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (2, "", format!("error: {line}\n").as_str()),
            "{args:?}"
        );
        assert!(!dir.join("out").exists(), "{args:?} made its output directory");
    }
    // Beside ic-rusqlite the flags are its search's: the plan is made.
    crate::support::run_icbench_ok(&[
        "--suite",
        "tune",
        "--stores",
        "sqlite,sqlite-vfs",
        "--tune-settings",
        "page_size",
        "--tune-synchronous",
        "NORMAL",
        "--list-scenarios",
    ]);
}
