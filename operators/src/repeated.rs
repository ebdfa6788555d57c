//! Each page's repeated keys, with its member: what the sibling rule reads of a page.
//!
//! A page's repeated keys are its sentences that some group it is in repeats on at least
//! `sibling_min_pages` pages (`edges::group_repeated_keys`): the union, over the blocks of its
//! groups (`groups::GroupOutput::Blocks`), of their intersections with the page's distinct
//! keys. A sibling candidate is judged on both pages' members and repeated keys, so this
//! operator gives the two together, `(page, (member, repeated keys))`, once a page. The keys
//! decide sibling candidates only: they never change a member, so a group whose repeated
//! blocks change re-verifies nothing. A page's distinct keys are its member's (shared by every
//! group holding it), a group's blocks one list shared by its members' entries.
//!
//! This was a reduce over each page's keys and blocks (its input and output arranged, ~3.7
//! updates a page on a 100k-page crawl), its output arranged again and joined with the
//! members. Here a page is one hash-map entry: its member alone (a pointer) for a page in no
//! group with blocks, most pages; its member, blocks and repeated keys otherwise.
//!
//! The operator exchanges by page, holds each time's updates until the input frontier passes
//! it and applies times in order (timestamps are totally ordered), so the same updates give
//! the same output whatever the worker count or batch boundaries.

use std::sync::Arc;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::by_time::in_time_order;
use crate::compact::{Compact, Narrow};
use crate::edges::Member;
use crate::page::PageId;
use crate::sorted::{consolidated, intersect, merge_counts};

/// Sorted sentence keys.
pub type Keys = Arc<Vec<u64>>;

/// A page with its repeated keys.
pub type View = (Arc<Member>, Keys);

/// One input update of the operator.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Part {
    /// A page's member.
    Member(Arc<Member>),
    /// A group's repeated blocks, at one of its members: `(page, blocks)`.
    Blocks(PageId, Keys),
}

impl Part {
    /// The page whose entry it changes.
    pub fn page(&self) -> PageId {
        match self {
            Part::Member(member) => member.id,
            Part::Blocks(page, _) => *page,
        }
    }
}

/// A page's entry beyond a member alone: its members and blocks, each sorted, with their
/// multiplicities (none zero), and the repeated keys they give. A page has one member (a page
/// id is one record, so one content); more than one is kept as a collection's multiplicities.
#[derive(Debug, Default)]
struct Entry {
    members: Vec<(Arc<Member>, isize)>,
    blocks: Vec<(Keys, isize)>,
    repeated: Keys,
}

impl Entry {
    /// The repeated keys: the page's keys (its smallest member's, as the reduce took the first
    /// of its values) in any of its blocks.
    fn repeated(&self) -> Vec<u64> {
        let Some(keys) = self.members.iter().map(|(member, _)| &member.keys).min() else { return Vec::new() };
        let mut union: Vec<u64> = self.blocks.iter().flat_map(|(blocks, _)| intersect(keys, blocks)).collect();
        union.sort_unstable();
        union.dedup();
        union
    }

    /// Its views into `out`.
    fn emit(&self, out: &mut Vec<((PageId, View), isize)>) {
        for (member, n) in &self.members {
            out.push(((member.id, (member.clone(), self.repeated.clone())), *n));
        }
    }
}

/// A worker's pages: a page with one member and no blocks (most) maps to its member, the
/// others to their entry.
#[derive(Debug, Default)]
pub struct Repeated {
    pages: Compact<PageId, Arc<Member>, Entry>,
    /// The repeated keys of a page in no group with blocks, shared by all of them.
    empty: Keys,
}

impl Repeated {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one time's updates and appends the changes of `(page, view)` to `out`.
    pub fn apply(&mut self, updates: &mut [(Part, isize)], out: &mut Vec<((PageId, View), isize)>) {
        updates.sort_unstable_by_key(|(part, _)| part.page());
        for these in updates.chunk_by(|a, b| a.0.page() == b.0.page()) {
            let page = these[0].0.page();
            let members = consolidated(these.iter().filter_map(|(part, d)| match part {
                Part::Member(member) => Some((member.clone(), *d)),
                Part::Blocks(..) => None,
            }));
            let blocks = consolidated(these.iter().filter_map(|(part, d)| match part {
                Part::Blocks(_, blocks) => Some((blocks.clone(), *d)),
                Part::Member(_) => None,
            }));
            if members.is_empty() && blocks.is_empty() {
                continue;
            }
            // The common case: a page in no group with blocks comes or goes.
            if let ([(member, d)], []) = (members.as_slice(), blocks.as_slice()) {
                if *d == 1 && self.pages.insert_new(page, member.clone()) {
                    out.push(((page, (member.clone(), self.empty.clone())), 1));
                    continue;
                }
                if *d == -1 && self.pages.remove_one(&page, member) {
                    out.push(((page, (member.clone(), self.empty.clone())), -1));
                    continue;
                }
            }
            let empty = &self.empty;
            let mut entry = self.pages.take(
                &page,
                |member| Entry { members: vec![(member, 1)], blocks: Vec::new(), repeated: empty.clone() },
                || Entry { repeated: empty.clone(), ..Default::default() },
            );
            let before = (!members.is_empty()).then(|| entry.members.clone());
            merge_counts(&mut entry.members, &members);
            merge_counts(&mut entry.blocks, &blocks);
            let repeated = entry.repeated();
            if before.is_some() || *entry.repeated != repeated {
                // The views before go, the views now come.
                let repeated = if repeated.is_empty() { self.empty.clone() } else { Arc::new(repeated) };
                let was = std::mem::replace(&mut entry.repeated, repeated);
                for (member, n) in before.as_ref().unwrap_or(&entry.members) {
                    out.push(((member.id, (member.clone(), was.clone())), -n));
                }
                entry.emit(out);
            }
            self.pages.put(page, entry, |entry| match (entry.members.as_slice(), entry.blocks.is_empty()) {
                ([], true) => Narrow::Gone,
                ([(member, 1)], true) => Narrow::One(member.clone()),
                _ => Narrow::Many,
            });
        }
    }
}

