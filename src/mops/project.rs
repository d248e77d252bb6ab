//! A Motoko project as `mops bench` (ic-mops 3.x) sees it: its root (the closest directory
//! up from here with a `mops.toml`), the settings that change a figure (`[toolchain]`'s moc
//! and pocket-ic pins, `[moc].args`, `[optimize]`), the packages `mops install` laid out in
//! `.mops/` with the base directory each is compiled from, and the bench files mops finds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

/// The project's configuration file.
pub const CONFIG: &str = "mops.toml";
/// Where `mops install` puts the packages, under the root.
pub const PACKAGES_DIR: &str = ".mops";
/// Directories mops' globs skip (`MOTOKO_IGNORE_PATTERNS` in cli/constants.ts).
const IGNORED_DIRS: [&str; 4] = ["node_modules", ".mops", ".git", "dist"];
/// The directories a bench file lies under (`**/bench?(mark)/**`), matched without case.
const BENCH_DIRS: [&str; 2] = ["bench", "benchmark"];

#[derive(Debug, Default, Deserialize)]
struct Toml {
    #[serde(default)]
    dependencies: BTreeMap<String, String>,
    #[serde(default, rename = "dev-dependencies")]
    dev_dependencies: BTreeMap<String, String>,
    #[serde(default)]
    toolchain: BTreeMap<String, toml::Value>,
    #[serde(default)]
    moc: Option<MocSection>,
    #[serde(default)]
    optimize: Option<toml::Value>,
    #[serde(default)]
    package: Option<PackageSection>,
}

#[derive(Debug, Default, Deserialize)]
struct MocSection {
    #[serde(default)]
    args: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
struct PackageSection {
    #[serde(default, rename = "baseDir")]
    base_dir: Option<String>,
}

/// A package as moc is given it: `--package NAME DIR`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    /// What the project names it by: a version, a GitHub URL or a local path.
    pub spec: String,
    /// The directory its `mo:NAME/...` imports resolve in.
    pub dir: PathBuf,
}

/// The project, read and checked.
#[derive(Debug)]
pub struct Project {
    pub root: PathBuf,
    pub toolchain: Toolchain,
    /// `[moc].args`, passed to moc before mops' own flags.
    pub moc_args: Vec<String>,
    /// `[optimize]`: the wasm-opt pass it asks for.
    pub optimize: Option<Optimize>,
    pub packages: Vec<Package>,
}

/// `[toolchain]`: the tools the project pins, each a release or a path (mops'
/// `FILE_PATH_REGEX`, [`is_path`]).
#[derive(Debug)]
pub struct Toolchain {
    /// `moc`: a version, or a path.
    pub moc: Option<String>,
    /// `pocket-ic`: the PocketIC release mops would run.
    pub pocket_ic: Option<String>,
    /// `wasm-opt`: a Binaryen release ("131"), or a path.
    pub wasm_opt: Option<String>,
}

/// A path as mops tells one from a version (`FILE_PATH_REGEX`: `/`, `./` or `../` first).
pub fn is_path(value: &str) -> bool {
    value.starts_with('/') || value.starts_with("./") || value.starts_with("../")
}

/// The closest directory from `from` up that holds a `mops.toml`.
pub fn find_root(from: &Path) -> Result<PathBuf> {
    from.ancestors()
        .find(|d| d.join(CONFIG).is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            anyhow!(
                "no {CONFIG} in {} or any directory above it: run icbench mops in a Motoko project (`mops init` makes one)",
                from.display()
            )
        })
}

fn read_toml(path: &Path) -> Result<Toml> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).map_err(|e| anyhow!("{}: {}", path.display(), toml_error(&text, &e)))
}

/// A TOML error in one line, with its reason: where (line and column, when known) and what,
/// a syntax error's or a value of the wrong shape's.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let reason = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: {reason}")
        }
        None => reason,
    }
}

