//! The record tools: `normalize` (txtformat) and `exact-dedup` (txtdedup).

use std::collections::HashSet;

use dupflow_operators::ingest::sentence::{normalize, Punctuation};

/// Letter case of normalized records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    Lower,
    Upper,
}

/// One record normalized: NFKC, case folded, each punctuation or symbol character turned into
/// `_`, runs of white space collapsed to one space (the pipeline's sentence normalization with
/// underscores, so joins on `dupflow sentences` output and on normalized records agree).
pub fn normalize_line(line: &str, case: Case) -> String {
    let lower = normalize(line, Punctuation::Underscore);
    match case {
        Case::Lower => lower,
        Case::Upper => lower.to_uppercase(),
    }
}

/// Lines without their exact repeats, first occurrences kept in order. Returns the kept lines
/// and how many were dropped.
pub fn exact_dedup<'a>(lines: impl IntoIterator<Item = &'a str>) -> (Vec<&'a str>, usize) {
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    let mut dropped = 0;
    for line in lines {
        if seen.insert(line) {
            kept.push(line);
        } else {
            dropped += 1;
        }
    }
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_like_txtformat() {
        assert_eq!(normalize_line("Hello, World!", Case::Lower), "hello_ world_");
        assert_eq!(normalize_line("Hello, World!", Case::Upper), "HELLO_ WORLD_");
        assert_eq!(normalize_line("  Straße   Ｆｕｌｌ ", Case::Lower), "straße full");
    }

    #[test]
    fn dedup_keeps_first() {
        let (kept, dropped) = exact_dedup(["b", "a", "b", "", "a", ""]);
        assert_eq!(kept, vec!["b", "a", ""]);
        assert_eq!(dropped, 3);
    }
}
