//! What a run and the other subcommands share: the PocketIC engine when the feature is on,
//! output directories, `--wasm`, and the lines they print on stderr.

use std::path::PathBuf;

use crate::args::ModuleArgs;

use anyhow::{anyhow, Result};

use icbench::bench_canister;
use icbench::engine::disk_cache;
#[cfg(feature = "pocket-ic")]
use icbench::engine::pocket_ic::PocketIcEngine;
use icbench::engine::Engine;
use icbench::report::{self};
use icbench::suites::{self};

/// A PocketIC engine for `what` (the flag or command asking for it).
#[cfg(feature = "pocket-ic")]
pub(crate) fn pocket_ic_engine(_what: &str) -> Result<Box<dyn Engine>> {
    Ok(Box::new(PocketIcEngine::from_env()?))
}

/// Without the feature: why `what` cannot run in this build, and how to get a build that can.
#[cfg(not(feature = "pocket-ic"))]
pub(crate) fn pocket_ic_engine(what: &str) -> Result<Box<dyn Engine>> {
    anyhow::bail!(
        "{what} needs the PocketIC backend, which this build leaves out (it is the cargo feature \
         `pocket-ic`). Rebuild with it: `cargo run --release --features pocket-ic -- {what} ...` \
         (or `cargo install --path . --features pocket-ic`); it also needs a PocketIC server \
         16.x (POCKET_IC_BIN, see docs/pocket-ic.md)"
    )
}

/// Makes `suite`'s directory under `out` and tries writing into it; returns it.
pub(crate) fn prepare_out(suite: &dyn suites::Suite, out: &std::path::Path) -> Result<PathBuf> {
    let dir = suite.out_dir(out);
    report::prepare_dir(&dir).map_err(|e| {
        anyhow!(
            "--out {}: cannot write into {}: {e}",
            out.display(),
            dir.display()
        )
    })?;
    Ok(dir)
}

pub(crate) fn eprint_gate_failures(suite: &str, failures: &[String]) {
    eprintln!(
        "{suite} gate failed ({} checks above the ceilings):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

pub(crate) fn eprint_written(written: &[std::path::PathBuf]) {
    let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    eprintln!("wrote {}", paths.join(", "));
}

impl ModuleArgs {
    /// The module `--wasm` names, checked (a one-line error naming the file and what is
    /// wrong with it: not Wasm, truncated, invalid, not a bench canister, rather than a
    /// failure after the prefill); else the one `--build-canister` builds, else the bench
    /// canister icbench embeds (or builds, when its sources moved on).
    pub(crate) fn read(&self, quiet: bool) -> Result<Vec<u8>> {
        match &self.wasm {
            Some(path) => bench_canister::read_module_flag("--wasm", path),
            None if self.build_canister => bench_canister::build_from_sources(quiet),
            None => bench_canister::ensure_built(quiet),
        }
    }
}

/// What the cache did in this run, for the closing lines of a run.
pub(crate) fn cache_line() -> Option<String> {
    let dir = disk_cache::dir()?;
    let m = disk_cache::stats(disk_cache::MODULES);
    let mut line = format!(
        "cache {}: {} modules loaded, {} compiled",
        dir.display(),
        m.hits,
        m.misses
    );
    let s = disk_cache::stats(disk_cache::STATES);
    if s.hits + s.misses > 0 {
        line += &format!(
            "; post-prefill states: {} loaded, {} prefilled",
            s.hits, s.misses
        );
    }
    let rejected = m.rejected + s.rejected;
    if rejected > 0 {
        line += &format!(" ({rejected} damaged entries replaced)");
    }
    Some(line)
}
