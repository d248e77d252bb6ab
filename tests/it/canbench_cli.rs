//! `icbench canbench` end to end: the binary on the canbench-rs fixture, in a scratch
//! directory, with canbench's config, result files, report text and error paths.

use crate::support::canbench_fixture as support;

use std::path::PathBuf;
use std::process::Output;

const DASHES: &str = "---------------------------------------------------";

/// A fresh empty directory under target/, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("target/canbench-cli-tests")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
    fn write(&self, f: &str, text: impl AsRef<[u8]>) {
        std::fs::write(self.path(f), text).unwrap();
    }
    fn read(&self, f: &str) -> String {
        std::fs::read_to_string(self.path(f)).unwrap()
    }
    /// `icbench SUBCOMMAND ARGS` in the scratch directory.
    fn command(&self, subcommand: &str, args: &[&str]) -> std::process::Command {
        let mut command = crate::support::icbench_command();
        command.arg(subcommand).args(args).current_dir(&self.0);
        command
    }

    /// `icbench merge ARGS` in the scratch directory.
    fn merge(&self, args: &[&str]) -> Output {
        self.command("merge", args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command("canbench", args)
            .env_remove("CANBENCH_CFG_FILE")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn wasm() -> String {
    support::fixture_wasm_path().display().to_string()
}

/// The line after the replica rules' on a run's stderr: the fixture module (its file's
/// sha256 and the rustc its producers section names) and this machine.
fn provenance_line() -> String {
    format!(
        "Module: canbench_fixture.wasm 237b5370 (rustc 1.95.0 (59807616e 2026-04-14)). Machine: {}.\n",
        icbench::report::Machine::this(true).line()
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn config(wasm: &str, extra: &str) -> String {
    format!("wasm_path: {wasm}\n{extra}")
}

#[test]
fn config_run_builds_persists_writes_csv_then_compares() {
    let s = Scratch::new("config_run");
    s.write("stable.bin", "ABCDE");
    s.write(
        "canbench.yml",
        config(
            &wasm(),
            "build_cmd: echo built > build_marker\ninit_args:\n  hex: 4449444c0001710568656c6c6f\nstable_memory:\n  file: stable.bin\n",
        ),
    );
    let o = s.run(&["--persist", "--csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        s.read("build_marker"),
        "built\n",
        "build_cmd ran in the cwd"
    );
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!("{DASHES}\n\nBenchmark: ")),
        "{out}"
    );
    assert!(out.contains(
        "Benchmark: empty (new)\n  total:\n    instructions: 207 (new)\n    heap_increase: 0 pages (new)\n    stable_memory_increase: 0 pages (new)\n\n"
    ), "{out}");
    assert!(out.contains("Benchmark: init_arg_pages (new)\n  total:\n    instructions: "));
    assert!(out.contains("    stable_memory_increase: 13 pages (new)\n"));
    assert!(out.contains("\n  nested (scope):\n    calls: 2 (new)\n"));
    assert!(out.contains("\nOnly significant changes:\n| status | name "));
    assert!(out.ends_with(&format!(
        "{DASHES}\nCSV results saved to canbench_results.csv\nSuccessfully persisted results to canbench_results.yml\n"
    )), "{out}");

    let yml = s.read("canbench_results.yml");
    assert!(yml.starts_with("benches:\n"), "{yml}");
    assert!(yml.contains("  empty:\n    total:\n      calls: 1\n      instructions: 207\n      heap_increase: 0\n      stable_memory_increase: 0\n    scopes: {}\n"), "{yml}");
    assert!(yml.ends_with("version: 0.7.0\n"));
    // The stable memory file replaced what init wrote: "ABCDE" as the probe's number.
    assert!(yml.contains(&format!(
        "  stable_probe:\n    total:\n      calls: 1\n      instructions: {}\n      heap_increase: 0\n      stable_memory_increase: 1\n",
        u64::from_le_bytes(*b"ABCDE\0\0\0")
    )), "{yml}");
    let csv = s.read("canbench_results.csv");
    assert!(csv.starts_with("status,name,scope_calls,scope_calls Δ,scope_calls Δ%,instructions,"));
    // canbench's columns, then the bench's Wasm pages: the empty bench's query touches 3
    // heap pages and writes them, and under canbench's replica (2025-03) a query pays
    // nothing for heap pages and this one writes no stable memory.
    assert!(
        csv.contains("\nnew,empty,,,,207,,,0,,,0,,,3,3,0,0,0\n"),
        "{csv}"
    );
    assert!(
        csv.contains("\nnew,nested_same_scope::nested,2,,,"),
        "{csv}"
    );

    // The same run again compares with the persisted file: nothing changed.
    let o = s.run(&["--no-build", "--csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Benchmark: empty\n  total:\n    instructions: 207 (no change)\n"),
        "{out}"
    );
    assert!(
        !out.contains("(new)") && !out.contains("Only significant changes"),
        "{out}"
    );
    assert_eq!(
        out.matches("status:   No significant changes 👍").count(),
        3
    );
    assert!(s
        .read("canbench_results.csv")
        .contains("\n,empty,,,,207,0,0.00%,0,0,0.00%,0,0,0.00%,3,3,0,0,0\n"));
}

#[test]
fn report_text_is_canbench_s_for_a_known_input() {
    let s = Scratch::new("golden");
    s.write(
        "old.yml",
        "benches:\n  empty:\n    total:\n      calls: 1\n      instructions: 200\n      heap_increase: 0\n      stable_memory_increase: 0\n    scopes: {}\nversion: 0.2.0\n",
    );
    let w = wasm();
    let o = s.run(&["--wasm", &w, "--results", "old.yml", "empty"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        include_str!("../canbench_expected/fixture_empty_regressed_against_200.txt")
    );
    // Within a 4% threshold it is noise; --less-verbose drops the summary.
    let o = s.run(&[
        "--wasm",
        &w,
        "--results",
        "old.yml",
        "--noise-threshold",
        "4",
        "--less-verbose",
        "empty",
    ]);
    assert_eq!(
        stdout(&o),
        format!("{DASHES}\n\nBenchmark: empty\n  total:\n    instructions: 207 (3.50%) (change within noise threshold)\n    heap_increase: 0 pages (no change)\n    stable_memory_increase: 0 pages (no change)\n\n{DASHES}\n")
    );
    // A gzipped module (by its .gz name, as canbench) gives the same result.
    {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&std::fs::read(&w).unwrap()).unwrap();
        s.write("fixture.wasm.gz", gz.finish().unwrap());
    }
    let o = s.run(&["--wasm", "fixture.wasm.gz", "--less-verbose", "empty"]);
    assert!(
        stdout(&o).contains("Benchmark: empty (new)\n  total:\n    instructions: 207 (new)\n"),
        "{}",
        stderr(&o)
    );
    // The old file is only read, never written, without --persist.
    assert!(s.read("old.yml").ends_with("version: 0.2.0\n"));
}

/// The flags of a run of `wasm` that persists its results and CSV, with the init
/// argument hex("trap") that makes trap_on_request trap.
fn trapping_run(wasm: &str) -> [&str; 6] {
    [
        "--wasm",
        wasm,
        "--init-args",
        "74726170",
        "--persist",
        "--csv",
    ]
}

#[test]
fn a_trapping_bench_fails_the_run_but_the_others_run() {
    let s = Scratch::new("trap");
    let w = wasm();
    let o = s.run(&trapping_run(&w));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("Error executing benchmark trap_on_request. Error:\nIC0503: Error from Canister lxzze-o7777-77777-aaaaa-cai: Canister called `ic0.trap` with message: "), "{err}");
    assert!(
        err.contains("1 of 12 benchmarks failed (trap_on_request); results and CSV not written"),
        "{err}"
    );
    let out = stdout(&o);
    assert_eq!(out.matches("Benchmark: ").count(), 11, "{out}");
    assert!(out.contains("Benchmark: empty (new)\n  total:\n    instructions: 207 (new)\n"));
    assert!(!s.path("canbench_results.yml").exists() && !s.path("canbench_results.csv").exists());
}

fn fails_with(o: &Output, code: i32, text: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert!(err.contains(text), "expected {text:?} in:\n{err}");
}

#[test]
fn bad_inputs_are_clear_errors() {
    let s = Scratch::new("errors");
    let w = wasm();

    fails_with(
        &s.run(&[]),
        2,
        "configuration file not found: 'canbench.yml'",
    );
    fails_with(
        &s.run(&["--wasm", "nope.wasm"]),
        2,
        "Couldn't read file at nope.wasm. Are you sure the file exists?",
    );
    fails_with(
        &s.run(&["--wasm", &w, "--init-args", "0g"]),
        2,
        "invalid init_args hex value \"0g\"",
    );
    fails_with(
        &s.run(&["--wasm", &w, "no_such_bench"]),
        2,
        "no benchmark name contains \"no_such_bench\"",
    );
    fails_with(
        &s.run(&[
            "--wasm",
            &w,
            "--instruction-tracing",
            "--shard",
            "1/2",
            "--out",
            "parts",
        ]),
        2,
        "--instruction-tracing writes its flame graphs next to the results file: run it without --shard",
    );

    s.write(
        "plain.wasm",
        wat::parse_str(r#"(module (func $f) (export "canister_query hello" (func $f)))"#).unwrap(),
    );
    fails_with(
        &s.run(&["--wasm", "plain.wasm"]),
        2,
        "no benchmarks found in plain.wasm",
    );

    // Bad modules: one line naming the file and the problem (wasmparser's multi-line byte
    // arrays never reach the user).
    let real = std::fs::read(&w).unwrap();
    s.write("text.wasm", "hello, world");
    s.write("truncated.wasm", &real[..real.len() / 2]);
    s.write("component.wasm", b"\0asm\x0d\0\x01\0");
    s.write("empty.wasm", b"");
    for (file, problem) in [
        ("text.wasm", "text.wasm: invalid module: neither a Wasm module (\\0asm) nor gzip; the first bytes are [68, 65, 6c, 6c]"),
        ("truncated.wasm", "truncated.wasm: truncated or invalid Wasm: "),
        ("component.wasm", "component.wasm: not a Wasm core module of version 1 (a component or another format?): version bytes [0d, 00, 01, 00]"),
        ("empty.wasm", "empty.wasm: invalid module: neither a Wasm module (\\0asm) nor gzip; the first bytes are []"),
    ] {
        let o = s.run(&["--wasm", file]);
        fails_with(&o, 2, problem);
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }

    // Files the run would write are tried before it runs anything.
    for flag in ["--results", "--csv-results"] {
        let o = s.run(&[
            "--wasm",
            &w,
            "--persist",
            "--csv",
            flag,
            "/proc/icbench/x.yml",
        ]);
        fails_with(&o, 2, "cannot write /proc/icbench/x.yml");
        assert!(!stdout(&o).contains("Benchmark:"), "{}", stdout(&o));
    }
    fails_with(
        &s.run(&["--wasm", &w, "--shard", "1/2", "--out", "/proc/icbench"]),
        2,
        "--out /proc/icbench: cannot write into it",
    );

    s.write("newer.yml", "benches: {}\nversion: 99.0.0\n");
    fails_with(
        &s.run(&["--wasm", &w, "--results", "newer.yml"]),
        2,
        "canbench is at version 0.7.0 while the results were generated with version 99.0.0. Please upgrade canbench.",
    );

    s.write(
        "missing_stable.yml",
        config(
            &w,
            "stable_memory:\n  file: stable_memory_does_not_exist.bin\n",
        ),
    );
    fails_with(
        &s.run(&["--config", "missing_stable.yml"]),
        2,
        "Error reading stable memory file stable_memory_does_not_exist.bin\nError: No such file or directory",
    );

    s.write("bad_hex.yml", config(&w, "init_args:\n  hex: xyz\n"));
    fails_with(
        &s.run(&["--config", "bad_hex.yml"]),
        2,
        "invalid init_args hex value \"xyz\"",
    );

    s.write("env.yml", config(&w, "env_vars:\n  file: env.csv\n"));
    fails_with(
        &s.run(&["--config", "env.yml"]),
        2,
        "env_vars (env.csv) are not supported",
    );

    s.write("no_wasm.yml", "build_cmd: true\n");
    fails_with(
        &s.run(&["--config", "no_wasm.yml"]),
        2,
        "missing field `wasm_path`",
    );

    // A failing build stops the run, unless --no-build; CANBENCH_CFG_FILE names the config.
    s.write("failing_build.yml", config(&w, "build_cmd: exit 3\n"));
    let with_env = |args: &[&str]| {
        s.command("canbench", args)
            .env("CANBENCH_CFG_FILE", "failing_build.yml")
            .output()
            .unwrap()
    };
    fails_with(&with_env(&["empty"]), 2, "build_cmd \"exit 3\" failed");
    let o = with_env(&["--no-build", "empty"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("instructions: 207 (new)"));
}

#[test]
fn jobs_do_not_change_the_output_or_the_files() {
    let w = wasm();
    let outputs: Vec<(String, String, String)> = ["1", "2", "4"]
        .iter()
        .map(|jobs| {
            let s = Scratch::new(&format!("jobs_{jobs}"));
            let o = s.run(&["--wasm", &w, "--persist", "--csv", "--jobs", jobs]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            (
                stdout(&o),
                s.read("canbench_results.yml"),
                s.read("canbench_results.csv"),
            )
        })
        .collect();
    assert!(outputs[0].0.contains("Benchmark: stable_probe (new)"));
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
}

/// A baseline that makes `empty` regress and `stable_probe` improve, so the merged report
/// has every kind of line.
const BASELINE: &str = "benches:\n  empty:\n    total:\n      calls: 1\n      instructions: 200\n      heap_increase: 0\n      stable_memory_increase: 0\n    scopes: {}\n  stable_probe:\n    total:\n      calls: 1\n      instructions: 99999999\n      heap_increase: 0\n      stable_memory_increase: 1\n    scopes: {}\nversion: 0.6.0\n";

#[test]
fn shards_merged_equal_the_unsharded_run() {
    let w = wasm();
    let flags = ["--wasm", &w, "--persist", "--csv"];
    let whole = Scratch::new("shard_whole");
    whole.write("canbench_results.yml", BASELINE);
    let o = whole.run(&flags);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let expected = stdout(&o);
    assert!(expected.contains("regressed by 3.50%"), "{expected}");
    let expected_stderr = stderr(&o);
    // Which PocketIC servers give these figures: canbench's own 13.0.0 among them.
    assert_eq!(
        expected_stderr,
        "Replica rules 2025-03: the figures PocketIC 9.0.1 to 13.0.0 give (canbench 0.5.0 to 0.7.0 run PocketIC 13.0.0); `--replica pocket-ic-VERSION` names another server's.\n".to_string()
            + &provenance_line()
    );

    let s = Scratch::new("shard_parts");
    s.write("canbench_results.yml", BASELINE);
    // Each scope's pages, first touched while it was open, go through the parts too.
    let csv = whole.read("canbench_results.csv");
    assert!(
        csv.contains("\nnew,scope_pages::inner,1,,,374,,,0,,,0,,,1,1,0,0,0\n")
            && csv.contains("\nnew,scope_pages::outer,1,,,1518,,,0,,,0,,,2,2,0,0,0\n"),
        "{csv}"
    );
    for (k, jobs, mine) in [("1", "1", 6), ("2", "2", 6)] {
        let shard = format!("{k}/2");
        let out = format!("part{k}");
        let mut args = flags.to_vec();
        args.extend(["--shard", &shard, "--out", &out, "--jobs", jobs]);
        let o = s.run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).ends_with(&format!(
            "Shard {k}/2: {mine} of the 12 benchmarks, written to part{k}/canbench_part.json (`icbench merge` joins the parts)\n"
        )));
        // A part never overwrites the results file with a partial result, nor writes the CSV.
        assert_eq!(s.read("canbench_results.yml"), BASELINE);
        assert!(!s.path("canbench_results.csv").exists());
    }
    let merge = |args: &[&str]| s.merge(args);
    // Any order; `--out .` writes where the unsharded run writes.
    let o = merge(&["part2", "part1", "--out", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), expected);
    assert_eq!(stderr(&o), expected_stderr);
    for f in ["canbench_results.yml", "canbench_results.csv"] {
        assert_eq!(s.read(f), whole.read(f), "{f}");
    }
    // Elsewhere, the same files under --out.
    let o = merge(&["part1", "part2", "--out", "joined"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        expected.replace(" to canbench_results.", " to joined/canbench_results.")
    );
    for f in ["canbench_results.yml", "canbench_results.csv"] {
        assert_eq!(s.read(&format!("joined/{f}")), whole.read(f), "{f}");
    }
}

/// The fixture with a custom section appended: the same benches in another module.
fn other_module(s: &Scratch) -> String {
    let mut bytes = std::fs::read(support::fixture_wasm_path()).unwrap();
    bytes.extend([0x00, 0x06, 0x04, b'i', b'c', b'b', b't', 0x01]);
    s.write("other.wasm", bytes);
    "other.wasm".to_string()
}

#[test]
fn merge_refuses_parts_that_are_not_one_whole_run() {
    let s = Scratch::new("shard_refusals");
    let w = wasm();
    let other = other_module(&s);
    let part = |out: &str, shard: &str, extra: &[&str]| {
        let mut args = vec!["--wasm", &w, "--shard", shard, "--out", out];
        if extra.first() == Some(&"--wasm") {
            args[1] = extra[1];
            args.extend(&extra[2..]);
        } else {
            args.extend(extra);
        }
        let o = s.run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    };
    part("p1", "1/2", &[]);
    part("p2", "2/2", &[]);
    part("other_module", "2/2", &["--wasm", &other]);
    part("other_init", "2/2", &["--init-args", "4449444c0000"]);
    part("other_pattern", "2/2", &["stable"]);
    part("other_threshold", "2/2", &["--noise-threshold", "5"]);
    part("other_count", "2/3", &[]);
    s.write("old.yml", BASELINE);
    part("other_baseline", "2/2", &["--results", "old.yml"]);
    let merge = |dirs: &[&str]| {
        crate::support::icbench_command()
            .arg("merge")
            .args(dirs)
            .args(["--out", "joined"])
            .current_dir(&s.0)
            .output()
            .unwrap()
    };
    for (dir, what) in [
        (
            "other_module",
            "they differ in the canister module (SHA-256)",
        ),
        (
            "other_init",
            "they differ in the init args ( vs 4449444c0000)",
        ),
        ("other_pattern", "they differ in the benchmarks run"),
        (
            "other_threshold",
            "they differ in the report and file options",
        ),
        ("other_count", "they differ in the shard count (2 vs 3)"),
        ("other_baseline", "they differ in the previous results"),
    ] {
        fails_with(
            &merge(&["p1", dir]),
            2,
            &format!("p1/canbench_part.json and {dir}/canbench_part.json are not parts of one run: {what}"),
        );
    }
    fails_with(
        &merge(&["p1"]),
        2,
        "shard 2/2 missing (have 1/2 in p1/canbench_part.json)",
    );
    fails_with(
        &merge(&["p1", "p2", "p1"]),
        2,
        "shard 1/2 is given twice: p1/canbench_part.json and p1/canbench_part.json",
    );
    // A suite's shard directory (or any other) is not mixed with canbench parts.
    std::fs::create_dir_all(s.path("not_a_part")).unwrap();
    fails_with(
        &merge(&["p1", "not_a_part"]),
        2,
        "p1 holds a part of an `icbench canbench --shard` run (canbench_part.json) and not_a_part does not",
    );
    s.write("p2/canbench_part.json", "{\"kind\": \"something else\"}");
    fails_with(
        &merge(&["p1", "p2"]),
        2,
        "p2/canbench_part.json: not a part written by this icbench",
    );
    assert!(!s.path("joined").exists(), "nothing written on a refusal");
    // A shard needs a directory for its part, and K/N must be a part.
    fails_with(&s.run(&["--wasm", &w, "--shard", "1/2"]), 2, "--out <OUT>");
    fails_with(
        &s.run(&["--wasm", &w, "--shard", "3/2", "--out", "p3"]),
        2,
        "expected K/N with 1 <= K <= N",
    );
}

#[test]
fn a_bench_failing_in_a_shard_fails_the_merge_as_the_unsharded_run() {
    let w = wasm();
    // trap_on_request is the 12th bench in export order, so part 2/2's.
    let flags = trapping_run(&w);
    let whole = Scratch::new("shard_trap_whole");
    let expected = whole.run(&flags);
    assert_eq!(expected.status.code(), Some(1));
    let s = Scratch::new("shard_trap_parts");
    for (k, code) in [("1", 0), ("2", 1)] {
        let (shard, out) = (format!("{k}/2"), format!("part{k}"));
        let mut args = flags.to_vec();
        args.extend(["--shard", &shard, "--out", &out]);
        let o = s.run(&args);
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
    }
    let o = s.merge(&["part1", "part2", "--out", "."]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), stdout(&expected));
    assert_eq!(stderr(&o), stderr(&expected));
    assert!(stderr(&o).contains("1 of 12 benchmarks failed (trap_on_request)"));
    assert!(!s.path("canbench_results.yml").exists() && !s.path("canbench_results.csv").exists());
}

#[test]
fn instruction_tracing_writes_each_bench_s_flame_graph_summing_to_its_instructions() {
    let s = Scratch::new("tracing");
    let w = wasm();
    std::fs::create_dir_all(s.path("out")).unwrap();
    let o = s.run(&[
        "--wasm",
        &w,
        "--persist",
        "--instruction-tracing",
        "--results",
        "out/results.yml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let results = icbench::canbench::results::read(&s.path("out/results.yml")).unwrap();
    assert!(results.len() >= 5, "{results:?}");
    for (name, result) in &results {
        // canbench's line closes the bench's block, before its blank line.
        let line = format!("Instruction traces written to out/{name}.svg\n\n");
        assert!(out.contains(&line), "{name}: {out}");
        let svg = s.read(&format!("out/{name}.svg"));
        assert!(svg.starts_with("<?xml") && svg.contains("<svg"), "{name}");
        let folded = s.read(&format!("out/{name}.folded"));
        let sum: u64 = folded
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, result.total.instructions, "{name}: {folded}");
    }
    // The empty bench: 207, of which 200 are the closing performance_counter read's fee.
    let empty = s.read("out/empty.folded");
    let fee: Vec<&str> = empty
        .lines()
        .filter(|l| l.contains("ic0.performance_counter"))
        .collect();
    assert_eq!(fee.len(), 1, "{empty}");
    assert!(fee[0].ends_with(" 200"), "{empty}");
    // Tracing moves no count: the results are those of a run without it.
    let plain = s.run(&["--wasm", &w, "--persist", "--results", "out/plain.yml"]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert_eq!(
        icbench::canbench::results::read(&s.path("out/plain.yml")).unwrap(),
        results
    );
}

#[test]
fn replica_selects_the_rules_and_parts_of_other_rules_do_not_merge() {
    let w = wasm();
    // canbench's own PocketIC charges no page; today's replica charges touch_new_pages'
    // two new heap pages (tests/it/canbench_baseline.rs works the figure out).
    let s = Scratch::new("replica");
    let o = s.run(&["--wasm", &w, "touch_new_pages"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("    instructions: 339 (new)\n"),
        "{}",
        stdout(&o)
    );
    let o = s.run(&["--wasm", &w, "--replica", "2026-07", "touch_new_pages"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("    instructions: 160.34 K (new)\n"),
        "{}",
        stdout(&o)
    );
    // An unknown vintage is refused, naming the known ones.
    let o = s.run(&["--wasm", &w, "--replica", "2027"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("2025-03, 2026-04, 2026-05, 2026-07"),
        "{}",
        stderr(&o)
    );
    // Two parts run with `flag` at its two `values` into `{stem}1` and `{stem}2`, then
    // merged: refused, and what it said.
    let merge_of_parts = |stem: &str, flag: &str, values: [&str; 2]| {
        for (k, value) in (1..).zip(values) {
            let (shard, out) = (format!("{k}/2"), format!("{stem}{k}"));
            let o = s.run(&["--wasm", &w, "--shard", &shard, "--out", &out, flag, value]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        }
        let o = s.merge(&[&format!("{stem}1"), &format!("{stem}2"), "--out", "."]);
        assert_ne!(o.status.code(), Some(0));
        stderr(&o)
    };
    // Parts charged by different rules are not one run.
    let err = merge_of_parts("part", "--replica", ["2025-03", "2026-07"]);
    assert!(
        err.contains("they differ in the replica rules (--replica) (2025-03 vs 2026-07)"),
        "{err}"
    );
    // So are parts counted on different hosts.
    let err = merge_of_parts("host", "--host", ["linux", "macos-arm64"]);
    assert!(
        err.contains("they differ in the host (--host) (linux vs macos-arm64)"),
        "{err}"
    );
}

#[test]
fn a_pocket_ic_release_by_name_charges_by_its_vintage() {
    let w = wasm();
    let s = Scratch::new("pocket_ic_by_name");
    // PocketIC 16.0.0 has the memory tracker: the same bench as --replica 2026-07, byte for
    // byte, and the line says which server.
    let by_release = s.run(&[
        "--wasm",
        &w,
        "--replica",
        "pocket-ic-16.0.0",
        "touch_new_pages",
    ]);
    let by_vintage = s.run(&["--wasm", &w, "--replica", "2026-07", "touch_new_pages"]);
    assert_eq!(by_release.status.code(), Some(0), "{}", stderr(&by_release));
    assert_eq!(stdout(&by_release), stdout(&by_vintage));
    assert_eq!(
        stderr(&by_release),
        "Replica rules 2026-07: the figures PocketIC 16.0.0 to 16.1.0 give; `--replica pocket-ic-VERSION` names another server's.\n".to_string()
            + &provenance_line()
    );
    // 16.1.0 charges as 16.0.0 did.
    let newer = s.run(&[
        "--wasm",
        &w,
        "--replica",
        "pocket-ic-16.1.0",
        "touch_new_pages",
    ]);
    assert_eq!(stdout(&newer), stdout(&by_vintage));
    // Its arm64-darwin build counts a Mac's 16 KiB pages: a quarter of each page charge,
    // and the line says so.
    let mac = s.run(&[
        "--wasm",
        &w,
        "--replica",
        "pocket-ic-16.1.0",
        "--host",
        "macos-arm64",
        "touch_new_pages",
    ]);
    assert_eq!(mac.status.code(), Some(0), "{}", stderr(&mac));
    assert_ne!(stdout(&mac), stdout(&by_vintage));
    assert!(stdout(&mac).contains("40.34 K"), "{}", stdout(&mac));
    assert_eq!(
        stderr(&mac),
        "Replica rules 2026-07 on host macos-arm64 (`--host`: 16 KiB OS pages, a native arm64-darwin server's): the figures PocketIC 16.0.0 to 16.1.0 give; `--replica pocket-ic-VERSION` names another server's.\n".to_string()
            + &provenance_line()
    );
    let o = s.run(&["--wasm", &w, "--host", "macos"]);
    fails_with(&o, 2, "invalid value 'macos' for '--host <HOST>'");
    // canbench's own server, 13.0.0, is icbench canbench's default.
    let own = s.run(&[
        "--wasm",
        &w,
        "--replica",
        "pocket-ic-13.0.0",
        "touch_new_pages",
    ]);
    let default = s.run(&["--wasm", &w, "touch_new_pages"]);
    assert_eq!(stdout(&own), stdout(&default));
    // An unknown release lists the known ones and exits 2 before any work.
    let o = s.run(&["--wasm", &w, "--replica", "pocket-ic-17.0.0"]);
    fails_with(
        &o,
        2,
        "invalid value 'pocket-ic-17.0.0' for '--replica <VINTAGE>'",
    );
    assert!(
        stderr(&o).contains("pocket-ic-13.0.0, pocket-ic-14.0.0"),
        "{}",
        stderr(&o)
    );
}

/// The page lines --pages puts under scope_pages' total and scopes: the figures of
/// tests/it/canbench_baseline.rs (heap pages written 6, 1 and 2, one stable page read;
/// 80,000 per page accessed under 2026-07), with `count` after each page count and `charge`
/// after the charge.
fn scope_pages_lines(per_page: u64, count: &str, charge: &str) -> [String; 3] {
    let lines = |heap: u64, stable: u64| {
        let charged = match (heap + stable) * per_page {
            0 => "0".to_string(),
            c => format!("{:.2} K", c as f64 / 1e3),
        };
        format!(
            "    heap_wasm_pages_accessed: {heap}{count}\n    heap_wasm_pages_written: {heap}{count}\n    stable_wasm_pages_accessed: {stable}{count}\n    stable_wasm_pages_written: 0{count}\n    page_charge_instructions: {charged}{charge}\n"
        )
    };
    [lines(6, 0), lines(1, 0), lines(2, 0)]
}

/// scope_pages' block from its total's last line of canbench's on: `note` on canbench's
/// lines that did not move, the scopes' instructions and the page lines under each.
fn scope_pages_block(note: &str, instructions: [&str; 2], pages: [String; 3]) -> String {
    let [total, inner, outer] = pages;
    let [inner_ins, outer_ins] = instructions;
    format!(
        "    stable_memory_increase: 1 pages {note}\n{total}\n  inner (scope):\n    calls: 1 {note}\n    instructions: {inner_ins}\n    heap_increase: 0 pages {note}\n    stable_memory_increase: 0 pages {note}\n{inner}\n  outer (scope):\n    calls: 1 {note}\n    instructions: {outer_ins}\n    heap_increase: 0 pages {note}\n    stable_memory_increase: 0 pages {note}\n{outer}\n{DASHES}\n"
    )
}

/// The report without the lines, the table's columns and the legend --pages adds.
fn without_pages(report: &str) -> String {
    report
        .lines()
        .filter(|l| !l.contains("_wasm_pages_") && !l.contains("page_charge"))
        .filter(|l| !l.starts_with("HPA/HPW"))
        .map(|l| match l.starts_with('|') {
            // The table's five page columns end each of its lines.
            true => {
                let cells: Vec<&str> = l.split('|').collect();
                format!("{}|\n", cells[..cells.len() - 6].join("|"))
            }
            false => format!("{l}\n"),
        })
        .collect()
}

/// Asserts that `report` has `text`, showing the report when not.
fn assert_has(report: &str, text: &str) {
    assert!(report.contains(text), "{report}");
}

#[test]
fn pages_adds_each_bench_s_and_scope_s_pages_to_the_report() {
    let w = wasm();
    let s = Scratch::new("pages");
    let plain = s.run(&["--wasm", &w, "scope_pages"]);
    let paged = s.run(&["--wasm", &w, "--pages", "scope_pages"]);
    assert_eq!(paged.status.code(), Some(0), "{}", stderr(&paged));
    // No previous run: the figures alone, under canbench's lines, which stay as they are.
    let report = stdout(&paged);
    let pages = scope_pages_lines(0, "", "");
    let block = scope_pages_block("(new)", ["374 (new)", "1518 (new)"], pages);
    assert_has(&report, &block);
    assert!(
        report.contains("| status | name               | calls |   ins |  ins Δ% | HI |  HI Δ% | SMI |  SMI Δ% | HPA | HPW | SPA | SPW | PCI |\n")
            && report.contains("|  new   | scope_pages::outer |     1 | 1.52K |         |  0 |        |   0 |         |   2 |   2 |   0 |   0 |   0 |\n")
            && report.contains("\nHPA/HPW = heap Wasm pages accessed/written, SPA/SPW = stable Wasm pages accessed/written, PCI = page_charge_instructions (this run's)\n"),
        "{report}"
    );
    // The flag only adds: the rest is the report without it, byte for byte.
    assert_eq!(without_pages(&report), stdout(&plain));

    // After a run that persisted its results and CSV, each figure has canbench's note
    // against that run's; under 2026-07 only the charge moved. Shards carry the flag and
    // the previous figures: the merge prints the unsharded report.
    let o = s.run(&["--wasm", &w, "--persist", "--csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let flags = ["--wasm", &w, "--pages", "--replica", "2026-07"];
    let o = s.run(&flags);
    let report = stdout(&o);
    let pages = scope_pages_lines(80_000, " (no change)", " (regressed from 0)");
    let moved = [
        "80.37 K (regressed by 21390.37%)",
        "161.52 K (regressed by 10540.18%)",
    ];
    assert_has(&report, &scope_pages_block("(no change)", moved, pages));
    for k in ["1", "2"] {
        let (shard, out) = (format!("{k}/2"), format!("part{k}"));
        let mut args = flags.to_vec();
        args.extend(["--shard", &shard, "--out", &out]);
        let o = s.run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let o = s.merge(&["part1", "part2", "--out", "."]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), report);

    // A CSV written without --persist is another run's: the figures have no notes.
    let o = s.run(&["--wasm", &w, "--csv", "--replica", "2026-07", "scope_pages"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.run(&["--wasm", &w, "--pages", "scope_pages"]);
    let [total, ..] = scope_pages_lines(0, "", "");
    assert!(
        stdout(&o).contains(&format!(
            "    stable_memory_increase: 1 pages (no change)\n{total}\n"
        )),
        "{}",
        stdout(&o)
    );

    // With nowhere to print the pages, the flag is refused before any work.
    let o = s.run(&["--wasm", &w, "--pages", "--hide-results", "--less-verbose"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "error: --pages adds to the bench blocks and the summary's table, but --hide-results and --less-verbose print neither\n"
    );
}
