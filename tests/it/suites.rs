//! `--suite`: which suites exist, their exact scenario matrices, the selection errors, and
//! small end-to-end runs of each registered suite through the CLI binary (files written,
//! identical numbers on a second run).

use std::path::{Path, PathBuf};

use icbench::report::{self, Report};
use icbench::suites::lookups::{self, LOOKUP_BATCHES};
use icbench::suites::scenario::{
    CacheState, JournalMode, Operation, Position, Scenario, Store, StoreKind,
};
use icbench::suites::shared::Measure;
use icbench::suites::{self as registry, seed003, users, REGISTRY};

#[test]
fn suite_selection_parses_names_lists_and_all() {
    let names = |picked: Vec<&'static dyn registry::Suite>| -> Vec<&str> {
        picked.iter().map(|s| s.name()).collect()
    };
    let select =
        |names: &[&str]| registry::select(&names.iter().map(|n| n.to_string()).collect::<Vec<_>>());
    assert_eq!(names(select(&["seed003"]).unwrap()), ["seed003"]);
    assert_eq!(names(select(&["LOOKUPS"]).unwrap()), ["lookups"]);
    assert_eq!(names(select(&["all"]).unwrap()), REGISTRY.map(|s| s.name()));
    // Duplicates are dropped, the first mention fixes the order.
    assert_eq!(
        names(select(&["lookups", "seed003", "lookups"]).unwrap()),
        ["lookups", "seed003"]
    );
    // The accepted names are the registry's, in order.
    let err = select(&["seed003", "tpcc"]).err().unwrap().to_string();
    assert_eq!(
        err,
        "unknown suite \"tpcc\"; accepted: seed003, lookups, dbbench, keys, sysbench, upgrade, scaling, tune, cache, sustained, all"
    );
    assert!(select(&[""]).is_err());
}

fn all_stores() -> Vec<Store> {
    let mut stores = vec![Store::Heap, Store::BTree];
    stores.extend(JournalMode::ALL.map(Store::Sqlite));
    stores.push(Store::SqliteVfs);
    stores.extend(["mo-map", "mo-pure-map", "mo-region"].map(|name| {
        Store::new(
            icbench::stores::find(name).expect("a store of the table"),
            None,
        )
    }));
    stores
}

#[test]
fn seed003_matrix_is_unchanged_by_the_suites() {
    let cfg = seed003::Config::default();
    assert_eq!(cfg.positions, Position::SEED003);
    let matrix = cfg.matrix();
    // 3 positions x 12 stores x (5 insert batches + 3 reads), cold; then the 7 SQLite stores
    // (6 journal modes, ic-sqlite-vfs) warm, but for the 10,000-row batches
    // (--warm-max-batch).
    assert_eq!(matrix.len(), 288 + 3 * 7 * (4 + 3));
    assert!(matrix[..288].iter().all(|s| s.cache == CacheState::Cold));
    assert!(matrix[288..].iter().all(|s| s.cache == CacheState::Warm
        && s.store.store_kind().def().page_cache
        && s.operation.rows() <= 1_000));
    assert!(matrix.iter().all(|s| s.position != Position::Sorted));
    // --positions sorted: the random draw in ascending order, through the id-list methods.
    let sorted = seed003::Config {
        positions: vec![Position::Sorted],
        users: users::Config {
            stores: vec![Store::BTree],
            ..users::Config::default()
        },
        ..seed003::Config::default()
    };
    let methods: Vec<String> = sorted.matrix().iter().map(Scenario::method).collect();
    assert_eq!(
        methods,
        [
            "add_users_btree_ids",
            "add_users_btree_ids",
            "add_users_btree_ids",
            "add_users_btree_ids",
            "add_users_btree_ids",
            "get_users_btree_ids",
            "get_users_btree_ids",
            "scan_users_btree"
        ]
    );
}

#[test]
fn lookups_matrix_is_every_store_order_and_batch_once() {
    let cfg = lookups::Config::default();
    assert_eq!(cfg.batches, LOOKUP_BATCHES);
    assert_eq!(LOOKUP_BATCHES, [1, 10, 25, 50, 100]);
    // Every store cold (the stores without a page cache in their one state), then the
    // SQLite stores warm.
    let mut expected = Vec::new();
    for cache in CacheState::ALL {
        for position in [Position::Random, Position::Sorted] {
            for store in all_stores() {
                if cache == CacheState::Warm && !store.store_kind().def().page_cache {
                    continue;
                }
                for keys in [1, 10, 25, 50, 100] {
                    expected.push(Scenario {
                        store,
                        position,
                        operation: Operation::PointLookups { keys },
                        cache,
                    });
                }
            }
        }
    }
    assert_eq!(cfg.matrix(), expected);
    assert_eq!(expected.len(), 120 + 70);
    assert_eq!(
        expected[120].key(),
        "sqlite/DELETE/random/point_lookup/1/warm"
    );
    // Drawn keys go to the id-list methods.
    assert_eq!(expected[0].method(), "get_users_heap_ids");
    assert_eq!(expected[5].method(), "get_users_btree_ids");
    assert_eq!(expected[94].method(), "get_users_sqlite_ids");
    assert_eq!(expected[104].method(), "get_users_sqlite_vfs_ids");
    assert_eq!(expected[105].method(), "get_users_mo_map_ids");
}

#[test]
fn each_suite_checks_only_its_own_sizes() {
    let lookups = |batches: Vec<u64>, rows: u64| lookups::Config {
        users: users::Config {
            rows,
            ..users::Config::default()
        },
        batches,
    };
    // seed003's default 10,000-row batch is more than half of 2,000 rows: irrelevant here.
    assert!(lookups(vec![1, 10], 2_000).validate().is_ok());
    let err = lookups(vec![0], 2_000).validate().unwrap_err().to_string();
    assert!(
        err.contains("lookup batch sizes must be between 1 and 1000"),
        "{err}"
    );
    let err = lookups(vec![1_001], 2_000)
        .validate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("got 1001"), "{err}");
    assert!(lookups(vec![], 2_000).validate().is_err());
    let seed003 = seed003::Config {
        users: users::Config {
            rows: 2_000,
            ..users::Config::default()
        },
        ..seed003::Config::default()
    };
    assert!(seed003.validate().is_err());
}

use crate::support::run_icbench as icbench;

