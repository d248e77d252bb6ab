//! The embedded engine against hand-written canisters, with instruction counts worked out
//! by hand from the replica's rules (`shared/research/ic-metering.md`).

use candid::Principal;
use icbench::engine::cost::{Limits, Replica};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::instrument::Counter;
use icbench::engine::{
    Engine, ErrorCode, Reject, RejectCode, SnapshotId, UpgradeOptions, WasmMemoryPersistence,
};

use crate::support::wat::{REPLY_IMPORTS, STABLE64_IMPORTS};
use crate::support::{assert_wasm_memory_limit_exceeded, installed};

mod calls;
mod snapshots;
mod upgrades;

/// The heap, a global and a trap message every canister here starts from, after its imports.
const STATE: &str = r#"
  (memory 1)
  (global $g (mut i64) (i64.const 7))
  (data (i32.const 100) "boom")
"#;

/// An engine charging by the rules before the deterministic memory tracker (vintage
/// `2026-05`): the counts of the tests that use it were worked out by those (1,000 per 4 KiB
/// page written, after the message); `memory_tracker.rs` has the newest rule's.
fn before_tracker() -> EmbeddedEngine {
    EmbeddedEngine::default().with_replica(Replica::R2026_05)
}

fn canister(body: &str) -> Vec<u8> {
    canister_importing("", body)
}

/// A canister whose update `method` grows stable memory by a page, writes `len` bytes of
/// the heap at `src` to stable memory at `dst` and replies.
fn stable_writer(method: &str, dst: u64, src: u64, len: u64) -> Vec<u8> {
    canister(&format!(
        r#"(func (export "canister_update {method}")
             (drop (call $sgrow (i64.const 1)))
             (call $swrite (i64.const {dst}) (i64.const {src}) (i64.const {len}))
             (call $reply))"#
    ))
}

/// The reject of the update `method`, which must fail.
fn update_error(e: &mut EmbeddedEngine, id: Principal, method: &str) -> Reject {
    e.update(id, method, &[]).unwrap().result.unwrap_err()
}

/// [`canister`], importing `imports` too (imports come before the memory and globals).
fn canister_importing(imports: &str, body: &str) -> Vec<u8> {
    let ssize = r#"(import "ic0" "stable64_size" (func $ssize (result i64)))"#;
    wat::parse_str(format!(
        "(module {REPLY_IMPORTS} {STABLE64_IMPORTS} {ssize} {imports} {STATE} {body})"
    ))
    .expect("test WAT is valid")
}

/// Asserts `err` is the replica's `code` with a message containing `fragment`.
#[track_caller]
fn assert_reject(err: &Reject, code: ErrorCode, fragment: &str) {
    assert_eq!(err.error_code, code, "{}", err.message);
    assert!(err.message.contains(fragment), "{}", err.message);
}

fn reply_u64s(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn two_performance_counters_in_one_segment_differ_by_200() {
    let wasm = canister(
        r#"(func (export "canister_update two")
             (i64.store (i32.const 0) (call $pc (i32.const 0)))
             (i64.store (i32.const 8) (call $pc (i32.const 0)))
             (call $append (i32.const 0) (i32.const 16))
             (call $reply))"#,
    );
    let mut e = before_tracker();
    let (id, install) = e.install(&wasm, &[]).unwrap();
    install.result.unwrap();
    let out = e.update(id, "two", &[]).unwrap();
    // One segment, charged at entry: entry 1 + 6 consts + 4 calls x 5 + 2 stores = 29.
    // First counter = 29 + its own 200; second = + 200 (nothing between them is a segment).
    assert_eq!(reply_u64s(&out.result.clone().unwrap()), vec![229, 429]);
    // + msg_reply_data_append(16 bytes) 500 + 50 x 16 + msg_reply 500
    // + 1 heap page written (page 0) x 1000, charged after execution.
    assert_eq!(out.report.instructions, 429 + 1300 + 500 + 1000);
    assert_eq!(out.report.heap_dirty_pages, 1);
}

#[test]
fn a_segment_boundary_between_counters_adds_the_next_segment() {
    let wasm = canister(
        r#"(func (export "canister_update split")
             (local $a i64)
             (local.set $a (call $pc (i32.const 0)))
             (block (br 0))
             (i64.store (i32.const 0) (local.get $a))
             (i64.store (i32.const 8) (call $pc (i32.const 0)))
             (call $append (i32.const 0) (i32.const 16))
             (call $reply))"#,
    );
    let (mut e, id) = installed(before_tracker(), &wasm);
    let out = e.update(id, "split", &[]).unwrap();
    // Segment 1 (entry): 1 + i32.const 1 + call 5 + local.set 1 + block 0 + br 2 = 10.
    // Segment 2 (after br): end 0 (the block's end closes it) = 0 -> no injection.
    // Segment 3 (after end): i32.const, local.get, i64.store, i32.const, i32.const, call,
    //   i64.store, i32.const, i32.const, call, call, end = 1+1+1+1+1+5+1+1+1+5+5+0 = 23.
    // First counter: 10 + 200 = 210. Second: 210 + 23 + 200 = 433.
    let values = reply_u64s(&out.result.unwrap());
    assert_eq!(values, vec![210, 433]);
}

