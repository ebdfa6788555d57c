//! Set-similarity self-join: All-Pairs, PPJoin, PPJoin+.
//!
//! A record is the multiset of its whitespace-separated words; the k-th occurrence of a word is
//! its own token, so a record is a set. Tokens are ranked by ascending document frequency
//! (ties: by word, then occurrence), records sorted by (size, line), and a pair `(x, y)` with `y`
//! before `x` must share a token within the probe prefix of `x` and the index prefix of `y`.
//!
//! Thresholds are exact rationals (`0.8` is 8/10), so "similarity exactly at the threshold" is
//! decided in integers, never lost to rounding: every bound below is the smallest overlap `o`
//! with `sim(o, |x|, |y|) >= t`.

use std::hash::RandomState;

use super::{FlatIndex, JoinError, Pair, Stats, Vocabulary};

/// The similarity measure of a set join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// |x ∩ y| / |x ∪ y|
    Jaccard,
    /// |x ∩ y| / sqrt(|x| |y|)
    Cosine,
    /// 2 |x ∩ y| / (|x| + |y|)
    Dice,
    /// |x ∩ y|, the threshold being a number of shared tokens
    Overlap,
}

impl Measure {
    pub fn name(self) -> &'static str {
        match self {
            Measure::Jaccard => "jaccard",
            Measure::Cosine => "cosine",
            Measure::Dice => "dice",
            Measure::Overlap => "overlap",
        }
    }
}

/// The algorithm of a set join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Prefix, size filtering (Bayardo et al.).
    AllPairs,
    /// + positional filtering.
    PpJoin,
    /// + suffix filtering to the given depth.
    PpJoinPlus { max_depth: u32 },
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Algorithm::AllPairs => write!(f, "allpairs"),
            Algorithm::PpJoin => write!(f, "ppjoin"),
            Algorithm::PpJoinPlus { max_depth } => write!(f, "ppjoinplus (depth {max_depth})"),
        }
    }
}

impl Algorithm {
    pub const NAMES: &'static str = "allpairs, ppjoin, ppjoinplus";

    pub fn parse(name: &str, max_depth: u32) -> Result<Algorithm, JoinError> {
        match name {
            "allpairs" => Ok(Algorithm::AllPairs),
            "ppjoin" => Ok(Algorithm::PpJoin),
            "ppjoinplus" | "ppjoin+" => Ok(Algorithm::PpJoinPlus { max_depth }),
            other => Err(JoinError::BadAlgorithm(other.to_string(), Self::NAMES)),
        }
    }
}

/// A measure with its threshold as the exact fraction `num / den`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    pub measure: Measure,
    num: u64,
    den: u64,
}

