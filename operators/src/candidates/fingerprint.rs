//! Fingerprint: Huang et al.'s bucketed sentence fingerprints.
//!
//! A page's distinct sentence keys (fingerprintable, non-template) are spread into `m` buckets
//! by value (`key mod m`); in each bucket the `k` smallest keys are combined into one bucket
//! fingerprint. A bucket with fewer than `k` keys emits nothing. Two pages that share most
//! sentences share the `k` smallest of most buckets, so they share fingerprints; a page with too
//! few sentences to fill most buckets also emits one fingerprint per sentence (see
//! [`fingerprints`]), of its prefix only when the verifier is LCS resemblance (see
//! [`short_page_prefix`]).
//!
//! Beside them, word fingerprints: MinHash LSH bands of the page's word `n`-grams (its
//! non-template words), for pages that share most of their words in order but few whole
//! sentences: pages written from one pattern with a name substituted into every sentence, or
//! edits that touch many sentences. The sentence fingerprints stay the fast path.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::ingest::page::PageId;
use crate::runtime::hashing::mix64;

/// Settings of the fingerprint stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FingerprintConfig {
    /// `m`: number of buckets.
    pub buckets: u32,
    /// `k`: smallest hashes per bucket combined into a fingerprint.
    pub hashes_per_bucket: u32,
    /// Word fingerprints: LSH bands of the non-template words' `word_shingle_words`-grams
    /// (0: none).
    pub word_bands: u32,
    /// Minimum hashes per word band: two pages whose shingle sets have Jaccard J share a band
    /// with probability J^rows.
    pub word_rows: u32,
    pub word_shingle_words: u32,
}

impl Default for FingerprintConfig {
    fn default() -> Self {
        FingerprintConfig {
            buckets: 8,
            hashes_per_bucket: 3,
            word_bands: 16,
            word_rows: 4,
            word_shingle_words: 3,
        }
    }
}

