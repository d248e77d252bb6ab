//! The ic-sqlite-vfs canister (canisters/sqlite-vfs) on the embedded engine: the committed
//! module (canisters/prebuilt/sqlite-vfs.wasm) is of its sources, embeds its interface and
//! imports only ic0; its store counts exactly under both vintages since the memory tracker
//! (2026-07) and before it (2026-05); an upgrade keeps its rows and settings; and what the
//! binding does not let a canister choose is refused, naming why.
//!
//! Its calls are the bench canister's SQLite calls with the stem `sqlite_vfs`, so the bench
//! canister's client drives it (`add_users("sqlite_vfs", ...)`).

use std::path::Path;
use std::sync::OnceLock;

use candid::{Decode, Encode, Principal};
use icbench::bench_canister::{
    BenchClient, IdSequence, InsertReport, Module, SqliteConfig, SqliteSettings,
};
use icbench::engine::cost::Replica;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::{Engine, PageCounts};
use wasmparser::{Parser, Payload};

use crate::support::small_store::{default_calls, table, Counts, CALLS};
use crate::support::table::Table;

mod at_scale;

/// Its Candid method stem (`add_users_sqlite_vfs`).
const STORE: &str = "sqlite_vfs";
/// Its records' `store` column: its --stores name.
const RECORD: &str = "sqlite-vfs";
const DID: &str = "canisters/sqlite-vfs/sqlite-vfs.did";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(root().join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

/// The module as the binary embeds it (the module list's `sqlite-vfs`), compiled once for
/// the test run.
fn wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        let wasm = Module::SQLITE_VFS
            .embedded()
            .expect("the committed sqlite-vfs module is of its sources")
            .to_vec();
        crate::support::keep_compiled(&wasm, false);
        // And its new build, which the upgrade and scaling suites install.
        let new_build = icbench::suites::upgrade::new_build(&wasm).unwrap();
        crate::support::keep_compiled(&new_build, false);
        wasm
    })
}

// ---- the module -------------------------------------------------------------------------

/// The module list names it as the store table does, built from its own crate for
/// wasm32-unknown-unknown without rewiring, with its own did; its bytes are checked
/// against its sources with every module's (tests/it/modules.rs) and rebuilt and compared
/// by .ci/run.
#[test]
fn the_module_list_builds_it_from_its_crate_without_rewiring() {
    let m = Module::named("sqlite-vfs").expect("the list has sqlite-vfs");
    assert_eq!(m, Module::SQLITE_VFS);
    let l = m.listing();
    assert_eq!(
        l.recipe,
        "canisters/sqlite-vfs wasm32-unknown-unknown - none canisters/sqlite-vfs/sqlite-vfs.did"
    );
    assert_eq!(m.prebuilt_wasm, "canisters/prebuilt/sqlite-vfs.wasm");
    assert_eq!(
        icbench::stores::find("sqlite-vfs").map(|k| k.module()),
        Some(Module::SQLITE_VFS)
    );
    assert_eq!(l.wasm, &read(m.prebuilt_wasm)[..]);
}

#[test]
fn the_module_embeds_its_interface_and_imports_only_ic0() {
    let mut section = None;
    let mut imports = Vec::new();
    for payload in Parser::new(0).parse_all(wasm()) {
        match payload.unwrap() {
            Payload::CustomSection(s) if s.name() == "icp:public candid:service" => {
                assert!(section.is_none(), "two candid:service sections");
                section = Some(s.data().to_vec());
            }
            Payload::ImportSection(s) => {
                for import in s.into_imports() {
                    let import = import.unwrap();
                    imports.push(format!("{}.{}", import.module, import.name));
                }
            }
            _ => {}
        }
    }
    assert!(section.as_deref() == Some(&read(DID)[..]), "not {DID}");
    // The System API it needs, each defined by the engine (engine/src/embedded/system_api/).
    imports.sort();
    assert_eq!(
        imports,
        [
            "debug_print",
            "msg_arg_data_copy",
            "msg_arg_data_size",
            "msg_reply",
            "msg_reply_data_append",
            "performance_counter",
            "stable64_grow",
            "stable64_read",
            "stable64_size",
            "stable64_write",
            "time",
            "trap",
        ]
        .map(|f| format!("ic0.{f}"))
    );
}

// ---- the store ------------------------------------------------------------------------------

fn install(engine: &mut EmbeddedEngine) -> BenchClient<'_> {
    BenchClient::install(engine, wasm()).expect("the canister installs")
}

