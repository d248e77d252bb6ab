//! What a run and the other subcommands share: the PocketIC engine when the feature is on,
//! output directories, `--wasm`, and the lines they print on stderr.

use std::path::PathBuf;

use crate::args::ModuleArgs;

use anyhow::{anyhow, Result};

use icbench::bench_canister::{self, Module};
use icbench::engine::disk_cache;
#[cfg(feature = "pocket-ic")]
use icbench::engine::pocket_ic::PocketIcEngine;
use icbench::engine::Engine;
use icbench::report::{self};
use icbench::stores::{self, GivenModule, ModuleNeed, Modules};
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
    // A file where a directory must be says so (the OS would say "File exists").
    if let Some(file) = dir.ancestors().find(|p| p.exists()).filter(|p| !p.is_dir()) {
        return Err(if file == out {
            anyhow!("--out {} names a file, not a directory", out.display())
        } else {
            anyhow!(
                "--out {}: {} is a file, not a directory",
                out.display(),
                file.display()
            )
        });
    }
    report::probe_dir(&dir).map_err(|e| {
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

/// Says which scenarios of `suite` could not be measured (`failed`, one line each), if
/// any; true when none.
pub(crate) fn eprint_failed(suite: &str, failed: &[String]) -> bool {
    if !failed.is_empty() {
        eprintln!(
            "{suite}: {} scenario{} failed (status `failed` in results.csv; every file written):\n  {}",
            failed.len(),
            if failed.len() == 1 { "" } else { "s" },
            failed.join("\n  ")
        );
    }
    failed.is_empty()
}

pub(crate) fn eprint_written(written: &[std::path::PathBuf]) {
    let paths: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    eprintln!("wrote {}", paths.join(", "));
}

/// The modules `--wasm` names, read and checked: what can refuse them is done before any
/// output directory is made or anything is built ([`ModuleArgs::read_named`]).
pub(crate) struct NamedModules {
    /// The default module's, when `--wasm` names it.
    default: Option<Vec<u8>>,
    /// The other modules'.
    others: Vec<GivenModule>,
}

impl ModuleArgs {
    /// The `--wasm` values, each with the module it replaces (`NAME=PATH`; a path alone is
    /// the default module's); a module named twice is refused.
    fn named(&self) -> Result<Vec<(Module, PathBuf)>> {
        let mut named: Vec<(Module, PathBuf)> = Vec::new();
        for value in &self.wasm {
            let (module, path) = stores::wasm_flag_value(value)?;
            if let Some((_, first)) = named.iter().find(|(m, _)| *m == module) {
                return Err(anyhow!(
                    "--wasm names the {} module twice ({} and {}): give it once",
                    stores::module_name(module),
                    first.display(),
                    path.display()
                ));
            }
            named.push((module, path));
        }
        Ok(named)
    }

    /// Every module `--wasm` names, read and checked (a one-line error naming the file and
    /// what is wrong with it: not Wasm, truncated, invalid, not a bench canister, rather
    /// than a failure after the prefill), for the plans whose modules are `needs` (a list
    /// per plan): a module no plan runs is refused, as one a plan's own flag names too.
    /// Nothing is built or printed.
    pub(crate) fn read_named(&self, needs: &[Vec<ModuleNeed>]) -> Result<NamedModules> {
        let mut default = None;
        let mut others = Vec::new();
        for (module, path) in self.named()? {
            if module == Module::DEFAULT {
                default = Some(stores::read_module("--wasm", module, &path)?);
                continue;
            }
            if !needs.iter().flatten().any(|n| n.module == module) {
                let name = stores::module_name(module);
                return Err(anyhow!(
                    "--wasm {name}={}: no store the selected suites measure lives in the {name} module",
                    path.display()
                ));
            }
            others.push(GivenModule::read(module, &path)?);
        }
        for needs in needs {
            stores::refuse_named_twice(needs, &others)?;
        }
        Ok(NamedModules { default, others })
    }
}

impl NamedModules {
    /// The default module: the one `--wasm` names, else the one `--build-canister` builds,
    /// else the bench canister icbench embeds (or builds, when its sources moved on).
    pub(crate) fn default_module(&self, build_canister: bool, quiet: bool) -> Result<Vec<u8>> {
        match &self.default {
            Some(wasm) => Ok(wasm.clone()),
            None if build_canister => bench_canister::build_from_sources(quiet),
            None => bench_canister::ensure_built(quiet),
        }
    }

    /// Each plan's modules (`needs`, a list per plan), `default` the default module: those
    /// `--wasm NAME=PATH` names, else those a plan's own flag names, else those of the
    /// current sources (built if they moved on).
    pub(crate) fn modules<'a>(
        &self,
        default: &'a [u8],
        needs: &[Vec<ModuleNeed>],
        quiet: bool,
    ) -> Result<Vec<Modules<'a>>> {
        needs
            .iter()
            .map(|needs| Modules::resolve(default, needs, &self.others, quiet))
            .collect()
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
    for (kind, what, made) in [
        (disk_cache::STATES, "post-prefill states", "prefilled"),
        (disk_cache::WARM, "starts made from them", "made"),
        (disk_cache::MOPS, "moc's modules", "compiled"),
    ] {
        let s = disk_cache::stats(kind);
        if s.hits + s.misses > 0 {
            line += &format!("; {what}: {} loaded, {} {made}", s.hits, s.misses);
        }
    }
    // Every kind's damaged entries: each had its warning.
    let rejected: u64 = disk_cache::KINDS
        .iter()
        .map(|k| disk_cache::stats(k).rejected)
        .sum();
    if rejected > 0 {
        line += &format!(" ({rejected} damaged entries replaced)");
    }
    Some(line)
}
