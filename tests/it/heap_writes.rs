//! The heap's first touches found three ways: by heap marks in the module (no fault), by the
//! kernel's write log (userfaultfd, one fault per Wasm page) and by a protection fault per
//! 4 KiB page. Every count, and so every results.csv, must be the same; only the speed
//! differs.

use crate::support::{assert_has, icbench_command, scratch_dir};

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
    assert_has(&said, "heap writes found by: faults");
    let (logged, said) = run("auto");
    if kernel_has_write_log() {
        assert_has(&said, "heap writes found by: kernel write log");
    }
    let (marked, said) = run("marks");
    assert_has(&said, "heap writes found by: heap marks");
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

/// Set in the child processes of the sweep below: run the sweep and print it.
const SWEEP_CHILD: &str = "ICBENCH_TEST_MID_PAGE_SWEEP";

/// Touches heap pages 0 and 1 (written), reads page 2 and then writes it, writes pages 3 and
/// 4 with one store across their boundary, fills page 5 word by word in a loop, copies a
/// 64 KiB block into pages 6 and 7 and reads stable page 0 into page 8 twice (the second read
/// is the tracker's); `peek` reads page 5.
const MID_PAGE: &str = r#"
  (memory 10)
  (func (export "canister_update touch") (local $i i32)
    (drop (call $sgrow (i64.const 1)))
    (i32.store (i32.const 0) (i32.const 1))
    (i32.store (i32.const 65536) (i32.const 1))
    (drop (i32.load (i32.const 131072)))
    (i32.store (i32.const 131076) (i32.const 1))
    (i64.store (i32.const 262140) (i64.const -1))
    (local.set $i (i32.const 327680))
    (loop $fill
      (i32.store (local.get $i) (local.get $i))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br_if $fill (i32.lt_u (local.get $i) (i32.const 393216))))
    (memory.copy (i32.const 425984) (i32.const 0) (i32.const 65536))
    (call $sread (i64.const 524288) (i64.const 0) (i64.const 8))
    (call $sread (i64.const 524288) (i64.const 0) (i64.const 8))
    (call $reply))
  (func (export "canister_query peek")
    (i64.store (i32.const 0) (i64.load (i32.const 393212)))
    (call $append (i32.const 0) (i32.const 8))
    (call $reply))
"#;

/// Steps of the sweep's limits: several to each 4 KiB page the loop fills.
const SWEEP_STEP: u64 = 2_500;

/// How `touch` ended under a limit: the reject code or `ok`, the instructions charged, the
/// pages accessed and written and their charge, the dirty 4 KiB pages, and the last word of
/// page 5 as a query reads it afterwards (0, unless the update completed); and the
/// instructions alone.
fn touch_under(wasm: &[u8], limit: u64) -> (String, u64) {
    use icbench::engine::cost::{Limits, Replica};
    use icbench::engine::embedded::EmbeddedEngine;
    use icbench::engine::Engine;

    let limits = Limits {
        max_instructions_per_update: limit,
        ..Limits::APPLICATION
    };
    let mut e = EmbeddedEngine::new(limits).with_replica(Replica::R2026_07);
    let (id, install) = e.install(wasm, &[]).unwrap();
    install.result.unwrap();
    let out = e.update(id, "touch", &[]).unwrap();
    let ended = match &out.result {
        Ok(_) => "ok".to_string(),
        Err(reject) => format!("{:?}", reject.error_code),
    };
    let peek = e.query(id, "peek", &[]).unwrap().result.unwrap();
    let line = format!(
        "limit {limit}: {ended}, {} instructions, {:?}, heap dirty {}, stable dirty {}, last word {:?}",
        out.report.instructions,
        out.report.pages.expect("the embedded engine counts pages"),
        out.report.heap_dirty_pages,
        out.report.stable_dirty_pages,
        &peek[..8],
    );
    (line, out.report.instructions)
}

