//! LCS verify and clusters: inside each candidate set, the paper's sequential clustering.
//!
//! A set's pages are sorted by length (then id). Each page not yet absorbed becomes a leader
//! and is compared, by LCS resemblance (see `lcs`), with the later pages not yet absorbed; every
//! page at or above τ is absorbed into the leader's cluster. Sorting by length makes the length
//! filter a stopping rule: once a later page is too long to reach τ, so are all after it.
//!
//! Semantics of a chain A≈B, B≈C, A≉C (sorted A, B, C): A absorbs B; C is compared with A only
//! (B is absorbed), so C starts its own cluster: {A, B}, {C}. Every member of a cluster is within
//! τ of its leader. A cluster's id is its anchor (the member with the smallest
//! `PageId::anchor_key`, a hash of URL and record id), so it depends only on the set of pages,
//! never on input order, batching or worker count, and a page joining or leaving a cluster of n
//! changes it with probability ~1/n.
//!
//! A set larger than `max_set_pages` is cut, in length order, into chunks of that size, each
//! clustered on its own (the paper's partial transitivity: no unbounded chain is followed).

pub mod cosine;
pub mod edges;
pub mod groups;
pub mod lcs;
pub mod member;
pub mod repeated;
pub mod siblings;

use std::collections::HashMap;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::ingest::page::{Content, PageId};
use crate::runtime::hashing::Mixed;
use lcs::Verdict;

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
    /// The connected components of the verified pairs, each cut by the leader rule: a page
    /// belongs to a cluster only when it is within τ of the cluster's leader (A≈B, B≈C,
    /// A≉C gives {A, B}, {C}); no chain joins pages through others.
    Star,
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
    /// LCS only: a pair below `threshold` over sentences is compared again over words, and is a
    /// near-duplicate at or above this word-level resemblance (0: off). Sentences are too
    /// coarse where a name is substituted into every sentence or edits touch most sentences.
    pub word_threshold: f64,
    /// Siblings: a block on at least this many pages of a candidate set is the set's shared
    /// template (a section's sidebar, a generated member list); two pages that share mostly
    /// such blocks and whose own texts differ are not near-duplicates (0: off). See
    /// `own_texts_differ`.
    pub sibling_min_pages: u32,
    /// ... when each page's own text (its sentences the other lacks) weighs at least this
    /// many units (about words).
    pub sibling_own_units: u32,
    /// LCS only: a pair similar over sentences is a near-duplicate only if what the two have
    /// in common is at least this share of the longer page. A page that contains another and
    /// as much again (a listing of two posts, and one of them) resembles it at 2/3, over τ,
    /// and would join the two posts it lists through itself. 0: off.
    pub min_longer_share: f64,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            method: VerifyMethod::Lcs,
            threshold: 0.6,
            max_diff_distance: 50_000,
            clustering: Clustering::Connected,
            central_trim_share: 0.0,
            word_threshold: 0.8,
            sibling_min_pages: 16,
            sibling_own_units: 15,
            min_longer_share: 0.55,
        }
    }
}

/// Where a page ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Assignment {
    /// The cluster's id: its anchor (`PageId::anchor_key`).
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
    pub accepted: u64,
    pub rejected: u64,
    /// Of the rejected, pairs of a per-sentence group whose sentences could not reach τ:
    /// dissimilar there without a comparison (`groups::GroupSettings::sentence_groups_over`).
    pub pruned: u64,
    pub cost_capped: u64,
    pub set_cuts: u64,
    /// Times the verdict cache was full and started a new generation.
    pub cache_clears: u64,
    /// Verdicts computed (not answered by the verdict cache).
    pub computed: u64,
    /// Change in the groups held (`groups::verify_groups`'s state), and in their members.
    pub groups: i64,
    pub entries: i64,
    /// Pages in the set and time spent on it (filled by the operator).
    pub pages: u64,
    pub nanos: u64,
}

/// A page's length for the length filter: sentence weight for LCS, shingle count for Jaccard;
/// both bound the similarity by the shorter over the longer, so a set sorted by length can stop
/// a scan early.
pub fn length(method: VerifyMethod, c: &Content) -> u64 {
    match method {
        VerifyMethod::Jaccard => c.shingles.len() as u64,
        _ => c.weight(),
    }
}

