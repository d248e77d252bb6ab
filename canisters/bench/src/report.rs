//! What every measured call returns, and how it is measured.

use bench_types::{InsertReport, ReadReport};

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
