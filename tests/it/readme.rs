//! Every command README.md shows runs as written (issue 65): each `icbench` command of its
//! inline code and of its shell blocks, once, in the order the README shows it, in one
//! scratch directory, so that a command reads what an earlier one wrote (`results/`,
//! `base/`, `part1`); a run of a suite gets a smaller store ([`SMALL`]), `icbench canbench`
//! runs in a canbench project of the fixture (the README's `my-canister`). A command a test
//! cannot run here (the network, a PocketIC server, dfx) is in [`NOT_RUN`] with why; a
//! command the README gains is run or must be named there.

use std::path::Path;
use std::process::Command;

/// The commands the test does not run, and why.
const NOT_RUN: [(&str, &str); 12] = [
    (
        "cargo run --release",
        "the default run at 1,000,000 rows: `icbench` runs it small",
    ),
    (
        "cargo run --release --",
        "the prefix of the icbench commands it runs",
    ),
    ("cargo test --release", "the command that runs this test"),
    (
        "cargo install --locked --path .",
        "builds and installs: .ci/package-check.sh",
    ),
    ("cargo binstall icbench", "the network"),
    ("cargo install --locked icbench", "the network"),
    (
        "curl -sSfL https://github.com/icbench/icbench/releases/latest/download/install.sh | sh",
        "the network",
    ),
    (
        "cargo run --release --features pocket-ic -- --engine pocket-ic",
        "a PocketIC server (docs/pocket-ic.md)",
    ),
    (
        "icbench crosscheck",
        "a PocketIC server (docs/pocket-ic.md)",
    ),
    ("dfx deploy bench", "dfx and a replica"),
    ("icp deploy", "icp-cli and a replica"),
    (
        "dfx canister snapshot download",
        "dfx and a replica: `icbench replay` runs on a snapshot `--save-snapshot` made",
    ),
];

/// What a run of each suite gets besides its own arguments, so that it takes seconds: the
/// same kind of store, fewer rows ([`SMALL_ROWS`] where the suite reads `--rows`, and
/// these).
const SMALL: [(&str, &[&str]); 3] = [
    ("seed003", &["--batches", "1,100"]),
    ("scaling", &["--scaling-max-rows", "2000"]),
    ("tune", &crate::support::SMALL_TUNE_SEARCH),
];
const SMALL_ROWS: [&str; 2] = ["--rows", "2000"];

/// icbench's subcommands the README shows (any other first word is a flag of a run).
const SUBCOMMANDS: [&str; 6] = [
    "canbench",
    "compare",
    "merge",
    "profile-top",
    "cache",
    "replay",
];

/// The commands of `readme`, in order, each once: inline code that starts with `icbench`,
/// `cargo `, `curl `, `dfx ` or `icp ` (a span that starts with `--` goes on the `icbench`
/// span before it in the same paragraph: "`icbench --shard 1/2 --out part1` on one,
/// `--shard 2/2 ...` on the other"), and the lines of shell blocks without their comments.
fn commands(readme: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |c: String| {
        if !out.contains(&c) {
            out.push(c);
        }
    };
    let mut shell = None;
    let mut paragraph = String::new();
    for line in readme.lines().chain([""]) {
        let fence = line.strip_prefix("```");
        if shell.is_none() && (fence.is_some() || line.trim().is_empty()) {
            spans(&std::mem::take(&mut paragraph), &mut push);
        }
        if let Some(lang) = fence {
            shell = match shell {
                Some(_) => None,
                None => Some(matches!(lang, "sh" | "bash")),
            };
            continue;
        }
        match shell {
            Some(true) => {
                let command = line.split(" #").next().unwrap().trim();
                if !command.is_empty() && !command.starts_with("cd ") {
                    push(command.to_string());
                }
            }
            Some(false) => {}
            None => {
                paragraph.push_str(line);
                paragraph.push(' ');
            }
        }
    }
    out
}

/// The commands in the inline code of one paragraph of prose (its lines joined).
fn spans(paragraph: &str, push: &mut impl FnMut(String)) {
    let mut last_icbench = false;
    for (i, span) in paragraph.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        let span = span.split_whitespace().collect::<Vec<_>>().join(" ");
        if span.starts_with("--") {
            if last_icbench {
                push(format!("icbench {span}"));
            }
        } else if span == "icbench" || span.starts_with("icbench ") {
            last_icbench = true;
            push(span);
        } else if ["cargo ", "curl ", "dfx ", "icp "]
            .iter()
            .any(|p| span.starts_with(p))
            || span == "cargo install"
        {
            push(span);
        }
    }
}

