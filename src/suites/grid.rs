//! The tables and plots of the suites that measure the users stores by position (seed003,
//! lookups): per position, rows = operation and batch, columns = stores.
//!
//! Results are grouped by the strings they carry (store, journal mode, position, operation)
//! rather than by parsed enums, so unknown values still render: they sort after the known ones.

use std::collections::HashMap;
use std::str::FromStr;

use crate::report::format::{compact, per_row, signed_thousands, thousands, usd};
use crate::report::table::{cell_text, Align, Table};
use crate::report::{
    message_cells_legend, Block, CacheState, Document, DotPlot, DotPoint, Footnotes, LinePlot,
    Plot, PlotKind, Report, ScenarioResult, Series, Status,
};
use crate::stores::{self, Store};
use crate::suites::scenario::Position;

/// Positions present, middle / end / random first (seed 003's case leads), unknown ones after.
/// A table from its columns, each header beside its alignment.
pub(crate) fn table_of(columns: &[(&str, Align)]) -> Table {
    let (headers, aligns) = columns.iter().map(|&(h, a)| (h.to_string(), a)).unzip();
    Table::with_aligns(headers, aligns)
}

/// The reasons of the tables' refused / failed cells, under them in report.md and on the
/// terminal alike (none: nothing).
pub(crate) fn push_footnotes(doc: &mut Document, footnotes: &Footnotes) {
    if let Some(text) = footnotes.text() {
        doc.markdown.push(Block::Text(text.clone()));
        doc.terminal.push(Block::Text(text));
    }
}

/// A table with these headers, every column aligned left.
pub(crate) fn table_headed(headers: &[&str]) -> Table {
    Table::new(headers.iter().map(|h| h.to_string()).collect())
}

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
        stores::parse(&self.store, &self.journal_mode)
    }

    /// In table order (the heap map, StableBTreeMap, then SQLite DELETE, TRUNCATE, PERSIST,
    /// MEMORY, WAL, OFF), then unknown.
    pub fn rank(&self) -> (usize, String, String) {
        let rank = self.parsed().map_or(usize::MAX, Store::rank);
        (rank, self.store.clone(), self.journal_mode.clone())
    }

    /// `StableBTreeMap`, `SQLite WAL`.
    pub fn label(&self) -> String {
        stores::label(&self.store, &self.journal_mode)
    }

    /// For narrow terminals: `Heap`, `BTreeMap`, `WAL` (the heading says the rest are
    /// SQLite).
    pub fn short_label(&self) -> String {
        match self.parsed() {
            Some(store) => store.short_label(),
            None => self.label(),
        }
    }

    /// The store's palette slot (`report::svg::SLOTS`), so it has one colour in every plot
    /// of every suite (the store table's); `None` for a store this version does not know.
    pub fn color_slot(&self) -> Option<usize> {
        stores::colour(&self.store, &self.journal_mode)
    }

    /// Labels of the suites whose SQLite columns are schemas (dbbench, keys).
    pub fn schema_label(&self) -> String {
        stores::schema_label(&self.store, &self.journal_mode)
    }
}

/// A result's marker in the dot plots of dbbench, keys and sysbench: on `row`, in its
/// store's series and colour, at its store instructions per row.
pub(crate) fn store_dot(r: &ScenarioResult, row: String) -> DotPoint {
    let column = StoreColumn::of(r);
    DotPoint {
        row,
        series: column.schema_label(),
        color: column.color_slot(),
        value: r.store_instructions_per_row,
    }
}

/// `plot-{suite}.svg`: `points`, store instructions per `per` (op, event) on a log axis,
/// under the title `{name}: store instructions per {per}`.
pub(crate) fn store_dot_plot(
    suite: &str,
    name: &str,
    per: &str,
    points: Vec<DotPoint>,
) -> Option<Plot> {
    let plot = DotPlot {
        title: format!("{name}: store instructions per {per}"),
        axis: format!("store instructions per {per} (log scale)"),
        unit: format!("instructions/{per}"),
        points,
    };
    dot_plot_file(suite, plot)
}

/// `plot` as `plot-{suite}.svg`; `None` when it has no positive value to draw.
pub(crate) fn dot_plot_file(suite: &str, plot: DotPlot) -> Option<Plot> {
    (!plot.svg().is_empty()).then(|| Plot {
        file: format!("plot-{suite}.svg"),
        kind: PlotKind::Dots(plot),
    })
}

/// The results of one position and a set of operations, laid out as rows (operation, batch)
/// by columns (stores), both in report order.
pub(crate) struct Grid<'a> {
    pub rows: Vec<(String, u64)>,
    pub columns: Vec<StoreColumn>,
    cells: HashMap<(String, u64, StoreColumn), &'a ScenarioResult>,
}

