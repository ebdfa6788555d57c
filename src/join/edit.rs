//! Edit-distance self-join over q-grams: All-Pairs-Ed, Ed-Join-l (location-based mismatch
//! filtering) and Ed-Join (plus content-based mismatch filtering), Xiao, Wang and Lin,
//! VLDB 2008.
//!
//! A string of n characters has n - q + 1 positional q-grams; the k-th occurrence of a gram is
//! a token of its own, so the gram multiset is a set, ranked by ascending document frequency.
//! One edit destroys at most q grams, so two strings within distance τ share a token within
//! their first qτ + 1 tokens (All-Pairs-Ed). Ed-Join-l cuts the prefix where destroying all its
//! grams would take more than τ edits (fewer tokens when grams are spread out), drops matches
//! whose positions differ by more than τ, and drops candidates whose unmatched prefix grams
//! need more than τ edits; Ed-Join adds the character-histogram bound on the windows of the
//! unmatched grams. Strings shorter than q(τ + 1) cannot be filtered this way: they are skipped,
//! as in the original, unless `min_length` admits them, in which case they are compared with
//! every string of a near length.
//!
//! Locations are only used for grams that occur once in their string: for a repeated gram,
//! which occurrence an edit destroyed is not known, so those grams count for the prefix and
//! the count filter but never for a location or position bound. This keeps the join exact
//! (the tests compare it with a brute-force join).

use std::collections::HashMap;

use dupflow_operators::ingest::sentence::Mixed;

use super::{FlatIndex, JoinError, Pair, Stats, Vocabulary};

/// The algorithm of an edit-distance join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdAlgorithm {
    AllPairsEd,
    EdJoinL,
    EdJoin,
}

impl std::fmt::Display for EdAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EdAlgorithm::AllPairsEd => "allpairs-ed",
            EdAlgorithm::EdJoinL => "edjoin-l",
            EdAlgorithm::EdJoin => "edjoin",
        })
    }
}

impl EdAlgorithm {
    pub const NAMES: &'static str = "allpairs-ed, edjoin-l, edjoin";

    pub fn parse(name: &str) -> Result<EdAlgorithm, JoinError> {
        match name {
            "allpairs-ed" => Ok(EdAlgorithm::AllPairsEd),
            "edjoin-l" => Ok(EdAlgorithm::EdJoinL),
            "edjoin" => Ok(EdAlgorithm::EdJoin),
            other => Err(JoinError::BadAlgorithm(other.to_string(), Self::NAMES)),
        }
    }
}

/// Parameters of an edit-distance join.
#[derive(Clone, Copy, Debug)]
pub struct EdParams {
    pub tau: usize,
    pub q: usize,
    /// Strings shorter than this are skipped (default q(τ + 1)).
    pub min_length: usize,
    pub algorithm: EdAlgorithm,
}

impl EdParams {
    pub fn new(
        tau: usize,
        q: usize,
        min_length: Option<usize>,
        algorithm: EdAlgorithm,
    ) -> Result<EdParams, JoinError> {
        if q == 0 {
            return Err(JoinError::BadQ);
        }
        Ok(EdParams { tau, q, min_length: min_length.unwrap_or(q * (tau + 1)), algorithm })
    }
}

/// A gram token of a string: its rank, its location, and whether its gram occurs once.
#[derive(Clone, Copy, Debug)]
struct Token {
    rank: u32,
    loc: u32,
    unique: bool,
}

/// A string ready to join.
#[derive(Clone, Debug)]
struct Str {
    line: u32,
    chars: Vec<char>,
    /// Ascending by rank.
    tokens: Vec<Token>,
    prefix: usize,
}

/// Strings (lines) and their gram tokens.
pub struct Strings {
    items: Vec<Str>,
}

