//! The reporting layer: one [`Report`] (a run's settings plus its [`ScenarioResult`]s)
//! rendered as report.md, results.csv, results.json, SVG plots, terminal tables, and
//! compared against an earlier run.
//!
//! Results are grouped by the strings they carry (store, journal mode, position, operation)
//! rather than by parsed enums, so a results.json from an older or newer icbench still
//! renders: unknown values sort after the known ones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::scenario::{JournalMode, Position, ScenarioResult, Status, Store};

pub mod compare;
mod csv;
pub mod format;
mod json;
mod markdown;
mod svg;
mod table;

pub use compare::{compare, Change, Comparison, ComparisonEntry};
pub use csv::csv;
pub use json::{from_json, json};
pub use markdown::{markdown, terminal_tables};
pub use svg::{dbbench_plot, keys_plot, svg_plot, sysbench_plot};

/// Everything one run produced: the settings it ran with and one result per scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub suite: String,
    /// `embedded` or `pocket-ic`.
    pub engine: String,
    /// Rows in each store before every measured message.
    pub rows_before: u64,
    /// Seed of the random positions.
    pub seed: u64,
    /// Bytes of the username payload per row.
    pub payload_size: u64,
    pub wall_seconds: f64,
    /// Instructions the engine executed for the whole run, prefill included.
    #[serde(default)]
    pub executed_instructions: u64,
    pub results: Vec<ScenarioResult>,
    pub notes: Vec<String>,
    /// The keys suite's SQLite pages per B-tree (empty for the other suites).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub page_stats: Vec<crate::keys::PageStats>,
    /// The sysbench suite's ceilings (None for the other suites).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceilings: Option<crate::sysbench::Ceilings>,
}

/// Writes report.md, results.csv, results.json and plot-<position>.svg (for each position
/// with plottable inserts) into `dir`, creating it; returns the paths written.
pub fn write_all(report: &Report, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = vec![
        ("report.md".to_string(), markdown(report)),
        ("results.csv".to_string(), csv(report)),
        ("results.json".to_string(), json(report)),
    ];
    // The keys suite's "positions" are key types with one fill each: its own plot instead.
    let curves = report.suite != "keys" && report.suite != "sysbench";
    for position in positions(report).into_iter().filter(|_| curves) {
        if let Some(svg) = svg_plot(report, &position) {
            files.push((plot_file_name(&position), svg));
        }
    }
    if let Some(svg) = keys_plot(report) {
        files.push(("plot-keys.svg".to_string(), svg));
    }
    if let Some(svg) = sysbench_plot(report) {
        files.push(("plot-sysbench.svg".to_string(), svg));
    }
    if let Some(svg) = dbbench_plot(report) {
        files.push(("plot-dbbench.svg".to_string(), svg));
    }
    let mut written = Vec::with_capacity(files.len());
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        written.push(path);
    }
    Ok(written)
}

/// `plot-middle.svg`: the name report.md links to.
pub(crate) fn plot_file_name(position: &str) -> String {
    format!("plot-{position}.svg")
}

/// Positions present, middle / end / random first (seed 003's case leads), unknown ones after.
pub(crate) fn positions(report: &Report) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for r in &report.results {
        if !found.contains(&r.position) {
            found.push(r.position.clone());
        }
    }
    found.sort_by_key(|p| position_rank(p));
    found
}

fn position_rank(position: &str) -> (usize, String) {
    let known = Position::from_str(position)
        .ok()
        .and_then(|p| Position::ALL.iter().position(|&q| q == p));
    (known.unwrap_or(Position::ALL.len()), position.to_string())
}

/// Inserts first, then point lookups and range scans, unknown operations after.
pub(crate) fn operation_rank(operation: &str) -> (usize, String) {
    let rank = ["insert", "point_lookup", "range_scan"]
        .iter()
        .position(|&o| o == operation);
    (rank.unwrap_or(3), operation.to_string())
}

/// A table column: one store (the B-tree map, or SQLite in one journal mode).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct StoreColumn {
    pub store: String,
    pub journal_mode: String,
}

