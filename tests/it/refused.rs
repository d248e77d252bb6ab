//! Arguments the CLI refuses before any work, in two tables: the suites' selections and
//! settings (the exit status, the message in one line, nothing on stdout), and a value
//! repeated in a list flag (the whole line and no output directory).

use crate::support::run_icbench;

/// The suites' selections and settings refused, each with (a part of) its message.
const BAD_SETTINGS: &[(&[&str], &str)] = &[
    (
        &["--suite", "ycsb"],
        "invalid value 'ycsb' for '--suite <SUITE>'\n  [possible values: seed003, lookups, dbbench, keys, sysbench, upgrade, scaling, tune, cache, sustained, all]",
    ),
    (
        &["--suite", "all", "--format", "json"],
        "--format json/csv prints one suite",
    ),
    (
        &["--suite", "lookups", "--lookup-batches", "0"],
        "lookup batch sizes must be between 1 and",
    ),
    (
        &["--suite", "keys", "--keys-rows", "1050"],
        "--keys-rows must be a multiple of 100 between 1000 and 200000",
    ),
    (
        &["--suite", "keys", "--keys-journal-mode", "FAST"],
        "invalid value 'FAST' for '--keys-journal-mode <KEYS_JOURNAL_MODE>'\n  [possible values: DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF]",
    ),
    (
        &["--suite", "sysbench", "--sysbench-rows", "1999"],
        "--sysbench-rows must be between 2000 and 1000000, got 1999",
    ),
    (
        &[
            "--suite",
            "sysbench",
            "--sysbench-journal-modes",
            "WAL,FAST",
        ],
        "invalid value 'FAST' for '--sysbench-journal-modes <SYSBENCH_JOURNAL_MODES>'",
    ),
    (
        &["--suite", "sysbench", "--sysbench-max-ratio", "0"],
        "--sysbench-max-ratio and --sysbench-max-section-ratio must be positive numbers",
    ),
    (
        &["--suite", "sysbench", "--sysbench-max-section-ratio", "NaN"],
        "must be positive numbers",
    ),
    (
        &["--stores", "btree,x"],
        "invalid value 'x' for '--stores <STORES>'\n  [possible values: heap, btree, sqlite, sqlite-vfs, mo-map, mo-pure-map, mo-region, mo-map-classic]",
    ),
    (
        &["--suite", "keys", "--stores", "heap"],
        "--stores heap: the keys suite does not measure heap (seed003, lookups, upgrade, scaling, tune and sustained measure it): leave it out",
    ),
    (
        &["--positions", "top"],
        "invalid value 'top' for '--positions <POSITIONS>'\n  [possible values: middle, end, random, sorted]",
    ),
    (
        &["--suite", "dbbench", "--dbbench-num", "10"],
        "--dbbench-num must be between 1000 and 1000000",
    ),
    (
        &["--suite", "dbbench", "--dbbench-journal-mode", "FAST"],
        "invalid value 'FAST' for '--dbbench-journal-mode <DBBENCH_JOURNAL_MODE>'",
    ),
    (
        &["--suite", "tune", "--tune-page-sizes", "4096,3000"],
        "--tune-page-sizes: 3000 is not a SQLite page size (a power of two from 512 to 65,536)",
    ),
    (
        &["--suite", "tune", "--tune-page-sizes", "131072"],
        "--tune-page-sizes: 131072 is not a SQLite page size",
    ),
    (
        &["--suite", "tune", "--tune-settings", "page_size,bucket"],
        "unknown setting \"bucket\" in --tune-settings; accepted: page_size, cache_size, journal_mode, synchronous",
    ),
    (
        &["--suite", "tune", "--tune-settings", "bucket_size"],
        icbench::suites::tune::BUCKET_SIZE_NOT_SEARCHABLE,
    ),
    (
        &["--suite", "tune", "--tune-variants", "heap-talc,jemalloc"],
        "--tune-variants: unknown variant \"jemalloc\"; accepted: heap-talc, btree-talc, btree-bounded, or none",
    ),
    (
        &["--suite", "tune", "--stores", "sqlite,btree", "--tune-variants", "heap-talc"],
        "--tune-variants heap-talc: it is a heap BTreeMap (`--stores` must include heap)",
    ),
    (
        &["--suite", "tune", "--payload-size", "101", "--tune-variants", "btree-bounded"],
        "--tune-variants btree-bounded: its value type holds at most 100 bytes, --payload-size is 101",
    ),
    (
        &["--suite", "tune", "--tune-wasm", "/nonexistent/bench-tune.wasm"],
        "--tune-wasm /nonexistent/bench-tune.wasm: cannot read it",
    ),
    (
        &["--suite", "tune", "--tune-synchronous", "OFF,SOMETIMES"],
        "--tune-synchronous: unknown value \"SOMETIMES\"; accepted: OFF, NORMAL, FULL, EXTRA",
    ),
    (
        &["--suite", "tune", "--tune-cache-sizes", "-3000000000"],
        "--tune-cache-sizes: -3000000000 is outside SQLite's cache_size range",
    ),
    (
        &["--suite", "tune", "--stores", "btree"],
        "the tune suite searches SQLite's settings: --stores must include sqlite or sqlite-vfs",
    ),
    (
        &["--suite", "tune", "--tune-value-sizes", "10,0"],
        "--tune-value-sizes: 0 is not a value size (at least 1 byte)",
    ),
    (
        &["--suite", "tune", "--tune-value-sizes", "10,1k"],
        "--tune-value-sizes: \"1k\" is not a number of bytes (or none)",
    ),
    (
        &["--suite", "tune", "--tune-value-sizes", "1048577"],
        "--tune-value-sizes: 1048577 bytes is more than the canister's set_payload_size accepts (1048576 bytes, 1 MiB)",
    ),
    (
        &["--suite", "tune", "--stores", "sqlite,heap", "--tune-value-sizes", "10"],
        "--tune-value-sizes: it measures the StableBTreeMap (`--stores` must include btree)",
    ),
    (
        &["--payload-size", "0", "--stores", "btree,mo-region"],
        "--payload-size 0: the store mo-region holds values of at least 1 byte; give 1 or more, or leave mo-region out of --stores",
    ),
    (
        &["--suite", "scaling", "--payload-size", "0", "--stores", "mo-region"],
        "--payload-size 0: the store mo-region holds values of at least 1 byte; give 1 or more, or leave mo-region out of --stores",
    ),
    (
        &["--suite", "cache", "--rows", "2000", "--cache-warmups", "0,600"],
        "--cache-warmups 600: 600 warm-ups of a middle insert/100 do not fit in 2,000 rows (they take the W windows of ids just below the middle one: W x batch <= rows / 2)",
    ),
    (
        &["--suite", "cache", "--cache-warmups", "10001"],
        "--cache-warmups 10001: at most 10,000 warm-up messages a point",
    ),
    (
        &["--suite", "cache", "--cache-warmups", "0,0"],
        "--cache-warmups 0,0: 0 is given twice",
    ),
    (
        &["--suite", "cache", "--cache-batches", "0"],
        "--cache-batches: sizes must be between 1 and 100000",
    ),
    (
        &["--suite", "cache", "--rows", "2000", "--cache-lookups", "1001"],
        "--cache-lookups: sizes must be between 1 and 1000",
    ),
    (
        &["--suite", "cache", "--cache-batches", "x"],
        "invalid value 'x' for '--cache-batches <CACHE_BATCHES>'",
    ),
    (
        &["--suite", "cache", "--cache-positions", "top"],
        "invalid value 'top' for '--cache-positions <CACHE_POSITIONS>'",
    ),
    (
        &["--suite", "cache", "--stores", "heap,btree"],
        "--stores heap,btree: the cache suite does not measure heap (seed003, lookups, upgrade, scaling, tune and sustained measure it): leave it out",
    ),
    (
        &["--suite", "cache", "--stores", "sqlite-vfs", "--journal-modes", "WAL"],
        "--journal-modes WAL: the store sqlite-vfs has no journal modes to choose",
    ),
];

