//! Settings that outlive the heap: SQLite settings and payload size, in a `StableCell` on
//! its own virtual memory, so every new connection and every upgrade re-applies them.

use std::borrow::Cow;
use std::cell::RefCell;

use ic_stable_structures::StableCell;
use ic_stable_structures::storable::{Bound, Storable};

use crate::memory::{self, Memory};
use crate::settings::{JournalMode, LockingMode, Settings, Synchronous};

/// Payload bytes per row unless `set_payload_size` says otherwise (the forum benchmark's).
pub const DEFAULT_PAYLOAD_SIZE: u64 = 100;
/// Largest payload per row: 1 MiB, ample for cost curves and far below SQLite's 1 GB
/// default row limit.
pub const MAX_PAYLOAD_SIZE: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Persisted {
    payload_size: u64,
    sqlite: Settings,
}

impl Default for Persisted {
    fn default() -> Self {
        Persisted {
            payload_size: DEFAULT_PAYLOAD_SIZE,
            sqlite: Settings::default(),
        }
    }
}

/// Layout version 1: version, payload_size (u64 LE), page_size (u32 LE),
/// cache_size (i64 LE), journal, synchronous, locking, autoincrement (one byte each).
const LAYOUT_V1: u8 = 1;
const LAYOUT_V1_LEN: usize = 1 + 8 + 4 + 8 + 4;

impl Storable for Persisted {
    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.encode())
    }

    fn into_bytes(self) -> Vec<u8> {
        self.encode()
    }

    /// `Storable` cannot fail; unreadable bytes (only possible if the memory was
    /// corrupted) give the defaults rather than a trap that would block every call.
    fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
        Self::decode(&bytes).unwrap_or_default()
    }

    const BOUND: Bound = Bound::Unbounded;
}

impl Persisted {
    fn encode(&self) -> Vec<u8> {
        let s = &self.sqlite;
        let mut out = Vec::with_capacity(LAYOUT_V1_LEN);
        out.push(LAYOUT_V1);
        out.extend_from_slice(&self.payload_size.to_le_bytes());
        out.extend_from_slice(&s.page_size.to_le_bytes());
        out.extend_from_slice(&s.cache_size.to_le_bytes());
        out.push(s.journal_mode.code());
        out.push(s.synchronous.code());
        out.push(s.locking_mode.code());
        out.push(u8::from(s.autoincrement));
        out
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        // A fixed-size array: every index below is checked at compile time.
        let b: &[u8; LAYOUT_V1_LEN] = bytes.try_into().ok()?;
        if b[0] != LAYOUT_V1 {
            return None;
        }
        let payload_size = u64::from_le_bytes([b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8]]);
        let page_size = u32::from_le_bytes([b[9], b[10], b[11], b[12]]);
        let cache_size =
            i64::from_le_bytes([b[13], b[14], b[15], b[16], b[17], b[18], b[19], b[20]]);
        if payload_size > MAX_PAYLOAD_SIZE {
            return None;
        }
        Some(Persisted {
            payload_size,
            sqlite: Settings {
                journal_mode: JournalMode::from_code(b[21])?,
                synchronous: Synchronous::from_code(b[22])?,
                page_size,
                cache_size,
                locking_mode: LockingMode::from_code(b[23])?,
                autoincrement: b[24] != 0,
            },
        })
    }
}

thread_local! {
    static PERSISTED: RefCell<StableCell<Persisted, Memory>> = RefCell::new(
        StableCell::init(memory::get(memory::SETTINGS), Persisted::default()),
    );

    /// The row payload, built once from `payload_size` so inserts only copy it.
    static PAYLOAD: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn get() -> Persisted {
    PERSISTED.with_borrow(|cell| *cell.get())
}

fn update(change: impl FnOnce(&mut Persisted)) {
    PERSISTED.with_borrow_mut(|cell| {
        let mut value = *cell.get();
        change(&mut value);
        cell.set(value);
    });
}

/// Load the cell now (install, upgrade) instead of during a measured call.
pub fn init() {
    PERSISTED.with(|_| ());
}

pub fn sqlite_settings() -> Settings {
    get().sqlite
}

pub fn set_sqlite_settings(settings: Settings) {
    update(|p| p.sqlite = settings);
}

pub fn payload_size() -> u64 {
    get().payload_size
}

pub fn set_payload_size(size: u64) -> Result<u64, String> {
    if size > MAX_PAYLOAD_SIZE {
        return Err(format!(
            "payload size {size} exceeds the maximum of {MAX_PAYLOAD_SIZE} bytes (1 MiB)"
        ));
    }
    update(|p| p.payload_size = size);
    PAYLOAD.with_borrow_mut(|payload| *payload = None);
    Ok(size)
}

/// Runs `f` with the row payload: `payload_size` ASCII bytes (so bytes = chars).
pub fn with_payload<R>(f: impl FnOnce(&str) -> R) -> R {
    PAYLOAD.with_borrow_mut(|payload| {
        let text = payload.get_or_insert_with(|| make_payload(payload_size()));
        f(text)
    })
}

fn make_payload(size: u64) -> String {
    // `size` <= MAX_PAYLOAD_SIZE, so the cast cannot truncate.
    (0..size as usize)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect()
}
