//! Finding moc as a user has it, and compiling each bench wrapped in the bench canister with
//! the flags `mops bench` passes (cli/commands/bench.ts, `getMocArgs`): a native `moc`
//! (mops' toolchain cache, a `[toolchain] moc` path, or one on PATH) run as mops runs it, or
//! moc.js from the npm package `motoko`, run with node (`moc.js` beside this file).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

use super::optimize::Optimizer;
use super::project::{is_path, sources, Project};
use super::toolchain::{mops_cache, on_path};

/// npm `motoko` releases and the moc release their moc.js is: each release's package.json
/// and its "Update moc to X" commit in caffeinelabs/node-motoko (and the research sheet
/// on mops bench for the 3.x ones). moc.js reports a build hash, not a release.
pub const MOTOKO_NPM: &[(&str, &str)] = &[
    ("3.8.1", "0.12.1"),
    ("3.9.1", "0.13.3"),
    ("3.13.0", "0.14.11"),
    ("3.14.0", "0.15.1"),
    ("4.2.0", "1.4.1"),
    ("4.3.0", "1.5.0"),
    ("4.4.0", "1.5.1"),
    ("4.5.0", "1.6.0"),
    ("4.6.0", "1.8.1"),
    ("4.7.0", "1.8.2"),
    ("4.8.0", "1.9.0"),
    ("4.9.0", "1.10.0"),
    ("4.10.0", "1.10.1"),
];

/// icbench's bench canister; `./user-bench` is replaced by the bench file's path, as mops
/// replaces it in its own template.
pub const BENCH_CANISTER: &str = include_str!("bench_canister.mo");
const USER_BENCH: &str = "./user-bench";
const MOC_JS_DRIVER: &str = include_str!("moc.js");

/// The collectors `--gc` picks (mops' choices).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Gc {
    Copying,
    Compacting,
    Generational,
    Incremental,
}

impl Gc {
    pub fn name(self) -> &'static str {
        match self {
            Gc::Copying => "copying",
            Gc::Compacting => "compacting",
            Gc::Generational => "generational",
            Gc::Incremental => "incremental",
        }
    }
    /// The collectors that exist only under legacy persistence.
    fn legacy(self) -> bool {
        self != Gc::Incremental
    }
}

/// What mops' options make of a compile.
#[derive(Clone, Debug)]
pub struct Flags {
    pub gc: Gc,
    pub force_gc: bool,
    pub legacy_persistence: bool,
    /// Arguments after `--`, passed to moc last.
    pub extra: Vec<String>,
}

/// A moc as found.
#[derive(Clone, Debug)]
pub enum Moc {
    Native { path: PathBuf, version: String },
    Js { package: PathBuf, npm: String },
}

impl Moc {
    /// The moc release this is, where known.
    pub fn release(&self) -> Option<String> {
        match self {
            Moc::Native { version, .. } => Some(version.clone()),
            Moc::Js { npm, .. } => moc_of_npm(npm).map(str::to_string),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Moc::Native { path, version } => format!("moc {version} ({})", path.display()),
            Moc::Js { package, npm } => format!(
                "moc.js {} of npm motoko@{npm} ({}), run with node",
                moc_of_npm(npm).unwrap_or("(release unknown)"),
                package.display()
            ),
        }
    }
}

fn moc_of_npm(npm: &str) -> Option<&'static str> {
    MOTOKO_NPM.iter().find(|(n, _)| *n == npm).map(|(_, m)| *m)
}

fn npm_of_moc(moc: &str) -> Option<&'static str> {
    MOTOKO_NPM.iter().find(|(_, m)| *m == moc).map(|(n, _)| *n)
}

/// The version of the native moc at `path` (`moc --version`: "Motoko compiler 0.12.1 (...)").
fn native_version(path: &Path) -> Option<String> {
    let out = Command::new(path).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let word = text
        .split_whitespace()
        .find(|w| semver::Version::parse(w).is_ok())?;
    Some(word.to_string())
}

