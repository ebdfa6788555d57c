//! The bit-parallel LCS (Allison–Dix, Hyyrö): the length of the longest common subsequence
//! of two token sequences, a machine word of the shorter one at a time, in a band when only a
//! bound is asked.

use super::scratch::{with_word_table, CHECK_EVERY};
use crate::ingest::page::Word;

/// A token of the sequences `bounded_distance` compares: how the bit-parallel LCS finds a
/// token's row (the positions of the shorter sequence that hold it).
pub trait Token: Ord {
    /// The length of the LCS of `a` and `b` when it is at least `needed`, else some length
    /// below `needed` (`bit_parallel_lcs_at_least`).
    fn lcs_at_least(a: &[Self], b: &[Self], needed: u64) -> u64
    where
        Self: Sized,
    {
        bit_parallel_lcs_at_least(a, b, needed)
    }
}

/// A sentence's token (its key, its index within the sentence's weight): rows found by binary
/// search over the distinct tokens.
impl Token for (u64, u16) {}

/// A word: rows found in the worker's table of the 65,536 words, no search.
impl Token for Word {
    fn lcs_at_least(a: &[Self], b: &[Self], needed: u64) -> u64 {
        bit_parallel_lcs_words(a, b, needed)
    }
}

/// The length of the LCS of two sequences, by the bit-parallel algorithm of Allison and Dix
/// (Hyyrö's formulation): a bit per position of the shorter sequence, a step per token of the
/// longer, 64 positions an instruction. A token of the longer sequence absent from the shorter
/// changes nothing and is skipped. Rows by binary search over the shorter sequence's distinct
/// tokens.
pub fn bit_parallel_lcs<T: Ord>(a: &[T], b: &[T]) -> u64 {
    bit_parallel_lcs_at_least(a, b, 0)
}

/// `bit_parallel_lcs` when the LCS is at least `needed`; otherwise it may stop as soon as the
/// tokens left cannot bring it there, and returns a length below `needed`.
pub fn bit_parallel_lcs_at_least<T: Ord>(a: &[T], b: &[T], needed: u64) -> u64 {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut distinct: Vec<&T> = short.iter().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let row = |w: &T| distinct.binary_search(&w).ok().map(|r| r as u32);
    let rows: Vec<u32> = short.iter().map(|w| row(w).expect("a token of the sequence")).collect();
    lcs_of_rows(&rows, distinct.len(), long.iter().map(row), needed)
}

/// `bit_parallel_lcs_at_least` of two word sequences, rows from the worker's word table (the
/// binary searches took 8% of a 100k-page run).
pub fn bit_parallel_lcs_words(a: &[Word], b: &[Word], needed: u64) -> u64 {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    with_word_table(|table| {
        // A word's row plus one; 0 for a word the shorter sequence lacks.
        let mut distinct = 0u32;
        let rows: Vec<u32> = short
            .iter()
            .map(|&w| {
                let slot = &mut table[w as usize];
                if *slot == 0 {
                    distinct += 1;
                    *slot = distinct;
                }
                *slot - 1
            })
            .collect();
        let lcs = lcs_of_rows(
            &rows,
            distinct as usize,
            long.iter().map(|&w| table[w as usize].checked_sub(1)),
            needed,
        );
        for &w in short {
            table[w as usize] = 0;
        }
        lcs
    })
}

/// The bit-parallel LCS over rows: `short` the row of each position of the shorter sequence
/// (`rows` distinct), `long` the row of each token of the longer (None: absent from the
/// shorter). Every `CHECK_EVERY` tokens the count so far plus the tokens left bounds the LCS
/// from above: below `needed`, it stops and returns the count so far (below `needed` too). A
/// pair far from the threshold is decided in part of the work.
pub(super) fn lcs_of_rows(
    short: &[u32],
    rows: usize,
    long: impl ExactSizeIterator<Item = Option<u32>>,
    needed: u64,
) -> u64 {
    if short.is_empty() {
        return 0;
    }
    BIT_SCRATCH.with(|scratch| {
        let (matches, v) = &mut *scratch.borrow_mut();
        let lcs = lcs_of_rows_in(short, rows, long, needed, matches, v);
        // What a rare giant pair needed is not kept for the rest of the run.
        if matches.capacity() > BIT_SCRATCH_KEPT {
            *matches = Vec::new();
        }
        lcs
    })
}

