//! Which module runs: the committed one this binary embeds, or a build of the checkout's
//! canister sources (scripts/build-canister.sh), and the records that tie a committed
//! module to the sources it was built from.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{anyhow, bail, Context, Result};

use crate::canister_sources::{self, CANISTER_SOURCES};

/// The project root, where `scripts/build-canister.sh` lives.
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed module of the current sources (the binary embeds it: the crate
/// icbench-canister) and the file that says which sources it was built from.
pub const PREBUILT_WASM: &str = "canisters/prebuilt/bench.wasm";
pub const PREBUILT_SOURCES: &str = "canisters/prebuilt/bench.sources";

fn newest_mtime(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return meta.modified().ok();
    }
    let mut newest = None;
    for entry in std::fs::read_dir(path).ok()?.flatten() {
        if canister_sources::skipped(&entry.file_name()) {
            continue;
        }
        newest = newest.max(newest_mtime(&entry.path()));
    }
    newest
}

/// Whether the module is missing or older than any of its sources.
pub fn canister_is_stale(root: &Path, wasm: &Path) -> bool {
    let Some(built) = std::fs::metadata(wasm).ok().and_then(|m| m.modified().ok()) else {
        return true;
    };
    CANISTER_SOURCES
        .iter()
        .filter_map(|p| newest_mtime(&root.join(p)))
        .any(|t| t > built)
}

/// SHA-256 over the canister's sources (each file's relative path, length and bytes, in
/// path order): equal hashes mean the same module, since the build is reproducible.
pub fn canister_sources_sha256(root: &Path) -> Result<String> {
    canister_sources::sha256(root).map_err(|e| anyhow!(e))
}

/// The contents of [`PREBUILT_SOURCES`] for a module built from sources hashing to `sources`.
#[cfg(test)]
fn prebuilt_record(sources: &str, wasm: &[u8]) -> String {
    Module::DEFAULT.record(sources, wasm)
}

/// The committed default module, if it was built from exactly the current sources and is
/// intact; `Ok(None)` when the sources moved on (the module must then be built).
pub fn prebuilt_for_current_sources(root: &Path) -> Result<Option<Vec<u8>>> {
    Module::DEFAULT.prebuilt_for_current_sources(root)
}

/// Builds every module of [`Module::ALL`] from its sources (`scripts/build-canister.sh`,
/// whatever the mtimes say) and commits each as the prebuilt module of these sources.
pub fn update_prebuilt(icbench_bin: Option<&Path>) -> Result<()> {
    let root = project_root();
    for module in Module::ALL {
        run_build_script(&root, icbench_bin, module.variant)?;
        let built = root.join(module.built);
        let wasm = std::fs::read(&built).with_context(|| format!("reading {}", built.display()))?;
        let sources = canister_sources_sha256(&root)?;
        std::fs::create_dir_all(root.join("canisters/prebuilt"))?;
        std::fs::write(root.join(module.prebuilt_wasm), &wasm)
            .with_context(|| format!("writing {}", module.prebuilt_wasm))?;
        std::fs::write(
            root.join(module.prebuilt_sources),
            module.record(&sources, &wasm),
        )
        .with_context(|| format!("writing {}", module.prebuilt_sources))?;
    }
    Ok(())
}

/// `scripts/build-canister.sh [variant]` ("": the default module).
fn run_build_script(root: &Path, icbench_bin: Option<&Path>, variant: &str) -> Result<()> {
    let mut script = Command::new("bash");
    script
        .arg(root.join("scripts/build-canister.sh"))
        .current_dir(root);
    if !variant.is_empty() {
        script.arg(variant);
    }
    if let Some(bin) = icbench_bin {
        script.env("ICBENCH_BIN", bin);
    }
    let status = script
        .status()
        .context("running scripts/build-canister.sh")?;
    if !status.success() {
        bail!("scripts/build-canister.sh failed ({status}); see its output above");
    }
    Ok(())
}

/// How a module this binary embeds relates to the canister sources, as build.rs found
/// them: `current` (the checkout's sources are the ones the module was built from),
/// `stale` (they changed since: the module must be built from them), or `packaged` (built
/// from the published crate, which has no canister sources: the record vouches for the
/// module, and .ci/run rebuilds it from the sources and compares the bytes before release).
pub const EMBEDDED_STATE: &str = env!("ICBENCH_PREBUILT");

