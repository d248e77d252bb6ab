//! The canister modules a run holds: the default module, and the module of each other store
//! it measures (the tune variant's), each named on the command line (`--wasm NAME=PATH`, or
//! a suite's own flag such as `--tune-wasm`) or the module of the current sources. A module
//! is checked for what the stores that live in it need before any work.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use sha2::{Digest, Sha256};

use super::StoreKind;
use crate::bench_canister::Module;

/// `bench`, `tune`: a module's name in the module list (`--wasm NAME=PATH`).
pub fn module_name(module: Module) -> &'static str {
    module.name
}

/// A `--wasm` value: `NAME=PATH` for the module called NAME, else a path for the default
/// module (so a path with `=` in it still names a file, unless it starts with a module's
/// name). Refused: `NAME=` with an empty path, and `NAME=PATH` where NAME looks like a name
/// (letters, digits, `-`, `_`) but no module is called so, unless the whole value is a file
/// (read as a path, a misspelt module's file would fail as "No such file").
pub fn wasm_flag_value(value: &Path) -> Result<(Module, PathBuf)> {
    let text = value.to_string_lossy();
    for module in Module::ALL {
        // The name in any case, as every value of the CLI.
        let prefix = format!("{}=", module.name);
        let named = text
            .get(..prefix.len())
            .filter(|p| p.eq_ignore_ascii_case(&prefix));
        if let Some(path) = named.map(|p| &text[p.len()..]) {
            if path.is_empty() {
                bail!(
                    "--wasm {text}: the path after {}= is empty; give the module's file: --wasm {}=PATH",
                    module.name,
                    module.name
                );
            }
            return Ok((module, PathBuf::from(path)));
        }
    }
    let named = text.split_once('=').map(|(name, _)| name).filter(|name| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    });
    if let Some(name) = named.filter(|_| !value.is_file()) {
        let known: Vec<&str> = Module::ALL.iter().map(|m| m.name).collect();
        let spelt = name.replace('_', "-").to_ascii_lowercase();
        let hint = match Module::named(&spelt) {
            Some(m) => format!(" (did you mean {}?)", m.name),
            None => String::new(),
        };
        bail!(
            "--wasm {text}: no module is called {name}{hint}; the modules are {} (--wasm NAME=PATH), \
             or give a path alone for the {} module",
            known.join(", "),
            Module::DEFAULT.name
        );
    }
    Ok((Module::DEFAULT, value.to_path_buf()))
}

/// The users insert of each store of the table that lives in `module`
/// (`add_users_{stem}`), as exports, in name order.
fn stores_exports(module: Module) -> Vec<String> {
    let mut exports: Vec<String> = StoreKind::every()
        .filter(|k| k.module() == module)
        .map(|k| format!("canister_update add_users_{}", k.stem()))
        .collect();
    exports.sort();
    exports.dedup();
    exports
}

/// The exports `module` must have: what the module list requires of it (the calls every
/// suite makes, which no store gives), then the users insert of each store that lives in it.
pub fn required_exports(module: Module) -> Vec<String> {
    let listed = module.listing().requires.iter().map(|e| e.to_string());
    listed.chain(stores_exports(module)).collect()
}

/// Checks that `wasm` (raw or gzipped) is a valid module with the exports of
/// [`required_exports`] (a module without them is not one this icbench can drive in its
/// place), before any work; the error is one line, its advice naming `flag`, the flag that
/// named the module.
pub fn check_module(module: Module, wasm: &[u8], flag: &str) -> Result<()> {
    let exports = crate::engine::embedded::check_module(wasm)?;
    let missing: Vec<String> = required_exports(module)
        .into_iter()
        .filter(|e| !exports.contains(e))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let (what, build) = match module == Module::DEFAULT {
        true => ("the bench canister".to_string(), String::new()),
        false => (
            format!("the module {}", module.name),
            format!(" {}", module.name),
        ),
    };
    bail!(
        "not {what}: a valid Wasm module without the export{} `{}` (build it with \
         scripts/build-canister.sh{build}, or leave {flag} out)",
        if missing.len() > 1 { "s" } else { "" },
        missing.join("`, `")
    )
}

/// The module `flag` names for `module`, read and checked: the error is one line naming the
/// flag, the file and what is wrong.
pub fn read_module(flag: &str, module: Module, path: &Path) -> Result<Vec<u8>> {
    read_as(flag, &format!("{flag} {}", path.display()), module, path)
}

/// The module at `path` for `module`, read and checked, its errors starting with `shown`
/// (`flag` and its value).
fn read_as(flag: &str, shown: &str, module: Module, path: &Path) -> Result<Vec<u8>> {
    let wasm = std::fs::read(path).map_err(|e| anyhow!("{shown}: cannot read it: {e}"))?;
    check_module(module, &wasm, flag).map_err(|e| anyhow!("{shown}: {e:#}"))?;
    Ok(wasm)
}

