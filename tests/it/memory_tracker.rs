//! The deterministic memory tracker (replica vintage `2026-07`, dfinity/ic #10789): every
//! 64 KiB Wasm page of the heap or of stable memory a message touches costs 16 OS pages x
//! 5,000 = 80,000 instructions, and its first write as much again (not in queries), taken
//! during the message. Counts are worked out by hand from that rule and the metering rules of
//! `tests/it/engine.rs`; each test states the old vintage's count beside, where the old rule
//! charged 1,000 per 4 KiB page written instead.

use icbench::engine::cost::{Limits, MemoryTracker, Replica};
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::page_map::{MemoryPages, TouchedPage};
use icbench::engine::{Engine, ErrorCode, PageCounts, Profiling};

use crate::support::installed;
use crate::support::wat::{REPLY_IMPORTS, STABLE64_IMPORTS};

/// 16 OS pages x 5,000.
const PAGE: u64 = 80_000;

fn canister(body: &str) -> Vec<u8> {
    wat::parse_str(format!(
        "(module {REPLY_IMPORTS} {STABLE64_IMPORTS} (memory 8) {body})"
    ))
    .expect("test WAT is valid")
}

fn engine(replica: Replica) -> EmbeddedEngine {
    EmbeddedEngine::default().with_replica(replica)
}

/// The instructions of one update (or query) of `method` on a fresh install, under `replica`.
fn run(wasm: &[u8], replica: Replica, method: &str, query: bool) -> (u64, Vec<u8>) {
    let out = message(wasm, replica, method, query);
    (out.report.instructions, out.result.unwrap_or_default())
}

/// One update (or query) of `method` on a fresh install, under `replica`.
fn message(
    wasm: &[u8],
    replica: Replica,
    method: &str,
    query: bool,
) -> icbench::engine::CallOutcome {
    let mut e = engine(replica);
    let (id, install) = e.install(wasm, &[]).unwrap();
    install.result.unwrap();
    crate::support::send(&mut e, id, method, query)
}

/// Asserts the instructions `method` is charged under the tracker (`2026-07`) and under the
/// rule before it (`2026-05`).
fn assert_charged(wasm: &[u8], method: &str, query: bool, tracker: u64, before: u64) {
    assert_eq!(
        run(wasm, Replica::R2026_07, method, query).0,
        tracker,
        "{method}, 2026-07"
    );
    assert_eq!(
        run(wasm, Replica::R2026_05, method, query).0,
        before,
        "{method}, 2026-05"
    );
}

fn first_u64(reply: &[u8]) -> u64 {
    u64::from_le_bytes(reply[..8].try_into().unwrap())
}

#[test]
fn the_rule_is_data() {
    assert_eq!(MemoryTracker::DMT.wasm_page_charge(), PAGE);
    assert_eq!(Replica::NEWEST, Replica::R2026_07);
    assert_eq!(Replica::R2026_07.memory_tracker, Some(MemoryTracker::DMT));
    for old in &Replica::ALL[..4] {
        assert_eq!(old.memory_tracker, None, "{}", old.name);
    }
    assert_eq!(MemoryTracker::wasm_pages(65_535, 2), 0..2);
    assert_eq!(MemoryTracker::wasm_pages(65_536, 65_536), 1..2);
    assert_eq!(MemoryTracker::wasm_pages(7, 0), 0..0);
}

/// Reads one byte of Wasm page 1, then stores the performance counter on page 0 and
/// replies it.
const READ_ONE_BYTE: &str = r#"
  (func $body
    (drop (i32.load8_u (i32.const 65536)))
    (i64.store (i32.const 0) (call $pc (i32.const 0)))
    (call $append (i32.const 0) (i32.const 8))
    (call $reply))
  (func (export "canister_update read") (call $body))
  (func (export "canister_query read_q") (call $body))
"#;

#[test]
fn a_one_byte_read_of_a_fresh_page_costs_a_whole_wasm_page_and_the_counter_sees_it() {
    let wasm = canister(READ_ONE_BYTE);
    // $body is one segment: 1 (entry) + i32.const, load, drop 3 + i32.const x2, call 7
    // + i64.store 1 + i32.const x2, call 7 + call 5 = 24; the call of $body from the export
    // adds the export's own 1 + call 5 = 6: 30 before the counter is read.
    // The counter read takes the page charge of the byte read (page 1) and its own 200.
    let (new, reply) = run(&wasm, Replica::R2026_07, "read", false);
    assert_eq!(first_u64(&reply), 30 + PAGE + 200);
    // Then the store to page 0: access and write; the reply reads page 0 again (free):
    // msg_reply_data_append 500 + 50 x 8, msg_reply 500.
    assert_eq!(new, 30 + 200 + PAGE + 2 * PAGE + 900 + 500);
    // Before the tracker: nothing for the read, 1,000 for page 0 written, after the message
    // (so not in the counter).
    let (old, reply) = run(&wasm, Replica::R2026_05, "read", false);
    assert_eq!(first_u64(&reply), 30 + 200);
    assert_eq!(old, 30 + 200 + 900 + 500 + 1_000);
}