/// The npm package `motoko` in `dir`, with its version, if that is what `dir` holds.
fn motoko_package(dir: &Path) -> Option<(PathBuf, String)> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    (json["name"] == "motoko").then(|| {
        (
            dir.to_path_buf(),
            json["version"].as_str().unwrap_or("").to_string(),
        )
    })
}

/// The npm package `motoko` in a `node_modules` of the root or a directory above it.
fn node_modules_motoko(root: &Path) -> Option<(PathBuf, String)> {
    root.ancestors()
        .find_map(|d| motoko_package(&d.join("node_modules").join("motoko")))
}

/// Finds moc: `--moc` (a native moc, or the npm package `motoko`'s directory), else the one
/// mops.toml names (`[toolchain] moc`: a path, or a version found in mops' toolchain cache,
/// as a `moc` on PATH, or as moc.js of the npm `motoko` that carries it in a
/// `node_modules`), else a `moc` on PATH or the npm package. Nothing is downloaded.
pub fn find(project: &Project, given: Option<&Path>) -> Result<Moc> {
    if let Some(given) = given {
        // node resolves a relative directory from the driver's, not from here.
        let absolute = match given.exists() {
            true => std::path::absolute(given)?,
            false => given.to_path_buf(),
        };
        let path = absolute.as_path();
        if let Some((package, npm)) = motoko_package(path) {
            return js(package, npm);
        }
        let version = native_version(path).ok_or_else(|| {
            anyhow!("--moc {}: not a moc that answers --version, nor the npm package motoko's directory", path.display())
        })?;
        return Ok(Moc::Native {
            path: path.to_path_buf(),
            version,
        });
    }
    let pinned = project.toolchain.moc.as_deref();
    if let Some(path) = pinned.filter(|p| is_path(p)) {
        let path = project.root.join(path);
        let version = native_version(&path).ok_or_else(|| {
            anyhow!(
                "mops.toml's [toolchain] moc is {}, which is not a moc that runs",
                path.display()
            )
        })?;
        return Ok(Moc::Native { path, version });
    }
    let Some(want) = pinned else {
        if let Some(path) = on_path("moc") {
            if let Some(version) = native_version(&path) {
                return Ok(Moc::Native { path, version });
            }
        }
        return match node_modules_motoko(&project.root) {
            Some((package, npm)) => js(package, npm),
            None => bail!("no moc: mops.toml names none ([toolchain] moc), no `moc` is on PATH and no npm package motoko is in a node_modules here (`npm install motoko`, or --moc PATH)"),
        };
    };
    if let Some(path) = mops_cache().map(|c| c.join("moc").join(want).join("moc")) {
        if let Some(version) = native_version(&path) {
            return Ok(Moc::Native { path, version });
        }
    }
    if let Some(path) = on_path("moc") {
        if native_version(&path).as_deref() == Some(want) {
            return Ok(Moc::Native {
                path,
                version: want.to_string(),
            });
        }
    }
    let npm = npm_of_moc(want);
    if let Some((package, have)) = node_modules_motoko(&project.root) {
        if Some(have.as_str()) == npm {
            return js(package, have);
        }
        bail!(
            "mops.toml names moc {want}, but {} is motoko@{have} (moc.js {}): {}",
            package.display(),
            moc_of_npm(&have).unwrap_or("of an unknown release"),
            match npm {
                Some(n) => format!("install motoko@{n}, whose moc.js is moc {want}"),
                None => format!("no npm motoko release is known to carry moc {want}; give a native moc with --moc"),
            }
        );
    }
    bail!(
        "mops.toml names moc {want}, which is not here: not in mops' toolchain cache, no `moc` {want} on PATH, and no npm package motoko in a node_modules{}",
        match npm {
            Some(n) => format!(" (`npm install motoko@{n}` gives moc.js {want})"),
            None => String::new(),
        }
    )
}

/// moc.js of `package`, with node checked to be there.
fn js(package: PathBuf, npm: String) -> Result<Moc> {
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(Moc::Js { package, npm }),
        _ => bail!(
            "node is not on PATH: moc.js (npm motoko@{npm}, {}) runs with node",
            package.display()
        ),
    }
}

