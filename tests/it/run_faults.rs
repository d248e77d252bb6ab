//! Runs that go wrong after they start: a scenario the replica rejects is recorded as failed
//! with the replica's reason, the rest of the run is written and the exit status is 1; a run
//! that stops (an error, SIGINT) leaves no directory it made; `--out` holds the files of
//! its last run or merge only, and nothing else of icbench's.

use std::path::Path;

use candid::Encode;

use crate::suites::interrupted::names_in;
use icbench::bench_canister::{InsertReport, MotokoStats};

/// What the stand-in module's insert does with a batch of this many rows: traps, or loops
/// until the instruction limit.
#[derive(Clone, Copy)]
pub(crate) enum Fault {
    None,
    Trap(u64),
    Loop(u64),
}

/// A stand-in for the Motoko module, whose `add_users_mo_map` answers a batch with that many
/// rows inserted, unless `fault` says otherwise: the calls of a run of `--stores mo-map` (or
/// mo-pure-map) at 2,000 rows, in milliseconds. Its replies are Candid encoded here; the insert's template
/// carries a sentinel where the count goes.
fn motoko_module(fault: Fault) -> Vec<u8> {
    const SENTINEL: u64 = 0x5e57_1e15_5e57_1e15;
    let stats = MotokoStats {
        map_rows: 2_000,
        pure_map_rows: 2_000,
        region_rows: 0,
        region_pages: 0,
        heap_size: 0,
        memory_size: 65_536,
        max_live_size: 0,
        total_allocation: 0,
        reclaimed: 0,
        mutator_instructions: 0,
        collector_instructions: 0,
    };
    let insert = Encode!(&Ok::<InsertReport, String>(InsertReport {
        rows_inserted: SENTINEL,
        rows_replaced: 0,
        instructions: 1_000,
        heap_pages: 1,
        stable_pages: 0,
    }))
    .unwrap();
    let at = insert
        .windows(8)
        .position(|w| w == SENTINEL.to_le_bytes())
        .unwrap();
    let data = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("\\{b:02x}")).collect() };
    // set_payload_size's reply, and tick's (a nat64 either way).
    let payload = Encode!(&Ok::<u64, String>(100)).unwrap();
    let stats = Encode!(&stats).unwrap();
    let wat = format!(
        r#"(module
  (import "ic0" "msg_arg_data_copy" (func $arg (param i32 i32 i32)))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "trap" (func $trap (param i32 i32)))
  (memory 1)
  (data (i32.const 0) "one row")
  (data (i32.const 1024) "{insert}")
  (data (i32.const 2048) "{payload}")
  (data (i32.const 3072) "{stats}")
  (func $send (param $at i32) (param $len i32)
    (call $append (local.get $at) (local.get $len))
    (call $reply))
  (func $payload (call $send (i32.const 2048) (i32.const {payload_len})))
  (func $stats (call $send (i32.const 3072) (i32.const {stats_len})))
  ;; (offset, step, count): DIDL, no types, three nat64s; the count is at 25.
  (func $insert
    (call $arg (i32.const 512) (i32.const 0) (i32.const 33))
    {fault}
    (i64.store (i32.const {count_at}) (i64.load (i32.const 537)))
    (call $send (i32.const 1024) (i32.const {insert_len})))
  (export "canister_update set_payload_size" (func $payload))
  (export "canister_update tick" (func $payload))
  (export "canister_query stats" (func $stats))
  (export "canister_query motoko_stats" (func $stats))
  (export "canister_update add_users_mo_map" (func $insert))
  (export "canister_update add_users_mo_pure_map" (func $insert))
  (export "canister_update add_users_mo_region" (func $insert)))"#,
        insert = data(&insert),
        payload = data(&payload),
        stats = data(&stats),
        payload_len = payload.len(),
        stats_len = stats.len(),
        insert_len = insert.len(),
        count_at = 1024 + at,
        fault = match fault {
            Fault::None => String::new(),
            Fault::Trap(rows) => format!(
                "(if (i64.eq (i64.load (i32.const 537)) (i64.const {rows})) \
                 (then (call $trap (i32.const 0) (i32.const 7))))"
            ),
            Fault::Loop(rows) => format!(
                "(if (i64.eq (i64.load (i32.const 537)) (i64.const {rows})) \
                 (then (loop $forever (br $forever))))"
            ),
        },
    );
    wat::parse_str(wat).unwrap()
}

