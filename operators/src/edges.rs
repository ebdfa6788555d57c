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
//! cluster: no "perhaps similar" set is closed transitively and then verified all pairs. A
//! group that changes is re-scanned whole, but the pairs it had compared before cost a lookup
//! in the worker's verdict cache, keyed by the two contents' hashes.
//!
//! Siblings (generated pages that share blocks with a subset of their host's pages): a sentence
//! on at least `sibling_min_pages` pages of a group is a block that group repeats, and each
//! page carries its *repeated keys*, its sentences repeated in any group it is in
//! (`repeated_keys`). Two pages whose similarity is mostly sentences repeated for both, with
//! own texts that are different texts, are not near-duplicates
//! (`verify::own_texts_are_different_texts`), in whatever group they meet: a small group (a
//! word band shared by a few siblings) judges a pair as the large groups of its pages would.
//!
//! Semantics: A≈B, B≈C gives {A, B, C} (connected), as `clustering = "connected"` did over
//! candidate sets; two near-duplicates are compared when they share a fingerprint and are
//! within `neighbors` of each other in some group they share, or are joined through others.

use std::collections::HashMap;
use std::sync::Arc;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::hashing::Mixed;
use crate::lcs::{self, Verdict};
use crate::page::{Content, PageId};
use crate::verify::{self, VerifyConfig, VerifyStats};

/// A page as a group holds it: ordered by length, then id. The content is shared (one
/// allocation per page, however many groups hold it). Equality and order are by length, id
/// and content hash, never by the content itself: consolidating a group's updates compares
/// members, and comparing whole contents cost 3% of a run (the repeated keys are compared:
/// a page whose repeated keys change is a changed member). Two contents of one page with the
/// same 64-bit hash would count as one (probability 2^-64 per change).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Member {
    pub length: u64,
    pub id: PageId,
    /// `verify::content_hash`: the verdict cache's key.
    pub hash: u64,
    /// The page's repeated keys (`repeated_keys`), sorted: what the sibling rule reads.
    pub repeated: Arc<Vec<u64>>,
    pub content: Arc<Content>,
}

impl Member {
    fn identity(&self) -> (u64, PageId, u64, &[u64]) {
        (self.length, self.id, self.hash, &self.repeated)
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
    /// A member with no repeated keys (`with_repeated` adds them).
    pub fn new(method: verify::VerifyMethod, id: PageId, content: Content) -> Self {
        Member {
            length: verify::length(method, &content),
            id,
            hash: verify::content_hash(&content),
            repeated: Arc::default(),
            content: Arc::new(content),
        }
    }

    pub fn with_repeated(mut self, repeated: Arc<Vec<u64>>) -> Self {
        self.repeated = repeated;
        self
    }

    /// The sibling rule's set part: what this page shares with `other` is mostly sentences
    /// repeated for both (in their repeated keys).
    fn shares_mostly_repeated(&self, other: &Member) -> bool {
        let common = crate::sorted::intersect(&self.repeated, &other.repeated);
        !common.is_empty() && verify::shares_mostly_common_with(&self.content, &verify::distinct_sentence_keys(&other.content), &common)
    }
}

/// Each member's repeated keys in one group (keys: each member's distinct sentence keys,
/// sorted): the member's sentences on at least `min_pages` of the group's pages. None when the
/// group is smaller than `min_pages` (or `min_pages` is 0: no sibling rule).
pub fn group_repeated_keys(keys: &[&[u64]], min_pages: u32) -> Option<Vec<Vec<u64>>> {
    if min_pages == 0 || keys.len() < min_pages as usize {
        return None;
    }
    let common = verify::common_keys(keys, min_pages);
    Some(keys.iter().map(|k| crate::sorted::intersect(k, &common)).collect())
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
/// next `neighbors` members within the length filter.
pub fn neighbour_pairs(lengths: &[u64], neighbors: usize, too_long: impl Fn(u64, u64) -> bool) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for i in 0..lengths.len() {
        for j in i + 1..lengths.len().min(i + 1 + neighbors) {
            if too_long(lengths[i], lengths[j]) {
                break;
            }
            pairs.push((i, j));
        }
    }
    pairs
}

/// The edges of one group (`members` sorted by length, then id). `compare` decides a pair
/// (Myers with a cache in the dataflow, plain DP in the reference).
pub fn group_edges<F>(members: &[&Member], config: &VerifyConfig, neighbors: usize, stats: &mut VerifyStats, mut compare: F) -> Vec<Edge>
where
    F: FnMut(&Member, &Member) -> PairVerdict,
{
    let tau_ppm = lcs::ppm(config.threshold);
    let lengths: Vec<u64> = members.iter().map(|m| m.length).collect();
    let mut edges = Vec::new();
    // The group's own union-find: a pair already joined through the group's verified pairs is
    // not compared (it adds no connection), so a family of n copies costs about n comparisons
    // in a group, not n · neighbors.
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
                // Siblings: what they share is mostly blocks repeated for both.
                if own_texts_differ && a.shares_mostly_repeated(b) {
                    stats.rejected += 1;
                    continue;
                }
                stats.accepted += 1;
                root[ri.max(rj)] = ri.min(rj);
                edges.push(Edge {
                    shorter_length: a.length,
                    shorter: a.id,
                    longer: b.id,
                    similarity_ppm: (s * 1_000_000.0).round() as u32,
                });
            }
            (Verdict::Dissimilar, _) => stats.rejected += 1,
            (Verdict::CostCapped, _) => {
                stats.rejected += 1;
                stats.cost_capped += 1;
            }
        }
    }
    edges
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
    /// Groups dropped as oversized (fingerprint, pages), as `candidates` counts them.
    pub oversized_fingerprints: VecCollection<'scope, T, (u64, isize), isize>,
}

