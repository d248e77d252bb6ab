//! The bench canister's contract, written once and run on every engine: row counts,
//! overwrite and rollback semantics, reads, configuration, every error path, upgrade,
//! reinstall and snapshots. Each contract function below becomes one test per engine
//! (`canister::embedded::NAME`, `canister::pocket_ic::NAME`). The PocketIC tests need a
//! build with the `pocket-ic` feature and a server: build.rs sets `cfg(pocket_ic_server)`
//! when POCKET_IC_BIN is set; without it they are ignored, with that reason, never passed.

use candid::{Encode, Principal};
use icbench::bench_canister::{
    BenchClient, HeapConfig, IdSequence, InsertReport, Measured, SqliteConfig,
};
use icbench::engine::embedded::EmbeddedEngine;
#[cfg(feature = "pocket-ic")]
use icbench::engine::pocket_ic::PocketIcEngine;
use icbench::engine::{Engine, ErrorCode, Reject};

use crate::support::bench_wasm as wasm;

fn with_canister<R>(engine: &mut dyn Engine, f: impl FnOnce(&mut BenchClient<'_>) -> R) -> R {
    let mut client = BenchClient::install(engine, wasm()).expect("the canister installs");
    f(&mut client)
}

/// The client of `canister` after an upgrade to the bench module (no argument), which must
/// succeed.
#[track_caller]
fn upgraded(engine: &mut dyn Engine, canister: Principal) -> BenchClient<'_> {
    engine
        .upgrade(canister, wasm(), &Encode!().unwrap())
        .unwrap()
        .result
        .expect("the upgrade succeeds");
    BenchClient::attach(engine, canister)
}

/// The canister's refusal of a message the replica ran.
fn err_of<T: std::fmt::Debug>(r: anyhow::Result<Measured<T>>) -> String {
    r.unwrap()
        .value
        .expect_err("the canister should refuse this")
}

/// Inserts the rows of `ids` into `store`, which must accept them.
fn insert(c: &mut BenchClient<'_>, store: &str, ids: IdSequence) -> InsertReport {
    c.add_users(store, ids).unwrap().value.unwrap()
}

/// One `#[test]` per engine for each contract function `fn(&mut dyn Engine)`.
macro_rules! contract_tests {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[test]
                fn $name() {
                    super::$name(&mut icbench::engine::embedded::EmbeddedEngine::default());
                }
            )*
        }
        // Only in a build with the PocketIC backend (`--features pocket-ic`, as .ci/run does).
        #[cfg(feature = "pocket-ic")]
        mod pocket_ic {
            $(
                #[test]
                #[cfg_attr(
                    not(pocket_ic_server),
                    ignore = "POCKET_IC_BIN is not set: point it at a PocketIC 16.x server binary to run the contract on PocketIC"
                )]
                fn $name() {
                    let mut engine = super::PocketIcEngine::from_env()
                        .unwrap_or_else(|e| panic!("{e:#}"));
                    super::$name(&mut engine);
                }
            )*
        }
    };
}

contract_tests!(
    inserts_count_rows_not_loop_bounds,
    the_btree_overwrites_and_counts_replacements,
    an_existing_sqlite_id_is_an_error_and_nothing_is_inserted,
    reads_find_exactly_the_rows_present,
    bad_arguments_are_errors_naming_the_problem,
    every_journal_mode_is_applied_and_read_back,
    autoincrement_can_be_chosen_on_an_empty_table,
    both_stores_and_the_configuration_survive_an_upgrade,
    calls_the_canister_cannot_serve_are_rejected_with_the_replica_codes,
    undecodable_arguments_trap_and_change_nothing,
    reinstall_wipes_both_stores,
    a_snapshot_restores_both_stores,
    the_heap_store_round_trips_an_upgrade_in_both_encodings,
    an_emptied_heap_store_stays_empty_across_upgrades,
    a_failed_upgrade_keeps_the_heap_store_and_the_old_module,
);

