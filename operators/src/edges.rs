//! Verified edges: bounded verification along fingerprint groups.
//!
//! The pages sharing a fingerprint (a *group*) meet on one worker, sorted by length (then id).
//! Each page is compared with the next `neighbors` pages of the group in that order, within the
//! length filter, never with every page: near-duplicates have near lengths, and a family of
//! copies is one chain of verified neighbours. A pair within τ is an *edge*; clusters are the
//! connected components of the edges (`candidates::components`, an incremental union-find),
//! each named by its earliest page.
//!
//! Work per page is bounded: a page has at most `F` fingerprints (F ≈ m + word bands, plus one
//! per sentence for short pages), each group it is in costs at most `2 · neighbors`
//! comparisons that involve it, and a group over `max_fingerprint_pages` is dropped (counted),
//! so an arriving page costs at most `2 · F · neighbors` comparisons, whatever the size of its
//! cluster: no "perhaps similar" set is closed transitively and then verified all pairs. Pairs
//! are taken by distance in length order (adjacent pairs first, `neighbour_pairs`), so an
//! arriving page brings new pairs near it only. A group that changes is re-scanned whole, but
//! the pairs it had compared before cost a lookup in the worker's verdict cache
//! (`verify::VerdictCache`), keyed by the two contents' hashes.
//!
//! Siblings (generated pages that share blocks with a subset of their host's pages): a sentence
//! on at least `sibling_min_pages` pages of a group is a block that group repeats, and each
//! page's *repeated keys* are its sentences repeated in any group it is in (`repeated_keys`).
//! A similar pair whose own texts are different texts
//! (`verify::own_texts_are_different_texts`) is a *sibling candidate*: it joins nothing in
//! its group and becomes an edge unless what the two share is mostly sentences repeated for
//! both (`siblings`), decided after the groups with both pages' repeated keys. A small group
//! (a word band shared by a few siblings) thus judges a pair as the large groups of its pages
//! would, and the repeated keys never change a member: a group whose repeated blocks change
//! re-verifies nothing (feeding them back into the members made every such change re-verify
//! all the groups of the group's pages).
//!
//! Semantics: A≈B, B≈C gives {A, B, C} (connected), as `clustering = "connected"` did over
//! candidate sets; two near-duplicates are compared when they share a fingerprint and are
//! within `neighbors` of each other in some group they share, or are joined through others.

use std::sync::Arc;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::arranged::{self, ByKey};
use crate::lcs::{self, Verdict};
use crate::page::{Content, PageId};
use crate::verify::{self, VerifyConfig, VerifyStats};

/// A page as a group holds it: ordered by length, then id. Groups hold an `Arc<Member>` (one
/// allocation per page, however many groups hold it; 8 bytes an entry). Equality and order
/// are by length, id and content hash, never by the content itself: consolidating a group's
/// updates compares members, and comparing whole contents cost 3% of a run. Two contents of one page with the
/// same 64-bit hash would count as one (probability 2^-64 per change).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Member {
    pub length: u64,
    pub id: PageId,
    /// `verify::content_hash`: the verdict cache's key.
    pub hash: u64,
    pub content: Arc<Content>,
    /// The content's distinct sentence keys, sorted (`verify::distinct_sentence_keys`): what
    /// the groups' repeated blocks are counted on. A function of the content, so no part of
    /// the identity.
    pub keys: Arc<Vec<u64>>,
}

impl Member {
    fn identity(&self) -> (u64, PageId, u64) {
        (self.length, self.id, self.hash)
    }
}

impl PartialEq for Member {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for Member {}

impl PartialOrd for Member {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Member {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.identity().cmp(&other.identity())
    }
}

impl std::hash::Hash for Member {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.identity().hash(state)
    }
}

impl Member {
    pub fn new(method: verify::VerifyMethod, id: PageId, content: Content) -> Self {
        let keys = Arc::new(verify::distinct_sentence_keys(&content));
        Member { length: verify::length(method, &content), id, hash: verify::content_hash(&content), content: Arc::new(content), keys }
    }
}

/// The sentences repeated in a group (each member's distinct keys, sorted): those on at least
/// `min_pages` of its pages, sorted. None when the group is smaller than `min_pages` (or
/// `min_pages` is 0: no sibling rule).
pub fn group_repeated_keys(keys: &[&[u64]], min_pages: u32) -> Option<Vec<u64>> {
    if min_pages == 0 || keys.len() < min_pages as usize {
        return None;
    }
    Some(verify::common_keys(keys, min_pages))
}