#[test]
fn bad_suite_selections_are_refused_before_any_work() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--suite", "ycsb"],
            "invalid value 'ycsb' for '--suite <SUITE>'\n  [possible values: seed003, lookups, dbbench, keys, sysbench, upgrade, scaling, tune, cache, sustained, all]",
        ),
        (
            &["--suite", "all", "--format", "json"],
            "--format json/csv prints one suite",
        ),
        (
            &["--suite", "lookups", "--lookup-batches", "0"],
            "lookup batch sizes must be between 1 and",
        ),
        (
            &["--suite", "keys", "--keys-rows", "1050"],
            "--keys-rows must be a multiple of 100 between 1000 and 200000",
        ),
        (
            &["--suite", "keys", "--keys-journal-mode", "FAST"],
            "invalid value 'FAST' for '--keys-journal-mode <KEYS_JOURNAL_MODE>'\n  [possible values: DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF]",
        ),
        (
            &["--suite", "sysbench", "--sysbench-rows", "1999"],
            "--sysbench-rows must be between 2000 and 1000000, got 1999",
        ),
        (
            &[
                "--suite",
                "sysbench",
                "--sysbench-journal-modes",
                "WAL,FAST",
            ],
            "invalid value 'FAST' for '--sysbench-journal-modes <SYSBENCH_JOURNAL_MODES>'",
        ),
        (
            &["--suite", "sysbench", "--sysbench-max-ratio", "0"],
            "--sysbench-max-ratio and --sysbench-max-section-ratio must be positive numbers",
        ),
        (
            &["--suite", "sysbench", "--sysbench-max-section-ratio", "NaN"],
            "must be positive numbers",
        ),
        (
            &["--stores", "btree,x"],
            "invalid value 'x' for '--stores <STORES>'\n  [possible values: heap, btree, sqlite, sqlite-vfs, mo-map, mo-pure-map, mo-region, mo-map-classic]",
        ),
        (
            &["--suite", "keys", "--stores", "heap"],
            "no store of the keys suite selected (--stores btree,sqlite; it has no heap, sqlite-vfs, mo-map, mo-pure-map, mo-region or mo-map-classic store)",
        ),
        (
            &["--positions", "top"],
            "invalid value 'top' for '--positions <POSITIONS>'\n  [possible values: middle, end, random, sorted]",
        ),
        (
            &["--suite", "dbbench", "--dbbench-num", "10"],
            "--dbbench-num must be between 1000 and 1000000",
        ),
        (
            &["--suite", "dbbench", "--dbbench-journal-mode", "FAST"],
            "invalid value 'FAST' for '--dbbench-journal-mode <DBBENCH_JOURNAL_MODE>'",
        ),
        (
            &["--suite", "tune", "--tune-page-sizes", "4096,3000"],
            "--tune-page-sizes: 3000 is not a SQLite page size (a power of two from 512 to 65,536)",
        ),
        (
            &["--suite", "tune", "--tune-page-sizes", "131072"],
            "--tune-page-sizes: 131072 is not a SQLite page size",
        ),
        (
            &["--suite", "tune", "--tune-settings", "page_size,bucket"],
            "unknown setting \"bucket\" in --tune-settings; accepted: page_size, cache_size, journal_mode, synchronous",
        ),
        (
            &["--suite", "tune", "--tune-settings", "bucket_size"],
            icbench::suites::tune::BUCKET_SIZE_NOT_SEARCHABLE,
        ),
        (
            &["--suite", "tune", "--tune-variants", "heap-talc,jemalloc"],
            "--tune-variants: unknown variant \"jemalloc\"; accepted: heap-talc, btree-talc, btree-bounded, or none",
        ),
        (
            &["--suite", "tune", "--stores", "sqlite,btree", "--tune-variants", "heap-talc"],
            "--tune-variants heap-talc: it is a heap BTreeMap (`--stores` must include heap)",
        ),
        (
            &["--suite", "tune", "--payload-size", "101", "--tune-variants", "btree-bounded"],
            "--tune-variants btree-bounded: its value type holds at most 100 bytes, --payload-size is 101",
        ),
        (
            &["--suite", "tune", "--tune-wasm", "/nonexistent/bench-tune.wasm"],
            "--tune-wasm /nonexistent/bench-tune.wasm: cannot read it",
        ),
        (
            &["--suite", "tune", "--tune-synchronous", "OFF,SOMETIMES"],
            "--tune-synchronous: unknown value \"SOMETIMES\"; accepted: OFF, NORMAL, FULL, EXTRA",
        ),
        (
            &["--suite", "tune", "--tune-cache-sizes", "-3000000000"],
            "--tune-cache-sizes: -3000000000 is outside SQLite's cache_size range",
        ),
        (
            &["--suite", "tune", "--stores", "btree"],
            "the tune suite searches SQLite's settings: --stores must include sqlite or sqlite-vfs",
        ),
        (
            &["--suite", "tune", "--tune-value-sizes", "10,0"],
            "--tune-value-sizes: 0 is not a value size (at least 1 byte)",
        ),
        (
            &["--suite", "tune", "--tune-value-sizes", "10,1k"],
            "--tune-value-sizes: \"1k\" is not a number of bytes (or none)",
        ),
        (
            &["--suite", "tune", "--tune-value-sizes", "1048577"],
            "--tune-value-sizes: 1048577 bytes is more than the canister's set_payload_size accepts (1048576 bytes, 1 MiB)",
        ),
        (
            &["--suite", "tune", "--stores", "sqlite,heap", "--tune-value-sizes", "10"],
            "--tune-value-sizes: it measures the StableBTreeMap (`--stores` must include btree)",
        ),
    ];
    for (args, expected) in cases {
        let (code, _, stderr) = icbench(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// The canister module, built once per test process so the CLI runs never build it
/// concurrently.
use crate::support::bench_wasm_path as wasm_path;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("icbench-suites-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn read_report(path: &Path) -> Report {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    report::from_json(&text).unwrap()
}

/// Runs the CLI into `out` and returns its stdout.
fn run_into(out: &Path, extra: &[&str]) -> String {
    crate::support::run_bench_into(out, &[&["--rows", "2000"], extra].concat())
}

/// Every file two runs wrote under their directories is byte-identical, but what says how
/// the run went: the wall time (report.md's line, results.json's field), report.md's section
/// on where the wall time went and `work.csv`, its units of work (a joined run has none).
fn same_files(a: &Path, b: &Path) {
    let without_wall = |text: String| -> String {
        let mut in_work = false;
        text.lines()
            .filter(|l| {
                if l.starts_with("## ") {
                    in_work = *l == "## Where the wall time went";
                }
                !in_work && !l.starts_with("- Wall time: ") && !l.contains("\"wall_seconds\": ")
            })
            .collect::<Vec<_>>()
            .join("\n")
            .trim_end()
            .to_string()
    };
    let mut files = Vec::new();
    let mut dirs = vec![a.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path.strip_prefix(a).unwrap().to_path_buf());
            }
        }
    }
    assert!(
        files.iter().any(|f| f.ends_with("results.csv")),
        "{files:?}"
    );
    for f in files.iter().filter(|f| !f.ends_with("work.csv")) {
        let (x, y) = (a.join(f), b.join(f));
        if f.ends_with("results.csv") || f.extension().is_some_and(|e| e == "svg") {
            assert!(
                std::fs::read(&x).unwrap() == std::fs::read(&y).unwrap(),
                "{} differs",
                f.display()
            );
        } else {
            let read = |p: &Path| without_wall(std::fs::read_to_string(p).unwrap());
            assert_eq!(read(&x), read(&y), "{} differs", f.display());
        }
    }
}

/// Runs `args` into two fresh directories named after `name`, one scenario at a time
/// and then `jobs` at once, and checks they wrote the same files, wall time aside;
/// returns both directories and the first run's output.
fn same_files_whatever_the_jobs(
    name: &str,
    args: &[&str],
    jobs: &str,
) -> (PathBuf, PathBuf, String) {
    let (first, second) = (
        temp_dir(&format!("{name}-1")),
        temp_dir(&format!("{name}-2")),
    );
    let stdout = run_into(&first, &[args, &["--jobs", "1"]].concat());
    run_into(&second, &[args, &["--jobs", jobs]].concat());
    same_files(&first, &second);
    (first, second, stdout)
}