/// Whether a record's store has one state only: no page cache (the store table's), or, for
/// a store this version does not know, no warm record in the report.
pub(crate) fn one_state(report: &Report, r: &ScenarioResult) -> bool {
    match stores::parse(&r.store, &r.journal_mode) {
        Some(store) => !store.store_kind().def().page_cache,
        None => !report
            .results
            .iter()
            .any(|x| x.store == r.store && x.journal_mode == r.journal_mode && !x.cache.is_cold()),
    }
}

/// Whether `r` belongs to the view of the page cache in `state`: its own records, and in
/// the warm view the records of the stores that have one state.
pub(crate) fn in_view(report: &Report, r: &ScenarioResult, state: CacheState) -> bool {
    r.cache == state || (r.cache.is_cold() && one_state(report, r))
}

/// The views a report's tables show: warm first (a live canister's, what most messages
/// pay), then cold, when it has warm records; else cold alone, as before the cache's
/// state was measured.
pub(crate) fn views(report: &Report) -> Vec<CacheState> {
    if report.results.iter().any(|r| !r.cache.is_cold()) {
        vec![CacheState::Warm, CacheState::Cold]
    } else {
        vec![CacheState::Cold]
    }
}

/// What a view is called after a table's title (nothing in a report with one view).
fn view_title(views: &[CacheState], state: CacheState) -> &'static str {
    match (views.len(), state) {
        (1, _) => "",
        (_, CacheState::Warm) => ", warm",
        (_, CacheState::Cold) => ", cold",
    }
}

/// The legend of a report with both views (a blank line after it on the terminal).
fn views_legend(views: &[CacheState], terminal: bool) -> Option<Block> {
    (views.len() > 1).then(|| {
        Block::Text(format!(
            "Warm: SQLite's page cache in a live canister, the whole table cached, then one \
             message of the workload sent before the measured one; cold: a newly opened \
             connection, the first message after an upgrade or a reopen (docs/suites.md). The \
             stores without a page cache (all but SQLite's) have one state, in both \
             tables.\n{}",
            if terminal { "\n" } else { "" }
        ))
    })
}

