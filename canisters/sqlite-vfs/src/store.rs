//! The `users` table on SQLite through ic-sqlite-vfs: one database image on one virtual
//! memory of the binding's MemoryManager, one transaction per update message
//! (`Db::update`), reads on the binding's read-only connection (`Db::query`).
//!
//! The binding keeps two connections on the heap: the update connection lives until an
//! update fails or the heap goes (an upgrade); the read connection until the next
//! `Db::update`, which drops it (so a query after an update always opens it again, and a
//! query cannot keep what it opened: its heap changes are discarded). Opening either
//! (pragmas, schema, the endpoints' statements) is never part of a measurement: as in the
//! bench canister, the connection a measured call uses is readied first, and only the store
//! work is counted.

use std::cell::Cell;

use bench_types::SqliteSettings;
use bench_types::pragma::{JournalMode, LockingMode, Synchronous};
use ic_sqlite_vfs::db::connection::Connection;
use ic_sqlite_vfs::{Db, DbError, DefaultMemoryImpl, MemoryId, MemoryManager, params};

use crate::ids::{Ids, Scan};
use crate::report::{self, Inserted, Read};
use crate::settings::{self, Settings};
use crate::state::{self, Persisted};
pub use crate::users_sql::MAX_ID;
use crate::users_sql::{
    CREATE_TABLE, CREATE_TABLE_AUTOINCREMENT, GET_USER, INSERT_USER, SCAN_USERS, SqliteStats,
};

/// The binding's convention for a canister's one database (ic-rusqlite's mount id too).
const SQLITE_MEMORY: MemoryId = MemoryId::new(120);

/// The settings that must survive an upgrade live in the database itself: the binding's
/// MemoryManager gives a canister no other stable memory it can write (its `Memory` trait is
/// private), and a second manager over the same stable memory would corrupt the first.
const CREATE_SETTINGS: &str = "CREATE TABLE IF NOT EXISTS icbench_settings (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL)";
const READ_SETTING: &str = "SELECT value FROM icbench_settings WHERE name = ?1";
const WRITE_SETTING: &str = "INSERT OR REPLACE INTO icbench_settings (name, value) VALUES (?1, ?2)";
const PAYLOAD_SIZE: &str = "payload_size";
const CACHE_SIZE: &str = "cache_size";

thread_local! {
    /// The update connection is open with our cache_size and its statement prepared.
    static WRITER_READY: Cell<bool> = const { Cell::new(false) };
    /// The read connection is open with our cache_size and its statements prepared.
    static READER_READY: Cell<bool> = const { Cell::new(false) };
}

fn db_error(context: &str) -> impl Fn(DbError) -> String + '_ {
    move |e| format!("{context}: {e}")
}

fn sqlite_id(id: u64) -> Result<i64, String> {
    i64::try_from(id).map_err(|_| format!("id {id} exceeds SQLite's INTEGER range"))
}

