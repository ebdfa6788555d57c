//! LCS resemblance of two sentence sequences, with Myers' O(ND) difference algorithm.
//!
//! Resemblance is `2·|LCS| / (|A| + |B|)`, sentences weighted by length: a sentence of weight
//! `w` counts as `w` tokens, so the LCS is taken over the token expansion of both pages. For a
//! threshold τ the decision is exact: resemblance ≥ τ ⇔ D ≤ (1−τ)(|A|+|B|), with D the edit
//! (insert/delete) distance. So:
//! 1. a length filter rejects pairs whose shorter page cannot reach τ;
//! 2. a fragment filter (Rabin–Karp style: a fragment's fingerprint is its 64-bit sentence key,
//!    looked up in the other page's key set) drops sentences absent from the other page; each
//!    dropped unit is one unit of D already spent, so N and the remaining budget both shrink;
//! 3. when the two pages' sentences match in few places (distinct sentences, the usual page),
//!    the LCS is counted over those matches alone (`heaviest_common_subsequence`); otherwise
//!    Myers' greedy diff runs on what is left and stops as soon as D passes the budget, or,
//!    when that budget would cost more than counting the LCS 64 positions at a time, stops
//!    early and the bit-parallel LCS (Allison–Dix) decides (`bounded_distance`).

use crate::ingest::page::{Content, KeyWeight, Sentence, Word};

mod bit_parallel;
mod scratch;
mod word_filters;

pub use bit_parallel::{
    bit_parallel_lcs, bit_parallel_lcs_at_least, bit_parallel_lcs_words, Token,
};
use word_filters::{shared_bigrams_reaching, word_intersection_reaching};

/// Outcome of comparing two pages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Resemblance at or above the threshold (the exact value).
    Similar(f64),
    /// Below the threshold (decided without computing the exact value).
    Dissimilar,
    /// The diff cost cap (`max_diff_distance`) was hit before a decision: treated as dissimilar.
    CostCapped,
}

/// Threshold τ as parts per million, so that the bound is exact integer arithmetic.
pub fn ppm(tau: f64) -> u64 {
    (tau.clamp(0.0, 1.0) * 1_000_000.0).round() as u64
}

/// Largest D for which resemblance ≥ τ, for total weight `total`.
pub fn max_distance(total: u64, tau_ppm: u64) -> u64 {
    ((1_000_000 - tau_ppm) as u128 * total as u128 / 1_000_000) as u64
}

fn expand<S: KeyWeight>(sentences: &[S]) -> Vec<(u64, u16)> {
    let mut tokens = Vec::with_capacity(sentences.iter().map(|s| s.compared().1 as usize).sum());
    for (key, weight) in sentences.iter().map(S::compared) {
        tokens.extend((0..weight).map(|i| (key, i)));
    }
    tokens
}

/// Drops sentences of `a` whose key does not occur in `b`; returns the kept ones and the
/// dropped weight. Never drops a sentence that `b` has (tested).
pub fn fragment_filter<A: KeyWeight, B: KeyWeight>(a: &[A], b: &[B]) -> (Vec<(u64, u16)>, u64) {
    fragment_filter_within(a, &sorted_keys(b), u64::MAX).expect("no weight is past u64::MAX")
}