/// Inserts the rows of `ids`, which the store must accept.
fn insert(c: &mut BenchClient<'_>, ids: IdSequence) -> InsertReport {
    c.add_users(STORE, ids).unwrap().value.unwrap()
}

fn configure(c: &mut BenchClient<'_>, config: SqliteConfig) -> Result<SqliteSettings, String> {
    let out = c
        .engine
        .update(
            c.canister,
            "configure_sqlite_vfs",
            &Encode!(&config).unwrap(),
        )
        .unwrap();
    Decode!(&out.result.unwrap(), Result<SqliteSettings, String>).unwrap()
}

/// The binding's settings, as configure reads them back.
fn binding_settings(cache_size: i64, autoincrement: bool) -> SqliteSettings {
    SqliteSettings {
        journal_mode: "MEMORY".into(),
        synchronous: "OFF".into(),
        page_size: 16_384,
        cache_size,
        locking_mode: "EXCLUSIVE".into(),
        autoincrement,
    }
}

/// [`default_calls`] on a new canister, then a one-row insert and a point read warm: each
/// call's counts.
fn small_store(replica: Replica) -> Vec<Counts> {
    let mut engine = EmbeddedEngine::default().with_replica(replica);
    let mut c = install(&mut engine);
    let mut out = default_calls(&mut c, STORE);
    // Warm: the update connection after 10 one-row inserts beside the first (its page cache
    // kept from message to message), the read connection after 10 `_update` reads of the key.
    for id in (10_002..=10_009).chain([10_012, 10_013]) {
        insert(&mut c, IdSequence::new(id, 10, 1));
    }
    let r = c.add_users(STORE, IdSequence::new(10_014, 10, 1)).unwrap();
    out.push(Counts::measured(r.value.unwrap().instructions, &r.message));
    for _ in 0..10 {
        c.get_users(STORE, IdSequence::new(10_000, 10, 1), true)
            .unwrap()
            .value
            .unwrap();
    }
    let r = c
        .get_users(STORE, IdSequence::new(10_000, 10, 1), false)
        .unwrap();
    out.push(Counts::measured(r.value.unwrap().instructions, &r.message));
    out
}

/// Since the memory tracker (2026-07) every call pays 80,000 instructions per Wasm page it
/// touches and as much again per page it writes (queries: touched only); before it (2026-05)
/// 1,000 per 4 KiB heap page written, after an update. The pages are the same under both.
#[test]
fn a_small_store_counts_exactly_under_both_vintages() {
    let vintages = [Replica::R2026_07, Replica::R2026_05];
    let [now, before] = vintages.map(small_store);
    for (now, before) in now.iter().zip(&before) {
        assert_eq!(now.touched(), before.touched());
    }
    let calls = CALLS.iter().chain(&["warm insert 1", "warm get 1"]);
    let mut counts = table(&["vintage", "call"]);
    for (replica, measured) in vintages.iter().zip([now, before]) {
        for (call, c) in calls.clone().zip(&measured) {
            counts.row(c.row(&[replica.name, call]));
        }
    }
    insta::assert_snapshot!(counts.to_string());
}

/// The workload of ic-sqlite-vfs's README comparison ("insert only into empty table, 1000
/// rows": 8.1x fewer instructions than its wasi2ic + ic-rusqlite canister, on PocketIC before
/// the memory tracker), each binding's rows in one transaction: one message of 1,000 rows
/// into an empty table costs the two bindings about the same. (The README's ic-rusqlite
/// canister inserts its rows outside a transaction, 1,000 autocommits; the bench canister's
/// dbbench store pays about 6x for that, see `dbbench_write`'s `transaction_per_row`.)
#[test]
fn a_thousand_rows_into_an_empty_table_cost_both_bindings_about_the_same() {
    let fill = |replica: Replica, wasm: &[u8], store: &str| {
        let mut engine = EmbeddedEngine::default().with_replica(replica);
        let mut c = BenchClient::install(&mut engine, wasm).unwrap();
        let r = c.add_users(store, IdSequence::new(0, 1, 1_000)).unwrap();
        let v = r.value.unwrap();
        assert_eq!(v.rows_inserted, 1_000);
        Counts::measured(v.instructions, &r.message)
    };
    let bench = crate::support::bench_wasm();
    let mut counts = table(&["vintage", "binding"]);
    for replica in [Replica::R2026_07, Replica::R2026_05] {
        let vfs = fill(replica, wasm(), STORE);
        let rusqlite = fill(replica, bench, "sqlite");
        // About the same: within a tenth of each other.
        assert!(
            vfs.message.abs_diff(rusqlite.message) * 10 < rusqlite.message,
            "{vfs:?} {rusqlite:?}"
        );
        counts.row(vfs.row(&[replica.name, "ic-sqlite-vfs"]));
        counts.row(rusqlite.row(&[replica.name, "ic-rusqlite"]));
    }
    insta::assert_snapshot!(counts.to_string());
}

