//! Key types and schemas (seed 002): the same rows keyed by a u64, a 16-byte ULID, a 16-byte
//! UUIDv4 or 32-character hex text, on the B-tree map (one map per key type, virtual
//! memories 3..=6) and on SQLite tables of their own, `keys_<type>_<schema>`:
//!
//! - `sqlite_rowid`: `k <TYPE> PRIMARY KEY, v BLOB`. For u64 (INTEGER) `k` is the rowid
//!   itself, one B-tree; for the others a rowid table plus the automatic index on `k`.
//! - `sqlite_without_rowid`: the same `WITHOUT ROWID`: one B-tree keyed by `k`.
//! - `sqlite_secondary`: an implicit rowid and a secondary index on `k` (seed 002's final
//!   schema): the table B-tree plus the index.
//!
//! Tables are created only by `keys_reset`, so the `users` stores keep their file as it was.

use std::cell::RefCell;

use bench_types::limits::keys::{MAX_KEYS_PER_CALL, MAX_VALUE_SIZE};
use bench_types::names::{KeyType, KeysStore as Store};
use bench_types::{BTreePages, DbBenchReport, KeysStats};
use ic_rusqlite::rusqlite::types::Value;
use ic_rusqlite::rusqlite::{Connection, OptionalExtension};
use ic_stable_structures::{Memory as _, StableBTreeMap, Storable};

use crate::dbbench::finish;
use crate::memory::{self, Memory};
use crate::report;
use crate::sqlite::{self, measured_statement};

/// Parsed by the shared macro in this module's own function: the canister's counts depend
/// on where the code is compiled (see `bench_types::names`).
fn parse_key_type(name: &str) -> Result<KeyType, String> {
    bench_types::parse_key_type!(name)
}

/// The key's SQL column type.
fn sql_type(key: KeyType) -> &'static str {
    match key {
        KeyType::U64 => "INTEGER",
        KeyType::Ulid | KeyType::Uuid => "BLOB",
        KeyType::Hex32 => "TEXT",
    }
}

/// Checks one key's bytes: u64 as 8 big-endian bytes (at most 2^63 - 1, SQLite's
/// INTEGER), ULID and UUID as 16 bytes, hex as 32 lowercase hex digits.
fn check(key: KeyType, bytes: &[u8]) -> Result<(), String> {
    let ok = match key {
        KeyType::U64 => bytes.len() == 8 && bytes[0] < 0x80,
        KeyType::Ulid | KeyType::Uuid => bytes.len() == 16,
        KeyType::Hex32 => {
            bytes.len() == 32
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "a {} key must be {}; got {} bytes",
            key.name(),
            match key {
                KeyType::U64 => "8 big-endian bytes below 2^63",
                KeyType::Ulid | KeyType::Uuid => "16 bytes",
                KeyType::Hex32 => "32 lowercase hex digits",
            },
            bytes.len()
        ))
    }
}

fn sql_value(key: KeyType, bytes: &[u8]) -> Value {
    match key {
        KeyType::U64 => Value::Integer(i64::from_be_bytes(bytes.try_into().expect("checked"))),
        KeyType::Ulid | KeyType::Uuid => Value::Blob(bytes.to_vec()),
        KeyType::Hex32 => Value::Text(String::from_utf8(bytes.to_vec()).expect("checked ASCII")),
    }
}

/// Parsed by the shared macro in this module's own function: the canister's counts depend
/// on where the code is compiled (see `bench_types::names`).
fn parse_store(name: &str) -> Result<Store, String> {
    bench_types::parse_keys_store!(name)
}

/// The schema part of the store's table names.
fn schema(store: Store) -> &'static str {
    match store {
        Store::BTree => "btree",
        Store::SqliteRowid => "rowid",
        Store::SqliteWithoutRowid => "without_rowid",
        Store::SqliteSecondary => "secondary",
    }
}

fn table(store: Store, key: KeyType) -> String {
    format!("keys_{}_{}", key.name(), schema(store))
}

fn create_sql(store: Store, key: KeyType) -> String {
    let t = table(store, key);
    let ty = sql_type(key);
    match store {
        Store::SqliteSecondary => format!(
            "CREATE TABLE IF NOT EXISTS {t} (k {ty} NOT NULL, v BLOB); CREATE INDEX IF NOT EXISTS {t}_k ON {t}(k);"
        ),
        Store::SqliteWithoutRowid => {
            format!("CREATE TABLE IF NOT EXISTS {t} (k {ty} PRIMARY KEY, v BLOB) WITHOUT ROWID;")
        }
        _ => format!("CREATE TABLE IF NOT EXISTS {t} (k {ty} PRIMARY KEY, v BLOB);"),
    }
}

type Map<K> = StableBTreeMap<K, Vec<u8>, Memory>;

