//! TF-IDF cosine and w-shingling: "what is similar to this text?"
//!
//! Text is canonicalized into terms (`ingest::terms`), weighted by TF-IDF and compared by
//! cosine, which is symmetric and ignores word order.
//!
//! `Idf` keeps document frequencies under insertions and retractions, so the weights follow a
//! corpus as pages arrive and leave (tested equal to a from-scratch count).
//!
//! w-shingling (Broder 1997) is here too, as the classic the cosine is compared with:
//! resemblance |S(A) ∩ S(B)| / |S(A) ∪ S(B)| and containment |S(A) ∩ S(B)| / |S(A)|, which is
//! not symmetric.

use std::collections::{BTreeMap, HashMap};

pub use crate::ingest::terms::{Canonicalizer, Language};
use crate::runtime::hashing::stable_hash;
use crate::runtime::sorted::intersection;

/// Term counts of a text: term hash → count, sorted by hash.
pub fn term_counts(terms: &[String]) -> Vec<(u64, u32)> {
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
    for t in terms {
        *counts.entry(stable_hash(t)).or_default() += 1;
    }
    counts.into_iter().collect()
}

/// Document frequencies, kept under insertions and retractions of documents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Idf {
    df: HashMap<u64, u32>,
    documents: u32,
}

impl Idf {
    /// Counts a document (its distinct terms) in, or out with `diff = -1`.
    pub fn update(&mut self, counts: &[(u64, u32)], diff: i32) {
        self.documents = (self.documents as i64 + diff as i64).max(0) as u32;
        for &(term, _) in counts {
            let df = self.df.entry(term).or_default();
            *df = (*df as i64 + diff as i64).max(0) as u32;
            if *df == 0 {
                self.df.remove(&term);
            }
        }
    }

    /// Smoothed inverse document frequency: ln((1 + N) / (1 + df)) + 1.
    pub fn idf(&self, term: u64) -> f64 {
        let df = self.df.get(&term).copied().unwrap_or(0) as f64;
        ((1.0 + self.documents as f64) / (1.0 + df)).ln() + 1.0
    }

    pub fn documents(&self) -> u32 {
        self.documents
    }

    /// The TF-IDF vector of a document (sorted by term), `tf` being the raw count.
    pub fn vector(&self, counts: &[(u64, u32)]) -> Vec<(u64, f64)> {
        counts.iter().map(|&(t, c)| (t, c as f64 * self.idf(t))).collect()
    }
}

/// The pipeline's IDF weight of a term on `df` of `documents` pages, in 1/64ths (quantized so
/// that a page arriving changes few weights): round(64 · (ln((1 + N) / (1 + df)) + 1)).
pub fn idf_weight(documents: u64, df: u64) -> u32 {
    ((((1.0 + documents as f64) / (1.0 + df as f64)).ln() + 1.0) * 64.0).round().max(1.0) as u32
}

/// Cosine of two sparse vectors sorted by term: 0 when either is empty.
pub fn cosine(a: &[(u64, f64)], b: &[(u64, f64)]) -> f64 {
    let (mut i, mut j, mut dot) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += a[i].1 * b[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    let norm = |v: &[(u64, f64)]| v.iter().map(|(_, x)| x * x).sum::<f64>().sqrt();
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        (dot / (na * nb)).min(1.0)
    }
}

/// The set of w-word shingles of a term sequence (hashes). A text shorter than w words is one
/// shingle.
pub fn w_shingles(terms: &[String], w: usize) -> Vec<u64> {
    let w = w.max(1);
    let mut out: Vec<u64> = if terms.len() <= w {
        vec![stable_hash(&terms.join(" "))]
    } else {
        terms.windows(w).map(|win| stable_hash(&win.join(" "))).collect()
    };
    out.sort_unstable();
    out.dedup();
    out
}

/// Broder's resemblance of two shingle sets (sorted, distinct).
pub fn resemblance(a: &[u64], b: &[u64]) -> f64 {
    let common = intersection(a, b);
    let union = a.len() + b.len() - common;
    if union == 0 {
        1.0
    } else {
        common as f64 / union as f64
    }
}

