//! icbench's ic-sqlite-vfs canister: the bench canister's `users` table on the other SQLite
//! binding, ic-sqlite-vfs (its own `sqlite3_vfs` over one stable virtual memory, no WASI),
//! with the bench canister's SQLite methods under the stem `sqlite_vfs`.
//!
//! Every insert/read endpoint checks its arguments, readies what is not the store's own
//! work (payload, open connection, prepared statements), and then counts
//! `ic0.performance_counter(0)` around the store work alone, as the bench canister does.
//! The interface is `sqlite-vfs.did`, embedded into the built wasm as the
//! `icp:public candid:service` section by scripts/build-canister-vfs.sh.

#[cfg(not(target_arch = "wasm32"))]
compile_error!(
    "the sqlite-vfs canister only builds for wasm32-unknown-unknown: run scripts/build-canister-vfs.sh"
);

// The bench canister's id checks and reports, compiled here from its own files so the two
// canisters check and report alike.
#[path = "../../bench/src/ids.rs"]
mod ids;
#[path = "../../bench/src/report.rs"]
mod report;
mod settings;
mod state;
mod store;

use bench_types::{InsertReport, ReadReport, SqliteConfig, SqliteSettings, Stats};
use ids::{Ids, Scan};

// ---- lifecycle ----------------------------------------------------------------------

/// Everything on the heap is rebuilt from stable memory: the memory manager, the binding's
/// state, the settings, both connections.
fn start() {
    // Not fatal: a failure here shows up as the Err of every later call.
    if let Err(e) = store::start() {
        ic_cdk::println!("sqlite-vfs: opening SQLite failed: {e}");
    }
}

#[ic_cdk::init]
fn init() {
    start();
}

// No pre_upgrade: every committed row is in stable memory already (the binding writes a
// message's pages at COMMIT), and the connections go with the heap.
#[ic_cdk::post_upgrade]
fn post_upgrade() {
    start();
}

// ---- inserts --------------------------------------------------------------------------

#[ic_cdk::update]
fn add_users_sqlite_vfs(offset: u64, step: u64, count: u64) -> Result<InsertReport, String> {
    let ids = Ids::sequence(offset, step, count, store::MAX_ID)?;
    let (rows, instructions) = state::with_payload(|payload| store::insert(&ids, payload))?;
    Ok(report::insert_report(rows, instructions))
}

/// Inserts at explicit ids (random positions): the caller draws them, so drawing is not
/// part of the measurement.
#[ic_cdk::update]
fn add_users_sqlite_vfs_ids(ids: Vec<u64>) -> Result<InsertReport, String> {
    let ids = Ids::list(ids, store::MAX_ID)?;
    let (rows, instructions) = state::with_payload(|payload| store::insert(&ids, payload))?;
    Ok(report::insert_report(rows, instructions))
}

// ---- reads: queries, and `_update` twins since replicated reads are what costs cycles --

fn get(offset: u64, step: u64, count: u64) -> Result<ReadReport, String> {
    let ids = Ids::sequence(offset, step, count, store::MAX_ID)?;
    let (rows, instructions) = store::get(&ids)?;
    Ok(report::read_report(rows, instructions))
}

fn get_ids(ids: Vec<u64>) -> Result<ReadReport, String> {
    let ids = Ids::list(ids, store::MAX_ID)?;
    let (rows, instructions) = store::get(&ids)?;
    Ok(report::read_report(rows, instructions))
}

fn scan(offset: u64, count: u64) -> Result<ReadReport, String> {
    let scan = Scan::new(offset, count, store::MAX_ID)?;
    let (rows, instructions) = store::scan(&scan)?;
    Ok(report::read_report(rows, instructions))
}

#[ic_cdk::query]
fn get_users_sqlite_vfs(offset: u64, step: u64, count: u64) -> Result<ReadReport, String> {
    get(offset, step, count)
}

#[ic_cdk::update]
fn get_users_sqlite_vfs_update(offset: u64, step: u64, count: u64) -> Result<ReadReport, String> {
    get(offset, step, count)
}

#[ic_cdk::query]
fn get_users_sqlite_vfs_ids(ids: Vec<u64>) -> Result<ReadReport, String> {
    get_ids(ids)
}

#[ic_cdk::update]
fn get_users_sqlite_vfs_ids_update(ids: Vec<u64>) -> Result<ReadReport, String> {
    get_ids(ids)
}

#[ic_cdk::query]
fn scan_users_sqlite_vfs(offset: u64, count: u64) -> Result<ReadReport, String> {
    scan(offset, count)
}

#[ic_cdk::update]
fn scan_users_sqlite_vfs_update(offset: u64, count: u64) -> Result<ReadReport, String> {
    scan(offset, count)
}

// ---- configuration and housekeeping -------------------------------------------------

#[ic_cdk::update]
fn configure_sqlite_vfs(config: SqliteConfig) -> Result<SqliteSettings, String> {
    store::configure(&config)
}

#[ic_cdk::update]
fn set_payload_size(size: u64) -> Result<u64, String> {
    store::set_payload_size(size)
}

#[ic_cdk::query]
fn stats() -> Stats {
    let (sqlite_rows, page_count, page_size, freelist_count, journal_mode) = match store::stats() {
        Ok(s) => (
            s.rows,
            s.page_count,
            s.page_size,
            s.freelist_count,
            s.journal_mode,
        ),
        // stats has no Err case: zeros, and the reason where the journal mode would be.
        Err(e) => (0, 0, 0, 0, format!("unavailable: {e}")),
    };
    Stats {
        btree_rows: 0,
        sqlite_rows,
        heap_pages: report::heap_pages(),
        stable_pages: report::stable_pages(),
        // This canister has no StableBTreeMap.
        btree_stable_pages: None,
        sqlite_page_count: page_count,
        sqlite_page_size: page_size,
        sqlite_freelist_count: freelist_count,
        journal_mode,
        payload_size: state::persisted().payload_size,
    }
}

#[ic_cdk::update]
fn clear_sqlite_vfs() -> Result<u64, String> {
    store::clear()
}

// Exports `get_candid_pointer`, from which a test reads the interface the code really has
// and compares it with sqlite-vfs.did.
ic_cdk::export_candid!();