/// Each of `files` is in `dir`.
fn files_written(dir: &Path, files: &[&str]) {
    for file in files {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
}

/// The numbers of two runs, wall time left out.
fn same_numbers(a: &Report, b: &Report) {
    assert_eq!(a.results, b.results);
    assert_eq!(a.notes, b.notes);
    assert_eq!(a.executed_instructions, b.executed_instructions);
}

/// Runs the suite `name` with `args` twice ([`same_files_whatever_the_jobs`], 2 jobs), checks
/// the first wrote its report, CSV, JSON and `plot-NAME.svg`, and both the same numbers;
/// returns the first run's suite directory, both reports and the first run's output.
fn end_to_end_twice(name: &str, args: &[&str]) -> (PathBuf, Report, Report, String) {
    let (first, second, stdout) = same_files_whatever_the_jobs(name, args, "2");
    let dir = first.join(name);
    let plot = format!("plot-{name}.svg");
    files_written(&dir, &["report.md", "results.csv", "results.json", &plot]);
    let a = read_report(&dir.join("results.json"));
    let b = read_report(&second.join(name).join("results.json"));
    same_numbers(&a, &b);
    (dir, a, b, stdout)
}

#[test]
fn lookups_end_to_end_is_deterministic() {
    let args = [
        "--suite",
        "lookups",
        "--journal-modes",
        "DELETE",
        "--lookup-batches",
        "1,10,25",
    ];
    let (first, second, stdout) = same_files_whatever_the_jobs("lookups", &args, "2");
    // Under the oldest vintage (whose queries' counts are those of every vintage before
    // the memory tracker) every lookup costs less by whole Wasm pages of the tracker's
    // charge: a query pays 80,000 for each 64 KiB page of heap or stable memory it reads
    // and nothing else changed for it. The canister's own counter sees the same charges.
    let old = temp_dir("lookups-2024");
    run_into(&old, &[&args[..], &["--replica", "2024"]].concat());
    let (new_run, old_run) = (
        read_report(&first.join("lookups/results.json")),
        read_report(&old.join("lookups/results.json")),
    );
    assert_eq!(new_run.results.len(), old_run.results.len());
    for (new, old) in new_run.results.iter().zip(&old_run.results) {
        let id = format!("{} {} {}", new.store, new.position, new.batch);
        assert_eq!((&new.store, new.batch), (&old.store, old.batch));
        for (a, b) in [
            (new.instructions, old.instructions),
            (new.store_instructions, old.store_instructions),
        ] {
            assert!(a > b && (a - b) % 80_000 == 0, "{id}: {a} vs {b}");
        }
    }
    assert_eq!(
        new_run.extra::<String>("replica").as_deref(),
        Some("2026-07")
    );
    assert_eq!(old_run.extra::<String>("replica").as_deref(), Some("2024"));
    let md = std::fs::read_to_string(old.join("lookups/report.md")).unwrap();
    assert!(md.contains("\n- Replica rules: `2024` "), "{md}");
    let dir = first.join("lookups");
    files_written(
        &dir,
        &[
            "report.md",
            "results.csv",
            "results.json",
            "plot-random.svg",
            "plot-sorted.svg",
        ],
    );
    // Only the suite's own directory is written.
    assert!(!first.join("results.json").exists());
    let a = read_report(&dir.join("results.json"));
    same_numbers(&a, &read_report(&second.join("lookups/results.json")));
    assert_eq!(a.suite, "lookups");
    // 2 key orders x 7 stores (heap, btree, SQLite DELETE, SQLite on ic-sqlite-vfs,
    // Motoko's three) x 3 batches, every one measured, and the two SQLite stores warm.
    assert_eq!(a.results.len(), 42 + 2 * 2 * 3);
    for r in &a.results {
        assert_eq!(r.suite, "lookups");
        assert_eq!(r.status, icbench::report::Status::Ok, "{r:?}");
        assert_eq!(r.operation, "point_lookup");
        // The method takes the store's Candid stem (`sqlite_vfs` for the record `sqlite-vfs`).
        let stem = icbench::stores::parse(&r.store, &r.journal_mode)
            .unwrap()
            .stem();
        assert_eq!(r.method, format!("get_users_{stem}_ids"));
        assert!(r.store_instructions > 0);
    }
    // One key has one order: sorted and unsorted are the same message.
    let cell = |position: &str, store: &str, batch: u64| {
        a.results
            .iter()
            .find(|r| r.position == position && r.store == store && r.batch == batch)
            .unwrap()
            .clone()
    };
    for store in ["heap", "btree", "sqlite"] {
        assert_eq!(
            cell("random", store, 1).store_instructions,
            cell("sorted", store, 1).store_instructions
        );
        assert_eq!(cell("random", store, 1).args, cell("sorted", store, 1).args);
    }
    assert!(
        stdout.contains("sorted, warm: store instructions per key")
            && stdout.contains("sorted, cold: store instructions per key"),
        "{stdout}"
    );
    let svg = std::fs::read_to_string(dir.join("plot-sorted.svg")).unwrap();
    assert!(svg.contains("Point lookup cost per key, sorted"), "{svg}");
}

#[test]
fn seed003_gives_the_same_files_whatever_the_jobs() {
    let args = ["--batches", "1,10", "--journal-modes", "DELETE,WAL"];
    let (first, _, _) = same_files_whatever_the_jobs("seed003", &args, "3");
    // 3 positions x 8 stores (heap, btree, DELETE, WAL, ic-sqlite-vfs, Motoko's three) x
    // (2 insert batches + 3 reads), and the three SQLite stores warm.
    assert_eq!(
        read_report(&first.join("results.json")).results.len(),
        120 + 3 * 3 * 5
    );
}

/// The records of `store` (its `store` column) in the run written into `dir`.
fn records_of(dir: &Path, store: &str) -> Vec<icbench::report::ScenarioResult> {
    let report = read_report(&dir.join("results.json"));
    report
        .results
        .into_iter()
        .filter(|r| r.store == store)
        .collect()
}

/// A record's charged instructions, by its store, position, operation and batch.
fn charged(report: &Report, store: &str, position: &str, operation: &str, batch: u64) -> u64 {
    report
        .results
        .iter()
        .find(|r| {
            (
                r.store.as_str(),
                r.position.as_str(),
                r.operation.as_str(),
                r.batch,
            ) == (store, position, operation, batch)
        })
        .unwrap_or_else(|| panic!("no {store} {position} {operation}/{batch}"))
        .instructions
}

#[test]
fn each_stores_rows_are_the_same_alone_and_beside_every_other_store() {
    let args = ["--batches", "1,10", "--journal-modes", "OFF"];
    let every = temp_dir("alone-every");
    run_into(&every, &args);
    let report = read_report(&every.join("results.json"));
    assert_eq!(report.extra::<String>("layout").as_deref(), Some("alone"));
    let md = std::fs::read_to_string(every.join("report.md")).unwrap();
    assert!(
        md.contains("\n- Layout: `alone` (`--layout`): each store filled in a canister of its own"),
        "{md}"
    );
    for store in StoreKind::ALL
        .into_iter()
        .filter(|k| k.measured_by("seed003"))
    {
        let alone = temp_dir(&format!("alone-{}", store.name()));
        // A store without journal modes is refused `--journal-modes OFF` alone.
        let modes = if store.def().journal_modes {
            &args[2..]
        } else {
            &[]
        };
        run_into(
            &alone,
            &[&args[..2], modes, &["--stores", store.name()]].concat(),
        );
        // Every column of every record (results.csv's columns are the records' fields; a
        // run without a page-cache store leaves out `cache`).
        let record = store.def().record;
        let rows = records_of(&every, record);
        // 3 positions x (2 insert batches + 3 reads), SQLite's cold and warm.
        let warm = if store.def().page_cache { 2 } else { 1 };
        assert_eq!(rows.len(), 15 * warm, "{}", store.name());
        assert_eq!(rows, records_of(&alone, record), "{}", store.name());
    }
    // In the seed's layout the StableBTreeMap shares its canister with SQLite, and its
    // one-row insert costs 163,813 more than alone: 160,000 of it one more heap page
    // touched and written.
    let shared = temp_dir("shared-every");
    run_into(&shared, &[&args[..], &["--layout", "shared"]].concat());
    let shared = read_report(&shared.join("results.json"));
    assert_eq!(shared.extra::<String>("layout").as_deref(), Some("shared"));
    assert_eq!(charged(&report, "btree", "middle", "insert", 1), 1_379_250);
    assert_eq!(charged(&shared, "btree", "middle", "insert", 1), 1_543_063);
}

/// Every suite, small.
fn small_all() -> Vec<&'static str> {
    [
        &[
            "--suite",
            "all",
            "--cache-warmups",
            "0,2",
            "--cache-batches",
            "1",
            "--cache-no-lookups",
            "--journal-modes",
            "OFF",
            "--batches",
            "1",
            "--lookup-batches",
            "1,10",
            "--dbbench-num",
            "1000",
            "--keys-rows",
            "1000",
            "--sysbench-rows",
            "2000",
            "--upgrade-sizes",
            "1000,2000",
            "--no-limit-run",
            "--scaling-max-rows",
            "2000",
        ][..],
        &crate::support::SMALL_TUNE_SEARCH,
        &[
            "--sustained-workloads",
            "3x1",
            "--sustained-positions",
            "end",
        ],
    ]
    .concat()
}

