//! dfx.json and icp.yaml build and install the same canister: both parse, name paths that
//! exist, and their build commands really produce the IC module. Each runs the wasm32
//! build, which the rest of `cargo test` no longer needs (the committed module is used), so
//! they are ignored there and run by .ci/run (`cargo test --release --test it --
//! --ignored project_files::`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const WASM: &str = "target/canister/bench.wasm";
const DID: &str = "canisters/bench/bench.did";

/// Runs one build command as both tools do: through a shell, from the project root.
fn run_build_command(command: &str, envs: &[(&str, &Path)]) {
    let out = Command::new("bash")
        .args(["-c", command])
        .current_dir(root())
        .envs(envs.iter().map(|(k, v)| (*k, v.as_os_str())))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "`{command}` failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn assert_ic_module(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.len() > 1_000_000 && bytes.starts_with(b"\0asm"),
        "{} is not the bench module",
        path.display()
    );
}

#[test]
#[ignore = "runs the wasm32 canister build (about a minute on 2 cores); .ci/run runs it"]
fn dfx_json_names_the_canister_script_wasm_and_interface() {
    let text = std::fs::read_to_string(root().join("dfx.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("dfx.json parses");
    let bench = &json["canisters"]["bench"];
    assert_eq!(bench["type"], "custom");
    assert_eq!(bench["wasm"], WASM);
    assert_eq!(bench["candid"], DID);
    assert!(root().join(DID).is_file());
    let build = bench["build"].as_str().expect("a build command");
    let script = build.split_whitespace().next().unwrap();
    assert!(root().join(script).is_file(), "{script} exists");
    run_build_command(build, &[]);
    assert_ic_module(&root().join(WASM));
}

#[test]
#[ignore = "runs the wasm32 canister build (about a minute on 2 cores); .ci/run runs it"]
fn icp_yaml_builds_the_same_module_into_icp_wasm_output_path() {
    let text = std::fs::read_to_string(root().join("icp.yaml")).unwrap();
    let yaml: yaml_serde::Value = yaml_serde::from_str(&text).expect("icp.yaml parses");
    let canisters = yaml["canisters"]
        .as_sequence()
        .expect("canisters is a list");
    assert_eq!(canisters.len(), 1);
    let bench = &canisters[0];
    assert_eq!(bench["name"].as_str(), Some("bench"));
    assert_eq!(bench["init_args"].as_str(), Some("()"));
    let steps = bench["build"]["steps"].as_sequence().expect("build steps");
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0]["type"].as_str(), Some("script"));
    let commands: Vec<&str> = steps[0]["commands"]
        .as_sequence()
        .expect("script commands")
        .iter()
        .map(|c| c.as_str().expect("a command is a string"))
        .collect();
    assert!(
        commands
            .iter()
            .any(|c| c.contains("scripts/build-canister.sh")),
        "{commands:?}"
    );
    assert!(root().join("scripts/build-canister.sh").is_file());
    // icp-cli copies the module from ICP_WASM_OUTPUT_PATH after the steps.
    let out_dir = std::env::temp_dir().join(format!("icbench-icp-yaml-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let output = out_dir.join("bench.wasm");
    let _ = std::fs::remove_file(&output);
    for command in &commands {
        run_build_command(command, &[("ICP_WASM_OUTPUT_PATH", &output)]);
    }
    assert_ic_module(&output);
    assert_eq!(
        std::fs::read(&output).unwrap(),
        std::fs::read(root().join(WASM)).unwrap(),
        "icp-cli and dfx install the same module"
    );
}

/// dfx, icp-cli, the tests and a benchmark run may all build at once; every
/// concurrent build must succeed and leave the one reproducible module in place.
#[test]
#[ignore = "runs the wasm32 canister build (about a minute on 2 cores); .ci/run runs it"]
fn concurrent_builds_all_succeed_with_the_same_module() {
    let builds: Vec<_> = (0..4)
        .map(|_| {
            Command::new("bash")
                .arg(root().join("scripts/build-canister.sh"))
                .current_dir(root())
                .env("ICBENCH_BIN", crate::support::icbench_bin())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("bash runs")
        })
        .collect();
    let mut hashes = Vec::new();
    for build in builds {
        let out = build.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a concurrent build failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let sha = stdout
            .lines()
            .find_map(|l| l.strip_prefix("sha256: "))
            .unwrap_or_else(|| panic!("no sha256 line in:\n{stdout}"))
            .to_string();
        hashes.push(sha);
    }
    assert!(hashes.windows(2).all(|w| w[0] == w[1]), "{hashes:?}");
    assert_ic_module(&root().join(WASM));
}
