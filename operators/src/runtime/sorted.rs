//! Kernels over ascending lists, shared by the verifiers and the joins.

/// Size of the intersection of two ascending lists (a merge).
pub fn intersection<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common
}

/// The intersection of two ascending lists of distinct items, ascending (a merge).
pub fn intersect<T: Ord + Copy>(a: &[T], b: &[T]) -> Vec<T> {
    let (mut i, mut j, mut common) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    common
}

/// The items of `a` not in `b`, and those of `b` not in `a`, both ascending lists of distinct
/// items (one merge): each ascending.
pub fn differences<T: Ord + Copy>(a: &[T], b: &[T]) -> (Vec<T>, Vec<T>) {
    let (mut i, mut j, mut only_a, mut only_b) = (0, 0, Vec::new(), Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                only_a.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                only_b.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    only_a.extend_from_slice(&a[i..]);
    only_b.extend_from_slice(&b[j..]);
    (only_a, only_b)
}

/// `list` with the changes `delta` added (both ascending by item, each item once, no zero
/// multiplicity), zeros dropped: the multiplicities of a held collection, changed.
pub fn merge_counts<K: Ord + Clone>(list: &mut Vec<(K, isize)>, delta: &[(K, isize)]) {
    if delta.is_empty() {
        return;
    }
    let mut merged = Vec::with_capacity(list.len() + delta.len());
    let (mut a, mut b) = (list.drain(..).peekable(), delta.iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                let (item, n) = a.next().expect("peeked");
                (item, n + b.next().expect("peeked").1)
            }
            (Some(x), Some(y)) if x.0 < y.0 => a.next().expect("peeked"),
            (Some(_), Some(_)) | (None, Some(_)) => b.next().cloned().expect("peeked"),
            (Some(_), None) => a.next().expect("peeked"),
            (None, None) => break,
        };
        if next.1 != 0 {
            merged.push(next);
        }
    }
    drop(a);
    merged.shrink_to_fit();
    *list = merged;
}

/// `updates` consolidated: ascending by item, each item once, zeros dropped.
pub fn consolidated<K: Ord>(updates: impl Iterator<Item = (K, isize)>) -> Vec<(K, isize)> {
    let mut sorted: Vec<(K, isize)> = updates.collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut merged: Vec<(K, isize)> = Vec::with_capacity(sorted.len());
    for (k, d) in sorted {
        match merged.last_mut() {
            Some(last) if last.0 == k => last.1 += d,
            _ => merged.push((k, d)),
        }
    }
    merged.retain(|u| u.1 != 0);
    merged
}

#[cfg(test)]
mod count_tests {
    use super::*;

    #[test]
    fn merge_counts_adds_and_drops_zeros() {
        let merged = |list: &[(u64, isize)], delta: &[(u64, isize)]| {
            let mut list = list.to_vec();
            merge_counts(&mut list, delta);
            list
        };
        assert_eq!(
            merged(&[(1, 1), (3, 1), (5, 2)], &[(0, 1), (3, -1), (5, -1), (9, 1)]),
            vec![(0, 1), (1, 1), (5, 1), (9, 1)]
        );
        assert_eq!(merged(&[], &[(2, 1)]), vec![(2, 1)]);
        assert_eq!(merged(&[(2, 1)], &[]), vec![(2, 1)]);
    }

    #[test]
    fn differences_keep_what_the_other_lacks() {
        assert_eq!(differences(&[1, 3, 5, 7], &[0, 3, 4, 7]), (vec![1, 5], vec![0, 4]));
        assert_eq!(differences(&[1, 3, 5, 7], &[0, 2]), (vec![1, 3, 5, 7], vec![0, 2]));
        assert_eq!(differences(&[1, 3], &[1, 2, 3, 9]), (vec![], vec![2, 9]));
        assert_eq!(differences::<u64>(&[], &[1]), (vec![], vec![1]));
        assert_eq!(differences(&[2, 8, 9], &[]), (vec![2, 8, 9], vec![]));
    }

    #[test]
    fn consolidated_sorts_sums_and_drops_zeros() {
        assert_eq!(
            consolidated([(3, 1), (1, 2), (3, -1), (2, 1), (1, -1)].into_iter()),
            vec![(1, 1), (2, 1)]
        );
    }
}
