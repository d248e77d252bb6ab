//! The reporting layer on a small hand-built report: exact cells, footnotes, CSV quoting,
//! JSON round trip, plot shape and determinism, and the comparison rules.

use icbench::report::{self, compare, Change, Document, Report, ScenarioResult, Status, Workload};
use icbench::suites::{seed003, Suite};

use crate::support::{assert_has, scenario, By};

/// The seed003 suite's document: the position tables and plots these tests check.
fn document(report: &Report) -> Document {
    seed003::Seed003.document(report)
}

fn markdown(report: &Report) -> String {
    report::markdown(report, &document(report))
}

fn terminal_tables(report: &Report) -> String {
    report::terminal(&document(report))
}

/// plot-POSITION.svg, if the document has it.
fn svg_plot(report: &Report, position: &str) -> Option<String> {
    let file = format!("plot-{position}.svg");
    document(report)
        .plots
        .iter()
        .find(|p| p.file == file)
        .map(|p| p.svg())
}

const WAL_REASON: &str = "journal_mode=WAL needs shared memory, which a canister lacks";

/// An insert of the storage sample (1,000,000 rows): `store_instructions` of store work,
/// charged with a fixed overhead and a dirty-page charge.
fn insert(
    store: &str,
    journal_mode: &str,
    position: &str,
    batch: u64,
    store_instructions: u64,
) -> ScenarioResult {
    let instructions = store_instructions + 20_000 + 1_000 * batch;
    let named = scenario::named(store, journal_mode, position, "insert", batch);
    let r = scenario::charged(named, instructions, store_instructions);
    ScenarioResult {
        suite: "storage".into(),
        rows_before: 1_000_000,
        args: format!("(500000, 10, {batch})"),
        usd: r.cycles as f64 * 1.35e-12,
        stable_pages_delta: batch as i64 / 50,
        heap_dirty_pages: 2,
        stable_dirty_pages: batch,
        ingress_cycles: 1_296_000,
        ..r
    }
}

/// 2 positions × 3 stores × batches 1/10/100 of inserts (seed 003's middle numbers), with
/// the WAL cell of middle/10 refused, plus one point lookup.
fn sample() -> Report {
    let costs: [(&str, &str, [u64; 3]); 3] = [
        ("btree", "", [49_359, 49_359, 548_249]),
        ("sqlite", "DELETE", [407_462, 407_462, 529_542]),
        ("sqlite", "WAL", [380_000, 390_000, 500_000]),
    ];
    let mut results = Vec::new();
    for position in ["end", "middle"] {
        for (store, mode, per_batch) in costs {
            for (batch, cost) in [1, 10, 100].into_iter().zip(per_batch) {
                let mut r = insert(store, mode, position, batch, cost);
                if position == "middle" && mode == "WAL" && batch == 10 {
                    r.status = Status::Refused(WAL_REASON.into());
                    (r.instructions, r.store_instructions, r.cycles, r.usd) = (0, 0, 0, 0.0);
                    (r.instructions_per_row, r.store_instructions_per_row) = (0.0, 0.0);
                }
                results.push(r);
            }
        }
    }
    let mut lookup = insert("btree", "", "middle", 1, 40_000);
    lookup.operation = "point_lookup".into();
    lookup.method = "get_users_btree".into();
    (lookup.cycles, lookup.usd, lookup.stable_pages_delta) = (0, 0.0, 0);
    // A query: the tracker charges the pages it accessed, 80,000 each.
    lookup.pages = Some(icbench::engine::PageCounts {
        heap_wasm_pages_accessed: 5,
        heap_wasm_pages_written: 2,
        stable_wasm_pages_accessed: 3,
        stable_wasm_pages_written: 0,
        page_charge_instructions: 8 * 80_000,
    });
    results.push(lookup);
    Report {
        extra: Default::default(),
        suite: "storage".into(),
        engine: "embedded".into(),
        workload: Some(Workload {
            rows_before: 1_000_000,
            seed: 42,
            payload_size: 100,
        }),
        wall_seconds: 83.25,
        prefill: None,
        executed_instructions: 0,
        work: None,
        results,
        notes: vec!["SQLite page cache: 2,000 pages".into()],
    }
}

