//! The engine and `icbench canbench`'s runner against canbench-rs benches
//! (tests/canbench_fixture).
//!
//! Numbers recorded on the real replica: canbench's own test suite expects an empty
//! benchmark to measure 207 instructions (200 for the second `performance_counter` call
//! plus the glue between the two reads), and a bench whose measured body is one raw
//! `stable64_grow` to measure 307, whether it grows 123 pages from zero or 456 after a raw
//! bench's unmeasured setup, in every canbench release (canbench-bin/tests/expected, see
//! shared/research/canbench.md §5.2). Page counts and scope calls below are exact by
//! construction of the fixture.

use crate::support::canbench_fixture as support;

use icbench::canbench::results::{BenchResult, Measurement};
use icbench::canbench::{discover, Runner};
use icbench::engine::cost::{Host, Replica};
use icbench::engine::PageCounts;

fn m(calls: u64, instructions: u64, heap: u64, stable: u64) -> Measurement {
    Measurement {
        calls,
        instructions,
        heap_increase: heap,
        stable_memory_increase: stable,
    }
}

fn runner(init_args: &[u8], stable: Option<&[u8]>) -> Runner {
    Runner::install(&support::fixture_wasm(), init_args, stable, false).unwrap()
}

fn ok(r: &mut Runner, name: &str) -> BenchResult {
    r.run(name)
        .unwrap()
        .outcome
        .unwrap_or_else(|e| panic!("bench {name} failed: {e}"))
}

#[test]
fn canbench_baselines_recorded_on_the_replica() {
    // The vintages differ only in install_code's charges and, from 2026-07, in the memory
    // tracker's page charges, of which these benches touch none between their reads:
    // every vintage gives canbench's figures.
    for replica in Replica::ALL {
        let mut r =
            Runner::install_under(replica, &support::fixture_wasm(), &[], None, false).unwrap();
        assert_eq!(ok(&mut r, "empty").total, m(1, 207, 0, 0), "{replica:?}");
        let grow = ok(&mut r, "stable_memory_increase_from_zero");
        assert_eq!(grow.total, m(1, 307, 0, 123), "{replica:?}");
    }
    assert_eq!(icbench::canbench::REPLICA, Replica::R2025_03);
    let mut r = runner(&[], None);

    let empty = ok(&mut r, "empty");
    assert_eq!(empty.total, m(1, 207, 0, 0));
    assert!(empty.scopes.is_empty());

    let grow = ok(&mut r, "stable_memory_increase_from_zero");
    assert_eq!(grow.total, m(1, 307, 0, 123));

    // canbench's stable_memory_only_increase: the raw bench's setup is not measured.
    let raw = ok(&mut r, "raw_stable_after_setup");
    assert_eq!(raw.total, m(1, 307, 0, 456));
}