#[test]
fn a_query_pays_for_access_only() {
    let wasm = canister(READ_ONE_BYTE);
    let (new, reply) = run(&wasm, Replica::R2026_07, "read_q", true);
    assert_eq!(first_u64(&reply), 30 + PAGE + 200);
    // Page 0 is written, but a query is not tracked for writes: one access.
    assert_eq!(new, 30 + 200 + 2 * PAGE + 900 + 500);
    let (old, _) = run(&wasm, Replica::R2026_05, "read_q", true);
    assert_eq!(old, 30 + 200 + 900 + 500);
}

#[test]
fn a_replicated_query_pays_for_access_only_and_never_for_written_pages() {
    // An update call to a query method runs it replicated, without modification tracking.
    let wasm = canister(READ_ONE_BYTE);
    assert_charged(
        &wasm,
        "read_q",
        false,
        30 + 200 + 2 * PAGE + 900 + 500,
        30 + 200 + 900 + 500,
    );
}

#[test]
fn a_write_to_a_page_already_read_adds_the_write_charge_once() {
    let wasm = canister(
        r#"(func (export "canister_update rw")
             (drop (i32.load (i32.const 131072)))
             (i32.store (i32.const 131076) (i32.const 1))
             (i32.store (i32.const 135172) (i32.const 2))
             (call $reply))"#,
    );
    // 1 + [const, load, drop] 3 + 2 x [const, const, store] 6 + call 5 = 15.
    // Page 2: read (access), then two stores in two of its 4 KiB pages: one write charge;
    // under the old rule, two 4 KiB pages written.
    assert_charged(
        &wasm,
        "rw",
        false,
        15 + 500 + PAGE + PAGE,
        15 + 500 + 2 * 1_000,
    );
}

#[test]
fn an_access_across_a_wasm_page_boundary_touches_both_pages() {
    let wasm = canister(
        r#"(func (export "canister_update load") (drop (i64.load (i32.const 65532))) (call $reply))
           (func (export "canister_update store")
             (i64.store (i32.const 131068) (i64.const 1)) (call $reply))"#,
    );
    // 1 + [const, load, drop] 3 + call 5 = 9: pages 0 and 1 accessed.
    assert_charged(&wasm, "load", false, 9 + 500 + 2 * PAGE, 9 + 500);
    // 1 + [const, const, store] 3 + call 5 = 9: pages 1 and 2 accessed and written (two
    // 4 KiB pages written under the old rule).
    assert_charged(
        &wasm,
        "store",
        false,
        9 + 500 + 4 * PAGE,
        9 + 500 + 2 * 1_000,
    );
}

#[test]
fn memory_copy_over_three_wasm_pages_reads_three_and_writes_three() {
    let wasm = canister(
        r#"(func (export "canister_update copy")
             (memory.copy (i32.const 262144) (i32.const 0) (i32.const 196608))
             (call $reply))
           (func (export "canister_update fill")
             (memory.fill (i32.const 65536) (i32.const 7) (i32.const 131073))
             (call $reply))"#,
    );
    // 1 + 3 consts + memory.copy 100 + call 5 = 109, plus 1 per byte copied. Source pages
    // 0-2 accessed, destination pages 4-6 accessed and written; the old rule: 48 written
    // 4 KiB pages.
    let bytes = 196_608;
    assert_charged(
        &wasm,
        "copy",
        false,
        109 + bytes + 500 + 9 * PAGE,
        109 + bytes + 500 + 48 * 1_000,
    );
    // memory.fill of 2 Wasm pages and a byte: pages 1, 2 and 3 accessed and written.
    assert_charged(
        &wasm,
        "fill",
        false,
        109 + 131_073 + 500 + 6 * PAGE,
        109 + 131_073 + 500 + 33 * 1_000,
    );
}

