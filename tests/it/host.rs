//! `--host`: the replica counts memory in OS pages of the machine it runs on, 4 KiB on Linux
//! and 16 KiB on a Mac with Apple silicon (`ic_sys::PAGE_SIZE`; `engine/src/cost/host.rs`
//! has the sources). Sixteen one-byte writes spaced 4 KiB apart fill one 64 KiB Wasm page:
//! 16 OS pages on Linux, 4 on a Mac. Before the memory tracker each written OS page costs
//! 1,000; under it each Wasm page costs 5,000 per OS page in it, for the access and again
//! for the write: 80,000 on Linux, 20,000 on a Mac. Counts are worked out by hand from the
//! metering rules of `tests/it/engine.rs`.

use icbench::engine::cost::{Host, Limits, MemoryTracker, Replica};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::{CallOutcome, Engine, ErrorCode, PageCounts};
use icbench::report::{Report, Workload};

use crate::support::assert_rejected;
use crate::support::wat::{REPLY_IMPORTS, STABLE64_IMPORTS};

/// Writes one byte every 4 KiB across Wasm page 1 of the heap (`heap`), or across Wasm page
/// 0 of stable memory from heap byte 0 (`stable`, after growing stable memory by a page).
fn canister() -> Vec<u8> {
    let heap: String = (0..16)
        .map(|i| {
            format!(
                "(i32.store8 (i32.const {}) (i32.const 1))",
                65_536 + 4_096 * i
            )
        })
        .collect();
    let stable: String = (0..16)
        .map(|i| {
            format!(
                "(call $swrite (i64.const {}) (i64.const 0) (i64.const 1))",
                4_096 * i
            )
        })
        .collect();
    wat::parse_str(format!(
        r#"(module {REPLY_IMPORTS} {STABLE64_IMPORTS} (memory 2)
             (func (export "canister_update heap") {heap} (call $reply))
             (func (export "canister_update stable")
               (drop (call $sgrow (i64.const 1))) {stable} (call $reply)))"#
    ))
    .expect("test WAT is valid")
}

/// The metered instructions without any page charge.
/// `heap`: entry 1 + 16 x (2 consts + store8) 48 + call 5, and msg_reply 500.
const HEAP_BASE: u64 = 1 + 48 + 5 + 500;
/// `stable`: entry 1 + const, call, drop 7 + stable64_grow 100 + 16 x (3 consts + call) 128
/// + 16 x stable64_write of one byte (20 + 1) 336 + call 5 + msg_reply 500.
const STABLE_BASE: u64 = 1 + 7 + 100 + 128 + 336 + 5 + 500;

fn update(engine: EmbeddedEngine, method: &str) -> CallOutcome {
    let mut e = engine;
    let (id, install) = e.install(&canister(), &[]).unwrap();
    install.result.unwrap();
    let out = e.update(id, method, &[]).unwrap();
    out.result.clone().unwrap();
    out
}

/// The page charges of `heap` and of `stable` under `replica`, on Linux and on a Mac.
fn expected(replica: Replica) -> ([u64; 2], [u64; 2]) {
    match replica.memory_tracker {
        // 16 OS pages written on Linux, 4 on a Mac, 1,000 each; for `stable` the same
        // pages, charged in `stable64_write` (the heap is only read there).
        None => ([16_000, 4_000], [16_000, 4_000]),
        // heap: Wasm page 1 accessed and written; stable: heap page 0 read by the writes,
        // stable page 0 accessed and written.
        Some(_) => ([2 * 80_000, 2 * 20_000], [3 * 80_000, 3 * 20_000]),
    }
}

