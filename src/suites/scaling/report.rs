//! The scaling suite's report: the decision table at the largest size, the capacity table,
//! a table and plot per operation by store size, the bulk-insert costs, memory per row and
//! storage, and the upgrade at the largest size.

use super::{
    FILL_STOPPED, HEAP_BYTES, OPERATIONS, STABLE_BYTES, STORAGE_30_DAYS, SUBNETS, UPGRADE,
};
use crate::report::format::{per_row, thousands, usd};
use crate::report::svg::{Axes, LinePlot, Series};
use crate::report::{Block, Document, Plot, PlotKind, Report, ScenarioResult, Table};
use crate::suites::capacity::{self, Message};
use crate::suites::scenario::{Operation, Position};
use crate::suites::{decision, grid};

/// A column per store (and SQLite mode), in the order the records first name them.
fn store_columns(report: &Report) -> Vec<(String, String)> {
    let mut columns: Vec<(String, String)> = Vec::new();
    for r in &report.results {
        let key = (r.store.clone(), r.journal_mode.clone());
        if OPERATIONS.iter().any(|(_, o)| o.kind() == r.operation) && !columns.contains(&key) {
            columns.push(key);
        }
    }
    columns
}

fn column_label((store, mode): &(String, String)) -> String {
    crate::stores::label(store, mode)
}

/// The store's colour in every plot (one table for every suite: `grid::StoreColumn::color_slot`).
fn color_slot((store, mode): &(String, String)) -> Option<usize> {
    grid::StoreColumn {
        store: store.clone(),
        journal_mode: mode.clone(),
    }
    .color_slot()
}

/// What the decision table compares at the largest size: the message workloads, the upgrade,
/// then the storage of the whole canister for 30 days on a 13-node subnet.
const STORAGE_WORKLOAD: decision::Workload = decision::Workload {
    name: "storage for 30 days (whole canister)",
    pick: |r| r.operation == STORAGE_30_DAYS && r.position == SUBNETS[0].0,
    cost: |r| r.cycles,
    unit: "cycles",
};

/// The upgrade at the largest size: the whole install_code's charged instructions.
const UPGRADE_WORKLOAD: decision::Workload = decision::Workload {
    name: "upgrade (to a new build)",
    pick: |r| r.operation == UPGRADE,
    cost: |r| r.instructions,
    unit: "instructions per upgrade",
};

fn sizes(report: &Report) -> Vec<u64> {
    let mut sizes: Vec<u64> = report.results.iter().map(|r| r.rows_before).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

fn find<'a>(
    report: &'a Report,
    column: &(String, String),
    n: u64,
    position: &str,
    operation: &str,
    batch: u64,
) -> Option<&'a ScenarioResult> {
    report.results.iter().find(|r| {
        r.store == column.0
            && r.journal_mode == column.1
            && r.rows_before == n
            && r.position == position
            && r.operation == operation
            && r.batch == batch
    })
}

/// The memory records of a store are filed under the mode it was filled in: the first
/// column of its kind.
fn memory_record<'a>(
    report: &'a Report,
    store: &str,
    n: u64,
    position: &str,
    operation: &str,
) -> Option<&'a ScenarioResult> {
    report.results.iter().find(|r| {
        r.store == store && r.rows_before == n && r.position == position && r.operation == operation
    })
}

pub(super) fn operation_title(position: Position, operation: Operation) -> String {
    match operation {
        Operation::Insert { rows } => format!(
            "insert {} row{} ({position})",
            thousands(rows),
            if rows == 1 { "" } else { "s" }
        ),
        Operation::PointLookups { keys } => format!(
            "point lookup of {} key{} ({position})",
            thousands(keys),
            if keys == 1 { "" } else { "s" }
        ),
        Operation::RangeScan { rows } => format!("range scan of {} rows", thousands(rows)),
    }
}

fn file_stem(position: Position, operation: Operation) -> String {
    format!(
        "plot-{}-{}-{}",
        operation.kind(),
        position,
        operation.rows()
    )
}

