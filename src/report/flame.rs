//! Instruction profiles as folded stacks: one line per call stack, root first, with the
//! instructions spent in the stack's last frame (`canister_update f;g;ic0.msg_reply 42`), the
//! format inferno, flamegraph.pl and speedscope read. From them: an interactive flame graph,
//! a differential flame graph between two profiles, and a table of the top functions.
//!
//! Plain data in, text out: the engine's profiler hands over `(stack, count)` pairs and the
//! report needs no engine type.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::format::thousands;
use super::table::{cell_text, Table};

/// What a frame name made only of whitespace (or nothing) is written as, so that the line
/// keeps one frame per position and reads back the same.
const UNNAMED: &str = "[unnamed]";

/// A profile: distinct call stacks (root first) with the instructions each stack's last
/// frame spent itself. Sorted by stack; no zero counts; every frame name sanitised (see
/// [`sanitise`]), so that [`Folded::to_text`] and [`Folded::parse`] round trip exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Folded {
    stacks: Vec<(Vec<String>, u64)>,
    total: u64,
}

impl Folded {
    /// Collects `(stack, self count)` pairs: frame names sanitised, equal stacks summed,
    /// zero counts dropped, sorted by stack. Counts sum with saturation (a message's charged
    /// instructions are a u64, so a real profile never reaches it).
    pub fn new(stacks: impl IntoIterator<Item = (Vec<String>, u64)>) -> Folded {
        let mut merged: BTreeMap<Vec<String>, u64> = BTreeMap::new();
        for (stack, count) in stacks {
            if count == 0 {
                continue;
            }
            let mut stack: Vec<String> = stack.iter().map(|f| sanitise(f)).collect();
            if stack.is_empty() {
                stack.push(UNNAMED.to_string());
            }
            let slot = merged.entry(stack).or_default();
            *slot = slot.saturating_add(count);
        }
        let total = merged.values().fold(0u64, |t, &c| t.saturating_add(c));
        Folded {
            stacks: merged.into_iter().collect(),
            total,
        }
    }

    /// The stacks, sorted, each with its self count.
    pub fn stacks(&self) -> &[(Vec<String>, u64)] {
        &self.stacks
    }

