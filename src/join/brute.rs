//! Brute-force joins: every pair compared exactly. The reference the filtered joins are tested
//! against, and small enough to read at a glance.

use super::edit::{edit_distance, EdParams};
use super::set::{overlap, Records, Threshold};
use super::Pair;

/// Every pair of records meeting `threshold`, sorted by `(x, y)`.
pub fn set_join(records: &Records, threshold: Threshold) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for i in 0..records.tokens.len() {
        for j in 0..i {
            let (x, y) = (&records.tokens[i], &records.tokens[j]);
            let o = overlap(x, y);
            if threshold.passes(o, x.len(), y.len()) {
                pairs.push(Pair::new(
                    records.lines[i],
                    records.lines[j],
                    threshold.value(o, x.len(), y.len()),
                ));
            }
        }
    }
    super::sort_pairs(&mut pairs);
    pairs
}

/// Every pair of lines at least `params.min_length` characters long within edit distance τ.
pub fn edit_join<'a>(lines: impl IntoIterator<Item = &'a str>, params: &EdParams) -> Vec<Pair> {
    let strings: Vec<(u32, Vec<char>)> = lines
        .into_iter()
        .enumerate()
        .map(|(n, l)| (n as u32 + 1, l.chars().collect::<Vec<char>>()))
        .filter(|(_, c)| c.len() >= params.min_length)
        .collect();
    let mut pairs = Vec::new();
    for i in 0..strings.len() {
        for j in 0..i {
            let d = edit_distance(&strings[i].1, &strings[j].1);
            if d <= params.tau {
                pairs.push(Pair::new(strings[i].0, strings[j].0, d as f64));
            }
        }
    }
    super::sort_pairs(&mut pairs);
    pairs
}
