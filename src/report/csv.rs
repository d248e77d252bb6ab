//! results.csv: one row per scenario, columns named like the `ScenarioResult` fields so
//! the CSV and results.json read the same.

use super::Report;
use super::{ScenarioResult, Sequence, Status};
use crate::engine::PageCounts;

/// `ScenarioResult`'s fields in declaration order; the flattened status is two columns.
/// `cache` is written only by a report that has a warm record, so the files of cold runs
/// stay as they were before the column; `warm_ups` only by one with a record of the cache
/// suite's sweep; the sequence's columns only by one with a sustained record.
pub(crate) const HEADER: [&str; 41] = [
    "suite",
    "engine",
    "store",
    "journal_mode",
    CACHE,
    WARM_UPS,
    "position",
    "operation",
    "batch",
    "rows_before",
    "method",
    "args",
    "status",
    "reason",
    "instructions",
    "instructions_per_row",
    "store_instructions",
    "store_instructions_per_row",
    "cycles",
    "usd",
    "heap_pages_delta",
    "stable_pages_delta",
    "heap_dirty_pages",
    "stable_dirty_pages",
    "heap_wasm_pages_accessed",
    "heap_wasm_pages_written",
    "stable_wasm_pages_accessed",
    "stable_wasm_pages_written",
    "page_charge_instructions",
    "bytes",
    "ingress_cycles",
    "messages",
    "charged_mean",
    "charged_median",
    "charged_p99",
    "charged_max",
    "pages_mean",
    "pages_max",
    "collector_instructions",
    "allocated_bytes",
    "profile",
];

/// The column of the page cache's state, and where it goes.
const CACHE: &str = "cache";
const CACHE_COLUMN: usize = 4;
/// The column of W, the warm-up messages before the measured one, and where it goes.
const WARM_UPS: &str = "warm_ups";
const WARM_UPS_COLUMN: usize = 5;
/// The columns of a sustained record's sequence.
const SEQUENCE_COLUMNS: std::ops::Range<usize> = 31..40;

/// results.csv with RFC 4180 quoting and CRLF line ends.
pub fn csv(report: &Report) -> String {
    let with_cache = report.results.iter().any(|r| !r.cache.is_cold());
    let with_warm_ups = report.results.iter().any(|r| !r.warm_ups.is_empty());
    let with_sequence = report.results.iter().any(|r| r.sequence.is_some());
    let columns = |row: [String; 41]| {
        row.into_iter()
            .enumerate()
            .filter(move |&(i, _)| with_cache || i != CACHE_COLUMN)
            .filter(move |&(i, _)| with_warm_ups || i != WARM_UPS_COLUMN)
            .filter(move |&(i, _)| with_sequence || !SEQUENCE_COLUMNS.contains(&i))
            .map(|(_, f)| f)
    };
    let mut out = line(columns(HEADER.map(String::from)));
    for r in &report.results {
        out.push_str(&line(columns(fields(r))));
    }
    out
}

fn fields(r: &ScenarioResult) -> [String; 41] {
    let (status, reason) = match &r.status {
        Status::Ok => ("ok", ""),
        Status::Refused(reason) => ("refused", reason.as_str()),
        Status::Failed(reason) => ("failed", reason.as_str()),
    };
    // Exhaustive destructuring: adding a field to ScenarioResult fails to compile here
    // until the CSV learns about it.
    let ScenarioResult {
        suite,
        engine,
        store,
        journal_mode,
        cache,
        warm_ups,
        position,
        operation,
        batch,
        rows_before,
        method,
        args,
        status: _,
        instructions,
        instructions_per_row,
        store_instructions,
        store_instructions_per_row,
        cycles,
        usd,
        heap_pages_delta,
        stable_pages_delta,
        heap_dirty_pages,
        stable_dirty_pages,
        pages,
        bytes,
        ingress_cycles,
        sequence,
        profile,
        profile_data: _,
        page_map_data: _,
    } = r;
    // Pages the engine could not see are empty cells, not zeros.
    let page =
        |f: fn(&PageCounts) -> u64| pages.as_ref().map(|p| f(p).to_string()).unwrap_or_default();
    let of_sequence =
        |f: fn(&Sequence) -> Option<String>| sequence.as_ref().and_then(f).unwrap_or_default();
    [
        suite.clone(),
        engine.clone(),
        store.clone(),
        journal_mode.clone(),
        cache.to_string(),
        warm_ups.clone(),
        position.clone(),
        operation.clone(),
        batch.to_string(),
        rows_before.to_string(),
        method.clone(),
        args.clone(),
        status.to_string(),
        reason.to_string(),
        instructions.to_string(),
        // `{}` on f64 is the shortest text that parses back to the same value.
        instructions_per_row.to_string(),
        store_instructions.to_string(),
        store_instructions_per_row.to_string(),
        cycles.to_string(),
        usd.to_string(),
        heap_pages_delta.to_string(),
        stable_pages_delta.to_string(),
        heap_dirty_pages.to_string(),
        stable_dirty_pages.to_string(),
        page(|p| p.heap_wasm_pages_accessed),
        page(|p| p.heap_wasm_pages_written),
        page(|p| p.stable_wasm_pages_accessed),
        page(|p| p.stable_wasm_pages_written),
        page(|p| p.page_charge_instructions),
        bytes.to_string(),
        ingress_cycles.to_string(),
        of_sequence(|s| Some(s.messages.to_string())),
        of_sequence(|s| Some(s.charged_mean.to_string())),
        of_sequence(|s| Some(s.charged_median.to_string())),
        of_sequence(|s| Some(s.charged_p99.to_string())),
        of_sequence(|s| Some(s.charged_max.to_string())),
        of_sequence(|s| s.pages_mean.map(|p| p.to_string())),
        of_sequence(|s| s.pages_max.map(|p| p.to_string())),
        of_sequence(|s| s.collector_instructions.map(|c| c.to_string())),
        of_sequence(|s| s.allocated_bytes.map(|b| b.to_string())),
        profile.clone(),
    ]
}