/// The verified-edges operator.
pub trait VerifyEdges<'scope, T: Timestamp + Lattice> {
    /// `self` is `(fingerprint, page)`; `members` each page's `Member`. Groups of more than
    /// `max_fingerprint_pages` pages are dropped. `on_stats` sees every group's counters.
    fn verified_edges<S>(
        self,
        members: VecCollection<'scope, T, (PageId, Member), isize>,
        config: VerifyConfig,
        neighbors: u32,
        max_fingerprint_pages: u32,
        on_stats: S,
    ) -> Edges<'scope, T>
    where
        S: FnMut(&VerifyStats) + 'static;
}

impl<'scope, T: Timestamp + Lattice + Ord> VerifyEdges<'scope, T> for VecCollection<'scope, T, (u64, PageId), isize> {
    fn verified_edges<S>(
        self,
        members: VecCollection<'scope, T, (PageId, Member), isize>,
        config: VerifyConfig,
        neighbors: u32,
        max_fingerprint_pages: u32,
        mut on_stats: S,
    ) -> Edges<'scope, T>
    where
        S: FnMut(&VerifyStats) + 'static,
    {
        let max = max_fingerprint_pages as usize;
        let oversized_fingerprints = crate::candidates::oversized(self.clone(), max_fingerprint_pages);
        let by_page = self.map(|(fp, id)| (id, fp));
        let members = with_repeated_keys(by_page.clone(), members, config.sibling_min_pages, max_fingerprint_pages);
        let mut cache: HashMap<(u64, u64), PairVerdict, Mixed> = HashMap::default();
        let edges = by_page
            .join_map(members, |_, &fp, member| (fp, member.clone()))
            .reduce(move |_fp, group, output| {
                if group.len() > max || group.len() < 2 {
                    return;
                }
                let started = std::time::Instant::now();
                let members: Vec<&Member> = group.iter().map(|&(m, _)| m).collect();
                let mut stats = VerifyStats { pages: members.len() as u64, ..Default::default() };
                if cache.len() >= verify::VERDICT_CACHE_ENTRIES {
                    cache.clear();
                    stats.cache_clears += 1;
                }
                let edges = group_edges(&members, &config, neighbors as usize, &mut stats, |a, b| {
                    *cache.entry((a.hash, b.hash)).or_insert_with(|| pair_verdict(&config, &a.content, &b.content))
                });
                stats.nanos = started.elapsed().as_nanos() as u64;
                on_stats(&stats);
                for edge in edges {
                    output.push((edge, 1isize));
                }
            })
            .map(|(_fp, edge)| edge)
            .distinct();
        Edges { edges, oversized_fingerprints }
    }
}