/// A page's word fingerprints: the LSH band keys of its word shingles, tagged apart from the
/// sentence fingerprints. None when word fingerprints are off or the page has no words.
///
/// The signature is one-permutation MinHash (Li, Owen and Zhang 2012): each shingle is hashed
/// once and falls into one of `bands × rows` bins, which keeps its smallest hash; an empty bin
/// borrows from the next non-empty one, offset by the distance (Shrivastava and Li 2014). Two
/// pages with Jaccard J agree in a bin with probability about J, as with independent hashes,
/// at one hash per shingle instead of one per shingle and row.
pub fn word_fingerprints(
    words: &[crate::ingest::page::Word],
    config: &FingerprintConfig,
) -> Vec<u64> {
    if config.word_bands == 0 || words.is_empty() {
        return Vec::new();
    }
    let (bands, rows) = (config.word_bands as usize, config.word_rows.max(1) as usize);
    let bins = bands * rows;
    let mut signature = vec![u64::MAX; bins];
    for shingle in crate::ingest::sentence::word_shingles(words, config.word_shingle_words as usize)
    {
        let h = mix64(shingle ^ WORD_TAG);
        let bin = (((h >> 32) * bins as u64) >> 32) as usize;
        signature[bin] = signature[bin].min(h);
    }
    // Densify: an empty bin takes the next non-empty bin's value (cyclically), mixed with the
    // distance, so that two pages borrow alike exactly when the same bins are empty.
    let filled: Vec<usize> = (0..bins).filter(|&b| signature[b] != u64::MAX).collect();
    let dense: Vec<u64> = (0..bins)
        .map(|b| {
            if signature[b] != u64::MAX {
                return signature[b];
            }
            let next = filled.iter().copied().find(|&f| f > b).unwrap_or(filled[0]);
            let distance = (next + bins - b) % bins;
            mix64(signature[next] ^ (distance as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        })
        .collect();
    let mut keys: Vec<u64> = dense
        .chunks(rows)
        .enumerate()
        .map(|(band, values)| {
            values.iter().fold(mix64(band as u64 ^ WORD_TAG), |acc, &v| mix64(acc ^ v))
                & !PER_SENTENCE
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// All fingerprints of a template-filtered page's content: sentence and word fingerprints,
/// sorted, distinct.
///
/// `prefix_ppm`: the LCS threshold τ (parts per million) when the verifier is LCS resemblance,
/// 0 otherwise. With it, a short page's per-sentence fingerprints are only its prefix's (see
/// [`short_page_prefix`]); without it, every sentence's.
pub fn page_fingerprints(
    content: &crate::ingest::page::Content,
    config: &FingerprintConfig,
    prefix_ppm: u64,
) -> Vec<u64> {
    let keys = content.fingerprint_keys();
    let mut out = sentence_fingerprints(&keys, config, |keys| {
        short_page_prefix(keys, &content.sentences, prefix_ppm)
    });
    if config.word_bands > 0 && !content.words.is_empty() {
        out.extend(word_fingerprints(&content.words.load(), config));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The bucket fingerprints of `sorted` (ascending, distinct) and, for a short page, one per key
/// of `short(sorted)`; unsorted.
fn sentence_fingerprints<'a>(
    sorted: &'a [u64],
    config: &FingerprintConfig,
    short: impl FnOnce(&'a [u64]) -> &'a [u64],
) -> Vec<u64> {
    let m = config.buckets.max(1) as u64;
    let mut out = level_fingerprints(sorted, m, config.hashes_per_bucket.max(1) as usize, m);
    if is_short(sorted.len(), config) {
        out.extend(short(sorted).iter().map(|&key| combine(SHORT_PAGE_TAG, &[key]) | PER_SENTENCE));
    }
    out
}

const WORD_TAG: u64 = 0x77_6f72_6473; // "words"

/// Computes a page's fingerprints from its sentence keys (any order, duplicates allowed).
/// The result is sorted and free of duplicates.
///
/// A short page (fewer than `2·m·k` distinct keys) cannot fill most of `m` buckets, and one
/// changed sentence changes most of what it can fill. So it also gets one fingerprint per
/// sentence key (tagged): short pages meet when they share any sentence, and verification
/// decides. Keys shared by too many pages are dropped later as template-like.
pub fn fingerprints(keys: &[u64], config: &FingerprintConfig) -> Vec<u64> {
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = sentence_fingerprints(&sorted, config, |keys| keys);
    out.sort_unstable();
    out.dedup();
    out
}

/// A page with fewer than `2·m·k` distinct keys is short: it also gets per-sentence fingerprints.
fn is_short(keys: usize, config: &FingerprintConfig) -> bool {
    (keys as u64) < 2 * config.buckets.max(1) as u64 * config.hashes_per_bucket.max(1) as u64
}

/// The prefix of a short page's fingerprint keys (`keys` sorted ascending, distinct) that every
/// page within LCS resemblance τ of it shares a key with (PPJoin's prefix filter, weighted by
/// sentence weight, keys in ascending order as the global order); `tau_ppm` 0: all keys.
///
/// Resemblance is `2·L / (W(a) + W(b))` with `L ≤ W(b)`, so `R ≥ τ` implies
/// `L ≥ τ·W(a) / (2 − τ)`. `a`'s side of the LCS lies in its sentences whose keys `b` has: its
/// shared fingerprint keys and at most all of its weight that is not fingerprinted (short
/// sentences). The prefix is cut where the keys after it, with that unfingerprinted weight,
/// weigh less than the bound: a page sharing none of the prefix's keys cannot reach τ. And two
/// such pages meet: the smallest key they share lies in both prefixes, since each prefix holds
/// a shared key and everything before it. (An identical page always meets: same prefix.)
pub fn short_page_prefix<'a, S: crate::ingest::page::KeyWeight>(
    keys: &'a [u64],
    sentences: &[S],
    tau_ppm: u64,
) -> &'a [u64] {
    if tau_ppm == 0 || keys.is_empty() {
        return keys;
    }
    let mut weights = vec![0u64; keys.len()];
    let mut total = 0u64;
    for (key, weight) in sentences.iter().map(S::compared) {
        total += weight as u64;
        if let Ok(i) = keys.binary_search(&key) {
            weights[i] += weight as u64;
        }
    }
    let unfingerprinted = total - weights.iter().sum::<u64>();
    let tau = tau_ppm.min(1_000_000) as u128;
    // Below the bound, exactly: (suffix + unfingerprinted) · (2 − τ) < τ · W(a), in ppm.
    let below =
        |suffix: u64| (suffix + unfingerprinted) as u128 * (2_000_000 - tau) < tau * total as u128;
    let mut suffix: u64 = weights.iter().sum();
    for (i, w) in weights.iter().enumerate() {
        if below(suffix) {
            return &keys[..i];
        }
        suffix -= w;
    }
    keys
}

const SHORT_PAGE_TAG: u64 = u64::MAX - 1;

/// The top bit of a sentence fingerprint: set on a short page's per-sentence fingerprints,
/// clear on the bucket and word fingerprints. A per-sentence group is the pages whose prefixes
/// share one sentence, there for the prefix filter's promise (pages whose sentences reach τ
/// meet): a large one compares only the pairs whose sentences may reach τ
/// (`groups::GroupSettings::sentence_groups_over`). Without that, a sentence quoted on many
/// unrelated short pages (a licence line, a stock phrase) made each of them compare with all
/// its neighbours there, and those comparisons grew with the corpus.
pub const PER_SENTENCE: u64 = 1 << 63;

/// Whether `fp` is a per-sentence fingerprint (`PER_SENTENCE`).
pub fn is_per_sentence(fp: u64) -> bool {
    fp & PER_SENTENCE != 0
}

/// Bucket fingerprints with `m` buckets (`sorted` ascending, distinct); tagged by level
/// unless `m` is the configured one (so the main level's values do not depend on the tag).
fn level_fingerprints(sorted: &[u64], m: u64, k: usize, configured: u64) -> Vec<u64> {
    let mut buckets: Vec<Vec<u64>> = vec![Vec::with_capacity(k); m as usize];
    for &key in sorted {
        let bucket = &mut buckets[(key % m) as usize];
        if bucket.len() < k {
            bucket.push(key);
        }
    }
    let tag = if m == configured { 0 } else { m << 32 };
    buckets
        .iter()
        .enumerate()
        .filter(|(_, b)| b.len() == k)
        .map(|(i, b)| combine(tag | i as u64, b) & !PER_SENTENCE)
        .collect()
}

fn combine(bucket: u64, keys: &[u64]) -> u64 {
    keys.iter().fold(mix64(bucket ^ 0x5bd1_e995), |acc, &key| mix64(acc ^ key).rotate_left(17))
}

/// The fingerprint operator: template-filtered pages to their fingerprints.
pub trait Fingerprint<'scope, T: Timestamp + Lattice> {
    /// Each page's fingerprints ([`page_fingerprints`]), one sorted list a page.
    ///
    /// # Examples
    /// ```
    /// use differential_dataflow::input::Input;
    /// use dupflow_operators::candidates::fingerprint::{Fingerprint, FingerprintConfig};
    /// use dupflow_operators::ingest::page::{Content, Sentence};
    /// use dupflow_operators::template::Filtered;
    /// use dupflow_operators::PageId;
    /// timely::example(|scope| {
    ///     let page = PageId { date: 0, hash: 1 };
    ///     let sentences: Vec<Sentence> = (1..=4).map(|key| Sentence::new(key, 8, true, 0)).collect();
    ///     let filtered = Filtered { content: Content { sentences: sentences.into(), ..Default::default() } };
    ///     scope.new_collection_from(vec![(page, filtered)]).1
    ///          .fingerprints(FingerprintConfig::default(), 600_000)
    ///          .inspect(|x| assert_eq!((x.0).0, PageId { date: 0, hash: 1 }));
    /// });
    /// ```
    fn fingerprints(
        self,
        config: FingerprintConfig,
        prefix_ppm: u64,
    ) -> VecCollection<'scope, T, (PageId, Vec<u64>), isize>;
}

impl<'scope, T: Timestamp + Lattice> Fingerprint<'scope, T>
    for VecCollection<'scope, T, (PageId, crate::template::Filtered), isize>
{
    fn fingerprints(
        self,
        config: FingerprintConfig,
        prefix_ppm: u64,
    ) -> VecCollection<'scope, T, (PageId, Vec<u64>), isize> {
        self.map(move |(page, filtered)| {
            (page, page_fingerprints(&filtered.content, &config, prefix_ppm))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(m: u32, k: u32) -> FingerprintConfig {
        FingerprintConfig { buckets: m, hashes_per_bucket: k, ..Default::default() }
    }

    #[test]
    fn pages_with_a_name_in_every_sentence_share_word_fingerprints() {
        // Twelve sentences of twelve words, one word of each replaced by the page's name: no
        // sentence in common, most word 3-grams in common.
        let page = |name: u16| -> Vec<u16> {
            (0..12u16)
                .flat_map(|s| {
                    (0..12u16).map(move |w| if w == s % 12 { name } else { 1000 * s + w })
                })
                .collect()
        };
        let config = FingerprintConfig::default();
        let (a, b) = (word_fingerprints(&page(1), &config), word_fingerprints(&page(2), &config));
        assert!(a.iter().any(|f| b.contains(f)), "members of one pattern meet");
        let other: Vec<u16> = (50_000..50_144).collect();
        assert!(
            !word_fingerprints(&other, &config).iter().any(|f| a.contains(f)),
            "other text does not"
        );
        assert!(
            word_fingerprints(&page(1), &FingerprintConfig { word_bands: 0, ..config }).is_empty()
        );
        let sentence_only = fingerprints(&[1, 2, 3], &config);
        assert!(
            !a.iter().any(|f| sentence_only.contains(f)),
            "tagged apart from sentence fingerprints"
        );
    }

    #[test]
    fn a_bucket_needs_k_hashes() {
        // m = 2, k = 3, 14 keys (not short): bucket 0 gets the evens, bucket 1 only {1, 3}.
        let mut keys: Vec<u64> = (0..12).map(|i| 2 * i).collect();
        keys.extend([1, 3]);
        assert_eq!(
            fingerprints(&keys, &config(2, 3)),
            vec![combine(0, &[0, 2, 4]) & !PER_SENTENCE]
        );
    }

    #[test]
    fn only_the_k_smallest_count() {
        let base: Vec<u64> = (0..12).map(|i| i * 10 + i % 2).collect();
        let mut more = base.clone();
        more.push(1000);
        assert_eq!(fingerprints(&base, &config(2, 3)), fingerprints(&more, &config(2, 3)));
        // A smaller key changes its bucket's fingerprint only.
        let mut smaller = base.clone();
        smaller.push(2);
        let (a, c) = (fingerprints(&base, &config(2, 3)), fingerprints(&smaller, &config(2, 3)));
        assert_eq!(a.iter().filter(|f| c.contains(f)).count(), 1);
    }

    #[test]
    fn order_and_duplicates_do_not_matter() {
        assert_eq!(
            fingerprints(&[5, 1, 3, 3, 1], &config(1, 3)),
            fingerprints(&[1, 3, 5], &config(1, 3))
        );
    }

    #[test]
    fn short_pages_get_a_fingerprint_per_sentence() {
        let fps = fingerprints(&[7, 9], &config(4, 3));
        let mut expected = vec![
            combine(SHORT_PAGE_TAG, &[7]) | PER_SENTENCE,
            combine(SHORT_PAGE_TAG, &[9]) | PER_SENTENCE,
        ];
        expected.sort();
        assert_eq!(fps, expected);
        assert!(fps.iter().all(|&fp| is_per_sentence(fp)), "tagged as per-sentence");
        let long: Vec<u64> = (0..100).collect();
        let (bucket, words) =
            (fingerprints(&long, &config(4, 3)), word_fingerprints(&[1, 2, 3, 4], &config(4, 3)));
        assert!(!bucket.is_empty() && !words.is_empty());
        assert!(
            bucket.iter().chain(&words).all(|&fp| !is_per_sentence(fp)),
            "bucket and word fingerprints are not"
        );
        assert!(fingerprints(&[], &config(4, 3)).is_empty());
        // Two short pages sharing one sentence meet.
        let (a, b) =
            (fingerprints(&[1, 2, 3], &config(8, 3)), fingerprints(&[3, 4, 5], &config(8, 3)));
        assert_eq!(a.iter().filter(|f| b.contains(f)).count(), 1);
    }

    #[test]
    fn a_short_page_prefix_leaves_out_what_cannot_reach_tau() {
        // Ten keys of weight 10, τ = 0.6: a similar page shares ≥ 0.6·100/1.4 ≈ 42.9 units, so
        // the last four keys (40 units) are not needed: the prefix is the first six.
        let keys: Vec<u64> = (1..=10).collect();
        let sentences: Vec<(u64, u16)> = keys.iter().map(|&k| (k, 10)).collect();
        assert_eq!(short_page_prefix(&keys, &sentences, 600_000), &keys[..6]);
        assert_eq!(short_page_prefix(&keys, &sentences, 0), &keys[..], "off: every key");
        // Unfingerprinted weight (key 99, 30 units) may carry the LCS too: the prefix grows.
        let mut with_short = sentences.clone();
        with_short.push((99, 30));
        assert_eq!(short_page_prefix(&keys, &with_short, 600_000), &keys[..8]);
        // Repeats count on the page's side: key 10 three times is 30 units, last in order.
        let mut repeated = sentences.clone();
        repeated.extend([(10, 10), (10, 10)]);
        assert_eq!(short_page_prefix(&keys, &repeated, 600_000), &keys[..7]);
        // A page of one key keeps it.
        assert_eq!(short_page_prefix(&[5], &[(5, 1)], 1_000_000), &[5][..]);
    }

    proptest::proptest! {
        /// Two short pages within LCS resemblance τ (exact dynamic programming) that share a
        /// fingerprinted sentence share one in their prefixes: the prefix filter drops no pair
        /// the verifier accepts.
        #[test]
        fn pages_within_tau_share_a_prefix_key(
            a in proptest::collection::vec((0u64..24, 1u16..12), 1..14),
            edits in proptest::collection::vec((0usize..14, 0u64..30, 1u16..12, 0u8..3), 0..6),
            short_keys in proptest::collection::vec(0u64..24, 0..4),
            tau in 300_000u64..=1_000_000,
        ) {
            let mut b = a.clone();
            for (at, key, weight, kind) in edits {
                let at = at % (b.len() + 1);
                match kind {
                    0 => b.insert(at, (key, weight)),
                    1 if at < b.len() => { b.remove(at); }
                    _ if at < b.len() => b[at] = (key, weight),
                    _ => {}
                }
            }
            // A sentence's weight is a function of its text: one weight per key.
            let weigh = |v: Vec<(u64, u16)>| -> Vec<(u64, u16)> { v.into_iter().map(|(k, _)| (k, (k % 11 + 1) as u16)).collect() };
            let (a, b) = (weigh(a), weigh(b));
            let filtered = |sentences: &Vec<(u64, u16)>| {
                let mut keys: Vec<u64> = sentences.iter().map(|&(k, _)| k).filter(|k| !short_keys.contains(k)).collect();
                keys.sort_unstable();
                keys.dedup();
                let content = crate::ingest::page::Content { sentences: sentences.iter().copied().collect(), ..Default::default() };
                (keys, content)
            };
            let ((ka, ca), (kb, cb)) = (filtered(&a), filtered(&b));
            // Pages that share no fingerprinted sentence (only short ones) never met through
            // per-sentence fingerprints: the prefix filter keeps the pairs that did.
            proptest::prop_assume!(ka.iter().any(|k| kb.contains(k)));
            let resemblance = crate::verify::lcs::dp_resemblance(&ca, &cb);
            if resemblance * 1_000_000.0 >= tau as f64 {
                let (pa, pb) = (short_page_prefix(&ka, &a, tau), short_page_prefix(&kb, &b, tau));
                proptest::prop_assert!(pa.iter().any(|k| pb.contains(k)), "R = {resemblance}, prefixes {pa:?} and {pb:?}");
            }
        }
    }

    #[test]
    fn bucket_index_is_part_of_the_fingerprint() {
        assert_ne!(combine(0, &[1, 2, 3]), combine(1, &[1, 2, 3]));
    }
}
