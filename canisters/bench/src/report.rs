//! What every measured call returns, and how it is measured.

use bench_types::{InsertReport, ReadReport, Stats};

/// Row counts of one store operation, before the counters are attached.
#[derive(Default, Clone, Copy, Debug)]
pub struct Inserted {
    pub inserted: u64,
    pub replaced: u64,
}

#[derive(Default, Clone, Copy, Debug)]
pub struct Read {
    pub found: u64,
    pub bytes: u64,
}

impl Read {
    pub fn add_row(&mut self, payload_len: usize) {
        self.found += 1;
        self.bytes = self.bytes.saturating_add(payload_len as u64);
    }
}

/// Instructions executed so far in this message (counter 0 of the IC interface spec).
pub fn instruction_counter() -> u64 {
    ic_cdk::api::performance_counter(0)
}

/// Wasm heap size, in 64 KiB pages.
pub fn heap_pages() -> u64 {
    core::arch::wasm32::memory_size(0) as u64
}

/// Stable memory size, in 64 KiB pages.
pub fn stable_pages() -> u64 {
    ic_cdk::api::stable_size()
}

/// Runs the store work `f`, counting only its instructions. Callers set up everything
/// that is not the store's own cost (argument checks, payload string, opening the
/// connection) before calling this.
pub fn measure<T>(f: impl FnOnce() -> Result<T, String>) -> Result<(T, u64), String> {
    let start = instruction_counter();
    let value = f()?;
    let end = instruction_counter();
    Ok((value, end.saturating_sub(start)))
}

/// The reply of an insert call: the rows, the store's instructions, the memory sizes now.
pub fn insert_report(rows: Inserted, instructions: u64) -> InsertReport {
    InsertReport {
        rows_inserted: rows.inserted,
        rows_replaced: rows.replaced,
        instructions,
        heap_pages: heap_pages(),
        stable_pages: stable_pages(),
    }
}

/// The reply of a read call, as [`insert_report`].
pub fn read_report(rows: Read, instructions: u64) -> ReadReport {
    ReadReport {
        rows_found: rows.found,
        bytes_read: rows.bytes,
        instructions,
        heap_pages: heap_pages(),
        stable_pages: stable_pages(),
    }
}

/// The SQLite store's numbers for `stats`.
pub struct SqliteStats {
    pub rows: u64,
    pub page_count: u64,
    pub page_size: u64,
    pub freelist_count: u64,
    pub journal_mode: String,
}

/// The `stats` reply. It has no Err case: a SQLite store that cannot say gives zeros, and
/// the reason where the journal mode would be. `btree` is the StableBTreeMap's rows and
/// pages, in a canister that has one.
pub fn stats(
    sqlite: Result<SqliteStats, String>,
    btree: Option<(u64, u64)>,
    payload_size: u64,
) -> Stats {
    let sqlite = sqlite.unwrap_or_else(|e| SqliteStats {
        rows: 0,
        page_count: 0,
        page_size: 0,
        freelist_count: 0,
        journal_mode: format!("unavailable: {e}"),
    });
    Stats {
        btree_rows: btree.map_or(0, |(rows, _)| rows),
        sqlite_rows: sqlite.rows,
        heap_pages: heap_pages(),
        stable_pages: stable_pages(),
        btree_stable_pages: btree.map(|(_, pages)| pages),
        sqlite_page_count: sqlite.page_count,
        sqlite_page_size: sqlite.page_size,
        sqlite_freelist_count: sqlite.freelist_count,
        journal_mode: sqlite.journal_mode,
        payload_size,
    }
}
