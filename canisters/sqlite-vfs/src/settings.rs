//! What `configure_sqlite_vfs` may change, and what the binding fixes.
//!
//! ic-sqlite-vfs opens every update connection with its own pragmas (`db/pragmas.rs`:
//! journal_mode MEMORY, synchronous OFF, temp_store MEMORY, locking_mode EXCLUSIVE,
//! foreign_keys ON, cache_size -32768), page_size 16,384 on an empty image, and runs every
//! update closure inside a transaction (so no VACUUM). A canister can still set cache_size
//! on a connection; the rest is the binding's.

use bench_types::SqliteConfig;
use bench_types::pragma::{JournalMode, LockingMode, Synchronous};

/// ic-sqlite-vfs 2.1.0's `config::SQLITE_PAGE_SIZE`: the page size it sets on an empty
/// image, its VFS's sector size and the unit its overlay stages and commits.
pub const PAGE_SIZE: u32 = 16_384;
/// ic-sqlite-vfs 2.1.0's `config::SQLITE_CACHE_SIZE_KIB`, applied as `cache_size = -32768`
/// (32 MiB) on every connection it opens.
pub const BINDING_CACHE_SIZE: i64 = -32_768;
/// The binding's journal mode: its rollback journal lives in heap memory.
pub const JOURNAL_MODE: JournalMode = JournalMode::Memory;
pub const SYNCHRONOUS: Synchronous = Synchronous::Off;
pub const LOCKING_MODE: LockingMode = LockingMode::Exclusive;

/// The settings a canister chooses on top of the binding's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Positive: pages; negative: KiB (SQLite's convention).
    pub cache_size: i64,
    /// `users.id` is `INTEGER PRIMARY KEY AUTOINCREMENT`.
    pub autoincrement: bool,
}

impl Default for Settings {
    /// The binding's as shipped; no AUTOINCREMENT (the bench canister's default schema).
    fn default() -> Self {
        Settings {
            cache_size: BINDING_CACHE_SIZE,
            autoincrement: false,
        }
    }
}

impl Settings {
    /// `self` with the fields of `request`; a value the binding does not let a canister
    /// choose is refused, naming why.
    pub fn with(self, request: &SqliteConfig) -> Result<Settings, String> {
        if let Some(text) = &request.journal_mode {
            let mode = JournalMode::parse(text)?;
            if mode != JOURNAL_MODE {
                let no_wal = if mode == JournalMode::Wal {
                    " and has no WAL (its SQLite is built with SQLITE_OMIT_WAL)"
                } else {
                    ""
                };
                return Err(format!(
                    "journal_mode {mode} refused: ic-sqlite-vfs keeps its rollback journal in heap memory (journal_mode MEMORY on every update connection){no_wal}; only MEMORY is accepted"
                ));
            }
        }
        if let Some(text) = &request.synchronous {
            let value = Synchronous::parse(text)?;
            if value != SYNCHRONOUS {
                return Err(format!(
                    "synchronous {value} refused: ic-sqlite-vfs sets synchronous OFF on every update connection (a message's writes reach stable memory at COMMIT, with no fsync); only OFF is accepted"
                ));
            }
        }
        if let Some(text) = &request.locking_mode {
            let value = LockingMode::parse(text)?;
            if value != LOCKING_MODE {
                return Err(format!(
                    "locking_mode {value} refused: ic-sqlite-vfs sets locking_mode EXCLUSIVE on every connection; only EXCLUSIVE is accepted"
                ));
            }
        }
        if let Some(size) = request.page_size
            && size != PAGE_SIZE
        {
            return Err(format!(
                "page_size {size} refused: ic-sqlite-vfs sets page_size {PAGE_SIZE} itself on an empty image (its VFS's sector and commit unit), and a later change needs VACUUM, which cannot run inside its update transaction; only {PAGE_SIZE} is accepted"
            ));
        }
        let mut next = self;
        request.apply_cache_and_schema(&mut next.cache_size, &mut next.autoincrement)?;
        Ok(next)
    }
}