thread_local! {
    // Keyed by the u64's 8 big-endian bytes, exactly how the map stores a u64 key (same
    // bytes, same order): the users map stays the only StableBTreeMap<u64, _>, which
    // halves the drift this module causes in seed 003's B-tree counts (code layout).
    static U64: RefCell<Map<[u8; 8]>> = RefCell::new(Map::init(memory::get(memory::KEYS_U64)));
    static ULID: RefCell<Map<[u8; 16]>> = RefCell::new(Map::init(memory::get(memory::KEYS_ULID)));
    static UUID: RefCell<Map<[u8; 16]>> = RefCell::new(Map::init(memory::get(memory::KEYS_UUID)));
    static HEX: RefCell<Map<String>> = RefCell::new(Map::init(memory::get(memory::KEYS_HEX)));
}

fn u64_key(k: &[u8]) -> [u8; 8] {
    k.try_into().expect("checked")
}
fn blob_key(k: &[u8]) -> [u8; 16] {
    k.try_into().expect("checked")
}
fn hex_key(k: &[u8]) -> String {
    String::from_utf8(k.to_vec()).expect("checked ASCII")
}

/// Runs `f` on the map of `key`, with the keys converted to its key type beforehand.
macro_rules! with_map {
    ($key:expr, $keys:expr, |$map:ident, $typed:ident| $body:expr) => {
        match $key {
            KeyType::U64 => {
                let $typed: Vec<[u8; 8]> = $keys.iter().map(|k| u64_key(k)).collect();
                U64.with_borrow_mut(|$map| $body)
            }
            KeyType::Ulid => {
                let $typed: Vec<[u8; 16]> = $keys.iter().map(|k| blob_key(k)).collect();
                ULID.with_borrow_mut(|$map| $body)
            }
            KeyType::Uuid => {
                let $typed: Vec<[u8; 16]> = $keys.iter().map(|k| blob_key(k)).collect();
                UUID.with_borrow_mut(|$map| $body)
            }
            KeyType::Hex32 => {
                let $typed: Vec<String> = $keys.iter().map(|k| hex_key(k)).collect();
                HEX.with_borrow_mut(|$map| $body)
            }
        }
    };
}

fn map_insert<K: Storable + Ord + Clone>(
    map: &mut Map<K>,
    keys: Vec<K>,
    value: &[u8],
) -> Result<((), u64), String> {
    report::measure(|| {
        for k in keys {
            if map.insert(k, value.to_vec()).is_some() {
                return Err("a key is already in the map".to_string());
            }
        }
        Ok(())
    })
}

fn map_get<K: Storable + Ord + Clone>(
    map: &Map<K>,
    keys: &[K],
) -> Result<((u64, u64), u64), String> {
    report::measure(|| {
        let (mut found, mut bytes) = (0u64, 0u64);
        for k in keys {
            if let Some(v) = map.get(k) {
                found += 1;
                bytes += v.len() as u64;
            }
        }
        Ok((found, bytes))
    })
}

fn parse_args(store: &str, key_type: &str, keys: &[Vec<u8>]) -> Result<(Store, KeyType), String> {
    let store = parse_store(store)?;
    let key = parse_key_type(key_type)?;
    if keys.len() as u64 > MAX_KEYS_PER_CALL {
        return Err(format!(
            "{} keys exceed {MAX_KEYS_PER_CALL} per call; split the work into several calls",
            keys.len()
        ));
    }
    for k in keys {
        check(key, k)?;
    }
    Ok((store, key))
}

fn require_table(conn: &Connection, name: &str) -> Result<(), String> {
    let exists: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            (name,),
            |row| row.get(0),
        )
        .map_err(|e| format!("looking for table {name}: {e}"))?;
    if exists {
        Ok(())
    } else {
        Err(format!(
            "table {name} does not exist yet; call keys_reset first"
        ))
    }
}

/// Empties one store for one key type (creating its table), compiling its statements.
pub fn reset(store: &str, key_type: &str) -> Result<u64, String> {
    let (store, key) = parse_args(store, key_type, &[])?;
    if store == Store::BTree {
        let none: Vec<Vec<u8>> = Vec::new();
        return Ok(with_map!(key, none, |map, _typed| {
            let n = map.len();
            map.clear_new();
            n
        }));
    }
    sqlite::with_connection(|conn| {
        conn.execute_batch(&create_sql(store, key))
            .map_err(|e| format!("creating {}: {e}", table(store, key)))?;
        let t = table(store, key);
        let removed = conn
            .execute(&format!("DELETE FROM {t}"), ())
            .map_err(|e| format!("emptying {t}: {e}"))?;
        for sql in [insert_sql(&t), get_sql(&t)] {
            conn.prepare_cached(&sql)
                .map_err(|e| format!("preparing {sql}: {e}"))?;
        }
        Ok(removed as u64)
    })
}

fn insert_sql(t: &str) -> String {
    format!("INSERT INTO {t} (k, v) VALUES (?1, ?2)")
}
fn get_sql(t: &str) -> String {
    format!("SELECT v FROM {t} WHERE k = ?1")
}

