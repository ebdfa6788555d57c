//! LCS verify and clusters: inside each candidate set, the paper's sequential clustering.
//!
//! A set's pages are sorted by length (then id). Each page not yet absorbed becomes a leader
//! and is compared, by LCS resemblance (see `lcs`), with the later pages not yet absorbed; every
//! page at or above τ is absorbed into the leader's cluster. Sorting by length makes the length
//! filter a stopping rule: once a later page is too long to reach τ, so are all after it.
//!
//! Semantics of a chain A≈B, B≈C, A≉C (sorted A, B, C): A absorbs B; C is compared with A only
//! (B is absorbed), so C starts its own cluster: {A, B}, {C}. Every member of a cluster is within
//! τ of its leader. A cluster's id is its earliest page (smallest `PageId`), so it depends only
//! on the set of pages, never on input order, batching or worker count.
//!
//! A set larger than `max_set_pages` is cut, in length order, into chunks of that size, each
//! clustered on its own (the paper's partial transitivity: no unbounded chain is followed).

use std::collections::HashMap;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::hashing::Mixed;
use crate::lcs::{self, Verdict};
use crate::page::{Content, PageId};

/// How verified pairs become clusters inside a candidate set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Clustering {
    /// The paper's: each cluster is a leader and the pages within τ of it.
    #[default]
    Leader,
    /// Every pair (within the length filter) is compared; clusters are the connected
    /// components of the pairs within τ (A≈B, B≈C gives {A, B, C}).
    Connected,
}

/// What decides that two candidates are near-duplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum VerifyMethod {
    /// LCS resemblance of the sentence sequences (the paper's).
    #[default]
    Lcs,
    /// Exact Jaccard similarity of the shingle sets (MinHash and SimHash methods).
    Jaccard,
    /// No verification: a candidate set is a cluster (what MinHash pipelines do).
    None,
    /// TF-IDF cosine of the canonical terms (stop words out, stems), IDF from the document
    /// frequencies the dataflow maintains over the pages it holds.
    Cosine,
}

/// Settings of the verify stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    #[serde(rename = "type")]
    pub method: VerifyMethod,
    /// τ: resemblance at or above which two pages are near-duplicates.
    pub threshold: f64,
    /// Cap on Myers' D per comparison; a comparison that hits it counts as dissimilar.
    pub max_diff_distance: u64,
    pub clustering: Clustering,
    /// The paper's central-part refinement (LCS only): strip sentences the two pages share at
    /// their very head and tail, up to this share of each page, before comparing. 0: off.
    pub central_trim_share: f64,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            method: VerifyMethod::Lcs,
            threshold: 0.45,
            max_diff_distance: 50_000,
            clustering: Clustering::Connected,
            central_trim_share: 0.0,
        }
    }
}

/// Where a page ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Assignment {
    /// The cluster's id: its earliest page.
    pub cluster: PageId,
    /// The earlier page (in length order) it was first verified against and joined through;
    /// itself for a page that joined through none (a leader).
    pub leader: PageId,
    /// Resemblance to `leader`, in parts per million.
    pub similarity_ppm: u32,
}

/// Counters of one clustering run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyStats {
    pub comparisons: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub cost_capped: u64,
    pub set_cuts: u64,
    /// Times the verdict cache was full and cleared.
    pub cache_clears: u64,
    /// Pages in the set and time spent on it (filled by the operator).
    pub pages: u64,
    pub nanos: u64,
}

