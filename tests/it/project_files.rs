//! dfx.json and icp.yaml build and install the same canisters (the bench canister, the
//! ic-sqlite-vfs canister and the Motoko canister): both parse, name paths that exist, and their build commands
//! really produce each IC module, the committed one. Each runs the wasm32
//! build, which the rest of `cargo test` no longer needs (the committed module is used), so
//! they are ignored there and run by .ci/run (`cargo test --release --test it --
//! --ignored project_files::`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The canisters both files list, in their order: name, built module, interface, and the
/// committed module the build must reproduce.
const CANISTERS: [(&str, &str, &str, &str); 3] = [
    (
        "bench",
        "target/canister/bench.wasm",
        "canisters/bench/bench.did",
        "canisters/prebuilt/bench.wasm",
    ),
    (
        "sqlite-vfs",
        "target/canister/sqlite-vfs.wasm",
        "canisters/sqlite-vfs/sqlite-vfs.did",
        "canisters/prebuilt/sqlite-vfs.wasm",
    ),
    (
        "motoko",
        "target/canister/motoko.wasm",
        "canisters/motoko/motoko.did",
        "canisters/prebuilt/motoko.wasm",
    ),
];
const WASM: &str = CANISTERS[0].1;

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

/// The module at `path` is the committed one (`committed`, relative to the root).
fn assert_ic_module(path: &Path, committed: &str) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes == std::fs::read(root().join(committed)).unwrap(),
        "{} is not {committed}",
        path.display()
    );
}

#[test]
#[ignore = "runs the wasm32 canister builds (minutes on 2 cores); .ci/run runs it"]
fn dfx_json_names_the_canister_script_wasm_and_interface() {
    let text = std::fs::read_to_string(root().join("dfx.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("dfx.json parses");
    let listed: Vec<&str> = json["canisters"]
        .as_object()
        .expect("canisters is a map")
        .keys()
        .map(String::as_str)
        .collect();
    let mut names: Vec<&str> = CANISTERS.iter().map(|c| c.0).collect();
    names.sort_unstable();
    assert_eq!(listed, names);
    for (name, wasm, did, committed) in CANISTERS {
        let canister = &json["canisters"][name];
        assert_eq!(canister["type"], "custom", "{name}");
        assert_eq!(canister["wasm"], wasm, "{name}");
        assert_eq!(canister["candid"], did, "{name}");
        assert!(root().join(did).is_file());
        let build = canister["build"].as_str().expect("a build command");
        let script = build.split_whitespace().next().unwrap();
        assert!(root().join(script).is_file(), "{script} exists");
        run_build_command(build, &[]);
        assert_ic_module(&root().join(wasm), committed);
    }
}

#[test]
#[ignore = "runs the wasm32 canister builds (minutes on 2 cores); .ci/run runs it"]
fn icp_yaml_builds_the_same_module_into_icp_wasm_output_path() {
    let text = std::fs::read_to_string(root().join("icp.yaml")).unwrap();
    let yaml: yaml_serde::Value = yaml_serde::from_str(&text).expect("icp.yaml parses");
    let canisters = yaml["canisters"]
        .as_sequence()
        .expect("canisters is a list");
    assert_eq!(canisters.len(), CANISTERS.len());
    for (canister, (name, wasm, _, committed)) in canisters.iter().zip(CANISTERS) {
        assert_eq!(canister["name"].as_str(), Some(name));
        assert_eq!(canister["init_args"].as_str(), Some("()"));
        let steps = canister["build"]["steps"]
            .as_sequence()
            .expect("build steps");
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
        let out_dir =
            std::env::temp_dir().join(format!("icbench-icp-yaml-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&out_dir).unwrap();
        let output = out_dir.join(format!("{name}.wasm"));
        let _ = std::fs::remove_file(&output);
        for command in &commands {
            run_build_command(command, &[("ICP_WASM_OUTPUT_PATH", &output)]);
        }
        assert_ic_module(&output, committed);
        assert_eq!(
            std::fs::read(&output).unwrap(),
            std::fs::read(root().join(wasm)).unwrap(),
            "icp-cli and dfx install the same module"
        );
    }
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
    assert_ic_module(&root().join(WASM), CANISTERS[0].3);
}