/// The legend of a plot's SVG: (label, colour) per entry, in order. A legend entry is the
/// marker (a line segment of stroke width 2, or in a dot plot a circle without a tooltip)
/// followed by its label's `<text>`.
fn legend(svg: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = svg.lines().collect();
    // A line plot's legend is its segments (each with a circle on it), a dot plot's its
    // circles.
    let lines_plot = lines
        .iter()
        .any(|l| l.starts_with("<line") && l.contains(r#"stroke-width="2""#));
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let key = if lines_plot && l.starts_with("<line") && l.contains(r#"stroke-width="2""#) {
            r#"stroke=""#
        } else if !lines_plot && l.starts_with("<circle") && l.ends_with(r#""/>"#) {
            r#"fill=""#
        } else {
            continue;
        };
        let at = l.find(key).unwrap() + key.len();
        let colour = l[at..at + 7].to_string();
        // The label follows the marker (after the LinePlot's circle on the segment).
        let text = lines[i + 1..]
            .iter()
            .find(|t| t.starts_with("<text"))
            .unwrap();
        let label = &text[text.find('>').unwrap() + 1..text.rfind("</text>").unwrap()];
        out.push((label.to_string(), colour));
    }
    out
}

/// Every plot of every suite under `out`: no two legend entries of a plot share a colour,
/// and a series (a store, a SQLite mode; dbbench's `rowid` is plain SQLite) has one colour
/// in every plot and no other series has it.
fn one_colour_per_series(out: &Path) {
    let mut plots = Vec::new();
    for dir in std::iter::once(out.to_path_buf()).chain(
        std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir()),
    ) {
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "svg") {
                plots.push(path);
            }
        }
    }
    // seed003 3, lookups 2, dbbench 1, keys 1, sysbench 1, upgrade 9 (one per store),
    // scaling 8, cache 3.
    assert_eq!(plots.len(), 28, "{plots:?}");
    let mut colour_of: std::collections::BTreeMap<String, (String, PathBuf)> = Default::default();
    let mut series_of: std::collections::BTreeMap<String, (String, PathBuf)> = Default::default();
    let mut stores_seen = std::collections::BTreeSet::new();
    for path in &plots {
        let entries = legend(&std::fs::read_to_string(path).unwrap());
        assert!(!entries.is_empty(), "{} has no legend", path.display());
        let mut colours: Vec<&String> = entries.iter().map(|e| &e.1).collect();
        colours.sort();
        colours.dedup();
        assert_eq!(
            colours.len(),
            entries.len(),
            "{}: two series share a colour: {entries:?}",
            path.display()
        );
        for (label, colour) in entries {
            let label = label.trim_end_matches(" rowid").to_string();
            if label.contains("BTreeMap") || label.starts_with("SQLite") {
                stores_seen.insert(label.clone());
            }
            // Both ways: a label has one colour, and a colour one label.
            for (map, key, value) in [
                (&mut colour_of, &label, &colour),
                (&mut series_of, &colour, &label),
            ] {
                let (seen, first) = map
                    .entry(key.clone())
                    .or_insert((value.clone(), path.clone()));
                assert_eq!(
                    seen,
                    value,
                    "{key} is {seen} in {} and {value} in {}",
                    first.display(),
                    path.display()
                );
            }
        }
    }
    // The heap map, the stable map, SQLite OFF and the canister's default mode at least.
    assert!(stores_seen.len() >= 4, "{stores_seen:?}");
}

