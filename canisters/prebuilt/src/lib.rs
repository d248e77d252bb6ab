//! The bench canister's Wasm modules as committed in canisters/prebuilt, inside the binary
//! that links this crate: icbench then needs no file of its source tree at run time.
//!
//! The build script checks the bytes against the record; icbench's own build script checks
//! the record against the canister's sources when they are there (a checkout).

/// The committed module (scripts/update-prebuilt-canister.sh writes it).
pub const BENCH_WASM: &[u8] = include_bytes!("../bench.wasm");

/// `bench.sources`: the SHA-256 of the canister sources the module was built from
/// (`sources-sha256 ...`) and of the module itself (`module-sha256 ...`).
pub const BENCH_SOURCES: &str = include_str!("../bench.sources");

/// The `sources-sha256` of [`BENCH_SOURCES`].
pub fn sources_sha256() -> Option<&'static str> {
    BENCH_SOURCES
        .lines()
        .find_map(|l| l.strip_prefix("sources-sha256 "))
}

/// The tune variant (feature `tune` of canisters/bench: talc, a bounded-value map).
pub const BENCH_TUNE_WASM: &[u8] = include_bytes!("../bench-tune.wasm");

/// `bench-tune.sources`, as [`BENCH_SOURCES`] for the tune variant.
pub const BENCH_TUNE_SOURCES: &str = include_str!("../bench-tune.sources");