/// The sweep: what found the pages, then `touch` under every multiple of the step below
/// what it takes in full, at one below and at its full count.
fn sweep() -> Vec<String> {
    use icbench::engine::embedded::memory::write_log::HeapWrites;

    let wasm = wat::parse_str(format!(
        "(module {} {} {MID_PAGE})",
        crate::support::wat::REPLY_IMPORTS,
        crate::support::wat::STABLE64_IMPORTS,
    ))
    .expect("test WAT is valid");
    let full = icbench::engine::cost::Limits::APPLICATION.max_instructions_per_update;
    let (_, needed) = touch_under(&wasm, full);
    let mut limits: Vec<u64> = (1..)
        .map(|k| k * SWEEP_STEP)
        .take_while(|&limit| limit < needed - 1)
        .collect();
    limits.extend([needed - 1, needed]);
    let found_by = HeapWrites::configured().unwrap().said();
    std::iter::once(format!("found by {found_by}"))
        .chain(limits.into_iter().map(|limit| touch_under(&wasm, limit).0))
        .collect()
}

/// The sweep in a process of its own whose `ICBENCH_HEAP_WRITES` is `mode` (it is read
/// when a module is compiled, and once per process for the heap): what found the pages,
/// and a line per limit.
fn sweep_in_child(mode: &str) -> (String, Vec<String>) {
    let o = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "heap_writes::running_out_of_instructions_mid_page_stops_alike_whoever_finds_the_pages",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SWEEP_CHILD, "1")
        .env("ICBENCH_HEAP_WRITES", mode)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{mode}: {stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The harness prints the test's name before the first line, on the same line.
    let found_by = stdout
        .lines()
        .find_map(|l| l.find("found by ").map(|at| l[at..].to_string()))
        .unwrap_or_else(|| panic!("{mode}: {stdout}"));
    let lines = stdout
        .lines()
        .filter_map(|l| l.find("limit ").map(|at| l[at..].to_string()))
        .collect();
    (found_by, lines)
}

/// A message that runs out of instructions anywhere in its work on its pages (inside a
/// page's loop, a store across two pages, a copy, a stable read) stops at the same
/// instruction, charged the same, having touched and dirtied the same pages, whether heap
/// marks in the module, the kernel's write log or protection faults find them. (Page charges
/// that take the counter below zero stop it at its next host call or its end under every
/// mechanism: docs/engine.md, "In-band".)
#[test]
fn running_out_of_instructions_mid_page_stops_alike_whoever_finds_the_pages() {
    if std::env::var_os(SWEEP_CHILD).is_some() {
        for line in sweep() {
            println!("{line}");
        }
        return;
    }
    let (by, marks) = sweep_in_child("marks");
    assert!(by.starts_with("found by heap marks"), "{by}");
    let (_, auto) = sweep_in_child("auto");
    let (by, faults) = sweep_in_child("faults");
    assert_eq!(by, "found by faults");
    assert_eq!(marks.len(), faults.len());
    assert_eq!(auto.len(), faults.len());
    for ((m, a), f) in marks.iter().zip(&auto).zip(&faults) {
        assert_eq!(m, f, "heap marks against protection faults");
        assert_eq!(a, f, "the kernel's write log against protection faults");
    }
    // The sweep stops the message inside each part of its work: before the loop ends (page
    // 5's 16 dirty 4 KiB pages appear one by one), before the copy's pages and before the
    // stable read; only the full count completes, and only then does page 5 keep its words.
    let (last, stopped) = faults.split_last().unwrap();
    // 19 pages charged (9 heap pages accessed and written, stable page 0 read: its first
    // read is the host's, from the page map, the second the tracker's); 38 dirty
    // 4 KiB pages: 1 each in pages 0, 1, 2 and 8, 2 across pages 3 and 4, 16 in page 5, 16
    // copied into pages 6 and 7.
    assert_has(last, ": ok, ");
    assert_has(last, "PageCounts { heap_wasm_pages_accessed: 9, heap_wasm_pages_written: 9, stable_wasm_pages_accessed: 1, stable_wasm_pages_written: 0, page_charge_instructions: 1520000 }, heap dirty 38, stable dirty 0");
    assert!(
        last.ends_with("last word [252, 255, 5, 0, 0, 0, 0, 0]"),
        "{last}"
    );
    for line in stopped {
        assert_has(line, ": CanisterInstructionLimitExceeded, ");
        assert!(
            line.ends_with("last word [0, 0, 0, 0, 0, 0, 0, 0]"),
            "{line}"
        );
    }
    let states = |part: &str| {
        let mut seen: Vec<&str> = stopped
            .iter()
            .map(|l| l.split(part).nth(1).unwrap().split(',').next().unwrap())
            .collect();
        seen.dedup();
        seen.len()
    };
    assert!(states("heap dirty ") >= 16 + 2, "{stopped:#?}");
    assert_eq!(states("heap_wasm_pages_accessed: "), 3, "{stopped:#?}");
    assert_eq!(states("stable_wasm_pages_accessed: "), 2, "{stopped:#?}");
}