#[test]
fn all_runs_every_suite_into_its_own_files_and_shards_merge_into_the_same() {
    let out = temp_dir("all");
    let stdout = run_into(&out, &small_all());
    let seed003 = read_report(&out.join("results.json"));
    assert_eq!(seed003.suite, "seed003");
    // 3 positions x 7 stores (heap, btree, SQLite OFF, ic-sqlite-vfs, Motoko's three) x (1
    // insert batch + 3 reads), and the two SQLite stores warm.
    assert_eq!(seed003.results.len(), 84 + 2 * 3 * 4);
    let lookups = read_report(&out.join("lookups/results.json"));
    // 2 key orders x 7 stores x 2 batches, and the two SQLite stores warm.
    assert_eq!(lookups.results.len(), 28 + 2 * 2 * 2);
    let dbbench = read_report(&out.join("dbbench/results.json"));
    // The map, SQLite rowid and WITHOUT ROWID, x 12 benchmarks.
    assert_eq!(dbbench.results.len(), 36);
    let keys = read_report(&out.join("keys/results.json"));
    // 4 key types x 4 stores x (insert, lookup, storage).
    assert_eq!(keys.results.len(), 48);
    let sysbench = read_report(&out.join("sysbench/results.json"));
    // The map's 12-workload subset, SQLite's 23 in the default journal mode.
    assert_eq!(sysbench.results.len(), 12 + 23);
    assert!(out.join("sysbench/plot-sysbench.svg").is_file());
    let upgrade = read_report(&out.join("upgrade/results.json"));
    // The heap store in 2 encodings, the map, SQLite OFF, SQLite on ic-sqlite-vfs,
    // Motoko's three and the classical Map (their own modules' canisters), x 2 sizes x 8
    // records.
    assert_eq!(upgrade.results.len(), 9 * 2 * 8);
    // Every report names the replica rules it charged by: the newest unless told.
    assert_eq!(
        upgrade.extra::<String>("replica").as_deref(),
        Some("2026-07")
    );
    assert!(out.join("upgrade/plot-upgrade-heap-candid.svg").is_file());
    let scaling = read_report(&out.join("scaling/results.json"));
    // Sizes 1,000 and 2,000: the heap map, the stable map, SQLite on ic-sqlite-vfs,
    // Motoko's three and the classical Map (7 operations, 2 memory and 2 storage records
    // each) and SQLite (7 operations in each of 2 journal modes, 4 more); at 2,000 each of
    // the 8 canisters upgraded (the hooks and the whole install_code).
    assert_eq!(
        scaling.results.len(),
        7 * 2 * (7 + 4) + 2 * (14 + 4) + 8 * 3
    );
    for suite in REGISTRY {
        assert!(
            stdout.contains(&format!("== suite {} ==", suite.name())),
            "{stdout}"
        );
        // Every suite's report says where its wall time went, and lists its units of work.
        let dir = suite.out_dir(&out);
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        for needle in [
            "\n## Where the wall time went\n",
            " of CPU time on `--jobs ",
            "Critical path (",
            "| cores | modelled wall time |",
            "\n| 64    |",
            "\n| compile  |",
        ] {
            assert!(md.contains(needle), "{}: {needle:?} in {md}", suite.name());
        }
        let units = std::fs::read_to_string(dir.join("work.csv")).unwrap();
        assert!(
            units.starts_with("id,kind,name,after,lane,ready,start,end,cpu,"),
            "{units}"
        );
        assert!(
            units.contains(",compile,\"compile the module\","),
            "{}: {units}",
            suite.name()
        );
    }
    let tune = read_report(&out.join("tune/results.json"));
    // 7 workloads x (the heap map, the StableBTreeMap, the tune variant's three stores,
    // SQLite at the defaults, at page_size 65,536 and in journal mode OFF at the best page
    // size; at 10-byte values the heap map, the StableBTreeMap, the bounded value type and
    // SQLite at its defaults, at 1,000 bytes the same but the bounded type) x (2026-07 and
    // 2026-05 beside); then SQLite warm at each workload's best settings and each cache_size
    // searched (one), under both; then ic-sqlite-vfs at its binding's cache_size and the one
    // searched, cold and warm, under both.
    assert_eq!(
        tune.results.len(),
        7 * (8 + 4 + 3) * 2 + 7 * 2 + 7 * 2 * 2 * 2
    );
    let cache = read_report(&out.join("cache/results.json"));
    // 3 positions x the two SQLite stores x one-row inserts at W = 0, 2 and full+1.
    assert_eq!(cache.results.len(), 3 * 2 * 3);
    let sustained = read_report(&out.join("sustained/results.json"));
    // One position x one sequence x the 7 stores, each a sequence of 3 messages.
    assert_eq!(sustained.results.len(), 7);
    assert!(sustained
        .results
        .iter()
        .all(|r| r.sequence.as_ref().map(|s| s.messages) == Some(3)));
    one_colour_per_series(&out);

    // Two shards (one on two cores), merged in any order: the unsharded files.
    let (one, two, merged) = (temp_dir("shard-1"), temp_dir("shard-2"), temp_dir("merged"));
    run_into(
        &one,
        &[&small_all()[..], &["--shard", "1/2", "--jobs", "2"]].concat(),
    );
    run_into(
        &two,
        &[&small_all()[..], &["--shard", "2/2", "--jobs", "1"]].concat(),
    );
    let shard = read_report(&two.join("keys/results.json"));
    assert_eq!(shard.results.len(), 24, "every other scenario, 3 rows each");
    let merge = |dirs: &[&Path], into: &Path| {
        let mut args = vec!["merge", "--quiet", "--out", into.to_str().unwrap()];
        args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
        icbench(&args)
    };
    let (code, _, stderr) = merge(&[&two, &one], &merged);
    assert_eq!(code, 0, "{stderr}");
    same_files(&out, &merged);
    same_files(&merged, &out);

    // Bad sets of parts are refused, naming the problem.
    let refused = |dirs: &[&Path], expected: &str| {
        let (code, _, stderr) = merge(dirs, &temp_dir("refused"));
        assert_eq!(code, 2, "{dirs:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{dirs:?}: expected {expected:?} in {stderr}"
        );
    };
    refused(&[&one], "shard 2/2 missing");
    refused(&[&one, &two, &one], "shard 1/2 is given twice");
    refused(
        &[&one, &out],
        "is not a shard: it was run without --shard K/N",
    );
    // Another module: the part's record says so.
    let other = temp_dir("other-module");
    std::fs::create_dir_all(other.join("lookups")).unwrap();
    let text = std::fs::read_to_string(two.join("lookups/results.json")).unwrap();
    // Its own record: a suite's signature names the modules it ran (lookups' two).
    let lookups_two = read_report(&two.join("lookups/results.json"));
    let info = lookups_two.extra.get("shard").unwrap();
    let module = info["module"].as_str().unwrap();
    assert!(text.contains(module));
    std::fs::write(
        other.join("lookups/results.json"),
        text.replace(module, &"0".repeat(64)),
    )
    .unwrap();
    let lookups_one = temp_dir("lookups-one");
    std::fs::create_dir_all(&lookups_one).unwrap();
    std::fs::rename(one.join("lookups"), lookups_one.join("lookups")).unwrap();
    refused(
        &[&lookups_one, &other],
        "differ in the canister module (SHA-256)",
    );
    refused(&[&one, &two], "the shards ran different suites");
    // Another seed: same scenarios, other settings.
    let seeded = temp_dir("other-seed");
    run_into(
        &seeded,
        &[
            &["--suite", "lookups", "--journal-modes", "OFF"][..],
            &["--lookup-batches", "1,10"],
            &["--shard", "2/2", "--seed", "7"],
        ]
        .concat(),
    );
    refused(
        &[&lookups_one, &seeded],
        &format!(
            "error: the shards are of different runs: seed 2026 ({}) against 7 ({})\n",
            lookups_one.display(),
            seeded.display()
        ),
    );
}

// ---- dbbench (seed 000) ------------------------------------------------------------

use icbench::bench_canister::{BenchClient, DbBenchWrite};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::suites::dbbench::{self, Bench, KvStore, LevelDbRandom};

#[test]
fn dbbench_keys_follow_db_bench_sqlite3_draw_order() {
    let num = 2_000;
    let keys = dbbench::keys(num);
    // In benchmark order (the unit tests pin its names).
    let benches: Vec<Bench> = keys.iter().map(|(b, _)| *b).collect();
    assert_eq!(benches, Bench::ALL);
    let of = |b: Bench| keys.iter().find(|(x, _)| *x == b).unwrap().1.clone();
    assert_eq!(of(Bench::FillSeq), (0..num).collect::<Vec<_>>());
    assert_eq!(of(Bench::FillSeq100K), [0, 1]);
    assert!(of(Bench::ReadSeq).is_empty());
    // One shared Random(301): fillrandom takes the first N draws, the skipped
    // fillrandsync the next N/100, fillrandbatch the N after those.
    let mut r = LevelDbRandom::new(301);
    let fillrandom: Vec<u64> = (0..num).map(|_| u64::from(r.next_u32()) % num).collect();
    assert_eq!(of(Bench::FillRandom), fillrandom);
    for _ in 0..num / 100 {
        r.next_u32();
    }
    let batch: Vec<u64> = (0..num).map(|_| u64::from(r.next_u32()) % num).collect();
    assert_eq!(of(Bench::FillRandBatch), batch);
    assert!(of(Bench::ReadRand100K).iter().all(|&k| k < 2));
    assert_eq!(of(Bench::ReadRand100K).len(), 2);
}

