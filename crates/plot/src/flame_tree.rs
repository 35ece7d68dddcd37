//! The call tree behind a flame graph, pure and without drawing: folded stacks (frames root first, a sample
//! count each) merged by name along the path, and the choice of which frames a graph can afford to draw.
//!
//! - [`Tree::build`] merges stacks: two samples share a frame when the frames from the root down to it have the
//!   same names. A frame's `total` counts the samples through it (inclusive), `own` those that end in it (self).
//!   A tree's memory is linear in the frames given; nothing recurses, so any depth is safe.
//! - [`Tree::select`] picks the frames to draw, widest first: never one narrower than a share of all samples,
//!   never one deeper than a limit, never more than a budget. A frame is drawn only with its parent, and every
//!   frame not drawn is counted by why.
//! - [`Tree::gone`] lists the frames of another tree that this one does not have (the differential graph's
//!   frames only in the baseline).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// The index of the root, the whole profile (`all`).
pub(crate) const ROOT: usize = 0;

/// One merged frame.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// The index of its name in [`Tree::names`]; the root's is never read.
    pub name: u32,
    /// The caller (the root is its own).
    pub parent: usize,
    pub depth: usize,
    /// Samples through the frame (inclusive).
    pub total: u64,
    /// Samples that end in the frame (self).
    pub own: u64,
    /// Children in the order they are drawn: by name, as flamegraph.pl orders them.
    pub children: Vec<usize>,
}

/// Folded stacks merged into a tree, root first.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    pub names: Vec<String>,
    pub nodes: Vec<Node>,
    ids: HashMap<String, u32>,
    /// `(parent, name) -> child`.
    edges: HashMap<(usize, u32), usize>,
}

/// Which frames to draw, and how many were left out for each reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selection {
    /// Frames to draw, each after its parent (the root first).
    pub drawn: Vec<usize>,
    /// Frames narrower than the smallest share drawn (with everything above them).
    pub narrow: u64,
    /// Frames deeper than the deepest level drawn.
    pub deep: u64,
    /// Frames wide enough but beyond the budget of frames.
    pub over_budget: u64,
    /// The deepest level drawn (0 when only the root is).
    pub max_depth: usize,
}

impl Tree {
    /// Merges folded stacks (frames root first, samples each); stacks with no samples are skipped, a stack with
    /// no frames counts on the root alone. Counts add up saturating, so no input overflows.
    pub(crate) fn build(stacks: &[(Vec<String>, u64)]) -> Tree {
        let mut tree = Tree {
            names: Vec::new(),
            nodes: vec![Node { name: u32::MAX, parent: ROOT, depth: 0, total: 0, own: 0, children: Vec::new() }],
            ids: HashMap::new(),
            edges: HashMap::new(),
        };
        for (frames, count) in stacks {
            if *count == 0 {
                continue;
            }
            let mut at = ROOT;
            tree.nodes[ROOT].total = tree.nodes[ROOT].total.saturating_add(*count);
            for frame in frames {
                at = tree.child_or_new(at, frame);
                tree.nodes[at].total = tree.nodes[at].total.saturating_add(*count);
            }
            tree.nodes[at].own = tree.nodes[at].own.saturating_add(*count);
        }
        let names = &tree.names;
        for i in 0..tree.nodes.len() {
            let mut children = std::mem::take(&mut tree.nodes[i].children);
            children.sort_by(|a, b| names[tree.nodes[*a].name as usize].cmp(&names[tree.nodes[*b].name as usize]));
            tree.nodes[i].children = children;
        }
        tree
    }

    fn child_or_new(&mut self, parent: usize, name: &str) -> usize {
        let id = match self.ids.get(name) {
            Some(id) => *id,
            None => {
                let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
                self.names.push(name.to_owned());
                self.ids.insert(name.to_owned(), id);
                id
            }
        };
        if let Some(child) = self.edges.get(&(parent, id)) {
            return *child;
        }
        let child = self.nodes.len();
        let depth = self.nodes[parent].depth + 1;
        self.nodes.push(Node { name: id, parent, depth, total: 0, own: 0, children: Vec::new() });
        self.nodes[parent].children.push(child);
        self.edges.insert((parent, id), child);
        child
    }

