//! Where a message's instructions went: every instruction the replica charges, attributed to
//! the call stack that spent it (the engine's own counter, read at every function entry and
//! exit; see `embedded/profiler.rs`). A profile is a tree of frames, each with the
//! instructions spent in it and not in a callee (its *self* count); its total is the
//! message's charged figure.
//!
//! Frames are function names from the module's name section (demangled), `func[N]` for an
//! unnamed function, `ic0.NAME` for a System API call's fee (under its caller), and charges
//! no function's code spends, in brackets: the memory tracker's page charges under the
//! frame that touched the page (`[heap access]`, `[heap write]`, `[stable access]`,
//! `[stable write]`), `[heap dirty pages]` (before the tracker), `[compilation]`, and the
//! stages of `install_code` (`[pre_upgrade]`, `[start]`, `[init]`, `[post_upgrade]`).

use std::collections::HashMap;

/// The frame of the heap dirty-page charge after an update (1,000 instructions per 4 KiB
/// page written; `performance_counter` cannot see it).
pub const HEAP_DIRTY_PAGES: &str = "[heap dirty pages]";
/// The deterministic memory tracker's charge for the first access to a 64 KiB page of the
/// heap (from the `2026-07` replica vintage on), under the frame that touched the page.
pub const HEAP_ACCESS: &str = "[heap access]";
/// Its charge for the first write to a heap page, under the frame that wrote it.
pub const HEAP_WRITE: &str = "[heap write]";
/// Its charge for the first access to a 64 KiB page of stable memory (in `ic0.stable*`).
pub const STABLE_ACCESS: &str = "[stable access]";
/// Its charge for the first write to a stable memory page.
pub const STABLE_WRITE: &str = "[stable write]";
/// The frame of the compilation charge of `install_code`.
pub const COMPILATION: &str = "[compilation]";
/// The frame of `install_code`'s base cost for creating the execution state (from the
/// `2026-04` replica vintage on).
pub const EXECUTION_STATE: &str = "[execution state]";

/// A tree of call stacks with self counts. Node 0 is the root (no frame).
#[derive(Clone, Debug, Default)]
pub struct Profile {
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    nodes: Vec<Node>,
    children: HashMap<(u32, u32), u32>,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    parent: u32,
    name: u32,
    count: u64,
}

const ROOT: u32 = 0;

/// The deepest stack [`Profile::stacks`] writes out frame by frame. A message that recurses
/// deeper (a recursion to the Wasm stack limit nests ~100,000 frames) would write a
/// folded line per depth, each as long as its depth: what lies deeper is written under
/// its ancestor at this depth, as one frame [`DEEPER`], so the counts still add up.
pub const MAX_STACK_DEPTH: usize = 512;
/// The frame that stands for everything below [`MAX_STACK_DEPTH`].
pub const DEEPER: &str = "[deeper frames]";

impl Profile {
    pub fn new() -> Profile {
        Profile {
            nodes: vec![Node {
                parent: ROOT,
                name: u32::MAX,
                count: 0,
            }],
            ..Profile::default()
        }
    }

    fn ensure_root(&mut self) {
        if self.nodes.is_empty() {
            *self = Profile::new();
        }
    }