fn find<'a>(
    report: &'a mut Report,
    store: &str,
    mode: &str,
    position: &str,
    batch: u64,
) -> &'a mut ScenarioResult {
    let by = [
        By::Store(store),
        By::JournalMode(mode),
        By::Position(position),
        By::Batch(batch),
        By::Operation("insert"),
    ];
    report
        .results
        .iter_mut()
        .find(|r| By::all(&by, r))
        .expect("the sample has this scenario")
}

/// Asserts one pipe-table line of `text` has exactly `cells`.
#[track_caller]
fn assert_row(text: &str, cells: &[&str]) {
    assert!(table_rows(text).iter().any(|row| row == cells), "{text}");
}

/// The trimmed cells of every pipe-table line.
fn table_rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

#[test]
fn markdown_has_seed_003_shaped_tables() {
    let md = markdown(&sample());
    assert_has(&md, "- Rows before each message: 1,000,000\n");
    assert!(
        md.contains("- Wall time: 1 min 23.2 s\n") || md.contains("- Wall time: 1 min 23.3 s\n"),
        "{md}"
    );
    assert_has(&md, "- SQLite page cache: 2,000 pages\n");
    // Columns in the fixed store order, whatever order the results came in.
    let header = md
        .lines()
        .find(|l| l.starts_with("| New rows"))
        .expect("an insert table");
    let columns: Vec<&str> = header
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        columns,
        ["New rows", "StableBTreeMap", "SQLite DELETE", "SQLite WAL"]
    );
    // Middle comes first, as in seed 003.
    assert!(md.find("## Position: middle").unwrap() < md.find("## Position: end").unwrap());
    assert_row(
        &md,
        &[
            "1",
            "49,359 (49,359/row)",
            "407,462 (407,462/row)",
            "380,000 (380,000/row)",
        ],
    );
    assert_row(
        &md,
        &[
            "100",
            "548,249 (5,482/row)",
            "529,542 (5,295/row)",
            "500,000 (5,000/row)",
        ],
    );
    // Refused cells carry one footnote, defined once.
    assert_row(
        &md,
        &[
            "10",
            "49,359 (4,936/row)",
            "407,462 (40,746/row)",
            "refused[^1]",
        ],
    );
    assert_eq!(
        md.matches(&format!("[^1]: refused: {WAL_REASON}")).count(),
        1,
        "{md}"
    );
    assert!(!md.contains("[^2]"), "{md}");
    // Charged instructions, cycles, memory and reads have their tables; plots are linked.
    assert_has(
        &md,
        "### Insert, middle: instructions charged per message\n",
    );
    assert_row(
        &md,
        &[
            "1",
            "70,359 (70,359/row)",
            "428,462 (428,462/row)",
            "401,000 (401,000/row)",
        ],
    );
    assert_has(&md, "### Insert, middle: memory growth (64 KiB pages)\n");
    assert_row(
        &md,
        &[
            "100",
            "heap 0, stable +2",
            "heap 0, stable +2",
            "heap 0, stable +2",
        ],
    );
    assert_row(&md, &["point lookup, 1 key", "40,000 (40,000/row)"]);
    assert!(
        md.contains("](plot-middle.svg)") && md.contains("](plot-end.svg)"),
        "{md}"
    );
}

#[test]
fn terminal_tables_are_compact() {
    let text = terminal_tables(&sample());
    assert_has(&text, "middle: insert, store instructions per message");
    let rows = table_rows(&text);
    assert_eq!(rows[2], ["1", "49.4K", "407.5K", "380.0K"], "{text}");
    assert_eq!(rows[3], ["10", "49.4K", "407.5K", "refused[1]"], "{text}");
    assert_has(&text, &format!("[1] refused: {WAL_REASON}"));
    assert!(text.lines().all(|l| l.chars().count() <= 120), "{text}");
}

