//! LevelDB's db_bench workload (seed 000) on three key-value stores of its own, so the
//! `users` stores that seed 003 measures are never touched:
//!
//! - `btree`: `StableBTreeMap<[u8; 16], Vec<u8>>` on virtual memory 2;
//! - `sqlite_rowid`: table `dbbench_rowid (key BLOB, value BLOB, PRIMARY KEY(key))`, a rowid
//!   table plus its automatic index on `key` (db_bench_sqlite3 `--use_rowids=1`);
//! - `sqlite_without_rowid`: the same `WITHOUT ROWID`, one B-tree keyed by `key` (its default).
//!
//! Keys are db_bench's: the number printed as 16 zero-padded decimal digits. Values are
//! slices of db_bench's 1 MiB buffer of half-compressible text built from `Random(301)`.
//! The SQLite tables live in the same database file as `users`, created only by
//! `dbbench_reset`, so a canister that never runs this suite has the same file as before.

use std::cell::RefCell;

use bench_types::limits::dbbench::{
    KEY_SIZE, MAX_BYTES_PER_CALL, MAX_KEY, MAX_OPS_PER_CALL, MAX_VALUE_SIZE,
};
use bench_types::names::DbBenchStore as Store;
use bench_types::rng::LevelDbRandom;
use bench_types::{DbBenchReport, DbBenchWrite};
use ic_rusqlite::rusqlite::{Connection, OptionalExtension};
use ic_stable_structures::StableBTreeMap;

use crate::memory::{self, Memory};
use crate::report;
use crate::sqlite::{self, measured_statement};

/// Parsed by the shared macro in this module's own function: the canister's counts depend
/// on where the code is compiled (see `bench_types::names`).
fn parse_store(name: &str) -> Result<Store, String> {
    bench_types::parse_db_bench_store!(name)
}

/// The store's SQLite table.
fn table_of(store: Store) -> &'static str {
    match store {
        Store::SqliteWithoutRowid => "dbbench_norowid",
        _ => "dbbench_rowid",
    }
}

const CREATE_ROWID: &str =
    "CREATE TABLE IF NOT EXISTS dbbench_rowid (key BLOB, value BLOB, PRIMARY KEY(key))";
const CREATE_WITHOUT_ROWID: &str = "CREATE TABLE IF NOT EXISTS dbbench_norowid (key BLOB, value BLOB, PRIMARY KEY(key)) WITHOUT ROWID";

fn replace_sql(table: &str) -> String {
    format!("REPLACE INTO {table} (key, value) VALUES (?1, ?2)")
}
fn get_sql(table: &str) -> String {
    format!("SELECT key, value FROM {table} WHERE key = ?1")
}
fn seq_sql(table: &str) -> String {
    format!("SELECT key, value FROM {table} WHERE key >= ?1 ORDER BY key LIMIT ?2")
}

type Map = StableBTreeMap<[u8; 16], Vec<u8>, Memory>;

