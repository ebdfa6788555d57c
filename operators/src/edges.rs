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
//! Siblings (generated pages that share blocks with a subset of their host's pages) are judged
//! inside a group of at least `sibling_min_pages` pages: a sentence on that many of the group's
//! pages is a block the group repeats, and two pages that share mostly such blocks, with own
//! texts that are different texts, are not near-duplicates (`verify::own_texts_differ`). A
//! smaller group cannot tell a repeated block and applies no rule.
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
/// members, and comparing whole contents cost 3% of a run. Two contents of one page with the
/// same 64-bit hash would count as one (probability 2^-64 per change).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Member {
    pub length: u64,
    pub id: PageId,
    /// `verify::content_hash`: the verdict cache's key.
    pub hash: u64,
    pub content: Arc<Content>,
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
        Member { length: verify::length(method, &content), id, hash: verify::content_hash(&content), content: Arc::new(content) }
    }
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
    let mut common: Option<(Vec<Vec<u64>>, Vec<u64>)> = None;
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
                // Siblings: what they share is mostly blocks the group repeats (judged in a
                // group of at least `sibling_min_pages` pages).
                if own_texts_differ && members.len() >= config.sibling_min_pages as usize {
                    // The group's repeated blocks, and every member's distinct keys, once per scan.
                    let (keys, common) = common.get_or_insert_with(|| {
                        let keys: Vec<Vec<u64>> = members.iter().map(|m| verify::distinct_sentence_keys(&m.content)).collect();
                        let common = verify::common_keys(&keys, config.sibling_min_pages);
                        (keys, common)
                    });
                    if verify::shares_mostly_common_with(&a.content, &keys[j], common) {
                        stats.rejected += 1;
                        continue;
                    }
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
        let mut cache: HashMap<(u64, u64), PairVerdict, Mixed> = HashMap::default();
        let edges = self
            .map(|(fp, id)| (id, fp))
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

    #[test]
    fn an_unrelated_page_gets_no_edge() {
        let pages = vec![member(1, &[1, 2, 3, 4, 5]), member(2, &[1, 2, 3, 4, 6]), member(3, &[7, 8, 9, 10, 11])];
        assert_eq!(edges_of(&pages, 8), vec![(1, 2)]);
    }
}
