//! The one place where the stages are wired: read this file to see the whole pipeline, then
//! `dupflow_operators::graph` for the method, `worker.rs` for the loop, `run.rs` for the run.
//!
//! ```text
//! reader thread (src/source/reader): inputs (read once or followed) → decode → frame → records,
//!   deletions, epoch marks (with the retention clock) ──bounded channels, to any with room──▶ workers
//! worker: record → HTTP/charset (src/source/http) → strip_html → split_sentences → page
//!   → current pages (src/source/current: re-crawls replace, deletions and retention retract)
//!   → input collection (PageId, Page), insertions and retractions
//!   → remove_templates ─┬─▶ fingerprints → candidate_sets ─┐
//!                       └─▶ contents ───────────────────────┴▶ verify_clusters
//!   → (page, url, record id, assignment) ─exchange to worker 0─▶ change stream and checkpoints
//!     (src/sink/stream)
//! ```
//!
//! Reading runs on its own thread and hands records to the timely workers through bounded
//! crossbeam channels (backpressure); workers poll with `try_recv` and `step_or_park`, so a
//! worker never blocks on input while the dataflow has work. The method's stages are
//! differential operators, so the clusters are maintained incrementally: every stage handles
//! insertions and retractions, and `clusters` is tested against `reference` at 1, 2 and 4 workers.
//!
//! The method's graph is `dupflow_operators::graph::clusters_and_shares` (templates,
//! fingerprints, candidate sets, verification: pages in, assignments and shares out, nothing
//! else). The places here, by name:
//! - `worker`: the worker loop (records → pages → input changes, stepping, the sink and
//!   checkpoints of completed epochs);
//! - `run`: timely's configuration, the reader threads, the workers' join;
//! - `connect`: a cluster's connections, made before timely starts.

mod abort;
mod connect;
mod memory;
mod run;
mod worker;

pub use abort::Abort;
pub use run::{run, IndexRole, RunOptions};

pub use crate::checkpoint::{load_manifest, Manifest, MANIFEST};
#[cfg(feature = "testing")]
pub use crate::source::reader::ScriptItem;
pub use crate::source::reader::{Feed, Followed, InputProgress, ReaderProgress, ReaderReport};
pub use crate::types::{ClusterRow, RunError, RunOutput};