impl Project {
    /// Reads the project at `root`: its settings and every package it needs, each checked
    /// to be where `mops install` puts it.
    pub fn load(root: &Path) -> Result<Project> {
        let config = root.join(CONFIG);
        let t = read_toml(&config)?;
        let text = |key: &str| -> Result<Option<String>> {
            match t.toolchain.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => bail!(
                    "{}: [toolchain] {key} must be a version string, not {}",
                    config.display(),
                    other.type_str()
                ),
            }
        };
        let moc_args = match t.moc.and_then(|m| m.args) {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items
                .into_iter()
                .map(|v| match v {
                    toml::Value::String(s) => Ok(s),
                    other => bail!(
                        "{}: [moc] args must be strings, not {}",
                        config.display(),
                        other.type_str()
                    ),
                })
                .collect::<Result<_>>()?,
            Some(_) => bail!(
                "{}: [moc] config 'args' should be an array of strings in mops.toml config file",
                config.display()
            ),
        };
        let direct: Vec<(String, String)> = t
            .dependencies
            .into_iter()
            .chain(t.dev_dependencies)
            .collect();
        Ok(Project {
            root: root.to_path_buf(),
            toolchain: Toolchain {
                moc: text("moc")?,
                pocket_ic: text("pocket-ic")?,
                wasm_opt: text("wasm-opt")?,
            },
            moc_args,
            optimize: t
                .optimize
                .as_ref()
                .map(|v| Optimize::parse(v, &config))
                .transpose()?,
            packages: resolve(root, direct)?,
        })
    }
}

/// The levels mops takes (`OPT_LEVELS`).
const LEVELS: [&str; 7] = ["O0", "O1", "O2", "O3", "O4", "Os", "Oz"];

/// `[optimize]` as mops resolves it (`resolveOptimizeConfig` in cli/helpers/optimize-config.ts):
/// a table, even empty, enables the pass; `level` defaults to O3, `keep-names` (wasm-opt's
/// `-g`) to true, `args` to none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Optimize {
    pub level: String,
    pub keep_names: bool,
    pub args: Vec<String>,
}

impl Optimize {
    /// The `[optimize]` value of mops.toml, checked as mops checks it; `config` names the file.
    pub fn parse(value: &toml::Value, config: &Path) -> Result<Optimize> {
        let Some(table) = value.as_table() else {
            bail!(
                "{}: [optimize] must be a table, not {}",
                config.display(),
                value.type_str()
            );
        };
        let level = match table.get("level") {
            None => "O3".to_string(),
            Some(toml::Value::String(l)) if LEVELS.contains(&l.as_str()) => l.clone(),
            Some(other) => bail!(
                "{}: invalid [optimize].level {}: expected one of {}",
                config.display(),
                shown(other),
                LEVELS.join(", ")
            ),
        };
        let keep_names = match table.get("keep-names") {
            None => true,
            Some(toml::Value::Boolean(b)) => *b,
            Some(other) => bail!(
                "{}: [optimize].keep-names must be true or false, not {}",
                config.display(),
                shown(other)
            ),
        };
        let args = match table.get("args") {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    anyhow!(
                        "{}: [optimize].args must be an array of strings",
                        config.display()
                    )
                })?,
            Some(_) => bail!(
                "{}: [optimize].args must be an array of strings",
                config.display()
            ),
        };
        Ok(Optimize {
            level,
            keep_names,
            args,
        })
    }

    /// wasm-opt's flags before the files: `-LEVEL`, `-g` to keep names, the args.
    pub fn flags(&self) -> Vec<String> {
        let mut flags = vec![format!("-{}", self.level)];
        if self.keep_names {
            flags.push("-g".into());
        }
        flags.extend(self.args.iter().cloned());
        flags
    }
}

/// A TOML value as mops.toml has it, for an error.
fn shown(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("\"{s}\""),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => format!("a {}", other.type_str()),
    }
}

/// Where `mops install` puts a package named `name` by `spec` (`formatDir`,
/// `formatGithubDir`, or the path itself).
fn package_dir(root: &Path, name: &str, spec: &str) -> PathBuf {
    if is_path(spec) {
        return root.join(spec);
    }
    if let Some(repo) = spec.strip_prefix("https://github.com/") {
        let (_, fragment) = repo.split_once('#').unwrap_or((repo, ""));
        let (branch, commit) = fragment.split_once('@').unwrap_or((fragment, ""));
        let branch = if branch.is_empty() { "master" } else { branch };
        let mut dir = format!("{name}#{}", branch.replace('/', "___"));
        if !commit.is_empty() {
            dir.push('@');
            dir.push_str(commit);
        }
        return root.join(PACKAGES_DIR).join("_github").join(dir);
    }
    root.join(PACKAGES_DIR).join(format!("{name}@{spec}"))
}

