//! The two plot shapes a suite can hand the report: lines on log-log axes (a cost against a
//! size, one line per series) and dots on a log axis (one row per label, one marker per
//! series). Hand-written SVG: self-contained (generic font, no scripts) and byte-for-byte
//! deterministic, so plots can be diffed between runs.

use std::fmt::Write;

use super::format::{decade_label, per_row, thousands};

const WIDTH: f64 = 780.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 50.0;
/// Room on the right for the legend.
const RIGHT: f64 = WIDTH - 200.0;
const BOTTOM: f64 = HEIGHT - 60.0;

/// The colours of the palette slots a suite gives its series (a store has one slot, so it
/// has the same colour in every plot of every suite); the suites' slot table is
/// `suites::grid::StoreColumn::color_slot`.
pub const SLOTS: [&str; 15] = [
    "#1f77b4", "#d62728", "#ff7f0e", "#9467bd", "#2ca02c", "#8c564b", "#17becf", "#393b79",
    "#e377c2", "#bcbd22", "#b8860b", "#1b9e77", "#c51b7d", "#5e3c99", "#252525",
];
/// Colours for series without a slot (or whose slot's colour another series of the plot
/// already has), in order; none of them is a slot's.
const OTHERS: [&str; 10] = [
    "#7f7f7f", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354",
    "#756bb1", "#636363",
];

/// One colour per series of a plot, given the series' slots in legend order: a slot's own
/// colour unless an earlier series of the plot has it, else the next colour of [`OTHERS`]
/// no series of the plot has. Two series share a colour only past 20 series.
fn colors(slots: &[Option<usize>]) -> Vec<&'static str> {
    let mut taken: Vec<&'static str> = Vec::new();
    let mut out = Vec::with_capacity(slots.len());
    for (i, slot) in slots.iter().enumerate() {
        let own = slot.and_then(|s| SLOTS.get(s).copied());
        let color = match own {
            Some(c) if !taken.contains(&c) => c,
            _ => {
                // Slot colours of later series stay free for them.
                let reserved: Vec<&str> = slots[i + 1..]
                    .iter()
                    .filter_map(|s| s.and_then(|s| SLOTS.get(s).copied()))
                    .collect();
                OTHERS
                    .iter()
                    .chain(SLOTS.iter())
                    .copied()
                    .find(|c| !taken.contains(c) && !reserved.contains(c))
                    .unwrap_or(OTHERS[i % OTHERS.len()])
            }
        };
        taken.push(color);
        out.push(color);
    }
    out
}

/// One line of a [`LinePlot`].
pub struct Series {
    pub label: String,
    /// Palette slot (an index into [`SLOTS`]); `None` takes a colour no other series of
    /// the plot has.
    pub color: Option<usize>,
    /// (size, cost per unit), ascending by size; only positive values can be plotted.
    pub points: Vec<(f64, f64)>,
}

/// A cost per unit against units per message, both on log axes, one line per series.
pub struct LinePlot {
    pub title: String,
    /// `row` in "store instructions per row", and with an `s` in "rows per message".
    pub unit: String,
    pub series: Vec<Series>,
    /// Other axes than units per message and instructions per unit; `None` for those.
    pub axes: Option<Axes>,
}

/// The axis titles of a [`LinePlot`] that does not plot cost per unit against units per
/// message; each point's tooltip reads `label, X x_unit: Y y_unit`.
pub struct Axes {
    /// `rows in the store`.
    pub x: String,
    /// `store instructions per message`.
    pub y: String,
    /// `rows`, after the x value in tooltips.
    pub x_unit: String,
    /// `instructions`, after the y value in tooltips.
    pub y_unit: String,
}