#[test]
fn dbbench_matrix_is_every_store_times_twelve_benchmarks() {
    let cfg = dbbench::Config::default();
    assert_eq!(cfg.num, 10_000);
    assert_eq!(cfg.journal_mode, JournalMode::Wal);
    let matrix = cfg.matrix();
    assert_eq!(matrix.len(), 36);
    let stores: Vec<KvStore> = matrix.iter().step_by(12).map(|s| s.store).collect();
    assert_eq!(
        stores,
        [
            KvStore::BTree,
            KvStore::SqliteRowid(JournalMode::Wal),
            KvStore::SqliteWithoutRowid(JournalMode::Wal)
        ]
    );
    assert!(matrix
        .chunks(12)
        .all(|c| c.iter().map(|s| s.bench).eq(Bench::ALL)));
    // Only the map when only btree is selected.
    let btree_only = dbbench::Config {
        stores: vec![StoreKind::Btree],
        ..cfg.clone()
    };
    assert_eq!(btree_only.matrix().len(), 12);
    assert_eq!(Bench::FillSeq100K.ops(10_000), 10);
    assert_eq!(Bench::FillSeq100K.value_size(), 100_000);
    assert!(Bench::FillSeq.transaction_per_row() && !Bench::FillSeqBatch.transaction_per_row());
    assert!(!Bench::Overwrite.fresh() && Bench::FillRandom.fresh());
    let bad = dbbench::Config { num: 999, ..cfg };
    let err = bad.validate().unwrap_err().to_string();
    assert!(
        err.contains("--dbbench-num must be between 1000 and 1000000"),
        "{err}"
    );
}

#[test]
fn dbbench_line_is_db_bench_format_with_instructions() {
    // db_bench: "%-12s : %11.3f micros/op;" then the rate and "(N ops)".
    assert_eq!(
        dbbench::line("fillseq", 52_176.3, 116.0, 10_000),
        "fillseq      :   52176.300 instructions/op;    116.0 bytes/op (10000 ops)"
    );
    assert_eq!(
        dbbench::line("readrand100K", 1_234_567.891_2, 100_016.0, 10),
        "readrand100K : 1234567.891 instructions/op; 100016.0 bytes/op (10 ops)"
    );
}

fn with_canister<R>(f: impl FnOnce(&mut BenchClient<'_>) -> R) -> R {
    let wasm = std::fs::read(wasm_path()).unwrap();
    let mut engine = EmbeddedEngine::default();
    let mut client = BenchClient::install(&mut engine, &wasm).expect("the canister installs");
    f(&mut client)
}

fn write(store: &str, keys: &[u64], value_size: u64, per_row: bool) -> DbBenchWrite {
    DbBenchWrite {
        store: store.into(),
        keys: keys.to_vec(),
        value_size,
        first_value: 0,
        transaction_per_row: per_row,
    }
}

#[test]
fn dbbench_methods_contract() {
    with_canister(|c| {
        // Bad arguments: Err naming the problem, never a trap.
        let err = c.dbbench_reset("leveldb").unwrap().value.unwrap_err();
        assert!(
            err.contains("btree, sqlite_rowid, sqlite_without_rowid"),
            "{err}"
        );
        let err = c
            .dbbench_read_random("sqlite_rowid", &[1])
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("call dbbench_reset first"), "{err}");
        for store in ["btree", "sqlite_rowid", "sqlite_without_rowid"] {
            assert_eq!(c.dbbench_reset(store).unwrap().value, Ok(0), "{store}");
            let err = c
                .dbbench_write(&write(store, &[10_000_000_000_000_000], 100, false))
                .unwrap()
                .value
                .unwrap_err();
            assert!(err.contains("more than 16 digits"), "{err}");
            let err = c
                .dbbench_write(&write(store, &[1], (1 << 20) + 1, false))
                .unwrap()
                .value
                .unwrap_err();
            assert!(err.contains("1 MiB"), "{err}");
            let keys: Vec<u64> = (0..1_000).collect();
            let err = c
                .dbbench_write(&write(store, &keys, 100_000, true))
                .unwrap()
                .value
                .unwrap_err();
            assert!(err.contains("per call"), "{err}");

            // Writes replace: key 7 twice is one row.
            for per_row in [true, false] {
                let r = c
                    .dbbench_write(&write(store, &[7, 3, 7, 12], 100, per_row))
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!((r.ops, r.found, r.bytes), (4, 4, 4 * 116), "{store}");
                assert!(r.instructions > 0);
            }
            let r = c
                .dbbench_read_random(store, &[3, 4, 12])
                .unwrap()
                .value
                .unwrap();
            assert_eq!((r.ops, r.found, r.bytes), (3, 2, 2 * 116), "{store}");
            let r = c.dbbench_read_seq(store, 0, 10).unwrap().value.unwrap();
            assert_eq!((r.ops, r.found, r.bytes), (3, 3, 3 * 116), "{store}");
            let r = c.dbbench_read_seq(store, 4, 1).unwrap().value.unwrap();
            assert_eq!(r.found, 1, "{store}: the first key >= 4 is 7");
            assert_eq!(c.dbbench_reset(store).unwrap().value, Ok(3), "{store}");
        }
        // The users stores that seed 003 measures are untouched.
        let stats = c.stats().unwrap();
        assert_eq!((stats.btree_rows, stats.sqlite_rows), (0, 0));
    });
}

#[test]
fn dbbench_end_to_end_is_deterministic() {
    let args = ["--suite", "dbbench", "--dbbench-num", "1000"];
    let (dir, a, _, stdout) = end_to_end_twice("dbbench", &args);
    assert_eq!(a.results.len(), 36);
    for r in &a.results {
        assert_eq!(r.status, icbench::report::Status::Ok, "{r:?}");
        assert!(r.store_instructions > 0, "{r:?}");
    }
    // Writes move key + value bytes per op.
    let fillseq = &a.results[0];
    assert_eq!(
        (fillseq.operation.as_str(), fillseq.batch),
        ("fillseq", 1000)
    );
    assert_eq!(fillseq.bytes, 1000 * 116);
    assert!(
        stdout.contains("\nfillseq      : ")
            && stdout.contains(" instructions/op;    116.0 bytes/op (1000 ops)"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("SQLite WAL, WITHOUT ROWID\nfillseq      :"),
        "{md}"
    );
}

// ---- keys (seed 002) ---------------------------------------------------------------

use icbench::suites::keys::{self as key_suite, PageStats};

#[test]
fn keys_matrix_is_every_key_type_by_every_store() {
    let cfg = key_suite::Config::default();
    assert_eq!(cfg.rows, 10_000);
    let m = cfg.matrix();
    let pairs: Vec<(&str, &str)> = m.iter().map(|s| (s.key_type, s.store)).collect();
    let mut expected = Vec::new();
    for k in ["u64", "ulid", "uuid", "hex32"] {
        for s in [
            "btree",
            "sqlite_rowid",
            "sqlite_without_rowid",
            "sqlite_secondary",
        ] {
            expected.push((k, s));
        }
    }
    assert_eq!(pairs, expected);
    let sqlite_only = key_suite::Config {
        stores: vec![StoreKind::Sqlite],
        ..cfg
    };
    assert_eq!(sqlite_only.matrix().len(), 12);
}

#[test]
fn key_generators_have_the_layouts_of_their_types() {
    let rows = 300;
    let u64s = key_suite::keys("u64", rows, 1);
    assert_eq!(u64s[0], 1u64.to_be_bytes());
    assert_eq!(u64s[299], 300u64.to_be_bytes());
    let ulids = key_suite::keys("ulid", rows, 1);
    assert!(ulids.iter().all(|k| k.len() == 16));
    // One millisecond per 100-key message, increasing; monotonic within the message.
    assert_eq!(ulids[0][..6], ulids[99][..6]);
    assert!(ulids[99][..6] < ulids[100][..6]);
    assert!(ulids[..100].windows(2).all(|w| w[0] < w[1]));
    let uuids = key_suite::keys("uuid", rows, 1);
    assert!(uuids
        .iter()
        .all(|k| k.len() == 16 && k[6] >> 4 == 4 && k[8] >> 6 == 0b10));
    let hex = key_suite::keys("hex32", rows, 1);
    assert!(hex.iter().all(|k| k.len() == 32
        && k.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))));
    for keys in [&ulids, &uuids, &hex] {
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), rows as usize);
    }
    assert_eq!(key_suite::keys("uuid", rows, 1), uuids);
    assert_ne!(key_suite::keys("uuid", rows, 2), uuids);
    let lookups = key_suite::lookup_indices(1_000, 5);
    assert_eq!(lookups.len(), 1_000);
    assert_eq!(
        lookups
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        1_000
    );
}

