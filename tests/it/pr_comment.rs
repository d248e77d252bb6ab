//! The pull-request comment, end to end: `icbench compare --format markdown` on the two
//! committed runs of tests/comment_fixture/suites and `icbench canbench --markdown` on the
//! canbench fixture against tests/comment_fixture/canbench/base.yml print the golden files
//! beside them (every case: a regression with its differential flame graph, an
//! improvement, a change under the noise threshold, a new and a removed scenario, a
//! failure, a comment cut to a size limit), and each is valid CommonMark with GFM tables as
//! GitHub reads it. `ICBENCH_BLESS=1` rewrites the golden files from the current output.

use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::support::{canbench_fixture, icbench_command, scratch_dir, stderr_of_exit};

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/comment_fixture")
        .join(path)
}

/// `text` against the golden file `path` (rewritten instead with ICBENCH_BLESS=1).
fn assert_golden(text: &str, path: &str) {
    let file = fixture(path);
    if std::env::var_os("ICBENCH_BLESS").is_some() {
        std::fs::write(&file, text).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    if text != golden {
        let line = text
            .lines()
            .zip(golden.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| text.lines().count().min(golden.lines().count()));
        panic!(
            "the comment differs from {} from line {} on (ICBENCH_BLESS=1 rewrites it):\n--- got\n{text}",
            file.display(),
            line + 1
        );
    }
}

/// `icbench compare` on the two fixture runs, from `dir` (where the flame graphs go, as
/// `profile-diffs/...`): exit status, stdout, stderr.
fn compare(dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = icbench_command()
        .current_dir(dir)
        .arg("compare")
        .arg(fixture("suites/base/results.json"))
        .arg(fixture("suites/new/results.json"))
        .args([
            "--format",
            "markdown",
            "--flame-graphs",
            "profile-diffs",
            "--marker",
            "icbench-pr-comment",
        ])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// [`compare`] in a fresh scratch directory `name`, which must fail the gate (exit 1):
/// the directory, stdout, stderr.
fn failing_compare(name: &str, extra: &[&str]) -> (PathBuf, String, String) {
    let dir = scratch_dir(name);
    let (code, text, stderr) = compare(&dir, extra);
    assert_eq!(code, 1, "{stderr}");
    (dir, text, stderr)
}

#[test]
fn compare_prints_the_golden_comment_and_draws_the_regression_s_flame_graph() {
    // A regression and a newly failing scenario: the gate fails.
    let (dir, text, stderr) = failing_compare("pr-comment-suites", &[]);
    assert!(stderr.contains("gate failed (no regression of 2% or more, no scenario failing that did not fail before):\n  seed003/sqlite/WAL/middle/insert/1: charged +5.00%, store +6.00% (noise ±2%)\n  seed003/sqlite/WAL/end/insert/10: ok → failed: IC0522"), "{stderr}");
    assert_golden(&text, "suites/comment.md");
    check_markdown(&text);
    let svg = std::fs::read_to_string(dir.join("profile-diffs/sqlite-wal/middle/insert/1.svg"))
        .expect("the differential flame graph the comment names");
    assert!(
        svg.contains("walChecksumBytes"),
        "the frame only the new run has"
    );
    assert!(
        svg.contains("+224,467 instructions"),
        "the title states the difference"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_comment_over_the_limit_is_cut_from_the_folded_table_and_says_so() {
    let (dir, text, _) = failing_compare("pr-comment-cut", &["--max-chars", "3000"]);
    assert!(text.len() <= 3000, "{} bytes", text.len());
    assert_golden(&text, "suites/comment-cut.md");
    check_markdown(&text);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ceilings_replace_the_regression_gate_but_a_new_failure_still_fails() {
    let (dir, text, _) = failing_compare("pr-comment-ceilings", &["--max-ratio", "1.10"]);
    assert!(text.contains("**Gate: failed**, 1 failure (no scenario above 1.1x its base, no scenario failing that did not fail before)."), "{text}");
    let (_, text, stderr) = compare(&dir, &["--max-ratio", "1.04"]);
    assert!(text.contains("**Gate: failed**, 2 failures"), "{text}");
    assert!(
        stderr.contains("seed003/sqlite/WAL/middle/insert/1: 1.05x > 1.04x"),
        "{stderr}"
    );
    let (_, _, stderr) = compare(&dir, &["--max-section-ratio", "1.001"]);
    assert!(
        stderr.contains("seed003 middle average: 1.00x > 1.001x"),
        "{stderr}"
    );
    let (code, _, stderr) = compare(&dir, &["--max-ratio", "0"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--max-ratio must be a positive multiplier, got 0"),
        "{stderr}"
    );
    let (code, _, stderr) = compare(&dir, &["--max-chars", "100"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--max-chars 100 is too small"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_against_itself_passes_and_says_nothing_moved() {
    let base = fixture("suites/base/results.json");
    let out = icbench_command()
        .args(["compare", "--format", "markdown"])
        .args([&base, &base])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("### icbench: 0 regressions, 0 improvements beyond ±2%, 35 unchanged\n\n"),
        "{text}"
    );
    assert!(text.contains("no unchanged scenario moved at all."));
    assert!(text.contains("**Gate: passed** (no regression of 2% or more"));
    assert!(!text.contains("#### Regressions"));
    check_markdown(&text);
}

#[test]
fn canbench_writes_the_golden_comment_with_its_failed_bench() {
    let dir = scratch_dir("pr-comment-canbench");
    let stderr = stderr_of_exit(
        icbench_command()
            .current_dir(&dir)
            .arg("canbench")
            .arg("--wasm")
            .arg(canbench_fixture::fixture_wasm_path())
            .arg("--results")
            .arg(fixture("canbench/base.yml"))
            // hex("trap"): trap_on_request traps, and init writes the argument to stable
            // memory.
            .args(["--init-args", "74726170", "--markdown", "comment.md"])
            .args(["--fail-on-regression", "--marker", "icbench-canbench"])
            .env_remove("CANBENCH_CFG_FILE"),
        1,
    );
    assert!(
        stderr.contains("Pull-request comment written to comment.md"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "gate failed (3 checks):\n  init_arg_pages: regressed (stable_memory_increase +inf%)"
        ),
        "{stderr}"
    );
    let text = std::fs::read_to_string(dir.join("comment.md")).unwrap();
    // The provenance paragraph names this machine: the golden file has `MACHINE` there.
    let machine = icbench::report::Machine::this(true).line();
    assert!(
        stderr.contains(&format!(". Machine: {machine}.\n")),
        "{stderr}"
    );
    let text = text.replacen(&format!("Machine: {machine}."), "Machine: MACHINE.", 1);
    assert_golden(&text, "canbench/comment.md");
    check_markdown(&text);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The comment as GitHub parses it: its first line is a heading saying what moved; every
/// table is a table (rows as wide as the header, none left as text starting with `|`);
/// each `####` heading has its table or says what was cut; the folded part is an HTML
/// block around parsed markdown; the marker is an HTML comment.
fn check_markdown(text: &str) {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    let events: Vec<Event> = Parser::new_ext(text, options).collect();
    assert!(
        matches!(
            events.first(),
            Some(Event::Start(Tag::Heading {
                level: HeadingLevel::H3,
                ..
            }))
        ),
        "the first line is not a heading: {:?}",
        events.first()
    );
    let (mut tables, mut in_cell, mut cells, mut width) = (0, false, 0, 0);
    let (mut details_open, mut tables_in_details, mut in_paragraph) = (false, 0, false);
    // After a `####` heading comes its table, or a paragraph saying its rows were cut.
    let (mut heading_ended, mut cut_paragraph) = (false, None::<String>);
    for event in &events {
        if let (true, Event::Start(tag)) = (heading_ended, event) {
            heading_ended = false;
            match tag {
                Tag::Table(_) => {}
                Tag::Paragraph => cut_paragraph = Some(String::new()),
                other => panic!("a #### heading followed by {other:?}, not its table"),
            }
        }
        match event {
            Event::End(TagEnd::Heading(HeadingLevel::H4)) => heading_ended = true,
            Event::Start(Tag::Table(aligns)) => {
                tables += 1;
                width = aligns.len();
                if details_open {
                    tables_in_details += 1;
                }
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => cells = 0,
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                assert_eq!(cells, width, "a row of {cells} cells in a table of {width}")
            }
            Event::Start(Tag::TableCell) => {
                cells += 1;
                in_cell = true;
            }
            Event::End(TagEnd::TableCell) => in_cell = false,
            Event::Start(Tag::Paragraph) => in_paragraph = true,
            Event::End(TagEnd::Paragraph) => {
                in_paragraph = false;
                if let Some(text) = cut_paragraph.take() {
                    assert!(
                        text.contains("cut for size"),
                        "a #### heading without its table: {text}"
                    );
                }
            }
            Event::Text(t) if in_paragraph && !in_cell => {
                assert!(!t.starts_with('|'), "a table left as text: {t}");
                if let Some(text) = &mut cut_paragraph {
                    text.push_str(t);
                }
            }
            Event::Html(h) | Event::InlineHtml(h) => {
                if h.contains("<details>") {
                    details_open = true;
                }
                if h.contains("</details>") {
                    details_open = false;
                }
            }
            _ => {}
        }
    }
    assert!(!details_open, "<details> is never closed");
    assert!(tables > 0 && tables_in_details > 0, "{tables} tables");
    if text.trim_end().ends_with("-->") {
        let marker = events.iter().rev().find_map(|e| match e {
            Event::Html(h) => Some(h.to_string()),
            _ => None,
        });
        assert!(
            marker.as_deref().is_some_and(|m| m.starts_with("<!-- ")),
            "the marker is not an HTML comment of its own: {marker:?}"
        );
    }
}

/// docs/ci.md shows the example for canister projects as it is (each `<!-- file: PATH -->`
/// line is followed by a fenced block holding PATH's text, byte for byte) and links this
/// repository's workflow.
#[test]
fn docs_ci_shows_the_workflows_as_they_are() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ci.md")).unwrap();
    let mut shown = Vec::new();
    for (at, _) in doc.match_indices("<!-- file: ") {
        let rest = &doc[at + "<!-- file: ".len()..];
        let (path, rest) = rest.split_once(" -->\n").expect("a file marker line");
        let block = rest
            .strip_prefix("```yaml\n")
            .unwrap_or_else(|| panic!("no ```yaml block right after the marker of {path}"));
        let (text, _) = block.split_once("\n```\n").expect("the block's end");
        let file = std::fs::read_to_string(root.join(path)).unwrap();
        assert_eq!(
            format!("{text}\n"),
            file,
            "docs/ci.md's copy of {path} differs from the file"
        );
        shown.push(path.to_string());
    }
    assert_eq!(shown, ["docs/ci/canbench.yml"]);
    // This repository's own workflow is linked, not copied: the link must name the file.
    let workflow = ".github/workflows/benchmarks.yml";
    assert!(root.join(workflow).is_file());
    assert!(
        doc.contains(&format!("](../{workflow})")),
        "docs/ci.md does not link {workflow}"
    );
}

/// With `--instruction-tracing`, the traces beside the results file that the run which
/// persisted it left (their totals are its figures) are the base's: a regressed bench gets
/// `BENCH.diff.svg`, named in the comment. A trace whose total is not the file's figure
/// belongs to another run and is not used.
#[test]
fn canbench_draws_a_regressed_bench_s_flame_graph_from_the_base_s_trace() {
    let dir = scratch_dir("pr-comment-canbench-traces");
    let run = |extra: &[&str]| {
        icbench_command()
            .current_dir(&dir)
            .arg("canbench")
            .arg("--wasm")
            .arg(canbench_fixture::fixture_wasm_path())
            .args(["--results", "canbench_results.yml", "--instruction-tracing"])
            .args(["--hide-results", "--less-verbose"])
            .args(extra)
            .env_remove("CANBENCH_CFG_FILE")
            .output()
            .unwrap()
    };
    let o = run(&["--persist"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The base spends one stack of repeated_scope's less, in its trace and in the file.
    let trace = dir.join("repeated_scope.folded");
    let folded = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = folded.lines().collect();
    let count = |l: &str| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap();
    let biggest = lines.iter().copied().max_by_key(|l| count(l)).unwrap();
    let cut = count(biggest);
    let total: u64 = lines.iter().map(|l| count(l)).sum();
    let kept: Vec<&str> = lines.into_iter().filter(|l| *l != biggest).collect();
    std::fs::write(&trace, kept.join("\n") + "\n").unwrap();
    assert!(
        cut * 50 >= total,
        "a change of 2% or more: {cut} of {total}"
    );
    let results = dir.join("canbench_results.yml");
    let yml = std::fs::read_to_string(&results).unwrap();
    let figure = |bench: &str, n: u64| {
        format!("  {bench}:\n    total:\n      calls: 1\n      instructions: {n}\n")
    };
    assert!(yml.contains(&figure("repeated_scope", total)), "{yml}");
    let yml = yml.replace(
        &figure("repeated_scope", total),
        &figure("repeated_scope", total - cut),
    );
    // scopes' file figure drops 5% but its trace stays this run's: not the base's.
    let scopes = yml
        .split("  scopes:\n    total:\n      calls: 1\n      instructions: ")
        .nth(1)
        .and_then(|rest| rest.split('\n').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap();
    let yml = yml.replace(
        &figure("scopes", scopes),
        &figure("scopes", scopes * 95 / 100),
    );
    std::fs::write(&results, yml).unwrap();

    let o = run(&["--markdown", "comment.md"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(dir.join("comment.md")).unwrap();
    check_markdown(&text);
    let row = |bench: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("| `{bench}` | ")))
            .unwrap_or_else(|| panic!("no row of {bench}: {text}"))
            .to_string()
    };
    assert!(
        row("repeated_scope").ends_with(" | `repeated_scope.diff.svg` |"),
        "{text}"
    );
    assert!(row("scopes").ends_with(" |  |"), "{text}");
    let svg = std::fs::read_to_string(dir.join("repeated_scope.diff.svg")).unwrap();
    assert!(
        svg.contains(&format!(
            "+{} instructions",
            icbench::report::format::thousands(cut)
        )),
        "the title states the difference"
    );
    assert!(!dir.join("scopes.diff.svg").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
