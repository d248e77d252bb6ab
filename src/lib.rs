//! icbench: what Internet Computer storage really costs, measured with the replica's
//! instruction metering on an embedded engine (or on PocketIC).
//!
//! Layers, each using only the ones before it: `engine` (the Engine trait, the embedded
//! engine, PocketIC, the cost model) <- `bench_canister` (the canister client) <- `stores`
//! (the store table: which stores exist, in which module, what each supports) <- `report`
//! (records and renderers; it knows no suite) <- `suites` (one module per suite) <- the CLI,
//! `crosscheck` and `canbench`.

pub mod bench_canister;
pub mod canbench;
pub mod canister_sources;
pub mod crosscheck;
pub mod engine;
pub mod interrupt;
pub mod memory;
pub mod report;
pub mod stores;
pub mod suites;

/// What the unit tests of several modules share.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::PathBuf;

    /// `icbench-{what}-{pid}-{name}` under the system's temp dir, removed if a previous run
    /// left it: a directory of the test's own, not yet created.
    pub(crate) fn fresh_temp_dir(what: &str, name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("icbench-{what}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}