#[test]
fn an_upgrade_keeps_the_rows_and_the_settings() {
    let mut engine = EmbeddedEngine::default();
    let canister: Principal;
    {
        let mut c = install(&mut engine);
        canister = c.canister;
        insert(&mut c, IdSequence::new(0, 10, 500));
        assert_eq!(c.set_payload_size(40).unwrap().value, Ok(40));
        let settings = configure(
            &mut c,
            SqliteConfig {
                cache_size: Some(1_000),
                ..Default::default()
            },
        );
        assert_eq!(settings, Ok(binding_settings(1_000, false)));
        insert(&mut c, IdSequence::new(5_000, 10, 10));
    }
    engine
        .upgrade(canister, wasm(), &Encode!().unwrap())
        .unwrap()
        .result
        .expect("the upgrade succeeds");
    let mut c = BenchClient::attach(&mut engine, canister);
    let stats = c.stats().unwrap();
    assert_eq!(
        (
            stats.sqlite_rows,
            stats.payload_size,
            stats.journal_mode.as_str()
        ),
        (510, 40, "MEMORY")
    );
    // 100-byte rows before set_payload_size, 40-byte ones after.
    let r = c
        .get_users(STORE, IdSequence::new(4_990, 10, 2), false)
        .unwrap()
        .value
        .unwrap();
    assert_eq!((r.rows_found, r.bytes_read), (2, 140));
    let r = c.scan_users(STORE, 0, 1_000, true).unwrap().value.unwrap();
    assert_eq!((r.rows_found, r.bytes_read), (510, 500 * 100 + 10 * 40));
    // The cache_size chosen before the upgrade is in force after it.
    assert_eq!(
        configure(&mut c, SqliteConfig::default()),
        Ok(binding_settings(1_000, false))
    );
    // And the store goes on: new rows after the old ones.
    let r = insert(&mut c, IdSequence::new(5_100, 1, 3));
    assert_eq!(r.rows_inserted, 3);
    assert_eq!(c.stats().unwrap().sqlite_rows, 513);
}

#[test]
fn an_existing_id_is_an_error_and_nothing_is_inserted() {
    let mut engine = EmbeddedEngine::default();
    let mut c = install(&mut engine);
    insert(&mut c, IdSequence::new(0, 10, 10));
    // 85, 90, 95: 90 exists.
    let e = c
        .add_users(STORE, IdSequence::new(85, 5, 3))
        .unwrap()
        .value
        .unwrap_err();
    assert_eq!(
        e,
        "id 90 already exists in table users; transaction rolled back, nothing inserted"
    );
    assert_eq!(c.stats().unwrap().sqlite_rows, 10);
    let e = c.add_users_ids(STORE, &[7, 20]).unwrap().value.unwrap_err();
    assert!(e.starts_with("id 20 already exists"), "{e}");
    // The failed transactions dropped the update connection; the next call reopens it.
    let r = c.add_users_ids(STORE, &[7, 21]).unwrap().value.unwrap();
    assert_eq!(r.rows_inserted, 2);
    assert_eq!(c.stats().unwrap().sqlite_rows, 12);
    let e = c
        .add_users(STORE, IdSequence::new(0, 0, 1))
        .unwrap()
        .value
        .unwrap_err();
    assert!(e.contains("step"), "{e}");
    let e = c
        .add_users_ids(STORE, &[1, i64::MAX as u64 + 1])
        .unwrap()
        .value
        .unwrap_err();
    assert!(e.contains("exceeds the largest id"), "{e}");
}

