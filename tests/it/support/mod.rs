//! Helpers shared by several test modules.

pub mod canbench_fixture;
/// The report's sample result, from the crate's unit tests (the published crate has no tests/).
#[path = "../../../src/report/sample.rs"]
pub mod scenario;
pub mod small_store;
pub mod table;
pub mod wat;

use icbench::report::{Report, ScenarioResult, Status};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The tune suite's flags for a search of seconds: two page sizes, one cache size and one
/// synchronous setting.
pub const SMALL_TUNE_SEARCH: [&str; 6] = [
    "--tune-page-sizes",
    "4096,65536",
    "--tune-cache-sizes",
    "500000",
    "--tune-synchronous",
    "OFF",
];

/// The smallest default-suite run: one 1-row insert at the end of a 2,000-row
/// StableBTreeMap, without the reads.
pub const TINY_RUN: [&str; 9] = [
    "--rows",
    "2000",
    "--batches",
    "1",
    "--stores",
    "btree",
    "--positions",
    "end",
    "--no-reads",
];

/// The icbench binary of this build: scripts/build-canister.sh converts the canister with it
/// (ICBENCH_BIN), so no test makes the script build a converter.
pub fn icbench_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_icbench"))
}

/// The icbench binary, with the compile cache in a directory of this test run: tests never
/// read or fill the user's cache, and every run starts from an empty one, so no outcome
/// depends on what an earlier run left (a hit and a miss give the same results, which
/// `compile_cache::` checks on its own directories).
pub fn icbench_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_icbench"));
    cmd.env("ICBENCH_CACHE_DIR", test_cache_dir());
    cmd
}

pub fn test_cache_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("it-compile-cache");
        let _ = std::fs::remove_dir_all(&dir);
        dir
    })
}

/// A scratch directory under the system's temporary directory, empty.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("icbench-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The entry files of the cache's `kind` under `cache`.
pub fn cache_entries(cache: &Path, kind: &str) -> Vec<PathBuf> {
    std::fs::read_dir(cache.join(kind))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "entry"))
        .collect()
}

/// The one entry file of the cache's `kind` under `cache`.
pub fn the_cache_entry(cache: &Path, kind: &str) -> PathBuf {
    let entries = cache_entries(cache, kind);
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

/// `payload` written as the cache entry `key` of `kind` under `dir` and read back, as a run
/// reads a state it kept.
pub fn cache_entry(
    dir: &Path,
    kind: &str,
    key: [u8; 32],
    payload: &[u8],
) -> icbench::engine::disk_cache::Entry {
    use icbench::engine::disk_cache;
    disk_cache::write(dir, kind, &key, b"", payload).unwrap();
    match disk_cache::read(dir, kind, &key).unwrap() {
        disk_cache::Lookup::Found(entry) => entry,
        other => panic!("the entry just written: {other:?}"),
    }
}

/// Runs the icbench binary with `args`: its exit status (-1 when killed), stdout and stderr.
pub fn run_icbench(args: &[&str]) -> (i32, String, String) {
    let out = icbench_command().args(args).output().expect("icbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the icbench binary with `args`, asserts it succeeded and returns its stdout.
pub fn run_icbench_ok(args: &[&str]) -> String {
    let (code, stdout, stderr) = run_icbench(args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    stdout
}

/// Runs `cmd`, asserts it succeeded (showing its stderr when not) and returns its output.
pub fn output_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `cmd`, asserts it exited with `code` and returns its stderr.
pub fn stderr_of_exit(cmd: &mut Command, code: i32) -> String {
    let out = cmd.output().expect("the command runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    stderr
}

/// The bench canister's module: the one icbench embeds, or built once for the test run if
/// the canister sources changed since (scripts/build-canister.sh, converting with this
/// build's icbench). Compiled here once, with its new build (which the upgrade and scaling
/// suites install), through the test cache: tests that start side by side wait for that
/// compile instead of each making its own, and the icbench runs they start load it.
pub fn bench_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        let wasm = icbench::bench_canister::ensure_built_with(true, Some(icbench_bin()))
            .expect("scripts/build-canister.sh builds the canister");
        keep_compiled(&wasm, false);
        keep_compiled(&icbench::suites::upgrade::new_build(&wasm).unwrap(), false);
        wasm
    })
}

/// Loads `wasm` (with the profiling probes when `profiled`, on the default counter placement,
/// as icbench runs load it) through the test cache into this process's modules: this
/// process and the icbench runs it starts then compile it once between them.
pub fn keep_compiled(wasm: &[u8], profiled: bool) {
    icbench::engine::embedded::load_module_kept(
        wasm,
        Default::default(),
        profiled,
        test_cache_dir(),
    )
    .expect("the module loads");
}

/// [`bench_wasm`] in a file, for `--wasm`; compiled with the profiling probes too, once,
/// for the profiled icbench runs.
pub fn bench_wasm_path() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        keep_compiled(bench_wasm(), true);
        let path = scratch_dir("bench-wasm").join("bench.wasm");
        std::fs::write(&path, bench_wasm()).unwrap();
        path
    })
}

