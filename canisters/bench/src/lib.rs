//! icbench canister: what does storing rows cost on the IC: a heap BTreeMap, StableBTreeMap
//! or SQLite?
//!
//! Every insert/read endpoint checks its arguments, prepares what is not the store's
//! own work (payload, open connection), and then counts `ic0.performance_counter(0)`
//! around the store work alone. The interface is `bench.did`, embedded into the built
//! wasm as the `icp:public candid:service` section by scripts/build-canister.sh.

#[cfg(not(target_arch = "wasm32"))]
compile_error!("the bench canister only builds for wasm32-wasip1: run scripts/build-canister.sh");

mod btree;
mod dbbench;
#[macro_use]
mod endpoints;
mod heap;
mod ids;
mod keys;
mod memory;
mod report;
mod settings;
mod sqlite;
mod state;
mod sysbench;
mod users_sql;

use std::cell::Cell;

use bench_types::names::HeapEncoding;
use bench_types::parse_heap_encoding;
use bench_types::{
    DbBenchReport, DbBenchWrite, HeapConfig, HeapSettings, HeapStats, InsertReport, KeysStats,
    ReadReport, SqliteConfig, SqliteSettings, Stats, UpgradeStats,
};
use ids::{Ids, Scan};

// ---- lifecycle ----------------------------------------------------------------------

/// Everything that lives on the heap is rebuilt from stable memory: the memory manager
/// and ic-wasi-polyfill (through ic-rusqlite), the settings cell, the B-tree header, and
/// the SQLite connection with the persisted settings.
fn start() {
    memory::init();
    state::init();
    btree::init();
    // Not fatal: a failure here shows up as the Err of the first SQLite call.
    if let Err(e) = sqlite::init() {
        ic_cdk::println!("bench: opening SQLite failed: {e}");
    }
}

#[ic_cdk::init]
fn init() {
    start();
}

thread_local! {
    /// `ic0.performance_counter(0)` at the end of this module's `post_upgrade` (0 after
    /// install): the heap lives on until the next upgrade, so the host can read it then.
    static POST_UPGRADE_INSTRUCTIONS: Cell<u64> = const { Cell::new(0) };
}

#[ic_cdk::pre_upgrade]
fn pre_upgrade() {
    // Committed data is already in stable memory; closing just releases SQLite's lock.
    if let Err(e) = sqlite::close() {
        ic_cdk::println!("bench: {e}");
    }
    // The heap store is the one whose data exists only on the heap: save it.
    let encoding = state::heap_encoding();
    let encoded_bytes = heap::save(encoding);
    let instructions = report::instruction_counter();
    // Written after the count, into the settings cell in stable memory, so the new module
    // can report it (upgrade_stats).
    state::set_last_pre_upgrade(state::PreUpgrade {
        instructions,
        encoded_bytes,
        encoding,
    });
}

#[ic_cdk::post_upgrade]
fn post_upgrade() {
    start();
    // The encoding pre_upgrade used, not a later configure_heap's (none can come between).
    heap::restore(state::last_pre_upgrade().encoding);
    POST_UPGRADE_INSTRUCTIONS.set(report::instruction_counter());
}

// ---- the stores' inserts and reads --------------------------------------------------

store_endpoints!(heap:
    add_users_heap, add_users_heap_ids,
    get_users_heap, get_users_heap_update, get_users_heap_ids, get_users_heap_ids_update,
    scan_users_heap, scan_users_heap_update;
    get_heap, get_heap_ids, scan_heap);
store_endpoints!(btree:
    add_users_btree, add_users_btree_ids,
    get_users_btree, get_users_btree_update, get_users_btree_ids, get_users_btree_ids_update,
    scan_users_btree, scan_users_btree_update;
    get_btree, get_btree_ids, scan_btree);
store_endpoints!(sqlite:
    add_users_sqlite, add_users_sqlite_ids,
    get_users_sqlite, get_users_sqlite_update, get_users_sqlite_ids, get_users_sqlite_ids_update,
    scan_users_sqlite, scan_users_sqlite_update;
    get_sqlite, get_sqlite_ids, scan_sqlite);

// ---- configuration and housekeeping -------------------------------------------------

#[ic_cdk::update]
fn configure_sqlite(config: SqliteConfig) -> Result<SqliteSettings, String> {
    let wanted = state::sqlite_settings().with(&config)?;
    sqlite::configure(wanted).map(|actual| actual.to_candid())
}

