use super::*;

#[test]
fn the_stores_values_are_the_table_s_stores_rows_each_with_its_help() {
    let names: Vec<&str> = StoreKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(
        names,
        [
            "heap",
            "btree",
            "sqlite",
            "sqlite-vfs",
            "mo-map",
            "mo-pure-map",
            "mo-region",
            "mo-map-classic"
        ]
    );
    for k in StoreKind::ALL {
        let value = clap::ValueEnum::to_possible_value(&k).expect("a --stores value");
        assert_eq!(value.get_name(), k.name());
        assert!(value.get_help().is_some(), "{k}");
    }
    // The tune variant's stores are not --stores values.
    let variants: Vec<&str> = StoreKind::every()
        .filter(|k| k.def().selected_by == SelectedBy::TuneVariants)
        .map(|k| k.name())
        .collect();
    assert_eq!(variants, ["heap-talc", "btree-talc", "btree-bounded"]);
    assert!(variants
        .iter()
        .all(|v| find(v).unwrap().module() == Module::TUNE));
}

#[test]
fn names_and_records_are_unique_and_the_default_stems_are_the_canister_s() {
    let every: Vec<StoreKind> = StoreKind::every().collect();
    for (i, a) in every.iter().enumerate() {
        for b in &every[i + 1..] {
            assert_ne!(a.name(), b.name());
            assert_ne!(a.def().record, b.def().record);
        }
    }
    let stems: Vec<&str> = StoreKind::ALL
        .iter()
        .filter(|k| k.module() == Module::DEFAULT)
        .map(|k| k.stem())
        .collect();
    assert_eq!(stems, names::USERS_STORES);
    // A variant takes the calls of the store it varies, unless its value type differs.
    for v in StoreKind::every().filter(|k| k.def().variant_of.is_some()) {
        let base = v.base();
        assert_eq!(base.module(), Module::DEFAULT);
        assert_eq!(v.def().memory, base.def().memory, "{v}");
        assert_eq!(
            v.stem() == base.stem(),
            v.def().max_value_size.is_none(),
            "{v}"
        );
    }
}

#[test]
fn every_store_s_record_parses_back_to_it_with_its_label() {
    let mut all = Vec::new();
    for kind in StoreKind::every() {
        for store in kind.stores(&JournalMode::ALL) {
            let back = parse(store.kind(), &store.journal_column());
            assert_eq!(back, Some(store), "{store:?}");
            assert_eq!(label(store.kind(), &store.journal_column()), store.label());
            all.push(store);
        }
    }
    // Heap, the StableBTreeMap, SQLite's six modes, SQLite on ic-sqlite-vfs, Motoko's three,
    // the classical Map and the three variants.
    assert_eq!(all.len(), 16);
    let ranks: Vec<usize> = all.iter().map(|s| s.rank()).collect();
    assert_eq!(ranks, (0..all.len()).collect::<Vec<_>>());
    assert_eq!(parse("sqlite", ""), None);
    assert_eq!(parse("sqlite", "FAST"), None);
    assert_eq!(parse("redis", ""), None);
    assert_eq!(
        parse("btree", "ignored"),
        Some(Store::new(StoreKind::named("btree"), None))
    );
}

