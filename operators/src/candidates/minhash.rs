//! MinHash with LSH banding: the baseline that MinHash dedup pipelines use (datatrove,
//! text-dedup, NeMo Curator).
//!
//! A page is its set of word n-gram shingles (hashes from the sentence stage). Its signature is
//! `bands × rows` minimum hashes under as many independent hash functions (a seeded 64-bit mix of
//! the shingle); band `j` hashes rows `j·r .. (j+1)·r` into one key. Two pages with Jaccard
//! similarity J share a given row with probability J, so a band with probability J^r and at least
//! one band with probability 1 − (1 − J^r)^b: the S-curve the settings choose.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::ingest::page::PageId;
use crate::runtime::hashing::mix64;
pub use crate::runtime::sorted::intersection;

/// Settings of `fingerprint.type = "minhash"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MinhashConfig {
    /// Words per shingle.
    pub shingle_words: u32,
    /// b: bands (band keys per page).
    pub bands: u32,
    /// r: rows (minimum hashes) per band.
    pub rows: u32,
}

impl Default for MinhashConfig {
    fn default() -> Self {
        // datatrove's defaults: 5-grams, 14 bands of 8.
        MinhashConfig { shingle_words: 5, bands: 14, rows: 8 }
    }
}

fn seeded(shingle: u64, i: u64) -> u64 {
    mix64(
        shingle ^ mix64(i.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(0x632b_e59b_d9b4_e019)),
    )
}

/// The signature: `n` minimum hashes of the shingle set (u64::MAX each for an empty set).
pub fn signature(shingles: &[u64], n: usize) -> Vec<u64> {
    let mut sig = vec![u64::MAX; n];
    for &s in shingles {
        for (i, slot) in sig.iter_mut().enumerate() {
            let h = seeded(s, i as u64);
            if h < *slot {
                *slot = h;
            }
        }
    }
    sig
}

/// Band keys of a page (none for a page without shingles).
pub fn band_keys(shingles: &[u64], config: &MinhashConfig) -> Vec<u64> {
    if shingles.is_empty() {
        return Vec::new();
    }
    let (b, r) = (config.bands.max(1) as usize, config.rows.max(1) as usize);
    let sig = signature(shingles, b * r);
    let mut keys: Vec<u64> = sig
        .chunks(r)
        .enumerate()
        .map(|(band, rows)| {
            rows.iter().fold(mix64(band as u64 ^ 0xb5ad_4ece_da1c_e2a9), |acc, &h| mix64(acc ^ h))
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Exact Jaccard similarity of two sorted, distinct sets.
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let common = intersection(a, b);
    common as f64 / (a.len() + b.len() - common) as f64
}

/// The MinHash operator: `(page, shingles)` to `(band key, page)`.
pub trait MinhashBands<'scope, T: Timestamp + Lattice> {
    fn minhash_bands(self, config: MinhashConfig)
        -> VecCollection<'scope, T, (u64, PageId), isize>;
}

impl<'scope, T: Timestamp + Lattice> MinhashBands<'scope, T>
    for VecCollection<'scope, T, (PageId, Vec<u64>), isize>
{
    fn minhash_bands(
        self,
        config: MinhashConfig,
    ) -> VecCollection<'scope, T, (u64, PageId), isize> {
        self.flat_map(move |(page, shingles)| {
            band_keys(&shingles, &config).into_iter().map(move |k| (k, page))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(range: std::ops::Range<u64>) -> Vec<u64> {
        range.map(mix64).collect::<std::collections::BTreeSet<_>>().into_iter().collect()
    }

    #[test]
    fn a_row_collides_with_probability_jaccard() {
        // |A ∩ B| = 60, |A ∪ B| = 140: J = 0.4286.
        let (a, b) = (set(0..100), set(40..140));
        let j = jaccard(&a, &b);
        assert!((j - 60.0 / 140.0).abs() < 1e-12);
        let n = 4000;
        let (sa, sb) = (signature(&a, n), signature(&b, n));
        let agree = sa.iter().zip(&sb).filter(|(x, y)| x == y).count() as f64 / n as f64;
        // Binomial standard deviation sqrt(j(1-j)/n) ≈ 0.0078: allow 4 of them.
        assert!((agree - j).abs() < 0.032, "estimate {agree} vs {j}");
    }

    #[test]
    fn bands_follow_the_s_curve() {
        let config = MinhashConfig { shingle_words: 5, bands: 4, rows: 2 };
        for (overlap, trials) in [(90u64, 200u64), (30, 200)] {
            let mut hits = 0;
            for t in 0..trials {
                let base = t * 1000;
                let (a, b) =
                    (set(base..base + 100), set(base + 100 - overlap..base + 200 - overlap));
                let j = jaccard(&a, &b);
                let (ka, kb) = (band_keys(&a, &config), band_keys(&b, &config));
                hits += ka.iter().any(|k| kb.contains(k)) as u64;
                let _ = j;
            }
            let j = overlap as f64 / (200 - overlap) as f64;
            let expected = 1.0 - (1.0 - j.powi(2)).powi(4);
            let got = hits as f64 / trials as f64;
            assert!((got - expected).abs() < 0.12, "J {j}: {got} vs {expected}");
        }
    }

    #[test]
    fn identical_sets_share_every_band_and_empty_pages_none() {
        let a = set(0..50);
        assert_eq!(
            band_keys(&a, &MinhashConfig::default()),
            band_keys(&a.clone(), &MinhashConfig::default())
        );
        assert_eq!(band_keys(&a, &MinhashConfig::default()).len(), 14);
        assert!(band_keys(&[], &MinhashConfig::default()).is_empty());
    }

    #[test]
    fn jaccard_bounds() {
        assert_eq!(jaccard(&[1, 2], &[1, 2]), 1.0);
        assert_eq!(jaccard(&[1], &[2]), 0.0);
        assert_eq!(jaccard(&[], &[]), 1.0);
    }
}