/// The repeated-keys operator: `parts` in, `(page, (member, repeated keys))` out for every page
/// with a member.
pub fn repeated_keys<'scope, T>(parts: VecCollection<'scope, T, Part, isize>) -> VecCollection<'scope, T, (PageId, View), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    let mut repeated = Repeated::new();
    in_time_order(parts, "Repeated keys", |part| part.page().hash, move |updates, out| repeated.apply(updates, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::Content;
    use crate::testing::{assert_incremental, input_at, Rng};
    use crate::verify::VerifyMethod;
    use std::collections::BTreeMap;

    fn member(page: u64, keys: &[u64]) -> Arc<Member> {
        let content = Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), ..Default::default() };
        Arc::new(Member::new(VerifyMethod::Lcs, PageId { date: page, hash: page }, content))
    }

    /// From scratch at `time`: every page's member with its keys found in any of its blocks.
    fn from_scratch(steps: &[Vec<(Part, isize)>], time: u64) -> BTreeMap<(PageId, View), isize> {
        let alive = input_at(steps, time);
        let mut state = BTreeMap::new();
        for (part, &n) in &alive {
            let Part::Member(member) = part else { continue };
            let mut union: Vec<u64> = Vec::new();
            for other in alive.keys() {
                if let Part::Blocks(page, blocks) = other {
                    if *page == member.id {
                        union.extend(member.keys.iter().filter(|k| blocks.contains(k)));
                    }
                }
            }
            union.sort_unstable();
            union.dedup();
            *state.entry((member.id, (member.clone(), Arc::new(union)))).or_insert(0) += n;
        }
        state.retain(|_, d| *d != 0);
        state
    }

    /// Pages coming, going and changing content, blocks of their groups coming and going
    /// (two groups may repeat the same block at one page), blocks of pages not
    /// there (yet).
    fn workload(seed: u64) -> Vec<Vec<(Part, isize)>> {
        let mut rng = Rng(seed);
        let mut below = |n: u64| rng.below(n);
        let mut members: BTreeMap<u64, Arc<Member>> = BTreeMap::new();
        let mut blocks: Vec<(u64, Keys)> = Vec::new();
        let mut steps = Vec::new();
        for _ in 0..10 {
            let mut step = Vec::new();
            for _ in 0..6 {
                let page = below(10);
                if below(2) == 0 {
                    if let Some(old) = members.remove(&page) {
                        step.push((Part::Member(old), -1));
                    }
                    if below(4) != 0 {
                        let keys: Vec<u64> = (0..1 + below(6)).map(|_| below(12)).collect();
                        let new = member(page, &keys);
                        step.push((Part::Member(new.clone()), 1));
                        members.insert(page, new);
                    }
                } else if !blocks.is_empty() && below(2) == 0 {
                    let (page, old) = blocks.swap_remove(below(blocks.len() as u64) as usize);
                    step.push((Part::Blocks(PageId { date: page, hash: page }, old), -1));
                } else {
                    let mut keys: Vec<u64> = (0..1 + below(5)).map(|_| below(12)).collect();
                    keys.sort_unstable();
                    keys.dedup();
                    let keys = Arc::new(keys);
                    step.push((Part::Blocks(PageId { date: page, hash: page }, keys.clone()), 1));
                    blocks.push((page, keys));
                }
            }
            steps.push(step);
        }
        steps
    }

    #[test]
    fn incremental_repeated_keys_equal_the_repeated_keys_from_scratch() {
        for seed in 0..10 {
            let steps = workload(seed);
            assert_incremental(&steps, repeated_keys, |time| from_scratch(&steps, time), &format!("seed {seed}"));
        }
    }

    #[test]
    fn a_page_in_no_group_with_blocks_is_its_member_only() {
        let mut repeated = Repeated::new();
        let mut out = Vec::new();
        let (a, b) = (member(1, &[1, 2, 3]), member(2, &[3, 4]));
        repeated.apply(&mut [(Part::Member(a.clone()), 1), (Part::Member(b.clone()), 1)], &mut out);
        assert_eq!(repeated.pages.sizes(), (2, 0));
        // A block at page 1: its view changes; a block of none of its keys changes nothing.
        out.clear();
        repeated.apply(&mut [(Part::Blocks(a.id, Arc::new(vec![2, 3, 9])), 1), (Part::Blocks(b.id, Arc::new(vec![7])), 1)], &mut out);
        assert_eq!(out, vec![((a.id, (a.clone(), Arc::new(vec![]))), -1), ((a.id, (a.clone(), Arc::new(vec![2, 3]))), 1)]);
        assert_eq!(repeated.pages.sizes(), (0, 2));
        out.clear();
        repeated.apply(&mut [(Part::Blocks(a.id, Arc::new(vec![2, 3, 9])), -1), (Part::Blocks(b.id, Arc::new(vec![7])), -1)], &mut out);
        assert_eq!(out, vec![((a.id, (a.clone(), Arc::new(vec![2, 3]))), -1), ((a.id, (a.clone(), Arc::new(vec![]))), 1)]);
        assert_eq!(repeated.pages.sizes(), (2, 0));
    }
}