#[test]
fn writes_4_kib_apart_across_a_wasm_page_cost_per_os_page_of_the_host_under_every_vintage() {
    for replica in Replica::ALL {
        let (heap, stable) = expected(replica);
        for (host, (heap_charge, stable_charge)) in
            Host::ALL.into_iter().zip(heap.into_iter().zip(stable))
        {
            let engine = || {
                EmbeddedEngine::default()
                    .with_replica(replica)
                    .with_host(host)
            };
            // The page columns count the same Wasm pages and 4 KiB pages on every host;
            // only the charge differs. Each method dirties 16 pages of its own memory.
            for (method, base, pages, dirty) in [
                (
                    "heap",
                    HEAP_BASE,
                    PageCounts {
                        heap_wasm_pages_accessed: 1,
                        heap_wasm_pages_written: 1,
                        page_charge_instructions: heap_charge,
                        ..PageCounts::default()
                    },
                    (16, 0),
                ),
                (
                    "stable",
                    STABLE_BASE,
                    PageCounts {
                        heap_wasm_pages_accessed: 1,
                        stable_wasm_pages_accessed: 1,
                        stable_wasm_pages_written: 1,
                        page_charge_instructions: stable_charge,
                        ..PageCounts::default()
                    },
                    (0, 16),
                ),
            ] {
                let what = format!("{method}, {} on {}", replica.name, host.name());
                let r = update(engine(), method).report;
                assert_eq!(
                    r.instructions,
                    base + pages.page_charge_instructions,
                    "{what}"
                );
                assert_eq!(r.pages, Some(pages), "{what}");
                assert_eq!((r.heap_dirty_pages, r.stable_dirty_pages), dirty, "{what}");
            }
        }
    }
}

#[test]
fn the_tracker_charges_five_thousand_per_os_page_of_the_wasm_page() {
    assert_eq!(MemoryTracker::DMT.on(Host::Linux), MemoryTracker::DMT);
    assert_eq!(
        MemoryTracker::DMT.on(Host::Linux).wasm_page_charge(),
        80_000
    );
    assert_eq!(
        MemoryTracker::DMT
            .on(Host::MacosArm64)
            .os_pages_per_wasm_page,
        4
    );
    assert_eq!(
        MemoryTracker::DMT.on(Host::MacosArm64).wasm_page_charge(),
        20_000
    );
    // The default engine counts Linux's pages, and says so.
    assert_eq!(EmbeddedEngine::default().host(), Some(Host::Linux));
}

#[test]
fn the_stable_page_limit_allows_the_same_bytes_counted_in_the_hosts_pages() {
    // A dirty-page limit of 8 pages of 4 KiB (32 KiB): three writes 16 KiB apart dirty 3
    // pages on Linux (within 8) and 3 of the Mac's 16 KiB pages (over its 2).
    let limits = Limits {
        stable_dirty_pages_update: 8,
        ..Limits::APPLICATION
    };
    let wasm = wat::parse_str(format!(
        r#"(module {REPLY_IMPORTS} {STABLE64_IMPORTS} (memory 1)
             (func (export "canister_update three")
               (drop (call $sgrow (i64.const 1)))
               (call $swrite (i64.const 0) (i64.const 0) (i64.const 1))
               (call $swrite (i64.const 16384) (i64.const 0) (i64.const 1))
               (call $swrite (i64.const 32768) (i64.const 0) (i64.const 1))
               (call $reply)))"#
    ))
    .unwrap();
    let run = |host: Host| {
        let mut e = EmbeddedEngine::new(limits)
            .with_replica(Replica::R2026_05)
            .with_host(host);
        let (id, install) = e.install(&wasm, &[]).unwrap();
        install.result.unwrap();
        e.update(id, "three", &[]).unwrap()
    };
    let linux = run(Host::Linux);
    // entry 1 + 7 + grow 100 + 3 x (8 + 21) + 5 + 500, and 3 pages x 1,000.
    assert_eq!(
        linux.report.instructions,
        1 + 7 + 100 + 87 + 5 + 500 + 3_000
    );
    let mac = run(Host::MacosArm64).result.unwrap_err();
    // The limit is stated in bytes, the same on every host.
    assert_rejected(
        &mac,
        ErrorCode::CanisterMemoryAccessLimitExceeded,
        "modified pages in the stable memory in a single execution: limit 32 KB",
    );
}

