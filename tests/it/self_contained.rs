//! The release binary needs nothing of the tree it was built in: copied alone into an empty
//! directory, run with HOME and the working directory elsewhere and no cargo on PATH, it
//! runs a small default run and the canbench fixture with the results of the binary run
//! from the checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{icbench_bin, scratch_dir, test_cache_dir};

/// A small default run and the canbench fixture, in `work`, by `bin` with `env` as the
/// whole environment; returns the files whose bytes must not depend on where icbench runs.
fn run_both(bin: &Path, work: &Path, env: &[(&str, &Path)]) -> Vec<(String, Vec<u8>)> {
    let fixture = work.join("canbench_fixture.wasm");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/canbench_fixture/canbench_fixture.wasm"),
        &fixture,
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = Command::new(bin);
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir(work);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.args(args).output().expect("icbench runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "icbench {args:?}: {stderr}");
        stderr
    };
    let stderr = run(&["--rows", "2000", "--batches", "1", "--out", "run"]);
    assert!(
        stderr.contains("bench canister: the module built into icbench (current)\n"),
        "{stderr}"
    );
    run(&[
        "canbench",
        "--wasm",
        "canbench_fixture.wasm",
        "--hide-results",
        "--persist",
        "--results",
        "canbench_results.yml",
        "--csv",
    ]);
    [
        "run/results.csv",
        "canbench_results.yml",
        "canbench_results.csv",
    ]
    .iter()
    .map(|f| {
        let bytes = std::fs::read(work.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        (f.to_string(), bytes)
    })
    .collect()
}

#[test]
fn a_copied_binary_runs_with_no_file_of_its_checkout() {
    let root = scratch_dir("self-contained");
    let dir = |name: &str| -> PathBuf {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let (bin_dir, home, away, here) = (dir("bin"), dir("home"), dir("away"), dir("checkout"));
    let copied = bin_dir.join("icbench");
    std::fs::copy(icbench_bin(), &copied).unwrap();
    let cargo = Command::new("sh")
        .args(["-c", "command -v cargo"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(!cargo.status.success(), "cargo is on the test's PATH");

    let alone = run_both(&copied, &away, &[("HOME", &home)]);
    // The binary where cargo built it, with the same kind of environment, and the compile
    // cache the other tests' runs share: the copied binary alone compiles from nothing, and
    // the reference need not compile the same modules once more (a cache hit gives the
    // results of a miss: compile_cache::).
    let beside = run_both(
        icbench_bin(),
        &here,
        &[
            ("HOME", &dir("home-2")),
            (icbench::engine::disk_cache::ENV, test_cache_dir()),
        ],
    );
    for ((name, a), (_, b)) in alone.iter().zip(&beside) {
        assert!(
            a == b,
            "{name} differs between the copied binary and the checkout's"
        );
    }
    // Nothing was written next to the copied binary.
    let beside_bin: Vec<_> = std::fs::read_dir(&bin_dir).unwrap().flatten().collect();
    assert_eq!(beside_bin.len(), 1);
    std::fs::remove_dir_all(&root).unwrap();
}
