//! Each page's row: what the page came with (its URL and record id) beside what the pipeline
//! decided for it (its cluster assignment), joined by page.
//!
//! Differential's `join` of the pages `(page, (url, record id))` with the assignments
//! `(page, assignment)` would arrange both sides, keep each update with its time and difference
//! until a merge cancels it (on a feed with retention, a page's retraction too), and copy each
//! of the pages' updates at every merge, two `Arc`s a copy. Here a page is one hash-map entry:
//! in the common case, one of each side, the two values alone (`Compact`).
//!
//! The operator exchanges by page, holds each time's updates until the input frontier passes
//! it and applies times in order (timestamps are totally ordered): the output is the join's,
//! whatever the worker count or batch boundaries (tested against the join from scratch).

use differential_dataflow::lattice::Lattice;
use differential_dataflow::{ExchangeData, VecCollection};
use serde::{Deserialize, Serialize};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::ingest::page::PageId;
use crate::runtime::by_time::in_time_order;
use crate::runtime::compact::{Compact, Narrow};
use crate::runtime::footprint::{Gauged, Structure};
use crate::runtime::sorted::{consolidated, merge_counts};

/// One input update of the join: a value of either side, at its page.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Side<A, B> {
    Left(PageId, A),
    Right(PageId, B),
}

impl<A, B> Side<A, B> {
    fn page(&self) -> PageId {
        match self {
            Side::Left(page, _) | Side::Right(page, _) => *page,
        }
    }
}

/// A page's values beyond one of each: each side's, sorted, with their multiplicities (none
/// zero).
#[derive(Debug)]
struct Entry<A, B> {
    left: Vec<(A, isize)>,
    right: Vec<(B, isize)>,
}

impl<A, B> Default for Entry<A, B> {
    fn default() -> Self {
        Entry { left: Vec::new(), right: Vec::new() }
    }
}

/// A worker's pages for `join_by_page`.
struct Join<A, B> {
    pages: Compact<PageId, (A, B), Entry<A, B>>,
}

impl<A: PartialEq, B: PartialEq> Join<A, B> {
    /// The bytes held (`runtime::footprint`), walked: the maps' tables and each entry's lists
    /// (what the values point to is their holders': the rows' text, the members).
    fn bytes(&self) -> usize {
        use crate::runtime::footprint::array;
        self.pages.bytes(
            |_| 0,
            |entry| {
                array::<(A, isize)>(entry.left.capacity())
                    + array::<(B, isize)>(entry.right.capacity())
            },
        )
    }
}

impl<A: Ord + Clone, B: Ord + Clone> Join<A, B> {
    /// Applies one time's updates; `emit` gets each change of the pairs `(page, a, b)`.
    fn apply(
        &mut self,
        updates: &mut [(Side<A, B>, isize)],
        mut emit: impl FnMut(PageId, &A, &B, isize),
    ) {
        updates.sort_unstable_by_key(|(side, _)| side.page());
        for these in updates.chunk_by(|a, b| a.0.page() == b.0.page()) {
            let page = these[0].0.page();
            let left = consolidated(these.iter().filter_map(|(side, d)| match side {
                Side::Left(_, a) => Some((a.clone(), *d)),
                Side::Right(..) => None,
            }));
            let right = consolidated(these.iter().filter_map(|(side, d)| match side {
                Side::Right(_, b) => Some((b.clone(), *d)),
                Side::Left(..) => None,
            }));
            if left.is_empty() && right.is_empty() {
                continue;
            }
            let mut entry = self.pages.take(
                &page,
                |(a, b)| Entry { left: vec![(a, 1)], right: vec![(b, 1)] },
                Entry::default,
            );
            // The pairs before go, the pairs now come (what stays cancels downstream).
            for (a, m) in &entry.left {
                for (b, n) in &entry.right {
                    emit(page, a, b, -(m * n));
                }
            }
            merge_counts(&mut entry.left, &left);
            merge_counts(&mut entry.right, &right);
            for (a, m) in &entry.left {
                for (b, n) in &entry.right {
                    emit(page, a, b, m * n);
                }
            }
            self.pages.put(page, entry, |entry| {
                match (entry.left.as_slice(), entry.right.as_slice()) {
                    ([], []) => Narrow::Gone,
                    ([(a, 1)], [(b, 1)]) => Narrow::One((a.clone(), b.clone())),
                    _ => Narrow::Many,
                }
            });
        }
    }
}

