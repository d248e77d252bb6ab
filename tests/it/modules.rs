//! canisters/prebuilt/modules.txt, the one list of canister modules: its readers (the
//! parser of the crate icbench-canister, whose build script embeds the modules and whose
//! `MODULES` icbench's build.rs and library use; scripts/build-canister.sh's own reading)
//! agree, bad lists are refused in one line, and the build script refuses any committed
//! module whose bytes are not the ones its record names.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use icbench::bench_canister::Module;
use icbench_canister::list;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn committed_list() -> String {
    std::fs::read_to_string(root().join("canisters/prebuilt/modules.txt")).unwrap()
}

/// `scripts/build-canister.sh --list` of the script under `root`, which reads the list
/// beside it.
fn script_list(root: &Path) -> Vec<String> {
    let out = crate::support::output_ok(
        Command::new("bash")
            .arg(root.join("scripts/build-canister.sh"))
            .arg("--list"),
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_script_the_parser_and_the_library_read_the_same_list() {
    let text = committed_list();
    let parsed = list::parse(&text).unwrap();
    let lines: Vec<String> = parsed.iter().map(list::Entry::list_line).collect();
    assert_eq!(script_list(&root()), lines);
    // The library's modules (through the embedding crate's MODULES) are the parser's.
    assert_eq!(Module::ALL.len(), parsed.len());
    for (m, e) in Module::ALL.iter().zip(&parsed) {
        let l = m.listing();
        assert_eq!(m.name, e.name);
        assert_eq!(m.prebuilt_wasm, e.prebuilt_wasm());
        assert_eq!(m.prebuilt_sources, e.prebuilt_record());
        assert_eq!(m.built, e.built());
        assert_eq!(l.recipe, e.recipe());
        assert_eq!(l.sources, e.sources.as_slice());
        assert_eq!(l.requires, e.requires.as_slice());
        assert_eq!(
            (l.crate_dir, l.target, l.features, l.rewire_wasi, l.did),
            (
                e.crate_dir,
                e.target,
                e.features.as_slice(),
                e.rewire_wasi,
                e.did
            )
        );
    }
    assert_eq!(
        lines,
        [
            "bench canisters/bench wasm32-wasip1 - wasi canisters/bench/bench.did \
             canisters/prebuilt/bench.wasm target/canister/bench.wasm",
            "tune canisters/bench wasm32-wasip1 tune wasi canisters/bench/bench.did \
             canisters/prebuilt/bench-tune.wasm target/canister/bench-tune.wasm",
            "sqlite-vfs canisters/sqlite-vfs wasm32-unknown-unknown - none \
             canisters/sqlite-vfs/sqlite-vfs.did canisters/prebuilt/sqlite-vfs.wasm \
             target/canister/sqlite-vfs.wasm",
            "motoko canisters/motoko moc - none canisters/motoko/motoko.did \
             canisters/prebuilt/motoko.wasm target/canister/motoko.wasm",
            "motoko-classic canisters/motoko moc legacy-persistence none \
             canisters/motoko/motoko.did canisters/prebuilt/motoko-classic.wasm \
             target/canister/motoko-classic.wasm",
        ]
    );
    // The stores' methods come from the store table, not the list.
    assert_eq!(
        Module::TUNE.listing().requires,
        ["canister_update set_payload_size", "canister_query stats"]
    );
}

/// The next module (an ic-sqlite-vfs canister: a crate and workspace of its own, built for
/// wasm32-unknown-unknown with no WASI rewiring, its own did) is one block, read alike by
/// the parser and the script.
const WITH_A_MODULE_FOR_ANOTHER_TARGET: &str = "\
[bench]
crate     canisters/bench
target    wasm32-wasip1
features  -
rewire    wasi
did       canisters/bench/bench.did
sources   canisters/Cargo.toml canisters/Cargo.lock canisters/bench canisters/types scripts/build-canister.sh scripts/wasi2ic-post rust-toolchain.toml
requires  update:set_payload_size query:stats
wasm      bench.wasm

  # indented comments and blank lines are skipped

[sqlite-vfs]
crate     canisters/sqlite-vfs
target    wasm32-unknown-unknown
features  a,b
rewire    none
did       canisters/sqlite-vfs/sqlite-vfs.did
sources   canisters/sqlite-vfs scripts/build-canister.sh scripts/wasi2ic-post rust-toolchain.toml
requires  -
wasm      sqlite-vfs.wasm
";

#[test]
fn a_module_of_another_crate_and_target_without_rewiring_is_one_block() {
    let parsed = list::parse(WITH_A_MODULE_FOR_ANOTHER_TARGET).unwrap();
    let vfs = &parsed[1];
    assert_eq!(
        vfs,
        &list::Entry {
            name: "sqlite-vfs",
            crate_dir: "canisters/sqlite-vfs",
            target: "wasm32-unknown-unknown",
            features: vec!["a", "b"],
            rewire_wasi: false,
            did: Some("canisters/sqlite-vfs/sqlite-vfs.did"),
            sources: vec![
                "canisters/sqlite-vfs",
                "scripts/build-canister.sh",
                "scripts/wasi2ic-post",
                "rust-toolchain.toml"
            ],
            requires: vec![],
            wasm: "sqlite-vfs.wasm",
        }
    );
    assert_eq!(
        vfs.recipe(),
        "canisters/sqlite-vfs wasm32-unknown-unknown a,b none canisters/sqlite-vfs/sqlite-vfs.did"
    );
    assert_eq!(vfs.record(), "sqlite-vfs.sources");
    assert_eq!(
        parsed[0].requires,
        ["canister_update set_payload_size", "canister_query stats"]
    );
    // The script reads it the same way (a copy of the script beside this list).
    let dir = crate::support::scratch_dir("modules-script");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::create_dir_all(dir.join("canisters/prebuilt")).unwrap();
    std::fs::copy(
        root().join("scripts/build-canister.sh"),
        dir.join("scripts/build-canister.sh"),
    )
    .unwrap();
    std::fs::write(
        dir.join("canisters/prebuilt/modules.txt"),
        WITH_A_MODULE_FOR_ANOTHER_TARGET,
    )
    .unwrap();
    let lines: Vec<String> = parsed.iter().map(list::Entry::list_line).collect();
    assert_eq!(script_list(&dir), lines);
    // An unknown name is refused with the names the list has.
    let stderr = crate::support::stderr_of_exit(
        Command::new("bash")
            .arg(dir.join("scripts/build-canister.sh"))
            .arg("nope"),
        2,
    );
    assert_eq!(
        stderr,
        "build-canister: unknown module \"nope\"; accepted: bench sqlite-vfs (or none: the default module, bench)\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_list_is_refused_in_one_line_naming_where() {
    let good = WITH_A_MODULE_FOR_ANOTHER_TARGET;
    let cases: [(String, &str); 16] = [
        (String::new(), "modules.txt lists no module"),
        (
            "crate x\n".to_string(),
            "modules.txt line 1: `crate x` comes before any `[name]`",
        ),
        (
            good.replace("[sqlite-vfs]", "[bench]"),
            "modules.txt line 13: module `bench` is listed twice",
        ),
        (
            good.replace("[sqlite-vfs]", "[Sqlite]"),
            "modules.txt line 13: module name `Sqlite` is not lowercase letters, digits and -",
        ),
        (
            good.replace("[sqlite-vfs]", "[sqlite-vfs"),
            "modules.txt line 13: `[sqlite-vfs` is not `[name]`",
        ),
        (
            good.replace("features  a,b", "feature  a"),
            "modules.txt line 16: unknown key `feature`; the keys are crate, target, features, rewire, did, wasm, sources, requires",
        ),
        (
            good.replace("features  a,b", "features  a,,b"),
            "modules.txt line 13: module `sqlite-vfs`: features `a,,b` has an empty name",
        ),
        (
            good.replace("target    wasm32-wasip1\n", ""),
            "modules.txt line 1: module `bench` has no `target` line",
        ),
        (
            good.replace("wasm      bench.wasm", "wasm      bench.wasm\nwasm      b.wasm"),
            "modules.txt line 10: `wasm` is given twice",
        ),
        (
            good.replace("rewire    none", "rewire    wasip1"),
            "modules.txt line 13: module `sqlite-vfs`: rewire `wasip1` is neither `wasi` nor `none`",
        ),
        (
            good.replace("requires  -", "requires  composite_query:x"),
            "modules.txt line 13: module `sqlite-vfs`: requires `composite_query:x` is not `update:NAME` or `query:NAME`",
        ),
        (
            good.replace("sqlite-vfs.wasm", "bench.wasm"),
            "modules.txt: two modules are committed as `bench.wasm`",
        ),
        (
            good.replace("canisters/sqlite-vfs scripts", "canisters/sqlite scripts"),
            "modules.txt line 13: module `sqlite-vfs`: its sources do not cover canisters/sqlite-vfs, which its build reads",
        ),
        // A Motoko module's features are moc's options; it embeds its did itself.
        (
            good.replace("wasm32-unknown-unknown", "moc"),
            "modules.txt line 13: module `sqlite-vfs`: a Motoko module's features are moc's options (legacy-persistence), not `a`",
        ),
        (
            good.replace("wasm32-unknown-unknown\nfeatures  a,b\nrewire    none", "moc\nfeatures  legacy-persistence\nrewire    wasi"),
            "modules.txt line 13: module `sqlite-vfs`: a Motoko module (target moc) has rewire none and a did (moc's interface of it)",
        ),
        (
            good.replace(" scripts/wasi2ic-post rust-toolchain.toml\nrequires  -", " rust-toolchain.toml\nrequires  -"),
            "modules.txt line 13: module `sqlite-vfs`: its sources do not cover scripts/wasi2ic-post, which its build reads",
        ),
    ];
    for (text, expected) in &cases {
        assert_eq!(list::parse(text).unwrap_err(), *expected);
    }
    // Without a did and without rewiring, the build runs no converter: it is no source.
    let plain = good
        .replace(
            "did       canisters/sqlite-vfs/sqlite-vfs.did",
            "did       -",
        )
        .replace(
            " scripts/wasi2ic-post rust-toolchain.toml\nrequires  -",
            " rust-toolchain.toml\nrequires  -",
        );
    let parsed = list::parse(&plain).unwrap();
    assert!(!parsed[1].converted());
    for (path, error) in [
        (
            "/abs",
            "`crate` /abs is not a plain path relative to the project root",
        ),
        (
            "a/../b",
            "`crate` a/../b is not a plain path relative to the project root",
        ),
        (
            "a/",
            "`crate` a/ is not a plain path relative to the project root",
        ),
    ] {
        let text = good.replace(
            "crate     canisters/sqlite-vfs",
            &format!("crate     {path}"),
        );
        assert_eq!(
            list::parse(&text).unwrap_err(),
            format!("modules.txt line 13: module `sqlite-vfs`: {error}")
        );
    }
}

/// Every committed module is the one of the checkout's sources, and the binary embeds
/// those very bytes: after a change to what a module is built from, this fails until
/// scripts/update-prebuilt-canister.sh has rebuilt and recorded it.
#[test]
fn every_committed_module_is_of_the_current_sources_and_embedded() {
    for m in Module::ALL {
        let found = m
            .prebuilt_for_current_sources(&root())
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert!(
            found.as_deref() == Some(m.listing().wasm),
            "{} is not the module of the current sources of module {}; run \
             scripts/update-prebuilt-canister.sh and commit canisters/prebuilt",
            m.prebuilt_wasm,
            m.name
        );
        assert_eq!(m.embedded_state(), "current", "{}", m.name);
        assert_eq!(m.embedded(), Some(m.listing().wasm), "{}", m.name);
    }
}

/// The build script of icbench-canister as cargo built it for this test run: the newest
/// (an older one may remain from an earlier build of another version).
fn prebuilt_build_script() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    std::fs::read_dir(profile_dir.join("build"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("icbench-canister-")
        })
        .map(|e| e.path().join("build-script-build"))
        .filter(|p| p.is_file())
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).unwrap())
        .expect("cargo built icbench-canister's build script")
}