/// The scaling suite's tables and plots.
pub fn document(report: &Report) -> Document {
    let mut doc = Document::default();
    decision_section(report, &mut doc);
    stops_section(report, &mut doc);
    capacity_section(report, &mut doc);
    doc.markdown.push(Block::Text(
        "Cells are store instructions for one message (`ic0.performance_counter(0)` around the store work) at each store size N; every operation at N starts from the same snapshot.\n".into(),
    ));
    let columns = store_columns(report);
    let sizes = sizes(report);
    let labels: Vec<String> = columns.iter().map(column_label).collect();
    operation_sections(report, &mut doc, &columns, &labels, &sizes);
    let (memory, storage, bytes_series) = memory_tables(report, &columns, &sizes);
    bulk_section(report, &mut doc, &columns, &labels, &sizes);
    let memory_title =
        "Memory per row: the store's heap bytes over the empty canister and its own stable bytes";
    let storage_title =
        "Storage for 30 days: cycles (USD) for the whole canister, heap + stable memory + module";
    doc.push_table(memory_title, memory);
    doc.push_table(storage_title, storage);
    upgrade_section(report, &mut doc);
    let bytes_plot = LinePlot {
        title: "Memory per row (heap + stable)".into(),
        unit: "row".into(),
        axes: Some(Axes {
            x: "rows in the store".into(),
            y: "bytes per row".into(),
            x_unit: "rows".into(),
            y_unit: "bytes/row".into(),
        }),
        series: bytes_series,
    };
    if !bytes_plot.svg().is_empty() {
        doc.push_plot(
            memory_title,
            Plot {
                file: "plot-bytes-per-row.svg".into(),
                kind: PlotKind::Lines(bytes_plot),
            },
        );
    }
    doc
}

/// Which store is cheapest per workload at the largest size.
fn decision_section(report: &Report, doc: &mut Document) {
    if let Some(&largest) = sizes(report).last() {
        let decisions: Vec<decision::Decision> = decision::MESSAGE_WORKLOADS
            .iter()
            .chain([&UPGRADE_WORKLOAD, &STORAGE_WORKLOAD])
            .filter_map(|w| decision::decide(report, w, largest))
            .collect();
        let title = format!(
            "Which store is cheapest, at {} rows (charged instructions; storage in cycles)",
            thousands(largest)
        );
        doc.push_table(&title, decision::table(&decisions));
        doc.markdown.push(Block::Text(
            "Generated from this run's records: per workload the cheapest store (and SQLite journal mode), and how many times cheaper it is than the cheapest store of another kind. Messages are compared by the instructions they are charged (what cycles pay for), not by the store's own counter.\n".into(),
        ));
    }
}

/// The capacity table: the largest batch one message carries.
fn capacity_section(report: &Report, doc: &mut Document) {
    if let Some(table) = capacity::table(report) {
        let n = report
            .results
            .iter()
            .find(|r| r.operation == Message::Insert.operation())
            .map_or(0, |r| r.rows_before);
        let title = format!(
            "Capacity: the largest batch one message carries, on the {}-row state",
            thousands(n)
        );
        doc.push_table(&title, table);
        doc.markdown.push(Block::Text(capacity::explained(report)));
    }
}

/// A table and a plot per operation: store instructions by store size, a column per store.
fn operation_sections(
    report: &Report,
    doc: &mut Document,
    columns: &[(String, String)],
    labels: &[String],
    sizes: &[u64],
) {
    let headers = |first: &str| {
        let mut h = vec![first.to_string()];
        h.extend(labels.iter().cloned());
        h
    };
    for (position, operation) in OPERATIONS {
        let title = format!(
            "{}: store instructions per message, by rows in the store",
            operation_title(position, operation)
        );
        let mut table = Table::new(headers("Rows in the store"));
        for &n in sizes {
            let mut row = vec![thousands(n)];
            for c in columns {
                row.push(
                    match find(
                        report,
                        c,
                        n,
                        position.as_str(),
                        operation.kind(),
                        operation.rows(),
                    ) {
                        Some(r) if r.status == crate::report::Status::Ok => {
                            thousands(r.store_instructions)
                        }
                        Some(_) => "failed".into(),
                        None => "-".into(),
                    },
                );
            }
            table.push(row);
        }
        let plot = LinePlot {
            title: operation_title(position, operation),
            unit: "row".into(),
            axes: Some(Axes {
                x: "rows in the store".into(),
                y: "store instructions per message".into(),
                x_unit: "rows".into(),
                y_unit: "instructions".into(),
            }),
            series: columns
                .iter()
                .zip(labels)
                .map(|(c, label)| Series {
                    label: label.clone(),
                    color: color_slot(c),
                    points: sizes
                        .iter()
                        .filter_map(|&n| {
                            find(
                                report,
                                c,
                                n,
                                position.as_str(),
                                operation.kind(),
                                operation.rows(),
                            )
                            .filter(|r| r.status == crate::report::Status::Ok)
                            .map(|r| (n as f64, r.store_instructions as f64))
                        })
                        .collect(),
                })
                .collect(),
        };
        let file = format!("{}.svg", file_stem(position, operation));
        doc.push_table(&title, table);
        if !plot.svg().is_empty() {
            doc.push_plot(
                title,
                Plot {
                    file,
                    kind: PlotKind::Lines(plot),
                },
            );
        }
    }
}

