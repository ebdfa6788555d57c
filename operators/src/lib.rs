//! The method of dupflow, by phase: what a page is made of, what of it is a site's template,
//! which pages may be similar, which are, and the clusters they form. Each stage is a pure
//! kernel (plain functions, unit-tested without timely) and a thin differential operator
//! around it; `graph` wires them into one graph, `method` holds their settings.
//!
//! ```text
//! ingest      html::strip → sentence::page_of_html (normalize, hash, weigh) → page (compact)
//! template    holders (per-host sentence frequencies) → rule (what is template) → filter
//!             (each page without the template it holds)
//! candidates  exact (identical pages: one representative) → fingerprint (sentence buckets,
//!             word bands; minhash, simhash) → groups by fingerprint
//! verify      groups (bounded scans in length order) → lcs (Myers, bit-parallel, filters)
//!             → edges; siblings and repeated (generated pages apart); cosine
//! cluster     components (incremental union-find) → assign (cluster, leader, families)
//!             → rows; share (sentence shares, spans.jsonl)
//! runtime     by_time, dense, compact, sorted, hashing: what the operators share
//! ```
//!
//! With `clustering = "leader"` (the paper's rule), `candidates` (star edges, union-find) forms
//! whole candidate sets first and `verify` clusters each set.
//!
//! `reference` is the from-scratch oracle of the whole method: the incremental dataflow must
//! produce exactly its clusters, whatever the worker count, batch boundaries or input order.
//! It is built for tests: the crate's own, and with the `oracle` feature, other crates'.

pub mod candidates;
pub mod cluster;
pub mod graph;
pub mod ingest;
pub mod method;
#[cfg(any(test, feature = "oracle"))]
pub mod reference;
pub mod run;
pub mod runtime;
pub mod template;
#[cfg(test)]
mod testing;
pub mod verify;

pub use ingest::page::{Content, Page, PageId, PageMeta, Sentence, Sentences, Word, Words};
pub use method::{Fingerprinting, MethodConfig};
