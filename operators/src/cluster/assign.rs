//! Assignments: each page's cluster, leader and resemblance, from its cluster's label, the
//! verified edges it is the longer page of and, for a family's representative, the family's
//! other members, in one operator.
//!
//! A page's leader is the shortest page it verified against (by `(shorter_length, shorter,
//! similarity)`, the smallest), itself when it verified against none; its cluster is its label
//! (`components`). A family member takes its representative's cluster, with the representative
//! as its leader at resemblance 1 (`exact::member_assignment`). This was a reduce (the leaders),
//! a join and an antijoin (labels with leaders, and without), and a join (members with their
//! representatives' assignments): ~4.7 arranged updates a page on a 100k-page crawl, each
//! holding a page's id, label and leader again. Here a page is one hash-map entry of the
//! operator: its label alone (32 bytes) for a page with no partner and no family, most pages.
//!
//! The operator exchanges by page (a member by its representative), holds each time's updates
//! until the input frontier passes it and applies times in order (timestamps are totally
//! ordered), so the same updates give the same output whatever the worker count or batch
//! boundaries. A change of a representative's assignment moves its whole family (as the join
//! did); a member coming or going moves only itself.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::candidates::exact::member_assignment;
use crate::ingest::page::PageId;
use crate::runtime::by_time::in_time_order;
use crate::runtime::compact::{Compact, Narrow};
use crate::runtime::footprint::{Gauged, Structure};
use crate::runtime::sorted::{consolidated, merge_counts};
use crate::verify::Assignment;

/// A verified partner of the longer page of an edge: `(shorter_length, shorter, similarity_ppm)`.
pub type Partner = (u64, PageId, u32);

/// One input update of the operator, keyed by the page it is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AssignUpdate {
    /// A page's cluster label: `(page, cluster)`.
    Label(PageId, PageId),
    /// An edge, at its longer page: `(longer, partner)`.
    Partner(PageId, Partner),
    /// A family's member other than its representative: `(representative, member)`.
    Member(PageId, PageId),
}

impl AssignUpdate {
    /// The page whose entry it changes.
    pub fn page(&self) -> PageId {
        match *self {
            AssignUpdate::Label(page, _)
            | AssignUpdate::Partner(page, _)
            | AssignUpdate::Member(page, _) => page,
        }
    }
}

/// A page's entry beyond a label alone: its labels, partners and family members, each sorted,
/// with their multiplicities (none zero).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Entry {
    labels: Vec<(PageId, isize)>,
    partners: Vec<(Partner, isize)>,
    members: Vec<(PageId, isize)>,
}

impl Entry {
    /// The page's own assignments (one, for a present page with its label), with multiplicities.
    fn assignments(&self, page: PageId) -> Vec<(Assignment, isize)> {
        let (leader, similarity_ppm) = match self.partners.first() {
            Some(&((_, shorter, similarity_ppm), _)) => (shorter, similarity_ppm),
            None => (page, 1_000_000),
        };
        self.labels
            .iter()
            .map(|&(cluster, n)| (Assignment { cluster, leader, similarity_ppm }, n))
            .collect()
    }
}

/// A worker's pages: a page with a label alone (most) maps to it, the others to their entry.
#[derive(Debug, Default)]
pub struct Assigner {
    pages: Compact<PageId, PageId, Entry>,
}

