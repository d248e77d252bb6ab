//! icbench: what Internet Computer storage really costs, measured with the replica's
//! instruction metering on an embedded engine (or on PocketIC).
//!
//! Layers, each using only the ones before it: `engine` (the Engine trait, the embedded
//! engine, PocketIC, the cost model) <- `bench_canister` (the canister client) <- `report`
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
pub mod suites;
