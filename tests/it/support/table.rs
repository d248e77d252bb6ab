//! Exact counts as the snapshot files beside the tests hold them (`snapshots/`, compared by
//! `insta::assert_snapshot!`): a header, then a row a line, its columns aligned. A rebuilt
//! canister moves many counts at once; `INSTA_UPDATE=always cargo test --release` rewrites
//! the files, and `git diff` shows each count that moved.

use std::fmt;

pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            rows: vec![header.iter().map(|h| h.to_string()).collect()],
        }
    }

    pub fn row<C: ToString>(&mut self, cells: impl IntoIterator<Item = C>) {
        let row: Vec<String> = cells.into_iter().map(|c| c.to_string()).collect();
        assert_eq!(row.len(), self.rows[0].len(), "a row of {:?}", self.rows[0]);
        self.rows.push(row);
    }
}

/// Numbers right-aligned, words left-aligned, columns two spaces apart.
impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widths: Vec<usize> = (0..self.rows[0].len())
            .map(|i| self.rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
            .collect();
        for row in &self.rows {
            let mut line = String::new();
            for (cell, width) in row.iter().zip(&widths) {
                if cell.parse::<i128>().is_ok() {
                    line += &format!("{cell:>width$}  ");
                } else {
                    line += &format!("{cell:<width$}  ");
                }
            }
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }
}
