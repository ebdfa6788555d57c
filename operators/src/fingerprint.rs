//! Fingerprint: Huang et al.'s bucketed sentence fingerprints.
//!
//! A page's distinct sentence keys (fingerprintable, non-template) are spread into `m` buckets
//! by value (`key mod m`); in each bucket the `k` smallest keys are combined into one bucket
//! fingerprint. A bucket with fewer than `k` keys emits nothing. Two pages that share most
//! sentences share the `k` smallest of most buckets, so they share fingerprints; a page with too
//! few sentences to fill any bucket emits one whole-page fingerprint instead (it then only meets
//! pages with exactly its sentences).

use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;
use differential_dataflow::lattice::Lattice;

use crate::page::PageId;
use crate::sentence::mix64;

/// Settings of the fingerprint stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FingerprintConfig {
    /// `m`: number of buckets.
    pub buckets: u32,
    /// `k`: smallest hashes per bucket combined into a fingerprint.
    pub hashes_per_bucket: u32,
}

impl Default for FingerprintConfig {
    fn default() -> Self {
        FingerprintConfig { buckets: 8, hashes_per_bucket: 3 }
    }
}

/// Computes a page's fingerprints from its sentence keys (any order, duplicates allowed).
/// The result is sorted and free of duplicates.
pub fn fingerprints(keys: &[u64], config: &FingerprintConfig) -> Vec<u64> {
    let m = config.buckets.max(1) as u64;
    let k = config.hashes_per_bucket.max(1) as usize;
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut buckets: Vec<Vec<u64>> = vec![Vec::with_capacity(k); m as usize];
    for &key in &sorted {
        let bucket = &mut buckets[(key % m) as usize];
        if bucket.len() < k {
            bucket.push(key);
        }
    }
    let mut out: Vec<u64> = buckets
        .iter()
        .enumerate()
        .filter(|(_, b)| b.len() == k)
        .map(|(i, b)| combine(i as u64, b))
        .collect();
    if out.is_empty() && !sorted.is_empty() {
        out.push(combine(u64::MAX, &sorted));
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn combine(bucket: u64, keys: &[u64]) -> u64 {
    keys.iter().fold(mix64(bucket ^ 0x5bd1_e995), |acc, &key| mix64(acc ^ key).rotate_left(17))
}

/// The fingerprint operator: `(page, sentence keys)` to `(fingerprint, page)` records.
pub trait Fingerprint<'scope, T: Timestamp + Lattice> {
    /// Emits one `(fingerprint, page)` record per fingerprint of each page.
    ///
    /// # Examples
    /// ```
    /// use differential_dataflow::input::Input;
    /// use dupflow_operators::fingerprint::{Fingerprint, FingerprintConfig};
    /// use dupflow_operators::PageId;
    /// timely::example(|scope| {
    ///     let page = PageId { date: 0, hash: 1 };
    ///     scope.new_collection_from(vec![(page, vec![1u64, 2, 3, 4])]).1
    ///          .fingerprints(FingerprintConfig::default())
    ///          .inspect(|x| assert_eq!((x.0).1, PageId { date: 0, hash: 1 }));
    /// });
    /// ```
    fn fingerprints(self, config: FingerprintConfig) -> VecCollection<'scope, T, (u64, PageId), isize>;
}

impl<'scope, T: Timestamp + Lattice> Fingerprint<'scope, T> for VecCollection<'scope, T, (PageId, Vec<u64>), isize> {
    fn fingerprints(self, config: FingerprintConfig) -> VecCollection<'scope, T, (u64, PageId), isize> {
        self.flat_map(move |(page, keys)| {
            fingerprints(&keys, &config).into_iter().map(move |fp| (fp, page))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(m: u32, k: u32) -> FingerprintConfig {
        FingerprintConfig { buckets: m, hashes_per_bucket: k }
    }

    #[test]
    fn a_bucket_needs_k_hashes() {
        // m = 2: bucket 0 gets {2, 4, 6, 8}, bucket 1 gets {1, 3}.
        let fps = fingerprints(&[1, 2, 3, 4, 6, 8], &config(2, 3));
        assert_eq!(fps.len(), 1, "only the even bucket has 3 hashes");
        assert_eq!(fps, vec![combine(0, &[2, 4, 6])]);
    }

    #[test]
    fn only_the_k_smallest_count() {
        // Adding a larger key to a full bucket changes nothing.
        let a = fingerprints(&[2, 4, 6, 1, 3, 5], &config(2, 3));
        let b = fingerprints(&[2, 4, 6, 1, 3, 5, 100, 99], &config(2, 3));
        assert_eq!(a, b);
        // A smaller key changes its bucket's fingerprint only.
        let c = fingerprints(&[0, 2, 4, 6, 1, 3, 5], &config(2, 3));
        assert_eq!(a.iter().filter(|f| c.contains(f)).count(), 1);
    }

    #[test]
    fn order_and_duplicates_do_not_matter() {
        assert_eq!(fingerprints(&[5, 1, 3, 3, 1], &config(1, 3)), fingerprints(&[1, 3, 5], &config(1, 3)));
    }

    #[test]
    fn too_few_sentences_give_one_whole_page_fingerprint() {
        let fps = fingerprints(&[7, 9], &config(4, 3));
        assert_eq!(fps, vec![combine(u64::MAX, &[7, 9])]);
        assert!(fingerprints(&[], &config(4, 3)).is_empty());
    }

    #[test]
    fn bucket_index_is_part_of_the_fingerprint() {
        assert_ne!(combine(0, &[1, 2, 3]), combine(1, &[1, 2, 3]));
    }
}