impl Threshold {
    /// Parses a decimal threshold (`0.8`, `.85`, `1`, `3` for overlap) exactly.
    pub fn parse(measure: Measure, text: &str) -> Result<Threshold, JoinError> {
        let bad = || JoinError::BadThreshold(text.to_string());
        let t = text.trim();
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        if (int.is_empty() && frac.is_empty())
            || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
            || frac.len() > 9
        {
            return Err(bad());
        }
        let den = 10u64.pow(frac.len() as u32);
        let int: u64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| bad())? };
        let frac_value: u64 = if frac.is_empty() { 0 } else { frac.parse().map_err(|_| bad())? };
        let num = int.checked_mul(den).and_then(|v| v.checked_add(frac_value)).ok_or_else(bad)?;
        let g = gcd(num.max(1), den);
        let (num, den) = (num / g, den / g);
        let range = |expected| JoinError::ThresholdRange {
            value: text.to_string(),
            measure: measure.name(),
            expected,
        };
        match measure {
            Measure::Overlap if den != 1 || num == 0 || num > u32::MAX as u64 => {
                Err(range("a whole number of shared tokens, at least 1"))
            }
            Measure::Overlap => Ok(Threshold { measure, num, den }),
            _ if num == 0 || num > den => Err(range("above 0 and at most 1")),
            _ => Ok(Threshold { measure, num, den }),
        }
    }

    /// The smallest overlap of sets of sizes `a` and `b` that meets the threshold (at least 1).
    pub fn required_overlap(&self, a: usize, b: usize) -> usize {
        let (p, q, a, b) = (self.num as u128, self.den as u128, a as u128, b as u128);
        let o = match self.measure {
            // o / (a + b - o) >= p / q  <=>  o (p + q) >= p (a + b)
            Measure::Jaccard => (p * (a + b)).div_ceil(p + q),
            // 2 o / (a + b) >= p / q  <=>  2 q o >= p (a + b)
            Measure::Dice => (p * (a + b)).div_ceil(2 * q),
            // o / sqrt(a b) >= p / q  <=>  (q o)^2 >= p^2 a b
            Measure::Cosine => {
                let target = p * p * a * b;
                let mut o = ((p as f64) * ((a * b) as f64).sqrt() / (q as f64)) as u128;
                while o > 0 && (q * (o - 1)) * (q * (o - 1)) >= target {
                    o -= 1;
                }
                while (q * o) * (q * o) < target {
                    o += 1;
                }
                o
            }
            Measure::Overlap => p,
        };
        o.max(1) as usize
    }

    /// Whether sets of sizes `a`, `b` sharing `o` tokens meet the threshold.
    pub fn passes(&self, o: usize, a: usize, b: usize) -> bool {
        o >= self.required_overlap(a, b)
    }

    /// The similarity value, for printing.
    pub fn value(&self, o: usize, a: usize, b: usize) -> f64 {
        let (o, a, b) = (o as f64, a as f64, b as f64);
        match self.measure {
            Measure::Jaccard => o / (a + b - o),
            Measure::Dice => 2.0 * o / (a + b),
            Measure::Cosine => o / (a * b).sqrt(),
            Measure::Overlap => o,
        }
    }

    /// The smallest size `b <= a` a set can have and still meet the threshold with a set of
    /// size `a`, or `None` when even `b = a` cannot.
    pub fn min_size(&self, a: usize) -> Option<usize> {
        if a == 0 || self.required_overlap(a, a) > a {
            return None;
        }
        // `required_overlap(a, b) <= b` is monotone in b for every measure.
        let (mut lo, mut hi) = (1, a);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.required_overlap(a, mid) <= mid {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(lo)
    }

    /// Probe prefix length of a record of size `a` (against smaller or equal records).
    pub fn probe_prefix(&self, a: usize) -> usize {
        match self.min_size(a) {
            Some(b) => a + 1 - self.required_overlap(a, b).min(a),
            None => 0,
        }
    }

    /// Index prefix length of a record of size `a` (probed by larger or equal records).
    pub fn index_prefix(&self, a: usize) -> usize {
        match self.min_size(a) {
            Some(_) => a + 1 - self.required_overlap(a, a).min(a),
            None => 0,
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Records as sorted token ranks, with their 1-based line numbers; `from_lines` gives them in
/// the join's processing order (by size, then line).
#[derive(Clone, Debug, Default)]
pub struct Records {
    /// Line number of each record (1-based).
    pub lines: Vec<u32>,
    /// Token ranks of each record, ascending (rarest first).
    pub tokens: Vec<Vec<u32>>,
}

impl Records {
    /// Tokenizes lines into words (split on white space); the k-th occurrence of a word in a
    /// line is a token of its own. Lines without a word are left out (they join nothing).
    pub fn from_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> Records {
        let mut vocabulary: Vocabulary<&'a str, RandomState> = Vocabulary::new();
        let mut raw: Vec<(u32, Vec<u32>)> = Vec::new();
        for (n, line) in lines.into_iter().enumerate() {
            vocabulary.start_record();
            let record: Vec<u32> =
                line.split_whitespace().map(|word| vocabulary.token(word)).collect();
            if !record.is_empty() {
                raw.push((n as u32 + 1, record));
            }
        }
        let rank = vocabulary.ranks();
        // In the join's processing order: by size, then line.
        raw.sort_by_key(|(line, tokens)| (tokens.len(), *line));
        let mut records = Records::default();
        for (line, mut tokens) in raw {
            tokens.iter_mut().for_each(|t| *t = rank[*t as usize]);
            tokens.sort_unstable();
            records.lines.push(line);
            records.tokens.push(tokens);
        }
        records
    }
}

/// Size of the intersection of two ascending token lists.
pub fn overlap(x: &[u32], y: &[u32]) -> usize {
    dupflow_operators::candidates::minhash::intersection(x, y)
}

/// The overlap of two ascending token lists if it reaches `need`, else `None`: a branch-free
/// merge that stops as soon as the tokens left cannot make up the difference.
pub fn overlap_at_least(x: &[u32], y: &[u32], need: usize) -> Option<usize> {
    let (mut i, mut j, mut o) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        if o + (x.len() - i).min(y.len() - j) < need {
            return None;
        }
        let (a, b) = (x[i], y[j]);
        o += usize::from(a == b);
        i += usize::from(a <= b);
        j += usize::from(b <= a);
    }
    (o >= need).then_some(o)
}

/// A lower bound of the Hamming distance |x Δ y| of two ascending token lists, found by
/// splitting both at the middle token of `y` and recursing to `max_depth` (PPJoin+'s suffix
/// filter). Stops early once the bound exceeds `hmax`.
pub fn suffix_filter(x: &[u32], y: &[u32], hmax: i64, depth: u32, max_depth: u32) -> i64 {
    let (lx, ly) = (x.len() as i64, y.len() as i64);
    if x.is_empty() || y.is_empty() {
        return lx + ly;
    }
    if depth > max_depth {
        return (lx - ly).abs();
    }
    let mid = y.len() / 2;
    let w = y[mid];
    let (yl, yr) = (&y[..mid], &y[mid + 1..]);
    let p = x.partition_point(|&t| t < w);
    let (xl, xr, diff) =
        if p < x.len() && x[p] == w { (&x[..p], &x[p + 1..], 0) } else { (&x[..p], &x[p..], 1) };
    let right = (xr.len() as i64 - yr.len() as i64).abs();
    let h = (xl.len() as i64 - yl.len() as i64).abs() + right + diff;
    if h > hmax {
        return h;
    }
    let hl = suffix_filter(xl, yl, hmax - right - diff, depth + 1, max_depth);
    let h = hl + right + diff;
    if h > hmax {
        return h;
    }
    let hr = suffix_filter(xr, yr, hmax - hl - diff, depth + 1, max_depth);
    hl + hr + diff
}

const PRUNED: i32 = -1;

/// Size bounds of a record of size `a`, computed once per size.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    /// Smallest size a partner can have (`usize::MAX`: the record joins nothing).
    min_size: usize,
    probe_prefix: usize,
    index_prefix: usize,
}

/// The self-join of `records`: every pair meeting `threshold`, sorted by `(x, y)`.
pub fn join(records: &Records, threshold: Threshold, algorithm: Algorithm) -> (Vec<Pair>, Stats) {
    // Processing order: by size, then line (`from_lines` gives them so).
    let mut order: Vec<u32> = (0..records.tokens.len() as u32).collect();
    let key = |r: u32| (records.tokens[r as usize].len(), records.lines[r as usize]);
    if !order.is_sorted_by_key(|&r| key(r)) {
        order.sort_unstable_by_key(|&r| key(r));
    }
    let tokens: Vec<&[u32]> =
        order.iter().map(|&r| records.tokens[r as usize].as_slice()).collect();
    let lines: Vec<u32> = order.iter().map(|&r| records.lines[r as usize]).collect();
    let sizes: Vec<u32> = tokens.iter().map(|t| t.len() as u32).collect();
    let max_size = sizes.last().map_or(0, |&s| s as usize);
    let bounds: Vec<Bounds> = (0..=max_size)
        .map(|a| Bounds {
            min_size: threshold.min_size(a).unwrap_or(usize::MAX),
            probe_prefix: threshold.probe_prefix(a),
            index_prefix: threshold.index_prefix(a),
        })
        .collect();

    // Inverted index of index prefixes: token → (record position in `order`, token position),
    // ascending by record, hence by size.
    let universe = tokens.iter().flat_map(|t| t.iter()).max().map_or(0, |&m| m as usize + 1);
    let index = FlatIndex::build(universe, || {
        tokens.iter().enumerate().flat_map(|(r, t)| {
            t[..bounds[t.len()].index_prefix]
                .iter()
                .enumerate()
                .map(move |(pos, &tok)| (tok, (r as u32, pos as u32)))
        })
    });

    // first_of_size[s]: the first record (in order) of size s or more.
    let first_of_size: Vec<u32> =
        (0..=max_size).map(|s| sizes.partition_point(|&z| (z as usize) < s) as u32).collect();
    let n = tokens.len();
    let join = Join {
        tokens: &tokens,
        sizes: &sizes,
        lines: &lines,
        index: &index,
        bounds: &bounds,
        first_of_size: &first_of_size,
        threshold,
        algorithm,
    };
    super::probe_all(
        n,
        || Scratch {
            counts: vec![0; n],
            touched: Vec::new(),
            alpha: Vec::new(),
            alpha_size: usize::MAX,
        },
        |scratch, x| join.probe(x, scratch),
    )
}

/// What every probe reads.
struct Join<'a> {
    tokens: &'a [&'a [u32]],
    sizes: &'a [u32],
    lines: &'a [u32],
    index: &'a FlatIndex<(u32, u32)>,
    bounds: &'a [Bounds],
    first_of_size: &'a [u32],
    threshold: Threshold,
    algorithm: Algorithm,
}