/// Siblings: of what `a` shares with `b`, most (by weight) is sentences in both pages'
/// repeated keys (`repeated_a`, `repeated_b`, sorted). Decides a sibling candidate: a similar
/// pair whose own texts are different texts (`verify::own_texts_are_different_texts`), which
/// the groups the pair meets in alone cannot tell (a word band shared by two siblings).
pub fn siblings(a: &Content, repeated_a: &[u64], b: &Content, repeated_b: &[u64]) -> bool {
    siblings_by_keys(a, repeated_a, &verify::distinct_sentence_keys(b), repeated_b)
}

/// `siblings` with `b` given by its distinct sentence keys (a `Member` carries them).
pub fn siblings_by_keys(a: &Content, repeated_a: &[u64], b_keys: &[u64], repeated_b: &[u64]) -> bool {
    let common = crate::sorted::intersect(repeated_a, repeated_b);
    !common.is_empty() && verify::shares_mostly_common_with(a, b_keys, &common)
}

/// What verifying a group gives: its edges, and its sibling candidates (similar pairs whose
/// own texts differ), decided later with the pages' repeated keys (`siblings`).
#[derive(Debug, Default)]
pub struct GroupVerdicts {
    pub edges: Vec<Edge>,
    pub candidates: Vec<Edge>,
}

/// A verified pair: `longer` is within τ of `shorter` (the earlier in length order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Edge {
    pub shorter_length: u64,
    pub shorter: PageId,
    pub longer: PageId,
    pub similarity_ppm: u32,
}

/// What a pair of contents gives, before the group's repeated blocks are known: the verdict
/// and whether the two pages' own texts are different texts
/// (`verify::own_texts_are_different_texts`). A pure function of the two contents (cached).
pub type PairVerdict = (Verdict, bool);

/// The pairs of a group (members sorted by length, then id) to compare: each member with the
/// next `neighbors` members within the length filter, by distance: every adjacent pair first,
/// then the pairs two apart, and so on. With the group's union-find skipping pairs already
/// joined, a family of copies costs its adjacent pairs, and a page inserted into a group
/// brings new pairs near it only: in member order (each member with its next `neighbors`),
/// an insertion shifted which pair each later member compared, and a group of g copies
/// cost O(g) new comparisons per arriving copy. The components are the same in any order
/// (a pair is skipped only when already joined).
pub fn neighbour_pairs(lengths: &[u64], neighbors: usize, too_long: impl Fn(u64, u64) -> bool) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for distance in 1..=neighbors {
        for i in 0..lengths.len().saturating_sub(distance) {
            if !too_long(lengths[i], lengths[i + distance]) {
                pairs.push((i, i + distance));
            }
        }
    }
    pairs
}

/// The edges of one group (`members` sorted by length, then id). `compare` decides a pair
/// (Myers with a cache in the dataflow, plain DP in the reference).
pub fn group_edges<F>(
    members: &[&Member],
    config: &VerifyConfig,
    neighbors: usize,
    stats: &mut VerifyStats,
    mut compare: F,
) -> GroupVerdicts
where
    F: FnMut(&Member, &Member) -> PairVerdict,
{
    let tau_ppm = lcs::ppm(config.threshold);
    let lengths: Vec<u64> = members.iter().map(|m| m.length).collect();
    let mut out = GroupVerdicts::default();
    // The group's own union-find: a pair already joined through the group's edges is not
    // compared (it adds no connection), so a family of n copies costs about n comparisons in a
    // group, not n · neighbors. Sibling candidates join nothing (they may be rejected).
    let mut root: Vec<usize> = (0..members.len()).collect();
    for (i, j) in neighbour_pairs(&lengths, neighbors, |a, b| verify::too_long(config.method, tau_ppm, a, b)) {
        let (a, b) = (members[i], members[j]);
        let (ri, rj) = (verify::find(&mut root, i), verify::find(&mut root, j));
        if ri == rj {
            continue;
        }
        stats.comparisons += 1;
        match compare(a, b) {
            (Verdict::Similar(s), own_texts_differ) => {
                let edge = Edge { shorter_length: a.length, shorter: a.id, longer: b.id, similarity_ppm: (s * 1_000_000.0).round() as u32 };
                if own_texts_differ {
                    out.candidates.push(edge);
                    continue;
                }
                stats.accepted += 1;
                root[ri.max(rj)] = ri.min(rj);
                out.edges.push(edge);
            }
            (Verdict::Dissimilar, _) => stats.rejected += 1,
            (Verdict::CostCapped, _) => {
                stats.rejected += 1;
                stats.cost_capped += 1;
            }
        }
    }
    out
}

