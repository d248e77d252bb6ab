//! The dbbench report: db_bench's lines, the tables of store and charged instructions per
//! op by benchmark and store, and the plot.

use super::KvStore;
use crate::report::format::{per_row, thousands};
use crate::report::{
    message_cells_legend, Block, Document, Plot, Report, ScenarioResult, Status, Table,
};
use crate::suites::grid::{store_dot, store_dot_plot, StoreColumn};

/// db_bench's result line with instructions for time:
/// `fillseq      :   52176.300 instructions/op;  116.0 bytes/op (10000 ops)`.
pub fn line(name: &str, instructions_per_op: f64, bytes_per_op: f64, ops: u64) -> String {
    format!("{name:<12} : {instructions_per_op:11.3} instructions/op; {bytes_per_op:8.1} bytes/op ({ops} ops)")
}

/// db_bench's output: per store a header and one line per benchmark.
pub fn lines(report: &Report) -> String {
    let mut out = String::new();
    let mut current = None;
    for r in report.results.iter().filter(|r| r.position == "db_bench") {
        let store = (r.store.clone(), r.journal_mode.clone());
        if current.as_ref() != Some(&store) {
            let label = match KvStore::of_record(&r.store, &r.journal_mode) {
                Some(store) => store.described(),
                None => format!("{} {}", r.store, r.journal_mode),
            };
            if current.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("{label}\n"));
            current = Some(store);
        }
        match &r.status {
            Status::Ok => {
                let bytes_per_op = r.bytes as f64 / r.batch.max(1) as f64;
                out.push_str(&line(
                    &r.operation,
                    r.store_instructions_per_row,
                    bytes_per_op,
                    r.batch,
                ));
            }
            Status::Refused(reason) | Status::Failed(reason) => {
                out.push_str(&format!("{:<12} : {reason}", r.operation));
            }
        }
        out.push('\n');
    }
    out
}

/// The dbbench suite's table: benchmarks by stores, store instructions per op (and the
/// key + value bytes per op), plus the charged instructions per op.
fn table(report: &Report, charged: bool) -> Table {
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
    let label = |c: &StoreColumn| match KvStore::of_record(&c.store, &c.journal_mode) {
        Some(store) => store.short_label(),
        None => c.label(),
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
                Some(r) if r.status != Status::Ok => "failed".into(),
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
    table
}

/// plot-dbbench.svg: store instructions per op, one row per benchmark and one marker per
/// store, on a log axis (db_bench's benchmarks have no batch axis).
fn plot(report: &Report) -> Option<Plot> {
    let points = report
        .results
        .iter()
        .filter(|r| r.position == "db_bench" && r.status == Status::Ok)
        .map(|r| store_dot(r, r.operation.clone()))
        .collect();
    store_dot_plot("dbbench", "db_bench", "op", points)
}

/// db_bench's lines, then store and charged instructions per op by benchmark and store.
pub fn document(report: &Report) -> Document {
    let plot = plot(report);
    let heading = |text: &str| Block::Heading {
        level: 2,
        text: text.into(),
    };
    let mut doc = Document {
        markdown: vec![message_cells_legend(report), heading("db_bench lines (instructions/op in place of micros/op: store work, ic0.performance_counter)")],
        terminal: vec![
            Block::Code(lines(report)),
            heading("store instructions per op (key + value bytes per op)"),
            Block::Table(table(report, false)),
        ],
        plots: Vec::new(),
    };
    if let Some(plot) = plot {
        doc.push_plot("db_bench: store instructions per op", plot);
    }
    doc.markdown.extend([
        Block::Code(lines(report)),
        heading("store instructions per op (key + value bytes per op)"),
        Block::Table(table(report, false)),
        heading("instructions charged per op (whole messages)"),
        Block::Table(table(report, true)),
    ]);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture::report;

    /// A db_bench record: `batch` ops of `store` in `mode`.
    fn record(store: &str, mode: &str, bench: &str, batch: u64, status: Status) -> ScenarioResult {
        ScenarioResult {
            store: store.into(),
            journal_mode: mode.into(),
            position: "db_bench".into(),
            operation: bench.into(),
            batch,
            store_instructions_per_row: 52_176.3,
            instructions_per_row: 61_000.0,
            bytes: 116 * batch,
            status,
            ..ScenarioResult::default()
        }
    }

    #[test]
    fn a_line_is_db_bench_s_with_instructions_for_time() {
        assert_eq!(
            line("fillseq", 52_176.3, 116.0, 10_000),
            "fillseq      :   52176.300 instructions/op;    116.0 bytes/op (10000 ops)"
        );
    }

    #[test]
    fn lines_and_tables_name_each_store_as_db_bench_does() {
        let failed = Status::Failed("message 1 of fillseq: out of memory".into());
        let r = report(vec![
            record("btree", "", "fillseq", 2_000, Status::Ok),
            record("btree", "", "readseq", 2_000, Status::Ok),
            record("sqlite_without_rowid", "WAL", "fillseq", 2_000, failed),
        ]);
        assert_eq!(
            lines(&r),
            "StableBTreeMap<[u8; 16], Vec<u8>>\n\
             fillseq      :   52176.300 instructions/op;    116.0 bytes/op (2000 ops)\n\
             readseq      :   52176.300 instructions/op;    116.0 bytes/op (2000 ops)\n\
             \n\
             SQLite WAL, WITHOUT ROWID\n\
             fillseq      : message 1 of fillseq: out of memory\n"
        );
        let store_work = table(&r, false).render();
        assert!(
            store_work.contains("| Benchmark |       BTreeMap | SQLite WAL WITHOUT ROWID |"),
            "{store_work}"
        );
        assert!(
            store_work.contains("| fillseq   | 52,176 (116 B) |                   failed |"),
            "{store_work}"
        );
        assert!(
            store_work.contains("| readseq   | 52,176 (116 B) |                        - |"),
            "{store_work}"
        );
        let charged = table(&r, true).render();
        assert!(
            charged.contains("| fillseq   |   61,000 |                   failed |"),
            "{charged}"
        );
    }
}