/// The match vectors kept between comparisons, at most (8 MB a worker): pages of up to ~8,000
/// words.
pub(super) const BIT_SCRATCH_KEPT: usize = 1 << 20;

thread_local! {
    /// The bit-parallel LCS's match vectors and state, kept from one comparison to the next: a
    /// pair of 2,000-word pages needs ~200 KB of match vectors, and a fresh zeroed allocation of
    /// that size a comparison came back from the kernel as new pages (their faults and clearing
    /// were ~5% of a 1M-page run's samples).
    static BIT_SCRATCH: std::cell::RefCell<(Vec<u64>, Vec<u64>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// The band of the bit-parallel count (Ukkonen's, for LCS): how far below and above token t of
/// the longer sequence (`m` tokens) the positions of the shorter (`n ≤ m`) lie that an
/// alignment reaching an LCS of `needed` may have consumed before it. Such an alignment has at
/// most D = n + m − 2·needed insertions and deletions: with y insertions (tokens of the longer
/// left out) and x deletions (positions of the shorter left out), y − x = m − n and x + y ≤ D,
/// and the consumed position i stays within t − y ≤ i ≤ t + x. The count steps only the blocks
/// holding those positions; a match elsewhere counts as absent, so what it counts is an LCS over
/// fewer matches, at most the whole LCS and at least the band's. When the whole LCS reaches
/// `needed`, an alignment of it lies in the band, so the count is exact; otherwise it is below
/// `needed` too. A similar pair's D is a small part of its length: at the word τ 0.8, a band of
/// two fifths of the shorter page. `needed` 0 (or no alignment reaching it): the whole width.
pub(super) fn band(n: u64, m: u64, needed: u64) -> (u64, u64) {
    let d = (n + m).saturating_sub(2 * needed);
    let skew = m - n;
    if d < skew {
        return (m, n);
    }
    ((d + skew) / 2, (d - skew) / 2)
}

/// `lcs_of_rows` in the worker's scratch vectors (`matches`, `v`: any content, any length).
pub(super) fn lcs_of_rows_in(
    short: &[u32],
    rows: usize,
    long: impl ExactSizeIterator<Item = Option<u32>>,
    needed: u64,
    matches: &mut Vec<u64>,
    v: &mut Vec<u64>,
) -> u64 {
    let blocks = short.len().div_ceil(64);
    // The positions of each row of the shorter sequence, as a bit vector.
    matches.clear();
    matches.resize(rows * blocks, 0);
    for (i, &row) in short.iter().enumerate() {
        matches[row as usize * blocks + i / 64] |= 1 << (i % 64);
    }
    // A zero bit is a position of the shorter sequence in the LCS so far. The bits past its
    // end stay set (`V & !M` keeps them whatever the carry).
    let count = |v: &[u64]| v.iter().map(|v| v.count_zeros() as u64).sum::<u64>();
    v.clear();
    v.resize(blocks, u64::MAX);
    let len = long.len();
    let (below, above) = band(short.len() as u64, len as u64, needed);
    for (t, row) in long.enumerate() {
        if needed > 0 && t % CHECK_EVERY == 0 && t > 0 {
            let so_far = count(v.as_slice());
            // Each token left adds at most one to the LCS.
            if so_far + ((len - t) as u64) < needed {
                return so_far;
            }
        }
        let Some(row) = row else { continue };
        // The blocks of the band's positions at this token (see `band`); the blocks below
        // them stay as they are (no carry leaves them), and those above are still all set (the
        // band only moves up), which a carry leaves set.
        let first = (t as u64).saturating_sub(below) as usize / 64;
        let last = ((t as u64).saturating_add(above) / 64).min(blocks as u64 - 1) as usize;
        let m = &matches[row as usize * blocks + first..=row as usize * blocks + last];
        // V' = (V + (V & M)) | (V & !M), the addition carried across blocks.
        let mut carry = false;
        for (v, &m) in v[first..=last].iter_mut().zip(m) {
            let u = *v & m;
            let (sum, c1) = v.overflowing_add(u);
            let (sum, c2) = sum.overflowing_add(u64::from(carry));
            carry = c1 || c2;
            *v = sum | (*v & !m);
        }
    }
    count(v.as_slice())
}
