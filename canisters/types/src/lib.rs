//! What the canister and the host both need, defined once so the two cannot drift apart:
//! the argument and result records of `canisters/bench/bench.did` (here), the SQLite
//! pragma values ([`pragma`]), the store and key-type names ([`names`]), the per-call
//! limits ([`limits`]), the sysbench workloads ([`sysbench`]) and the generators both
//! sides draw from ([`rng`]).
//!
//! Record names and fields are bench.did's: renaming or reordering nothing here keeps the
//! interface and the wire bytes unchanged.

pub mod limits;
pub mod names;
pub mod pragma;
pub mod rng;
pub mod sysbench;

pub use pragma::JournalMode;

use candid::CandidType;
use serde::Deserialize;

// ---- users stores ---------------------------------------------------------------------

/// Result of one insert call (`add_users_*`).
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct InsertReport {
    /// Ids that were not in the store before.
    pub rows_inserted: u64,
    /// Ids that were already there and got overwritten (B-tree only: SQLite refuses them).
    pub rows_replaced: u64,
    /// `ic0.performance_counter(0)` spent on the store work alone.
    pub instructions: u64,
    /// Wasm heap size after the work, in 64 KiB pages.
    pub heap_pages: u64,
    /// Stable memory size after the work, in 64 KiB pages.
    pub stable_pages: u64,
}

/// Result of one read call (`get_users_*`, `scan_users_*`).
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ReadReport {
    pub rows_found: u64,
    /// Total payload bytes of the rows found: the values are really materialised.
    pub bytes_read: u64,
    pub instructions: u64,
    pub heap_pages: u64,
    pub stable_pages: u64,
}

/// Requested change to the SQLite settings; an absent field keeps the current value.
#[derive(CandidType, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct SqliteConfig {
    pub journal_mode: Option<String>,
    pub synchronous: Option<String>,
    pub page_size: Option<u32>,
    pub cache_size: Option<i64>,
    pub locking_mode: Option<String>,
    pub autoincrement: Option<bool>,
}

impl SqliteConfig {
    /// Applies the request's `cache_size` and `autoincrement`, where it gives them, to a
    /// canister's settings: the two every SQLite canister takes as asked (cache_size within
    /// the C int SQLite parses it into).
    pub fn apply_cache_and_schema(
        &self,
        cache_size: &mut i64,
        autoincrement: &mut bool,
    ) -> Result<(), String> {
        if let Some(size) = self.cache_size {
            if i32::try_from(size).is_err() {
                return Err(format!(
                    "cache_size {size} is outside SQLite's range {}..={}",
                    i32::MIN,
                    i32::MAX
                ));
            }
            *cache_size = size;
        }
        if let Some(flag) = self.autoincrement {
            *autoincrement = flag;
        }
        Ok(())
    }
}

/// The settings in force, as read back from SQLite.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SqliteSettings {
    pub journal_mode: String,
    pub synchronous: String,
    pub page_size: u32,
    pub cache_size: i64,
    pub locking_mode: String,
    pub autoincrement: bool,
}

/// Sizes and settings, for checking a run (not measured).
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    pub btree_rows: u64,
    pub sqlite_rows: u64,
    pub heap_pages: u64,
    pub stable_pages: u64,
    /// The StableBTreeMap's own virtual memory, in 64 KiB pages: its rows' stable bytes,
    /// without the memory manager's 8 MiB bucket steps. Optional so that the host still
    /// reads the stats of modules built before it existed (None).
    pub btree_stable_pages: Option<u64>,
    pub sqlite_page_count: u64,
    pub sqlite_page_size: u64,
    pub sqlite_freelist_count: u64,
    pub journal_mode: String,
    pub payload_size: u64,
}

// ---- the heap store's encoding and upgrades ------------------------------------------

/// `configure_heap`'s argument; an absent field keeps the current value.
#[derive(CandidType, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct HeapConfig {
    /// `candid` or `cbor` ([`names::HeapEncoding`]): how `pre_upgrade` encodes the map.
    pub encoding: Option<String>,
}

/// The heap store's settings in force (persisted: they survive upgrades).
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct HeapSettings {
    pub encoding: String,
}

/// `heap_stats`'s result (a query of its own, so `stats` keeps its record).
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct HeapStats {
    /// Rows in the heap map.
    pub rows: u64,
    /// Wasm heap size: `memory.size` x 64 KiB.
    pub heap_bytes: u64,
    /// The encoding the next `pre_upgrade` uses.
    pub encoding: String,
}

/// `upgrade_stats`'s result: what the hooks of the last upgrade did, counted inside them.
/// All zero, encoding `candid`, on a canister that was never upgraded.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct UpgradeStats {
    /// `ic0.performance_counter(0)` at the end of the last `pre_upgrade`.
    pub pre_upgrade_instructions: u64,
    /// `ic0.performance_counter(0)` at the end of the last `post_upgrade`.
    pub post_upgrade_instructions: u64,
    /// Bytes of the encoded heap map the last `pre_upgrade` wrote (without the 8-byte
    /// length prefix); 0 for an empty map.
    pub encoded_bytes: u64,
    /// The encoding the last `pre_upgrade` used.
    pub encoding: String,
}

// ---- db_bench (seed 000); the keys and sysbench suites report with DbBenchReport too ----

/// `dbbench_write`'s argument.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DbBenchWrite {
    /// `btree`, `sqlite_rowid` or `sqlite_without_rowid`.
    pub store: String,
    /// Keys, in the order written (numbers, stored as 16-digit text).
    pub keys: Vec<u64>,
    /// Bytes per value (db_bench: 100, or 100,000 for the 100K benchmarks).
    pub value_size: u64,
    /// Index of the first value in db_bench's value sequence (so a benchmark split over
    /// several messages writes the values one message would).
    pub first_value: u64,
    /// SQLite: every write in its own transaction (db_bench's batch size 1, autocommit);
    /// otherwise one transaction for the call (the batched fills). No effect on the map.
    pub transaction_per_row: bool,
}

/// What a db_bench, keys or sysbench call did and cost.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DbBenchReport {
    /// Keys written or looked up, or rows read in order.
    pub ops: u64,
    /// Reads: keys found. Writes: equal to `ops`.
    pub found: u64,
    /// Key + value bytes written or read.
    pub bytes: u64,
    pub instructions: u64,
    pub heap_pages: u64,
    pub stable_pages: u64,
}

// ---- key types and schemas (seed 002) -------------------------------------------------

/// One SQLite B-tree of a keys table, from the `dbstat` virtual table.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct BTreePages {
    /// The table or index name (`sqlite_autoindex_...` for a PRIMARY KEY index).
    pub name: String,
    pub interior_pages: u64,
    pub leaf_pages: u64,
    pub overflow_pages: u64,
    /// Bytes of those pages (pages x page size).
    pub bytes: u64,
}

/// `keys_stats`'s result.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct KeysStats {
    pub rows: u64,
    /// Map: its virtual memory's size. SQLite: the pages of the table's B-trees.
    pub stable_bytes: u64,
    /// SQLite only: one entry per B-tree of the table (table first, then indexes).
    pub btrees: Vec<BTreePages>,
}