#[test]
fn what_the_binding_fixes_is_refused_naming_why() {
    let mut engine = EmbeddedEngine::default();
    let mut c = install(&mut engine);
    insert(&mut c, IdSequence::new(0, 10, 10));
    let refused = |journal_mode: Option<&str>, page_size: Option<u32>| SqliteConfig {
        journal_mode: journal_mode.map(str::to_string),
        page_size,
        ..Default::default()
    };
    // The reasons are the store table's (the run refuses a flag with them too).
    let kind = icbench::stores::find("sqlite-vfs").unwrap();
    let journal = kind.fixed("journal_mode").unwrap();
    assert_eq!(journal.value, "MEMORY");
    let memory_only = "ic-sqlite-vfs keeps its rollback journal in heap memory (journal_mode MEMORY on every update connection)";
    assert_eq!(
        journal.why,
        format!("{memory_only} and has no WAL (its SQLite is built with SQLITE_OMIT_WAL)")
    );
    assert_eq!(
        configure(&mut c, refused(Some("wal"), None)),
        Err(format!(
            "journal_mode WAL refused: {}; only MEMORY is accepted",
            journal.why
        ))
    );
    for mode in ["DELETE", "TRUNCATE", "PERSIST", "OFF"] {
        assert_eq!(
            configure(&mut c, refused(Some(mode), None)),
            Err(format!(
                "journal_mode {mode} refused: {memory_only}; only MEMORY is accepted"
            ))
        );
    }
    assert_eq!(
        configure(&mut c, refused(Some("journal"), None)),
        Err("unknown journal_mode \"journal\": expected one of DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF".into())
    );
    let page_size = kind.fixed("page_size").unwrap();
    assert_eq!(page_size.value, "16384");
    for size in [4_096, 65_536, 1_000] {
        assert_eq!(
            configure(&mut c, refused(None, Some(size))),
            Err(format!(
                "page_size {size} refused: {}; only {} is accepted",
                page_size.why, page_size.value
            ))
        );
    }
    let d = SqliteConfig::default;
    for (config, refusal) in [
        (
            SqliteConfig {
                synchronous: Some("FULL".into()),
                ..d()
            },
            "synchronous FULL refused: ",
        ),
        (
            SqliteConfig {
                locking_mode: Some("normal".into()),
                ..d()
            },
            "locking_mode NORMAL refused: ",
        ),
        (
            SqliteConfig {
                cache_size: Some(1 << 40),
                ..d()
            },
            "cache_size 1099511627776 is outside SQLite's range ",
        ),
    ] {
        let e = configure(&mut c, config).unwrap_err();
        assert!(e.starts_with(refusal), "{e}");
    }
    let autoincrement = SqliteConfig {
        autoincrement: Some(true),
        ..d()
    };
    assert_eq!(
        configure(&mut c, autoincrement.clone()),
        Err("changing autoincrement (false -> true) needs an empty users table; call clear_sqlite_vfs first".into())
    );
    // Nothing refused changed anything; the binding's own values are accepted.
    assert_eq!(
        configure(
            &mut c,
            SqliteConfig {
                journal_mode: Some("memory".into()),
                synchronous: Some("OFF".into()),
                page_size: Some(16_384),
                locking_mode: Some("EXCLUSIVE".into()),
                ..Default::default()
            }
        ),
        Ok(binding_settings(-32_768, false))
    );
    assert_eq!(c.stats().unwrap().sqlite_rows, 10);
    // AUTOINCREMENT on an emptied table.
    let cleared = c
        .engine
        .update(c.canister, "clear_sqlite_vfs", &Encode!().unwrap());
    let cleared = Decode!(&cleared.unwrap().result.unwrap(), Result<u64, String>).unwrap();
    assert_eq!(cleared, Ok(10));
    assert_eq!(
        configure(&mut c, autoincrement),
        Ok(binding_settings(-32_768, true))
    );
}

// ---- the store in the suites --------------------------------------------------------------

