//! The SHA-256 over what a canister module is built from (its sources and its build as
//! canisters/prebuilt/modules.txt gives them) that its record in canisters/prebuilt holds.
//! Compiled twice: into the library (the tests and `icbench update-prebuilt-canister`) and
//! into build.rs (`#[path]`), which checks that the modules the binary embeds are of the
//! checkout's current sources; so it uses std and sha2 only.

use std::path::Path;

use sha2::{Digest, Sha256};

/// Directory entries the source walk skips: build output, the Motoko module's installed
/// compiler (npm's node_modules: its package-lock.json is the source) and dotfiles (editor
/// and VCS files).
pub fn skipped(name: &std::ffi::OsStr) -> bool {
    name == "target" || name == "node_modules" || name.to_string_lossy().starts_with('.')
}

/// Every source file under `rel` (a file or a directory), as paths relative to `root` with
/// `/` separators, so the list is the same on every machine.
fn source_files(root: &Path, rel: &str, out: &mut Vec<String>) -> Result<(), String> {
    let path = root.join(rel);
    let meta = std::fs::metadata(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    if meta.is_file() {
        out.push(rel.to_string());
        return Ok(());
    }
    let entries =
        std::fs::read_dir(&path).map_err(|e| format!("listing {}: {e}", path.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("listing {}: {e}", path.display()))?;
        let name = entry.file_name();
        if skipped(&name) {
            continue;
        }
        let name = name
            .to_str()
            .ok_or_else(|| format!("{}: a file name that is not UTF-8", path.display()))?;
        source_files(root, &format!("{rel}/{name}"), out)?;
    }
    Ok(())
}

/// SHA-256 over a module's build line (`recipe`) and its `sources` (each file's relative
/// path, length and bytes, in path order), hex: equal hashes mean the same module, since the
/// build is reproducible.
pub fn sha256(root: &Path, sources: &[&str], recipe: &str) -> Result<String, String> {
    let mut files = Vec::new();
    for rel in sources {
        source_files(root, rel, &mut files)?;
    }
    files.sort();
    let mut h = Sha256::new();
    // The build line first, told apart from any file by the NUL no path holds.
    h.update(b"\0build ");
    h.update(recipe.as_bytes());
    h.update([0]);
    for rel in &files {
        let bytes = std::fs::read(root.join(rel)).map_err(|e| format!("reading {rel}: {e}"))?;
        h.update(rel.as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(hex(&h.finalize()))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of `key` (e.g. `sources-sha256`) in a module's record (`bench.sources`).
pub fn record_field<'r>(record: &'r str, key: &str) -> Option<&'r str> {
    record
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
}
