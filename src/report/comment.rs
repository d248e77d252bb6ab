//! A pull-request comment in GitHub-flavoured markdown: a first line saying what moved, the
//! tables a reviewer reads first (regressions, then improvements, new, removed, failures),
//! and the whole comparison folded in `<details>`, cut to a size limit with a line saying
//! what was cut.
//!
//! `icbench compare` (two runs of the suites) and `icbench canbench` (a run against a
//! results file) hand it the same shape; it knows neither.

use super::format::thousands;
use super::table::{Align, Table};

/// GitHub refuses a comment body longer than this many characters.
pub const GITHUB_LIMIT: usize = 65_536;

/// The smallest limit accepted: room for the first lines and the notes of what was cut.
pub const MIN_LIMIT: usize = 2_000;

/// The flags of a comment, shared by `icbench compare` and `icbench canbench`.
#[derive(clap::Args, Clone, Debug)]
pub struct CommentArgs {
    /// Markdown: the name the comment's first line starts with.
    #[arg(long, default_value = "icbench")]
    pub title: String,
    /// Markdown: end the comment with `<!-- TEXT -->`, by which a workflow finds the comment
    /// to update instead of adding another.
    #[arg(long, value_name = "TEXT")]
    pub marker: Option<String>,
    /// Markdown: the longest comment, in bytes of UTF-8 (never fewer than the characters
    /// GitHub counts); past it, rows are cut from the folded full table first, then from
    /// the last tables shown, and the comment says what was cut.
    #[arg(long, default_value_t = GITHUB_LIMIT, value_name = "N")]
    pub max_chars: usize,
}

impl Default for CommentArgs {
    fn default() -> Self {
        CommentArgs {
            title: "icbench".into(),
            marker: None,
            max_chars: GITHUB_LIMIT,
        }
    }
}

impl CommentArgs {
    /// Refuses a marker that would end its HTML comment early, a one-line title and a
    /// limit too small for any comment.
    pub fn check(&self) -> Result<(), String> {
        if let Some(m) = &self.marker {
            if m.contains("--") || m.contains('>') || m.contains('\n') || m.trim().is_empty() {
                return Err(format!(
                    "--marker {m:?}: it goes inside an HTML comment, so it must be one non-empty line without `--` or `>`"
                ));
            }
        }
        if self.title.contains('\n') || self.title.trim().is_empty() {
            return Err("--title must be one non-empty line".into());
        }
        if self.max_chars < MIN_LIMIT {
            return Err(format!(
                "--max-chars {} is too small: a comment needs at least {} bytes for its first lines",
                self.max_chars,
                thousands(MIN_LIMIT as u64)
            ));
        }
        Ok(())
    }
}

/// One table of the comment, under its heading.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// What the rows are, plural (`Regressions`, `seed003 · middle`); the heading adds
    /// their count.
    pub name: String,
    pub headers: Vec<String>,
    pub aligns: Vec<Align>,
    pub rows: Vec<Vec<String>>,
    /// Rows after `rows` that are never cut (a section's average).
    pub totals: Vec<Vec<String>>,
}

impl Section {
    /// A section whose first column is left-aligned (names) and the others right-aligned.
    pub fn new(name: impl Into<String>, headers: &[&str]) -> Section {
        let aligns = (0..headers.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Section {
            name: name.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            aligns,
            rows: Vec::new(),
            totals: Vec::new(),
        }
    }

    /// Sets the alignment of column `i`.
    pub fn align(mut self, i: usize, align: Align) -> Section {
        self.aligns[i] = align;
        self
    }

    /// The table with its first `keep` rows and the totals.
    fn table(&self, keep: usize) -> String {
        let mut table = Table::with_aligns(self.headers.clone(), self.aligns.clone());
        for row in self.rows.iter().take(keep).chain(&self.totals) {
            table.push(row.clone());
        }
        table.compact()
    }
}

/// A comment: its parts in the order they are read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comment {
    /// The first line: what moved.
    pub headline: String,
    /// Paragraphs under it: what was compared, the gate's verdict.
    pub paragraphs: Vec<String>,
    /// The tables shown, most important first: rows are cut from the last one first.
    pub shown: Vec<Section>,
    /// The line that unfolds the full comparison.
    pub details_summary: String,
    /// The tables of the full comparison, folded; cut before any table shown.
    pub details: Vec<Section>,
    /// Ends the comment as `<!-- marker -->`.
    pub marker: Option<String>,
}