/// Clusters one candidate set. `compare` decides a pair (Myers in the dataflow, plain DP in the
/// reference). Returns an assignment per page, in the input's order of ids.
pub fn cluster_set<F>(
    members: &[(PageId, &Content)],
    max_set_pages: usize,
    tau_ppm: u64,
    method: VerifyMethod,
    clustering: Clustering,
    stats: &mut VerifyStats,
    mut compare: F,
) -> Vec<(PageId, Assignment)>
where
    F: FnMut(&Content, &Content) -> Verdict,
{
    // Length: sentence weight for LCS, shingle count for Jaccard; both bound the similarity by
    // the shorter over the longer, so a sorted set can stop the scan early.
    let length = |c: &Content| match method {
        VerifyMethod::Jaccard => c.shingles.len() as u64,
        _ => c.weight(),
    };
    let too_long = |wi: u64, wj: u64| match method {
        VerifyMethod::Lcs => (2 * wi as u128) * 1_000_000 < tau_ppm as u128 * (wi + wj) as u128,
        VerifyMethod::Jaccard => (wi as u128) * 1_000_000 < tau_ppm as u128 * wj as u128,
        VerifyMethod::None | VerifyMethod::Cosine => false,
    };
    let mut order: Vec<(u64, PageId, &Content)> = members.iter().map(|&(id, c)| (length(c), id, c)).collect();
    order.sort_by_key(|&(weight, id, _)| (weight, id));
    let mut out = Vec::with_capacity(order.len());
    let chunk_size = max_set_pages.max(1);
    if order.len() > chunk_size {
        stats.set_cuts += 1;
    }
    for chunk in order.chunks(chunk_size) {
        let mut leader_of: Vec<Option<(usize, u32)>> = vec![None; chunk.len()];
        // Connected: union-find over accepted pairs (root = smallest index, the shortest page).
        let mut root: Vec<usize> = (0..chunk.len()).collect();
        fn find(root: &mut [usize], mut x: usize) -> usize {
            while root[x] != x {
                root[x] = root[root[x]];
                x = root[x];
            }
            x
        }
        for i in 0..chunk.len() {
            if clustering == Clustering::Leader && leader_of[i].is_some() {
                continue;
            }
            if leader_of[i].is_none() {
                leader_of[i] = Some((i, 1_000_000));
            }
            let (wi, _, ci) = chunk[i];
            for j in i + 1..chunk.len() {
                if clustering == Clustering::Leader && leader_of[j].is_some() {
                    continue;
                }
                let (wj, _, cj) = chunk[j];
                // Length filter as a stopping rule: below τ for this and all later j.
                if too_long(wi, wj) {
                    break;
                }
                if clustering == Clustering::Connected && find(&mut root, i) == find(&mut root, j) {
                    continue;
                }
                stats.comparisons += 1;
                match compare(ci, cj) {
                    Verdict::Similar(s) => {
                        stats.accepted += 1;
                        if leader_of[j].is_none() {
                            leader_of[j] = Some((i, (s * 1_000_000.0).round() as u32));
                        }
                        let (ri, rj) = (find(&mut root, i), find(&mut root, j));
                        root[ri.max(rj)] = ri.min(rj);
                    }
                    Verdict::Dissimilar => stats.rejected += 1,
                    Verdict::CostCapped => {
                        stats.rejected += 1;
                        stats.cost_capped += 1;
                    }
                }
            }
        }
        // Cluster id: the earliest page of each group (a leader's members, or a component).
        let mut cluster_of_root: Vec<PageId> = chunk.iter().map(|&(_, id, _)| id).collect();
        for (j, &(_, id, _)) in chunk.iter().enumerate() {
            let r = find(&mut root, j);
            cluster_of_root[r] = cluster_of_root[r].min(id);
        }
        for (j, assigned) in leader_of.iter().enumerate() {
            let (leader, similarity_ppm) = assigned.expect("every page is assigned");
            let r = find(&mut root, j);
            out.push((chunk[j].1, Assignment { cluster: cluster_of_root[r], leader: chunk[leader].1, similarity_ppm }));
        }
    }
    out.sort_by_key(|&(id, _)| id);
    out
}

/// Entries of the per-worker verdict cache before it is cleared (~40 bytes each).
pub const VERDICT_CACHE_ENTRIES: usize = 1 << 20;

