//! Exact families: identical pages collapsed before any comparison.
//!
//! Pages whose whole sentence sequence (template included) is the same are one family, whatever
//! its size. The family's anchor (`PageId::anchor_key`), its representative, alone goes on
//! through fingerprints, candidate sets and verification; every other member takes its
//! representative's cluster with resemblance 1. So no cap splits a family (3 or 100,000
//! identical stubs are one cluster), a page that is template from end to end still clusters with
//! its identical siblings, and a family costs the comparisons of one page. Pages without
//! sentences have no family.
//!
//! Incremental, in an operator of its own (`families`): a worker holds the families of its
//! content keys, a family of one page as one hash-map entry (key and page, 24 bytes) and a
//! larger one as its members ordered by anchor key. A page joining or leaving a family of n
//! costs O(log n); the representative changes only when the anchor joins or leaves
//! (probability ~1/n), which moves every member: O(1) expected a change, whatever order pages
//! come and go in (under retention the earliest page always leaves first). Before, two
//! reduces (per key and bucket of page hashes, then per key) and a join held ~5.4 arranged
//! updates a page for the same result.

use std::collections::BTreeMap;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::ingest::page::{Page, PageId};
use crate::runtime::by_time::in_time_order;
use crate::runtime::compact::{Compact, Narrow};
use crate::runtime::footprint::{Gauged, Structure};
use crate::runtime::hashing::mix64;
use crate::verify::Assignment;

/// The key of a page's whole content (its sentences' keys, in order); `None` without sentences.
pub fn content_key(page: &Page) -> Option<u64> {
    if page.sentences.is_empty() {
        return None;
    }
    let h = page.sentences.iter().fold(page.sentences.len() as u64, |h, s| {
        mix64(h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ s.key)
    });
    Some(h)
}

/// A member's assignment, from its representative's.
pub fn member_assignment(representative: PageId, of_representative: &Assignment) -> Assignment {
    Assignment {
        cluster: of_representative.cluster,
        leader: representative,
        similarity_ppm: 1_000_000,
    }
}

/// A family of more than one page (or of a page held more than once): its members by anchor
/// key, with their multiplicities (none zero).
type Members = BTreeMap<(u64, u64), isize>;

/// A worker's families, by content key: a family of one page (most of them) maps to the page,
/// the others to their members.
#[derive(Debug, Default)]
pub struct Families {
    families: Compact<u64, PageId, Members>,
}

impl Families {
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes held (`runtime::footprint`), walked: the maps' tables and each family of
    /// several pages (a B-tree: about a node of eleven entries for every eight members).
    pub fn bytes(&self) -> usize {
        let node =
            11 * std::mem::size_of::<((u64, u64), isize)>() + 2 * std::mem::size_of::<usize>();
        self.families.bytes(|_| 0, |members| members.len().div_ceil(8) * node)
    }

    /// Applies one time's updates `((key, page), diff)` and appends the changes of
    /// `(page, representative)` to `out`.
    pub fn apply(
        &mut self,
        updates: &mut [((u64, PageId), isize)],
        out: &mut Vec<((PageId, PageId), isize)>,
    ) {
        updates.sort_unstable_by_key(|&((key, id), _)| (key, id.anchor_key()));
        let mut delta: Vec<((u64, u64), isize)> = Vec::new();
        for these in updates.chunk_by(|a, b| a.0 .0 == b.0 .0) {
            let key = these[0].0 .0;
            delta.clear();
            for &((_, id), diff) in these {
                match delta.last_mut() {
                    Some(last) if last.0 == id.anchor_key() => last.1 += diff,
                    _ => delta.push((id.anchor_key(), diff)),
                }
            }
            delta.retain(|d| d.1 != 0);
            if !delta.is_empty() && !self.one_page(key, &delta, out) {
                self.change(key, &delta, out);
            }
        }
    }

    /// The common cases: a page alone in a new family, or the one page of a family leaving.
    /// Whether it applied `delta`.
    fn one_page(
        &mut self,
        key: u64,
        delta: &[((u64, u64), isize)],
        out: &mut Vec<((PageId, PageId), isize)>,
    ) -> bool {
        match *delta {
            [(anchor, 1)] if self.families.insert_new(key, PageId::from_anchor_key(anchor)) => {
                let id = PageId::from_anchor_key(anchor);
                out.push(((id, id), 1));
                true
            }
            [(anchor, -1)] if self.families.remove_one(&key, &PageId::from_anchor_key(anchor)) => {
                let id = PageId::from_anchor_key(anchor);
                out.push(((id, id), -1));
                true
            }
            _ => false,
        }
    }

