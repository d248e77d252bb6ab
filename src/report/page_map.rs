//! A message's page map as SVG: for the heap and for stable memory, where the 64 KiB Wasm
//! pages it touched lie in the memory (an overview along the whole memory, then the touched
//! pages one cell each in address order), accessed or written by colour, and in each cell's
//! tooltip the function that first accessed and first wrote it. Hand-written and
//! deterministic, as the other plots.

use std::fmt::Write;

use super::format::thousands;
use crate::engine::page_map::{MemoryPages, PageMap, TouchedPage};

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 20.0;
const RIGHT: f64 = WIDTH - 20.0;
/// A touched page's cell in the detail strip, and the gap that stands for untouched pages
/// between two touched ones.
const CELL: f64 = 30.0;
const GAP: f64 = 10.0;
const CELL_HEIGHT: f64 = 26.0;
/// Accessed only, and written (the tracker charges a written page twice).
const ACCESSED: &str = "#9ecae1";
const WRITTEN: &str = "#d62728";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Rows of the detail strip: the cells wrap at the right edge.
fn detail_rows(memory: &MemoryPages) -> usize {
    let mut rows = 1;
    let mut x = LEFT;
    let mut last: Option<u64> = None;
    for p in &memory.pages {
        let gap = last.is_some_and(|l| p.page > l + 1);
        let w = CELL + if gap { GAP } else { 0.0 };
        if x + w > RIGHT {
            rows += 1;
            x = LEFT;
        }
        x += w;
        last = Some(p.page);
    }
    rows
}

/// The page map of one message, titled `title` (the scenario), its pages priced at
/// `page_charge`, the memory tracker's charge per page on the run's host
/// ([`tracker_page_charge`](super::tracker_page_charge)).
pub fn svg(title: &str, map: &PageMap, page_charge: u64) -> String {
    let sections = [("heap", &map.heap), ("stable memory", &map.stable)];
    let section_height =
        |m: &MemoryPages| 40.0 + 24.0 + detail_rows(m) as f64 * (CELL_HEIGHT + 6.0) + 16.0;
    let height = 70.0 + sections.iter().map(|(_, m)| section_height(m)).sum::<f64>() + 30.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"{WIDTH}\" height=\"{height}\" fill=\"white\"/>"
    );
    let counted: usize = sections
        .iter()
        .map(|(_, m)| m.accessed() + m.written())
        .sum();
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"24\" font-size=\"16\">{}</text>",
        escape(&format!("Page map: {title}"))
    );
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"44\">{}</text>",
        escape(&format!(
            "{} Wasm pages accessed plus written: {} instructions under the memory tracker ({} each; a query pays for the access only). Hover a page for the function that touched it first.",
            thousands(counted as u64),
            thousands(counted as u64 * page_charge),
            thousands(page_charge)
        ))
    );
    let mut legend_x = LEFT;
    for (color, label) in [(ACCESSED, "accessed"), (WRITTEN, "written")] {
        let _ = writeln!(
            out,
            "<rect x=\"{legend_x}\" y=\"54\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{}\" y=\"65\">{label}</text>",
            legend_x + 16.0
        );
        legend_x += 90.0;
    }
    let mut y = 80.0;
    for (name, memory) in sections {
        section(&mut out, name, memory, y);
        y += section_height(memory);
    }
    out.push_str("</svg>\n");
    out
}

fn color_of(p: &TouchedPage) -> &'static str {
    if p.written_by.is_some() {
        WRITTEN
    } else {
        ACCESSED
    }
}

fn page_title(name: &str, p: &TouchedPage) -> String {
    let start = p.page * 65_536;
    let mut t = format!(
        "{name} page {} (bytes {}..{}): first accessed by {}",
        thousands(p.page),
        thousands(start),
        thousands(start + 65_536),
        p.accessed_by
    );
    if let Some(w) = &p.written_by {
        let _ = write!(t, "; first written by {w}");
    }
    t
}

