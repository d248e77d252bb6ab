//! SQLite connection settings: validating a requested `SqliteConfig`, and the values actually used.

use bench_types::{SqliteConfig, SqliteSettings};

/// A pragma whose value is one of a few upper-case names; `code` is its persisted byte.
macro_rules! named_values {
    ($(#[$doc:meta])* $name:ident, $pragma:literal { $($variant:ident = $text:literal / $code:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const PRAGMA: &'static str = $pragma;
            const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn code(self) -> u8 {
                match self { $($name::$variant => $code),+ }
            }

            pub fn from_code(code: u8) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.code() == code)
            }

            /// Case-insensitive, as SQLite itself.
            pub fn parse(text: &str) -> Result<Self, String> {
                let wanted = text.trim();
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(wanted))
                    .ok_or_else(|| {
                        let names: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
                        format!("unknown {} {:?}: expected one of {}", $pragma, text, names.join(", "))
                    })
            }
        }
    };
}

named_values!(
    /// `PRAGMA journal_mode`.
    JournalMode, "journal_mode" {
        Delete = "DELETE" / 0,
        Truncate = "TRUNCATE" / 1,
        Persist = "PERSIST" / 2,
        Memory = "MEMORY" / 3,
        Wal = "WAL" / 4,
        Off = "OFF" / 5,
    }
);

named_values!(
    /// `PRAGMA synchronous`; SQLite reads it back as 0..=3, which is also our code.
    Synchronous, "synchronous" {
        Off = "OFF" / 0,
        Normal = "NORMAL" / 1,
        Full = "FULL" / 2,
        Extra = "EXTRA" / 3,
    }
);

named_values!(
    /// `PRAGMA locking_mode`.
    LockingMode, "locking_mode" {
        Normal = "NORMAL" / 0,
        Exclusive = "EXCLUSIVE" / 1,
    }
);

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
        if let Some(size) = request.cache_size {
            // SQLite parses the value into a C int.
            if i32::try_from(size).is_err() {
                return Err(format!(
                    "cache_size {size} is outside SQLite's range {}..={}",
                    i32::MIN,
                    i32::MAX
                ));
            }
            next.cache_size = size;
        }
        if let Some(flag) = request.autoincrement {
            next.autoincrement = flag;
        }
        Ok(next)
    }

    pub fn to_candid(self) -> SqliteSettings {
        SqliteSettings {
            journal_mode: self.journal_mode.name().to_string(),
            synchronous: self.synchronous.name().to_string(),
            page_size: self.page_size,
            cache_size: self.cache_size,
            locking_mode: self.locking_mode.name().to_string(),
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
            self.journal_mode.name().into(),
            actual.journal_mode.name().into(),
        );
        note(
            Synchronous::PRAGMA,
            self.synchronous.name().into(),
            actual.synchronous.name().into(),
        );
        note(
            LockingMode::PRAGMA,
            self.locking_mode.name().into(),
            actual.locking_mode.name().into(),
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
