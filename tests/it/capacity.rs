//! The capacity search on the embedded engine with the per-message limits scaled down, so
//! that the largest batch is small and every confirming call is quick: the search ends on
//! a call that fits and the call one step above it, which the engine rejects with the
//! replica's error. Exact facts only: counts on the embedded engine are deterministic.

use std::sync::OnceLock;

use icbench::engine::cost::Limits;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::report::{Report, ScenarioResult, Status};
use icbench::suites::capacity::{self, Message};
use icbench::suites::scaling::Config;
use icbench::suites::scenario::StoreKind;
use icbench::suites::{Exec, Plan, Shard};

use crate::support::bench_wasm as wasm;
use crate::support::By;

const UPDATE_LIMIT: u64 = 400_000_000;
const QUERY_LIMIT: u64 = 10_000_000;

/// `kinds` at 1,000 and 2,000 rows, the capacity searched at 2,000.
fn plan(kinds: Vec<StoreKind>) -> Config {
    Config::test_plan(vec![1_000, 2_000], kinds, Some(2_000))
}

fn run(limits: Limits, jobs: usize) -> Report {
    let cfg = plan(icbench::stores::measured_by("scaling", &StoreKind::ALL));
    let mut engine = EmbeddedEngine::new(limits);
    let exec = Exec {
        jobs,
        shard: Shard::WHOLE,
        profile: false,
    };
    cfg.run(&mut engine, wasm(), &exec, &mut |_| {}).unwrap()
}

fn small_limits() -> Limits {
    Limits {
        max_instructions_per_update: UPDATE_LIMIT,
        max_instructions_per_query: QUERY_LIMIT,
        ..Limits::APPLICATION
    }
}

fn small() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| run(small_limits(), 2))
}

fn record<'a>(
    report: &'a Report,
    store: &str,
    mode: &str,
    message: Message,
    position: &str,
) -> Option<&'a ScenarioResult> {
    let by = [
        By::Store(store),
        By::JournalMode(mode),
        By::Operation(message.operation()),
        By::Position(position),
    ];
    report.results.iter().find(|r| By::all(&by, r))
}

/// (store, journal mode, largest insert that fits, largest lookup that fits; None: every
/// stored row fits in one query), under 400M instructions per update and 10M per query,
/// charged by the newest vintage (the memory tracker's page charges count against the
/// limit). Under `2026-05` they were 184,000 / all, 7,230 / 506, 47,300 / 1,084 and
/// 47,600 / 1,084: the page charges take 14% of the heap map's inserts, 1% of the
/// StableBTreeMap's and 7% of SQLite's, and 8% and 10% of their lookups (12% before a
/// lookup's first read of each OS page went uncharged: 953 rows, ic-sqlite-vfs 814). SQLite on
/// ic-sqlite-vfs, in its own module's canister (on an engine of its own with these
/// limits), its connection reopened at 2,000 rows.
const EXPECTED: [(&str, &str, u64, Option<u64>); 5] = [
    ("heap", "", 158_000, None),
    ("btree", "", 7_150, Some(466)),
    ("sqlite", "PERSIST", 44_000, Some(977)),
    ("sqlite", "OFF", 44_500, Some(977)),
    ("sqlite-vfs", "", 43_700, Some(845)),
];