    fn name_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.name_ids.insert(name.to_string(), id);
        id
    }

    fn child(&mut self, parent: u32, name: u32) -> u32 {
        if let Some(&node) = self.children.get(&(parent, name)) {
            return node;
        }
        let node = self.nodes.len() as u32;
        self.nodes.push(Node {
            parent,
            name,
            count: 0,
        });
        self.children.insert((parent, name), node);
        node
    }

    /// The child `name` of `parent` (0 is the root), created if new: builds a tree in
    /// O(1) a node, parents before their children.
    pub(crate) fn child_named(&mut self, parent: u32, name: &str) -> u32 {
        self.ensure_root();
        let name = self.name_id(name);
        self.child(parent, name)
    }

    /// Adds `count` to `node`'s own instructions.
    pub(crate) fn add_to(&mut self, node: u32, count: u64) {
        self.nodes[node as usize].count += count;
    }

    /// The node of `stack` (root first), created if new.
    fn node<S: AsRef<str>>(&mut self, stack: &[S]) -> u32 {
        stack
            .iter()
            .fold(ROOT, |node, frame| self.child_named(node, frame.as_ref()))
    }

    /// Adds `count` instructions spent in the last frame of `stack` (root first). An empty
    /// stack adds to no frame and is ignored, as a zero count is.
    pub fn add<S: AsRef<str>>(&mut self, stack: &[S], count: u64) {
        if stack.is_empty() || count == 0 {
            return;
        }
        let node = self.node(stack);
        self.add_to(node, count);
    }

    /// Every instruction of the profile.
    pub fn total(&self) -> u64 {
        self.nodes.iter().map(|n| n.count).sum()
    }

    /// The stacks with a non-zero self count, root first, sorted; what lies deeper than
    /// [`MAX_STACK_DEPTH`] is summed into one [`DEEPER`] frame under its ancestor there.
    pub fn stacks(&self) -> Vec<(Vec<&str>, u64)> {
        // Parents come before their children, so one pass finds each node's depth and,
        // for a node too deep, the node at the cut it is summed into.
        let mut depth = vec![0usize; self.nodes.len()];
        let mut cut: Vec<u32> = (0..self.nodes.len() as u32).collect();
        let mut deeper: std::collections::BTreeMap<u32, u64> = Default::default();
        let mut out: Vec<(Vec<&str>, u64)> = Vec::new();
        for i in 1..self.nodes.len() {
            let n = self.nodes[i];
            depth[i] = depth[n.parent as usize] + 1;
            if depth[i] > MAX_STACK_DEPTH {
                cut[i] = if depth[i] == MAX_STACK_DEPTH + 1 {
                    n.parent
                } else {
                    cut[n.parent as usize]
                };
                if n.count > 0 {
                    *deeper.entry(cut[i]).or_default() += n.count;
                }
            } else if n.count > 0 {
                out.push((self.path(i as u32), n.count));
            }
        }
        for (at, count) in deeper {
            let mut stack = self.path(at);
            stack.push(DEEPER);
            out.push((stack, count));
        }
        out.sort();
        out
    }

    fn path(&self, mut node: u32) -> Vec<&str> {
        let mut frames = Vec::new();
        while node != ROOT {
            let n = self.nodes[node as usize];
            frames.push(self.names[n.name as usize].as_str());
            node = n.parent;
        }
        frames.reverse();
        frames
    }

    /// Adds every stack of `other` under the frames `prefix` (root first).
    /// Node for node (the tree itself, not its written stacks, so nothing is cut).
    pub fn add_profile<S: AsRef<str>>(&mut self, prefix: &[S], other: &Profile) {
        let base = self.node(prefix);
        self.copy_subtree(other, ROOT, base);
    }

    /// Copies `other`'s nodes below its node `from` (not `from` itself) under this profile's
    /// node `to`: parents come before their children, so one pass maps each node.
    fn copy_subtree(&mut self, other: &Profile, from: u32, to: u32) {
        let mut mapped: Vec<Option<u32>> = vec![None; other.nodes.len()];
        if let Some(slot) = mapped.get_mut(from as usize) {
            *slot = Some(to);
        }
        for i in (from as usize + 1)..other.nodes.len() {
            let n = other.nodes[i];
            if let Some(parent) = mapped[n.parent as usize] {
                let node = self.child_named(parent, &other.names[n.name as usize]);
                self.add_to(node, n.count);
                mapped[i] = Some(node);
            }
        }
    }

    /// Adds `profile`, when there is one, to `sum`: the profile of several messages (a
    /// scenario's, or a stage's part of its install_code).
    pub fn add_to_sum(sum: &mut Option<Profile>, profile: Option<&Profile>) {
        if let Some(p) = profile {
            let empty: [&str; 0] = [];
            sum.get_or_insert_with(Profile::new).add_profile(&empty, p);
        }
    }

    /// The stacks under the root frame `frame`, without it (a stage of `install_code`);
    /// `None` when the profile has no such frame.
    pub fn under(&self, frame: &str) -> Option<Profile> {
        let at = *self
            .names
            .iter()
            .position(|n| n == frame)
            .and_then(|name| self.children.get(&(ROOT, name as u32)))?;
        let mut out = Profile::new();
        out.copy_subtree(self, at, ROOT);
        Some(out)
    }

    /// Frames in the tree (the root not counted): what the profile holds in memory.
    pub fn frames(&self) -> usize {
        self.nodes.len().saturating_sub(1)
    }
}

