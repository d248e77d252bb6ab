//! Instruction profiles: every instruction of a message attributed to the call stack that
//! spent it, with per-function counts worked out by hand from the replica's cost table
//! (`shared/research/ic-metering.md`: a segment is charged in the function that contains
//! it; `call` 5, `return_call` 3, constants and locals 1, `end` 0, ...), System API fees as
//! `ic0.NAME` frames and the heap dirty-page charge as a frame of its own.

use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::instrument::Counter;
use icbench::engine::{CallOutcome, Engine, InstallStage, Profile, Profiling};

const COMMON: &str = r#"
  (import "ic0" "performance_counter" (func $pc (param i32) (result i64)))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "trap" (func $trap (param i32 i32)))
  (memory 1)
  (data (i32.const 100) "boom")
  ;; 1 (entry) + local.get 1 + local.get 1 + i32.add 1 = 4 per call.
  (func $add (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
  ;; entry 5 (1 + local.get + i64.eqz + if 2); then-arm 1; else-arm 10
  ;; (local.get, local.get, i64.const, i64.sub, call 5, i64.mul): fact(0) 6, fact(n>0) 15.
  (func $fact (param i64) (result i64)
    (if (result i64) (i64.eqz (local.get 0))
      (then (i64.const 1))
      (else (i64.mul (local.get 0) (call $fact (i64.sub (local.get 0) (i64.const 1)))))))
"#;

fn canister(body: &str) -> Vec<u8> {
    wat::parse_str(format!("(module {COMMON} {body})")).expect("test WAT is valid")
}

fn engine(counter: Counter) -> EmbeddedEngine {
    let mut e = EmbeddedEngine::default().with_counter(counter);
    e.set_profiling(Profiling::Messages).unwrap();
    e
}

fn stacks(profile: &Profile) -> Vec<(String, u64)> {
    profile
        .stacks()
        .into_iter()
        .map(|(stack, n)| (stack.join(";"), n))
        .collect()
}

fn expect(out: &CallOutcome, want: &[(&str, u64)]) {
    let profile = out.report.profile.as_ref().expect("a profiled message has a profile");
    let want: Vec<(String, u64)> = want.iter().map(|(s, n)| (s.to_string(), *n)).collect();
    assert_eq!(stacks(profile), want);
    assert_eq!(
        profile.total(),
        out.report.instructions,
        "the profile explains the whole charge"
    );
}

/// Runs `method` of `wasm` (an update unless `query`) with both counter placements and
/// checks the profile; both must give the same.
fn check(wasm: &[u8], method: &str, query: bool, want: &[(&str, u64)]) -> CallOutcome {
    let mut outs = Vec::new();
    for counter in [Counter::Local, Counter::Global] {
        let mut e = engine(counter);
        let (id, install) = e.install(wasm, &[]).unwrap();
        install.result.unwrap();
        let out = if query {
            e.query(id, method, &[]).unwrap()
        } else {
            e.update(id, method, &[]).unwrap()
        };
        expect(&out, want);
        outs.push(out);
    }
    outs.pop().unwrap()
}

const WORK: &str = r#"
  ;; One segment: 1 + 3 consts + call 5 + store 1 + 2 consts + call 5 + drop 1
  ;; + 2 consts + call 5 + call 5 = 30.
  (func $work (export "canister_update work")
    (i32.store (i32.const 0) (call $add (i32.const 1) (i32.const 2)))
    (drop (call $add (i32.const 3) (i32.const 4)))
    (call $append (i32.const 0) (i32.const 4))
    (call $reply))
"#;

#[test]
fn each_function_its_own_operators_each_fee_under_its_caller_and_the_dirty_pages() {
    let out = check(
        &canister(WORK),
        "work",
        false,
        &[
            // One 4 KiB page written (i32.store at 0): 1,000 after the message.
            ("[heap dirty pages]", 1_000),
            ("work", 30),
            ("work;add", 2 * 4),
            ("work;ic0.msg_reply", 500),
            // 500 + 50 per byte.
            ("work;ic0.msg_reply_data_append", 500 + 50 * 4),
        ],
    );
    assert_eq!(out.report.instructions, 2_238);
}

#[test]
fn a_query_has_no_dirty_page_frame() {
    let wasm = canister(&WORK.replace("canister_update work", "canister_query work"));
    let out = check(
        &wasm,
        "work",
        true,
        &[
            ("work", 30),
            ("work;add", 8),
            ("work;ic0.msg_reply", 500),
            ("work;ic0.msg_reply_data_append", 700),
        ],
    );
    assert_eq!(out.report.instructions, 1_238);
}

#[test]
fn recursion_nests_one_frame_per_call() {
    // 1 + i32.const + i64.const + call 5 + i64.store + 2 consts + call 5 + call 5 = 21.
    let wasm = canister(
        r#"(func $rec (export "canister_update rec")
             (i64.store (i32.const 0) (call $fact (i64.const 3)))
             (call $append (i32.const 0) (i32.const 8))
             (call $reply))"#,
    );
    check(
        &wasm,
        "rec",
        false,
        &[
            ("[heap dirty pages]", 1_000),
            ("rec", 21),
            ("rec;fact", 15),
            ("rec;fact;fact", 15),
            ("rec;fact;fact;fact", 15),
            ("rec;fact;fact;fact;fact", 6),
            ("rec;ic0.msg_reply", 500),
            ("rec;ic0.msg_reply_data_append", 500 + 50 * 8),
        ],
    );
}

#[test]
fn a_trap_charges_up_to_the_trap_to_the_frames_open_then() {
    // t: 1 + call 5 = 6 (end 0); boom: 1 + 2 consts + call 5 = 8; ic0.trap: 500 + 1 per
    // byte, plus canister logging's 2 per byte kept and 50 per byte sent (4 bytes).
    let wasm = canister(
        r#"(func $boom (call $trap (i32.const 100) (i32.const 4)))
           (func $t (export "canister_update t") (call $boom))"#,
    );
    let out = check(
        &wasm,
        "t",
        false,
        &[("t", 6), ("t;boom", 8), ("t;boom;ic0.trap", 500 + 4 + 2 * 4 + 50 * 4)],
    );
    assert!(out.result.is_err());

    // A Wasm trap in a callee: u is 1 + unreachable 1.
    let wasm = canister(
        r#"(func $u (unreachable))
           (func $t (export "canister_update t") (call $u))"#,
    );
    let out = check(&wasm, "t", false, &[("t", 6), ("t;u", 2)]);
    assert!(out.result.is_err());
}

#[test]
fn a_tail_call_replaces_the_caller_on_the_stack() {
    // tail: 1 + 2 consts + return_call 3 = 6; top: 1 + call 5 + drop 1 + 2 consts + call 5
    // + call 5 = 19 (the reply appends 0 bytes).
    let wasm = canister(
        r#"(func $tail (result i32) (return_call $add (i32.const 1) (i32.const 2)))
           (func $top (export "canister_update top")
             (drop (call $tail))
             (call $append (i32.const 0) (i32.const 0))
             (call $reply))"#,
    );
    check(
        &wasm,
        "top",
        false,
        &[
            ("top", 19),
            ("top;add", 4),
            ("top;ic0.msg_reply", 500),
            ("top;ic0.msg_reply_data_append", 500),
            ("top;tail", 6),
        ],
    );
}

#[test]
fn between_counter_reads_keeps_what_canbench_measures() {
    // One segment, charged at entry (before the first read): none of `b`'s own
    // operators fall between the reads. Between them: the second add (4) and the second
    // read's fee (200), which is the difference of the two readings.
    let wasm = canister(
        r#"(func $b (export "canister_query b")
             (drop (call $add (i32.const 1) (i32.const 2)))
             (i64.store (i32.const 0) (call $pc (i32.const 0)))
             (drop (call $add (i32.const 3) (i32.const 4)))
             (i64.store (i32.const 8) (call $pc (i32.const 0)))
             (drop (call $add (i32.const 5) (i32.const 6)))
             (call $append (i32.const 0) (i32.const 16))
             (call $reply))"#,
    );
    let mut e = EmbeddedEngine::default();
    e.set_profiling(Profiling::BetweenCounterReads).unwrap();
    let (id, _) = e.install(&wasm, &[]).unwrap();
    let out = e.query(id, "b", &[]).unwrap();
    let reply = out.result.clone().unwrap();
    let read = |i: usize| u64::from_le_bytes(reply[8 * i..8 * i + 8].try_into().unwrap());
    let profile = out.report.profile.as_ref().unwrap();
    assert_eq!(
        stacks(profile),
        [
            ("b;add".to_string(), 4),
            ("b;ic0.performance_counter".to_string(), 200)
        ]
    );
    assert_eq!(profile.total(), read(1) - read(0));
}

