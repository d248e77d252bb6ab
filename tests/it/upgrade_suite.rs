//! The upgrade suite and the failed upgrades it shows, on the embedded engine at small
//! sizes: exact facts only.

use candid::Encode;
use icbench::bench_canister::{BenchClient, HeapConfig, IdSequence};
use icbench::engine::cost::Limits;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::{CallOutcome, Engine, ErrorCode, Reject};
use icbench::report::{Report, Status};
use icbench::suites::scenario::{JournalMode, Store};
use icbench::suites::upgrade::{Config, Point, UpgradeStore};
use icbench::suites::{Exec, Plan, Shard};

use crate::support::bench_wasm as wasm;

fn stores() -> Vec<UpgradeStore> {
    use bench_types::names::HeapEncoding;
    vec![
        UpgradeStore::Heap(HeapEncoding::Candid),
        UpgradeStore::Heap(HeapEncoding::Cbor),
        UpgradeStore::Users(Store::BTree),
        UpgradeStore::Users(Store::Sqlite(JournalMode::Persist)),
        UpgradeStore::Users(Store::Sqlite(JournalMode::Off)),
    ]
}

fn small_run(jobs: usize) -> Report {
    let cfg = Config {
        stores: stores(),
        sizes: vec![1_000, 2_000],
        rows: 2_000,
        payload_size: 100,
        seed: 1,
        usd_per_xdr: 1.0,
        limit_run: None,
    };
    let mut engine = EmbeddedEngine::default();
    let exec = Exec {
        jobs,
        shard: Shard::WHOLE,
        profile: false,
    };
    cfg.run(&mut engine, wasm(), &exec, &mut |_| {}).unwrap()
}

#[test]
fn every_store_and_size_has_its_upgrade_records_and_jobs_do_not_change_them() {
    let report = small_run(1);
    let ops = [
        "warm_query",
        "warm_update",
        "pre_upgrade",
        "post_upgrade",
        "upgrade",
        "first_query",
        "first_update",
        "upgrade_same_module",
    ];
    // 5 stores x 2 sizes x 8 records, in that order.
    assert_eq!(report.results.len(), 5 * 2 * ops.len());
    for (i, r) in report.results.iter().enumerate() {
        assert_eq!(r.operation, ops[i % 8], "record {i}");
        assert_eq!(r.status, Status::Ok, "{r:?}");
        assert_eq!(r.rows_before, [1_000, 2_000][(i / 8) % 2]);
    }
    let points: Vec<Point> = report.extra("upgrade_points").unwrap();
    assert_eq!(points.len(), 5 * 2);
    for (chunk, point) in report.results.chunks(8).zip(&points) {
        let [_, _, pre, post, up, _, _, same] = chunk else {
            unreachable!()
        };
        assert_eq!(point.rows, up.rows_before);
        // The upgrade ships a new build after a checkpoint: the execution state's 20M base
        // cost (from vintage 2026-04) and the whole compilation, 6,000 per Wasm instruction.
        let full = point.compile_instructions - 20_000_000;
        assert!(full > 0 && full.is_multiple_of(6_000), "{point:?}");
        assert_eq!(
            point.pre_upgrade_instructions
                + point.compile_instructions
                + point.post_upgrade_instructions,
            up.instructions
        );
        // The same upgrade again before a checkpoint: the hooks cost the same, the
        // compilation 1/100.
        assert_eq!(
            up.instructions - same.instructions,
            full / 100 * 99,
            "{same:?}"
        );
        assert_eq!(same.cycles, 5_000_000 + same.instructions);
        let heap = pre.store == "heap";
        assert!(pre.instructions > 0 && post.instructions > 0, "{pre:?}");
        // The whole install_code also pays for compiling the module.
        assert!(up.instructions > pre.instructions + post.instructions);
        assert_eq!(up.cycles, 5_000_000 + up.instructions);
        // The counter inside each hook sees less than the engine meters for it.
        for hook in [pre, post] {
            assert!(hook.store_instructions > 0 && hook.store_instructions < hook.instructions);
        }
        // Only the heap store writes an encoded copy.
        assert_eq!(pre.bytes > 0, heap, "{pre:?}");
        assert_eq!(pre.position.is_empty(), !heap);
    }
    // The heap store's encodings differ in what they write.
    assert_ne!(report.results[2].bytes, report.results[18].bytes);
    assert_eq!(small_run(2).results, report.results);
    // One worker finishes a store before it starts the next, and upgrades at each size
    // before it fills on (so it holds one store's states at a time, as the memory estimate
    // has it): the units' tasks in the order they started.
    let order: Vec<&str> = report
        .work
        .as_ref()
        .expect("the run records its units")
        .units
        .iter()
        .map(|u| u.name.as_str())
        .filter(|n| {
            n.starts_with("configure ")
                || n.starts_with("upgrade ")
                || n.starts_with("go on filling ")
        })
        .collect();
    let mut expected = Vec::new();
    for s in stores() {
        let l = s.label();
        expected.extend([
            format!("configure {l}"),
            format!("upgrade {l} at 1,000 rows"),
            format!("go on filling {l} to 2,000 rows"),
            format!("upgrade {l} at 2,000 rows"),
        ]);
    }
    assert_eq!(order, expected);
}

