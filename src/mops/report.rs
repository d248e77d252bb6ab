//! The report as `mops bench` 3.x prints it (cli/commands/bench.ts, `getOutput` and
//! `getTable`): per bench file its name, description and the tables Instructions, Heap,
//! Garbage Collection and, where a cell used any, Stable Memory, rows by columns, drawn by
//! npm's markdown-table 3.0.4 (first column left, the others right), numbers with `_`
//! between thousands and sizes as npm's filesize 10.1.6 writes them (IEC units, two
//! decimals); with a saved file each figure's change in percent. Under `CI` the same in
//! mops' pull-request form. Plus what icbench adds, only when asked (`--pages`): each
//! cell's Wasm pages and their charge.

use std::fmt::Write;

use super::results::Saved;
use super::runner::{Cell, Schema, Stats};
use crate::engine::PageCounts;

/// How the report is drawn: with ANSI colours (a terminal, as chalk draws them) and in
/// mops' CI form (`CI` set).
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    pub color: bool,
    pub ci: bool,
}

impl Style {
    fn paint(&self, colour: Colour, text: &str) -> String {
        if self.color && !self.ci {
            let (open, close) = colour.codes();
            format!("\x1b[{open}m{text}\x1b[{close}m")
        } else {
            text.to_string()
        }
    }
}

/// The chalk styles the report draws with.
#[derive(Clone, Copy)]
enum Colour {
    Bold,
    Gray,
    Blue,
    Red,
    Green,
    Yellow,
}

impl Colour {
    /// Its ANSI opening code and chalk's closing one: 22 ends bold, 39 (the default
    /// foreground) any colour.
    fn codes(self) -> (&'static str, &'static str) {
        let open = match self {
            Colour::Bold => return ("1", "22"),
            Colour::Gray => "90",
            Colour::Blue => "34",
            Colour::Red => "31",
            Colour::Green => "32",
            Colour::Yellow => "33",
        };
        (open, "39")
    }
}

/// The figures mops shows, each a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Instructions,
    Heap,
    Reclaimed,
    StableMemory,
}

impl Metric {
    fn of(self, s: &Stats) -> i64 {
        match self {
            Metric::Instructions => s.instructions,
            Metric::Heap => s.rts_heap_size,
            Metric::Reclaimed => s.rts_reclaimed,
            Metric::StableMemory => s.rts_logical_stable_memory_size,
        }
    }

    fn show(self, v: i64) -> String {
        match self {
            Metric::Instructions => number(v),
            Metric::Heap | Metric::Reclaimed => size(v as f64),
            Metric::StableMemory => size(v as f64 * 65536.0),
        }
    }
}