thread_local! {
    static MAP: RefCell<Map> = RefCell::new(Map::init(memory::get(memory::DBBENCH_BTREE)));
    /// db_bench's value buffer, built on first use (outside any measurement).
    static VALUES: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// db_bench's `RandomGenerator` data: 100-byte pieces of 50 random printable characters
/// repeated (compression ratio 0.5), appended until the buffer holds at least 1 MiB.
fn value_buffer() -> Vec<u8> {
    let mut rnd = LevelDbRandom::new(301);
    let mut data = Vec::with_capacity((1 << 20) + 100);
    while data.len() < 1 << 20 {
        let raw: Vec<u8> = (0..50).map(|_| b' ' + rnd.uniform(95) as u8).collect();
        let mut piece = Vec::with_capacity(100);
        while piece.len() < 100 {
            piece.extend_from_slice(&raw);
        }
        piece.truncate(100);
        data.extend_from_slice(&piece);
    }
    data
}

/// The `index`-th value of `len` bytes, where db_bench's `Generate(len)` would put it:
/// consecutive slices, back to the start when the next would run past the end.
fn value(data: &[u8], len: usize, index: u64) -> &[u8] {
    if len == 0 {
        return &[];
    }
    let per_pass = (data.len() / len) as u64;
    let start = (index % per_pass) as usize * len;
    &data[start..start + len]
}

fn key_bytes(key: u64) -> [u8; 16] {
    let text = format!("{key:016}");
    let mut out = [0u8; 16];
    out.copy_from_slice(text.as_bytes());
    out
}

fn check_keys(keys: &[u64]) -> Result<(), String> {
    if keys.len() as u64 > MAX_OPS_PER_CALL {
        return Err(format!(
            "{} keys exceed {MAX_OPS_PER_CALL} per call; split the work into several calls",
            keys.len()
        ));
    }
    if let Some(k) = keys.iter().find(|&&k| k > MAX_KEY) {
        return Err(format!(
            "key {k} has more than 16 digits (db_bench keys are %016d; largest {MAX_KEY})"
        ));
    }
    Ok(())
}

/// Empties one store (creating the SQLite table if needed), builds the value buffer and
/// compiles the store's statements, so the next measured call starts warm. Returns the
/// rows removed.
pub fn reset(store: &str) -> Result<u64, String> {
    let store = parse_store(store)?;
    VALUES.with_borrow_mut(|v| {
        v.get_or_insert_with(value_buffer);
    });
    match store {
        Store::BTree => MAP.with_borrow_mut(|map| {
            let removed = map.len();
            map.clear_new();
            Ok(removed)
        }),
        Store::SqliteRowid | Store::SqliteWithoutRowid => sqlite::with_connection(|conn| {
            let create = if store == Store::SqliteRowid {
                CREATE_ROWID
            } else {
                CREATE_WITHOUT_ROWID
            };
            conn.execute_batch(create)
                .map_err(|e| format!("creating {}: {e}", table_of(store)))?;
            let table = table_of(store);
            let removed = conn
                .execute(&format!("DELETE FROM {table}"), ())
                .map_err(|e| format!("emptying {table}: {e}"))?;
            for sql in [replace_sql(table), get_sql(table), seq_sql(table)] {
                conn.prepare_cached(&sql)
                    .map_err(|e| format!("preparing {sql}: {e}"))?;
            }
            Ok(removed as u64)
        }),
    }
}

fn table_exists(conn: &Connection, table: &str) -> Result<bool, String> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        (table,),
        |row| row.get(0),
    )
    .map_err(|e| format!("looking for table {table}: {e}"))
}

fn require_table(conn: &Connection, store: Store) -> Result<(), String> {
    if table_exists(conn, table_of(store))? {
        Ok(())
    } else {
        Err(format!(
            "table {} does not exist yet; call dbbench_reset first",
            table_of(store)
        ))
    }
}

/// A db_bench-shaped reply (the keys suite's too): the counts and the canister's sizes.
pub fn finish(ops: u64, found: u64, bytes: u64, instructions: u64) -> DbBenchReport {
    DbBenchReport {
        ops,
        found,
        bytes,
        instructions,
        heap_pages: report::heap_pages(),
        stable_pages: report::stable_pages(),
    }
}

/// Writes (REPLACE: a present key is overwritten) `keys` with db_bench's values.
pub fn write(arg: DbBenchWrite) -> Result<DbBenchReport, String> {
    let store = parse_store(&arg.store)?;
    check_keys(&arg.keys)?;
    if arg.value_size > MAX_VALUE_SIZE {
        return Err(format!(
            "value_size {} exceeds db_bench's 1 MiB value buffer (1048576)",
            arg.value_size
        ));
    }
    let ops = arg.keys.len() as u64;
    let bytes = ops * (KEY_SIZE + arg.value_size);
    if bytes > MAX_BYTES_PER_CALL {
        return Err(format!(
            "{ops} writes of {} bytes are {bytes} bytes, more than {MAX_BYTES_PER_CALL} per call; use fewer keys",
            KEY_SIZE + arg.value_size
        ));
    }
    let len = arg.value_size as usize;
    // Keys and the buffer are ready before the measurement: only the store work counts.
    let keys: Vec<[u8; 16]> = arg.keys.iter().map(|&k| key_bytes(k)).collect();
    VALUES.with_borrow_mut(|v| {
        v.get_or_insert_with(value_buffer);
    });
    VALUES.with_borrow(|data| {
        let data = data.as_deref().expect("built above");
        let ((), instructions) = match store {
            Store::BTree => MAP.with_borrow_mut(|map| {
                report::measure(|| {
                    for (i, key) in keys.iter().enumerate() {
                        map.insert(*key, value(data, len, arg.first_value + i as u64).to_vec());
                    }
                    Ok(())
                })
            })?,
            Store::SqliteRowid | Store::SqliteWithoutRowid => sqlite::with_connection(|conn| {
                require_table(conn, store)?;
                let sql = replace_sql(table_of(store));
                report::measure(|| {
                    let per_row = arg.transaction_per_row;
                    if !per_row {
                        conn.execute_batch("BEGIN")
                            .map_err(|e| format!("BEGIN failed: {e}"))?;
                    }
                    let written = (|| {
                        let mut stmt = conn
                            .prepare_cached(&sql)
                            .map_err(|e| format!("preparing {sql}: {e}"))?;
                        for (i, key) in keys.iter().enumerate() {
                            let v = value(data, len, arg.first_value + i as u64);
                            stmt.execute((&key[..], v))
                                .map_err(|e| format!("writing key {}: {e}", arg.keys[i]))?;
                        }
                        Ok::<(), String>(())
                    })();
                    if !per_row {
                        let end = if written.is_ok() {
                            "COMMIT"
                        } else {
                            "ROLLBACK"
                        };
                        conn.execute_batch(end)
                            .map_err(|e| format!("{end} failed: {e}"))?;
                    }
                    written
                })
            })?,
        };
        Ok(finish(ops, ops, bytes, instructions))
    })
}

