//! The SQLite store: one connection to `./DB/main.db`, a file mounted on its own virtual
//! memory of the shared manager.
//!
//! The connection is managed here rather than with `ic_rusqlite::with_connection`:
//! ic-rusqlite 0.5 opens it with `expect`/`unwrap` (a failure would trap with a Rust
//! panic) and applies its pragmas from a `HashMap` in no fixed order, while `page_size`
//! and `locking_mode` must come before `journal_mode`. We reuse its memory manager,
//! file name and mount id, and never touch `ic_rusqlite::CONNECTION`.

use std::cell::RefCell;

use ic_rusqlite::ic_wasi_polyfill;
use ic_rusqlite::rusqlite::{self, Connection, OptionalExtension, ffi};

use crate::ids::{Ids, Scan};
use crate::memory;
use crate::report::{self, Inserted, Read};
use crate::settings::{JournalMode, LockingMode, Settings, Synchronous};
use crate::state;
pub use crate::users_sql::MAX_ID;
use crate::users_sql::{
    CREATE_TABLE, CREATE_TABLE_AUTOINCREMENT, GET_USER, INSERT_USER, SCAN_USERS, SqliteStats,
};

/// ic-rusqlite 0.5's `DEFAULT_DB_FILE_NAME`.
const DB_FILE: &str = "./DB/main.db";
const DB_DIR: &str = "./DB";
/// SQLite's lock on the WASI file system is a directory next to the file (as
/// ic-rusqlite assumes when it removes it before opening).
const DB_LOCK_DIR: &str = "./DB/main.db.lock";

thread_local! {
    /// `None` until first use after install/upgrade, or after a failed (re)open.
    static CONNECTION: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

fn sql_error(context: &str) -> impl Fn(rusqlite::Error) -> String + '_ {
    move |e| format!("{context}: {e}")
}

/// Runs `f` on the connection, opening it first with the persisted settings if needed
/// (the open is never part of a measurement: callers measure inside `f`).
pub(crate) fn with_connection<R>(
    f: impl FnOnce(&mut Connection) -> Result<R, String>,
) -> Result<R, String> {
    CONNECTION.with_borrow_mut(|slot| {
        let conn = match slot {
            Some(conn) => conn,
            None => slot.insert(open(&state::sqlite_settings())?),
        };
        f(conn)
    })
}

/// Opens the connection now (install, upgrade) so queries find it open: a query cannot
/// keep a connection it opened, since its heap changes are discarded.
pub fn init() -> Result<(), String> {
    with_connection(|_| Ok(()))
}

/// Closes the connection (before an upgrade, or to reopen with new settings).
pub fn close() -> Result<(), String> {
    CONNECTION.with_borrow_mut(|slot| match slot.take() {
        None => Ok(()),
        Some(conn) => conn.close().map_err(|(conn, e)| {
            *slot = Some(conn);
            format!("closing the SQLite connection failed: {e}")
        }),
    })
}

fn open(settings: &Settings) -> Result<Connection, String> {
    memory::init();
    std::fs::create_dir_all(DB_DIR).map_err(|e| format!("creating {DB_DIR} failed: {e}"))?;
    // A lock left behind by a connection that vanished with the heap (an upgrade) would
    // make the file look busy; this canister is the file's only user.
    let _ = std::fs::remove_dir_all(DB_LOCK_DIR);
    mount_db_file()?;
    let conn = Connection::open(DB_FILE).map_err(sql_error("opening the SQLite database"))?;
    apply_pragmas(&conn, settings)?;
    conn.execute_batch(create_table_sql(settings.autoincrement))
        .map_err(sql_error("creating table users"))?;
    warm_up(&conn)?;
    Ok(conn)
}

/// Readies a new connection the way a canister that has served calls has it: schema
/// loaded, the endpoints' statements compiled and cached. Without this the first call
/// after an install, upgrade or `configure_sqlite` would also pay for parsing the schema
/// and the SQL, which no later call pays.
fn warm_up(conn: &Connection) -> Result<(), String> {
    for sql in [INSERT_USER, GET_USER, SCAN_USERS] {
        conn.prepare_cached(sql)
            .map_err(sql_error(&format!("preparing {sql}")))?;
    }
    // In locking_mode EXCLUSIVE a connection keeps its locks once taken; take them now
    // (an empty write transaction writes nothing) instead of in the first measured call.
    if conn.is_autocommit() {
        conn.execute_batch("BEGIN EXCLUSIVE; COMMIT;")
            .map_err(sql_error("taking the database locks"))?;
    }
    Ok(())
}

