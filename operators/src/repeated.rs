//! Each page's repeated keys, with its member: what the sibling rule reads of a page.
//!
//! A page's repeated keys are its sentences that some group it is in repeats on at least
//! `sibling_min_pages` pages (`edges::group_repeated_keys`): the union, over the blocks of its
//! groups (`groups::GroupOutput::Blocks`), of their intersections with the page's distinct
//! keys. A sibling candidate is judged on both pages' members and repeated keys, so this
//! operator gives the two together, `(page, (member, repeated keys))`, once a page.
//!
//! This was a reduce over each page's keys and blocks (its input and output arranged, ~3.7
//! updates a page on a 100k-page crawl), its output arranged again and joined with the
//! members. Here a page is one hash-map entry: its member alone (a pointer) for a page in no
//! group with blocks, most pages; its member, blocks and repeated keys otherwise.
//!
//! The operator exchanges by page, holds each time's updates until the input frontier passes
//! it and applies times in order (timestamps are totally ordered), so the same updates give
//! the same output whatever the worker count or batch boundaries.

use std::collections::HashMap;
use std::sync::Arc;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::{AsCollection, VecCollection};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::by_time::{ByTime, Held};
use crate::edges::Member;
use crate::hashing::Mixed;
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
    one: HashMap<PageId, Arc<Member>, Mixed>,
    many: HashMap<PageId, Box<Entry>, Mixed>,
    /// The repeated keys of a page in no group with blocks, shared by all of them.
    empty: Keys,
}

impl Repeated {
    pub fn new() -> Self {
        Self::default()
    }

    /// The pages held.
    pub fn len(&self) -> usize {
        self.one.len() + self.many.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn take(&mut self, page: PageId) -> Box<Entry> {
        if let Some(member) = self.one.remove(&page) {
            return Box::new(Entry { members: vec![(member, 1)], blocks: Vec::new(), repeated: self.empty.clone() });
        }
        self.many.remove(&page).unwrap_or_else(|| Box::new(Entry { repeated: self.empty.clone(), ..Default::default() }))
    }

    fn put(&mut self, page: PageId, mut entry: Box<Entry>) {
        if entry.blocks.is_empty() {
            match entry.members.as_mut_slice() {
                [] => return,
                [(member, 1)] => {
                    self.one.insert(page, member.clone());
                    return;
                }
                _ => {}
            }
        }
        self.many.insert(page, entry);
    }

    /// Applies one time's updates and appends the changes of `(page, view)` to `out`.
    pub fn apply(&mut self, updates: &mut [(Part, isize)], out: &mut Vec<((PageId, View), isize)>) {
        updates.sort_unstable_by_key(|(part, _)| part.page());
        let mut i = 0;
        while i < updates.len() {
            let page = updates[i].0.page();
            let n = updates[i..].iter().take_while(|(part, _)| part.page() == page).count();
            let these = &updates[i..i + n];
            i += n;
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
                if *d == 1 && !self.one.contains_key(&page) && !self.many.contains_key(&page) {
                    out.push(((page, (member.clone(), self.empty.clone())), 1));
                    self.one.insert(page, member.clone());
                    continue;
                }
                if *d == -1 && self.one.get(&page) == Some(member) {
                    out.push(((page, (member.clone(), self.empty.clone())), -1));
                    self.one.remove(&page);
                    continue;
                }
            }
            let mut entry = self.take(page);
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
            self.put(page, entry);
        }
    }
}

