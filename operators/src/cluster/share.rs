//! Sentence share in the stream: per page, the weight of its (non-template) sentences already
//! present on an earlier page over its whole weight, and its duplicated spans: runs of
//! consecutive sentences whose earliest holder is the same page.
//!
//! "Earlier" is the page order of the whole system (crawl date, then id), so the original of a
//! copied article has share 0 and its copies near 1, whatever the arrival order. Incremental:
//! the earliest holder of each sentence key is maintained under insertions and retractions, and
//! a page's row changes only when one of its keys' earliest holder does.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::trace::implementations::{ValBuilder, ValSpine};
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::ingest::page::PageId;
use crate::template::Filtered;

/// A run of duplicated sentences `[from, to)` (offsets in the page's own sentences,
/// `Filtered::own_sentences`) first
/// seen on `first`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SharedSpan {
    pub from: u32,
    pub to: u32,
    pub first: PageId,
}

/// A page's duplicated sentences.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Shared {
    /// Duplicated weight over the page's weight, in millionths.
    pub share_ppm: u32,
    pub spans: Vec<SharedSpan>,
}

/// The kernel: a page's sentences and, for the keys held by an earlier page, that page.
pub fn shared<S: crate::ingest::page::KeyWeight>(
    sentences: &[S],
    earlier: impl Fn(u64) -> Option<PageId>,
) -> Shared {
    let total: u64 = sentences.iter().map(|s| s.compared().1 as u64).sum();
    let mut dup = 0u64;
    let mut spans: Vec<SharedSpan> = Vec::new();
    for (i, (key, weight)) in sentences.iter().map(S::compared).enumerate() {
        let Some(first) = earlier(key) else { continue };
        dup += weight as u64;
        let i = i as u32;
        match spans.last_mut() {
            Some(span) if span.to == i && span.first == first => span.to = i + 1,
            _ => spans.push(SharedSpan { from: i, to: i + 1, first }),
        }
    }
    let share_ppm = if total == 0 { 0 } else { (dup as u128 * 1_000_000 / total as u128) as u32 };
    Shared { share_ppm, spans }
}

/// The operator.
pub trait SentenceShare<'scope, T: Timestamp + Lattice> {
    /// `(page, shared)` for every page with at least one sentence on an earlier page.
    fn sentence_share(self) -> VecCollection<'scope, T, (PageId, Shared), isize>;
}

impl<'scope, T: Timestamp + Lattice + Ord> SentenceShare<'scope, T>
    for VecCollection<'scope, T, (PageId, Filtered), isize>
{
    fn sentence_share(self) -> VecCollection<'scope, T, (PageId, Shared), isize> {
        // Arranged once: the earliest holders are reduced from it and joined back to it.
        let occurrences = self
            .clone()
            .flat_map(|(id, filtered)| {
                let mut keys: Vec<u64> = filtered.own_sentences().iter().map(|&(k, _)| k).collect();
                keys.sort_unstable();
                keys.dedup();
                keys.into_iter().map(move |k| (k, id))
            })
            .arrange_by_key_named("Arrange: sentence occurrences");
        // The earliest holder of each key, as an arrangement the join reads.
        let first = occurrences
            .clone()
            .reduce_abelian::<_, ValBuilder<_, _, _, _>, ValSpine<u64, PageId, T, isize>, _, _>(
                "Earliest holder",
                |_key, holders, output| output.push((*holders[0].0, 1isize)),
                |vec, key, updates| {
                    vec.clear();
                    vec.extend(updates.drain(..).map(|(v, t, r)| ((*key, v), t, r)));
                },
            );
        // Per page, its keys held earlier by another page, with that page.
        let earlier = occurrences
            .join_core(first, |&key, &page, &first| Some((page, (key, first))))
            .filter(|(page, (_, first))| first != page)
            .reduce(|_page, pairs, output| {
                output.push((
                    pairs.iter().map(|(pair, _)| **pair).collect::<Vec<(u64, PageId)>>(),
                    1isize,
                ));
            });
        self.join_map(earlier, |&page, filtered, pairs| {
            let lookup =
                |key: u64| pairs.binary_search_by_key(&key, |&(k, _)| k).ok().map(|i| pairs[i].1);
            (page, shared(&filtered.own_sentences(), lookup))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_and_spans_are_exact() {
        let p = |n| PageId { date: n, hash: 0 };
        let sentences = [(1, 4), (2, 4), (3, 2), (4, 6), (5, 4)];
        let earlier = |k: u64| match k {
            1 | 2 => Some(p(1)),
            4 => Some(p(2)),
            5 => Some(p(1)),
            _ => None,
        };
        let s = shared(&sentences, earlier);
        assert_eq!(s.share_ppm, 900_000); // 18 of 20
        assert_eq!(
            s.spans,
            vec![
                SharedSpan { from: 0, to: 2, first: p(1) },
                SharedSpan { from: 3, to: 4, first: p(2) },
                SharedSpan { from: 4, to: 5, first: p(1) }
            ]
        );
        assert_eq!(shared::<(u64, u16)>(&[], |_| None), Shared::default());
    }
}