#[test]
fn profiling_moves_no_count() {
    let wasm = canister(WORK);
    for counter in [Counter::Local, Counter::Global] {
        let mut plain = EmbeddedEngine::default().with_counter(counter);
        let mut profiled = engine(counter);
        let (a, _) = plain.install(&wasm, &[]).unwrap();
        let (b, _) = profiled.install(&wasm, &[]).unwrap();
        let x = plain.update(a, "work", &[]).unwrap();
        let mut y = profiled.update(b, "work", &[]).unwrap();
        assert!(x.report.profile.is_none());
        assert!(y.report.profile.take().is_some());
        assert_eq!(x.report, y.report);
        assert_eq!(x.result, y.result);
        assert_eq!(plain.state_hash(a).unwrap(), profiled.state_hash(b).unwrap());
    }
}

#[test]
fn profiling_switches_on_and_off_at_the_next_restore() {
    let wasm = canister(WORK);
    let mut e = EmbeddedEngine::default();
    let (id, _) = e.install(&wasm, &[]).unwrap();
    let start = e.snapshot(id).unwrap();
    let off = e.update(id, "work", &[]).unwrap();
    assert!(off.report.profile.is_none());
    e.set_profiling(Profiling::Messages).unwrap();
    e.restore(id, start).unwrap();
    let on = e.update(id, "work", &[]).unwrap();
    assert_eq!(on.report.profile.as_ref().unwrap().total(), 2_238);
    e.set_profiling(Profiling::Off).unwrap();
    e.restore(id, start).unwrap();
    let again = e.update(id, "work", &[]).unwrap();
    assert!(again.report.profile.is_none());
    assert_eq!(again.report, off.report);
}