#[test]
fn fanout_is_sqlite3_analyzers() {
    let pages = |interior, leaf| PageStats {
        store: "sqlite".into(),
        key_type: "ulid".into(),
        btree: "t".into(),
        interior_pages: interior,
        leaf_pages: leaf,
        overflow_pages: 0,
        bytes: 0,
    };
    // A published sqlite3_analyzer report: 46 interior and 8051 leaf pages give 176.00.
    assert_eq!(pages(46, 8_051).fanout(), Some(176));
    // Integer division, as the analyzer's Tcl does.
    assert_eq!(pages(3, 35).fanout(), Some(12));
    assert_eq!(pages(0, 1).fanout(), None);
}

#[test]
fn keys_methods_contract() {
    with_canister(|c| {
        let err = c.keys_reset("redis", "u64").unwrap().value.unwrap_err();
        assert!(
            err.contains("btree, sqlite_rowid, sqlite_without_rowid, sqlite_secondary"),
            "{err}"
        );
        let err = c
            .keys_reset("btree", "snowflake")
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("u64, ulid, uuid, hex32"), "{err}");
        let err = c
            .keys_lookup("sqlite_rowid", "ulid", &[vec![0; 16]])
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("call keys_reset first"), "{err}");
        let err = c.keys_stats("sqlite_rowid", "ulid").unwrap().unwrap_err();
        assert!(err.contains("call keys_reset first"), "{err}");
        for store in [
            "btree",
            "sqlite_rowid",
            "sqlite_without_rowid",
            "sqlite_secondary",
        ] {
            for key_type in ["u64", "ulid", "uuid", "hex32"] {
                assert_eq!(c.keys_reset(store, key_type).unwrap().value, Ok(0));
                let keys = key_suite::keys(key_type, 3, 9);
                let r = c
                    .keys_insert(store, key_type, &keys, 10)
                    .unwrap()
                    .value
                    .unwrap();
                let key_len = keys[0].len() as u64;
                assert_eq!(
                    (r.ops, r.bytes),
                    (3, 3 * (key_len + 10)),
                    "{store} {key_type}"
                );
                let mut wanted = vec![keys[2].clone(), keys[0].clone()];
                wanted.push(key_suite::keys(key_type, 5, 10)[4].clone());
                let r = c
                    .keys_lookup(store, key_type, &wanted)
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!((r.ops, r.found, r.bytes), (3, 2, 20), "{store} {key_type}");
                let stats = c.keys_stats(store, key_type).unwrap().unwrap();
                assert_eq!(stats.rows, 3);
                assert!(stats.stable_bytes > 0);
                let names: Vec<&str> = stats.btrees.iter().map(|b| b.name.as_str()).collect();
                let table = format!("keys_{key_type}_{}", store.trim_start_matches("sqlite_"));
                let expected: Vec<String> = match (store, key_type) {
                    ("btree", _) => vec![],
                    // INTEGER PRIMARY KEY is the rowid: one B-tree.
                    ("sqlite_rowid", "u64") | ("sqlite_without_rowid", _) => vec![table],
                    ("sqlite_rowid", _) => {
                        vec![table.clone(), format!("sqlite_autoindex_{table}_1")]
                    }
                    _ => vec![table.clone(), format!("{table}_k")],
                };
                assert_eq!(names, expected, "{store} {key_type}");
            }
        }
        // A present key: Err for the map and the keyed schemas, nothing inserted.
        let keys = key_suite::keys("uuid", 3, 9);
        for store in ["btree", "sqlite_rowid", "sqlite_without_rowid"] {
            assert!(c
                .keys_insert(store, "uuid", &keys[..1], 10)
                .unwrap()
                .value
                .is_err());
        }
        let err = c
            .keys_insert("btree", "ulid", &[vec![1; 15]], 10)
            .unwrap()
            .value
            .unwrap_err();
        assert!(
            err.contains("a ulid key must be 16 bytes; got 15 bytes"),
            "{err}"
        );
        let err = c
            .keys_insert(
                "sqlite_rowid",
                "u64",
                &[u64::MAX.to_be_bytes().to_vec()],
                10,
            )
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("below 2^63"), "{err}");
        let stats = c.stats().unwrap();
        assert_eq!((stats.btree_rows, stats.sqlite_rows), (0, 0));
    });
}

#[test]
fn keys_end_to_end_is_deterministic() {
    let args = ["--suite", "keys", "--keys-rows", "1000"];
    let (_, a, b, stdout) = end_to_end_twice("keys", &args);
    assert_eq!(key_suite::page_stats(&a), key_suite::page_stats(&b));
    assert_eq!(a.results.len(), 48);
    for r in &a.results {
        assert_eq!(r.status, icbench::report::Status::Ok, "{r:?}");
    }
    // SQLite B-trees per key type: u64 rowid 1, without rowid 1, secondary 2 (4); the
    // other key types rowid 2 (table + autoindex), 1, 2 (5 each).
    assert_eq!(key_suite::page_stats(&a).len(), 4 + 3 * 5);
    assert!(stdout.contains("stable bytes per row"), "{stdout}");
    assert!(stdout.contains("keys_ulid_without_rowid"), "{stdout}");
}

// ---- sysbench (seed 004) -----------------------------------------------------------

use icbench::report::{ScenarioResult, Status};
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
        rows_before: 2_000,
        seed: 1,
        payload_size: 180,
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
    assert!(md.contains("\n### Reads\n"), "{md}");
    assert!(md.contains("\n## Performance Ceiling Check (6x individual, 5x average)\n"));
    assert!(md.contains("- FAIL WAL reads average: 7.00x > 5x"));
}