/// The module of `fault` in a file under `dir`, as the value of `--wasm`.
pub(crate) fn module_file(dir: &Path, fault: Fault) -> String {
    let wasm = dir.join("motoko.wasm");
    std::fs::write(&wasm, motoko_module(fault)).unwrap();
    format!("motoko={}", wasm.display())
}

/// A small run of the mo-map store on the stand-in module `wasm`, with `args`.
fn small<'a>(wasm: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let small = [
        "--stores",
        "mo-map",
        "--rows",
        "2000",
        "--batches",
        "1,10",
        "--no-reads",
        "--quiet",
        "--wasm",
        wasm,
    ];
    [&small[..], args].concat()
}

/// icbench with `args` and `--out` `out`: exit status and stderr.
fn run(args: &[&str], out: &Path) -> (i32, String) {
    let (code, _, stderr) =
        crate::support::run_icbench(&[args, &["--out", out.to_str().unwrap()]].concat());
    (code, stderr)
}

#[test]
fn a_scenario_the_replica_rejects_is_recorded_failed_and_the_rest_written() {
    let dir = crate::support::scratch_dir("rejected-scenario");
    let wasm = module_file(&dir, Fault::Trap(1));
    let out = dir.join("out");
    let (code, stderr) = run(&small(&wasm, &["--positions", "end"]), &out);
    assert_eq!(code, 1, "{stderr}");
    let reason = "add_users_mo_map was rejected: IC0503: Error from Canister \
                  lxzze-o7777-77777-aaaaa-cai: Canister called `ic0.trap` with message: 'one row'.";
    assert_eq!(
        stderr,
        format!(
            "seed003: 1 scenario failed (status `failed` in results.csv; every file written):\n  \
             mo-map/end/insert/1: {reason}\n"
        )
    );
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(
        rows[0].contains(",insert,1,2000,add_users_mo_map,"),
        "{}",
        rows[0]
    );
    assert!(
        rows[0].contains(&format!(",failed,{reason},")),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].contains(",insert,10,2000,add_users_mo_map,"),
        "{}",
        rows[1]
    );
    assert!(rows[1].contains(",ok,,"), "{}", rows[1]);
    for file in ["report.md", "results.json", "plot-end.svg"] {
        assert!(out.join(file).is_file(), "{file}");
    }
}

#[test]
fn a_run_that_fails_after_it_started_leaves_no_directory_it_made() {
    let dir = crate::support::scratch_dir("failed-run-dirs");
    let wasm = module_file(&dir, Fault::Trap(2_000));
    let out = dir.join("new/out");
    let args = small(
        &wasm,
        &["--suite", "seed003,scaling", "--scaling-max-rows", "2000"],
    );
    let (code, stderr) = run(&args, &out);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("'one row'"), "{stderr}");
    // Neither --out, its parent, nor --out/scaling: all made by the run, all empty.
    assert_eq!(names_in(&dir), ["motoko.wasm"]);
}

/// Waits until process `pid` has spent 0.3 s of CPU: well past trying its output directories
/// (which it leaves as they were until it writes), into its work.
fn working(pid: u32) {
    crate::support::wait_until(60, &format!("process {pid} does no work"), || {
        crate::support::process_stat(pid).is_some_and(|(_, cpu)| cpu >= 30)
    });
}