/// `Db::update`, keeping track of what it does to the connections: every update drops the
/// read connection, and a failed one the update connection too (the binding's db/mod.rs).
fn update<T>(
    f: impl FnOnce(&mut ic_sqlite_vfs::db::UpdateConnection<'_>) -> Result<T, DbError>,
) -> Result<T, DbError> {
    let result = Db::update(f);
    READER_READY.set(false);
    if result.is_err() {
        WRITER_READY.set(false);
    }
    result
}

/// Install and upgrade: the memory manager, the binding on its virtual memory, the tables,
/// the persisted settings, and both connections readied so the first calls find them open.
pub fn start() -> Result<(), String> {
    let manager = MemoryManager::init_strict(DefaultMemoryImpl::default())
        .map_err(|e| format!("stable memory has no MemoryManager layout: {e}"))?;
    Db::init(manager.get(SQLITE_MEMORY)).map_err(db_error("initializing ic-sqlite-vfs"))?;
    WRITER_READY.set(false);
    READER_READY.set(false);
    let persisted = update(|tx| {
        tx.execute_batch(CREATE_SETTINGS)?;
        let autoincrement = users_autoincrement(tx)?;
        tx.execute_batch(create_table_sql(autoincrement.unwrap_or(false)))?;
        Ok(Persisted {
            payload_size: read_setting(tx, PAYLOAD_SIZE)?
                .map_or(state::DEFAULT_PAYLOAD_SIZE, |v| v as u64),
            settings: Settings {
                cache_size: read_setting(tx, CACHE_SIZE)?.unwrap_or(settings::BINDING_CACHE_SIZE),
                autoincrement: autoincrement.unwrap_or(false),
            },
        })
    })
    .map_err(db_error("creating the tables"))?;
    state::set_persisted(persisted);
    ready_writer()?;
    ready_reader()
}

fn create_table_sql(autoincrement: bool) -> &'static str {
    if autoincrement {
        CREATE_TABLE_AUTOINCREMENT
    } else {
        CREATE_TABLE
    }
}

/// `Some(autoincrement)` if table users exists.
fn users_autoincrement(conn: &Connection) -> Result<Option<bool>, DbError> {
    let sql = conn.query_optional_scalar::<String>(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'users'",
        params![],
    )?;
    Ok(sql.map(|sql| sql.to_ascii_uppercase().contains("AUTOINCREMENT")))
}

fn read_setting(conn: &Connection, name: &str) -> Result<Option<i64>, DbError> {
    conn.query_optional_scalar::<i64>(READ_SETTING, params![name])
}

fn write_setting(conn: &Connection, name: &str, value: i64) -> Result<(), DbError> {
    conn.execute(WRITE_SETTING, params![name, value])
}

/// The connection's cache_size, if the canister chose one; the binding has set its own.
fn apply_cache_size(conn: &Connection) -> Result<(), DbError> {
    let cache_size = state::persisted().settings.cache_size;
    if cache_size != settings::BINDING_CACHE_SIZE {
        conn.execute_batch(&format!("PRAGMA cache_size = {cache_size}"))?;
    }
    Ok(())
}

/// `$open` unless the flag `$ready` says it ran since the connection was last dropped; the
/// function's reply.
macro_rules! ready_once {
    ($ready:ident, $what:literal, $open:expr) => {{
        if $ready.get() {
            return Ok(());
        }
        $open.map_err(db_error($what))?;
        $ready.set(true);
        Ok(())
    }};
}

/// Opens the update connection if it is not open (an empty transaction: the binding opens
/// it inside `Db::update`) and readies it as a served canister has it: cache_size applied,
/// schema loaded, the insert statement compiled and cached, no page of the table cached.
fn ready_writer() -> Result<(), String> {
    ready_once!(
        WRITER_READY,
        "opening the SQLite update connection",
        update(|tx| {
            apply_cache_size(tx)?;
            drop(tx.prepare_cached(INSERT_USER)?);
            Ok(())
        })
    )
}

/// The same for the read connection and the read statements.
fn ready_reader() -> Result<(), String> {
    ready_once!(
        READER_READY,
        "opening the SQLite read connection",
        Db::query(|conn| {
            apply_cache_size(conn)?;
            for sql in [GET_USER, SCAN_USERS] {
                drop(conn.prepare_cached(sql)?);
            }
            Ok(())
        })
    )
}

/// The binding has no close: an update whose closure fails drops its update connection
/// (and the read connection), so the next call opens both anew, with no page cached.
fn reopen() -> Result<(), String> {
    let dropped = update(|_| Err::<(), _>(DbError::NotFound));
    debug_assert!(dropped.is_err());
    ready_writer()?;
    ready_reader()
}