    /// All samples.
    pub(crate) fn total(&self) -> u64 {
        self.nodes[ROOT].total
    }

    /// A frame's name (`all` for the root).
    pub(crate) fn name(&self, node: usize) -> &str {
        if node == ROOT {
            "all"
        } else {
            &self.names[self.nodes[node].name as usize]
        }
    }

    /// The child of `parent` with this name.
    pub(crate) fn child_named(&self, parent: usize, name: &str) -> Option<usize> {
        let id = self.ids.get(name)?;
        self.edges.get(&(parent, *id)).copied()
    }

    /// The number of frames in each frame's subtree, itself included. A child is always created after its
    /// parent, so one pass from the end adds every subtree up.
    fn subtree_sizes(&self) -> Vec<u64> {
        let mut sizes = vec![1u64; self.nodes.len()];
        for i in (0..self.nodes.len()).rev() {
            let sum: u64 = self.nodes[i].children.iter().map(|c| sizes[*c]).sum();
            sizes[i] = 1 + sum;
        }
        sizes
    }

    /// The frames to draw, widest first: a frame with fewer than `min_samples` is too narrow, one deeper than
    /// `max_depth` too deep, and at most `max_frames` are drawn (the root always is, when there are samples).
    pub(crate) fn select(&self, min_samples: u64, max_depth: usize, max_frames: usize) -> Selection {
        let mut out = Selection::default();
        if self.total() == 0 {
            return out;
        }
        let sizes = self.subtree_sizes();
        let mut queue = BinaryHeap::new();
        queue.push((self.nodes[ROOT].total, Reverse(ROOT)));
        while let Some((total, Reverse(node))) = queue.pop() {
            if node != ROOT && total < min_samples {
                out.narrow += sizes[node];
                continue;
            }
            if self.nodes[node].depth > max_depth {
                out.deep += sizes[node];
                continue;
            }
            if out.drawn.len() >= max_frames.max(1) {
                out.over_budget += sizes[node];
                continue;
            }
            out.drawn.push(node);
            out.max_depth = out.max_depth.max(self.nodes[node].depth);
            for child in &self.nodes[node].children {
                queue.push((self.nodes[*child].total, Reverse(*child)));
            }
        }
        out
    }

    /// Where each drawn frame starts, as a share of all samples from the left edge: a frame's children follow
    /// each other from its own start, in their order. Frames not drawn get `NaN`.
    pub(crate) fn starts(&self, selection: &Selection) -> Vec<f64> {
        let mut start = vec![f64::NAN; self.nodes.len()];
        let total = self.total().max(1) as f64;
        if let Some(first) = selection.drawn.first() {
            start[*first] = 0.0;
        }
        for node in &selection.drawn {
            let mut at = start[*node];
            for child in &self.nodes[*node].children {
                start[*child] = at;
                at += self.nodes[*child].total as f64 / total;
            }
        }
        start
    }

    /// The frames of `other` whose path this tree lacks while it has their parent's: the roots of what only
    /// `other` has, widest first.
    pub(crate) fn gone(&self, other: &Tree) -> Vec<usize> {
        let mut out = Vec::new();
        let mut pairs = vec![(ROOT, ROOT)];
        while let Some((mine, theirs)) = pairs.pop() {
            for child in &other.nodes[theirs].children {
                match self.child_named(mine, other.name(*child)) {
                    Some(m) => pairs.push((m, *child)),
                    None => out.push(*child),
                }
            }
        }
        out.sort_by_key(|n| (Reverse(other.nodes[*n].total), *n));
        out
    }