fn section(out: &mut String, name: &str, memory: &MemoryPages, top: f64) {
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"{}\" font-size=\"14\">{}</text>",
        top + 14.0,
        escape(&format!(
            "{name}: {} of {} Wasm pages accessed, {} written",
            thousands(memory.accessed() as u64),
            thousands(memory.size_pages),
            thousands(memory.written() as u64)
        ))
    );
    // The overview: the whole memory along the width, a mark per touched page.
    let axis_y = top + 24.0;
    let span = RIGHT - LEFT;
    let size = memory.size_pages.max(1) as f64;
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{axis_y}\" width=\"{span}\" height=\"12\" fill=\"#f0f0f0\" stroke=\"#bbbbbb\"/>"
    );
    for p in &memory.pages {
        let x = LEFT + p.page as f64 / size * span;
        let color = color_of(p);
        let _ = writeln!(
            out,
            "<rect x=\"{x:.1}\" y=\"{axis_y}\" width=\"{:.1}\" height=\"12\" fill=\"{color}\"><title>{}</title></rect>",
            (span / size).max(2.0),
            escape(&page_title(name, p))
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"{}\" fill=\"#555555\">0</text><text x=\"{RIGHT}\" y=\"{}\" fill=\"#555555\" text-anchor=\"end\">{} bytes</text>",
        axis_y + 26.0,
        axis_y + 26.0,
        thousands(memory.size_pages * 65_536)
    );
    // The detail: every touched page a cell, in address order; a gap where pages between
    // were not touched.
    let mut x = LEFT;
    let mut y = axis_y + 34.0;
    let mut last: Option<u64> = None;
    for p in &memory.pages {
        let gap = last.is_some_and(|l| p.page > l + 1);
        let w = CELL + if gap { GAP } else { 0.0 };
        if x + w > RIGHT {
            x = LEFT;
            y += CELL_HEIGHT + 6.0;
        } else if gap {
            x += GAP;
        }
        let color = color_of(p);
        let _ = writeln!(
            out,
            "<g><title>{}</title><rect x=\"{x:.1}\" y=\"{y}\" width=\"{}\" height=\"{CELL_HEIGHT}\" fill=\"{color}\" stroke=\"white\"/><text x=\"{:.1}\" y=\"{}\" font-size=\"9\" text-anchor=\"middle\">{}</text></g>",
            escape(&page_title(name, p)),
            CELL - 2.0,
            x + (CELL - 2.0) / 2.0,
            y + CELL_HEIGHT / 2.0 + 3.0,
            p.page
        );
        x += CELL;
        last = Some(p.page);
    }
    if memory.pages.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{LEFT}\" y=\"{}\" fill=\"#555555\">no page touched</text>",
            y + 16.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(page: u64, by: &str, written: Option<&str>) -> TouchedPage {
        TouchedPage {
            page,
            accessed_by: by.into(),
            written_by: written.map(String::from),
        }
    }

    #[test]
    fn each_touched_page_is_a_cell_with_who_touched_it_first() {
        let map = PageMap {
            heap: MemoryPages {
                size_pages: 100,
                pages: vec![page(3, "dlmalloc", Some("memcpy")), page(4, "main", None)],
            },
            stable: MemoryPages {
                size_pages: 10,
                pages: vec![page(9, "ic0.stable64_read", None)],
            },
        };
        let svg = svg("sqlite/middle/insert/1", &map, 80_000);
        assert!(svg.starts_with("<svg "), "{svg}");
        assert!(svg.contains(
            "<title>heap page 3 (bytes 196,608..262,144): first accessed by dlmalloc; first written by memcpy</title>"
        ));
        assert!(svg.contains("<title>stable memory page 9 (bytes 589,824..655,360): first accessed by ic0.stable64_read</title>"));
        assert!(svg.contains("heap: 2 of 100 Wasm pages accessed, 1 written"));
        // 2 + 1 heap, 1 stable: 4 charges of 80,000 (20,000 each on a Mac).
        assert!(svg.contains(
            "4 Wasm pages accessed plus written: 320,000 instructions under the memory tracker (80,000 each;"
        ));
        assert!(super::svg("sqlite/middle/insert/1", &map, 20_000).contains(
            "4 Wasm pages accessed plus written: 80,000 instructions under the memory tracker (20,000 each;"
        ));
        // A written page is red, an accessed one blue, in the strip and the overview.
        assert_eq!(svg.matches(&format!("fill=\"{WRITTEN}\"")).count(), 2 + 1);
        assert_eq!(
            svg.matches(&format!("fill=\"{ACCESSED}\"")).count(),
            2 * 2 + 1
        );
        // The same map, the same bytes.
        assert_eq!(svg, super::svg("sqlite/middle/insert/1", &map, 80_000));
    }
}