/// A command's words as a shell splits them (single quotes only: the README's).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in command.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    assert!(!quoted, "{command}: an unclosed quote");
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// `args` of a run (no subcommand), with its suite's [`SMALL`] flags that it does not give.
fn small(args: &[String]) -> Vec<String> {
    let suite = args
        .iter()
        .position(|a| a == "--suite")
        .map_or("seed003", |i| args[i + 1].as_str());
    let (_, extra) = SMALL
        .iter()
        .find(|(s, _)| *s == suite)
        .unwrap_or_else(|| panic!("README.md runs --suite {suite}: give it a SMALL entry"));
    let mut out = args.to_vec();
    let rows = icbench::suites::find(suite).is_some_and(|s| s.reads("rows"));
    let rows: &[&str] = if rows { &SMALL_ROWS } else { &[] };
    for pair in [rows, extra].concat().chunks(2) {
        if !args.iter().any(|a| a == pair[0]) {
            out.extend(pair.iter().map(|s| s.to_string()));
        }
    }
    out
}

fn run(dir: &Path, args: &[String], cache: Option<&Path>) {
    let mut command: Command = crate::support::icbench_command();
    if let Some(cache) = cache {
        command.env("ICBENCH_CACHE_DIR", cache);
    }
    let out = command
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("icbench runs");
    assert!(
        out.status.success(),
        "icbench {}: {}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_command_the_readme_shows_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let commands = commands(&readme);
    for (command, why) in NOT_RUN {
        assert!(
            commands.iter().any(|c| c == command),
            "NOT_RUN names `{command}` ({why}), which README.md no longer shows"
        );
    }
    let dir = crate::support::scratch_dir("readme-commands");
    // `cd my-canister`: a canbench project of the fixture.
    let project = dir.join("my-canister");
    std::fs::create_dir_all(&project).unwrap();
    let fixture = crate::support::canbench_fixture::fixture_wasm_path();
    std::fs::write(
        project.join("canbench.yml"),
        format!("wasm_path: {}\n", fixture.display()),
    )
    .unwrap();
    // What `icbench compare base/results.json ...` compares against: a run as the README's
    // smaller run makes it.
    run(&dir, &small(&["--out".into(), "base".into()]), None);
    // `icbench cache clear` clears a cache of its own, not the one the other tests share.
    let cache = dir.join("cache");
    let mut ran = Vec::new();
    for command in &commands {
        if NOT_RUN.iter().any(|(c, _)| c == command) {
            continue;
        }
        let words = words(command);
        assert_eq!(
            words[0], "icbench",
            "{command}: run it or name it in NOT_RUN"
        );
        let args = &words[1..];
        match args.first().map(String::as_str) {
            Some("canbench") => run(&project, args, None),
            // `icbench mops` in a Motoko project: the mops tests' fixture.
            Some("mops") => run(crate::mops::project(), args, None),
            Some("cache") => run(&dir, args, Some(&cache)),
            // `icbench replay DIR ... --upgrade new.wasm`: a snapshot of a bench canister
            // (made with `--save-snapshot`) and its module as the new one.
            Some("replay") => {
                let wasm = crate::support::bench_wasm_path();
                if !dir.join("DIR").exists() {
                    let make = [
                        "replay",
                        "--wasm",
                        wasm.to_str().unwrap(),
                        "--save-snapshot",
                        "DIR",
                    ];
                    run(&dir, &make.map(String::from), None);
                    std::fs::copy(wasm, dir.join("new.wasm")).unwrap();
                }
                run(&dir, args, None)
            }
            Some(sub) if SUBCOMMANDS.contains(&sub) => run(&dir, args, None),
            Some("--help" | "--version") => run(&dir, args, None),
            _ => run(&dir, &small(args), None),
        }
        ran.push(command.as_str());
    }
    // The README's commands, beyond the two a fresh machine runs.
    assert!(ran.len() >= 20, "{ran:?}");
    assert!(ran.contains(&"icbench merge part1 part2 --out results"));
    assert!(project.join("canbench_results.yml").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn commands_are_read_from_code_spans_and_shell_blocks() {
    let readme = "\
Run `icbench --shard 1/2 --out a` on one, `--shard 2/2 --out b` on the other; `dfx.json`.

```sh
cd my-canister        # where canbench.yml is
icbench canbench --persist   # a comment
```
```
icbench --not-a-shell-block
```
";
    assert_eq!(
        commands(readme),
        [
            "icbench --shard 1/2 --out a",
            "icbench --shard 2/2 --out b",
            "icbench canbench --persist"
        ]
    );
    assert_eq!(
        words("icbench --profile '*/a b'"),
        ["icbench", "--profile", "*/a b"]
    );
}
