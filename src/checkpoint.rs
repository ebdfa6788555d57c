//! Checkpoints: what one holds (the manifest, the reader's positions) and where its parts are.
//! The reader writes its positions (`reader-EPOCH.json`) when it closes a checkpoint epoch, each
//! worker its held pages and revisits (`part-EPOCH-WORKER.lz4`, `revisits-EPOCH-WORKER.json`),
//! and the sink commits the checkpoint by writing `checkpoint.json` last, atomically.
//!
//! In a cluster the directory is one that every process sees (a shared file system). With
//! several readers (processes, or reader threads in one), reader 0 chooses the checkpoint
//! epochs; every reader R writes its positions at each epoch it closes (`reader-EPOCH-pR.json`,
//! and `reader-done-pR.json` once it has read everything), every process's sink the length of
//! its shard of the change stream (`sink-EPOCH-pP.json`), and process 0 commits the manifest
//! once all of them are on disk. A process whose reader
//! jumped over the checkpoint's epoch (epochs advance in step with the cluster's fastest) is
//! described by its first position file past it: it sent nothing in between.
//! Save and restore of those parts live here too: the worker loop calls `save_part` at a
//! checkpoint epoch and `restore_pages` / `restore_revisits` when it resumes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::write_atomic;
use crate::source::current::{self, CurrentPages};
use crate::source::http::Revisit;
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
    /// Several readers (processes, reader threads): each reader's positions, by reader
    /// (process × reader_threads + thread). Empty for one reader, which uses `reader`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<ReaderProgress>,
    /// A cluster: the length of each process's shard of the change stream, by process. Empty
    /// for one process, which uses `changes_bytes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<u64>,
    /// How its change stream names clusters: `CLUSTER_IDS` (0, absent: by the earliest page,
    /// before cluster anchors).
    #[serde(default)]
    pub cluster_ids: u32,
    /// The method its change stream was computed with (`method_key`; 0, absent: written before
    /// the key existed).
    #[serde(default)]
    pub method: u64,
}

/// The version of the method's rules, raised whenever a release forms other clusters from the
/// same pages and settings. 2: template inside a page's own text stays in it (eighth session).
/// 3: landmarks and the template at the edges of a marked main content; held pages carry
/// `main_marked` (twelfth session). 4: per-sentence groups compare only the pairs whose
/// sentences may reach τ (twenty-ninth session).
pub const METHOD_VERSION: u64 = 4;

/// A stable key of what decides the clusters: `METHOD_VERSION` and the method's settings
/// ([template], [fingerprint], [candidates], [verify]). A checkpoint's change stream can only
/// be continued by a dataflow that forms the same clusters from the pages it restores.
/// `template.refresh_epochs` is not part of it: a checkpoint falls just after a refresh, where
/// the clusters are those of its pages whatever the refreshes (`template::checkpoint_epoch`).
pub fn method_key(method: &dupflow_operators::reference::MethodConfig) -> u64 {
    let mut method = method.clone();
    method.template.refresh_epochs = 1;
    let settings = serde_json::to_string(&method).expect("the method's settings serialize");
    dupflow_operators::hashing::stable_hash(&format!("{METHOD_VERSION} {settings}"))
}

/// The cluster ids of this version's change stream: each cluster named by its anchor
/// (`PageId::anchor_key`). A checkpoint with other ids cannot be continued: its stream's rows
/// would not be retracted by this version's.
pub const CLUSTER_IDS: u32 = 1;

impl Manifest {
    /// Reader `reader`'s positions.
    pub fn reader_of(&self, reader: usize) -> ReaderProgress {
        self.readers.get(reader).cloned().unwrap_or_else(|| self.reader.clone())
    }

    /// The length of shard `shard` of the change stream.
    pub fn changes_bytes_of(&self, shard: usize) -> u64 {
        self.shards.get(shard).copied().unwrap_or(self.changes_bytes)
    }