/// `--journal-modes` with a mode the binding cannot take, for a run whose only SQLite is
/// ic-sqlite-vfs, is refused in one line naming why, with exit status 2 and before any work
/// (no output directory); the binding's own mode is accepted.
#[test]
fn a_journal_mode_its_binding_cannot_take_is_refused_before_any_work() {
    let dir = crate::support::scratch_dir("vfs-journal-modes");
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let why = "ic-sqlite-vfs keeps its rollback journal in heap memory (journal_mode MEMORY on \
               every update connection) and has no WAL (its SQLite is built with \
               SQLITE_OMIT_WAL)";
    for (suite, mode) in [
        ("seed003", "WAL"),
        ("lookups", "WAL"),
        ("tune", "WAL"),
        ("seed003", "memory,PERSIST"),
    ] {
        let args = [
            "--suite",
            suite,
            "--stores",
            "sqlite-vfs",
            "--journal-modes",
            mode,
            "--out",
            out,
        ];
        let (code, stdout, stderr) = crate::support::run_icbench(&args);
        let refused = if mode == "WAL" { "WAL" } else { "PERSIST" };
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (
                2,
                "",
                format!(
                    "error: --journal-modes {refused}: the store sqlite-vfs has no journal modes \
                     to choose: {why}; leave --journal-modes out (or give MEMORY), or add \
                     --stores sqlite\n"
                )
                .as_str()
            ),
            "{args:?}"
        );
        assert!(
            !dir.join("out").exists(),
            "{args:?} made its output directory"
        );
    }
    // With SQLite on ic-rusqlite beside it, the modes are that store's.
    let stdout = crate::support::run_icbench_ok(&[
        "--stores",
        "sqlite,sqlite-vfs",
        "--journal-modes",
        "WAL",
        "--list-scenarios",
    ]);
    assert!(
        stdout.contains("seed003\tsqlite-wal/middle/insert/1\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("seed003\tsqlite-vfs/middle/insert/1\n"),
        "{stdout}"
    );
    let stdout = crate::support::run_icbench_ok(&[
        "--stores",
        "sqlite-vfs",
        "--journal-modes",
        "MEMORY",
        "--list-scenarios",
    ]);
    assert!(
        stdout.starts_with("seed003\tsqlite-vfs/middle/insert/1\n"),
        "{stdout}"
    );
}

/// The default run's middle calls on a 2,000-row store, measured by the seed003 suite
/// (`--stores sqlite-vfs`) under `replica` with the page cache `cache` (`cold`, `warm`):
/// its results.csv rows of sqlite-vfs, in order.
fn suite_rows(replica: &str, cache: &str) -> Vec<Counts> {
    let dir = crate::support::scratch_dir(&format!("vfs-suite-{replica}-{cache}"));
    let out = dir.join("out");
    let args = [
        "--quiet",
        "--stores",
        "sqlite-vfs",
        "--rows",
        "2000",
        "--batches",
        "1",
        "--positions",
        "middle",
        "--replica",
        replica,
        "--page-cache",
        cache,
        "--format",
        "csv",
        "--out",
        out.to_str().unwrap(),
    ];
    let (code, stdout, stderr) = crate::support::run_icbench(&args);
    assert_eq!(code, 0, "{stderr}");
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let cols = [
        "store_instructions",
        "instructions",
        "heap_wasm_pages_accessed",
        "heap_wasm_pages_written",
        "stable_wasm_pages_accessed",
        "stable_wasm_pages_written",
        "page_charge_instructions",
    ]
    .map(col);
    lines
        .filter(|l| l.contains(",sqlite-vfs,"))
        .map(|line| {
            // The args column is quoted and holds commas: the counts come after it.
            let (_, tail) = line.rsplit_once('"').unwrap();
            let fields: Vec<&str> = tail.split(',').collect();
            let shift = header.len() - fields.len();
            let n = |c: usize| fields[c - shift].parse::<u64>().unwrap();
            Counts {
                store: n(cols[0]),
                message: n(cols[1]),
                pages: PageCounts {
                    heap_wasm_pages_accessed: n(cols[2]),
                    heap_wasm_pages_written: n(cols[3]),
                    stable_wasm_pages_accessed: n(cols[4]),
                    stable_wasm_pages_written: n(cols[5]),
                    page_charge_instructions: n(cols[6]),
                },
            }
        })
        .collect()
}