impl Comment {
    /// The markdown, at most `limit` bytes long: when the whole comment is longer, the most
    /// rows that fit are kept, in order (the tables shown, then the folded ones), and the
    /// comment says how many of which table were cut. `limit` below [`MIN_LIMIT`] is an error.
    pub fn render(&self, limit: usize) -> Result<String, String> {
        if limit < MIN_LIMIT {
            return Err(format!(
                "a comment limit of {limit} bytes is too small (at least {MIN_LIMIT})"
            ));
        }
        let total = self.cuttable_rows();
        let whole = self.render_keeping(total, limit);
        if whole.len() <= limit {
            return Ok(whole);
        }
        let bare = self.render_keeping(0, limit);
        if bare.len() > limit {
            return Err(format!(
                "the comment takes {} bytes without any table row, more than the limit of {limit}",
                bare.len()
            ));
        }
        // Keeping a row never shortens the comment, so the most rows that fit is found by
        // bisection: `fits` fits, `over` does not.
        let (mut fits, mut over) = (0, total);
        while over - fits > 1 {
            let mid = (fits + over) / 2;
            if self.render_keeping(mid, limit).len() <= limit {
                fits = mid;
            } else {
                over = mid;
            }
        }
        Ok(self.render_keeping(fits, limit))
    }

    fn sections(&self) -> impl Iterator<Item = &Section> {
        self.shown.iter().chain(&self.details)
    }

    fn cuttable_rows(&self) -> usize {
        self.sections().map(|s| s.rows.len()).sum()
    }

    /// The comment with the first `keep` cuttable rows (counted through the shown tables,
    /// then the folded ones).
    fn render_keeping(&self, keep: usize, limit: usize) -> String {
        let mut left = keep;
        let mut kept = |s: &Section| {
            let n = s.rows.len().min(left);
            left -= n;
            n
        };
        let shown: Vec<usize> = self.shown.iter().map(&mut kept).collect();
        let details: Vec<usize> = self.details.iter().map(&mut kept).collect();

        let mut out = format!("{}\n", self.headline);
        for p in &self.paragraphs {
            out.push('\n');
            out.push_str(p);
            out.push('\n');
        }
        let cut: Vec<String> = self
            .shown
            .iter()
            .zip(&shown)
            .chain(self.details.iter().zip(&details))
            .filter(|(s, &k)| k < s.rows.len())
            .map(|(s, &k)| {
                format!(
                    "{} of {} rows of *{}*",
                    thousands((s.rows.len() - k) as u64),
                    thousands(s.rows.len() as u64),
                    s.name
                )
            })
            .collect();
        if !cut.is_empty() {
            out.push_str(&format!(
                "\n**Cut to stay under the comment size limit ({} bytes; GitHub's is {} characters):** {}. The files the command wrote have every row.\n",
                thousands(limit as u64),
                thousands(GITHUB_LIMIT as u64),
                cut.join(", ")
            ));
        }
        for (s, &k) in self.shown.iter().zip(&shown) {
            out.push_str(&format!("\n#### {} ({})\n\n", s.name, s.rows.len()));
            if k > 0 || !s.totals.is_empty() {
                out.push_str(&s.table(k));
            }
            if k < s.rows.len() {
                out.push_str(&format!(
                    "\n*{} more not shown (cut for size).*\n",
                    thousands((s.rows.len() - k) as u64)
                ));
            }
        }
        if !self.details.is_empty() {
            out.push_str(&format!(
                "\n<details><summary>{}</summary>\n",
                self.details_summary
            ));
            for (s, &k) in self.details.iter().zip(&details) {
                // A folded table cut whole is left out (the note at the top names it).
                if k == 0 {
                    continue;
                }
                out.push_str(&format!("\n#### {} ({})\n\n", s.name, s.rows.len()));
                out.push_str(&s.table(k));
                if k < s.rows.len() {
                    out.push_str(&format!(
                        "\n*{} more rows not shown (cut for size).*\n",
                        thousands((s.rows.len() - k) as u64)
                    ));
                }
            }
            out.push_str("\n</details>\n");
        }
        if let Some(marker) = &self.marker {
            out.push_str(&format!("\n<!-- {marker} -->\n"));
        }
        out
    }
}

/// The first line both comments open with: `### title: 1 regression, 2 improvements beyond
/// ±2%, 3 unchanged`, then `; 4 new, 1 removed` for each of `others` that is not zero.
pub fn headline(
    title: &str,
    regressions: usize,
    improvements: usize,
    noise_pct: f64,
    unchanged: usize,
    others: &[(usize, &str)],
) -> String {
    let mut headline = format!(
        "### {title}: {}, {} beyond ±{noise_pct}%, {} unchanged",
        count(regressions, "regression", "regressions"),
        count(improvements, "improvement", "improvements"),
        thousands(unchanged as u64)
    );
    let others: Vec<String> = others
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{} {what}", thousands(*n as u64)))
        .collect();
    if !others.is_empty() {
        headline.push_str(&format!("; {}", others.join(", ")));
    }
    headline
}

