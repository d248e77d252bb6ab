//! The global timer and the heartbeat: `ic0.global_timer_set` returns the deadline it
//! replaces (0 for none) and 0 cancels; a round ([`Engine::tick`]) at or past the deadline
//! runs `canister_global_timer` once, as an update with nothing to reply to, and then
//! `canister_heartbeat`; a timer that traps stays cleared. Counts are worked out by hand as
//! in `tests/it/engine.rs`.

use std::time::Duration;

use candid::Principal;
use icbench::engine::cost::Replica;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::{CanisterTask, Engine, ErrorCode};

use crate::support::assert_rejected;
use crate::support::wat::REPLY_IMPORTS;

const TIMER_IMPORTS: &str = r#"
  (import "ic0" "global_timer_set" (func $timer (param i64) (result i64)))
  (import "ic0" "time" (func $time (result i64)))
  (import "ic0" "msg_arg_data_copy" (func $argcopy (param i32 i32 i32)))
"#;

/// `set` sets the timer to its argument (8 bytes) and replies the deadline it replaced;
/// `state` replies the timer's runs (heap 16), the time of its last run (24) and the
/// heartbeats (32); `q_set` is a query that tries to set the timer.
const METHODS: &str = r#"
  (func (export "canister_update set")
    (call $argcopy (i32.const 0) (i32.const 0) (i32.const 8))
    (i64.store (i32.const 8) (call $timer (i64.load (i32.const 0))))
    (call $append (i32.const 8) (i32.const 8))
    (call $reply))
  (func (export "canister_query state")
    (call $append (i32.const 16) (i32.const 24))
    (call $reply))
  (func (export "canister_query q_set")
    (drop (call $timer (i64.const 5)))
    (call $reply))
"#;

/// Counts its runs and notes the time it ran at.
const TIMER: &str = r#"
  (func (export "canister_global_timer")
    (i64.store (i32.const 16) (i64.add (i64.load (i32.const 16)) (i64.const 1)))
    (i64.store (i32.const 24) (call $time)))
"#;

const HEARTBEAT: &str = r#"
  (func (export "canister_heartbeat")
    (i64.store (i32.const 32) (i64.add (i64.load (i32.const 32)) (i64.const 1))))
"#;

/// The timer's instructions: entry 1 + 3 consts, load, add, store 6 + const, call, store 7,
/// and `time` 500.
const TIMER_METERED: u64 = 1 + 6 + 7 + 500;
/// The heartbeat's: entry 1 + 3 consts, load, add, store 6.
const HEARTBEAT_METERED: u64 = 1 + 6;

fn canister(tasks: &str) -> Vec<u8> {
    wat::parse_str(format!(
        "(module {REPLY_IMPORTS} {TIMER_IMPORTS} (memory 1) {METHODS} {tasks})"
    ))
    .expect("test WAT is valid")
}

fn installed(replica: Replica, wasm: &[u8]) -> (EmbeddedEngine, Principal) {
    let mut e = EmbeddedEngine::default().with_replica(replica);
    let (id, install) = e.install(wasm, &[]).unwrap();
    install.result.unwrap();
    (e, id)
}

/// Sets the timer to `deadline`; the deadline it replaced.
fn set(e: &mut EmbeddedEngine, id: Principal, deadline: u64) -> u64 {
    let reply = e
        .update(id, "set", &deadline.to_le_bytes())
        .unwrap()
        .result
        .unwrap();
    u64::from_le_bytes(reply.try_into().unwrap())
}

/// The timer's runs, the time of its last run and the heartbeats.
fn state(e: &mut EmbeddedEngine, id: Principal) -> [u64; 3] {
    let reply = e.query(id, "state", &[]).unwrap().result.unwrap();
    let n = |i: usize| u64::from_le_bytes(reply[i * 8..i * 8 + 8].try_into().unwrap());
    [n(0), n(1), n(2)]
}

fn tasks(ran: &[icbench::engine::TaskOutcome]) -> Vec<CanisterTask> {
    ran.iter().map(|t| t.task).collect()
}