/// The packages of `direct` (the project's dependencies and dev-dependencies) and all they
/// depend on, as mops resolves them: the project's own choice of a package wins, otherwise
/// the highest version asked for; each with the directory moc reads it from
/// (`[package] baseDir` of its mops.toml, `src` by default; a local package without one is
/// read from its own directory).
fn resolve(root: &Path, direct: Vec<(String, String)>) -> Result<Vec<Package>> {
    if !direct.is_empty() && !root.join(PACKAGES_DIR).is_dir() {
        bail!(
            "{} is missing: the packages of {CONFIG} are not installed (run `mops install` in {})",
            root.join(PACKAGES_DIR).display(),
            root.display()
        );
    }
    let mut chosen: BTreeMap<String, (String, bool)> = BTreeMap::new();
    for (name, spec) in direct {
        chosen.insert(name, (spec, true));
    }
    // Only the chosen version of a package is installed, so only its manifest is read;
    // until no choice changes.
    let mut expanded = std::collections::BTreeSet::new();
    while let Some((name, spec)) = chosen
        .iter()
        .map(|(n, (s, _))| (n.clone(), s.clone()))
        .find(|p| !expanded.contains(p))
    {
        expanded.insert((name.clone(), spec.clone()));
        let dir = package_dir(root, &name, &spec);
        if !dir.is_dir() {
            bail!(
                "package {name} {spec} is not installed: {} does not exist (run `mops install`)",
                dir.display()
            );
        }
        let manifest = dir.join(CONFIG);
        if !manifest.is_file() {
            continue;
        }
        for (dep, dep_spec) in read_toml(&manifest)?.dependencies {
            let take = match chosen.get(&dep) {
                None => true,
                Some((_, true)) => false,
                Some((have, false)) => newer(&dep_spec, have),
            };
            if take {
                chosen.insert(dep, (dep_spec, false));
            }
        }
    }
    chosen
        .into_iter()
        .map(|(name, (spec, _))| {
            let dir = package_dir(root, &name, &spec);
            let base = match dir.join(CONFIG).is_file() {
                true => read_toml(&dir.join(CONFIG))?
                    .package
                    .and_then(|p| p.base_dir)
                    .unwrap_or_else(|| "src".into()),
                false => "src".into(),
            };
            let mut src = dir.join(base);
            if is_path(&spec) && !src.is_dir() {
                src = dir.clone();
            }
            if !src.is_dir() {
                bail!(
                    "package {name} {spec} in {} has no source directory {}",
                    dir.display(),
                    src.display()
                );
            }
            Ok(Package {
                name,
                spec,
                dir: src,
            })
        })
        .collect()
}

/// Whether version `a` is above `b` (versions that are not semver compare as text).
fn newer(a: &str, b: &str) -> bool {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a > b,
        _ => a > b,
    }
}

/// Every bench file of the project as mops finds them (`**/bench?(mark)/**/*.bench.mo`, or
/// with a filter `**/bench?(mark)/**/*FILTER*.mo`, without case, outside node_modules,
/// .mops, .git and dist), sorted by path.
pub fn bench_files(root: &Path, filter: Option<&str>) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    walk(root, false, &mut |path, in_bench| {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let lower = name.to_lowercase();
        let matches = match filter {
            None => lower.ends_with(".bench.mo"),
            Some(f) => lower.ends_with(".mo") && lower.contains(&f.to_lowercase()),
        };
        if in_bench && matches {
            found.push(path.to_path_buf());
        }
    })?;
    found.sort();
    Ok(found)
}

/// Calls `f` on every file under `dir` (outside the ignored directories) with whether it
/// lies under a bench directory.
fn walk(dir: &Path, in_bench: bool, f: &mut dyn FnMut(&Path, bool)) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_lowercase();
        if entry.file_type()?.is_dir() {
            if !IGNORED_DIRS.contains(&name.as_str()) {
                walk(&path, in_bench || BENCH_DIRS.contains(&name.as_str()), f)?;
            }
        } else {
            f(&path, in_bench);
        }
    }
    Ok(())
}

/// Every Motoko source of the project outside the ignored directories, and of each package:
/// what a compile may read.
pub fn sources(project: &Project) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut take = |p: &Path, _| {
        if p.extension().is_some_and(|e| e == "mo") {
            files.push(p.to_path_buf());
        }
    };
    walk(&project.root, false, &mut take)?;
    for package in &project.packages {
        walk_all(&package.dir, &mut files)?;
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// Every `.mo` file under `dir`.
fn walk_all(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            walk_all(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "mo") {
            files.push(path);
        }
    }
    Ok(())
}