/// Inserts one row per id in one transaction with a cached prepared statement. An id
/// already present fails the whole call and rolls the transaction back.
pub fn insert(ids: &Ids, payload: &str) -> Result<(Inserted, u64), String> {
    ready_writer()?;
    // The id whose insert failed, if the failure was an insert's.
    let failed = Cell::new(None);
    report::measure(|| {
        update(|tx| {
            let mut stmt = tx.prepare_cached(INSERT_USER)?;
            let mut rows = Inserted::default();
            for id in ids.iter() {
                failed.set(Some(id));
                // ids are <= MAX_ID (checked by Ids), so the cast keeps the value.
                stmt.execute(params![id as i64, payload])?;
                rows.inserted += 1;
            }
            failed.set(None);
            Ok(rows)
        })
        .map_err(|e| {
            let message = match (failed.get(), &e) {
                (Some(id), DbError::Constraint(m)) if m.contains("users.id") => {
                    format!("id {id} already exists in table users")
                }
                (Some(id), _) => format!("inserting id {id} failed: {e}"),
                (None, _) => format!("the transaction failed: {e}"),
            };
            format!("{message}; transaction rolled back, nothing inserted")
        })
    })
}

/// Point lookups; each value found is copied out as a `String`, as the other stores do.
pub fn get(ids: &Ids) -> Result<(Read, u64), String> {
    ready_reader()?;
    report::measure(|| {
        Db::query(|conn| {
            let mut stmt = conn.prepare_cached(GET_USER)?;
            let mut rows = Read::default();
            for id in ids.iter() {
                let value: Option<String> = stmt.query_optional_scalar(params![id as i64])?;
                if let Some(value) = value {
                    rows.add_row(value.len());
                }
            }
            Ok(rows)
        })
        .map_err(db_error("reading users"))
    })
}

/// Up to `scan.count` rows with id >= `scan.offset`, in id order.
pub fn scan(scan: &Scan) -> Result<(Read, u64), String> {
    let offset = sqlite_id(scan.offset)?;
    let limit = sqlite_id(scan.count)?;
    ready_reader()?;
    report::measure(|| {
        Db::query(|conn| {
            let mut stmt = conn.prepare_cached(SCAN_USERS)?;
            let mut result = stmt.query(params![offset, limit])?;
            let mut rows = Read::default();
            while let Some(row) = result.next_row()? {
                let value: String = row.get(0)?;
                rows.add_row(value.len());
            }
            Ok(rows)
        })
        .map_err(db_error("scanning users"))
    })
}

/// Deletes every row; returns how many. With AUTOINCREMENT the sequence restarts too.
pub fn clear() -> Result<u64, String> {
    ready_writer()?;
    update(|tx| {
        tx.execute("DELETE FROM users", params![])?;
        let removed = tx.changes();
        let has_sequence = tx.exists(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence')",
            params![],
        )?;
        if has_sequence {
            tx.execute("DELETE FROM sqlite_sequence WHERE name = 'users'", params![])?;
        }
        Ok(removed)
    })
    .map_err(db_error("DELETE FROM users"))
}

/// Persists the payload size for later inserts.
pub fn set_payload_size(size: u64) -> Result<u64, String> {
    state::check_payload_size(size)?;
    ready_writer()?;
    // <= MAX_PAYLOAD_SIZE, so it fits an i64.
    update(|tx| write_setting(tx, PAYLOAD_SIZE, size as i64))
        .map_err(db_error("persisting payload_size"))?;
    state::set_persisted(Persisted {
        payload_size: size,
        ..state::persisted()
    });
    Ok(size)
}

fn is_empty(conn: &Connection) -> Result<bool, DbError> {
    conn.exists("SELECT NOT EXISTS (SELECT 1 FROM users)", params![])
}