#[test]
fn stable_write_across_a_page_boundary_pays_two_dirty_pages() {
    let wasm = stable_writer("write", 4090, 100, 10);
    let (mut e, id) = installed(before_tracker(), &wasm);
    let out = e.update(id, "write", &[]).unwrap();
    out.result.clone().unwrap();
    // Segment: entry 1 + i64.const 1 + call 5 + drop 1 + 3 x i64.const + call 5 + call 5 = 21.
    // stable64_grow 100; stable64_write 20 + 10 bytes + 2 new dirty 4 KiB pages x 1000;
    // msg_reply 500. The heap is only read: no heap dirty page.
    assert_eq!(out.report.instructions, 21 + 100 + 2030 + 500);
    assert_eq!(out.report.stable_dirty_pages, 2);
    assert_eq!(out.report.heap_dirty_pages, 0);
    assert_eq!(out.report.stable_bytes_after, 65536);

    // The same pages again in a new message are newly dirty again.
    let again = e.update(id, "write", &[]).unwrap();
    assert_eq!(again.report.instructions, 21 + 100 + 2030 + 500);
}

#[test]
fn a_trap_rolls_back_heap_globals_and_stable_memory() {
    let wasm = canister(
        r#"(func $state
             (i64.store (i32.const 0) (global.get $g))
             (i64.store (i32.const 8) (i64.load (i32.const 200)))
             (i64.store (i32.const 16) (call $ssize))
             (i64.store (i32.const 24) (i64.extend_i32_u (memory.size)))
             (call $append (i32.const 0) (i32.const 32))
             (call $reply))
           (func (export "canister_query state") (call $state))
           (func (export "canister_update change_then_trap")
             (global.set $g (i64.const 99))
             (i64.store (i32.const 200) (i64.const 12345))
             (drop (call $sgrow (i64.const 2)))
             (call $swrite (i64.const 0) (i64.const 100) (i64.const 4))
             (call $trap (i32.const 100) (i32.const 4)))
           (func (export "canister_update grow_then_trap")
             (drop (memory.grow (i32.const 3)))
             (i64.store (i32.const 200) (i64.const 5))
             (unreachable))
           (func (export "canister_update change")
             (global.set $g (i64.const 42))
             (i64.store (i32.const 200) (i64.const 77))
             (call $reply))"#,
    );
    let (mut e, id) = installed(EmbeddedEngine::default(), &wasm);
    let state =
        |e: &mut EmbeddedEngine| reply_u64s(&e.query(id, "state", &[]).unwrap().result.unwrap());
    assert_eq!(state(&mut e), vec![7, 0, 0, 1]);

    let out = e.update(id, "change_then_trap", &[]).unwrap();
    let err = out.result.unwrap_err();
    assert_reject(
        &err,
        ErrorCode::CanisterCalledTrap,
        "Canister called `ic0.trap` with message: 'boom'",
    );
    assert!(
        out.report.instructions > 0,
        "a trapped message is still charged"
    );
    assert_eq!(state(&mut e), vec![7, 0, 0, 1]);

    let out = e.update(id, "grow_then_trap", &[]).unwrap();
    assert_eq!(
        out.result.unwrap_err().error_code,
        ErrorCode::CanisterTrapped
    );
    assert_eq!(
        state(&mut e),
        vec![7, 0, 0, 1],
        "memory growth is rolled back too"
    );

    e.update(id, "change", &[]).unwrap().result.unwrap();
    assert_eq!(state(&mut e), vec![42, 77, 0, 1]);
}