/// Puts the database file on its own virtual memory (faster than the file system's
/// chunked storage, and the reason SQLite's data never mixes with the B-tree's).
fn mount_db_file() -> Result<(), String> {
    // Mounts live on the heap: drop any earlier one before mounting again.
    let _ = ic_wasi_polyfill::unmount_memory_file(DB_FILE);
    let errno = ic_wasi_polyfill::mount_memory_file(
        DB_FILE,
        Box::new(memory::get(memory::SQLITE_DB)),
        // The file keeps the exact size SQLite gave it (kept in the file system's
        // metadata); a new memory starts empty.
        ic_wasi_polyfill::MountedFileSizePolicy::PreviousOrMemoryPages,
    );
    if errno != 0 {
        return Err(format!(
            "mounting {DB_FILE} on its stable memory failed: errno {errno}"
        ));
    }
    Ok(())
}

/// Order matters: `locking_mode` EXCLUSIVE before `journal_mode` lets WAL work without
/// shared memory; `page_size` only takes effect before the file has pages (or via VACUUM).
fn apply_pragmas(conn: &Connection, s: &Settings) -> Result<(), String> {
    // Values are our validated names and integers, so formatting them in is safe.
    let set = |name: &str, value: &dyn std::fmt::Display| {
        let sql = format!("PRAGMA {name} = {value}");
        conn.execute_batch(&sql).map_err(sql_error(&sql))
    };
    set(LockingMode::PRAGMA, &s.locking_mode.as_str())?;
    set("page_size", &s.page_size)?;
    set("cache_size", &s.cache_size)?;
    set(Synchronous::PRAGMA, &s.synchronous.as_str())?;
    // As ic-rusqlite: no temp files (VACUUM and sorting stay in the heap).
    set("temp_store", &"MEMORY")?;
    set(JournalMode::PRAGMA, &s.journal_mode.as_str())?;
    Ok(())
}

fn create_table_sql(autoincrement: bool) -> &'static str {
    if autoincrement {
        CREATE_TABLE_AUTOINCREMENT
    } else {
        CREATE_TABLE
    }
}

fn sqlite_id(id: u64) -> Result<i64, String> {
    i64::try_from(id).map_err(|_| format!("id {id} exceeds SQLite's INTEGER range"))
}

/// Inserts one row per id in one transaction with a cached prepared statement. An id
/// already present fails the whole call and rolls the transaction back.
pub fn insert(ids: &Ids, payload: &str) -> Result<(Inserted, u64), String> {
    with_connection(|conn| {
        report::measure(|| {
            let tx = conn.transaction().map_err(sql_error("BEGIN failed"))?;
            let inserted = insert_rows(&tx, ids, payload);
            match inserted {
                Ok(rows) => {
                    tx.commit().map_err(sql_error("COMMIT failed"))?;
                    Ok(rows)
                }
                Err(message) => Err(match tx.rollback() {
                    Ok(()) => format!("{message}; transaction rolled back, nothing inserted"),
                    Err(e) => format!("{message}; ROLLBACK failed too: {e}"),
                }),
            }
        })
    })
}

fn insert_rows(conn: &Connection, ids: &Ids, payload: &str) -> Result<Inserted, String> {
    let mut stmt = conn
        .prepare_cached(INSERT_USER)
        .map_err(sql_error("preparing the insert"))?;
    let mut rows = Inserted::default();
    for id in ids.iter() {
        match stmt.execute((sqlite_id(id)?, payload)) {
            Ok(_) => rows.inserted += 1,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.extended_code == ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
            {
                return Err(format!("id {id} already exists in table users"));
            }
            Err(e) => return Err(format!("inserting id {id} failed: {e}")),
        }
    }
    Ok(rows)
}

/// Point lookups; each value found is copied out as a `String`, as the B-tree must.
pub fn get(ids: &Ids) -> Result<(Read, u64), String> {
    with_connection(|conn| {
        report::measure(|| {
            let mut stmt = conn
                .prepare_cached(GET_USER)
                .map_err(sql_error("preparing the lookup"))?;
            let mut rows = Read::default();
            for id in ids.iter() {
                let value: Option<String> = stmt
                    .query_row((sqlite_id(id)?,), |row| row.get(0))
                    .optional()
                    .map_err(sql_error(&format!("reading id {id}")))?;
                if let Some(value) = value {
                    rows.add_row(value.len());
                }
            }
            Ok(rows)
        })
    })
}