/// SIGKILL, which no handler sees, leaves no directory either: a run tries its output
/// directories and leaves them as they were until it writes its results.
#[test]
fn sigkill_leaves_no_empty_out() {
    let dir = crate::support::scratch_dir("killed-dirs");
    let wasm = module_file(&dir, Fault::Loop(2_000));
    let out = dir.join("new");
    let mut child = crate::support::icbench_command()
        .args(small(&wasm, &["--out", out.to_str().unwrap()]))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    working(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.exists());
}

#[test]
fn sigint_leaves_no_directory_the_run_made_and_says_whose_files_are_there() {
    let dir = crate::support::scratch_dir("interrupted-dirs");
    let wasm = module_file(&dir, Fault::Loop(2_000));
    let interrupted = |out: &Path| -> (i32, String) {
        let child = crate::support::icbench_command()
            .args(small(
                &wasm,
                &["--suite", "seed003,scaling", "--scaling-max-rows", "2000"],
            ))
            .arg("--out")
            .arg(out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The directories are tried before any work; the fill then loops for seconds.
        working(child.id());
        let pid = child.id().to_string();
        let kill = std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status();
        assert!(kill.unwrap().success());
        let o = child.wait_with_output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let out = dir.join("new");
    let (code, stderr) = interrupted(&out);
    assert_eq!(code, 130, "{stderr}");
    assert_eq!(
        stderr.trim(),
        format!(
            "interrupted by SIGINT: stopped; not written: the seed003 suite's results in {}; \
             the scaling suite's results in {}",
            out.display(),
            out.join("scaling").display()
        )
    );
    assert!(!out.exists());
    // Into an earlier run's directory: its files stay, and the line says whose they are.
    let earlier = dir.join("earlier");
    std::fs::create_dir_all(&earlier).unwrap();
    std::fs::write(earlier.join("results.json"), "{}").unwrap();
    let (code, stderr) = interrupted(&earlier);
    assert_eq!(code, 130, "{stderr}");
    assert_eq!(
        stderr.trim(),
        format!(
            "interrupted by SIGINT: stopped; not written: the seed003 suite's results in {} \
             (the files there are an earlier run's); the scaling suite's results in {}",
            earlier.display(),
            earlier.join("scaling").display()
        )
    );
    assert_eq!(names_in(&earlier), ["results.json"]);
}

#[test]
fn out_holds_this_runs_files_only_and_keeps_the_users() {
    let dir = crate::support::scratch_dir("out-this-run");
    let wasm = module_file(&dir, Fault::None);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let (code, stderr) = run(
        &small(
            &wasm,
            &["--positions", "middle,end", "--profile", "*/insert/1"],
        ),
        &out,
    );
    assert_eq!(code, 0, "{stderr}");
    let first = names_in(&out);
    let of_the_run = ["report.md", "results.csv", "results.json", "work.csv"];
    let without = |gone: &[&str]| -> Vec<String> {
        let mut left = first.clone();
        left.retain(|n| !gone.contains(&n.as_str()));
        left
    };
    let both = ["notes.txt", "plot-end.svg", "plot-middle.svg", "profiles"];
    assert_eq!(first, [&both[..], &of_the_run].concat());
    // Fewer positions, no profiles: the earlier plot and profiles go, the user's file stays.
    let (code, stderr) = run(&small(&wasm, &["--positions", "middle"]), &out);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(names_in(&out), without(&["plot-end.svg", "profiles"]));
    // A merge into it: a merged run has no work.csv, and leaves none of the run's.
    let shards: Vec<std::path::PathBuf> = ["1/2", "2/2"]
        .iter()
        .enumerate()
        .map(|(i, shard)| {
            let part = dir.join(format!("part{i}"));
            let args = ["--positions", "middle,end", "--shard", shard];
            let (code, stderr) = run(&small(&wasm, &args), &part);
            assert_eq!(code, 0, "{stderr}");
            part
        })
        .collect();
    let (code, _, stderr) = crate::support::run_icbench(&[
        "merge",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(names_in(&out), without(&["profiles", "work.csv"]));
}
