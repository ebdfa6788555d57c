//! Connected components, kept incrementally: a union-find of our own that also takes
//! retractions.
//!
//! Each node is labelled with the smallest `PageId::anchor_key` of the present pages in its
//! component (the component's anchor); nodes of a component without a present page have no
//! label. This is what differential's label propagation (`propagate`) gives on the symmetric
//! edges, which the stage used before. That kept every node's label in arrangements inside an
//! iteration, updates that grew per page with the corpus (6 a page at 100k pages, 12 at 1M),
//! and ran rounds of joins for every merge. `Components` keeps a node in one hash-map entry
//! (its edges, its component and its label) and a component as the list of its members:
//!
//! - an edge that arrives between two components merges the smaller into the larger (its
//!   members move: O(smaller), O(n log n) over any sequence of merges);
//! - an edge that leaves splits nothing at once: its component is marked, and once the time's
//!   changes are in, a marked component is walked from its members (breadth first, over its
//!   edges) into the pieces it now is (O(component) once a time, whatever the edges it lost);
//! - a page that arrives or leaves moves its component's label only when it is the new
//!   smallest, or was the smallest (then the members are scanned);
//! - a node whose label may have changed is noted, and at the end of the time the noted nodes'
//!   labels are compared with the ones they had: only differences come out.
//!
//! A node alone (most pages: two in three of a crawl's pages verify against no other) has no
//! component entry: its label is its own anchor key while its page is present. A node alone
//! whose page is present once, with no edge (the common case once its time is applied), is its
//! id alone in a set (`alone`: 16 bytes an entry, where a `Node` entry takes 80), and becomes
//! a `Node` again as its next change arrives.
//!
//! The operator sends every update to one worker (the first): the components cross every
//! partition of the pages, and the state is a few dozen bytes a page. It applies a time once
//! the input frontier has passed it, times in order, so the labels are a function of the
//! edges and pages at each time, whatever the worker count or batch boundaries.

use std::collections::{HashMap, HashSet};

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::ingest::page::PageId;
use crate::runtime::by_time::in_time_order;
use crate::runtime::footprint::{Gauged, Structure};
use crate::runtime::hashing::Mixed;

/// An anchor key (`PageId::anchor_key`): a component's label.
type Label = (u64, u64);

/// No component: the node is alone.
const ALONE: u64 = 0;

/// A node: its edges (neighbour and multiplicity, only positive ones kept), how many times its
/// page is present, its component (`ALONE` when it has no edge) and the label it was given.
#[derive(Debug, Default)]
struct Node {
    edges: Vec<(PageId, isize)>,
    present: isize,
    component: u64,
    label: Option<Label>,
}

/// A component of two nodes or more: its members and its label.
#[derive(Debug)]
struct Component {
    members: Vec<PageId>,
    label: Option<Label>,
}

/// One input update of the operator.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Change {
    /// A page (a node with a label of its own).
    Page(PageId),
    /// An edge between two nodes (either direction: the graph is undirected).
    Edge(PageId, PageId),
}

/// The components of one graph under insertions and retractions of pages and edges.
#[derive(Debug, Default)]
pub struct Components {
    nodes: HashMap<PageId, Node, Mixed>,
    /// Nodes alone, their page present once and no edge: labelled by their own anchor key.
    alone: HashSet<PageId, Mixed>,
    components: HashMap<u64, Component, Mixed>,
    next: u64,
    /// Nodes whose label may have changed in this time.
    noted: Vec<PageId>,
    /// Nodes whose component lost an edge in this time.
    split: Vec<PageId>,
}

impl Components {
    pub fn new() -> Self {
        Components { next: ALONE + 1, ..Default::default() }
    }

    /// Nodes held (pages present, and nodes with edges).
    pub fn len(&self) -> usize {
        self.nodes.len() + self.alone.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.alone.is_empty()
    }

    /// The node of `id`, made a `Node` if it is in `alone`, or new.
    fn node(&mut self, id: PageId) -> &mut Node {
        let alone = self.alone.remove(&id);
        self.nodes.entry(id).or_insert_with(|| match alone {
            true => Node { present: 1, label: Some(id.anchor_key()), ..Default::default() },
            false => Node::default(),
        })
    }

