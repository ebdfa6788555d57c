//! The change stream and checkpoints: the first worker of each process writes its shard's
//! cluster changes as each epoch completes, keeps its shard's current clusters, and (in one
//! process) commits checkpoints (the manifest last).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use dupflow_operators::cluster::share::Shared;
use dupflow_operators::PageId;

use crate::checkpoint::{self, CheckpointError, Committer, Manifest};
use crate::metrics;
use crate::metrics::live::{Clusters, Live};
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
    /// The checkpoint commits, with a checkpoint directory.
    committer: Option<Committer>,
    /// The shard's current clusters: applied here as epochs complete, written from here, and
    /// shown by the live view (which only reads them).
    clusters: Clusters,
    live: Arc<Live>,
    shard: crate::sink::Shard,
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
        let committer = checkpoint.map(|(dir, provenance)| {
            Committer::new(dir, provenance, peers, readers, (shard.index, shard.count))
        });
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
        let clusters = Clusters::default();
        live.show_clusters(clusters.view());
        Ok(Sink {
            changes,
            changes_bytes,
            out,
            pending: Default::default(),
            pending_shares: Default::default(),
            shares: Default::default(),
            written: restored_below,
            restored_below,
            committer,
            clusters,
            live,
            shard,
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
            // The clusters now, for the outputs and the live view.
            self.clusters.apply(&live_updates);
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
        self.clusters.rows()
    }

    /// The checkpoint of `epoch` is complete here (every epoch before it is written): the change
    /// stream synced, the clusters and spans as of it written, and its commit (`Committer`).
    pub(crate) fn commit_checkpoint(&mut self, epoch: u64) -> Result<(), RunError> {
        let Some(mut committer) = self.committer.take() else { return Ok(()) };
        let result = self.complete_checkpoint(epoch, &mut committer);
        self.committer = Some(committer);
        result
    }

    /// `commit_checkpoint` with the sink's committer.
    fn complete_checkpoint(&self, epoch: u64, committer: &mut Committer) -> Result<(), RunError> {
        let fail = |path: &std::path::Path| {
            let path = path.to_path_buf();
            move |error: std::io::Error| -> RunError { CheckpointError::Io { path, error }.into() }
        };
        if let Some((path, file)) = &self.changes {
            file.get_ref().sync_data().map_err(fail(path))?;
        }
        if let Some(out) = &self.out {
            let shares = (self.shard.count <= 1).then(|| self.final_shares());
            self.clusters
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
                .map_err(fail(out))?;
        }
        if committer.complete(epoch, self.changes_bytes)? {
            self.live.registry.inc(metrics::CHECKPOINTS, "");
        }
        Ok(())
    }

    /// Process 0, several readers: commits the newest checkpoint whose every share is on disk.
    pub(crate) fn try_commit(&mut self) -> Result<(), RunError> {
        if let Some(committer) = &mut self.committer {
            if committer.try_commit()? {
                self.live.registry.inc(metrics::CHECKPOINTS, "");
            }
        }
        Ok(())
    }

    /// Checkpoints not yet committed (process 0 of a cluster, waiting for other processes).
    pub(crate) fn uncommitted(&self) -> usize {
        self.committer.as_ref().map_or(0, Committer::uncommitted)
    }
}
