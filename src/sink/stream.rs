//! The change stream and checkpoints: the first worker of each process writes its shard's
//! cluster changes as each epoch completes, keeps its shard's current clusters, and (in one
//! process) commits checkpoints (the manifest last).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use dupflow_operators::cluster::share::Shared;
use dupflow_operators::PageId;

use crate::checkpoint::{
    self, progress_path, reader_positions_at, sink_path, CheckpointError, Manifest, ReaderProgress,
    CLUSTER_IDS, FORMAT, MANIFEST, PREVIOUS,
};
use crate::files::write_atomic;
use crate::metrics::{self, live::Live};
use crate::types::{ClusterRow, RunError};

/// Share updates of one epoch.
type ShareUpdates = Vec<((PageId, Shared), isize)>;

/// The sink of a process's first worker: its shard's cluster changes, written epoch by epoch as
/// epochs complete, the current clusters, and checkpoints.
pub(crate) struct Sink {
    changes: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    changes_bytes: u64,
    out: Option<PathBuf>,
    /// Updates of epochs not yet complete.
    pending: std::collections::BTreeMap<u64, Vec<(ClusterRow, isize)>>,
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
    shard: crate::sink::Shard,
    /// Readers in the whole run (processes × reader threads).
    readers: usize,
    /// Process 0, several readers: checkpoints whose other shares may not be on disk yet.
    uncommitted: Vec<u64>,
    /// How this run makes pages and clusters: written into every manifest.
    provenance: checkpoint::Provenance,
}