#[test]
fn csv_has_header_rows_and_quoting() {
    let report = sample();
    let text = report::csv(&report);
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "suite,engine,store,journal_mode,position,operation,batch,rows_before,method,args,status,reason,\
         instructions,instructions_per_row,store_instructions,store_instructions_per_row,cycles,usd,\
         heap_pages_delta,stable_pages_delta,heap_dirty_pages,stable_dirty_pages,\
         heap_wasm_pages_accessed,heap_wasm_pages_written,stable_wasm_pages_accessed,\
         stable_wasm_pages_written,page_charge_instructions,bytes,ingress_cycles,profile"
    );
    // The page columns: empty where the engine did not see pages, the counts where it did.
    let rows: Vec<&str> = text.lines().skip(1).collect();
    let cells = |row: &str| {
        row.split(',')
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(cells(rows[0]), ",,,,,0,1296000,");
    assert_eq!(cells(rows.last().unwrap()), "5,2,3,0,640000,0,1296000,");
    assert_eq!(lines.count(), report.results.len());
    assert_has(&text, &format!(",refused,\"{WAL_REASON}\","));
    assert_has(&text, ",\"(500000, 10, 100)\",");
}

#[test]
fn json_round_trips() {
    let report = sample();
    let text = report::json(&report);
    assert_eq!(report::from_json(&text), Ok(report));
}

#[test]
fn from_json_names_the_problem() {
    let garbage = report::from_json("this is not json").unwrap_err();
    assert_has(&garbage, "not a JSON document");

    let mut value: serde_json::Value = serde_json::from_str(&report::json(&sample())).unwrap();
    value.as_object_mut().unwrap().remove("engine");
    let err = report::from_json(&value.to_string()).unwrap_err();
    assert_has(&err, "missing field `engine`");

    let mut value: serde_json::Value = serde_json::from_str(&report::json(&sample())).unwrap();
    value["results"][4]
        .as_object_mut()
        .unwrap()
        .remove("store_instructions");
    let err = report::from_json(&value.to_string()).unwrap_err();
    assert!(
        err.contains("results[4]") && err.contains("missing field `store_instructions`"),
        "{err}"
    );
}

#[test]
fn svg_plot_is_a_deterministic_log_log_chart() {
    let report = sample();
    let svg = svg_plot(&report, "middle").expect("middle has inserts");
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"));
    // One line per store with ok data (WAL still has batches 1 and 100).
    assert_eq!(svg.matches("<polyline").count(), 3);
    for label in ["1", "10", "100", "1k", "10k"] {
        assert!(
            svg.contains(&format!(">{label}</text>")),
            "missing axis label {label}"
        );
    }
    assert!(svg.contains("Insert cost per row, middle, 1,000,000 rows"));
    assert_eq!(svg, svg_plot(&report, "middle").unwrap());
    assert_eq!(svg_plot(&report, "random"), None);
}

#[test]
fn write_all_writes_every_file() {
    let dir = std::env::temp_dir().join(format!("icbench-report-test-{}", std::process::id()));
    let paths = report::write_all(&sample(), &document(&sample()), &dir, Vec::new()).unwrap();
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "report.md",
            "results.csv",
            "results.json",
            "plot-middle.svg",
            "plot-end.svg"
        ]
    );
    assert!(paths.iter().all(|p| p.is_file()));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The sample against the sample after `change`, at the default noise of 2%.
fn compare_changed(change: impl FnOnce(&mut Report)) -> report::Comparison {
    let mut new = sample();
    change(&mut new);
    compare(&sample(), &new, 2.0)
}

/// [`compare_changed`] with the charged instructions of one insert scaled to `percent`%.
fn compare_charged_scaled(
    store: &str,
    mode: &str,
    position: &str,
    batch: u64,
    percent: u64,
) -> report::Comparison {
    compare_changed(|new| {
        let r = find(new, store, mode, position, batch);
        r.instructions = r.instructions * percent / 100;
    })
}

#[test]
fn compare_identical_reports_is_clean() {
    let c = compare(&sample(), &sample(), 2.0);
    assert!(!c.has_regressions());
    assert_eq!(c.count(Change::Unchanged), c.entries.len());
    assert!(c.render().contains("No scenario changed"), "{}", c.render());
}