impl Strings {
    /// Reads lines as strings of characters and ranks their q-grams; lines shorter than
    /// `params.min_length` characters are left out.
    pub fn from_lines<'a>(lines: impl IntoIterator<Item = &'a str>, params: &EdParams) -> Strings {
        let q = params.q;
        let mut vocabulary: Vocabulary<u64, Mixed> = Vocabulary::new();
        let mut items = Vec::new();
        let mut seen: HashMap<u64, u32, Mixed> = HashMap::default();
        for (n, line) in lines.into_iter().enumerate() {
            let chars: Vec<char> = line.chars().collect();
            if chars.len() < params.min_length {
                continue;
            }
            seen.clear();
            let grams: Vec<u64> = if chars.len() >= q {
                chars.windows(q).map(gram_hash).collect()
            } else {
                Vec::new()
            };
            for &g in &grams {
                *seen.entry(g).or_insert(0) += 1;
            }
            vocabulary.start_record();
            let tokens = grams
                .iter()
                .enumerate()
                .map(|(loc, &g)| Token {
                    rank: vocabulary.token(g),
                    loc: loc as u32,
                    unique: seen[&g] == 1,
                })
                .collect();
            items.push(Str { line: n as u32 + 1, chars, tokens, prefix: 0 });
        }
        let rank = vocabulary.ranks();
        for s in &mut items {
            s.tokens.iter_mut().for_each(|t| t.rank = rank[t.rank as usize]);
            s.tokens.sort_unstable_by_key(|t| t.rank);
            s.prefix = prefix_length(&s.tokens, params);
        }
        // In the join's processing order: by length, then line.
        items.sort_by_key(|s| (s.chars.len(), s.line));
        Strings { items }
    }
}

