//! Upgrades: enhanced orthogonal persistence's `keep`, the hooks' shared instruction limit,
//! the final heap's limit and compilation charged by module hash.

use super::*;

/// A canister in the shape of Motoko's enhanced orthogonal persistence: its state (a
/// counter at address 0) lives in the heap, and its metadata says so. `get` replies the
/// heap counter, the global counter and the 2-byte tag its data segment wrote at 16.
fn persistent_canister(tag: &str, eop: bool, pre_upgrade_traps: bool) -> Vec<u8> {
    let metadata = if eop {
        r#"(@custom "icp:private enhanced-orthogonal-persistence" "")"#
    } else {
        ""
    };
    let pre_upgrade = if pre_upgrade_traps {
        r#"(func (export "canister_pre_upgrade") unreachable)"#
    } else {
        ""
    };
    wat::parse_str(format!(
        r#"(module
          (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
          (import "ic0" "msg_reply" (func $reply))
          (memory (export "memory") 1)
          (global $g (mut i64) (i64.const 0))
          (data (i32.const 16) "{tag}")
          (func (export "canister_update inc")
            (i64.store (i32.const 0) (i64.add (i64.load (i32.const 0)) (i64.const 1)))
            (global.set $g (i64.add (global.get $g) (i64.const 1)))
            (call $reply))
          (func (export "canister_query get")
            (i64.store (i32.const 32) (global.get $g))
            (call $append (i32.const 0) (i32.const 8))
            (call $append (i32.const 32) (i32.const 8))
            (call $append (i32.const 16) (i32.const 2))
            (call $reply))
          {pre_upgrade}
          {metadata})"#
    ))
    .unwrap()
}

/// (heap counter, global counter, tag) as `get` replies them.
fn persistent_state(e: &mut EmbeddedEngine, id: Principal) -> (u64, u64, String) {
    let reply = e.query(id, "get", &[]).unwrap().result.unwrap();
    let numbers = reply_u64s(&reply[..16]);
    (
        numbers[0],
        numbers[1],
        String::from_utf8(reply[16..].to_vec()).unwrap(),
    )
}

fn installed_with_two_increments(wasm: &[u8]) -> (EmbeddedEngine, Principal) {
    let (mut e, id) = installed(EmbeddedEngine::default(), wasm);
    for _ in 0..2 {
        e.update(id, "inc", &[]).unwrap().result.unwrap();
    }
    (e, id)
}

const KEEP: UpgradeOptions = UpgradeOptions {
    skip_pre_upgrade: false,
    wasm_memory_persistence: Some(WasmMemoryPersistence::Keep),
};

#[test]
fn an_eop_canister_refuses_an_upgrade_that_does_not_say_what_happens_to_the_heap() {
    let (mut e, id) = installed_with_two_increments(&persistent_canister("v1", true, false));
    let v2 = persistent_canister("v2", true, false);
    let err = e.upgrade(id, &v2, &[]).unwrap().result.unwrap_err();
    assert_eq!(err.error_code, ErrorCode::CanisterContractViolation);
    assert_eq!(
        err.message,
        "Missing upgrade option: Enhanced orthogonal persistence requires the \
         `wasm_memory_persistence` upgrade option."
    );
    // Nothing changed, the heap least of all.
    assert_eq!(persistent_state(&mut e, id), (2, 2, "v1".into()));
}

#[test]
fn keep_runs_the_new_module_on_the_old_heap() {
    let (mut e, id) = installed_with_two_increments(&persistent_canister("v1", true, false));
    let v2 = persistent_canister("v2", true, false);
    e.upgrade_with(id, &v2, &[], KEEP).unwrap().result.unwrap();
    // The replica puts the old heap in place of the new module's (`wasm_memory =
    // old.wasm_memory`), so even the new data segment is not applied; globals are the
    // new module's.
    assert_eq!(persistent_state(&mut e, id), (2, 0, "v1".into()));
    e.update(id, "inc", &[]).unwrap().result.unwrap();
    assert_eq!(persistent_state(&mut e, id), (3, 1, "v1".into()));
}

#[test]
fn keep_needs_a_new_module_with_enhanced_orthogonal_persistence() {
    let (mut e, id) = installed_with_two_increments(&persistent_canister("v1", true, false));
    let classical = persistent_canister("v2", false, false);
    let err = e
        .upgrade_with(id, &classical, &[], KEEP)
        .unwrap()
        .result
        .unwrap_err();
    assert_eq!(err.error_code, ErrorCode::CanisterContractViolation);
    assert_eq!(
        err.message,
        "Invalid upgrade option: The `wasm_memory_persistence: opt Keep` upgrade option \
         requires that the new canister module supports enhanced orthogonal persistence."
    );
    assert_eq!(persistent_state(&mut e, id), (2, 2, "v1".into()));
}

