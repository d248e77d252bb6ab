//! The CLI refuses bad input with an error that names the problem and the accepted values,
//! before any work starts.

use std::process::Command;

fn icbench(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_icbench"))
        .args(args)
        .output()
        .expect("icbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_values_list_the_accepted_ones() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--positions", "sideways"],
            &["sideways", "middle, end, random"],
        ),
        (
            &["--journal-modes", "MEMORY,JOURNALISH"],
            &["JOURNALISH", "DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF"],
        ),
        (&["--stores", "redis"], &["redis", "btree, sqlite"]),
        (
            &["--batches", "0"],
            &["batch sizes must be between 1 and 100000"],
        ),
        (&["--rows", "10"], &["--rows must be at least 2000"]),
        (
            &["--engine", "replica"],
            &["replica", "embedded", "pocket-ic"],
        ),
        (
            &["--usd-per-xdr=-1"],
            &["--usd-per-xdr must be a positive number"],
        ),
    ];
    for (args, expected) in cases {
        let (code, stderr) = icbench(args);
        assert_ne!(code, 0, "{args:?} must fail");
        for e in *expected {
            assert!(stderr.contains(e), "{args:?}: expected {e:?} in {stderr}");
        }
    }
}

#[test]
fn pocket_ic_without_a_server_says_how_to_provide_one() {
    let (code, stderr) = icbench(&["--engine", "pocket-ic", "--quiet"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("POCKET_IC_BIN"), "{stderr}");
}

#[test]
fn compare_rejects_files_that_are_not_results() {
    let dir = std::env::temp_dir().join(format!("icbench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"suite\": 3}").unwrap();
    let (code, stderr) = icbench(&["compare", bad.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("bad.json"), "{stderr}");
    let (code, stderr) = icbench(&["compare", "/nonexistent/base.json", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("/nonexistent/base.json"), "{stderr}");
}