    /// Any other change of a family.
    fn change(
        &mut self,
        key: u64,
        delta: &[((u64, u64), isize)],
        out: &mut Vec<((PageId, PageId), isize)>,
    ) {
        let mut members =
            self.families.take(&key, |id| Members::from([(id.anchor_key(), 1)]), Members::new);
        let before = members.first_key_value().map(|(&anchor, _)| PageId::from_anchor_key(anchor));
        for &(anchor, diff) in delta {
            let entry = members.entry(anchor).or_insert(0);
            *entry += diff;
            if *entry == 0 {
                members.remove(&anchor);
            }
        }
        let after = members.first_key_value().map(|(&anchor, _)| PageId::from_anchor_key(anchor));
        if before == after {
            // Only the pages that came or went change.
            let representative =
                after.expect("a family with changes and the same anchor has members");
            out.extend(
                delta.iter().map(|&(anchor, diff)| {
                    ((PageId::from_anchor_key(anchor), representative), diff)
                }),
            );
        } else {
            // A new anchor: every member moves (the ones that left from the old).
            if let Some(old) = before {
                let mut was: Members = (*members).clone();
                for &(anchor, diff) in delta {
                    let entry = was.entry(anchor).or_insert(0);
                    *entry -= diff;
                    if *entry == 0 {
                        was.remove(&anchor);
                    }
                }
                out.extend(
                    was.iter().map(|(&anchor, &n)| ((PageId::from_anchor_key(anchor), old), -n)),
                );
            }
            if let Some(new) = after {
                out.extend(
                    members.iter().map(|(&anchor, &n)| ((PageId::from_anchor_key(anchor), new), n)),
                );
            }
        }
        self.families.put(key, members, |members| match members.first_key_value() {
            None => Narrow::Gone,
            Some((&anchor, 1)) if members.len() == 1 => {
                Narrow::One(PageId::from_anchor_key(anchor))
            }
            Some(_) => Narrow::Many,
        });
    }
}

/// The family operator.
pub trait ExactFamilies<'scope, T: Timestamp + Lattice> {
    /// `(page, representative)` for every page: its family's anchor (itself when it is the
    /// anchor, or has no sentences).
    fn exact_families(self) -> VecCollection<'scope, T, (PageId, PageId), isize>;
}

impl<'scope, T> ExactFamilies<'scope, T> for VecCollection<'scope, T, (PageId, Page), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    fn exact_families(self) -> VecCollection<'scope, T, (PageId, PageId), isize> {
        let keyed = self.clone().flat_map(|(id, page)| content_key(&page).map(|key| (key, id)));
        // A page without sentences has no family: it represents itself.
        let alone = self.filter(|(_, page)| page.sentences.is_empty()).map(|(id, _)| (id, id));
        families(keyed).concat(alone)
    }
}

/// The families operator: `(content key, page)` in, `(page, representative)` out. It exchanges
/// by key, holds each time's updates until the input frontier passes it and applies times in
/// order (timestamps are totally ordered), so the same updates give the same output whatever
/// the worker count or batch boundaries.
pub fn families<'scope, T>(
    keyed: VecCollection<'scope, T, (u64, PageId), isize>,
) -> VecCollection<'scope, T, (PageId, PageId), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    let mut families = Gauged::new(
        &crate::run::Runtime::of(&keyed.scope()).footprint,
        Structure::Families,
        Families::new(),
        Families::bytes,
    );
    in_time_order(
        keyed,
        "Exact families",
        |(key, _)| *key,
        move |updates, out| {
            families.state.apply(updates, out);
            families.report();
        },
    )
}