/// A probing thread's state: overlap counts so far (`PRUNED`: filtered out), the records
/// touched, and the required overlap with each partner size of a record of `alpha_size`.
struct Scratch {
    counts: Vec<i32>,
    touched: Vec<u32>,
    alpha: Vec<u32>,
    alpha_size: usize,
}

impl Join<'_> {
    fn probe(&self, x: usize, scratch: &mut Scratch) -> (Vec<Pair>, Stats) {
        let Scratch { counts, touched, alpha, alpha_size } = scratch;
        let tx = self.tokens[x];
        let a = tx.len();
        let mut stats = Stats::default();
        let mut out = Vec::new();
        let bounds = self.bounds[a];
        let min_size = bounds.min_size;
        if min_size == usize::MAX {
            return (out, stats);
        }
        // alpha[b - min_size]: the overlap a partner of size b must reach (records come in size
        // order, so it is recomputed only when the size changes).
        if *alpha_size != a {
            alpha.clear();
            alpha.extend((min_size..=a).map(|b| self.threshold.required_overlap(a, b) as u32));
            *alpha_size = a;
        }
        for (px, &tok) in tx[..bounds.probe_prefix].iter().enumerate() {
            let list = self.index.list(tok);
            // Records are in size order, so the partners of a fitting size before x are a
            // range of each list: from the first record of size `min_size` up to x.
            let first = self.first_of_size[min_size];
            let lo = list.partition_point(|&(r, _)| r < first);
            let hi = list.partition_point(|&(r, _)| (r as usize) < x);
            for &(y, py) in list.get(lo..hi).unwrap_or(&[]) {
                let c = counts[y as usize];
                if c == PRUNED {
                    continue;
                }
                let b = self.sizes[y as usize] as usize;
                let keep = match self.algorithm {
                    Algorithm::AllPairs => true,
                    Algorithm::PpJoin | Algorithm::PpJoinPlus { .. } => {
                        let need = alpha[b - min_size] as usize;
                        let ubound = 1 + (a - px - 1).min(b - py as usize - 1);
                        let mut keep = c as usize + ubound >= need;
                        if let (true, 0, Algorithm::PpJoinPlus { max_depth }) =
                            (keep, c, self.algorithm)
                        {
                            let hmax = (a + b) as i64 - 2 * need as i64 - (px + py as usize) as i64;
                            let ty = self.tokens[y as usize];
                            keep = hmax >= 0
                                && suffix_filter(
                                    &tx[px + 1..],
                                    &ty[py as usize + 1..],
                                    hmax,
                                    1,
                                    max_depth,
                                ) <= hmax;
                        }
                        keep
                    }
                };
                if c == 0 {
                    touched.push(y);
                }
                counts[y as usize] = if keep { c + 1 } else { PRUNED };
            }
        }
        for &y in touched.iter() {
            if counts[y as usize] > 0 {
                stats.candidates += 1;
                stats.verifications += 1;
                let ty = self.tokens[y as usize];
                if let Some(o) = overlap_at_least(tx, ty, alpha[ty.len() - min_size] as usize) {
                    stats.results += 1;
                    out.push(Pair::new(
                        self.lines[x],
                        self.lines[y as usize],
                        self.threshold.value(o, a, ty.len()),
                    ));
                }
            }
            counts[y as usize] = 0;
        }
        touched.clear();
        (out, stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(measure: Measure, s: &str) -> Threshold {
        Threshold::parse(measure, s).unwrap()
    }

    #[test]
    fn thresholds_are_exact() {
        // 4 of 5 tokens shared by sets of 5: Jaccard 4/6, Dice 0.8, cosine 0.8, all exact.
        assert!(t(Measure::Dice, "0.8").passes(4, 5, 5));
        assert!(t(Measure::Cosine, "0.8").passes(4, 5, 5));
        assert!(!t(Measure::Cosine, "0.8000001").passes(4, 5, 5));
        assert!(t(Measure::Jaccard, "0.5").passes(2, 3, 3)); // 2/4
        assert!(!t(Measure::Jaccard, "0.51").passes(2, 3, 3));
        assert_eq!(t(Measure::Jaccard, "0.8").required_overlap(10, 10), 9); // 9/11 >= 0.8 > 8/12
        assert_eq!(t(Measure::Overlap, "3").required_overlap(10, 4), 3);
        assert!(Threshold::parse(Measure::Overlap, "2.5").is_err());
        assert!(Threshold::parse(Measure::Jaccard, "1.2").is_err());
        assert!(Threshold::parse(Measure::Jaccard, "0").is_err());
        assert!(Threshold::parse(Measure::Jaccard, "abc").is_err());
        assert_eq!(t(Measure::Jaccard, ".85"), t(Measure::Jaccard, "0.850"));
    }

    #[test]
    fn size_bounds() {
        let j = t(Measure::Jaccard, "0.8");
        assert_eq!(j.min_size(10), Some(8));
        assert_eq!(j.probe_prefix(10), 3); // 10 - ceil(0.8 * 10) + 1
        assert_eq!(j.index_prefix(10), 2); // 10 - ceil(2 * 0.8 / 1.8 * 10) + 1
        let o = t(Measure::Overlap, "3");
        assert_eq!(o.min_size(2), None);
        assert_eq!(o.min_size(5), Some(3));
    }

    #[test]
    fn suffix_filter_is_a_lower_bound() {
        let x = [1, 2, 3, 5, 8, 9];
        let y = [2, 3, 4, 8, 10];
        let exact = (x.len() + y.len() - 2 * overlap(&x, &y)) as i64;
        for depth in 0..4 {
            assert!(suffix_filter(&x, &y, 100, 1, depth) <= exact);
        }
        assert_eq!(suffix_filter(&x, &y, 100, 1, 10), exact);
    }

    #[test]
    fn repeated_words_are_distinct_tokens() {
        let r = Records::from_lines(["a a b", "a b", ""]);
        assert_eq!(r.lines, vec![2, 1]); // by size, then line
        assert_eq!(r.tokens[1].len(), 3);
        assert_eq!(overlap(&r.tokens[0], &r.tokens[1]), 2);
    }

    #[test]
    fn overlap_at_least_is_exact_when_it_answers() {
        let x = [1, 2, 3, 5, 8, 9];
        let y = [2, 3, 4, 8, 10];
        assert_eq!(overlap(&x, &y), 3);
        for need in 0..=3 {
            assert_eq!(overlap_at_least(&x, &y, need), Some(3));
        }
        assert_eq!(overlap_at_least(&x, &y, 4), None);
        assert_eq!(overlap_at_least(&x, &[], 0), Some(0));
        assert_eq!(overlap_at_least(&[7], &[7], 1), Some(1));
    }
}
