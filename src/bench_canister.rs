//! The benchmark canister seen from the host: its Candid types, a typed client over any
//! [`Engine`](crate::engine::Engine) (`client.rs`), and which module runs (`module.rs`): the
//! committed one this binary embeds (crate icbench-canister), or in a checkout whose canister
//! sources moved on, a build of them (the modules are those canisters/prebuilt/modules.txt
//! lists). A module given on the command line is checked where the stores are known
//! (`stores/modules.rs`): for what the list requires of it and what its stores need.

mod client;
mod module;

pub use client::{Attempt, BenchClient, IdSequence, Measured, MotokoStats, Rejected, RejectedCall};
pub use module::{
    build_from_sources, canister_sources_sha256, committed, compiler, embedded_module,
    ensure_built, ensure_built_with, prebuilt_for_current_sources, project_root, update_prebuilt,
    Module, EMBEDDED_STATE, PREBUILT_SOURCES, PREBUILT_WASM,
};

// The Candid records live in canisters/types, shared with the canister; re-exported so
// callers keep naming them `bench_canister::...`.
pub use bench_types::{
    BTreePages, DbBenchReport, DbBenchWrite, HeapConfig, HeapSettings, HeapStats, InsertReport,
    KeysStats, ReadReport, SqliteConfig, SqliteSettings, Stats, UpgradeStats,
};
