//! `ICBENCH_ENGINE_FINGERPRINT`: a SHA-256 of everything in this crate that shapes a compiled
//! module or what is computed at load (src/: instrumentation, costs, wasmtime's
//! configuration) and of the dependency versions (the workspace's Cargo.lock, in a
//! checkout), so the compile cache never serves an entry made by a differently built engine
//! even when the version did not change.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut hash = Sha256::new();
    for file in &files {
        let rel = file.strip_prefix(&root).expect("under the crate");
        add(&mut hash, &rel.to_string_lossy().replace('\\', "/"), file);
    }
    // A packaged crate has no lock file of its own: its dependencies' versions are then
    // those of the icbench it is built with, which keys its compile cache with its own.
    let lock = root.join("../Cargo.lock");
    if lock.is_file() {
        add(&mut hash, "Cargo.lock", &lock);
    }
    println!("cargo::rerun-if-changed=src");
    println!(
        "cargo::rustc-env=ICBENCH_ENGINE_FINGERPRINT={:x}",
        hash.finalize()
    );
}

/// A file's name, length and contents, watched.
fn add(hash: &mut Sha256, name: &str, path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    hash.update(name.as_bytes());
    hash.update((bytes.len() as u64).to_le_bytes());
    hash.update(&bytes);
    println!("cargo::rerun-if-changed={}", path.display());
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a readable directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
