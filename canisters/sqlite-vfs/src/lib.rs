//! icbench's ic-sqlite-vfs canister: the bench canister's `users` table on the other SQLite
//! binding, ic-sqlite-vfs (its own `sqlite3_vfs` over one stable virtual memory, no WASI),
//! with the bench canister's SQLite methods under the stem `sqlite_vfs`.
//!
//! Every insert/read endpoint checks its arguments, readies what is not the store's own
//! work (payload, open connection, prepared statements), and then counts
//! `ic0.performance_counter(0)` around the store work alone, as the bench canister does.
//! The interface is `sqlite-vfs.did`, embedded into the built wasm as the
//! `icp:public candid:service` section by `scripts/build-canister.sh sqlite-vfs`.

#[cfg(not(target_arch = "wasm32"))]
compile_error!(
    "the sqlite-vfs canister only builds for wasm32-unknown-unknown: run scripts/build-canister.sh sqlite-vfs"
);

// The bench canister's id checks, reports, store methods and SQLite users table, compiled
// here from its own files so the two canisters check, report, answer and query alike.
#[macro_use]
#[path = "../../bench/src/endpoints.rs"]
mod endpoints;
#[path = "../../bench/src/ids.rs"]
mod ids;
#[path = "../../bench/src/report.rs"]
mod report;
mod settings;
mod state;
mod store;
#[path = "../../bench/src/users_sql.rs"]
mod users_sql;

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

// ---- inserts and reads ----------------------------------------------------------------

store_endpoints!(store:
    add_users_sqlite_vfs, add_users_sqlite_vfs_ids,
    get_users_sqlite_vfs, get_users_sqlite_vfs_update,
    get_users_sqlite_vfs_ids, get_users_sqlite_vfs_ids_update,
    scan_users_sqlite_vfs, scan_users_sqlite_vfs_update;
    get, get_ids, scan);

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
    // This canister has no StableBTreeMap.
    users_sql::stats_reply(store::stats(), 0, None, state::persisted().payload_size)
}

#[ic_cdk::update]
fn clear_sqlite_vfs() -> Result<u64, String> {
    store::clear()
}

// Exports `get_candid_pointer`, from which a test reads the interface the code really has
// and compares it with sqlite-vfs.did.
ic_cdk::export_candid!();
