//! report.md and the tables the CLI prints, both in seed 003's shape: rows = rows per
//! message, columns = stores.

use super::format::{compact, duration, per_row, signed_thousands, thousands, usd};
use super::table::{cell_text, Table};
use super::{plot_file_name, positions, row_label, svg_plot, Footnotes, Grid, Report, StoreColumn};
use crate::scenario::ScenarioResult;

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

/// The dbbench suite's table: benchmarks by stores, store instructions per op (and the
/// key + value bytes per op), plus the charged instructions per op.
fn dbbench_table(report: &Report, charged: bool) -> String {
    let mut rows: Vec<String> = Vec::new();
    let mut columns: Vec<StoreColumn> = Vec::new();
    let selected: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| r.position == "db_bench")
        .collect();
    for r in &selected {
        if !rows.contains(&r.operation) {
            rows.push(r.operation.clone());
        }
        let c = StoreColumn::of(r);
        if !columns.contains(&c) {
            columns.push(c);
        }
    }
    let label = |c: &StoreColumn| match c.store.as_str() {
        "btree" => "BTreeMap".to_string(),
        "sqlite" => format!("SQLite {} rowid", c.journal_mode),
        "sqlite_without_rowid" => format!("SQLite {} WITHOUT ROWID", c.journal_mode),
        _ => c.label(),
    };
    let mut headers = vec!["Benchmark".to_string()];
    headers.extend(columns.iter().map(label));
    let mut table = Table::new(headers);
    for op in &rows {
        let mut cells = vec![op.clone()];
        for c in &columns {
            let r = selected
                .iter()
                .find(|r| &r.operation == op && StoreColumn::of(r) == *c);
            cells.push(match r {
                None => "-".into(),
                Some(r) if r.status != crate::scenario::Status::Ok => "failed".into(),
                Some(r) if charged => per_row(r.instructions_per_row),
                Some(r) => format!(
                    "{} ({} B)",
                    per_row(r.store_instructions_per_row),
                    thousands(r.bytes / r.batch.max(1))
                ),
            });
        }
        table.push(cells);
    }
    table.render()
}

/// The keys suite's table for one operation: key types by stores.
fn keys_table(report: &Report, operation: &str, cell: fn(&ScenarioResult) -> String) -> String {
    let selected: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| r.operation == operation)
        .collect();
    let mut rows: Vec<&str> = Vec::new();
    let mut columns: Vec<StoreColumn> = Vec::new();
    for r in &selected {
        if !rows.contains(&r.position.as_str()) {
            rows.push(&r.position);
        }
        let c = StoreColumn::of(r);
        if !columns.contains(&c) {
            columns.push(c);
        }
    }
    let mut headers = vec!["Key".to_string()];
    headers.extend(columns.iter().map(super::svg::dbbench_label));
    let mut table = Table::new(headers);
    for row in rows {
        let mut cells = vec![row.to_string()];
        for c in &columns {
            let r = selected
                .iter()
                .find(|r| r.position == row && StoreColumn::of(r) == *c);
            cells.push(match r {
                None => "-".into(),
                Some(r) if r.status != crate::scenario::Status::Ok => "failed".into(),
                Some(r) => cell(r),
            });
        }
        table.push(cells);
    }
    table.render()
}

fn keys_pages_table(report: &Report) -> String {
    use super::table::Align::{Left, Right};
    let mut table = Table::with_aligns(
        [
            "Store", "Key", "B-tree", "Interior", "Leaf", "Overflow", "Fanout", "Bytes",
        ]
        .map(String::from)
        .to_vec(),
        vec![Left, Left, Left, Right, Right, Right, Right, Right],
    );
    for p in &report.page_stats {
        table.push(vec![
            p.store.clone(),
            p.key_type.clone(),
            p.btree.clone(),
            thousands(p.interior_pages),
            thousands(p.leaf_pages),
            thousands(p.overflow_pages),
            p.fanout()
                .map(|f| format!("{f}.00"))
                .unwrap_or_else(|| "-".into()),
            thousands(p.bytes),
        ]);
    }
    table.render()
}

/// The keys suite: per insert, per lookup, stable bytes per row, and SQLite's B-trees.
fn keys_section(report: &Report, heading: &str) -> String {
    if report.suite != "keys" {
        return String::new();
    }
    let plot = if super::keys_plot(report).is_some() {
        "![Key types: instructions per row](plot-keys.svg)\n\n"
    } else {
        ""
    };
    format!(
        "{heading}store instructions per insert\n\n{plot}{}\n{heading}store instructions per lookup\n\n{}\n{heading}stable bytes per row\n\n{}\n{heading}SQLite pages per B-tree (dbstat; fanout as sqlite3_analyzer)\n\n{}",
        keys_table(report, "insert", |r| per_row(r.store_instructions_per_row)),
        keys_table(report, "point_lookup", |r| per_row(r.store_instructions_per_row)),
        keys_table(report, "storage", |r| per_row(r.bytes as f64 / r.batch.max(1) as f64)),
        keys_pages_table(report)
    )
}