/// The distinct keys of a sentence sequence, sorted (the other page's "fingerprint table").
fn sorted_keys<S: KeyWeight>(sentences: &[S]) -> Vec<u64> {
    let mut keys: Vec<u64> = sentences.iter().map(|s| s.compared().0).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The fragment filter against the other page's sorted keys, given up (`None`) once the weight
/// dropped is past `budget`: most pairs that reach the filter leave it there, and the rest of
/// their sentences need not be searched.
fn fragment_filter_within<S: KeyWeight>(
    a: &[S],
    present: &[u64],
    budget: u64,
) -> Option<(Vec<(u64, u16)>, u64)> {
    let mut dropped = 0u64;
    let mut kept = Vec::with_capacity(a.len());
    for (key, weight) in a.iter().map(S::compared) {
        if present.binary_search(&key).is_ok() {
            kept.push((key, weight));
        } else {
            dropped += weight as u64;
            if dropped > budget {
                return None;
            }
        }
    }
    Some((kept, dropped))
}

/// Myers' greedy forward algorithm: the edit distance D between `a` and `b` if D ≤ `max_d`.
pub fn myers_distance<T: PartialEq>(a: &[T], b: &[T], max_d: u64) -> Option<u64> {
    let n = a.len() as i64;
    let m = b.len() as i64;
    let max_d = max_d.min((n + m) as u64) as i64;
    let offset = max_d + 1;
    let mut v = vec![0i64; (2 * max_d + 3) as usize];
    for d in 0..=max_d {
        let mut k = -d;
        while k <= d {
            let idx = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
                v[idx + 1]
            } else {
                v[idx - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[idx] = x;
            if x >= n && y >= m {
                return Some(d as u64);
            }
            k += 2;
        }
    }
    None
}

/// Compares two pages against threshold `tau_ppm`; `max_diff_distance` caps Myers' D.
pub fn compare(a: &Content, b: &Content, tau_ppm: u64, max_diff_distance: u64) -> Verdict {
    compare_keyed(a, b, None, tau_ppm, max_diff_distance)
}

/// `compare`, given each content's distinct sentence keys, sorted (`keys`: those of `a`, then
/// of `b`; `verify::distinct_sentence_keys`), when the caller holds them: the fragment filter
/// then sorts nothing. None: computed here.
pub fn compare_keyed(
    a: &Content,
    b: &Content,
    keys: Option<(&[u64], &[u64])>,
    tau_ppm: u64,
    max_diff_distance: u64,
) -> Verdict {
    let (wa, wb) = (a.weight(), b.weight());
    let total = wa + wb;
    if total == 0 {
        return Verdict::Similar(1.0);
    }
    if !lengths_may_reach(wa, wb, tau_ppm) {
        return Verdict::Dissimilar;
    }
    if a.sentences == b.sentences {
        return Verdict::Similar(1.0);
    }
    let budget = max_distance(total, tau_ppm);
    let computed;
    let (ka, kb) = match keys {
        Some(keys) => keys,
        None => {
            computed = (sorted_keys(&a.sentences), sorted_keys(&b.sentences));
            (computed.0.as_slice(), computed.1.as_slice())
        }
    };
    // The sentences the two share at their very head and tail are in an LCS (of the token
    // expansions too: a sentence of one key and weight expands to the same tokens), and add
    // nothing to D: a near-copy leaves the filter and the count its differing middle alone.
    let (common, ma, mb) = common_ends(&a.sentences, &b.sentences);
    // The weight either filter drops is part of D: past the budget, the pair is dissimilar.
    let Some((fa, dropped_a)) = fragment_filter_within(ma, kb, budget) else {
        return Verdict::Dissimilar;
    };
    let Some((fb, dropped_b)) = fragment_filter_within(mb, ka, budget - dropped_a) else {
        return Verdict::Dissimilar;
    };
    let remaining = budget - dropped_a - dropped_b;
    let capped = remaining > max_diff_distance;
    // What the filters kept may share ends again where they dropped what stood between: two
    // edits apart in a near-copy, the sentences between them. Those ends are in an LCS too, and
    // what is left is all that is compared (nothing, where the filtered sequences are equal).
    let (kept_ends, fa, fb) = common_ends(&fa, &fb);
    let common = common + kept_ends;
    let (na, nb) = (wa - common - dropped_a, wb - common - dropped_b);
    // Few sentence matches (distinct sentences, the usual page): the LCS of the token
    // expansion, counted over the matches alone.
    let parallel_work = BIT_PARALLEL_WORK * na.max(nb) * na.min(nb).div_ceil(64);
    if let Some(lcs) = heaviest_common_subsequence(fa, fb, parallel_work / SPARSE_WORK) {
        let d = na + nb - 2 * lcs;
        let limit = if capped { max_diff_distance } else { remaining };
        return match (d <= limit, capped) {
            (true, _) => Verdict::Similar(2.0 * (common + lcs) as f64 / total as f64),
            (false, true) => Verdict::CostCapped,
            (false, false) => Verdict::Dissimilar,
        };
    }
    let (ta, tb) = (expand(fa), expand(fb));
    let distance = if capped {
        myers_distance(&ta, &tb, max_diff_distance)
    } else {
        bounded_distance(&ta, &tb, remaining, 0)
    };
    match distance {
        Some(d) => {
            let lcs = common + (ta.len() as u64 + tb.len() as u64 - d) / 2;
            Verdict::Similar(2.0 * lcs as f64 / total as f64)
        }
        None if capped => Verdict::CostCapped,
        None => Verdict::Dissimilar,
    }
}

/// The length filter: the LCS is at most the shorter length, so a resemblance of τ needs
/// `2 · min(a, b) ≥ τ · (a + b)`.
pub fn lengths_may_reach(a: u64, b: u64, tau_ppm: u64) -> bool {
    2 * a.min(b) as u128 * 1_000_000 >= tau_ppm as u128 * (a + b) as u128
}

/// Whether two contents' sentences may reach LCS resemblance `tau_ppm`: `compare_keyed`'s
/// length filter and the fragment filter's bound (the weight of each page's sentences the
/// other lacks is part of D) without the LCS. `ka` and `kb` are the contents' distinct
/// sentence keys, sorted. False only where `compare_keyed` is dissimilar (tested): a
/// necessary condition of a similar verdict at the sentence level.
pub fn sentences_may_reach(a: &Content, ka: &[u64], b: &Content, kb: &[u64], tau_ppm: u64) -> bool {
    let (va, vb) = (key_weights(a, ka), key_weights(b, kb));
    keys_may_reach((a.weight(), ka, &va), (b.weight(), kb, &vb), tau_ppm)
}

/// The summed weight of each of `keys` (a content's distinct sentence keys, sorted) over the
/// content's sentences, parallel to `keys`.
pub fn key_weights(content: &Content, keys: &[u64]) -> Vec<u32> {
    let mut weights = vec![0u32; keys.len()];
    for s in content.sentences.iter() {
        let (key, weight) = (s.key, s.weight);
        if let Ok(at) = keys.binary_search(&key) {
            weights[at] = weights[at].saturating_add(weight as u32);
        }
    }
    weights
}

/// `sentences_may_reach` from what a group member holds, never its content: each content's
/// weight (`Content::weight`: a member's `length`), its distinct keys, sorted, and their
/// summed weights (`key_weights`). The weight a page's sentences lack in the other is the sum
/// over its keys the other lacks, whatever their order: the same answer.
pub fn keys_may_reach<A: Copy + Into<u64>, B: Copy + Into<u64>>(
    (wa, ka, va): (u64, &[u64], &[A]),
    (wb, kb, vb): (u64, &[u64], &[B]),
    tau_ppm: u64,
) -> bool {
    debug_assert!(ka.len() == va.len() && kb.len() == vb.len(), "a weight a key");
    let total = wa + wb;
    if total == 0 {
        return true;
    }
    if !lengths_may_reach(wa, wb, tau_ppm) {
        return false;
    }
    let budget = max_distance(total, tau_ppm);
    // Stops once the weight dropped is past the budget. A key whose bit is clear in the other
    // content's `KeyBits` is absent without a search: most keys of a pair this rejects.
    fn drop_absent<W: Copy + Into<u64>>(
        keys: &[u64],
        weights: &[W],
        present: &[u64],
        dropped: &mut u64,
        budget: u64,
    ) -> bool {
        let bits = KeyBits::of(present);
        for (key, &weight) in keys.iter().zip(weights) {
            if !bits.may_hold(*key) || present.binary_search(key).is_err() {
                *dropped += weight.into();
                if *dropped > budget {
                    return false;
                }
            }
        }
        true
    }
    let mut dropped = 0u64;
    drop_absent(ka, va, kb, &mut dropped, budget) && drop_absent(kb, vb, ka, &mut dropped, budget)
}

/// A set of 256 bits over keys: a key's bit is set for every key of the set, so a key whose
/// bit is clear is not in it (a one-hash Bloom filter, made on the stack from a sorted list
/// for one pair). With a page's ~30 distinct sentences about one bit in nine is set: most
/// absent keys are known absent with a bit test, not a binary search.
struct KeyBits([u64; 4]);

impl KeyBits {
    fn of(keys: &[u64]) -> Self {
        let mut bits = [0u64; 4];
        for &k in keys {
            let b = Self::bit(k);
            bits[b >> 6] |= 1 << (b & 63);
        }
        KeyBits(bits)
    }

    /// The key's bit: the top byte of a multiplicative hash (keys are MD5 prefixes, but tests
    /// and other callers may pass small integers).
    fn bit(key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize
    }

    fn may_hold(&self, key: u64) -> bool {
        let b = Self::bit(key);
        self.0[b >> 6] >> (b & 63) & 1 == 1
    }
}

/// Word-level resemblance `2·|LCS| / (|A| + |B|)` of two word sequences against `tau_ppm`:
/// where sentences are too coarse (a name substituted into every sentence, edits touching
/// many sentences). Exact as `compare` is: a length filter, a bag filter (the LCS is at most
/// the multiset intersection of the words), then Myers' diff bounded by the remaining budget.
pub fn compare_words(a: &[Word], b: &[Word], tau_ppm: u64, max_diff_distance: u64) -> Verdict {
    compare_words_distance(a, b, tau_ppm, max_diff_distance).0
}

/// `compare_words`, and with a similar verdict the edit distance D it found: the two word
/// sequences' LCS is then exactly `(|A| + |B| − D) / 2`.
pub fn compare_words_distance(
    a: &[Word],
    b: &[Word],
    tau_ppm: u64,
    max_diff_distance: u64,
) -> (Verdict, Option<u64>) {
    let total = (a.len() + b.len()) as u64;
    let similar = |d: u64| (Verdict::Similar((total - d) as f64 / total as f64), Some(d));
    if total == 0 {
        return (Verdict::Similar(1.0), Some(0));
    }
    if !lengths_may_reach(a.len() as u64, b.len() as u64, tau_ppm) {
        return (Verdict::Dissimilar, None);
    }
    if a == b {
        return similar(0);
    }
    let budget = max_distance(total, tau_ppm);
    // The common head and tail are in an LCS of the two (a longest one keeps them), so D is
    // the D of what lies between them: the rest compares the middles, with the same budget.
    let (a, b) = trim_common_ends(a, b);
    let middle = (a.len() + b.len()) as u64;
    // The bag filter: exact, counted on the worker's table of the 65,536 words. D ≥ |A| + |B| −
    // 2·|A ∩ B|, so D ≤ budget needs |A ∩ B| ≥ ⌈(|A| + |B| − budget) / 2⌉ (of the middles).
    let Some(common) = word_intersection_reaching(a, b, middle.saturating_sub(budget).div_ceil(2))
    else {
        return (Verdict::Dissimilar, None);
    };
    let mut lower = middle - 2 * common;
    // The bigram filter: D ≤ budget needs at least max(|A|, |B|) − 1 − 2·budget shared bigrams.
    // It is counted only where its bound may decide something (`bounded_distance` tries Myers
    // while the bound known is below `myers_first`); elsewhere it would rarely reject a pair the
    // bag filter passed (at the default word τ 0.8, a pair with 80% of its words in common needs
    // 20% of its bigrams), and a pair it would reject is rejected by the count, exactly.
    if lower <= myers_first(a.len() as u64, b.len() as u64) {
        let longer = a.len().max(b.len()) as u64;
        let Some(shared) =
            shared_bigrams_reaching(a, b, longer.saturating_sub(1).saturating_sub(2 * budget))
        else {
            return (Verdict::Dissimilar, None);
        };
        let unshared = longer.saturating_sub(shared + 1);
        lower = lower.max(unshared.div_ceil(2));
    }
    if budget > max_diff_distance {
        return match myers_distance(a, b, max_diff_distance) {
            Some(d) => similar(d),
            None => (Verdict::CostCapped, None),
        };
    }
    match bounded_distance(a, b, budget, lower) {
        Some(d) => similar(d),
        None => (Verdict::Dissimilar, None),
    }
}

/// The edit (insert/delete) distance D of `a` and `b` if D ≤ `budget`. Myers costs about
/// (N + M)·D: cheap for a similar pair, whose D is small, but a pair it rejects runs to the
/// budget. The bit-parallel LCS costs about M·N/64 whatever D is. Myers first, up to the D that
/// costs as much, then the bit-parallel count: never much more than twice the cheaper of the two.
///
/// `lower` is a bound D is known to reach (0 for none; `compare_words` passes the bag filter's,
/// D ≥ |A| + |B| − 2·|A ∩ B| as multisets, or the bigram filter's where that is counted and
/// larger). When it is past the D Myers would run to, Myers cannot end there and the count runs
/// at once.
pub fn bounded_distance<T: Token>(a: &[T], b: &[T], budget: u64, lower: u64) -> Option<u64> {
    let total = (a.len() + b.len()) as u64;
    let myers_first = myers_first(a.len() as u64, b.len() as u64);
    if budget <= myers_first {
        return myers_distance(a, b, budget);
    }
    if lower <= myers_first {
        if let Some(d) = myers_distance(a, b, myers_first) {
            return Some(d);
        }
    }
    // D ≤ budget ⇔ LCS ≥ ⌈(total − budget) / 2⌉: the count may stop once that is out of reach.
    let lcs = T::lcs_at_least(a, b, total.saturating_sub(budget).div_ceil(2));
    let d = total - 2 * lcs;
    (d <= budget).then_some(d)
}

/// The LCS of the token expansions of two sentence sequences (a sentence of weight `w` is `w`
/// tokens), counted over the matching sentence pairs alone: the heaviest chain of matches
/// increasing in both sequences (Hunt–Szymanski with weights; a Fenwick tree of prefix maxima
/// over `b`'s positions, `b`'s matches of each sentence of `a` taken last to first). Equal to
/// the expansion's LCS when a key has one weight wherever it occurs (tested against dynamic
/// programming over the expansion). `None` when a key has two weights, or when the matches
/// are more than `max_matches` (a page of repeated sentences: the token path is cheaper).
fn heaviest_common_subsequence<A: KeyWeight, B: KeyWeight>(
    a: &[A],
    b: &[B],
    max_matches: u64,
) -> Option<u64> {
    if a.is_empty() || b.is_empty() {
        return Some(0);
    }
    let mut positions: Vec<(u64, u16, u32)> =
        b.iter().map(B::compared).enumerate().map(|(j, (k, w))| (k, w, j as u32)).collect();
    positions.sort_unstable();
    let range = |key: u64| {
        let lo = positions.partition_point(|p| p.0 < key);
        lo..lo + positions[lo..].partition_point(|p| p.0 == key)
    };
    // Each sentence of `a`'s matches in `positions`, searched once for both passes.
    let mut found_at: Vec<(u32, u32)> = Vec::with_capacity(a.len());
    let mut matches = 0u64;
    for (key, weight) in a.iter().map(A::compared) {
        let at = range(key);
        let found = &positions[at.clone()];
        if found.iter().any(|p| p.1 != weight) {
            return None;
        }
        matches += found.len() as u64;
        if matches > max_matches {
            return None;
        }
        found_at.push((at.start as u32, at.end as u32));
    }
    // tree[i]: the heaviest chain ending at a position of b in the Fenwick range ending at i
    // (1-based).
    let mut tree = vec![0u64; b.len() + 1];
    let prefix_max = |tree: &[u64], mut i: usize| {
        let mut best = 0;
        while i > 0 {
            best = best.max(tree[i]);
            i &= i - 1;
        }
        best
    };
    for &(start, end) in &found_at {
        for &(_, weight, j) in positions[start as usize..end as usize].iter().rev() {
            let chain = prefix_max(&tree, j as usize) + weight as u64;
            let mut i = j as usize + 1;
            while i < tree.len() {
                if tree[i] >= chain {
                    // Fenwick ranges above i cover it: they hold at least as much already.
                    break;
                }
                tree[i] = chain;
                i += i & i.wrapping_neg();
            }
        }
    }
    Some(prefix_max(&tree, b.len()))
}

/// The work of one sentence match of `heaviest_common_subsequence` (two walks of the Fenwick
/// tree), in units of one step of the bit-parallel LCS over a block: a match costs about as
/// much as 16 block steps.
const SPARSE_WORK: u64 = 16;

/// The work of one step of the bit-parallel LCS over a 64-position block, in units of one step
/// of Myers' inner loop (measured: about 4).
const BIT_PARALLEL_WORK: u64 = 4;
/// Myers always runs at least to this D before the bit-parallel count takes over.
const MYERS_FIRST_MIN: u64 = 16;

/// The D to which `bounded_distance` runs Myers before the bit-parallel count of sequences of
/// `n` and `m` tokens: where Myers' (N + M)·D costs what the count's M·N/64 steps do.
fn myers_first(n: u64, m: u64) -> u64 {
    let parallel_work = BIT_PARALLEL_WORK * n.max(m) * n.min(m).div_ceil(64);
    (parallel_work / (n + m).max(1)).max(MYERS_FIRST_MIN)
}

/// How many items `a` and `b` share, by `same`, at their very head and at their very tail (the
/// head taken first, so the two never overlap).
fn common_head_and_tail<T>(a: &[T], b: &[T], same: impl Fn(&T, &T) -> bool) -> (usize, usize) {
    let head = a.iter().zip(b).take_while(|(x, y)| same(x, y)).count();
    let tail =
        a[head..].iter().rev().zip(b[head..].iter().rev()).take_while(|(x, y)| same(x, y)).count();
    (head, tail)
}

/// `a` and `b` without their common head and tail (`common_head_and_tail`).
fn trim_common_ends<'s, T: PartialEq>(a: &'s [T], b: &'s [T]) -> (&'s [T], &'s [T]) {
    let (head, tail) = common_head_and_tail(a, b, T::eq);
    (&a[head..a.len() - tail], &b[head..b.len() - tail])
}

/// The weight of the sentences `a` and `b` share at their very head and tail (by key and
/// weight), and the rest of each.
fn common_ends<'s, S: KeyWeight>(a: &'s [S], b: &'s [S]) -> (u64, &'s [S], &'s [S]) {
    let (head, tail) = common_head_and_tail(a, b, |x, y| x.compared() == y.compared());
    let weight = a[..head].iter().chain(&a[a.len() - tail..]).map(|s| s.compared().1 as u64).sum();
    (weight, &a[head..a.len() - tail], &b[head..b.len() - tail])
}