#[test]
fn stable_reads_and_writes_pay_for_both_memories() {
    let wasm = canister(
        r#"(func (export "canister_update stable")
             (drop (call $sgrow (i64.const 2)))
             ;; 2 bytes from heap page 0 to stable bytes 65535-65536: stable pages 0 and 1.
             (call $swrite (i64.const 65535) (i64.const 0) (i64.const 2))
             ;; 4 bytes of stable pages 0 and 1 (accessed already) into heap page 1.
             (call $sread (i64.const 65536) (i64.const 65534) (i64.const 4))
             (call $reply))"#,
    );
    // 1 + [const, call, drop] 7 + 2 x [3 consts, call] 16 + call 5 = 29. Fees: stable64_grow
    // 100, stable64_write 20 + 2, stable64_read 20 + 4, msg_reply 500.
    let metered = 29 + 100 + 22 + 24 + 500;
    // Heap page 0 accessed (the write's source); stable pages 0 and 1 accessed and written;
    // heap page 1 accessed and written (the read's destination). The old rule: 2 stable
    // pages written (in stable64_write) and heap page 16 written.
    assert_charged(
        &wasm,
        "stable",
        false,
        metered + PAGE + 4 * PAGE + 2 * PAGE,
        metered + 2 * 1_000 + 1_000,
    );
}

#[test]
fn a_wasm64_canister_pays_the_same_per_page() {
    let wasm = wat::parse_str(
        r#"(module
             (import "ic0" "msg_reply" (func $reply))
             (memory i64 2)
             (func (export "canister_update w")
               (i64.store (i64.const 65536) (i64.const 1))
               (call $reply)))"#,
    )
    .unwrap();
    // 1 + [i64.const, i64.const, i64.store (2 in wasm64)] 4 + call 5 = 10; page 1 accessed
    // and written. The old rule multiplied the heap's page charge by 4 in wasm64.
    assert_charged(&wasm, "w", false, 10 + 500 + 2 * PAGE, 10 + 500 + 4 * 1_000);
}

#[test]
fn a_trap_after_touching_pages_is_charged_for_them_and_keeps_nothing() {
    let wasm = canister(
        r#"(data (i32.const 100) "boom")
           (func (export "canister_update boom")
             (i32.store (i32.const 200000) (i32.const 9))
             (call $trap (i32.const 100) (i32.const 4)))
           (func (export "canister_query peek")
             (i64.store (i32.const 0) (i64.load (i32.const 200000)))
             (call $append (i32.const 0) (i32.const 8))
             (call $reply))"#,
    );
    let (mut e, id) = installed(engine(Replica::R2026_07), &wasm);
    let out = e.update(id, "boom", &[]).unwrap();
    let err = out.result.unwrap_err();
    assert_eq!(err.error_code, ErrorCode::CanisterCalledTrap);
    // 1 + [const, const, store] 3 + [const, const, call] 7 = 11; the store accesses and
    // writes page 3; ic0.trap 500 + 4 bytes + logging 2 x 4 + 50 x 4, and reads page 0.
    assert_eq!(out.report.instructions, 11 + 2 * PAGE + 504 + 208 + PAGE);
    // Rolled back: the query reads 0 from the page (pages 3 and 0 accessed).
    let peek = e.query(id, "peek", &[]).unwrap();
    assert_eq!(first_u64(&peek.result.unwrap()), 0);
}

#[test]
fn page_charges_can_run_a_message_out_of_instructions() {
    let wasm = canister(
        r#"(func (export "canister_update touch")
             (i32.store (i32.const 0) (i32.const 1))
             (i32.store (i32.const 65536) (i32.const 1))
             (call $reply))"#,
    );
    // Two pages accessed and written: 320,000 > 300,000; the metering alone is far below.
    let limits = Limits {
        max_instructions_per_update: 300_000,
        ..Limits::APPLICATION
    };
    let touch = |replica| {
        let (mut e, id) = installed(EmbeddedEngine::new(limits).with_replica(replica), &wasm);
        e.update(id, "touch", &[]).unwrap()
    };
    let out = touch(Replica::R2026_07);
    let err = out.result.unwrap_err();
    assert_eq!(err.error_code, ErrorCode::CanisterInstructionLimitExceeded);
    assert_eq!(out.report.instructions, 300_000);
    // Under the old rule it is 1 + 6 + 5 + 500 + 2,000 after the message: fine.
    let out = touch(Replica::R2026_05);
    out.result.unwrap();
    assert_eq!(out.report.instructions, 12 + 500 + 2_000);
}

