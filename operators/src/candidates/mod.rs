//! Candidate sets ("perhaps similar"): pages sharing a fingerprint, joined by union-find.
//!
//! Records `(fingerprint, page)` are exchanged by the fingerprint (differential routes a key by
//! its fixed `Hashable` hash, never `RandomState`), so all pages sharing a fingerprint meet on one
//! worker. Each group links its pages by star edges to its anchor (never all pairs); a
//! fingerprint on more than `max_fingerprint_pages` pages is template-like and is dropped (and
//! counted). The connected components of these edges, maintained incrementally by a union-find
//! that also takes retractions (`components::components`), are the candidate sets, each
//! labelled by its anchor (`PageId::anchor_key`: the member with the smallest hash of URL and
//! record id, so a page joining or leaving a set of n relabels it with probability ~1/n,
//! whatever order pages come and go in). The set size is bounded later, in verify.

pub mod exact;
pub mod fingerprint;
pub mod minhash;
pub mod simhash;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::cluster::components::components;
use crate::ingest::page::PageId;

/// Settings of the candidate stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CandidateConfig {
    /// A fingerprint shared by more pages than this is dropped as template-like (and counted).
    pub max_fingerprint_pages: u32,
    /// Largest candidate set verified as one; larger sets are cut into chunks of this size
    /// (pages in length order) and each cut is counted.
    pub max_set_pages: u32,
    /// Bounded verification (`clustering = "connected"`): each page of a fingerprint group is
    /// compared with this many of the next pages in length order (see `edges`).
    pub neighbors: u32,
    /// Bounded verification with sentence fingerprints and the LCS verifier: a short page's
    /// per-sentence group on more pages than this (a sentence quoted on many pages) compares
    /// only the pairs whose sentences may reach τ (`groups::GroupSettings::sentence_groups_over`).
    pub common_sentence_pages: u32,
}

impl Default for CandidateConfig {
    fn default() -> Self {
        CandidateConfig {
            max_fingerprint_pages: 1_000,
            max_set_pages: 1_000,
            neighbors: 8,
            common_sentence_pages: crate::verify::groups::SENTENCE_GROUPS_OVER as u32,
        }
    }
}

/// Star edges of one fingerprint group (`pages` sorted, distinct) from its anchor
/// (`PageId::anchor_key`), so a page joining or leaving moves the star with probability ~1/n;
/// empty when oversized.
pub fn star_edges(pages: &[PageId], max_fingerprint_pages: u32) -> Vec<(PageId, PageId)> {
    if pages.len() > max_fingerprint_pages as usize {
        return Vec::new();
    }
    match crate::ingest::page::anchor(pages.iter().copied()) {
        Some(center) => pages.iter().filter(|&&p| p != center).map(|&p| (center, p)).collect(),
        None => Vec::new(),
    }
}

/// Output of the candidate stage.
pub struct Candidates<'scope, T: Timestamp> {
    /// `(page, set label)` for every page; the label is the set's anchor.
    pub sets: VecCollection<'scope, T, (PageId, PageId), isize>,
    /// Fingerprints dropped as oversized, with their page counts.
    pub oversized_fingerprints: VecCollection<'scope, T, (u64, isize), isize>,
}

/// The candidate operator.
pub trait CandidateSets<'scope, T: Timestamp + Lattice + TotalOrder> {
    /// Groups pages by fingerprint and labels each page with its candidate set.
    fn candidate_sets(
        self,
        pages: VecCollection<'scope, T, PageId, isize>,
        config: CandidateConfig,
    ) -> Candidates<'scope, T>;
}

impl<'scope, T> CandidateSets<'scope, T> for VecCollection<'scope, T, (u64, PageId), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord + std::hash::Hash,
{
    fn candidate_sets(
        self,
        pages: VecCollection<'scope, T, PageId, isize>,
        config: CandidateConfig,
    ) -> Candidates<'scope, T> {
        let max = config.max_fingerprint_pages;
        let oversized_fingerprints = oversized(self.clone(), max);
        let edges = self
            .reduce(move |_fp, group, output| {
                let members: Vec<PageId> = group.iter().map(|&(p, _)| *p).collect();
                for edge in star_edges(&members, max) {
                    output.push((edge, 1isize));
                }
            })
            .map(|(_fp, edge)| edge)
            .distinct();
        Candidates { sets: components(edges, pages), oversized_fingerprints }
    }
}

/// Fingerprints on more than `max_fingerprint_pages` pages, with their page counts.
pub fn oversized<'scope, T>(
    fingerprints: VecCollection<'scope, T, (u64, PageId), isize>,
    max_fingerprint_pages: u32,
) -> VecCollection<'scope, T, (u64, isize), isize>
where
    T: Timestamp + Lattice + Ord,
{
    fingerprints
        .map(|(fp, _)| fp)
        .count()
        .filter(move |&(_, count)| count > max_fingerprint_pages as isize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> PageId {
        PageId { date: n, hash: n }
    }

    #[test]
    fn star_edges_link_to_the_anchor() {
        assert_eq!(star_edges(&[id(1), id(2), id(3)], 10), vec![(id(1), id(2)), (id(1), id(3))]);
        // The earliest page is not the anchor when its hash is larger.
        let (a, b, c) =
            (PageId { date: 1, hash: 9 }, PageId { date: 2, hash: 4 }, PageId { date: 3, hash: 7 });
        assert_eq!(star_edges(&[a, b, c], 10), vec![(b, a), (b, c)]);
        assert!(star_edges(&[id(1)], 10).is_empty());
    }

    #[test]
    fn oversized_groups_give_no_edges() {
        assert!(star_edges(&[id(1), id(2), id(3)], 2).is_empty());
    }
}