fn inserts_count_rows_not_loop_bounds(engine: &mut dyn Engine) {
    with_canister(engine, |c| {
        for store in ["heap", "btree", "sqlite"] {
            let r = insert(c, store, IdSequence::new(0, 10, 25));
            assert_eq!((r.rows_inserted, r.rows_replaced), (25, 0), "{store}");
            assert!(r.instructions > 0);
        }
        let stats = c.stats().unwrap();
        assert_eq!((stats.btree_rows, stats.sqlite_rows), (25, 25));
        assert_eq!(stats.payload_size, 100);
        let heap = c.heap_stats().unwrap();
        assert_eq!((heap.rows, heap.encoding.as_str()), (25, "candid"));
        assert_eq!(heap.heap_bytes, stats.heap_pages * 65_536);
    });
}

fn the_btree_overwrites_and_counts_replacements(engine: &mut dyn Engine) {
    with_canister(engine, |c| {
        for store in ["heap", "btree"] {
            insert(c, store, IdSequence::new(0, 10, 10));
            // ids 50..=140: 50, 60, 70, 80, 90 exist.
            let r = insert(c, store, IdSequence::new(50, 10, 10));
            assert_eq!((r.rows_inserted, r.rows_replaced), (5, 5), "{store}");
        }
        assert_eq!(c.stats().unwrap().btree_rows, 15);
        assert_eq!(c.heap_stats().unwrap().rows, 15);
    });
}

fn an_existing_sqlite_id_is_an_error_and_nothing_is_inserted(engine: &mut dyn Engine) {
    with_canister(engine, |c| {
        insert(c, "sqlite", IdSequence::new(0, 10, 10));
        // 85, 90, 95: 90 exists (0, 10, ..., 90 were inserted).
        let e = err_of(c.add_users("sqlite", IdSequence::new(85, 5, 3)));
        assert!(e.contains("id 90 already exists"), "{e}");
        assert!(e.contains("rolled back"), "{e}");
        assert_eq!(c.stats().unwrap().sqlite_rows, 10);
        let e = err_of(c.add_users_ids("sqlite", &[7, 20]));
        assert!(e.contains("id 20 already exists"), "{e}");
        assert_eq!(c.stats().unwrap().sqlite_rows, 10);
    });
}

fn reads_find_exactly_the_rows_present(engine: &mut dyn Engine) {
    with_canister(engine, |c| {
        c.set_payload_size(40).unwrap().value.unwrap();
        for store in ["heap", "btree", "sqlite"] {
            insert(c, store, IdSequence::new(0, 10, 50));
            for replicated in [false, true] {
                let r = c
                    .get_users(store, IdSequence::new(0, 10, 20), replicated)
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!((r.rows_found, r.bytes_read), (20, 800), "{store}");
                let r = c
                    .get_users(store, IdSequence::new(5, 10, 20), replicated)
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!(r.rows_found, 0, "{store}: ids 5, 15, ... are absent");
                let r = c
                    .scan_users(store, 245, 100, replicated)
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!(r.rows_found, 25, "{store}: 250..=490 remain");
            }
            for replicated in [false, true] {
                let r = c
                    .get_users_ids(store, &[490, 3, 0, 250], replicated)
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!(r.rows_found, 3, "{store}");
            }
            let r = c.add_users_ids(store, &[3, 11, 2]).unwrap().value.unwrap();
            assert_eq!(r.rows_inserted, 3, "{store}");
        }
    });
}

