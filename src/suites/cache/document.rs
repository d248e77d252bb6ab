//! The cache suite's report: per position a table, a row per workload and store, a column
//! per W (the tables' warm state last), each cell the message's charged instructions with
//! the 64 KiB heap and stable pages it accessed; and per workload a plot of the charged
//! instructions over W + 1 (the measured message's place on the connection), a line per
//! store.

use crate::report::format::thousands;
use crate::report::svg::Axes;
use crate::report::table::first_seen;
use crate::report::{
    Align, Block, Document, Footnotes, LinePlot, Plot, PlotKind, Report, ScenarioResult, Series,
    Status, Table,
};
use crate::suites::grid::{self, StoreColumn};

/// A row of a table: the workload and the store.
#[derive(Clone, PartialEq)]
struct Row {
    operation: String,
    batch: u64,
    store: StoreColumn,
}

impl Row {
    fn of(r: &ScenarioResult) -> Row {
        Row {
            operation: r.operation.clone(),
            batch: r.batch,
            store: StoreColumn::of(r),
        }
    }
}

/// The records of the sweep (those with a W).
fn swept(report: &Report) -> impl Iterator<Item = &ScenarioResult> {
    report.results.iter().filter(|r| !r.warm_ups.is_empty())
}

/// The W of a record as a number: the warm-ups from the cold start; `None` for the warm
/// start's (`full+W`).
fn count(warm_ups: &str) -> Option<u64> {
    warm_ups.parse().ok()
}

/// The column heading of a W.
fn heading(warm_ups: &str) -> String {
    match count(warm_ups) {
        Some(w) => format!("W={}", thousands(w)),
        None => format!("{warm_ups} (warm)"),
    }
}

pub(super) fn document(report: &Report) -> Document {
    let mut doc = Document::default();
    doc.markdown.push(Block::Text(
        "Each cell: the instructions the measured message was charged (its whole execution, page charges included) and, in parentheses, the 64 KiB pages of the heap and of stable memory it accessed (results.csv has the pages written, the store's own count and the rest). W: the update messages of the workload sent on the same connection before it, from the store's cold start; `full+1`: the state the tables call warm (the whole table read, then one message). The plots draw each store's charged instructions over W + 1, the measured message's place on the connection (log axes).\n".into(),
    ));
    let columns = first_seen(swept(report).map(|r| r.warm_ups.clone()));
    let mut footnotes = Footnotes::default();
    for position in first_seen(swept(report).map(|r| r.position.clone())) {
        let records: Vec<&ScenarioResult> =
            swept(report).filter(|r| r.position == position).collect();
        let mut headers = vec!["workload".to_string(), "store".to_string()];
        headers.extend(columns.iter().map(|w| heading(w)));
        let mut aligns = vec![Align::Left, Align::Left];
        aligns.extend(columns.iter().map(|_| Align::Right));
        let mut table = Table::with_aligns(headers, aligns);
        for row in first_seen(records.iter().map(|r| Row::of(r))) {
            let mut cells = vec![workload(&row.operation, row.batch), row.store.label()];
            cells.extend(columns.iter().map(|w| {
                let found = records
                    .iter()
                    .find(|r| Row::of(r) == row && &r.warm_ups == w);
                match found {
                    None => String::new(),
                    Some(r) => match footnotes.mark(&r.status) {
                        Some((word, n)) => format!("{word} [{n}]"),
                        None => cell(r),
                    },
                }
            }));
            table.push(cells);
        }
        let title = format!(
            "{position}: charged instructions after W messages of the workload on the connection, at {} rows",
            thousands(report.workload().rows_before)
        );
        doc.push_table(&title, table);
    }
    grid::push_footnotes(&mut doc, &footnotes);
    plots(report, &mut doc);
    doc
}

/// `insert, 100 rows`, `point lookup, 1 key`.
fn workload(operation: &str, batch: u64) -> String {
    match operation {
        "insert" if batch == 1 => "insert, 1 row".into(),
        "insert" => format!("insert, {} rows", thousands(batch)),
        other => grid::row_label(other, batch),
    }
}

/// `3,438,020 (16/6)`.
fn cell(r: &ScenarioResult) -> String {
    match &r.pages {
        Some(p) => format!(
            "{} ({}/{})",
            thousands(r.instructions),
            p.heap_wasm_pages_accessed,
            p.stable_wasm_pages_accessed
        ),
        None => thousands(r.instructions),
    }
}

/// Per position and workload, the charged instructions over W + 1, a line per store.
fn plots(report: &Report, doc: &mut Document) {
    let workloads =
        first_seen(swept(report).map(|r| (r.position.clone(), r.operation.clone(), r.batch)));
    for (position, operation, batch) in workloads {
        let records: Vec<&ScenarioResult> = swept(report)
            .filter(|r| r.position == position && r.operation == operation && r.batch == batch)
            .collect();
        let series: Vec<Series> = first_seen(records.iter().map(|r| StoreColumn::of(r)))
            .into_iter()
            .map(|store| Series {
                label: store.label(),
                color: store.color_slot(),
                points: records
                    .iter()
                    .filter(|r| StoreColumn::of(r) == store && r.status == Status::Ok)
                    .filter_map(|r| Some(((count(&r.warm_ups)? + 1) as f64, r.instructions as f64)))
                    .collect(),
            })
            .collect();
        let title = format!(
            "{position} {}: charged instructions over the messages on the connection",
            workload(&operation, batch)
        );
        let plot = LinePlot {
            title: title.clone(),
            unit: "message".into(),
            axes: Some(Axes {
                x: "W + 1: the measured message's place on the connection".into(),
                y: "charged instructions per message".into(),
                x_unit: "messages".into(),
                y_unit: "instructions".into(),
            }),
            series,
        };
        if plot.svg().is_empty() {
            continue;
        }
        let file = format!("plot-{position}-{operation}-{batch}.svg");
        doc.push_plot(
            title,
            Plot {
                file,
                kind: PlotKind::Lines(plot),
            },
        );
    }
}