/// A 64-bit hash of a page's content (sentences and shingles), the verdict cache's key.
fn content_hash(c: &Content) -> u64 {
    let mut h = crate::hashing::mix64(c.sentences.len() as u64 ^ ((c.shingles.len() as u64) << 32));
    for &(key, weight) in &c.sentences {
        h = crate::hashing::mix64(h ^ key ^ ((weight as u64) << 48)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    }
    for &s in &c.shingles {
        h = crate::hashing::mix64(h ^ s).wrapping_add(0x632b_e59b_d9b4_e019);
    }
    // The cosine's IDF weights change as pages come and go: part of the key.
    for &w in &c.term_weights {
        h = crate::hashing::mix64(h ^ w as u64).wrapping_add(0x9e6c_63d0_676a_9a99);
    }
    h
}

/// Cosine of two contents' term vectors (`shingles` with `term_weights`, binary TF × IDF).
pub fn weighted_cosine(a: &Content, b: &Content) -> f64 {
    let vector = |c: &Content| -> Vec<(u64, f64)> { c.shingles.iter().zip(&c.term_weights).map(|(&t, &w)| (t, w as f64)).collect() };
    crate::cosine::cosine(&vector(a), &vector(b))
}

/// Decides a pair by the configured method.
pub fn compare(config: &VerifyConfig, a: &Content, b: &Content, tau_ppm: u64) -> Verdict {
    let max_diff_distance = config.max_diff_distance;
    match config.method {
        VerifyMethod::Lcs if config.central_trim_share > 0.0 => {
            let (ca, cb) = lcs::central(a, b, config.central_trim_share);
            lcs::compare(&ca, &cb, tau_ppm, max_diff_distance)
        }
        VerifyMethod::Lcs => lcs::compare(a, b, tau_ppm, max_diff_distance),
        VerifyMethod::Jaccard => {
            let j = crate::minhash::jaccard(&a.shingles, &b.shingles);
            if j * 1_000_000.0 >= tau_ppm as f64 {
                Verdict::Similar(j)
            } else {
                Verdict::Dissimilar
            }
        }
        VerifyMethod::None => Verdict::Similar(1.0),
        VerifyMethod::Cosine => {
            let c = weighted_cosine(a, b);
            if c * 1_000_000.0 >= tau_ppm as f64 - 1e-6 {
                Verdict::Similar(c)
            } else {
                Verdict::Dissimilar
            }
        }
    }
}

/// The verify operator.
pub trait VerifyClusters<'scope, T: Timestamp + Lattice> {
    /// Clusters each candidate set; `self` is `(page, set label)`, `contents` the pages' content.
    /// `on_stats` sees the counters of every set clustered (for metrics).
    fn verify_clusters<S>(
        self,
        contents: VecCollection<'scope, T, (PageId, Content), isize>,
        config: VerifyConfig,
        max_set_pages: u32,
        on_stats: S,
    ) -> VecCollection<'scope, T, (PageId, Assignment), isize>
    where
        S: FnMut(&VerifyStats) + 'static;
}