#[test]
fn replace_and_skip_pre_upgrade_as_on_the_replica() {
    // Replace: a fresh heap, the new data segment.
    let (mut e, id) = installed_with_two_increments(&persistent_canister("v1", true, false));
    let replace = UpgradeOptions {
        skip_pre_upgrade: false,
        wasm_memory_persistence: Some(WasmMemoryPersistence::Replace),
    };
    let v2 = persistent_canister("v2", true, false);
    e.upgrade_with(id, &v2, &[], replace)
        .unwrap()
        .result
        .unwrap();
    assert_eq!(persistent_state(&mut e, id), (0, 0, "v2".into()));

    // A trapping pre_upgrade blocks an upgrade unless it is skipped.
    let (mut e, id) = installed_with_two_increments(&persistent_canister("v1", false, true));
    let err = e.upgrade(id, &v2, &[]).unwrap().result.unwrap_err();
    assert_eq!(err.error_code, ErrorCode::CanisterTrapped);
    assert_eq!(persistent_state(&mut e, id), (2, 2, "v1".into()));
    let skip = UpgradeOptions {
        skip_pre_upgrade: true,
        wasm_memory_persistence: None,
    };
    e.upgrade_with(id, &v2, &[], skip).unwrap().result.unwrap();
    assert_eq!(persistent_state(&mut e, id), (0, 0, "v2".into()));
}

#[test]
fn keep_into_a_larger_initial_heap_is_an_error_that_leaves_the_canister_as_it_was() {
    let (mut e, id) = installed_with_two_increments(&persistent_canister("v1", true, false));
    let larger = wat::parse_str(
        r#"(module
             (memory (export "memory") 4)
             (@custom "icp:private enhanced-orthogonal-persistence" ""))"#,
    )
    .unwrap();
    let err = e
        .upgrade_with(id, &larger, &[], KEEP)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "cannot restore a 65536-byte heap into a 262144-byte memory"
    );
    assert_eq!(persistent_state(&mut e, id), (2, 2, "v1".into()));
    e.update(id, "inc", &[]).unwrap().result.unwrap();
    assert_eq!(persistent_state(&mut e, id), (3, 3, "v1".into()));
}

/// A canister whose `pre_upgrade` (and `post_upgrade`) spin `n` times, and whose `tag`
/// query replies the 2 bytes of its data segment at 16, so a test sees which module runs.
fn spinning_canister(tag: &str, n: u32, heap_pages: u32) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module
          (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
          (import "ic0" "msg_reply" (func $reply))
          (memory (export "memory") {heap_pages})
          (data (i32.const 16) "{tag}")
          (func $spin (local $i i32)
            (loop $l
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (i32.const {n})))))
          (func (export "canister_pre_upgrade") (call $spin))
          (func (export "canister_post_upgrade") (call $spin))
          (func (export "canister_query tag")
            (call $append (i32.const 16) (i32.const 2))
            (call $reply)))"#
    ))
    .unwrap()
}

#[test]
fn an_upgrade_shares_one_instruction_limit_between_hooks_and_compilation() {
    use icbench::engine::InstallStage;
    let (v1, v2) = (
        spinning_canister("v1", 100_000, 1),
        spinning_canister("v2", 100_000, 1),
    );
    let (mut e, id) = installed(EmbeddedEngine::default(), &v1);
    let out = e.upgrade(id, &v2, &[]).unwrap();
    out.result.unwrap();
    let stages: Vec<InstallStage> = out.report.stages.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        stages,
        [
            InstallStage::PreUpgrade,
            InstallStage::Compilation,
            InstallStage::PostUpgrade
        ]
    );
    let used: Vec<u64> = out
        .report
        .stages
        .iter()
        .map(|(_, r)| r.instructions)
        .collect();
    assert_eq!(out.report.instructions, used.iter().sum::<u64>());
    // Each hook alone stays far below the limit set next; only their sum is over it.
    assert!(used[0] > 100_000 && used[2] > 100_000, "{used:?}");
    let total = out.report.instructions;

    for (limit, fails) in [(total, false), (total - 1, true)] {
        let limits = Limits {
            max_instructions_per_install: limit,
            ..Limits::APPLICATION
        };
        let (mut e, id) = installed(EmbeddedEngine::new(limits), &v1);
        let out = e.upgrade(id, &v2, &[]).unwrap();
        let tag = e.query(id, "tag", &[]).unwrap().result.unwrap();
        if !fails {
            out.result.unwrap();
            assert_eq!(tag, b"v2");
            continue;
        }
        let err = out.result.unwrap_err();
        assert_eq!(err.error_code, ErrorCode::CanisterInstructionLimitExceeded);
        // The message names the whole limit, not what post_upgrade had left of it.
        assert_eq!(
            err.message,
            format!(
                "Error from Canister {id}: Canister exceeded the limit of {limit} instructions for single message execution."
            )
        );
        assert_eq!(tag, b"v1", "a failed upgrade keeps the old module");
    }
}