#[test]
fn a_message_stopped_by_the_stable_accessed_page_limit_pays_what_it_touched_before() {
    let wasm = canister(
        r#"(func (export "canister_update grow") (drop (call $sgrow (i64.const 1))) (call $reply))
           (func (export "canister_query read5")
             (call $sread (i64.const 1000) (i64.const 0) (i64.const 16384))
             (call $sread (i64.const 1000) (i64.const 0) (i64.const 20000))
             (call $reply))"#,
    );
    let limits = Limits {
        stable_accessed_pages_query: 4,
        ..Limits::APPLICATION
    };
    let (mut e, id) = installed(
        EmbeddedEngine::new(limits).with_replica(Replica::R2026_07),
        &wasm,
    );
    e.update(id, "grow", &[]).unwrap().result.unwrap();
    let out = e.query(id, "read5", &[]).unwrap();
    let err = out.result.unwrap_err();
    assert_eq!(err.error_code, ErrorCode::CanisterMemoryAccessLimitExceeded);
    // The first read (4 OS pages, at the limit, untouched: copied from the page map, unseen
    // by the tracker) touches heap page 0 (a query: access only); the second is refused
    // before it copies anything. One segment, charged at entry: 1 + 2 x [3 consts, call] 16
    // + call 5 = 22; fees 20 + 16,384 and 20 + 20,000.
    assert_eq!(out.report.instructions, 22 + 16_404 + 20_020 + PAGE);
}

/// The pages one update of `method` accessed and wrote, and what they cost, under `replica`.
fn page_counts(wasm: &[u8], replica: Replica, method: &str, query: bool) -> PageCounts {
    let out = message(wasm, replica, method, query);
    out.result.unwrap();
    out.report.pages.expect("the embedded engine counts pages")
}

/// Asserts the page columns of `method`: the Wasm pages of the heap and of stable memory
/// `(accessed, written)`, the same under every vintage, and the page charge under the
/// tracker (`2026-07`) and under the rule before it (`2026-05`).
fn assert_page_counts(
    wasm: &[u8],
    method: &str,
    query: bool,
    heap: (u64, u64),
    stable: (u64, u64),
    (tracker, before): (u64, u64),
) {
    let counted = |charge| PageCounts {
        heap_wasm_pages_accessed: heap.0,
        heap_wasm_pages_written: heap.1,
        stable_wasm_pages_accessed: stable.0,
        stable_wasm_pages_written: stable.1,
        page_charge_instructions: charge,
    };
    assert_eq!(
        page_counts(wasm, Replica::R2026_07, method, query),
        counted(tracker),
        "{method}, 2026-07"
    );
    assert_eq!(
        page_counts(wasm, Replica::R2026_05, method, query),
        counted(before),
        "{method}, 2026-05"
    );
}

/// Reads heap pages 1 and 2 (one load across their boundary), writes heap page 3, reads
/// stable pages 0 and 1 (across their boundary) into heap page 4, then writes heap page 0's
/// first two bytes over stable pages 1 and 2 (across their boundary).
const PAGES: &str = r#"
  (func (export "canister_update pages")
    (drop (call $sgrow (i64.const 3)))
    (drop (i64.load (i32.const 131068)))
    (i32.store (i32.const 196608) (i32.const 5))
    (call $sread (i64.const 262144) (i64.const 65534) (i64.const 4))
    (call $swrite (i64.const 131071) (i64.const 0) (i64.const 2))
    (call $reply))
"#;

#[test]
fn the_page_columns_count_each_wasm_page_once_under_every_vintage() {
    let wasm = canister(PAGES);
    // Heap: pages 1 and 2 (the load), 3 (the store), 4 (the read's destination) and 0 (the
    // write's source) accessed; 3 and 4 written. Stable: the read of pages 0 and 1 is their
    // first touch, copied from the page map and not counted; the write accesses and writes
    // pages 1 and 2. Before the
    // tracker the same pages are counted, and the charge is the old rule's: 4 KiB pages
    // written, two of the heap (OS pages 48 and 64) after the message and two of stable
    // memory (OS pages 31 and 32) in stable64_write.
    assert_page_counts(
        &wasm,
        "pages",
        false,
        (5, 2),
        (2, 2),
        (11 * PAGE, 4 * 1_000),
    );
    // The charge is part of the message's instructions: 1 + [const, call, drop] 7
    // + [const, load, drop] 3 + [const, const, store] 3 + 2 x [3 consts, call] 16 + call 5
    // = 35; fees: grow 100, read 20 + 4, write 20 + 2, reply 500.
    let metered = 35 + 100 + 24 + 22 + 500;
    assert_charged(&wasm, "pages", false, metered + 11 * PAGE, metered + 4_000);
}

/// PAGES with the heap's load and store in functions of their own.
const PAGES_IN_FUNCTIONS: &str = r#"
  (func $load (drop (i64.load (i32.const 131068))))
  (func $store (i32.store (i32.const 196608) (i32.const 5)))
  (func $pages (export "canister_update pages")
    (drop (call $sgrow (i64.const 3)))
    (call $load)
    (call $store)
    (call $sread (i64.const 262144) (i64.const 65534) (i64.const 4))
    (call $swrite (i64.const 131071) (i64.const 0) (i64.const 2))
    (call $reply))