fn bad_arguments_are_errors_naming_the_problem(engine: &mut dyn Engine) {
    with_canister(engine, |c| {
        for store in ["heap", "btree", "sqlite"] {
            assert!(err_of(c.add_users(store, IdSequence::new(0, 0, 5))).contains("step"));
            assert!(
                err_of(c.add_users(store, IdSequence::new(0, 1, 100_000_001)))
                    .contains("MAX_ROWS_PER_CALL")
            );
            assert!(err_of(c.get_users(store, IdSequence::new(0, 0, 5), false)).contains("step"));
            assert!(
                err_of(c.scan_users(store, 0, 100_000_001, false)).contains("MAX_ROWS_PER_CALL")
            );
            let too_many = vec![1u64; 100_001];
            assert!(err_of(c.add_users_ids(store, &too_many)).contains("MAX_IDS_PER_CALL"));
            assert!(err_of(c.get_users_ids(store, &too_many, false)).contains("MAX_IDS_PER_CALL"));
            assert!(
                err_of(c.get_users(store, IdSequence::new(0, 1, 100_000_001), true))
                    .contains("MAX_ROWS_PER_CALL")
            );
            // count 0 is allowed: it measures a call's fixed cost.
            let r = insert(c, store, IdSequence::new(0, 1, 0));
            assert_eq!((r.rows_inserted, r.rows_replaced), (0, 0), "{store}");
        }
        let e = err_of(c.add_users_ids("sqlite", &[1, i64::MAX as u64 + 1]));
        assert!(
            e.contains(&(i64::MAX as u64 + 1).to_string()) && e.contains("exceeds"),
            "{e}"
        );
        for store in ["heap", "btree"] {
            assert!(
                err_of(c.add_users(store, IdSequence::new(u64::MAX - 1, 2, 2)))
                    .contains("overflow")
            );
        }
        assert_eq!(
            err_of(c.configure_heap(&heap_config("json"))),
            "unknown heap encoding \"json\"; accepted: candid, cbor"
        );
        // An absent field keeps the encoding; a refused one changed nothing.
        let kept = c
            .configure_heap(&HeapConfig::default())
            .unwrap()
            .value
            .unwrap();
        assert_eq!(kept.encoding, "candid");
        assert!(
            err_of(c.add_users("sqlite", IdSequence::new(i64::MAX as u64, 1, 2)))
                .contains("exceeds")
        );
        assert!(err_of(c.set_payload_size(2 << 20)).contains("1048576"));
        let bad =
            |c: &mut BenchClient<'_>, config: SqliteConfig| err_of(c.configure_sqlite(&config));
        let e = bad(
            c,
            SqliteConfig {
                journal_mode: Some("BANANA".into()),
                ..Default::default()
            },
        );
        assert!(e.contains("BANANA") && e.contains("DELETE"), "{e}");
        let e = bad(
            c,
            SqliteConfig {
                synchronous: Some("SOMETIMES".into()),
                ..Default::default()
            },
        );
        assert!(e.contains("SOMETIMES"), "{e}");
        let e = bad(
            c,
            SqliteConfig {
                locking_mode: Some("SHARED".into()),
                ..Default::default()
            },
        );
        assert!(e.contains("SHARED"), "{e}");
        for size in [1000, 256, 131072] {
            let e = bad(
                c,
                SqliteConfig {
                    page_size: Some(size),
                    ..Default::default()
                },
            );
            assert!(
                e.contains(&size.to_string()) && e.contains("power of two"),
                "{e}"
            );
        }
        insert(c, "sqlite", IdSequence::new(0, 1, 3));
        let e = bad(
            c,
            SqliteConfig {
                autoincrement: Some(true),
                ..Default::default()
            },
        );
        assert!(e.contains("empty users table"), "{e}");
        // None of the refusals changed what is in force.
        let stats = c.stats().unwrap();
        assert_eq!((stats.btree_rows, stats.sqlite_rows), (0, 3));
        assert_eq!(stats.payload_size, 100);
    });
}

fn every_journal_mode_is_applied_and_read_back(engine: &mut dyn Engine) {
    with_canister(engine, |c| {
        insert(c, "sqlite", IdSequence::new(0, 10, 100));
        for mode in ["DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF"] {
            let config = SqliteConfig {
                journal_mode: Some(mode.to_lowercase()),
                ..Default::default()
            };
            let settings = c.configure_sqlite(&config).unwrap().value.unwrap();
            assert_eq!(settings.journal_mode, mode);
            assert_eq!(c.stats().unwrap().journal_mode, mode);
            let r = c
                .add_users(
                    "sqlite",
                    IdSequence::new(10_000 + settings.page_size as u64, 1, 2),
                )
                .unwrap()
                .value;
            assert!(r.is_ok(), "{mode}: {r:?}");
            c.clear("sqlite").unwrap().value.unwrap();
            insert(c, "sqlite", IdSequence::new(0, 10, 100));
        }
    });
}

