//! The SQLite users table of both SQLite canisters (the bench canister's ic-rusqlite store
//! and the sqlite-vfs canister, which compiles this file): its statements and what `stats`
//! reads of it, so the two bindings run the same SQL.

use bench_types::Stats;

use crate::report;

/// SQLite's INTEGER is an i64, and our ids are never negative.
pub const MAX_ID: u64 = i64::MAX as u64;

pub const CREATE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, username TEXT NOT NULL)";
pub const CREATE_TABLE_AUTOINCREMENT: &str = "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY AUTOINCREMENT, username TEXT NOT NULL)";
pub const INSERT_USER: &str = "INSERT INTO users (id, username) VALUES (?1, ?2)";
pub const GET_USER: &str = "SELECT username FROM users WHERE id = ?1";
pub const SCAN_USERS: &str = "SELECT username FROM users WHERE id >= ?1 ORDER BY id LIMIT ?2";

/// Numbers for `stats`.
pub struct SqliteStats {
    pub rows: u64,
    pub page_count: u64,
    pub page_size: u64,
    pub freelist_count: u64,
    pub journal_mode: String,
}

/// The `stats` reply: SQLite's numbers and the canister's sizes, with the canister's other
/// stores' figures (`btree_rows`, `btree_stable_pages`) as it gives them. `stats` has no
/// Err case: zeros, and the reason where the journal mode would be.
pub fn stats_reply(
    sqlite: Result<SqliteStats, String>,
    btree_rows: u64,
    btree_stable_pages: Option<u64>,
    payload_size: u64,
) -> Stats {
    let (sqlite_rows, page_count, page_size, freelist_count, journal_mode) = match sqlite {
        Ok(s) => (
            s.rows,
            s.page_count,
            s.page_size,
            s.freelist_count,
            s.journal_mode,
        ),
        Err(e) => (0, 0, 0, 0, format!("unavailable: {e}")),
    };
    Stats {
        btree_rows,
        sqlite_rows,
        heap_pages: report::heap_pages(),
        stable_pages: report::stable_pages(),
        btree_stable_pages,
        sqlite_page_count: page_count,
        sqlite_page_size: page_size,
        sqlite_freelist_count: freelist_count,
        journal_mode,
        payload_size,
    }
}
