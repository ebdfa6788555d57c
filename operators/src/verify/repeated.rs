//! Each page's repeated keys, with its member, beside the sibling candidates it is in: the
//! first half of the sibling rule (`siblings` is the second).
//!
//! A page's repeated keys are its sentences that some group it is in repeats on at least
//! `sibling_min_pages` pages (`edges::group_repeated_keys`): the union, over the blocks of its
//! groups (`groups::GroupOutput::Blocks`), of their intersections with the page's distinct
//! keys. A sibling candidate is judged on both pages' members and repeated keys, its *views*
//! `(member, repeated keys)`. This operator holds each page's view and the candidates it is in
//! (as the shorter page or the longer), and gives for each candidate the view of its page, a
//! *half*; `siblings::not_siblings` meets a candidate's two halves. The keys decide sibling
//! candidates only: they never change a member, so a group whose repeated blocks change
//! re-verifies nothing. A page's distinct keys are its member's (shared by every group holding
//! it), a group's blocks one list shared by its members' entries.
//!
//! The operator keeps its own state rather than arrangements (a reduce over each page's keys
//! and blocks would hold ~3.7 arranged updates a page on a 100k-page crawl, and joining its
//! views with the candidates would arrange each side again). Here a page is one hash-map entry: its member alone (a pointer) for a page in no group with
//! blocks, most pages; its member, blocks and repeated keys otherwise; and a list of its
//! candidates for a page in any.
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

use std::collections::HashMap;

use crate::ingest::page::PageId;
use crate::runtime::by_time::in_time_order;
use crate::runtime::compact::{Compact, Held, Narrow};
use crate::runtime::footprint::{Gauged, Structure};
use crate::runtime::hashing::Mixed;
use crate::runtime::sorted::{consolidated, intersect, merge_counts};
use crate::verify::member::{Edge, Member};

/// Sorted sentence keys.
pub type Keys = Arc<Vec<u64>>;

/// A page with its repeated keys.
pub type View = (Arc<Member>, Keys);

/// A sibling candidate at one of its pages: the pair, and whether the page is its shorter one.
pub type Candidate = (Edge, bool);

/// A candidate with the view of its page (the shorter page's when the flag is true).
pub type Half = (Candidate, View);

/// One input update of the operator.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SiblingUpdate {
    /// A page's member.
    Member(Arc<Member>),
    /// A group's repeated blocks, at one of its members: `(page, blocks)`.
    Blocks(PageId, Keys),
    /// A sibling candidate, at its shorter page (true) or its longer.
    Candidate(Candidate),
}

