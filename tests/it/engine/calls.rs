//! Calls a canister makes (to itself: what a Motoko `await` on its own async function is),
//! delivered by the engine as a call tree: the callee's method, then the caller's reply or
//! reject callback from the module's table, and the update's answer from the callback.

use icbench::engine::embedded::{EmbeddedEngine, TreeKind};
use icbench::engine::{Engine, ErrorCode};

/// `go` calls its own `pong` (or `missing`, or `boom`, which traps) with the argument "hi",
/// its callbacks table entries 0 (reply: replies with the reply's bytes) and 1 (reject:
/// replies with the reject code as one byte), each closure's value 7 or 8 kept in global 1.
fn caller() -> Vec<u8> {
    wat::parse_str(
        r#"(module
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_arg_data_size" (func $arg_size (result i32)))
  (import "ic0" "msg_arg_data_copy" (func $arg_copy (param i32 i32 i32)))
  (import "ic0" "msg_reject_code" (func $reject_code (result i32)))
  (import "ic0" "canister_self_size" (func $self_size (result i32)))
  (import "ic0" "canister_self_copy" (func $self_copy (param i32 i32 i32)))
  (import "ic0" "call_new" (func $call_new (param i32 i32 i32 i32 i32 i32 i32 i32)))
  (import "ic0" "call_data_append" (func $call_append (param i32 i32)))
  (import "ic0" "call_perform" (func $perform (result i32)))
  (import "ic0" "trap" (func $trap (param i32 i32)))
  (memory 1)
  (global $env (mut i32) (i32.const 0))
  (table 2 funcref)
  (elem (i32.const 0) $on_reply $on_reject)
  (data (i32.const 100) "pongmissingboomhi")
  (func $call (param $name i32) (param $len i32)
    (call $self_copy (i32.const 0) (i32.const 0) (call $self_size))
    (call $call_new (i32.const 0) (call $self_size) (local.get $name) (local.get $len)
      (i32.const 0) (i32.const 7) (i32.const 1) (i32.const 8))
    (call $call_append (i32.const 115) (i32.const 2))
    (drop (call $perform)))
  (func (export "canister_update go") (call $call (i32.const 100) (i32.const 4)))
  (func (export "canister_update go_missing") (call $call (i32.const 104) (i32.const 7)))
  (func (export "canister_update go_boom") (call $call (i32.const 111) (i32.const 4)))
  (func (export "canister_update pong")
    (call $arg_copy (i32.const 200) (i32.const 0) (call $arg_size))
    (call $append (i32.const 200) (call $arg_size))
    (call $reply))
  (func (export "canister_update boom") (call $trap (i32.const 111) (i32.const 4)))
  (func $on_reply (param $env i32)
    (global.set $env (local.get $env))
    (call $arg_copy (i32.const 300) (i32.const 0) (call $arg_size))
    (call $append (i32.const 300) (call $arg_size))
    (call $reply))
  (func $on_reject (param $env i32)
    (global.set $env (local.get $env))
    (i32.store8 (i32.const 400) (call $reject_code))
    (call $append (i32.const 400) (i32.const 1))
    (call $reply)))"#,
    )
    .unwrap()
}

#[test]
fn a_call_to_itself_runs_the_callee_then_the_reply_callback() {
    let mut e = EmbeddedEngine::default();
    let (id, install) = e.install(&caller(), &[]).unwrap();
    install.result.unwrap();
    let out = e.update(id, "go", &[]).unwrap();
    // The callee's reply, answered to the ingress by the reply callback.
    assert_eq!(out.result.unwrap(), b"hi");
    let tree = e.last_call_tree();
    let kinds: Vec<&TreeKind> = tree.iter().map(|m| &m.kind).collect();
    assert_eq!(
        kinds,
        [
            &TreeKind::Method("go".into()),
            &TreeKind::Method("pong".into()),
            &TreeKind::ReplyCallback
        ]
    );
    assert!(tree.iter().all(|m| m.trap.is_none()));
    // Each message accesses and writes heap page 0: 160,000 under the memory tracker. go:
    // canister_self_size twice (500 each), canister_self_copy (500 + 10 bytes), call_new
    // (1,500 + 10 + 4 bytes), call_data_append (500 + 50 per byte, 2 bytes) and
    // call_perform (5,000): 8,624 in fees, and 51 Wasm instructions. pong: msg_arg_data_size
    // twice, msg_arg_data_copy (500 + 2), msg_reply_data_append (500 + 100), msg_reply:
    // 2,602, and 29 instructions; the reply callback the same fees and 32.
    let instructions: Vec<u64> = tree.iter().map(|m| m.report.instructions).collect();
    assert_eq!(instructions, [168_675, 162_631, 162_634]);
}

#[test]
fn a_reject_runs_the_reject_callback_with_its_code() {
    let mut e = EmbeddedEngine::default();
    let (id, _) = e.install(&caller(), &[]).unwrap();
    // No such method: IC0536, a canister error (reject code 5), as the replica's.
    let missing = e.update(id, "go_missing", &[]).unwrap().result.unwrap();
    assert_eq!(
        missing,
        [ErrorCode::CanisterMethodNotFound.reject_code() as u8]
    );
    // A trap in the callee: a canister error, 5.
    let boom = e.update(id, "go_boom", &[]).unwrap().result.unwrap();
    assert_eq!(boom, [5]);
    let kinds: Vec<&TreeKind> = e.last_call_tree().iter().map(|m| &m.kind).collect();
    assert_eq!(
        kinds,
        [
            &TreeKind::Method("go_boom".into()),
            &TreeKind::Method("boom".into()),
            &TreeKind::RejectCallback
        ]
    );
    assert!(e.last_call_tree()[1].trap.is_some());
}

#[test]
fn an_update_without_calls_is_one_message() {
    let mut e = EmbeddedEngine::default();
    let (id, _) = e.install(&caller(), &[]).unwrap();
    let out = e.update(id, "pong", b"x").unwrap();
    assert_eq!(out.result.unwrap(), b"x");
    assert_eq!(e.last_call_tree().len(), 1);
}