/// `n.toLocaleString("en-US").replaceAll(",", "_")`.
pub fn number(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// `filesize(n, { standard: "iec", round: 2 })`.
pub fn size(n: f64) -> String {
    const UNITS: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    let neg = n < 0.0;
    let num = n.abs();
    let mut e = if num == 0.0 {
        0
    } else {
        ((num.ln() / 1024f64.ln()).floor() as i64).clamp(0, 8) as usize
    };
    let mut value = 0.0;
    if num != 0.0 {
        let val = num / 2f64.powi(e as i32 * 10);
        let p = if e > 0 { 100.0 } else { 1.0 };
        // Math.round: halves go up.
        value = (val * p + 0.5).floor() / p;
        if value == 1024.0 && e < 8 {
            value = 1.0;
            e += 1;
        }
    }
    if neg && value != 0.0 {
        value = -value;
    }
    format!("{value} {}", UNITS[e])
}

/// A change in percent as mops writes it (`toFixed(2)`, a sign when up, `0%` for none),
/// coloured (red up, green down, gray none) or in CI's LaTeX.
fn percent(p: f64, parens: bool, style: Style) -> String {
    let text = if p == 0.0 {
        "0%".to_string()
    } else if p.is_infinite() {
        format!("{}Infinity%", if p > 0.0 { "+" } else { "-" })
    } else {
        format!("{}{:.2}%", if p > 0.0 { "+" } else { "" }, p)
    };
    let (open, close) = if parens { ("(", ")") } else { ("", "") };
    let color = if p == 0.0 {
        "gray"
    } else if p > 0.0 {
        "red"
    } else {
        "green"
    };
    if style.ci {
        return format!(
            "${open}{{\\color{{{color}}}{}}}{close}$",
            text.replacen('%', "\\\\%", 1)
        );
    }
    let colour = match color {
        "gray" => Colour::Gray,
        "red" => Colour::Red,
        _ => Colour::Green,
    };
    format!("{open}{}{close}", style.paint(colour, &text))
}

/// A cell's change against its saved figure (`NaN` is no change).
fn change(now: i64, before: i64) -> f64 {
    let p = (now as f64 - before as f64) / before as f64 * 100.0;
    if p.is_nan() {
        0.0
    } else {
        p
    }
}

/// The text width of `s` without its ANSI colours (string-width).
fn width(s: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// markdown-table 3.0.4 with `align: ["l", "r", ...]` and its defaults (padding, aligned
/// delimiters, a delimiter at both ends).
pub fn markdown_table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut longest = vec![0usize; columns];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            longest[i] = longest[i].max(width(cell));
        }
    }
    let delimiter: Vec<String> = (0..columns)
        .map(|i| {
            let dashes = "-".repeat(longest[i].saturating_sub(1).max(1));
            longest[i] = longest[i].max(dashes.len() + 1);
            if i == 0 {
                format!(":{dashes}")
            } else {
                format!("{dashes}:")
            }
        })
        .collect();
    let mut all: Vec<&Vec<String>> = rows.iter().collect();
    all.insert(1.min(all.len()), &delimiter);
    let lines: Vec<String> = all
        .iter()
        .map(|row| {
            let mut line = String::from("|");
            for (i, size) in longest.iter().enumerate() {
                let cell = row.get(i).map(String::as_str).unwrap_or("");
                let pad = " ".repeat(size - width(cell));
                if i == 0 {
                    let _ = write!(line, " {cell}{pad} |");
                } else {
                    let _ = write!(line, " {pad}{cell} |");
                }
            }
            line
        })
        .collect();
    lines.join("\n")
}

/// One of mops' tables (`getTable`): rows by columns, each cell with its change when
/// compared; empty for Stable Memory when no cell used any.
pub fn table(
    schema: &Schema,
    cells: &[Cell],
    metric: Metric,
    prev: Option<&Saved>,
    style: Style,
) -> String {
    let mut rows = vec![std::iter::once(String::new())
        .chain(schema.cols.iter().cloned())
        .collect::<Vec<_>>()];
    let mut all_zero = true;
    for row in &schema.rows {
        let mut line = vec![row.clone()];
        for col in &schema.cols {
            let cell = cells.iter().find(|c| &c.row == row && &c.col == col);
            let text = match cell.map(|c| &c.outcome) {
                Some(Ok(s)) => {
                    let v = metric.of(s);
                    all_zero &= v == 0;
                    let diff = match prev {
                        None => String::new(),
                        Some(saved) => match saved.get(&format!("{row}:{col}")) {
                            Some(before) => {
                                format!(" {}", percent(change(v, metric.of(before)), true, style))
                            }
                            None => style.paint(Colour::Yellow, " (no previous results)"),
                        },
                    };
                    format!("{}{diff}", metric.show(v))
                }
                Some(Err(_)) => "trap".to_string(),
                None => String::new(),
            };
            line.push(text);
        }
        rows.push(line);
    }
    if all_zero && metric == Metric::StableMemory {
        return String::new();
    }
    markdown_table(&rows)
}

/// A metric's mean change over the cells compared (`computeDiff`).
fn mean_change(cells: &[Cell], prev: Option<&Saved>, metric: Metric) -> f64 {
    let Some(saved) = prev else { return 0.0 };
    let mut sum = 0.0;
    let mut count = 0;
    for cell in cells {
        let (Ok(now), Some(before)) = (&cell.outcome, saved.get(&cell.key())) else {
            continue;
        };
        let denom = metric.of(before) as f64;
        let mut p = if denom != 0.0 {
            (metric.of(now) as f64 - denom) / denom * 100.0
        } else {
            0.0
        };
        if !p.is_finite() {
            p = 0.0;
        }
        sum += p;
        count += 1;
    }
    if count > 0 {
        sum / count as f64
    } else {
        0.0
    }
}

