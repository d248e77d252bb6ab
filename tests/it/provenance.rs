//! What a run ran, in its results.json: each module's SHA-256 (a committed module named by
//! its file) and the machine's facts; `icbench compare` says, without failing, which module
//! and which facts two runs differ in; a results.json without the record still reads.

use std::path::{Path, PathBuf};

use icbench::report::{self, Machine, ModuleRun, Provenance, PROVENANCE};
use sha2::{Digest, Sha256};

use crate::support::{run_icbench, run_icbench_ok, scratch_dir, TINY_RUN};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_run_records_the_committed_module_it_ran_and_this_machine() {
    let committed = "canisters/prebuilt/bench.wasm";
    let wasm = root().join(committed);
    let out = scratch_dir("provenance-run");
    let (wasm_arg, out_arg) = (wasm.to_str().unwrap(), out.to_str().unwrap());
    run_icbench_ok(
        &[
            &["--quiet", "--wasm", wasm_arg, "--out", out_arg][..],
            &TINY_RUN,
        ]
        .concat(),
    );
    let json = std::fs::read_to_string(out.join("results.json")).unwrap();
    let provenance = report::from_json(&json).unwrap().provenance().unwrap();
    let bench = ModuleRun {
        name: "bench".into(),
        sha256: hex::encode(Sha256::digest(std::fs::read(&wasm).unwrap())),
        // wasi2ic leaves no producers section, and its record names no compiler.
        compiler: None,
        committed: Some(committed.into()),
    };
    assert_eq!(provenance.modules, [bench]);
    // The same process facts as the run's child: the heap writes as this kernel offers them.
    assert_eq!(provenance.machines, [Machine::this(true)]);
    std::fs::remove_dir_all(&out).unwrap();
}

/// The comment fixture's base run (a results.json of a version before the record) with
/// `provenance` set, unless None, written to `dir/name.json`.
fn results_with(dir: &Path, name: &str, provenance: Option<(&str, &str)>) -> PathBuf {
    let base = root().join("tests/comment_fixture/suites/base/results.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(base).unwrap()).unwrap();
    assert!(json.get(PROVENANCE).is_none());
    if let Some((sha256, kernel)) = provenance {
        json[PROVENANCE] = serde_json::json!({
            "modules": [{"name": "bench", "sha256": sha256}],
            "machines": [{"cpu": "AMD EPYC 9B14", "cpu_features": "sse2 avx2 erms",
                          "kernel": kernel, "transparent_hugepages": "madvise",
                          "heap_writes": "kernel write log"}]
        });
    }
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    path
}

#[test]
fn compare_says_which_module_and_which_machine_facts_differ_and_passes() {
    let dir = scratch_dir("provenance-compare");
    let old = results_with(&dir, "old", None);
    let base = results_with(&dir, "base", Some(("1be8bf44f698", "6.1.0")));
    let same = results_with(&dir, "same", Some(("1be8bf44f698", "6.1.0")));
    let new = results_with(&dir, "new", Some(("2f1d9b183e89", "6.18.44")));
    let compare = |a: &Path, b: &Path, format: &str| {
        let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
        let (code, stdout, stderr) = run_icbench(&["compare", a, b, "--format", format]);
        assert_eq!(code, 0, "{stderr}");
        stdout
    };
    let said = |stdout: &str| -> Vec<String> {
        let lines = stdout
            .lines()
            .filter(|l| l.starts_with("The runs ran otherwise"));
        lines.map(String::from).collect()
    };
    assert_eq!(
        said(&compare(&base, &new, "text")),
        [
            "The runs ran otherwise: module bench 1be8bf44 (base) against 2f1d9b18 (new); \
          kernel 6.1.0 (base) against 6.18.44 (new)."
        ]
    );
    assert_eq!(said(&compare(&base, &same, "text")), Vec::<String>::new());
    assert_eq!(said(&compare(&old, &old, "text")), Vec::<String>::new());
    assert_eq!(
        said(&compare(&old, &new, "text")),
        [
            "The runs ran otherwise: the base run does not record its modules and machine \
          (results.json of an older icbench)."
        ]
    );
    // The comment's provenance paragraph: what the new run ran, then how it differs.
    let comment = compare(&base, &new, "markdown");
    let machine = "AMD EPYC 9B14 (sse2 avx2 erms), kernel 6.18.44, transparent huge pages \
                   madvise, heap writes found by kernel write log";
    let paragraph = format!(
        "Module: bench 2f1d9b18. Machine: {machine}. The runs ran otherwise: module bench \
         1be8bf44 (base) against 2f1d9b18 (new); kernel 6.1.0 (base) against 6.18.44 (new)."
    );
    assert!(
        comment.contains(&format!("\n\n{paragraph}\n\n")),
        "{comment}"
    );
    let recorded: Provenance = serde_json::from_value(
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&new).unwrap()).unwrap()
            [PROVENANCE]
            .clone(),
    )
    .unwrap();
    assert_eq!(
        recorded.line(),
        format!("Module: bench 2f1d9b18. Machine: {machine}.")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
