//! What a suite hands the report: blocks for report.md, blocks for the terminal, and plots.
//! The renderers here lay them out; what the blocks say is the suite's business.

use super::format::{duration, thousands};
use super::svg::{DotPlot, LinePlot};
use super::table::{cell_text, Table};
use super::{Report, Status};

/// One piece of a report: report.md and the terminal each get a list of them.
pub enum Block {
    /// `##` (level 2) or `###` (level 3) in report.md, a plain line on the terminal.
    Heading {
        level: usize,
        text: String,
    },
    Table(Table),
    /// A plot written beside report.md (markdown only).
    Image {
        alt: String,
        file: String,
    },
    /// Preformatted lines: fenced in report.md, as they are on the terminal.
    Code(String),
    /// Lines of text, as given.
    Text(String),
}

/// A plot file of the report.
pub struct Plot {
    /// `plot-middle.svg`: the name the markdown's image block links to. Always `plot-*.svg`:
    /// a run removes the files of that name it did not write ([`super::write_all`]).
    pub file: String,
    pub kind: PlotKind,
}

pub enum PlotKind {
    Lines(LinePlot),
    Dots(DotPlot),
}

impl Plot {
    pub fn svg(&self) -> String {
        match &self.kind {
            PlotKind::Lines(p) => p.svg(),
            PlotKind::Dots(p) => p.svg(),
        }
    }
}

/// The legend of tables whose cells are one message's total with the per-row figure in
/// parentheses, for a suite to put first in its markdown blocks.
pub fn message_cells_legend(report: &Report) -> Block {
    if let Some(per_page) = report.wasm_page_charge() {
        return Block::Text(format!(
            "Cells show the total for one message and, in parentheses, per row. \"Store work\" is \
             `ic0.performance_counter(0)` around the store calls only (what seed 003 reports); \
             \"charged\" is what the message is billed: its whole execution, and what cycles are \
             computed from. Both include the memory tracker's page charges: {} instructions for \
             each 64 KiB page of heap or stable memory a message first touches and as much again \
             for each it first writes (queries pay for the touch only). Cycles and USD are for a \
             13-node application subnet; queries are free when not replicated.\n",
            thousands(per_page)
        ));
    }
    Block::Text(
        "Cells show the total for one message and, in parentheses, per row. \"Store work\" is \
         `ic0.performance_counter(0)` around the store calls only (what seed 003 reports); \
         \"charged\" is what the message is billed: its whole execution plus the heap dirty-page \
         charge, and what cycles are computed from. Cycles and USD are for a 13-node application \
         subnet; queries are free when not replicated.\n"
            .into(),
    )
}

/// A suite's rendering of one report.
#[derive(Default)]
pub struct Document {
    pub markdown: Vec<Block>,
    pub terminal: Vec<Block>,
    pub plots: Vec<Plot>,
}

impl Document {
    /// A level-2 heading and its table, in report.md and on the terminal alike.
    pub fn push_table(&mut self, title: &str, table: Table) {
        for blocks in [&mut self.markdown, &mut self.terminal] {
            blocks.push(Block::Heading {
                level: 2,
                text: title.to_string(),
            });
            blocks.push(Block::Table(table.clone()));
        }
    }

    /// A plot written beside report.md and shown in it here, as `alt`.
    pub fn push_plot(&mut self, alt: impl Into<String>, plot: Plot) {
        self.markdown.push(Block::Image {
            alt: alt.into(),
            file: plot.file.clone(),
        });
        self.plots.push(plot);
    }
}

/// report.md: the run's settings and notes, then the suite's blocks.
pub fn markdown(report: &Report, document: &Document) -> String {
    let mut out = String::new();
    out.push_str(&format!("# icbench report: {}\n\n", report.suite));
    out.push_str(&format!("- Suite: `{}`\n", report.suite));
    out.push_str(&format!("- Engine: `{}`\n", report.engine));
    if let Some(replica) = report.extra::<String>(super::REPLICA) {
        out.push_str(&format!(
            "- Replica rules: `{replica}` (`--replica`; docs/engine.md lists what each vintage charges)\n"
        ));
    }
    if let Some(host) = report.extra::<String>(super::HOST) {
        out.push_str(&format!(
            "- Host: `{host}` (`--host`: the charges count its {} KiB OS pages)\n",
            report.host().os_page_size() / 1024
        ));
    }
    if let Some(layout) = report.layout() {
        out.push_str(&format!(
            "- Layout: `{layout}` (`--layout`): {}\n",
            layout.describe()
        ));
    }
    if let Some(per_page) = report.wasm_page_charge() {
        out.push_str(&format!(
            "- Memory pages: the deterministic memory tracker's charge, {} instructions for each 64 KiB page of heap or stable memory a message first touches and as much again for each it first writes (queries: the touch only), is in every figure, `ic0.performance_counter` included\n",
            thousands(per_page)
        ));
    }
    if let Some(w) = report.workload {
        out.push_str(&format!(
            "- Rows before each message: {}\n",
            thousands(w.rows_before)
        ));
        out.push_str(&format!("- Seed: {}\n", w.seed));
        out.push_str(&format!(
            "- Payload size: {} bytes\n",
            thousands(w.payload_size)
        ));
    }
    // One line with the wall time: both describe this run, not its results.
    match &report.prefill {
        Some(prefill) => out.push_str(&format!(
            "- Wall time: {} (prefill {prefill})\n",
            duration(report.wall_seconds)
        )),
        None => out.push_str(&format!("- Wall time: {}\n", duration(report.wall_seconds))),
    }
    if !report.notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for note in &report.notes {
            out.push_str(&format!("- {}\n", note.trim()));
        }
    }
    for block in &document.markdown {
        match block {
            Block::Heading { level, text } => {
                out.push_str(&format!("\n{} {text}\n", "#".repeat(*level)))
            }
            Block::Table(table) => out.push_str(&format!("\n{}", table.render())),
            Block::Image { alt, file } => out.push_str(&format!("\n![{alt}]({file})\n")),
            Block::Code(text) => out.push_str(&format!("\n```\n{text}```\n")),
            Block::Text(text) => out.push_str(&format!("\n{text}")),
        }
    }
    if let Some(log) = &report.work {
        out.push_str(&super::work::section(log));
    }
    if let Some(table) = super::profiles::table(report) {
        out.push_str("\n## Instruction profiles\n\n");
        out.push_str(
            "Where each profiled scenario's charged instructions went (`--profile`): folded \
             stacks (`icbench profile-top FILE` lists the top functions) and a flame graph.\n\n",
        );
        out.push_str(&table.render());
    }
    out
}

