//! dupflow: streaming near-duplicate detection for web-crawl WARC output.
//!
//! The edges live here (`source` reads WARC, `sink` writes clusters, `metrics` counts), the
//! stages in the `dupflow-operators` crate, and `dataflow` wires them.

pub mod check;
pub mod checkpoint;
pub mod config;
pub mod dataflow;
pub mod engine;
pub mod eval;
pub mod explain;
pub mod files;
pub mod join;
pub mod metrics;
pub mod process;
pub mod sink;
pub mod source;
pub mod types;

/// The WARC compiled into the binary: `dupflow run` with no input reads it.
pub const DEFAULT_INPUT: source::Input = source::Input::Embedded {
    name: "fixtures/default.warc.gz",
    bytes: include_bytes!("../fixtures/default.warc.gz"),
};