impl LinePlot {
    /// The SVG text; series without a positive point are left out.
    pub fn svg(&self) -> String {
        let unit = self.unit.as_str();
        let unit_plural = format!("{unit}s");
        // Only positive values have a place on a log axis.
        let series: Vec<(&Series, Vec<(f64, f64)>)> = self
            .series
            .iter()
            .map(|s| {
                let points = s.points.iter().copied().filter(|p| p.0 > 0.0 && p.1 > 0.0);
                (s, points.collect::<Vec<_>>())
            })
            .filter(|(_, points)| !points.is_empty())
            .collect();
        if series.is_empty() {
            return String::new();
        }
        let all = || series.iter().flat_map(|s| s.1.iter());
        let x = LogAxis::spanning(all().map(|p| p.0), LEFT, RIGHT);
        let y = LogAxis::spanning(all().map(|p| p.1), BOTTOM, TOP);

        let mut svg = String::new();
        open_plot(&mut svg, HEIGHT, &self.title, (LEFT, RIGHT));

        // Decade gridlines and labels.
        x_decades(&mut svg, &x, TOP, BOTTOM);
        for e in y.min_exp..=y.max_exp {
            let py = y.at_exp(e as f64);
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT:.1}" y1="{py:.1}" x2="{RIGHT:.1}" y2="{py:.1}" stroke="#ddd"/>"##
            );
            left_label(&mut svg, LEFT, py, &decade_label(e));
        }
        let _ = writeln!(
            svg,
            r##"<rect x="{LEFT:.1}" y="{TOP:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444"/>"##,
            RIGHT - LEFT,
            BOTTOM - TOP
        );
        let (x_title, y_title) = match &self.axes {
            Some(a) => (escape(&a.x), escape(&a.y)),
            None => (
                format!("{unit_plural} per message"),
                format!("store instructions per {unit}"),
            ),
        };
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x_title} (log scale)</text>"#,
            (LEFT + RIGHT) / 2.0,
            HEIGHT - 18.0
        );
        let mid_y = (TOP + BOTTOM) / 2.0;
        let _ = writeln!(
            svg,
            r#"<text x="18" y="{mid_y:.1}" text-anchor="middle" transform="rotate(-90 18 {mid_y:.1})">{y_title} (log scale)</text>"#
        );

        // Colours by every series' place, drawn or not: a series keeps its colour in a plot
        // where an earlier one has no point (a store without pre_upgrade).
        let every = colors(&self.series.iter().map(|s| s.color).collect::<Vec<_>>());
        let palette: Vec<&str> = self
            .series
            .iter()
            .zip(every)
            .filter(|(s, _)| series.iter().any(|(kept, _)| std::ptr::eq(*kept, *s)))
            .map(|(_, c)| c)
            .collect();
        for (i, (s, points)) in series.iter().enumerate() {
            let color = palette[i];
            let label = escape(&s.label);
            let coords: Vec<String> = points
                .iter()
                .map(|&(bx, by)| format!("{:.1},{:.1}", x.at(bx), y.at(by)))
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
                coords.join(" ")
            );
            for &(bx, by) in points {
                let tip = match &self.axes {
                    Some(a) => format!(
                        "{} {}: {} {}",
                        thousands(bx as u64),
                        escape(&a.x_unit),
                        per_row(by),
                        escape(&a.y_unit)
                    ),
                    None => format!(
                        "{} {}: {} instructions/{unit}",
                        thousands(bx as u64),
                        if bx == 1.0 { unit } else { &unit_plural },
                        per_row(by)
                    ),
                };
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{label}, {tip}</title></circle>"#,
                    x.at(bx),
                    y.at(by),
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
            legend_entry(&mut svg, (lx + 12.0, ly), 3.5, lx + 32.0, color, &label);
        }
        svg.push_str("</svg>\n");
        svg
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

/// One marker of a [`DotPlot`].
pub struct DotPoint {
    /// The row it sits on.
    pub row: String,
    /// The series (legend entry) it belongs to.
    pub series: String,
    /// Palette slot of the series (an index into [`SLOTS`]); `None` takes a colour no other
    /// series of the plot has.
    pub color: Option<usize>,
    pub value: f64,
}

/// Values by row on a log axis, one marker per series: for benchmarks without a size axis.
pub struct DotPlot {
    pub title: String,
    /// The x axis' label.
    pub axis: String,
    /// The unit in each marker's tooltip: `instructions/op`.
    pub unit: String,
    /// Rows and series appear in first-seen order; only positive values are plotted.
    pub points: Vec<DotPoint>,
}

impl DotPlot {
    /// The SVG text; empty when no value is positive.
    pub fn svg(&self) -> String {
        dot_plot(&self.title, &self.axis, &self.unit, &self.points)
    }
}