/// `left.join_map(right, f)` for collections keyed by page, without arrangements: the output
/// is `f(page, a, b)` for each `a` of the page's on the left and `b` on the right, with the
/// product of their multiplicities.
pub fn join_by_page<'scope, T, A, B, O>(
    left: VecCollection<'scope, T, (PageId, A), isize>,
    right: VecCollection<'scope, T, (PageId, B), isize>,
    name: &str,
    f: impl Fn(PageId, &A, &B) -> O + 'static,
) -> VecCollection<'scope, T, O, isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    A: ExchangeData,
    B: ExchangeData,
    O: ExchangeData,
{
    let sides = left
        .map(|(page, a)| Side::Left(page, a))
        .concat(right.map(|(page, b)| Side::Right(page, b)));
    let mut join = Gauged::new(
        &crate::run::Runtime::of(&sides.scope()).footprint,
        Structure::Joins,
        Join { pages: Compact::default() },
        Join::bytes,
    );
    in_time_order(
        sides,
        name,
        |side: &Side<A, B>| side.page().hash,
        move |updates, out| {
            join.state.apply(updates, |page, a, b, d| out.push((f(page, a, b), d)));
            join.report();
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_incremental, input_at, Rng};
    use std::collections::BTreeMap;

    fn page(n: u64) -> PageId {
        PageId { date: n, hash: crate::runtime::hashing::mix64(n) }
    }

    /// From scratch at `time`: the join of the two sides' values alive then.
    fn from_scratch(
        steps: &[Vec<(Side<u64, u64>, isize)>],
        time: u64,
    ) -> BTreeMap<(PageId, u64, u64), isize> {
        let alive = input_at(steps, time);
        let mut state = BTreeMap::new();
        for (l, m) in &alive {
            let Side::Left(p, a) = l else { continue };
            for (r, n) in &alive {
                if let Side::Right(q, b) = r {
                    if p == q {
                        *state.entry((*p, *a, *b)).or_insert(0) += m * n;
                    }
                }
            }
        }
        state.retain(|_, d| *d != 0);
        state
    }

    #[test]
    fn the_join_by_page_is_the_join_from_scratch() {
        // Pages that come and go, assignments that change (a page's old one out and its new
        // one in at the same time), a side before the other, a value twice, and an update in
        // and out within one time.
        for seed in 1..=4 {
            let mut rng = Rng(seed);
            let mut left: BTreeMap<u64, u64> = BTreeMap::new();
            let mut right: BTreeMap<u64, u64> = BTreeMap::new();
            let mut steps: Vec<Vec<(Side<u64, u64>, isize)>> = Vec::new();
            for _ in 0..30 {
                let mut step = Vec::new();
                for _ in 0..1 + rng.below(12) {
                    let p = rng.below(24);
                    match rng.below(6) {
                        0 | 1 => match left.remove(&p) {
                            Some(a) => step.push((Side::Left(page(p), a), -1)),
                            None => {
                                let a = rng.below(4);
                                left.insert(p, a);
                                step.push((Side::Left(page(p), a), 1));
                            }
                        },
                        2 | 3 => {
                            if let Some(b) = right.remove(&p) {
                                step.push((Side::Right(page(p), b), -1));
                            }
                            if rng.below(4) > 0 {
                                let b = rng.below(5);
                                right.insert(p, b);
                                step.push((Side::Right(page(p), b), 1));
                            }
                        }
                        4 => {
                            // A second copy of a value, gone again a time later or not.
                            step.push((Side::Right(page(p), 9), 1));
                            if rng.below(2) == 0 {
                                step.push((Side::Right(page(p), 9), -1));
                            }
                        }
                        _ => {
                            let a = 7 + rng.below(2);
                            step.push((Side::Left(page(p), a), 1));
                            step.push((Side::Left(page(p), a), -1));
                        }
                    }
                }
                steps.push(step);
            }
            let check = steps.clone();
            assert_incremental(
                &steps,
                |sides| {
                    let left = sides.clone().flat_map(|s| match s {
                        Side::Left(p, a) => Some((p, a)),
                        Side::Right(..) => None,
                    });
                    let right = sides.flat_map(|s| match s {
                        Side::Right(p, b) => Some((p, b)),
                        Side::Left(..) => None,
                    });
                    join_by_page(left, right, "Join", |p, a: &u64, b: &u64| (p, *a, *b))
                },
                |time| from_scratch(&check, time),
                &format!("seed {seed}"),
            );
        }
    }
}