    /// Components of two nodes or more.
    pub fn components(&self) -> usize {
        self.components.len()
    }

    /// The bytes held (`runtime::footprint`), walked: the two maps' tables, each node's edges
    /// and each component's members.
    pub fn bytes(&self) -> usize {
        use crate::runtime::footprint::{array, hash_table};
        use std::mem::size_of;
        hash_table(self.nodes.capacity(), size_of::<(PageId, Node)>())
            + hash_table(self.alone.capacity(), size_of::<PageId>())
            + self
                .nodes
                .values()
                .map(|n| array::<(PageId, isize)>(n.edges.capacity()))
                .sum::<usize>()
            + hash_table(self.components.capacity(), size_of::<(u64, Component)>())
            + self.components.values().map(|c| array::<PageId>(c.members.capacity())).sum::<usize>()
            + array::<PageId>(self.noted.capacity() + self.split.capacity())
    }

    /// A node's current label: its component's, or its own while its page is present.
    fn label_of(&self, id: PageId) -> Option<Label> {
        if self.alone.contains(&id) {
            return Some(id.anchor_key());
        }
        let node = self.nodes.get(&id)?;
        if node.component == ALONE {
            (node.present > 0).then(|| id.anchor_key())
        } else {
            self.components[&node.component].label
        }
    }

    /// Applies one time's changes (consolidated or not) and appends the label changes
    /// `((node, label), diff)` to `out`, consolidated.
    pub fn apply(
        &mut self,
        changes: &mut Vec<(Change, isize)>,
        out: &mut Vec<((PageId, PageId), isize)>,
    ) {
        // One direction for an edge, so that a time's changes of it add up to one.
        for (change, _) in changes.iter_mut() {
            if let Change::Edge(a, b) = change {
                if a > b {
                    std::mem::swap(a, b);
                }
            }
        }
        differential_dataflow::consolidation::consolidate(changes);
        for (change, diff) in changes.drain(..) {
            match change {
                Change::Page(id) => self.page(id, diff),
                Change::Edge(a, b) if a != b => self.edge(a, b, diff),
                // A loop joins a node to itself: no component changes.
                Change::Edge(..) => {}
            }
        }
        self.split_marked();
        self.relabel(out);
    }

    fn page(&mut self, id: PageId, diff: isize) {
        let node = self.node(id);
        let was = node.present > 0;
        node.present += diff;
        let is = node.present > 0;
        let component = node.component;
        self.noted.push(id);
        if was == is || component == ALONE {
            return;
        }
        let key = id.anchor_key();
        let comp = self.components.get_mut(&component).expect("a node's component is held");
        let label = if is {
            Some(comp.label.map_or(key, |label| label.min(key)))
        } else if comp.label == Some(key) {
            let nodes = &self.nodes;
            comp.members.iter().filter(|m| nodes[m].present > 0).map(|m| m.anchor_key()).min()
        } else {
            comp.label
        };
        if label != comp.label {
            comp.label = label;
            self.noted.extend_from_slice(&comp.members);
        }
    }

    fn edge(&mut self, a: PageId, b: PageId, diff: isize) {
        let before = adjust(&mut self.node(a).edges, b, diff);
        adjust(&mut self.node(b).edges, a, diff);
        let after = before + diff;
        if before <= 0 && after > 0 {
            self.union(a, b);
        } else if before > 0 && after <= 0 {
            self.split.push(a);
        }
        self.noted.push(a);
        self.noted.push(b);
    }

    /// The component of `id`, made for it when it is alone.
    fn component_of(&mut self, id: PageId) -> u64 {
        let node = self.nodes.get_mut(&id).expect("an edge's nodes are held");
        if node.component != ALONE {
            return node.component;
        }
        let component = self.next;
        self.next += 1;
        node.component = component;
        let label = (node.present > 0).then(|| id.anchor_key());
        self.components.insert(component, Component { members: vec![id], label });
        component
    }

