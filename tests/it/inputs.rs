//! Inputs a new user might give that would have run wrongly: a value repeated in a list flag
//! (run twice, written twice into results.csv), a payload the canister refuses, a host or a
//! PocketIC release by name. Each is refused with one line and exit status 2 before any work
//! (the output directory is not even made), or taken.

/// icbench with `args` and `--out` in a fresh directory: exit status, stderr, and whether
/// the output directory was made.
fn icbench(name: &str, args: &[&str]) -> (i32, String, bool) {
    let out = crate::support::scratch_dir(name).join("out");
    let o = crate::support::icbench_command()
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("icbench runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        out.exists(),
    )
}

#[track_caller]
pub(crate) fn refused(name: &str, args: &[&str], expected: &str) {
    let (code, stderr, made) = icbench(name, args);
    assert_eq!(code, 2, "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end(), format!("error: {expected}"), "{args:?}");
    assert!(!made, "{args:?} made the output directory");
}

#[test]
fn all_beside_a_named_suite_runs_each_suite_once() {
    let o = crate::support::icbench_command()
        .args(["--suite", "all,lookups", "--list-scenarios"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let listed = String::from_utf8_lossy(&o.stdout);
    let lookups = listed
        .lines()
        .filter(|l| l.starts_with("lookups\t"))
        .count();
    let alone = crate::support::icbench_command()
        .args(["--suite", "lookups", "--list-scenarios"])
        .output()
        .unwrap();
    assert_eq!(
        lookups,
        String::from_utf8_lossy(&alone.stdout).lines().count()
    );
    assert!(lookups > 0);
}

#[test]
fn a_payload_the_canister_refuses_is_refused_naming_its_limit_before_the_memory_estimate() {
    refused(
        "payload",
        &["--payload-size", "99999999999"],
        "--payload-size 99999999999: the bench canister takes at most 1048576 bytes per row (1 MiB, the MAX_PAYLOAD_SIZE of its set_payload_size)",
    );
    // The limit itself is taken (the run goes on to its next check).
    let (code, stderr, _) = icbench(
        "payload-max",
        &["--payload-size", "1048576", "--rows", "10"],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("--rows must be at least 2000"), "{stderr}");
}

#[test]
fn a_host_is_for_the_embedded_engine() {
    let (code, stderr, _) = icbench("host-bad", &["--host", "windows"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("invalid value 'windows' for '--host <HOST>'")
            && stderr.contains("linux, macos-arm64"),
        "{stderr}"
    );
    let (code, stderr, _) = icbench(
        "host-pocket-ic",
        &["--engine", "pocket-ic", "--host", "macos-arm64"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "error: --host macos-arm64 selects the OS pages the embedded engine counts; a PocketIC server counts those of the machine it runs on"
    );
}

/// A file `name` holding `bytes`, in a new scratch directory `dir`.
fn scratch_file(dir: &str, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let file = crate::support::scratch_dir(dir).join(name);
    std::fs::write(&file, bytes).unwrap();
    file
}

/// `--wasm NAME=PATH` with a NAME no module has, and `NAME=` with no path: refused naming
/// the modules (and the one meant, spelt with `_` for `-`), not read as a path that then
/// "does not exist" although the file is there.
#[test]
fn a_wasm_value_naming_no_module_is_refused_naming_the_modules() {
    let file = scratch_file("wasm-names", "m.wasm", b"\0asm");
    let dir = file.parent().unwrap();
    let file = file.display();
    let modules = "the modules are bench, tune, sqlite-vfs, motoko, motoko-classic (--wasm NAME=PATH), or give a path alone for the bench module";
    refused(
        "wasm-foo",
        &["--wasm", &format!("foo={file}")],
        &format!("--wasm foo={file}: no module is called foo; {modules}"),
    );
    refused(
        "wasm-underscore",
        &["--wasm", &format!("sqlite_vfs={file}")],
        &format!(
            "--wasm sqlite_vfs={file}: no module is called sqlite_vfs (did you mean sqlite-vfs?); {modules}"
        ),
    );
    refused(
        "wasm-empty",
        &["--wasm", "bench="],
        "--wasm bench=: the path after bench= is empty; give the module's file: --wasm bench=PATH",
    );
    // A file whose name has `=` in it is still a file: read (and here refused as no module).
    std::fs::write(dir.join("a=b.wasm"), b"hello").unwrap();
    let out = dir.join("out");
    let stderr = crate::support::stderr_of_exit(
        crate::support::icbench_command()
            .current_dir(dir)
            .args(["--wasm", "a=b.wasm", "--out"])
            .arg(&out),
        2,
    );
    assert_eq!(
        stderr,
        "error: --wasm a=b.wasm: invalid module: neither a Wasm module (\\0asm) nor gzip; the first bytes are [68, 65, 6c, 6c]\n"
    );
    assert!(!out.exists());
}

/// A refused `--wasm` or engine flag is the first thing said (not after "bench canister:
/// ..." of the default module's build), and leaves no output directory behind.
#[test]
fn refused_modules_and_engine_flags_come_before_any_output_directory_or_line() {
    let text = scratch_file("refused-first", "text.wasm", b"hello, world");
    let text = text.display();
    refused(
        "first-tune-unneeded",
        &["--wasm", "tune=/nonexistent.wasm"],
        "--wasm tune=/nonexistent.wasm: no store the selected suites measure lives in the tune module",
    );
    refused(
        "first-tune-bad",
        &["--suite", "tune", "--wasm", &format!("tune={text}")],
        &format!("--wasm tune={text}: invalid module: neither a Wasm module (\\0asm) nor gzip; the first bytes are [68, 65, 6c, 6c]"),
    );
    refused(
        "first-vfs-missing",
        &["--wasm", "sqlite-vfs=/nonexistent.wasm"],
        "--wasm sqlite-vfs=/nonexistent.wasm: cannot read it: No such file or directory (os error 2)",
    );
    refused(
        "first-host",
        &["--engine", "pocket-ic", "--host", "macos-arm64"],
        "--host macos-arm64 selects the OS pages the embedded engine counts; a PocketIC server counts those of the machine it runs on",
    );
    refused(
        "first-replica",
        &["--engine", "pocket-ic", "--replica", "2024"],
        "--replica 2024 selects the rules of the embedded engine; a PocketIC server charges by the replica it was built from",
    );
}

#[test]
fn the_cache_suite_refuses_flags_it_would_drop() {
    refused(
        "cache-lookups",
        &["--suite", "cache", "--cache-lookups", "1,10", "--cache-no-lookups"],
        "--cache-lookups 1,10 and --cache-no-lookups contradict each other: give --cache-lookups to measure those lookups, or --cache-no-lookups to skip them",
    );
    refused(
        "cache-btree",
        &["--suite", "cache", "--stores", "btree,sqlite"],
        "--stores btree,sqlite: the cache suite does not measure btree (seed003, lookups, dbbench, keys, sysbench, upgrade, scaling, tune and sustained measure it): leave it out",
    );
    // The default --stores (every store), and a store another suite of the run measures,
    // are taken.
    for args in [
        &["--suite", "cache"][..],
        &["--suite", "cache,seed003", "--stores", "btree,sqlite"],
    ] {
        let (code, _, stderr) =
            crate::support::run_icbench(&[args, &["--list-scenarios"]].concat());
        assert_eq!(code, 0, "{args:?}: {stderr}");
    }
}

#[test]
fn values_said_wrongly_before_are_named_for_what_they_are() {
    refused(
        "tune-none",
        &["--suite", "tune", "--tune-variants", "none,heap-talc"],
        "--tune-variants: none stands alone (it measures no variant), so it cannot be combined with variants: give none, or the variants",
    );
    for (value, what) in [
        ("inf", "inf is infinite"),
        ("NaN", "NaN is not a number"),
        ("0", "0 is not positive"),
    ] {
        refused(
            &format!("usd-{value}"),
            &["--usd-per-xdr", value],
            &format!("--usd-per-xdr {what}: it must be a finite positive number"),
        );
    }
    // Every suite refuses it, before any work.
    for suite in icbench::suites::REGISTRY.map(|s| s.name()) {
        refused(
            &format!("usd-{suite}"),
            &["--suite", suite, "--usd-per-xdr", "0"],
            "--usd-per-xdr 0 is not positive: it must be a finite positive number",
        );
    }
}

/// Motoko's stores: a journal mode (they are not SQLite), the tune suite (no SQLite settings),
/// the classical Map in a users suite and a name the table does not have are refused in one
/// line before any work.
#[test]
fn motoko_stores_refuse_journal_modes_and_unknown_names() {
    refused(
        "motoko_journal_modes",
        &["--stores", "mo-map,mo-region", "--journal-modes", "WAL"],
        "--journal-modes WAL: no store this run measures is SQLite (mo-map,mo-region), so there is \
         no journal mode to choose; leave --journal-modes out, or add --stores sqlite",
    );
    refused(
        "motoko_tune",
        &[
            "--suite",
            "tune",
            "--stores",
            "sqlite,mo-map",
            "--tune-page-sizes",
            "4096",
        ],
        "--stores sqlite,mo-map: the tune suite does not measure mo-map (seed003, lookups, \
         upgrade, scaling and sustained measure it): leave it out",
    );
    // The classical Map is measured by the upgrade and scaling suites alone.
    for suite in ["seed003", "lookups", "sustained"] {
        refused(
            &format!("motoko_classic_{suite}"),
            &["--suite", suite, "--stores", "mo-map-classic"],
            &format!(
                "--stores mo-map-classic: the {suite} suite does not measure mo-map-classic \
                 (upgrade and scaling measure it): leave it out"
            ),
        );
    }
    let (code, stderr, made) = icbench("motoko_unknown", &["--stores", "mo-btree"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with("error: invalid value 'mo-btree' for '--stores <STORES>'"),
        "{stderr}"
    );
    assert!(stderr.contains("mo-map"), "{stderr}");
    assert!(!made);
}

#[test]
fn the_sustained_suite_refuses_sequences_it_cannot_send() {
    refused(
        "sustained_fit",
        &[
            "--suite",
            "sustained",
            "--rows",
            "2000",
            "--sustained-workloads",
            "100x100",
        ],
        "--sustained-workloads 100x100 (a sequence is its last message after N - 1 warm-ups): 99 \
         warm-ups of a middle insert/100 do not fit in 2,000 rows (they take the W windows of ids just below \
         the middle one: W x batch <= rows / 2)",
    );
    refused(
        "sustained_many",
        &["--suite", "sustained", "--sustained-workloads", "20000x1"],
        "--sustained-workloads 20000x1: at most 10,000 messages a sequence (each is a message of \
         its own)",
    );
    refused(
        "sustained_cache",
        &["--suite", "sustained", "--page-cache", "warm"],
        "--page-cache: the sustained suite does not read it (seed003, lookups and tune read \
         it): leave it out",
    );
    let (code, stderr, made) = icbench(
        "sustained_spelling",
        &["--suite", "sustained", "--sustained-workloads", "1000"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`1000` is not a sequence: give MESSAGESxROWS"),
        "{stderr}"
    );
    assert!(!made);
}

/// The default batches fit the default rows: with fewer rows the batches that fit run and the
/// report names the others; given batches that do not fit are refused, naming them. The range
/// scan needs 2,000 rows, and `--no-reads`, which leaves it out, does not.
#[test]
fn fewer_rows_run_the_default_batches_that_fit_and_without_reads_no_scan_rows() {
    for (name, args, expected) in [
        ("batches-over-half", "--rows 4000 --batches 1,3000", "--batches 3000 is more than half of --rows 4000 (2000): give smaller batches"),
        ("scan-rows", "--rows 1000 --stores btree", "--rows must be at least 2000 for the range scan, which reads 1,000 rows from the middle (--no-reads leaves it out), got 1000"),
    ] {
        refused(name, &args.split(' ').collect::<Vec<_>>(), expected);
    }
    let out = crate::support::scratch_dir("few-rows").join("out");
    let out = out.to_str().unwrap();
    crate::support::run_icbench_ok(&[
        "--rows",
        "1000",
        "--no-reads",
        "--stores",
        "btree",
        "--positions",
        "end",
        "--quiet",
        "--out",
        out,
    ]);
    let report = std::fs::read_to_string(format!("{out}/report.md")).unwrap();
    assert!(
        report.contains("Batches of 1,000 and 10,000 rows (in `--batches`' default) are left out: a batch is at most half of `--rows` (500)."),
        "{report}"
    );
    let csv = std::fs::read_to_string(format!("{out}/results.csv")).unwrap();
    let column = csv
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|c| c == "batch");
    let batches: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(column.unwrap()).unwrap())
        .collect();
    assert_eq!(batches, ["1", "10", "100"]);
}
