//! The sibling rule's second half: each sibling candidate's two halves met, and the rule
//! applied.
//!
//! A sibling candidate (a similar pair whose own texts are different texts, `edges`) is an
//! edge unless what the two pages share is mostly sentences repeated for both
//! (`edges::siblings_by_keys`), which needs both pages' views: member and repeated keys.
//! `repeated::sibling_halves` gives each candidate's halves, one at each of its pages' workers;
//! here they meet by candidate. A candidate is one hash-map entry: its halves, and how many
//! times it is an edge now, so a change gives only the difference.
//!
//! The operator exchanges by candidate, holds each time's updates until the input frontier
//! passes it and applies times in order: the output is the same whatever the worker count or
//! batch boundaries.

use std::collections::HashMap;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::runtime::by_time::in_time_order;
use crate::runtime::hashing::Mixed;
use crate::runtime::sorted::{consolidated, merge_counts};
use crate::verify::member::{siblings_by_keys, Edge};
use crate::verify::repeated::{Half, View};

/// A candidate's halves (each sorted, no zero multiplicity) and how many times it is an edge.
#[derive(Debug, Default)]
struct Pair {
    shorter: Vec<(View, isize)>,
    longer: Vec<(View, isize)>,
    edges: isize,
}

impl Pair {
    /// How many times the candidate is an edge: over its halves' pairs, those not siblings.
    fn edges(&self, edge: &Edge) -> isize {
        let mut edges = 0;
        for ((a, ra), m) in &self.shorter {
            for ((b, rb), n) in &self.longer {
                debug_assert!(a.id == edge.shorter && b.id == edge.longer);
                if !siblings_by_keys(&a.content(), ra, &b.keys, rb) {
                    edges += m * n;
                }
            }
        }
        edges
    }
}

/// A worker's candidates.
#[derive(Debug, Default)]
pub struct Pairs {
    pairs: HashMap<Edge, Pair, Mixed>,
}

impl Pairs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one time's halves and appends the changes of the edges to `out`.
    pub fn apply(&mut self, updates: &mut [(Half, isize)], out: &mut Vec<(Edge, isize)>) {
        updates.sort_unstable_by_key(|((candidate, _), _)| *candidate);
        for these in updates.chunk_by(|a, b| a.0 .0 .0 == b.0 .0 .0) {
            let edge = these[0].0 .0 .0;
            let side = |shorter: bool| {
                consolidated(
                    these
                        .iter()
                        .filter(|((candidate, _), _)| candidate.1 == shorter)
                        .map(|((_, view), d)| (view.clone(), *d)),
                )
            };
            let (shorter, longer) = (side(true), side(false));
            if shorter.is_empty() && longer.is_empty() {
                continue;
            }
            let mut pair = self.pairs.remove(&edge).unwrap_or_default();
            merge_counts(&mut pair.shorter, &shorter);
            merge_counts(&mut pair.longer, &longer);
            let edges = pair.edges(&edge);
            if edges != pair.edges {
                out.push((edge, edges - pair.edges));
                pair.edges = edges;
            }
            if !(pair.shorter.is_empty() && pair.longer.is_empty()) {
                self.pairs.insert(edge, pair);
            }
        }
    }

    /// The candidates held.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// The sibling candidates that are not siblings (edges), from their halves