impl Sink {
    pub(crate) fn new(
        out: Option<PathBuf>,
        manifest: Option<&Manifest>,
        // The checkpoint directory, and the run's provenance its manifests carry.
        checkpoint: Option<(PathBuf, checkpoint::Provenance)>,
        peers: usize,
        live: Arc<Live>,
        shard: crate::sink::Shard,
        readers: usize,
    ) -> Result<Sink, RunError> {
        let (checkpoint, provenance) =
            checkpoint.map_or((None, Default::default()), |(dir, p)| (Some(dir), p));
        let mut changes = None;
        let mut changes_bytes = 0;
        if let Some(dir) = &out {
            let fail = |path: PathBuf| move |error| RunError::Output { path, error };
            std::fs::create_dir_all(dir).map_err(fail(dir.clone()))?;
            let path = dir.join(shard.file("changes"));
            let file = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(&path)
                .map_err(fail(path.clone()))?;
            // A resumed run continues the change stream where its checkpoint ended it: the
            // stream must hold at least that much (what a crash wrote after it is cut off).
            changes_bytes = manifest.map_or(0, |m| m.changes_bytes_of(shard.index));
            let found = file.metadata().map_err(fail(path.clone()))?.len();
            if found < changes_bytes {
                let (path, expected) = (path.clone(), changes_bytes);
                return Err(CheckpointError::ChangesCut { path, found, expected }.into());
            }
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
            pending_shares: Default::default(),
            shares: Default::default(),
            written: restored_below,
            restored_below,
            checkpoint,
            peers,
            live,
            shard,
            readers,
            uncommitted: Vec::new(),
            provenance,
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
        if self.written < frontier {
            self.check_changes_file()?;
        }
        let share_times: Vec<u64> =
            self.pending_shares.range(..frontier).map(|(t, _)| *t).collect();
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
            let live_updates: Vec<(ClusterRow, u64, isize)> =
                updates.iter().map(|(r, d)| (r.clone(), time, *d)).collect();
            // The live view holds the clusters now, for the dashboard and for `final_rows`.
            self.live.apply(&live_updates);
            if time < self.restored_below {
                continue;
            }
            if let Some((path, file)) = &mut self.changes {
                let mut lines: Vec<crate::sink::ChangeLine> = updates
                    .iter()
                    .map(|(row, diff)| crate::sink::ChangeLine {
                        epoch: time,
                        url: row.url.to_string(),
                        cluster: row.assignment.cluster.to_string(),
                        diff: *diff,
                    })
                    .collect();
                lines.sort_by(|a, b| {
                    (&a.url, a.diff, &a.cluster).cmp(&(&b.url, b.diff, &b.cluster))
                });
                let mut bytes = Vec::new();
                for line in &lines {
                    serde_json::to_writer(&mut bytes, line).expect("change serializes");
                    bytes.push(b'\n');
                }
                let written = file.write_all(&bytes).and_then(|()| file.flush());
                if let Err(error) = written {
                    // An epoch's lines are written whole or not at all: what part of them
                    // reached the file (a full disk) is cut off again.
                    let _ = file.get_ref().set_len(self.changes_bytes);
                    return Err(RunError::Output { path: path.clone(), error });
                }
                self.changes_bytes += bytes.len() as u64;
            }
        }
        // Latency of the records of every epoch now complete.
        let now = Instant::now();
        while self.written < frontier {
            if let Some(reads) = self.live.epoch_reads.lock().expect("reads").remove(&self.written)
            {
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

    /// The change stream's file is still where the run writes it: a file (or its directory)
    /// removed while the run holds it open takes every later change with it, unseen, so the run
    /// stops at the first epoch after.
    pub(crate) fn check_changes_file(&self) -> Result<(), RunError> {
        use std::os::unix::fs::MetadataExt as _;
        let Some((path, file)) = &self.changes else { return Ok(()) };
        let removed = |why: &str| RunError::Output {
            path: path.clone(),
            error: std::io::Error::new(std::io::ErrorKind::NotFound, why.to_string()),
        };
        let open = file
            .get_ref()
            .metadata()
            .map_err(|error| RunError::Output { path: path.clone(), error })?;
        if open.nlink() == 0 {
            return Err(removed(
                "removed while the run writes it (the output directory was deleted or moved)",
            ));
        }
        match std::fs::metadata(path) {
            Ok(named) if named.ino() == open.ino() && named.dev() == open.dev() => Ok(()),
            _ => Err(removed(
                "no longer the file the run writes (the output directory was moved or replaced)",
            )),
        }
    }

    /// One past the latest epoch with updates not yet written, if any.
    pub(crate) fn pending_end(&self) -> Option<u64> {
        let rows = self.pending.keys().next_back();
        let shares = self.pending_shares.keys().next_back();
        rows.max(shares).map(|t| t + 1)
    }

    pub(crate) fn final_rows(&self) -> Vec<ClusterRow> {
        self.live.rows()
    }

    /// Commits the checkpoint of `epoch` (every epoch before it is written). One reader: the
    /// manifest is the commit point; older parts are removed after it. Several readers (a
    /// cluster, or reader threads): this shard's share (its change stream's length) is written,
    /// and process 0 commits once every shard's and every reader's share is on disk
    /// (`try_commit`).
    pub(crate) fn commit_checkpoint(&mut self, epoch: u64) -> Result<(), RunError> {
        let Some(dir) = self.checkpoint.clone() else { return Ok(()) };
        let fail = |error: std::io::Error| -> RunError {
            CheckpointError::Io { path: dir.clone(), error }.into()
        };
        if let Some((_, file)) = &mut self.changes {
            file.get_ref().sync_data().map_err(fail)?;
        }
        if let Some(out) = &self.out {
            let shares = (self.shard.count <= 1).then(|| self.final_shares());
            self.live
                .with_rows(|rows| {
                    crate::sink::write_clusters(&out.join(self.shard.file("clusters")), &rows)?;
                    match shares {
                        Some(shares) => crate::sink::write_jsonl(
                            &out.join("spans.jsonl"),
                            &crate::sink::span_lines(&rows, &shares),
                        ),
                        None => Ok(()),
                    }
                })
                .map_err(fail)?;
        }
        if self.readers <= 1 {
            let path = progress_path(&dir, epoch);
            let reader: ReaderProgress =
                serde_json::from_slice(&std::fs::read(&path).map_err(fail)?).map_err(|e| {
                    RunError::from(CheckpointError::Damaged { path, what: e.to_string() })
                })?;
            let manifest = Manifest {
                epoch,
                changes_bytes: self.changes_bytes,
                parts: self.peers,
                reader,
                readers: Vec::new(),
                shards: Vec::new(),
                cluster_ids: CLUSTER_IDS,
                method: self.provenance.method,
                settings: self.provenance.settings.clone(),
                format: FORMAT,
                files: checkpoint::collect_sums(&dir, epoch, self.peers)?,
                crc32: 0,
            };
            return self.write_manifest(&dir, manifest);
        }
        let share = serde_json::to_vec(&self.changes_bytes).expect("a length serializes");
        write_atomic(&sink_path(&dir, epoch, self.shard.index), &share).map_err(fail)?;
        if self.shard.index == 0 {
            self.uncommitted.push(epoch);
        }
        self.try_commit()
    }

    /// Process 0, several readers: commits the newest checkpoint whose every share is on disk
    /// (the other sinks and readers write theirs on their own time).
    pub(crate) fn try_commit(&mut self) -> Result<(), RunError> {
        let Some(dir) = self.checkpoint.clone() else { return Ok(()) };
        let shard = |epoch: u64, process: usize| -> Option<u64> {
            serde_json::from_slice(&std::fs::read(sink_path(&dir, epoch, process)).ok()?).ok()
        };
        for at in (0..self.uncommitted.len()).rev() {
            let epoch = self.uncommitted[at];
            let Some(shards) =
                (0..self.shard.count).map(|p| shard(epoch, p)).collect::<Option<Vec<u64>>>()
            else {
                continue;
            };
            let Some(readers) = (0..self.readers)
                .map(|r| reader_positions_at(&dir, epoch, r))
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            self.uncommitted.drain(..=at);
            let manifest = Manifest {
                epoch,
                changes_bytes: shards[0],
                parts: self.peers,
                reader: readers[0].clone(),
                readers,
                shards,
                cluster_ids: CLUSTER_IDS,
                method: self.provenance.method,
                settings: self.provenance.settings.clone(),
                format: FORMAT,
                files: checkpoint::collect_sums(&dir, epoch, self.peers)?,
                crc32: 0,
            };
            return self.write_manifest(&dir, manifest);
        }
        Ok(())
    }

    /// Checkpoints not yet committed (process 0 of a cluster, waiting for other processes).
    pub(crate) fn uncommitted(&self) -> usize {
        self.uncommitted.len()
    }

    /// Commits `manifest`: the current manifest becomes the previous one, the new one is
    /// written (the commit point), then the files of checkpoints before the previous one are
    /// removed, and the per-epoch files this commit consumed.
    fn write_manifest(
        &mut self,
        dir: &std::path::Path,
        manifest: Manifest,
    ) -> Result<(), RunError> {
        let epoch = manifest.epoch;
        let fail = |path: PathBuf| {
            move |error: std::io::Error| -> RunError { CheckpointError::Io { path, error }.into() }
        };
        let (current, previous) = (dir.join(MANIFEST), dir.join(PREVIOUS));
        // The newest whole checkpoint stays on disk until the next is committed: a crash between
        // these two writes leaves both manifests naming the same, whole checkpoint.
        let kept = match std::fs::read(&current) {
            Ok(bytes) => match checkpoint::decode_manifest(&bytes, &current) {
                Ok(kept) => {
                    write_atomic(&previous, &bytes).map_err(fail(previous.clone()))?;
                    Some(kept.epoch)
                }
                Err(_) => None,
            },
            Err(_) => None,
        };
        write_atomic(&current, &checkpoint::encode_manifest(&manifest))
            .map_err(fail(current.clone()))?;
        self.live.registry.inc(metrics::CHECKPOINTS, "");
        let oldest = kept.unwrap_or(epoch).min(epoch);
        checkpoint::remove_files(dir, |e| e < oldest, |e| e <= epoch);
        Ok(())
    }
}