    /// The sum of the self counts: the instructions the profile explains.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The folded-stack text: `frame;frame;frame COUNT` per line, sorted by stack.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (stack, count) in &self.stacks {
            out.push_str(&stack.join(";"));
            out.push(' ');
            out.push_str(&count.to_string());
            out.push('\n');
        }
        out
    }

    /// Reads folded-stack text. Blank lines and `# ` comment lines (as inferno skips them)
    /// are ignored; equal stacks are summed. An error names the line (1-based) and what is
    /// wrong with it; a text with no stack at all is an error too (no profile is empty).
    pub fn parse(text: &str) -> Result<Folded, String> {
        let mut stacks = Vec::new();
        let mut total = 0u64;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("# ") {
                continue;
            }
            let (stack, count) = parse_line(line).map_err(|e| format!("line {}: {e}", i + 1))?;
            total = total.checked_add(count).ok_or_else(|| {
                format!(
                    "line {}: the counts add up past {} (the largest count)",
                    i + 1,
                    u64::MAX
                )
            })?;
            stacks.push((stack, count));
        }
        let folded = Folded::new(stacks);
        if folded.stacks.is_empty() {
            return Err("no stack in it: a profile has at least one `frame;frame COUNT` line with a count above zero".into());
        }
        Ok(folded)
    }

    /// Reads a folded file; the error names the file and, for a malformed line, the line.
    pub fn read(path: &Path) -> Result<Folded, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            format!(
                "{}: not a folded-stack file (not UTF-8 text: {e})",
                path.display()
            )
        })?;
        Folded::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// An interactive flame graph (SVG), titled with `scenario` and the total instructions.
    pub fn flame_graph(&self, scenario: &str) -> Result<String, String> {
        let mut opt = options(
            format!("{scenario}: {} instructions", thousands(self.total)),
            None,
        );
        let mut pages = page_palette();
        opt.palette_map = Some(&mut pages);
        render(&mut opt, &self.to_text())
    }

    /// Writes `STEM.folded` and `STEM.svg` (the flame graph titled with `scenario`),
    /// creating the directory; returns the two paths.
    pub fn write_files(&self, stem: &Path, scenario: &str) -> Result<[PathBuf; 2], String> {
        let folded = with_extension(stem, "folded");
        let svg = with_extension(stem, "svg");
        let graph = self.flame_graph(scenario)?;
        if let Some(dir) = stem.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        for (path, text) in [(&folded, self.to_text()), (&svg, graph)] {
            std::fs::write(path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok([folded, svg])
    }

    /// The functions by self instructions, largest first (name breaks ties), at most `top`
    /// of them, then one line for the rest and the total. A function's inclusive count is the
    /// instructions of every stack it is on, each stack counted once however often the
    /// function recurs in it.
    pub fn top_table(&self, top: usize) -> String {
        let functions = self.functions();
        let mut table = Table::new(
            [
                "function",
                "self instructions",
                "self %",
                "inclusive instructions",
                "inclusive %",
            ]
            .map(String::from)
            .to_vec(),
        );
        let pct = |n: u64| percent(n, self.total);
        for (name, own, inclusive) in functions.iter().take(top) {
            table.push(vec![
                cell_text(name),
                thousands(*own),
                pct(*own),
                thousands(*inclusive),
                pct(*inclusive),
            ]);
        }
        if functions.len() > top {
            let rest = &functions[top..];
            let own: u64 = rest.iter().map(|f| f.1).sum();
            table.push(vec![
                format!("({} more functions)", rest.len()),
                thousands(own),
                pct(own),
                String::new(),
                String::new(),
            ]);
        }
        table.push(vec![
            "total".into(),
            thousands(self.total),
            pct(self.total),
            thousands(self.total),
            pct(self.total),
        ]);
        table.render()
    }

    /// Every function with its self and inclusive instructions, largest self first.
    fn functions(&self) -> Vec<(String, u64, u64)> {
        let mut by_name: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for (stack, count) in &self.stacks {
            let leaf = stack.last().expect("a stack has at least one frame");
            by_name.entry(leaf).or_default().0 += count;
            let on_stack: BTreeSet<&str> = stack.iter().map(String::as_str).collect();
            for name in on_stack {
                by_name.entry(name).or_default().1 += count;
            }
        }
        let mut functions: Vec<(String, u64, u64)> = by_name
            .into_iter()
            .map(|(name, (own, inclusive))| (name.to_string(), own, inclusive))
            .collect();
        // by_name iterates by name, and the sort is stable: equal self counts stay by name.
        functions.sort_by_key(|f| std::cmp::Reverse(f.1));
        functions
    }
}

/// A differential flame graph of `after` over `before` (inferno's differential mode): red
/// frames spend more instructions in `after`, blue ones fewer, the hue scaled by the
/// difference. Frames are as wide as `after`'s counts, so a stack `after` no longer has is
/// absent; `before_shape` draws `before`'s widths instead (the colours keep their meaning),
/// which shows what `after` removed. Counts are compared as they are, not normalised: both
/// are exact instruction counts. The names label the two profiles in the subtitle.
pub fn differential_graph(
    before: (&str, &Folded),
    after: (&str, &Folded),
    before_shape: bool,
) -> Result<String, String> {
    let (first, second) = if before_shape {
        (after.1, before.1)
    } else {
        (before.1, after.1)
    };
    let mut lines = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        first.to_text().as_bytes(),
        second.to_text().as_bytes(),
        &mut lines,
    )
    .map_err(|e| format!("differential of the two profiles: {e}"))?;
    let lines = String::from_utf8(lines).map_err(|e| format!("differential output: {e}"))?;
    let (b, a) = (after.1.total(), before.1.total());
    let change = if b >= a {
        format!("+{}", thousands(b - a))
    } else {
        format!("-{}", thousands(a - b))
    };
    let mut opt = options(
        format!("{} over {}: {change} instructions", after.0, before.0),
        Some(format!(
            "{}: {} instructions, {}: {}; red: more in {}, blue: fewer; widths: {}",
            before.0,
            thousands(a),
            after.0,
            thousands(b),
            after.0,
            if before_shape { before.0 } else { after.0 }
        )),
    );
    // Swapped inputs make inferno's difference `before - after`; negating keeps red for more.
    opt.negate_differentials = before_shape;
    render(&mut opt, &lines)
}