#[test]
fn a_store_s_record_is_its_stores_name_and_a_former_one_still_parses() {
    // One spelling in ids, columns, --profile patterns and --wasm names: the --stores name.
    let vfs = StoreKind::named("sqlite-vfs");
    assert_eq!(vfs.def().record, "sqlite-vfs");
    assert_eq!(vfs.stem(), "sqlite_vfs");
    assert_eq!(vfs.module().name, "sqlite-vfs");
    // The results.json of older versions say sqlite_vfs.
    let store = Some(Store::new(vfs, None));
    assert_eq!(parse("sqlite_vfs", ""), store);
    assert_eq!(parse("sqlite-vfs", ""), store);
    assert_eq!(label("sqlite_vfs", ""), "SQLite (ic-sqlite-vfs)");
    assert_eq!(current_record("sqlite_vfs"), "sqlite-vfs");
    assert_eq!(
        current_record("sqlite_vfs cache_size=-32768"),
        "sqlite-vfs cache_size=-32768"
    );
    assert_eq!(current_record("sqlite-vfs"), "sqlite-vfs");
    assert_eq!(
        current_record("sqlite page_size=4096"),
        "sqlite page_size=4096"
    );
    assert_eq!(current_record("redis"), "redis");
    // No former spelling is another store's record.
    for kind in StoreKind::every() {
        for former in kind.def().formerly {
            assert!(
                StoreKind::every().all(|k| k.def().record != *former),
                "{former}"
            );
        }
    }
}

#[test]
fn a_record_s_label_says_what_its_columns_hold() {
    assert_eq!(label("sqlite", "WAL"), "SQLite WAL");
    assert_eq!(label("sqlite", ""), "SQLite");
    assert_eq!(label("btree", ""), "StableBTreeMap");
    assert_eq!(label("heap", "cbor"), "heap BTreeMap (cbor)");
    assert_eq!(label("heap allocator=talc", ""), "heap BTreeMap (talc)");
    assert_eq!(label("redis", "x"), "redis x");
    assert_eq!(label("redis", ""), "redis");
    let short: Vec<String> = StoreKind::ALL
        .iter()
        .flat_map(|k| k.stores(&[JournalMode::Wal]))
        .map(Store::short_label)
        .collect();
    assert_eq!(
        short,
        [
            "Heap",
            "BTreeMap",
            "WAL",
            "ic-sqlite-vfs",
            "mo Map",
            "mo pure/Map",
            "mo Region",
            "mo Map classical"
        ]
    );
}

/// Every colour the table gives (each store in each journal mode, each schema's own).
pub(crate) fn colour_slots() -> Vec<usize> {
    let mut slots: Vec<usize> = StoreKind::every()
        .flat_map(|k| k.stores(&JournalMode::ALL))
        .filter_map(Store::colour)
        .collect();
    for kind in StoreKind::every() {
        slots.extend(kind.def().schemas.iter().filter_map(|s| s.colour));
    }
    slots
}

/// The slots are distinct (`report::svg`'s tests check that each is a slot of its palette).
#[test]
fn colours_are_distinct() {
    let slots = colour_slots();
    let mut distinct = slots.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), slots.len(), "{slots:?}");
    assert_eq!(colour("sqlite_secondary", "WAL"), Some(9));
    assert_eq!(colour("sqlite", "DELETE"), Some(1));
    assert_eq!(colour("heap allocator=talc", ""), None);
}

#[test]
fn the_schema_suites_get_the_canister_s_names_in_its_order() {
    let kinds = StoreKind::ALL;
    let names = |suite: &str| -> Vec<&str> {
        SchemaStore::of_suite(suite, &kinds, &[JournalMode::Wal])
            .into_iter()
            .map(|s| s.canister_name(suite))
            .collect()
    };
    assert_eq!(names("dbbench"), DbBenchStore::NAMES);
    assert_eq!(names("keys"), KeysStore::NAMES);
    assert_eq!(names("sysbench"), SysbenchStore::NAMES);
    // The map once, SQLite per mode.
    let sysbench =
        SchemaStore::of_suite("sysbench", &kinds, &[JournalMode::Wal, JournalMode::Delete]);
    let shown: Vec<String> = sysbench.iter().map(|s| format!("{s:?}")).collect();
    assert_eq!(shown, ["btree", "sqlite WAL", "sqlite DELETE"]);
    let wal = SchemaStore::SqliteWithoutRowid(JournalMode::Wal);
    assert_eq!(wal.record(), "sqlite_without_rowid");
    assert_eq!(wal.label(), "SQLite WAL WITHOUT ROWID");
    assert_eq!(wal.described(), "SQLite WAL, WITHOUT ROWID");
    assert_eq!(
        SchemaStore::SqliteRowid(JournalMode::Wal).described(),
        "SQLite WAL, rowid table"
    );
    assert_eq!(SchemaStore::BTree.label(), "StableBTreeMap");
    assert_eq!(SchemaStore::BTree.short_label(), "BTreeMap");
    assert_eq!(
        SchemaStore::BTree.described(),
        "StableBTreeMap<[u8; 16], Vec<u8>>"
    );
    for s in SchemaStore::of_suite("keys", &kinds, &[JournalMode::Off]) {
        assert_eq!(
            SchemaStore::of_record(s.record(), &s.journal_column()),
            Some(s)
        );
    }
    assert_eq!(
        schema_label("sqlite_secondary", "OFF"),
        "SQLite OFF secondary index"
    );
    assert_eq!(schema_label("heap", ""), "heap BTreeMap");
}

