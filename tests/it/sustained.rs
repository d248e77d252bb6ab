//! The sustained suite: a sequence of messages from a store's start, summed up per message.
//! Counts on the embedded engine are exact; these pin them for a Rust store and a Motoko
//! store whose collector runs within the sequence.

use icbench::report::{from_json, ScenarioResult, Status};

fn run(name: &str, args: &[&str]) -> Vec<ScenarioResult> {
    let out = crate::support::scratch_dir(name);
    let o = crate::support::icbench_command()
        .args(["--quiet", "--suite", "sustained", "--jobs", "1"])
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("icbench runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("sustained/results.json")).unwrap();
    from_json(&text).unwrap().results
}

/// 100 inserts of 1,000 rows at the end of 20,000 rows: pure/Map's collector starts and
/// finishes a collection within them (its increments take 35% of the sequence's charged
/// instructions, the largest message 29 times the median); mo:core's Map allocates less per
/// row and stays below the heap growth that starts one, paying 330 instructions a message
/// for the collector's check. The record's own columns are the median message's.
#[test]
fn a_sequence_counts_every_message_and_the_collector_s_share() {
    let results = run(
        "sustained_end",
        &[
            "--stores",
            "btree,mo-map,mo-pure-map",
            "--rows",
            "20000",
            "--sustained-workloads",
            "100x1000,20x1",
            "--sustained-positions",
            "end",
        ],
    );
    let figures = |store: &str, batch: u64| {
        let r = results
            .iter()
            .find(|r| r.store == store && r.batch == batch)
            .unwrap_or_else(|| panic!("no {store} {batch}"));
        let s = r.sequence.clone().expect("a sequence");
        assert_eq!(r.instructions, s.charged_median, "{store} {batch}");
        let sum = (s.charged_mean * s.messages as f64).round() as u64;
        (
            s.messages,
            sum,
            s.charged_median,
            s.charged_p99,
            s.charged_max,
            s.pages_max,
            s.collector_instructions,
            s.allocated_bytes,
        )
    };
    assert_eq!(
        figures("mo-pure-map", 1_000),
        (
            100,
            4_479_210_308,
            29_220_322,
            311_041_146,
            856_706_012,
            Some(6_660),
            Some(1_576_656_174),
            Some(331_451_008)
        )
    );
    assert_eq!(
        figures("mo-map", 1_000),
        (
            100,
            1_443_751_938,
            14_434_459,
            15_135_713,
            15_273_565,
            Some(46),
            Some(33_000),
            Some(45_542_912)
        )
    );
    let (messages, _, median, _, _, _, collector, allocated) = figures("mo-map", 1);
    assert_eq!(
        (messages, collector, allocated),
        (20, Some(6_600), Some(22_720))
    );
    assert_eq!(median, 1_464_646);
    // A Rust store has no collector to report.
    let btree = figures("btree", 1);
    assert_eq!((btree.0, btree.6, btree.7), (20, None, None));
    assert_eq!(btree.2, 1_645_020);
}

/// A default sequence that does not fit the table is refused in the report, with the reason,
/// and the others run (a sequence given on the command line is refused before any work:
/// tests/it/inputs.rs).
#[test]
fn a_default_sequence_too_long_for_the_table_is_refused_in_the_report() {
    let results = run(
        "sustained_default_fit",
        &[
            "--stores",
            "btree",
            "--rows",
            "2000",
            "--sustained-positions",
            "middle",
        ],
    );
    let status = |batch: u64| {
        let r = results.iter().find(|r| r.batch == batch).unwrap();
        (r.status.clone(), r.sequence.as_ref().map(|s| s.messages))
    };
    assert_eq!(status(1), (Status::Ok, Some(1_000)));
    let (refused, messages) = status(100);
    assert_eq!(messages, Some(100));
    assert_eq!(
        refused,
        Status::Refused(
            "99 warm-ups of a middle insert/100 do not fit in 2,000 rows (they take the W \
             windows of ids just below the middle one: W x batch <= rows / 2)"
                .into()
        )
    );
}