    /// A resume must have the checkpoint's shape (its parts, positions and shards are split by
    /// it), its cluster ids and its method (`method`: `method_key` of the resuming run): the
    /// restored epochs' clusters are applied, not written, so a dataflow forming other clusters
    /// would retract rows the stream never held and leave others standing.
    pub fn check_shape(&self, processes: usize, readers: usize, method: u64, path: &Path) -> Result<(), RunError> {
        if self.cluster_ids != CLUSTER_IDS {
            return Err(RunError::Checkpoint {
                path: path.to_path_buf(),
                message: "written by an earlier dupflow, whose change stream named clusters by their earliest page; this one names them by their anchor (a member chosen by a hash of URL and record id), so the stream cannot be continued: start the run afresh".to_string(),
            });
        }
        if self.method != method {
            return Err(RunError::Checkpoint {
                path: path.to_path_buf(),
                message: "written with another method (an earlier dupflow's rules, or other [template], [fingerprint], [candidates] or [verify] settings): its change stream holds clusters this run would form otherwise, so it cannot be continued; resume with the settings and version it was written with, or start the run afresh".to_string(),
            });
        }
        let (shards, written) = (self.shards.len().max(1), self.readers.len().max(1));
        if shards != processes.max(1) || written != readers.max(1) {
            return Err(RunError::Checkpoint {
                path: path.to_path_buf(),
                message: format!(
                    "written by {shards} process(es) with {} reader thread(s) each; resume it with --processes {shards} and source.reader_threads = {}",
                    written / shards,
                    written / shards
                ),
            });
        }
        Ok(())
    }
}

/// Where reader `reader` of `readers` writes its positions as of `epoch`.
pub fn reader_path(dir: &Path, epoch: u64, reader: usize, readers: usize) -> PathBuf {
    match readers {
        0 | 1 => progress_path(dir, epoch),
        _ => dir.join(format!("reader-{epoch}-p{reader}.json")),
    }
}

/// One of several readers' positions once it has read all its inputs (valid for any later
/// epoch).
pub fn reader_done_path(dir: &Path, reader: usize) -> PathBuf {
    dir.join(format!("reader-done-p{reader}.json"))
}

/// A cluster process's shard of a checkpoint: its change stream's length.
pub fn sink_path(dir: &Path, epoch: u64, process: usize) -> PathBuf {
    dir.join(format!("sink-{epoch}-p{process}.json"))
}

/// Reader `reader`'s positions as of checkpoint `epoch`: its first position file at or past the
/// epoch (it sent nothing between the epoch and that file's), or its final one. `None` while
/// neither is on disk.
pub fn reader_positions_at(dir: &Path, epoch: u64, reader: usize) -> Option<ReaderProgress> {
    let suffix = format!("-p{reader}.json");
    let first = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().to_string();
            name.strip_prefix("reader-")?.strip_suffix(suffix.as_str())?.parse::<u64>().ok()
        })
        .filter(|&e| e >= epoch)
        .min();
    let path = match first {
        Some(e) => reader_path(dir, e, reader, 2),
        None => reader_done_path(dir, reader),
    };
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
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

fn failed(path: PathBuf) -> impl FnOnce(std::io::Error) -> RunError {
    move |e| RunError::Checkpoint { path, message: e.to_string() }
}

/// Opens (creating it) the checkpoint directory and reads its checkpoint, if there is one.
pub fn open(dir: Option<&Path>) -> Result<Option<Manifest>, RunError> {
    let Some(dir) = dir else { return Ok(None) };
    std::fs::create_dir_all(dir).map_err(failed(dir.to_path_buf()))?;
    load_manifest(dir)
}

/// One worker's part of the checkpoint of `epoch`: its held pages (LZ4-framed) and the
/// revisits it has seen (they are reported, not clustered).
pub fn save_part(dir: &Path, epoch: u64, worker: usize, pages: &CurrentPages, revisits: &[Revisit]) -> Result<(), RunError> {
    let path = part_path(dir, epoch, worker);
    let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
    pages
        .save(&mut encoder)
        .and_then(|_| encoder.finish().map_err(std::io::Error::other))
        .and_then(|bytes| write_atomic(&path, &bytes))
        .map_err(failed(path))?;
    let path = revisits_path(dir, epoch, worker);
    write_atomic(&path, &serde_json::to_vec(revisits).expect("revisits serialize")).map_err(failed(path))
}