/// The flags mops passes after the sources and `[moc].args` (`getMocArgs`), for a compiler
/// of release `version` (mops' pin): under moc 0.15 and later the collector is fixed unless
/// legacy persistence is asked for (or implied by a legacy collector).
pub fn mops_flags(flags: &Flags, version: Option<&str>) -> Vec<String> {
    let at_least_015 = version
        .and_then(|v| semver::Version::parse(v).ok())
        .is_some_and(|v| v >= semver::Version::new(0, 15, 0));
    let legacy = flags.legacy_persistence || flags.gc.legacy();
    let mut args = Vec::new();
    if legacy && at_least_015 {
        args.push("--legacy-persistence".to_string());
    }
    if flags.force_gc {
        args.push("--force-gc".to_string());
    }
    if legacy || !at_least_015 {
        args.push(format!("--{}-gc", flags.gc.name()));
    }
    args.push("--release".to_string());
    args
}

/// The bench canister for `bench` (a path relative to `from`, where the canister lies):
/// `template` with its `./user-bench` import pointed at the bench file.
pub fn wrap(template: &str, bench_rel: &str) -> Result<String> {
    let quoted = format!("\"{USER_BENCH}\"");
    if !template.contains(&quoted) {
        bail!("the bench canister template has no `import ... \"{USER_BENCH}\"` to point at the bench file");
    }
    Ok(template.replacen(&quoted, &format!("\"{bench_rel}\""), 1))
}