/// Plain dynamic-programming word resemblance: the oracle of `compare_words`.
pub fn dp_word_resemblance(a: &[Word], b: &[Word]) -> f64 {
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    2.0 * dp_lcs(a, b) as f64 / total as f64
}

fn dp_lcs<T: PartialEq>(a: &[T], b: &[T]) -> u32 {
    let mut prev = vec![0u32; b.len() + 1];
    let mut cur = vec![0u32; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y { prev[j] + 1 } else { prev[j + 1].max(cur[j]) };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The paper's refinement against template left in the LCS: template sits at the head and tail
/// of pages, so the similarity may use the central part. Strips the sentences the two pages
/// share at their very start and very end (as long as each stripped run stays within
/// `max_share` of its page's weight) and returns the middles.
pub fn central(a: &Content, b: &Content, max_share: f64) -> (Content, Content) {
    let (sa, sb) = (&a.sentences, &b.sentences);
    let limit = |c: &Content| (c.weight() as f64 * max_share) as u64;
    let (la, lb) = (limit(a), limit(b));
    let (mut head, mut wa, mut wb) = (0usize, 0u64, 0u64);
    while head < sa.len()
        && head < sb.len()
        && sa[head].key == sb[head].key
        && wa + sa[head].weight as u64 <= la
        && wb + sb[head].weight as u64 <= lb
    {
        wa += sa[head].weight as u64;
        wb += sb[head].weight as u64;
        head += 1;
    }
    let (mut tail, mut ta, mut tb) = (0usize, 0u64, 0u64);
    while tail < sa.len() - head && tail < sb.len() - head {
        let (x, y) = (sa[sa.len() - 1 - tail], sb[sb.len() - 1 - tail]);
        if x.key != y.key || ta + x.weight as u64 > la || tb + y.weight as u64 > lb {
            break;
        }
        ta += x.weight as u64;
        tb += y.weight as u64;
        tail += 1;
    }
    let middle = |c: &Content, s: &[Sentence]| {
        // The middle's words: the word counts of the trimmed sentences are cut from both ends.
        let counts = if c.word_counts.len() == s.len() {
            &c.word_counts[head..s.len() - tail]
        } else {
            &[][..]
        };
        let skip: usize = c.word_counts.iter().take(head).map(|&n| n as usize).sum();
        let taken: usize = counts.iter().map(|&n| n as usize).sum();
        Content {
            sentences: c.sentences.sub(head..s.len() - tail),
            shingles: c.shingles.clone(),
            term_weights: c.term_weights.clone(),
            words: if skip + taken <= c.words.len() {
                c.words.sub(skip..skip + taken)
            } else {
                Default::default()
            },
            word_counts: counts.to_vec(),
            template_keys: c.template_keys.clone(),
            dominated: c.dominated,
        }
    };
    (middle(a, sa), middle(b, sb))
}

/// Plain dynamic-programming LCS over the token expansion: the oracle for tests and `reference`.
pub fn dp_resemblance(a: &Content, b: &Content) -> f64 {
    let total = a.weight() + b.weight();
    if total == 0 {
        return 1.0;
    }
    2.0 * dp_lcs(&expand(&a.sentences), &expand(&b.sentences)) as f64 / total as f64
}

#[cfg(test)]
mod tests;
