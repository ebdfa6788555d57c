//! The change stream and checkpoints: process 0's worker 0 writes each epoch's cluster changes
//! as it completes, keeps the current clusters, and commits checkpoints (the manifest last).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use dupflow_operators::share::Shared;
use dupflow_operators::PageId;

use crate::checkpoint::{progress_path, Manifest, ReaderProgress, MANIFEST};
use crate::files::write_atomic;
use crate::metrics::{self, live::Live};
use crate::types::{ClusterRow, RunError};

/// Share updates of one epoch.
type ShareUpdates = Vec<((PageId, Shared), isize)>;

/// The sink of process 0's worker 0: cluster changes, written epoch by epoch as epochs
/// complete, the current clusters, and checkpoints.
pub(crate) struct Sink {
    changes: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    changes_bytes: u64,
    out: Option<PathBuf>,
    /// Updates of epochs not yet complete.
    pending: std::collections::BTreeMap<u64, Vec<(ClusterRow, isize)>>,
    /// The clusters now: row → count (1).
    rows: std::collections::BTreeMap<ClusterRow, isize>,
    /// Share updates of epochs not yet complete, and the shares now.
    pending_shares: std::collections::BTreeMap<u64, ShareUpdates>,
    shares: std::collections::BTreeMap<(PageId, Shared), isize>,
    /// Epochs before this one are written (or restored from a checkpoint).
    written: u64,
    /// Updates of epochs before this are the restored state: applied, not written.
    restored_below: u64,
    checkpoint: Option<PathBuf>,
    peers: usize,
    live: Arc<Live>,
}

impl Sink {
    pub(crate) fn new(
        out: Option<PathBuf>,
        manifest: Option<&Manifest>,
        checkpoint: Option<PathBuf>,
        peers: usize,
        live: Arc<Live>,
    ) -> Result<Sink, RunError> {
        let mut changes = None;
        let mut changes_bytes = 0;
        if let Some(dir) = &out {
            let fail = |path: PathBuf| move |source| RunError::Output { path, source };
            std::fs::create_dir_all(dir).map_err(fail(dir.clone()))?;
            let path = dir.join("changes.jsonl");
            let file = std::fs::OpenOptions::new().create(true).write(true).truncate(false).open(&path).map_err(fail(path.clone()))?;
            // A resumed run continues the change stream where its checkpoint ended it.
            changes_bytes = manifest.map_or(0, |m| m.changes_bytes);
            file.set_len(changes_bytes).map_err(fail(path.clone()))?;
            let mut file = std::io::BufWriter::new(file);
            use std::io::Seek as _;
            file.seek(std::io::SeekFrom::Start(changes_bytes)).map_err(fail(path.clone()))?;
            changes = Some((path, file));
        }
        let restored_below = manifest.map_or(0, |m| m.epoch);
        Ok(Sink {
            changes,
            changes_bytes,
            out,
            pending: Default::default(),
            rows: Default::default(),
            pending_shares: Default::default(),
            shares: Default::default(),
            written: restored_below,
            restored_below,
            checkpoint,
            peers,
            live,
        })
    }

    pub(crate) fn accept_shares(&mut self, updates: &[((PageId, Shared), u64, isize)]) {
        for (share, time, diff) in updates {
            self.pending_shares.entry(*time).or_default().push((share.clone(), *diff));
        }
    }

    pub(crate) fn final_shares(&self) -> Vec<(PageId, Shared)> {
        self.shares.keys().cloned().collect()
    }

    pub(crate) fn accept(&mut self, updates: &[(ClusterRow, u64, isize)]) {
        for (row, time, diff) in updates {
            self.pending.entry(*time).or_default().push((row.clone(), *diff));
        }
    }