/// What mops prints for one bench file (`getOutput`), without the line break console.log
/// adds.
pub fn output(
    file: &str,
    schema: &Schema,
    cells: &[Cell],
    prev: Option<&Saved>,
    style: Style,
) -> String {
    let t = |m| table(schema, cells, m, prev, style);
    let stable = t(Metric::StableMemory);
    if style.ci {
        let all: f64 = [
            Metric::Instructions,
            Metric::Heap,
            Metric::StableMemory,
            Metric::Reclaimed,
        ]
        .iter()
        .map(|&m| mean_change(cells, prev, m))
        .sum();
        let mean = |m| percent(mean_change(cells, prev, m), false, style);
        let desc = if schema.description.is_empty() {
            String::new()
        } else {
            format!("\n_{}_", schema.description)
        };
        let stable = if stable.is_empty() {
            String::new()
        } else {
            format!("\n\n**Stable Memory**\n\n{stable}")
        };
        return [
            "\n<details>".to_string(),
            format!(
                "\n<summary>{file} {}</summary>",
                percent(all, true, style).replacen("\\\\%", "\\%", 1)
            ),
            format!("\n### {}", schema.name),
            desc,
            format!("\n\nInstructions: {}", mean(Metric::Instructions)),
            format!("Heap: {}", mean(Metric::Heap)),
            format!("Stable Memory: {}", mean(Metric::StableMemory)),
            format!("Garbage Collection: {}", mean(Metric::Reclaimed)),
            format!("\n\n**Instructions**\n\n{}", t(Metric::Instructions)),
            format!("\n\n**Heap**\n\n{}", t(Metric::Heap)),
            format!("\n\n**Garbage Collection**\n\n{}", t(Metric::Reclaimed)),
            stable,
            "\n</details>".to_string(),
        ]
        .join("\n");
    }
    let tabs = "\t\t\t\t";
    let desc = if schema.description.is_empty() {
        String::new()
    } else {
        format!("\n{}", style.paint(Colour::Gray, &schema.description))
    };
    let heading = |name: &str| style.paint(Colour::Blue, name);
    let stable = if stable.is_empty() {
        String::new()
    } else {
        format!("\n\n{}\n\n{stable}", heading("Stable Memory"))
    };
    format!(
        "\n{tabs}\n{}\n{tabs}{desc}\n{tabs}\n\n{}\n\n{}\n{tabs}\n\n{}\n\n{}\n{tabs}\n\n{}\n\n{}\n{tabs}{stable}\n\t\t\t",
        style.paint(Colour::Bold, &schema.name),
        heading("Instructions"),
        t(Metric::Instructions),
        heading("Heap"),
        t(Metric::Heap),
        heading("Garbage Collection"),
        t(Metric::Reclaimed),
    )
}

/// A cell's Wasm pages: heap accessed/written · stable accessed/written.
pub fn touched(p: &PageCounts) -> String {
    format!(
        "{}/{} · {}/{}",
        p.heap_wasm_pages_accessed,
        p.heap_wasm_pages_written,
        p.stable_wasm_pages_accessed,
        p.stable_wasm_pages_written
    )
}

/// icbench's tables under mops' (`--pages`): the Wasm pages each cell first touched inside
/// `countInstructions`, and what the rules charged for them (part of Instructions).
pub fn pages(schema: &Schema, cells: &[Cell], rules: &str) -> String {
    let grid = |f: &dyn Fn(&PageCounts) -> String| {
        let mut rows = vec![std::iter::once(String::new())
            .chain(schema.cols.iter().cloned())
            .collect::<Vec<_>>()];
        for row in &schema.rows {
            let mut line = vec![row.clone()];
            for col in &schema.cols {
                let cell = cells.iter().find(|c| &c.row == row && &c.col == col);
                line.push(match cell {
                    Some(Cell {
                        outcome: Err(_), ..
                    }) => "trap".into(),
                    Some(c) => c.pages.as_ref().map(f).unwrap_or_default(),
                    None => String::new(),
                });
            }
            rows.push(line);
        }
        markdown_table(&rows)
    };
    let touched = grid(&touched);
    let charge = grid(&|p| number(p.page_charge_instructions as i64));
    format!(
        "\nWasm Pages (heap accessed/written · stable accessed/written, 64 KiB each)\n\n{touched}\n\nPage Charge (instructions, replica rules {rules})\n\n{charge}\n"
    )
}

#[cfg(test)]
mod tests;