/// A bench file's path relative to the root, `/`-separated.
pub fn rel(root: &Path, file: &Path) -> String {
    let r = file.strip_prefix(root).unwrap_or(file);
    r.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Compiles every bench in `benches` (absolute paths) wrapped in `template`; gives their
/// modules in order, or moc's messages. With the compile cache on, each module of the same
/// compiler, flags, template and sources is an entry of its `mops` kind (checked as every
/// entry is, counted, pruned and cleared with the others), and a run whose sources did not
/// change compiles nothing.
pub fn compile_all(
    moc: &Moc,
    project: &Project,
    benches: &[PathBuf],
    template: &str,
    args: &[String],
    optimizer: Option<&Optimizer>,
) -> Result<Vec<Vec<u8>>> {
    use crate::engine::disk_cache::{self, Lookup, MOPS};
    let build = || -> Result<Vec<Vec<u8>>> {
        let modules = compile_fresh(moc, project, benches, template, args)?;
        match optimizer {
            Some(o) => benches
                .iter()
                .zip(modules)
                .map(|(bench, wasm)| o.run(&wasm, &rel(&project.root, bench)))
                .collect(),
            None => Ok(modules),
        }
    };
    let Some(dir) = disk_cache::dir() else {
        return build();
    };
    let key = key(moc, project, template, args, optimizer)?;
    let keys: Vec<[u8; 32]> = benches
        .iter()
        .map(|b| entry_key(&key, &rel(&project.root, b)))
        .collect();
    let mut found = Vec::new();
    for k in &keys {
        match disk_cache::read(&dir, MOPS, k) {
            Ok(Lookup::Found(entry)) => found.push(entry.payload().to_vec()),
            Ok(Lookup::Missing) => break,
            Ok(Lookup::Damaged(e)) => {
                eprintln!("warning: {e:#}; compiling again");
                break;
            }
            Err(e) => {
                disk_cache::warn_once("the compile cache cannot be read", &e);
                break;
            }
        }
    }
    if found.len() == benches.len() {
        for _ in &found {
            disk_cache::count_hit(MOPS);
        }
        return Ok(found);
    }
    let modules = build()?;
    for (k, wasm) in keys.iter().zip(&modules) {
        disk_cache::count_miss(MOPS);
        // The cache only saves time: a module it cannot keep is compiled again next time.
        if let Err(e) = disk_cache::write(&dir, MOPS, k, b"", wasm) {
            disk_cache::warn_once("the compile cache cannot be written", &e);
        }
    }
    Ok(modules)
}

/// The entry of one bench file (`rel`: its path in the project) of a compile whose inputs
/// hash to `key`.
fn entry_key(key: &str, rel: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(format!("{key}\0{rel}").as_bytes()).into()
}

/// What a module depends on: the compiler, its flags, the template, every source and the
/// optimizer's pass.
fn key(
    moc: &Moc,
    project: &Project,
    template: &str,
    args: &[String],
    optimizer: Option<&Optimizer>,
) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(format!("{moc:?}\0{args:?}\0{template}\0{optimizer:?}\0").as_bytes());
    for f in sources(project)? {
        h.update(f.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(std::fs::read(&f).with_context(|| format!("reading {}", f.display()))?);
        h.update([0]);
    }
    Ok(hex::encode(h.finalize()))
}

fn compile_fresh(
    moc: &Moc,
    project: &Project,
    benches: &[PathBuf],
    template: &str,
    args: &[String],
) -> Result<Vec<Vec<u8>>> {
    // A signal removes it, and kills the compiler (crate::interrupt).
    let (work, _guard) =
        crate::interrupt::TempGuard::dir().context("making a temporary directory for moc")?;
    match moc {
        Moc::Native { path, .. } => benches
            .iter()
            .enumerate()
            .map(|(i, bench)| {
                native(
                    path,
                    project,
                    bench,
                    template,
                    args,
                    &work.path().join(i.to_string()),
                )
            })
            .collect(),
        Moc::Js { package, .. } => moc_js(package, project, benches, template, args, work.path()),
    }
}

/// Runs a native moc as mops does: `moc -c --idl canister.mo --package ... ARGS` in the
/// canister's directory.
fn native(
    moc: &Path,
    project: &Project,
    bench: &Path,
    template: &str,
    args: &[String],
    dir: &Path,
) -> Result<Vec<u8>> {
    std::fs::create_dir_all(dir)?;
    let import = bench.with_extension("");
    std::fs::write(
        dir.join("canister.mo"),
        wrap(template, &import.to_string_lossy())?,
    )?;
    let mut cmd = Command::new(moc);
    cmd.current_dir(dir).args(["-c", "--idl", "canister.mo"]);
    for p in &project.packages {
        cmd.arg("--package").arg(&p.name).arg(&p.dir);
    }
    let out = crate::interrupt::output(cmd.args(args))
        .with_context(|| format!("running {}", moc.display()))?;
    if !out.status.success() {
        bail!(
            "moc rejected {}:\n{}",
            rel(&project.root, bench),
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    std::fs::read(dir.join("canister.wasm")).context("reading moc's canister.wasm")
}

/// What moc.js takes of mops' flags: the collector and persistence as `gcFlags`, the rest
/// through `setExtraFlags`; `--release` it does not have (it only drops `debug` blocks).
fn js_flags(args: &[String]) -> (Vec<&'static str>, Vec<String>, bool) {
    let mut gc = Vec::new();
    let mut extra = Vec::new();
    let mut release = false;
    for a in args {
        match a.as_str() {
            "--force-gc" => gc.push("force"),
            "--legacy-persistence" => gc.push("classicOP"),
            "--copying-gc" => gc.push("copying"),
            "--compacting-gc" => gc.push("marking"),
            "--generational-gc" => gc.push("generational"),
            "--incremental-gc" => gc.push("incremental"),
            "--release" => release = true,
            other => extra.push(other.to_string()),
        }
    }
    (gc, extra, release)
}

/// Compiles all benches in one node process: moc.js reads every source from a virtual file
/// system laid out as the project (a canister at `.mops/.bench/NAME/canister.mo`, as mops
/// puts it, importing its bench by the same relative path).
fn moc_js(
    package: &Path,
    project: &Project,
    benches: &[PathBuf],
    template: &str,
    args: &[String],
    work: &Path,
) -> Result<Vec<Vec<u8>>> {
    let (gc, flags, release) = js_flags(args);
    let mut files = Vec::new();
    for f in sources(project)? {
        files.push((virtual_path(project, &f), f));
    }
    let debug: Vec<&String> = files
        .iter()
        .filter(|(_, f)| has_debug_block(f))
        .map(|(v, _)| v)
        .collect();
    if release && !debug.is_empty() {
        eprintln!(
            "note: moc.js has no --release: the `debug` blocks of {} source(s) ({}{}) are compiled in, which mops' native moc drops; a cell that reaches them differs",
            debug.len(),
            debug[0],
            if debug.len() > 1 { ", ..." } else { "" }
        );
    }
    let mut canisters = Vec::new();
    for (i, bench) in benches.iter().enumerate() {
        let name = bench
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("bench");
        let main = format!(".mops/.bench/{name}/canister.mo");
        let import = format!("../../../{}", rel(&project.root, &bench.with_extension("")));
        let real = work.join(format!("canister{i}.mo"));
        std::fs::write(&real, wrap(template, &import)?)?;
        files.push((main.clone(), real));
        canisters.push((main, work.join(format!("canister{i}.wasm"))));
    }
    let request = serde_json::json!({
        "motoko": package,
        "files": files,
        "packages": project.packages.iter().map(|p| (p.name.clone(), virtual_path(project, &p.dir))).collect::<Vec<_>>(),
        "gc": gc,
        "flags": flags,
        "canisters": canisters,
    });
    let (driver, req) = (work.join("moc.js"), work.join("request.json"));
    std::fs::write(&driver, MOC_JS_DRIVER)?;
    std::fs::write(&req, serde_json::to_vec(&request)?)?;
    let out = crate::interrupt::output(Command::new("node").arg(&driver).arg(&req))
        .context("running node")?;
    match out.status.code() {
        Some(0) => {}
        Some(1) => bail!(
            "moc rejected the bench canister:\n{}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        ),
        _ => bail!("{}", String::from_utf8_lossy(&out.stderr).trim_end()),
    }
    canisters
        .iter()
        .map(|(_, wasm)| std::fs::read(wasm).with_context(|| format!("reading {}", wasm.display())))
        .collect()
}

/// A path as moc.js's virtual file system has it: relative to the root inside it, else
/// under `.icbench-outside/` with its absolute path.
fn virtual_path(project: &Project, path: &Path) -> String {
    match path.strip_prefix(&project.root) {
        Ok(_) => rel(&project.root, path),
        Err(_) => format!(".icbench-outside{}", path.display()),
    }
}

/// Whether a source has a `debug` expression (what `--release` drops).
fn has_debug_block(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .any(|l| {
            l.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == "debug")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(gc: Gc, legacy: bool) -> Flags {
        Flags {
            gc,
            force_gc: true,
            legacy_persistence: legacy,
            extra: Vec::new(),
        }
    }

    #[test]
    fn mops_flags_as_get_moc_args() {
        // moc 0.15+ under EOP: the collector is fixed, no flag for it.
        assert_eq!(
            mops_flags(&flags(Gc::Incremental, false), Some("1.10.1")),
            ["--force-gc", "--release"]
        );
        // A legacy collector implies legacy persistence.
        assert_eq!(
            mops_flags(&flags(Gc::Copying, false), Some("1.0.0")),
            [
                "--legacy-persistence",
                "--force-gc",
                "--copying-gc",
                "--release"
            ]
        );
        // Before 0.15 there is no --legacy-persistence, and the collector is always named.
        assert_eq!(
            mops_flags(&flags(Gc::Copying, false), Some("0.12.1")),
            ["--force-gc", "--copying-gc", "--release"]
        );
        assert_eq!(
            mops_flags(&flags(Gc::Incremental, false), None),
            ["--force-gc", "--incremental-gc", "--release"]
        );
    }

    #[test]
    fn wrap_points_the_import_at_the_bench() {
        let c = wrap(BENCH_CANISTER, "../../../bench/x.bench").unwrap();
        assert!(c.contains("import UserBench \"../../../bench/x.bench\";"));
        assert!(wrap("actor {}", "x").is_err());
    }
}