/// Makes a frame name safe for the folded format, where `;` separates frames, a newline
/// ends the line and surrounding whitespace is trimmed away on reading: `;` becomes `:`
/// (`[u8; 32]` reads `[u8: 32]`, still recognisable), control characters (newline, tab,
/// ...) become a space, the name is trimmed, and an empty name becomes `[unnamed]`. A
/// space before a trailing number becomes `_` (`closure 2` reads `closure_2`): inferno
/// takes a line's last two numbers for a differential pair, so the number would otherwise
/// be read as a count.
pub fn sanitise(name: &str) -> String {
    let replaced: String = name
        .chars()
        .map(|c| match c {
            ';' => ':',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    let mut name = match replaced.trim() {
        "" => return UNNAMED.to_string(),
        trimmed => trimmed.to_string(),
    };
    if let Some(space) = name.rfind(' ') {
        let last = &name[space + 1..];
        if last.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            name.replace_range(space..space + 1, "_");
        }
    }
    name
}

/// One trimmed, non-empty line: the stack, a space, and a count of ASCII digits.
fn parse_line(line: &str) -> Result<(Vec<String>, u64), String> {
    let (stack, count) = match line.rsplit_once([' ', '\t']) {
        Some(pair) => pair,
        None if line.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(format!("no stack before the count {line}"))
        }
        None => {
            return Err(format!(
                "no count: expected `frame;frame COUNT`, found {line:?}"
            ))
        }
    };
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "the count {count:?} is not a whole number of instructions"
        ));
    }
    let count: u64 = count
        .parse()
        .map_err(|_| format!("the count {count} is larger than {}", u64::MAX))?;
    // The line is trimmed, so the stack is not empty: a space separates it from the count.
    let stack = stack.trim_end();
    let frames: Vec<String> = stack.split(';').map(str::to_string).collect();
    if let Some(i) = frames.iter().position(|f| f.trim().is_empty()) {
        return Err(format!(
            "frame {} of {:?} is empty (`;;` or a `;` at an end)",
            i + 1,
            stack
        ));
    }
    Ok((frames, count))
}

/// The flame graph settings every graph shares.
fn options(title: String, subtitle: Option<String>) -> inferno::flamegraph::Options<'static> {
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title;
    opt.subtitle = subtitle;
    opt.count_name = "instructions".into();
    // Colours from the function name rather than inferno's random generator: the same
    // profile gives the same file, and a function keeps its colour across graphs.
    opt.hash = true;
    opt
}

/// The memory tracker's page charges in blues and purples, apart from the code's warm
/// colours: where a message pays for memory rather than for work shows at a glance. Every
/// other frame keeps the colour of its name.
fn page_palette() -> inferno::flamegraph::color::PaletteMap {
    use crate::engine::profile::{HEAP_ACCESS, HEAP_WRITE, STABLE_ACCESS, STABLE_WRITE};
    use inferno::flamegraph::color::Color;
    let mut map = inferno::flamegraph::color::PaletteMap::default();
    for (frame, (r, g, b)) in [
        (HEAP_ACCESS, (130, 180, 235)),
        (HEAP_WRITE, (60, 120, 215)),
        (STABLE_ACCESS, (185, 155, 235)),
        (STABLE_WRITE, (135, 90, 205)),
    ] {
        map.insert(frame, Color { r, g, b });
    }
    map
}

fn render(opt: &mut inferno::flamegraph::Options<'_>, folded: &str) -> Result<String, String> {
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(opt, folded.lines(), &mut svg)
        .map_err(|e| format!("flame graph: {e}"))?;
    String::from_utf8(svg).map_err(|e| format!("flame graph output: {e}"))
}