/// With the local counter, loads and stores do not write the counter back to its global
/// first (instrument.rs, `stale_at_heap_traps`): a message that traps at one runs again on
/// the module with the replica's global counter. Its count, error, rolled-back state and log
/// must be those of one run, on both counter placements, grown heap or not.
#[test]
fn a_load_out_of_bounds_is_counted_at_the_trap() {
    let wasm = wat::parse_str(
        r#"(module
          (import "ic0" "debug_print" (func $print (param i32 i32)))
          (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
          (import "ic0" "msg_reply" (func $reply))
          (import "ic0" "time" (func $time (result i64)))
          (memory 1)
          (global $g (mut i64) (i64.const 7))
          (data (i32.const 100) "before")
          (func $load (param i32) (result i32) local.get 0 i32.load)
          (func (export "canister_update oob")
            i32.const 70000 call $load drop)
          (func (export "canister_update work_then_oob")
            (local $i i32)
            (call $print (i32.const 100) (i32.const 6))
            (global.set $g (i64.const 99))
            (i64.store (i32.const 200) (i64.const 12345))
            ;; A loop whose length depends on the time: a run again must see the same time.
            (loop $l
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i64.lt_u (i64.extend_i32_u (local.get $i))
                                  (i64.rem_u (call $time) (i64.const 97)))))
            (drop (memory.grow (i32.const 2)))
            (drop (i32.load (i32.const 0x40000))))
          (func (export "canister_query state")
            (i64.store (i32.const 0) (global.get $g))
            (i64.store (i32.const 8) (i64.load (i32.const 200)))
            (i64.store (i32.const 16) (i64.extend_i32_u (memory.size)))
            (call $append (i32.const 0) (i32.const 24))
            (call $reply)))"#,
    )
    .unwrap();
    let mut counts = Vec::new();
    for counter in [Counter::Global, Counter::Local] {
        let mut e = EmbeddedEngine::default()
            .with_replica(Replica::R2026_05)
            .with_counter(counter);
        let (id, _) = e.install(&wasm, &[]).unwrap();
        let state = |e: &mut EmbeddedEngine| {
            reply_u64s(&e.query(id, "state", &[]).unwrap().result.unwrap())
        };
        // oob: one segment, charged at its start: entry 1 + i32.const 1 + call 5 + drop 1 =
        // 8; $load: entry 1 + local.get 1 + i32.load 1 = 3, charged before the load traps.
        let out = e.update(id, "oob", &[]).unwrap();
        let err = out.result.unwrap_err();
        assert_eq!(err.error_code, ErrorCode::CanisterTrapped, "{counter:?}");
        assert!(
            err.message.contains("heap out of bounds"),
            "{}",
            err.message
        );
        assert_eq!(out.report.instructions, 11, "{counter:?}");
        let time = e.time_ns();
        let mut seen = Vec::new();
        for _ in 0..2 {
            let out = e.update(id, "work_then_oob", &[]).unwrap();
            assert_eq!(
                out.result.unwrap_err().error_code,
                ErrorCode::CanisterTrapped
            );
            assert_eq!(e.last_log(id), vec!["before".to_string()], "{counter:?}");
            assert_eq!(state(&mut e), vec![7, 0, 1], "{counter:?}: rolled back");
            seen.push(out.report.instructions);
        }
        // One message, one tick of the clock, however often it ran; the query saw one too.
        assert_eq!(e.time_ns(), time + 4, "{counter:?}");
        counts.push(seen);
    }
    assert_eq!(counts[0], counts[1], "Global and Local counts");
    assert_ne!(counts[0][0], counts[0][1], "the time changes the loop");
}

/// The `[min, max]` page marks of
/// [`a_trap_after_writing_thousands_of_pages_takes_every_page_back`]'s canister.
fn pages(e: &mut EmbeddedEngine, id: Principal) -> Vec<u64> {
    reply_u64s(&e.query(id, "pages", &[]).unwrap().result.unwrap())
}

/// Sends fill_then_trap, which must trap and leave the pages of
/// [`a_trap_after_writing_thousands_of_pages_takes_every_page_back`]'s canister at
/// `[min, max]` and its state hash at `hash`.
#[track_caller]
fn trap_leaves(e: &mut EmbeddedEngine, id: Principal, min_max: [u64; 2], hash: &[u8; 32]) {
    e.update(id, "fill_then_trap", &[])
        .unwrap()
        .result
        .unwrap_err();
    assert_eq!(pages(e, id), min_max);
    assert_eq!(&e.state_hash(id).unwrap(), hash);
}