fn dbbench_section(report: &Report, heading: &str) -> String {
    if !report.results.iter().any(|r| r.position == "db_bench") {
        return String::new();
    }
    let plot = if super::dbbench_plot(report).is_some() {
        "![db_bench: store instructions per op](plot-dbbench.svg)\n\n"
    } else {
        ""
    };
    format!(
        "{heading}db_bench lines (instructions/op in place of micros/op: store work, ic0.performance_counter)\n\n{plot}```\n{}```\n\n{heading}store instructions per op (key + value bytes per op)\n\n{}\n{heading}instructions charged per op (whole messages)\n\n{}",
        crate::dbbench::lines(report),
        dbbench_table(report, false),
        dbbench_table(report, true)
    )
}

/// The sysbench suite in seed 004's shape: per journal mode, a Reads and a Writes table
/// (map and SQLite instructions per event, multiplier, average), then the ceiling check.
pub(crate) fn sysbench_section(report: &Report, heading: &str) -> String {
    if report.suite != "sysbench" {
        return String::new();
    }
    // report.md nests the section tables; the terminal just starts a new paragraph.
    let sub = if heading.contains('#') {
        format!("{}# ", heading.trim_end())
    } else {
        heading.to_string()
    };
    let mut out = String::new();
    if heading.contains('#') && super::sysbench_plot(report).is_some() {
        out.push_str(&format!(
            "{heading}sysbench\n\n![sysbench: store instructions per event](plot-sysbench.svg)\n"
        ));
    }
    let opt = |x: Option<f64>| x.map_or("--".to_string(), |v| thousands(v.round() as u64));
    let mul = |x: Option<f64>| x.map_or("--".to_string(), |v| format!("{v:.2}"));
    let mut mode = String::new();
    for s in crate::sysbench::sections(report) {
        if s.journal_mode != mode {
            mode = s.journal_mode.clone();
            out.push_str(&format!(
                "{heading}SQLite {mode} vs StableBTreeMap (store instructions per event)\n"
            ));
        }
        let title = if s.section == "reads" {
            "Reads"
        } else {
            "Writes"
        };
        out.push_str(&format!("{sub}{title}\n\n"));
        out.push_str(&format!(
            "| Test | StableBTreeMap | SQLite {mode} | Multiplier |\n|---|---:|---:|---:|\n"
        ));
        for r in &s.rows {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                r.workload,
                opt(r.btree),
                opt(r.sqlite),
                mul(r.ratio)
            ));
        }
        out.push_str(&format!("| Average | | | {} |\n", mul(s.average)));
    }
    if let Some(c) = report.ceilings {
        out.push_str(&format!(
            "{heading}Performance Ceiling Check ({}x individual, {}x average)\n\n",
            c.max, c.max_section
        ));
        let failures = crate::sysbench::report_gate(report);
        if failures.is_empty() {
            out.push_str("All tests within ceilings.\n");
        } else {
            for f in failures {
                out.push_str(&format!("- FAIL {f}\n"));
            }
        }
    }
    out
}