/// The same calls made on the canister directly: filled with 2,000 rows (ids 0, 10, ...)
/// in one message of 100-byte rows, its connection reopened, then each call from that state;
/// `warm`, from that state after one update that reads the whole table and one message of
/// the call's workload just below its ids (as docs/suites.md defines warm).
fn canister_rows(replica: Replica, warm: bool) -> Vec<Counts> {
    let mut engine = EmbeddedEngine::default().with_replica(replica);
    let mut c = install(&mut engine);
    assert_eq!(c.set_payload_size(100).unwrap().value, Ok(100));
    insert(&mut c, IdSequence::new(0, 10, 2_000));
    configure(&mut c, SqliteConfig::default()).unwrap();
    let mut at = c.engine.snapshot(c.canister).unwrap();
    if warm {
        let read = c.scan_users(STORE, 0, 4_000, true).unwrap();
        assert_eq!(read.value.unwrap().rows_found, 2_000);
        at = c.engine.snapshot(c.canister).unwrap();
    }
    let row = Counts::measured;
    let mut rows = Vec::new();
    c.engine.restore(c.canister, at).unwrap();
    if warm {
        insert(&mut c, IdSequence::new(9_991, 10, 1));
    }
    let r = c.add_users(STORE, IdSequence::new(10_001, 10, 1)).unwrap();
    rows.push(row(r.value.unwrap().instructions, &r.message));
    for keys in [1, 100] {
        c.engine.restore(c.canister, at).unwrap();
        if warm {
            let below = c.get_users(STORE, IdSequence::new(10_000 - keys * 10, 10, keys), true);
            assert_eq!(below.unwrap().value.unwrap().rows_found, keys);
        }
        let r = c
            .get_users(STORE, IdSequence::new(10_000, 10, keys), false)
            .unwrap();
        rows.push(row(r.value.unwrap().instructions, &r.message));
    }
    c.engine.restore(c.canister, at).unwrap();
    if warm {
        let below = c.scan_users(STORE, 0, 1_000, true).unwrap();
        assert_eq!(below.value.unwrap().rows_found, 1_000);
    }
    let r = c.scan_users(STORE, 10_000, 1_000, false).unwrap();
    rows.push(row(r.value.unwrap().instructions, &r.message));
    rows
}

/// The suite measures the store as its canister counts it, on a newly opened connection
/// over the fill: a one-row insert, point reads of 1 and 100 keys and a 1,000-row scan in
/// the middle, under both vintages, exactly.
#[test]
fn the_suite_measures_a_small_store_exactly_under_both_vintages() {
    insta::assert_snapshot!(measures_as_the_canister_counts(false));
}

/// Warm (the whole table read, then one message of the workload), the suite measures the
/// store as its canister counts it too: the same calls as cold, exactly. A warm cache makes
/// each cheaper here (no stable pages read for the reads).
#[test]
fn the_suite_measures_a_small_store_warm_exactly_under_both_vintages() {
    insta::assert_snapshot!(measures_as_the_canister_counts(true));
}

/// Under each vintage, the suite's rows for the store cold or `warm`, checked to be the
/// canister's own counts of the same calls: as a table.
fn measures_as_the_canister_counts(warm: bool) -> String {
    let mut counts = table(&["vintage", "call"]);
    for replica in [Replica::R2026_07, Replica::R2026_05] {
        let suite = suite_rows(replica.name, if warm { "warm" } else { "cold" });
        assert_eq!(suite, canister_rows(replica, warm), "{}", replica.name);
        let calls = ["insert 1", "get 1", "get 100", "scan 1000"];
        assert_eq!(suite.len(), calls.len());
        for (call, c) in calls.into_iter().zip(&suite) {
            counts.row(c.row(&[replica.name, call]));
        }
    }
    counts.to_string()
}

// ---- the upgrade and scaling suites ---------------------------------------------------------

/// (store instructions, the message's instructions) of a record or a call.
type Pair = (u64, u64);

/// The records of `report` of `operation`, in order, as [`Pair`]s.
fn pairs(report: &icbench::report::Report, operation: &str) -> Vec<Pair> {
    report
        .results
        .iter()
        .filter(|r| r.operation == operation)
        .map(|r| {
            assert_eq!(r.status, icbench::report::Status::Ok, "{r:?}");
            (r.store_instructions, r.instructions)
        })
        .collect()
}

/// `plan` run in this process on an engine of `replica`'s rules (the store in its own
/// module's canister, on an engine of its own, as icbench runs it).
fn run_plan(plan: &dyn icbench::suites::Plan, replica: Replica) -> icbench::report::Report {
    let exec = icbench::suites::Exec {
        jobs: 1,
        shard: icbench::suites::Shard::WHOLE,
        profile: false,
    };
    // Its module and new build compiled once, through the test cache.
    wasm();
    let mut engine = EmbeddedEngine::default().with_replica(replica);
    plan.run(
        &mut engine,
        crate::support::bench_wasm(),
        &exec,
        &mut |_| {},
    )
    .expect("the plan runs")
}

