//! dupflow's pipeline stages, one file per stage.
//!
//! Each stage is a pure kernel (plain functions, unit-tested without timely) plus a thin
//! timely/differential operator around it. `src/dataflow.rs` in the root crate wires them:
//!
//! ```text
//! html::strip → sentence::split → template (per-host df; filter: each page without the
//!   template it holds) → exact (identical pages: one representative) → fingerprint → edges
//!   (exchange by fingerprint; each page verified by Myers LCS against its neighbours in length
//!   order: bounded work per page) → union-find over the verified pairs (components) → assign
//!   (each page's cluster and leader; members of a family take their representative's)
//! ```
//!
//! With `clustering = "leader"` (the paper's rule), `candidates` (star edges, union-find) forms
//! whole candidate sets first and `verify` clusters each set.
//!
//! `reference` is the from-scratch oracle of the whole method: the incremental dataflow must
//! produce exactly its clusters, whatever the worker count, batch boundaries or input order.

pub mod arranged;
pub mod assign;
pub mod by_time;
pub mod candidates;
pub mod compact;
pub mod components;
pub mod cosine;
pub mod dense;
pub mod edges;
pub mod exact;
pub mod filter;
pub mod fingerprint;
pub mod groups;
pub mod hashing;
pub mod holders;
pub mod html;
pub mod lcs;
pub mod minhash;
pub mod page;
pub mod reference;
pub mod repeated;
pub mod rows;
pub mod sentence;
pub mod share;
pub mod siblings;
pub mod simhash;
pub mod sorted;
pub mod template;
#[cfg(test)]
mod testing;
pub mod text;
pub mod verify;

pub use page::{Content, Page, PageId, PageMeta, Sentence, Sentences, Word, Words};
