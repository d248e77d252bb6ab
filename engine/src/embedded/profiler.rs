//! The aggregator behind the profiling probes. A profiled module (instrumented with
//! `profile: true`) calls `__.profile_enter(func, counter)` at every function entry and
//! around every System API call, and `__.profile_exit(counter)` at every function exit,
//! handing over the instruction counter as the metering left it. Between two events the
//! counter fell by exactly what the frame on top of the stack was charged (the metering
//! charges a segment in the function that contains it, and a System API call's fee inside
//! the call), so each difference goes to that frame: the attribution is exact, and the
//! probes themselves are not metered.
//!
//! The memory tracker's page charges (replica vintage `2026-07`) reach the counter only at
//! System API calls (`HostState::fold_page_charges`): each event also hands over the page
//! charges so far and how much of them the counter already holds, so the counter's fall is
//! split into what the code spent (to the frame on top) and what its first touches of pages
//! cost (to a child frame per kind under it: the frame that was running when the pages
//! were touched).
//!
//! Counts are aggregated on the fly into a tree keyed by the stack (no trace buffer), so a
//! message of any length profiles in memory proportional to its distinct call paths.
//! A trap unwinds without exits: [`Profiler::finish`] charges what is left to the frame that
//! was running, then the tree is simply dropped with its open frames.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::memory::charges::PageCharges;
use crate::profile::Profile;

/// What the profiler reads at an event: the counter as the metering left it, the memory
/// tracker's page charges of the message so far, and how much of those the counter holds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reading {
    pub counter: i64,
    pub pages: PageCharges,
    pub folded: u64,
    /// Wasm pages touched so far, by kind: heap accessed, heap written, stable accessed,
    /// stable written (counted under every vintage; for the page map).
    pub touched: [u64; 4],
}

impl Reading {
    /// A reading without page charges.
    pub fn counter(counter: i64) -> Reading {
        Reading {
            counter,
            ..Reading::default()
        }
    }
}

/// Frame ids of the page charges, below any function index a module can have.
const PAGE_FRAMES: u32 = u32::MAX - 4;

/// The frame name of every function of a module by its index: imports as `MODULE.NAME`
/// (`ic0.msg_reply`), defined functions by their name in the name section, demangled
/// (`rustc-demangle`, without the hash), else `func[N]`.
pub struct FrameNames {
    names: Vec<String>,
    /// The index of the `ic0.performance_counter` import, if the module has one.
    pub performance_counter: Option<u32>,
}