/// A failed message takes back the pages it wrote from the old bytes its first writes kept
/// (no second copy of the heap): after messages that wrote more pages than the undo log
/// keeps between messages (16,384), on a fresh heap and on one loaded from a snapshot.
#[test]
fn a_trap_after_writing_thousands_of_pages_takes_every_page_back() {
    let wasm = canister(
        r#"(func $fill (param $v i32)
             (local $p i32)
             (local.set $p (i32.const 4096))
             (loop $l
               (i32.store8 (local.get $p) (local.get $v))
               (local.set $p (i32.add (local.get $p) (i32.const 4096)))
               (br_if $l (i32.lt_u (local.get $p)
                                   (i32.mul (memory.size) (i32.const 65536))))))
           (func (export "canister_update grow")
             (drop (memory.grow (i32.const 399)))
             (call $reply))
           (func (export "canister_update fill_next")
             (global.set $g (i64.add (global.get $g) (i64.const 1)))
             (call $fill (i32.wrap_i64 (global.get $g)))
             (call $reply))
           (func (export "canister_update fill_then_trap")
             (call $fill (i32.const 99))
             (unreachable))
           (func (export "canister_update mark_first")
             (i32.store8 (i32.const 4096) (i32.const 77))
             (call $reply))
           (func (export "canister_query pages")
             (local $p i32) (local $min i64) (local $max i64) (local $b i64)
             (local.set $p (i32.const 4096))
             (local.set $min (i64.const 255))
             (loop $l
               (local.set $b (i64.load8_u (local.get $p)))
               (if (i64.lt_u (local.get $b) (local.get $min)) (then (local.set $min (local.get $b))))
               (if (i64.gt_u (local.get $b) (local.get $max)) (then (local.set $max (local.get $b))))
               (local.set $p (i32.add (local.get $p) (i32.const 4096)))
               (br_if $l (i32.lt_u (local.get $p)
                                   (i32.mul (memory.size) (i32.const 65536)))))
             (i64.store (i32.const 0) (local.get $min))
             (i64.store (i32.const 8) (local.get $max))
             (call $append (i32.const 0) (i32.const 16))
             (call $reply))"#,
    );
    let mut e = EmbeddedEngine::default();
    let (id, install) = e.install(&wasm, &[]).unwrap();
    install.result.unwrap();
    e.update(id, "grow", &[]).unwrap().result.unwrap();
    // 400 Wasm pages: 6,399 OS pages written per fill, three fills = 19,197 undo pages.
    for expected in 8..=10 {
        let out = e.update(id, "fill_next", &[]).unwrap();
        out.result.unwrap();
        assert_eq!(out.report.heap_dirty_pages, 6_399);
        assert_eq!(pages(&mut e, id), vec![expected, expected]);
    }
    let committed = e.state_hash(id).unwrap();
    let trapped = e.update(id, "fill_then_trap", &[]).unwrap();
    assert_eq!(
        trapped.result.unwrap_err().error_code,
        ErrorCode::CanisterTrapped
    );
    assert_eq!(trapped.report.heap_dirty_pages, 6_399);
    assert_eq!(pages(&mut e, id), vec![10, 10]);
    assert_eq!(e.state_hash(id).unwrap(), committed);

    // The same on a heap loaded from a snapshot (a copy-on-write view of it on Linux).
    let snap = e.snapshot(id).unwrap();
    e.update(id, "fill_next", &[]).unwrap().result.unwrap();
    e.restore(id, snap).unwrap();
    assert_eq!(e.state_hash(id).unwrap(), committed);
    trap_leaves(&mut e, id, [10, 10], &committed);
    e.update(id, "fill_next", &[]).unwrap().result.unwrap();
    assert_eq!(pages(&mut e, id), vec![11, 11]);

    // Pages the loaded heap still shares with the snapshot are rolled back by dropping the
    // copies the failed message made; a page committed since (77), by its kept old bytes.
    e.restore(id, snap).unwrap();
    e.update(id, "mark_first", &[]).unwrap().result.unwrap();
    let marked = e.state_hash(id).unwrap();
    trap_leaves(&mut e, id, [10, 77], &marked);
    // The same on a snapshot kept as the first one plus that page (a layer), loaded anew.
    let layered = e.snapshot(id).unwrap();
    e.restore(id, snap).unwrap();
    e.restore(id, layered).unwrap();
    trap_leaves(&mut e, id, [10, 77], &marked);
    // Restoring the layer again after committed writes gives back both kinds of page.
    e.update(id, "fill_next", &[]).unwrap().result.unwrap();
    e.restore(id, layered).unwrap();
    trap_leaves(&mut e, id, [10, 77], &marked);
}

#[test]
fn queries_never_persist() {
    let wasm = canister(
        r#"(func (export "canister_query bump")
             (global.set $g (i64.add (global.get $g) (i64.const 1)))
             (i64.store (i32.const 0) (global.get $g))
             (call $append (i32.const 0) (i32.const 8))
             (call $reply))"#,
    );
    let (mut e, id) = installed(EmbeddedEngine::default(), &wasm);
    for _ in 0..3 {
        let out = e.query(id, "bump", &[]).unwrap();
        assert_eq!(reply_u64s(&out.result.unwrap()), vec![8]);
        assert_eq!(
            out.report.heap_dirty_pages, 1,
            "pages are tracked but not charged"
        );
    }
    // Called as an update (replicated query): charged, still not persisted.
    let out = e.update(id, "bump", &[]).unwrap();
    assert_eq!(reply_u64s(&out.result.unwrap()), vec![8]);
}

