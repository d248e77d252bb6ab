//! Helpers shared by several test modules.

pub mod canbench_fixture;

/// The icbench binary of this build: scripts/build-canister.sh converts the canister with it
/// (ICBENCH_BIN), so no test makes the script build a converter.
pub fn icbench_bin() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_icbench"))
}