impl<'a> Grid<'a> {
    /// The records of `position` and `operations` in the view of the page cache in `state`.
    pub fn new(
        report: &'a Report,
        position: &str,
        operations: &[&str],
        state: CacheState,
    ) -> Grid<'a> {
        let mut rows = Vec::new();
        let mut columns = Vec::new();
        let mut cells = HashMap::new();
        let selected = report.results.iter().filter(|r| {
            r.position == position
                && operations.contains(&r.operation.as_str())
                && in_view(report, r, state)
        });
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

/// Row label of a table row: the batch for inserts, the query shape for reads.
pub(crate) fn row_label(operation: &str, batch: u64) -> String {
    let n = thousands(batch);
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

/// One table of a group: a title and what a cell shows.
struct View {
    title: &'static str,
    cell: fn(&ScenarioResult) -> String,
    /// Shown only when some cell differs from zero (queries cost no cycles and grow no memory).
    only_if_nonzero: Option<fn(&ScenarioResult) -> bool>,
}

const STORE_WORK: View = View {
    title: "store work, instructions (performance_counter)",
    cell: |r| {
        format!(
            "{} ({}/row)",
            thousands(r.store_instructions),
            per_row(r.store_instructions_per_row)
        )
    },
    only_if_nonzero: None,
};

const CHARGED: View = View {
    title: "instructions charged per message",
    cell: |r| {
        format!(
            "{} ({}/row)",
            thousands(r.instructions),
            per_row(r.instructions_per_row)
        )
    },
    only_if_nonzero: None,
};

const CYCLES: View = View {
    title: "cycles (USD) per message, 13-node application subnet",
    cell: |r| format!("{} ({})", thousands(r.cycles), usd(r.usd)),
    only_if_nonzero: Some(|r| r.cycles != 0),
};

const MEMORY: View = View {
    title: "memory growth (64 KiB pages)",
    cell: |r| {
        format!(
            "heap {}, stable {}",
            signed_thousands(r.heap_pages_delta),
            signed_thousands(r.stable_pages_delta)
        )
    },
    only_if_nonzero: Some(|r| r.heap_pages_delta != 0 || r.stable_pages_delta != 0),
};

/// A set of operations shown together, with the heading of their first column.
struct Group {
    title: &'static str,
    operations: &'static [&'static str],
    row_heading: &'static str,
}

const GROUPS: [Group; 2] = [
    Group {
        title: "Insert",
        operations: &["insert"],
        row_heading: "New rows",
    },
    Group {
        title: "Reads (queries)",
        operations: &["point_lookup", "range_scan"],
        row_heading: "Query",
    },
];

/// The grid as a table; refused / failed cells get `marker` (with `{}` for the number).
fn grid_table(
    grid: &Grid,
    row_heading: &str,
    labels: Vec<String>,
    cell: fn(&ScenarioResult) -> String,
    notes: &mut Footnotes,
    marker: &str,
) -> Table {
    let mut headers = vec![row_heading.to_string()];
    headers.extend(labels);
    let mut table = Table::new(headers);
    for row in &grid.rows {
        let mut cells = vec![row_label(&row.0, row.1)];
        for column in &grid.columns {
            cells.push(match grid.cell(row, column) {
                None => "-".to_string(),
                Some(r) => match notes.mark(&r.status) {
                    None => cell_text(&cell(r)),
                    Some((word, n)) => format!("{word}{}", marker.replace("{}", &n.to_string())),
                },
            });
        }
        table.push(cells);
    }
    table
}

/// report.md, the terminal tables and the plots of a report measured by position.
pub(crate) fn document(report: &Report) -> Document {
    let plots: Vec<(String, Plot)> = positions(report)
        .into_iter()
        .filter_map(|p| plot(report, &p).map(|plot| (p, plot)))
        .collect();
    let mut blocks = vec![message_cells_legend(report)];
    blocks.extend(views_legend(&views(report), false));
    blocks.extend(markdown(report, &plots));
    Document {
        markdown: blocks,
        terminal: terminal(report),
        plots: plots.into_iter().map(|(_, plot)| plot).collect(),
    }
}

/// Per position its plot, then per group of operations the store work, charged, cycles and
/// memory tables; then the reasons of refused / failed cells.
fn markdown(report: &Report, plots: &[(String, Plot)]) -> Vec<Block> {
    let mut out = Vec::new();
    let mut notes = Footnotes::default();
    for position in positions(report) {
        out.push(Block::Heading {
            level: 2,
            text: format!("Position: {position}"),
        });
        if let Some((_, plot)) = plots.iter().find(|(p, _)| *p == position) {
            let alt = if Grid::new(report, &position, &["insert"], CacheState::Cold).is_empty() {
                "Point lookup cost per key"
            } else {
                "Insert cost per row"
            };
            let states = views(report);
            out.push(Block::Image {
                alt: format!("{alt}, {position}{}", view_title(&states, CacheState::Cold)),
                file: plot.file.clone(),
            });
        }
        let states = views(report);
        for group in &GROUPS {
            for &state in &states {
                let grid = Grid::new(report, &position, group.operations, state);
                if grid.is_empty() {
                    continue;
                }
                let mut views = vec![&STORE_WORK, &CHARGED];
                let applies = |v: &View| {
                    v.only_if_nonzero
                        .is_none_or(|f| group.title == "Insert" || grid.results().any(f))
                };
                views.extend([&CYCLES, &MEMORY].into_iter().filter(|v| applies(v)));
                for view in views {
                    out.push(Block::Heading {
                        level: 3,
                        text: format!(
                            "{}, {position}{}: {}",
                            group.title,
                            view_title(&states, state),
                            view.title
                        ),
                    });
                    let labels = grid.columns.iter().map(StoreColumn::label).collect();
                    out.push(Block::Table(grid_table(
                        &grid,
                        group.row_heading,
                        labels,
                        view.cell,
                        &mut notes,
                        "[^{}]",
                    )));
                }
            }
        }
    }
    // Reports may carry operations no group covers; list them rather than drop them.
    let known: Vec<&str> = GROUPS
        .iter()
        .flat_map(|g| g.operations.iter().copied())
        .collect();
    let unknown = report
        .results
        .iter()
        .filter(|r| !known.contains(&r.operation.as_str()))
        .count();
    if unknown > 0 {
        out.push(Block::Text(format!(
            "{unknown} result(s) of other operations are only in results.csv / results.json.\n"
        )));
    }
    if !notes.is_empty() {
        let lines: Vec<String> = notes
            .entries()
            .map(|(n, word, reason)| format!("[^{n}]: {word}: {reason}\n"))
            .collect();
        out.push(Block::Text(lines.concat()));
    }
    out
}

/// Terminal width the CLI tables aim to fit.
const TERMINAL_WIDTH: usize = 120;

/// What the CLI prints: per position the insert table (store instructions per message,
/// compact, as in seed 003) and the read table, then the reasons of refused / failed cells.
fn terminal(report: &Report) -> Vec<Block> {
    let mut out = Vec::new();
    let mut notes = Footnotes::default();
    // Totals only, like seed 003: with per-row figures seven stores would not fit the width.
    let compact_cell: fn(&ScenarioResult) -> String = |r| compact(r.store_instructions as f64);
    let states = views(report);
    out.extend(views_legend(&states, true));
    for position in positions(report) {
        for (group, &state) in GROUPS
            .iter()
            .flat_map(|g| states.iter().map(move |s| (g, s)))
        {
            let grid = Grid::new(report, &position, group.operations, state);
            if grid.is_empty() {
                continue;
            }
            let title = format!(
                "{position}: {}{}, store instructions per message",
                group.title.to_lowercase(),
                view_title(&states, state)
            );
            let full = grid.columns.iter().map(StoreColumn::label).collect();
            // Try full store names first; footnote numbers must not advance on a discarded try.
            let mut trial = notes.clone();
            let table = grid_table(
                &grid,
                group.row_heading,
                full,
                compact_cell,
                &mut trial,
                "[{}]",
            );
            let fits = table
                .render()
                .lines()
                .all(|l| l.chars().count() <= TERMINAL_WIDTH);
            let (table, title_note) = if fits {
                notes = trial;
                (table, "")
            } else {
                let short = grid.columns.iter().map(StoreColumn::short_label).collect();
                let table = grid_table(
                    &grid,
                    group.row_heading,
                    short,
                    compact_cell,
                    &mut notes,
                    "[{}]",
                );
                (table, " (SQLite columns by journal mode)")
            };
            out.push(Block::Heading {
                level: 2,
                text: format!("{title}{title_note}"),
            });
            out.push(Block::Table(table));
            // Batched lookups (seed 001) are about the cost per key: show it too.
            let lookup_sizes = grid.rows.iter().filter(|r| r.0 == "point_lookup").count();
            if lookup_sizes >= 3 {
                let per_key: fn(&ScenarioResult) -> String =
                    |r| compact(r.store_instructions_per_row);
                let short = grid.columns.iter().map(StoreColumn::short_label).collect();
                out.push(Block::Heading {
                    level: 2,
                    text: format!(
                        "{position}{}: store instructions per key (SQLite columns by journal mode)",
                        view_title(&states, state)
                    ),
                });
                out.push(Block::Table(grid_table(
                    &grid,
                    group.row_heading,
                    short,
                    per_key,
                    &mut notes,
                    "[{}]",
                )));
            }
        }
    }
    if let Some(text) = notes.text() {
        out.push(Block::Text(text));
    }
    out
}

/// plot-<position>.svg: insert cost per row against rows per message, log-log, one line per
/// store; for a position without inserts (the lookups suite), lookup cost per key against
/// keys per message. `None` when there is nothing to draw: no ok insert with a positive
/// cost, or a lookup-only position with fewer than two batch sizes (one size is a dot).
fn plot(report: &Report, position: &str) -> Option<Plot> {
    // The cold records: every batch (the largest are measured cold only).
    let mut grid = Grid::new(report, position, &["insert"], CacheState::Cold);
    let mut what = ("Insert cost per row", "row");
    if grid.is_empty() {
        grid = Grid::new(report, position, &["point_lookup"], CacheState::Cold);
        if grid.rows.len() < 2 {
            return None;
        }
        what = ("Point lookup cost per key", "key");
    }
    let (title_start, unit) = what;
    let series: Vec<Series> = grid
        .columns
        .iter()
        .map(|column| Series {
            label: column.label(),
            color: column.color_slot(),
            points: grid
                .rows
                .iter()
                .filter_map(|row| grid.cell(row, column))
                .filter(|r| r.status == Status::Ok)
                .map(|r| (r.batch as f64, r.store_instructions_per_row))
                .collect(),
        })
        .collect();
    let plot = LinePlot {
        title: format!(
            "{title_start}, {position}, {} rows",
            thousands(report.workload().rows_before)
        ),
        unit: unit.into(),
        series,
        axes: None,
    };
    // Nothing positive to draw gives no file (and no image link).
    (!plot.svg().is_empty()).then(|| Plot {
        file: format!("plot-{position}.svg"),
        kind: PlotKind::Lines(plot),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::{report, result};

    #[test]
    fn seven_stores_fit_the_terminal() {
        let mut results = Vec::new();
        for (store, mode) in [
            ("btree", ""),
            ("sqlite", "DELETE"),
            ("sqlite", "TRUNCATE"),
            ("sqlite", "PERSIST"),
            ("sqlite", "MEMORY"),
            ("sqlite", "WAL"),
            ("sqlite", "OFF"),
        ] {
            for batch in [1, 10, 100, 1_000, 10_000] {
                results.push(result(store, mode, "middle", "insert", batch, 57_301_658));
            }
        }
        results[5].status = Status::Refused("WAL needs shared memory".into());
        let text = crate::report::terminal(&document(&report(results)));
        assert!(
            text.lines().all(|l| l.chars().count() <= TERMINAL_WIDTH),
            "{text}"
        );
        assert!(text.contains("| 57.3M |"), "{text}");
        assert!(text.contains("refused[1]"), "{text}");
        assert!(
            text.ends_with("[1] refused: WAL needs shared memory\n"),
            "{text}"
        );
    }
}
