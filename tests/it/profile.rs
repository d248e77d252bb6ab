//! Instruction profiles: every instruction of a message attributed to the call stack that
//! spent it, with per-function counts worked out by hand from the replica's cost table
//! (`shared/research/ic-metering.md`: a segment is charged in the function that contains
//! it; `call` 5, `return_call` 3, constants and locals 1, `end` 0, ...), System API fees as
//! `ic0.NAME` frames and the page charges as frames of their own: the deterministic memory
//! tracker's under the frame that touched the page (the default vintage, `2026-07`), the
//! heap dirty-page charge after the message before it. The tests of the profile's structure
//! are worked out under the older rule ([`engine`]); those named for the tracker under the
//! newest ([`tracker_engine`]).

use icbench::engine::cost::{Replica, CREATE_EXECUTION_STATE_BASE_COST as BASE};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::instrument::Counter;
use icbench::engine::{CallOutcome, Engine, InstallStage, Profile, Profiling};

use crate::support::installed;
use crate::support::wat::REPLY_IMPORTS;

/// The memory and the helper functions of every canister here, after the imports.
const COMMON: &str = r#"
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
    wat::parse_str(format!("(module {REPLY_IMPORTS} {COMMON} {body})")).expect("test WAT is valid")
}

/// A profiling engine charging by the rules before the memory tracker (`2026-05`).
fn engine(counter: Counter) -> EmbeddedEngine {
    engine_of(Replica::R2026_05, counter)
}

/// A profiling engine charging by the memory tracker (`2026-07`).
fn tracker_engine(counter: Counter) -> EmbeddedEngine {
    engine_of(Replica::R2026_07, counter)
}

fn engine_of(replica: Replica, counter: Counter) -> EmbeddedEngine {
    let mut e = EmbeddedEngine::default()
        .with_counter(counter)
        .with_replica(replica);
    e.set_profiling(Profiling::Messages).unwrap();
    e
}

/// 16 OS pages x 5,000: the tracker's charge for a Wasm page's first access, and again for
/// its first write.
const PAGE: u64 = 80_000;

fn stacks(profile: &Profile) -> Vec<(String, u64)> {
    profile
        .stacks()
        .into_iter()
        .map(|(stack, n)| (stack.join(";"), n))
        .collect()
}

fn expect(out: &CallOutcome, want: &[(&str, u64)]) {
    let profile = out
        .report
        .profile
        .as_ref()
        .expect("a profiled message has a profile");
    let want: Vec<(String, u64)> = want.iter().map(|(s, n)| (s.to_string(), *n)).collect();
    assert_eq!(stacks(profile), want);
    assert_eq!(
        profile.total(),
        out.report.instructions,
        "the profile explains the whole charge"
    );
}

/// Query `b` of `wasm`, profiled between counter reads; it replies two counter readings,
/// and the second minus the first is what it measured.
fn between_reads(wasm: &[u8]) -> (CallOutcome, u64) {
    let mut e = EmbeddedEngine::default();
    e.set_profiling(Profiling::BetweenCounterReads).unwrap();
    let (id, _) = e.install(wasm, &[]).unwrap();
    let out = e.query(id, "b", &[]).unwrap();
    let reply = out.result.clone().unwrap();
    let read = |i: usize| u64::from_le_bytes(reply[8 * i..8 * i + 8].try_into().unwrap());
    let measured = read(1) - read(0);
    (out, measured)
}

/// Runs `method` of `wasm` (an update unless `query`) with both counter placements and
/// checks the profile; both must give the same.
fn check(wasm: &[u8], method: &str, query: bool, want: &[(&str, u64)]) -> CallOutcome {
    check_with(engine, wasm, method, query, want)
}

/// [`check`] under the memory tracker.
fn check_tracked(wasm: &[u8], method: &str, query: bool, want: &[(&str, u64)]) -> CallOutcome {
    check_with(tracker_engine, wasm, method, query, want)
}