    /// Each of this tree's frames matched to the frame of `other` with the same path, if any.
    pub(crate) fn matches(&self, other: &Tree) -> Vec<Option<usize>> {
        let mut out = vec![None; self.nodes.len()];
        out[ROOT] = Some(ROOT);
        let mut pairs = vec![(ROOT, ROOT)];
        while let Some((mine, theirs)) = pairs.pop() {
            for child in &self.nodes[mine].children {
                if let Some(t) = other.child_named(theirs, self.name(*child)) {
                    out[*child] = Some(t);
                    pairs.push((*child, t));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks(lines: &[(&str, u64)]) -> Vec<(Vec<String>, u64)> {
        lines.iter().map(|(s, n)| (s.split(';').filter(|f| !f.is_empty()).map(str::to_owned).collect(), *n)).collect()
    }

    fn path(tree: &Tree, names: &[&str]) -> usize {
        names.iter().fold(ROOT, |at, n| tree.child_named(at, n).unwrap_or_else(|| panic!("no {n}")))
    }

    #[test]
    fn frames_merge_by_name_along_the_path_only() {
        let t = Tree::build(&stacks(&[("main;a;x", 3), ("main;a", 2), ("main;b;x", 5), ("main;a;x", 1)]));
        assert_eq!(t.total(), 11);
        let a = path(&t, &["main", "a"]);
        assert_eq!((t.nodes[a].total, t.nodes[a].own), (6, 2));
        assert_eq!(t.nodes[path(&t, &["main", "a", "x"])].total, 4);
        assert_eq!(t.nodes[path(&t, &["main", "b", "x"])].total, 5, "x under b is another frame than x under a");
        assert_eq!(t.nodes[path(&t, &["main"])].total, 11);
    }

    #[test]
    fn children_are_ordered_by_name_and_empty_stacks_count_on_the_root() {
        let t = Tree::build(&stacks(&[("main;zeta", 1), ("main;alpha", 1), ("", 4), ("main;mu", 0)]));
        let main = path(&t, &["main"]);
        let names: Vec<&str> = t.nodes[main].children.iter().map(|c| t.name(*c)).collect();
        assert_eq!(names, ["alpha", "zeta"], "a stack with no samples adds no frame");
        assert_eq!((t.total(), t.nodes[ROOT].own), (6, 4));
    }

    #[test]
    fn counts_saturate_instead_of_overflowing() {
        let t = Tree::build(&stacks(&[("a", u64::MAX), ("a", 5)]));
        assert_eq!(t.total(), u64::MAX);
    }

    #[test]
    fn selection_draws_widest_first_and_counts_what_it_leaves_out() {
        let t = Tree::build(&stacks(&[("main;big;leaf", 900), ("main;small;leaf", 9), ("main;tiny", 1)]));
        let all = t.select(0, 100, 100);
        assert_eq!(all.drawn.len(), t.nodes.len());
        assert_eq!(all.max_depth, 3);
        // Below 10 samples: small (and its leaf) and tiny are too narrow.
        let narrow = t.select(10, 100, 100);
        assert_eq!((narrow.drawn.len(), narrow.narrow), (4, 3));
        // Two levels deep at most: both leaves are too deep.
        let shallow = t.select(0, 2, 100);
        assert_eq!((shallow.deep, shallow.max_depth), (2, 2));
        // A budget of three frames: all, main and big; everything else is over it.
        let budget = t.select(0, 100, 3);
        let names: Vec<&str> = budget.drawn.iter().map(|n| t.name(*n)).collect();
        assert_eq!(names, ["all", "main", "big"]);
        assert_eq!(budget.over_budget, 4);
        for s in [&narrow, &shallow, &budget] {
            assert_eq!(s.drawn.len() as u64 + s.narrow + s.deep + s.over_budget, t.nodes.len() as u64);
        }
    }

    #[test]
    fn children_start_where_their_elder_siblings_end() {
        let t = Tree::build(&stacks(&[("main;a", 1), ("main;b", 2), ("main", 1)]));
        let starts = t.starts(&t.select(0, 10, 10));
        let (a, b) = (path(&t, &["main", "a"]), path(&t, &["main", "b"]));
        assert_eq!((starts[a], starts[b]), (0.0, 0.25));
    }

    #[test]
    fn matching_follows_paths_and_lists_what_only_the_other_has() {
        let cand = Tree::build(&stacks(&[("main;a;x", 1), ("main;new", 1)]));
        let base = Tree::build(&stacks(&[("main;a;x", 1), ("main;old;deep", 5), ("main;a;gone", 2)]));
        let m = cand.matches(&base);
        assert_eq!(m[path(&cand, &["main", "a", "x"])], Some(path(&base, &["main", "a", "x"])));
        assert_eq!(m[path(&cand, &["main", "new"])], None);
        let gone: Vec<&str> = cand.gone(&base).iter().map(|n| base.name(*n)).collect();
        assert_eq!(gone, ["old", "gone"], "the roots of what only the baseline has, widest first");
    }
}
