//! The native stable accesses (`instrument::STABLE_CACHE_EXPORT`): with the local counter,
//! calls to `stable64_read`/`write` that touch only pages the message already accessed (or
//! wrote) are answered in Wasm from a cache of stable memory. Everything observable must be
//! what the host functions give: each message below runs with the local counter (native
//! accesses) and the global one (host calls only), under the memory tracker and before it,
//! and every reply, error and instruction count must agree. The messages mix both paths on
//! the same pages (a host read of a page written natively, a write after a native one), roll
//! back native writes, and cross the end of the cache.

use icbench::engine::cost::Replica;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::instrument::{self, Counter};
use icbench::engine::Engine;

use crate::support::wat::{REPLY_IMPORTS, STABLE64_IMPORTS};

/// `{WARM}` is replaced by the number of host accesses after which a page is cached.
const CANISTER: &str = r#"(module
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "trap" (func $trap (param i32 i32)))
  (import "ic0" "stable64_size" (func $ssize (result i64)))
  (import "ic0" "stable64_grow" (func $sgrow (param i64) (result i64)))
  (import "ic0" "stable64_write" (func $swrite (param i64 i64 i64)))
  (import "ic0" "stable64_read" (func $sread (param i64 i64 i64)))
  (memory 8)
  ;; A checksum of heap bytes [ptr, ptr + len), stored at heap address 32.
  (func $checksum (param $ptr i32) (param $len i32) (local $sum i64) (local $end i32)
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $ptr) (local.get $end)))
      (local.set $sum (i64.add (i64.mul (local.get $sum) (i64.const 31))
                               (i64.load8_u (local.get $ptr))))
      (local.set $ptr (i32.add (local.get $ptr) (i32.const 1)))
      (br $next)))
    (i64.store (i32.const 32) (local.get $sum)))
  ;; Reads 8 bytes at $offset until the page is cached, the accesses after it native.
  (func $warm (param $offset i64) (local $i i32)
    (loop $next
      (call $sread (i64.const 200) (local.get $offset) (i64.const 8))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (i32.const {WARM})))))
  (func (export "canister_init") (drop (call $sgrow (i64.const 4))))
  ;; Two writes to one page (the host's, then a native one), a native read of both, a read
  ;; longer than the injected function takes (the host's, after writing the page back).
  (func (export "canister_update rw")
    (call $warm (i64.const 4992))
    (i64.store (i32.const 0) (i64.const 0x1122334455667788))
    (call $swrite (i64.const 5000) (i64.const 0) (i64.const 8))
    (i64.store (i32.const 0) (i64.const 0x0102030405060708))
    (call $swrite (i64.const 5004) (i64.const 0) (i64.const 8))
    (call $sread (i64.const 64) (i64.const 4996) (i64.const 24))
    (call $sread (i64.const 88) (i64.const 5000) (i64.const 8))
    (call $sread (i64.const 96) (i64.const 5004) (i64.const 4))
    (call $sread (i64.const 1024) (i64.const 0) (i64.const 100000))
    (call $checksum (i32.const 1024) (i32.const 100000))
    (call $append (i32.const 64) (i32.const 36))
    (call $append (i32.const 32) (i32.const 8))
    (call $reply))
  ;; Writes (the second one native) and reads, then traps: nothing of it may remain.
  (func (export "canister_update trap_after_write")
    (call $warm (i64.const 4992))
    (i64.store (i32.const 0) (i64.const -1))
    (call $swrite (i64.const 4990) (i64.const 0) (i64.const 8))
    (call $swrite (i64.const 5000) (i64.const 0) (i64.const 8))
    (call $sread (i64.const 64) (i64.const 4990) (i64.const 24))
    (call $trap (i32.const 64) (i32.const 8)))
  (func (export "canister_query get")
    (call $sread (i64.const 64) (i64.const 4990) (i64.const 32))
    (call $append (i32.const 64) (i32.const 32))
    (call $reply))
  ;; Past the cache's 8 GiB: stable memory grows beyond it, and a write and reads cross its
  ;; end (the host's) or lie before it (native after the first access).
  (func (export "canister_update far")
    (if (i64.lt_u (call $ssize) (i64.const 131080))
      (then (drop (call $sgrow (i64.const 131080)))))
    (call $warm (i64.const 8589934560))
    (i64.store (i32.const 0) (i64.const 0x0a0b0c0d0e0f1011))
    (call $swrite (i64.const 8589934588) (i64.const 0) (i64.const 8))
    (call $swrite (i64.const 8589934580) (i64.const 0) (i64.const 8))
    (call $sread (i64.const 64) (i64.const 8589934576) (i64.const 24))
    (call $sread (i64.const 96) (i64.const 8589934576) (i64.const 4))
    (call $append (i32.const 64) (i32.const 36))
    (call $reply))
  ;; Out of bounds, by four bytes.
  (func (export "canister_update oob")
    (call $sread (i64.const 64) (i64.sub (i64.shl (call $ssize) (i64.const 16)) (i64.const 4))
                 (i64.const 8))
    (call $reply))
  ;; A native write whose heap range is out of bounds: the host's error.
  (func (export "canister_update heap_oob")
    (call $warm (i64.const 0))
    (call $swrite (i64.const 0) (i64.const 0) (i64.const 8))
    (call $swrite (i64.const 0) (i64.const 524284) (i64.const 8))
    (call $reply)))"#;

const MESSAGES: [(&str, bool); 10] = [
    ("get", true),
    ("rw", false),
    ("get", true),
    ("trap_after_write", false),
    ("get", true),
    ("rw", false),
    ("far", false),
    ("far", false),
    ("oob", false),
    ("heap_oob", false),
];

/// Every message's reply or error and instructions, in order.
fn trace(wasm: &[u8], counter: Counter, replica: Replica) -> Vec<(Result<Vec<u8>, String>, u64)> {
    let mut engine = EmbeddedEngine::default()
        .with_replica(replica)
        .with_counter(counter);
    let (id, install) = engine.install(wasm, &[]).unwrap();
    install.result.unwrap();
    MESSAGES
        .iter()
        .map(|&(method, query)| {
            let out = crate::support::send(&mut engine, id, method, query);
            (out.result.map_err(|r| r.message), out.report.instructions)
        })
        .collect()
}

#[test]
fn native_stable_accesses_give_the_host_functions_replies_errors_and_counts() {
    let warm = (instrument::MARK_SEEN + 1).to_string();
    let wasm = wat::parse_str(CANISTER.replace("{WARM}", &warm)).unwrap();
    assert!(
        instrument::instrument_with(&wasm, Counter::Local)
            .unwrap()
            .native_stable
    );
    assert!(
        !instrument::instrument_with(&wasm, Counter::Global)
            .unwrap()
            .native_stable
    );
    for replica in [Replica::R2026_07, Replica::R2026_05] {
        let native = trace(&wasm, Counter::Local, replica);
        let host = trace(&wasm, Counter::Global, replica);
        for (i, (n, h)) in native.iter().zip(&host).enumerate() {
            assert_eq!(n, h, "{replica:?}, message {i} ({})", MESSAGES[i].0);
        }
        let reply = |i: usize| native[i].0.clone().unwrap();
        // rw: bytes 4996..5020 = 4 zeros, the first write's low half, the second write.
        let rw = reply(1);
        assert_eq!(&rw[..4], &[0; 4]);
        assert_eq!(&rw[4..8], &0x1122334455667788u64.to_le_bytes()[..4]);
        assert_eq!(&rw[8..16], &0x0102030405060708u64.to_le_bytes());
        assert_eq!(&rw[16..24], &[0; 8]);
        assert_eq!(&rw[24..32], &rw[4..12]);
        assert_eq!(&rw[32..36], &rw[8..12]);
        // The trapped message left nothing behind.
        assert!(native[3]
            .0
            .as_ref()
            .unwrap_err()
            .contains("called `ic0.trap`"));
        assert_eq!(reply(2), reply(4));
        // far: the two writes across the cache's end, read back both ways.
        let far = reply(6);
        assert_eq!(&far[4..12], &0x0a0b0c0d0e0f1011u64.to_le_bytes());
        assert_eq!(&far[12..20], &0x0a0b0c0d0e0f1011u64.to_le_bytes());
        assert_eq!(&far[32..36], &far[..4]);
        assert_eq!(reply(7), far);
        assert!(native[8].0.as_ref().unwrap_err().contains("out of bounds"));
        assert!(native[9].0.as_ref().unwrap_err().contains("out of bounds"));
    }
}

/// The replica accepts a module that exports a name with icbench's own prefix: icbench
/// instruments it without native accesses, and the export stays the module's (a mutable
/// global the module exports is rolled back by a trap like any other).
#[test]
fn a_module_exporting_icbench_names_keeps_them_and_runs_without_native_accesses() {
    let wasm = wat::parse_str(format!(
        r#"(module {REPLY_IMPORTS} {STABLE64_IMPORTS}
          (memory 1)
          (global $g (export "__icbench stable bytes") (mut i64) (i64.const 7))
          (func (export "canister_init") (drop (call $sgrow (i64.const 1))))
          (func $inc
            (global.set $g (i64.add (global.get $g) (i64.const 1)))
            (call $sread (i64.const 8) (i64.const 0) (i64.const 8)))
          (func (export "canister_update inc")
            (call $inc)
            (i64.store (i32.const 0) (global.get $g))
            (call $append (i32.const 0) (i32.const 8))
            (call $reply))
          (func (export "canister_update inc_trap")
            (call $inc)
            (call $trap (i32.const 0) (i32.const 0))))"#
    ))
    .unwrap();
    let instrumented = instrument::instrument_with(&wasm, Counter::Local).unwrap();
    assert!(!instrumented.native_stable);
    let mut engine = EmbeddedEngine::default().with_counter(Counter::Local);
    let (id, install) = engine.install(&wasm, &[]).unwrap();
    install.result.unwrap();
    let value = |engine: &mut EmbeddedEngine, method: &str| {
        let reply = engine.update(id, method, &[]).unwrap().result.unwrap();
        u64::from_le_bytes(reply.try_into().unwrap())
    };
    assert_eq!(value(&mut engine, "inc"), 8);
    let trapped = engine.update(id, "inc_trap", &[]).unwrap().result;
    assert!(trapped.unwrap_err().message.contains("called `ic0.trap`"));
    assert_eq!(value(&mut engine, "inc"), 9);
}

/// A canister that runs a list of stable memory operations given as its argument: 32 bytes
/// each, `kind, a, b, c` as little-endian u64s. 0: `stable64_read(c, a, b)`; 1:
/// `stable64_write(a, c, b)`; 2: append `performance_counter(0)` to the reply; 3: trap; 4:
/// store `a` at heap address `c`. The reply ends with a checksum of the heap's first
/// 128 KiB (where reads land and writes come from).
const OPS_CANISTER: &str = r#"(module
  (import "ic0" "msg_arg_data_size" (func $arg_size (result i32)))
  (import "ic0" "msg_arg_data_copy" (func $arg_copy (param i32 i32 i32)))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "trap" (func $trap (param i32 i32)))
  (import "ic0" "performance_counter" (func $counter (param i32) (result i64)))
  (import "ic0" "stable64_grow" (func $sgrow (param i64) (result i64)))
  (import "ic0" "stable64_write" (func $swrite (param i64 i64 i64)))
  (import "ic0" "stable64_read" (func $sread (param i64 i64 i64)))
  (memory 8)
  (func (export "canister_init") (drop (call $sgrow (i64.const 2))))
  (func $run (local $p i32) (local $end i32) (local $kind i64) (local $a i64) (local $b i64)
             (local $c i64) (local $sum i64) (local $i i32)
    (local.set $p (i32.const 262144))
    (local.set $end (i32.add (local.get $p) (call $arg_size)))
    (call $arg_copy (local.get $p) (i32.const 0) (call $arg_size))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (local.set $kind (i64.load (local.get $p)))
      (local.set $a (i64.load offset=8 (local.get $p)))
      (local.set $b (i64.load offset=16 (local.get $p)))
      (local.set $c (i64.load offset=24 (local.get $p)))
      (if (i64.eq (local.get $kind) (i64.const 0))
        (then (call $sread (local.get $c) (local.get $a) (local.get $b))))
      (if (i64.eq (local.get $kind) (i64.const 1))
        (then (call $swrite (local.get $a) (local.get $c) (local.get $b))))
      (if (i64.eq (local.get $kind) (i64.const 2))
        (then
          (i64.store (i32.const 200000) (call $counter (i32.const 0)))
          (call $append (i32.const 200000) (i32.const 8))))
      (if (i64.eq (local.get $kind) (i64.const 3))
        (then (call $trap (i32.const 0) (i32.const 0))))
      (if (i64.eq (local.get $kind) (i64.const 4))
        (then (i64.store (i32.wrap_i64 (local.get $c)) (local.get $a))))
      (local.set $p (i32.add (local.get $p) (i32.const 32)))
      (br $next)))
    (block $summed (loop $byte
      (br_if $summed (i32.ge_u (local.get $i) (i32.const 131072)))
      (local.set $sum (i64.add (i64.mul (local.get $sum) (i64.const 31))
                               (i64.load8_u (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $byte)))
    (i64.store (i32.const 200000) (local.get $sum))
    (call $append (i32.const 200000) (i32.const 8))
    (call $reply))
  (func (export "canister_update ops") (call $run))
  (func (export "canister_query qops") (call $run)))"#;

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A message's operations: most of them small reads and writes on a few stable pages (so
/// that pages reach the cache and native accesses mix with the host's), some across page
/// boundaries, some longer than a native access takes, and rarely one that fails.
fn ops(state: &mut u64) -> Vec<u8> {
    let mut next = |n: u64| splitmix64(state) % n;
    let count = 50 + next(400);
    let mut arg = Vec::new();
    for _ in 0..count {
        let roll = next(1000);
        let value = next(u64::MAX);
        let size = match next(10) {
            0..=3 => 8,
            4 => 4,
            5 => 1 + next(64),
            6 => next(9000),
            7 => 65536 + next(3) * 2 - 2,
            _ => 1 + next(4096),
        };
        // A few pages, and the boundaries between them.
        let offset = match next(4) {
            0 => 4096 * next(4) + 4096 - next(16),
            _ => next(4 * 4096),
        };
        let heap = next(131072 - 70000);
        let op: [u64; 4] = match roll {
            0 => [3, 0, 0, 0],
            1 => [0, 131072 - next(8), 8, heap],
            2 => [1, offset, 8, 524288 - next(8)],
            3..=40 => [2, 0, 0, 0],
            41..=120 => [4, value, 0, next(131072 - 8)],
            _ if roll % 2 == 0 => [0, offset, size, heap],
            _ => [1, offset, size, heap],
        };
        for v in op {
            arg.extend_from_slice(&v.to_le_bytes());
        }
    }
    arg
}

/// Random operation lists through both paths: every reply (with the counter read at points
/// in the middle of the message), error and count must agree with the host functions'.
#[test]
fn random_stable_operations_give_the_host_functions_results() {
    let wasm = wat::parse_str(OPS_CANISTER).unwrap();
    assert!(
        instrument::instrument_with(&wasm, Counter::Local)
            .unwrap()
            .native_stable
    );
    for replica in [Replica::R2026_07, Replica::R2026_05] {
        let mut engines: Vec<_> = [Counter::Local, Counter::Global]
            .into_iter()
            .map(|counter| {
                let mut engine = EmbeddedEngine::default()
                    .with_replica(replica)
                    .with_counter(counter);
                let (id, install) = engine.install(&wasm, &[]).unwrap();
                install.result.unwrap();
                (engine, id)
            })
            .collect();
        let mut state = 29;
        let (mut replies, mut errors) = (0, 0);
        for message in 0..120 {
            let arg = ops(&mut state);
            let query = message % 5 == 4;
            let outcomes: Vec<_> = engines
                .iter_mut()
                .map(|(engine, id)| {
                    let out = if query {
                        engine.query(*id, "qops", &arg).unwrap()
                    } else {
                        engine.update(*id, "ops", &arg).unwrap()
                    };
                    (out.result.map_err(|r| r.message), out.report.instructions)
                })
                .collect();
            assert_eq!(outcomes[0], outcomes[1], "{replica:?}, message {message}");
            match &outcomes[0].0 {
                Ok(_) => replies += 1,
                Err(_) => errors += 1,
            }
        }
        // Both kinds of ending occur, so that both were compared.
        assert!(
            replies > 40 && errors > 10,
            "{replies} replies, {errors} errors"
        );
    }
}