/// Up to `scan.count` rows with id >= `scan.offset`, in id order.
pub fn scan(scan: &Scan) -> Result<(Read, u64), String> {
    let offset = sqlite_id(scan.offset)?;
    let limit = sqlite_id(scan.count)?;
    with_connection(|conn| {
        report::measure(|| {
            let mut stmt = conn
                .prepare_cached(SCAN_USERS)
                .map_err(sql_error("preparing the scan"))?;
            let mut result = stmt
                .query((offset, limit))
                .map_err(sql_error("scanning users"))?;
            let mut rows = Read::default();
            while let Some(row) = result.next().map_err(sql_error("scanning users"))? {
                let value: String = row.get(0).map_err(sql_error("reading a scanned row"))?;
                rows.add_row(value.len());
            }
            Ok(rows)
        })
    })
}

/// Deletes every row; returns how many. With AUTOINCREMENT the sequence restarts too,
/// so the table is as new.
pub fn clear() -> Result<u64, String> {
    with_connection(|conn| {
        let tx = conn.transaction().map_err(sql_error("BEGIN failed"))?;
        let removed = tx
            .execute("DELETE FROM users", ())
            .map_err(sql_error("DELETE FROM users"))?;
        if has_sequence_table(&tx)? {
            tx.execute("DELETE FROM sqlite_sequence WHERE name = 'users'", ())
                .map_err(sql_error("resetting the AUTOINCREMENT sequence"))?;
        }
        tx.commit().map_err(sql_error("COMMIT failed"))?;
        Ok(removed as u64)
    })
}

fn has_sequence_table(conn: &Connection) -> Result<bool, String> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence')",
        (),
        |row| row.get(0),
    )
    .map_err(sql_error("looking for sqlite_sequence"))
}

fn is_empty(conn: &Connection) -> Result<bool, String> {
    conn.query_row("SELECT NOT EXISTS (SELECT 1 FROM users)", (), |row| {
        row.get(0)
    })
    .map_err(sql_error("checking whether users is empty"))
}

/// The settings in force, read back from SQLite (never from what was asked).
fn read_settings(conn: &Connection) -> Result<Settings, String> {
    let text = |name: &str| -> Result<String, String> {
        conn.pragma_query_value(None, name, |row| row.get::<_, String>(0))
            .map_err(sql_error(&format!("reading PRAGMA {name}")))
    };
    let int = |name: &str| -> Result<i64, String> {
        conn.pragma_query_value(None, name, |row| row.get::<_, i64>(0))
            .map_err(sql_error(&format!("reading PRAGMA {name}")))
    };
    let journal_mode = JournalMode::parse(&text(JournalMode::PRAGMA)?)?;
    let locking_mode = LockingMode::parse(&text(LockingMode::PRAGMA)?)?;
    let sync_code = int(Synchronous::PRAGMA)?;
    let synchronous = u8::try_from(sync_code)
        .ok()
        .and_then(Synchronous::from_code)
        .ok_or_else(|| format!("SQLite reports an unknown synchronous value {sync_code}"))?;
    let page_size = int("page_size")?;
    let page_size =
        u32::try_from(page_size).map_err(|_| format!("SQLite reports page_size {page_size}"))?;
    let table_sql: Option<String> = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'users'",
            (),
            |row| row.get(0),
        )
        .optional()
        .map_err(sql_error("reading the schema of users"))?;
    Ok(Settings {
        journal_mode,
        synchronous,
        page_size,
        cache_size: int("cache_size")?,
        locking_mode,
        autoincrement: table_sql
            .is_some_and(|sql| sql.to_ascii_uppercase().contains("AUTOINCREMENT")),
    })
}

/// Applies `wanted` on a fresh connection and returns what SQLite actually uses; that
/// (not `wanted`) is persisted so later connections and upgrades match reality.
///
/// Policy: changing `page_size` or `autoincrement` rebuilds the file/table, so it is only
/// done while `users` is empty (clear_sqlite first); the rebuild (VACUUM, or drop and
/// re-create) is then cheap. On a full table it is refused, because a VACUUM of a large
/// database could exceed the message instruction limit.
pub fn configure(wanted: Settings) -> Result<Settings, String> {
    // Refuse early, leaving the connection alone, if the current one can tell. If the
    // current settings cannot even open the database, go on: the new connection checks.
    if let Ok(Some(refusal)) = with_connection(|conn| rebuild_refusal(conn, &wanted)) {
        return Err(refusal);
    }

    close()?;
    // From here, any failure drops the new connection: the next call reopens with the
    // persisted (previous) settings instead of running on half-applied ones.
    let conn = open(&wanted).map_err(|e| {
        let hint = if wanted.locking_mode == LockingMode::Normal {
            " (a WAL database needs locking_mode EXCLUSIVE here: there is no shared memory for the WAL index)"
        } else {
            ""
        };
        format!("reopening SQLite with the new settings failed, the previous ones stay in force: {e}{hint}")
    })?;
    if let Some(refusal) = rebuild_refusal(&conn, &wanted)? {
        return Err(refusal);
    }
    let before = read_settings(&conn)?;
    rebuild(&conn, &before, &wanted)?;
    let actual = read_settings(&conn)?;
    state::set_sqlite_settings(actual);
    CONNECTION.with_borrow_mut(|slot| *slot = Some(conn));

    let differences = wanted.differences(&actual);
    if differences.is_empty() {
        Ok(actual)
    } else {
        Err(format!(
            "{} (journal_mode in force: {}; the settings in force are kept and persisted)",
            differences.join("; "),
            actual.journal_mode.as_str()
        ))
    }
}

