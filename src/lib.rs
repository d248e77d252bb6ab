//! icbench: what Internet Computer storage really costs, measured with the replica's
//! instruction metering on an embedded engine (or on PocketIC).

pub mod bench_canister;
pub mod canbench;
pub mod crosscheck;
pub mod dbbench;
pub mod engine;
pub mod keys;
pub mod report;
pub mod scenario;
pub mod suite;
pub mod sysbench;
