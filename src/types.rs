//! Types shared by the dataflow, the sinks and the metrics, below all of them: the rows a run
//! produces, what a run returns, and why a run fails.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use dupflow_operators::cluster::share::Shared;
use dupflow_operators::verify::Assignment;
use dupflow_operators::PageId;

use crate::source::http::Revisit;

/// One row of the dataflow's output: a page and where it is clustered. Its URL and record id
/// are the page's own (`Page::url`), shared with the held copy and the live view.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClusterRow {
    pub page: PageId,
    pub url: Arc<str>,
    pub record_id: Arc<str>,
    pub assignment: Assignment,
}

/// What a run produced (on process 0; other processes return an empty one).
#[derive(Debug, Default)]
pub struct RunOutput {
    /// The clusters at the end, sorted.
    pub rows: Vec<ClusterRow>,
    /// Pages with duplicated sentences at the end (`share.enabled`), sorted.
    pub shares: Vec<(PageId, Shared)>,
    pub revisits: Vec<Revisit>,
    pub elapsed: Duration,
    /// From the start until the workers ran: in a cluster, timely's wait for every process's
    /// connection (it retries and polls once a second).
    pub connecting: Duration,
    /// Epochs written (the last one's number + 1).
    pub epochs: u64,
    /// The epoch a checkpoint resumed from, if any.
    pub resumed_from: Option<u64>,
    /// Inputs read from their start that held no record, sorted.
    pub empty_inputs: Vec<String>,
    /// What the word store did (`run.words = "disk"`).
    pub word_store: Option<dupflow_operators::runtime::store::StoreStats>,
    /// The page and content stores' figures (`run.pages = "disk"`).
    pub page_store: Option<dupflow_operators::runtime::store::StoreStats>,
    /// What the indexes' entries of one page wrote to disk (`run.pages = "disk"`).
    pub spilled: Option<dupflow_operators::runtime::spill::SpillStats>,
    /// What the method's structures held, now and at the end of the run.
    pub footprint: std::sync::Arc<dupflow_operators::runtime::footprint::Totals>,
}

#[derive(Debug, Error)]
pub enum RunError {
    /// The processes of a cluster could not be connected.
    #[error("timely could not start: connecting the cluster: {0}")]
    Connect(std::io::Error),
    /// A thread of the run could not be started.
    #[error("timely could not start: {0}")]
    Spawn(std::io::Error),
    /// Timely could not start its workers (its own message).
    #[error("timely could not start: {0}")]
    Timely(String),
    /// A worker or the reader panicked (`whose`), with the panic's message and place.
    #[error("a worker failed: {whose} panicked: {message}")]
    Panicked { whose: String, message: String },
    /// A worker ended while the reader still had records for it.
    #[error("a worker failed: a worker ended while records were still being read")]
    WorkerEnded,
    /// A worker left because the run failed elsewhere (the run reports that failure).
    #[error("a worker failed: stopped by the run's failure")]
    StoppedByFailure,
    /// The run failed and no thread said why.
    #[error("a worker failed: the run failed")]
    Unexplained,
    /// A worker's thread failed as timely reports it.
    #[error("a worker failed: {0}")]
    Worker(String),
    /// A checkpoint that cannot be written, read or continued, by kind.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::error::CheckpointError),
    #[error("cannot write {path}: {error}")]
    Output { path: PathBuf, error: std::io::Error },
    /// A file of the run's own (a word, page or content store, a spill file) could not be
    /// made, written or read: the message names the file and the error.
    #[error("{0}")]
    Disk(String),
    /// An input could not be read (an I/O error, not a damaged record: those are skipped).
    #[error("cannot read {input}: {message}")]
    Input { input: String, message: String },
    /// An input could not be opened (the message names it).
    #[error("{0}")]
    Open(String),
    /// The process's resident memory passed the run's limit (`run.memory_limit_mb`).
    #[error(
        "resident memory {:.2} GB passed the limit of {:.2} GB ({setting}){state}: give the run \
         more memory, hold fewer pages (run.retention_secs) or spread them over processes \
         (docs/cluster.md#sizing)",
        *resident as f64 / 1e9,
        *limit as f64 / 1e9
    )]
    Memory {
        resident: u64,
        limit: u64,
        setting: &'static str,
        /// What the method's structures held at their last walk (`memory::state_held`).
        state: String,
    },
    /// An input a checkpoint read part of is not the one it read (a resume would mix them).
    #[error(
        "{input} is not the input the checkpoint read: {why}; put that file back, or start \
         afresh with an empty checkpoint directory"
    )]
    InputChanged { input: String, why: String },
}