/// report.md: run settings, notes, then per position the insert tables and the read tables.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(&format!("# icbench report: {}\n\n", report.suite));
    out.push_str(&format!("- Suite: `{}`\n", report.suite));
    out.push_str(&format!("- Engine: `{}`\n", report.engine));
    out.push_str(&format!(
        "- Rows before each message: {}\n",
        thousands(report.rows_before)
    ));
    out.push_str(&format!("- Seed: {}\n", report.seed));
    out.push_str(&format!(
        "- Payload size: {} bytes\n",
        thousands(report.payload_size)
    ));
    out.push_str(&format!("- Wall time: {}\n", duration(report.wall_seconds)));
    if !report.notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for note in &report.notes {
            out.push_str(&format!("- {}\n", note.trim()));
        }
    }
    out.push_str(
        "\nCells show the total for one message and, in parentheses, per row. \"Store work\" is \
         `ic0.performance_counter(0)` around the store calls only (what seed 003 reports); \
         \"charged\" is what the message is billed: its whole execution plus the heap dirty-page \
         charge, and what cycles are computed from. Cycles and USD are for a 13-node application \
         subnet; queries are free when not replicated.\n",
    );

    let mut notes = Footnotes::default();
    out.push_str(&dbbench_section(report, "\n## "));
    out.push_str(&keys_section(report, "\n## "));
    out.push_str(&sysbench_section(report, "\n## "));
    let generic = report.suite != "keys" && report.suite != "sysbench";
    for position in positions(report)
        .into_iter()
        .filter(|p| generic && p != "db_bench")
    {
        out.push_str(&format!("\n## Position: {position}\n"));
        if svg_plot(report, &position).is_some() {
            let file = plot_file_name(&position);
            let alt = if Grid::new(report, &position, &["insert"]).is_empty() {
                "Point lookup cost per key"
            } else {
                "Insert cost per row"
            };
            out.push_str(&format!("\n![{alt}, {position}]({file})\n"));
        }
        for group in &GROUPS {
            let grid = Grid::new(report, &position, group.operations);
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
                out.push_str(&format!(
                    "\n### {}, {position}: {}\n\n",
                    group.title, view.title
                ));
                let labels = grid.columns.iter().map(StoreColumn::label).collect();
                out.push_str(&render_grid(
                    &grid,
                    group.row_heading,
                    labels,
                    view.cell,
                    &mut notes,
                    "[^{}]",
                ));
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
        .filter(|r| generic && r.position != "db_bench" && !known.contains(&r.operation.as_str()))
        .count();
    if unknown > 0 {
        out.push_str(&format!(
            "\n{unknown} result(s) of other operations are only in results.csv / results.json.\n"
        ));
    }
    if !notes.is_empty() {
        out.push('\n');
        for (n, word, reason) in notes.entries() {
            out.push_str(&format!("[^{n}]: {word}: {reason}\n"));
        }
    }
    out
}

/// The grid as a table; refused / failed cells get `marker` (with `{}` for the number).
fn render_grid(
    grid: &Grid,
    row_heading: &str,
    labels: Vec<String>,
    cell: fn(&ScenarioResult) -> String,
    notes: &mut Footnotes,
    marker: &str,
) -> String {
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
    table.render()
}

/// Terminal width the CLI tables aim to fit.
const TERMINAL_WIDTH: usize = 120;

/// What the CLI prints: per position the insert table (store instructions per message,
/// compact, as in seed 003) and the read table, then the reasons of refused / failed cells.
pub fn terminal_tables(report: &Report) -> String {
    let mut out = String::new();
    let mut notes = Footnotes::default();
    // Totals only, like seed 003: with per-row figures seven stores would not fit the width.
    let compact_cell: fn(&ScenarioResult) -> String = |r| compact(r.store_instructions as f64);
    if report.results.iter().any(|r| r.position == "db_bench") {
        out.push_str(&crate::dbbench::lines(report));
        out.push_str(&format!(
            "\nstore instructions per op (key + value bytes per op)\n{}",
            dbbench_table(report, false)
        ));
    }
    if report.suite == "keys" {
        out.push_str(&keys_section(report, "\n"));
        return out;
    }
    if report.suite == "sysbench" {
        out.push_str(&sysbench_section(report, "\n"));
        return out;
    }
    for position in positions(report) {
        for group in &GROUPS {
            let grid = Grid::new(report, &position, group.operations);
            if grid.is_empty() {
                continue;
            }
            let title = format!(
                "{position}: {}, store instructions per message",
                group.title.to_lowercase()
            );
            let full = grid.columns.iter().map(StoreColumn::label).collect();
            // Try full store names first; footnote numbers must not advance on a discarded try.
            let mut trial = notes.clone();
            let table = render_grid(
                &grid,
                group.row_heading,
                full,
                compact_cell,
                &mut trial,
                "[{}]",
            );
            let (table, title_note) = if table.lines().all(|l| l.chars().count() <= TERMINAL_WIDTH)
            {
                notes = trial;
                (table, "")
            } else {
                let short = grid.columns.iter().map(StoreColumn::short_label).collect();
                let table = render_grid(
                    &grid,
                    group.row_heading,
                    short,
                    compact_cell,
                    &mut notes,
                    "[{}]",
                );
                (table, " (SQLite columns by journal mode)")
            };
            out.push_str(&format!("{title}{title_note}\n{table}\n"));
            // Batched lookups (seed 001) are about the cost per key: show it too.
            let lookup_sizes = grid.rows.iter().filter(|r| r.0 == "point_lookup").count();
            if lookup_sizes >= 3 {
                let per_key: fn(&ScenarioResult) -> String =
                    |r| compact(r.store_instructions_per_row);
                let short = grid.columns.iter().map(StoreColumn::short_label).collect();
                let table =
                    render_grid(&grid, group.row_heading, short, per_key, &mut notes, "[{}]");
                out.push_str(&format!(
                    "{position}: store instructions per key (SQLite columns by journal mode)\n{table}\n"
                ));
            }
        }
    }
    for (n, word, reason) in notes.entries() {
        out.push_str(&format!("[{n}] {word}: {reason}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{report, result};
    use super::*;
    use crate::scenario::Status;

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
        let text = terminal_tables(&report(results));
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