fn percent(n: u64, total: u64) -> String {
    if total == 0 {
        return "n/a".into();
    }
    format!("{:.2}%", n as f64 * 100.0 / total as f64)
}

/// `stem` + `.ext`, keeping any dot already in the stem's name (`sqlite-wal/1.5` stays whole).
fn with_extension(stem: &Path, ext: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(s: &str) -> Vec<String> {
        s.split(';').map(String::from).collect()
    }

    /// A hand-made profile with recursion (`a` and `b` on `a;b;a;b` twice each).
    fn recursive() -> Folded {
        Folded::new([
            (stack("main;a"), 10),
            (stack("main;a;b"), 20),
            (stack("main;a;b;a;b"), 30),
            (stack("main;a;b;a;ic0.msg_reply"), 5),
            (stack("main"), 1),
        ])
    }

    #[test]
    fn awkward_names_round_trip_through_the_folded_text() {
        let folded = Folded::new([
            (
                vec![
                    "canister_update put".into(),
                    "<[u8; 32] as Storable>::to_bytes".into(),
                    "line\nbreak\tand\r".into(),
                ],
                7,
            ),
            (
                vec!["  padded  ".into(), "".into(), "{{closure}} 2".into()],
                3,
            ),
            (vec!["zero".into()], 0),
            (
                stack("canister_update put;<[u8: 32] as Storable>::to_bytes;line break and"),
                2,
            ),
        ]);
        let text = folded.to_text();
        assert_eq!(
            text,
            "canister_update put;<[u8: 32] as Storable>::to_bytes;line break and 9\n\
             padded;[unnamed];{{closure}}_2 3\n"
        );
        assert_eq!(folded.total(), 12);
        // Not read as a differential line `... {{closure}} 2 3` (2 before, 3 after).
        let svg = folded.flame_graph("awkward").unwrap();
        assert!(svg.contains("<title>{{closure}}_2 (3 instructions, 25.00%)</title>"));
        assert_eq!(Folded::parse(&text), Ok(folded));
    }

    #[test]
    fn stacks_are_sorted_and_equal_stacks_summed() {
        let text = "# a comment\n\nb;c 4\na 1\nb;c 6\n";
        let folded = Folded::parse(text).unwrap();
        assert_eq!(folded.stacks(), &[(stack("a"), 1), (stack("b;c"), 10)][..]);
        assert_eq!(folded.to_text(), "a 1\nb;c 10\n");
    }

    #[test]
    fn malformed_lines_are_errors_naming_the_line() {
        let cases = [
            ("a;b 1\nnocount\n", "line 2: no count: expected `frame;frame COUNT`, found \"nocount\""),
            ("a;b 1.5\n", "line 1: the count \"1.5\" is not a whole number of instructions"),
            ("a;b -3\n", "line 1: the count \"-3\" is not a whole number of instructions"),
            ("a;b +3\n", "line 1: the count \"+3\" is not a whole number of instructions"),
            ("a;b x\n", "line 1: the count \"x\" is not a whole number of instructions"),
            ("\n\n 5\n", "line 3: no stack before the count 5"),
            ("a;;b 5\n", "line 1: frame 2 of \"a;;b\" is empty (`;;` or a `;` at an end)"),
            ("a; 5\n", "line 1: frame 2 of \"a;\" is empty (`;;` or a `;` at an end)"),
            ("a 99999999999999999999\n", "line 1: the count 99999999999999999999 is larger than 18446744073709551615"),
            ("a 18446744073709551615\nb 1\n", "line 2: the counts add up past 18446744073709551615 (the largest count)"),
            ("", "no stack in it: a profile has at least one `frame;frame COUNT` line with a count above zero"),
            ("a 0\n", "no stack in it: a profile has at least one `frame;frame COUNT` line with a count above zero"),
        ];
        for (text, expected) in cases {
            assert_eq!(Folded::parse(text), Err(expected.to_string()), "{text:?}");
        }
    }

    #[test]
    fn read_names_the_file() {
        let missing = Path::new("/nonexistent/p.folded");
        assert!(Folded::read(missing)
            .unwrap_err()
            .starts_with("cannot read /nonexistent/p.folded: "));
    }

    #[test]
    fn top_table_counts_recursion_once_per_stack() {
        assert_eq!(
            recursive().top_table(10),
            "\
| function      | self instructions |  self % | inclusive instructions | inclusive % |
| :------------ | ----------------: | ------: | ---------------------: | ----------: |
| b             |                50 |  75.76% |                     55 |      83.33% |
| a             |                10 |  15.15% |                     65 |      98.48% |
| ic0.msg_reply |                 5 |   7.58% |                      5 |       7.58% |
| main          |                 1 |   1.52% |                     66 |     100.00% |
| total         |                66 | 100.00% |                     66 |     100.00% |
"
        );
    }

    #[test]
    fn top_table_folds_the_rest_into_one_line() {
        let table = recursive().top_table(2);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 6, "{table}");
        assert!(lines[2].starts_with("| b "), "{table}");
        assert!(lines[3].starts_with("| a "), "{table}");
        assert_eq!(
            lines[4].split('|').map(str::trim).collect::<Vec<_>>(),
            ["", "(2 more functions)", "6", "9.09%", "", "", ""]
        );
    }

    #[test]
    fn equal_self_counts_sort_by_name() {
        let folded = Folded::new([(stack("x;z"), 3), (stack("x;y"), 3)]);
        let names: Vec<String> = folded.functions().into_iter().map(|f| f.0).collect();
        assert_eq!(names, ["y", "z", "x"]);
    }

    #[test]
    fn flame_graph_is_titled_and_counts_instructions() {
        let svg = recursive().flame_graph("btree/middle/insert/1").unwrap();
        assert!(svg.starts_with("<?xml"), "{}", &svg[..100]);
        assert!(svg.contains("btree/middle/insert/1: 66 instructions"));
        // inferno's tooltip: name (count instructions, percent).
        // `b` at depth 2 (all its stacks) and 4 (under the recursive `a`).
        assert!(svg.contains("<title>b (55 instructions, 83.33%)</title>"));
        assert!(svg.contains("<title>b (30 instructions, 45.45%)</title>"));
        assert_eq!(
            svg,
            recursive().flame_graph("btree/middle/insert/1").unwrap()
        );
    }

    #[test]
    fn write_files_writes_the_folded_text_and_the_graph_side_by_side() {
        let dir = std::env::temp_dir().join(format!("icbench-flame-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let stem = dir.join("sqlite-wal/middle/insert/1.5");
        let [folded, svg] = recursive().write_files(&stem, "sqlite-wal").unwrap();
        assert_eq!(folded, dir.join("sqlite-wal/middle/insert/1.5.folded"));
        assert_eq!(svg, dir.join("sqlite-wal/middle/insert/1.5.svg"));
        assert_eq!(Folded::read(&folded), Ok(recursive()));
        let graph = std::fs::read_to_string(&svg).unwrap();
        assert!(graph.contains("sqlite-wal: 66 instructions"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn differential_graph_colours_by_the_change() {
        let before = Folded::new([(stack("main;a"), 10), (stack("main;gone"), 4)]);
        let after = Folded::new([(stack("main;a"), 25), (stack("main;new"), 5)]);
        let svg = differential_graph(("off", &before), ("wal", &after), false).unwrap();
        assert!(svg.contains("wal over off: +16 instructions"), "{svg}");
        assert!(
            svg.contains("<title>a (25 instructions, 83.33%; +50.00%)</title>"),
            "{svg}"
        );
        assert!(
            !svg.contains("gone"),
            "a stack only in `before` has no width: {svg}"
        );
        let shaped = differential_graph(("off", &before), ("wal", &after), true).unwrap();
        // Widths of `before`, change still `after - before`: +15 of 14, -4 of 14.
        assert!(
            shaped.contains("<title>a (10 instructions, 71.43%; +107.14%)</title>"),
            "{shaped}"
        );
        assert!(
            shaped.contains("<title>gone (4 instructions, 28.57%; -28.57%)</title>"),
            "{shaped}"
        );
    }
}