    fn union(&mut self, a: PageId, b: PageId) {
        let (ca, cb) = (self.component_of(a), self.component_of(b));
        if ca == cb {
            return;
        }
        let (into, from) =
            if self.components[&ca].members.len() >= self.components[&cb].members.len() {
                (ca, cb)
            } else {
                (cb, ca)
            };
        let from = self.components.remove(&from).expect("held");
        let into_comp = self.components.get_mut(&into).expect("held");
        let label = match (into_comp.label, from.label) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        if label != into_comp.label {
            self.noted.extend_from_slice(&into_comp.members);
        }
        if label != from.label {
            self.noted.extend_from_slice(&from.members);
        }
        into_comp.label = label;
        for m in &from.members {
            self.nodes.get_mut(m).expect("a member is held").component = into;
        }
        into_comp.members.extend(from.members);
    }

    /// Walks each component that lost an edge into the pieces it now is.
    fn split_marked(&mut self) {
        let mut marked: Vec<u64> = self
            .split
            .drain(..)
            .map(|id| self.nodes[&id].component)
            .filter(|&c| c != ALONE)
            .collect();
        marked.sort_unstable();
        marked.dedup();
        for component in marked {
            let Some(comp) = self.components.remove(&component) else { continue };
            self.noted.extend_from_slice(&comp.members);
            // Unvisited members are those still in `component`.
            for &start in &comp.members {
                if self.nodes[&start].component != component {
                    continue;
                }
                let piece = self.next;
                self.next += 1;
                let mut members = vec![start];
                self.nodes.get_mut(&start).expect("held").component = piece;
                let mut at = 0;
                while at < members.len() {
                    let id = members[at];
                    at += 1;
                    for i in 0..self.nodes[&id].edges.len() {
                        let next = self.nodes[&id].edges[i].0;
                        let node = self.nodes.get_mut(&next).expect("an edge's nodes are held");
                        if node.component == component {
                            node.component = piece;
                            members.push(next);
                        }
                    }
                }
                if members.len() == 1 {
                    self.nodes.get_mut(&start).expect("held").component = ALONE;
                    continue;
                }
                let nodes = &self.nodes;
                let label =
                    members.iter().filter(|m| nodes[m].present > 0).map(|m| m.anchor_key()).min();
                self.components.insert(piece, Component { members, label });
            }
        }
    }

    /// Compares the noted nodes' labels with those they had, and lets go of empty nodes.
    fn relabel(&mut self, out: &mut Vec<((PageId, PageId), isize)>) {
        let mut noted = std::mem::take(&mut self.noted);
        noted.sort_unstable();
        noted.dedup();
        for &id in &noted {
            let label = self.label_of(id);
            let node = self.nodes.get_mut(&id).expect("a noted node is held");
            if node.label != label {
                if let Some(old) = node.label {
                    out.push(((id, PageId::from_anchor_key(old)), -1));
                }
                if let Some(new) = label {
                    out.push(((id, PageId::from_anchor_key(new)), 1));
                }
                node.label = label;
            }
            if node.edges.is_empty() && node.component == ALONE {
                if node.present <= 0 {
                    debug_assert!(node.label.is_none());
                    self.nodes.remove(&id);
                } else if node.present == 1 {
                    debug_assert_eq!(node.label, Some(id.anchor_key()));
                    self.nodes.remove(&id);
                    self.alone.insert(id);
                }
            }
        }
        noted.clear();
        self.noted = noted;
    }
}

/// Adds `diff` to the multiplicity of `to` in `edges` (dropped at zero or below); returns the
/// multiplicity before.
fn adjust(edges: &mut Vec<(PageId, isize)>, to: PageId, diff: isize) -> isize {
    match edges.iter().position(|e| e.0 == to) {
        Some(i) => {
            let before = edges[i].1;
            edges[i].1 += diff;
            if edges[i].1 <= 0 {
                edges.swap_remove(i);
            }
            before
        }
        None => {
            if diff > 0 {
                edges.push((to, diff));
            }
            0
        }
    }
}