#[test]
fn sysbench_methods_contract() {
    with_canister(|c| {
        let err = c.sysbench_reset("postgres", 10).unwrap().value.unwrap_err();
        assert!(err.contains("accepted: btree, sqlite"), "{err}");
        let err = c.sysbench_reset("sqlite", 0).unwrap().value.unwrap_err();
        assert!(err.contains("rows must be in 1..=1000000"), "{err}");
        let err = c
            .sysbench_run("sqlite", "oltp_point_select", &[1; 10])
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("call sysbench_reset"), "{err}");
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
            assert!(err.contains("unknown sysbench workload \"tpcc\""), "{err}");
            let err = run(c, "oltp_point_select", &[1; 9]).unwrap_err();
            assert!(err.contains("takes 10 parameters, got 9"), "{err}");
            let err = run(c, "oltp_range_select", &[0]).unwrap_err();
            assert!(err.contains("outside 1..="), "{err}");
            let err = run(c, "oltp_range_select", &[(1 << 40) + 1]).unwrap_err();
            assert!(err.contains("outside 1..="), "{err}");
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
        assert!(err.contains("not in the map's key-value subset"), "{err}");
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
        // The users stores that seed 003 measures are untouched.
        let stats = c.stats().unwrap();
        assert_eq!((stats.btree_rows, stats.sqlite_rows), (0, 0));
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
    assert!(
        stdout.contains("SQLite PERSIST vs StableBTreeMap"),
        "{stdout}"
    );
    assert!(stdout.contains("All tests within ceilings."), "{stdout}");
    // A ceiling below every multiplier: every file is still written, then exit status 1.
    let third = temp_dir("sysbench-3");
    let (code, stdout, stderr) = icbench(&[
        "--quiet",
        "--wasm",
        wasm_path().to_str().unwrap(),
        "--out",
        third.to_str().unwrap(),
        "--suite",
        "sysbench",
        "--sysbench-rows",
        "2000",
        "--sysbench-max-ratio",
        "0.01",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("sysbench gate failed"), "{stderr}");
    assert!(
        stdout.contains("- FAIL PERSIST reads oltp_point_select"),
        "{stdout}"
    );
    let c = read_report(&third.join("sysbench/results.json"));
    assert_eq!(a.results, c.results);
    assert!(third.join("sysbench/plot-sysbench.svg").is_file());
}

#[test]
fn scaling_measures_every_operation_at_every_size_and_prices_the_storage() {
    use icbench::engine::cost::CyclesFees;
    let out = temp_dir("scaling");
    run_into(&out, &["--suite", "scaling", "--scaling-max-rows", "2000"]);
    let report = read_report(&out.join("scaling/results.json"));
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
                let r = report
                    .results
                    .iter()
                    .find(|r| {
                        r.store == store
                            && r.journal_mode == mode
                            && r.rows_before == n
                            && r.position == position
                            && r.operation == operation
                            && r.batch == batch
                    })
                    .unwrap_or_else(|| panic!("{store} {mode} {n} {position} {operation} {batch}"));
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
    assert!(md.contains("Storage for 30 days"), "{md}");
    assert!(md.contains("Inserting 1,000,000 rows at each size"), "{md}");
    // The decision table opens the report, at the largest size, with the storage row.
    let decision = md
        .find("## Which store is cheapest, at 2,000 rows")
        .expect("decision table");
    assert!(
        decision < md.find("## insert 1 row (middle)").unwrap(),
        "{md}"
    );
    assert!(
        md.contains("| storage for 30 days (whole canister)"),
        "{md}"
    );

    // The upgrade at the largest size only: one install_code per canister (SQLite once, in
    // the mode it was filled in), charged and priced as the replica does.
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
    assert!(md.contains("| upgrade (to a new build) "), "{md}");
    assert!(
        md.contains("## Upgrade to a new build at the largest size"),
        "{md}"
    );

    // Stable bytes: each store's own size, from the canister filled as the suite fills it
    // (two messages, to 1,000 and to 2,000 rows): the map's pages, SQLite's file, nothing for
    // the heap map.
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
                .add_users(store, from * 10, 10, 1_000)
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
    assert!(
        stderr.contains("--scaling-max-rows must be at least 1,000"),
        "{stderr}"
    );
}

// ---- interrupted runs ------------------------------------------------------------------

/// The interrupted runs' settings: one store, a prefill of some seconds, four scenarios.
const SIGNALLED_RUN: [&str; 8] = [
    "--stores",
    "btree",
    "--positions",
    "end",
    "--batches",
    "1",
    "--rows",
    "100000",
];

/// Starts a run into `out` (stderr piped, progress on), waits for its first prefill line,
/// sends `signal` and returns the exit code and stderr; `None` if the run ended before
/// the signal could be sent (its prefill was done before the line came).
#[allow(unsafe_code)] // kill(2) on the child
fn interrupted(out: &Path, extra: &[&str], signal: libc::c_int) -> Option<(i32, String)> {
    use std::io::{BufRead, BufReader, Read};
    let mut child = crate::support::icbench_command()
        .args(["--wasm", wasm_path().to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .args(SIGNALLED_RUN)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("icbench starts");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            child.wait().unwrap();
            return None;
        }
        seen += &line;
        if line.starts_with("prefill") {
            break;
        }
    }
    // SAFETY: a plain syscall on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    stderr.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    Some((status.code().unwrap_or(-1), seen))
}

/// Files under `dir` (names), sorted; temporary files included.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

#[test]
fn a_signal_stops_the_run_leaving_no_result_and_the_next_run_completes() {
    let out = temp_dir("interrupted");
    // SIGINT during the prefill: nothing written, and the run says so.
    let (code, stderr) =
        interrupted(&out, &[], libc::SIGINT).expect("the prefill outlasts the signal");
    assert_eq!(code, 128 + libc::SIGINT, "{stderr}");
    let expected = format!(
        "interrupted by SIGINT: stopped; not written (files already there are from an earlier run): the seed003 suite's results in {}",
        out.display()
    );
    assert!(
        stderr.contains(&expected),
        "expected {expected:?} in {stderr}"
    );
    assert_eq!(
        names_in(&out),
        Vec::<String>::new(),
        "the directory was made empty before the run, and stays so"
    );

    // The next run completes, and writes every file.
    let wasm = wasm_path().to_str().unwrap();
    let run = [
        &["--quiet", "--wasm", wasm, "--out", out.to_str().unwrap()][..],
        &SIGNALLED_RUN,
    ]
    .concat();
    let (code, _, stderr) = icbench(&run);
    assert_eq!(code, 0, "{stderr}");
    let complete = names_in(&out);
    assert_eq!(
        complete,
        [
            "plot-end.svg",
            "report.md",
            "results.csv",
            "results.json",
            "work.csv"
        ]
    );
    let before: Vec<Vec<u8>> = complete
        .iter()
        .map(|n| std::fs::read(out.join(n)).unwrap())
        .collect();
    assert_eq!(read_report(&out.join("results.json")).results.len(), 4);

    // SIGTERM during another run's prefill (another payload, so not from the cache): the
    // complete files of the run before are left exactly as they were, nothing else added.
    let (code, stderr) = interrupted(&out, &["--payload-size", "90"], libc::SIGTERM)
        .expect("the prefill outlasts the signal");
    assert_eq!(code, 128 + libc::SIGTERM, "{stderr}");
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert_eq!(names_in(&out), complete);
    for (name, bytes) in complete.iter().zip(&before) {
        assert_eq!(&std::fs::read(out.join(name)).unwrap(), bytes, "{name}");
    }
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
