//! `--suite`: which suites exist, their exact scenario matrices, the selection errors, and
//! small end-to-end runs of each registered suite through the CLI binary (files written,
//! identical numbers on a second run).

use std::path::{Path, PathBuf};

use icbench::bench_canister::BenchClient;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::report::{self, Report};
use icbench::suites::lookups::{self, LOOKUP_BATCHES};
use icbench::suites::scenario::{
    CacheState, JournalMode, Operation, Position, Scenario, Store, StoreKind,
};
use icbench::suites::shared::Measure;
use icbench::suites::{self as registry, seed003, users, REGISTRY};

mod dbbench;
pub(crate) mod interrupted;
mod keys;
mod scaling;
mod sysbench;

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
use crate::support::{assert_has, record_by, By};

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
    // `--rows 2000` where a suite of the run reads it: the others refuse it.
    let at = extra.iter().position(|a| *a == "--suite");
    let names: Vec<String> = at.map_or(vec!["seed003".into()], |i| {
        extra[i + 1].split(',').map(String::from).collect()
    });
    let suites = registry::select(&names).unwrap();
    let rows: &[&str] = match suites.iter().any(|s| s.reads("rows")) {
        true => &["--rows", "2000"],
        false => &[],
    };
    crate::support::run_bench_into(out, &[rows, extra].concat())
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
    let by = [
        By::Store(store),
        By::Position(position),
        By::Operation(operation),
        By::Batch(batch),
    ];
    record_by(&report.results, &by).instructions
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
    scenarios_of_every_suite(&out);
    every_suite_says_where_its_time_went(&out, &stdout);
    one_colour_per_series(&out);
    shards_merge_into_the_same(&out);
}

/// How many scenarios each suite of [`small_all`] ran into `out`.
fn scenarios_of_every_suite(out: &Path) {
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
}

/// Every suite's banner is in the run's output, and its report says where its wall time
/// went and lists its units of work.
fn every_suite_says_where_its_time_went(out: &Path, stdout: &str) {
    for suite in REGISTRY {
        assert!(
            stdout.contains(&format!("== suite {} ==", suite.name())),
            "{stdout}"
        );
        let dir = suite.out_dir(out);
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
}

/// Two shards of [`small_all`] (one on two cores), merged in any order, write the files of
/// the unsharded run into `out`; bad sets of parts are refused, naming the problem.
fn shards_merge_into_the_same(out: &Path) {
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
    same_files(out, &merged);
    same_files(&merged, out);

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
        &[&one, out],
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

/// The users stores that seed 003 measures are untouched by another suite's methods.
fn users_stores_untouched(c: &mut BenchClient<'_>) {
    let stats = c.stats().unwrap();
    assert_eq!((stats.btree_rows, stats.sqlite_rows), (0, 0));
}

/// A fresh bench canister on the embedded engine, for the suites' method contracts.
fn with_canister<R>(f: impl FnOnce(&mut BenchClient<'_>) -> R) -> R {
    let wasm = std::fs::read(wasm_path()).unwrap();
    let mut engine = EmbeddedEngine::default();
    let mut client = BenchClient::install(&mut engine, &wasm).expect("the canister installs");
    f(&mut client)
}

/// The progress on a pipe: a line per milestone, whose count of tasks grows as tasks are
/// spawned and never shrinks, across worker processes too (each runs the tasks all of them
/// spawn once), and ends with every task done.
#[test]
fn the_progress_count_never_shrinks() {
    let out = temp_dir("progress-count");
    let cache = out.join("cache");
    let args = [
        "--suite",
        "lookups",
        "--rows",
        "4000",
        "--stores",
        "btree,sqlite",
        "--journal-modes",
        "OFF",
        "--jobs",
        "2",
        "--out",
    ];
    for run in ["1", "2"] {
        let o = crate::support::icbench_command()
            .env("ICBENCH_CACHE_DIR", &cache)
            .args(args)
            .arg(out.join(run))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{stderr}");
        let counts: Vec<(u64, u64)> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("scenarios"))
            .map(|l| {
                let (done, total) = l
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .split_once('/')
                    .unwrap();
                (done.parse().unwrap(), total.parse().unwrap())
            })
            .collect();
        assert!(counts.len() > 2, "{stderr}");
        assert!(counts.windows(2).all(|w| w[1].1 >= w[0].1), "{stderr}");
        let last = counts.last().unwrap();
        assert_eq!(last.0, last.1, "{stderr}");
        // The second run loads both stores' states, and says so.
        if run == "2" {
            assert!(
                stderr.contains("loaded btree   post-prefill state from the cache"),
                "{stderr}"
            );
        }
    }
}
