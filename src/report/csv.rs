//! results.csv: one row per scenario, columns named like the `ScenarioResult` fields so
//! the CSV and results.json read the same.

use super::Report;
use super::{ScenarioResult, Status};
use crate::engine::PageCounts;

/// `ScenarioResult`'s fields in declaration order; the flattened status is two columns.
/// `cache` is written only by a report that has a warm record, so the files of cold runs
/// stay as they were before the column; `warm_ups` only by one with a record of the cache
/// suite's sweep.
pub(crate) const HEADER: [&str; 32] = [
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
    "profile",
];

/// The column of the page cache's state, and where it goes.
const CACHE: &str = "cache";
const CACHE_COLUMN: usize = 4;
/// The column of W, the warm-up messages before the measured one, and where it goes.
const WARM_UPS: &str = "warm_ups";
const WARM_UPS_COLUMN: usize = 5;

/// results.csv with RFC 4180 quoting and CRLF line ends.
pub fn csv(report: &Report) -> String {
    let with_cache = report.results.iter().any(|r| !r.cache.is_cold());
    let with_warm_ups = report.results.iter().any(|r| !r.warm_ups.is_empty());
    let columns = |row: [String; 32]| {
        row.into_iter()
            .enumerate()
            .filter(move |&(i, _)| with_cache || i != CACHE_COLUMN)
            .filter(move |&(i, _)| with_warm_ups || i != WARM_UPS_COLUMN)
            .map(|(_, f)| f)
    };
    let mut out = line(columns(HEADER.map(String::from)));
    for r in &report.results {
        out.push_str(&line(columns(fields(r))));
    }
    out
}

fn fields(r: &ScenarioResult) -> [String; 32] {
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
        profile,
        profile_data: _,
        page_map_data: _,
    } = r;
    // Pages the engine could not see are empty cells, not zeros.
    let page =
        |f: fn(&PageCounts) -> u64| pages.as_ref().map(|p| f(p).to_string()).unwrap_or_default();
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
    fn one_line_per_result() {
        let text = csv(&report(vec![result("btree", "", "middle", "insert", 1, 1)]));
        assert_eq!(text.lines().count(), 2);
        assert!(text.lines().nth(1).unwrap().starts_with(
            "unit,embedded,btree,,middle,insert,1,1000,add_users_btree,\"(500, 1, 1)\",ok,,"
        ));
    }
}