    /// Writes every pending epoch before `frontier`.
    pub(crate) fn flush_before(&mut self, frontier: u64) -> Result<(), RunError> {
        use std::io::Write as _;
        let share_times: Vec<u64> = self.pending_shares.range(..frontier).map(|(t, _)| *t).collect();
        for time in share_times {
            for (share, diff) in self.pending_shares.remove(&time).unwrap_or_default() {
                let count = self.shares.entry(share.clone()).or_insert(0);
                *count += diff;
                if *count == 0 {
                    self.shares.remove(&share);
                }
            }
        }
        let done: Vec<u64> = self.pending.range(..frontier).map(|(t, _)| *t).collect();
        for time in done {
            let mut updates = self.pending.remove(&time).unwrap_or_default();
            updates.sort();
            differential_dataflow::consolidation::consolidate(&mut updates);
            let live_updates: Vec<(ClusterRow, u64, isize)> = updates.iter().map(|(r, d)| (r.clone(), time, *d)).collect();
            self.live.apply(&live_updates);
            for (row, diff) in &updates {
                let count = self.rows.entry(row.clone()).or_insert(0);
                *count += diff;
                if *count == 0 {
                    self.rows.remove(row);
                }
            }
            if time < self.restored_below {
                continue;
            }
            if let Some((path, file)) = &mut self.changes {
                let mut lines: Vec<crate::sink::ChangeLine> = updates
                    .iter()
                    .map(|(row, diff)| crate::sink::ChangeLine {
                        epoch: time,
                        url: row.url.clone(),
                        cluster: row.assignment.cluster.to_string(),
                        diff: *diff,
                    })
                    .collect();
                lines.sort_by(|a, b| (&a.url, a.diff, &a.cluster).cmp(&(&b.url, b.diff, &b.cluster)));
                let mut bytes = Vec::new();
                for line in &lines {
                    serde_json::to_writer(&mut bytes, line).expect("change serializes");
                    bytes.push(b'\n');
                }
                file.write_all(&bytes).map_err(|source| RunError::Output { path: path.clone(), source })?;
                file.flush().map_err(|source| RunError::Output { path: path.clone(), source })?;
                self.changes_bytes += bytes.len() as u64;
            }
        }
        // Latency of the records of every epoch now complete.
        let now = Instant::now();
        while self.written < frontier {
            if let Some(reads) = self.live.epoch_reads.lock().expect("reads").remove(&self.written) {
                if let Some(first) = reads.first() {
                    tracing::debug!(
                        "epoch {}: {} records, {:.1} ms from its first record read to its changes written",
                        self.written,
                        reads.len(),
                        now.duration_since(*first).as_secs_f64() * 1e3
                    );
                }
                let mut latencies = self.live.latencies.lock().expect("latencies");
                for read in reads {
                    let secs = now.duration_since(read).as_secs_f64();
                    self.live.registry.observe(metrics::RECORD_LATENCY, "", secs);
                    if latencies.len() < 1_000_000 {
                        latencies.push(secs as f32);
                    }
                }
            }
            self.written += 1;
        }
        Ok(())
    }

    pub(crate) fn final_rows(&self) -> Vec<ClusterRow> {
        self.rows.keys().cloned().collect()
    }

    /// Commits the checkpoint of `epoch` (every epoch before it is written): the manifest is
    /// the commit point; older parts are removed after it.
    pub(crate) fn commit_checkpoint(&mut self, epoch: u64) -> Result<(), RunError> {
        let Some(dir) = self.checkpoint.clone() else { return Ok(()) };
        let fail = |message: String| RunError::Checkpoint { path: dir.clone(), message };
        if let Some((_, file)) = &mut self.changes {
            file.get_ref().sync_data().map_err(|e| fail(e.to_string()))?;
        }
        if let Some(out) = &self.out {
            let rows = self.final_rows();
            crate::sink::write_jsonl(&out.join("clusters.jsonl"), &crate::sink::cluster_lines(&rows)).map_err(|e| fail(e.to_string()))?;
            crate::sink::write_jsonl(&out.join("spans.jsonl"), &crate::sink::span_lines(&rows, &self.final_shares()))
                .map_err(|e| fail(e.to_string()))?;
        }
        let reader: ReaderProgress = serde_json::from_slice(&std::fs::read(progress_path(&dir, epoch)).map_err(|e| fail(e.to_string()))?)
            .map_err(|e| fail(e.to_string()))?;
        let manifest = Manifest { epoch, changes_bytes: self.changes_bytes, parts: self.peers, reader };
        write_atomic(&dir.join(MANIFEST), &serde_json::to_vec_pretty(&manifest).expect("manifest serializes"))
            .map_err(|e| fail(e.to_string()))?;
        self.live.registry.inc(metrics::CHECKPOINTS, "");
        // Older checkpoints are no longer needed.
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let epoch_of = name
                    .strip_prefix("part-")
                    .or_else(|| name.strip_prefix("revisits-"))
                    .and_then(|r| r.split('-').next())
                    .or_else(|| name.strip_prefix("reader-").and_then(|r| r.strip_suffix(".json")))
                    .and_then(|e| e.parse::<u64>().ok());
                if epoch_of.is_some_and(|e| e < epoch) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(())
    }
}