/// Two profiles are equal when they hold the same stacks with the same counts, whatever
/// order they were built in.
impl PartialEq for Profile {
    fn eq(&self, other: &Profile) -> bool {
        self.stacks() == other.stacks()
    }
}

impl Eq for Profile {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_add_up_and_come_back_sorted_whatever_the_order() {
        let mut a = Profile::new();
        a.add(&["main", "f"], 10);
        a.add(&["main"], 5);
        a.add(&["main", "f"], 1);
        a.add(&["main", "g", "ic0.msg_reply"], 500);
        a.add(&["main", "g"], 0);
        a.add::<&str>(&[], 7);
        assert_eq!(a.total(), 516);
        assert_eq!(
            a.stacks(),
            [
                (vec!["main"], 5),
                (vec!["main", "f"], 11),
                (vec!["main", "g", "ic0.msg_reply"], 500),
            ]
        );
        let mut b = Profile::default();
        b.add(&["main", "g", "ic0.msg_reply"], 500);
        b.add(&["main", "f"], 11);
        b.add(&["main"], 5);
        assert_eq!(a, b);
        assert_eq!(a.frames(), 4);
    }

    #[test]
    fn a_profile_nests_under_a_prefix() {
        let mut stage = Profile::new();
        stage.add(&["canister_post_upgrade", "decode"], 40);
        stage.add(&[HEAP_DIRTY_PAGES], 3_000);
        let mut total = Profile::new();
        total.add(&[COMPILATION], 6_000);
        total.add_profile(&["[post_upgrade]"], &stage);
        assert_eq!(total.total(), 9_040);
        assert_eq!(
            total.stacks(),
            [
                (vec!["[compilation]"], 6_000),
                (vec!["[post_upgrade]", "[heap dirty pages]"], 3_000),
                (
                    vec!["[post_upgrade]", "canister_post_upgrade", "decode"],
                    40
                ),
            ]
        );
        assert_eq!(total.under("[post_upgrade]"), Some(stage));
        assert_eq!(total.under("[pre_upgrade]"), None);
    }

    #[test]
    fn stacks_deeper_than_the_cut_are_summed_under_it() {
        let mut p = Profile::new();
        let mut node = 0;
        for depth in 1..=MAX_STACK_DEPTH + 100 {
            node = p.child_named(node, "rec");
            p.add_to(node, depth as u64);
        }
        let stacks = p.stacks();
        assert_eq!(stacks.len(), MAX_STACK_DEPTH + 1);
        let (last, count) = stacks
            .iter()
            .find(|(s, _)| s.last() == Some(&DEEPER))
            .unwrap();
        assert_eq!(last.len(), MAX_STACK_DEPTH + 1);
        assert_eq!(
            *count,
            (MAX_STACK_DEPTH as u64 + 1..=MAX_STACK_DEPTH as u64 + 100).sum::<u64>()
        );
        let total: u64 = stacks.iter().map(|(_, n)| n).sum();
        assert_eq!(total, p.total());
        // Nesting and taking back copy the tree itself: nothing is cut there.
        let mut nested = Profile::new();
        nested.add_profile(&["[stage]"], &p);
        assert_eq!(nested.frames(), p.frames() + 1);
        assert_eq!(nested.under("[stage]").unwrap().frames(), p.frames());
    }
}