/// Resume: worker `index` of `peers` takes its share (by URL) of every part's pages and
/// tombstones, handing each page to `restore`, then buries the tombstones in `pages`.
pub fn restore_pages(
    dir: &Path,
    manifest: &Manifest,
    peers: usize,
    index: usize,
    pages: &mut CurrentPages,
    mut restore: impl FnMut(&mut CurrentPages, dupflow_operators::Page),
) -> Result<(), RunError> {
    let mine = |url: u64| (url % peers as u64) as usize == index;
    for part in 0..manifest.parts {
        let path = part_path(dir, manifest.epoch, part);
        let bytes = std::fs::read(&path).map_err(failed(path.clone()))?;
        let mut raw = std::io::BufReader::new(lz4_flex::frame::FrameDecoder::new(bytes.as_slice()));
        let mut buried = Vec::new();
        CurrentPages::load(
            &mut raw,
            |page| {
                if mine(current::url_key(&page.url)) {
                    restore(pages, page);
                }
            },
            |url, date| {
                if mine(url) {
                    buried.push((url, date));
                }
            },
        )
        .map_err(failed(path))?;
        // After the pages: a tombstone never stands between a saved page and its URL.
        for (url, date) in buried {
            pages.restore_tombstone(url, date);
        }
    }
    Ok(())
}

/// Resume: the revisits worker `index` of `peers` takes back: its own part's when the worker
/// count is the checkpoint's, else worker 0 takes every part's.
pub fn restore_revisits(dir: &Path, manifest: &Manifest, peers: usize, index: usize) -> Result<Vec<Revisit>, RunError> {
    let mut revisits = Vec::new();
    let mine = |part: usize| if peers == manifest.parts { part == index } else { index == 0 };
    for part in (0..manifest.parts).filter(|p| mine(*p)) {
        let path = revisits_path(dir, manifest.epoch, part);
        let bytes = std::fs::read(&path).map_err(failed(path.clone()))?;
        let saved: Vec<Revisit> = serde_json::from_slice(&bytes).map_err(|e| RunError::Checkpoint { path, message: e.to_string() })?;
        revisits.extend(saved);
    }
    Ok(revisits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_from_before_cluster_anchors_is_refused_with_a_reason() {
        let path = Path::new("state");
        let written = Manifest { parts: 2, cluster_ids: CLUSTER_IDS, method: 7, ..Manifest::default() };
        assert!(written.check_shape(1, 1, 7, path).is_ok());
        // A manifest of an earlier version has no `cluster_ids`.
        let mut json: serde_json::Value = serde_json::to_value(&written).unwrap();
        json.as_object_mut().unwrap().remove("cluster_ids");
        let old: Manifest = serde_json::from_value(json).unwrap();
        let err = old.check_shape(1, 1, 7, path).unwrap_err().to_string();
        assert!(err.contains("earliest page") && err.contains("afresh"), "{err}");
    }

    #[test]
    fn a_checkpoint_of_another_method_is_refused_with_a_reason() {
        use dupflow_operators::reference::MethodConfig;
        let path = Path::new("state");
        let method = MethodConfig::default();
        let key = method_key(&method);
        assert_eq!(key, method_key(&MethodConfig::default()), "stable");
        let mut other = method.clone();
        other.template.interior_run_units = 0;
        assert_ne!(method_key(&other), key);
        // Template refreshes are not part of it: a checkpoint falls just after one.
        let mut refreshed = method.clone();
        refreshed.template.refresh_epochs = 8;
        assert_eq!(method_key(&refreshed), key);
        let written = Manifest { parts: 2, cluster_ids: CLUSTER_IDS, method: key, ..Manifest::default() };
        assert!(written.check_shape(1, 1, key, path).is_ok());
        let err = written.check_shape(1, 1, method_key(&other), path).unwrap_err().to_string();
        assert!(err.contains("another method") && err.contains("afresh"), "{err}");
        // A manifest written before the key (the seventh session's) has none: refused too.
        let mut json: serde_json::Value = serde_json::to_value(&written).unwrap();
        json.as_object_mut().unwrap().remove("method");
        let old: Manifest = serde_json::from_value(json).unwrap();
        assert!(old.check_shape(1, 1, key, path).is_err());
    }
}