#[test]
fn a_report_names_a_host_other_than_linux() {
    let mut report = Report {
        suite: "seed003".into(),
        engine: "embedded".into(),
        workload: Some(Workload::default()),
        wall_seconds: 0.0,
        prefill: None,
        executed_instructions: 0,
        work: None,
        results: Vec::new(),
        notes: Vec::new(),
        extra: Default::default(),
    };
    report.set_replica(Some(Replica::R2026_07));
    report.set_host(Some(Host::Linux));
    assert!(!icbench::report::json(&report).contains("\"host\""));
    assert_eq!(report.wasm_page_charge(), Some(80_000));
    report.set_host(Some(Host::MacosArm64));
    assert!(icbench::report::json(&report).contains("\"host\": \"macos-arm64\""));
    assert_eq!(report.host(), Host::MacosArm64);
    assert_eq!(report.wasm_page_charge(), Some(20_000));
    let line = icbench::report::rules_line(&report);
    assert!(line.contains("costs 20,000 instructions"), "{line}");
    assert!(
        line.contains("Host: macos-arm64 (`--host`): pages are counted in its 16 KiB OS pages"),
        "{line}"
    );
    // Read back from results.json.
    let back = icbench::report::from_json(&icbench::report::json(&report)).unwrap();
    assert_eq!(back.host(), Host::MacosArm64);
    report.set_replica(Some(Replica::R2026_05));
    assert_eq!(report.wasm_page_charge(), None);
}

#[test]
fn a_run_on_a_mac_host_says_so_in_every_output_and_charges_by_its_pages() {
    let out = crate::support::scratch_dir("host-run");
    let args = ["--suite", "lookups", "--rows", "2000", "--stores", "btree"];
    // One scenario profiled, for its page map.
    let mac = [
        "--host",
        "macos-arm64",
        "--profile",
        "btree/random/point_lookup/1",
    ];
    let stdout = crate::support::run_bench_into(&out, &[&args[..], &mac].concat());
    assert!(
        stdout.contains("costs 20,000 instructions")
            && stdout
                .contains("Host: macos-arm64 (`--host`): pages are counted in its 16 KiB OS pages"),
        "{stdout}"
    );
    let read = |file: &str| std::fs::read_to_string(out.join("lookups").join(file)).unwrap();
    let json = read("results.json");
    assert!(json.contains("\"host\": \"macos-arm64\""), "{json}");
    assert!(
        json.contains("20,000 instructions per 64 KiB page"),
        "{json}"
    );
    assert!(read("report.md")
        .contains("- Host: `macos-arm64` (`--host`: the charges count its 16 KiB OS pages)"));
    // On Linux, the default, nothing names the host.
    let linux = crate::support::scratch_dir("host-run-linux");
    let stdout = crate::support::run_bench_into(&linux, &args);
    assert!(
        !stdout.contains("Host:") && stdout.contains("costs 80,000 instructions"),
        "{stdout}"
    );
    let json = std::fs::read_to_string(linux.join("lookups/results.json")).unwrap();
    assert!(!json.contains("\"host\""));
    // The page map prices the pages at the Mac's charge, not Linux's.
    let map = read("profiles/btree/random/point_lookup/1.pages.svg");
    assert!(
        map.contains(
            ">11 Wasm pages accessed plus written: 220,000 instructions under the memory \
             tracker (20,000 each; a query pays for the access only)."
        ),
        "{map}"
    );
    assert!(!map.contains("80,000"), "{map}");
    // So does a comparison whose new run is the Mac's, asked for across the hosts (refused
    // otherwise), and it says the hosts differ from its first line on.
    let (base, new) = (
        linux.join("lookups/results.json"),
        out.join("lookups/results.json"),
    );
    let compare = |across: &[&str]| {
        let args = [&["compare", "--format", "markdown"], across].concat();
        crate::support::run_icbench(
            &[&args[..], &[base.to_str().unwrap(), new.to_str().unwrap()]].concat(),
        )
    };
    let (code, _, stderr) = compare(&[]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "error: the runs are not alike: host linux (base) against macos-arm64 (new); their \
         counts differ by that whatever the code did (--cross-rules compares them anyway)\n"
    );
    let (code, comment, stderr) = compare(&["--cross-rules"]);
    // Every scenario is cheaper on the Mac: improvements, the gate passes.
    assert_eq!(code, 0, "{stderr}");
    assert!(
        comment.starts_with(
            "### icbench across rules and settings (host linux (base) against macos-arm64 \
             (new)): 0 regressions, 10 improvements beyond ±2%, 0 unchanged\n"
        ),
        "{comment}"
    );
    assert!(
        comment.contains(
            "base → new (each costs 20,000 instructions under the memory tracker on this \
             run's host, `macos-arm64`). A change counts from ±2%"
        ),
        "{comment}"
    );
    assert!(
        comment.contains(" Hosts: `linux` (base), `macos-arm64` (new): their page charges differ."),
        "{comment}"
    );
    assert!(!comment.contains("each costs 80,000"), "{comment}");
}