/// The report's records of `operation`, in report order.
fn records_of<'r>(report: &'r Report, operation: &str) -> Vec<&'r ScenarioResult> {
    report
        .results
        .iter()
        .filter(|r| r.operation == operation)
        .collect()
}

/// The stores a limit stopped short of a size: where, and the replica's reject (its code and
/// first sentence, which name the limit).
fn stops_section(report: &Report, doc: &mut Document) {
    let stops = records_of(report, FILL_STOPPED);
    if stops.is_empty() {
        return;
    }
    let mut table = Table::new(vec![
        "Store".into(),
        "Filling to".into(),
        "Rows when stopped".into(),
        "Why (the replica's reject)".into(),
    ]);
    for r in stops {
        let reject = match &r.status {
            crate::report::Status::Failed(e) | crate::report::Status::Refused(e) => e.as_str(),
            crate::report::Status::Ok => "",
        };
        let code = reject.split(':').next().unwrap_or("");
        let why = reject
            .split(": ")
            .nth(2)
            .and_then(|rest| rest.split(". ").next())
            .unwrap_or(reject);
        table.push(vec![
            crate::stores::label(&r.store, &r.journal_mode),
            thousands(r.rows_before),
            format!("{} rows", thousands(r.batch)),
            format!("{code}: {why}"),
        ]);
    }
    doc.push_table("Where a limit stops a store's fill", table);
}

/// Memory per row and storage, a column per store kind, and the bytes per row to plot.
fn memory_tables(
    report: &Report,
    columns: &[(String, String)],
    sizes: &[u64],
) -> (Table, Table, Vec<Series>) {
    let mut kinds: Vec<String> = Vec::new();
    for (store, _) in columns {
        if !kinds.contains(store) {
            kinds.push(store.clone());
        }
    }
    let kind_label = |k: &str| crate::stores::label(k, "");
    let mut memory = Table::new({
        let mut h = vec!["Rows in the store".to_string()];
        for k in &kinds {
            h.push(format!("{} heap B/row", kind_label(k)));
            h.push(format!("{} stable B/row", kind_label(k)));
        }
        h
    });
    let mut storage = Table::new({
        let mut h = vec!["Rows in the store".to_string()];
        for k in &kinds {
            h.push(format!("{} 13 nodes", kind_label(k)));
            h.push(format!("{} 34 nodes", kind_label(k)));
        }
        h
    });
    let mut bytes_series: Vec<Series> = Vec::new();
    for k in &kinds {
        // A kind's memory is its fill's: the colour of its first column (the mode it was
        // filled in, for SQLite).
        let first = columns.iter().find(|c| &c.0 == k);
        bytes_series.push(Series {
            label: first.map_or_else(|| kind_label(k), column_label),
            color: first.and_then(color_slot),
            points: Vec::new(),
        });
    }
    for &n in sizes {
        let mut mem_row = vec![thousands(n)];
        let mut cost_row = vec![thousands(n)];
        for (i, k) in kinds.iter().enumerate() {
            let heap = memory_record(report, k, n, "-", HEAP_BYTES).map(|r| r.bytes);
            let stable = memory_record(report, k, n, "-", STABLE_BYTES).map(|r| r.bytes);
            for b in [heap, stable] {
                mem_row.push(b.map_or("-".into(), |b| per_row(b as f64 / n as f64)));
            }
            if let (Some(h), Some(s)) = (heap, stable) {
                bytes_series[i]
                    .points
                    .push((n as f64, (h + s) as f64 / n as f64));
            }
            for (subnet, _) in SUBNETS {
                cost_row.push(
                    memory_record(report, k, n, subnet, STORAGE_30_DAYS).map_or("-".into(), |r| {
                        format!("{} ({})", thousands(r.cycles), usd(r.usd))
                    }),
                );
            }
        }
        memory.push(mem_row);
        storage.push(cost_row);
    }
    (memory, storage, bytes_series)
}

