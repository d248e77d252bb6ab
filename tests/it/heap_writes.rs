//! The heap's first touches found three ways: by heap marks in the module (no fault), by the
//! kernel's write log (userfaultfd, one fault per Wasm page) and by a protection fault per
//! 4 KiB page. Every count, and so every results.csv, must be the same; only the speed
//! differs.

use crate::support::{icbench_command, scratch_dir};

/// Linux 6.7 added what the write log needs (asynchronous write protection and
/// `PAGEMAP_SCAN`): on such a kernel the log must be in use.
fn kernel_has_write_log() -> bool {
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let mut parts = release
        .trim()
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().ok());
    matches!((parts.next(), parts.next()), (Some(Some(major)), Some(Some(minor))) if (major, minor) >= (6, 7))
}

/// A small run of the suites that write the heap most (the heap map, SQLite's page cache,
/// upgrades that fail and roll back): results.csv of each suite, and what the run said.
fn run(mode: &str) -> (Vec<(String, String)>, String) {
    let out = scratch_dir(&format!("heap-writes-{mode}"));
    let o = icbench_command()
        .env("ICBENCH_HEAP_WRITES", mode)
        .args([
            "--suite",
            "seed003,upgrade",
            "--rows",
            "2000",
            "--batches",
            "1,100",
        ])
        .args(["--upgrade-sizes", "2000", "--jobs", "2"])
        // The limit run (the heap near 4 GiB) is what this compares; the estimate of its
        // memory is checked in cli.rs, and another test's run beside this one must not
        // make it refuse.
        .arg("--ignore-memory-estimate")
        .arg("--out")
        .arg(&out)
        .output()
        .expect("icbench runs");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "ICBENCH_HEAP_WRITES={mode}: {stderr}");
    let files = ["results.csv", "upgrade/results.csv"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(out.join(f)).unwrap()))
        .collect();
    (files, stderr)
}

/// Three runs near the 4 GiB heap, one of them taking a fault per 4 KiB page, one compiling
/// the modules with heap marks: too long for `cargo test`, so `.ci/run` runs it (`cargo test
/// --release --test it -- --ignored heap_writes::`).
#[test]
#[ignore = "three runs near the 4 GiB heap (about 90 s); .ci/run runs it"]
fn the_kernel_write_log_finds_the_pages_faults_find() {
    let (faults, said) = run("faults");
    assert!(said.contains("heap writes found by: faults"), "{said}");
    let (logged, said) = run("auto");
    if kernel_has_write_log() {
        assert!(
            said.contains("heap writes found by: kernel write log"),
            "{said}"
        );
    }
    let (marked, said) = run("marks");
    assert!(said.contains("heap writes found by: heap marks"), "{said}");
    for (((file, a), (_, b)), (_, c)) in faults.iter().zip(&logged).zip(&marked) {
        assert!(a.lines().count() > 2, "{file} has no rows");
        assert!(
            a == b,
            "{file} differs between faults and the kernel's write log"
        );
        assert!(a == c, "{file} differs between faults and heap marks");
    }
}

#[test]
fn a_bad_heap_writes_value_is_refused_before_any_work() {
    let o = icbench_command()
        .env("ICBENCH_HEAP_WRITES", "sometimes")
        .args(["--rows", "2000"])
        .arg("--out")
        .arg(scratch_dir("heap-writes-bad"))
        .output()
        .expect("icbench runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    for needle in [
        "ICBENCH_HEAP_WRITES",
        "sometimes",
        "\"auto\"",
        "\"marks\"",
        "\"faults\"",
    ] {
        assert!(stderr.contains(needle), "{needle} missing from: {stderr}");
    }
}