"#;

#[test]
fn the_page_map_names_each_page_and_the_function_that_touched_it_first() {
    let wasm = canister(PAGES_IN_FUNCTIONS);
    for replica in [Replica::R2026_07, Replica::R2026_05] {
        let mut e = engine(replica);
        e.set_profiling(Profiling::Messages).unwrap();
        let (id, install) = e.install(&wasm, &[]).unwrap();
        install.result.unwrap();
        let out = e.update(id, "pages", &[]).unwrap();
        out.result.unwrap();
        let map = out
            .report
            .page_map
            .expect("a profiled message has a page map");
        let page = |page, by: &str, written: Option<&str>| TouchedPage {
            page,
            accessed_by: by.into(),
            written_by: written.map(String::from),
        };
        // The pages of the_page_columns_count_each_wasm_page_once_under_every_vintage, each
        // with the function that was running when it was first accessed and written: the
        // System API calls touch the heap pages they copy to and from.
        assert_eq!(
            map.heap,
            MemoryPages {
                size_pages: 8,
                pages: vec![
                    page(0, "ic0.stable64_write", None),
                    page(1, "load", None),
                    page(2, "load", None),
                    page(3, "store", Some("store")),
                    page(4, "ic0.stable64_read", Some("ic0.stable64_read")),
                ],
            },
            "{}",
            replica.name
        );
        assert_eq!(
            map.stable,
            MemoryPages {
                size_pages: 3,
                pages: vec![
                    page(1, "ic0.stable64_write", Some("ic0.stable64_write")),
                    page(2, "ic0.stable64_write", Some("ic0.stable64_write")),
                ],
            }
        );
        // The same pages as the message's page columns.
        let pages = out.report.pages.unwrap();
        assert_eq!(
            (map.heap.accessed(), map.heap.written()),
            (5, 2),
            "{pages:?}"
        );
        assert_eq!((map.stable.accessed(), map.stable.written()), (2, 2));
    }
    // Without profiling there is none.
    let (mut e, id) = installed(engine(Replica::R2026_07), &wasm);
    assert!(e
        .update(id, "pages", &[])
        .unwrap()
        .report
        .page_map
        .is_none());
}

#[test]
fn a_query_counts_its_written_pages_but_pays_for_access_only() {
    let wasm = canister(READ_ONE_BYTE);
    // Page 1 read, page 0 written by the counter's store.
    assert_page_counts(&wasm, "read_q", true, (2, 1), (0, 0), (2 * PAGE, 0));
}

/// A composite query that adds 1 to the number on page 2, reads page 1 and replies the
/// number; a plain query doing the same.
const COMPOSITE: &str = r#"
  (func $body
    (i32.store (i32.const 131072) (i32.add (i32.load (i32.const 131072)) (i32.const 1)))
    (drop (i32.load (i32.const 65536)))
    (call $append (i32.const 131072) (i32.const 4))
    (call $reply))
  (func (export "canister_composite_query cq") (call $body))
  (func (export "canister_query q") (call $body))
"#;

#[test]
fn a_composite_query_pays_for_its_first_writes_under_the_tracker() {
    // The replica runs composite queries with modification tracking (`Track` in
    // `ApiType::modification_tracking`), plain queries without (`Ignore`).
    let wasm = canister(COMPOSITE);
    // The export: 1 + call 5; $body: 1 + [const, const, load, const, add, store] 6
    // + [const, load, drop] 3 + [const, const, call] 7 + call 5 = 22: 28. Fees:
    // msg_reply_data_append 500 + 50 x 4, msg_reply 500.
    let metered = 28 + 700 + 500;
    // Page 2 accessed and written, page 1 accessed; before the tracker nothing for pages.
    assert_charged(&wasm, "cq", true, metered + 3 * PAGE, metered);
    assert_charged(&wasm, "q", true, metered + 2 * PAGE, metered);
    let counts = page_counts(&wasm, Replica::R2026_07, "cq", true);
    assert_eq!(
        (
            counts.heap_wasm_pages_accessed,
            counts.heap_wasm_pages_written
        ),
        (2, 1)
    );
    // Its state is thrown away as a query's: each call sees the number 0 and replies 1.
    let (mut e, id) = installed(engine(Replica::R2026_07), &wasm);
    for _ in 0..2 {
        let reply = e.query(id, "cq", &[]).unwrap().result.unwrap();
        assert_eq!(reply, 1u32.to_le_bytes());
    }
}