/// The gate's paragraph: passed, or failed with how many failures; `rules` says what it
/// checks.
pub fn verdict(failures: usize, rules: &str) -> String {
    match failures {
        0 => format!("**Gate: passed** ({rules})."),
        n => format!(
            "**Gate: failed**, {} ({rules}).",
            count(n, "failure", "failures")
        ),
    }
}

/// The `differential flame graph` cell: the graph's path as code, empty without one.
pub fn graph_cell(path: Option<&std::path::Path>) -> String {
    path.map(|p| format!("`{}`", p.display()))
        .unwrap_or_default()
}

/// `1 regression`, `2 regressions`: a count and its noun, singular or plural.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!(
        "{} {}",
        thousands(n as u64),
        if n == 1 { singular } else { plural }
    )
}

/// Text for a table cell, at most `max` characters (an error message can be long).
pub fn cell(text: &str, max: usize) -> String {
    let text = super::table::cell_text(text);
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(rows: usize) -> Comment {
        let mut regressions = Section::new("Regressions", &["scenario", "change %"]);
        regressions.rows = (0..3)
            .map(|i| vec![format!("r{i}"), "+5.00%".into()])
            .collect();
        let mut all = Section::new("All", &["scenario", "multiplier"]);
        all.rows = (0..rows)
            .map(|i| vec![format!("scenario-{i:05}"), "1.00".into()])
            .collect();
        all.totals = vec![vec!["average".into(), "1.00".into()]];
        Comment {
            headline: "### icbench: 3 regressions".into(),
            paragraphs: vec!["Charged instructions.".into()],
            shown: vec![regressions],
            details_summary: "Every scenario".into(),
            details: vec![all],
            marker: Some("icbench-comment".into()),
        }
    }

    #[test]
    fn a_comment_that_fits_is_whole() {
        let text = comment(2).render(GITHUB_LIMIT).unwrap();
        assert_eq!(
            text,
            "### icbench: 3 regressions\n\nCharged instructions.\n\n#### Regressions (3)\n\n| scenario | change % |\n| :-- | --: |\n| r0 | +5.00% |\n| r1 | +5.00% |\n| r2 | +5.00% |\n\n<details><summary>Every scenario</summary>\n\n#### All (2)\n\n| scenario | multiplier |\n| :-- | --: |\n| scenario-00000 | 1.00 |\n| scenario-00001 | 1.00 |\n| average | 1.00 |\n\n</details>\n\n<!-- icbench-comment -->\n"
        );
    }

    #[test]
    fn a_long_comment_is_cut_from_the_folded_table_and_says_so() {
        let c = comment(5_000);
        let whole = c.render(usize::MAX).unwrap();
        assert!(whole.len() > 100_000);
        let text = c.render(10_000).unwrap();
        assert!(text.len() <= 10_000, "{}", text.len());
        // Every regression is kept; the folded table keeps its first rows and its average.
        assert!(text.contains("| r2 | +5.00% |"));
        assert!(text.contains("| scenario-00000 | 1.00 |\n"));
        assert!(text.contains("| average | 1.00 |\n"));
        let kept = text.matches("| scenario-").count();
        assert!(kept > 100 && kept < 5_000, "{kept}");
        assert!(
            text.contains(&format!(
                "**Cut to stay under the comment size limit (10,000 bytes; GitHub's is 65,536 characters):** {} of 5,000 rows of *All*.",
                thousands((5_000 - kept) as u64)
            )),
            "{text}"
        );
        assert!(text.contains(&format!(
            "*{} more rows not shown (cut for size).*",
            thousands((5_000 - kept) as u64)
        )));
        // One more row would not have fitted.
        assert!(c.render_keeping(3 + kept + 1, 10_000).len() > 10_000);
        assert!(text.ends_with("<!-- icbench-comment -->\n"));
    }

    #[test]
    fn limits_too_small_are_refused() {
        assert!(comment(1).render(MIN_LIMIT - 1).is_err());
        let mut huge = comment(1);
        huge.headline = "x".repeat(3_000);
        assert!(huge
            .render(MIN_LIMIT)
            .unwrap_err()
            .contains("without any table row"));
        let bad = CommentArgs {
            marker: Some("a-->b".into()),
            ..CommentArgs::default()
        };
        assert!(bad.check().is_err());
        assert!(CommentArgs::default().check().is_ok());
    }

    #[test]
    fn cells_are_escaped_and_shortened() {
        assert_eq!(cell("a | b\nc", 100), "a \\| b c");
        assert_eq!(cell("abcdef", 4), "abc…");
    }
}