/// The upgrade suite's calls made on the canister directly: 1,000 rows of 100 bytes in one
/// message; from there the 100-key lookup and the one-row insert in the middle (warm: the
/// connection that filled it), then back there the upgrade to a new build after a
/// checkpoint and the same calls after it (a fresh heap: SQLite's page cache cold). Their
/// counts in the suite's order (warm query, warm update, post_upgrade, the whole
/// install_code, first query, first update), and the rows after the upgrade.
fn upgrade_direct(replica: Replica) -> (Vec<(&'static str, Pair)>, u64) {
    let mut engine = EmbeddedEngine::default().with_replica(replica);
    let mut c = install(&mut engine);
    assert_eq!(c.set_payload_size(100).unwrap().value, Ok(100));
    insert(&mut c, IdSequence::new(0, 10, 1_000));
    let at = c.engine.snapshot(c.canister).unwrap();
    let mut out = Vec::new();
    let calls = |c: &mut BenchClient<'_>, out: &mut Vec<_>, when: [&'static str; 2]| {
        let q = c
            .get_users(STORE, IdSequence::new(5_000, 10, 100), false)
            .unwrap();
        let found = q.value.unwrap();
        assert_eq!(found.rows_found, 100);
        out.push((when[0], (found.instructions, q.message.instructions)));
        let u = c.add_users(STORE, IdSequence::new(5_001, 10, 1)).unwrap();
        out.push((
            when[1],
            (u.value.unwrap().instructions, u.message.instructions),
        ));
    };
    calls(&mut c, &mut out, ["warm_query", "warm_update"]);
    c.engine.restore(c.canister, at).unwrap();
    c.engine.checkpoint();
    let new_build = icbench::suites::upgrade::new_build(wasm()).unwrap();
    let up = c
        .engine
        .upgrade(c.canister, &new_build, &Encode!().unwrap())
        .unwrap();
    up.result.expect("the upgrade succeeds");
    let post = up
        .report
        .stages
        .iter()
        .find(|(s, _)| *s == icbench::engine::InstallStage::PostUpgrade)
        .map(|(_, r)| r.instructions)
        .unwrap();
    // The canister reports no upgrade_stats: 0 in the hooks' own columns.
    out.push(("post_upgrade", (0, post)));
    out.push(("upgrade", (0, up.report.instructions)));
    let rows = c.stats().unwrap().sqlite_rows;
    calls(&mut c, &mut out, ["first_query", "first_update"]);
    (out, rows)
}

/// What an upgrade of the store's canister costs when nothing is serialized, and the first
/// calls after it on a cold page cache: the upgrade suite measures them as the canister
/// counts them, exactly, under both vintages; the rows are all there after it.
#[test]
fn the_upgrade_suite_measures_its_upgrade_and_the_first_calls_exactly_under_both_vintages() {
    use icbench::suites::scenario::Store;
    use icbench::suites::upgrade::UpgradeStore;
    let plan = crate::support::upgrade_at_1_000(vec![UpgradeStore::of(Store::SqliteVfs)]);
    // (store, message) instructions: the warm query and update, post_upgrade, the whole
    // install_code (the new build's compilation paid in full), the first query and update
    // after it; then the same install_code again before a checkpoint (1/100 of the
    // compilation).
    let mut counts = Table::new(&["vintage", "operation", "store", "message"]);
    for replica in [Replica::R2026_07, Replica::R2026_05] {
        let report = run_plan(&plan, replica);
        assert!(report.results.iter().all(|r| r.store == RECORD));
        let (direct, rows) = upgrade_direct(replica);
        assert_eq!(rows, 1_000, "{}", replica.name);
        let suite: Vec<(&str, Pair)> = direct
            .iter()
            .map(|&(op, _)| (op, pairs(&report, op)[0]))
            .collect();
        assert_eq!(suite, direct, "{}", replica.name);
        // No pre_upgrade: nothing is serialized.
        assert_eq!(pairs(&report, "pre_upgrade"), [(0, 0)], "{}", replica.name);
        // After the upgrade the page cache is cold: the first update costs more than the
        // warm one, the first query less (a cold cache touches fewer heap pages than the
        // warm one walks).
        let message = |op: &str| suite.iter().find(|(o, _)| *o == op).unwrap().1 .1;
        assert!(message("first_update") > message("warm_update"));
        assert!(message("first_query") < message("warm_query"));
        let same = pairs(&report, "upgrade_same_module");
        for (op, (store, message)) in suite
            .into_iter()
            .chain(same.iter().map(|&p| ("upgrade_same_module", p)))
        {
            counts.row([
                replica.name.to_string(),
                op.to_string(),
                store.to_string(),
                message.to_string(),
            ]);
        }
    }
    insta::assert_snapshot!(counts.to_string());
}