#[test]
fn compare_flags_a_five_percent_regression() {
    let c = compare_changed(|new| {
        let r = find(new, "sqlite", "DELETE", "middle", 100);
        r.store_instructions = r.store_instructions * 105 / 100;
    });
    assert!(c.has_regressions());
    assert_eq!(c.count(Change::Regression), 1);
    let rendered = c.render();
    assert_has(&rendered, "storage/sqlite/DELETE/middle/insert/100");
    assert_has(&rendered, "+5.00%");
}

#[test]
fn compare_flags_a_five_percent_improvement() {
    let c = compare_charged_scaled("btree", "", "end", 10, 95);
    assert!(!c.has_regressions());
    assert_eq!(c.count(Change::Improvement), 1);
    assert_eq!(c.count(Change::Regression), 0);
}

#[test]
fn compare_ignores_one_percent_at_default_noise() {
    let c = compare_charged_scaled("btree", "", "middle", 100, 101);
    assert!(!c.has_regressions());
    assert_eq!(c.count(Change::Unchanged), c.entries.len());
}

#[test]
fn compare_reports_new_and_missing_scenarios() {
    let base = sample();
    let mut new = sample();
    new.results
        .push(insert("sqlite", "OFF", "middle", 1, 149_520));
    let c = compare(&base, &new, 2.0);
    assert_eq!(c.count(Change::New), 1);
    assert!(!c.has_regressions());
    let back = compare(&new, &base, 2.0);
    assert_eq!(back.count(Change::Missing), 1);
}

#[test]
fn compare_counts_ok_to_failed_as_regression() {
    let c = compare_changed(|new| {
        find(new, "btree", "", "end", 1).status = Status::Failed("trap: out of bounds".into());
    });
    assert!(c.has_regressions());
    assert_eq!(c.count(Change::StatusChanged { worse: true }), 1);
    assert!(c.render().contains("1 regression(s)"), "{}", c.render());
}

#[test]
fn compare_matches_across_engines() {
    let c = compare_changed(|new| {
        for r in &mut new.results {
            r.engine = "pocket-ic".into();
        }
        new.engine = "pocket-ic".into();
    });
    assert_eq!(c.count(Change::Unchanged), c.entries.len());
    assert!(c
        .render()
        .contains("`embedded` (base) with `pocket-ic` (new)"));
}

#[test]
fn unlike_names_each_rule_and_setting_that_moves_the_counts() {
    let like = |change: &dyn Fn(&mut Report)| {
        let mut new = sample();
        change(&mut new);
        compare::unlike(&sample(), &new)
            .iter()
            .map(|u| u.to_string())
            .collect::<Vec<_>>()
    };
    assert!(like(&|_| {}).is_empty());
    // The engine and the notes are not rules: an embedded run is checked against PocketIC.
    assert!(like(&|r| {
        r.engine = "pocket-ic".into();
        r.notes.clear();
    })
    .is_empty());
    let mut base_rules = sample();
    base_rules.set_extra(report::REPLICA, &"2026-07");
    let mut old_rules = sample();
    old_rules.set_extra(report::REPLICA, &"2024");
    old_rules.set_extra(report::HOST, &"macos-arm64");
    let rules: Vec<String> = compare::unlike(&base_rules, &old_rules)
        .iter()
        .map(|u| u.to_string())
        .collect();
    assert_eq!(
        rules,
        [
            "replica rules 2026-07 (base) against 2024 (new)",
            "host linux (base) against macos-arm64 (new)"
        ]
    );
    assert_eq!(
        like(&|r| {
            r.workload = Some(Workload {
                rows_before: 2_000,
                payload_size: 1_000,
                seed: 7,
            });
            r.set_extra(report::LAYOUT, &"alone");
        }),
        [
            "rows 1,000,000 (base) against 2,000 (new)",
            "payload size 100 (base) against 1,000 (new)",
            "seed 42 (base) against 7 (new)",
            "layout (none recorded) (base) against alone (new)"
        ]
    );
    // In a shared canister the stores filled beside each other move each other's counts;
    // alone, another selection only adds or removes scenarios.
    let mut base = sample();
    let mut fewer = sample();
    fewer.results.retain(|r| r.store != "btree");
    for layout in ["alone", "shared"] {
        base.set_extra(report::LAYOUT, &layout);
        fewer.set_extra(report::LAYOUT, &layout);
        let unlike: Vec<String> = compare::unlike(&base, &fewer)
            .iter()
            .map(|u| u.to_string())
            .collect();
        match layout {
            "alone" => assert!(unlike.is_empty(), "{unlike:?}"),
            _ => assert_eq!(
                unlike,
                ["stores in the shared canister btree,sqlite (base) against sqlite (new)"]
            ),
        }
    }
    let c = compare::compare(&base, &fewer, 2.0);
    assert_eq!(c.count(Change::Missing), 7);
    assert!(!c.has_regressions());
}

