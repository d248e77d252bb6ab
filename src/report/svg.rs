//! plot-<position>.svg: insert cost per row against rows per message, log-log, one line per
//! store; for a position without inserts (the lookups suite), lookup cost per key against
//! keys per message. Hand-written SVG: self-contained (generic font, no scripts) and byte-for-byte
//! deterministic, so plots can be diffed between runs.

use std::fmt::Write;

use super::format::{decade_label, per_row, thousands};
use super::{Grid, Report, StoreColumn};
use crate::scenario::Status;

const WIDTH: f64 = 780.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 50.0;
/// Room on the right for the legend.
const RIGHT: f64 = WIDTH - 200.0;
const BOTTOM: f64 = HEIGHT - 60.0;

/// Colors by store rank (StableBTreeMap, DELETE, TRUNCATE, PERSIST, MEMORY, WAL, OFF), so a
/// store has the same color in every plot; unknown stores share the tail.
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#ff7f0e", "#9467bd", "#2ca02c", "#8c564b", "#17becf", "#7f7f7f",
    "#e377c2", "#bcbd22",
];

struct Series {
    column: StoreColumn,
    /// (rows per message, store instructions per row), ascending by rows.
    points: Vec<(f64, f64)>,
}

/// The insert plot for one position; `None` when it has no ok insert with a positive cost.
/// A position with no insert at all plots its point lookups instead, if it has at least two
/// batch sizes of them (one size is a dot, not a curve).
pub fn svg_plot(report: &Report, position: &str) -> Option<String> {
    let mut grid = Grid::new(report, position, &["insert"]);
    let mut what = ("Insert cost per row", "rows", "row");
    if grid.is_empty() {
        grid = Grid::new(report, position, &["point_lookup"]);
        if grid.rows.len() < 2 {
            return None;
        }
        what = ("Point lookup cost per key", "keys", "key");
    }
    let (title_start, unit_plural, unit) = what;
    let series: Vec<Series> = grid
        .columns
        .iter()
        .map(|column| {
            let points = grid
                .rows
                .iter()
                .filter_map(|row| grid.cell(row, column))
                .filter(|r| {
                    r.status == Status::Ok && r.batch > 0 && r.store_instructions_per_row > 0.0
                })
                .map(|r| (r.batch as f64, r.store_instructions_per_row))
                .collect();
            Series {
                column: column.clone(),
                points,
            }
        })
        .filter(|s: &Series| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return None;
    }
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x = LogAxis::spanning(all().map(|p| p.0), LEFT, RIGHT);
    let y = LogAxis::spanning(all().map(|p| p.1), BOTTOM, TOP);

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{HEIGHT:.0}" viewBox="0 0 {WIDTH:.0} {HEIGHT:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let title = format!(
        "{title_start}, {position}, {} rows",
        thousands(report.rows_before)
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="28" text-anchor="middle" font-size="16">{}</text>"#,
        (LEFT + RIGHT) / 2.0,
        escape(&title)
    );

    // Decade gridlines and labels.
    for e in x.min_exp..=x.max_exp {
        let px = x.at_exp(e as f64);
        let _ = writeln!(
            svg,
            r##"<line x1="{px:.1}" y1="{TOP:.1}" x2="{px:.1}" y2="{BOTTOM:.1}" stroke="#ddd"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            BOTTOM + 18.0,
            decade_label(e)
        );
    }
    for e in y.min_exp..=y.max_exp {
        let py = y.at_exp(e as f64);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT:.1}" y1="{py:.1}" x2="{RIGHT:.1}" y2="{py:.1}" stroke="#ddd"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            py + 4.0,
            decade_label(e)
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444"/>"##,
        RIGHT - LEFT,
        BOTTOM - TOP
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{unit_plural} per message (log scale)</text>"#,
        (LEFT + RIGHT) / 2.0,
        HEIGHT - 18.0
    );
    let mid_y = (TOP + BOTTOM) / 2.0;
    let _ = writeln!(
        svg,
        r#"<text x="18" y="{mid_y:.1}" text-anchor="middle" transform="rotate(-90 18 {mid_y:.1})">store instructions per {unit} (log scale)</text>"#
    );

    for (i, s) in series.iter().enumerate() {
        let color = color(&s.column, i);
        let label = escape(&s.column.label());
        let coords: Vec<String> = s
            .points
            .iter()
            .map(|&(bx, by)| format!("{:.1},{:.1}", x.at(bx), y.at(by)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            coords.join(" ")
        );
        for &(bx, by) in &s.points {
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{label}, {} {}: {} instructions/{unit}</title></circle>"#,
                x.at(bx),
                y.at(by),
                thousands(bx as u64),
                if bx == 1.0 { unit } else { unit_plural },
                per_row(by)
            );
        }
        // Legend entry: a line segment with a marker, then the store name.
        let ly = TOP + 10.0 + 20.0 * i as f64;
        let lx = RIGHT + 16.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"/>"#,
            lx + 24.0
        );
        let _ = writeln!(
            svg,
            r#"<circle cx="{:.1}" cy="{ly:.1}" r="3.5" fill="{color}"/>"#,
            lx + 12.0
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}">{label}</text>"#,
            lx + 32.0,
            ly + 4.0
        );
    }
    svg.push_str("</svg>\n");
    Some(svg)
}