/// The start of a plot `height` high: the `<svg>` element, a white background and the
/// title centred over the plot area between `left` and `right`.
fn open_plot(svg: &mut String, height: f64, title: &str, (left, right): (f64, f64)) {
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
}

/// A gridline from `top` to `bottom` at each decade of `x`, labelled under the plot area.
fn x_decades(svg: &mut String, x: &LogAxis, top: f64, bottom: f64) {
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
}

/// A label ending just left of the plot area (whose left edge is `left`), centred on `y`:
/// a y axis' decade or a row's name.
fn left_label(svg: &mut String, left: f64, y: f64, text: &str) {
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{text}</text>"#,
        left - 8.0,
        y + 4.0
    );
}

/// A legend entry's marker, `radius` wide around `(x, y)`, and its label from `text_x` on.
fn legend_entry(
    svg: &mut String,
    (x, y): (f64, f64),
    radius: f64,
    text_x: f64,
    color: &str,
    label: &str,
) {
    let _ = writeln!(
        svg,
        r#"<circle cx="{x:.1}" cy="{y:.1}" r="{radius}" fill="{color}"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{text_x:.1}" y="{:.1}">{label}</text>"#,
        y + 4.0
    );
}

/// One row per label (in first-seen order), one marker per store, x on a log axis.
fn dot_plot(title: &str, axis: &str, unit: &str, points: &[DotPoint]) -> String {
    let points: Vec<&DotPoint> = points.iter().filter(|p| p.value > 0.0).collect();
    if points.is_empty() {
        return String::new();
    }
    let mut rows: Vec<&str> = Vec::new();
    let mut columns: Vec<(&str, Option<usize>)> = Vec::new();
    for p in &points {
        if !rows.contains(&p.row.as_str()) {
            rows.push(&p.row);
        }
        if !columns.iter().any(|c| c.0 == p.series) {
            columns.push((&p.series, p.color));
        }
    }
    // Room for the longest row label.
    let longest = rows.iter().map(|r| r.chars().count()).max().unwrap_or(0) as f64;
    let (left, right, top) = ((12.0 + 7.0 * longest).max(120.0), WIDTH - 230.0, 50.0);
    let row_height = 26.0;
    let bottom = top + row_height * rows.len() as f64;
    let height = bottom + 60.0;
    let x = LogAxis::spanning(points.iter().map(|p| p.value), left, right);
    let mut svg = String::new();
    open_plot(&mut svg, height, title, (left, right));
    x_decades(&mut svg, &x, top, bottom);
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (left + right) / 2.0,
        height - 18.0,
        escape(axis)
    );
    for (i, row) in rows.iter().enumerate() {
        left_label(
            &mut svg,
            left,
            top + row_height * (i as f64 + 0.5),
            &escape(row),
        );
    }
    let palette = colors(&columns.iter().map(|c| c.1).collect::<Vec<_>>());
    for (si, &(series, _)) in columns.iter().enumerate() {
        let color = palette[si];
        let label = escape(series);
        for (i, row) in rows.iter().enumerate() {
            let Some(p) = points.iter().find(|p| p.row == *row && p.series == series) else {
                continue;
            };
            // Stores side by side within the row, so equal values stay visible.
            let y = top + row_height * i as f64 + 6.0 + 14.0 * si as f64 / columns.len() as f64;
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{y:.1}" r="4" fill="{color}"><title>{label}, {}: {} {unit}</title></circle>"#,
                x.at(p.value),
                escape(row),
                per_row(p.value)
            );
        }
        let ly = top + 10.0 + 20.0 * si as f64;
        let lx = right + 16.0;
        legend_entry(&mut svg, (lx + 6.0, ly), 4.0, lx + 16.0, color, &label);
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444"/>"##,
        right - left,
        bottom - top
    );
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_colour_is_a_slot_of_the_palette() {
        let slots = crate::stores::tests::colour_slots();
        assert!(!slots.is_empty());
        assert!(slots.iter().all(|&s| s < SLOTS.len()), "{slots:?}");
    }

    #[test]
    fn axis_covers_whole_decades() {
        let axis = LogAxis::spanning([1.0, 10_000.0].into_iter(), 0.0, 400.0);
        assert_eq!((axis.min_exp, axis.max_exp), (0, 4));
        assert_eq!(axis.at(100.0), 200.0);
        let single = LogAxis::spanning([5_000.0].into_iter(), 0.0, 1.0);
        assert_eq!((single.min_exp, single.max_exp), (3, 4));
    }

    #[test]
    fn lines_skip_series_without_positive_points() {
        let plot = |points: Vec<(f64, f64)>| LinePlot {
            title: "Insert cost per row, middle, 1,000 rows".into(),
            unit: "row".into(),
            axes: None,
            series: vec![
                Series {
                    label: "A & B".into(),
                    color: Some(0),
                    points,
                },
                Series {
                    label: "empty".into(),
                    color: None,
                    points: vec![],
                },
            ],
        };
        assert_eq!(plot(vec![]).svg(), "");
        let svg = plot(vec![(1.0, 100.0), (10.0, 50.0)]).svg();
        assert!(svg.contains(r##"stroke="#1f77b4""##), "{svg}");
        assert!(
            svg.contains("A &amp; B, 10 rows: 50.0 instructions/row"),
            "{svg}"
        );
        assert!(!svg.contains("empty"), "{svg}");
    }

    #[test]
    fn dots_keep_first_seen_rows_and_series() {
        let dot = |row: &str, series: &str, value: f64| DotPoint {
            row: row.into(),
            series: series.into(),
            color: None,
            value,
        };
        let plot = DotPlot {
            title: "t".into(),
            axis: "x axis".into(),
            unit: "u".into(),
            points: vec![
                dot("b", "s1", 10.0),
                dot("a", "s2", 100.0),
                dot("c", "s1", 0.0),
            ],
        };
        let svg = plot.svg();
        let (b, a) = (
            svg.find(">b</text>").unwrap(),
            svg.find(">a</text>").unwrap(),
        );
        assert!(b < a, "{svg}");
        assert!(
            !svg.contains(">c</text>"),
            "zero values are not plotted: {svg}"
        );
        // Without a slot, the first colours that are no slot's, in order.
        assert!(svg.contains("#7f7f7f") && svg.contains("#637939"), "{svg}");
    }

    /// The legend entries' colours of a plot's SVG, in legend order (LinePlot: the legend's
    /// line segments; DotPlot: the legend's circles, the ones without a tooltip).
    fn legend_colors(svg: &str) -> Vec<String> {
        let segment = |l: &str| l.starts_with("<line") && l.contains("stroke-width=\"2\"");
        let lines_plot = svg.lines().any(segment);
        svg.lines()
            .filter(|l| {
                (lines_plot && segment(l))
                    || (!lines_plot && l.starts_with("<circle") && l.ends_with("\"/>"))
            })
            .map(|l| {
                let key = if l.starts_with("<line") {
                    "stroke=\""
                } else {
                    "fill=\""
                };
                let at = l.find(key).unwrap() + key.len();
                l[at..at + 7].to_string()
            })
            .collect()
    }

    #[test]
    fn a_slot_keeps_its_colour_and_no_two_series_share_one() {
        // Every slot, a slot given twice, and series without one.
        let slots: Vec<Option<usize>> = (0..SLOTS.len())
            .map(Some)
            .chain([Some(3), None, None, Some(99)])
            .collect();
        let got = colors(&slots);
        for (i, c) in SLOTS.iter().enumerate() {
            assert_eq!(got[i], *c, "slot {i}");
        }
        let mut unique = got.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), got.len(), "{got:?}");
        // A series without a slot never takes a colour a later series' slot owns.
        assert_eq!(colors(&[None, Some(8)]), ["#7f7f7f", "#e377c2"]);
        assert_eq!(colors(&[Some(1), Some(1)]), ["#d62728", "#7f7f7f"]);

        let plot = LinePlot {
            title: "t".into(),
            unit: "row".into(),
            axes: None,
            series: slots
                .iter()
                .enumerate()
                .map(|(i, &color)| Series {
                    label: format!("s{i}"),
                    color,
                    points: vec![(1.0, 1.0 + i as f64)],
                })
                .collect(),
        };
        let legend = legend_colors(&plot.svg());
        assert_eq!(
            legend,
            got.iter().map(|c| c.to_string()).collect::<Vec<_>>()
        );
    }
}