#[test]
fn global_timer_set_returns_the_deadline_it_replaces_and_zero_cancels() {
    let (mut e, id) = installed(Replica::NEWEST, &canister(TIMER));
    assert_eq!(e.global_timer(id), Some(0));
    assert_eq!(set(&mut e, id, 1_000), 0);
    assert_eq!(set(&mut e, id, 2_000), 1_000);
    assert_eq!(e.global_timer(id), Some(2_000));
    // 0 cancels: the rounds after the deadline run nothing.
    assert_eq!(set(&mut e, id, 0), 2_000);
    assert_eq!(e.global_timer(id), Some(0));
    e.advance_time(Duration::from_secs(60)).unwrap();
    assert!(e.tick().unwrap().is_empty());
    assert_eq!(state(&mut e, id)[0], 0);
}

#[test]
fn the_timer_runs_once_in_the_first_round_at_its_deadline_as_a_message_of_its_own() {
    for (replica, pages) in [
        // The timer and the heartbeat touch and write heap page 0: two tracker charges,
        // or 1,000 for one 4 KiB page written before the tracker.
        (Replica::R2026_07, 2 * 80_000),
        (Replica::R2026_05, 1_000),
    ] {
        let (mut e, id) = installed(replica, &canister(&format!("{TIMER} {HEARTBEAT}")));
        let t = e.time_ns();
        // `set` runs at t + 1; the next round is at t + 2.
        assert_eq!(set(&mut e, id, t + 3), 0);
        let ran = e.tick().unwrap();
        assert_eq!(tasks(&ran), [CanisterTask::Heartbeat], "{}", replica.name);
        assert_eq!(ran[0].canister, id);
        assert_eq!(ran[0].outcome.result, Ok(Vec::new()));
        assert_eq!(
            ran[0].outcome.report.instructions,
            HEARTBEAT_METERED + pages
        );
        // The round at t + 3 reaches the deadline: the timer, then the heartbeat.
        let ran = e.tick().unwrap();
        assert_eq!(
            tasks(&ran),
            [CanisterTask::GlobalTimer, CanisterTask::Heartbeat],
            "{}",
            replica.name
        );
        let timer = &ran[0].outcome;
        assert_eq!(timer.result, Ok(Vec::new()));
        assert_eq!(timer.report.instructions, TIMER_METERED + pages);
        assert_eq!(timer.report.heap_dirty_pages, 1);
        assert_eq!(e.global_timer(id), Some(0));
        // Runs 1, at the round's time (both tasks saw it); heartbeats 2.
        assert_eq!(state(&mut e, id), [1, t + 3, 2]);
        // One run per deadline: later rounds run the heartbeat only.
        e.advance_time(Duration::from_secs(3600)).unwrap();
        assert_eq!(tasks(&e.tick().unwrap()), [CanisterTask::Heartbeat]);
        assert_eq!(state(&mut e, id)[0], 1);
    }
}

#[test]
fn advancing_the_clock_reaches_the_deadline() {
    let (mut e, id) = installed(Replica::NEWEST, &canister(TIMER));
    let t = e.time_ns();
    set(&mut e, id, t + 1_000_000);
    // Rounds before the deadline run nothing (no heartbeat is exported).
    assert!(e.tick().unwrap().is_empty());
    // After the tick the clock is at t + 2; 999,997 ns more and the next round is at the
    // deadline.
    e.advance_time(Duration::from_nanos(999_997)).unwrap();
    assert_eq!(e.time_ns(), t + 999_999);
    let ran = e.tick().unwrap();
    assert_eq!(tasks(&ran), [CanisterTask::GlobalTimer]);
    assert_eq!(state(&mut e, id)[..2], [1, t + 1_000_000]);
    // A clock past the year 2554 is refused.
    let err = e.advance_time(Duration::from_secs(u64::MAX)).unwrap_err();
    assert!(err.to_string().contains("passes the year 2554"), "{err}");
}

#[test]
fn a_restore_brings_back_the_snapshots_clock() {
    // What a restored state's messages see must not depend on what the engine ran since:
    // a pool's worker restores states in whatever order its tasks come.
    let (mut e, id) = installed(Replica::NEWEST, &canister(TIMER));
    let t = e.time_ns();
    set(&mut e, id, t + 1_000);
    let snap = e.snapshot(id).unwrap();
    let run_from_snapshot = |e: &mut EmbeddedEngine| {
        e.restore(id, snap).unwrap();
        assert_eq!(e.time_ns(), t + 1);
        e.advance_time(Duration::from_nanos(998)).unwrap();
        assert_eq!(tasks(&e.tick().unwrap()), [CanisterTask::GlobalTimer]);
        state(e, id)
    };
    let first = run_from_snapshot(&mut e);
    assert_eq!(first[..2], [1, t + 1_000]);
    // Time passes and messages run; the state restored runs its timer as before.
    e.advance_time(Duration::from_secs(3_600)).unwrap();
    set(&mut e, id, 5);
    assert_eq!(run_from_snapshot(&mut e), first);
}

