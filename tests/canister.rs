//! The bench canister's contract, on the embedded engine: row counts, overwrite and
//! rollback semantics, reads, configuration, every error path, upgrade, determinism.

use std::sync::OnceLock;

use candid::Encode;
use icbench::bench_canister::{ensure_built, BenchClient, SqliteConfig};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::Engine;

fn wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| ensure_built(true).expect("scripts/build-canister.sh builds the canister"))
}

fn with_canister<R>(f: impl FnOnce(&mut BenchClient<'_>) -> R) -> R {
    let mut engine = EmbeddedEngine::default();
    let mut client = BenchClient::install(&mut engine, wasm()).expect("the canister installs");
    f(&mut client)
}

fn err_of<T: std::fmt::Debug>(r: Result<T, String>) -> String {
    r.expect_err("the canister should refuse this")
}

#[test]
fn inserts_count_rows_not_loop_bounds() {
    with_canister(|c| {
        for store in ["btree", "sqlite"] {
            let r = c.add_users(store, 0, 10, 25).unwrap().value.unwrap();
            assert_eq!((r.rows_inserted, r.rows_replaced), (25, 0), "{store}");
            assert!(r.instructions > 0);
        }
        let stats = c.stats().unwrap();
        assert_eq!((stats.btree_rows, stats.sqlite_rows), (25, 25));
        assert_eq!(stats.payload_size, 100);
    });
}

#[test]
fn the_btree_overwrites_and_counts_replacements() {
    with_canister(|c| {
        c.add_users("btree", 0, 10, 10).unwrap().value.unwrap();
        // ids 50..=140: 50, 60, 70, 80, 90 exist.
        let r = c.add_users("btree", 50, 10, 10).unwrap().value.unwrap();
        assert_eq!((r.rows_inserted, r.rows_replaced), (5, 5));
        assert_eq!(c.stats().unwrap().btree_rows, 15);
    });
}

#[test]
fn an_existing_sqlite_id_is_an_error_and_nothing_is_inserted() {
    with_canister(|c| {
        c.add_users("sqlite", 0, 10, 10).unwrap().value.unwrap();
        // 85, 90, 95: 90 exists (0, 10, ..., 90 were inserted).
        let e = err_of(c.add_users("sqlite", 85, 5, 3).unwrap().value);
        assert!(e.contains("id 90 already exists"), "{e}");
        assert!(e.contains("rolled back"), "{e}");
        assert_eq!(c.stats().unwrap().sqlite_rows, 10);
        let e = err_of(c.add_users_ids("sqlite", &[7, 20]).unwrap().value);
        assert!(e.contains("id 20 already exists"), "{e}");
        assert_eq!(c.stats().unwrap().sqlite_rows, 10);
    });
}

#[test]
fn reads_find_exactly_the_rows_present() {
    with_canister(|c| {
        c.set_payload_size(40).unwrap().value.unwrap();
        for store in ["btree", "sqlite"] {
            c.add_users(store, 0, 10, 50).unwrap().value.unwrap();
            for replicated in [false, true] {
                let r = c
                    .get_users(store, 0, 10, 20, replicated)
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!((r.rows_found, r.bytes_read), (20, 800), "{store}");
                let r = c
                    .get_users(store, 5, 10, 20, replicated)
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

#[test]
fn bad_arguments_are_errors_naming_the_problem() {
    with_canister(|c| {
        for store in ["btree", "sqlite"] {
            assert!(err_of(c.add_users(store, 0, 0, 5).unwrap().value).contains("step"));
            assert!(err_of(c.add_users(store, 0, 1, 100_001).unwrap().value)
                .contains("MAX_ROWS_PER_CALL"));
            assert!(err_of(c.get_users(store, 0, 0, 5, false).unwrap().value).contains("step"));
            assert!(
                err_of(c.scan_users(store, 0, 100_001, false).unwrap().value)
                    .contains("MAX_ROWS_PER_CALL")
            );
            let too_many = vec![1u64; 100_001];
            assert!(err_of(c.add_users_ids(store, &too_many).unwrap().value)
                .contains("MAX_ROWS_PER_CALL"));
        }
        assert!(
            err_of(c.add_users("btree", u64::MAX - 1, 2, 2).unwrap().value).contains("overflow")
        );
        assert!(
            err_of(c.add_users("sqlite", i64::MAX as u64, 1, 2).unwrap().value).contains("exceeds")
        );
        assert!(err_of(c.set_payload_size(2 << 20).unwrap().value).contains("1048576"));
        let bad = |c: &mut BenchClient<'_>, config: SqliteConfig| {
            err_of(c.configure_sqlite(&config).unwrap().value)
        };
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
        c.add_users("sqlite", 0, 1, 3).unwrap().value.unwrap();
        let e = bad(
            c,
            SqliteConfig {
                autoincrement: Some(true),
                ..Default::default()
            },
        );
        assert!(e.contains("empty users table"), "{e}");
        // None of the refusals changed what is in force.
        assert_eq!(c.stats().unwrap().sqlite_rows, 3);
    });
}

#[test]
fn every_journal_mode_is_applied_and_read_back() {
    with_canister(|c| {
        c.add_users("sqlite", 0, 10, 100).unwrap().value.unwrap();
        for mode in ["DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF"] {
            let config = SqliteConfig {
                journal_mode: Some(mode.to_lowercase()),
                ..Default::default()
            };
            let settings = c.configure_sqlite(&config).unwrap().value.unwrap();
            assert_eq!(settings.journal_mode, mode);
            assert_eq!(c.stats().unwrap().journal_mode, mode);
            let r = c
                .add_users("sqlite", 10_000 + settings.page_size as u64, 1, 2)
                .unwrap()
                .value;
            assert!(r.is_ok(), "{mode}: {r:?}");
            c.clear("sqlite").unwrap().value.unwrap();
            c.add_users("sqlite", 0, 10, 100).unwrap().value.unwrap();
        }
    });
}

#[test]
fn autoincrement_can_be_chosen_on_an_empty_table() {
    with_canister(|c| {
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
        c.add_users("sqlite", 0, 1, 10).unwrap().value.unwrap();
        assert_eq!(c.stats().unwrap().sqlite_page_size, 8192);
    });
}

#[test]
fn both_stores_and_the_configuration_survive_an_upgrade() {
    let mut engine = EmbeddedEngine::default();
    let canister = {
        let mut c = BenchClient::install(&mut engine, wasm()).unwrap();
        c.add_users("btree", 0, 10, 300).unwrap().value.unwrap();
        c.add_users("sqlite", 0, 10, 300).unwrap().value.unwrap();
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
    let out = engine
        .upgrade(canister, wasm(), &Encode!().unwrap())
        .unwrap();
    out.result.expect("the upgrade succeeds");
    let mut c = BenchClient::attach(&mut engine, canister);
    let stats = c.stats().unwrap();
    assert_eq!((stats.btree_rows, stats.sqlite_rows), (300, 300));
    assert_eq!(stats.journal_mode, "MEMORY");
    assert_eq!(stats.payload_size, 7);
    for store in ["btree", "sqlite"] {
        let r = c
            .get_users(store, 0, 10, 300, false)
            .unwrap()
            .value
            .unwrap();
        assert_eq!(
            (r.rows_found, r.bytes_read),
            (300, 300 * 100),
            "{store}: rows written before keep their payload"
        );
        let r = c.add_users(store, 5, 10, 10).unwrap().value.unwrap();
        assert_eq!(r.rows_inserted, 10);
    }
}

#[test]
fn the_same_calls_cost_the_same_instructions_every_run() {
    let run = || {
        let mut engine = EmbeddedEngine::default();
        let mut c = BenchClient::install(&mut engine, wasm()).unwrap();
        let mut counts = Vec::new();
        for store in ["btree", "sqlite"] {
            c.add_users(store, 0, 10, 2_000).unwrap().value.unwrap();
            let m = c.add_users(store, 5_001, 10, 10).unwrap();
            counts.push((
                m.value.unwrap().instructions,
                m.message.instructions,
                m.message.heap_dirty_pages,
                m.message.stable_dirty_pages,
            ));
            let m = c.get_users(store, 0, 10, 100, false).unwrap();
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