fn autoincrement_can_be_chosen_on_an_empty_table(engine: &mut dyn Engine) {
    with_canister(engine, |c| {
        let s = c
            .configure_sqlite(&SqliteConfig {
                autoincrement: Some(true),
                page_size: Some(8192),
                ..Default::default()
            })
            .unwrap()
            .value
            .unwrap();
        assert!(s.autoincrement);
        assert_eq!(s.page_size, 8192);
        insert(c, "sqlite", IdSequence::new(0, 1, 10));
        assert_eq!(c.stats().unwrap().sqlite_page_size, 8192);
    });
}

fn both_stores_and_the_configuration_survive_an_upgrade(engine: &mut dyn Engine) {
    let canister = {
        let mut c = BenchClient::install(engine, wasm()).unwrap();
        insert(&mut c, "btree", IdSequence::new(0, 10, 300));
        insert(&mut c, "sqlite", IdSequence::new(0, 10, 300));
        c.configure_sqlite(&SqliteConfig {
            journal_mode: Some("MEMORY".into()),
            ..Default::default()
        })
        .unwrap()
        .value
        .unwrap();
        c.set_payload_size(7).unwrap().value.unwrap();
        c.canister
    };
    let mut c = upgraded(engine, canister);
    let stats = c.stats().unwrap();
    assert_eq!((stats.btree_rows, stats.sqlite_rows), (300, 300));
    assert_eq!(stats.journal_mode, "MEMORY");
    assert_eq!(stats.payload_size, 7);
    for store in ["btree", "sqlite"] {
        let r = c
            .get_users(store, IdSequence::new(0, 10, 300), false)
            .unwrap()
            .value
            .unwrap();
        assert_eq!(
            (r.rows_found, r.bytes_read),
            (300, 300 * 100),
            "{store}: rows written before keep their payload"
        );
        let r = insert(&mut c, store, IdSequence::new(5, 10, 10));
        assert_eq!(r.rows_inserted, 10);
    }
}

fn calls_the_canister_cannot_serve_are_rejected_with_the_replica_codes(engine: &mut dyn Engine) {
    let (canister, out) = engine.install(wasm(), &Encode!().unwrap()).unwrap();
    out.result.expect("the canister installs");
    let reject = |r: Result<Vec<u8>, Reject>| r.expect_err("the replica should reject this");
    let e = reject(
        engine
            .update(canister, "no_such_method", &Encode!().unwrap())
            .unwrap()
            .result,
    );
    assert_eq!(e.error_code, ErrorCode::CanisterMethodNotFound, "{e}");
    assert!(e.message.contains("no_such_method"), "{e}");
    // An update method is not a query.
    let e = reject(
        engine
            .query(
                canister,
                "add_users_btree",
                &IdSequence::new(0, 1, 1).encode().unwrap(),
            )
            .unwrap()
            .result,
    );
    assert_eq!(e.error_code, ErrorCode::CanisterMethodNotFound, "{e}");
    assert!(e.message.contains("add_users_btree"), "{e}");
    // Nothing was inserted by the refused query.
    let mut c = BenchClient::attach(engine, canister);
    assert_eq!(c.stats().unwrap().btree_rows, 0);
}

fn undecodable_arguments_trap_and_change_nothing(engine: &mut dyn Engine) {
    with_canister(engine, |c| {
        insert(c, "btree", IdSequence::new(0, 1, 5));
        let canister = c.canister;
        // Wrong types, a missing value and bytes that are not Candid: ic-cdk's decoder traps.
        for (method, arg, says) in [
            ("add_users_btree", Encode!(&"five rows").unwrap(), "decod"),
            ("add_users_sqlite_ids", Encode!(&-3i32).unwrap(), "decod"),
            ("set_payload_size", Encode!().unwrap(), "no more values"),
            ("set_payload_size", b"not candid".to_vec(), "panicked"),
        ] {
            let e = c
                .engine
                .update(canister, method, &arg)
                .unwrap()
                .result
                .expect_err("undecodable arguments trap");
            assert_eq!(e.error_code, ErrorCode::CanisterCalledTrap, "{method}: {e}");
            assert!(e.message.to_lowercase().contains(says), "{method}: {e}");
        }
        let stats = c.stats().unwrap();
        assert_eq!((stats.btree_rows, stats.sqlite_rows), (5, 0));
        assert_eq!(stats.payload_size, 100);
    });
}

