//! The word filters run before a word alignment: the multiset intersection of the two pages'
//! words and of their word bigrams, counted in a worker's scratch tables.

use super::scratch::{with_word_table, CHECK_EVERY, WORD_SCRATCH};
use crate::ingest::page::Word;

/// The multiset intersection of two word sequences (exact).
#[cfg(test)]
pub(super) fn word_intersection(a: &[Word], b: &[Word]) -> u64 {
    word_intersection_reaching(a, b, 0).expect("every intersection reaches 0")
}

/// The multiset intersection of two word sequences (exact) when it is at least `needed`, else
/// `None`: the shorter's words counted in the word table, the longer's taken from the counts,
/// which stop once the words left of the longer cannot bring the count to `needed` (a pair far
/// from the bag filter's bound is rejected in part of the work).
pub(super) fn word_intersection_reaching(a: &[Word], b: &[Word], needed: u64) -> Option<u64> {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    with_word_table(|counts| {
        for &w in short {
            counts[w as usize] += 1;
        }
        let mut common = 0u64;
        for (t, &w) in long.iter().enumerate() {
            // Stopped here, the count stays below `needed`: the table is still cleared below.
            if t % CHECK_EVERY == 0 && common + ((long.len() - t) as u64) < needed {
                break;
            }
            let count = &mut counts[w as usize];
            if *count > 0 {
                *count -= 1;
                common += 1;
            }
        }
        for &w in short {
            counts[w as usize] = 0;
        }
        (common >= needed).then_some(common)
    })
}

/// The longer sequence's bigrams that the other lacks (`shared_bigrams`): an edit breaks at
/// most two of them, so D ≥ half of these.
#[cfg(test)]
pub(super) fn unshared_bigrams(a: &[Word], b: &[Word]) -> u64 {
    (a.len().max(b.len()) as u64).saturating_sub(shared_bigrams(a, b) + 1)
}

/// `shared_bigrams` of two word sequences.
#[cfg(test)]
pub(super) fn shared_bigrams(a: &[Word], b: &[Word]) -> u64 {
    shared_bigrams_reaching(a, b, 0).expect("every count reaches 0")
}

/// The bigram filter: the multiset intersection of the two sequences' word bigrams. An
/// alignment of D insertions and deletions keeps all of A's N − 1 bigrams but those touching a
/// deleted word (two each) or split by an inserted one (one each), so at least N − 1 − 2D are
/// shared (and M − 1 − 2D): a pair sharing fewer than max(N, M) − 1 − 2·budget bigrams cannot
/// be within the budget. Bag-similar texts that are not the same text (common words in another
/// order) end here, before Myers runs to its budget. Exact: the shorter sequence's bigrams are
/// counted in an open-addressing table (an entry is the bigram and its count), the longer's
/// taken from it. `None` when the count is below `needed`: it stops once the longer's bigrams
/// left cannot bring it there.
pub(super) fn shared_bigrams_reaching(a: &[Word], b: &[Word], needed: u64) -> Option<u64> {
    const EMPTY: u64 = u64::MAX;
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() < 2 {
        return (needed == 0).then_some(0);
    }
    let bigram = |p: &[Word]| (p[0] as u32) << 16 | p[1] as u32;
    WORD_SCRATCH.with(|s| {
        let table = &mut s.borrow_mut().bigrams;
        // At most half full: a probe ends within a few slots.
        let size = (2 * (short.len() - 1)).next_power_of_two().max(16);
        let shift = 64 - size.trailing_zeros();
        table.clear();
        table.resize(size, EMPTY);
        let start = |key: u32| ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
        // An entry: the bigram in the high half, its count in the low (a count is below 2^32 − 1,
        // so no entry is EMPTY).
        for p in short.windows(2) {
            let key = bigram(p);
            let mut i = start(key);
            loop {
                if table[i] == EMPTY {
                    table[i] = (key as u64) << 32 | 1;
                    break;
                }
                if (table[i] >> 32) as u32 == key {
                    table[i] += 1;
                    break;
                }
                i = (i + 1) & (size - 1);
            }
        }
        let mut common = 0u64;
        let pairs = long.len() - 1;
        for (t, p) in long.windows(2).enumerate() {
            if t % CHECK_EVERY == 0 && common + ((pairs - t) as u64) < needed {
                return None;
            }
            let key = bigram(p);
            let mut i = start(key);
            while table[i] != EMPTY {
                if (table[i] >> 32) as u32 == key {
                    if table[i] as u32 > 0 {
                        table[i] -= 1;
                        common += 1;
                    }
                    break;
                }
                i = (i + 1) & (size - 1);
            }
        }
        (common >= needed).then_some(common)
    })
}