fn line(fields: impl IntoIterator<Item = String>) -> String {
    let quoted: Vec<String> = fields.into_iter().map(|f| quote(&f)).collect();
    quoted.join(",") + "\r\n"
}

/// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{report, result};
    use super::*;

    #[test]
    fn header_matches_the_json_field_names() {
        let mut r = result("btree", "", "middle", "insert", 1, 1);
        r.status = Status::Refused("x".into());
        r.cache = crate::report::CacheState::Warm;
        r.warm_ups = "10".into();
        r.sequence = Some(Sequence {
            pages_mean: Some(1.5),
            pages_max: Some(2),
            collector_instructions: Some(3),
            allocated_bytes: Some(4),
            ..Sequence::default()
        });
        let value = serde_json::to_value(&r).unwrap();
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut header = HEADER.to_vec();
        keys.sort();
        header.sort();
        assert_eq!(keys, header);
    }

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn the_cache_column_comes_with_the_first_warm_record() {
        let cold = result("sqlite", "OFF", "middle", "insert", 1, 1);
        let text = csv(&report(vec![cold.clone()]));
        assert!(text.starts_with("suite,engine,store,journal_mode,position,"));
        assert!(!text.contains("cold"), "{text}");
        let mut warm = cold.clone();
        warm.cache = crate::report::CacheState::Warm;
        let text = csv(&report(vec![cold, warm]));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("suite,engine,store,journal_mode,cache,position,"));
        assert!(lines[1].starts_with("unit,embedded,sqlite,OFF,cold,middle,insert,1,"));
        assert!(lines[2].starts_with("unit,embedded,sqlite,OFF,warm,middle,insert,1,"));
        // A cold row is the row a report without warm records writes, with `cold` added.
        let alone = csv(&report(vec![result(
            "sqlite", "OFF", "middle", "insert", 1, 1,
        )]));
        let row = alone.lines().nth(1).unwrap();
        assert_eq!(lines[1].replacen(",cold,", ",", 1), row);
    }

    #[test]
    fn the_warm_ups_column_comes_with_the_first_record_of_a_sweep() {
        let cold = result("sqlite", "OFF", "middle", "insert", 1, 1);
        let mut warm = cold.clone();
        warm.cache = crate::report::CacheState::Warm;
        let mut swept = warm.clone();
        swept.warm_ups = "full+1".into();
        let text = csv(&report(vec![cold.clone(), warm]));
        assert!(!text.contains(WARM_UPS), "{text}");
        let text = csv(&report(vec![cold, swept]));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("suite,engine,store,journal_mode,cache,warm_ups,position,"));
        assert!(lines[1].starts_with("unit,embedded,sqlite,OFF,cold,,middle,insert,1,"));
        assert!(lines[2].starts_with("unit,embedded,sqlite,OFF,warm,full+1,middle,insert,1,"));
    }

    #[test]
    fn the_sequence_columns_come_with_the_first_sustained_record() {
        let alone = result("mo_map", "", "middle", "insert", 1, 1);
        let text = csv(&report(vec![alone.clone()]));
        assert!(!text.contains("charged_p99"), "{text}");
        let mut sustained = alone.clone();
        sustained.sequence = Some(Sequence::of(&[5, 1, 3, 2, 4], Some(&[2, 2, 2, 2, 7])));
        let text = csv(&report(vec![alone, sustained]));
        let lines: Vec<&str> = text.lines().collect();
        let tail = |line: &str| {
            let fields: Vec<&str> = line.split(',').collect();
            fields[fields.len() - 11..].join(",")
        };
        assert_eq!(
            tail(lines[0]),
            "ingress_cycles,messages,charged_mean,charged_median,charged_p99,charged_max,pages_mean,pages_max,collector_instructions,allocated_bytes,profile"
        );
        assert_eq!(tail(lines[1]), "1280000,,,,,,,,,,");
        assert_eq!(tail(lines[2]), "1280000,5,3,3,5,5,3,7,,,");
    }

    #[test]
    fn one_line_per_result() {
        let text = csv(&report(vec![result("btree", "", "middle", "insert", 1, 1)]));
        assert_eq!(text.lines().count(), 2);
        assert!(text.lines().nth(1).unwrap().starts_with(
            "unit,embedded,btree,,middle,insert,1,1000,add_users_btree,\"(500, 1, 1)\",ok,,"
        ));
    }
}