/// What inserting a million rows costs at each size, one and 1,000 rows per message.
fn bulk_section(
    report: &Report,
    doc: &mut Document,
    columns: &[(String, String)],
    labels: &[String],
    sizes: &[u64],
) {
    // A million rows sent one per message and 1,000 per message, from the messages measured
    // at each size: execution and ingress apart, then the total. The store keeps growing
    // meanwhile, so this is the price at N, not of growing from N.
    let million = 1_000_000u64;
    let mut bulk = grid::table_headed(&[
        "Store",
        "Rows in the store",
        "Rows per message",
        "Messages",
        "Execution cycles",
        "Ingress cycles",
        "Total cycles",
        "Total USD",
    ]);
    for (c, label) in columns.iter().zip(labels) {
        for &n in sizes {
            for batch in [1, 1_000] {
                let Some(r) = find(report, c, n, "middle", "insert", batch)
                    .filter(|r| r.status == crate::report::Status::Ok)
                else {
                    continue;
                };
                let messages = million / batch;
                let execution = r.cycles as u128 * messages as u128;
                let ingress = r.ingress_cycles as u128 * messages as u128;
                let total = execution + ingress;
                // The record's USD per cycle (the run's --usd-per-xdr).
                let usd_total = r.usd * total as f64 / r.cycles.max(1) as f64;
                bulk.push(vec![
                    label.clone(),
                    thousands(n),
                    thousands(batch),
                    thousands(messages),
                    thousands(execution as u64),
                    thousands(ingress as u64),
                    thousands(total as u64),
                    usd(usd_total),
                ]);
            }
        }
    }
    let bulk_title = "Inserting 1,000,000 rows at each size: execution, ingress and total cycles (13-node subnet)";
    doc.push_table(bulk_title, bulk);
    doc.markdown.push(Block::Text(
        "Ingress: what sending the update from outside the IC adds, 1,200,000 cycles per message and 2,000 per byte of the method name and Candid argument. That is a lower bound: the newest replica counts the whole signed envelope (CBOR framing, sender key, signature: a few hundred bytes more per message).\n".into(),
    ));
}

/// The upgrade of each store at the largest size: the hooks and the whole install_code.
fn upgrade_section(report: &Report, doc: &mut Document) {
    use crate::report::Status;
    let upgrades = records_of(report, UPGRADE);
    if upgrades.is_empty() {
        return;
    }
    let mut table = grid::table_headed(&[
        "Store",
        "Rows in the store",
        "pre_upgrade",
        "post_upgrade",
        "install_code (charged)",
        "Cycles (USD)",
        "Result",
    ]);
    let mut errors = Vec::new();
    for up in upgrades {
        let label = crate::stores::label(&up.store, &up.journal_mode);
        let hook = |op: &str| {
            report
                .results
                .iter()
                .find(|r| {
                    r.store == up.store
                        && r.journal_mode == up.journal_mode
                        && r.rows_before == up.rows_before
                        && r.operation == op
                })
                .map_or("-".into(), |r| thousands(r.instructions))
        };
        let result = match &up.status {
            Status::Ok => "ok".to_string(),
            Status::Failed(e) => {
                errors.push(format!("{label}: {e}"));
                decision::fails(&decision::error_code(e))
            }
            Status::Refused(e) => format!("refused: {e}"),
        };
        table.push(vec![
            label,
            thousands(up.rows_before),
            hook("pre_upgrade"),
            hook("post_upgrade"),
            thousands(up.instructions),
            format!("{} ({})", thousands(up.cycles), usd(up.usd)),
            result,
        ]);
    }
    let title =
        "Upgrade to a new build at the largest size: instructions charged per stage and for the whole install_code";
    doc.push_table(title, table);
    for blocks in [&mut doc.markdown, &mut doc.terminal] {
        for e in &errors {
            blocks.push(Block::Text(format!("Failed upgrade, {e}\n")));
        }
    }
}
