//! The single `MemoryManager` over stable memory, and who owns which virtual memory.
//!
//! Stable memory must have exactly one manager: two of them (or a store writing to raw
//! stable memory next to a manager) overwrite each other, which is the bug of the forum
//! benchmark this canister descends from. ic-rusqlite 0.5 already creates one
//! (`ic_rusqlite::MEMORY_MANAGER`) and initialises ic-wasi-polyfill's file system on it, so
//! every store here takes its virtual memory from that same manager.
//!
//! Virtual memory ids in use (a manager has ids 0..=254; the tune variant's 10: at the end):
//!
//! | id        | owner                                                                  |
//! |-----------|------------------------------------------------------------------------|
//! | 0         | the StableBTreeMap store (`btree.rs`)                                  |
//! | 1         | persisted settings: SQLite pragmas and payload size (`state.rs`)       |
//! | 2         | the db_bench suite's `StableBTreeMap<[u8; 16], Vec<u8>>` (`dbbench.rs`) |
//! | 3..=6     | the keys suite's maps keyed by u64, ULID, UUID, hex text (`keys.rs`)   |
//! | 7, 8      | the sysbench suite's rows by id and its index on k (`sysbench.rs`)     |
//! | 9         | the heap store's map, encoded by `pre_upgrade` for `post_upgrade` (`heap.rs`) |
//! | 101..=118 | ic-wasi-polyfill's file system (ic-rusqlite's `FS_MEMORY_RANGE = 101..119`; stable-fs 0.13 uses 101..=110 of it, the rest stays reserved) |
//! | 120       | the SQLite database file `./DB/main.db`, mounted on its own memory     |
//!
//! ic-rusqlite 0.5 hard-codes 101..119 and 120 (`FS_MEMORY_RANGE`, `DEFAULT_MOUNTED_DB_ID`,
//! both private, so they are restated below) and nothing in ic-rusqlite, ic-wasi-polyfill or
//! stable-fs asks the manager for any other id. Ids 0 and 1 are therefore never touched by
//! SQLite; the const assertions below keep it that way if someone edits the numbers.

use ic_stable_structures::DefaultMemoryImpl;
use ic_stable_structures::memory_manager::{MemoryId, VirtualMemory};

/// A virtual memory handed out by the shared manager.
pub type Memory = VirtualMemory<DefaultMemoryImpl>;

const BTREE_ID: u8 = 0;
const SETTINGS_ID: u8 = 1;
const DBBENCH_BTREE_ID: u8 = 2;
/// The keys suite's four maps: u64, ULID, UUID, hex keys.
const KEYS_IDS: [u8; 4] = [3, 4, 5, 6];
/// The sysbench suite's maps: rows by id, and (k, id) as the index on k.
const SYSBENCH_IDS: [u8; 2] = [7, 8];
/// The heap store's upgrade record: only the upgrade hooks write or read it.
const HEAP_UPGRADE_ID: u8 = 9;
/// ic-rusqlite 0.5 `FS_MEMORY_RANGE` (start inclusive, end exclusive).
const WASI_FS_IDS: core::ops::Range<u8> = 101..119;
/// ic-rusqlite 0.5 `DEFAULT_MOUNTED_DB_ID`: reusing it keeps the database where any
/// ic-rusqlite canister would put it.
const SQLITE_DB_ID: u8 = 120;

/// Every id the stores above own, the tune variant's aside.
const OWNED_IDS: [u8; 10] = [
    BTREE_ID,
    SETTINGS_ID,
    DBBENCH_BTREE_ID,
    KEYS_IDS[0],
    KEYS_IDS[1],
    KEYS_IDS[2],
    KEYS_IDS[3],
    SYSBENCH_IDS[0],
    SYSBENCH_IDS[1],
    HEAP_UPGRADE_ID,
];

/// Whether `id` is free for a store: neither SQLite's (its file system's or its database's)
/// nor one of the first `owned` ids of [`OWNED_IDS`].
const fn is_free(id: u8, owned: usize) -> bool {
    if (id >= WASI_FS_IDS.start && id < WASI_FS_IDS.end) || id == SQLITE_DB_ID {
        return false;
    }
    let mut i = 0;
    while i < owned {
        if OWNED_IDS[i] == id {
            return false;
        }
        i += 1;
    }
    true
}

// Each owned id is free of SQLite and of the ids before it: no two stores share a memory.
const _: () = {
    let mut i = 0;
    while i < OWNED_IDS.len() {
        assert!(is_free(OWNED_IDS[i], i));
        i += 1;
    }
};

pub const BTREE: MemoryId = MemoryId::new(BTREE_ID);
pub const SETTINGS: MemoryId = MemoryId::new(SETTINGS_ID);
pub const DBBENCH_BTREE: MemoryId = MemoryId::new(DBBENCH_BTREE_ID);
pub const KEYS_U64: MemoryId = MemoryId::new(KEYS_IDS[0]);
pub const KEYS_ULID: MemoryId = MemoryId::new(KEYS_IDS[1]);
pub const KEYS_UUID: MemoryId = MemoryId::new(KEYS_IDS[2]);
pub const KEYS_HEX: MemoryId = MemoryId::new(KEYS_IDS[3]);
pub const SYSBENCH_ROWS: MemoryId = MemoryId::new(SYSBENCH_IDS[0]);
pub const SYSBENCH_K_INDEX: MemoryId = MemoryId::new(SYSBENCH_IDS[1]);
pub const HEAP_UPGRADE: MemoryId = MemoryId::new(HEAP_UPGRADE_ID);
pub const SQLITE_DB: MemoryId = MemoryId::new(SQLITE_DB_ID);

/// A virtual memory from ic-rusqlite's manager. The first access to the manager also
/// initialises ic-wasi-polyfill (file system on ids 101..119), which SQLite needs.
pub fn get(id: MemoryId) -> Memory {
    ic_rusqlite::MEMORY_MANAGER.with_borrow(|manager| manager.get(id))
}

/// Initialise the manager and the WASI file system now, not lazily in the middle of a
/// measured call. Needed after install and after every upgrade (the heap starts empty).
pub fn init() {
    ic_rusqlite::MEMORY_MANAGER.with(|_| ());
}

// ---- the tune variant (cargo feature `tune`, `tune.rs`) ---------------------------------
//
// Written here, below the default module's code, so that the default module's lines (and
// the panic locations compiled into it) do not move.
//
// | id | owner                                                                        |
// |----|------------------------------------------------------------------------------|
// | 10 | the tune variant's `StableBTreeMap<u64, Name>`, its bounded value (`tune.rs`) |

#[cfg(feature = "tune")]
const BTREE_BOUNDED_ID: u8 = 10;
#[cfg(feature = "tune")]
const _: () = assert!(is_free(BTREE_BOUNDED_ID, OWNED_IDS.len()));
#[cfg(feature = "tune")]
pub const BTREE_BOUNDED: MemoryId = MemoryId::new(BTREE_BOUNDED_ID);