impl<'scope, T: Timestamp + Lattice + Ord> VerifyClusters<'scope, T> for VecCollection<'scope, T, (PageId, PageId), isize> {
    fn verify_clusters<S>(
        self,
        contents: VecCollection<'scope, T, (PageId, Content), isize>,
        config: VerifyConfig,
        max_set_pages: u32,
        mut on_stats: S,
    ) -> VecCollection<'scope, T, (PageId, Assignment), isize>
    where
        S: FnMut(&VerifyStats) + 'static,
    {
        let tau_ppm = lcs::ppm(config.threshold);
        let clustering = config.clustering;
        let method = config.method;
        // Verdicts of pairs already compared, by the two contents' hashes: a set that changes is
        // re-clustered whole, but the pairs it had compared before cost a lookup, not an LCS.
        // Bounded: cleared when it reaches VERDICT_CACHE_ENTRIES (counted in the stats).
        let mut cache: HashMap<(u64, u64), Verdict, Mixed> = HashMap::default();
        self.join_map(contents, |&page, &set, content| (set, (page, content.clone())))
            .reduce(move |_set, members, output| {
                let members: Vec<(PageId, &Content)> = members.iter().map(|((id, c), _)| (*id, c)).collect();
                let mut stats = VerifyStats { pages: members.len() as u64, ..Default::default() };
                let started = std::time::Instant::now();
                if cache.len() >= VERDICT_CACHE_ENTRIES {
                    cache.clear();
                    stats.cache_clears += 1;
                }
                let hashes: HashMap<*const Content, u64, Mixed> =
                    members.iter().map(|&(_, c)| (c as *const Content, content_hash(c))).collect();
                let assignments = cluster_set(&members, max_set_pages as usize, tau_ppm, method, clustering, &mut stats, |a, b| {
                    let key = (hashes[&(a as *const Content)], hashes[&(b as *const Content)]);
                    *cache.entry(key).or_insert_with(|| compare(&config, a, b, tau_ppm))
                });
                stats.nanos = started.elapsed().as_nanos() as u64;
                on_stats(&stats);
                for assignment in assignments {
                    output.push((assignment, 1isize));
                }
            })
            .map(|(_set, assignment)| assignment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> PageId {
        PageId { date: n, hash: 0 }
    }
    fn unit(keys: &[u64]) -> Content {
        Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), shingles: Vec::new(), term_weights: Vec::new() }
    }

    fn run(members: &[(PageId, &Content)], tau: f64, max: usize) -> Vec<(PageId, Assignment)> {
        let tau_ppm = lcs::ppm(tau);
        cluster_set(members, max, tau_ppm, VerifyMethod::Lcs, Clustering::Leader, &mut VerifyStats::default(), |a, b| {
            lcs::compare(a, b, tau_ppm, 1_000)
        })
    }

    #[test]
    fn chain_semantics_follow_the_leader() {
        // A≈B (0.8), B≈C (0.8), A≉C (0.6); all length 5, so order is by id.
        let a = unit(&[1, 2, 3, 4, 5]);
        let b = unit(&[1, 2, 3, 4, 6]);
        let c = unit(&[1, 2, 3, 7, 6]);
        let out = run(&[(id(1), &a), (id(2), &b), (id(3), &c)], 0.8, 100);
        assert_eq!(out[0].1.cluster, id(1));
        assert_eq!(out[1].1, Assignment { cluster: id(1), leader: id(1), similarity_ppm: 800_000 });
        assert_eq!(out[2].1.cluster, id(3), "C is not within τ of A, the leader");
    }

    #[test]
    fn chain_semantics_when_connected() {
        let a = unit(&[1, 2, 3, 4, 5]);
        let b = unit(&[1, 2, 3, 4, 6]);
        let c = unit(&[1, 2, 3, 7, 6]);
        let tau_ppm = lcs::ppm(0.8);
        let out = cluster_set(
            &[(id(1), &a), (id(2), &b), (id(3), &c)],
            100,
            tau_ppm,
            VerifyMethod::Lcs,
            Clustering::Connected,
            &mut VerifyStats::default(),
            |x, y| lcs::compare(x, y, tau_ppm, 1_000),
        );
        assert!(out.iter().all(|(_, a)| a.cluster == id(1)), "A≈B, B≈C: one cluster {{A, B, C}}");
        assert_eq!(out[2].1.leader, id(2), "C names the page it was verified against");
        assert_eq!(out[2].1.similarity_ppm, 800_000);
    }

    #[test]
    fn cluster_id_is_the_earliest_member_not_the_leader() {
        // The later page is shorter, so it leads; the id is still the earliest page.
        let long = unit(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        let short = unit(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let out = run(&[(id(1), &long), (id(2), &short)], 0.8, 100);
        assert_eq!(out[0].1.cluster, id(1));
        assert_eq!(out[0].1.leader, id(2));
        assert_eq!(out[1].1.cluster, id(1));
    }

    #[test]
    fn oversized_sets_are_cut_and_counted() {
        let a = unit(&[1, 2, 3]);
        let members: Vec<(PageId, &Content)> = (0..5).map(|i| (id(i), &a)).collect();
        let mut stats = VerifyStats::default();
        let out = cluster_set(&members, 2, lcs::ppm(0.8), VerifyMethod::Lcs, Clustering::Leader, &mut stats, |x, y| {
            lcs::compare(x, y, 800_000, 100)
        });
        assert_eq!(stats.set_cuts, 1);
        let clusters: std::collections::BTreeSet<PageId> = out.iter().map(|(_, a)| a.cluster).collect();
        assert_eq!(clusters.len(), 3, "chunks of 2, 2, 1");
    }
}