/// The kernel's write log registers a Wasm page at a message's first write to it, not the
/// whole heap: a read fault in a registered range maps one 4 KiB page, elsewhere the kernel
/// maps the neighbouring ones too. A heap mapped from a cache entry's file shows which of its
/// mappings are registered in /proc/self/smaps (`VmFlags: ... uw`).
#[test]
fn the_write_log_registers_only_the_wasm_pages_a_message_writes() {
    use icbench::engine::disk_cache;
    use icbench::engine::embedded::EmbeddedEngine;
    use icbench::engine::Engine;
    let mode = std::env::var("ICBENCH_HEAP_WRITES").unwrap_or_default();
    if !kernel_has_write_log() || !(mode.is_empty() || mode == "auto") {
        eprintln!("no kernel write log in use here: nothing to check");
        return;
    }
    // Four Wasm pages, every byte of them written at install: the state keeps them all, and
    // a heap read from the cache maps all of them from the entry's file.
    let page = "x".repeat(65_536);
    let data: String = (0..4)
        .map(|p| format!("(data (i32.const {}) \"{page}\")", p * 65_536))
        .collect();
    let wat = format!(
        r#"(module {imports} (memory 4) {data}
          (func (export "canister_update read") (local $at i32)
            (loop $next
              (drop (i32.load8_u (local.get $at)))
              (local.set $at (i32.add (local.get $at) (i32.const 4096)))
              (br_if $next (i32.lt_u (local.get $at) (i32.const 262144))))
            (call $reply))
          (func (export "canister_update write") (i32.store8 (i32.const 131072) (i32.const 1))
            (call $reply)))"#,
        imports = crate::support::wat::REPLY_IMPORTS
    );
    let wasm = wat::parse_str(wat).unwrap();
    let mut made = EmbeddedEngine::default();
    let (id, _) = made.install(&wasm, &[]).unwrap();
    let state = made.export_state(id).unwrap().into_bytes();
    let dir = scratch_dir("write-log-registers");
    let key = [7; 32];
    let entry = crate::support::cache_entry(&dir, disk_cache::STATES, key, &state);
    let mut engine = EmbeddedEngine::default();
    assert_eq!(engine.import_state(&wasm, (&entry).into()).unwrap(), id);
    drop(entry);
    let path = disk_cache::entry_path(&dir, disk_cache::STATES, &key);
    let path = path.to_str().unwrap();
    // (bytes of the heap mapped from the entry, of them registered with the log)
    let mapped = || {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let (mut bytes, mut registered, mut size) = (0, 0, None);
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            let range = first.split_once('-').and_then(|(start, end)| {
                Some((
                    u64::from_str_radix(start, 16).ok()?,
                    u64::from_str_radix(end, 16).ok()?,
                ))
            });
            if let Some((start, end)) = range {
                // A mapping's first line: its range, its permissions, ..., the file it maps;
                // the heap's are private (the frozen heap maps the file shared as well).
                let private = line
                    .split_whitespace()
                    .nth(1)
                    .is_some_and(|p| p.ends_with('p'));
                size = (private && line.ends_with(path)).then_some(end - start);
                bytes += size.unwrap_or(0);
            } else if first == "VmFlags:" && line.split_whitespace().any(|f| f == "uw") {
                registered += size.unwrap_or(0);
            }
        }
        (bytes, registered)
    };
    assert_eq!(mapped(), (262_144, 0));
    engine.update(id, "read", &[]).unwrap();
    assert_eq!(
        mapped(),
        (262_144, 0),
        "a message that only reads registers nothing"
    );
    engine.update(id, "write", &[]).unwrap();
    assert_eq!(mapped(), (262_144, 65_536), "the one Wasm page written");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A message sent for its state alone (a store's fill, `Metering::StateOnly`) under a
/// vintage that charges by the memory tracker counts each Wasm page it writes as all its
/// 4 KiB pages where the kernel's log would name them: the same instructions, the same
/// state; under a vintage that charges the 4 KiB pages, the engine counts them exactly. It
/// keeps nothing to roll back with: a failed one leaves its canister lost.
#[test]
fn a_message_sent_for_its_state_leaves_the_measured_state_and_counts_whole_wasm_pages_only_where_no_charge_depends_on_them(
) {
    use icbench::engine::cost::Replica;
    use icbench::engine::embedded::EmbeddedEngine;
    use icbench::engine::{Engine, Metering};
    let mode = std::env::var("ICBENCH_HEAP_WRITES").unwrap_or_default();
    let logged = kernel_has_write_log() && (mode.is_empty() || mode == "auto");
    // Three 4 KiB pages in two Wasm pages.
    let writes = "(i32.store8 (i32.const 65546) (i32.const 1))
                  (i32.store8 (i32.const 70000) (i32.const 2))
                  (i32.store8 (i32.const 131073) (i32.const 3))";
    let wat = format!(
        r#"(module {imports} (memory 3)
          (func (export "canister_update write") {writes} (call $reply))
          (func (export "canister_update write_then_trap") {writes} (unreachable)))"#,
        imports = crate::support::wat::REPLY_IMPORTS
    );
    let wasm = wat::parse_str(wat).unwrap();
    // (instructions, heap_dirty_pages, the state before the message, the state after it or
    // why there is none)
    let send = |replica: Replica, metering: Metering, method: &str| {
        let mut e = EmbeddedEngine::default().with_replica(replica);
        let (id, _) = e.install(&wasm, &[]).unwrap();
        e.set_metering(metering);
        let before = e.state_hash(id).unwrap();
        let snapshot = e.snapshot(id).unwrap();
        let report = e.update(id, method, &[]).unwrap().report;
        let after = e.state_hash(id).map_err(|e| e.to_string());
        // A snapshot restored brings any canister back, a lost one too.
        e.restore(id, snapshot).unwrap();
        assert_eq!(e.state_hash(id).unwrap(), before);
        (report.instructions, report.heap_dirty_pages, before, after)
    };
    for replica in [Replica::R2026_07, Replica::R2026_05] {
        let whole = if logged && replica.memory_tracker.is_some() {
            32
        } else {
            3
        };
        let (instructions, dirty, before, after) = send(replica, Metering::Exact, "write");
        assert_eq!(dirty, 3);
        assert_ne!(Ok(before), after);
        assert_eq!(
            send(replica, Metering::StateOnly, "write"),
            (instructions, whole, before, after)
        );
        let (_, dirty, before, after) = send(replica, Metering::Exact, "write_then_trap");
        assert_eq!((dirty, after), (3, Ok(before)), "rolled back");
        let (_, _, _, lost) = send(replica, Metering::StateOnly, "write_then_trap");
        assert_eq!(
            lost,
            Err(
                "canister lxzze-o7777-77777-aaaaa-cai lost its state: write_then_trap failed \
                 (IC0502: Error from Canister lxzze-o7777-77777-aaaaa-cai: Canister trapped: \
                 unreachable.) with nothing kept to roll back"
                    .to_string()
            )
        );
    }
}