impl SiblingUpdate {
    /// The page whose entry it changes.
    pub fn page(&self) -> PageId {
        match self {
            SiblingUpdate::Member(member) => member.id,
            SiblingUpdate::Blocks(page, _) => *page,
            SiblingUpdate::Candidate((edge, true)) => edge.shorter,
            SiblingUpdate::Candidate((edge, false)) => edge.longer,
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
        let Some(keys) = self.members.iter().map(|(member, _)| &member.keys).min() else {
            return Vec::new();
        };
        let mut union: Vec<u64> =
            self.blocks.iter().flat_map(|(blocks, _)| intersect(keys, blocks)).collect();
        union.sort_unstable();
        union.dedup();
        // Kept as long as the page is: at its length, not the capacity of every block's
        // meeting (a page in many groups with the same blocks meets each key many times).
        union.shrink_to_fit();
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

    /// A page's views now, sorted.
    fn views_of(&self, page: &PageId) -> Vec<(View, isize)> {
        match self.pages.get(page) {
            None => Vec::new(),
            Some(Held::One(member)) => vec![((member.clone(), self.empty.clone()), 1)],
            Some(Held::Many(entry)) => entry
                .members
                .iter()
                .map(|(member, n)| ((member.clone(), entry.repeated.clone()), *n))
                .collect(),
        }
    }

    /// Applies one time's updates (candidates are left to `Halves`) and appends the changes of
    /// `(page, view)` to `out`.
    pub fn apply(
        &mut self,
        updates: &mut [(SiblingUpdate, isize)],
        out: &mut Vec<((PageId, View), isize)>,
    ) {
        updates.sort_unstable_by_key(|(part, _)| part.page());
        for these in updates.chunk_by(|a, b| a.0.page() == b.0.page()) {
            let page = these[0].0.page();
            let members = consolidated(these.iter().filter_map(|(part, d)| match part {
                SiblingUpdate::Member(member) => Some((member.clone(), *d)),
                _ => None,
            }));
            let blocks = consolidated(these.iter().filter_map(|(part, d)| match part {
                SiblingUpdate::Blocks(_, blocks) => Some((blocks.clone(), *d)),
                _ => None,
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
                |member| Entry {
                    members: vec![(member, 1)],
                    blocks: Vec::new(),
                    repeated: empty.clone(),
                },
                || Entry { repeated: empty.clone(), ..Default::default() },
            );
            let before = (!members.is_empty()).then(|| entry.members.clone());
            merge_counts(&mut entry.members, &members);
            merge_counts(&mut entry.blocks, &blocks);
            let repeated = entry.repeated();
            if before.is_some() || *entry.repeated != repeated {
                // The views before go, the views now come.
                let repeated =
                    if repeated.is_empty() { self.empty.clone() } else { Arc::new(repeated) };
                let was = std::mem::replace(&mut entry.repeated, repeated);
                for (member, n) in before.as_ref().unwrap_or(&entry.members) {
                    out.push(((member.id, (member.clone(), was.clone())), -n));
                }
                entry.emit(out);
            }
            self.pages.put(page, entry, |entry| {
                match (entry.members.as_slice(), entry.blocks.is_empty()) {
                    ([], true) => Narrow::Gone,
                    ([(member, 1)], true) => Narrow::One(member.clone()),
                    _ => Narrow::Many,
                }
            });
        }
    }
}

/// A worker's pages' views (`Repeated`) and the candidates each page is in, sorted, for the
/// pages in any.
#[derive(Debug, Default)]
pub struct Halves {
    repeated: Repeated,
    candidates: HashMap<PageId, Vec<(Candidate, isize)>, Mixed>,
    /// The views' changes of a time (scratch).
    views: Vec<((PageId, View), isize)>,
}

impl Halves {
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes held (`runtime::footprint`), walked: the maps' tables, each entry's lists,
    /// its repeated keys and the blocks it shares with the groups (at its share), and each
    /// page's candidates. The members are counted apart (`Structure::Members`).
    pub fn bytes(&self) -> usize {
        use crate::runtime::footprint::{arc_share, array, hash_table};
        use std::mem::size_of;
        let keys =
            |keys: &Keys| arc_share(keys, size_of::<Vec<u64>>() + array::<u64>(keys.capacity()));
        let pages = self.repeated.pages.bytes(
            |_| 0,
            |entry| {
                array::<(Arc<Member>, isize)>(entry.members.capacity())
                    + array::<(Keys, isize)>(entry.blocks.capacity())
                    + entry.blocks.iter().map(|(blocks, _)| keys(blocks)).sum::<usize>()
                    + keys(&entry.repeated)
            },
        );
        let candidates =
            hash_table(self.candidates.capacity(), size_of::<(PageId, Vec<(Candidate, isize)>)>())
                + self
                    .candidates
                    .values()
                    .map(|c| array::<(Candidate, isize)>(c.capacity()))
                    .sum::<usize>();
        pages + candidates + array::<((PageId, View), isize)>(self.views.capacity())
    }

    /// Applies one time's updates and appends the changes of the halves to `out`: for each
    /// candidate at a page, the page's view (a page with no member gives none), with the
    /// product of their multiplicities.
    pub fn apply(&mut self, updates: &mut [(SiblingUpdate, isize)], out: &mut Vec<(Half, isize)>) {
        self.views.clear();
        crate::runtime::by_time::release_large(&mut self.views);
        self.repeated.apply(updates, &mut self.views);
        let mut changes: Vec<(PageId, Candidate, isize)> = updates
            .iter()
            .filter_map(|(part, d)| match part {
                SiblingUpdate::Candidate(candidate) => Some((part.page(), *candidate, *d)),
                _ => None,
            })
            .collect();
        if changes.is_empty() && self.candidates.is_empty() {
            return;
        }
        changes.sort_unstable();
        self.views.sort_by_key(|((page, _), _)| *page);
        // The pages whose candidates or view changed, in order.
        let mut pages: Vec<PageId> = changes
            .iter()
            .map(|c| c.0)
            .chain(self.views.iter().map(|((page, _), _)| *page))
            .collect();
        pages.sort_unstable();
        pages.dedup();
        let (mut c, mut v) = (0, 0);
        for page in pages {
            let c_end = c + changes[c..].iter().take_while(|change| change.0 == page).count();
            let v_end = v + self.views[v..].iter().take_while(|((p, _), _)| *p == page).count();
            let delta =
                consolidated(changes[c..c_end].iter().map(|(_, candidate, d)| (*candidate, *d)));
            let moved = &self.views[v..v_end];
            (c, v) = (c_end, v_end);
            let Some(had) =
                self.candidates.remove(&page).or_else(|| (!delta.is_empty()).then(Vec::new))
            else {
                // A page in no candidate (most): only its view moved, and it has no halves.
                continue;
            };
            let moved = consolidated(moved.iter().map(|((_, view), d)| (view.clone(), *d)));
            let views = self.repeated.views_of(&page);
            let mut now = had.clone();
            merge_counts(&mut now, &delta);
            if moved.is_empty() {
                // The view stayed: only the candidates that changed move.
                for (candidate, m) in &delta {
                    out.extend(views.iter().map(|(view, n)| ((*candidate, view.clone()), m * n)));
                }
            } else {
                // The halves before go (the views before: now's less what moved), now's come.
                let before = consolidated(
                    views.iter().cloned().chain(moved.iter().map(|(view, d)| (view.clone(), -d))),
                );
                for (candidate, m) in &had {
                    out.extend(
                        before.iter().map(|(view, n)| ((*candidate, view.clone()), -(m * n))),
                    );
                }
                for (candidate, m) in &now {
                    out.extend(views.iter().map(|(view, n)| ((*candidate, view.clone()), m * n)));
                }
            }
            if !now.is_empty() {
                self.candidates.insert(page, now);
            }
        }
    }
}

/// The first half of the sibling rule: `parts` in (pages' members, groups' blocks at their
/// pages, and each sibling candidate at both its pages), each candidate's two halves out (its
/// pages' views).
pub fn sibling_halves<'scope, T>(
    parts: VecCollection<'scope, T, SiblingUpdate, isize>,
) -> VecCollection<'scope, T, Half, isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    let mut halves = Gauged::new(
        &crate::run::Runtime::of(&parts.scope()).footprint,
        Structure::Siblings,
        Halves::new(),
        Halves::bytes,
    );
    in_time_order(
        parts,
        "Sibling halves",
        |part| part.page().hash,
        move |updates, out| {
            halves.state.apply(updates, out);
            halves.report();
        },
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ingest::page::Content;
    use crate::testing::{assert_incremental, input_at, Rng};
    use crate::verify::VerifyMethod;
    use std::collections::BTreeMap;

    fn member(page: u64, keys: &[u64]) -> Arc<Member> {
        let content =
            Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), ..Default::default() };
        Arc::new(Member::new(VerifyMethod::Lcs, PageId { date: page, hash: page }, content))
    }