#[test]
fn a_timer_that_re_arms_runs_again_at_its_new_deadline() {
    // Sets the next deadline 10 ns after the time it runs at: a periodic timer.
    let periodic = r#"
      (func (export "canister_global_timer")
        (i64.store (i32.const 16) (i64.add (i64.load (i32.const 16)) (i64.const 1)))
        (drop (call $timer (i64.add (call $time) (i64.const 10)))))
    "#;
    let (mut e, id) = installed(Replica::NEWEST, &canister(periodic));
    let t = e.time_ns();
    set(&mut e, id, t + 2);
    assert_eq!(tasks(&e.tick().unwrap()), [CanisterTask::GlobalTimer]);
    assert_eq!(e.global_timer(id), Some(t + 12));
    // The rounds at t + 3 to t + 11 run nothing; the one at t + 12 runs it again.
    for _ in 0..9 {
        assert!(e.tick().unwrap().is_empty());
    }
    assert_eq!(tasks(&e.tick().unwrap()), [CanisterTask::GlobalTimer]);
    assert_eq!(e.global_timer(id), Some(t + 22));
    assert_eq!(state(&mut e, id)[0], 2);
}

#[test]
fn a_timer_that_traps_stays_cleared_and_what_it_set_is_rolled_back() {
    let trapping = r#"
      (func (export "canister_global_timer")
        (i64.store (i32.const 16) (i64.const 99))
        (drop (call $timer (i64.const 42)))
        (call $trap (i32.const 0) (i32.const 0)))
    "#;
    let (mut e, id) = installed(Replica::NEWEST, &canister(trapping));
    let t = e.time_ns();
    set(&mut e, id, t + 2);
    let ran = e.tick().unwrap();
    assert_eq!(tasks(&ran), [CanisterTask::GlobalTimer]);
    let reject = ran[0].outcome.result.clone().unwrap_err();
    assert_eq!(reject.error_code, ErrorCode::CanisterCalledTrap);
    // Neither its heap write nor its timer stayed: the timer is cleared, not re-armed.
    assert_eq!(e.global_timer(id), Some(0));
    assert_eq!(state(&mut e, id)[0], 0);
    e.advance_time(Duration::from_secs(1)).unwrap();
    assert!(e.tick().unwrap().is_empty());
}

#[test]
fn a_deadline_without_a_timer_method_stays_set_and_an_upgrade_clears_it() {
    let (mut e, id) = installed(Replica::NEWEST, &canister(""));
    let t = e.time_ns();
    set(&mut e, id, t + 2);
    // The module exports no `canister_global_timer`: the round adds no task, and the
    // timer stays as it was.
    assert!(e.tick().unwrap().is_empty());
    assert_eq!(e.global_timer(id), Some(t + 2));
    // A new module starts without a timer (install_code deactivates it).
    let out = e.upgrade(id, &canister(TIMER), &[]).unwrap();
    out.result.unwrap();
    assert_eq!(e.global_timer(id), Some(0));
    assert!(e.tick().unwrap().is_empty());
}

#[test]
fn queries_cannot_set_the_timer_and_tasks_cannot_reply() {
    let replying = r#"(func (export "canister_heartbeat") (call $reply))"#;
    let (mut e, id) = installed(Replica::NEWEST, &canister(replying));
    let err = e.query(id, "q_set", &[]).unwrap().result.unwrap_err();
    assert_rejected(
        &err,
        ErrorCode::CanisterContractViolation,
        "\"ic0.global_timer_set\" cannot be executed in query mode",
    );
    // An update call of a query method runs it replicated: still a query.
    let err = e.update(id, "q_set", &[]).unwrap().result.unwrap_err();
    assert!(
        err.message
            .contains("\"ic0.global_timer_set\" cannot be executed in replicated query mode"),
        "{}",
        err.message
    );
    assert_eq!(e.global_timer(id), Some(0));
    let ran = e.tick().unwrap();
    let err = ran[0].outcome.result.clone().unwrap_err();
    assert!(
        err.message
            .contains("\"ic0.msg_reply\" cannot be executed in heartbeat mode"),
        "{}",
        err.message
    );
}
