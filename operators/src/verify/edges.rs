//! Verified edges: bounded verification along fingerprint groups.
//!
//! The pages sharing a fingerprint (a *group*) meet on one worker, sorted by length (then id).
//! Each page scans its neighbours in that order, nearest first, at most `neighbors` on each
//! side and within the length filter, never every page: near-duplicates have near lengths. Its
//! nearest similar neighbour on each side is an *edge* (a family of copies is one chain of
//! adjacent pairs); clusters are the connected components of the edges
//! (`components::components`, an incremental union-find), each named by its anchor.
//!
//! Work per page is bounded: a page has at most `F` fingerprints (F ≈ m + word bands, plus one
//! per sentence for short pages). In each group, its arrival or departure makes its own two
//! scans (at most `2 · neighbors` comparisons) and again only the scans of the members that
//! reach it (at most `2 · neighbors` members; `groups::Group`, the operator's own state: each
//! member remembers how far its scans reached), where the pairs it makes or unmakes are new
//! and the rest are answered by the worker's verdict cache (`verify::VerdictCache`, keyed by
//! the two contents' hashes); a group over `max_fingerprint_pages` is dropped (counted). So
//! an arriving page costs a number of comparisons bounded by `F` and `neighbors`, whatever the
//! size of its group or cluster: no "perhaps similar" set is closed transitively and then
//! verified all pairs, and no group is scanned again when it grows.
//!
//! Siblings (generated pages that share blocks with a subset of their host's pages): a sentence
//! on at least `sibling_min_pages` pages of a group is a block that group repeats, and each
//! page's *repeated keys* are its sentences repeated in any group it is in (`repeated::sibling_halves`).
//! A similar pair whose own texts are different texts
//! (`verify::own_texts_are_different_texts`) is a *sibling candidate*: a scan goes on past it,
//! and it becomes an edge unless what the two share is mostly sentences repeated for both
//! (`siblings`), decided after the groups with both pages' repeated keys. A small group
//! (a word band shared by a few siblings) thus judges a pair as the large groups of its pages
//! would, and the repeated keys never change a member: a group whose repeated blocks change
//! re-verifies nothing (feeding them back into the members made every such change re-verify
//! all the groups of the group's pages).
//!
//! Semantics: A≈B, B≈C gives {A, B, C} (connected), as `clustering = "connected"` did over
//! candidate sets; two near-duplicates are joined when one is the other's nearest similar
//! neighbour in some group they share, or through others.

use std::sync::Arc;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::ingest::page::{Content, PageId};
use crate::runtime::footprint::Structure;
use crate::verify::groups::{verify_groups, GroupOutput, GroupSettings};
use crate::verify::repeated;
use crate::verify::{VerifyConfig, VerifyStats};

use super::member::*;

/// The verdicts of one group (`members` sorted by length, then id), from scratch: each
/// member's nearest similar neighbour on each side within `neighbors`, and the sibling
/// candidates met before it (`groups::contributions`), each pair once. A function of the
/// members alone, so that the dataflow keeps it incrementally (`groups::Group`: a change
/// re-decides only the members near it). `compare` decides a pair (Myers with a cache in the
/// dataflow, plain DP in the reference).
pub fn group_edges<F>(
    fp: u64,
    members: &[&Member],
    config: &VerifyConfig,
    sentence_groups_over: usize,
    neighbors: usize,
    stats: &mut VerifyStats,
    compare: F,
) -> GroupVerdicts
where
    F: FnMut(&Member, &Member) -> PairVerdict,
{
    let settings = crate::verify::groups::GroupSettings {
        config: config.clone(),
        neighbors,
        max_pages: usize::MAX,
        min_pages: 0,
        sentence_groups_over,
    };
    let list: Vec<Arc<Member>> = members.iter().map(|&m| Arc::new(m.clone())).collect();
    let mut bag = crate::verify::groups::group_contributions(fp, &list, &settings, stats, compare);
    bag.dedup();
    let mut out = GroupVerdicts::default();
    for (edge, candidate) in bag {
        if candidate {
            out.candidates.push(edge);
        } else {
            out.edges.push(edge);
        }
    }
    out
}

/// The operator's output.
pub struct Edges<'scope, T: Timestamp> {
    pub edges: VecCollection<'scope, T, Edge, isize>,
    /// Groups dropped as oversized (fingerprint, pages): the groups verification skips, counted
    /// over the pages it verifies (representatives of identical families).
    pub oversized_fingerprints: VecCollection<'scope, T, (u64, isize), isize>,
}

