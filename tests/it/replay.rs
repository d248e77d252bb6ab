//! `icbench replay`: a snapshot directory as dfx writes it loaded, its globals, timer and
//! clock restored, written back byte for byte; the figures of a replayed call equal the
//! engine's own measurement of it from the same state (as a suite measures), for a Rust
//! and a Motoko store; and every bad input refused in one line before any work.

use std::path::{Path, PathBuf};

use icbench::bench_canister::{BenchClient, IdSequence};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::{Engine, Metering};
use icbench::replay::snapshot::Snapshot;

use crate::support::{assert_has, icbench_command, scratch_dir, stderr_of_exit};

/// A canister of globals: `bump` adds one to the exported mutable i32 and replies it (candid
/// `(int32)`), `get` replies it as a query, the global timer adds 100, `boom` traps and
/// post_upgrade traps (an upgrade to this module fails).
const GLOBALS_WAT: &str = r#"(module
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (memory 1)
  (global $n (mut i32) (i32.const 0))
  (global $seven i64 (i64.const 7))
  (global $f (mut f32) (f32.const 0))
  (global $d (mut f64) (f64.const 0))
  (export "n" (global $n))
  (export "seven" (global $seven))
  (data (i32.const 0) "DIDL\00\01\75")
  (func $answer
    (i32.store (i32.const 7) (global.get $n))
    (call $append (i32.const 0) (i32.const 11))
    (call $reply))
  (func (export "canister_update bump")
    (global.set $n (i32.add (global.get $n) (i32.const 1)))
    (call $answer))
  (func (export "canister_query get") (call $answer))
  (func (export "canister_update boom") unreachable)
  (func (export "canister_query spin") (loop $forever (br $forever)))
  (func (export "canister_global_timer")
    (global.set $n (i32.add (global.get $n) (i32.const 100))))
  (func (export "canister_post_upgrade") unreachable))"#;

/// metadata.json of a snapshot of [`GLOBALS_WAT`]'s canister as dfx 0.31 prints it (the
/// module's size and the heap's filled in): n = 41, f = 1.1 (an f32 that an f64 would print
/// longer), d = 0.5, a timer due 5 s after the snapshot.
fn dfx_0_31_metadata(module_size: usize) -> String {
    format!(
        r#"{{
  "source": {{
    "taken_from_canister": null
  }},
  "taken_at_timestamp": 1767225600000000000,
  "wasm_module_size": {module_size},
  "globals": [
    {{
      "i32": 41
    }},
    {{
      "i64": 7
    }},
    {{
      "f32": 1.1
    }},
    {{
      "f64": 0.5
    }}
  ],
  "wasm_memory_size": 65536,
  "stable_memory_size": 0,
  "wasm_chunk_store": [],
  "canister_version": 3,
  "certified_data": [
    1,
    2
  ],
  "global_timer": {{
    "active": 1767225605000000000
  }},
  "on_low_wasm_memory_hook_status": "condition_not_satisfied"
}}"#
    )
}

/// A snapshot directory of [`GLOBALS_WAT`]'s canister with `metadata` (given the module's size).
fn globals_snapshot(name: &str, metadata: impl Fn(usize) -> String) -> PathBuf {
    let dir = scratch_dir(name);
    let wasm = wat::parse_str(GLOBALS_WAT).unwrap();
    std::fs::write(dir.join("metadata.json"), metadata(wasm.len())).unwrap();
    std::fs::write(dir.join("wasm_module.bin"), &wasm).unwrap();
    let mut heap = vec![0u8; 65536];
    heap[..7].copy_from_slice(b"DIDL\x00\x01\x75");
    std::fs::write(dir.join("wasm_memory.bin"), heap).unwrap();
    dir
}