/// Inserts one row per key (a present key is an Err, nothing inserted), in one SQLite
/// transaction per call.
pub fn insert(
    store: &str,
    key_type: &str,
    keys: Vec<Vec<u8>>,
    value_size: u64,
) -> Result<DbBenchReport, String> {
    let (store, key) = parse_args(store, key_type, &keys)?;
    if value_size > MAX_VALUE_SIZE {
        return Err(format!(
            "value_size {value_size} exceeds {MAX_VALUE_SIZE} bytes"
        ));
    }
    let value = vec![b'v'; value_size as usize];
    let ops = keys.len() as u64;
    let bytes: u64 = keys.iter().map(|k| k.len() as u64 + value_size).sum();
    let ((), instructions) = if store == Store::BTree {
        with_map!(key, keys, |map, typed| map_insert(map, typed, &value))?
    } else {
        let values: Vec<Value> = keys.iter().map(|k| sql_value(key, k)).collect();
        let t = table(store, key);
        sqlite::with_connection(|conn| {
            require_table(conn, &t)?;
            let sql = insert_sql(&t);
            report::measure(|| {
                let tx = conn
                    .transaction()
                    .map_err(|e| format!("BEGIN failed: {e}"))?;
                {
                    let mut stmt = tx
                        .prepare_cached(&sql)
                        .map_err(|e| format!("preparing {sql}: {e}"))?;
                    for v in &values {
                        stmt.execute((v, &value[..]))
                            .map_err(|e| format!("inserting into {t}: {e}; nothing inserted"))?;
                    }
                }
                tx.commit().map_err(|e| format!("COMMIT failed: {e}"))
            })
        })?
    };
    Ok(finish(ops, ops, bytes, instructions))
}

/// Point lookups by key, copying out each value found.
pub fn lookup(store: &str, key_type: &str, keys: Vec<Vec<u8>>) -> Result<DbBenchReport, String> {
    let (store, key) = parse_args(store, key_type, &keys)?;
    let ops = keys.len() as u64;
    let ((found, bytes), instructions) = if store == Store::BTree {
        with_map!(key, keys, |map, typed| map_get(map, &typed))?
    } else {
        let values: Vec<Value> = keys.iter().map(|k| sql_value(key, k)).collect();
        let t = table(store, key);
        measured_statement!(
            |conn| require_table(conn, &t),
            stmt = get_sql(&t) => {
                let (mut found, mut bytes) = (0u64, 0u64);
                for v in &values {
                    let row: Option<Vec<u8>> = stmt
                        .query_row((v,), |r| r.get(0))
                        .optional()
                        .map_err(|e| format!("reading {t}: {e}"))?;
                    if let Some(row) = row {
                        found += 1;
                        bytes += row.len() as u64;
                    }
                }
                Ok((found, bytes))
            }
        )?
    };
    Ok(finish(ops, found, bytes, instructions))
}

/// Rows, stable bytes, and (SQLite) the pages of each B-tree of the table from `dbstat`
/// (compiled into ic-rusqlite's SQLite: SQLITE_ENABLE_DBSTAT_VTAB).
pub fn stats(store: &str, key_type: &str) -> Result<KeysStats, String> {
    let (store, key) = parse_args(store, key_type, &[])?;
    if store == Store::BTree {
        let none: Vec<Vec<u8>> = Vec::new();
        let rows = with_map!(key, none, |map, _typed| map.len());
        // Another handle on the same virtual memory reports the map's size.
        let id = match key {
            KeyType::U64 => memory::KEYS_U64,
            KeyType::Ulid => memory::KEYS_ULID,
            KeyType::Uuid => memory::KEYS_UUID,
            KeyType::Hex32 => memory::KEYS_HEX,
        };
        let pages = memory::get(id).size();
        return Ok(KeysStats {
            rows,
            stable_bytes: pages * 65_536,
            btrees: Vec::new(),
        });
    }
    let t = table(store, key);
    sqlite::with_connection(|conn| {
        require_table(conn, &t)?;
        let rows: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {t}"), (), |r| r.get(0))
            .map_err(|e| format!("counting {t}: {e}"))?;
        let mut stmt = conn
            .prepare(
                "SELECT name,
                        sum(pagetype = 'internal'), sum(pagetype = 'leaf'), sum(pagetype = 'overflow'),
                        sum(pgsize)
                 FROM dbstat
                 WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = ?1)
                 GROUP BY name
                 ORDER BY name <> ?1, name",
            )
            .map_err(|e| format!("preparing the dbstat query: {e}"))?;
        let btrees = stmt
            .query_map((&t,), |r| {
                Ok(BTreePages {
                    name: r.get(0)?,
                    interior_pages: r.get::<_, i64>(1)? as u64,
                    leaf_pages: r.get::<_, i64>(2)? as u64,
                    overflow_pages: r.get::<_, i64>(3)? as u64,
                    bytes: r.get::<_, i64>(4)? as u64,
                })
            })
            .map_err(|e| format!("reading dbstat: {e}"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("reading dbstat: {e}"))?;
        Ok(KeysStats {
            rows: rows as u64,
            stable_bytes: btrees.iter().map(|b| b.bytes).sum(),
            btrees,
        })
    })
}
