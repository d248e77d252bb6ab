//! Runs that go wrong after they start: a scenario the replica rejects is recorded as failed
//! with the replica's reason, the rest of the run is written and the exit status is 1.

use std::path::Path;

use candid::Encode;
use icbench::bench_canister::{InsertReport, MotokoStats};

/// A stand-in for the Motoko module, whose `add_users_mo_map` traps on a batch of one row
/// and answers any other with that many rows inserted: the calls of a run of `--stores
/// mo-map` at 2,000 rows, in milliseconds. Its replies are Candid encoded here; the insert's
/// template carries a sentinel where the count goes.
fn trapping_motoko() -> Vec<u8> {
    const SENTINEL: u64 = 0x5e57_1e15_5e57_1e15;
    let stats = MotokoStats {
        map_rows: 2_000,
        pure_map_rows: 0,
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
    (if (i64.eq (i64.load (i32.const 537)) (i64.const 1))
      (then (call $trap (i32.const 0) (i32.const 7))))
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
    );
    wat::parse_str(wat).unwrap()
}

/// icbench with `args` and `--out` `out`: exit status and stderr.
fn run(args: &[&str], out: &Path) -> (i32, String) {
    let o = crate::support::icbench_command()
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("icbench runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_scenario_the_replica_rejects_is_recorded_failed_and_the_rest_written() {
    let dir = crate::support::scratch_dir("rejected-scenario");
    let wasm = dir.join("motoko.wasm");
    std::fs::write(&wasm, trapping_motoko()).unwrap();
    let out = dir.join("out");
    let (code, stderr) = run(
        &[
            "--stores",
            "mo-map",
            "--rows",
            "2000",
            "--batches",
            "1,10",
            "--positions",
            "end",
            "--no-reads",
            "--quiet",
            "--wasm",
            &format!("motoko={}", wasm.display()),
        ],
        &out,
    );
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
