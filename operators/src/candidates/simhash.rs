//! SimHash (Charikar 2002) with permuted-table search (Manku, Jain, Das Sarma 2007): the
//! baseline of Google's crawler.
//!
//! A page's 64-bit SimHash sums ±weight over the bits of each shingle's hash (weight = the
//! shingle's count) and keeps the sign. Near-duplicates are pages within Hamming distance `k`.
//! Splitting the 64 bits into `k + 1` blocks, two hashes within distance `k` agree on at least one
//! whole block (pigeonhole), so grouping pages by `(block index, block bits)` finds every such
//! pair; each group's pairs are then checked for the distance itself.

use std::collections::HashMap;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::ingest::page::PageId;
use crate::runtime::hashing::mix64;

/// Settings of `fingerprint.type = "simhash"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimhashConfig {
    /// Words per shingle.
    pub shingle_words: u32,
    /// k: largest Hamming distance of near-duplicates (Manku et al. used 3).
    pub max_distance: u32,
}

impl Default for SimhashConfig {
    fn default() -> Self {
        SimhashConfig { shingle_words: 3, max_distance: 3 }
    }
}

/// The SimHash of a sequence of shingle hashes (a repeated shingle weighs its count).
pub fn simhash(shingles: &[u64]) -> u64 {
    let mut counts: HashMap<u64, i64> = HashMap::new();
    for &s in shingles {
        *counts.entry(s).or_default() += 1;
    }
    let mut v = [0i64; 64];
    for (&s, &w) in &counts {
        let h = mix64(s);
        for (bit, slot) in v.iter_mut().enumerate() {
            *slot += if h >> bit & 1 == 1 { w } else { -w };
        }
    }
    v.iter().enumerate().fold(0u64, |acc, (bit, &x)| if x > 0 { acc | 1 << bit } else { acc })
}

pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Keys of the `k + 1` blocks of a hash (block index in the high bits).
pub fn block_keys(hash: u64, max_distance: u32) -> Vec<u64> {
    let blocks = (max_distance + 1).min(64) as u64;
    (0..blocks)
        .map(|i| {
            let (lo, hi) = (64 * i / blocks, 64 * (i + 1) / blocks);
            let width = hi - lo;
            let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
            mix64((i << 56) ^ ((hash >> lo) & mask))
        })
        .collect()
}

/// The SimHash operator: `(page, simhash)` to the edges between pages within `max_distance`.
pub trait SimhashEdges<'scope, T: Timestamp + Lattice> {
    fn simhash_edges(
        self,
        max_distance: u32,
        max_group_pages: u32,
    ) -> VecCollection<'scope, T, (PageId, PageId), isize>;
}

impl<'scope, T: Timestamp + Lattice + Ord> SimhashEdges<'scope, T>
    for VecCollection<'scope, T, (PageId, u64), isize>
{
    fn simhash_edges(
        self,
        max_distance: u32,
        max_group_pages: u32,
    ) -> VecCollection<'scope, T, (PageId, PageId), isize> {
        self.flat_map(move |(page, hash)| {
            block_keys(hash, max_distance).into_iter().map(move |k| (k, (page, hash)))
        })
        .reduce(move |_block, group, output| {
            if group.len() > max_group_pages as usize {
                return;
            }
            for (i, &((a, ha), _)) in group.iter().enumerate() {
                for &((b, hb), _) in &group[i + 1..] {
                    if a != b && hamming(*ha, *hb) <= max_distance {
                        output.push(((*a.min(b), *a.max(b)), 1isize));
                    }
                }
            }
        })
        .map(|(_block, edge)| edge)
        .distinct()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn identical_inputs_hash_alike_and_order_does_not_matter() {
        let a: Vec<u64> = (0..200).collect();
        let mut b = a.clone();
        b.reverse();
        assert_eq!(simhash(&a), simhash(&b));
    }

    #[test]
    fn small_changes_move_few_bits_and_unrelated_pages_about_half() {
        let a: Vec<u64> = (0..400).collect();
        let mut b = a.clone();
        b[7] = 100_000;
        assert!(hamming(simhash(&a), simhash(&b)) <= 6);
        let c: Vec<u64> = (1_000_000..1_000_400).collect();
        let d = hamming(simhash(&a), simhash(&c));
        assert!((16..=48).contains(&d), "unrelated pages at distance {d}");
    }

    proptest! {
        #[test]
        fn pages_within_k_share_a_block(a in any::<u64>(), flips in proptest::collection::vec(0u32..64, 0..4), k in 1u32..6) {
            let mut b = a;
            for f in flips.iter().take(k as usize) {
                b ^= 1 << f;
            }
            prop_assume!(hamming(a, b) <= k);
            let (ka, kb) = (block_keys(a, k), block_keys(b, k));
            prop_assert!(ka.iter().zip(&kb).any(|(x, y)| x == y));
        }

        #[test]
        fn hamming_is_a_metric(a in any::<u64>(), b in any::<u64>(), c in any::<u64>()) {
            prop_assert_eq!(hamming(a, b), hamming(b, a));
            prop_assert_eq!(hamming(a, a), 0);
            prop_assert!(hamming(a, c) <= hamming(a, b) + hamming(b, c));
        }
    }
}
