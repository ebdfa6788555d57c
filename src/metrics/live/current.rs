//! The row each page is shown with, by page: the rows in one vector and a table of their
//! places, 4 bytes a bucket. A `HashMap<PageId, ClusterRow>` held each page's id twice (the
//! key, and the row's own) in a 104-byte bucket, and its table is between 7/16 and 7/8 full:
//! at a million pages, 254 MB against about 100 (the vector grows by a quarter).

use hashbrown::HashTable;

use dupflow_operators::runtime::hashing::mix64;
use dupflow_operators::PageId;

use crate::types::ClusterRow;

/// Rows by page: at most one a page.
#[derive(Default)]
pub(super) struct Current {
    rows: Vec<ClusterRow>,
    /// Each row's place in `rows`, found by its page.
    places: HashTable<u32>,
}

fn hash(page: &PageId) -> u64 {
    mix64(page.hash ^ mix64(page.date))
}

impl Current {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn get(&self, page: &PageId) -> Option<&ClusterRow> {
        let rows = &self.rows;
        let at = self.places.find(hash(page), |&at| rows[at as usize].page == *page)?;
        Some(&rows[*at as usize])
    }

    /// Holds `row` as its page's (the one held before, if any, out).
    pub fn insert(&mut self, row: ClusterRow) -> Option<ClusterRow> {
        let Current { rows, places } = self;
        let page = row.page;
        if let Some(&mut at) = places.find_mut(hash(&page), |&at| rows[at as usize].page == page) {
            return Some(std::mem::replace(&mut rows[at as usize], row));
        }
        let at = u32::try_from(rows.len()).expect("fewer than 2^32 rows on a process");
        if rows.len() == rows.capacity() {
            // By a quarter, not twice: the vector is 4/5 full or more as it grows.
            rows.reserve_exact((rows.len() / 4).max(16));
        }
        rows.push(row);
        places.insert_unique(hash(&page), at, |&at| hash(&rows[at as usize].page));
        None
    }

    /// Lets go of the row of `page`: the last row takes its place.
    pub fn remove(&mut self, page: &PageId) -> Option<ClusterRow> {
        let Current { rows, places } = self;
        let at = match places.find_entry(hash(page), |&at| rows[at as usize].page == *page) {
            Ok(entry) => entry.remove().0 as usize,
            Err(_) => return None,
        };
        let last = rows.len() - 1;
        if at != last {
            let moved = places
                .find_mut(hash(&rows[last].page), |&place| place as usize == last)
                .expect("the last row has a place");
            *moved = at as u32;
        }
        let row = rows.swap_remove(at);
        if rows.capacity() > 64 && rows.len() < rows.capacity() / 4 {
            rows.shrink_to(rows.len() * 2);
            places.shrink_to(rows.len() * 2, |&at| hash(&rows[at as usize].page));
        }
        Some(row)
    }

    /// Every row, in no order.
    pub fn values(&self) -> std::slice::Iter<'_, ClusterRow> {
        self.rows.iter()
    }

    /// The bytes held (not what the rows point to): the vector at its capacity and the table.
    pub fn bytes(&self) -> usize {
        use dupflow_operators::runtime::footprint::{array, hash_table};
        array::<ClusterRow>(self.rows.capacity()) + hash_table(self.places.capacity(), 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let mut held: Vec<&ClusterRow> = current.values().collect();
        let mut expected: Vec<&ClusterRow> = oracle.values().collect();
        held.sort();
        expected.sort();
        assert_eq!(held, expected);
        // Down from thousands of pages to at most 200, the rows' vector let go of most of its room.
        assert!(current.rows.capacity() < 1_000, "{}", current.rows.capacity());
    }
}