/// Runs icbench on the bench canister (`--quiet --wasm <it> --out <out>`, then `args`),
/// asserts it succeeded and returns its stdout.
pub fn run_bench_into(out: &Path, args: &[&str]) -> String {
    run_bench_exit(out, args, 0).0
}

/// [`run_bench_into`] asserting the exit status `code`: stdout and stderr.
pub fn run_bench_exit(out: &Path, args: &[&str], code: i32) -> (String, String) {
    let mut all = vec![
        "--quiet",
        "--wasm",
        bench_wasm_path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let (got, stdout, stderr) = run_icbench(&all);
    assert_eq!(got, code, "{args:?}: {stderr}");
    (stdout, stderr)
}

/// Each of the report's results as `row` makes it, each asserted to have run (status ok):
/// what the exact-count tests compare with their tables.
pub fn ok_rows<T>(report: &Report, row: impl Fn(&ScenarioResult) -> T) -> Vec<T> {
    report
        .results
        .iter()
        .map(|r| {
            assert_eq!(r.status, Status::Ok, "{r:?}");
            row(r)
        })
        .collect()
}

/// A field of a report's record and the value a test looks for in it.
#[derive(Clone, Copy, Debug)]
pub enum By<'a> {
    Store(&'a str),
    JournalMode(&'a str),
    Position(&'a str),
    Operation(&'a str),
    Batch(u64),
    RowsBefore(u64),
}

impl By<'_> {
    /// Whether `r` has every value of `by`.
    pub fn all(by: &[By], r: &ScenarioResult) -> bool {
        by.iter().all(|b| match *b {
            By::Store(store) => r.store == store,
            By::JournalMode(mode) => r.journal_mode == mode,
            By::Position(position) => r.position == position,
            By::Operation(operation) => r.operation == operation,
            By::Batch(batch) => r.batch == batch,
            By::RowsBefore(rows) => r.rows_before == rows,
        })
    }
}

/// The first of `results` with every value of `by`.
#[track_caller]
pub fn record_by<'r>(results: &'r [ScenarioResult], by: &[By]) -> &'r ScenarioResult {
    match results.iter().find(|r| By::all(by, r)) {
        Some(r) => r,
        None => panic!("no record {by:?}"),
    }
}

/// Asserts `text` contains `fragment`, showing `text` when it does not.
#[track_caller]
pub fn assert_has(text: &str, fragment: &str) {
    assert!(text.contains(fragment), "{text}");
}

/// Asserts `err` is the replica's IC0539 for `canister`: its message says the canister
/// "exceeded its current Wasm memory limit of " and goes on with `rest`.
pub fn assert_wasm_memory_limit_exceeded(
    err: &icbench::engine::Reject,
    canister: candid::Principal,
    rest: &str,
) {
    assert_eq!(
        err.error_code,
        icbench::engine::ErrorCode::CanisterWasmMemoryLimitExceeded
    );
    let start = format!(
        "Error from Canister {canister}: Canister exceeded its current Wasm memory limit of {rest}"
    );
    assert!(err.message.starts_with(&start), "{}", err.message);
}

/// The upgrade suite of `stores` at one size: 1,000 rows of 100 bytes, seed 1, no limit run.
pub fn upgrade_at_1_000(
    stores: Vec<icbench::suites::upgrade::UpgradeStore>,
) -> icbench::suites::upgrade::Config {
    icbench::suites::upgrade::Config {
        stores,
        sizes: vec![1_000],
        rows: 1_000,
        payload_size: 100,
        seed: 1,
        usd_per_xdr: 1.0,
        limit_run: None,
    }
}

/// Asserts `err` is a reject with `code` whose message contains `part`.
pub fn assert_rejected(
    err: &icbench::engine::Reject,
    code: icbench::engine::ErrorCode,
    part: &str,
) {
    assert_eq!(err.error_code, code);
    assert!(err.message.contains(part), "{}", err.message);
}

/// `e` with `wasm` installed (the install's outcome not looked at) and the canister's id.
pub fn installed<E: icbench::engine::Engine>(mut e: E, wasm: &[u8]) -> (E, candid::Principal) {
    let (id, _) = e.install(wasm, &[]).unwrap();
    (e, id)
}

/// Sends `method` (no argument) to `canister` once: a query when `query`, else an update.
pub fn send(
    e: &mut impl icbench::engine::Engine,
    canister: candid::Principal,
    method: &str,
    query: bool,
) -> icbench::engine::CallOutcome {
    if query {
        e.query(canister, method, &[])
    } else {
        e.update(canister, method, &[])
    }
    .unwrap()
}

/// Process `pid`'s state letter (R, S, Z, ...) and the CPU it has spent (utime + stime, in
/// clock ticks), from /proc; None once it is gone.
pub fn process_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's name, which is in parentheses.
    let mut fields = stat.rsplit_once(") ")?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let cpu = fields
        .skip(10)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    Some((state, cpu))
}

/// Polls `done` every 10 ms until it holds; fails, saying `what` did not happen, after
/// `seconds`.
pub fn wait_until(seconds: u64, what: &str, mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(started.elapsed().as_secs() < seconds, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