/// Every member's assignment: representatives keep theirs, members take their representative's.
pub fn expand_families<'scope, T: Timestamp + Lattice + Ord>(
    families: VecCollection<'scope, T, (PageId, PageId), isize>,
    representatives: VecCollection<'scope, T, (PageId, Assignment), isize>,
) -> VecCollection<'scope, T, (PageId, Assignment), isize> {
    let members = families
        .filter(|(id, representative)| id != representative)
        .map(|(id, representative)| (representative, id));
    members
        .join_map(representatives.clone(), |&representative, &id, assignment| {
            (id, member_assignment(representative, assignment))
        })
        .concat(representatives)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::page::Sentence;
    use crate::testing::{assert_incremental, input_at, Rng};
    use std::collections::BTreeMap;

    fn page(keys: &[u64]) -> Page {
        Page::of_keys(keys, |key| Sentence::new(key, 1, true, 0))
    }

    #[test]
    fn the_key_is_the_whole_sequence_in_order() {
        assert_eq!(content_key(&page(&[1, 2, 3])), content_key(&page(&[1, 2, 3])));
        assert_ne!(content_key(&page(&[1, 2, 3])), content_key(&page(&[3, 2, 1])));
        assert_ne!(content_key(&page(&[1, 2, 3])), content_key(&page(&[1, 2])));
        assert_ne!(content_key(&page(&[1, 2])), content_key(&page(&[1, 2, 2])));
        assert_eq!(content_key(&page(&[])), None);
    }

    fn id(n: u64) -> PageId {
        // Anchor keys in another order than the numbers.
        PageId { date: n, hash: mix64(n) % 1000 }
    }

    /// From scratch at `time`: every page present then, with its family's anchor.
    fn from_scratch(
        steps: &[Vec<((u64, PageId), isize)>],
        time: u64,
    ) -> BTreeMap<(PageId, PageId), isize> {
        let alive = input_at(steps, time);
        let mut anchors: BTreeMap<u64, PageId> = BTreeMap::new();
        for &(key, id) in alive.keys() {
            let anchor = anchors.entry(key).or_insert(id);
            if id.anchor_key() < anchor.anchor_key() {
                *anchor = id;
            }
        }
        let mut state = BTreeMap::new();
        for ((key, id), n) in alive {
            *state.entry((id, anchors[&key])).or_insert(0) += n;
        }
        state.retain(|_, d| *d != 0);
        state
    }

    /// Pages coming, going and coming back with other content: families of one to a dozen
    /// pages whose anchors come and go, a page held twice in one time's updates, and one
    /// retracted once more than it came (a negative multiplicity from then on: the operator
    /// is a function of the collection, whatever its multiplicities).
    fn workload(seed: u64) -> Vec<Vec<((u64, PageId), isize)>> {
        let mut rng = Rng(seed);
        let mut below = |n: u64| rng.below(n);
        let mut alive: BTreeMap<u64, u64> = BTreeMap::new();
        let mut steps = Vec::new();
        for time in 0..10u64 {
            let mut step = Vec::new();
            for _ in 0..8 {
                let page = below(30);
                if let Some(key) = alive.remove(&page) {
                    step.push(((key, id(page)), -1));
                    if below(3) == 0 {
                        continue;
                    }
                }
                // Few keys, so families grow and shrink; some pages of their own.
                let key = if below(4) == 0 { 100 + page } else { below(4) };
                step.push(((key, id(page)), 1));
                alive.insert(page, key);
            }
            if time == 5 {
                if let Some((&page, &key)) = alive.iter().next() {
                    step.push(((key, id(page)), 1));
                    step.push(((key, id(page)), -1));
                    step.push(((key, id(page)), 1));
                }
            }
            if time == 7 {
                // Retracted, but left in `alive`: a later removal retracts it again.
                if let Some((&page, &key)) = alive.iter().next() {
                    step.push(((key, id(page)), -1));
                }
            }
            steps.push(step);
        }
        steps
    }

    #[test]
    fn incremental_families_equal_the_families_from_scratch() {
        for seed in 0..8 {
            let steps = workload(seed);
            assert_incremental(
                &steps,
                families,
                |time| from_scratch(&steps, time),
                &format!("seed {seed}"),
            );
        }
    }

    #[test]
    fn a_page_alone_is_one_small_entry_and_a_new_anchor_moves_the_family() {
        let mut families = Families::new();
        let mut out = Vec::new();
        let (a, b) =
            if id(1).anchor_key() < id(2).anchor_key() { (id(1), id(2)) } else { (id(2), id(1)) };
        families.apply(&mut [((7, b), 1), ((8, a), 1)], &mut out);
        assert_eq!(families.families.sizes(), (2, 0));
        out.sort();
        let mut expected = vec![((a, a), 1), ((b, b), 1)];
        expected.sort();
        assert_eq!(out, expected);
        // The smaller anchor joins b's family: b moves to it.
        out.clear();
        families.apply(&mut [((7, a), 1)], &mut out);
        out.sort();
        let mut expected = vec![((a, a), 1), ((b, b), -1), ((b, a), 1)];
        expected.sort();
        assert_eq!(out, expected);
        assert_eq!(families.families.sizes(), (1, 1));
        // And leaves: b is alone again, one entry.
        out.clear();
        families.apply(&mut [((7, a), -1)], &mut out);
        out.sort();
        let mut expected = vec![((a, a), -1), ((b, a), -1), ((b, b), 1)];
        expected.sort();
        assert_eq!(out, expected);
        assert_eq!(families.families.sizes(), (2, 0));
        out.clear();
        families.apply(&mut [((7, b), -1), ((8, a), -1)], &mut out);
        assert!(families.families.is_empty());
    }

    #[test]
    fn a_member_takes_its_representatives_cluster_at_resemblance_one() {
        let rep = PageId { date: 1, hash: 9 };
        let of_rep = Assignment {
            cluster: PageId { date: 0, hash: 3 },
            leader: PageId { date: 0, hash: 3 },
            similarity_ppm: 850_000,
        };
        let a = member_assignment(rep, &of_rep);
        assert_eq!((a.cluster, a.leader, a.similarity_ppm), (of_rep.cluster, rep, 1_000_000));
    }
}