/// A 64-bit hash of a gram (FNV-1a over the characters, then a mixer). A collision can only merge
/// two grams into one token, which adds candidates but never loses a pair: verification is exact.
fn gram_hash(gram: &[char]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in gram {
        h ^= c as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    dupflow_operators::ingest::sentence::mix64(h)
}

/// Prefix length of a string's tokens: qτ + 1 (count bound), or for Ed-Join the shortest
/// prefix whose located grams need more than τ edits to destroy, if shorter. `usize::MAX` when
/// the string has too few grams to be filtered at all.
fn prefix_length(tokens: &[Token], params: &EdParams) -> usize {
    let count_prefix = params.q * params.tau + 1;
    if tokens.len() < count_prefix {
        return usize::MAX;
    }
    if params.algorithm == EdAlgorithm::AllPairsEd {
        return count_prefix;
    }
    let mut locs: Vec<u32> = Vec::with_capacity(count_prefix);
    for (i, t) in tokens[..count_prefix].iter().enumerate() {
        if t.unique {
            let at = locs.partition_point(|&l| l < t.loc);
            locs.insert(at, t.loc);
            if min_edits(&locs, params.q) > params.tau {
                return i + 1;
            }
        }
    }
    count_prefix
}

/// The fewest edits that destroy grams at all of the ascending locations `locs` (one edit
/// destroys the grams overlapping its position; greedy from the left is optimal).
fn min_edits(locs: &[u32], q: usize) -> usize {
    let mut edits = 0;
    let mut covered_to: i64 = -1;
    for &l in locs {
        if l as i64 > covered_to {
            edits += 1;
            covered_to = l as i64 + q as i64 - 1;
        }
    }
    edits
}

/// Whether the edit distance of `a` and `b` is at most `tau`, and what it is: Ukkonen's band of
/// width 2τ + 1, stopping when a whole row exceeds τ.
pub fn edit_distance_within(a: &[char], b: &[char], tau: usize) -> Option<usize> {
    Band::default().within(a, b, tau)
}

/// The two rows of the banded edit distance, kept between verifications.
#[derive(Default)]
pub struct Band {
    prev: Vec<u32>,
    cur: Vec<u32>,
}

impl Band {
    /// [`edit_distance_within`] with this band's rows: each row costs its band only.
    pub fn within(&mut self, a: &[char], b: &[char], tau: usize) -> Option<usize> {
        let (n, m) = (a.len(), b.len());
        if n.abs_diff(m) > tau {
            return None;
        }
        if a == b {
            return Some(0);
        }
        // Cells are u32 (a distance above τ is only ever compared with τ, so it saturates at BIG).
        const BIG: u32 = u32::MAX / 2;
        let t = tau.min(BIG as usize - 1) as u32;
        let (prev, cur) = (&mut self.prev, &mut self.cur);
        prev.clear();
        prev.resize(m + 1, BIG);
        cur.clear();
        cur.resize(m + 1, BIG);
        for (j, p) in prev.iter_mut().enumerate().take(tau.min(m) + 1) {
            *p = j as u32;
        }
        for i in 1..=n {
            let lo = i.saturating_sub(tau);
            let hi = (i + tau).min(m);
            // Row i reads row i - 1 on [lo - 1, hi] and itself from lo - 1: the cell left of the
            // band may hold row i - 2's value, every cell right of it was never written.
            if lo > 0 {
                cur[lo - 1] = BIG;
            }
            let mut row_min = BIG;
            if lo == 0 {
                cur[0] = (i as u32).min(BIG);
                row_min = cur[0];
            }
            let ca = a[i - 1];
            let from = lo.max(1);
            if from <= hi {
                let (up, left_row) = (&prev[from - 1..=hi], &mut cur[from - 1..=hi]);
                let bs = &b[from - 1..hi];
                let mut left = left_row[0];
                for k in 0..bs.len() {
                    let sub = up[k] + u32::from(ca != bs[k]);
                    let v = sub.min(up[k + 1] + 1).min(left + 1);
                    left_row[k + 1] = v;
                    left = v;
                    row_min = row_min.min(v);
                }
            }
            if row_min > t {
                return None;
            }
            std::mem::swap(prev, cur);
        }
        (prev[m] <= t).then_some(prev[m] as usize)
    }
}

/// The plain dynamic-programming edit distance (the brute-force reference).
pub fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            cur[j] = (prev[j - 1] + usize::from(a[i - 1] != b[j - 1]))
                .min(prev[j] + 1)
                .min(cur[j - 1] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The self-join of `strings` at edit distance ≤ τ: pairs sorted by `(x, y)`, the value being
/// the distance.
pub fn join(strings: &Strings, params: &EdParams) -> (Vec<Pair>, Stats) {
    // Processing order: by length, then line (`from_lines` gives them so).
    let mut order: Vec<u32> = (0..strings.items.len() as u32).collect();
    let key = |i: u32| {
        let s = &strings.items[i as usize];
        (s.chars.len(), s.line)
    };
    if !order.is_sorted_by_key(|&i| key(i)) {
        order.sort_unstable_by_key(|&i| key(i));
    }
    let items: Vec<&Str> = order.iter().map(|&i| &strings.items[i as usize]).collect();
    let lengths: Vec<u32> = items.iter().map(|s| s.chars.len() as u32).collect();

    // Inverted index of prefixes: token → (string position in the order, location, whether the
    // gram is unique in its string), ascending by position.
    let universe =
        items.iter().flat_map(|s| s.tokens.iter()).map(|t| t.rank as usize + 1).max().unwrap_or(0);
    let index = FlatIndex::build(universe, || {
        items.iter().enumerate().flat_map(|(r, s)| {
            let prefix = if s.prefix == usize::MAX { &[][..] } else { &s.tokens[..s.prefix] };
            prefix.iter().map(move |t| (t.rank, (r as u32, t.loc, t.unique)))
        })
    });
    let n = items.len();
    super::probe_all(
        n,
        || Scratch::new(n),
        |scratch, x| probe(x, &items, &lengths, &index, params, scratch),
    )
}

/// A probing thread's state, reused from string to string.
struct Scratch {
    marked: Vec<bool>,
    touched: Vec<u32>,
    /// Locations of x's unmatched prefix grams.
    mismatched: Vec<u32>,
    /// Sorted character windows for the content bound.
    window_x: Vec<char>,
    window_y: Vec<char>,
    band: Band,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch {
            marked: vec![false; n],
            touched: Vec::new(),
            mismatched: Vec::new(),
            window_x: Vec::new(),
            window_y: Vec::new(),
            band: Band::default(),
        }
    }
}

fn probe(
    x: usize,
    items: &[&Str],
    lengths: &[u32],
    index: &FlatIndex<(u32, u32, bool)>,
    params: &EdParams,
    scratch: &mut Scratch,
) -> (Vec<Pair>, Stats) {
    let sx = items[x];
    let tau = params.tau;
    let mut stats = Stats::default();
    let mut out = Vec::new();
    let min_len = (sx.chars.len().saturating_sub(tau)) as u32;
    // Records of a near length before x in the order: a contiguous range.
    let first = lengths.partition_point(|&l| l < min_len);
    if sx.prefix == usize::MAX {
        // Too short to filter: compare with every string of a near length before it, and with
        // every filterable string after it (those do not probe short strings).
        let last = lengths.partition_point(|&l| l as usize <= sx.chars.len() + tau);
        for y in (first..last).filter(|&y| y < x || items[y].prefix != usize::MAX) {
            verify(sx, items[y], params, &mut scratch.band, &mut stats, &mut out);
        }
        return (out, stats);
    }
    let positional = params.algorithm >= EdAlgorithm::EdJoinL;
    for t in &sx.tokens[..sx.prefix] {
        let list = index.list(t.rank);
        let lo = list.partition_point(|&(r, _, _)| (r as usize) < first);
        let hi = list.partition_point(|&(r, _, _)| (r as usize) < x);
        for &(y, loc, unique) in list.get(lo..hi).unwrap_or(&[]) {
            if scratch.marked[y as usize]
                || (positional && t.unique && unique && t.loc.abs_diff(loc) as usize > tau)
            {
                continue;
            }
            scratch.marked[y as usize] = true;
            scratch.touched.push(y);
        }
    }
    let mut touched = std::mem::take(&mut scratch.touched);
    for &y in touched.iter() {
        scratch.marked[y as usize] = false;
        stats.candidates += 1;
        let sy = items[y as usize];
        if survives_filters(sx, sy, params, scratch) {
            verify(sx, sy, params, &mut scratch.band, &mut stats, &mut out);
        }
    }
    touched.clear();
    scratch.touched = touched;
    (out, stats)
}

fn verify(
    sx: &Str,
    sy: &Str,
    params: &EdParams,
    band: &mut Band,
    stats: &mut Stats,
    out: &mut Vec<Pair>,
) {
    stats.verifications += 1;
    if let Some(d) = band.within(&sx.chars, &sy.chars, params.tau) {
        stats.results += 1;
        out.push(Pair::new(sx.line, sy.line, d as f64));
    }
}

/// Count filter, then (Ed-Join-l) location-based and (Ed-Join) content-based mismatch filters of
/// each string's prefix against the other. False only when the pair is proven farther than τ.
fn survives_filters(x: &Str, y: &Str, params: &EdParams, scratch: &mut Scratch) -> bool {
    // Count filter over the whole gram multisets: a branch-free merge.
    let common = {
        let (a, b) = (&x.tokens, &y.tokens);
        let (mut i, mut j, mut c) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            let (u, v) = (a[i].rank, b[j].rank);
            c += usize::from(u == v);
            i += usize::from(u <= v);
            j += usize::from(v <= u);
        }
        c
    };
    if common + params.q * params.tau < x.tokens.len().max(y.tokens.len()) {
        return false;
    }
    params.algorithm == EdAlgorithm::AllPairsEd
        || (mismatch_filters(x, y, params, scratch) && mismatch_filters(y, x, params, scratch))
}

