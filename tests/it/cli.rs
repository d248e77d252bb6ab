//! The CLI refuses bad input with an error that names the problem and the accepted values,
//! before any work starts.

use crate::support::assert_has;

fn icbench(args: &[&str]) -> (i32, String) {
    let out = crate::support::icbench_command()
        .args(args)
        .output()
        .expect("icbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_values_list_the_accepted_ones() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--positions", "sideways"],
            &["sideways", "middle, end, random"],
        ),
        (
            &["--journal-modes", "MEMORY,JOURNALISH"],
            &["JOURNALISH", "DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF"],
        ),
        (&["--stores", "redis"], &["redis", "btree, sqlite"]),
        (
            &["--batches", "0"],
            &["batch sizes must be between 1 and 100000"],
        ),
        (&["--rows", "10"], &["--rows must be at least 2000"]),
        (
            &["--engine", "replica"],
            &["replica", "embedded", "pocket-ic"],
        ),
        (
            &["--usd-per-xdr=-1"],
            &["--usd-per-xdr -1 is not positive: it must be a finite positive number"],
        ),
        (&["--jobs", "0"], &["'0' for '--jobs <JOBS>'", "1..=1024"]),
        (&["--jobs", "two"], &["'two' for '--jobs <JOBS>'"]),
        (&["canbench", "--jobs", "0"], &["'0' for '--jobs <JOBS>'"]),
        (&["run", "--jobs=-1"], &["'-1' for '--jobs <JOBS>'"]),
        (
            &["--shard", "3/2"],
            &["'3/2' for '--shard <K/N>'", "expected K/N"],
        ),
        (&["--shard", "2"], &["expected K/N with 1 <= K <= N"]),
        (
            &["--replica", "2027"],
            &[
                "'2027' for '--replica <VINTAGE>'",
                "2024, 2025-03, 2026-04, 2026-05, 2026-07",
            ],
        ),
        (
            &["--engine", "pocket-ic", "--replica", "2024"],
            &["--replica 2024 selects the rules of the embedded engine"],
        ),
    ];
    for (args, expected) in cases {
        let (code, stderr) = icbench(args);
        assert_eq!(code, 2, "{args:?} must fail as bad input: {stderr}");
        for e in *expected {
            assert!(stderr.contains(e), "{args:?}: expected {e:?} in {stderr}");
        }
    }
}

/// The runs that start a PocketIC server.
#[cfg(feature = "pocket-ic")]
const NEED_A_SERVER: [&[&str]; 2] = [
    &["--engine", "pocket-ic", "--quiet"],
    &["crosscheck", "--quiet"],
];

/// Runs icbench with POCKET_IC_BIN set to `bin` (or unset) and the download opt-in unset.
#[cfg(feature = "pocket-ic")]
fn icbench_with_server(args: &[&str], bin: Option<&str>) -> (i32, String, std::time::Duration) {
    let mut cmd = crate::support::icbench_command();
    cmd.args(args).env_remove("ICBENCH_POCKET_IC_DOWNLOAD");
    match bin {
        Some(b) => cmd.env("POCKET_IC_BIN", b),
        None => cmd.env_remove("POCKET_IC_BIN"),
    };
    let started = std::time::Instant::now();
    let out = cmd.output().expect("icbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

#[test]
#[cfg(feature = "pocket-ic")]
fn pocket_ic_without_a_server_says_how_to_provide_one() {
    for args in NEED_A_SERVER {
        let (code, stderr, took) = icbench_with_server(args, None);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_has(&stderr, "POCKET_IC_BIN is not set");
        assert_has(&stderr, "POCKET_IC_BIN=/path/to/pocket-ic");
        assert_has(&stderr, "github.com/dfinity/pocketic/releases");
        assert!(stderr.contains("16."), "names the server version: {stderr}");
        // At once: before building the canister or running the embedded half.
        assert!(took.as_secs() < 10, "{args:?} took {took:?}");
    }
}

#[test]
#[cfg(feature = "pocket-ic")]
fn a_pocket_ic_bin_that_is_not_a_server_is_refused_at_once() {
    for args in NEED_A_SERVER {
        let (code, stderr, took) = icbench_with_server(args, Some("/nonexistent/pocket-ic"));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_has(&stderr, "POCKET_IC_BIN=/nonexistent/pocket-ic");
        assert_has(&stderr, "no such file");
        assert!(took.as_secs() < 10, "{args:?} took {took:?}");
        let (code, stderr, _) = icbench_with_server(args, Some("/bin/true"));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_has(&stderr, "not `pocket-ic-server X.Y.Z`");
    }
}

#[test]
fn crosscheck_refuses_a_negative_threshold() {
    let (code, stderr) = icbench(&["crosscheck", "--threshold=-1"]);
    assert_eq!(code, 2);
    assert_has(&stderr, "--threshold must be a non-negative percentage");
}

/// The default build leaves the PocketIC backend out: asking for it is bad input (exit 2)
/// answered with the command that builds it in, at once, while --help still lists it.
#[test]
#[cfg(not(feature = "pocket-ic"))]
fn pocket_ic_without_the_feature_says_how_to_rebuild() {
    for (args, what) in [
        (
            &["--engine", "pocket-ic", "--quiet"][..],
            "--engine pocket-ic",
        ),
        (
            &["run", "--engine", "pocket-ic", "--quiet"][..],
            "--engine pocket-ic",
        ),
        (&["crosscheck", "--quiet"][..], "crosscheck"),
    ] {
        let (code, stderr) = icbench(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "`cargo run --release --features pocket-ic -- {what} ...`"
            )),
            "{args:?}: {stderr}"
        );
        assert_has(&stderr, "POCKET_IC_BIN");
        // Refused before the canister is built (the build script reports on stderr).
        assert!(!stderr.contains("build-canister"), "{args:?}: {stderr}");
    }
    let help = crate::support::icbench_command()
        .arg("--help")
        .output()
        .expect("icbench runs");
    let help = String::from_utf8_lossy(&help.stdout);
    assert_has(
        &help,
        "pocket-ic: A PocketIC server (POCKET_IC_BIN); needs a build with `--features pocket-ic`",
    );
}