/// The verified-edges operator.
pub trait VerifyEdges<'scope, T: Timestamp + Lattice + TotalOrder> {
    /// `self` is each page's `Member`, `fingerprints` its fingerprints (computed again from the
    /// member when it leaves: neither the pages' fingerprints nor the members are arranged for
    /// a join). Groups of more than `max_fingerprint_pages` pages are dropped (and reported,
    /// `oversized_fingerprints`). `sentence_groups_over`: per-sentence groups of more pages compare
    /// only the pairs whose sentences may reach τ (`groups::GroupSettings::sentence_groups_over`).
    /// `on_stats` sees every group's counters, those of one time at once.
    #[allow(clippy::too_many_arguments)]
    fn verified_edges<F, S>(
        self,
        fingerprints: F,
        config: VerifyConfig,
        sentence_groups_over: usize,
        neighbors: u32,
        max_fingerprint_pages: u32,
        on_stats: S,
    ) -> Edges<'scope, T>
    where
        F: Fn(&Content) -> Vec<u64> + 'static,
        S: FnMut(&[VerifyStats]) + 'static;
}

impl<'scope, T: Timestamp + Lattice + TotalOrder + Ord> VerifyEdges<'scope, T>
    for VecCollection<'scope, T, (PageId, Arc<Member>), isize>
{
    fn verified_edges<F, S>(
        self,
        fingerprints: F,
        config: VerifyConfig,
        sentence_groups_over: usize,
        neighbors: u32,
        max_fingerprint_pages: u32,
        on_stats: S,
    ) -> Edges<'scope, T>
    where
        F: Fn(&Content) -> Vec<u64> + 'static,
        S: FnMut(&[VerifyStats]) + 'static,
    {
        let members = self;
        let sibling_min_pages = config.sibling_min_pages;
        let settings = GroupSettings {
            config,
            neighbors: neighbors as usize,
            max_pages: max_fingerprint_pages as usize,
            min_pages: sibling_min_pages,
            sentence_groups_over,
        };
        // A page's fingerprints, from its member alone: as it arrives, and again as it leaves
        // (a member's fingerprints are a function of its content), so nothing holds each
        // page's fingerprints. The groups are the operator's own state (`groups::Group`), kept
        // incrementally: a change costs the scans that reach it, not a pass over the group.
        let runtime = crate::run::Runtime::of(&members.scope());
        let pages = members.clone().map(move |(_, member)| {
            let fps = fingerprints(&member.content());
            (member, fps)
        });
        let outputs =
            verify_groups(pages, settings, crate::verify::groups::PACE, on_stats, &runtime);
        let oversized_fingerprints = outputs.clone().flat_map(|o| match o {
            GroupOutput::Oversized(fp, pages) => Some((fp, pages)),
            _ => None,
        });
        // Each pair's verdict once, however many groups it is in: edges (`false`) and sibling
        // candidates (`true`). A hash-map entry a pair, where `distinct` arranged each twice.
        let verdicts = outputs.clone().flat_map(|o| match o {
            GroupOutput::Verdict(edge, candidate) => Some((edge, candidate)),
            _ => None,
        });
        let verdicts = crate::runtime::by_time::distinct(
            verdicts,
            "Verdicts",
            (&runtime.footprint, Structure::Edges),
            |(e, _): &(Edge, bool)| e.longer.hash ^ e.shorter.hash.rotate_left(17),
        );
        let edges = verdicts.clone().flat_map(|(edge, candidate)| (!candidate).then_some(edge));
        let candidates = verdicts.flat_map(|(edge, candidate)| candidate.then_some(edge));
        let blocks = outputs.flat_map(|o| match o {
            GroupOutput::Blocks(id, common) => Some((id, common)),
            _ => None,
        });
        let edges = if sibling_min_pages > 0 {
            // Sibling candidates that are not siblings are edges: each meets both pages'
            // members and repeated keys (their views), as a half at each page's worker, the
            // halves then at the candidate's.
            let parts = members
                .map(|(_, member)| repeated::SiblingUpdate::Member(member))
                .concat(blocks.map(|(id, blocks)| repeated::SiblingUpdate::Blocks(id, blocks)))
                .concat(candidates.flat_map(|e| {
                    [
                        repeated::SiblingUpdate::Candidate((e, true)),
                        repeated::SiblingUpdate::Candidate((e, false)),
                    ]
                }));
            edges.concat(crate::verify::siblings::not_siblings(repeated::sibling_halves(parts)))
        } else {
            edges.concat(candidates)
        };
        // No `distinct` over the two: each is distinct, and they are disjoint (whether a
        // similar pair is a candidate is a function of the two contents, so a pair is a
        // candidate in every group it meets in or in none).
        Edges { edges, oversized_fingerprints }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::member::tests::{id, member};
    use crate::verify::tests::{of_words, sentence};
    use crate::verify::{self, VerifyMethod};

    fn edges_of(members: &[Member], neighbors: usize) -> Vec<(u64, u64)> {
        let mut sorted: Vec<&Member> = members.iter().collect();
        sorted.sort();
        let config = VerifyConfig { threshold: 0.8, word_threshold: 0.0, ..Default::default() };
        let mut stats = VerifyStats::default();
        group_edges(1, &sorted, &config, usize::MAX, neighbors, &mut stats, |a, b| {
            pair_verdict(&config, a, b)
        })
        .edges
        .iter()
        .map(|e| (e.shorter.date, e.longer.date))
        .collect()
    }

    /// In a group of siblings (a block they all repeat, and sentences of their own), a page
    /// that joins or leaves moves no block, and the tally settles its own sentences without
    /// counting them over the members; a sentence that a page brings to `min_pages` is
    /// counted, and becomes a block.
    #[test]
    fn a_family_is_a_chain_of_nearest_neighbours() {
        // Ten copies of one text, each with its own last sentence: each page's nearest
        // neighbour on each side verifies, so the family is one chain of adjacent pairs.
        let family: Vec<Member> =
            (0..10).map(|n| member(n, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 100 + n])).collect();
        let edges = edges_of(&family, 2);
        assert_eq!(edges, (0..9).map(|n| (n, n + 1)).collect::<Vec<_>>());
    }

    #[test]
    fn an_interloper_is_scanned_past() {
        // Two copies with an unrelated page of the same length between them: the scan goes on
        // past it to the copy two apart.
        let pages = vec![
            member(1, &[1, 2, 3, 4, 5]),
            member(2, &[7, 8, 9, 10, 11]),
            member(3, &[1, 2, 3, 4, 6]),
        ];
        assert_eq!(edges_of(&pages, 8), vec![(1, 3)]);
    }

    #[test]
    fn siblings_meeting_in_a_small_group_are_judged_by_their_repeated_keys() {
        // 20 siblings: a generated block of 30 sentences on each, 3 sentences of each page's own.
        let block: Vec<Vec<u16>> = (0..30).map(sentence).collect();
        let sibling = |n: u16| {
            of_words(
                &[block.clone(), (0..3).map(|s| sentence(1000 + 10 * n + s)).collect()].concat(),
            )
        };
        let contents: Vec<Content> = (0..20).map(sibling).collect();
        let config = VerifyConfig::default();
        assert_eq!(config.sibling_min_pages, 16);
        let keys: Vec<Vec<u64>> = contents.iter().map(verify::distinct_sentence_keys).collect();
        let refs: Vec<&[u64]> = keys.iter().map(|k| k.as_slice()).collect();
        let repeated = group_repeated_keys(&refs, config.sibling_min_pages).expect("a group of 20");
        assert_eq!(repeated.len(), 30, "the block is repeated, the own sentences are not");
        assert!(
            group_repeated_keys(&refs[..2], config.sibling_min_pages).is_none(),
            "two pages cannot tell a repeated block"
        );
        // Two of them meet in a group of two (e.g. a word band only they share): a similar pair
        // whose own texts differ, a sibling candidate, not an edge yet.
        let mut pair: Vec<Member> = (0..2)
            .map(|n| Member::new(VerifyMethod::Lcs, id(n as u64), contents[n].clone()))
            .collect();
        pair.sort();
        let pair: Vec<&Member> = pair.iter().collect();
        let verdicts =
            group_edges(1, &pair, &config, usize::MAX, 8, &mut VerifyStats::default(), |a, b| {
                pair_verdict(&config, a, b)
            });
        assert!(verdicts.edges.is_empty());
        let [candidate] = verdicts.candidates[..] else {
            panic!("one candidate: {:?}", verdicts.candidates)
        };
        let (a, b) = (&*pair[0].content(), &*pair[1].content());
        assert_eq!((candidate.shorter, candidate.longer), (pair[0].id, pair[1].id));
        assert!(!siblings(a, &[], b, &[]), "90% shared, nothing known to be repeated: an edge");
        assert!(
            siblings(a, &repeated, b, &repeated),
            "what they share is repeated for both: siblings"
        );
        assert!(!siblings(a, &repeated, b, &[]), "repeated for one of them only: an edge");
    }

    #[test]
    fn an_unrelated_page_gets_no_edge() {
        let pages = vec![
            member(1, &[1, 2, 3, 4, 5]),
            member(2, &[1, 2, 3, 4, 6]),
            member(3, &[7, 8, 9, 10, 11]),
        ];
        assert_eq!(edges_of(&pages, 8), vec![(1, 2)]);
    }
}