#[test]
fn compare_refuses_runs_of_other_rules_unless_asked_and_then_says_so_first() {
    let dir = std::env::temp_dir().join(format!("icbench-unlike-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, replica: &str| {
        let mut r = sample();
        r.set_extra(report::REPLICA, &replica);
        let path = dir.join(name);
        std::fs::write(&path, report::json(&r)).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (now, old) = (write("now.json", "2026-07"), write("old.json", "2024"));
    let (code, stdout, stderr) = crate::support::run_icbench(&["compare", &now, &old]);
    assert_eq!(code, 2);
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "error: the runs are not alike: replica rules 2026-07 (base) against 2024 (new); their \
         counts differ by that whatever the code did (--cross-rules compares them anyway)\n"
    );
    let (code, stdout, _) = crate::support::run_icbench(&["compare", "--cross-rules", &now, &old]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout.lines().next(),
        Some(
            "Across rules and settings (`--cross-rules`): replica rules 2026-07 (base) against \
             2024 (new); every change below includes what that moves."
        )
    );
    let (code, comment, _) = crate::support::run_icbench(&[
        "compare",
        "--cross-rules",
        "--format",
        "markdown",
        &now,
        &old,
    ]);
    assert_eq!(code, 0);
    assert!(
        comment.starts_with(
            "### icbench across rules and settings (replica rules 2026-07 (base) against 2024 \
             (new)): 0 regressions"
        ),
        "{comment}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs of different suites, or of one suite with no scenario in common, are refused in one
/// line, `--cross-rules` or not: the gate would pass on nothing.
#[test]
fn compare_refuses_runs_of_other_suites_and_runs_with_nothing_in_common() {
    let dir = crate::support::scratch_dir("incomparable");
    let write = |name: &str, change: &dyn Fn(&mut Report)| {
        let mut r = sample();
        change(&mut r);
        let path = dir.join(name);
        std::fs::write(&path, report::json(&r)).unwrap();
        path.to_str().unwrap().to_string()
    };
    let base = write("base.json", &|_| {});
    let lookups = write("lookups.json", &|r| {
        r.suite = "lookups".into();
        for x in &mut r.results {
            x.suite = "lookups".into();
        }
    });
    let apart = write("apart.json", &|r| {
        for x in &mut r.results {
            x.position = "random".into();
        }
    });
    for extra in [&[][..], &["--cross-rules"]] {
        let (code, stdout, stderr) =
            crate::support::run_icbench(&[&["compare"], extra, &[&base, &lookups]].concat());
        assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
        assert_eq!(
            stderr,
            "error: the runs are of different suites: storage (base) against lookups (new); \
             compare two runs of one suite\n"
        );
        let (code, stdout, stderr) =
            crate::support::run_icbench(&[&["compare"], extra, &[&base, &apart]].concat());
        assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
        assert_eq!(
            stderr,
            "error: the runs have no scenario in common: 19 in the base (e.g. \
             storage/btree/-/end/insert/1), 19 in the new run (e.g. \
             storage/btree/-/random/insert/1); nothing would be compared\n"
        );
    }
    // One scenario in common is enough.
    let (code, _, stderr) = crate::support::run_icbench(&["compare", &base, &base]);
    assert_eq!(code, 0, "{stderr}");
}