/// The repeated-keys operator: `parts` in, `(page, (member, repeated keys))` out for every page
/// with a member.
pub fn repeated_keys<'scope, T>(parts: VecCollection<'scope, T, Part, isize>) -> VecCollection<'scope, T, (PageId, View), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    parts
        .inner
        .unary_frontier::<CapacityContainerBuilder<Vec<((PageId, View), T, isize)>>, _, _, _>(
            Exchange::new(|(part, _, _): &(Part, T, isize)| part.page().hash),
            "Repeated keys",
            move |_capability, _info| {
                let mut repeated = Repeated::new();
                let mut pending: ByTime<T, (Part, isize)> = ByTime::default();
                let mut out = Vec::new();
                move |(input, frontier), output| {
                    input.for_each(|capability, data| pending.hold(&capability, data, |part, diff| (part, diff)));
                    // Times the frontier has passed are complete: apply them in order.
                    while let Some((time, Held { capability, mut updates, .. })) = pending.pop_ready(frontier) {
                        repeated.apply(&mut updates, &mut out);
                        output.session(&capability).give_iterator(out.drain(..).map(|(o, d)| (o, time.clone(), d)));
                    }
                }
            },
        )
        .as_collection()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hashing::mix64;
    use crate::page::Content;
    use crate::verify::VerifyMethod;
    use std::collections::BTreeMap;

    type Updates = Vec<((PageId, View), u64, isize)>;

    fn member(page: u64, keys: &[u64]) -> Arc<Member> {
        let content = Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), ..Default::default() };
        Arc::new(Member::new(VerifyMethod::Lcs, PageId { date: page, hash: page }, content))
    }

    fn state_at(updates: &Updates, time: u64) -> BTreeMap<(PageId, View), isize> {
        let mut state = BTreeMap::new();
        for (change, t, d) in updates {
            if *t <= time {
                *state.entry(change.clone()).or_insert(0) += d;
            }
        }
        state.retain(|_, d| *d != 0);
        state
    }

    /// From scratch at `time`: every page's member with its keys found in any of its blocks.
    fn from_scratch(steps: &[Vec<(Part, isize)>], time: u64) -> BTreeMap<(PageId, View), isize> {
        let mut alive: BTreeMap<Part, isize> = BTreeMap::new();
        for step in &steps[..=time as usize] {
            for (part, d) in step {
                *alive.entry(part.clone()).or_default() += d;
            }
        }
        alive.retain(|_, d| *d != 0);
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
        let mut state = seed;
        let mut below = |n: u64| {
            state = mix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            state % n
        };
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
            let one = crate::testing::run_steps(&steps, 1, repeated_keys);
            for time in 0..steps.len() as u64 {
                assert_eq!(state_at(&one, time), from_scratch(&steps, time), "seed {seed}, time {time}");
            }
            for workers in [2, 4] {
                assert_eq!(crate::testing::run_steps(&steps, workers, repeated_keys), one, "seed {seed}, {workers} workers");
            }
        }
    }

    #[test]
    fn a_page_in_no_group_with_blocks_is_its_member_only() {
        let mut repeated = Repeated::new();
        let mut out = Vec::new();
        let (a, b) = (member(1, &[1, 2, 3]), member(2, &[3, 4]));
        repeated.apply(&mut [(Part::Member(a.clone()), 1), (Part::Member(b.clone()), 1)], &mut out);
        assert_eq!((repeated.one.len(), repeated.many.len()), (2, 0));
        // A block at page 1: its view changes; a block of none of its keys changes nothing.
        out.clear();
        repeated.apply(&mut [(Part::Blocks(a.id, Arc::new(vec![2, 3, 9])), 1), (Part::Blocks(b.id, Arc::new(vec![7])), 1)], &mut out);
        assert_eq!(out, vec![((a.id, (a.clone(), Arc::new(vec![]))), -1), ((a.id, (a.clone(), Arc::new(vec![2, 3]))), 1)]);
        assert_eq!((repeated.one.len(), repeated.many.len()), (0, 2));
        out.clear();
        repeated.apply(&mut [(Part::Blocks(a.id, Arc::new(vec![2, 3, 9])), -1), (Part::Blocks(b.id, Arc::new(vec![7])), -1)], &mut out);
        assert_eq!(out, vec![((a.id, (a.clone(), Arc::new(vec![2, 3]))), -1), ((a.id, (a.clone(), Arc::new(vec![]))), 1)]);
        assert_eq!((repeated.one.len(), repeated.many.len()), (2, 0));
    }
}
