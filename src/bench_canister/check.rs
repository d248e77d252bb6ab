//! A module given on the command line (`--wasm`, `--tune-wasm`), held to the methods the
//! suites call before any work.

use std::path::Path;

use anyhow::{anyhow, Result};

/// The bench canister module a flag (`--wasm`, `--tune-wasm`) names, read and checked: the
/// error is one line naming the flag, the file and what is wrong.
pub fn read_module_flag(flag: &str, path: &Path) -> Result<Vec<u8>> {
    let wasm = std::fs::read(path)
        .map_err(|e| anyhow!("{flag} {}: cannot read it: {e}", path.display()))?;
    check_module(&wasm).map_err(|e| anyhow!("{flag} {}: {e:#}", path.display()))?;
    Ok(wasm)
}

/// Exports every suite calls, whatever the stores: a module without them is not a bench
/// canister (or not one this icbench can drive).
const REQUIRED_EXPORTS: [&str; 3] = [
    "canister_update set_payload_size",
    "canister_query stats",
    "canister_update add_users_btree",
];

/// Checks that `wasm` (raw or gzipped) is a valid module with the bench canister's methods,
/// before any work; the error is one line (see [`crate::engine::embedded::check_module`]).
pub fn check_module(wasm: &[u8]) -> Result<()> {
    let exports = crate::engine::embedded::check_module(wasm)?;
    let missing: Vec<&str> = REQUIRED_EXPORTS
        .into_iter()
        .filter(|e| !exports.iter().any(|x| x == e))
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "not the bench canister: a valid Wasm module without the export{} `{}` (build it with scripts/build-canister.sh, or leave --wasm out)",
            if missing.len() > 1 { "s" } else { "" },
            missing.join("`, `")
        );
    }
    Ok(())
}
