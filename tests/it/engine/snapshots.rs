//! Snapshots, restores and forks: byte-identical state, the same counts, shared heaps.

use super::*;

/// A `step` update that adds 3 to `$g` and stores it at heap address 300, then runs `rest`
/// and replies: every step changes the state, so snapshots and restores show.
fn step(rest: &str) -> String {
    format!(
        r#"(func (export "canister_update step")
             (global.set $g (i64.add (global.get $g) (i64.const 3)))
             (i64.store (i32.const 300) (global.get $g))
             {rest}
             (call $reply))"#
    )
}

/// Writes `$g` to stable memory at offset `$g`, growing it on the first call.
const G_TO_STABLE: &str = r#"
             (if (i64.eqz (call $ssize)) (then (drop (call $sgrow (i64.const 1)))))
             (call $swrite (global.get $g) (i64.const 300) (i64.const 8))"#;

/// A `grow` update that grows the heap by two pages and writes past the first.
const GROW_HEAP: &str = r#"
           (func (export "canister_update grow")
             (drop (memory.grow (i32.const 2)))
             (i64.store (i32.const 70000) (i64.const 5))
             (call $reply))"#;

#[test]
fn snapshots_restore_byte_identical_state_and_runs_are_deterministic() {
    let wasm = canister(&step(G_TO_STABLE));
    let run = || {
        let (mut e, id) = installed(EmbeddedEngine::default(), &wasm);
        let mut counts = Vec::new();
        for _ in 0..3 {
            counts.push(e.update(id, "step", &[]).unwrap().report.instructions);
        }
        let snap = e.snapshot(id).unwrap();
        let at_snapshot = e.state_hash(id).unwrap();
        e.update(id, "step", &[]).unwrap();
        assert_ne!(e.state_hash(id).unwrap(), at_snapshot);
        e.restore(id, snap).unwrap();
        assert_eq!(e.state_hash(id).unwrap(), at_snapshot);
        counts.push(e.update(id, "step", &[]).unwrap().report.instructions);
        (counts, e.state_hash(id).unwrap())
    };
    let (a, ha) = run();
    let (b, hb) = run();
    assert_eq!(a, b);
    assert_eq!(ha, hb);
}

#[test]
fn table_changes_last_one_message_as_on_the_replica() {
    // The replica instantiates the module for every message and persists only the heap,
    // the mutable globals and stable memory: a table.set is gone by the next message, while
    // the heap and global writes of the same message stay.
    let wasm = canister(
        r#"
        (type $t (func (result i64)))
        (table 2 funcref)
        (elem (i32.const 0) $one $two)
        (func $one (type $t) (i64.const 1))
        (func $two (type $t) (i64.const 2))
        (func $slot0_and_heap
          (i64.store (i32.const 0) (call_indirect (type $t) (i32.const 0)))
          (i64.store (i32.const 8) (i64.load (i32.const 200)))
          (i64.store (i32.const 16) (global.get $g))
          (call $append (i32.const 0) (i32.const 24))
          (call $reply))
        (func (export "canister_update set")
          (table.set (i32.const 0) (ref.func $two))
          (i64.store (i32.const 200) (i64.const 99))
          (global.set $g (i64.const 8))
          (call $slot0_and_heap))
        (func (export "canister_update get") (call $slot0_and_heap))
        "#,
    );
    let mut e = EmbeddedEngine::default();
    let (id, install) = e.install(&wasm, &[]).unwrap();
    install.result.unwrap();
    let set = e.update(id, "set", &[]).unwrap().result.unwrap();
    assert_eq!(
        reply_u64s(&set),
        vec![2, 99, 8],
        "within the message the new entry is used"
    );
    let get = e.update(id, "get", &[]).unwrap().result.unwrap();
    assert_eq!(
        reply_u64s(&get),
        vec![1, 99, 8],
        "the table is reset, heap and global kept"
    );
}

#[test]
fn restoring_the_same_snapshot_again_gives_the_same_state_and_counts() {
    // Restores after the first reuse the live instance and copy back only the pages
    // committed since; a heap that grew in between needs a fresh instance. Both must give
    // the snapshot's exact state and the same counts as the first restore.
    let step = step(&format!(
        "(i64.store (i32.const 40000) (global.get $g)) {G_TO_STABLE}"
    ));
    let wasm = canister(&format!(
        r#"{step} {GROW_HEAP}
           (func (export "canister_update boom")
             (i64.store (i32.const 8000) (i64.const 1))
             (call $trap (i32.const 100) (i32.const 4)))"#
    ));
    let (mut e, id) = installed(EmbeddedEngine::default(), &wasm);
    e.update(id, "step", &[]).unwrap();
    let snap = e.snapshot(id).unwrap();
    let at_snapshot = e.state_hash(id).unwrap();
    let mut first = None;
    for round in 0..4 {
        e.restore(id, snap).unwrap();
        assert_eq!(e.state_hash(id).unwrap(), at_snapshot, "round {round}");
        let a = e.update(id, "step", &[]).unwrap();
        let b = e.update(id, "step", &[]).unwrap();
        // A rolled-back write must not leak into the next restore either.
        assert!(e.update(id, "boom", &[]).unwrap().result.is_err());
        let counts = (
            a.report.instructions,
            b.report.instructions,
            b.result.unwrap(),
        );
        assert_eq!(
            *first.get_or_insert(counts.clone()),
            counts,
            "round {round}"
        );
        if round == 2 {
            e.update(id, "grow", &[]).unwrap().result.unwrap();
        }
    }
    e.restore(id, snap).unwrap();
    assert_eq!(e.state_hash(id).unwrap(), at_snapshot);
}

