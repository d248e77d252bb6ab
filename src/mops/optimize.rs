//! The wasm-opt pass mops.toml's `[optimize]` asks for, as mops 3.x runs it on each bench
//! canister moc built (caffeinelabs/mops cli/helpers/optimize-wasm.ts), with wasm-opt found
//! offline as moc is: the `[toolchain] wasm-opt` pin as a path, in mops' toolchain cache, on
//! PATH, or as the npm package `binaryen` of that version in a `node_modules`, run with node.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::project::{is_path, Optimize, Project};
use super::toolchain::{mops_cache, on_path};

/// A wasm-opt to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WasmOpt {
    Native(PathBuf),
    /// The npm package `binaryen`'s directory, its `bin/wasm-opt` run with node.
    Npm {
        package: PathBuf,
        version: String,
    },
}

/// The pass to run: the settings and the wasm-opt that runs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Optimizer {
    pub optimize: Optimize,
    pub pin: String,
    pub wasm_opt: WasmOpt,
}

impl Optimizer {
    /// The pass `project` asks for, with the wasm-opt its pin names found offline; what is
    /// missing is one line naming it (mops' own wording where it has one).
    pub fn find(project: &Project, optimize: &Optimize) -> Result<Optimizer> {
        let Some(pin) = project.toolchain.wasm_opt.clone() else {
            bail!("[optimize] is enabled but wasm-opt is not pinned in [toolchain]: pin one in mops.toml ([toolchain] wasm-opt = \"131\"), or pass --no-optimize");
        };
        let wasm_opt = find_wasm_opt(project, &pin)?;
        Ok(Optimizer {
            optimize: optimize.clone(),
            pin,
            wasm_opt,
        })
    }

    /// As mops' verbose line says it, with where wasm-opt comes from.
    pub fn describe(&self) -> String {
        let from = match &self.wasm_opt {
            WasmOpt::Native(path) => path.display().to_string(),
            WasmOpt::Npm { package, version } => {
                format!(
                    "npm binaryen@{version} ({}), run with node",
                    package.display()
                )
            }
        };
        format!(
            "wasm-opt {} {} ({from})",
            self.pin,
            self.optimize.flags().join(" ")
        )
    }

    /// `wasm` optimized; `name` (the bench file) for the error, which keeps wasm-opt's reason.
    pub fn run(&self, wasm: &[u8], name: &str) -> Result<Vec<u8>> {
        let (work, _guard) = crate::interrupt::TempGuard::dir()
            .context("making a temporary directory for wasm-opt")?;
        let (input, output) = (work.path().join("in.wasm"), work.path().join("out.wasm"));
        std::fs::write(&input, wasm)?;
        let mut cmd = match &self.wasm_opt {
            WasmOpt::Native(path) => Command::new(path),
            WasmOpt::Npm { package, .. } => {
                let mut node = Command::new("node");
                node.arg(package.join("bin/wasm-opt"));
                node
            }
        };
        cmd.args(self.optimize.flags())
            .arg(&input)
            .arg("-o")
            .arg(&output);
        let out = crate::interrupt::output(&mut cmd).context("running wasm-opt")?;
        if !out.status.success() {
            let reason = String::from_utf8_lossy(&out.stderr);
            let reason = reason
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            bail!("failed to optimize the bench canister of {name} with wasm-opt: {reason}");
        }
        std::fs::read(&output).context("reading wasm-opt's module")
    }
}

/// wasm-opt `pin` (a release number such as "131", or a path): the path; mops' toolchain
/// cache (`wasm-opt/<pin>/bin/wasm-opt`); a `wasm-opt` on PATH that says it is that version;
/// the npm package `binaryen` of that major version in a `node_modules` of the project or
/// above it.
fn find_wasm_opt(project: &Project, pin: &str) -> Result<WasmOpt> {
    if is_path(pin) {
        let path = project.root.join(pin);
        return match path.is_file() {
            true => Ok(WasmOpt::Native(path)),
            false => bail!(
                "[toolchain] wasm-opt {pin} does not exist ({})",
                path.display()
            ),
        };
    }
    if let Some(cached) = mops_cache()
        .map(|c| c.join("wasm-opt").join(pin).join("bin/wasm-opt"))
        .filter(|p| p.is_file())
    {
        return Ok(WasmOpt::Native(cached));
    }
    if let Some(path) = on_path("wasm-opt").filter(|p| version_of(p) == Some(pin.into())) {
        return Ok(WasmOpt::Native(path));
    }
    if let Some(found) = project
        .root
        .ancestors()
        .find_map(|d| binaryen(&d.join("node_modules/binaryen"), pin))
    {
        return Ok(found);
    }
    bail!("mops.toml pins wasm-opt {pin}, which is not here: not in mops' toolchain cache, no `wasm-opt` {pin} on PATH, and no npm package binaryen {pin} in a node_modules (`npm install binaryen@{pin}`), or pass --no-optimize")
}

/// The release a native wasm-opt reports (`wasm-opt version 131 (version_131)`).
fn version_of(path: &Path) -> Option<String> {
    let out = Command::new(path).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace().skip_while(|w| *w != "version");
    words.nth(1).map(str::to_string)
}

/// The npm package `binaryen` in `dir`, if it is there and of release `pin` (its major
/// version: binaryen@131.0.0 is version_131).
fn binaryen(dir: &Path, pin: &str) -> Option<WasmOpt> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let version = json["version"].as_str()?.to_string();
    let major = version.split('.').next()?;
    (json["name"] == "binaryen" && major == pin && dir.join("bin/wasm-opt").is_file()).then(|| {
        WasmOpt::Npm {
            package: dir.to_path_buf(),
            version,
        }
    })
}