fn reinstall_wipes_both_stores(engine: &mut dyn Engine) {
    let canister = {
        let mut c = BenchClient::install(engine, wasm()).unwrap();
        insert(&mut c, "btree", IdSequence::new(0, 1, 50));
        insert(&mut c, "sqlite", IdSequence::new(0, 1, 50));
        c.set_payload_size(9).unwrap().value.unwrap();
        c.canister
    };
    engine
        .reinstall(canister, wasm(), &Encode!().unwrap())
        .unwrap()
        .result
        .expect("the reinstall succeeds");
    let mut c = BenchClient::attach(engine, canister);
    let stats = c.stats().unwrap();
    assert_eq!((stats.btree_rows, stats.sqlite_rows), (0, 0));
    assert_eq!(
        stats.payload_size, 100,
        "settings are back to their defaults"
    );
    let r = insert(&mut c, "sqlite", IdSequence::new(0, 1, 50));
    assert_eq!(r.rows_inserted, 50, "the old ids are free again");
}

fn a_snapshot_restores_both_stores(engine: &mut dyn Engine) {
    let canister = {
        let mut c = BenchClient::install(engine, wasm()).unwrap();
        insert(&mut c, "btree", IdSequence::new(0, 10, 100));
        insert(&mut c, "sqlite", IdSequence::new(0, 10, 100));
        c.canister
    };
    let base = engine.snapshot(canister).unwrap();
    let measure = |engine: &mut dyn Engine| {
        let mut c = BenchClient::attach(engine, canister);
        let btree = insert(&mut c, "btree", IdSequence::new(501, 10, 10));
        let sqlite = insert(&mut c, "sqlite", IdSequence::new(501, 10, 10));
        let stats = c.stats().unwrap();
        assert_eq!((stats.btree_rows, stats.sqlite_rows), (110, 110));
        (btree.instructions, sqlite.instructions)
    };
    let first = measure(engine);
    engine.restore(canister, base).unwrap();
    let stats = BenchClient::attach(engine, canister).stats().unwrap();
    assert_eq!((stats.btree_rows, stats.sqlite_rows), (100, 100));
    // The same ids insert again (SQLite would refuse them had they survived), at the same cost.
    let second = measure(engine);
    assert_eq!(
        first, second,
        "the same state gives the same store instructions"
    );
    let e = engine
        .restore(canister, icbench::engine::SnapshotId(99))
        .unwrap_err()
        .to_string();
    assert!(e.contains("99"), "{e}");
}

/// Embedded only: it compares the engine's whole-state hash, which PocketIC does not expose.
#[test]
fn the_same_calls_cost_the_same_instructions_every_run() {
    let run = || {
        let mut engine = EmbeddedEngine::default();
        let mut c = BenchClient::install(&mut engine, wasm()).unwrap();
        let mut counts = Vec::new();
        for store in ["btree", "sqlite"] {
            insert(&mut c, store, IdSequence::new(0, 10, 2_000));
            let m = c.add_users(store, IdSequence::new(5_001, 10, 10)).unwrap();
            counts.push((
                m.value.unwrap().instructions,
                m.message.instructions,
                m.message.heap_dirty_pages,
                m.message.stable_dirty_pages,
            ));
            let m = c
                .get_users(store, IdSequence::new(0, 10, 100), false)
                .unwrap();
            counts.push((m.value.unwrap().instructions, m.message.instructions, 0, 0));
        }
        let canister = c.canister;
        (counts, engine.state_hash(canister).unwrap())
    };
    let (a, hash_a) = run();
    let (b, hash_b) = run();
    assert_eq!(a, b);
    assert_eq!(hash_a, hash_b);
    // The charged message includes the store work and the heap dirty-page charge.
    for (store_work, message, heap_dirty, _) in &a {
        assert!(message > store_work);
        assert!(*message >= store_work + heap_dirty * 1_000);
    }
}