#[test]
fn a_module_must_export_what_the_list_and_its_stores_need() {
    assert_eq!(
        required_exports(Module::DEFAULT),
        [
            "canister_update set_payload_size",
            "canister_query stats",
            "canister_update add_users_btree",
            "canister_update add_users_heap",
            "canister_update add_users_sqlite",
        ]
    );
    let tune = required_exports(Module::TUNE);
    for store in ["heap", "btree", "btree_bounded"] {
        let export = format!("canister_update add_users_{store}");
        assert_eq!(tune.iter().filter(|e| **e == export).count(), 1, "{tune:?}");
    }
    // Each fact in one place: the list requires only what no store of the table gives.
    for module in Module::ALL {
        let required = required_exports(module);
        let mut distinct = required.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            required.len(),
            "{}: {required:?}",
            module.name
        );
    }
    assert_eq!(module_name(Module::DEFAULT), "bench");
    assert_eq!(module_name(Module::TUNE), "tune");
    let value = |v: &str| wasm_flag_value(std::path::Path::new(v)).map_err(|e| e.to_string());
    assert_eq!(value("tune=t.wasm"), Ok((Module::TUNE, "t.wasm".into())));
    assert_eq!(
        value("bench=b.wasm"),
        Ok((Module::DEFAULT, "b.wasm".into()))
    );
    assert_eq!(value("b.wasm"), Ok((Module::DEFAULT, "b.wasm".into())));
    // A path whose part before `=` is not a name is a path.
    assert_eq!(
        value("./a=b.wasm"),
        Ok((Module::DEFAULT, "./a=b.wasm".into()))
    );
    assert_eq!(
        value("a=b.wasm"),
        Err("--wasm a=b.wasm: no module is called a; the modules are bench, tune, sqlite-vfs, motoko, motoko-classic (--wasm NAME=PATH), or give a path alone for the bench module".into())
    );
    assert_eq!(
        value("sqlite_vfs=v.wasm"),
        Err("--wasm sqlite_vfs=v.wasm: no module is called sqlite_vfs (did you mean sqlite-vfs?); the modules are bench, tune, sqlite-vfs, motoko, motoko-classic (--wasm NAME=PATH), or give a path alone for the bench module".into())
    );
    assert_eq!(
        value("tune="),
        Err(
            "--wasm tune=: the path after tune= is empty; give the module's file: --wasm tune=PATH"
                .into()
        )
    );
}

#[test]
fn a_run_of_the_default_module_alone_is_signed_by_its_hash() {
    use sha2::{Digest, Sha256};
    let default = b"\0asm default";
    let alone = Modules::new(default);
    assert_eq!(alone.signature(), hex::encode(Sha256::digest(default)));
    assert_eq!(alone.get(Module::DEFAULT).unwrap(), default);
    let err = alone.get(Module::TUNE).unwrap_err().to_string();
    assert_eq!(
        err,
        "the run holds no tune module: its plan does not measure a store of it"
    );
}