impl Assigner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes held (`runtime::footprint`), walked: the maps' tables and each entry's lists.
    pub fn bytes(&self) -> usize {
        use crate::runtime::footprint::array;
        self.pages.bytes(
            |_| 0,
            |entry| {
                array::<(PageId, isize)>(entry.labels.capacity() + entry.members.capacity())
                    + array::<(Partner, isize)>(entry.partners.capacity())
            },
        )
    }

    /// Applies one time's updates and appends the changes of `(page, assignment)` to `out`.
    pub fn apply(
        &mut self,
        updates: &mut [(AssignUpdate, isize)],
        out: &mut Vec<((PageId, Assignment), isize)>,
    ) {
        updates.sort_unstable_by_key(|(part, _)| part.page());
        for these in updates.chunk_by(|a, b| a.0.page() == b.0.page()) {
            let page = these[0].0.page();
            let labels = consolidated(these.iter().filter_map(|(part, d)| match part {
                AssignUpdate::Label(_, cluster) => Some((*cluster, *d)),
                _ => None,
            }));
            let partners = consolidated(these.iter().filter_map(|(part, d)| match part {
                AssignUpdate::Partner(_, partner) => Some((*partner, *d)),
                _ => None,
            }));
            let members = consolidated(these.iter().filter_map(|(part, d)| match part {
                AssignUpdate::Member(_, member) => Some((*member, *d)),
                _ => None,
            }));
            if labels.is_empty() && partners.is_empty() && members.is_empty() {
                continue;
            }
            // The common case: a page alone, with its label, comes or goes.
            if partners.is_empty() && members.is_empty() {
                if let [(cluster, d)] = *labels {
                    if d == 1 && self.pages.insert_new(page, cluster) {
                        out.push((
                            (page, Assignment { cluster, leader: page, similarity_ppm: 1_000_000 }),
                            1,
                        ));
                        continue;
                    }
                    if d == -1 && self.pages.remove_one(&page, &cluster) {
                        out.push((
                            (page, Assignment { cluster, leader: page, similarity_ppm: 1_000_000 }),
                            -1,
                        ));
                        continue;
                    }
                }
            }
            let mut entry = self.pages.take(
                &page,
                |cluster| Entry { labels: vec![(cluster, 1)], ..Default::default() },
                Entry::default,
            );
            let before = entry.assignments(page);
            merge_counts(&mut entry.labels, &labels);
            merge_counts(&mut entry.partners, &partners);
            let after = entry.assignments(page);
            if before == after {
                // Only the members that came or went move.
                emit(page, &members, &after, 1, out);
                merge_counts(&mut entry.members, &members);
            } else {
                emit(page, &[(page, 1)], &before, -1, out);
                emit(page, &entry.members, &before, -1, out);
                merge_counts(&mut entry.members, &members);
                emit(page, &[(page, 1)], &after, 1, out);
                emit(page, &entry.members, &after, 1, out);
            }
            self.pages.put(page, entry, |entry| {
                match (
                    entry.labels.as_slice(),
                    entry.partners.is_empty() && entry.members.is_empty(),
                ) {
                    ([], true) => Narrow::Gone,
                    (&[(cluster, 1)], true) => Narrow::One(cluster),
                    _ => Narrow::Many,
                }
            });
        }
    }
}

/// The assignments of `pages` (the representative `page` itself, or members of its family)
/// given the representative's `assignments`, times `sign`.
fn emit(
    page: PageId,
    pages: &[(PageId, isize)],
    assignments: &[(Assignment, isize)],
    sign: isize,
    out: &mut Vec<((PageId, Assignment), isize)>,
) {
    for &(assignment, n) in assignments {
        for &(id, m) in pages {
            let assignment =
                if id == page { assignment } else { member_assignment(page, &assignment) };
            out.push(((id, assignment), sign * n * m));
        }
    }
}