/// The location-based (and for Ed-Join, content-based) mismatch filters of `x`'s prefix against
/// `y`: false when the prefix grams `y` lacks need more than τ edits.
fn mismatch_filters(x: &Str, y: &Str, params: &EdParams, scratch: &mut Scratch) -> bool {
    let (q, tau) = (params.q, params.tau);
    // Located grams of x's prefix that y lacks: each needs an edit inside it.
    let mismatched = &mut scratch.mismatched;
    mismatched.clear();
    mismatched.extend(
        x.tokens[..x.prefix]
            .iter()
            .filter(|t| t.unique && y.tokens.binary_search_by_key(&t.rank, |u| u.rank).is_err())
            .map(|t| t.loc),
    );
    mismatched.sort_unstable();
    if min_edits(mismatched, q) > tau {
        return false;
    }
    !(params.algorithm == EdAlgorithm::EdJoin
        && content_bound(
            x,
            y,
            &scratch.mismatched,
            q,
            &mut scratch.window_x,
            &mut scratch.window_y,
        ) > tau)
}

/// Ed-Join's content-based bound: for each run of overlapping unmatched grams (a window of x),
/// half the L1 distance between the character histograms of that window in x and the same
/// positions in y counts the edits at or left of the window's end (each edit changes the
/// histograms' distance by at most 2); the unmatched grams right of the window need their own
/// edits. The largest such sum is a lower bound of the edit distance.
fn content_bound(
    x: &Str,
    y: &Str,
    mismatched: &[u32],
    q: usize,
    window_x: &mut Vec<char>,
    window_y: &mut Vec<char>,
) -> usize {
    let mut best = 0;
    let mut start = 0;
    while start < mismatched.len() {
        let mut end = start;
        while end + 1 < mismatched.len() && mismatched[end + 1] < mismatched[end] + q as u32 {
            end += 1;
        }
        let (from, to) = (mismatched[start] as usize, mismatched[end] as usize + q); // [from, to)
        let l1 = histogram_l1(
            &x.chars[from..to.min(x.chars.len())],
            y.chars.get(from..to.min(y.chars.len())).unwrap_or(&[]),
            window_x,
            window_y,
        );
        let bound = l1.div_ceil(2) + min_edits(&mismatched[end + 1..], q);
        best = best.max(bound);
        start = end + 1;
    }
    best
}