fn color(column: &StoreColumn, series_index: usize) -> &'static str {
    let known = PALETTE.len() - 3;
    let i = column.color_index();
    if i < known {
        PALETTE[i]
    } else {
        PALETTE[known + series_index % 3]
    }
}

/// A log10 axis over whole decades, mapped onto pixels `from`..`to`.
struct LogAxis {
    min_exp: i32,
    max_exp: i32,
    from: f64,
    to: f64,
}

impl LogAxis {
    /// The smallest whole-decade range holding every value (at least one decade wide).
    fn spanning(values: impl Iterator<Item = f64>, from: f64, to: f64) -> LogAxis {
        let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let min_exp = lo.log10().floor() as i32;
        let max_exp = (hi.log10().ceil() as i32).max(min_exp + 1);
        LogAxis {
            min_exp,
            max_exp,
            from,
            to,
        }
    }

    fn at_exp(&self, exp: f64) -> f64 {
        let t = (exp - self.min_exp as f64) / (self.max_exp - self.min_exp) as f64;
        self.from + t * (self.to - self.from)
    }

    fn at(&self, value: f64) -> f64 {
        self.at_exp(value.log10())
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// plot-dbbench.svg: the dbbench suite's store instructions per op, one row per benchmark
/// and one marker per store, on a log axis (db_bench's benchmarks have no batch axis).
pub fn dbbench_plot(report: &Report) -> Option<String> {
    let points = report
        .results
        .iter()
        .filter(|r| r.position == "db_bench" && r.status == Status::Ok)
        .map(|r| {
            (
                r.operation.clone(),
                StoreColumn::of(r),
                r.store_instructions_per_row,
            )
        })
        .collect();
    dot_plot(
        "db_bench: store instructions per op",
        "store instructions per op (log scale)",
        "instructions/op",
        points,
    )
}

/// plot-sysbench.svg: store instructions per event by workload, one marker per store.
pub fn sysbench_plot(report: &Report) -> Option<String> {
    if report.suite != "sysbench" {
        return None;
    }
    // Rows in seed 004's workload order, whichever store ran first.
    let rank = |name: &str| {
        crate::sysbench::WORKLOADS
            .iter()
            .position(|w| w.name == name)
    };
    let mut points: Vec<_> = report
        .results
        .iter()
        .filter(|r| r.status == Status::Ok)
        .map(|r| {
            (
                r.operation.clone(),
                StoreColumn::of(r),
                r.store_instructions_per_row,
            )
        })
        .collect();
    points.sort_by_key(|p| rank(&p.0));
    dot_plot(
        "sysbench: store instructions per event",
        "store instructions per event (log scale)",
        "instructions/event",
        points,
    )
}

/// plot-keys.svg: the keys suite's instructions per insert and per lookup, one row per
/// key type and operation, one marker per store.
pub fn keys_plot(report: &Report) -> Option<String> {
    if report.suite != "keys" {
        return None;
    }
    let points = report
        .results
        .iter()
        .filter(|r| {
            r.status == Status::Ok && matches!(r.operation.as_str(), "insert" | "point_lookup")
        })
        .map(|r| {
            let what = if r.operation == "insert" {
                "insert"
            } else {
                "lookup"
            };
            (
                format!("{} {what}", r.position),
                StoreColumn::of(r),
                r.store_instructions_per_row,
            )
        })
        .collect();
    dot_plot(
        "Key types: store instructions per row",
        "store instructions per insert / lookup (log scale)",
        "instructions/row",
        points,
    )
}

/// One row per label (in first-seen order), one marker per store, x on a log axis.
fn dot_plot(
    title: &str,
    axis: &str,
    unit: &str,
    points: Vec<(String, StoreColumn, f64)>,
) -> Option<String> {
    let points: Vec<_> = points.into_iter().filter(|p| p.2 > 0.0).collect();
    if points.is_empty() {
        return None;
    }
    let mut rows: Vec<&str> = Vec::new();
    let mut columns: Vec<&StoreColumn> = Vec::new();
    for (row, column, _) in &points {
        if !rows.contains(&row.as_str()) {
            rows.push(row);
        }
        if !columns.contains(&column) {
            columns.push(column);
        }
    }
    // Room for the longest row label (sysbench's workload names are up to 21 characters).
    let longest = rows.iter().map(|r| r.chars().count()).max().unwrap_or(0) as f64;
    let (left, right, top) = ((12.0 + 7.0 * longest).max(120.0), WIDTH - 230.0, 50.0);
    let row_height = 26.0;
    let bottom = top + row_height * rows.len() as f64;
    let height = bottom + 60.0;
    let x = LogAxis::spanning(points.iter().map(|p| p.2), left, right);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="28" text-anchor="middle" font-size="16">{}</text>"#,
        (left + right) / 2.0,
        escape(title)
    );
    for e in x.min_exp..=x.max_exp {
        let px = x.at_exp(e as f64);
        let _ = writeln!(
            svg,
            r##"<line x1="{px:.1}" y1="{top:.1}" x2="{px:.1}" y2="{bottom:.1}" stroke="#ddd"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            bottom + 18.0,
            decade_label(e)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (left + right) / 2.0,
        height - 18.0,
        escape(axis)
    );
    for (i, row) in rows.iter().enumerate() {
        let y = top + row_height * (i as f64 + 0.5);
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 8.0,
            y + 4.0,
            escape(row)
        );
    }
    for (si, column) in columns.iter().enumerate() {
        let color = color(column, si);
        let label = escape(&dbbench_label(column));
        for (i, row) in rows.iter().enumerate() {
            let Some(p) = points.iter().find(|p| p.0 == *row && p.1 == **column) else {
                continue;
            };
            // Stores side by side within the row, so equal values stay visible.
            let y = top + row_height * i as f64 + 6.0 + 14.0 * si as f64 / columns.len() as f64;
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{y:.1}" r="4" fill="{color}"><title>{label}, {}: {} {unit}</title></circle>"#,
                x.at(p.2),
                escape(row),
                per_row(p.2)
            );
        }
        let ly = top + 10.0 + 20.0 * si as f64;
        let lx = right + 16.0;
        let _ = writeln!(
            svg,
            r#"<circle cx="{:.1}" cy="{ly:.1}" r="4" fill="{color}"/>"#,
            lx + 6.0
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}">{label}</text>"#,
            lx + 16.0,
            ly + 4.0
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444"/>"##,
        right - left,
        bottom - top
    );
    svg.push_str("</svg>\n");
    Some(svg)
}