fn check_with(
    engine: fn(Counter) -> EmbeddedEngine,
    wasm: &[u8],
    method: &str,
    query: bool,
    want: &[(&str, u64)],
) -> CallOutcome {
    let mut outs = Vec::new();
    for counter in [Counter::Local, Counter::Global] {
        let mut e = engine(counter);
        let (id, install) = e.install(wasm, &[]).unwrap();
        install.result.unwrap();
        let out = crate::support::send(&mut e, id, method, query);
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

/// [`WORK`], its `work` a query.
fn work_query() -> Vec<u8> {
    canister(&WORK.replace("canister_update work", "canister_query work"))
}

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
    let out = check(
        &work_query(),
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
fn the_memory_tracker_s_charges_go_under_the_function_that_touched_the_page() {
    // `work` stores to heap page 0: its first access and first write; the reply then reads
    // the page again, which is free.
    let out = check_tracked(
        &canister(WORK),
        "work",
        false,
        &[
            ("work", 30),
            ("work;[heap access]", PAGE),
            ("work;[heap write]", PAGE),
            ("work;add", 2 * 4),
            ("work;ic0.msg_reply", 500),
            ("work;ic0.msg_reply_data_append", 500 + 50 * 4),
        ],
    );
    assert_eq!(out.report.instructions, 1_238 + 2 * PAGE);
    // A query pays for the access only.
    let out = check_tracked(
        &work_query(),
        "work",
        true,
        &[
            ("work", 30),
            ("work;[heap access]", PAGE),
            ("work;add", 8),
            ("work;ic0.msg_reply", 500),
            ("work;ic0.msg_reply_data_append", 700),
        ],
    );
    assert_eq!(out.report.instructions, 1_238 + PAGE);
}

/// An update `t` that calls `boom`, which traps with the data segment's "boom".
const TRAP_IN_BOOM: &str = r#"
  (func $boom (call $trap (i32.const 100) (i32.const 4)))
  (func $t (export "canister_update t") (call $boom))
"#;

/// [`TRAP_IN_BOOM`]'s profile before any page charge. t: 1 + call 5 = 6 (end 0); boom: 1 + 2
/// consts + call 5 = 8; ic0.trap: 500 + 1 per byte, plus canister logging's 2 per byte kept
/// and 50 per byte sent (4 bytes).
const TRAP_IN_BOOM_STACKS: [(&str, u64); 3] = [
    ("t", 6),
    ("t;boom", 8),
    ("t;boom;ic0.trap", 500 + 4 + 2 * 4 + 50 * 4),
];

#[test]
fn pages_a_system_api_call_touches_go_under_its_frame() {
    // ic0.trap reads its message from heap page 0 (the data segment's "boom"); stable64_read,
    // twice, writes heap page 1 and reads stable page 0 (the first read of an untouched page
    // is the host's, the second the tracker's); stable64_write reads heap page 1 (already
    // accessed) and writes stable page 1.
    let wasm = canister(TRAP_IN_BOOM);
    check_tracked(
        &wasm,
        "t",
        false,
        &[
            &TRAP_IN_BOOM_STACKS[..],
            &[("t;boom;ic0.trap;[heap access]", PAGE)],
        ]
        .concat(),
    );
    let wasm = wat::parse_str(
        r#"(module
             (import "ic0" "msg_reply" (func $reply))
             (import "ic0" "stable64_grow" (func $sgrow (param i64) (result i64)))
             (import "ic0" "stable64_read" (func $sread (param i64 i64 i64)))
             (import "ic0" "stable64_write" (func $swrite (param i64 i64 i64)))
             (memory 2)
             (func $s (export "canister_update s")
               (drop (call $sgrow (i64.const 2)))
               (call $sread (i64.const 65536) (i64.const 0) (i64.const 8))
               (call $sread (i64.const 65536) (i64.const 0) (i64.const 8))
               (call $swrite (i64.const 65536) (i64.const 65536) (i64.const 8))
               (call $reply)))"#,
    )
    .unwrap();
    // s: 1 + [const, call, drop] 7 + 3 x [3 consts, call] 24 + call 5 = 37.
    check_tracked(
        &wasm,
        "s",
        false,
        &[
            ("s", 37),
            ("s;ic0.msg_reply", 500),
            ("s;ic0.stable64_grow", 100),
            ("s;ic0.stable64_read", 2 * 28),
            ("s;ic0.stable64_read;[heap access]", PAGE),
            ("s;ic0.stable64_read;[heap write]", PAGE),
            ("s;ic0.stable64_read;[stable access]", PAGE),
            ("s;ic0.stable64_write", 28),
            ("s;ic0.stable64_write;[stable access]", PAGE),
            ("s;ic0.stable64_write;[stable write]", PAGE),
        ],
    );
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
    let out = check(&canister(TRAP_IN_BOOM), "t", false, &TRAP_IN_BOOM_STACKS);
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
fn a_deep_recursion_profiles_in_a_tree_and_is_written_cut_at_a_depth() {
    // down(n): entry 5 (1 + local.get + i32.eqz + if 2), then-arm: return 1 (end 0 after
    // it is the if's); else-arm: local.get, i32.const, i32.sub, call 5 = 8; 13 per level
    // but the last, which is 5 + return 1 = 6.
    let wasm = canister(
        r#"(func $down (param i32)
             (if (i32.eqz (local.get 0)) (then (return)))
             (call $down (i32.sub (local.get 0) (i32.const 1))))
           (func $deep (export "canister_update deep")
             (call $down (i32.const 20000))
             (call $append (i32.const 0) (i32.const 0))
             (call $reply))"#,
    );
    let (mut e, id) = installed(engine(Counter::Local), &wasm);
    let out = e.update(id, "deep", &[]).unwrap();
    out.result.as_ref().unwrap();
    let profile = out.report.profile.as_ref().unwrap();
    assert_eq!(profile.total(), out.report.instructions);
    // deep: 1 + const + call 5 + 2 consts + call 5 + call 5 = 19.
    assert_eq!(profile.total(), 19 + 20_000 * 13 + 6 + 500 + 500);
    let stacks = profile.stacks();
    let cut = icbench::engine::profile::MAX_STACK_DEPTH;
    // deep and its two fees, `down` at every depth to the cut, and the rest below it.
    assert_eq!(stacks.len(), 3 + (cut - 1) + 1);
    let (stack, n) = stacks
        .iter()
        .find(|(s, _)| s.last() == Some(&icbench::engine::profile::DEEPER))
        .unwrap();
    assert_eq!(stack.len(), cut + 1);
    // down at depths cut+1 to 20,002 (depth 2 is down(20000)): 13 each, the last 6.
    assert_eq!(*n, (20_002 - cut as u64 - 1) * 13 + 6);
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
    let (out, measured) = between_reads(&wasm);
    let profile = out.report.profile.as_ref().unwrap();
    // The memory tracker charges during the message, so the reads see it: the first
    // reading's store is the query's first access to heap page 0, charged by the second
    // read (and the second store touches nothing new).
    assert_eq!(
        stacks(profile),
        [
            ("b;[heap access]".to_string(), PAGE),
            ("b;add".to_string(), 4),
            ("b;ic0.performance_counter".to_string(), 200)
        ]
    );
    assert_eq!(profile.total(), measured);
    assert_eq!(measured, PAGE + 204);
}

#[test]
fn profiling_moves_no_count() {
    let wasm = canister(WORK);
    let runs = [Counter::Local, Counter::Global]
        .into_iter()
        .flat_map(|c| [(c, Replica::R2026_05), (c, Replica::R2026_07)]);
    for (counter, replica) in runs {
        let mut plain = EmbeddedEngine::default()
            .with_counter(counter)
            .with_replica(replica);
        let mut profiled = engine_of(replica, counter);
        let (a, _) = plain.install(&wasm, &[]).unwrap();
        let (b, _) = profiled.install(&wasm, &[]).unwrap();
        let x = plain.update(a, "work", &[]).unwrap();
        let mut y = profiled.update(b, "work", &[]).unwrap();
        assert!(x.report.profile.is_none());
        assert!(y.report.profile.take().is_some());
        // The page map comes with the profile (of the page the work wrote), and no count moves.
        let map = y
            .report
            .page_map
            .take()
            .expect("a profiled message's page map");
        assert_eq!((map.heap.accessed(), map.heap.written()), (1, 1), "{map:?}");
        assert!(x.report.page_map.is_none());
        assert_eq!(x.report, y.report);
        assert_eq!(x.result, y.result);
        assert_eq!(
            plain.state_hash(a).unwrap(),
            profiled.state_hash(b).unwrap()
        );
    }
}

#[test]
fn profiling_switches_on_and_off_at_the_next_restore() {
    let wasm = canister(WORK);
    let (mut e, id) = installed(
        EmbeddedEngine::default().with_replica(Replica::R2026_05),
        &wasm,
    );
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
    // The upgrade of the canister to its own module on `e`.
    let upgrade = |e: EmbeddedEngine| {
        let (mut e, id) = installed(e, &wasm);
        let out = e.upgrade(id, &wasm, &[]).unwrap();
        out.result.as_ref().unwrap();
        out
    };
    let out = upgrade(engine(Counter::Local));
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
            ("[compilation]", compile - BASE),
            ("[execution state]", BASE),
            ("[post_upgrade];[heap dirty pages]", 1_000),
            ("[post_upgrade];post", 4),
            ("[pre_upgrade];[heap dirty pages]", 1_000),
            ("[pre_upgrade];pre", 4),
        ],
    );
    // The stages keep their counts and leave the profile to the whole call's.
    assert!(out.report.stages.iter().all(|(_, r)| r.profile.is_none()));

    // Under the memory tracker each hook pays for heap page 0, accessed and written, in
    // its own frame.
    let out = upgrade(tracker_engine(Counter::Local));
    expect(
        &out,
        &[
            ("[compilation]", compile - BASE),
            ("[execution state]", BASE),
            ("[post_upgrade];post", 4),
            ("[post_upgrade];post;[heap access]", PAGE),
            ("[post_upgrade];post;[heap write]", PAGE),
            ("[pre_upgrade];pre", 4),
            ("[pre_upgrade];pre;[heap access]", PAGE),
            ("[pre_upgrade];pre;[heap write]", PAGE),
        ],
    );
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

// ---- the suites -----------------------------------------------------------------------

mod suites {
    use std::path::Path;

    use icbench::engine::embedded::EmbeddedEngine;
    use icbench::report::{self, profiles, Report, ScenarioResult};
    use icbench::suites::scenario::{JournalMode, Store};
    use icbench::suites::upgrade::UpgradeStore;
    use icbench::suites::{Exec, Plan, Shard};

    use crate::support::bench_wasm_path as wasm_path;

    const SMALL: [&str; 14] = [
        "--rows",
        "2000",
        "--batches",
        "1",
        "--stores",
        "btree,sqlite",
        "--journal-modes",
        "WAL,OFF",
        "--positions",
        "middle",
        "--no-reads",
        "--quiet",
        "--wasm",
        "",
    ];

    fn icbench(out: &Path, extra: &[&str]) -> (i32, String, String) {
        let mut args: Vec<&str> = SMALL.to_vec();
        *args.last_mut().unwrap() = wasm_path().to_str().unwrap();
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend_from_slice(extra);
        crate::support::run_icbench(&args)
    }

    fn read(dir: &Path) -> Report {
        report::from_json(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
    }

    /// The folded file's counts added up.
    fn folded_sum(path: &Path) -> u64 {
        std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    }

    /// results.csv without its last column (`profile`).
    fn csv_without_profile(dir: &Path) -> String {
        std::fs::read_to_string(dir.join("results.csv"))
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n")
            .collect()
    }

    #[test]
    fn a_profiled_run_writes_each_matched_scenario_s_profile_summing_to_its_charge() {
        let plain = crate::support::scratch_dir("profile-plain");
        let profiled = crate::support::scratch_dir("profile-on");
        let (code, _, err) = icbench(&plain, &[]);
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = icbench(&profiled, &["--profile", "sqlite-*", "--jobs", "2"]);
        assert_eq!(code, 0, "{err}");
        // The same numbers, byte for byte: only the profile column is filled.
        assert_eq!(csv_without_profile(&plain), csv_without_profile(&profiled));
        let report = read(&profiled);
        let ids = report::scenario_ids(&report.results);
        assert_eq!(
            ids,
            [
                "btree/middle/insert/1",
                "sqlite-wal/middle/insert/1",
                "sqlite-off/middle/insert/1",
                "sqlite-wal/middle/insert/1/warm",
                "sqlite-off/middle/insert/1/warm"
            ]
        );
        for (r, id) in report.results.iter().zip(&ids) {
            if !id.starts_with("sqlite-") {
                assert_eq!(r.profile, "", "{id}");
                continue;
            }
            assert_eq!(r.profile, format!("profiles/{id}.folded"));
            assert_eq!(
                folded_sum(&profiled.join(&r.profile)),
                r.instructions,
                "{id}"
            );
            let svg = std::fs::read_to_string(profiled.join(format!("profiles/{id}.svg"))).unwrap();
            assert!(svg.contains("<svg") && svg.contains(id), "{id}");
            let folded = std::fs::read_to_string(profiled.join(&r.profile)).unwrap();
            // The memory tracker's charges lie under the code that touched the pages: the
            // heap's under SQLite's functions, stable memory's under the System API call
            // that moved the bytes. Nothing is charged after the message any more.
            assert!(!folded.contains("[heap dirty pages]"), "{folded}");
            let pages = |frame: &str| -> u64 {
                folded
                    .lines()
                    .filter(|l| l.rsplit_once(' ').unwrap().0.ends_with(frame))
                    .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
                    .sum()
            };
            for frame in ["[heap access]", "[heap write]"] {
                assert!(pages(frame) > 0 && pages(frame) % 80_000 == 0, "{frame}");
            }
            for frame in ["[stable access]", "[stable write]"] {
                assert!(pages(frame) > 0 && pages(frame) % 80_000 == 0, "{frame}");
                assert!(
                    folded.contains(&format!(";ic0.stable64_write;{frame} ")),
                    "{id}"
                );
            }
            assert!(folded.contains(";ic0.stable64_write "), "{id}");
        }
        // Unmatched scenarios write nothing.
        assert!(!profiled.join("profiles/btree").exists());
    }

    #[test]
    fn shards_of_a_profiled_run_merge_into_its_profiles() {
        let whole = crate::support::scratch_dir("profile-whole");
        let parts = [
            crate::support::scratch_dir("profile-part1"),
            crate::support::scratch_dir("profile-part2"),
        ];
        let merged = crate::support::scratch_dir("profile-merged");
        assert_eq!(icbench(&whole, &["--profile"]).0, 0);
        for (k, dir) in parts.iter().enumerate() {
            let shard = format!("{}/2", k + 1);
            let (code, _, err) = icbench(dir, &["--profile", "--shard", &shard]);
            assert_eq!(code, 0, "{err}");
        }
        let o = crate::support::icbench_command()
            .args(["merge", "--quiet", "--out", merged.to_str().unwrap()])
            .args(&parts)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let (a, b) = (read(&whole), read(&merged));
        assert_eq!(a.results, b.results);
        assert_eq!(
            a.results.iter().filter(|r| !r.profile.is_empty()).count(),
            5
        );
        for r in &a.results {
            for file in [r.profile.clone(), r.profile.replace(".folded", ".svg")] {
                assert_eq!(
                    std::fs::read(whole.join(&file)).unwrap(),
                    std::fs::read(merged.join(&file)).unwrap(),
                    "{file}"
                );
            }
        }
    }

    #[test]
    fn a_pattern_that_matches_no_scenario_is_refused_before_any_work_naming_the_ids() {
        let out = crate::support::scratch_dir("profile-nomatch");
        std::fs::remove_dir_all(&out).unwrap();
        let (code, _, err) = icbench(&out, &["--profile", "heap/*"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("--profile \"heap/*\" matches no scenario; the ids are: btree/middle/insert/1, sqlite-wal/middle/insert/1, sqlite-off/middle/insert/1, sqlite-wal/middle/insert/1/warm, sqlite-off/middle/insert/1/warm"),
            "{err}"
        );
        assert!(!out.exists(), "nothing was written");
        let (code, stdout, err) = icbench(&out, &["--list-scenarios"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            stdout,
            "seed003\tbtree/middle/insert/1\nseed003\tsqlite-wal/middle/insert/1\nseed003\tsqlite-off/middle/insert/1\nseed003\tsqlite-wal/middle/insert/1/warm\nseed003\tsqlite-off/middle/insert/1/warm\n"
        );
    }

    #[test]
    fn an_upgrade_s_profile_explains_its_compilation_and_each_hook() {
        let cfg = crate::support::upgrade_at_1_000(vec![
            UpgradeStore::Heap(bench_types::names::HeapEncoding::Candid),
            UpgradeStore::Heap(bench_types::names::HeapEncoding::Cbor),
            UpgradeStore::Users(Store::Sqlite(JournalMode::Off)),
        ]);
        let wasm = std::fs::read(wasm_path()).unwrap();
        let run = |profile: bool| {
            let exec = Exec {
                jobs: 1,
                shard: Shard::WHOLE,
                profile,
            };
            cfg.run(&mut EmbeddedEngine::default(), &wasm, &exec, &mut |_| {})
                .unwrap()
        };
        let (plain, profiled) = (run(false), run(true));
        let strip = |r: &ScenarioResult| ScenarioResult {
            profile_data: None,
            ..r.clone()
        };
        let stripped: Vec<ScenarioResult> = profiled.results.iter().map(strip).collect();
        assert_eq!(plain.results, stripped, "profiling moves no count");
        let mut upgrades = 0;
        for r in &profiled.results {
            let p = r
                .profile_data
                .as_ref()
                .unwrap_or_else(|| panic!("{} {}", r.position, r.operation));
            assert_eq!(p.total(), r.instructions, "{} {}", r.position, r.operation);
            if r.operation == "upgrade" {
                upgrades += 1;
                let roots: Vec<&str> = p.stacks().iter().map(|(s, _)| s[0]).collect();
                for stage in [
                    "[compilation]",
                    "[execution state]",
                    "[pre_upgrade]",
                    "[post_upgrade]",
                ] {
                    assert!(roots.contains(&stage), "{stage}: {roots:?}");
                }
                // Creating the execution state (its base cost and the compilation) is the
                // whole of two frames, the hooks the rest.
                let compile: u64 = p
                    .stacks()
                    .iter()
                    .filter(|(s, _)| s == &["[compilation]"] || s == &["[execution state]"])
                    .map(|(_, n)| n)
                    .sum();
                let hooks: u64 = profiled
                    .results
                    .iter()
                    .filter(|h| {
                        h.position == r.position
                            && h.rows_before == r.rows_before
                            && (h.operation == "pre_upgrade" || h.operation == "post_upgrade")
                    })
                    .map(|h| h.instructions)
                    .sum();
                assert_eq!(compile + hooks, r.instructions);
            }
        }
        assert_eq!(upgrades, 3);
        // The profiles the report writes, by id.
        let mut report = profiled;
        let selected = profiles::select(&mut report, "*/upgrade/*");
        assert_eq!(selected.kept, 3);
    }
}

#[test]
fn a_start_function_is_profiled_under_its_stage_even_when_it_is_an_import() {
    // $s: 1 + call 5 = 6, then msg_reply's 500 before it refuses to run in start mode.
    // With the import itself as the start function no function of the module runs:
    // canister_start is ic0.msg_reply, and its 500 go to the export's frame.
    let cases: [(&str, &[(&str, u64)]); 2] = [
        (
            "(func $s (call $reply)) (start $s)",
            &[("[start];s", 6), ("[start];s;ic0.msg_reply", 500)],
        ),
        ("(start $reply)", &[("[start];canister_start", 500)]),
    ];
    for (start, stacks) in cases {
        let wasm = wat::parse_str(format!(
            r#"(module (import "ic0" "msg_reply" (func $reply)) (memory 1) {start})"#
        ))
        .unwrap();
        for counter in [Counter::Local, Counter::Global] {
            let mut e = engine(counter);
            let (_, out) = e.install(&wasm, &[]).unwrap();
            assert!(out.result.is_err());
            let compile = out.report.stages[0].1.instructions;
            let mut want = vec![
                ("[compilation]", compile - BASE),
                ("[execution state]", BASE),
            ];
            want.extend_from_slice(stacks);
            expect(&out, &want);
        }
    }
}

#[test]
fn a_wasm64_canister_is_profiled_with_its_costs() {
    // i64 addresses: a store costs 2 in wasm64, a written heap page 4,000.
    // put: 1 + 2 consts + i64.store 2 + 2 consts + call 5 + call 5 = 17.
    let wasm = wat::parse_str(
        r#"(module
             (import "ic0" "msg_reply_data_append" (func $append (param i64 i64)))
             (import "ic0" "msg_reply" (func $reply))
             (memory i64 1)
             (func $put (export "canister_update put")
               (i64.store (i64.const 0) (i64.const 7))
               (call $append (i64.const 0) (i64.const 8))
               (call $reply)))"#,
    )
    .unwrap();
    check(
        &wasm,
        "put",
        false,
        &[
            ("[heap dirty pages]", 4_000),
            ("put", 17),
            ("put;ic0.msg_reply", 500),
            ("put;ic0.msg_reply_data_append", 500 + 50 * 8),
        ],
    );
    // The memory tracker charges a wasm64 heap as any other.
    check_tracked(
        &wasm,
        "put",
        false,
        &[
            ("put", 17),
            ("put;[heap access]", PAGE),
            ("put;[heap write]", PAGE),
            ("put;ic0.msg_reply", 500),
            ("put;ic0.msg_reply_data_append", 500 + 50 * 8),
        ],
    );
}

#[test]
fn a_bench_of_billions_of_instructions_profiles_in_a_small_tree() {
    // Between the two counter reads: 2,000 rounds, each a call of `step` and an inner loop
    // of about 100,000 iterations; about 1.8 billion instructions in all.
    let wasm = canister(
        r#"(func $step (param i64) (result i64) (i64.add (local.get 0) (i64.const 1)))
           (func $b (export "canister_query b")
             (local $n i64) (local $acc i64)
             (i64.store (i32.const 0) (call $pc (i32.const 0)))
             (local.set $n (i64.const 2000))
             (loop $outer
               (local.set $acc (call $step (local.get $acc)))
               (block $done
                 (loop $inner
                   (br_if $done (i64.eqz (local.tee $acc (i64.sub (local.get $acc) (i64.const 1)))))
                   (br $inner)))
               (local.set $acc (i64.const 100000))
               (br_if $outer (i32.eqz (i64.eqz (local.tee $n (i64.sub (local.get $n) (i64.const 1)))))))
             (i64.store (i32.const 8) (call $pc (i32.const 0)))
             (call $append (i32.const 0) (i32.const 16))
             (call $reply))"#,
    );
    let (out, measured) = between_reads(&wasm);
    assert!(measured > 1_000_000_000, "{measured}");
    let profile = out.report.profile.as_ref().unwrap();
    assert_eq!(profile.total(), measured);
    // b, step, the reads and b's first access to heap page 0 (the first reading's store,
    // charged by the second read): four stacks, whatever the length.
    assert_eq!(profile.stacks().len(), 4);
    let step: u64 = profile
        .stacks()
        .iter()
        .filter(|(s, _)| s == &["b", "step"])
        .map(|(_, n)| n)
        .sum();
    // step: 1 + local.get + i64.const + i64.add = 4, 2,000 times.
    assert_eq!(step, 4 * 2_000);
}
