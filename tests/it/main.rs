//! The integration tests, in one test binary: every binary links the library and
//! wasmtime, and linking a dozen of them took longer than running most of the tests.
//! (tests/canister_did.rs, the only user of candid_parser, is the test of the package
//! tests/interfaces, which .ci/run tests: the README's command does not build candid_parser.)
//! One module per area; run one with `cargo test --release --test it MODULE::`.
//!
//! All tests share one process: nothing here may change the environment or the current
//! directory of the process (child processes get theirs through `Command`), and state
//! built once (the bench canister, the canbench fixture) is built once for every module.

mod support;

mod bucket_size;
mod cache_leftovers;
mod cache_suite;
mod canbench_baseline;
mod canbench_cli;
mod canister;
mod capacity;
mod cli;
mod compile_cache;
mod engine;
mod fill_state;
mod flag_rules;
mod fuzz_engine;
mod golden;
mod heap_writes;
mod host;
mod inputs;
mod memory_tracker;
mod metering;
mod modules;
mod mops;
mod motoko;
mod native_stable;
mod page_cache;
mod pr_comment;
mod profile;
mod profile_cli;
mod project_files;
mod provenance;
mod readme;
mod refused;
mod replay;
mod replica_counts;
mod report;
pub(crate) mod run_faults;
mod self_contained;
mod sqlite_vfs;
mod suites;
mod sustained;
mod timer;
mod tune;
mod upgrade_suite;
mod wasi2ic_post;
