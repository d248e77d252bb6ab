//! A run stopped while a fill worker writes a post-prefill state (issue 87, D1): the
//! worker's temporary file stays in the cache, `icbench cache info` counts it, and the next
//! run removes it. The worker is stopped there by the test hook of
//! `disk_cache/temp.rs` (`ICBENCH_TEST_PAUSE_STATE_WRITE`), then Ctrl-C reaches the run's
//! process group, as a terminal sends it.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::run_faults::{module_file, Fault};

/// The cache's temporary files of post-prefill states.
fn temporary_states(cache: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cache.join("states"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp-"))
        .collect();
    names.sort();
    names
}

/// `icbench cache info`'s line of what stopped runs left.
fn left_line(cache: &Path) -> String {
    let o = crate::support::icbench_command()
        .env("ICBENCH_CACHE_DIR", cache)
        .args(["cache", "info"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with("left by stopped runs"));
    line.unwrap_or_else(|| panic!("no line of leftovers in {text}"))
        .to_string()
}

#[test]
fn a_state_a_stopped_worker_was_writing_is_counted_and_removed_by_the_next_run() {
    let dir = crate::support::scratch_dir("cache-leftovers");
    let (cache, paused) = (dir.join("cache"), dir.join("paused"));
    let wasm = module_file(&dir, Fault::None);
    // Three canisters to fill and two jobs: this process takes the longest fill first and
    // the next one left when it is done, so with two, a worker process slow to start under
    // load found none left and the run ended without a pause; and with three, this process
    // is making its next state when the signal comes.
    let run = crate::support::icbench_command()
        .env("ICBENCH_CACHE_DIR", &cache)
        .env("ICBENCH_TEST_PAUSE_STATE_WRITE", &paused)
        .args([
            "--stores",
            "mo-map,mo-pure-map,mo-region",
            "--rows",
            "2000",
            "--batches",
            "1",
        ])
        .args(["--positions", "end", "--no-reads", "--jobs", "2", "--quiet"])
        .args(["--wasm", &wasm, "--out"])
        .arg(dir.join("out"))
        .process_group(0)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let worker = loop {
        let pid = std::fs::read_to_string(&paused).unwrap_or_default();
        if let Ok(pid) = pid.parse::<u32>() {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no worker paused"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_ne!(worker, run.id());
    let group = format!("-{}", run.id());
    let kill = std::process::Command::new("kill")
        .args(["-INT", "--", &group])
        .status();
    assert!(kill.unwrap().success());
    let o = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    // The worker's file, named after it, is left; the run's own were removed.
    let left = temporary_states(&cache);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].contains(&format!("-{worker}-")), "{left:?}");
    assert!(
        left_line(&cache).starts_with("left by stopped runs: 1 temporary files, "),
        "{}",
        left_line(&cache)
    );
    // The next run (any that uses the cache) removes it.
    let next = crate::support::icbench_command()
        .env("ICBENCH_CACHE_DIR", &cache)
        .arg("--list-scenarios")
        .output()
        .unwrap();
    assert!(next.status.success());
    assert_eq!(temporary_states(&cache), Vec::<String>::new());
    assert_eq!(
        left_line(&cache),
        "left by stopped runs: 0 temporary files, 0.0 MB (the next run removes them)"
    );
}