#[test]
fn snapshots_taken_after_a_restore_share_or_layer_its_heap_and_forget_releases_them() {
    // A snapshot right after a restore (nothing committed) shares the restored heap; one
    // after a message that wrote a page keeps it as a layer; one after a grown heap copies.
    // Each must restore its exact state, with the same counts, before and after the
    // snapshots it was made from are forgotten.
    let wasm = canister(&format!("{} {GROW_HEAP}", step("")));
    let (mut e, id) = installed(EmbeddedEngine::default(), &wasm);
    e.update(id, "step", &[]).unwrap();
    let base = e.snapshot(id).unwrap();
    e.restore(id, base).unwrap();
    let shared = e.snapshot(id).unwrap();
    let at_base = e.state_hash(id).unwrap();
    e.update(id, "step", &[]).unwrap();
    let layered = e.snapshot(id).unwrap();
    let at_layered = e.state_hash(id).unwrap();
    e.update(id, "grow", &[]).unwrap().result.unwrap();
    let grown = e.snapshot(id).unwrap();
    let at_grown = e.state_hash(id).unwrap();
    let step_from = |e: &mut EmbeddedEngine, snap| {
        e.restore(id, snap).unwrap();
        let out = e.update(id, "step", &[]).unwrap();
        (e.state_hash(id).unwrap(), out.report.instructions)
    };
    let before: Vec<_> = [shared, layered, grown]
        .into_iter()
        .map(|s| step_from(&mut e, s))
        .collect();
    e.forget(base).unwrap();
    for (snap, want) in [(shared, at_base), (layered, at_layered), (grown, at_grown)] {
        e.restore(id, snap).unwrap();
        assert_eq!(e.state_hash(id).unwrap(), want);
    }
    let after: Vec<_> = [shared, layered, grown]
        .into_iter()
        .map(|s| step_from(&mut e, s))
        .collect();
    assert_eq!(before, after);
    let err = e.restore(id, base).unwrap_err().to_string();
    assert_eq!(err, format!("snapshot {} was forgotten", base.0));
    assert!(e.forget(SnapshotId(999)).is_err());
}

#[test]
fn a_fork_starts_at_the_snapshot_shares_the_others_and_runs_on_its_own() {
    let wasm = canister_importing(
        r#"(import "ic0" "time" (func $time (result i64)))"#,
        &step(&format!(
            "{G_TO_STABLE}
             (i64.store (i32.const 308) (call $time))
             (call $append (i32.const 300) (i32.const 16))"
        )),
    );
    let (mut e, id) = installed(EmbeddedEngine::default(), &wasm);
    e.update(id, "step", &[]).unwrap();
    let first = e.snapshot(id).unwrap();
    let at_first = e.state_hash(id).unwrap();
    e.update(id, "step", &[]).unwrap();
    let second = e.snapshot(id).unwrap();
    let at_second = e.state_hash(id).unwrap();

    let mut fork = e
        .fork(id, first)
        .unwrap()
        .expect("the embedded engine forks");
    let mut other = e.fork_at(id, second).unwrap();
    assert_eq!(other.state_hash(id).unwrap(), at_second);
    // The parent's next message and the fork's see the same state, time and counts.
    let from_parent = {
        e.restore(id, first).unwrap();
        e.update(id, "step", &[]).unwrap()
    };
    let from_fork = std::thread::spawn(move || {
        let out = fork.update(id, "step", &[]).unwrap();
        // The other snapshot exists in the fork under the same id.
        fork.restore(id, second).unwrap();
        out
    })
    .join()
    .unwrap();
    assert_eq!(from_fork.result, from_parent.result);
    assert_eq!(from_fork.report, from_parent.report);
    // Messages in one engine leave the others alone.
    assert_eq!(other.state_hash(id).unwrap(), at_second);
    e.restore(id, first).unwrap();
    assert_eq!(e.state_hash(id).unwrap(), at_first);
    other.update(id, "step", &[]).unwrap();
    e.restore(id, second).unwrap();
    assert_eq!(e.state_hash(id).unwrap(), at_second);
}
