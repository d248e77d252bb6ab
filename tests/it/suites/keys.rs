//! The keys suite (seed 002): its matrix, key layouts, fan-out, canister methods and an end-to-end run.

use super::*;

use icbench::suites::keys::{self as key_suite, PageStats};

#[test]
fn keys_matrix_is_every_key_type_by_every_store() {
    let cfg = key_suite::Config::default();
    assert_eq!(cfg.rows, 10_000);
    let m = cfg.matrix();
    let pairs: Vec<(&str, &str)> = m.iter().map(|s| (s.key_type, s.store)).collect();
    let mut expected = Vec::new();
    for k in ["u64", "ulid", "uuid", "hex32"] {
        for s in [
            "btree",
            "sqlite_rowid",
            "sqlite_without_rowid",
            "sqlite_secondary",
        ] {
            expected.push((k, s));
        }
    }
    assert_eq!(pairs, expected);
    let sqlite_only = key_suite::Config {
        stores: vec![StoreKind::Sqlite],
        ..cfg
    };
    assert_eq!(sqlite_only.matrix().len(), 12);
}

#[test]
fn key_generators_have_the_layouts_of_their_types() {
    let rows = 300;
    let u64s = key_suite::keys("u64", rows, 1);
    assert_eq!(u64s[0], 1u64.to_be_bytes());
    assert_eq!(u64s[299], 300u64.to_be_bytes());
    let ulids = key_suite::keys("ulid", rows, 1);
    assert!(ulids.iter().all(|k| k.len() == 16));
    // One millisecond per 100-key message, increasing; monotonic within the message.
    assert_eq!(ulids[0][..6], ulids[99][..6]);
    assert!(ulids[99][..6] < ulids[100][..6]);
    assert!(ulids[..100].windows(2).all(|w| w[0] < w[1]));
    let uuids = key_suite::keys("uuid", rows, 1);
    assert!(uuids
        .iter()
        .all(|k| k.len() == 16 && k[6] >> 4 == 4 && k[8] >> 6 == 0b10));
    let hex = key_suite::keys("hex32", rows, 1);
    assert!(hex.iter().all(|k| k.len() == 32
        && k.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))));
    for keys in [&ulids, &uuids, &hex] {
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), rows as usize);
    }
    assert_eq!(key_suite::keys("uuid", rows, 1), uuids);
    assert_ne!(key_suite::keys("uuid", rows, 2), uuids);
    let lookups = key_suite::lookup_indices(1_000, 5);
    assert_eq!(lookups.len(), 1_000);
    assert_eq!(
        lookups
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        1_000
    );
}

#[test]
fn fanout_is_sqlite3_analyzers() {
    let pages = |interior, leaf| PageStats {
        store: "sqlite".into(),
        key_type: "ulid".into(),
        btree: "t".into(),
        interior_pages: interior,
        leaf_pages: leaf,
        overflow_pages: 0,
        bytes: 0,
    };
    // A published sqlite3_analyzer report: 46 interior and 8051 leaf pages give 176.00.
    assert_eq!(pages(46, 8_051).fanout(), Some(176));
    // Integer division, as the analyzer's Tcl does.
    assert_eq!(pages(3, 35).fanout(), Some(12));
    assert_eq!(pages(0, 1).fanout(), None);
}