#[test]
fn bad_suite_selections_and_settings_exit_2_with_one_line_before_any_work() {
    for (args, expected) in BAD_SETTINGS {
        let (code, stdout, stderr) = run_icbench(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        // clap's own errors add its usage hint; ours are one line.
        if !expected.starts_with("invalid value") {
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        }
        assert!(
            stderr.contains(expected),
            "{args:?}: {expected:?} in {stderr}"
        );
    }
}

#[test]
fn a_value_repeated_in_a_list_flag_is_refused_in_one_line_before_any_work() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--journal-modes", "WAL,WAL"],
            "--journal-modes WAL,WAL: WAL is given twice; each value is run once, so name it once",
        ),
        // The same value in another case, where the flag ignores case.
        (
            &["--journal-modes", "wal,OFF,WAL"],
            "--journal-modes wal,OFF,WAL: WAL is given twice; each value is run once, so name it once",
        ),
        (
            &["--stores", "btree", "--stores", "sqlite,btree"],
            "--stores btree,sqlite,btree: btree is given twice; each value is run once, so name it once",
        ),
        // The same number spelled twice.
        (
            &["--batches", "10,010"],
            "--batches 10,010: 010 is given twice; each value is run once, so name it once",
        ),
        (
            &["--positions", "end,middle,end"],
            "--positions end,middle,end: end is given twice; each value is run once, so name it once",
        ),
        (
            &["--suite", "upgrade", "--upgrade-sizes", "1000,2000,1000"],
            "--upgrade-sizes 1000,2000,1000: 1000 is given twice; each value is run once, so name it once",
        ),
        (
            &["--suite", "tune", "--tune-cache-sizes", "-2000,500,-2000"],
            "--tune-cache-sizes -2000,500,-2000: -2000 is given twice; each value is run once, so name it once",
        ),
        (
            &["--suite", "tune", "--tune-synchronous", "OFF,off"],
            "--tune-synchronous OFF,off: off is given twice; each value is run once, so name it once",
        ),
        // A suite named twice is a slip too; `all` beside a named suite is an overlap
        // (below).
        (
            &["--suite", "seed003,lookups,seed003"],
            "--suite seed003,lookups,seed003: seed003 is given twice; each value is run once, so name it once",
        ),
        // Under `run` as at the top level.
        (
            &["run", "--sysbench-journal-modes", "PERSIST,persist"],
            "--sysbench-journal-modes PERSIST,persist: persist is given twice; each value is run once, so name it once",
        ),
    ];
    for (i, (args, expected)) in cases.iter().enumerate() {
        crate::inputs::refused(&format!("lists-{i}"), args, expected);
    }
}
