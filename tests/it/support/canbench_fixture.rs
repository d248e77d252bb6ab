//! Builds tests/canbench_fixture (canbench-rs benches) for wasm32-unknown-unknown into
//! target/canbench-fixture, once per test process; cargo makes repeat builds a no-op.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

pub const TARGET: &str = "wasm32-unknown-unknown";

/// The path of the built fixture module.
pub fn fixture_wasm_path() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

pub fn fixture_wasm() -> Vec<u8> {
    std::fs::read(fixture_wasm_path()).expect("the fixture wasm exists")
}

fn build() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target_dir = root.join("target/canbench-fixture");
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(&root)
        .output();
    if let Ok(out) = installed {
        if !String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l == TARGET)
        {
            let status = Command::new("rustup")
                .args(["target", "add", TARGET])
                .current_dir(&root)
                .status()
                .unwrap();
            assert!(status.success(), "rustup target add {TARGET} failed");
        }
    }
    let status = Command::new("cargo")
        .args(["build", "--release", "--target", TARGET, "--manifest-path"])
        .arg(root.join("tests/canbench_fixture/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(&root)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building tests/canbench_fixture failed");
    target_dir
        .join(TARGET)
        .join("release/canbench_fixture.wasm")
}
