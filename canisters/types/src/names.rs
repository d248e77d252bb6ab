//! The names the host sends and the canister parses: each suite's stores and the keys
//! suite's key types. The canister's replies to an unknown name come from `parse` here.

/// The `users` stores, as the canister's method names end (`add_users_heap`,
/// `add_users_btree`, `get_users_sqlite`, ...): a `std::collections::BTreeMap` on the Wasm
/// heap (saved to stable memory only across upgrades), `StableBTreeMap` and SQLite's
/// `users` table.
pub const HEAP: &str = "heap";
pub const BTREE: &str = "btree";
pub const SQLITE: &str = "sqlite";
/// Every `users` store, in the order reports show them.
pub const USERS_STORES: [&str; 3] = [HEAP, BTREE, SQLITE];

/// An enum of names: `ALL`, `NAMES` in the same order, `name`, `parse`, and the macro
/// `$parse!(text)`, the body of `parse` as an expression.
///
/// The canister parses with the macro in functions of its own rather than by calling
/// `parse`: its instruction counts depend on where code is compiled (whether LLVM inlines
/// a parse into its callers, where its strings land in the data segment), and a body
/// expanded in the canister compiles exactly as the canister's own parse functions did.
/// Names are literals so the body is a plain `match` with a one-argument error message.
/// `$d` is a `$` for the macro's own metavariable.
macro_rules! names {
    ($d:tt $(#[$doc:meta])* $name:ident, $parse:ident, $what:literal {
        $(#[$vdoc0:meta])* $v0:ident = $t0:literal
        $(, $(#[$vdoc:meta])* $variant:ident = $text:literal)* $(,)?
    }) => {
        #[doc = concat!("`", stringify!($name), "::parse(text)` as an expression, expanded where it is used.")]
        #[macro_export]
        macro_rules! $parse {
            ($d text:expr) => {
                match $d text {
                    $t0 => Ok($crate::names::$name::$v0),
                    $($text => Ok($crate::names::$name::$variant),)*
                    other => Err(format!(
                        concat!("unknown ", $what, " {:?}; accepted: ", $t0 $(, ", ", $text)*),
                        other
                    )),
                }
            };
        }

        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $(#[$vdoc0])* $v0,
            $($(#[$vdoc])* $variant),*
        }

        impl $name {
            pub const ALL: [$name; [$t0 $(, $text)*].len()] = [$name::$v0 $(, $name::$variant)*];
            /// The names of `ALL`, in its order.
            pub const NAMES: [&'static str; [$t0 $(, $text)*].len()] = [$t0 $(, $text)*];

            pub const fn name(self) -> &'static str {
                match self {
                    $name::$v0 => $t0,
                    $($name::$variant => $text),*
                }
            }

            /// Exact (case-sensitive); the error is the canister's reply.
            pub fn parse(text: &str) -> Result<Self, String> {
                $parse!(text)
            }
        }
    };
}

names!($
    /// The stores of the dbbench suite (`dbbench_*` methods).
    DbBenchStore, parse_db_bench_store, "db_bench store" {
        BTree = "btree",
        SqliteRowid = "sqlite_rowid",
        SqliteWithoutRowid = "sqlite_without_rowid",
    }
);

names!($
    /// The stores of the keys suite (`keys_*` methods).
    KeysStore, parse_keys_store, "keys store" {
        BTree = "btree",
        SqliteRowid = "sqlite_rowid",
        SqliteWithoutRowid = "sqlite_without_rowid",
        SqliteSecondary = "sqlite_secondary",
    }
);

names!($
    /// The stores of the sysbench suite (`sysbench_*` methods).
    SysbenchStore, parse_sysbench_store, "sysbench store" {
        BTree = "btree",
        Sqlite = "sqlite",
    }
);

names!($
    /// How the heap store's map is encoded into stable memory in `pre_upgrade` and decoded
    /// in `post_upgrade` (`configure_heap`). CBOR is written with `ciborium`, the crate of
    /// ic-stable-structures' quick_start example and of the Bitcoin canister; serde_cbor
    /// is unmaintained (RUSTSEC-2021-0127).
    HeapEncoding, parse_heap_encoding, "heap encoding" {
        /// `candid::encode_one` / `decode_one` of the whole map: the default.
        Candid = "candid",
        /// `ciborium::into_writer` / `from_reader` of the whole map.
        Cbor = "cbor",
    }
);

names!($
    /// The key types of the keys suite.
    KeyType, parse_key_type, "key type" {
        /// A u64 as 8 big-endian bytes (SQLite: INTEGER).
        U64 = "u64",
        /// A 16-byte ULID.
        Ulid = "ulid",
        /// A 16-byte UUIDv4.
        Uuid = "uuid",
        /// 16 bytes as 32 lowercase hex digits (SQLite: TEXT).
        Hex32 = "hex32",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_value() {
        for s in DbBenchStore::ALL {
            assert_eq!(DbBenchStore::parse(s.name()), Ok(s));
        }
        for s in KeysStore::ALL {
            assert_eq!(KeysStore::parse(s.name()), Ok(s));
        }
        for s in SysbenchStore::ALL {
            assert_eq!(SysbenchStore::parse(s.name()), Ok(s));
        }
        for k in KeyType::ALL {
            assert_eq!(KeyType::parse(k.name()), Ok(k));
        }
        for e in HeapEncoding::ALL {
            assert_eq!(HeapEncoding::parse(e.name()), Ok(e));
        }
        assert_eq!(HeapEncoding::NAMES, ["candid", "cbor"]);
        assert_eq!(KeyType::ALL.map(KeyType::name), KeyType::NAMES);
        assert_eq!(KeysStore::ALL.map(KeysStore::name), KeysStore::NAMES);
    }

    #[test]
    fn the_same_store_has_the_same_name_in_every_suite() {
        for name in [
            DbBenchStore::BTree.name(),
            KeysStore::BTree.name(),
            SysbenchStore::BTree.name(),
        ] {
            assert_eq!(name, BTREE);
        }
        assert_eq!(SysbenchStore::Sqlite.name(), SQLITE);
        for (a, b) in [
            (DbBenchStore::SqliteRowid, KeysStore::SqliteRowid),
            (
                DbBenchStore::SqliteWithoutRowid,
                KeysStore::SqliteWithoutRowid,
            ),
        ] {
            assert_eq!(a.name(), b.name());
            assert_eq!(KeysStore::parse(a.name()), Ok(b));
        }
    }

    #[test]
    fn parsing_is_exact_and_an_unknown_name_lists_the_accepted_ones() {
        assert!(DbBenchStore::parse("BTREE").is_err());
        assert!(KeyType::parse("hex").is_err());
        assert_eq!(
            SysbenchStore::parse("sqlite_rowid"),
            Err("unknown sysbench store \"sqlite_rowid\"; accepted: btree, sqlite".to_string())
        );
        assert_eq!(
            DbBenchStore::parse("sqlite"),
            Err("unknown db_bench store \"sqlite\"; accepted: btree, sqlite_rowid, sqlite_without_rowid".to_string())
        );
        assert_eq!(
            KeysStore::parse(""),
            Err("unknown keys store \"\"; accepted: btree, sqlite_rowid, sqlite_without_rowid, sqlite_secondary".to_string())
        );
        assert_eq!(
            HeapEncoding::parse("CBOR"),
            Err("unknown heap encoding \"CBOR\"; accepted: candid, cbor".to_string())
        );
        assert_eq!(
            KeyType::parse("u32"),
            Err("unknown key type \"u32\"; accepted: u64, ulid, uuid, hex32".to_string())
        );
    }
}