impl StoreColumn {
    pub fn of(r: &ScenarioResult) -> StoreColumn {
        StoreColumn {
            store: r.store.clone(),
            journal_mode: r.journal_mode.clone(),
        }
    }

    fn parsed(&self) -> Option<Store> {
        match self.store.as_str() {
            "btree" => Some(Store::BTree),
            "sqlite" => JournalMode::from_str(&self.journal_mode)
                .ok()
                .map(Store::Sqlite),
            _ => None,
        }
    }

    /// StableBTreeMap, then SQLite DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF, then unknown.
    pub fn rank(&self) -> (usize, String, String) {
        let rank = match self.parsed() {
            Some(Store::BTree) => 0,
            Some(Store::Sqlite(m)) => {
                1 + JournalMode::ALL.iter().position(|&j| j == m).unwrap_or(0)
            }
            None => 1 + JournalMode::ALL.len(),
        };
        (rank, self.store.clone(), self.journal_mode.clone())
    }

    /// `StableBTreeMap`, `SQLite WAL`.
    pub fn label(&self) -> String {
        match self.parsed() {
            Some(store) => store.label(),
            None => format!("{} {}", self.store, self.journal_mode)
                .trim()
                .to_string(),
        }
    }

    /// For narrow terminals: `BTreeMap`, `WAL` (the heading says the rest are SQLite).
    pub fn short_label(&self) -> String {
        match self.parsed() {
            Some(Store::BTree) => "BTreeMap".to_string(),
            Some(Store::Sqlite(m)) => m.as_str().to_string(),
            None => self.label(),
        }
    }

    /// Index into a fixed palette, so a store keeps its color across plots.
    pub fn color_index(&self) -> usize {
        self.rank().0
    }
}

/// The results of one position and a set of operations, laid out as rows (operation, batch)
/// by columns (stores), both in report order.
pub(crate) struct Grid<'a> {
    pub rows: Vec<(String, u64)>,
    pub columns: Vec<StoreColumn>,
    cells: HashMap<(String, u64, StoreColumn), &'a ScenarioResult>,
}