/// Bytes of a CBOR head (major type + argument) for the argument `n`: RFC 8949 §3.
fn cbor_head_len(n: u64) -> u64 {
    match n {
        0..=23 => 1,
        24..=0xff => 2,
        0x100..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    }
}

/// Bytes of an unsigned LEB128 number (Candid's lengths).
fn leb128_len(mut n: u64) -> u64 {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// Exact size of `BTreeMap<u64, String>` encoded, for `ids` and `payload`-byte values.
fn encoded_map_len(encoding: &str, ids: &[u64], payload: u64) -> u64 {
    let rows = ids.len() as u64;
    match encoding {
        // "DIDL", 2 types (vec 1; record { 0: nat64; 1: text }) = 1 + 2 + 6 bytes, one
        // argument of type 0 = 2 bytes; then the length and each (u64, text) entry.
        "candid" => 4 + 9 + 2 + leb128_len(rows) + rows * (8 + leb128_len(payload) + payload),
        // A map head, then each key as an unsigned integer and each value as a text.
        "cbor" => {
            cbor_head_len(rows)
                + ids.iter().map(|&id| cbor_head_len(id)).sum::<u64>()
                + rows * (cbor_head_len(payload) + payload)
        }
        other => panic!("no encoding {other}"),
    }
}

fn heap_config(encoding: &str) -> HeapConfig {
    HeapConfig {
        encoding: Some(encoding.into()),
    }
}

fn the_heap_store_round_trips_an_upgrade_in_both_encodings(engine: &mut dyn Engine) {
    for encoding in ["candid", "cbor"] {
        // 300 ids in order plus ids out of order, large and small (CBOR's sizes differ).
        let mut ids: Vec<u64> = (0..300).map(|i| i * 10).collect();
        ids.extend([5, 7, u64::MAX, 1 << 40]);
        let canister = {
            let mut c = BenchClient::install(engine, wasm()).unwrap();
            let set = c
                .configure_heap(&heap_config(encoding))
                .unwrap()
                .value
                .unwrap();
            assert_eq!(set.encoding, encoding);
            c.set_payload_size(30).unwrap().value.unwrap();
            insert(&mut c, "heap", IdSequence::new(0, 10, 300));
            c.add_users_ids("heap", &ids[300..]).unwrap().value.unwrap();
            // The other stores are untouched by the heap store's upgrade path.
            insert(&mut c, "btree", IdSequence::new(0, 1, 20));
            let before = c.upgrade_stats().unwrap();
            assert_eq!(
                (
                    before.pre_upgrade_instructions,
                    before.post_upgrade_instructions
                ),
                (0, 0),
                "never upgraded"
            );
            c.canister
        };
        let out = engine
            .upgrade(canister, wasm(), &Encode!().unwrap())
            .unwrap();
        let metered = out.report.instructions;
        out.result.expect("the upgrade succeeds");
        let mut c = BenchClient::attach(engine, canister);
        let heap = c.heap_stats().unwrap();
        assert_eq!((heap.rows, heap.encoding.as_str()), (304, encoding));
        let up = c.upgrade_stats().unwrap();
        assert_eq!(up.encoding, encoding);
        assert_eq!(
            up.encoded_bytes,
            encoded_map_len(encoding, &ids, 30),
            "{encoding}: the whole map, nothing else"
        );
        assert!(up.pre_upgrade_instructions > 0 && up.post_upgrade_instructions > 0);
        assert!(
            up.pre_upgrade_instructions + up.post_upgrade_instructions <= metered,
            "{encoding}: the hooks' own counts {up:?} are part of the {metered} metered"
        );
        // Every row is back with its payload, and in id order for scans.
        for replicated in [false, true] {
            let r = c
                .get_users_ids("heap", &ids, replicated)
                .unwrap()
                .value
                .unwrap();
            assert_eq!((r.rows_found, r.bytes_read), (304, 304 * 30), "{encoding}");
            let r = c
                .scan_users("heap", 2_990, 10, replicated)
                .unwrap()
                .value
                .unwrap();
            assert_eq!(r.rows_found, 3, "{encoding}: 2990, 2^40, u64::MAX");
        }
        let r = c
            .get_users("heap", IdSequence::new(1, 10, 299), false)
            .unwrap()
            .value
            .unwrap();
        assert_eq!(r.rows_found, 0, "{encoding}: no row appeared");
        assert_eq!(c.stats().unwrap().btree_rows, 20);
        // The map is live again: an insert overwrites the restored rows.
        let r = insert(&mut c, "heap", IdSequence::new(0, 5, 4));
        assert_eq!(
            (r.rows_inserted, r.rows_replaced),
            (1, 3),
            "{encoding}: 15 is new"
        );
    }
}

fn an_emptied_heap_store_stays_empty_across_upgrades(engine: &mut dyn Engine) {
    let canister = BenchClient::install(engine, wasm()).unwrap().canister;
    // Never used: nothing is written, nothing read back.
    let mut c = upgraded(engine, canister);
    let up = c.upgrade_stats().unwrap();
    assert_eq!((up.encoded_bytes, up.encoding.as_str()), (0, "candid"));
    assert!(up.pre_upgrade_instructions > 0 && up.post_upgrade_instructions > 0);
    assert_eq!(c.heap_stats().unwrap().rows, 0);
    c.configure_heap(&heap_config("cbor"))
        .unwrap()
        .value
        .unwrap();
    insert(&mut c, "heap", IdSequence::new(0, 1, 40));
    let mut c = upgraded(engine, canister);
    assert_eq!(c.heap_stats().unwrap().rows, 40);
    assert_eq!(c.upgrade_stats().unwrap().encoding, "cbor");
    // Emptied after a save: the next save writes a zero length, so the old record is not
    // read back.
    assert_eq!(c.clear("heap").unwrap().value.unwrap(), 40);
    let mut c = upgraded(engine, canister);
    assert_eq!(c.heap_stats().unwrap().rows, 0);
    assert_eq!(c.upgrade_stats().unwrap().encoded_bytes, 0);
}

fn a_failed_upgrade_keeps_the_heap_store_and_the_old_module(engine: &mut dyn Engine) {
    let canister = {
        let mut c = BenchClient::install(engine, wasm()).unwrap();
        c.configure_heap(&heap_config("cbor"))
            .unwrap()
            .value
            .unwrap();
        insert(&mut c, "heap", IdSequence::new(0, 3, 500));
        c.canister
    };
    // pre_upgrade (the bench canister's: it encodes and writes the map) succeeds, then the
    // new module's post_upgrade traps: the replica rolls the whole upgrade back.
    let trapping = wat::parse_str(
        r#"(module (func $trap unreachable) (memory 1) (export "canister_post_upgrade" (func $trap)))"#,
    )
    .unwrap();
    let out = engine
        .upgrade(canister, &trapping, &Encode!().unwrap())
        .unwrap();
    let e = out.result.expect_err("post_upgrade traps");
    assert_eq!(e.error_code, ErrorCode::CanisterTrapped, "{e}");
    assert!(e.message.contains("unreachable"), "{e}");
    let mut c = BenchClient::attach(engine, canister);
    // The old module answers, with the heap exactly as before and no upgrade recorded.
    let heap = c.heap_stats().unwrap();
    assert_eq!((heap.rows, heap.encoding.as_str()), (500, "cbor"));
    let r = c
        .get_users("heap", IdSequence::new(0, 3, 500), false)
        .unwrap()
        .value
        .unwrap();
    assert_eq!((r.rows_found, r.bytes_read), (500, 500 * 100));
    let up = c.upgrade_stats().unwrap();
    assert_eq!(
        (up.pre_upgrade_instructions, up.encoded_bytes),
        (0, 0),
        "pre_upgrade's writes to stable memory were rolled back too"
    );
    // And a good upgrade afterwards still carries the rows.
    let mut c = upgraded(engine, canister);
    assert_eq!(c.heap_stats().unwrap().rows, 500);
}
