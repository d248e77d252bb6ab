//! `icbench mops` on the fixture project (tests/mops_fixture: mops.toml, a `bench` library of
//! our own in `.mops/`, bench files), compiled with moc.js of the npm package `motoko` that
//! its package-lock.json pins (`npm ci` there when node_modules lacks it) and mo:core from
//! that package, laid out as `.mops/core@2.5.0` in a scratch copy. The runs share one copy
//! and the test run's compile cache, so each bench file is compiled once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::{assert_has, icbench_command, scratch_dir, stderr_of_exit, the_cache_entry};

fn fixture_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mops_fixture")
}

/// tests/mops_fixture's node_modules, installed from its lock file when missing (once: the
/// tests that start side by side wait for it).
fn node_modules() -> PathBuf {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    let src = fixture_source();
    INSTALLED.get_or_init(|| install_node_modules(&src));
    src.join("node_modules")
}

fn install_node_modules(src: &Path) {
    let installed = ["motoko", "binaryen"].iter().all(|p| {
        src.join("node_modules")
            .join(p)
            .join("package.json")
            .is_file()
    });
    if !installed {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(src)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci in {}", src.display());
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "node_modules" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

/// A copy of the fixture project named `name`, with `.mops/core@2.5.0` from the npm
/// package's bundled mo:core and node_modules linked.
fn project_copy(name: &str) -> PathBuf {
    let modules = node_modules();
    let dir = scratch_dir(name);
    copy_dir(&fixture_source(), &dir);
    std::os::unix::fs::symlink(&modules, dir.join("node_modules")).unwrap();
    let core: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(modules.join("motoko/packages/latest/core.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(core["version"], "v2.5.0", "the npm package's mo:core");
    let src = dir.join(".mops/core@2.5.0/src");
    for (file, body) in core["files"].as_object().unwrap() {
        let path = src.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body["content"].as_str().unwrap()).unwrap();
    }
    dir
}

/// The shared copy, its bench files compiled once (into the test run's cache).
pub fn project() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = project_copy("mops");
        mops(&dir, &[], 0);
        dir
    })
}

