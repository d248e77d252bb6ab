//! Settings that outlive the heap: SQLite settings, payload size and the heap store's
//! encoding, in a `StableCell` on its own virtual memory, so every new connection and every
//! upgrade re-applies them; and what the last `pre_upgrade` counted, for the host to read
//! after the upgrade.

use std::borrow::Cow;
use std::cell::RefCell;

use ic_stable_structures::StableCell;
use ic_stable_structures::storable::{Bound, Storable};

use bench_types::names::HeapEncoding;

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
    heap_encoding: HeapEncoding,
    last_pre_upgrade: PreUpgrade,
}

/// What the last `pre_upgrade` did, written at its end (zeros before the first upgrade).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreUpgrade {
    pub instructions: u64,
    pub encoded_bytes: u64,
    pub encoding: HeapEncoding,
}

impl Default for Persisted {
    fn default() -> Self {
        Persisted {
            payload_size: DEFAULT_PAYLOAD_SIZE,
            sqlite: Settings::default(),
            heap_encoding: HeapEncoding::Candid,
            last_pre_upgrade: PreUpgrade {
                instructions: 0,
                encoded_bytes: 0,
                encoding: HeapEncoding::Candid,
            },
        }
    }
}

/// Layout version 1: version, payload_size (u64 LE), page_size (u32 LE),
/// cache_size (i64 LE), journal, synchronous, locking, autoincrement (one byte each).
const LAYOUT_V1: u8 = 1;
const LAYOUT_V1_LEN: usize = 1 + 8 + 4 + 8 + 4;
/// Layout version 2: version 1's fields (with 2 as the version byte), then the heap
/// encoding (one byte), the last pre_upgrade's instructions and encoded bytes (u64 LE each)
/// and its encoding (one byte). A version-1 cell (a canister upgraded from a module without
/// the heap store) still reads, with the heap defaults.
const LAYOUT_V2: u8 = 2;
const LAYOUT_V2_LEN: usize = LAYOUT_V1_LEN + 1 + 8 + 8 + 1;

/// The persisted byte of an encoding: its index in `HeapEncoding::ALL`.
fn encoding_code(encoding: HeapEncoding) -> u8 {
    match encoding {
        HeapEncoding::Candid => 0,
        HeapEncoding::Cbor => 1,
    }
}

fn encoding_from_code(code: u8) -> Option<HeapEncoding> {
    HeapEncoding::ALL.get(usize::from(code)).copied()
}

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
        let mut out = Vec::with_capacity(LAYOUT_V2_LEN);
        out.push(LAYOUT_V2);
        out.extend_from_slice(&self.payload_size.to_le_bytes());
        out.extend_from_slice(&s.page_size.to_le_bytes());
        out.extend_from_slice(&s.cache_size.to_le_bytes());
        out.push(s.journal_mode.code());
        out.push(s.synchronous.code());
        out.push(s.locking_mode.code());
        out.push(u8::from(s.autoincrement));
        out.push(encoding_code(self.heap_encoding));
        let last = &self.last_pre_upgrade;
        out.extend_from_slice(&last.instructions.to_le_bytes());
        out.extend_from_slice(&last.encoded_bytes.to_le_bytes());
        out.push(encoding_code(last.encoding));
        out
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        match bytes.first() {
            Some(&LAYOUT_V1) => Self::decode_v1(bytes),
            Some(&LAYOUT_V2) if bytes.len() == LAYOUT_V2_LEN => {
                let (v1, rest) = bytes.split_at(LAYOUT_V1_LEN);
                let b: &[u8; LAYOUT_V2_LEN - LAYOUT_V1_LEN] = rest.try_into().ok()?;
                let mut base = Self::decode_v1_fields(v1)?;
                base.heap_encoding = encoding_from_code(b[0])?;
                base.last_pre_upgrade = PreUpgrade {
                    instructions: u64::from_le_bytes([
                        b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8],
                    ]),
                    encoded_bytes: u64::from_le_bytes([
                        b[9], b[10], b[11], b[12], b[13], b[14], b[15], b[16],
                    ]),
                    encoding: encoding_from_code(b[17])?,
                };
                Some(base)
            }
            _ => None,
        }
    }

    fn decode_v1(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != LAYOUT_V1_LEN {
            return None;
        }
        Self::decode_v1_fields(bytes)
    }

    /// Version 1's fields from its 25 bytes (the version byte is not checked here); the
    /// heap fields get their defaults.
    fn decode_v1_fields(bytes: &[u8]) -> Option<Self> {
        // A fixed-size array: every index below is checked at compile time.
        let b: &[u8; LAYOUT_V1_LEN] = bytes.try_into().ok()?;
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
            ..Persisted::default()
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

pub fn heap_encoding() -> HeapEncoding {
    get().heap_encoding
}

pub fn set_heap_encoding(encoding: HeapEncoding) {
    update(|p| p.heap_encoding = encoding);
}

pub fn last_pre_upgrade() -> PreUpgrade {
    get().last_pre_upgrade
}

/// Called at the very end of `pre_upgrade`: the cell is in stable memory, so the counts
/// survive into the new module.
pub fn set_last_pre_upgrade(last: PreUpgrade) {
    update(|p| p.last_pre_upgrade = last);
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