/// The bench canister module inside this binary (crate icbench-canister), unless the
/// checkout it was built from had canister sources the module is not of.
pub fn embedded_module() -> Option<&'static [u8]> {
    Module::DEFAULT.embedded()
}

/// The default module of the current sources ([`Module::ensure_built_with`]).
pub fn ensure_built(quiet: bool) -> Result<Vec<u8>> {
    Module::DEFAULT.ensure_built(quiet)
}

/// [`ensure_built`] with the icbench binary the script converts the module with
/// (`ICBENCH_BIN`); tests pass `CARGO_BIN_EXE_icbench`. With `None` the script finds or
/// builds a converter itself.
pub fn ensure_built_with(quiet: bool, icbench_bin: Option<&Path>) -> Result<Vec<u8>> {
    Module::DEFAULT.ensure_built_with(quiet, icbench_bin)
}

/// `--build-canister`: the default module built now from the checkout's canister sources.
pub fn build_from_sources(quiet: bool) -> Result<Vec<u8>> {
    Module::DEFAULT.build_from_sources(quiet)
}

fn current_icbench() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok();
    exe.filter(|p| p.file_stem().is_some_and(|s| s == "icbench"))
}

/// The checkout this binary was built from, if it is still there with the canister's build
/// script (a packaged crate has none).
fn checkout_root() -> Option<PathBuf> {
    let root = project_root();
    root.join("scripts/build-canister.sh")
        .is_file()
        .then_some(root)
}

/// A canister module icbench runs: built from the canister's sources (the same sources for
/// every module) by `scripts/build-canister.sh [variant]`, with the variant's cargo feature of
/// canisters/bench, committed under canisters/prebuilt with a sources record of its own, and
/// embedded in the binary (crate icbench-canister).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module {
    /// The build script's argument and the cargo feature ("": the default module).
    pub variant: &'static str,
    /// Where the build script writes it, relative to the project root.
    pub built: &'static str,
    /// The committed module and its sources record, relative to the project root.
    pub prebuilt_wasm: &'static str,
    pub prebuilt_sources: &'static str,
    /// The committed module as this binary embeds it, and build.rs's verdict on it
    /// (see [`EMBEDDED_STATE`]).
    embedded: &'static [u8],
    embedded_state: &'static str,
}

impl Module {
    /// The bench canister: every suite runs it.
    pub const DEFAULT: Module = Module {
        variant: "",
        built: "target/canister/bench.wasm",
        prebuilt_wasm: PREBUILT_WASM,
        prebuilt_sources: PREBUILT_SOURCES,
        embedded: icbench_canister::BENCH_WASM,
        embedded_state: EMBEDDED_STATE,
    };
    /// The tune variant (feature `tune`): talc as the global allocator and the store
    /// `btree_bounded` (a bounded value type); the tune suite measures it beside the default.
    pub const TUNE: Module = Module {
        variant: "tune",
        built: "target/canister/bench-tune.wasm",
        prebuilt_wasm: "canisters/prebuilt/bench-tune.wasm",
        prebuilt_sources: "canisters/prebuilt/bench-tune.sources",
        embedded: icbench_canister::BENCH_TUNE_WASM,
        embedded_state: env!("ICBENCH_PREBUILT_TUNE"),
    };
    /// Every module committed under canisters/prebuilt.
    pub const ALL: [Module; 2] = [Module::DEFAULT, Module::TUNE];