/// `icbench mops ARGS` in `dir` (with `CI` unset: mops' terminal form), asserted to exit
/// with `code`: stdout, stderr.
fn mops(dir: &Path, args: &[&str], code: i32) -> (String, String) {
    let out = icbench_command()
        .arg("mops")
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

#[test]
fn prints_mops_tables_with_mops_figures() {
    let (stdout, stderr) = mops(project(), &[], 0);
    assert_has(
        &stderr,
        "Replica rules 2026-05 (as PocketIC 14.0.0 to 15.0.0)",
    );
    insta::assert_snapshot!("mops_default", stdout);
}

#[test]
fn saves_mops_results_file_and_compares_with_it() {
    let dir = project();
    let stdout = mops(dir, &["--save", "sum"], 0).0;
    assert!(
        stdout.ends_with("Saving results to .bench/sum.bench.json\n"),
        "{stdout}"
    );
    let saved = std::fs::read_to_string(dir.join(".bench/sum.bench.json")).unwrap();
    insta::assert_snapshot!("mops_saved_sum", saved);
    let (stdout, stderr) = mops(dir, &["--compare", "sum"], 0);
    // Every figure as saved: no change.
    assert_eq!(stdout.matches("(0%)").count(), 6, "{stdout}");
    assert!(!stderr.contains("warning"), "{stderr}");
    // Results saved by another moc and collector: compared, and said.
    let saved = saved
        .replace("\"1.10.1\"", "\"0.12.1\"")
        .replace("incremental", "copying");
    let other_copy = scratch_dir("mops-other-setup");
    copy_dir(dir, &other_copy);
    std::os::unix::fs::symlink(node_modules(), other_copy.join("node_modules")).unwrap();
    std::fs::write(other_copy.join(".bench/sum.bench.json"), saved).unwrap();
    let (_, stderr) = mops(&other_copy, &["--compare", "sum"], 0);
    assert_has(&stderr, "warning: bench/sum.bench.mo: .bench/sum.bench.json was saved by another setup (moc 0.12.1 there, 1.10.1 here; the collector copying there, incremental here): its figures differ by that too");
}

#[test]
fn today_charges_and_pages() {
    let stdout = mops(project(), &["--replica", "2026-07", "--pages", "map"], 0).0;
    insta::assert_snapshot!("mops_2026_07_pages", stdout);
}

/// An empty filter is no filter, as mops takes it: the *.bench.mo files, not every `.mo`
/// under bench/ (trap.mo and broken.mo are not benches of the default run).
#[test]
fn an_empty_filter_is_none() {
    let stdout = mops(project(), &[""], 0).0;
    assert_eq!(stdout, mops(project(), &[], 0).0);
}

/// What would fail after a bench ran is refused before any: a saved file `--compare`
/// cannot read (so `--save` rewrites none of the others' first), a `.bench` that `--save`
/// or `--profile` cannot write into.
#[test]
fn saved_files_and_their_directory_are_checked_before_any_bench_runs() {
    let dir = project_copy("mops-bad-saved");
    std::fs::create_dir_all(dir.join(".bench")).unwrap();
    std::fs::write(dir.join(".bench/sum.bench.json"), "not json").unwrap();
    let err = error_line(&dir, &["--compare", "--save"]);
    assert_has(&err, "sum.bench.json is not a mops results file: ");
    assert!(!dir.join(".bench/map.bench.json").exists());
    std::fs::remove_dir_all(dir.join(".bench")).unwrap();
    std::fs::write(dir.join(".bench"), "a file where the directory goes").unwrap();
    for flag in ["--save", "--profile"] {
        let err = error_line(&dir, &[flag, "sum"]);
        assert!(
            err.starts_with("error: cannot write into "),
            "{flag}: {err}"
        );
    }
}

/// A file that is not a bench is refused in one line before any compile: not Motoko, a
/// library without `init()`, a file outside the project.
#[test]
fn a_file_that_is_not_a_bench_is_refused_naming_why() {
    let outside = scratch_dir("mops-outside").join("x.bench.mo");
    std::fs::write(&outside, "module {}").unwrap();
    for (arg, expected) in [
        (
            "mops.toml",
            "error: mops.toml is not a Motoko file: a bench file is a module (.mo) whose `init()` returns a Bench",
        ),
        (
            "src/Sum.mo",
            "error: src/Sum.mo is not a bench: it defines no `init()` (the bench canister calls `init()` for the Bench)",
        ),
        (
            outside.to_str().unwrap(),
            "lies outside the project (",
        ),
    ] {
        let err = error_line(project(), &[arg]);
        assert!(err.contains(expected), "{arg}: {err}");
    }
}

/// `--replica` and `--host` take any case, as every other subcommand's do.
#[test]
fn rules_are_named_in_any_case() {
    let run = |replica: &str, host: &str| {
        mops(project(), &["--replica", replica, "--host", host, "sum"], 0).0
    };
    assert_eq!(
        run("POCKET-IC-16.0.0", "MacOS-arm64"),
        run("pocket-ic-16.0.0", "macos-arm64")
    );
}

#[test]
fn query_cells_collect_no_garbage() {
    let stdout = mops(project(), &["--query", "sum"], 0).0;
    insta::assert_snapshot!("mops_query", stdout);
}

#[test]
fn a_trapping_cell_shows_in_the_table_and_fails_the_run() {
    let (stdout, stderr) = mops(project(), &["trap"], 1);
    assert_has(&stdout, "| ok   |");
    assert_has(&stdout, "| trap | trap |");
    assert_has(&stderr, "error: bench/trap.mo: cell trap:x trapped: ");
    assert_has(&stderr, "the cell traps");
}

#[test]
fn a_bench_moc_rejects_shows_moc_message() {
    let (stdout, stderr) = mops(project(), &["broken"], 2);
    assert!(stdout.is_empty(), "{stdout}");
    assert_has(
        &stderr,
        "error: moc rejected the bench canister:\nbench/broken.mo:7.",
    );
}

/// `icbench mops ARGS` in `dir`: the one line of its error (exit status 2, nothing on
/// stdout).
fn error_line(dir: &Path, args: &[&str]) -> String {
    let (stdout, stderr) = mops(dir, args, 2);
    assert!(stdout.is_empty(), "{args:?}: {stdout}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    stderr.trim_end().to_string()
}

/// A copy of the project changed by `change`, run with `args`: the one line of its error.
fn refused(name: &str, change: impl FnOnce(&Path), args: &[&str]) -> String {
    let dir = project_copy(name);
    change(&dir);
    error_line(&dir, args)
}

/// bench/NAME.bench.mo in `dir`: sum's bench under another name, which no run has compiled
/// (so not in the compile cache).
fn fresh_bench(dir: &Path, name: &str) {
    let sum = std::fs::read_to_string(dir.join("bench/sum.bench.mo")).unwrap();
    let bench = sum.replace("\"Sum\"", &format!("\"{name}\""));
    std::fs::write(dir.join(format!("bench/{name}.bench.mo")), bench).unwrap();
}

fn edit_toml(dir: &Path, from: &str, to: &str) {
    let path = dir.join("mops.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from));
    std::fs::write(path, text.replace(from, to)).unwrap();
}

#[test]
fn bad_inputs_are_one_line_before_any_work() {
    let no_bench = refused(
        "mops-no-bench",
        |d| std::fs::remove_dir_all(d.join("bench")).unwrap(),
        &[],
    );
    assert!(
        no_bench.starts_with("error: no *.bench.mo files under bench/ or benchmark/ in "),
        "{no_bench}"
    );
    let filter = refused("mops-filter", |_| {}, &["nosuch"]);
    assert_eq!(
        filter,
        "error: no bench file matches the filter 'nosuch' (mops' glob `**/bench?(mark)/**/*nosuch*.mo`); the bench files are: bench/map.bench.mo, bench/sum.bench.mo"
    );
    let no_mops = refused(
        "mops-no-dir",
        |d| std::fs::remove_dir_all(d.join(".mops")).unwrap(),
        &[],
    );
    assert_has(
        &no_mops,
        ".mops is missing: the packages of mops.toml are not installed (run `mops install` in ",
    );
    let version = refused(
        "mops-version",
        |d| edit_toml(d, "core = \"2.5.0\"", "core = \"2.6.1\""),
        &[],
    );
    assert!(
        version.starts_with("error: package core 2.6.1 is not installed: ")
            && version.ends_with(".mops/core@2.6.1 does not exist (run `mops install`)"),
        "{version}"
    );
    let moc = refused(
        "mops-moc",
        |d| edit_toml(d, "moc = \"1.10.1\"", "moc = \"0.14.11\""),
        &[],
    );
    assert!(moc.starts_with("error: mops.toml names moc 0.14.11, but ") && moc.ends_with("is motoko@4.10.0 (moc.js 1.10.1): install motoko@3.13.0, whose moc.js is moc 0.14.11"), "{moc}");
    let unknown = refused(
        "mops-pocket",
        |d| edit_toml(d, "[toolchain]\n", "[toolchain]\npocket-ic = \"4.0.0\"\n"),
        &[],
    );
    assert!(unknown.starts_with("error: mops.toml pins PocketIC 4.0.0, whose replica rules icbench does not know: pass --replica"), "{unknown}");
    // [optimize] as mops checks it, and its wasm-opt, before any compile.
    for (name, toml, expected) in [
        (
            "mops-optimize-level",
            "[optimize]\nlevel = 3\n\n[toolchain]\nwasm-opt = \"131\"\n",
            "mops.toml: invalid [optimize].level 3: expected one of O0, O1, O2, O3, O4, Os, Oz",
        ),
        (
            "mops-optimize-args",
            "[optimize]\nargs = \"-O\"\n\n[toolchain]\nwasm-opt = \"131\"\n",
            "mops.toml: [optimize].args must be an array of strings",
        ),
        (
            "mops-optimize-pin",
            "[optimize]\n\n[toolchain]\n",
            "error: [optimize] is enabled but wasm-opt is not pinned in [toolchain]: pin one in mops.toml ([toolchain] wasm-opt = \"131\"), or pass --no-optimize",
        ),
        (
            "mops-optimize-missing",
            "[optimize]\n\n[toolchain]\nwasm-opt = \"99\"\n",
            "error: mops.toml pins wasm-opt 99, which is not here: not in mops' toolchain cache, no `wasm-opt` 99 on PATH, and no npm package binaryen 99 in a node_modules (`npm install binaryen@99`), or pass --no-optimize",
        ),
    ] {
        let err = refused(name, |d| edit_toml(d, "[toolchain]\n", toml), &[]);
        assert!(err.ends_with(expected), "{err}");
    }
}

/// The bench canister's module as mops 3.1's `[optimize]` makes it: wasm-opt (npm binaryen,
/// run with node) at -O3, names kept, the features moc's output uses; `--no-optimize`
/// leaves it as moc made it. Exact counts of the same cell, both ways.
#[test]
fn optimize_runs_wasm_opt_as_mops_does() {
    let dir = project_copy("mops-optimized");
    let features: Vec<String> =
        "bulk-memory multivalue memory64 sign-ext mutable-globals nontrapping-float-to-int"
            .split(' ')
            .map(|f| format!("--enable-{f}"))
            .collect();
    let args = format!("args = [\"{}\"]\n", features.join("\", \""));
    edit_toml(
        &dir,
        "[toolchain]\n",
        &format!("[optimize]\n{args}\n[toolchain]\nwasm-opt = \"131\"\n"),
    );
    let (stdout, stderr) = mops(&dir, &["sum"], 0);
    assert_has(
        &stderr,
        &format!(
            "Optimized with wasm-opt 131 -O3 -g {} (npm binaryen@131.0.0 (",
            features.join(" ")
        ),
    );
    assert_has(&stdout, "| loop | 1_566 | 107_489 |");
    let (stdout, stderr) = mops(&dir, &["sum", "--no-optimize"], 0);
    assert!(!stderr.contains("Optimized"), "{stderr}");
    assert_has(&stdout, "| loop | 1_646 | 108_560 |");
    // A module wasm-opt refuses (moc's output without its features): wasm-opt's reason.
    edit_toml(&dir, &args, "");
    let (_, stderr) = mops(&dir, &["sum"], 2);
    assert_has(&stderr, "error: failed to optimize the bench canister of bench/sum.bench.mo with wasm-opt: [wasm-validator error in function ");
}

#[test]
fn node_missing_is_one_line() {
    let dir = project_copy("mops-node");
    let stderr = stderr_of_exit(
        icbench_command()
            .arg("mops")
            .current_dir(&dir)
            .env("PATH", "/nonexistent"),
        2,
    );
    assert!(
        stderr.starts_with("error: node is not on PATH: moc.js (npm motoko@4.10.0, "),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn no_project_is_one_line() {
    let dir = scratch_dir("mops-empty");
    let err = error_line(&dir, &[]);
    assert!(err.starts_with("error: no mops.toml in "), "{err}");
}

/// moc's modules are entries of the compile cache's `mops` kind: a damaged one is said and
/// compiled again, the same figures come out, and `cache info` and `cache clear` count them;
/// the raw modules and `.partial` files of the old layout are removed as leftovers.
#[test]
fn moc_s_modules_are_checked_cache_entries() {
    let cache = scratch_dir("mops-cache");
    let run = |args: &[&str]| {
        let out = icbench_command()
            .args(args)
            .current_dir(project())
            .env("ICBENCH_CACHE_DIR", &cache)
            .env_remove("CI")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    };
    std::fs::create_dir_all(cache.join("mops")).unwrap();
    for old in [
        "0123-bench_sum.bench.mo.wasm",
        "0123-bench_sum.bench.mo.partial",
    ] {
        std::fs::write(cache.join("mops").join(old), "old layout").unwrap();
    }
    let (first, _) = run(&["mops", "sum"]);
    let entry = the_cache_entry(&cache, "mops");
    assert!(!cache.join("mops/0123-bench_sum.bench.mo.wasm").exists());
    assert!(!cache.join("mops/0123-bench_sum.bench.mo.partial").exists());
    // One flipped byte in the module.
    let mut bytes = std::fs::read(&entry).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&entry, bytes).unwrap();
    let (again, stderr) = run(&["mops", "sum"]);
    assert_eq!(again, first);
    assert_has(&stderr, "checksum mismatch; compiling again");
    let (info, _) = run(&["cache", "info"]);
    assert_has(&info, "\nmops: 1 entries, ");
    let (cleared, _) = run(&["cache", "clear"]);
    assert!(cleared.starts_with("removed "), "{cleared}");
    assert!(!cache.join("mops").exists());
}

/// A SIGTERM while moc.js compiles stops node too and leaves no temporary directory.
#[test]
fn a_signal_while_moc_js_compiles_leaves_no_node_and_no_directory() {
    let dir = project_copy("mops-interrupted");
    // A bench no run compiled: moc.js runs.
    fresh_bench(&dir, "stopped");
    let tmp = scratch_dir("mops-interrupted-tmp");
    let child = icbench_command()
        .args(["mops", "stopped"])
        .current_dir(&dir)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let children = |pid: u32| -> Vec<u32> {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten();
        tasks
            .flatten()
            .flat_map(|t| {
                let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
                list.split_whitespace()
                    .filter_map(|c| c.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect()
    };
    // Node compiling: moc's directory made (`node --version`, which comes first, makes none).
    let mut node = None;
    crate::support::wait_until(60, "node never started", || {
        let made = std::fs::read_dir(&tmp).unwrap().next().is_some();
        node = children(child.id()).first().copied().filter(|_| made);
        node.is_some()
    });
    let node = node.unwrap();
    let kill = std::process::Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(
        stderr.ends_with("interrupted by SIGTERM: stopped; nothing was left half written\n"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    // The child was killed: gone, or a zombie, within moments (an exiting process shows no
    // command line).
    crate::support::wait_until(10, &format!("node {node} still runs"), || {
        let state = crate::support::process_stat(node).map(|(state, _)| state);
        let cmdline = std::fs::read_to_string(format!("/proc/{node}/cmdline")).unwrap_or_default();
        matches!(state, None | Some('Z' | 'X')) || cmdline.is_empty()
    });
}

/// What moc.js refuses is one line with moc's reason, not the minified JavaScript node would
/// quote: a flag it does not take, a package that does not load.
#[test]
fn moc_js_refusals_are_one_line_with_the_reason() {
    let (_, stderr) = mops(project(), &["sum", "--", "--bogus-flag"], 2);
    assert!(
        stderr.ends_with(
            "error: moc.js rejects the flags --bogus-flag: mocjs: unknown option '--bogus-flag'\n"
        ),
        "{stderr}"
    );
    // A package whose code does not load, and a bench no run compiled (so not in the cache).
    let dir = project_copy("mops-broken-motoko");
    std::fs::remove_file(dir.join("node_modules")).unwrap();
    let broken = dir.join("node_modules/motoko");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::copy(
        node_modules().join("motoko/package.json"),
        broken.join("package.json"),
    )
    .unwrap();
    std::fs::write(
        broken.join("index.js"),
        "module.exports = require('./gone');\n",
    )
    .unwrap();
    fresh_bench(&dir, "fresh");
    let (_, stderr) = mops(&dir, &["fresh"], 2);
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("error: the npm package motoko in ")
            && last.contains("does not load (reinstall it: npm ci): Cannot find module './gone'"),
        "{stderr}"
    );
}

/// A mops.toml icbench cannot read is one line that keeps the reason: where, and what (a
/// syntax error, or a value of the wrong shape).
#[test]
fn a_broken_mops_toml_is_one_line_with_its_reason() {
    for (toml, reason) in [
        (
            "[toolchain\n",
            "line 1, column 11: unclosed table, expected `]`",
        ),
        (
            "[dependencies]\ncore = 5\n",
            "line 2, column 8: invalid type: integer `5`, expected a string",
        ),
    ] {
        let dir = scratch_dir("mops-broken-toml");
        std::fs::write(dir.join("mops.toml"), toml).unwrap();
        let err = error_line(&dir, &[]);
        assert!(err.ends_with(&format!("mops.toml: {reason}")), "{err}");
    }
}

#[test]
fn ci_form_flame_graphs_and_the_comment() {
    let dir = project();
    // A flame graph of a cell the file no longer has goes; a file of the user's stays.
    let graphs = dir.join(".bench/sum.bench");
    std::fs::create_dir_all(&graphs).unwrap();
    for old in ["gone-1.svg", "gone-1.folded", "notes.txt"] {
        std::fs::write(graphs.join(old), "old").unwrap();
    }
    let out = icbench_command()
        .args(["mops", "--profile", "--markdown", "mops-comment.md", "sum"])
        .current_dir(dir)
        .env("CI", "true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // mops' CI form: its heading, then a <details> block per file with LaTeX colours.
    assert!(
        stdout.starts_with("# Benchmark Results\n\n\n\n<details>\n\n<summary>bench/sum.bench.mo $({\\color{gray}0\\%})$</summary>\n\n### Sum\n\n_Adds the numbers up to n_\n\n\nInstructions: ${\\color{gray}0\\\\%}$\n"),
        "{stdout}"
    );
    assert_has(&stdout, "**Instructions**\n\n|      |    10 |    1000 |\n| :--- | ----: | ------: |\n| loop | 1_646 | 108_560 |");
    assert!(!graphs.join("gone-1.svg").exists() && !graphs.join("gone-1.folded").exists());
    assert!(graphs.join("notes.txt").exists());
    for cell in ["loop-10", "loop-1000"] {
        let svg = dir.join(".bench/sum.bench").join(format!("{cell}.svg"));
        assert!(
            std::fs::read_to_string(&svg).unwrap().contains("<svg"),
            "{}",
            svg.display()
        );
    }
    let comment = std::fs::read_to_string(dir.join("mops-comment.md")).unwrap();
    let row = |cell: &str| {
        comment
            .lines()
            .find(|l| l.contains(&format!(" {cell} ")))
            .unwrap_or("")
    };
    assert!(row("loop:10").contains(" 1_646 "), "{comment}");
    assert!(row("loop:1000").contains(" 108_560 "), "{comment}");
}