fn replay(args: &[&str]) -> (i32, String, String) {
    let out = icbench_command().arg("replay").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `icbench replay ARGS`, which must succeed: its stdout.
fn replay_ok(args: &[&str]) -> String {
    let (code, stdout, stderr) = replay(args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    stdout
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn results(dir: &Path) -> icbench::report::Report {
    icbench::report::from_json(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

#[test]
fn a_dfx_snapshot_loads_with_its_globals_timer_and_clock_and_writes_back_byte_for_byte() {
    let dir = globals_snapshot("replay-globals", dfx_0_31_metadata);
    let out = dir.join("out");
    let again = dir.join("again");
    let stdout = replay_ok(&[
        path(&dir),
        "--out",
        path(&out),
        "--save-snapshot",
        path(&again),
    ]);
    assert_has(&stdout, "Steps under replica rules 2026-07");
    for file in ["metadata.json", "wasm_module.bin", "wasm_memory.bin"] {
        assert_eq!(
            std::fs::read(dir.join(file)).unwrap(),
            std::fs::read(again.join(file)).unwrap(),
            "{file}"
        );
    }
    assert!(!again.join("stable_memory.bin").exists());

    // The mutable global comes back as 41: bump replies 42; the timer, due 5 s after the
    // snapshot, runs in the round `advance 10s` ends with and adds 100.
    let stdout = replay_ok(&[
        path(&dir),
        "--call",
        "bump",
        "--call",
        "advance 10s",
        "--call",
        "get",
        "--out",
        path(&out),
    ]);
    let report = results(&out);
    let rows: Vec<(&str, &str)> = report
        .results
        .iter()
        .map(|r| (r.operation.as_str(), r.method.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("update", "bump"),
            ("timer", "canister_global_timer"),
            ("query", "get")
        ]
    );
    assert_has(&stdout, "(42 : int32)");
    assert_has(&stdout, "(142 : int32)");
    // A replay generates no rows: neither file gives it the suites' workload.
    assert_eq!(report.workload, None);
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert_has(&markdown, "- Wall time: ");
    for line in ["- Rows before each message:", "- Seed:", "- Payload size:"] {
        assert!(!markdown.contains(line), "{line} in {markdown}");
    }
}

#[test]
fn the_older_shapes_of_metadata_json_load() {
    // dfx 0.29.2 to 0.30 write the same JSON with no null; 0.29.0 and 0.29.1 named the
    // globals `exported_globals` and wrote `source` as a bare string.
    let old = globals_snapshot("replay-0-29", |size| {
        dfx_0_31_metadata(size)
            .replace("\"globals\"", "\"exported_globals\"")
            .replace(
                "{\n    \"taken_from_canister\": null\n  }",
                "\"taken_from_canister\"",
            )
            .replace(
                "  \"global_timer\": {\n    \"active\": 1767225605000000000\n  },\n  \"on_low_wasm_memory_hook_status\": \"condition_not_satisfied\"\n",
                "  \"global_timer\": null\n",
            )
    });
    let stdout = replay_ok(&[path(&old), "--call", "bump"]);
    assert_has(&stdout, "(42 : int32)");
}

#[test]
fn a_trap_is_the_replicas_error_and_the_rest_runs_a_failed_upgrade_keeps_the_canister() {
    let dir = globals_snapshot("replay-traps", dfx_0_31_metadata);
    let wasm = dir.join("wasm_module.bin");
    let (code, stdout, stderr) = replay(&[
        path(&dir),
        "--call",
        "boom",
        "--call",
        "spin",
        "--call",
        "bump",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_has(&stdout, "error: IC0502");
    // A query over its 5B instructions: the replica's error, and the next call runs.
    assert_has(&stdout, "error: IC0522");
    assert_has(&stdout, "(42 : int32)");

    // The new module's post_upgrade traps: the upgrade fails as the replica fails it, the
    // canister keeps its state, and the steps after it (typed for the new module) do not run.
    let out = dir.join("out");
    let (code, stdout, stderr) = replay(&[
        path(&dir),
        "--upgrade",
        path(&wasm),
        "--call",
        "bump",
        "--out",
        path(&out),
        "--save-snapshot",
        path(&dir.join("after")),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_has(&stdout, "failed in [post_upgrade]");
    assert_has(&stdout, "the 1 steps after it were not run");
    let saved = std::fs::read_to_string(dir.join("after/metadata.json")).unwrap();
    assert_has(&saved, "\"i32\": 41");
    assert_eq!(results(&out).results[0].operation, "upgrade");
}

#[test]
fn bad_input_is_refused_in_one_line_before_any_work() {
    let good = globals_snapshot("replay-bad", dfx_0_31_metadata);
    let copy = |name: &str, edit: &dyn Fn(&Path)| {
        let dir = scratch_dir(name);
        for f in ["metadata.json", "wasm_module.bin", "wasm_memory.bin"] {
            std::fs::copy(good.join(f), dir.join(f)).unwrap();
        }
        edit(&dir);
        dir
    };
    let metadata = |dir: &Path, from: &str, to: &str| {
        let text = std::fs::read_to_string(dir.join("metadata.json")).unwrap();
        assert!(text.contains(from), "{from}");
        std::fs::write(dir.join("metadata.json"), text.replace(from, to)).unwrap();
    };
    let script = good.join("steps.txt");
    std::fs::write(&script, "bump\n\n# fine\nadvance soon\n").unwrap();
    let out = good.join("out");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![path(&copy("replay-no-meta", &|d| std::fs::remove_file(d.join("metadata.json")).unwrap())).into()],
            "metadata.json: No such file or directory (os error 2) (a downloaded snapshot has metadata.json)",
        ),
        (
            vec![path(&copy("replay-short", &|d| {
                std::fs::write(d.join("wasm_memory.bin"), vec![0; 4096]).unwrap()
            }))
            .into()],
            "wasm_memory.bin: 4096 bytes, but metadata.json says 65536: a download that did not finish (`--resume` it)?",
        ),
        (
            vec![path(&copy("replay-not-wasm", &|d| {
                std::fs::write(d.join("wasm_module.bin"), vec![7; 1200]).unwrap();
                let size = std::fs::read(good.join("wasm_module.bin")).unwrap().len();
                metadata(d, &format!("\"wasm_module_size\": {size}"), "\"wasm_module_size\": 1200");
            }))
            .into()],
            "invalid module: neither a Wasm module (\\0asm) nor gzip; the first bytes are [07, 07, 07, 07]",
        ),
        (
            vec![path(&copy("replay-globals-count", &|d| {
                metadata(d, "    {\n      \"f64\": 0.5\n    }\n", "    {\n      \"f64\": 0.5\n    },\n    {\n      \"i32\": 1\n    }\n")
            }))
            .into()],
            "the snapshot lists 5 globals, the module has 4 (its exported globals and its other mutable ones): the snapshot is of another module",
        ),
        (
            vec![path(&copy("replay-globals-type", &|d| metadata(d, "\"f64\": 0.5", "\"i64\": 5")))
                .into()],
            "global 3 of the snapshot is i64, the module's is f64: the snapshot is of another module",
        ),
        (
            vec![path(&copy("replay-nan", &|d| metadata(d, "\"f32\": 1.1", "\"f32\": null"))).into()],
            "global 2: f32 written as null: a NaN or an infinity, which metadata.json cannot hold",
        ),
        (
            vec![path(&good).into(), "--call".into(), "bunp".into()],
            "--call 1: unknown method bunp: the module exports boom, bump, get, spin",
        ),
        (
            vec![path(&good).into(), "--call".into(), "bump (1,".into()],
            "--call 1: (1, is not candid:",
        ),
        (
            vec![path(&good).into(), "--call".into(), "update get".into()],
            "", // a query called as an update runs (dfx --update): not an error
        ),
        (
            vec![path(&good).into(), "--script".into(), path(&script).into()],
            "steps.txt:4: advance needs a duration such as 90s, 5m or 250ms, not `soon`",
        ),
        (
            vec![path(&good).into(), "--upgrade".into(), path(&script).into()],
            "steps.txt: invalid module: neither a Wasm module",
        ),
        (
            vec![path(&good).into(), "--canister-id".into(), "nope".into()],
            "--canister-id: nope is not a principal",
        ),
        (
            vec![path(&good).into(), "--save-snapshot".into(), path(&good).into()],
            "not empty (a snapshot directory is written into a new or empty one)",
        ),
    ];
    for (args, message) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut full = vec!["--out", path(&out)];
        full.extend(&args);
        if message.is_empty() {
            let (code, _, stderr) = replay(&full);
            assert_eq!(code, 0, "{args:?}: {stderr}");
            continue;
        }
        let stderr = stderr_of_exit(icbench_command().arg("replay").args(&full), 2);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
    assert!(!out.join("results.json").exists() || std::fs::read_dir(&out).is_ok());
}

/// Canister `id` of `engine` (running `wasm`) written into `dir` as a dfx snapshot.
fn write_snapshot(engine: &mut EmbeddedEngine, id: candid::Principal, wasm: &[u8], dir: &Path) {
    let temp = dir.with_extension("parts");
    std::fs::create_dir_all(&temp).unwrap();
    let (heap, stable) = (temp.join("heap"), temp.join("stable"));
    let written = engine
        .write_state_files(
            id,
            &mut std::fs::File::create(&heap).unwrap(),
            &mut std::fs::File::create(&stable).unwrap(),
        )
        .unwrap();
    std::fs::create_dir_all(dir).unwrap();
    Snapshot::fresh(wasm)
        .write(dir, wasm, &written, &heap, &stable)
        .unwrap();
}

/// Rows, and where the measured call puts its key: the middle of the table.
const ROWS: u64 = 20_000;

/// A store's canister filled to [`ROWS`] as a suite fills it, its snapshot written as dfx
/// writes one, and the middle insert and a point read measured from that state on the
/// engine (as a suite measures them) and replayed from the snapshot: the same figures.
fn replayed_as_measured(module: &[u8], stem: &str, name: &str) {
    let dir = scratch_dir(&format!("replay-{name}"));
    let snapshot = dir.join("snapshot");
    let mut engine = EmbeddedEngine::default();
    let id = {
        let mut client = BenchClient::install(&mut engine, module).unwrap();
        client.set_payload_size(100).unwrap().value.unwrap();
        client.unmeasured(Metering::StateOnly, |c| {
            for m in 0..ROWS / 1_000 {
                c.try_add_users(stem, IdSequence::new(m * 10_000, 10, 1_000))
                    .unwrap()
                    .unwrap();
            }
        });
        client.canister
    };
    let state = engine.snapshot(id).unwrap();
    let (insert, read) = (IdSequence::new(5, 1, 1), IdSequence::new(ROWS * 5, 10, 5));
    let add = format!("add_users_{stem}");
    let get = format!("get_users_{stem}");
    let measure = |engine: &mut EmbeddedEngine, method: &str, ids: IdSequence, query: bool| {
        engine.restore(id, state).unwrap();
        let bytes = ids.encode().unwrap();
        let out = if query {
            engine.query(id, method, &bytes)
        } else {
            engine.update(id, method, &bytes)
        };
        out.unwrap().report.instructions
    };
    let measured = [
        measure(&mut engine, &add, insert, false),
        measure(&mut engine, &get, read, true),
    ];
    engine.restore(id, state).unwrap();
    write_snapshot(&mut engine, id, module, &snapshot);

    let out = dir.join("out");
    replay_ok(&[
        path(&snapshot),
        "--call",
        &format!("{add} {}", insert.candid_text()),
        "--out",
        path(&out),
    ]);
    replay_ok(&[
        path(&snapshot),
        "--call",
        &format!("{get} {}", read.candid_text()),
        "--out",
        path(&dir.join("read")),
    ]);
    let replayed = [
        results(&out).results[0].instructions,
        results(&dir.join("read")).results[0].instructions,
    ];
    assert_eq!(replayed, measured, "{name}: replayed against measured");
}

#[test]
fn a_replayed_call_costs_what_the_engine_measures_from_the_same_state_rust_store() {
    replayed_as_measured(crate::support::bench_wasm(), "btree", "btree");
}

#[test]
fn a_replayed_call_costs_what_the_engine_measures_from_the_same_state_motoko_store() {
    let def = icbench::stores::TABLE
        .iter()
        .find(|d| d.name == "mo-map")
        .unwrap();
    let wasm = def.module.embedded().unwrap();
    replayed_as_measured(wasm, def.stem, def.name);
}

#[test]
fn a_wasm64_canisters_snapshot_replays() {
    let dir = scratch_dir("replay-wasm64");
    let wasm = wat::parse_str(
        r#"(module
          (import "ic0" "msg_reply" (func $reply))
          (import "ic0" "msg_reply_data_append" (func $append (param i64 i64)))
          (memory i64 1)
          (global $n (mut i64) (i64.const 0))
          (func (export "canister_update bump")
            (global.set $n (i64.add (global.get $n) (i64.const 1)))
            (i64.store (i64.const 7) (global.get $n))
            (call $append (i64.const 0) (i64.const 15))
            (call $reply)))"#,
    )
    .unwrap();
    let metadata = dfx_0_31_metadata(wasm.len()).replace(
        "    {\n      \"i32\": 41\n    },\n    {\n      \"i64\": 7\n    },\n    {\n      \"f32\": 1.1\n    },\n    {\n      \"f64\": 0.5\n    }\n",
        "    {\n      \"i64\": 41\n    }\n",
    );
    std::fs::write(dir.join("metadata.json"), metadata).unwrap();
    std::fs::write(dir.join("wasm_module.bin"), &wasm).unwrap();
    let mut heap = vec![0u8; 65536];
    heap[..7].copy_from_slice(b"DIDL\x00\x01\x74");
    std::fs::write(dir.join("wasm_memory.bin"), heap).unwrap();
    let out = dir.join("out");
    let stdout = replay_ok(&[path(&dir), "--call", "bump", "--out", path(&out)]);
    assert_has(&stdout, "(42 : int64)");
}

#[test]
fn a_call_to_another_canister_is_rejected_unless_a_step_gives_its_reply() {
    let dir = scratch_dir("replay-calls-out");
    let wasm = wat::parse_str(
        r#"(module
          (import "ic0" "call_new" (func $call_new (param i32 i32 i32 i32 i32 i32 i32 i32)))
          (import "ic0" "call_perform" (func $call_perform (result i32)))
          (import "ic0" "msg_arg_data_size" (func $size (result i32)))
          (import "ic0" "msg_arg_data_copy" (func $copy (param i32 i32 i32)))
          (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
          (import "ic0" "msg_reply" (func $reply))
          (import "ic0" "canister_self_size" (func $self_size (result i32)))
          (import "ic0" "canister_self_copy" (func $self_copy (param i32 i32 i32)))
          (import "ic0" "canister_cycle_balance" (func $balance (result i64)))
          (import "ic0" "msg_caller_size" (func $caller_size (result i32)))
          (import "ic0" "msg_caller_copy" (func $caller_copy (param i32 i32 i32)))
          (import "ic0" "is_controller" (func $is_controller (param i32 i32) (result i32)))
          (memory 1)
          (table 2 funcref)
          (elem (i32.const 0) $on_reply $on_reject)
          (data (i32.const 0) "\00\00\00\00\00\00\00\02\01\01balance")
          (data (i32.const 32) "DIDL\00\01\75\ff\ff\ff\ff")
          (func $on_reply (param i32)
            (call $copy (i32.const 64) (i32.const 0) (call $size))
            (call $append (i32.const 64) (call $size))
            (call $reply))
          (func $on_reject (param i32)
            (call $append (i32.const 32) (i32.const 11))
            (call $reply))
          (data (i32.const 128) "DIDL\00\01\68\01")
          (func (export "canister_query me")
            (i32.store8 (i32.const 136) (call $self_size))
            (call $self_copy (i32.const 137) (i32.const 0) (call $self_size))
            (call $append (i32.const 128) (i32.add (i32.const 9) (call $self_size)))
            (call $reply))
          (data (i32.const 200) "DIDL\00\01\78")
          (func (export "canister_query cycles")
            (i64.store (i32.const 207) (call $balance))
            (call $append (i32.const 200) (i32.const 15))
            (call $reply))
          (data (i32.const 240) "DIDL\00\01\75")
          (func (export "canister_query controls")
            (call $caller_copy (i32.const 300) (i32.const 0) (call $caller_size))
            (i32.store (i32.const 247) (call $is_controller (i32.const 300) (call $caller_size)))
            (call $append (i32.const 240) (i32.const 11))
            (call $reply))
          (func (export "canister_update ask")
            (call $call_new (i32.const 0) (i32.const 10) (i32.const 10) (i32.const 7)
              (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 0))
            (drop (call $call_perform))))"#,
    )
    .unwrap();
    let module = dir.join("ask.wasm");
    std::fs::write(&module, wasm).unwrap();
    let stdout = replay_ok(&[
        "--wasm",
        path(&module),
        "--call",
        "ask",
        "--call",
        "reply ryjl3-tyaaa-aaaaa-aaaba-cai balance (7 : int32)",
        "--call",
        "ask",
    ]);
    assert_has(
        &stdout,
        "(-1 : int32) (1 calls out, 1 rejected as to an absent canister)",
    );
    assert_has(
        &stdout,
        "(7 : int32) (1 calls out, 0 rejected as to an absent canister)",
    );

    // Its cycles and controllers: 10^15 and the anonymous principal unless said.
    let ledger = "ryjl3-tyaaa-aaaaa-aaaba-cai";
    let stdout = replay_ok(&[
        "--wasm",
        path(&module),
        "--call",
        "cycles",
        "--call",
        "controls",
    ]);
    assert_has(&stdout, "(1_000_000_000_000_000 : nat64)");
    assert_has(&stdout, "(1 : int32)");
    let stdout = replay_ok(&[
        "--wasm",
        path(&module),
        "--cycles",
        "5",
        "--controller",
        ledger,
        "--call",
        "cycles",
        "--call",
        "controls",
        "--call",
        &format!("caller {ledger}"),
        "--call",
        "controls",
    ]);
    assert_has(&stdout, "(5 : nat64)");
    assert!(
        stdout.contains("(0 : int32)") && stdout.contains("(1 : int32)"),
        "{stdout}"
    );

    // The canister's id is the engine's first unless --canister-id names the snapshot's.
    let snapshot = dir.join("snapshot");
    let stdout = replay_ok(&[
        "--wasm",
        path(&module),
        "--call",
        "me",
        "--save-snapshot",
        path(&snapshot),
    ]);
    assert_has(&stdout, "(principal \"lxzze-o7777-77777-aaaaa-cai\")");
    let stdout = replay_ok(&[path(&snapshot), "--canister-id", ledger, "--call", "me"]);
    assert_has(&stdout, &format!("(principal \"{ledger}\")"));
}

/// The users suite's figure of one row inserted in the middle of `store` at `rows` rows, and
/// the same call replayed from the suite's own post-prefill state (its cache entry) written
/// as a dfx snapshot: the same charged instructions.
fn replayed_as_the_suite_measured(store: &str, wasm: &[u8], rows: &str) {
    use icbench::engine::disk_cache;
    let dir = scratch_dir(&format!("replay-suite-{store}"));
    let (cache, out) = (dir.join("cache"), dir.join("out"));
    let run = crate::support::icbench_command()
        .env("ICBENCH_CACHE_DIR", &cache)
        .args([
            "--rows",
            rows,
            "--batches",
            "1",
            "--positions",
            "middle",
            "--no-reads",
        ])
        .args(["--stores", store, "--out", path(&out)])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let record = results(&out)
        .results
        .into_iter()
        .find(|r| r.operation == "insert" && r.batch == 1)
        .unwrap();
    let entry = crate::support::the_cache_entry(&cache, disk_cache::STATES);
    let key: [u8; 32] = hex::decode(entry.file_stem().unwrap().to_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let disk_cache::Lookup::Found(entry) =
        disk_cache::read(&cache, disk_cache::STATES, &key).unwrap()
    else {
        panic!("the post-prefill state's entry");
    };
    let mut engine = EmbeddedEngine::default();
    let id = engine.import_state(wasm, (&entry).into()).unwrap();
    let snapshot = dir.join("snapshot");
    write_snapshot(&mut engine, id, wasm, &snapshot);
    let replayed = dir.join("replayed");
    let call = format!("{} {}", record.method, record.args);
    replay_ok(&[path(&snapshot), "--call", &call, "--out", path(&replayed)]);
    assert_eq!(
        results(&replayed).results[0].instructions,
        record.instructions,
        "{store}: {call}"
    );
}

fn replayed_as_the_users_suite_measured(rows: &str) {
    replayed_as_the_suite_measured("btree", crate::support::bench_wasm(), rows);
    let def = icbench::stores::TABLE
        .iter()
        .find(|d| d.name == "mo-map")
        .unwrap();
    replayed_as_the_suite_measured("mo-map", def.module.embedded().unwrap(), rows);
}

#[test]
fn a_replayed_call_costs_what_the_users_suite_measured_rust_and_motoko() {
    replayed_as_the_users_suite_measured("2000");
}

#[test]
#[ignore = "fills 1,000,000 rows twice (about 2 minutes on 2 cores): \
            cargo test --release --test it -- --ignored replay"]
fn a_replayed_call_costs_what_the_users_suite_measured_at_1_000_000_rows() {
    replayed_as_the_users_suite_measured("1000000");
}

#[test]
fn candid_is_typed_by_the_modules_service() {
    let wasm = crate::support::bench_wasm_path();
    let stderr = stderr_of_exit(
        icbench_command().args([
            "replay",
            "--wasm",
            path(wasm),
            "--call",
            "get_users_btree (\"ten\", 1, 1)",
        ]),
        2,
    );
    assert_has(
        &stderr,
        "--call 1: (\"ten\", 1, 1) does not type-check against get_users_btree",
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // Numbers take the service's types: `5` is a nat64 here, as dfx sends it.
    let stdout = replay_ok(&["--wasm", path(wasm), "--call", "get_users_btree (5, 1, 1)"]);
    assert_has(&stdout, "rows_found = 0 : nat64");
}

#[test]
fn an_upgrade_over_the_wasm_memory_limit_fails_as_on_the_replica() {
    let dir = globals_snapshot("replay-upgrade-limit", dfx_0_31_metadata);
    let grows = dir.join("grows.wasm");
    let wasm = GLOBALS_WAT.replace(
        r#"(func (export "canister_post_upgrade") unreachable)"#,
        r#"(func (export "canister_post_upgrade") (drop (memory.grow (i32.const 10))))"#,
    );
    std::fs::write(&grows, wat::parse_str(wasm).unwrap()).unwrap();
    let (code, stdout, stderr) = replay(&[
        path(&dir),
        "--wasm-memory-limit",
        "131072",
        "--upgrade",
        path(&grows),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_has(&stdout, "error: IC0539");
    assert_has(&stdout, "failed in [post_upgrade]");
    // Without the limit it fits.
    replay_ok(&[path(&dir), "--upgrade", path(&grows), "--call", "bump"]);
}