/// Broder's containment of `a` in `b`: the share of a's shingles that are in b.
pub fn containment(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() {
        1.0
    } else {
        intersection(a, b) as f64 / a.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn vector(idf: &Idf, c: &Canonicalizer, text: &str) -> Vec<(u64, f64)> {
        idf.vector(&term_counts(&c.terms(text)))
    }

    #[test]
    fn english_and_russian_stemming() {
        let en = Canonicalizer::new(Language::English);
        assert_eq!(
            en.terms("The runners were running quickly to the RUNNING track!"),
            vec!["runner", "run", "quick", "run", "track"]
        );
        let ru = Canonicalizer::new(Language::Russian);
        // Stop words (и, в) go; inflected forms meet at one stem.
        assert_eq!(ru.terms("Книги и книгами в библиотеке"), vec!["книг", "библиотек"]);
        assert_eq!(ru.terms("книга"), ru.terms("книгу"));
        let de = Canonicalizer::new(Language::German);
        assert_eq!(de.terms("Häuser"), de.terms("Hauser"));
    }

    #[test]
    fn repeats_collapse_and_synonyms_map() {
        let c = Canonicalizer::new(Language::English).with_synonyms("car: automobile auto\n");
        assert_eq!(c.terms("automobile automobile car"), vec!["car"]);
    }

    #[test]
    fn detection_and_codes() {
        assert_eq!(
            Language::detect("Это простой текст на русском языке о книгах и библиотеках."),
            Language::Russian
        );
        assert_eq!(
            Language::detect("This is a plain English sentence about libraries and books."),
            Language::English
        );
        assert_eq!(Language::from_code("fr-CA"), Language::French);
        assert_eq!(Language::from_code("ja"), Language::Other);
    }

    #[test]
    fn cosine_is_symmetric_one_with_itself_and_blind_to_order() {
        let c = Canonicalizer::new(Language::English);
        let mut idf = Idf::default();
        for text in [
            "rivers flood the valley towns",
            "the market opens on saturday",
            "library hours grow longer",
        ] {
            idf.update(&term_counts(&c.terms(text)), 1);
        }
        let a = vector(&idf, &c, "The river floods the valley town each spring");
        let b = vector(&idf, &c, "each spring the valley town floods: the river");
        let d = vector(&idf, &c, "the market opens on saturday morning");
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-12);
        assert!((cosine(&a, &b) - 1.0).abs() < 1e-12, "word order does not matter");
        assert!((cosine(&a, &d) - cosine(&d, &a)).abs() < 1e-15);
        assert!(cosine(&a, &d) < 0.2);
        assert_eq!(cosine(&a, &[]), 0.0);
    }

    #[test]
    fn shingle_containment_is_not_symmetric() {
        let c = Canonicalizer::new(Language::Other);
        let small = w_shingles(&c.terms("a b c d"), 2);
        let large = w_shingles(&c.terms("a b c d e f g h"), 2);
        assert_eq!(containment(&small, &large), 1.0);
        assert!(containment(&large, &small) < 0.5);
        assert!((resemblance(&small, &large) - resemblance(&large, &small)).abs() < 1e-15);
    }

    proptest! {
        #[test]
        fn incremental_idf_equals_from_scratch(ops in prop::collection::vec((0usize..6, prop::bool::ANY), 1..40)) {
            let docs: Vec<Vec<(u64, u32)>> = (0..6u64).map(|d| (0..(d + 2)).map(|t| (t * 7 % 11 + d % 3, 1)).collect::<BTreeMap<_, _>>().into_iter().collect()).collect();
            let mut live: Vec<usize> = Vec::new();
            let mut idf = Idf::default();
            for (doc, insert) in ops {
                if insert {
                    idf.update(&docs[doc], 1);
                    live.push(doc);
                } else if let Some(at) = live.iter().position(|&d| d == doc) {
                    idf.update(&docs[doc], -1);
                    live.remove(at);
                }
            }
            let mut scratch = Idf::default();
            for &d in &live {
                scratch.update(&docs[d], 1);
            }
            prop_assert_eq!(idf, scratch);
        }
    }
}