/// `members` with their repeated keys: each page's sentences on at least `min_pages` pages of
/// some group it is in (`group_repeated_keys`), groups over `max_pages` left out as in
/// verification. `by_page` is `(page, fingerprint)`. A group that changes recomputes its
/// members' keys; a member whose keys change is a changed member downstream (its groups
/// re-verify, at a verdict-cache lookup per pair compared before). The keys are held once per
/// (large group, page) as shared lists, and once per page.
fn with_repeated_keys<'scope, T: Timestamp + Lattice + Ord>(
    by_page: VecCollection<'scope, T, (PageId, u64), isize>,
    members: VecCollection<'scope, T, (PageId, Member), isize>,
    min_pages: u32,
    max_pages: u32,
) -> VecCollection<'scope, T, (PageId, Member), isize> {
    if min_pages == 0 {
        return members;
    }
    let keys = members.clone().map(|(id, m)| (id, Arc::new(verify::distinct_sentence_keys(&m.content))));
    let by_group = by_page
        .join_map(keys, |&id, &fp, keys| (fp, (id, keys.clone())))
        .reduce(move |_fp, group, output| {
            if group.len() > max_pages as usize {
                return;
            }
            let keys: Vec<&[u64]> = group.iter().map(|((_, k), _)| k.as_slice()).collect();
            if let Some(repeated) = group_repeated_keys(&keys, min_pages) {
                for (((id, _), _), repeated) in group.iter().zip(repeated) {
                    if !repeated.is_empty() {
                        output.push(((*id, repeated), 1isize));
                    }
                }
            }
        })
        .map(|(_fp, (id, repeated))| (id, repeated));
    // Every member gets its union (empty when none of its groups repeats a sentence of it).
    let repeated = by_group.concat(members.clone().map(|(id, _)| (id, Vec::new()))).reduce(|_id, lists, output| {
        let mut union: Vec<u64> = lists.iter().flat_map(|(l, _)| l.iter().copied()).collect();
        union.sort_unstable();
        union.dedup();
        output.push((Arc::new(union), 1isize));
    });
    members.join_map(repeated, |&id, member, repeated| (id, member.clone().with_repeated(repeated.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
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
            .iter()
            .map(|e| (e.shorter.date, e.longer.date))
            .collect()
    }

    #[test]
    fn each_page_is_compared_with_its_neighbours_in_length_order() {
        let lengths = [5, 5, 6, 7, 20];
        let pairs = neighbour_pairs(&lengths, 2, |a, b| 2 * a * 10 < 8 * (a + b));
        assert_eq!(pairs, vec![(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)], "the length filter stops at 20");
        assert_eq!(neighbour_pairs(&lengths, 100, |_, _| false).len(), 10, "all pairs when neighbours cover the group");
    }

    #[test]
    fn a_family_is_a_chain_of_neighbours() {
        // Ten copies of one text, each with its own last sentence: every neighbour pair verifies.
        let family: Vec<Member> = (0..10).map(|n| member(n, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 100 + n])).collect();
        let edges = edges_of(&family, 2);
        assert_eq!(edges.len(), 9, "a chain: pairs already joined through the group are not compared again");
        assert_eq!(edges[..3], [(0, 1), (0, 2), (1, 3)], "(1, 2) is joined through 0: not compared");
    }

    fn of_words(sentences: &[Vec<u16>]) -> Content {
        let key = |w: &[u16]| w.iter().fold(7u64, |h, &x| crate::hashing::mix64(h ^ x as u64));
        Content {
            sentences: sentences.iter().map(|w| (key(w), w.len() as u16)).collect(),
            words: sentences.concat(),
            word_counts: sentences.iter().map(|w| w.len() as u16).collect(),
            ..Default::default()
        }
    }

    fn sentence(seed: u16) -> Vec<u16> {
        (0..12).map(|i| seed * 16 + i).collect()
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
        assert!(repeated.iter().all(|r| r.len() == 30), "the block is repeated, the own sentences are not");
        assert!(group_repeated_keys(&refs[..2], config.sibling_min_pages).is_none(), "two pages cannot tell a repeated block");
        // Two of them meet in a group of two (e.g. a word band only they share).
        let edges = |repeated: &[Vec<u64>]| {
            let mut pair: Vec<Member> = (0..2)
                .map(|n| Member::new(VerifyMethod::Lcs, id(n as u64), contents[n].clone()).with_repeated(Arc::new(repeated[n].clone())))
                .collect();
            pair.sort();
            let pair: Vec<&Member> = pair.iter().collect();
            group_edges(&pair, &config, 8, &mut VerifyStats::default(), |a, b| pair_verdict(&config, &a.content, &b.content)).len()
        };
        assert_eq!(edges(&[Vec::new(), Vec::new()]), 1, "90% shared: similar, with nothing known to be repeated");
        assert_eq!(edges(&repeated), 0, "what they share is repeated for both: siblings");
        assert_eq!(edges(&[repeated[0].clone(), Vec::new()]), 1, "repeated for one of them only: no rule");
    }

    #[test]
    fn an_unrelated_page_gets_no_edge() {
        let pages = vec![member(1, &[1, 2, 3, 4, 5]), member(2, &[1, 2, 3, 4, 6]), member(3, &[7, 8, 9, 10, 11])];
        assert_eq!(edges_of(&pages, 8), vec![(1, 2)]);
    }
}