#[test]
fn discovery_finds_every_bench_in_export_order() {
    let names = discover(&support::fixture_wasm()).unwrap();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "empty",
            "heap_increase",
            "init_arg_pages",
            "nested_same_scope",
            "raw_stable_after_setup",
            "repeated_scope",
            "scope_pages",
            "scopes",
            "stable_memory_increase_from_zero",
            "stable_probe",
            "touch_new_pages",
            "trap_on_request",
        ]
    );
    // Export order is the module's, not alphabetical, and it is what the runner uses.
    let wasm = support::fixture_wasm();
    let exported: Vec<String> = wasmparser::Parser::new(0)
        .parse_all(&wasm)
        .filter_map(|p| match p.unwrap() {
            wasmparser::Payload::ExportSection(s) => Some(
                s.into_iter()
                    .filter_map(|e| {
                        e.unwrap()
                            .name
                            .strip_prefix("canister_query __canbench__")
                            .map(String::from)
                    })
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(names, exported);
}

#[test]
fn heap_and_stable_increases_are_exact_pages() {
    let mut r = runner(&[], None);
    let heap = ok(&mut r, "heap_increase");
    assert_eq!(
        (
            heap.total.calls,
            heap.total.heap_increase,
            heap.total.stable_memory_increase
        ),
        (1, 62, 0)
    );
    // Every bench starts from the post-install state: a query's growth is discarded.
    let again = ok(&mut r, "heap_increase");
    assert_eq!(again, heap, "same state, same result");
    let grow_again = ok(&mut r, "stable_memory_increase_from_zero");
    assert_eq!(grow_again.total, m(1, 307, 0, 123));
    assert_eq!(ok(&mut r, "stable_probe").total, m(1, 0, 0, 0));
}

#[test]
fn scopes_plain_repeated_and_nested() {
    let mut r = runner(&[], None);

    let s = ok(&mut r, "scopes");
    assert_eq!(s.scopes.keys().collect::<Vec<_>>(), ["scope_1", "scope_2"]);
    let (s1, s2) = (&s.scopes["scope_1"], &s.scopes["scope_2"]);
    assert_eq!((s1.calls, s2.calls), (1, 1));
    // fib(15) costs more than fib(10); both lie inside the total.
    assert!(s1.instructions > s2.instructions && s2.instructions > 0);
    assert!(s1.instructions + s2.instructions < s.total.instructions);

    let rep = ok(&mut r, "repeated_scope");
    assert_eq!(rep.scopes.len(), 1);
    assert_eq!(rep.scopes["scope_1"].calls, 10);
    assert!(rep.scopes["scope_1"].instructions < rep.total.instructions);

    // The same name nested: two records, instructions merged (the inner interval lies in
    // the outer one), but page increases summed, so the one grown page counts twice.
    let nested = ok(&mut r, "nested_same_scope");
    let n = &nested.scopes["nested"];
    assert_eq!(nested.total.heap_increase, 1);
    assert_eq!(
        (n.calls, n.heap_increase, n.stable_memory_increase),
        (2, 2, 0)
    );
    assert!(n.instructions < nested.total.instructions);
}

/// A scope's pages are those first touched in the bench while it was open: page A,
/// written before the outer scope and again inside it, is the bench's but neither scope's;
/// the inner scope (heap page C written, one stable page read) lies inside the outer one
/// (page B written, and the inner scope's pages). The page charge is the vintage's: none
/// before the tracker (a query writes no stable memory here), 80,000 per page accessed
/// since 2026-07, which is exactly how much more each scope's instructions are. The stable
/// page, read once, is read by the host from the page map: no scope's page, under any
/// vintage.
#[test]
fn scope_pages_are_those_first_touched_while_the_scope_was_open() {
    let pages = |heap: u64, stable: u64, charge: u64| PageCounts {
        heap_wasm_pages_accessed: heap,
        heap_wasm_pages_written: heap,
        stable_wasm_pages_accessed: stable,
        stable_wasm_pages_written: 0,
        page_charge_instructions: charge,
    };
    let mut instructions = Vec::new();
    for (replica, per_page) in [(Replica::R2025_03, 0), (Replica::R2026_07, 80_000)] {
        let mut r =
            Runner::install_under(replica, &support::fixture_wasm(), &[], None, false).unwrap();
        let ran = r.run("scope_pages").unwrap();
        let result = ran.outcome.unwrap();
        // The query: bench_fn's own 3 heap pages, A, B and C.
        assert_eq!(
            ran.pages.total,
            Some(pages(6, 0, 6 * per_page)),
            "{replica:?}"
        );
        assert_eq!(
            ran.pages.scopes,
            [
                ("inner".to_string(), pages(1, 0, per_page)),
                ("outer".to_string(), pages(2, 0, 2 * per_page)),
            ]
            .into(),
            "{replica:?}"
        );
        instructions.push((
            result.scopes["inner"].instructions,
            result.scopes["outer"].instructions,
        ));
        // Scopes that touch no page first have zero pages, not none: a nested scope of the
        // same name counts once, as its instructions do.
        let nested = r.run("nested_same_scope").unwrap().pages;
        assert_eq!(
            nested.scopes["nested"],
            PageCounts::default(),
            "{replica:?}"
        );
        let rep = r.run("repeated_scope").unwrap().pages;
        assert_eq!(rep.scopes["scope_1"], PageCounts::default(), "{replica:?}");
        assert!(r.run("empty").unwrap().pages.scopes.is_empty());
    }
    assert_eq!(instructions, [(374, 1_518), (80_374, 161_518)]);
}

#[test]
fn init_args_are_passed_verbatim() {
    // ("hello") in Candid, canbench's init_arg fixture: 13 bytes.
    let arg = b"DIDL\x00\x01\x71\x05hello";
    let mut r = runner(arg, None);
    let grown = ok(&mut r, "init_arg_pages").total;
    assert_eq!(grown.stable_memory_increase, 13);
    // init wrote the argument at stable offset 0.
    let probe = ok(&mut r, "stable_probe").total;
    assert_eq!(probe.stable_memory_increase, 1);
    assert_eq!(probe.instructions.to_le_bytes(), arg[..8]);

    let mut none = runner(&[], None);
    let not_grown = ok(&mut none, "init_arg_pages").total;
    assert_eq!(not_grown.stable_memory_increase, 0);
    // stable64_grow has a fixed fee: growing 13 pages or none costs the same.
    assert_eq!(grown.instructions, not_grown.instructions);
}

#[test]
fn stable_memory_file_replaces_what_init_wrote() {
    let mut r = runner(b"DIDL\x00\x00", Some(b"ABCDE"));
    let probe = ok(&mut r, "stable_probe").total;
    // 5 bytes round up to one page; the file's bytes, not init's, are at offset 0.
    assert_eq!(probe.stable_memory_increase, 1);
    assert_eq!(&probe.instructions.to_le_bytes(), b"ABCDE\0\0\0");

    let big = vec![7u8; 65_537];
    let mut r = runner(&[], Some(&big));
    let probe = ok(&mut r, "stable_probe").total;
    assert_eq!(probe.stable_memory_increase, 2);
    assert_eq!(probe.instructions, u64::from_le_bytes([7; 8]));
}

#[test]
fn a_trapping_bench_reports_the_replica_error_and_others_still_run() {
    let mut r = runner(b"trap", None);
    let err = r.run("trap_on_request").unwrap().outcome.unwrap_err();
    assert!(
        err.starts_with("IC0503: Error from Canister lxzze-o7777-77777-aaaaa-cai: Canister called `ic0.trap` with message: ")
            && err.contains("trap requested by the init argument"),
        "{err}"
    );
    assert_eq!(ok(&mut r, "empty").total, m(1, 207, 0, 0));

    let mut fine = runner(&[], None);
    assert_eq!(ok(&mut fine, "trap_on_request").total.calls, 1);
    // An unknown bench is the replica's method-not-found reject, not a panic.
    let missing = fine.run("no_such_bench").unwrap().outcome.unwrap_err();
    assert!(missing.starts_with("IC0536: "), "{missing}");
}

/// The committed fixture is what its source builds (scripts/build-canbench-fixture.sh, with
/// paths remapped, so from any clone). Ignored by default: a wasm32 build of about a minute.
/// Run it after changing tests/canbench_fixture:
/// `cargo test --release --test it -- --ignored canbench_fixture_is_built_from_its_source`.
#[test]
#[ignore = "builds the fixture for wasm32 (about a minute); run after changing tests/canbench_fixture"]
fn canbench_fixture_is_built_from_its_source() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("canbench_fixture.wasm");
    let status = std::process::Command::new("bash")
        .arg(root.join("scripts/build-canbench-fixture.sh"))
        .arg(&out)
        .status()
        .expect("bash runs");
    assert!(status.success(), "scripts/build-canbench-fixture.sh failed");
    let built = std::fs::read(&out).unwrap();
    assert!(
        built == support::fixture_wasm(),
        "tests/canbench_fixture/canbench_fixture.wasm is not what its source builds: \
         run scripts/build-canbench-fixture.sh and commit the module"
    );
}

#[test]
fn the_memory_tracker_charges_a_bench_whole_wasm_pages_on_request() {
    // By default the rules of canbench's own PocketIC (13.0.0): no page charge.
    let mut canbench = runner(&[], None);
    let plain = ok(&mut canbench, "touch_new_pages");
    assert_eq!(plain.total, m(1, 339, 2, 1));
    // On today's replica the bench's two new heap pages cost 80,000 each (a bench is a
    // query: no write charge), inside its measurement; its one read of the new stable page
    // is the host's, from the page map, which the tracker does not see.
    let mut r = Runner::install_under(
        Replica::R2026_07,
        &support::fixture_wasm(),
        &[],
        None,
        false,
    )
    .unwrap();
    let tracked = ok(&mut r, "touch_new_pages");
    assert_eq!(tracked.total, m(1, 339 + 2 * 80_000, 2, 1));
    // The benches that touch no new page between their reads measure the same.
    assert_eq!(ok(&mut r, "empty").total, m(1, 207, 0, 0));
}

#[test]
fn a_native_server_on_a_mac_charges_a_bench_a_quarter_of_each_page() {
    let on_a_mac = |replica| {
        let rules = (replica, Host::MacosArm64);
        Runner::install_on(rules, &support::fixture_wasm(), &[], None, false).unwrap()
    };
    // The tracker's 5,000 per OS page counts 4 of a Mac's 16 KiB pages per Wasm page.
    let mut r = on_a_mac(Replica::R2026_07);
    assert_eq!(
        ok(&mut r, "touch_new_pages").total,
        m(1, 339 + 2 * 20_000, 2, 1)
    );
    // Before the tracker a bench (a query) pays for no page, on any host.
    let mut r = on_a_mac(Replica::R2025_03);
    assert_eq!(ok(&mut r, "touch_new_pages").total, m(1, 339, 2, 1));
}