/// The length filter: a page of length `wi` cannot reach τ with one of length `wj` ≥ `wi`.
pub fn too_long(method: VerifyMethod, tau_ppm: u64, wi: u64, wj: u64) -> bool {
    match method {
        VerifyMethod::Lcs => (2 * wi as u128) * 1_000_000 < tau_ppm as u128 * (wi + wj) as u128,
        VerifyMethod::Jaccard => (wi as u128) * 1_000_000 < tau_ppm as u128 * wj as u128,
        VerifyMethod::None | VerifyMethod::Cosine => false,
    }
}

/// Union-find over indices: the root of `x`, halving the path (`root[r] == r` at a root).
pub fn find(root: &mut [usize], mut x: usize) -> usize {
    while root[x] != x {
        root[x] = root[root[x]];
        x = root[x];
    }
    x
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
    let length = |c: &Content| length(method, c);
    let too_long = |wi: u64, wj: u64| too_long(method, tau_ppm, wi, wj);
    let mut order: Vec<(u64, PageId, &Content)> =
        members.iter().map(|&(id, c)| (length(c), id, c)).collect();
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
        for i in 0..chunk.len() {
            if clustering != Clustering::Connected && leader_of[i].is_some() {
                continue;
            }
            if leader_of[i].is_none() {
                leader_of[i] = Some((i, 1_000_000));
            }
            let (wi, _, ci) = chunk[i];
            for j in i + 1..chunk.len() {
                if clustering != Clustering::Connected && leader_of[j].is_some() {
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
        // Cluster id: the anchor of each group (a leader's members, or a component).
        let mut cluster_of_root: Vec<PageId> = chunk.iter().map(|&(_, id, _)| id).collect();
        for (j, &(_, id, _)) in chunk.iter().enumerate() {
            let r = find(&mut root, j);
            cluster_of_root[r] =
                crate::ingest::page::anchor([cluster_of_root[r], id]).expect("two ids");
        }
        for (j, assigned) in leader_of.iter().enumerate() {
            let (leader, similarity_ppm) = assigned.expect("every page is assigned");
            let r = find(&mut root, j);
            out.push((
                chunk[j].1,
                Assignment { cluster: cluster_of_root[r], leader: chunk[leader].1, similarity_ppm },
            ));
        }
    }
    out.sort_by_key(|&(id, _)| id);
    out
}

/// Entries of one generation of the per-worker verdict cache (~40 bytes each; two generations).
pub const VERDICT_CACHE_ENTRIES: usize = 1 << 20;

/// The per-worker verdict cache: a pair of content hashes to its verdict, in two generations
/// of at most `capacity` entries each. When the current generation is full it becomes the old
/// one and the older is dropped (`rotate_if_full`, counted as `verdict_cache_entries`); a hit
/// in the old generation moves forward. Pairs still in use survive a rotation: a full cache
/// costs the pairs not seen for a generation, never every pair at once (clearing it made every
/// large group recompute all its pairs at the next change).
pub struct VerdictCache<V> {
    current: HashMap<(u64, u64), V, Mixed>,
    old: HashMap<(u64, u64), V, Mixed>,
    capacity: usize,
}

impl<V: Copy> VerdictCache<V> {
    pub fn new(capacity: usize) -> Self {
        VerdictCache { current: HashMap::default(), old: HashMap::default(), capacity }
    }

    /// The bytes of its two generations' tables.
    pub fn bytes(&self) -> usize {
        use crate::runtime::footprint::hash_table;
        let entry = std::mem::size_of::<((u64, u64), V)>();
        hash_table(self.current.capacity(), entry) + hash_table(self.old.capacity(), entry)
    }

    /// The verdict of `key`, computed by `compute` when neither generation holds it.
    pub fn get_or_insert_with(&mut self, key: (u64, u64), compute: impl FnOnce() -> V) -> V {
        if let Some(&v) = self.current.get(&key) {
            return v;
        }
        let v = self.old.remove(&key).unwrap_or_else(compute);
        self.current.insert(key, v);
        v
    }

    /// Starts a new generation if the current one is full; true when it did.
    pub fn rotate_if_full(&mut self) -> bool {
        if self.current.len() < self.capacity {
            return false;
        }
        self.old = std::mem::take(&mut self.current);
        true
    }

    pub fn len(&self) -> usize {
        self.current.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A 64-bit hash of a page's content (sentences, shingles, words, weights and template keys),
/// the verdict cache's key.
pub fn content_hash(c: &Content) -> u64 {
    let mut h = crate::runtime::hashing::mix64(
        c.sentences.len() as u64 ^ ((c.shingles.len() as u64) << 32),
    );
    for (key, weight) in c.sentences.compared() {
        h = crate::runtime::hashing::mix64(h ^ key ^ ((weight as u64) << 48))
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
    }
    for &s in &c.shingles {
        h = crate::runtime::hashing::mix64(h ^ s).wrapping_add(0x632b_e59b_d9b4_e019);
    }
    // The words by their count and digest, made with them (`ingest::words::digest`): they
    // may be in the word store, and are never read for the key.
    h = crate::runtime::hashing::mix64(h ^ c.words.len() as u64);
    h = crate::runtime::hashing::mix64(h ^ c.words.digest()).wrapping_add(0x2545_f491_4f6c_dd1d);
    // The cosine's IDF weights change as pages come and go: part of the key.
    for &w in &c.term_weights {
        h = crate::runtime::hashing::mix64(h ^ w as u64).wrapping_add(0x9e6c_63d0_676a_9a99);
    }
    // So does which of the sentences are template (a group holds a member by its hash: a page
    // whose template changes, its sentences the same, is a new member, not the old one).
    for &k in &c.template_keys {
        h = crate::runtime::hashing::mix64(h ^ k).wrapping_add(0x1d8e_4e27_c47d_124f);
    }
    h
}

/// Cosine of two contents' term vectors (`shingles` with `term_weights`, binary TF × IDF).
pub fn weighted_cosine(a: &Content, b: &Content) -> f64 {
    let vector = |c: &Content| -> Vec<(u64, f64)> {
        c.shingles.iter().zip(&c.term_weights).map(|(&t, &w)| (t, w as f64)).collect()
    };
    crate::verify::cosine::cosine(&vector(a), &vector(b))
}

/// Decides a pair by the configured method.
pub fn compare(config: &VerifyConfig, a: &Content, b: &Content, tau_ppm: u64) -> Verdict {
    compare_keyed(config, a, b, None, tau_ppm)
}

/// `compare`, given each content's distinct sentence keys, sorted (`distinct_sentence_keys`
/// of `a`, then of `b`), when the caller holds them (a group's `Member::keys`).
pub fn compare_keyed(
    config: &VerifyConfig,
    a: &Content,
    b: &Content,
    keys: Option<(&[u64], &[u64])>,
    tau_ppm: u64,
) -> Verdict {
    compare_keyed_words(config, a, b, keys, tau_ppm).0
}

/// `compare_keyed`, and a lower bound on the LCS of the two contents' words when the word-level
/// second chance found the pair similar (the LCS of the words it compared: the whole contents',
/// or their central parts', which are runs of them). The sibling check reads it
/// (`own_texts_are_different_texts_keyed`).
pub fn compare_keyed_words(
    config: &VerifyConfig,
    a: &Content,
    b: &Content,
    keys: Option<(&[u64], &[u64])>,
    tau_ppm: u64,
) -> (Verdict, Option<u64>) {
    let max_diff_distance = config.max_diff_distance;
    let verdict = match config.method {
        VerifyMethod::Lcs => {
            let central = (config.central_trim_share > 0.0)
                .then(|| lcs::central(a, b, config.central_trim_share));
            // The keys are the whole contents': a trimmed pair has its own.
            let keys = keys.filter(|_| central.is_none());
            let (a, b) = central.as_ref().map_or((a, b), |(ca, cb)| (ca, cb));
            let verdict = lcs::compare_keyed(a, b, keys, tau_ppm, max_diff_distance);
            let verdict = covering(config, a, b, verdict);
            let mut words_lcs = None;
            let verdict = or_by_words(config, a, b, verdict, |wa, wb, tau| {
                let (verdict, d) = lcs::compare_words_distance(wa, wb, tau, max_diff_distance);
                words_lcs = d.map(|d| (wa.len() as u64 + wb.len() as u64 - d) / 2);
                verdict
            });
            return (verdict, words_lcs);
        }
        VerifyMethod::Jaccard => {
            let j = crate::candidates::minhash::jaccard(&a.shingles, &b.shingles);
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
    };
    (verdict, None)
}

/// A sentence-level verdict with `min_longer_share` applied: a similar pair whose common text
/// (the LCS, from its exact resemblance) is less than that share of the longer page's weight
/// is dissimilar. The word level needs no such rule: its threshold (0.8) already puts the
/// common words over 0.55 of the longer page's.
pub fn covering(config: &VerifyConfig, a: &Content, b: &Content, verdict: Verdict) -> Verdict {
    let Verdict::Similar(resemblance) = verdict else {
        return verdict;
    };
    let (wa, wb) = (a.weight(), b.weight());
    let common = (resemblance * (wa + wb) as f64 / 2.0).round() as u128;
    let share = lcs::ppm(config.min_longer_share) as u128;
    if common * 1_000_000 >= share * wa.max(wb) as u128 {
        verdict
    } else {
        Verdict::Dissimilar
    }
}

/// The word-level second chance of the LCS verifier: a pair the sentences rejected is compared
/// over words (`by_words(a, b, word τ)`) when `word_threshold` is set; its verdict stands if
/// similar, the sentences' otherwise. The reference passes plain dynamic programming.
pub fn or_by_words(
    config: &VerifyConfig,
    a: &Content,
    b: &Content,
    verdict: Verdict,
    by_words: impl FnOnce(&[crate::ingest::page::Word], &[crate::ingest::page::Word], u64) -> Verdict,
) -> Verdict {
    if matches!(verdict, Verdict::Similar(_))
        || config.word_threshold <= 0.0
        || a.words.is_empty()
        || b.words.is_empty()
    {
        return verdict;
    }
    match by_words(&a.words.load(), &b.words.load(), lcs::ppm(config.word_threshold)) {
        similar @ Verdict::Similar(_) => similar,
        _ => verdict,
    }
}

/// Word-level resemblance below which two pages' own texts are different texts, not edits
/// of one text (the truth's "distinct" bound).
const OWN_TEXT_SAME_PPM: u64 = 500_000;

/// The sentence keys on at least `min_pages` of a candidate set's pages, sorted: the blocks
/// the set repeats.
pub fn set_common_keys(members: &[(PageId, &Content)], min_pages: u32) -> Vec<u64> {
    if min_pages == 0 {
        return Vec::new();
    }
    let keys: Vec<Vec<u64>> = members.iter().map(|(_, c)| distinct_sentence_keys(c)).collect();
    common_keys(&keys, min_pages)
}

/// How many of the pages whose distinct keys are `keys` hold each key.
pub fn key_pages<K: AsRef<[u64]>>(keys: impl IntoIterator<Item = K>) -> HashMap<u64, u32, Mixed> {
    let mut pages: HashMap<u64, u32, Mixed> = HashMap::default();
    for page in keys {
        for &k in page.as_ref() {
            *pages.entry(k).or_default() += 1;
        }
    }
    pages
}

/// The keys on at least `min_pages` of the pages whose distinct keys are `keys`, sorted.
pub fn common_keys<K: AsRef<[u64]>>(keys: &[K], min_pages: u32) -> Vec<u64> {
    let pages = key_pages(keys);
    let mut common: Vec<u64> =
        pages.into_iter().filter(|&(_, n)| n >= min_pages).map(|(k, _)| k).collect();
    common.sort_unstable();
    common
}

/// Siblings, not near-duplicates: `a` and `b` share mostly blocks repeated across their
/// candidate set (`common`, from `set_common_keys`), each has its own text (its sentences the
/// other lacks, at least `sibling_own_units`), and their own texts are different texts (word-
/// level resemblance below 0.5), not edits of one text. A family of near-copies differs by
/// edits, whose words agree; pages generated around shared member lists differ by their own
/// words. A page's own text is measured on the page as compared (template removed).
pub fn own_texts_differ(config: &VerifyConfig, a: &Content, b: &Content, common: &[u64]) -> bool {
    own_texts_are_different_texts(config, a, b) && shares_mostly_common(a, b, common)
}

/// The part of the sibling rule that depends on the two pages alone: each has its own text
/// (its sentences the other lacks, at least `sibling_own_units`) and the two own texts are
/// different texts (word-level resemblance below 0.5). A pure function of the two contents,
/// so it can be cached with the pair's verdict; `shares_mostly_common` needs the set.
pub fn own_texts_are_different_texts(config: &VerifyConfig, a: &Content, b: &Content) -> bool {
    own_texts_are_different_texts_keyed(
        config,
        a,
        b,
        &distinct_sentence_keys(a),
        &distinct_sentence_keys(b),
        None,
    )
}

/// `own_texts_are_different_texts`, given each content's distinct sentence keys, sorted
/// (`ka` of `a`, `kb` of `b`: `distinct_sentence_keys`), and when known a lower bound on the
/// LCS of the two contents' words (`words_lcs`, from `compare_keyed_words`).
///
/// An own text is a subsequence of its content's words, and dropping a word from a sequence
/// shortens its LCS with another by one at most. So the own texts' LCS is at least `words_lcs`
/// less the words the two own texts leave out; when that already puts them within the
/// word comparison's budget, they are the same text and the comparison is not run. Near-copies
/// that only their words found similar (an edit in most sentences) are decided so: their own
/// texts are nearly their whole texts.
pub fn own_texts_are_different_texts_keyed(
    config: &VerifyConfig,
    a: &Content,
    b: &Content,
    ka: &[u64],
    kb: &[u64],
    words_lcs: Option<u64>,
) -> bool {
    if config.sibling_min_pages == 0
        || a.word_counts.len() != a.sentences.len()
        || b.word_counts.len() != b.sentences.len()
    {
        return false;
    }
    // Each page's own text: its sentences the other lacks, with their words. Its weight and
    // word count decide most pairs; the words are gathered only for a pair that needs them.
    // The keys the other lacks come from one merge of the two key lists: a page's sentences
    // are then looked up among its own keys (a few, often none), not among all the other's.
    let (own_a, own_b) = crate::runtime::sorted::differences(ka, kb);
    let own = |c: &Content,
               own_keys: &[u64],
               mut words: Option<&mut Vec<crate::ingest::page::Word>>|
     -> (u64, usize) {
        if own_keys.is_empty() {
            return (0, 0);
        }
        let (mut weight, mut count, mut offset) = (0u64, 0usize, 0usize);
        let loaded = words.is_some().then(|| c.words.load());
        for ((k, w), &n) in c.sentences.compared().zip(&c.word_counts) {
            let end = (offset + n as usize).min(c.words.len());
            if own_keys.binary_search(&k).is_ok() {
                weight += w as u64;
                count += end - offset;
                if let (Some(words), Some(loaded)) = (words.as_mut(), loaded.as_ref()) {
                    words.extend_from_slice(&loaded[offset..end]);
                }
            }
            offset = end;
        }
        (weight, count)
    };
    let ((wa, len_a), (wb, len_b)) = (own(a, &own_a, None), own(b, &own_b, None));
    let units = config.sibling_own_units as u64;
    if wa < units.max(1) || wb < units.max(1) {
        return false;
    }
    if let Some(lcs) = words_lcs {
        let left_out = (a.words.len() - len_a + b.words.len() - len_b) as u64;
        let total = (len_a + len_b) as u64;
        let distance_at_most = total.saturating_sub(2 * lcs.saturating_sub(left_out));
        if distance_at_most
            <= lcs::max_distance(total, OWN_TEXT_SAME_PPM).min(config.max_diff_distance)
        {
            return false;
        }
    }
    let (mut words_a, mut words_b) = (Vec::with_capacity(len_a), Vec::with_capacity(len_b));
    own(a, &own_a, Some(&mut words_a));
    own(b, &own_b, Some(&mut words_b));
    !matches!(
        lcs::compare_words(&words_a, &words_b, OWN_TEXT_SAME_PPM, config.max_diff_distance),
        Verdict::Similar(_)
    )
}

/// What `a` shares with `b` is mostly blocks the set repeats (`common`, sorted) or its host's
/// template (`Content::template_keys`: boilerplate kept inside its own text).
pub fn shares_mostly_common(a: &Content, b: &Content, common: &[u64]) -> bool {
    shares_mostly_common_with(a, &distinct_sentence_keys(b), common)
}

/// `shares_mostly_common` with `b`'s distinct sentence keys, sorted (`distinct_sentence_keys`).
pub fn shares_mostly_common_with(a: &Content, kb: &[u64], common: &[u64]) -> bool {
    let (mut shared, mut shared_common) = (0u64, 0u64);
    for (k, w) in a.sentences.compared() {
        if kb.binary_search(&k).is_ok() {
            shared += w as u64;
            if common.binary_search(&k).is_ok() || a.template_keys.binary_search(&k).is_ok() {
                shared_common += w as u64;
            }
        }
    }
    shared > 0 && 2 * shared_common >= shared
}

/// A content's distinct sentence keys, sorted.
pub fn distinct_sentence_keys(c: &Content) -> Vec<u64> {
    let mut k: Vec<u64> = c.sentences.iter().map(|s| s.key).collect();
    k.sort_unstable();
    k.dedup();
    k
}

/// A verdict with the sibling rule applied: similar pages whose own texts differ
/// (`own_texts_differ`) are dissimilar.
pub fn unless_siblings(
    config: &VerifyConfig,
    a: &Content,
    b: &Content,
    common: &[u64],
    verdict: Verdict,
) -> Verdict {
    match verdict {
        Verdict::Similar(_) if own_texts_differ(config, a, b, common) => Verdict::Dissimilar,
        verdict => verdict,
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
        S: FnMut(&[VerifyStats]) + 'static;
}

impl<'scope, T: Timestamp + Lattice + Ord> VerifyClusters<'scope, T>
    for VecCollection<'scope, T, (PageId, PageId), isize>
{
    fn verify_clusters<S>(
        self,
        contents: VecCollection<'scope, T, (PageId, Content), isize>,
        config: VerifyConfig,
        max_set_pages: u32,
        mut on_stats: S,
    ) -> VecCollection<'scope, T, (PageId, Assignment), isize>
    where
        S: FnMut(&[VerifyStats]) + 'static,
    {
        let tau_ppm = lcs::ppm(config.threshold);
        let clustering = config.clustering;
        let method = config.method;
        // Verdicts of pairs already compared, by the two contents' hashes: a set that changes is
        // re-clustered whole, but the pairs it had compared before cost a lookup, not an LCS.
        // Bounded: two generations of VERDICT_CACHE_ENTRIES (rotations counted in the stats).
        let mut cache: VerdictCache<Verdict> = VerdictCache::new(VERDICT_CACHE_ENTRIES);
        self.join_map(contents, |&page, &set, content| (set, (page, content.clone())))
            .reduce(move |_set, members, output| {
                let members: Vec<(PageId, &Content)> =
                    members.iter().map(|((id, c), _)| (*id, c)).collect();
                let mut stats = VerifyStats { pages: members.len() as u64, ..Default::default() };
                let started = std::time::Instant::now();
                if cache.rotate_if_full() {
                    stats.cache_clears += 1;
                }
                let hashes: HashMap<*const Content, u64, Mixed> =
                    members.iter().map(|&(_, c)| (c as *const Content, content_hash(c))).collect();
                let common = set_common_keys(&members, config.sibling_min_pages);
                let assignments = cluster_set(
                    &members,
                    max_set_pages as usize,
                    tau_ppm,
                    method,
                    clustering,
                    &mut stats,
                    |a, b| {
                        let key = (hashes[&(a as *const Content)], hashes[&(b as *const Content)]);
                        let verdict =
                            cache.get_or_insert_with(key, || compare(&config, a, b, tau_ppm));
                        unless_siblings(&config, a, b, &common, verdict)
                    },
                );
                stats.nanos = started.elapsed().as_nanos() as u64;
                on_stats(std::slice::from_ref(&stats));
                for assignment in assignments {
                    output.push((assignment, 1isize));
                }
            })
            .map(|(_set, assignment)| assignment)
    }
}

#[cfg(test)]
pub(crate) mod tests;