    /// From scratch at `time`: every page's member with its keys found in any of its blocks.
    pub(crate) fn from_scratch(
        steps: &[Vec<(SiblingUpdate, isize)>],
        time: u64,
    ) -> BTreeMap<(PageId, View), isize> {
        let alive = input_at(steps, time);
        let mut state = BTreeMap::new();
        for (part, &n) in &alive {
            let SiblingUpdate::Member(member) = part else { continue };
            let mut union: Vec<u64> = Vec::new();
            for other in alive.keys() {
                if let SiblingUpdate::Blocks(page, blocks) = other {
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
    fn workload(seed: u64) -> Vec<Vec<(SiblingUpdate, isize)>> {
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
                        step.push((SiblingUpdate::Member(old), -1));
                    }
                    if below(4) != 0 {
                        let keys: Vec<u64> = (0..1 + below(6)).map(|_| below(12)).collect();
                        let new = member(page, &keys);
                        step.push((SiblingUpdate::Member(new.clone()), 1));
                        members.insert(page, new);
                    }
                } else if !blocks.is_empty() && below(2) == 0 {
                    let (page, old) = blocks.swap_remove(below(blocks.len() as u64) as usize);
                    step.push((SiblingUpdate::Blocks(PageId { date: page, hash: page }, old), -1));
                } else {
                    let mut keys: Vec<u64> = (0..1 + below(5)).map(|_| below(12)).collect();
                    keys.sort_unstable();
                    keys.dedup();
                    let keys = Arc::new(keys);
                    step.push((
                        SiblingUpdate::Blocks(PageId { date: page, hash: page }, keys.clone()),
                        1,
                    ));
                    blocks.push((page, keys));
                }
            }
            steps.push(step);
        }
        steps
    }

    /// From scratch at `time`: each candidate alive at a page, with each view of the page.
    fn halves_from_scratch(
        steps: &[Vec<(SiblingUpdate, isize)>],
        time: u64,
    ) -> BTreeMap<Half, isize> {
        let views = from_scratch(steps, time);
        let mut state = BTreeMap::new();
        for (part, &c) in &input_at(steps, time) {
            let SiblingUpdate::Candidate(candidate) = part else { continue };
            for ((page, view), n) in &views {
                if *page == part.page() {
                    *state.entry((*candidate, view.clone())).or_insert(0) += c * n;
                }
            }
        }
        state.retain(|_, d| *d != 0);
        state
    }

