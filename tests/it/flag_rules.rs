//! The rules every flag follows: a suite flag the run's suites do not read, and a store they
//! do not measure, are refused in one line naming the suites that do (the run would drop
//! them without a word); a value of a list is taken in any case; `--help` says who reads a
//! shared flag and who measures a store.

use icbench::stores::StoreKind;
use icbench::suites::REGISTRY;

use crate::inputs::refused;
use crate::support::run_icbench;

#[test]
fn a_flag_no_suite_of_the_run_reads_is_refused_naming_those_that_do() {
    let cases: [(&str, &[&str], &str); 6] = [
        (
            "batches",
            &["--suite", "dbbench", "--batches", "1"],
            "--batches: the dbbench suite does not read it (seed003 reads it): leave it out",
        ),
        (
            "tune-wasm",
            &["--suite", "dbbench", "--tune-wasm", "/nonexistent"],
            "--tune-wasm: the dbbench suite does not read it (tune reads it): leave it out",
        ),
        (
            "rows",
            &["--suite", "scaling", "--rows", "2000"],
            "--rows: the scaling suite does not read it (seed003, lookups, upgrade, tune, cache \
             and sustained read it): leave it out",
        ),
        (
            "page-sizes",
            &["--tune-page-sizes", "4096"],
            "--tune-page-sizes: the seed003 suite does not read it (tune reads it): leave it out",
        ),
        (
            "layout",
            &["--suite", "dbbench,keys", "--layout", "alone"],
            "--layout: the dbbench and keys suites do not read it (seed003, lookups, cache and \
             sustained read it): leave it out",
        ),
        (
            "journal-modes",
            &["--suite", "scaling", "--journal-modes", "WAL"],
            "--journal-modes: the scaling suite does not read it (seed003, lookups, upgrade, \
             tune, cache and sustained read it): leave it out",
        ),
    ];
    for (name, args, expected) in cases {
        refused(name, args, expected);
    }
    // Read by one suite of the run: taken.
    let (code, _, stderr) = run_icbench(&[
        "--suite",
        "dbbench,seed003",
        "--batches",
        "1",
        "--list-scenarios",
    ]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_store_no_suite_of_the_run_measures_is_refused_in_every_suite() {
    let mut checked = 0;
    for suite in REGISTRY.map(|s| s.name()) {
        let (Some(measured), Some(dropped)) = (
            StoreKind::ALL.into_iter().find(|k| k.measured_by(suite)),
            StoreKind::ALL.into_iter().find(|k| !k.measured_by(suite)),
        ) else {
            continue;
        };
        let measuring: Vec<&str> = REGISTRY
            .map(|s| s.name())
            .into_iter()
            .filter(|&s| dropped.measured_by(s))
            .collect();
        let (last, rest) = measuring.split_last().unwrap();
        let (them, verb) = match rest {
            [] => (last.to_string(), "measures"),
            _ => (format!("{} and {last}", rest.join(", ")), "measure"),
        };
        refused(
            &format!("unmeasured-{suite}"),
            &[
                "--suite",
                suite,
                "--stores",
                &format!("{measured},{dropped}"),
            ],
            &format!(
                "--stores {measured},{dropped}: the {suite} suite does not measure {dropped} \
                 ({them} {verb} it): leave it out"
            ),
        );
        checked += 1;
    }
    // Every suite but upgrade and scaling, which measure every store.
    assert_eq!(checked, REGISTRY.len() - 2);
    // The cases, word for word.
    refused(
        "unmeasured-heap-dbbench",
        &["--suite", "dbbench", "--stores", "heap,btree"],
        "--stores heap,btree: the dbbench suite does not measure heap (seed003, lookups, \
         upgrade, scaling, tune and sustained measure it): leave it out",
    );
    refused(
        "unmeasured-classic",
        &["--stores", "btree,mo-map-classic"],
        "--stores btree,mo-map-classic: the seed003 suite does not measure mo-map-classic \
         (upgrade and scaling measure it): leave it out",
    );
}

#[test]
fn every_value_of_a_list_is_taken_in_any_case() {
    for args in [
        &["--suite", "Lookups"][..],
        &["--stores", "BTree"],
        &["--layout", "Alone"],
        &["--journal-modes", "wal"],
        &["--page-cache", "COLD"],
        &["--positions", "Middle"],
        &["--engine", "Embedded"],
        &["--format", "TABLE"],
        &["--replica", "POCKET-IC-16.0.0"],
        &["--host", "LINUX"],
        &["--suite", "tune", "--tune-variants", "NONE"],
        &["--suite", "tune", "--tune-synchronous", "off"],
        &["--suite", "upgrade", "--heap-encodings", "CBOR"],
    ] {
        let (code, _, stderr) = run_icbench(&[args, &["--list-scenarios"]].concat());
        assert_eq!(code, 0, "{args:?}: {stderr}");
    }
    // A module's name too: refused for the file that is not there, not for the name.
    refused(
        "any-case-wasm",
        &["--stores", "mo-map", "--wasm", "Motoko=/nonexistent.wasm"],
        "--wasm motoko=/nonexistent.wasm: cannot read it: No such file or directory (os error 2)",
    );
}

#[test]
fn help_says_who_reads_a_shared_flag_and_who_measures_a_store() {
    let (code, help, _) = run_icbench(&["--help"]);
    assert_eq!(code, 0);
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        "Read by seed003, lookups, cache, sustained.",
        "Stores to measure, comma-separated. Read by every suite.",
        "saved to stable memory only across upgrades; measured by seed003, lookups, sustained, \
         upgrade, scaling, tune",
        "NAME=PATH replaces the module NAME instead (bench, tune, sqlite-vfs, motoko, \
         motoko-classic)",
    ] {
        assert!(flat.contains(expected), "{expected:?} not in --help");
    }
}
