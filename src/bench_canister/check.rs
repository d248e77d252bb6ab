//! A module given on the command line (`--wasm`, `--tune-wasm`), held to the methods the
//! suites call before any work: the exports canisters/prebuilt/modules.txt requires of the
//! module it stands for.

use std::path::Path;

use anyhow::{anyhow, bail, Result};

use super::Module;

/// The bench canister module a flag (`--wasm`, `--tune-wasm`) names, read and checked
/// against the default module's exports: the error is one line naming the flag, the file
/// and what is wrong.
pub fn read_module_flag(flag: &str, path: &Path) -> Result<Vec<u8>> {
    Module::DEFAULT.read_flag(flag, path)
}

/// Checks that `wasm` (raw or gzipped) is a valid module with the bench canister's methods,
/// before any work; the error is one line (see [`crate::engine::embedded::check_module`]).
pub fn check_module(wasm: &[u8]) -> Result<()> {
    Module::DEFAULT.check(wasm, "--wasm")
}

impl Module {
    /// The module `flag` names at `path`, read and checked as one given for this module
    /// ([`Module::check`]): the error is one line naming the flag, the file and what is wrong.
    pub fn read_flag(&self, flag: &str, path: &Path) -> Result<Vec<u8>> {
        let wasm = std::fs::read(path)
            .map_err(|e| anyhow!("{flag} {}: cannot read it: {e}", path.display()))?;
        self.check(&wasm, flag)
            .map_err(|e| anyhow!("{flag} {}: {e:#}", path.display()))?;
        Ok(wasm)
    }

    /// Checks that `wasm` (raw or gzipped) is a valid module with the exports the list
    /// requires of this module (a module without them is not one this icbench can drive in
    /// its place), before any work; the error is one line, its advice naming `flag`.
    pub fn check(&self, wasm: &[u8], flag: &str) -> Result<()> {
        let exports = crate::engine::embedded::check_module(wasm)?;
        let missing: Vec<&str> = self
            .listing()
            .requires
            .iter()
            .copied()
            .filter(|e| !exports.iter().any(|x| x == e))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let (what, build) = if *self == Module::DEFAULT {
            ("the bench canister".to_string(), String::new())
        } else {
            (
                format!("the module {}", self.name),
                format!(" {}", self.name),
            )
        };
        bail!(
            "not {what}: a valid Wasm module without the export{} `{}` (build it with scripts/build-canister.sh{build}, or leave {flag} out)",
            if missing.len() > 1 { "s" } else { "" },
            missing.join("`, `")
        )
    }
}