impl FrameNames {
    /// Reads the names from `wasm`, a module that validated; whatever does not parse is
    /// named by its index.
    pub fn of(wasm: &[u8]) -> FrameNames {
        let mut names = Vec::new();
        let mut performance_counter = None;
        let mut named: HashMap<u32, String> = HashMap::new();
        for payload in wasmparser::Parser::new(0).parse_all(wasm) {
            let Ok(payload) = payload else { break };
            match payload {
                wasmparser::Payload::ImportSection(reader) => {
                    for import in reader.into_imports().flatten() {
                        if matches!(
                            import.ty,
                            wasmparser::TypeRef::Func(_) | wasmparser::TypeRef::FuncExact(_)
                        ) {
                            if (import.module, import.name) == ("ic0", "performance_counter") {
                                performance_counter = Some(names.len() as u32);
                            }
                            names.push(format!("{}.{}", import.module, import.name));
                        }
                    }
                }
                wasmparser::Payload::FunctionSection(reader) => {
                    let first = names.len();
                    names.extend(
                        (first..first + reader.count() as usize).map(|i| format!("func[{i}]")),
                    );
                }
                wasmparser::Payload::CustomSection(reader) => {
                    if let wasmparser::KnownCustom::Name(section) = reader.as_known() {
                        for sub in section.flatten() {
                            if let wasmparser::Name::Function(map) = sub {
                                for naming in map.into_iter().flatten() {
                                    named.insert(naming.index, demangle(naming.name));
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        for (index, name) in named {
            // Imports keep `MODULE.NAME`, which says more than a toolchain's import name.
            if let Some(slot) = names.get_mut(index as usize) {
                if slot.starts_with("func[") {
                    *slot = name;
                }
            }
        }
        FrameNames {
            names,
            performance_counter,
        }
    }

    pub fn name(&self, func: u32) -> String {
        match self.names.get(func as usize) {
            Some(name) => name.clone(),
            None => format!("func[{func}]"),
        }
    }
}

/// A Rust symbol demangled without its hash; any other name as it is.
fn demangle(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_string(),
    }
}

/// The key of a child: its parent node in the high half, its function in the low half.
/// One multiply spreads it well enough for a table this small, and far faster than SipHash
/// on a path taken at every call.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

const ROOT: u32 = 0;

#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    func: u32,
    /// Instructions spent in this frame and counted.
    count: u64,
    /// Spent since the last window boundary, not counted yet (window mode only).
    pending: u64,
}

/// Which part of the message is attributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Window {
    /// All of it.
    Whole,
    /// Only what lies between the first and the last return from the function `reader`
    /// (`ic0.performance_counter`): before the first, nothing is open yet.
    BeforeFirst { reader: u32 },
    /// At least one read happened: what follows counts once another read closes it.
    Open { reader: u32 },
}

/// The call-stack tree of one message in the making.
pub struct Profiler {
    nodes: Vec<Node>,
    children: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    current: u32,
    limit: i64,
    /// Instructions the code spent (the counter's fall without page charges) at the last
    /// event.
    last: u64,
    /// Page charges at the last event.
    last_pages: PageCharges,
    /// Everything attributed so far: never more than the limit (a message out of
    /// instructions is charged the limit).
    attributed: u64,
    window: Window,
    /// Nodes with a non-zero `pending` (window mode), so a boundary touches only those.
    touched: Vec<u32>,
    /// The pages touched at the last event, and at every event where they grew, with the
    /// frame that was running since the event before: it touched them first.
    last_touched: [u64; 4],
    first_touches: Vec<([u64; 4], u32)>,
}

impl Profiler {
    /// A profiler for a message that starts with the counter at `limit`. With
    /// `between_reads_of: Some(f)` only the instructions between the first and the last
    /// return from function `f` are kept: canbench's measurement, from its first
    /// `ic0.performance_counter` read to its last.
    pub fn new(limit: u64, between_reads_of: Option<u32>) -> Profiler {
        Profiler {
            nodes: vec![Node {
                parent: ROOT,
                func: u32::MAX,
                count: 0,
                pending: 0,
            }],
            children: HashMap::default(),
            current: ROOT,
            limit: limit.min(i64::MAX as u64) as i64,
            last: 0,
            last_pages: PageCharges::default(),
            attributed: 0,
            window: match between_reads_of {
                Some(reader) => Window::BeforeFirst { reader },
                None => Window::Whole,
            },
            touched: Vec::new(),
            last_touched: [0; 4],
            first_touches: Vec::new(),
        }
    }

    /// Instructions the code spent when the counter reads `at.counter`: the engine's own
    /// formula without the page charges the counter holds, so a counter driven below zero
    /// (out of instructions) counts as the whole limit.
    fn spent(&self, at: &Reading) -> u64 {
        ((self.limit - at.counter.clamp(0, self.limit)) as u64).saturating_sub(at.folded)
    }

    /// Gives the instructions spent since the last event to the frame on top, and the page
    /// charges since then to its page frames.
    fn charge(&mut self, at: Reading) {
        if at.touched != self.last_touched {
            self.last_touched = at.touched;
            self.first_touches.push((at.touched, self.current));
        }
        let spent = self.spent(&at);
        let delta = spent.saturating_sub(self.last);
        self.last = self.last.max(spent);
        let pages = at.pages.by_frame();
        let last_pages = self.last_pages.by_frame();
        self.last_pages = at.pages;
        for (kind, ((_, now), (_, before))) in pages.iter().zip(last_pages).enumerate() {
            let delta = now.saturating_sub(before);
            if delta > 0 {
                let frame = self.child(self.current, PAGE_FRAMES + kind as u32);
                self.add(frame, delta);
            }
        }
        self.add(self.current, delta);
    }

    /// The node of `func` under `parent`, made if new.
    fn child(&mut self, parent: u32, func: u32) -> u32 {
        let key = ((parent as u64) << 32) | func as u64;
        let next = self.nodes.len() as u32;
        let node = *self.children.entry(key).or_insert(next);
        if node == next {
            self.nodes.push(Node {
                parent,
                func,
                count: 0,
                pending: 0,
            });
        }
        node
    }

    /// Adds `delta` to `node`, within the limit.
    fn add(&mut self, node: u32, delta: u64) {
        let delta = delta.min((self.limit as u64).saturating_sub(self.attributed));
        self.attributed += delta;
        if delta == 0 {
            return;
        }
        let current = node;
        let node = &mut self.nodes[current as usize];
        match self.window {
            Window::Whole => node.count += delta,
            Window::BeforeFirst { .. } | Window::Open { .. } => {
                if node.pending == 0 {
                    self.touched.push(current);
                }
                node.pending += delta;
            }
        }
    }

    /// Function `func` starts (or a System API function is called) with the counter at
    /// `at`.
    pub fn enter(&mut self, func: u32, at: Reading) {
        self.charge(at);
        self.current = self.child(self.current, func);
    }

    /// The function on top returns with the counter at `at`.
    pub fn exit(&mut self, at: Reading) {
        self.charge(at);
        if self.current == ROOT {
            return;
        }
        let func = self.nodes[self.current as usize].func;
        self.current = self.nodes[self.current as usize].parent;
        match self.window {
            Window::BeforeFirst { reader } if reader == func => {
                self.drop_pending();
                self.window = Window::Open { reader };
            }
            Window::Open { reader } if reader == func => self.commit_pending(),
            _ => {}
        }
    }

    fn drop_pending(&mut self) {
        for &n in &self.touched {
            let node = &mut self.nodes[n as usize];
            self.attributed -= std::mem::take(&mut node.pending);
        }
        self.touched.clear();
    }

    fn commit_pending(&mut self) {
        for &n in &self.touched {
            let node = &mut self.nodes[n as usize];
            node.count += std::mem::take(&mut node.pending);
        }
        self.touched.clear();
    }

    /// The message ended (returned or trapped) with the counter at `counter`: what was
    /// used since the last event goes to the frame that was running; in window mode what
    /// follows the last read is dropped. `name` names a function by its index; what no
    /// function spent (the export called is an import itself, as a start section naming
    /// an `ic0` function makes it) goes to the frame `entry`, the export's name.
    pub fn finish(mut self, at: Reading, name: &dyn Fn(u32) -> String, entry: &str) -> Profile {
        self.charge(at);
        self.into_profile(name, entry)
    }

    /// [`Profiler::finish`], and for each kind of [`Reading::touched`] the function that
    /// first touched each page, in the order the pages were touched (`entry` where no
    /// function was running).
    pub fn finish_with_touches(
        mut self,
        at: Reading,
        name: &dyn Fn(u32) -> String,
        entry: &str,
    ) -> (Profile, [Vec<String>; 4]) {
        self.charge(at);
        let mut by: [Vec<String>; 4] = Default::default();
        let mut names: HashMap<u32, String> = HashMap::new();
        for &(counts, node) in &self.first_touches {
            let func = self.nodes[node as usize].func;
            let frame = match node {
                ROOT => entry.to_string(),
                _ => names.entry(func).or_insert_with(|| name(func)).clone(),
            };
            for (kind, list) in by.iter_mut().enumerate() {
                while (list.len() as u64) < counts[kind] {
                    list.push(frame.clone());
                }
            }
        }
        (self.into_profile(name, entry), by)
    }

    fn into_profile(mut self, name: &dyn Fn(u32) -> String, entry: &str) -> Profile {
        self.drop_pending();
        let name = |func: u32| match func.checked_sub(PAGE_FRAMES) {
            Some(kind) => PageCharges::default().by_frame()[kind as usize]
                .0
                .to_string(),
            None => name(func),
        };
        // Node for node, parents first: linear in the tree, however deep it is.
        let mut profile = Profile::new();
        profile.add(&[entry], self.nodes[ROOT as usize].count);
        let mut names: HashMap<u32, String> = HashMap::new();
        let mut mapped = vec![0u32; self.nodes.len()];
        for i in 1..self.nodes.len() {
            let node = self.nodes[i];
            let frame = names.entry(node.func).or_insert_with(|| name(node.func));
            let at = profile.child_named(mapped[node.parent as usize], frame);
            mapped[i] = at;
            profile.add_to(at, node.count);
        }
        profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(counter: i64) -> Reading {
        Reading::counter(counter)
    }

    fn names(f: u32) -> String {
        ["main", "f", "g", "ic0.performance_counter"][f as usize].to_string()
    }

    #[test]
    fn each_difference_goes_to_the_frame_on_top() {
        let mut p = Profiler::new(1_000, None);
        p.enter(0, r(1_000)); // main starts
        p.enter(1, r(990)); // main spent 10, calls f
        p.exit(r(970)); // f spent 20
        p.enter(1, r(960)); // main 10 more, f again
        p.enter(2, r(955)); // f 5, calls g
        p.exit(r(900)); // g 55
        p.exit(r(899)); // f 1
        let profile = p.finish(r(890), &names, "entry"); // main's last 9
        assert_eq!(
            profile.stacks(),
            [
                (vec!["main"], 29),
                (vec!["main", "f"], 26),
                (vec!["main", "f", "g"], 55)
            ]
        );
        assert_eq!(profile.total(), 110);
    }

    #[test]
    fn a_counter_below_zero_counts_as_the_limit() {
        let mut p = Profiler::new(100, None);
        p.enter(0, r(100));
        p.enter(1, r(40));
        let profile = p.finish(r(-25), &names, "entry");
        assert_eq!(profile.total(), 100);
        assert_eq!(
            profile.stacks(),
            [(vec!["main"], 60), (vec!["main", "f"], 40)]
        );
    }

    #[test]
    fn a_window_keeps_only_what_lies_between_the_first_and_last_read() {
        let mut p = Profiler::new(10_000, Some(3));
        p.enter(0, r(10_000));
        p.enter(3, r(9_990)); // main 10 before the first read: dropped
        p.exit(r(9_790)); // the read's own fee: dropped (the first read's result follows it)
        p.enter(1, r(9_700)); // main 90: counted
        p.enter(3, r(9_600)); // f 100
        p.exit(r(9_400)); // a read in the middle: its fee counted, closes what came before
        p.exit(r(9_390)); // f 10
        p.enter(3, r(9_380)); // main 10
        p.exit(r(9_180)); // the last read: its fee counted
        let profile = p.finish(r(9_000), &names, "entry"); // main's 180 after the last read: dropped
        assert_eq!(
            profile.stacks(),
            [
                (vec!["main"], 100),
                (vec!["main", "f"], 110),
                (vec!["main", "f", "ic0.performance_counter"], 200),
                (vec!["main", "ic0.performance_counter"], 200),
            ]
        );
        // What canbench reports: the last read's result minus the first's.
        assert_eq!(profile.total(), (10_000 - 9_180) - (10_000 - 9_790));
    }

    #[test]
    fn page_charges_go_under_the_frame_that_touched_the_pages() {
        let pages = |heap_access, heap_write, stable_access, stable_write| PageCharges {
            heap_access,
            heap_write,
            stable_access,
            stable_write,
        };
        // The pages touched: the charges' own counts (80,000 each).
        let at = |counter, pages: PageCharges, folded| Reading {
            counter,
            pages,
            folded,
            touched: pages.by_frame().map(|(_, c)| c / 80_000),
        };
        let mut p = Profiler::new(1_000_000, None);
        p.enter(0, r(1_000_000));
        // main spends 10 and touches a heap page (80,000, not in the counter yet), then
        // calls f.
        p.enter(1, at(999_990, pages(80_000, 0, 0, 0), 0));
        // f spends 5 and writes that page, then calls ic0 (frame 3): the call takes both
        // charges and its fee of 200 from the counter, and touches a stable page.
        p.enter(3, at(999_985, pages(80_000, 80_000, 0, 0), 0));
        p.exit(at(
            999_985 - 160_000 - 200 - 80_000,
            pages(80_000, 80_000, 80_000, 0),
            240_000,
        ));
        p.exit(at(759_780, pages(80_000, 80_000, 80_000, 0), 240_000)); // f 5 more
                                                                        // main 20 more, writes a second heap page; the message ends before another call.
        let (profile, by) = p.finish_with_touches(
            at(759_760, pages(160_000, 160_000, 80_000, 0), 240_000),
            &names,
            "entry",
        );
        // Who touched each page first, in touch order, by kind: main accessed both heap
        // pages, f wrote the first and main the second, ic0.performance_counter read the
        // stable page.
        assert_eq!(
            by,
            [
                vec!["main".to_string(), "main".into()],
                vec!["f".to_string(), "main".into()],
                vec!["ic0.performance_counter".to_string()],
                vec![],
            ]
        );
        assert_eq!(
            profile.stacks(),
            [
                (vec!["main"], 30),
                (vec!["main", "[heap access]"], 160_000),
                (vec!["main", "[heap write]"], 80_000),
                (vec!["main", "f"], 10),
                (vec!["main", "f", "[heap write]"], 80_000),
                (vec!["main", "f", "ic0.performance_counter"], 200),
                (
                    vec!["main", "f", "ic0.performance_counter", "[stable access]"],
                    80_000
                ),
            ]
        );
        // The charged figure: what the counter fell by, and the charges it does not hold.
        assert_eq!(profile.total(), (1_000_000 - 759_760) + (400_000 - 240_000));
    }

    #[test]
    fn a_message_out_of_instructions_by_page_charges_is_charged_the_limit() {
        let mut p = Profiler::new(100_000, None);
        p.enter(0, r(100_000));
        let end = Reading {
            counter: 99_000,
            pages: PageCharges {
                heap_access: 160_000,
                ..PageCharges::default()
            },
            folded: 0,
            touched: [2, 0, 0, 0],
        };
        let profile = p.finish(end, &names, "entry");
        assert_eq!(profile.total(), 100_000);
        assert_eq!(profile.stacks(), [(vec!["main", "[heap access]"], 100_000)]);
    }
}
