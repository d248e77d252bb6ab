//! The sustained suite's report: per position a table, a row per workload and store, the
//! sequence's charged instructions per message (mean, median, 99th percentile, largest),
//! its pages per message and the collector's share.

use crate::report::format::{compact, thousands};
use crate::report::table::first_seen;
use crate::report::Align::{Left, Right};
use crate::report::{Block, Document, Footnotes, Report, ScenarioResult, Sequence};
use crate::suites::grid::{push_footnotes, table_of, StoreColumn};

/// The records of sequences.
fn sequences(report: &Report) -> impl Iterator<Item = (&ScenarioResult, &Sequence)> {
    report
        .results
        .iter()
        .filter_map(|r| r.sequence.as_ref().map(|s| (r, s)))
}

pub(super) fn document(report: &Report) -> Document {
    let mut doc = Document::default();
    doc.markdown.push(Block::Text(
        "Each row: a sequence of N insert messages from the store's start. Charged instructions per message (page charges included): mean, median, 99th percentile and largest; pages: the 64 KiB pages the memory tracker counted per message (accessed plus written), mean and largest; allocated: the heap bytes the runtime allocated per message, and collector: the share of the charged instructions the garbage collector's increments took (Motoko's stores; `-` where the runtime has neither). Motoko's incremental collector starts a collection once the heap has grown by a share of its size since the last one (65% below half the memory's capacity), so a sequence that allocates less than that pays only its scheduling check.\n".into(),
    ));
    let mut footnotes = Footnotes::default();
    for position in first_seen(sequences(report).map(|(r, _)| r.position.clone())) {
        let records: Vec<(&ScenarioResult, &Sequence)> = sequences(report)
            .filter(|(r, _)| r.position == position)
            .collect();
        let mut table = table_of(&[
            ("sequence", Left),
            ("store", Left),
            ("mean", Right),
            ("median", Right),
            ("p99", Right),
            ("max", Right),
            ("pages", Right),
            ("allocated", Right),
            ("collector", Right),
        ]);
        for (r, s) in records {
            let sequence = format!("{} x {}", thousands(s.messages), rows(r.batch));
            let store = StoreColumn::of(r).label();
            let mut cells = vec![sequence, store];
            match footnotes.mark(&r.status) {
                Some((word, n)) => {
                    cells.push(format!("{word} [{n}]"));
                    cells.extend(std::iter::repeat_n(String::new(), 6));
                }
                None => cells.extend([
                    compact(s.charged_mean),
                    compact(s.charged_median as f64),
                    compact(s.charged_p99 as f64),
                    compact(s.charged_max as f64),
                    pages(s),
                    s.allocated_bytes.map_or("-".into(), |b| {
                        format!("{} B", compact(b as f64 / s.messages.max(1) as f64))
                    }),
                    s.collector_share()
                        .map_or("-".into(), |share| format!("{:.2}%", share * 100.0)),
                ]),
            }
            table.push(cells);
        }
        let title = format!(
            "{position}: charged instructions per message over a sequence, from {} rows",
            thousands(report.workload().rows_before)
        );
        doc.push_table(&title, table);
    }
    push_footnotes(&mut doc, &footnotes);
    doc
}

/// `1 row`, `100 rows`.
fn rows(batch: u64) -> String {
    match batch {
        1 => "1 row".into(),
        n => format!("{} rows", thousands(n)),
    }
}

/// `12.4 / 31`: mean and largest; empty where the engine could not see pages.
fn pages(s: &Sequence) -> String {
    match (s.pages_mean, s.pages_max) {
        (Some(mean), Some(max)) => format!("{mean:.1} / {max}"),
        _ => String::new(),
    }
}