/// The L1 distance of the character histograms of two short windows: sorted copies, merged.
fn histogram_l1(
    a: &[char],
    b: &[char],
    sorted_a: &mut Vec<char>,
    sorted_b: &mut Vec<char>,
) -> usize {
    sorted_a.clear();
    sorted_a.extend_from_slice(a);
    sorted_a.sort_unstable();
    sorted_b.clear();
    sorted_b.extend_from_slice(b);
    sorted_b.sort_unstable();
    a.len() + b.len() - 2 * dupflow_operators::candidates::minhash::intersection(sorted_a, sorted_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn banded_distance_matches_dp() {
        let words =
            ["", "a", "kitten", "sitting", "saturday", "sunday", "abcdef", "azced", "ёжик", "ежик"];
        for a in words {
            for b in words {
                let d = edit_distance(&chars(a), &chars(b));
                for tau in 0..5 {
                    assert_eq!(
                        edit_distance_within(&chars(a), &chars(b), tau),
                        (d <= tau).then_some(d),
                        "{a} {b} {tau}"
                    );
                }
            }
        }
    }

    #[test]
    fn histogram_distance() {
        let (mut sa, mut sb) = (Vec::new(), Vec::new());
        assert_eq!(histogram_l1(&chars("abca"), &chars("aabd"), &mut sa, &mut sb), 2); // c vs d
        assert_eq!(histogram_l1(&chars("ёж"), &chars(""), &mut sa, &mut sb), 2);
        assert_eq!(histogram_l1(&chars("xyz"), &chars("zyx"), &mut sa, &mut sb), 0);
    }

    #[test]
    fn a_reused_band_gives_the_same_distances() {
        // Long strings first, then short ones: stale cells of the longer rows must not leak.
        let words =
            ["saturday sunday monday", "sunday saturday", "kitten", "sitting", "ab", "ba", ""];
        let mut band = Band::default();
        for a in words {
            for b in words {
                let d = edit_distance(&chars(a), &chars(b));
                for tau in 0..6 {
                    assert_eq!(
                        band.within(&chars(a), &chars(b), tau),
                        (d <= tau).then_some(d),
                        "{a} {b} {tau}"
                    );
                }
            }
        }
    }

    #[test]
    fn min_edits_greedy() {
        assert_eq!(min_edits(&[], 3), 0);
        assert_eq!(min_edits(&[0, 1, 2], 3), 1);
        assert_eq!(min_edits(&[0, 3], 3), 2);
        assert_eq!(min_edits(&[0, 2, 4, 6], 3), 2);
    }
}