/// A pair's verdict in the dataflow: Myers (`verify::compare`) and the pair part of the
/// sibling rule, computed for similar pairs only.
pub fn pair_verdict(config: &VerifyConfig, a: &Content, b: &Content) -> PairVerdict {
    let verdict = verify::compare(config, a, b, lcs::ppm(config.threshold));
    let differ = matches!(verdict, Verdict::Similar(_)) && verify::own_texts_are_different_texts(config, a, b);
    (verdict, differ)
}

/// The operator's output.
pub struct Edges<'scope, T: Timestamp> {
    pub edges: VecCollection<'scope, T, Edge, isize>,
    /// Groups dropped as oversized (fingerprint, pages): the groups verification skips, counted
    /// over the pages it verifies (representatives of identical families).
    pub oversized_fingerprints: VecCollection<'scope, T, (u64, isize), isize>,
}

/// The verified-edges operator.
pub trait VerifyEdges<'scope, T: Timestamp + Lattice> {
    /// `self` is each page's fingerprints, `(page, fingerprints)`; `members` each page's
    /// `Member`. Groups of more than `max_fingerprint_pages` pages are dropped (and reported,
    /// `oversized_fingerprints`). `on_stats` sees every group's counters.
    fn verified_edges<S>(
        self,
        members: VecCollection<'scope, T, (PageId, Arc<Member>), isize>,
        config: VerifyConfig,
        neighbors: u32,
        max_fingerprint_pages: u32,
        on_stats: S,
    ) -> Edges<'scope, T>
    where
        S: FnMut(&VerifyStats) + 'static;
}

impl<'scope, T: Timestamp + Lattice + Ord> VerifyEdges<'scope, T> for VecCollection<'scope, T, (PageId, Vec<u64>), isize> {
    fn verified_edges<S>(
        self,
        members: VecCollection<'scope, T, (PageId, Arc<Member>), isize>,
        config: VerifyConfig,
        neighbors: u32,
        max_fingerprint_pages: u32,
        mut on_stats: S,
    ) -> Edges<'scope, T>
    where
        S: FnMut(&VerifyStats) + 'static,
    {
        let max = max_fingerprint_pages as usize;
        let sibling_min_pages = config.sibling_min_pages;
        // A page's fingerprints are one value (its list), not one update each: the groups are
        // the only arrangement by fingerprint.
        let fingerprints = self.arrange_by_key_named("Arrange: fingerprints of pages");
        let members = members.arrange_by_key_named("Arrange: members");
        // The groups, arranged once: verification, the oversized count and the repeated
        // blocks all read this one arrangement.
        let groups = fingerprints
            .join_core(members.clone(), |_, fps, member| fps.iter().map(|&fp| (fp, member.clone())).collect::<Vec<_>>())
            .arrange_by_key_named("Arrange: fingerprint groups");
        let oversized_fingerprints = arranged::reduce(groups.clone(), "Oversized fingerprints", move |_fp, group, output| {
            if group.len() > max {
                output.push((group.len() as isize, 1isize));
            }
        });
        let mut cache: verify::VerdictCache<PairVerdict> = verify::VerdictCache::new(verify::VERDICT_CACHE_ENTRIES);
        // Each group's edges (`false`) and sibling candidates (`true`).
        let verdicts = arranged::reduce(groups.clone(), "Verify groups", move |_fp, group, output| {
            if group.len() > max || group.len() < 2 {
                return;
            }
            let started = std::time::Instant::now();
            let members: Vec<&Member> = group.iter().map(|&(m, _)| m.as_ref()).collect();
            let mut stats = VerifyStats { pages: members.len() as u64, ..Default::default() };
            if cache.rotate_if_full() {
                stats.cache_clears += 1;
            }
            let verdicts = group_edges(&members, &config, neighbors as usize, &mut stats, |a, b| {
                cache.get_or_insert_with((a.hash, b.hash), || pair_verdict(&config, &a.content, &b.content))
            });
            stats.nanos = started.elapsed().as_nanos() as u64;
            on_stats(&stats);
            for edge in verdicts.edges {
                output.push(((edge, false), 1isize));
            }
            for edge in verdicts.candidates {
                output.push(((edge, true), 1isize));
            }
        })
        .map(|(_fp, verdict)| verdict)
        .distinct();
        let edges = verdicts.clone().flat_map(|(edge, candidate)| (!candidate).then_some(edge));
        let candidates = verdicts.flat_map(|(edge, candidate)| candidate.then_some(edge));
        let edges = match repeated_keys(groups, members.clone(), sibling_min_pages, max_fingerprint_pages) {
            // Sibling candidates that are not siblings are edges: each meets both pages'
            // contents and repeated keys.
            Some(repeated) => {
                let views = members
                    .join_core(repeated.arrange_by_key(), |&id, member, repeated| Some((id, (member.clone(), repeated.clone()))))
                    .arrange_by_key();
                let not_siblings = candidates
                    .map(|e| (e.shorter, e))
                    .join_core(views.clone(), |_, e, (a, ra)| Some((e.longer, (*e, a.clone(), ra.clone()))))
                    .join_core(views, |_, (e, a, ra), (b, rb)| (!siblings_by_keys(&a.content, ra, &b.keys, rb)).then_some(*e));
                edges.concat(not_siblings)
            }
            None => edges.concat(candidates),
        };
        // No `distinct` over the two: each is distinct, and they are disjoint (whether a
        // similar pair is a candidate is a function of the two contents, so a pair is a
        // candidate in every group it meets in or in none).
        Edges { edges, oversized_fingerprints }
    }
}

