//! SQLite connection settings: validating a requested `SqliteConfig`, and the values actually used.

use bench_types::{SqliteConfig, SqliteSettings};

pub use bench_types::pragma::{JournalMode, LockingMode, Synchronous};

pub const MIN_PAGE_SIZE: u32 = 512;
pub const MAX_PAGE_SIZE: u32 = 65_536;

/// Every connection is opened with these settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
    pub page_size: u32,
    /// Positive: pages; negative: KiB (SQLite's convention).
    pub cache_size: i64,
    pub locking_mode: LockingMode,
    /// `users.id` is `INTEGER PRIMARY KEY AUTOINCREMENT` (the forum benchmark's schema).
    pub autoincrement: bool,
}

impl Default for Settings {
    /// ic-rusqlite 0.5's defaults (`ConnectionConfig::default`), i.e. what an
    /// ic-rusqlite canister gets without tuning; no AUTOINCREMENT.
    fn default() -> Self {
        Settings {
            journal_mode: JournalMode::Persist,
            synchronous: Synchronous::Off,
            page_size: 4096,
            cache_size: 500_000,
            locking_mode: LockingMode::Exclusive,
            autoincrement: false,
        }
    }
}

impl Settings {
    /// `self` with the fields given in `request`, all validated.
    pub fn with(self, request: &SqliteConfig) -> Result<Settings, String> {
        let mut next = self;
        if let Some(mode) = &request.journal_mode {
            next.journal_mode = JournalMode::parse(mode)?;
        }
        if let Some(sync) = &request.synchronous {
            next.synchronous = Synchronous::parse(sync)?;
        }
        if let Some(mode) = &request.locking_mode {
            next.locking_mode = LockingMode::parse(mode)?;
        }
        if let Some(size) = request.page_size {
            check_page_size(size)?;
            next.page_size = size;
        }
        request.apply_cache_and_schema(&mut next.cache_size, &mut next.autoincrement)?;
        Ok(next)
    }

    pub fn to_candid(self) -> SqliteSettings {
        SqliteSettings {
            journal_mode: self.journal_mode.as_str().to_string(),
            synchronous: self.synchronous.as_str().to_string(),
            page_size: self.page_size,
            cache_size: self.cache_size,
            locking_mode: self.locking_mode.as_str().to_string(),
            autoincrement: self.autoincrement,
        }
    }

    /// Human-readable list of the settings where `actual` differs from `self`.
    pub fn differences(&self, actual: &Settings) -> Vec<String> {
        let mut out = Vec::new();
        let mut note = |what: &str, wanted: String, got: String| {
            if wanted != got {
                out.push(format!("{what} {wanted} was asked but SQLite keeps {got}"));
            }
        };
        note(
            JournalMode::PRAGMA,
            self.journal_mode.as_str().into(),
            actual.journal_mode.as_str().into(),
        );
        note(
            Synchronous::PRAGMA,
            self.synchronous.as_str().into(),
            actual.synchronous.as_str().into(),
        );
        note(
            LockingMode::PRAGMA,
            self.locking_mode.as_str().into(),
            actual.locking_mode.as_str().into(),
        );
        note(
            "page_size",
            self.page_size.to_string(),
            actual.page_size.to_string(),
        );
        note(
            "cache_size",
            self.cache_size.to_string(),
            actual.cache_size.to_string(),
        );
        note(
            "autoincrement",
            self.autoincrement.to_string(),
            actual.autoincrement.to_string(),
        );
        out
    }
}

fn check_page_size(size: u32) -> Result<(), String> {
    if size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&size) {
        Ok(())
    } else {
        Err(format!(
            "page_size {size} is not a power of two between {MIN_PAGE_SIZE} and {MAX_PAGE_SIZE}"
        ))
    }
}
