//! The engine against numbers recorded on the real replica: canbench's own test suite
//! expects an empty benchmark to measure 207 instructions (200 for the second
//! `performance_counter` call plus the glue between the two reads) and a bench that grows
//! stable memory from zero by 123 pages to measure 307, in every canbench release
//! (canbench-bin/tests/expected, see shared/research/canbench.md §5.2).

use std::path::PathBuf;
use std::process::Command;

use candid::{CandidType, Decode, Deserialize};
use icbench::engine::cost::Limits;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::Engine;

#[derive(CandidType, Deserialize, Debug)]
struct Measurement {
    calls: u64,
    instructions: u64,
    heap_increase: u64,
    stable_memory_increase: u64,
}

#[derive(CandidType, Deserialize, Debug)]
struct BenchResult {
    total: Measurement,
    scopes: Vec<(String, Measurement)>,
}

/// canbench calls each bench as a query with the Candid encoding of one `null` argument.
const CANBENCH_ARG: &[u8] = b"DIDL\x00\x01\x7f";

fn fixture_wasm() -> Vec<u8> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target_dir = root.join("target/canbench-fixture");
    let target = "wasm32-unknown-unknown";
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(&root)
        .output();
    if let Ok(out) = installed {
        if !String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l == target)
        {
            let status = Command::new("rustup")
                .args(["target", "add", target])
                .current_dir(&root)
                .status()
                .unwrap();
            assert!(status.success(), "rustup target add {target} failed");
        }
    }
    let status = Command::new("cargo")
        .args(["build", "--release", "--target", target, "--manifest-path"])
        .arg(root.join("tests/canbench_fixture/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(&root)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building tests/canbench_fixture failed");
    std::fs::read(
        target_dir
            .join(target)
            .join("release/canbench_fixture.wasm"),
    )
    .expect("the fixture wasm exists")
}

fn run_bench(engine: &mut EmbeddedEngine, canister: candid::Principal, name: &str) -> BenchResult {
    let out = engine
        .query(canister, &format!("__canbench__{name}"), CANBENCH_ARG)
        .unwrap();
    let bytes = out
        .result
        .unwrap_or_else(|r| panic!("bench {name} was rejected: {r}"));
    Decode!(&bytes, BenchResult).unwrap()
}

#[test]
fn canbench_baselines_recorded_on_the_replica() {
    let wasm = fixture_wasm();
    let mut engine = EmbeddedEngine::new(Limits::BENCHMARKING);
    let (canister, install) = engine.install(&wasm, &[]).unwrap();
    install.result.unwrap();

    let empty = run_bench(&mut engine, canister, "empty");
    assert_eq!(empty.total.instructions, 207);
    assert_eq!(
        (
            empty.total.calls,
            empty.total.heap_increase,
            empty.total.stable_memory_increase
        ),
        (1, 0, 0)
    );
    assert!(empty.scopes.is_empty());

    let grow = run_bench(&mut engine, canister, "stable_memory_increase_from_zero");
    assert_eq!(grow.total.instructions, 307);
    assert_eq!(grow.total.stable_memory_increase, 123);
}
