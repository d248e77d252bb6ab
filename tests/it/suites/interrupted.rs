//! Interrupted runs: a signal stops a run leaving no result, and the next run completes.

use super::*;

/// The interrupted runs' settings: one store, a prefill of some seconds, four scenarios.
const SIGNALLED_RUN: [&str; 8] = [
    "--stores",
    "btree",
    "--positions",
    "end",
    "--batches",
    "1",
    "--rows",
    "100000",
];

/// Starts a run into `out` (stderr piped, progress on), waits for its first prefill line,
/// sends `signal` and returns the exit code and stderr; `None` if the run ended before
/// the signal could be sent (its prefill was done before the line came).
#[allow(unsafe_code)] // kill(2) on the child
fn interrupted(out: &Path, extra: &[&str], signal: libc::c_int) -> Option<(i32, String)> {
    use std::io::{BufRead, BufReader, Read};
    let mut child = crate::support::icbench_command()
        .args(["--wasm", wasm_path().to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .args(SIGNALLED_RUN)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("icbench starts");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            child.wait().unwrap();
            return None;
        }
        seen += &line;
        if line.starts_with("prefill") {
            break;
        }
    }
    // SAFETY: a plain syscall on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    stderr.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    Some((status.code().unwrap_or(-1), seen))
}

/// Files under `dir` (names), sorted; temporary files included.
pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

#[test]
fn a_signal_stops_the_run_leaving_no_result_and_the_next_run_completes() {
    let out = temp_dir("interrupted");
    // SIGINT during the prefill: nothing written, and the run says so.
    let (code, stderr) =
        interrupted(&out, &[], libc::SIGINT).expect("the prefill outlasts the signal");
    assert_eq!(code, 128 + libc::SIGINT, "{stderr}");
    let expected = format!(
        "interrupted by SIGINT: stopped; not written: the seed003 suite's results in {}",
        out.display()
    );
    assert!(
        stderr.contains(&expected),
        "expected {expected:?} in {stderr}"
    );
    assert_eq!(
        names_in(&out),
        Vec::<String>::new(),
        "the directory was made empty before the run, and stays so"
    );

    // The next run completes, and writes every file.
    let wasm = wasm_path().to_str().unwrap();
    let run = [
        &["--quiet", "--wasm", wasm, "--out", out.to_str().unwrap()][..],
        &SIGNALLED_RUN,
    ]
    .concat();
    let (code, _, stderr) = icbench(&run);
    assert_eq!(code, 0, "{stderr}");
    let complete = names_in(&out);
    assert_eq!(
        complete,
        [
            "plot-end.svg",
            "report.md",
            "results.csv",
            "results.json",
            "work.csv"
        ]
    );
    let before: Vec<Vec<u8>> = complete
        .iter()
        .map(|n| std::fs::read(out.join(n)).unwrap())
        .collect();
    assert_eq!(read_report(&out.join("results.json")).results.len(), 4);

    // SIGTERM during another run's prefill (another payload, so not from the cache): the
    // complete files of the run before are left exactly as they were, nothing else added.
    let (code, stderr) = interrupted(&out, &["--payload-size", "90"], libc::SIGTERM)
        .expect("the prefill outlasts the signal");
    assert_eq!(code, 128 + libc::SIGTERM, "{stderr}");
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert_eq!(names_in(&out), complete);
    for (name, bytes) in complete.iter().zip(&before) {
        assert_eq!(&std::fs::read(out.join(name)).unwrap(), bytes, "{name}");
    }
}