/// A heap store with `rows` rows of 100 bytes in an engine with `limits`.
fn filled_heap(limits: Limits, rows: u64) -> (EmbeddedEngine, candid::Principal) {
    let mut e = EmbeddedEngine::new(limits);
    let mut c = BenchClient::install(&mut e, wasm()).unwrap();
    c.configure_heap(&HeapConfig {
        encoding: Some("candid".into()),
    })
    .unwrap()
    .value
    .unwrap();
    c.add_users("heap", IdSequence::new(0, 10, rows))
        .unwrap()
        .value
        .unwrap();
    let id = c.canister;
    (e, id)
}

/// The old module still answers with every row: `heap_stats` and a 100-key lookup.
fn assert_rows_intact(e: &mut EmbeddedEngine, id: candid::Principal, rows: u64) {
    let mut c = BenchClient::attach(e, id);
    assert_eq!(c.heap_stats().unwrap().rows, rows);
    let read = c
        .get_users("heap", IdSequence::new(0, 10, 100), false)
        .unwrap()
        .value
        .unwrap();
    assert_eq!(read.rows_found, 100);
}

/// An upgrade to a new build of the canister after a checkpoint, as the suite makes it:
/// the whole compilation is charged, more than the install's own.
fn upgrade_to_new_build(e: &mut EmbeddedEngine, id: candid::Principal) -> CallOutcome {
    let build = icbench::suites::upgrade::new_build(wasm()).unwrap();
    e.checkpoint();
    e.upgrade(id, &build, &Encode!().unwrap()).unwrap()
}

/// The upgrade of a heap of 10,000 rows to the new build under the application subnet's
/// limits, which succeeds: what it took.
fn probe_upgrade() -> CallOutcome {
    let (mut probe, id) = filled_heap(Limits::APPLICATION, 10_000);
    let ok = upgrade_to_new_build(&mut probe, id);
    ok.result.as_ref().unwrap();
    ok
}

/// The upgrade of a heap of 10,000 rows to the new build under `limits`, which must fail
/// and keep the rows: the canister and the error.
fn failed_upgrade(limits: Limits) -> (candid::Principal, Reject) {
    let (mut e, id) = filled_heap(limits, 10_000);
    let err = upgrade_to_new_build(&mut e, id).result.unwrap_err();
    assert_rows_intact(&mut e, id, 10_000);
    (id, err)
}

#[test]
fn an_upgrade_over_the_instruction_limit_fails_with_ic0522_and_keeps_the_rows() {
    // Room for compiling the module and little else: post_upgrade runs out.
    let ok = probe_upgrade();
    let limit = ok.report.instructions - 1;
    let (id, err) = failed_upgrade(Limits {
        max_instructions_per_install: limit,
        ..Limits::APPLICATION
    });
    assert_eq!(err.error_code, ErrorCode::CanisterInstructionLimitExceeded);
    assert_eq!(
        err.message,
        format!("Error from Canister {id}: Canister exceeded the limit of {limit} instructions for single message execution.")
    );
}

#[test]
fn an_upgrade_whose_new_heap_is_over_wasm_memory_limit_fails_with_ic0539_and_keeps_the_rows() {
    // The rows fit under the limit; the map decoded next to its encoded bytes does not.
    let ok = probe_upgrade();
    let (before, after) = (ok.report.heap_bytes_before, ok.report.heap_bytes_after);
    assert!(after > before + 65_536, "{before} -> {after}");
    let (id, err) = failed_upgrade(Limits {
        wasm_memory_limit: before,
        ..Limits::APPLICATION
    });
    crate::support::assert_wasm_memory_limit_exceeded(&err, id, &format!("{before} bytes."));
}