#[test]
fn install_code_fails_when_the_final_heap_is_over_wasm_memory_limit() {
    let limits = Limits {
        wasm_memory_limit: 4 * 65536,
        ..Limits::APPLICATION
    };
    let (mut e, id) = installed(EmbeddedEngine::new(limits), &spinning_canister("v1", 1, 4));
    // The new module's own initial heap (5 pages) is over the limit when install_code ends.
    let out = e.upgrade(id, &spinning_canister("v2", 1, 5), &[]).unwrap();
    let err = out.result.unwrap_err();
    assert_wasm_memory_limit_exceeded(
        &err,
        id,
        "262144 bytes. The peak Wasm memory usage was 327680 bytes.",
    );
    assert_eq!(e.query(id, "tag", &[]).unwrap().result.unwrap(), b"v1");
}

/// What install_code charged for creating the execution state (base cost and compilation).
fn compilation(out: &icbench::engine::CallOutcome) -> u64 {
    let stage = out
        .report
        .stages
        .iter()
        .find(|(s, _)| *s == icbench::engine::InstallStage::Compilation);
    stage.expect("a compilation stage").1.instructions
}

#[test]
fn compilation_is_charged_by_module_hash_as_each_vintage_has_it() {
    let (v1, v2) = (
        spinning_canister("v1", 10, 1),
        spinning_canister("v2", 10, 1),
    );
    let trapping = wat::parse_str(
        r#"(module (memory 1) (func (export "canister_post_upgrade") unreachable))"#,
    )
    .unwrap();

    // 2024: every install_code pays the whole compilation, the same module again too.
    let mut e = EmbeddedEngine::default().with_replica(Replica::R2024);
    let (id, out) = e.install(&v1, &[]).unwrap();
    let full = compilation(&out);
    assert!(full > 0 && full.is_multiple_of(6_000), "{full}");
    assert_eq!(compilation(&e.upgrade(id, &v1, &[]).unwrap()), full);

    for (replica, base) in [(Replica::R2025_03, 0), (Replica::R2026_04, 20_000_000)] {
        let mut e = EmbeddedEngine::default().with_replica(replica);
        let (id, out) = e.install(&v1, &[]).unwrap();
        assert_eq!(compilation(&out), base + full, "{replica:?}");
        // The same module again: installed since the last checkpoint, 1/100 of it.
        let again = e.upgrade(id, &v1, &[]).unwrap();
        assert!(again.result.is_ok());
        assert_eq!(compilation(&again), base + full / 100, "{replica:?}");
        // Another module (v2 differs in data only: the same instruction count) pays in
        // full once, then any canister of the subnet installs it for 1/100.
        assert_eq!(compilation(&e.upgrade(id, &v2, &[]).unwrap()), base + full);
        let (other, out) = e.install(&v2, &[]).unwrap();
        assert_eq!(compilation(&out), base + full / 100);
        // A snapshot is the canister's state, not the subnet's: restoring one keeps v2
        // expected, and a fork starts with what its parent expects.
        let snapshot = e.snapshot(other).unwrap();
        e.restore(other, snapshot).unwrap();
        assert_eq!(
            compilation(&e.upgrade(other, &v2, &[]).unwrap()),
            base + full / 100
        );
        let mut fork = e.fork_at(other, snapshot).unwrap();
        assert_eq!(
            compilation(&fork.upgrade(other, &v1, &[]).unwrap()),
            base + full / 100
        );
        // After a checkpoint every module pays in full again.
        e.checkpoint();
        assert_eq!(compilation(&e.upgrade(id, &v2, &[]).unwrap()), base + full);
        // A failed install_code leaves its module unexpected: it pays in full each time.
        e.checkpoint();
        let failed: Vec<_> = (0..2)
            .map(|_| e.upgrade(id, &trapping, &[]).unwrap())
            .collect();
        assert!(failed.iter().all(|out| out.result.is_err()));
        let trapping_full = compilation(&failed[0]) - base;
        assert!(trapping_full > 0 && trapping_full.is_multiple_of(6_000));
        assert_eq!(compilation(&failed[1]), compilation(&failed[0]));
    }
}