/// The assignments operator: `parts` in, `(page, assignment)` out, for every page with a label
/// and every member of such a page's family.
pub fn assignments<'scope, T>(
    parts: VecCollection<'scope, T, AssignUpdate, isize>,
) -> VecCollection<'scope, T, (PageId, Assignment), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    let mut assigner = Gauged::new(
        &crate::run::Runtime::of(&parts.scope()).footprint,
        Structure::Assignments,
        Assigner::new(),
        Assigner::bytes,
    );
    in_time_order(
        parts,
        "Assignments",
        |part| part.page().hash,
        move |updates, out| {
            assigner.state.apply(updates, out);
            assigner.report();
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_incremental, input_at, Rng};
    use std::collections::BTreeMap;

    fn id(n: u64) -> PageId {
        PageId { date: n, hash: crate::runtime::hashing::mix64(n) % 1000 }
    }

    /// From scratch at `time`: every labelled page with its leader (its smallest partner, or
    /// itself), and its family's members with it as their leader at resemblance 1.
    fn from_scratch(
        steps: &[Vec<(AssignUpdate, isize)>],
        time: u64,
    ) -> BTreeMap<(PageId, Assignment), isize> {
        let alive = input_at(steps, time);
        let mut state = BTreeMap::new();
        for (part, &n) in &alive {
            let AssignUpdate::Label(page, cluster) = *part else { continue };
            let leader = alive
                .keys()
                .filter_map(|p| match *p {
                    AssignUpdate::Partner(longer, partner) if longer == page => Some(partner),
                    _ => None,
                })
                .min();
            let (leader, similarity_ppm) =
                leader.map_or((page, 1_000_000), |(_, shorter, ppm)| (shorter, ppm));
            let own = Assignment { cluster, leader, similarity_ppm };
            *state.entry((page, own)).or_insert(0) += n;
            for (member_part, &m) in &alive {
                if let AssignUpdate::Member(representative, member) = *member_part {
                    if representative == page {
                        let of_member =
                            Assignment { cluster, leader: page, similarity_ppm: 1_000_000 };
                        *state.entry((member, of_member)).or_insert(0) += n * m;
                    }
                }
            }
        }
        state.retain(|_, d| *d != 0);
        state
    }

    /// Pages labelled and relabelled, edges to shorter pages coming and going (the smallest
    /// changing), family members joining and leaving representatives with and without labels.
    fn workload(seed: u64) -> Vec<Vec<(AssignUpdate, isize)>> {
        let mut rng = Rng(seed);
        let mut below = |n: u64| rng.below(n);
        let mut labels: BTreeMap<u64, u64> = BTreeMap::new();
        let mut partners: BTreeMap<(u64, u64), u32> = BTreeMap::new();
        let mut members: BTreeMap<u64, u64> = BTreeMap::new();
        let mut steps = Vec::new();
        for _ in 0..10 {
            let mut step = Vec::new();
            for _ in 0..6 {
                let page = below(12);
                match below(3) {
                    0 => {
                        if let Some(cluster) = labels.remove(&page) {
                            step.push((AssignUpdate::Label(id(page), id(cluster)), -1));
                        }
                        if below(4) != 0 {
                            let cluster = below(4);
                            step.push((AssignUpdate::Label(id(page), id(cluster)), 1));
                            labels.insert(page, cluster);
                        }
                    }
                    1 => {
                        let shorter = 20 + below(6);
                        match partners.remove(&(page, shorter)) {
                            Some(ppm) => step.push((
                                AssignUpdate::Partner(id(page), (shorter % 3, id(shorter), ppm)),
                                -1,
                            )),
                            None => {
                                let ppm = 900_000 + below(3) as u32;
                                step.push((
                                    AssignUpdate::Partner(
                                        id(page),
                                        (shorter % 3, id(shorter), ppm),
                                    ),
                                    1,
                                ));
                                partners.insert((page, shorter), ppm);
                            }
                        }
                    }
                    _ => {
                        let member = 40 + below(10);
                        if let Some(representative) = members.remove(&member) {
                            step.push((AssignUpdate::Member(id(representative), id(member)), -1));
                        }
                        if below(3) != 0 {
                            step.push((AssignUpdate::Member(id(page), id(member)), 1));
                            members.insert(member, page);
                        }
                    }
                }
            }
            steps.push(step);
        }
        steps
    }

    #[test]
    fn incremental_assignments_equal_the_assignments_from_scratch() {
        for seed in 0..10 {
            let steps = workload(seed);
            assert_incremental(
                &steps,
                assignments,
                |time| from_scratch(&steps, time),
                &format!("seed {seed}"),
            );
        }
    }

    #[test]
    fn a_page_alone_is_its_label_only() {
        let mut assigner = Assigner::new();
        let mut out = Vec::new();
        assigner.apply(
            &mut [(AssignUpdate::Label(id(1), id(1)), 1), (AssignUpdate::Label(id(2), id(1)), 1)],
            &mut out,
        );
        assert_eq!(assigner.pages.sizes(), (2, 0));
        // A partner makes page 2 an entry; its family member follows its leader's cluster.
        out.clear();
        assigner.apply(
            &mut [
                (AssignUpdate::Partner(id(2), (5, id(1), 950_000)), 1),
                (AssignUpdate::Member(id(2), id(3)), 1),
            ],
            &mut out,
        );
        out.sort();
        let alone = Assignment { cluster: id(1), leader: id(2), similarity_ppm: 1_000_000 };
        let led = Assignment { cluster: id(1), leader: id(1), similarity_ppm: 950_000 };
        let member = Assignment { cluster: id(1), leader: id(2), similarity_ppm: 1_000_000 };
        let mut expected = vec![((id(2), alone), -1), ((id(2), led), 1), ((id(3), member), 1)];
        expected.sort();
        assert_eq!(out, expected);
        assert_eq!(assigner.pages.sizes(), (1, 1));
        out.clear();
        assigner.apply(
            &mut [
                (AssignUpdate::Partner(id(2), (5, id(1), 950_000)), -1),
                (AssignUpdate::Member(id(2), id(3)), -1),
                (AssignUpdate::Label(id(2), id(1)), -1),
            ],
            &mut out,
        );
        assert_eq!(out, vec![((id(2), led), -1), ((id(3), member), -1)]);
        assert_eq!(assigner.pages.sizes(), (1, 0));
    }
}
