//! `icbench profile-top` and `icbench profile-diff` on small hand-made folded files, and
//! their refusal of files that are missing or not folded stacks (exit status 2).

use std::path::{Path, PathBuf};

/// The documented small profile (docs/profiles.md): `a` and `b` recurse in `main;a;b;a;b`.
const OFF: &str = "\
main;a 10
main;a;b 20
main;a;b;a;b 30
main;a;b;a;ic0.msg_reply 5
main 1
";

/// OFF with more instructions in `b`, a new `ic0.stable64_write` and no `ic0.msg_reply`.
const WAL: &str = "\
main;a 10
main;a;b 20
main;a;b;a;b 45
main;a;b;ic0.stable64_write 12
main 1
";

use crate::support::assert_has;
use crate::support::run_icbench as icbench;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn profile_top_prints_the_functions_by_self_instructions() {
    let dir = crate::support::scratch_dir("profile-top");
    let off = write(&dir, "off.folded", OFF);
    let (code, stdout, stderr) = icbench(&["profile-top", s(&off)]);
    assert_eq!(code, 0, "{stderr}");
    // The library's table (its exact values are report::flame's unit test), default --top 20.
    let table = icbench::report::Folded::parse(OFF).unwrap().top_table(20);
    assert_eq!(stdout, table);
    assert_eq!(
        stdout.lines().nth(2),
        Some("| b             |                50 |  75.76% |                     55 |      83.33% |")
    );
    let (code, stdout, _) = icbench(&["profile-top", s(&off), "--top", "1"]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout.lines().nth(3),
        Some("| (3 more functions) |                16 |  24.24% |                        |             |")
    );
}

#[test]
fn profile_diff_writes_a_differential_flame_graph() {
    let dir = crate::support::scratch_dir("profile-diff");
    let (off, wal) = (
        write(&dir, "off.folded", OFF),
        write(&dir, "wal.folded", WAL),
    );
    let out = dir.join("wal-over-off.svg");
    let (code, stdout, stderr) = icbench(&["profile-diff", s(&off), s(&wal), "--out", s(&out)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "");
    assert_eq!(stderr, format!("wrote {}\n", out.display()));
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.starts_with("<?xml"));
    // 88 - 66 = +22; b gained 15 (of WAL's 88), the new write 12, msg_reply is gone.
    assert_has(
        &svg,
        &format!("{} over {}: +22 instructions", wal.display(), off.display()),
    );
    assert_has(
        &svg,
        "<title>ic0.stable64_write (12 instructions, 13.64%; +13.64%)</title>",
    );
    assert!(!svg.contains("ic0.msg_reply"), "B's shape: {svg}");
    let (code, _, stderr) = icbench(&[
        "profile-diff",
        s(&off),
        s(&wal),
        "--out",
        s(&out),
        "--a-shape",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(
        svg.contains("<title>ic0.msg_reply (5 instructions, 7.58%; -7.58%)</title>"),
        "A's shape shows what B removed: {svg}"
    );
}

#[test]
fn profile_commands_refuse_bad_files_with_exit_2() {
    let dir = crate::support::scratch_dir("profile-bad");
    let good = write(&dir, "good.folded", OFF);
    let bad = write(&dir, "bad.folded", "main;a 10\nmain;a;b twenty\n");
    let empty = write(&dir, "empty.folded", "");
    let binary = dir.join("binary.folded");
    std::fs::write(&binary, [0xff, 0xfe, 0x20, 0x31]).unwrap();
    let out = dir.join("d.svg");
    let missing = dir.join("missing.folded");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["profile-top", s(&bad)],
            format!(
                "error: {}: line 2: the count \"twenty\" is not a whole number of instructions\n",
                bad.display()
            ),
        ),
        (
            vec!["profile-top", s(&missing)],
            format!("error: cannot read {}: No such file or directory (os error 2)\n", missing.display()),
        ),
        (
            vec!["profile-top", s(&empty)],
            format!(
                "error: {}: no stack in it: a profile has at least one `frame;frame COUNT` line with a count above zero\n",
                empty.display()
            ),
        ),
        (
            vec!["profile-top", s(&binary)],
            format!(
                "error: {}: not a folded-stack file (not UTF-8 text: invalid utf-8 sequence of 1 bytes from index 0)\n",
                binary.display()
            ),
        ),
        (
            vec!["profile-diff", s(&good), s(&bad), "--out", s(&out)],
            format!(
                "error: {}: line 2: the count \"twenty\" is not a whole number of instructions\n",
                bad.display()
            ),
        ),
        (
            vec!["profile-diff", s(&missing), s(&good), "--out", s(&out)],
            format!("error: cannot read {}: No such file or directory (os error 2)\n", missing.display()),
        ),
    ];
    for (args, expected) in cases {
        let (code, stdout, stderr) = icbench(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr, expected, "{args:?}");
        assert_eq!(stdout, "", "{args:?}");
    }
    assert!(!out.exists(), "no graph from bad input");
    // Usage errors are clap's, with the same exit status.
    let (code, _, stderr) = icbench(&["profile-diff", s(&good), s(&good)]);
    assert_eq!(code, 2);
    assert_has(&stderr, "--out <OUT>");
    let (code, _, stderr) = icbench(&["profile-top", s(&good), "--top", "0"]);
    assert_eq!(code, 2);
    assert_has(&stderr, "'0' for '--top <TOP>'");
}
