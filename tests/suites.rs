//! `--suite`: which suites exist, their exact scenario matrices, the selection errors, and
//! small end-to-end runs of each registered suite through the CLI binary (files written,
//! identical numbers on a second run).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use icbench::bench_canister::{default_wasm_path, ensure_built};
use icbench::report::{self, Report};
use icbench::scenario::{JournalMode, Operation, Position, Scenario, Store};
use icbench::suite::{Suite, SuiteConfig, LOOKUP_BATCHES};

#[test]
fn suite_selection_parses_names_lists_and_all() {
    assert_eq!(Suite::ALL.map(Suite::name), ["seed003", "lookups"]);
    assert_eq!(Suite::parse_selection("seed003").unwrap(), [Suite::Seed003]);
    assert_eq!(Suite::parse_selection("LOOKUPS").unwrap(), [Suite::Lookups]);
    assert_eq!(Suite::parse_selection("all").unwrap(), Suite::ALL);
    // Duplicates are dropped, the first mention fixes the order.
    assert_eq!(
        Suite::parse_selection("lookups, seed003,lookups").unwrap(),
        [Suite::Lookups, Suite::Seed003]
    );
    let err = Suite::parse_selection("seed003,tpcc").unwrap_err();
    assert_eq!(
        err,
        "unknown suite \"tpcc\"; accepted: seed003, lookups, all"
    );
    assert!(Suite::parse_selection("").is_err());
}

fn all_stores() -> Vec<Store> {
    let mut stores = vec![Store::BTree];
    stores.extend(JournalMode::ALL.map(Store::Sqlite));
    stores
}

#[test]
fn seed003_matrix_is_unchanged_by_the_suites() {
    let cfg = SuiteConfig::default();
    assert_eq!(cfg.suite, Suite::Seed003);
    assert_eq!(cfg.positions, Position::SEED003);
    let matrix = cfg.matrix();
    // 3 positions x 7 stores x (5 insert batches + 3 reads): the README's 168.
    assert_eq!(matrix.len(), 168);
    assert!(matrix.iter().all(|s| s.position != Position::Sorted));
}

#[test]
fn lookups_matrix_is_every_store_order_and_batch_once() {
    let cfg = SuiteConfig {
        suite: Suite::Lookups,
        ..SuiteConfig::default()
    };
    assert_eq!(cfg.lookup_batches, LOOKUP_BATCHES);
    assert_eq!(LOOKUP_BATCHES, [1, 10, 25, 50, 100]);
    let mut expected = Vec::new();
    for position in [Position::Random, Position::Sorted] {
        for store in all_stores() {
            for keys in [1, 10, 25, 50, 100] {
                expected.push(Scenario {
                    store,
                    position,
                    operation: Operation::PointLookups { keys },
                });
            }
        }
    }
    assert_eq!(cfg.matrix(), expected);
    assert_eq!(expected.len(), 70);
    // Drawn keys go to the id-list methods.
    assert_eq!(expected[0].method(), "get_users_btree_ids");
    assert_eq!(expected[69].method(), "get_users_sqlite_ids");
}

#[test]
fn each_suite_checks_only_its_own_sizes() {
    let lookups = |batches: Vec<u64>, rows: u64| SuiteConfig {
        suite: Suite::Lookups,
        rows,
        lookup_batches: batches,
        ..SuiteConfig::default()
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
    let seed003 = SuiteConfig {
        rows: 2_000,
        ..SuiteConfig::default()
    };
    assert!(seed003.validate().is_err());
}

fn icbench(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_icbench"))
        .args(args)
        .output()
        .expect("icbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_suite_selections_are_refused_before_any_work() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--suite", "ycsb"],
            "unknown suite \"ycsb\"; accepted: seed003, lookups, all",
        ),
        (
            &["--suite", "all", "--format", "json"],
            "--format json/csv prints one suite",
        ),
        (
            &["--suite", "lookups", "--lookup-batches", "0"],
            "lookup batch sizes must be between 1 and",
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
fn wasm_path() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        ensure_built(true).expect("scripts/build-canister.sh builds the canister");
        default_wasm_path()
    })
}

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
    let mut args = vec![
        "--quiet",
        "--wasm",
        wasm_path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--rows",
        "2000",
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = icbench(&args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    stdout
}

/// The numbers of two runs, wall time left out.
fn same_numbers(a: &Report, b: &Report) {
    assert_eq!(a.results, b.results);
    assert_eq!(a.notes, b.notes);
    assert_eq!(a.executed_instructions, b.executed_instructions);
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
    let (first, second) = (temp_dir("lookups-1"), temp_dir("lookups-2"));
    let stdout = run_into(&first, &args);
    run_into(&second, &args);
    let dir = first.join("lookups");
    for file in [
        "report.md",
        "results.csv",
        "results.json",
        "plot-random.svg",
        "plot-sorted.svg",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    // Only the suite's own directory is written.
    assert!(!first.join("results.json").exists());
    let a = read_report(&dir.join("results.json"));
    same_numbers(&a, &read_report(&second.join("lookups/results.json")));
    assert_eq!(a.suite, "lookups");
    // 2 key orders x 2 stores x 3 batches, every one measured.
    assert_eq!(a.results.len(), 12);
    for r in &a.results {
        assert_eq!(r.suite, "lookups");
        assert_eq!(r.status, icbench::scenario::Status::Ok, "{r:?}");
        assert_eq!(r.operation, "point_lookup");
        assert_eq!(r.method, format!("get_users_{}_ids", r.store));
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
    for store in ["btree", "sqlite"] {
        assert_eq!(
            cell("random", store, 1).store_instructions,
            cell("sorted", store, 1).store_instructions
        );
        assert_eq!(cell("random", store, 1).args, cell("sorted", store, 1).args);
    }
    assert!(
        stdout.contains("sorted: store instructions per key"),
        "{stdout}"
    );
    let svg = std::fs::read_to_string(dir.join("plot-sorted.svg")).unwrap();
    assert!(svg.contains("Point lookup cost per key, sorted"), "{svg}");
}

#[test]
fn all_runs_every_suite_into_its_own_files() {
    let out = temp_dir("all");
    let stdout = run_into(
        &out,
        &[
            "--suite",
            "all",
            "--journal-modes",
            "OFF",
            "--batches",
            "1",
            "--lookup-batches",
            "1,10",
        ],
    );
    let seed003 = read_report(&out.join("results.json"));
    assert_eq!(seed003.suite, "seed003");
    // 3 positions x 2 stores x (1 insert batch + 3 reads).
    assert_eq!(seed003.results.len(), 24);
    let lookups = read_report(&out.join("lookups/results.json"));
    assert_eq!(lookups.results.len(), 8);
    for suite in Suite::ALL {
        assert!(
            stdout.contains(&format!("== suite {} ==", suite.name())),
            "{stdout}"
        );
    }
}