/// (`repeated::sibling_halves`).
pub fn not_siblings<'scope, T>(
    halves: VecCollection<'scope, T, Half, isize>,
) -> VecCollection<'scope, T, Edge, isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    let mut pairs = Pairs::new();
    in_time_order(
        halves,
        "Not siblings",
        |((edge, _), _): &Half| edge.longer.hash ^ edge.shorter.hash.rotate_left(17),
        move |updates, out| pairs.apply(updates, out),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::page::{Content, PageId};
    use crate::testing::{assert_incremental, input_at, Rng};
    use crate::verify::member::Member;
    use crate::verify::repeated::tests::from_scratch;
    use crate::verify::repeated::{sibling_halves, Keys, SiblingUpdate};
    use crate::verify::VerifyMethod;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn id(page: u64) -> PageId {
        PageId { date: page, hash: crate::runtime::hashing::mix64(page) }
    }

    fn member(page: u64, keys: &[u64]) -> Arc<Member> {
        let content =
            Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), ..Default::default() };
        Arc::new(Member::new(VerifyMethod::Lcs, id(page), content))
    }

    fn edge(a: u64, b: u64) -> Edge {
        Edge { shorter_length: a, shorter: id(a), longer: id(b), similarity_ppm: 900_000 }
    }

    /// From scratch at `time`: the candidates alive, joined with their pages' views from
    /// scratch (`repeated`'s oracle: each member's keys in any block at its page), those not
    /// siblings; and how many of the pairs met were siblings.
    fn judged(steps: &[Vec<(SiblingUpdate, isize)>], time: u64) -> (BTreeMap<Edge, isize>, usize) {
        let alive = input_at(steps, time);
        let all = from_scratch(steps, time);
        let views = |page: PageId| {
            all.iter()
                .filter(move |((p, _), _)| *p == page)
                .map(|((_, view), n)| (view.clone(), *n))
        };
        let (mut state, mut siblings) = (BTreeMap::new(), 0);
        for (part, &c) in &alive {
            // Each candidate is given at both its pages; count it once, at its shorter.
            let SiblingUpdate::Candidate((e, true)) = part else { continue };
            let at_longer = alive.get(&SiblingUpdate::Candidate((*e, false))).copied().unwrap_or(0);
            for ((a, ra), m) in views(e.shorter) {
                for ((b, rb), n) in views(e.longer) {
                    if !siblings_by_keys(&a.content(), &ra, &b.keys, &rb) {
                        *state.entry(*e).or_insert(0) += c * at_longer * m * n;
                    } else {
                        siblings += 1;
                    }
                }
            }
        }
        state.retain(|_, d| *d != 0);
        (state, siblings)
    }

    /// Pages coming, going and changing content; blocks coming and going (at pages there or
    /// not); candidates coming and going (between pages there or not), each at both its pages.
    fn workload(seed: u64) -> Vec<Vec<(SiblingUpdate, isize)>> {
        let mut rng = Rng(seed);
        let mut below = |n: u64| rng.below(n);
        let mut members: BTreeMap<u64, Arc<Member>> = BTreeMap::new();
        let mut blocks: Vec<(u64, Keys)> = Vec::new();
        let mut candidates: Vec<Edge> = Vec::new();
        let mut steps = Vec::new();
        for _ in 0..12 {
            let mut step = Vec::new();
            for _ in 0..8 {
                let page = below(8);
                match below(8) {
                    0 | 1 => {
                        if let Some(old) = members.remove(&page) {
                            step.push((SiblingUpdate::Member(old), -1));
                        }
                        if below(4) != 0 {
                            // Few keys, so that pairs share and blocks repeat them.
                            let keys: Vec<u64> = (0..1 + below(6)).map(|_| below(8)).collect();
                            let new = member(page, &keys);
                            step.push((SiblingUpdate::Member(new.clone()), 1));
                            members.insert(page, new);
                        }
                    }
                    2 if !blocks.is_empty() => {
                        let (page, old) = blocks.swap_remove(below(blocks.len() as u64) as usize);
                        step.push((SiblingUpdate::Blocks(id(page), old), -1));
                    }
                    2..=4 => {
                        let mut keys: Vec<u64> = (0..2 + below(6)).map(|_| below(8)).collect();
                        keys.sort_unstable();
                        keys.dedup();
                        let keys = Arc::new(keys);
                        step.push((SiblingUpdate::Blocks(id(page), keys.clone()), 1));
                        blocks.push((page, keys));
                    }
                    5 if !candidates.is_empty() => {
                        let e = candidates.swap_remove(below(candidates.len() as u64) as usize);
                        step.push((SiblingUpdate::Candidate((e, true)), -1));
                        step.push((SiblingUpdate::Candidate((e, false)), -1));
                    }
                    _ => {
                        let other = below(8);
                        if other != page {
                            let e = edge(page.min(other), page.max(other));
                            step.push((SiblingUpdate::Candidate((e, true)), 1));
                            step.push((SiblingUpdate::Candidate((e, false)), 1));
                            candidates.push(e);
                        }
                    }
                }
            }
            steps.push(step);
        }
        steps
    }

    #[test]
    fn incremental_not_siblings_equal_the_not_siblings_from_scratch() {
        let (mut edges, mut siblings) = (0, 0);
        for seed in 0..12 {
            let steps = workload(seed);
            for time in 0..steps.len() as u64 {
                let (state, judged) = judged(&steps, time);
                edges += state.len();
                siblings += judged;
            }
            assert_incremental(
                &steps,
                |parts| not_siblings(sibling_halves(parts)),
                |time| judged(&steps, time).0,
                &format!("seed {seed}"),
            );
        }
        // The workload must make edges, and siblings too (not every candidate an edge).
        assert!(edges > 20 && siblings > 20, "{edges} edges, {siblings} siblings");
    }
}