/// The modules the stores `kinds` live in, the default first (every run installs it), each
/// once, in `Module::ALL`'s order.
pub fn needs(kinds: impl IntoIterator<Item = StoreKind>) -> Vec<ModuleNeed> {
    let mut modules = vec![Module::DEFAULT];
    modules.extend(kinds.into_iter().map(|k| k.module()));
    Module::ALL
        .into_iter()
        .filter(|m| modules.contains(m))
        .map(ModuleNeed::of)
        .collect()
}

/// A module a plan's stores live in, and the file a flag of the plan names for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleNeed {
    pub module: Module,
    pub file: Option<ModuleFile>,
}

impl ModuleNeed {
    /// `module`, the one of the run (or of these sources).
    pub fn of(module: Module) -> ModuleNeed {
        ModuleNeed { module, file: None }
    }
}

/// A module file a flag names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleFile {
    pub flag: &'static str,
    pub path: PathBuf,
}

/// A module `--wasm NAME=PATH` names (a module other than the default), read and checked.
#[derive(Clone, Debug)]
pub struct GivenModule {
    pub module: Module,
    pub path: PathBuf,
    pub wasm: Vec<u8>,
}

impl GivenModule {
    /// `--wasm NAME=PATH`'s module, read and checked: the error is one line naming the
    /// flag, its value and what is wrong.
    pub fn read(module: Module, path: &Path) -> Result<GivenModule> {
        let shown = format!("--wasm {}={}", module_name(module), path.display());
        Ok(GivenModule {
            module,
            path: path.to_path_buf(),
            wasm: read_as("--wasm", &shown, module, path)?,
        })
    }
}

/// Refuses a module that both a plan's flag (`--tune-wasm`) and `--wasm NAME=PATH` name.
pub fn refuse_named_twice(needs: &[ModuleNeed], given: &[GivenModule]) -> Result<()> {
    for need in needs {
        let named = given.iter().find(|g| g.module == need.module);
        if let (Some(file), Some(given)) = (&need.file, named) {
            let name = module_name(need.module);
            bail!(
                "{} {} and --wasm {name}={} both name the {name} module: give one",
                file.flag,
                file.path.display(),
                given.path.display()
            );
        }
    }
    Ok(())
}

/// The modules of one plan's run: the default module, and the others its stores live in.
#[derive(Clone, Debug)]
pub struct Modules<'a> {
    default: &'a [u8],
    others: Vec<(Module, Vec<u8>)>,
}

impl<'a> Modules<'a> {
    /// The default module alone.
    pub fn new(default: &'a [u8]) -> Modules<'a> {
        Modules {
            default,
            others: Vec::new(),
        }
    }

    /// The default module and every other module of `needs`: the file its plan's flag
    /// names, else the one `given` holds (`--wasm NAME=PATH`, read and checked), else the
    /// module of the current sources (built if they moved on, quietly when `quiet`). A
    /// module named both ways is refused ([`refuse_named_twice`]).
    pub fn resolve(
        default: &'a [u8],
        needs: &[ModuleNeed],
        given: &[GivenModule],
        quiet: bool,
    ) -> Result<Modules<'a>> {
        refuse_named_twice(needs, given)?;
        let mut modules = Modules::new(default);
        for need in needs {
            if need.module == Module::DEFAULT || modules.held(need.module).is_some() {
                continue;
            }
            let named = given.iter().find(|g| g.module == need.module);
            let wasm = match (&need.file, named) {
                (Some(file), _) => read_module(file.flag, need.module, &file.path)?,
                (None, Some(given)) => given.wasm.clone(),
                (None, None) => need.module.ensure_built(quiet)?,
            };
            modules.others.push((need.module, wasm));
        }
        Ok(modules)
    }

    /// The default module.
    pub fn default_module(&self) -> &'a [u8] {
        self.default
    }

    fn held(&self, module: Module) -> Option<&[u8]> {
        if module == Module::DEFAULT {
            return Some(self.default);
        }
        self.others
            .iter()
            .find(|(m, _)| *m == module)
            .map(|(_, w)| w.as_slice())
    }

    /// `module`'s bytes; an error if the run does not hold it (its plan did not name it).
    pub fn get(&self, module: Module) -> Result<&[u8]> {
        self.held(module).ok_or_else(|| {
            anyhow!(
                "the run holds no {} module: its plan does not measure a store of it",
                module_name(module)
            )
        })
    }

    /// What a shard's signature says of its modules: the SHA-256 of the default module
    /// when it is the only one (as before a run held several), else the SHA-256 of each
    /// module's name and SHA-256, a line each, the default first.
    pub fn signature(&self) -> String {
        if self.others.is_empty() {
            return hex::encode(Sha256::digest(self.default));
        }
        let lines: String = self
            .each()
            .map(|(name, w)| format!("{name} {}\n", hex::encode(Sha256::digest(w))))
            .collect();
        hex::encode(Sha256::digest(lines.as_bytes()))
    }

    /// Each module the run holds, by name, the default first.
    pub fn each(&self) -> impl Iterator<Item = (&'static str, &[u8])> {
        let others = self.others.iter().map(|(m, w)| (*m, w.as_slice()));
        std::iter::once((Module::DEFAULT, self.default))
            .chain(others)
            .map(|(m, w)| (module_name(m), w))
    }
}