#[test]
fn instruction_limits_give_the_replica_error() {
    let wasm = canister(
        r#"(func $spin (loop (br 0)))
           (func (export "canister_update spin") (call $spin))
           (func (export "canister_query spin_q") (call $spin))"#,
    );
    let limits = Limits {
        max_instructions_per_update: 1_000_000,
        max_instructions_per_query: 500_000,
        ..Limits::APPLICATION
    };
    let (mut e, id) = installed(EmbeddedEngine::new(limits), &wasm);
    let err = update_error(&mut e, id, "spin");
    assert_reject(
        &err,
        ErrorCode::CanisterInstructionLimitExceeded,
        "exceeded the limit of 1000000 instructions for single message execution",
    );
    let err = e.query(id, "spin_q", &[]).unwrap().result.unwrap_err();
    assert_reject(
        &err,
        ErrorCode::CanisterInstructionLimitExceeded,
        "limit of 500000 instructions",
    );
}

#[test]
fn install_limit_applies_to_init() {
    let wasm = canister(r#"(func (export "canister_init") (loop (br 0)))"#);
    let limits = Limits {
        max_instructions_per_install: 2_000_000,
        ..Limits::APPLICATION
    };
    let mut e = EmbeddedEngine::new(limits);
    let (id, out) = e.install(&wasm, &[]).unwrap();
    assert_eq!(
        out.result.unwrap_err().error_code,
        ErrorCode::CanisterInstructionLimitExceeded
    );
    // The failed install leaves no module.
    let err = update_error(&mut e, id, "x");
    assert_eq!(err.error_code, ErrorCode::CanisterWasmModuleNotFound);
}

#[test]
fn stable_dirty_page_limit() {
    let wasm = stable_writer("fill", 0, 0, 20000);
    let limits = Limits {
        stable_dirty_pages_update: 4,
        ..Limits::APPLICATION
    };
    let (mut e, id) = installed(EmbeddedEngine::new(limits), &wasm);
    // 20,000 bytes span 5 pages > 4.
    let err = update_error(&mut e, id, "fill");
    assert_eq!(err.error_code, ErrorCode::CanisterMemoryAccessLimitExceeded);
    // Upgrades may dirty 8 GiB and queries 1 GiB (the application subnet's limits).
    assert_eq!(
        err.message,
        format!("Error from Canister {id}: Canister exceeded memory access limits: Exceeded the limit for the number of modified pages in the stable memory in a single execution: limit 16 KB for regular messages, 8388608 KB for upgrade messages and 1048576 KB for queries.")
    );
}

#[test]
fn stable_accessed_page_limit_counts_reads() {
    let wasm = canister(
        r#"(func (export "canister_update grow") (drop (call $sgrow (i64.const 1))) (call $reply))
           (func $read5 (call $sread (i64.const 1000) (i64.const 0) (i64.const 20000)))
           (func (export "canister_update read5") (call $read5) (call $reply))
           (func (export "canister_query read5_q") (call $read5) (call $reply))
           (func (export "canister_update read4") (call $sread (i64.const 1000) (i64.const 0) (i64.const 16384)) (call $reply))"#,
    );
    let limits = Limits {
        stable_accessed_pages_update: 4,
        stable_accessed_pages_query: 4,
        ..Limits::APPLICATION
    };
    let (mut e, id) = installed(EmbeddedEngine::new(limits), &wasm);
    e.update(id, "grow", &[]).unwrap().result.unwrap();
    // Exactly 4 pages read: at the limit, allowed.
    e.update(id, "read4", &[]).unwrap().result.unwrap();
    // 20,000 bytes from offset 0 touch 5 pages > 4, in updates and in queries alike.
    for out in [
        e.update(id, "read5", &[]).unwrap(),
        e.query(id, "read5_q", &[]).unwrap(),
    ] {
        let err = out.result.unwrap_err();
        assert_eq!(err.error_code, ErrorCode::CanisterMemoryAccessLimitExceeded);
        assert_eq!(
            err.message,
            // The replica's wording names the limit of every message kind (16 KB and 16 KB
            // here); the dirty-page limit names regular, upgrade and query messages.
            format!("Error from Canister {id}: Canister exceeded memory access limits: Exceeded the limit for the number of accessed pages in the stable memory in a single message execution: limit 16 KB for regular messages and 16 KB for queries.")
        );
    }
}

/// `memory.grow` by N pages, replying the old size (or -1) as an i64.
const GROW: &str = r#"
  (func $grow_by (param $n i32)
    (i64.store (i32.const 0) (i64.extend_i32_s (memory.grow (local.get $n))))
    (call $append (i32.const 0) (i32.const 8))
    (call $reply))
  (func (export "canister_update grow4") (call $grow_by (i32.const 4)))
  (func (export "canister_query grow4_q") (call $grow_by (i32.const 4)))
  (func (export "canister_update grow_rest") (call $grow_by (i32.const 65535)))
  (func (export "canister_update grow1") (call $grow_by (i32.const 1)))
  (func (export "canister_query size")
    (i64.store (i32.const 0) (i64.extend_i32_u (memory.size)))
    (call $append (i32.const 0) (i32.const 8))
    (call $reply))
"#;

fn grow_reply(out: icbench::engine::CallOutcome) -> i64 {
    reply_u64s(&out.result.unwrap())[0] as i64
}

#[test]
fn wasm_memory_limit_traps_updates_but_not_queries() {
    let limits = Limits {
        wasm_memory_limit: 4 * 65536,
        ..Limits::APPLICATION
    };
    let (mut e, id) = installed(EmbeddedEngine::new(limits), &canister(GROW));
    // 1 + 4 pages = 327,680 bytes > 262,144.
    let err = update_error(&mut e, id, "grow4");
    assert_wasm_memory_limit_exceeded(
        &err,
        id,
        "262144 bytes. The peak Wasm memory usage was 327680 bytes.",
    );
    // The trapped grow is rolled back.
    assert_eq!(grow_reply(e.query(id, "size", &[]).unwrap()), 1);
    // Queries are exempt (and discard the growth).
    assert_eq!(grow_reply(e.query(id, "grow4_q", &[]).unwrap()), 1);
    assert_eq!(grow_reply(e.query(id, "size", &[]).unwrap()), 1);
}

#[test]
fn the_heap_grows_to_4_gib_and_no_further() {
    // The default limit (3 GiB) stops a grow to 4 GiB in an update.
    let (mut e, id) = installed(EmbeddedEngine::default(), &canister(GROW));
    let err = update_error(&mut e, id, "grow_rest");
    assert_reject(
        &err,
        ErrorCode::CanisterWasmMemoryLimitExceeded,
        "limit of 3221225472 bytes",
    );

    // With the limit lifted (0 = unlimited) the Wasm32 maximum of 65,536 pages is reached,
    // untouched pages cost nothing, and one more page is refused with -1, not a trap.
    let limits = Limits {
        wasm_memory_limit: 0,
        ..Limits::APPLICATION
    };
    let (mut e, id) = installed(EmbeddedEngine::new(limits), &canister(GROW));
    let out = e.update(id, "grow_rest", &[]).unwrap();
    assert_grown_to_the_maximum(&mut e, id, out, 1, 4 << 30);
}

/// After `out`, a grow to the heap maximum of `max_bytes`: it replied the old size, only
/// the reply's scratch page was written (untouched pages cost nothing), and one more page
/// is refused with -1, not a trap.
fn assert_grown_to_the_maximum(
    e: &mut EmbeddedEngine,
    id: Principal,
    out: icbench::engine::CallOutcome,
    old_pages: i64,
    max_bytes: u64,
) {
    assert_eq!(out.report.heap_bytes_after, max_bytes);
    assert_eq!(
        out.report.heap_dirty_pages, 1,
        "only the reply scratch page"
    );
    assert_eq!(grow_reply(out), old_pages);
    assert_eq!(grow_reply(e.update(id, "grow1", &[]).unwrap()), -1);
    let pages = grow_reply(e.query(id, "size", &[]).unwrap());
    assert_eq!(pages as u64, max_bytes / 65536);
}

#[test]
fn unknown_method_and_missing_reply() {
    let wasm = canister(r#"(func (export "canister_update silent"))"#);
    let (mut e, id) = installed(EmbeddedEngine::default(), &wasm);
    let err = update_error(&mut e, id, "nope");
    assert_eq!(err.error_code, ErrorCode::CanisterMethodNotFound);
    // ic-error-types: IC0536 carries reject code 5 (CanisterError), not 3.
    assert_eq!(err.code, RejectCode::CanisterError);
    let err = e.query(id, "silent", &[]).unwrap().result.unwrap_err();
    assert_eq!(
        err.error_code,
        ErrorCode::CanisterMethodNotFound,
        "an update is not a query"
    );
    let err = update_error(&mut e, id, "silent");
    assert_eq!(err.error_code, ErrorCode::CanisterDidNotReply);
    assert_eq!(
        err.to_string(),
        format!("IC0506: Canister {id} did not produce a response")
    );
}

#[test]
fn bad_modules_are_rejected_with_the_reason() {
    let mut e = EmbeddedEngine::default();
    let err = e.install(b"not wasm", &[]).unwrap_err().to_string();
    assert!(err.contains("neither a Wasm module"), "{err}");
    let wasi = wat::parse_str(r#"(module (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32))))"#).unwrap();
    let err = e.install(&wasi, &[]).unwrap_err().to_string();
    assert!(
        err.contains("wasi_snapshot_preview1.fd_write") && err.contains("wasi2ic"),
        "{err}"
    );
    let unknown = wat::parse_str(r#"(module (import "ic0" "teleport" (func)))"#).unwrap();
    let err = e.install(&unknown, &[]).unwrap_err().to_string();
    assert!(err.contains("ic0.teleport"), "{err}");
    // The replica's install-time data segment check, before anything runs.
    let segment = wat::parse_str(r#"(module (memory 1) (data (i32.const 65536) "x"))"#).unwrap();
    let err = e.install(&segment, &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        "Wasm module has invalid data segment of 1 bytes at 65536"
    );
}

#[test]
fn unsupported_calls_link_and_trap_when_called() {
    let wasm = wat::parse_str(
        r#"(module
             (import "ic0" "msg_deadline" (func $deadline (result i64)))
             (func (export "canister_update call") (drop (call $deadline))))"#,
    )
    .unwrap();
    let mut e = EmbeddedEngine::default();
    let (id, install) = e.install(&wasm, &[]).unwrap();
    install.result.unwrap();
    let err = update_error(&mut e, id, "call");
    assert!(
        err.message
            .contains("ic0.msg_deadline is not supported by the embedded engine"),
        "{}",
        err.message
    );
}

#[test]
fn upgrade_keeps_stable_memory_and_resets_the_heap() {
    let v1 = canister(
        r#"(func (export "canister_update setup")
             (global.set $g (i64.const 1))
             (i64.store (i32.const 200) (i64.const 9))
             (drop (call $sgrow (i64.const 1)))
             (call $swrite (i64.const 8) (i64.const 100) (i64.const 4))
             (call $reply))"#,
    );
    let v2 = canister(
        r#"(func (export "canister_query read")
             (i64.store (i32.const 0) (global.get $g))
             (i64.store (i32.const 8) (i64.load (i32.const 200)))
             (call $sread (i64.const 16) (i64.const 8) (i64.const 4))
             (call $append (i32.const 0) (i32.const 24))
             (call $reply))"#,
    );
    let (mut e, id) = installed(EmbeddedEngine::default(), &v1);
    e.update(id, "setup", &[]).unwrap().result.unwrap();
    e.upgrade(id, &v2, &[]).unwrap().result.unwrap();
    let values = reply_u64s(&e.query(id, "read", &[]).unwrap().result.unwrap());
    assert_eq!(
        values[0], 7,
        "globals start from the new module's initial values"
    );
    assert_eq!(values[1], 0, "the heap is fresh");
    assert_eq!(
        &values[2].to_le_bytes()[..4],
        b"boom",
        "stable memory survives"
    );
}

/// A wasm64 canister: the System API takes 64-bit addresses and sizes, loads and stores
/// cost 2, and each heap page written costs 4x the wasm32 charge.
const WASM64: &str = r#"(module
  (import "ic0" "msg_arg_data_size" (func $size (result i64)))
  (import "ic0" "msg_arg_data_copy" (func $copy (param i64 i64 i64)))
  (import "ic0" "msg_reply_data_append" (func $append (param i64 i64)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "performance_counter" (func $pc (param i32) (result i64)))
  (import "ic0" "stable64_grow" (func $sgrow (param i64) (result i64)))
  (import "ic0" "stable64_write" (func $swrite (param i64 i64 i64)))
  (memory i64 1)
  (func (export "canister_update write")
    (drop (call $sgrow (i64.const 1)))
    (call $swrite (i64.const 4090) (i64.const 100) (i64.const 10))
    (call $reply))
  (func (export "canister_update echo")
    (call $copy (i64.const 16) (i64.const 0) (call $size))
    (i64.store (i64.const 8) (call $pc (i32.const 0)))
    (call $append (i64.const 8) (i64.add (i64.const 8) (call $size)))
    (call $reply))
  (func $grow_by (param $n i64)
    (i64.store (i64.const 0) (memory.grow (local.get $n)))
    (call $append (i64.const 0) (i64.const 8))
    (call $reply))
  (func (export "canister_update grow_4gib") (call $grow_by (i64.const 65536)))
  (func (export "canister_update grow_to_6gib") (call $grow_by (i64.const 32767)))
  (func (export "canister_update grow1") (call $grow_by (i64.const 1)))
  (func (export "canister_query size")
    (i64.store (i64.const 0) (memory.size))
    (call $append (i64.const 0) (i64.const 8))
    (call $reply)))"#;

#[test]
fn a_wasm64_canister_passes_64_bit_addresses_and_pays_wasm64_costs() {
    let wasm = wat::parse_str(WASM64).unwrap();
    let mut e = before_tracker();
    let (id, install) = e.install(&wasm, &[]).unwrap();
    install.result.unwrap();
    let out = e.update(id, "echo", b"hello").unwrap();
    let reply = out.result.clone().unwrap();
    assert_eq!(&reply[8..], b"hello");
    // One segment, charged at entry: entry 1 + 6 consts + i64.add 1 + 6 calls x 5
    // + i64.store 2 (a wasm64 store) = 40. Before the counter is read: msg_arg_data_size
    // 500, msg_arg_data_copy 500 + 5 bytes; then performance_counter 200.
    let counter = u64::from_le_bytes(reply[..8].try_into().unwrap());
    assert_eq!(counter, 40 + 500 + 505 + 200);
    // Then msg_arg_data_size 500, msg_reply_data_append 500 + 50 x 13 bytes, msg_reply
    // 500, and heap page 0 written: 4 x 1000 in wasm64.
    assert_eq!(
        out.report.instructions,
        counter + 500 + 1150 + 500 + 4 * 1000
    );
    assert_eq!(out.report.heap_dirty_pages, 1);

    // Stable memory pages are not multiplied: the replica's instrumentation gets the
    // plain overhead. The same count as the wasm32 test above: 21 + 100 + 2030 + 500.
    let out = e.update(id, "write", &[]).unwrap();
    out.result.clone().unwrap();
    assert_eq!(out.report.instructions, 21 + 100 + 2030 + 500);
    assert_eq!(out.report.stable_dirty_pages, 2);
}

#[test]
fn the_wasm64_heap_grows_past_4_gib_to_6_gib_and_no_further() {
    let limits = Limits {
        wasm_memory_limit: 0,
        ..Limits::APPLICATION
    };
    let (mut e, id) = installed(
        EmbeddedEngine::new(limits),
        &wat::parse_str(WASM64).unwrap(),
    );
    assert_eq!(grow_reply(e.update(id, "grow_4gib", &[]).unwrap()), 1);
    let out = e.update(id, "grow_to_6gib", &[]).unwrap();
    assert_grown_to_the_maximum(&mut e, id, out, 65537, 6 << 30);
}

#[test]
fn a_32_bit_system_api_import_in_a_wasm64_module_is_refused_by_name() {
    let wasm = wat::parse_str(
        r#"(module
             (import "ic0" "msg_reply_data_append" (func (param i32 i32)))
             (memory i64 1))"#,
    )
    .unwrap();
    let err = EmbeddedEngine::default()
        .install(&wasm, &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("msg_reply_data_append"), "{err}");
}

/// `Engine::fresh`: a new engine configured as the old one (limits, vintage, host) and
/// holding none of its canisters; its first canister gets the id a new engine's first does,
/// and its messages are charged by the same rules (the same instructions as on the old one).
#[test]
fn a_fresh_engine_has_the_configuration_and_none_of_the_canisters() {
    use icbench::engine::cost::Host;
    let wasm = stable_writer("write", 0, 100, 4);
    let limits = Limits {
        max_instructions_per_update: 9_000_000,
        ..Limits::APPLICATION
    };
    let old = EmbeddedEngine::new(limits)
        .with_replica(Replica::R2026_05)
        .with_host(Host::MacosArm64);
    let (mut old, id) = installed(old, &wasm);
    let on_old = old.update(id, "write", &[]).unwrap();
    let mut fresh = old.fresh().expect("the embedded engine makes one");
    assert_eq!(fresh.limits(), limits);
    assert_eq!(fresh.replica(), Some(Replica::R2026_05));
    assert_eq!(fresh.host(), Some(Host::MacosArm64));
    assert!(
        fresh.update(id, "write", &[]).is_err(),
        "the old canister is not there"
    );
    let (fresh_id, _) = fresh.install(&wasm, &[]).unwrap();
    assert_eq!(fresh_id, id);
    let on_fresh = fresh.update(fresh_id, "write", &[]).unwrap();
    assert_eq!(on_fresh.report.instructions, on_old.report.instructions);
    assert!(on_fresh.report.instructions > 0);
    // With other limits: the same vintage and host.
    let other = Limits {
        max_instructions_per_query: 7,
        ..limits
    };
    let reader = old
        .fresh_with(other)
        .expect("the embedded engine makes one");
    assert_eq!(reader.limits(), other);
    assert_eq!(reader.replica(), Some(Replica::R2026_05));
    assert_eq!(reader.host(), Some(Host::MacosArm64));
}
