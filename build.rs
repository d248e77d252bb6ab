//! `cfg(pocket_ic_server)` when POCKET_IC_BIN is set, so the PocketIC contract tests run
//! then and are reported as ignored (with the reason) otherwise.
//!
//! `ICBENCH_SOURCE_FINGERPRINT`: the SHA-256 of all of src/, the engine's sources,
//! canisters/types and the dependency versions (Cargo.lock), taken as a canister module's
//! record takes its sources, for cached post-prefill states: a state is never
//! served to a differently built icbench even when the version did not change (the engine's
//! own fingerprint keys the compile cache: engine/build.rs).
//!
//! `$OUT_DIR/prebuilt_states.rs`: for every canister module the binary embeds (crate
//! icbench-canister, which lists them: canisters/prebuilt/modules.txt), whether it is of the
//! sources beside it: `current`, `stale` (a checkout whose sources of that module changed
//! since it was committed: icbench then builds it), or `packaged` (a published crate, which
//! has no canister sources).

use std::path::{Path, PathBuf};

#[path = "src/canister_sources.rs"]
#[allow(dead_code)]
mod canister_sources;

fn main() {
    println!("cargo::rerun-if-env-changed=POCKET_IC_BIN");
    println!("cargo::rustc-check-cfg=cfg(pocket_ic_server)");
    if std::env::var_os("POCKET_IC_BIN").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=pocket_ic_server");
    }

    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // Everything that decides a cached post-prefill state besides the engine: the suites'
    // prefill code, the canister client and the argument types it shares with the canister.
    // In a packaged crate bench-types and the engine are dependencies, pinned by Cargo.lock.
    let sources: Vec<&str> = ["src", "canisters/types", "engine/src", "Cargo.lock"]
        .into_iter()
        .filter(|rel| root.join(rel).exists())
        .collect();
    let fingerprint =
        canister_sources::sha256(&root, &sources, "").unwrap_or_else(|e| panic!("{e}"));
    println!("cargo::rustc-env=ICBENCH_SOURCE_FINGERPRINT={fingerprint}");
    for rel in sources {
        println!("cargo::rerun-if-changed={rel}");
    }
    commit(&root);
    prebuilt(&root);
}

fn prebuilt(root: &Path) {
    let list = root
        .join(icbench_canister::list::PREBUILT_DIR)
        .join(icbench_canister::list::FILE);
    // A packaged crate has no list (a watched file that does not exist would rerun this
    // script on every build): its modules come from the icbench-canister it is built with.
    let checkout = list.is_file();
    if checkout {
        println!("cargo::rerun-if-changed={}", list.display());
    }
    let mut states = String::from("[\n");
    for m in &icbench_canister::MODULES {
        let state = if !checkout {
            "packaged"
        } else {
            for rel in m.sources {
                println!("cargo::rerun-if-changed={rel}");
            }
            println!("cargo::rerun-if-changed={}", m.prebuilt_sources);
            let sources = canister_sources::sha256(root, m.sources, m.recipe)
                .unwrap_or_else(|e| panic!("module {}: {e}", m.name));
            if canister_sources::record_field(m.record, "sources-sha256") == Some(sources.as_str())
            {
                "current"
            } else {
                println!(
                    "cargo::warning={} is not of the current sources of module {}: icbench will build it \
                     (scripts/update-prebuilt-canister.sh commits new ones)",
                    m.prebuilt_sources, m.name
                );
                "stale"
            }
        };
        states.push_str(&format!("    ({:?}, {state:?}),\n", m.name));
    }
    states.push_str("]\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("prebuilt_states.rs"), states).expect("OUT_DIR is writable");
}

/// `ICBENCH_COMMIT`: the commit of the checkout being built (12 hex digits, `-dirty` after
/// it when tracked files differ from it), or `unknown` outside a git checkout (a packaged
/// crate). Rebuilt when HEAD or the branch it names moves (and with every change to src/,
/// as the fingerprints above).
fn commit(root: &Path) {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) if !hash.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{hash}-dirty")
            } else {
                hash
            }
        }
        // A packaged crate: cargo recorded the commit it was packaged from.
        _ => packaged_commit(root).unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo::rustc-env=ICBENCH_COMMIT={commit}");
    // `--git-path`, not the git directory joined with the ref: in a linked worktree HEAD is
    // the worktree's own but branches live in the common directory. A watched file that does
    // not exist reruns this script on every build (and recompiles the crate): a packed branch
    // ref is watched through packed-refs and the folder its loose file will be written to.
    let git_path = |rel: &str| git(&["rev-parse", "--git-path", rel]).map(|p| root.join(p));
    let mut watched: Vec<PathBuf> = git_path("HEAD").into_iter().collect();
    let branch = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git_path(&r));
    if let Some(branch) = branch {
        if branch.is_file() {
            watched.push(branch);
        } else {
            watched.extend(git_path("packed-refs"));
            watched.extend(branch.parent().map(Path::to_path_buf));
        }
    }
    watched.retain(|p| p.exists());
    for path in watched {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}

/// The commit in `.cargo_vcs_info.json`, which `cargo package` writes into a crate
/// (`"sha1": "..."`, and `"dirty": true` when packaged from a modified tree).
fn packaged_commit(root: &Path) -> Option<String> {
    let info = std::fs::read_to_string(root.join(".cargo_vcs_info.json")).ok()?;
    let sha1 = info.split("\"sha1\":").nth(1)?.split('"').nth(1)?;
    let short = sha1.get(..12)?;
    let dirty = info.contains("\"dirty\": true");
    Some(if dirty {
        format!("{short}-dirty")
    } else {
        short.to_string()
    })
}