/// The settings in force, read back from the update connection (the read connection
/// reports its own journal mode, not the one writes use).
fn read_settings() -> Result<SqliteSettings, String> {
    ready_writer()?;
    update(|tx| {
        let text = |name: &str| tx.query_scalar::<String>(&format!("PRAGMA {name}"), params![]);
        let int = |name: &str| tx.query_scalar::<i64>(&format!("PRAGMA {name}"), params![]);
        Ok((
            text(JournalMode::PRAGMA)?,
            int(Synchronous::PRAGMA)?,
            int("page_size")?,
            int("cache_size")?,
            text(LockingMode::PRAGMA)?,
            users_autoincrement(tx)?.unwrap_or(false),
        ))
    })
    .map_err(db_error("reading the settings in force"))
    .and_then(
        |(journal_mode, sync_code, page_size, cache_size, locking_mode, autoincrement)| {
            let synchronous = u8::try_from(sync_code)
                .ok()
                .and_then(Synchronous::from_code)
                .ok_or_else(|| {
                    format!("SQLite reports an unknown synchronous value {sync_code}")
                })?;
            Ok(SqliteSettings {
                journal_mode: journal_mode.to_ascii_uppercase(),
                synchronous: synchronous.as_str().to_string(),
                page_size: u32::try_from(page_size)
                    .map_err(|_| format!("SQLite reports page_size {page_size}"))?,
                cache_size,
                locking_mode: locking_mode.to_ascii_uppercase(),
                autoincrement,
            })
        },
    )
}

/// Applies `config` (what the binding lets a canister choose: cache_size, and AUTOINCREMENT
/// on an empty table), persists it, reopens both connections with it and returns what
/// SQLite reports. The reopen drops SQLite's page cache, as the bench canister's
/// `configure_sqlite` does: the next call is a first call on a newly opened connection.
pub fn configure(config: &bench_types::SqliteConfig) -> Result<SqliteSettings, String> {
    let current = state::persisted();
    let wanted = current.settings.with(config)?;
    ready_writer()?;
    update(|tx| {
        if wanted.autoincrement != current.settings.autoincrement {
            if !is_empty(tx)? {
                return Err(DbError::Constraint(format!(
                    "changing autoincrement ({} -> {}) needs an empty users table; call clear_sqlite_vfs first",
                    current.settings.autoincrement, wanted.autoincrement
                )));
            }
            tx.execute_batch("DROP TABLE IF EXISTS users")?;
            tx.execute_batch(create_table_sql(wanted.autoincrement))?;
        }
        write_setting(tx, CACHE_SIZE, wanted.cache_size)
    })
    .map_err(|e| match e {
        DbError::Constraint(message) => message,
        e => format!("configuring SQLite failed, the previous settings stay in force: {e}"),
    })?;
    state::set_persisted(Persisted {
        settings: wanted,
        ..current
    });
    reopen()?;
    let actual = read_settings()?;
    if actual.cache_size != wanted.cache_size || actual.autoincrement != wanted.autoincrement {
        return Err(format!(
            "SQLite keeps cache_size {} and autoincrement {} (asked: {} and {})",
            actual.cache_size, actual.autoincrement, wanted.cache_size, wanted.autoincrement
        ));
    }
    // The read connection was dropped by the read-back.
    ready_reader()?;
    Ok(actual)
}

/// `count(*)` walks the whole table: O(rows), fine for a query, but slow at 1M rows.
pub fn stats() -> Result<SqliteStats, String> {
    let journal_mode = read_settings()?.journal_mode;
    ready_reader()?;
    Db::query(|conn| {
        let int = |sql: &str| -> Result<u64, DbError> {
            let value = conn.query_scalar::<i64>(sql, params![])?;
            u64::try_from(value).map_err(|_| DbError::Constraint(format!("{sql} returned {value}")))
        };
        Ok(SqliteStats {
            rows: int("SELECT count(*) FROM users")?,
            page_count: int("PRAGMA page_count")?,
            page_size: int("PRAGMA page_size")?,
            freelist_count: int("PRAGMA freelist_count")?,
            journal_mode,
        })
    })
    .map_err(db_error("reading the statistics"))
}