#[test]
fn compare_rejects_files_that_are_not_results() {
    let dir = std::env::temp_dir().join(format!("icbench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"suite\": 3}").unwrap();
    let (code, stderr) = icbench(&["compare", bad.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_has(&stderr, "bad.json");
    let (code, stderr) = icbench(&["compare", "/nonexistent/base.json", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_has(&stderr, "/nonexistent/base.json");
}

#[test]
fn help_lists_every_replica_vintage_with_what_it_changed() {
    let out = crate::support::icbench_command()
        .arg("--help")
        .output()
        .expect("icbench runs");
    let help = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    for replica in icbench::engine::cost::Replica::ALL {
        assert!(help.contains(replica.name), "{} in {help}", replica.name);
        assert!(
            help.contains(replica.summary),
            "{} in {help}",
            replica.summary
        );
    }
}

#[test]
fn unwritable_outputs_are_refused_before_any_work() {
    let dir = crate::support::scratch_dir("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let under_file = file.join("out");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--out", "/proc/x"],
            "--out /proc/x: cannot write into /proc/x".into(),
        ),
        // Every suite's directory is tried, not only the first one's.
        (
            vec!["--suite", "lookups,scaling", "--out", "/proc/x"],
            "--out /proc/x: cannot write into /proc/x/lookups".into(),
        ),
        // A file where the directory must be says so (not "File exists").
        (
            vec!["--out", file.to_str().unwrap()],
            format!(
                "error: --out {} names a file, not a directory",
                file.display()
            ),
        ),
        (
            vec!["--suite", "lookups", "--out", file.to_str().unwrap()],
            format!(
                "error: --out {} names a file, not a directory",
                file.display()
            ),
        ),
        (
            vec!["run", "--out", under_file.to_str().unwrap()],
            format!(
                "error: --out {}: {} is a file, not a directory",
                under_file.display(),
                file.display()
            ),
        ),
    ];
    for (args, expected) in cases {
        let out = crate::support::icbench_command()
            .args(&args)
            .output()
            .expect("icbench runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&expected),
            "{args:?}: expected {expected:?} in {stderr}"
        );
        // Refused before the canister build, the compile or the prefill said anything.
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // The cache directory is tried first too. One named by ICBENCH_CACHE_DIR that cannot
    // be written is refused in one line, before the --out check.
    let stderr = out_refused_with("ICBENCH_CACHE_DIR", "/proc/icbench-cache");
    assert_eq!(
        stderr.trim_end(),
        "error: ICBENCH_CACHE_DIR=/proc/icbench-cache: cannot write into /proc/icbench-cache/modules: No such file or directory (os error 2); set it to a directory icbench can write, or unset it to use the platform's cache directory"
    );
    // The platform's cache directory (here under an XDG_CACHE_HOME that cannot exist): a
    // warning, and the run goes on (here to the --out refusal).
    let stderr = out_refused_with("XDG_CACHE_HOME", "/proc/icbench-xdg");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("warning: cache directory /proc/icbench-xdg/icbench (the platform's): cannot write into /proc/icbench-xdg/icbench/modules"),
        "{stderr}"
    );
    assert!(lines[1].starts_with("error: --out /proc/x"), "{stderr}");
}

/// The stderr of `icbench --out /proc/x` with `var=value` and no other ICBENCH_CACHE_DIR,
/// which must exit 2 (--out cannot be written).
fn out_refused_with(var: &str, value: &str) -> String {
    crate::support::stderr_of_exit(
        crate::support::icbench_command()
            .env_remove("ICBENCH_CACHE_DIR")
            .env(var, value)
            .args(["--out", "/proc/x"]),
        2,
    )
}

#[test]
fn bad_modules_to_wasm_are_one_line_errors_naming_file_and_problem() {
    let dir = crate::support::scratch_dir("bad-wasm");
    let real = std::fs::read(
        icbench::bench_canister::project_root().join(icbench::bench_canister::PREBUILT_WASM),
    )
    .unwrap();
    let files: [(&str, &[u8], &str); 4] = [
        (
            "text.wasm",
            b"hello, world",
            "invalid module: neither a Wasm module (\\0asm) nor gzip; the first bytes are [68, 65, 6c, 6c]",
        ),
        (
            "truncated.wasm",
            &real[..real.len() / 3],
            "truncated or invalid Wasm: ",
        ),
        (
            "other.wasm",
            &wat::parse_str(r#"(module (func $f) (export "canister_query stats" (func $f)))"#)
                .unwrap(),
            "not the bench canister: a valid Wasm module without the exports `canister_update set_payload_size`, `canister_update add_users_btree`, `canister_update add_users_heap`, `canister_update add_users_sqlite`",
        ),
        (
            "bad.wasm.gz",
            &[0x1f, 0x8b, 0, 1, 2],
            "invalid module: the gzip stream cannot be decompressed",
        ),
    ];
    for (name, bytes, problem) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let out_dir = dir.join(format!("out-{name}"));
        let (code, stderr) = icbench(&[
            "--wasm",
            path.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{name}: {stderr}");
        let expected = format!("error: --wasm {}: {problem}", path.display());
        assert!(
            stderr.contains(&expected),
            "expected {expected:?} in {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

#[test]
fn a_run_that_would_not_fit_in_memory_is_refused_naming_the_flags_that_fit() {
    let dir = crate::support::scratch_dir("memory");
    let out = dir.join("out");
    // icbench with `args`, planning for `available` bytes, refused with exit status 2:
    // its stderr.
    let icbench_with = |available: &str, args: &[&str]| {
        let o = crate::support::icbench_command()
            .env("ICBENCH_MEMORY_AVAILABLE", available)
            .args(args)
            .arg("--out")
            .arg(&out)
            .output()
            .expect("icbench runs");
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code().unwrap_or(-1), 2, "{stderr}");
        stderr
    };
    let run = |available: &str, extra: &[&str]| {
        let args = [&["--suite", "scaling", "--jobs", "2"], extra].concat();
        icbench_with(available, &args)
    };
    // 10,000,000 rows on 2 jobs: SQLite at its peak (3.8 GB) beside the StableBTreeMap's
    // 2.1 GB, and 0.5 GB whatever the stores.
    let stderr = run("6000000000", &[]);
    assert_eq!(
        stderr.trim_end(),
        "error: the scaling suite to 10,000,000 rows on 2 jobs needs about 16.5 GB of memory at its peak (an estimate), and 6.0 GB is available; these fit: `--scaling-max-rows 1000000 --jobs 1` (about 4.5 GB), `--scaling-max-rows 100000` (about 1.0 GB), `--scaling-max-rows 100000 --jobs 1` (about 0.9 GB); or pass --ignore-memory-estimate to run anyway"
    );
    // The upgrade suite: its limit run (8 GB, the heap near 4 GiB) beside the heap map's
    // upgrade at 1,000,000 rows (0.9 GB), with every store's states held (1.5 GB, 0.2 of
    // them ic-sqlite-vfs's).
    let stderr = icbench_with("6000000000", &["--suite", "upgrade", "--jobs", "2"]);
    assert_eq!(
        stderr.trim_end(),
        "error: the upgrade suite to 1,000,000 rows with the limit run on 2 jobs needs about 16.2 GB of memory at its peak (an estimate), and 6.0 GB is available; these fit: `--no-limit-run --jobs 1` (about 3.5 GB), `--upgrade-sizes 1000,10000,100000 --no-limit-run` (about 1.4 GB); or pass --ignore-memory-estimate to run anyway"
    );
    // The default suite at 10,000,000 rows: 1,800 B a row in its eight stores of the bench
    // canister, 405 B more in ic-sqlite-vfs's canister.
    let stderr = icbench_with("6000000000", &["--rows", "10000000"]);
    assert_eq!(
        stderr.trim_end(),
        "error: the seed003 suite with 10,000,000 rows in 12 stores needs about 50.3 GB of memory at its peak (an estimate), and 6.0 GB is available; these fit: `--rows 1000000` (about 5.5 GB), `--rows 100000` (about 1.0 GB); or pass --ignore-memory-estimate to run anyway"
    );
    // A shard counts only its own stores (`--shard` splits the scaling suite by store).
    let stderr = run("4000000000", &["--shard", "3/3"]);
    assert!(
        stderr.starts_with("error: the scaling suite to 10,000,000 rows on 2 jobs (shard 3/3: sqlite, mo-pure-map) needs about 10.8 GB"),
        "{stderr}"
    );
    let stderr = run("1000000000", &[]);
    assert_has(
        &stderr,
        "and 1.0 GB is available; these fit: `--scaling-max-rows 100000 --jobs 1` (about 0.9 GB)",
    );
    let stderr = run("100", &[]);
    assert_has(&stderr, "no smaller setting of this suite fits");
    let stderr = run("lots", &[]);
    assert_has(
        &stderr,
        "ICBENCH_MEMORY_AVAILABLE=\"lots\": expected a number of bytes",
    );
    // Refused before the output directory was even made.
    assert!(!out.exists());
    // With the override the run goes on to its next check (here: a bad --wasm).
    let stderr = run(
        "100",
        &["--ignore-memory-estimate", "--wasm", "/nonexistent.wasm"],
    );
    assert_has(&stderr, "--wasm /nonexistent.wasm: cannot read it");
    // The shard that fits goes on too.
    let stderr = run(
        "6000000000",
        &[
            "--shard",
            "3/3",
            "--scaling-max-rows",
            "1000000",
            "--wasm",
            "/nonexistent.wasm",
        ],
    );
    assert_has(&stderr, "--wasm /nonexistent.wasm: cannot read it");
    // Without --jobs, fewer workers where they fit (mo-map alone on 1 job), and a line
    // says so.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let stderr = icbench_with(
        "12000000000",
        &["--suite", "scaling", "--wasm", "/nonexistent.wasm"],
    );
    let fewer = format!("icbench: 1 job instead of {cores}: the scaling suite to 10,000,000 rows on {cores} jobs needs about ");
    assert_eq!(stderr.contains(&fewer), cores > 1, "{stderr}");
    assert_eq!(
        stderr.contains("and 12.0 GB is available; on 1 job about 10.0 GB\n"),
        cores > 1,
        "{stderr}"
    );
    assert_has(&stderr, "--wasm /nonexistent.wasm: cannot read it");
}

#[test]
fn a_store_that_does_not_fit_alone_stops_at_the_sizes_that_fit() {
    let dir = crate::support::scratch_dir("memory-fit");
    // The scaling suite with the heap map and the StableBTreeMap, planned for `available`
    // bytes: exit status, stderr and the results.csv rows.
    let run = |name: &str, available: &str, extra: &[&str]| {
        let out = dir.join(name);
        let o = crate::support::icbench_command()
            .env("ICBENCH_MEMORY_AVAILABLE", available)
            .args(["--suite", "scaling", "--stores", "heap,btree", "--quiet"])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .output()
            .expect("icbench runs");
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        let csv = std::fs::read_to_string(out.join("scaling/results.csv")).unwrap_or_default();
        let rows: Vec<String> = csv.lines().skip(1).map(String::from).collect();
        (
            o.status.code().unwrap_or(-1),
            stderr,
            rows,
            out.join("scaling"),
        )
    };
    // 3 MB beside the process's 0.5 GB, at the default sizes (1,000 to 10,000,000 rows):
    // the StableBTreeMap fits to 10,000 rows (210 bytes a row), the heap map to 1,000 (350).
    let (code, stderr, rows, out) = run("fitted", "503000000", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stderr,
        "icbench: scaling: heap stops at 1,000 rows: at 10,000 rows it needs about 0.5 GB alone (an estimate), and 0.5 GB is available; --ignore-memory-estimate measures it anyway\n\
         icbench: scaling: btree stops at 10,000 rows: at 100,000 rows it needs about 0.5 GB alone (an estimate), and 0.5 GB is available; --ignore-memory-estimate measures it anyway\n"
    );
    // report.md says what was left out, and the largest size measured.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let left_out = "\n- Left out for want of memory: the heap map stops at 1,000 rows: at 10,000 rows it needs about 0.5 GB alone (an estimate); the StableBTreeMap stops at 10,000 rows: at 100,000 rows it needs about 0.5 GB alone (an estimate). ";
    for needle in [left_out, "\n- Rows before each message: 10,000\n"] {
        assert!(report.contains(needle), "{needle:?} in {report}");
    }
    // Its rows are those of runs without the limit: the StableBTreeMap's to 10,000 rows,
    // the heap map's to 1,000 (its upgrade there).
    let field = |row: &str, i: usize| row.split(',').nth(i).unwrap_or("").to_string();
    let (store, rows_before) = (2, 7);
    let plenty = "100000000000";
    let (code, stderr, both, _) = run("to-10000", plenty, &["--scaling-max-rows", "10000"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr, heap, _) = run("heap", plenty, &["--scaling-max-rows", "1000"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(both
        .iter()
        .any(|r| field(r, store) == "heap" && field(r, rows_before) == "10000"));
    let mut expected: Vec<String> = heap
        .into_iter()
        .filter(|r| field(r, store) == "heap")
        .collect();
    expected.extend(both.into_iter().filter(|r| field(r, store) == "btree"));
    assert_eq!(rows, expected);
    // The sizes given: refused as before, naming what fits.
    let (code, stderr, _, out) = run("given", "503000000", &["--scaling-max-rows", "10000"]);
    assert_eq!(code, 2, "{stderr}");
    assert_has(
        &stderr,
        "and 0.5 GB is available; these fit: `--scaling-max-rows 1000` (about 0.5 GB)",
    );
    assert!(!out.exists());
}

#[test]
fn version_names_the_commit_and_the_default_replica_rules() {
    let out = crate::support::icbench_command()
        .arg("--version")
        .output()
        .expect("icbench runs");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let rest = text
        .strip_prefix(&format!("icbench {} (commit ", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{text}"));
    let (commit, rest) = rest.split_once(';').unwrap_or_else(|| panic!("{text}"));
    // 12 hex digits of the checkout (with -dirty after them when tracked files differed
    // from it), or `unknown` outside a git checkout.
    let hash = commit.trim_end_matches("-dirty");
    assert!(
        commit == "unknown" || (hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit())),
        "{text}"
    );
    assert_eq!(
        rest,
        format!(
            " default replica rules {})\n",
            icbench::engine::cost::Replica::NEWEST.name
        )
    );
}

#[test]
fn an_unknown_pocket_ic_release_suggests_the_newest_of_its_major_version() {
    // By spelling alone clap suggests pocket-ic-16.0.0 for it.
    let (code, _, stderr) = crate::support::run_icbench(&["--replica", "pocket-ic-17.0.0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with("error: invalid value 'pocket-ic-17.0.0' for '--replica <VINTAGE>'\n"),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l == "  tip: a similar value exists: 'pocket-ic-16.1.0'"),
        "{stderr}"
    );
    // A vintage misspelt keeps clap's suggestion.
    let (code, _, stderr) = crate::support::run_icbench(&["--replica", "2026-7"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l == "  tip: a similar value exists: '2026-07'"),
        "{stderr}"
    );
}

/// `icbench merge --out OUT SHARD SHARD`, asserted refused as bad input: its stdout and
/// stderr.
fn refused_merge(out: &std::path::Path, shards: [&std::path::Path; 2]) -> (String, String) {
    let mut args = vec!["merge", "--out", out.to_str().unwrap()];
    args.extend(shards.map(|s| s.to_str().unwrap()));
    let (code, stdout, stderr) = crate::support::run_icbench(&args);
    assert_eq!(code, 2, "{stderr}");
    (stdout, stderr)
}

/// `icbench merge --out DIR` where DIR is one of the shards, by any spelling: refused, naming
/// it, before anything is read or written.
#[test]
fn merge_refuses_an_out_that_is_one_of_its_shards() {
    let dir = crate::support::scratch_dir("merge-into-shard");
    let (one, two) = (dir.join("part1"), dir.join("part2"));
    for d in [&one, &two] {
        std::fs::create_dir_all(d).unwrap();
    }
    for (out, shard) in [(one.clone(), &one), (dir.join("part2/../part2/."), &two)] {
        let (stdout, stderr) = refused_merge(&out, [&one, &two]);
        assert_eq!(
            stderr,
            format!(
                "error: --out {} is the directory of the shard {}: the merged files would overwrite that shard's and leave its work.csv beside them; give --out a directory of its own\n",
                out.display(),
                shard.display()
            )
        );
        assert!(stdout.is_empty());
    }
    for d in [&one, &two] {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "{}", d.display());
    }
}

/// A shard's results.json as a `--shard K/2` run of seed003 writes it, with no scenarios:
/// `rows` rows, and `settings` the hash of its plan's settings.
fn shard_results(index: usize, rows: u64, settings: &str) -> String {
    format!(
        r#"{{"suite": "seed003", "engine": "embedded", "rows_before": {rows}, "seed": 2026,
            "payload_size": 100, "wall_seconds": 1.0, "results": [], "notes": [],
            "replica": "2026-07", "layout": "alone",
            "shard": {{"index": {index}, "count": 2, "scenarios": 0, "plan": "p",
                       "settings": "{settings}", "module": "m", "setup_instructions": 0,
                       "parts": []}}}}"#
    )
}

/// Shards of runs with other settings: refused naming the setting that differs, as their
/// reports show it, and naming the hashes only when no shown setting differs.
#[test]
fn merge_of_shards_of_different_runs_names_the_setting_that_differs() {
    let dir = crate::support::scratch_dir("merge-other-run");
    let (one, two, out) = (dir.join("part1"), dir.join("part2"), dir.join("merged"));
    let merge = |rows: u64, settings: &str| {
        for (d, index, rows, settings) in [(&one, 1, 2_000, "s1"), (&two, 2, rows, settings)] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("results.json"), shard_results(index, rows, settings)).unwrap();
        }
        let (_, stderr) = refused_merge(&out, [&one, &two]);
        assert!(!out.exists());
        stderr
    };
    assert_eq!(
        merge(4_000, "s2"),
        format!(
            "error: the shards are of different runs: rows 2,000 ({}) against 4,000 ({})\n",
            one.display(),
            two.display()
        )
    );
    assert_eq!(
        merge(2_000, "s2"),
        format!(
            "error: {} and {} are not shards of one run: they differ in the settings (s1 vs s2)\n",
            one.join("results.json").display(),
            two.join("results.json").display()
        )
    );
}

/// Shards run on other machines are shards of one run: the merged results.json keeps each
/// machine once, in shard order.
#[test]
fn merge_of_shards_run_on_other_machines_keeps_each_machine_once() {
    let dir = crate::support::scratch_dir("merge-machines");
    let (one, two, out) = (dir.join("part1"), dir.join("part2"), dir.join("merged"));
    let merged = |kernels: [&str; 2]| -> Vec<String> {
        for (d, index, kernel) in [(&one, 1, kernels[0]), (&two, 2, kernels[1])] {
            let mut json: serde_json::Value =
                serde_json::from_str(&shard_results(index, 2_000, "s1")).unwrap();
            json["provenance"] = serde_json::json!({"modules": [], "machines": [
                {"cpu": "c", "cpu_features": "f", "kernel": kernel,
                 "transparent_hugepages": "never"}]});
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("results.json"), json.to_string()).unwrap();
        }
        let (out, one, two) = (
            out.to_str().unwrap(),
            one.to_str().unwrap(),
            two.to_str().unwrap(),
        );
        crate::support::run_icbench_ok(&["merge", "--out", out, one, two]);
        let json = std::fs::read_to_string(dir.join("merged/results.json")).unwrap();
        let provenance = icbench::report::from_json(&json)
            .unwrap()
            .provenance()
            .unwrap();
        provenance.machines.into_iter().map(|m| m.kernel).collect()
    };
    assert_eq!(merged(["6.1", "6.18"]), ["6.1", "6.18"]);
    assert_eq!(merged(["6.1", "6.1"]), ["6.1"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