/// `Some(reason)` if `wanted` needs a rebuild (page_size, autoincrement) that the
/// table's rows forbid.
fn rebuild_refusal(conn: &Connection, wanted: &Settings) -> Result<Option<String>, String> {
    let current = read_settings(conn)?;
    let needs_rebuild =
        current.page_size != wanted.page_size || current.autoincrement != wanted.autoincrement;
    if needs_rebuild && !is_empty(conn)? {
        return Ok(Some(format!(
            "changing page_size ({} -> {}) or autoincrement ({} -> {}) needs an empty users table; call clear_sqlite first",
            current.page_size, wanted.page_size, current.autoincrement, wanted.autoincrement
        )));
    }
    Ok(None)
}

/// Schema and page-size changes, on an empty table (checked by `configure`).
fn rebuild(conn: &Connection, before: &Settings, wanted: &Settings) -> Result<(), String> {
    if before.autoincrement != wanted.autoincrement {
        conn.execute_batch("DROP TABLE IF EXISTS users")
            .map_err(sql_error("dropping users to change AUTOINCREMENT"))?;
        conn.execute_batch(create_table_sql(wanted.autoincrement))
            .map_err(sql_error("re-creating users"))?;
    }
    let page_size: i64 = conn
        .pragma_query_value(None, "page_size", |row| row.get(0))
        .map_err(sql_error("reading PRAGMA page_size"))?;
    if page_size != i64::from(wanted.page_size) {
        // The file already has pages, so the new size needs a VACUUM, and VACUUM cannot
        // change the page size in WAL mode: leave WAL for the rebuild, then return to it.
        let journal: String = conn
            .pragma_query_value(None, JournalMode::PRAGMA, |row| row.get(0))
            .map_err(sql_error("reading PRAGMA journal_mode"))?;
        let vacuum = format!("PRAGMA page_size = {}; VACUUM;", wanted.page_size);
        let batch = if journal.eq_ignore_ascii_case("WAL") {
            format!("PRAGMA journal_mode = DELETE; {vacuum} PRAGMA journal_mode = WAL;")
        } else {
            vacuum
        };
        conn.execute_batch(&batch).map_err(sql_error(&format!(
            "changing page_size to {} (VACUUM)",
            wanted.page_size
        )))?;
    }
    Ok(())
}

/// `count(*)` walks the whole table: O(rows), fine for a query, but slow at 1M rows.
pub fn stats() -> Result<SqliteStats, String> {
    with_connection(|conn| {
        let int = |sql: &str| -> Result<u64, String> {
            let value: i64 = conn
                .query_row(sql, (), |row| row.get(0))
                .map_err(sql_error(sql))?;
            u64::try_from(value).map_err(|_| format!("{sql} returned {value}"))
        };
        let journal_mode: String = conn
            .pragma_query_value(None, JournalMode::PRAGMA, |row| row.get(0))
            .map_err(sql_error("reading PRAGMA journal_mode"))?;
        Ok(SqliteStats {
            rows: int("SELECT count(*) FROM users")?,
            page_count: int("PRAGMA page_count")?,
            page_size: int("PRAGMA page_size")?,
            freelist_count: int("PRAGMA freelist_count")?,
            journal_mode: journal_mode.to_ascii_uppercase(),
        })
    })
}

/// A measured statement of a suite's own table (dbbench, keys): on the connection `$conn`,
/// `$require` checks the table before the measurement; then the cached statement `$sql`,
/// prepared as `$stmt`, and `$body` are measured. Replies `(value, instructions)`.
macro_rules! measured_statement {
    (|$conn:ident| $require:expr, $stmt:ident = $sql:expr => $body:block) => {
        $crate::sqlite::with_connection(|$conn| {
            $require?;
            let sql = $sql;
            $crate::report::measure(|| {
                let mut $stmt = $conn
                    .prepare_cached(&sql)
                    .map_err(|e| format!("preparing {sql}: {e}"))?;
                $body
            })
        })
    };
}
pub(crate) use measured_statement;