/// The scaling suite grows the store in its own module's canister: at 1,000 and 2,000 rows
/// its calls count as the canister counts them on a newly opened connection, its stable
/// bytes are its database's own (page_count x 16,384), and it is upgraded at the largest.
#[test]
fn the_scaling_suite_measures_a_small_store_on_a_reopened_connection_exactly() {
    use icbench::suites::scaling::{sizes_up_to, Config};
    use icbench::suites::scenario::StoreKind;
    let plan = Config::test_plan(sizes_up_to(2_000), vec![StoreKind::SqliteVfs], None);
    let report = run_plan(&plan, Replica::R2026_07);
    // 2 sizes x (7 operations, heap and stable bytes, storage on 2 subnets), the upgrade's
    // 3 records at 2,000.
    assert_eq!(report.results.len(), 2 * (7 + 4) + 3);
    let mut engine = EmbeddedEngine::default();
    let mut c = install(&mut engine);
    assert_eq!(c.set_payload_size(100).unwrap().value, Ok(100));
    let empty = c.stats().unwrap();
    let mut filled = 0;
    for n in [1_000u64, 2_000] {
        let at = |op: &str, position: &str| {
            report
                .results
                .iter()
                .find(|r| r.rows_before == n && r.operation == op && r.position == position)
                .unwrap_or_else(|| panic!("{op} {position} at {n}"))
        };
        insert(&mut c, IdSequence::new(filled * 10, 10, n - filled));
        filled = n;
        let stats = c.stats().unwrap();
        assert_eq!(stats.sqlite_page_size, 16_384);
        assert_eq!(
            at("stable_bytes", "-").bytes,
            stats.sqlite_page_count * 16_384
        );
        assert_eq!(
            at("heap_bytes", "-").bytes,
            (stats.heap_pages - empty.heap_pages) * 65_536
        );
        let grown = c.engine.snapshot(c.canister).unwrap();
        configure(&mut c, SqliteConfig::default()).unwrap();
        let reopened = c.engine.snapshot(c.canister).unwrap();
        let u = c
            .add_users(STORE, IdSequence::new(n / 2 * 10 + 1, 10, 1))
            .unwrap();
        let r = at("insert", "middle");
        assert_eq!(r.batch, 1);
        assert_eq!(
            (r.store_instructions, r.instructions),
            (u.value.unwrap().instructions, u.message.instructions)
        );
        c.engine.restore(c.canister, reopened).unwrap();
        let s = c
            .scan_users(STORE, (n - 1_000) / 2 * 10, 1_000, false)
            .unwrap();
        let r = at("range_scan", "middle");
        assert_eq!(
            (r.store_instructions, r.instructions),
            (s.value.unwrap().instructions, s.message.instructions)
        );
        c.engine.restore(c.canister, grown).unwrap();
    }
    // Each operation at each size, (store, message) instructions, in the suite's order:
    // inserts of 1 row in the middle and at random, of 100 and 1,000 rows in the middle,
    // 1 and 100 random keys, the 1,000-row scan.
    let mut counts = Table::new(&["rows", "operation", "position", "batch", "store", "message"]);
    for n in [1_000, 2_000] {
        let operations = report
            .results
            .iter()
            .filter(|r| r.rows_before == n && r.batch > 0 && r.method.contains("users"));
        for r in operations {
            counts.row([
                n.to_string(),
                r.operation.clone(),
                r.position.clone(),
                r.batch.to_string(),
                r.store_instructions.to_string(),
                r.instructions.to_string(),
            ]);
        }
    }
    insta::assert_snapshot!(counts.to_string());
    // The database's own bytes: 11 and 18 pages of 16 KiB.
    let bytes = |op: &str| -> Vec<u64> {
        let of = report.results.iter().filter(|r| r.operation == op);
        of.map(|r| r.bytes).collect()
    };
    assert_eq!(bytes("stable_bytes"), [11 * 16_384, 18 * 16_384]);
    // Upgraded at 2,000 rows: no pre_upgrade, post_upgrade reopens the database. Under the
    // tracker it pays for one stable Wasm page fewer than all it reads: a page each of whose
    // OS pages it reads once is read by the host, not the tracker.
    let upgrade: Vec<(&str, u64)> = report
        .results
        .iter()
        .filter(|r| r.method == "install_code" || r.method.starts_with("canister_"))
        .map(|r| (r.operation.as_str(), r.instructions))
        .collect();
    assert_eq!(
        upgrade,
        [
            ("pre_upgrade", 0),
            ("post_upgrade", 4_829_764),
            ("upgrade", 5_508_919_764)
        ]
    );
}
