//! Checkpoints: what one holds (the manifest, the reader's positions) and where its parts are.
//! The reader writes its positions (`reader-EPOCH.json`) when it closes a checkpoint epoch, each
//! worker its held pages and revisits (`part-EPOCH-WORKER.lz4`, `revisits-EPOCH-WORKER.json`),
//! and the sink commits the checkpoint by writing `checkpoint.json` last, atomically.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::types::RunError;

/// How far the reader got in one input (a checkpoint's offsets: records framed, skipped on
/// resume without being parsed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputProgress {
    pub name: String,
    /// Items framed from the start of the input (records and skipped stretches): on resume,
    /// exactly this many are skipped unparsed, so it never exceeds the items the input holds.
    pub items: u64,
    /// Read to its end (a followed file once a later file exists).
    pub done: bool,
}

/// The reader's part of a checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaderProgress {
    pub inputs: Vec<InputProgress>,
    /// Bytes of the deletions file consumed.
    pub deletions_offset: u64,
    /// Latest crawl date seen (retention's clock).
    pub max_date: u64,
}

/// A checkpoint: written (atomically) once epoch `epoch` is complete at the sink.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Records before this epoch are in the checkpoint.
    pub epoch: u64,
    /// Length of changes.jsonl after the epochs before `epoch`.
    pub changes_bytes: u64,
    /// Workers that wrote parts (`part-EPOCH-WORKER.lz4`).
    pub parts: usize,
    pub reader: ReaderProgress,
}

pub const MANIFEST: &str = "checkpoint.json";

pub fn part_path(dir: &Path, epoch: u64, worker: usize) -> PathBuf {
    dir.join(format!("part-{epoch}-{worker}.lz4"))
}

pub fn revisits_path(dir: &Path, epoch: u64, worker: usize) -> PathBuf {
    dir.join(format!("revisits-{epoch}-{worker}.json"))
}

pub fn progress_path(dir: &Path, epoch: u64) -> PathBuf {
    dir.join(format!("reader-{epoch}.json"))
}

/// Reads the checkpoint in `dir`, if there is one.
pub fn load_manifest(dir: &Path) -> Result<Option<Manifest>, RunError> {
    let path = dir.join(MANIFEST);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| RunError::Checkpoint { path, message: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RunError::Checkpoint { path, message: e.to_string() }),
    }
}