/// What the CLI prints: the suite's terminal blocks.
/// One line saying which replica's rules charged the run, for the top of the terminal
/// output (report.md has it among its settings).
pub fn rules_line(report: &Report) -> String {
    use crate::engine::cost::Replica;
    let line = match (report.replica(), report.wasm_page_charge()) {
        (Some(r), Some(per_page)) => format!(
            "Charged by the replica's rules of {} (`--replica`): every 64 KiB page of heap or stable memory a message first touches costs {} instructions, and as much again the first write to it (the memory tracker, on mainnet since July 2026; `--replica 2026-05` charges by the rules before it).\n",
            r.name,
            thousands(per_page)
        ),
        (Some(r), None) => format!(
            "Charged by the replica's rules of {} (`--replica`; the newest are {}'s).\n",
            r.name,
            Replica::NEWEST.name
        ),
        (None, _) => "Charged by the PocketIC server's own replica.\n".to_string(),
    };
    let line = match report.extra::<String>(super::HOST) {
        Some(host) => format!(
            "{line}Host: {host} (`--host`): pages are counted in its {} KiB OS pages, not Linux's 4 KiB.\n",
            report.host().os_page_size() / 1024
        ),
        None => line,
    };
    match report.layout() {
        Some(layout) => format!(
            "{line}Layout: {layout} (`--layout`): {}.\n",
            layout.describe()
        ),
        None => line,
    }
}

pub fn terminal(document: &Document) -> String {
    let mut out = String::new();
    for block in &document.terminal {
        match block {
            Block::Heading { text, .. } => {
                // A heading starts a paragraph, also after a text that ends in one newline.
                if !out.is_empty() && !out.ends_with("\n\n") {
                    out.push('\n');
                }
                out.push_str(&format!("{text}\n"))
            }
            Block::Table(table) => out.push_str(&format!("{}\n", table.render())),
            Block::Image { .. } => {}
            Block::Code(text) => out.push_str(&format!("{text}\n")),
            Block::Text(text) => out.push_str(text),
        }
    }
    out
}

/// Numbers the distinct reasons of refused / failed cells in order of first appearance, so
/// each reason is printed once however many cells share it.
#[derive(Clone, Default)]
pub struct Footnotes {
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
        let key = (word, cell_text(reason));
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

    /// `[1] refused: reason`, a line each, for the terminal and a plain markdown paragraph;
    /// `None` when no cell was marked.
    pub fn text(&self) -> Option<String> {
        let lines: Vec<String> = self
            .entries()
            .map(|(n, word, reason)| format!("[{n}] {word}: {reason}\n"))
            .collect();
        (!lines.is_empty()).then(|| lines.concat())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::report;
    use super::*;

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

    #[test]
    fn blocks_render_for_each_reader() {
        let mut table = Table::new(vec!["Op".into(), "Cost".into()]);
        table.push(vec!["insert".into(), "12".into()]);
        // Both readers get the heading, the plot and the table, then their own notes.
        let blocks = |last: Vec<Block>| {
            let mut blocks = vec![
                Block::Heading {
                    level: 2,
                    text: "Inserts".into(),
                },
                Block::Image {
                    alt: "Cost".into(),
                    file: "plot-x.svg".into(),
                },
                Block::Table(table.clone()),
            ];
            blocks.extend(last);
            blocks
        };
        let doc = Document {
            markdown: blocks(vec![
                Block::Code("a line\n".into()),
                Block::Text("[^1]: failed: trap\n".into()),
            ]),
            terminal: blocks(vec![Block::Text("[1] failed: trap\n".into())]),
            plots: Vec::new(),
        };
        let md = markdown(&report(Vec::new()), &doc);
        assert!(md.ends_with(
            "\n## Inserts\n\n![Cost](plot-x.svg)\n\n| Op     | Cost |\n| :----- | ---: |\n| insert |   12 |\n\n```\na line\n```\n\n[^1]: failed: trap\n"
        ), "{md}");
        assert_eq!(
            terminal(&doc),
            "Inserts\n| Op     | Cost |\n| :----- | ---: |\n| insert |   12 |\n\n[1] failed: trap\n"
        );
    }
}