#[test]
fn an_upgrade_profile_has_its_compilation_and_each_hook_under_its_stage() {
    // Each hook: 1 + 2 consts + i32.store 1 = 4, and one dirty page.
    let wasm = canister(
        r#"(func $pre (export "canister_pre_upgrade") (i32.store (i32.const 0) (i32.const 1)))
           (func $post (export "canister_post_upgrade") (i32.store (i32.const 8) (i32.const 2)))"#,
    );
    let mut e = engine(Counter::Local);
    let (id, _) = e.install(&wasm, &[]).unwrap();
    let out = e.upgrade(id, &wasm, &[]).unwrap();
    out.result.as_ref().unwrap();
    let compile = out
        .report
        .stages
        .iter()
        .find(|(s, _)| *s == InstallStage::Compilation)
        .map(|(_, r)| r.instructions)
        .unwrap();
    assert!(compile > 0);
    expect(
        &out,
        &[
            ("[compilation]", compile),
            ("[post_upgrade];[heap dirty pages]", 1_000),
            ("[post_upgrade];post", 4),
            ("[pre_upgrade];[heap dirty pages]", 1_000),
            ("[pre_upgrade];pre", 4),
        ],
    );
    // The stages keep their counts and leave the profile to the whole call's.
    assert!(out.report.stages.iter().all(|(_, r)| r.profile.is_none()));
}

#[test]
fn unnamed_functions_are_named_by_index_and_rust_symbols_demangled() {
    // Function 6 (after the four imports, add and fact) has no name; the export's
    // function has a mangled Rust symbol.
    let wasm = canister(
        r#"(func (i32.store (i32.const 0) (i32.const 1)))
           (func $_ZN5bench4work17h0123456789abcdefE (export "canister_update w")
             (call 6)
             (call $append (i32.const 0) (i32.const 0))
             (call $reply))"#,
    );
    // unnamed: 1 + 2 consts + store = 4; w: 1 + call 5 + 2 consts + call 5 + call 5 = 18.
    check(
        &wasm,
        "w",
        false,
        &[
            ("[heap dirty pages]", 1_000),
            ("bench::work", 18),
            ("bench::work;func[6]", 4),
            ("bench::work;ic0.msg_reply", 500),
            ("bench::work;ic0.msg_reply_data_append", 500),
        ],
    );
}