/// Runs the build script in `dir` (a copy of canisters/prebuilt), as cargo does.
fn run_build_script(script: &Path, dir: &Path) -> Output {
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    Command::new(script)
        .current_dir(dir)
        .env("OUT_DIR", &out_dir)
        .output()
        .expect("the build script runs")
}

#[test]
fn the_build_script_refuses_any_module_whose_bytes_are_not_its_record() {
    let script = prebuilt_build_script();
    let dir = crate::support::scratch_dir("prebuilt-build-script");
    let prebuilt = root().join("canisters/prebuilt");
    let mut files = vec!["modules.txt".to_string()];
    for m in Module::ALL {
        let e = m.listing();
        for path in [e.prebuilt_wasm, e.prebuilt_sources] {
            files.push(
                Path::new(path)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into(),
            );
        }
    }
    for f in &files {
        std::fs::copy(prebuilt.join(f), dir.join(f)).unwrap();
    }
    let ok = run_build_script(&script, &dir);
    let stderr = |out: &Output| String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(ok.status.success(), "{}", stderr(&ok));
    let code = std::fs::read_to_string(dir.join("out/modules.rs")).unwrap();
    for m in Module::ALL {
        assert!(code.contains(&format!("name: {:?},", m.name)), "{code}");
    }

    for m in Module::ALL {
        let wasm_file = Path::new(m.prebuilt_wasm).file_name().unwrap();
        let record_file = Path::new(m.prebuilt_sources).file_name().unwrap();
        let original = std::fs::read(dir.join(wasm_file)).unwrap();
        let mut damaged = original.clone();
        damaged.push(0);
        std::fs::write(dir.join(wasm_file), &damaged).unwrap();
        let refused = run_build_script(&script, &dir);
        assert!(
            !refused.status.success(),
            "{}: damaged bytes were embedded",
            m.name
        );
        let expected = format!(
            "{} (sha256 {}) is not the module {} names",
            m.prebuilt_wasm,
            sha256_hex(&damaged),
            record_file.to_string_lossy()
        );
        assert!(stderr(&refused).contains(&expected), "{}", stderr(&refused));
        std::fs::write(dir.join(wasm_file), &original).unwrap();

        // A module without its record is refused too, naming the record.
        std::fs::rename(dir.join(record_file), dir.join("away")).unwrap();
        let refused = run_build_script(&script, &dir);
        assert!(!refused.status.success());
        assert!(
            stderr(&refused).contains(m.prebuilt_sources),
            "{}",
            stderr(&refused)
        );
        std::fs::rename(dir.join("away"), dir.join(record_file)).unwrap();
    }
    // A list the parser refuses stops the build with the parser's line.
    std::fs::write(dir.join("modules.txt"), "crate x\n").unwrap();
    let refused = run_build_script(&script, &dir);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused)
            .contains("canisters/prebuilt/modules.txt line 1: `crate x` comes before any `[name]`"),
        "{}",
        stderr(&refused)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}