/// Each page's repeated keys: its sentences on at least `min_pages` pages of some group it is
/// in (`group_repeated_keys`), groups over `max_pages` left out as in verification; `(page,
/// keys)` for every member (empty when none), None when `min_pages` is 0 (no sibling rule).
/// `groups` is verification's own arrangement of the groups (read, not arranged again). The
/// keys decide sibling candidates only: they never change a member, so a group whose repeated
/// blocks change re-verifies nothing.
///
/// Memory: each page's distinct keys once (in its `Member`, shared by every group holding
/// it), a group's repeated blocks once per large group (shared by its members' entries), each
/// page's repeated keys once; per (group, page) a pointer, never a copy of a list.
#[allow(clippy::type_complexity)]
fn repeated_keys<'scope, T: Timestamp + Lattice + Ord>(
    groups: ByKey<'scope, u64, Arc<Member>, T>,
    members: ByKey<'scope, PageId, Arc<Member>, T>,
    min_pages: u32,
    max_pages: u32,
) -> Option<VecCollection<'scope, T, (PageId, Arc<Vec<u64>>), isize>> {
    if min_pages == 0 {
        return None;
    }
    let keys = members.as_collection(|&id, m| (id, m.keys.clone()));
    // Each large group's repeated blocks, one list per group, a pointer to it per member.
    let blocks = arranged::reduce(groups, "Repeated blocks", move |_fp, group, output| {
        if group.len() > max_pages as usize {
            return;
        }
        let keys: Vec<&[u64]> = group.iter().map(|(m, _)| m.keys.as_slice()).collect();
        if let Some(common) = group_repeated_keys(&keys, min_pages).filter(|c| !c.is_empty()) {
            let common = Arc::new(common);
            for (m, _) in group {
                output.push(((m.id, common.clone()), 1isize));
            }
        }
    })
    .map(|(_fp, (id, common))| (id, (true, common)));
    // A page's repeated keys: its keys in any of its groups' blocks (empty when none).
    Some(keys.map(|(id, keys)| (id, (false, keys))).concat(blocks).reduce_named("Repeated keys", |_id, lists, output| {
        // `false` (the page's own keys) sorts first; without it the page is gone.
        let Some(((false, keys), _)) = lists.first() else { return };
        let mut union: Vec<u64> = lists[1..].iter().flat_map(|((_, common), _)| crate::sorted::intersect(keys, common)).collect();
        union.sort_unstable();
        union.dedup();
        output.push((Arc::new(union), 1isize));
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::tests::{of_words, sentence};
    use crate::verify::VerifyMethod;

    fn id(n: u64) -> PageId {
        PageId { date: n, hash: n }
    }

    fn member(n: u64, keys: &[u64]) -> Member {
        let content = Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), ..Default::default() };
        Member::new(VerifyMethod::Lcs, id(n), content)
    }

    fn edges_of(members: &[Member], neighbors: usize) -> Vec<(u64, u64)> {
        let mut sorted: Vec<&Member> = members.iter().collect();
        sorted.sort();
        let config = VerifyConfig { threshold: 0.8, word_threshold: 0.0, ..Default::default() };
        let mut stats = VerifyStats::default();
        group_edges(&sorted, &config, neighbors, &mut stats, |a, b| pair_verdict(&config, &a.content, &b.content))
            .edges
            .iter()
            .map(|e| (e.shorter.date, e.longer.date))
            .collect()
    }

    #[test]
    fn each_page_is_compared_with_its_neighbours_in_length_order() {
        let lengths = [5, 5, 6, 7, 20];
        let pairs = neighbour_pairs(&lengths, 2, |a, b| 2 * a * 10 < 8 * (a + b));
        assert_eq!(pairs, vec![(0, 1), (1, 2), (2, 3), (0, 2), (1, 3)], "adjacent pairs first; the length filter keeps 20 out");
        assert_eq!(neighbour_pairs(&lengths, 100, |_, _| false).len(), 10, "all pairs when neighbours cover the group");
    }

    #[test]
    fn a_family_is_a_chain_of_neighbours() {
        // Ten copies of one text, each with its own last sentence: every neighbour pair verifies.
        let family: Vec<Member> = (0..10).map(|n| member(n, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 100 + n])).collect();
        let edges = edges_of(&family, 2);
        assert_eq!(edges, (0..9).map(|n| (n, n + 1)).collect::<Vec<_>>(), "a chain of adjacent pairs; no pair two apart is compared");
    }

    #[test]
    fn a_page_inserted_into_a_family_brings_new_pairs_near_it_only() {
        let config = VerifyConfig { threshold: 0.8, word_threshold: 0.0, ..Default::default() };
        let compared = |family: &[Member]| {
            let mut sorted: Vec<&Member> = family.iter().collect();
            sorted.sort();
            let mut pairs = std::collections::BTreeSet::new();
            let _ = group_edges(&sorted, &config, 8, &mut VerifyStats::default(), |a, b| {
                pairs.insert((a.id.date, b.id.date));
                pair_verdict(&config, &a.content, &b.content)
            });
            pairs
        };
        // 200 copies, each with its own last sentence and one more common sentence every 10.
        let copy = |n: u64| member(n, &(1..=20 + n / 10).chain([1000 + n]).collect::<Vec<u64>>());
        let mut family: Vec<Member> = (0..200).map(copy).collect();
        let before = compared(&family);
        family.push(member(1000, &(1..=30).chain([5000]).collect::<Vec<u64>>()));
        let after = compared(&family);
        assert_eq!(before.len(), 199, "a chain of adjacent pairs");
        assert_eq!(
            after.difference(&before).count(),
            2,
            "the page and its two neighbours in length order: {:?}",
            after.difference(&before).collect::<Vec<_>>()
        );
    }

    #[test]
    fn siblings_meeting_in_a_small_group_are_judged_by_their_repeated_keys() {
        // 20 siblings: a generated block of 30 sentences on each, 3 sentences of each page's own.
        let block: Vec<Vec<u16>> = (0..30).map(sentence).collect();
        let sibling = |n: u16| of_words(&[block.clone(), (0..3).map(|s| sentence(1000 + 10 * n + s)).collect()].concat());
        let contents: Vec<Content> = (0..20).map(sibling).collect();
        let config = VerifyConfig::default();
        assert_eq!(config.sibling_min_pages, 16);
        let keys: Vec<Vec<u64>> = contents.iter().map(verify::distinct_sentence_keys).collect();
        let refs: Vec<&[u64]> = keys.iter().map(|k| k.as_slice()).collect();
        let repeated = group_repeated_keys(&refs, config.sibling_min_pages).expect("a group of 20");
        assert_eq!(repeated.len(), 30, "the block is repeated, the own sentences are not");
        assert!(group_repeated_keys(&refs[..2], config.sibling_min_pages).is_none(), "two pages cannot tell a repeated block");
        // Two of them meet in a group of two (e.g. a word band only they share): a similar pair
        // whose own texts differ, a sibling candidate, not an edge yet.
        let mut pair: Vec<Member> = (0..2).map(|n| Member::new(VerifyMethod::Lcs, id(n as u64), contents[n].clone())).collect();
        pair.sort();
        let pair: Vec<&Member> = pair.iter().collect();
        let verdicts = group_edges(&pair, &config, 8, &mut VerifyStats::default(), |a, b| pair_verdict(&config, &a.content, &b.content));
        assert!(verdicts.edges.is_empty());
        let [candidate] = verdicts.candidates[..] else { panic!("one candidate: {:?}", verdicts.candidates) };
        let (a, b) = (&pair[0].content, &pair[1].content);
        assert_eq!((candidate.shorter, candidate.longer), (pair[0].id, pair[1].id));
        assert!(!siblings(a, &[], b, &[]), "90% shared, nothing known to be repeated: an edge");
        assert!(siblings(a, &repeated, b, &repeated), "what they share is repeated for both: siblings");
        assert!(!siblings(a, &repeated, b, &[]), "repeated for one of them only: an edge");
    }

    #[test]
    fn an_unrelated_page_gets_no_edge() {
        let pages = vec![member(1, &[1, 2, 3, 4, 5]), member(2, &[1, 2, 3, 4, 6]), member(3, &[7, 8, 9, 10, 11])];
        assert_eq!(edges_of(&pages, 8), vec![(1, 2)]);
    }
}
