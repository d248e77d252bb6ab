//! Which module runs: the committed one this binary embeds, or a build of the checkout's
//! sources (scripts/build-canister.sh); the records that tie a committed module to the
//! sources it was built from. The modules are those of canisters/prebuilt/modules.txt, as
//! the crate icbench-canister embeds them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{anyhow, bail, Context, Result};
use icbench_canister::{Prebuilt, MODULES};

use crate::canister_sources;

/// The project root, where `scripts/build-canister.sh` lives.
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed default module (the binary embeds it: the crate icbench-canister) and the
/// file that says which sources it was built from.
pub const PREBUILT_WASM: &str = Module::DEFAULT.prebuilt_wasm;
pub const PREBUILT_SOURCES: &str = Module::DEFAULT.prebuilt_sources;

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

/// The SHA-256 over the default module's sources ([`Module::sources_sha256`]).
pub fn canister_sources_sha256(root: &Path) -> Result<String> {
    Module::DEFAULT.sources_sha256(root)
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
        run_build_script(&root, icbench_bin, module.script_arg())?;
        let built = root.join(module.built);
        let wasm = std::fs::read(&built).with_context(|| format!("reading {}", built.display()))?;
        module.commit(&root, &wasm)?;
    }
    Ok(())
}

/// `scripts/build-canister.sh [module]` ("": the default module).
fn run_build_script(root: &Path, icbench_bin: Option<&Path>, module: &str) -> Result<()> {
    let mut script = Command::new("bash");
    script
        .arg(root.join("scripts/build-canister.sh"))
        .current_dir(root);
    if !module.is_empty() {
        script.arg(module);
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

/// Whether each module this binary embeds is of the canister sources, as build.rs found
/// them, in the order of [`MODULES`]: `current` (the checkout's sources are the ones the
/// module was built from), `stale` (they changed since: the module must be built from
/// them), or `packaged` (built from the published crate, which has no canister sources: the
/// record vouches for the module, and .ci/run rebuilds it from the sources and compares the
/// bytes before release).
const EMBEDDED_STATES: [(&str, &str); MODULES.len()] =
    include!(concat!(env!("OUT_DIR"), "/prebuilt_states.rs"));

/// The default module's state: `current`, `stale` or `packaged` ([`Module::embedded_state`]).
pub const EMBEDDED_STATE: &str = EMBEDDED_STATES[0].1;

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

/// The version string of the Motoko compiler that built `wasm` (its `motoko:compiler`
/// metadata), for a Motoko module's record: moc.js reports a build hash, not a release.
pub fn motoko_compiler(wasm: &[u8]) -> Option<String> {
    wasmparser::Parser::new(0)
        .parse_all(wasm)
        .find_map(|payload| match payload {
            Ok(wasmparser::Payload::CustomSection(s)) if s.name().ends_with("motoko:compiler") => {
                Some(String::from_utf8_lossy(s.data()).into_owned())
            }
            _ => None,
        })
}

/// The compiler that built `wasm` (raw or gzipped), where the module or its committed record
/// says: Motoko's `motoko:compiler` metadata (`moc HASH`: moc.js reports a build hash, not a
/// release), else the `producers` section's rustc (`rustc 1.95.0 (59807616e 2026-04-14)`),
/// else the `moc` line of the record of the committed module it is. A module converted by
/// wasi2ic (the bench canister) has no producers section, and its record no compiler.
pub fn compiler(wasm: &[u8]) -> Option<String> {
    let raw = crate::engine::embedded::decompress(wasm).ok()?;
    if let Some(moc) = motoko_compiler(&raw) {
        return Some(format!("moc {moc}"));
    }
    let rustc = wasmparser::Parser::new(0)
        .parse_all(&raw)
        .find_map(|payload| match payload.ok()? {
            wasmparser::Payload::CustomSection(s) => match s.as_known() {
                wasmparser::KnownCustom::Producers(fields) => fields
                    .into_iter()
                    .flatten()
                    .filter(|f| f.name == "processed-by")
                    .flat_map(|f| f.values.into_iter().flatten())
                    .find(|v| v.name == "rustc")
                    .map(|v| format!("rustc {}", v.version)),
                _ => None,
            },
            _ => None,
        });
    rustc.or_else(|| {
        let record = committed(wasm)?.listing().record;
        canister_sources::record_field(record, "moc").map(|moc| format!("moc {moc}"))
    })
}

/// The committed module (canisters/prebuilt) whose bytes `wasm` are, by its record's
/// `module-sha256`.
pub fn committed(wasm: &[u8]) -> Option<Module> {
    use sha2::{Digest, Sha256};
    let sha256 = hex::encode(Sha256::digest(wasm));
    Module::ALL.into_iter().find(|m| {
        canister_sources::record_field(m.listing().record, "module-sha256") == Some(&sha256)
    })
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

/// A canister module icbench runs: a module of canisters/prebuilt/modules.txt (how it is
/// built, from which sources, what it must export), built by `scripts/build-canister.sh
/// [name]`, committed under canisters/prebuilt with a sources record of its own, and
/// embedded in the binary (crate icbench-canister).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module {
    /// Its name in the list: the build script's argument.
    pub name: &'static str,
    /// Where the build script writes it, relative to the project root.
    pub built: &'static str,
    /// The committed module and its sources record, relative to the project root.
    pub prebuilt_wasm: &'static str,
    pub prebuilt_sources: &'static str,
    /// Its place in [`MODULES`] and [`EMBEDDED_STATES`].
    index: usize,
}

impl Module {
    /// Every module of the list, in its order.
    pub const ALL: [Module; MODULES.len()] = {
        let mut all = [Module::at(0); MODULES.len()];
        let mut i = 1;
        while i < all.len() {
            all[i] = Module::at(i);
            i += 1;
        }
        all
    };
    /// The bench canister, the list's first module: every suite runs it.
    pub const DEFAULT: Module = Module::ALL[0];
    /// The tune variant (feature `tune`): talc as the global allocator and the store
    /// `btree_bounded` (a bounded value type); the tune suite measures it beside the default.
    pub const TUNE: Module = Module::listed("tune");
    /// The ic-sqlite-vfs canister (canisters/sqlite-vfs): the users table on the other
    /// SQLite binding, the store `sqlite-vfs`.
    pub const SQLITE_VFS: Module = Module::listed("sqlite-vfs");
    /// The Motoko canister (canisters/motoko, built by moc): the stores `mo-map`,
    /// `mo-pure-map` and `mo-region`.
    pub const MOTOKO: Module = Module::listed("motoko");
    /// The Motoko canister built with classical persistence (moc's --legacy-persistence):
    /// the store `mo-map-classic`.
    pub const MOTOKO_CLASSIC: Module = Module::listed("motoko-classic");

    const fn at(index: usize) -> Module {
        let m = &MODULES[index];
        Module {
            name: m.name,
            built: m.built,
            prebuilt_wasm: m.prebuilt_wasm,
            prebuilt_sources: m.prebuilt_sources,
            index,
        }
    }

    /// The module the list names `name`; a compile error when there is none.
    const fn listed(name: &str) -> Module {
        let mut i = 0;
        while i < MODULES.len() {
            if crate::engine::same_str(MODULES[i].name, name) {
                return Module::at(i);
            }
            i += 1;
        }
        panic!("a module icbench names is not in canisters/prebuilt/modules.txt")
    }

    /// The module of the list named `name`.
    pub fn named(name: &str) -> Option<Module> {
        Module::ALL.into_iter().find(|m| m.name == name)
    }

    /// What the list says of it, and its committed bytes.
    pub fn listing(&self) -> &'static Prebuilt {
        &MODULES[self.index]
    }

    /// The build script's argument for it: none for the default module.
    fn script_arg(&self) -> &'static str {
        if *self == Module::DEFAULT {
            ""
        } else {
            self.name
        }
    }

    /// The module as this binary embeds it, unless the checkout it was built from had
    /// canister sources the module is not of.
    pub fn embedded(&self) -> Option<&'static [u8]> {
        let (_, state) = EMBEDDED_STATES[self.index];
        (state != "stale").then_some(self.listing().wasm)
    }

    /// build.rs's verdict on the module this binary embeds: `current`, `stale` or `packaged`
    /// (what each means: `EMBEDDED_STATES` in this file).
    pub fn embedded_state(&self) -> &'static str {
        EMBEDDED_STATES[self.index].1
    }

    /// SHA-256 over its sources and its build line in the list (each file's relative path,
    /// length and bytes, in path order): equal hashes mean the same module, since the build
    /// is reproducible.
    pub fn sources_sha256(&self, root: &Path) -> Result<String> {
        let m = self.listing();
        canister_sources::sha256(root, m.sources, m.recipe).map_err(|e| anyhow!(e))
    }

    /// Whether its build (`self.built`) is missing or older than any of its sources or the
    /// list that says how it is built.
    pub fn built_is_stale(&self, root: &Path) -> bool {
        let wasm = root.join(self.built);
        let Some(built) = std::fs::metadata(wasm).ok().and_then(|m| m.modified().ok()) else {
            return true;
        };
        let list = format!(
            "{}/{}",
            icbench_canister::list::PREBUILT_DIR,
            icbench_canister::list::FILE
        );
        let newer = |p: &str| newest_mtime(&root.join(p)).is_some_and(|t| t > built);
        newer(&list) || self.listing().sources.iter().any(|p| newer(p))
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
        let sources = self.sources_sha256(root)?;
        if self.record(&sources, &wasm) == record {
            return Ok(Some(wasm));
        }
        if canister_sources::record_field(&record, "sources-sha256") == Some(sources.as_str()) {
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
        let compiler = motoko_compiler(wasm)
            .map(|version| format!("moc {version}\n"))
            .unwrap_or_default();
        format!(
            "# The sources {} is built from; written by\n\
             # scripts/update-prebuilt-canister.sh, checked by the tests and .ci/run.\n\
             sources-sha256 {sources}\n\
             module-sha256 {}\n{compiler}",
            self.prebuilt_wasm,
            hex::encode(Sha256::digest(wasm))
        )
    }

    /// Commits `wasm` under `root` as its module of the current sources, with its record.
    fn commit(&self, root: &Path, wasm: &[u8]) -> Result<()> {
        let sources = self.sources_sha256(root)?;
        let wasm_path = root.join(self.prebuilt_wasm);
        if let Some(dir) = wasm_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&wasm_path, wasm)
            .with_context(|| format!("writing {}", self.prebuilt_wasm))?;
        std::fs::write(
            root.join(self.prebuilt_sources),
            self.record(&sources, wasm),
        )
        .with_context(|| format!("writing {}", self.prebuilt_sources))
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
        if self.built_is_stale(&root) {
            if !quiet {
                eprintln!(
                    "building the bench canister (scripts/build-canister.sh {}): its sources changed since {}...",
                    self.script_arg(), self.prebuilt_wasm
                );
            }
            run_build_script(&root, icbench_bin, self.script_arg())?;
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
                self.script_arg()
            );
        }
        run_build_script(&root, current_icbench().as_deref(), self.script_arg())?;
        let wasm = root.join(self.built);
        std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every source of every module, each once.
    fn all_sources() -> Vec<&'static str> {
        let mut all: Vec<&str> = Module::ALL
            .iter()
            .flat_map(|m| m.listing().sources.iter().copied())
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// A project root with one file of each source kind of every module, in a directory of
    /// its own.
    fn fake_root(name: &str) -> PathBuf {
        let root = crate::testing::fresh_temp_dir("prebuilt", name);
        for rel in all_sources() {
            let path = root.join(rel);
            if is_file(rel) {
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

    /// A file of the source `rel` (itself, or one [`fake_root`] made inside the folder).
    fn a_file_of(rel: &str) -> String {
        if is_file(rel) {
            rel.to_string()
        } else {
            format!("{rel}/src/lib.rs")
        }
    }

    fn is_file(rel: &str) -> bool {
        rel.ends_with(".toml") || rel.ends_with(".lock") || rel.ends_with(".sh")
    }

    #[test]
    fn the_list_makes_the_modules_and_names_them() {
        assert_eq!(Module::DEFAULT, Module::ALL[0]);
        assert_eq!(Module::DEFAULT.name, "bench");
        assert_eq!(
            Module::DEFAULT.prebuilt_wasm,
            "canisters/prebuilt/bench.wasm"
        );
        assert_eq!(Module::DEFAULT.built, "target/canister/bench.wasm");
        assert_eq!(Module::TUNE.name, "tune");
        assert_eq!(
            Module::TUNE.prebuilt_sources,
            "canisters/prebuilt/bench-tune.sources"
        );
        assert_eq!(Module::ALL.len(), MODULES.len());
        for (i, m) in Module::ALL.into_iter().enumerate() {
            assert_eq!(Module::named(m.name), Some(m));
            assert_eq!(m.listing().name, MODULES[i].name);
            // build.rs judged the same modules, in the same order.
            assert_eq!(EMBEDDED_STATES[i].0, m.name);
            assert!(
                ["current", "stale"].contains(&m.embedded_state()),
                "{}: {}",
                m.name,
                m.embedded_state()
            );
        }
        assert_eq!(Module::named("bench-tune"), None);
        assert_eq!(Module::named(""), None);
    }

    #[test]
    fn the_sources_hash_sees_every_source_and_ignores_build_output() {
        let root = fake_root("hash");
        for m in Module::ALL {
            let before = m.sources_sha256(&root).unwrap();
            std::fs::write(root.join("canisters/bench/target/x"), b"rebuilt").unwrap();
            std::fs::write(root.join("canisters/bench/.swp"), b"edited").unwrap();
            assert_eq!(m.sources_sha256(&root).unwrap(), before);
            for source in m.listing().sources {
                let changed = a_file_of(source);
                let original = std::fs::read(root.join(&changed)).unwrap();
                std::fs::write(root.join(&changed), b"changed").unwrap();
                assert_ne!(
                    m.sources_sha256(&root).unwrap(),
                    before,
                    "{}: {changed}",
                    m.name
                );
                std::fs::write(root.join(&changed), original).unwrap();
            }
            assert_eq!(m.sources_sha256(&root).unwrap(), before);
        }
        // A renamed file is a different source even with the same bytes.
        let before = Module::DEFAULT.sources_sha256(&root).unwrap();
        std::fs::rename(
            root.join("scripts/wasi2ic-post/src/lib.rs"),
            root.join("scripts/wasi2ic-post/src/main.rs"),
        )
        .unwrap();
        assert_ne!(Module::DEFAULT.sources_sha256(&root).unwrap(), before);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_module_s_hash_covers_its_build_line_and_only_its_own_sources() {
        let root = fake_root("own-sources");
        let hashes: Vec<String> = Module::ALL
            .iter()
            .map(|m| m.sources_sha256(&root).unwrap())
            .collect();
        // The default and tune modules have the same sources: their build lines (the
        // feature) tell them apart.
        assert_eq!(
            Module::DEFAULT.listing().sources,
            Module::TUNE.listing().sources
        );
        assert_ne!(
            Module::DEFAULT.sources_sha256(&root).unwrap(),
            Module::TUNE.sources_sha256(&root).unwrap()
        );
        let bench = Module::DEFAULT.listing();
        let sha = |recipe: &str| canister_sources::sha256(&root, bench.sources, recipe).unwrap();
        assert_eq!(sha(bench.recipe), hashes[0]);
        assert_ne!(
            sha(&bench
                .recipe
                .replace("wasm32-wasip1", "wasm32-unknown-unknown")),
            hashes[0]
        );
        // A change to one module's own crate (sqlite-vfs's: another workspace, its own did)
        // moves its record and leaves the others' as they were.
        std::fs::create_dir_all(root.join("canisters/sqlite-vfs/src")).unwrap();
        std::fs::write(root.join("canisters/sqlite-vfs/src/lib.rs"), b"fn g() {}").unwrap();
        std::fs::write(root.join("canisters/sqlite-vfs/Cargo.lock"), b"lock").unwrap();
        for (m, before) in Module::ALL.iter().zip(&hashes) {
            let after = m.sources_sha256(&root).unwrap();
            assert_eq!(&after == before, *m != Module::SQLITE_VFS, "{}", m.name);
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_prebuilt_module_is_used_only_for_its_own_sources_and_bytes() {
        for m in Module::ALL {
            let root = fake_root(&format!("prebuilt-{}", m.name));
            assert_eq!(
                m.prebuilt_for_current_sources(&root).unwrap(),
                None,
                "nothing committed"
            );
            m.commit(&root, b"\0asm module").unwrap();
            assert_eq!(
                m.prebuilt_for_current_sources(&root).unwrap().as_deref(),
                Some(&b"\0asm module"[..])
            );
            // Damaged bytes under a matching record are never run.
            std::fs::write(root.join(m.prebuilt_wasm), b"\0asm damaged").unwrap();
            assert_eq!(m.prebuilt_for_current_sources(&root).unwrap(), None);
            // Sources that moved on need a build.
            m.commit(&root, b"\0asm module").unwrap();
            std::fs::write(root.join(a_file_of(m.listing().crate_dir)), b"fn g() {}").unwrap();
            assert_eq!(m.prebuilt_for_current_sources(&root).unwrap(), None);
            // A record without its module is an error that names the file.
            m.commit(&root, b"\0asm module").unwrap();
            std::fs::remove_file(root.join(m.prebuilt_wasm)).unwrap();
            let err = m.prebuilt_for_current_sources(&root).unwrap_err();
            assert!(format!("{err:#}").contains(m.prebuilt_wasm), "{err:#}");
            std::fs::remove_dir_all(&root).unwrap();
        }
    }

    #[test]
    fn each_module_is_vouched_for_by_its_own_record_only() {
        for m in Module::ALL {
            let root = fake_root(&format!("own-record-{}", m.name));
            m.commit(&root, b"\0asm this one").unwrap();
            for other in Module::ALL.into_iter().filter(|o| *o != m) {
                assert_eq!(other.prebuilt_for_current_sources(&root).unwrap(), None);
                // Its record, copied over another's, does not vouch for its bytes there.
                std::fs::copy(
                    root.join(m.prebuilt_sources),
                    root.join(other.prebuilt_sources),
                )
                .unwrap();
                std::fs::write(root.join(other.prebuilt_wasm), b"\0asm this one").unwrap();
                assert_eq!(other.prebuilt_for_current_sources(&root).unwrap(), None);
            }
            assert_eq!(
                m.prebuilt_for_current_sources(&root).unwrap().as_deref(),
                Some(&b"\0asm this one"[..])
            );
            let record = std::fs::read_to_string(root.join(m.prebuilt_sources)).unwrap();
            assert!(record.starts_with(&format!("# The sources {} is built from", m.prebuilt_wasm)));
            std::fs::remove_dir_all(&root).unwrap();
        }
    }
}