/// Connected components of `edges` over `pages`: `(node, anchor)` for every node in a
/// component with a present page, the anchor being that component's page with the smallest
/// `PageId::anchor_key`. Every update goes to the first worker, which applies each time once
/// the frontier has passed it, times in order.
pub fn components<'scope, T>(
    edges: VecCollection<'scope, T, (PageId, PageId), isize>,
    pages: VecCollection<'scope, T, PageId, isize>,
) -> VecCollection<'scope, T, (PageId, PageId), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    let changes = edges.map(|(a, b)| Change::Edge(a, b)).concat(pages.map(Change::Page));
    let mut components = Gauged::new(
        &crate::run::Runtime::of(&changes.scope()).footprint,
        Structure::Components,
        Components::new(),
        Components::bytes,
    );
    in_time_order(
        changes,
        "Components",
        |_| 0,
        move |changes, out| {
            components.state.apply(changes, out);
            components.report();
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{state_at, Rng};
    use std::collections::BTreeMap;
    use std::collections::BTreeSet;

    fn id(n: u64) -> PageId {
        // Anchor keys in another order than the numbers, so the smallest number is not always
        // the anchor.
        PageId { date: n, hash: crate::runtime::hashing::mix64(n) % 1000 }
    }

    /// From scratch: the labels of the graph of the edges and pages alive.
    fn from_scratch(
        pages: &BTreeMap<PageId, isize>,
        edges: &BTreeMap<(PageId, PageId), isize>,
    ) -> BTreeMap<(PageId, PageId), isize> {
        let mut adjacency: BTreeMap<PageId, BTreeSet<PageId>> = BTreeMap::new();
        for (&(a, b), &n) in edges {
            if n > 0 && a != b {
                adjacency.entry(a).or_default().insert(b);
                adjacency.entry(b).or_default().insert(a);
            }
        }
        let mut nodes: BTreeSet<PageId> = adjacency.keys().copied().collect();
        nodes.extend(pages.iter().filter(|p| *p.1 > 0).map(|p| *p.0));
        let mut labels = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for &start in &nodes {
            if !seen.insert(start) {
                continue;
            }
            let mut component = vec![start];
            let mut at = 0;
            while at < component.len() {
                for &next in adjacency.get(&component[at]).into_iter().flatten() {
                    if seen.insert(next) {
                        component.push(next);
                    }
                }
                at += 1;
            }
            let anchor = component
                .iter()
                .filter(|p| pages.get(p).is_some_and(|&n| n > 0))
                .min_by_key(|p| p.anchor_key());
            if let Some(&anchor) = anchor {
                for &p in &component {
                    labels.insert((p, anchor), 1);
                }
            }
        }
        labels
    }

    /// Pages and edges arriving and leaving: components growing, merging, splitting (an edge
    /// of a path or a cycle leaving), losing their anchor page, edges whose nodes are not
    /// pages, an edge given twice, a loop.
    fn workload(seed: u64) -> Vec<Vec<(Change, isize)>> {
        let mut rng = Rng(seed);
        let mut pages: BTreeSet<u64> = BTreeSet::new();
        let mut edges: BTreeMap<(u64, u64), isize> = BTreeMap::new();
        let mut steps = Vec::new();
        for _ in 0..12 {
            let mut step = Vec::new();
            for _ in 0..8 {
                match rng.below(6) {
                    0 | 1 => {
                        let p = rng.below(24);
                        let d = if pages.insert(p) {
                            1
                        } else {
                            pages.remove(&p);
                            -1
                        };
                        step.push((Change::Page(id(p)), d));
                    }
                    2..=4 => {
                        let a = rng.below(24);
                        // Mostly near neighbours: paths and cycles that can split.
                        let b = if rng.below(3) == 0 {
                            rng.below(26)
                        } else {
                            (a + 1 + rng.below(2)) % 24
                        };
                        let n = edges.entry((a, b)).or_default();
                        *n += 1;
                        step.push((Change::Edge(id(a), id(b)), 1));
                    }
                    _ => {
                        let held: Vec<(u64, u64)> =
                            edges.iter().filter(|e| *e.1 > 0).map(|e| *e.0).collect();
                        if let Some(&(a, b)) =
                            held.get(rng.below(held.len().max(1) as u64) as usize)
                        {
                            *edges.get_mut(&(a, b)).expect("held") -= 1;
                            // Either direction retracts it.
                            let (a, b) = if rng.below(2) == 0 { (a, b) } else { (b, a) };
                            step.push((Change::Edge(id(a), id(b)), -1));
                        }
                    }
                }
            }
            steps.push(step);
        }
        steps
    }

    /// The state at each time of `steps`, from scratch.
    fn oracle(steps: &[Vec<(Change, isize)>]) -> Vec<BTreeMap<(PageId, PageId), isize>> {
        let (mut pages, mut edges) = (BTreeMap::new(), BTreeMap::new());
        steps
            .iter()
            .map(|step| {
                for (change, diff) in step {
                    match *change {
                        Change::Page(p) => *pages.entry(p).or_insert(0) += diff,
                        Change::Edge(a, b) => {
                            *edges.entry((a.min(b), a.max(b))).or_insert(0) += diff
                        }
                    }
                }
                from_scratch(&pages, &edges)
            })
            .collect()
    }

    #[test]
    fn incremental_components_equal_the_components_from_scratch() {
        for seed in 0..10 {
            let steps = workload(seed);
            let expected = oracle(&steps);
            for workers in [1, 2, 4] {
                let output = crate::testing::run_steps(&steps, workers, |changes| {
                    let edges = changes.clone().flat_map(|c| match c {
                        Change::Edge(a, b) => Some((a, b)),
                        Change::Page(_) => None,
                    });
                    let pages = changes.flat_map(|c| match c {
                        Change::Page(p) => Some(p),
                        Change::Edge(..) => None,
                    });
                    components(edges, pages)
                });
                for (time, expected) in expected.iter().enumerate() {
                    assert_eq!(
                        &state_at(&output, time as u64),
                        expected,
                        "seed {seed}, {workers} workers, time {time}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_kernel_equals_the_components_from_scratch_after_every_change() {
        // One change a time: every merge, split and relabel alone.
        for seed in 0..20 {
            let steps: Vec<(Change, isize)> = workload(seed).into_iter().flatten().collect();
            let mut components = Components::new();
            let mut state: BTreeMap<(PageId, PageId), isize> = BTreeMap::new();
            let (mut pages, mut edges) = (BTreeMap::new(), BTreeMap::new());
            for (change, diff) in steps {
                match change {
                    Change::Page(p) => *pages.entry(p).or_insert(0) += diff,
                    Change::Edge(a, b) => *edges.entry((a.min(b), a.max(b))).or_insert(0) += diff,
                }
                let mut out = Vec::new();
                components.apply(&mut vec![(change, diff)], &mut out);
                for (label, d) in out {
                    *state.entry(label).or_insert(0) += d;
                }
                state.retain(|_, d| *d != 0);
                assert_eq!(state, from_scratch(&pages, &edges), "seed {seed}");
            }
            // Everything gone: nothing held.
            let mut all: Vec<(Change, isize)> =
                pages.iter().map(|(&p, &n)| (Change::Page(p), -n)).collect();
            all.extend(edges.iter().map(|(&(a, b), &n)| (Change::Edge(a, b), -n)));
            let mut out = Vec::new();
            components.apply(&mut all, &mut out);
            assert!(
                components.is_empty() && components.components() == 0,
                "seed {seed}: {components:?}"
            );
        }
    }

    #[test]
    fn a_sliding_window_holds_its_window_only() {
        // Retention: pages arrive with edges to recent pages and leave in arrival order; the
        // state holds the window's nodes, never the pages gone.
        let (window, mut rng) = (50u64, Rng(7));
        let mut components = Components::new();
        let mut out = Vec::new();
        let mut edges_of: BTreeMap<u64, Vec<(Change, isize)>> = BTreeMap::new();
        for p in 0..2_000u64 {
            let mut changes = vec![(Change::Page(id(p)), 1)];
            let mut edges = Vec::new();
            for _ in 0..rng.below(3) {
                let q = p - rng.below(window.min(p).max(1)).min(p);
                if q != p {
                    edges.push((Change::Edge(id(q), id(p)), 1));
                }
            }
            changes.extend(edges.iter().cloned());
            edges_of.entry(p).or_default().extend(edges.iter().cloned());
            if p >= window {
                // The oldest page leaves, and every edge it is in.
                let old = p - window;
                changes.push((Change::Page(id(old)), -1));
                for list in edges_of.values() {
                    for (change, _) in list {
                        if matches!(change, Change::Edge(a, b) if *a == id(old) || *b == id(old)) {
                            changes.push((change.clone(), -1));
                        }
                    }
                }
                for list in edges_of.values_mut() {
                    list.retain(
                        |(c, _)| !matches!(c, Change::Edge(a, b) if *a == id(old) || *b == id(old)),
                    );
                }
                edges_of.remove(&old);
            }
            components.apply(&mut changes, &mut out);
            assert!(
                components.len() <= window as usize,
                "page {p}: {} nodes held",
                components.len()
            );
        }
        assert_eq!(components.len(), window as usize);
        assert!(components.components() <= window as usize / 2);
    }

    #[test]
    fn a_page_alone_has_no_component() {
        let mut components = Components::new();
        let mut out = Vec::new();
        components.apply(&mut vec![(Change::Page(id(1)), 1), (Change::Page(id(2)), 1)], &mut out);
        assert_eq!(components.components(), 0);
        out.sort();
        assert_eq!(out, vec![((id(1), id(1)), 1), ((id(2), id(2)), 1)]);
        // An edge joins them under the smaller anchor key; removed, each is alone again.
        out.clear();
        components.apply(&mut vec![(Change::Edge(id(1), id(2)), 1)], &mut out);
        assert_eq!(components.components(), 1);
        let anchor = if id(1).anchor_key() < id(2).anchor_key() { id(1) } else { id(2) };
        let other = if anchor == id(1) { id(2) } else { id(1) };
        assert_eq!(out, vec![((other, other), -1), ((other, anchor), 1)]);
        out.clear();
        components.apply(&mut vec![(Change::Edge(id(2), id(1)), -1)], &mut out);
        assert_eq!(components.components(), 0);
        assert_eq!(out, vec![((other, anchor), -1), ((other, other), 1)]);
    }

    /// A page alone and present once is its id in `alone`, not a `Node`: as it arrives, as its
    /// last edge leaves, and as a second copy of it leaves; it is a `Node` while it has an
    /// edge or is present twice, and nothing once it is gone.
    #[test]
    fn a_page_alone_is_held_as_its_id() {
        let mut components = Components::new();
        let mut out = Vec::new();
        let mut apply = |components: &mut Components, mut changes: Vec<(Change, isize)>| {
            components.apply(&mut changes, &mut out);
            (components.alone.len(), components.nodes.len())
        };
        let pages = |n: u64| (1..=n).map(|p| (Change::Page(id(p)), 1)).collect::<Vec<_>>();
        assert_eq!(apply(&mut components, pages(3)), (3, 0));
        assert_eq!(apply(&mut components, vec![(Change::Edge(id(1), id(2)), 1)]), (1, 2));
        assert_eq!(apply(&mut components, vec![(Change::Edge(id(1), id(2)), -1)]), (3, 0));
        assert_eq!(apply(&mut components, vec![(Change::Page(id(3)), 1)]), (2, 1));
        assert_eq!(apply(&mut components, vec![(Change::Page(id(3)), -1)]), (3, 0));
        assert_eq!(apply(&mut components, vec![(Change::Page(id(1)), -1)]), (2, 0));
        assert_eq!(components.label_of(id(2)), Some(id(2).anchor_key()));
        assert_eq!(components.label_of(id(1)), None);
    }
}