    /// The module as this binary embeds it, unless the checkout it was built from had
    /// canister sources the module is not of.
    pub fn embedded(&self) -> Option<&'static [u8]> {
        (self.embedded_state != "stale").then_some(self.embedded)
    }

    /// The committed module, if it was built from exactly the current sources and is intact;
    /// `Ok(None)` when the sources moved on (the module must then be built).
    pub fn prebuilt_for_current_sources(&self, root: &Path) -> Result<Option<Vec<u8>>> {
        let (wasm_rel, sources_rel) = (self.prebuilt_wasm, self.prebuilt_sources);
        let Ok(record) = std::fs::read_to_string(root.join(sources_rel)) else {
            return Ok(None);
        };
        let wasm = std::fs::read(root.join(wasm_rel))
            .with_context(|| format!("reading {wasm_rel} (named by {sources_rel})"))?;
        let sources = canister_sources_sha256(root)?;
        if self.record(&sources, &wasm) == record {
            return Ok(Some(wasm));
        }
        if record.contains(&format!("sources-sha256 {sources}\n")) {
            // Sources match but the bytes do not: a damaged checkout (an LFS pointer, a bad
            // merge). Never run it; building gives the right module.
            eprintln!(
                "warning: {wasm_rel} is not the module {sources_rel} names; building the canister instead"
            );
        }
        Ok(None)
    }

    /// The contents of its sources record for a module built from sources hashing to
    /// `sources`.
    fn record(&self, sources: &str, wasm: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        format!(
            "# The sources {} is built from; written by\n\
             # scripts/update-prebuilt-canister.sh, checked by the tests and .ci/run.\n\
             sources-sha256 {sources}\n\
             module-sha256 {}\n",
            self.prebuilt_wasm,
            hex::encode(Sha256::digest(wasm))
        )
    }

    /// The module of the current sources: the one this binary embeds, which needs no file of
    /// the source tree; or, when the checkout's canister sources moved on since the
    /// committed module (build.rs says so), `self.built` if it is newer than every source,
    /// else a build with `scripts/build-canister.sh`. The script converts the module with
    /// `icbench_bin` (`icbench wasi2ic-post`); with `None` it finds or builds a converter.
    pub fn ensure_built_with(&self, quiet: bool, icbench_bin: Option<&Path>) -> Result<Vec<u8>> {
        if let Some(wasm) = self.embedded() {
            if !quiet && *self == Module::DEFAULT {
                eprintln!("bench canister: the module built into icbench ({EMBEDDED_STATE})");
            }
            return Ok(wasm.to_vec());
        }
        let root = checkout_root().ok_or_else(|| {
            anyhow!(
                "this icbench was built from a checkout whose canister sources differ from its committed \
                 module ({}), and that checkout ({}) is gone: rebuild icbench, or pass --wasm",
                self.prebuilt_wasm,
                project_root().display()
            )
        })?;
        let wasm = root.join(self.built);
        if canister_is_stale(&root, &wasm) {
            if !quiet {
                eprintln!(
                    "building the bench canister (scripts/build-canister.sh {}): its sources changed since {}...",
                    self.variant, self.prebuilt_wasm
                );
            }
            run_build_script(&root, icbench_bin, self.variant)?;
        }
        std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))
    }

    /// [`Module::ensure_built_with`] from the icbench binary.
    pub fn ensure_built(&self, quiet: bool) -> Result<Vec<u8>> {
        self.ensure_built_with(quiet, current_icbench().as_deref())
    }

    /// The module built now from the checkout's canister sources (scripts/build-canister.sh,
    /// incremental), whatever this binary embeds.
    pub fn build_from_sources(&self, quiet: bool) -> Result<Vec<u8>> {
        let root = checkout_root().ok_or_else(|| {
            anyhow!(
                "--build-canister needs the checkout icbench was built from ({}), and it is not there \
                 (an installed icbench runs the module it embeds: leave --build-canister out)",
                project_root().display()
            )
        })?;
        if !quiet {
            eprintln!(
                "building the bench canister (scripts/build-canister.sh {})...",
                self.variant
            );
        }
        run_build_script(&root, current_icbench().as_deref(), self.variant)?;
        let wasm = root.join(self.built);
        std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project root with one file of each source kind, in a directory of its own.
    fn fake_root(name: &str) -> PathBuf {
        let root = crate::testing::fresh_temp_dir("prebuilt", name);
        for rel in CANISTER_SOURCES {
            let path = root.join(rel);
            if rel.ends_with(".toml") || rel.ends_with(".lock") || rel.ends_with(".sh") {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, rel.as_bytes()).unwrap();
            } else {
                std::fs::create_dir_all(path.join("src")).unwrap();
                std::fs::write(path.join("src/lib.rs"), b"fn f() {}").unwrap();
                // Build output and dotfiles are not sources.
                std::fs::create_dir_all(path.join("target")).unwrap();
                std::fs::write(path.join("target/x"), b"built").unwrap();
                std::fs::write(path.join(".swp"), b"editor").unwrap();
            }
        }
        root
    }

    fn commit_prebuilt(root: &Path, wasm: &[u8]) {
        let sources = canister_sources_sha256(root).unwrap();
        std::fs::create_dir_all(root.join("canisters/prebuilt")).unwrap();
        std::fs::write(root.join(PREBUILT_WASM), wasm).unwrap();
        std::fs::write(root.join(PREBUILT_SOURCES), prebuilt_record(&sources, wasm)).unwrap();
    }

    #[test]
    fn the_sources_hash_sees_every_source_and_ignores_build_output() {
        let root = fake_root("hash");
        let before = canister_sources_sha256(&root).unwrap();
        std::fs::write(root.join("canisters/bench/target/x"), b"rebuilt").unwrap();
        std::fs::write(root.join("canisters/bench/.swp"), b"edited").unwrap();
        assert_eq!(canister_sources_sha256(&root).unwrap(), before);
        for changed in [
            "canisters/types/src/lib.rs",
            "rust-toolchain.toml",
            "scripts/build-canister.sh",
        ] {
            let original = std::fs::read(root.join(changed)).unwrap();
            std::fs::write(root.join(changed), b"changed").unwrap();
            assert_ne!(canister_sources_sha256(&root).unwrap(), before, "{changed}");
            std::fs::write(root.join(changed), original).unwrap();
        }
        // A renamed file is a different source even with the same bytes.
        std::fs::rename(
            root.join("scripts/wasi2ic-post/src/lib.rs"),
            root.join("scripts/wasi2ic-post/src/main.rs"),
        )
        .unwrap();
        assert_ne!(canister_sources_sha256(&root).unwrap(), before);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_prebuilt_module_is_used_only_for_its_own_sources_and_bytes() {
        let root = fake_root("prebuilt");
        assert_eq!(
            prebuilt_for_current_sources(&root).unwrap(),
            None,
            "nothing committed"
        );
        commit_prebuilt(&root, b"\0asm module");
        assert_eq!(
            prebuilt_for_current_sources(&root).unwrap().as_deref(),
            Some(&b"\0asm module"[..])
        );
        // Damaged bytes under a matching record are never run.
        std::fs::write(root.join(PREBUILT_WASM), b"\0asm damaged").unwrap();
        assert_eq!(prebuilt_for_current_sources(&root).unwrap(), None);
        // Sources that moved on need a build.
        commit_prebuilt(&root, b"\0asm module");
        std::fs::write(root.join("canisters/bench/src/lib.rs"), b"fn g() {}").unwrap();
        assert_eq!(prebuilt_for_current_sources(&root).unwrap(), None);
        // A record without its module is an error that names the file.
        commit_prebuilt(&root, b"\0asm module");
        std::fs::remove_file(root.join(PREBUILT_WASM)).unwrap();
        let err = prebuilt_for_current_sources(&root).unwrap_err();
        assert!(format!("{err:#}").contains(PREBUILT_WASM), "{err:#}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn each_module_is_vouched_for_by_its_own_record_only() {
        let root = fake_root("modules");
        for m in Module::ALL {
            assert_eq!(m.prebuilt_for_current_sources(&root).unwrap(), None);
        }
        let sources = canister_sources_sha256(&root).unwrap();
        let tune = Module::TUNE;
        std::fs::create_dir_all(root.join("canisters/prebuilt")).unwrap();
        std::fs::write(root.join(tune.prebuilt_wasm), b"\0asm tune").unwrap();
        std::fs::write(
            root.join(tune.prebuilt_sources),
            tune.record(&sources, b"\0asm tune"),
        )
        .unwrap();
        assert_eq!(
            tune.prebuilt_for_current_sources(&root).unwrap().as_deref(),
            Some(&b"\0asm tune"[..])
        );
        assert_eq!(
            Module::DEFAULT.prebuilt_for_current_sources(&root).unwrap(),
            None
        );
        // The variant's record, copied over the default's, does not vouch for its bytes.
        std::fs::copy(
            root.join(tune.prebuilt_sources),
            root.join(PREBUILT_SOURCES),
        )
        .unwrap();
        std::fs::write(root.join(PREBUILT_WASM), b"\0asm tune").unwrap();
        assert_eq!(
            Module::DEFAULT.prebuilt_for_current_sources(&root).unwrap(),
            None
        );
        assert!(tune
            .record(&sources, b"x")
            .starts_with("# The sources canisters/prebuilt/bench-tune.wasm is built from"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
