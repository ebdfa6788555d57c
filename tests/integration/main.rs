//! dupflow's end-to-end tests, one binary (a module per topic): through the `dupflow` binary
//! (`CARGO_BIN_EXE_dupflow`) or the library, on real WARC files, real HTTP and a real browser.
//! `cargo test --test integration TOPIC::` runs one topic; see docs/development.md.

// Tests spell out their scenario whole, however long.
#![allow(clippy::too_many_lines)]

mod common;

mod blogs;
mod cli;
mod cluster;
mod crash_soak;
mod dashboard;
mod dedup;
mod docs;
mod families;
mod faults;
mod follow;
mod footprint;
mod http_limits;
mod join;
mod live;
mod malformed;
mod metrics_endpoint;
mod oracle;
mod resumes;
mod text;
mod wacz;
mod warc_samples;
mod words;
