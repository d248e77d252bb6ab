//! A minimal pipe table, padded so it reads aligned in a terminal and still renders as a
//! Markdown table.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Clone)]
pub struct Table {
    headers: Vec<String>,
    aligns: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// The first column is left-aligned (row labels), the others right-aligned (numbers).
    pub fn new(headers: Vec<String>) -> Table {
        let aligns = (0..headers.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Table {
            headers,
            aligns,
            rows: Vec::new(),
        }
    }

    pub fn with_aligns(headers: Vec<String>, aligns: Vec<Align>) -> Table {
        assert_eq!(headers.len(), aligns.len(), "one alignment per column");
        Table {
            headers,
            aligns,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        assert_eq!(
            row.len(),
            self.headers.len(),
            "row width must match the header"
        );
        self.rows.push(row);
    }

    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                let cells =
                    std::iter::once(&self.headers[c]).chain(self.rows.iter().map(|r| &r[c]));
                // Markdown needs at least three dashes in the separator row.
                cells.map(|s| width(s)).max().unwrap_or(0).max(3)
            })
            .collect();
        let mut out = String::new();
        self.line(&mut out, &self.headers, &widths);
        let separator: Vec<String> = widths
            .iter()
            .zip(&self.aligns)
            .map(|(&w, &a)| match a {
                Align::Left => format!(":{}", "-".repeat(w - 1)),
                Align::Right => format!("{}:", "-".repeat(w - 1)),
            })
            .collect();
        self.line(&mut out, &separator, &widths);
        for row in &self.rows {
            self.line(&mut out, row, &widths);
        }
        out
    }

    /// The table without padding: a pull-request comment is read rendered, and every space
    /// counts toward its size limit.
    pub fn compact(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let separator: Vec<String> = self
            .aligns
            .iter()
            .map(|a| match a {
                Align::Left => ":--",
                Align::Right => "--:",
            })
            .map(String::from)
            .collect();
        let mut out = line(&self.headers);
        out.push_str(&line(&separator));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }

    fn line(&self, out: &mut String, cells: &[String], widths: &[usize]) {
        out.push('|');
        for ((cell, &w), &align) in cells.iter().zip(widths).zip(&self.aligns) {
            let pad = " ".repeat(w - width(cell));
            match align {
                Align::Left => out.push_str(&format!(" {cell}{pad} |")),
                Align::Right => out.push_str(&format!(" {pad}{cell} |")),
            }
        }
        out.push('\n');
    }
}

/// Display width, counting characters (cells hold `Δ`, `—`), not bytes.
fn width(s: &str) -> usize {
    s.chars().count()
}

/// Escape text for a table cell: a `|` would split the cell, a newline the row.
pub fn cell_text(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// Distinct values in order of first appearance.
pub(crate) fn first_seen<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_columns_to_the_widest_cell() {
        let mut t = Table::new(vec!["rows".into(), "StableBTreeMap".into()]);
        t.push(vec!["1".into(), "49,359".into()]);
        assert_eq!(
            t.render(),
            "| rows | StableBTreeMap |\n| :--- | -------------: |\n| 1    |         49,359 |\n"
        );
        assert_eq!(
            t.compact(),
            "| rows | StableBTreeMap |\n| :-- | --: |\n| 1 | 49,359 |\n"
        );
    }
}