impl<'a> Grid<'a> {
    pub fn new(report: &'a Report, position: &str, operations: &[&str]) -> Grid<'a> {
        let mut rows = Vec::new();
        let mut columns = Vec::new();
        let mut cells = HashMap::new();
        let selected = report
            .results
            .iter()
            .filter(|r| r.position == position && operations.contains(&r.operation.as_str()));
        for r in selected {
            let row = (r.operation.clone(), r.batch);
            let column = StoreColumn::of(r);
            if !rows.contains(&row) {
                rows.push(row.clone());
            }
            if !columns.contains(&column) {
                columns.push(column.clone());
            }
            // A repeated scenario keeps its first result.
            cells.entry((row.0, row.1, column)).or_insert(r);
        }
        rows.sort_by_key(|(op, batch)| (operation_rank(op), *batch));
        columns.sort_by_key(StoreColumn::rank);
        Grid {
            rows,
            columns,
            cells,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn cell(&self, row: &(String, u64), column: &StoreColumn) -> Option<&'a ScenarioResult> {
        self.cells
            .get(&(row.0.clone(), row.1, column.clone()))
            .copied()
    }

    pub fn results(&self) -> impl Iterator<Item = &'a ScenarioResult> + '_ {
        self.cells.values().copied()
    }
}

/// Numbers the distinct reasons of refused / failed cells in order of first appearance, so
/// each reason is printed once however many cells share it.
#[derive(Clone, Default)]
pub(crate) struct Footnotes {
    reasons: Vec<(&'static str, String)>,
}

impl Footnotes {
    /// `None` for an ok result; otherwise the cell's word and its footnote number.
    pub fn mark(&mut self, status: &Status) -> Option<(&'static str, usize)> {
        let (word, reason) = match status {
            Status::Ok => return None,
            Status::Refused(reason) => ("refused", reason),
            Status::Failed(reason) => ("failed", reason),
        };
        let key = (word, table::cell_text(reason));
        let index = match self.reasons.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                self.reasons.push(key);
                self.reasons.len() - 1
            }
        };
        Some((word, index + 1))
    }

    /// `(number, word, reason)` in numbering order.
    pub fn entries(&self) -> impl Iterator<Item = (usize, &'static str, &str)> {
        self.reasons
            .iter()
            .enumerate()
            .map(|(i, (word, reason))| (i + 1, *word, reason.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// Row label of a table row: the batch for inserts, the query shape for reads.
pub(crate) fn row_label(operation: &str, batch: u64) -> String {
    let n = format::thousands(batch);
    let plural = |one: &str, many: &str| {
        if batch == 1 {
            one.to_string()
        } else {
            many.to_string()
        }
    };
    match operation {
        "insert" => n,
        "point_lookup" => format!("point lookup, {n} {}", plural("key", "keys")),
        "range_scan" => format!("range scan, {n} {}", plural("row", "rows")),
        other => format!("{other}, {n}"),
    }
}

/// Test fixtures shared by the unit tests of the submodules.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    pub fn result(
        store: &str,
        journal_mode: &str,
        position: &str,
        operation: &str,
        batch: u64,
        store_instructions: u64,
    ) -> ScenarioResult {
        let instructions = store_instructions + 10_000;
        ScenarioResult {
            suite: "unit".into(),
            engine: "embedded".into(),
            store: store.into(),
            journal_mode: journal_mode.into(),
            position: position.into(),
            operation: operation.into(),
            batch,
            rows_before: 1_000,
            method: format!("add_users_{store}"),
            args: format!("(500, 1, {batch})"),
            status: Status::Ok,
            instructions,
            instructions_per_row: instructions as f64 / batch as f64,
            store_instructions,
            store_instructions_per_row: store_instructions as f64 / batch as f64,
            cycles: 5_000_000 + instructions * 4 / 10,
            usd: 0.0000054,
            heap_pages_delta: 0,
            stable_pages_delta: 1,
            heap_dirty_pages: 3,
            stable_dirty_pages: 4,
            bytes: 0,
        }
    }

    pub fn report(results: Vec<ScenarioResult>) -> Report {
        Report {
            suite: "unit".into(),
            engine: "embedded".into(),
            rows_before: 1_000,
            seed: 7,
            payload_size: 100,
            wall_seconds: 1.5,
            executed_instructions: 0,
            results,
            notes: vec![],
            page_stats: vec![],
            ceilings: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::*;
    use super::*;

    #[test]
    fn positions_and_columns_follow_report_order() {
        let report = report(vec![
            result("sqlite", "WAL", "random", "insert", 1, 1),
            result("sqlite", "DELETE", "end", "insert", 1, 1),
            result("btree", "", "middle", "insert", 10, 1),
            result("btree", "", "middle", "insert", 1, 1),
            result("sqlite", "OFF", "middle", "insert", 1, 1),
            result("sqlite", "DELETE", "middle", "insert", 1, 1),
        ]);
        assert_eq!(positions(&report), ["middle", "end", "random"]);
        let grid = Grid::new(&report, "middle", &["insert"]);
        let labels: Vec<String> = grid.columns.iter().map(StoreColumn::label).collect();
        assert_eq!(labels, ["StableBTreeMap", "SQLite DELETE", "SQLite OFF"]);
        assert_eq!(
            grid.rows,
            [("insert".to_string(), 1), ("insert".to_string(), 10)]
        );
    }

    #[test]
    fn footnotes_number_each_reason_once() {
        let mut notes = Footnotes::default();
        assert_eq!(notes.mark(&Status::Ok), None);
        assert_eq!(
            notes.mark(&Status::Refused("no WAL".into())),
            Some(("refused", 1))
        );
        assert_eq!(
            notes.mark(&Status::Failed("trap".into())),
            Some(("failed", 2))
        );
        assert_eq!(
            notes.mark(&Status::Refused("no WAL".into())),
            Some(("refused", 1))
        );
        assert_eq!(notes.entries().count(), 2);
    }
}