    /// `workload` with sibling candidates coming and going among its pages, each at one of
    /// its pages or both.
    fn with_candidates(seed: u64) -> Vec<Vec<(SiblingUpdate, isize)>> {
        let mut rng = Rng(seed ^ 0x5eed);
        let mut below = |n: u64| rng.below(n);
        let mut held: Vec<(Candidate, isize)> = Vec::new();
        let mut steps = workload(seed);
        for step in &mut steps {
            for _ in 0..4 {
                if !held.is_empty() && below(3) == 0 {
                    let (candidate, n) = held.swap_remove(below(held.len() as u64) as usize);
                    step.push((SiblingUpdate::Candidate(candidate), -n));
                } else {
                    let (a, b) = (below(10), below(10));
                    let edge = Edge {
                        shorter_length: a,
                        shorter: PageId { date: a, hash: a },
                        longer: PageId { date: b, hash: b },
                        similarity_ppm: 900_000,
                    };
                    // At its shorter page, its longer, or (a multiplicity of two) both.
                    let n = 1 + below(2) as isize;
                    for shorter in [true, false] {
                        if below(3) != 0 {
                            step.push((SiblingUpdate::Candidate((edge, shorter)), n));
                            held.push(((edge, shorter), n));
                        }
                    }
                }
            }
        }
        steps
    }

    #[test]
    fn incremental_halves_equal_the_halves_from_scratch() {
        let mut halves = 0;
        for seed in 0..10 {
            let steps = with_candidates(seed);
            halves += (0..steps.len() as u64)
                .map(|t| halves_from_scratch(&steps, t).len())
                .sum::<usize>();
            assert_incremental(
                &steps,
                sibling_halves,
                |time| halves_from_scratch(&steps, time),
                &format!("seed {seed}"),
            );
        }
        assert!(halves > 100, "{halves} halves");
    }

    #[test]
    fn a_view_that_changes_moves_its_candidates_halves() {
        let mut halves = Halves::new();
        let mut out = Vec::new();
        let (a, b) = (member(1, &[1, 2, 3]), member(2, &[3, 4]));
        let edge = Edge { shorter_length: 2, shorter: b.id, longer: a.id, similarity_ppm: 900_000 };
        halves.apply(
            &mut [
                (SiblingUpdate::Member(a.clone()), 1),
                (SiblingUpdate::Member(b.clone()), 1),
                (SiblingUpdate::Candidate((edge, false)), 1),
            ],
            &mut out,
        );
        assert_eq!(out, vec![(((edge, false), (a.clone(), Arc::new(vec![]))), 1)]);
        // A block at page 1 changes its view; one at page 2, which has no candidate at this
        // worker, changes no half.
        out.clear();
        halves.apply(
            &mut [
                (SiblingUpdate::Blocks(a.id, Arc::new(vec![2, 3, 9])), 1),
                (SiblingUpdate::Blocks(b.id, Arc::new(vec![4])), 1),
            ],
            &mut out,
        );
        out.sort();
        assert_eq!(
            out,
            vec![
                (((edge, false), (a.clone(), Arc::new(vec![]))), -1),
                (((edge, false), (a.clone(), Arc::new(vec![2, 3]))), 1)
            ]
        );
        // The candidate goes: its half goes, and the page holds no candidate.
        out.clear();
        halves.apply(&mut [(SiblingUpdate::Candidate((edge, false)), -1)], &mut out);
        assert_eq!(out, vec![(((edge, false), (a.clone(), Arc::new(vec![2, 3]))), -1)]);
        assert!(halves.candidates.is_empty());
    }

    #[test]
    fn a_page_in_no_group_with_blocks_is_its_member_only() {
        let mut repeated = Repeated::new();
        let mut out = Vec::new();
        let (a, b) = (member(1, &[1, 2, 3]), member(2, &[3, 4]));
        repeated.apply(
            &mut [(SiblingUpdate::Member(a.clone()), 1), (SiblingUpdate::Member(b.clone()), 1)],
            &mut out,
        );
        assert_eq!(repeated.pages.sizes(), (2, 0));
        // A block at page 1: its view changes; a block of none of its keys changes nothing.
        out.clear();
        repeated.apply(
            &mut [
                (SiblingUpdate::Blocks(a.id, Arc::new(vec![2, 3, 9])), 1),
                (SiblingUpdate::Blocks(b.id, Arc::new(vec![7])), 1),
            ],
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                ((a.id, (a.clone(), Arc::new(vec![]))), -1),
                ((a.id, (a.clone(), Arc::new(vec![2, 3]))), 1)
            ]
        );
        assert_eq!(repeated.pages.sizes(), (0, 2));
        out.clear();
        repeated.apply(
            &mut [
                (SiblingUpdate::Blocks(a.id, Arc::new(vec![2, 3, 9])), -1),
                (SiblingUpdate::Blocks(b.id, Arc::new(vec![7])), -1),
            ],
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                ((a.id, (a.clone(), Arc::new(vec![2, 3]))), -1),
                ((a.id, (a.clone(), Arc::new(vec![]))), 1)
            ]
        );
        assert_eq!(repeated.pages.sizes(), (2, 0));
    }
}