#[test]
fn keys_methods_contract() {
    with_canister(|c| {
        let err = c.keys_reset("redis", "u64").unwrap().value.unwrap_err();
        assert!(
            err.contains("btree, sqlite_rowid, sqlite_without_rowid, sqlite_secondary"),
            "{err}"
        );
        let err = c
            .keys_reset("btree", "snowflake")
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("u64, ulid, uuid, hex32"), "{err}");
        let err = c
            .keys_lookup("sqlite_rowid", "ulid", &[vec![0; 16]])
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("call keys_reset first"), "{err}");
        let err = c.keys_stats("sqlite_rowid", "ulid").unwrap().unwrap_err();
        assert!(err.contains("call keys_reset first"), "{err}");
        for store in [
            "btree",
            "sqlite_rowid",
            "sqlite_without_rowid",
            "sqlite_secondary",
        ] {
            for key_type in ["u64", "ulid", "uuid", "hex32"] {
                assert_eq!(c.keys_reset(store, key_type).unwrap().value, Ok(0));
                let keys = key_suite::keys(key_type, 3, 9);
                let r = c
                    .keys_insert(store, key_type, &keys, 10)
                    .unwrap()
                    .value
                    .unwrap();
                let key_len = keys[0].len() as u64;
                assert_eq!(
                    (r.ops, r.bytes),
                    (3, 3 * (key_len + 10)),
                    "{store} {key_type}"
                );
                let mut wanted = vec![keys[2].clone(), keys[0].clone()];
                wanted.push(key_suite::keys(key_type, 5, 10)[4].clone());
                let r = c
                    .keys_lookup(store, key_type, &wanted)
                    .unwrap()
                    .value
                    .unwrap();
                assert_eq!((r.ops, r.found, r.bytes), (3, 2, 20), "{store} {key_type}");
                let stats = c.keys_stats(store, key_type).unwrap().unwrap();
                assert_eq!(stats.rows, 3);
                assert!(stats.stable_bytes > 0);
                let names: Vec<&str> = stats.btrees.iter().map(|b| b.name.as_str()).collect();
                let table = format!("keys_{key_type}_{}", store.trim_start_matches("sqlite_"));
                let expected: Vec<String> = match (store, key_type) {
                    ("btree", _) => vec![],
                    // INTEGER PRIMARY KEY is the rowid: one B-tree.
                    ("sqlite_rowid", "u64") | ("sqlite_without_rowid", _) => vec![table],
                    ("sqlite_rowid", _) => {
                        vec![table.clone(), format!("sqlite_autoindex_{table}_1")]
                    }
                    _ => vec![table.clone(), format!("{table}_k")],
                };
                assert_eq!(names, expected, "{store} {key_type}");
            }
        }
        // A present key: Err for the map and the keyed schemas, nothing inserted.
        let keys = key_suite::keys("uuid", 3, 9);
        for store in ["btree", "sqlite_rowid", "sqlite_without_rowid"] {
            assert!(c
                .keys_insert(store, "uuid", &keys[..1], 10)
                .unwrap()
                .value
                .is_err());
        }
        let err = c
            .keys_insert("btree", "ulid", &[vec![1; 15]], 10)
            .unwrap()
            .value
            .unwrap_err();
        assert!(
            err.contains("a ulid key must be 16 bytes; got 15 bytes"),
            "{err}"
        );
        let err = c
            .keys_insert(
                "sqlite_rowid",
                "u64",
                &[u64::MAX.to_be_bytes().to_vec()],
                10,
            )
            .unwrap()
            .value
            .unwrap_err();
        assert!(err.contains("below 2^63"), "{err}");
        users_stores_untouched(c);
    });
}

#[test]
fn keys_end_to_end_is_deterministic() {
    let args = ["--suite", "keys", "--keys-rows", "1000"];
    let (_, a, b, stdout) = end_to_end_twice("keys", &args);
    assert_eq!(key_suite::page_stats(&a), key_suite::page_stats(&b));
    assert_eq!(a.results.len(), 48);
    for r in &a.results {
        assert_eq!(r.status, icbench::report::Status::Ok, "{r:?}");
    }
    // SQLite B-trees per key type: u64 rowid 1, without rowid 1, secondary 2 (4); the
    // other key types rowid 2 (table + autoindex), 1, 2 (5 each).
    assert_eq!(key_suite::page_stats(&a).len(), 4 + 3 * 5);
    assert!(stdout.contains("stable bytes per row"), "{stdout}");
    assert!(stdout.contains("keys_ulid_without_rowid"), "{stdout}");
}