/// Looks up each key (db_bench's readrandom: `SELECT * ... WHERE key = ?`), copying out
/// the rows found.
pub fn read_random(store: &str, keys: Vec<u64>) -> Result<DbBenchReport, String> {
    let store = parse_store(store)?;
    check_keys(&keys)?;
    let keys: Vec<[u8; 16]> = keys.iter().map(|&k| key_bytes(k)).collect();
    let ((found, bytes), instructions) = match store {
        Store::BTree => MAP.with_borrow(|map| {
            report::measure(|| {
                let (mut found, mut bytes) = (0u64, 0u64);
                for key in &keys {
                    if let Some(v) = map.get(key) {
                        found += 1;
                        bytes += KEY_SIZE + v.len() as u64;
                    }
                }
                Ok((found, bytes))
            })
        })?,
        _ => measured_statement!(
            |conn| require_table(conn, store),
            stmt = get_sql(table_of(store)) => {
                let (mut found, mut bytes) = (0u64, 0u64);
                for key in &keys {
                    let row: Option<(Vec<u8>, Vec<u8>)> = stmt
                        .query_row((&key[..],), |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                        .map_err(|e| format!("reading a key: {e}"))?;
                    if let Some((k, v)) = row {
                        found += 1;
                        bytes += (k.len() + v.len()) as u64;
                    }
                }
                Ok((found, bytes))
            }
        )?,
    };
    Ok(finish(keys.len() as u64, found, bytes, instructions))
}

/// Up to `count` rows with key >= `start`, in key order (db_bench's readseq, which reads
/// the whole table with `SELECT * ... ORDER BY key`), copying each out.
pub fn read_seq(store: &str, start: u64, count: u64) -> Result<DbBenchReport, String> {
    let store = parse_store(store)?;
    if count > MAX_OPS_PER_CALL {
        return Err(format!(
            "count {count} exceeds {MAX_OPS_PER_CALL} per call; split the work into several calls"
        ));
    }
    if start > MAX_KEY {
        return Err(format!("start key {start} has more than 16 digits"));
    }
    let start = key_bytes(start);
    let ((found, bytes), instructions) = match store {
        Store::BTree => MAP.with_borrow(|map| {
            report::measure(|| {
                let (mut found, mut bytes) = (0u64, 0u64);
                for v in map.values_range(start..).take(count as usize) {
                    found += 1;
                    bytes += KEY_SIZE + v.len() as u64;
                }
                Ok((found, bytes))
            })
        })?,
        _ => measured_statement!(
            |conn| require_table(conn, store),
            stmt = seq_sql(table_of(store)) => {
                let mut rows = stmt
                    .query((&start[..], count as i64))
                    .map_err(|e| format!("reading in key order: {e}"))?;
                let (mut found, mut bytes) = (0u64, 0u64);
                while let Some(row) = rows.next().map_err(|e| format!("reading a row: {e}"))? {
                    let k: Vec<u8> = row.get(0).map_err(|e| format!("reading a key: {e}"))?;
                    let v: Vec<u8> = row.get(1).map_err(|e| format!("reading a value: {e}"))?;
                    found += 1;
                    bytes += (k.len() + v.len()) as u64;
                }
                Ok((found, bytes))
            }
        )?,
    };
    Ok(finish(found, found, bytes, instructions))
}
