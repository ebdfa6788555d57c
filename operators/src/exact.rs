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
//! Incremental: the representative is a minimum kept in two levels (per key and bucket of
//! page hashes, then per key), so a page joining or leaving a family of n costs O(n / 256 + 256)
//! in the reduce, not O(n). The representative changes only when the anchor joins or leaves
//! (probability ~1/n), which moves every member: O(1) expected a change, whatever order pages
//! come and go in (under retention the earliest page always leaves first).

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use timely::progress::Timestamp;

use crate::hashing::mix64;
use crate::page::{Page, PageId};
use crate::verify::Assignment;

/// Buckets of the first level of the family minimum.
const BUCKETS: u64 = 256;

/// The key of a page's whole content (its sentences' keys, in order); `None` without sentences.
pub fn content_key(page: &Page) -> Option<u64> {
    if page.sentences.is_empty() {
        return None;
    }
    let h = page.sentences.iter().fold(page.sentences.len() as u64, |h, s| mix64(h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ s.key));
    Some(h)
}

/// The anchor of a group (a reduce's logic).
fn anchor_of<K>(_key: &K, ids: &[(&PageId, isize)], output: &mut Vec<(PageId, isize)>) {
    if let Some(first) = crate::page::anchor(ids.iter().map(|&(id, _)| *id)) {
        output.push((first, 1));
    }
}

/// A member's assignment, from its representative's.
pub fn member_assignment(representative: PageId, of_representative: &Assignment) -> Assignment {
    Assignment { cluster: of_representative.cluster, leader: representative, similarity_ppm: 1_000_000 }
}

/// The family operator.
pub trait ExactFamilies<'scope, T: Timestamp + Lattice> {
    /// `(page, representative)` for every page: its family's anchor (itself when it is the
    /// anchor, or has no sentences).
    fn exact_families(self) -> VecCollection<'scope, T, (PageId, PageId), isize>;
}

impl<'scope, T> ExactFamilies<'scope, T> for VecCollection<'scope, T, (PageId, Page), isize>
where
    T: Timestamp + Lattice + Ord,
{
    fn exact_families(self) -> VecCollection<'scope, T, (PageId, PageId), isize> {
        let keyed = self.clone().flat_map(|(id, page)| content_key(&page).map(|key| (key, id)));
        // A page without sentences has no family: it represents itself.
        let alone = self.filter(|(_, page)| page.sentences.is_empty()).map(|(id, _)| (id, id));
        let representatives = keyed
            .clone()
            .map(|(key, id)| ((key, mix64(id.hash) % BUCKETS), id))
            .reduce_named("Exact family buckets", anchor_of)
            .map(|((key, _bucket), id)| (key, id))
            .reduce_named("Exact families", anchor_of);
        keyed.join_map(representatives, |_key, &id, &representative| (id, representative)).concat(alone)
    }
}

/// Every member's assignment: representatives keep theirs, members take their representative's.
pub fn expand_families<'scope, T: Timestamp + Lattice + Ord>(
    families: VecCollection<'scope, T, (PageId, PageId), isize>,
    representatives: VecCollection<'scope, T, (PageId, Assignment), isize>,
) -> VecCollection<'scope, T, (PageId, Assignment), isize> {
    let members = families.filter(|(id, representative)| id != representative).map(|(id, representative)| (representative, id));
    members
        .join_map(representatives.clone(), |&representative, &id, assignment| (id, member_assignment(representative, assignment)))
        .concat(representatives)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::Sentence;

    fn page(keys: &[u64]) -> Page {
        Page::of_keys(keys, |key| Sentence { key, weight: 1, fingerprinted: true, words: 0 })
    }

    #[test]
    fn the_key_is_the_whole_sequence_in_order() {
        assert_eq!(content_key(&page(&[1, 2, 3])), content_key(&page(&[1, 2, 3])));
        assert_ne!(content_key(&page(&[1, 2, 3])), content_key(&page(&[3, 2, 1])));
        assert_ne!(content_key(&page(&[1, 2, 3])), content_key(&page(&[1, 2])));
        assert_ne!(content_key(&page(&[1, 2])), content_key(&page(&[1, 2, 2])));
        assert_eq!(content_key(&page(&[])), None);
    }

    #[test]
    fn a_member_takes_its_representatives_cluster_at_resemblance_one() {
        let rep = PageId { date: 1, hash: 9 };
        let of_rep = Assignment { cluster: PageId { date: 0, hash: 3 }, leader: PageId { date: 0, hash: 3 }, similarity_ppm: 850_000 };
        let a = member_assignment(rep, &of_rep);
        assert_eq!((a.cluster, a.leader, a.similarity_ppm), (of_rep.cluster, rep, 1_000_000));
    }
}