#[test]
fn the_search_ends_on_a_call_that_fits_and_the_replicas_error_one_step_above() {
    let report = small();
    for (store, mode, insert, lookup) in EXPECTED {
        for (message, fits, limit) in [
            (Message::Insert, Some(insert), UPDATE_LIMIT),
            (Message::Lookup, lookup, QUERY_LIMIT),
        ] {
            let what = format!("{store} {mode} {}", message.operation());
            let estimate = record(report, store, mode, message, capacity::ESTIMATE)
                .unwrap_or_else(|| panic!("{what}: no estimate"));
            let ok = record(report, store, mode, message, capacity::FITS).unwrap();
            assert_eq!(ok.status, Status::Ok, "{what}");
            assert_eq!(ok.rows_before, 2_000, "{what}");
            // A real call: the canister counted its own work, for every row.
            assert!(ok.store_instructions > 0, "{what}");
            let above = record(report, store, mode, message, capacity::ABOVE);
            match fits {
                Some(rows) => {
                    assert_eq!(ok.batch, rows, "{what}");
                    let above = above.unwrap_or_else(|| panic!("{what}: no call above"));
                    assert_eq!(
                        above.batch,
                        rows + capacity::step_for(estimate.batch),
                        "{what}"
                    );
                    let Status::Failed(error) = &above.status else {
                        panic!("{what}: the call above did not fail: {:?}", above.status)
                    };
                    assert!(
                        error.starts_with("IC0522: ")
                            && error.contains(&format!(
                                "Canister exceeded the limit of {limit} instructions for single message execution."
                            )),
                        "{what}: {error}"
                    );
                    // Stopped at the limit; what fit ran within it. The memory tracker
                    // charges during the message, so nothing is charged after it (before
                    // the tracker, an update's written heap pages were, past the limit).
                    assert_eq!(above.instructions, limit, "{what}");
                    assert!(ok.instructions <= limit, "{what}");
                }
                None => {
                    assert_eq!(ok.batch, 2_000, "{what}: every stored row");
                    assert!(above.is_none(), "{what}");
                }
            }
        }
    }
    let table = capacity::table(report).unwrap().render();
    assert!(
        table.contains("| StableBTreeMap         | insert (update) (400.0M)"),
        "{table}"
    );
    assert!(table.contains("7,160: IC0522"), "{table}");
    assert!(table.contains("- (all rows fit)"), "{table}");
}

#[test]
fn the_heap_map_can_meet_the_wasm_memory_limit_first() {
    let limits = Limits {
        wasm_memory_limit: 24 << 20,
        ..small_limits()
    };
    let cfg = plan(vec![StoreKind::Heap]);
    let mut engine = EmbeddedEngine::new(limits);
    let report = cfg
        .run(&mut engine, wasm(), &Exec::SEQUENTIAL, &mut |_| {})
        .unwrap();
    let ok = record(&report, "heap", "", Message::Insert, capacity::FITS).unwrap();
    let above = record(&report, "heap", "", Message::Insert, capacity::ABOVE).unwrap();
    assert_eq!((ok.batch, above.batch), (146_000, 147_000));
    assert_eq!(ok.status, Status::Ok);
    let Status::Failed(error) = &above.status else {
        panic!("{:?}", above.status)
    };
    assert!(
        error.starts_with(
            "IC0539: Error from Canister lxzze-o7777-77777-aaaaa-cai: Canister exceeded its current Wasm memory limit of 25165824 bytes."
        ),
        "{error}"
    );
    // Under the instruction limit: memory stopped it.
    assert!(above.instructions < UPDATE_LIMIT);
}

#[test]
fn jobs_do_not_change_the_search() {
    assert_eq!(run(small_limits(), 1).results, small().results);
}

#[test]
fn seed003_confirms_its_estimates_on_the_prefilled_state_when_asked() {
    use icbench::suites::scenario::{JournalMode, Store};
    use icbench::suites::seed003;
    let cfg = seed003::Config {
        users: icbench::suites::users::Config {
            rows: 2_000,
            stores: vec![Store::BTree, Store::Sqlite(JournalMode::Off)],
            ..Default::default()
        },
        batches: vec![1, 100, 1_000],
        confirm_capacity: true,
        ..Default::default()
    };
    let mut engine = EmbeddedEngine::new(small_limits());
    let report = cfg
        .run(&mut engine, wasm(), &Exec::SEQUENTIAL, &mut |_| {})
        .unwrap();
    for (store, mode) in [("btree", ""), ("sqlite", "OFF")] {
        for message in Message::ALL {
            let ok = record(&report, store, mode, message, capacity::FITS).unwrap();
            let above = record(&report, store, mode, message, capacity::ABOVE);
            assert_eq!(
                (ok.suite.as_str(), ok.status.clone()),
                ("seed003", Status::Ok)
            );
            assert!(ok.batch > 0 && ok.rows_before == 2_000);
            // SQLite's lookups of all 2,000 rows fit in 10M; everything else stops at a limit.
            match above {
                Some(a) => assert!(
                    matches!(&a.status, Status::Failed(e) if e.starts_with("IC0522: ")),
                    "{store} {mode} {:?}",
                    a.status
                ),
                None => assert_eq!(ok.batch, 2_000, "{store} {mode}"),
            }
        }
    }
    use icbench::suites::Suite;
    let text = icbench::report::terminal(&seed003::Seed003.document(&report));
    assert!(text.contains("confirmed with real calls"), "{text}");
}