/// Store labels of the dbbench and keys suites, whose SQLite columns are schemas.
pub(crate) fn dbbench_label(c: &StoreColumn) -> String {
    match c.store.as_str() {
        "btree" => "StableBTreeMap".into(),
        "sqlite" => format!("SQLite {} rowid", c.journal_mode),
        "sqlite_without_rowid" => format!("SQLite {} WITHOUT ROWID", c.journal_mode),
        "sqlite_secondary" => format!("SQLite {} secondary index", c.journal_mode),
        _ => c.label(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{report, result};
    use super::*;

    #[test]
    fn axis_covers_whole_decades() {
        let axis = LogAxis::spanning([1.0, 10_000.0].into_iter(), 0.0, 400.0);
        assert_eq!((axis.min_exp, axis.max_exp), (0, 4));
        assert_eq!(axis.at(100.0), 200.0);
        let single = LogAxis::spanning([5_000.0].into_iter(), 0.0, 1.0);
        assert_eq!((single.min_exp, single.max_exp), (3, 4));
    }

    #[test]
    fn no_plot_without_ok_inserts() {
        let mut r = result("btree", "", "middle", "insert", 1, 100);
        r.status = Status::Failed("trap".into());
        let report = report(vec![
            r,
            result("btree", "", "middle", "point_lookup", 1, 100),
        ]);
        assert_eq!(svg_plot(&report, "middle"), None);
        assert_eq!(svg_plot(&report, "end"), None);
    }
}