#[ic_cdk::update]
fn set_payload_size(size: u64) -> Result<u64, String> {
    state::set_payload_size(size)
}

#[ic_cdk::query]
fn stats() -> Stats {
    users_sql::stats_reply(
        sqlite::stats(),
        btree::len(),
        Some(btree::stable_pages()),
        state::payload_size(),
    )
}

#[ic_cdk::update]
fn configure_heap(config: HeapConfig) -> Result<HeapSettings, String> {
    if let Some(name) = &config.encoding {
        let encoding: HeapEncoding = parse_heap_encoding!(name.as_str())?;
        state::set_heap_encoding(encoding);
    }
    Ok(HeapSettings {
        encoding: state::heap_encoding().name().to_string(),
    })
}

#[ic_cdk::query]
fn heap_stats() -> HeapStats {
    HeapStats {
        rows: heap::len(),
        heap_bytes: report::heap_pages() * 65_536,
        encoding: state::heap_encoding().name().to_string(),
    }
}

#[ic_cdk::query]
fn upgrade_stats() -> UpgradeStats {
    let last = state::last_pre_upgrade();
    UpgradeStats {
        pre_upgrade_instructions: last.instructions,
        post_upgrade_instructions: POST_UPGRADE_INSTRUCTIONS.get(),
        encoded_bytes: last.encoded_bytes,
        encoding: last.encoding.name().to_string(),
    }
}

#[ic_cdk::update]
fn clear_heap() -> Result<u64, String> {
    Ok(heap::clear())
}

#[ic_cdk::update]
fn clear_btree() -> Result<u64, String> {
    Ok(btree::clear())
}

#[ic_cdk::update]
fn clear_sqlite() -> Result<u64, String> {
    sqlite::clear()
}

// ---- db_bench (seed 000): its own stores, see dbbench.rs ------------------------------

#[ic_cdk::update]
fn dbbench_reset(store: String) -> Result<u64, String> {
    dbbench::reset(&store)
}

#[ic_cdk::update]
fn dbbench_write(arg: DbBenchWrite) -> Result<DbBenchReport, String> {
    dbbench::write(arg)
}

#[ic_cdk::query]
fn dbbench_read_random(store: String, keys: Vec<u64>) -> Result<DbBenchReport, String> {
    dbbench::read_random(&store, keys)
}

#[ic_cdk::query]
fn dbbench_read_seq(store: String, start: u64, count: u64) -> Result<DbBenchReport, String> {
    dbbench::read_seq(&store, start, count)
}

// ---- key types and schemas (seed 002): its own stores, see keys.rs ----------------------

#[ic_cdk::update]
fn keys_reset(store: String, key_type: String) -> Result<u64, String> {
    keys::reset(&store, &key_type)
}

#[ic_cdk::update]
fn keys_insert(
    store: String,
    key_type: String,
    keys: Vec<Vec<u8>>,
    value_size: u64,
) -> Result<DbBenchReport, String> {
    keys::insert(&store, &key_type, keys, value_size)
}

#[ic_cdk::query]
fn keys_lookup(
    store: String,
    key_type: String,
    keys: Vec<Vec<u8>>,
) -> Result<DbBenchReport, String> {
    keys::lookup(&store, &key_type, keys)
}

#[ic_cdk::query]
fn keys_stats(store: String, key_type: String) -> Result<KeysStats, String> {
    keys::stats(&store, &key_type)
}

// ---- sysbench OLTP (seed 004): its own map and tables, see sysbench.rs -------------------

#[ic_cdk::update]
fn sysbench_reset(store: String, rows: u64) -> Result<u64, String> {
    sysbench::reset(&store, rows)
}

#[ic_cdk::update]
fn sysbench_prefill(store: String, first: u64, count: u64, rows: u64) -> Result<u64, String> {
    sysbench::prefill(&store, first, count, rows)
}

#[ic_cdk::update]
fn sysbench_run(
    store: String,
    workload: String,
    params: Vec<u64>,
) -> Result<DbBenchReport, String> {
    sysbench::run(&store, &workload, params)
}

// Exports `get_candid_pointer`, from which tests/canister_did.rs reads the interface the
// code really has and compares it with bench.did.
ic_cdk::export_candid!();

// The tune variant's allocator and bounded-value store (cargo feature `tune`): declared
// last, so the default module's code keeps its lines.
#[cfg(feature = "tune")]
mod tune;
