//! Ingest: a page's HTML stripped to its visible text blocks (`html`, the main content where
//! landmarks mark it), split into normalized, hashed and weighed sentences and words
//! (`sentence`, `text`; canonical terms for the cosine and stemmed keys, `terms`), kept as one
//! compact page (`page`), its words in the run's word store when it has one (`words`).

pub mod html;
pub mod page;
pub mod sentence;
pub mod terms;
pub mod text;
pub mod words;
