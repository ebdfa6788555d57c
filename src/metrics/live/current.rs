//! The row each page is shown with, by page: the rows in one vector found through a table of
//! their places (`runtime::placed`), where a `HashMap<PageId, ClusterRow>` holds each page's id
//! twice (the key, and the row's own) in a 104-byte bucket at 7/16 to 7/8 full: at a million
//! pages, about 100 MB against 254.

use dupflow_operators::runtime::placed::{KeyOf, Placed};
use dupflow_operators::PageId;

use crate::types::ClusterRow;

impl KeyOf for ClusterRow {
    type Key = PageId;
    fn key(&self) -> &PageId {
        &self.page
    }
}

/// Rows by page: at most one a page.
pub(super) type Current = Placed<ClusterRow>;

#[cfg(test)]
mod tests {
    use super::*;
    use dupflow_operators::runtime::hashing::mix64;
    use std::collections::HashMap;

    fn row(page: u64, cluster: u64) -> ClusterRow {
        super::super::tests::row(page, cluster, cluster)
    }

    /// Insertions, replacements and removals in a random order, against a `HashMap`: the same
    /// rows found, and the vector shrinks as pages go.
    #[test]
    fn rows_by_page_are_those_a_hash_map_holds() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut below = |n: u64| {
            seed = mix64(seed.wrapping_add(1));
            seed % n
        };
        let (mut current, mut oracle) = (Current::default(), HashMap::new());
        for step in 0..20_000u64 {
            if step == 15_000 {
                // Most pages go.
                for page in 200..3_000 {
                    let id = row(page, 0).page;
                    assert_eq!(current.remove(&id), oracle.remove(&id), "page {page}");
                }
            }
            let page = below(if step < 15_000 { 3_000 } else { 200 });
            if below(3) == 0 {
                let id = row(page, 0).page;
                assert_eq!(current.remove(&id), oracle.remove(&id), "step {step}");
            } else {
                let row = row(page, below(50));
                assert_eq!(
                    current.insert(row.clone()),
                    oracle.insert(row.page, row),
                    "step {step}"
                );
            }
            assert_eq!(current.len(), oracle.len(), "step {step}");
        }
        for n in 0..3_000 {
            let id = row(n, 0).page;
            assert_eq!(current.get(&id), oracle.get(&id), "page {n}");
        }
        let mut held: Vec<&ClusterRow> = current.iter().collect();
        let mut expected: Vec<&ClusterRow> = oracle.values().collect();
        held.sort();
        expected.sort();
        assert_eq!(held, expected);
        // Down from thousands of pages to at most 200, the rows' vector let go of most of its room.
        assert!(current.capacity() < 1_000, "{}", current.capacity());
    }
}
