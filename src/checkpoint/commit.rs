//! Committing a checkpoint: the manifest that names a checkpoint's files, built in one place
//! (`Committer::manifest`), and written last. With one reader the sink's commit writes it at
//! once; with several (processes, or reader threads in one), every process's sink writes its
//! shard's share (its change stream's length) and process 0 commits the newest checkpoint whose
//! every share and every reader's positions are on disk.

use std::path::{Path, PathBuf};

use super::{
    collect_sums, decode_manifest, encode_manifest, progress_path, reader_positions_at,
    remove_files, sink_path, CheckpointError, Manifest, Provenance, ReaderProgress, CLUSTER_IDS,
    FORMAT, MANIFEST, PREVIOUS,
};
use crate::files::write_atomic;
use crate::types::RunError;

/// One process's side of the commit protocol (see the module's documentation).
#[derive(Debug)]
pub struct Committer {
    dir: PathBuf,
    /// How the run makes pages and clusters: written into every manifest.
    provenance: Provenance,
    /// Workers in the whole run: each saved a part.
    peers: usize,
    /// Readers in the whole run (processes × reader threads).
    readers: usize,
    /// This process's shard of the change stream, and the shards.
    shard: usize,
    shards: usize,
    /// Process 0, several readers: checkpoints whose other shares may not be on disk yet.
    uncommitted: Vec<u64>,
}

impl Committer {
    pub fn new(
        dir: PathBuf,
        provenance: Provenance,
        peers: usize,
        readers: usize,
        (shard, shards): (usize, usize),
    ) -> Committer {
        Committer { dir, provenance, peers, readers, shard, shards, uncommitted: Vec::new() }
    }

    /// The checkpoint of `epoch` is complete here, this shard's change stream `changes_bytes`
    /// long (synced): commits it (one reader), or writes this shard's share and commits what
    /// is whole (several). Returns whether a checkpoint was committed.
    pub fn complete(&mut self, epoch: u64, changes_bytes: u64) -> Result<bool, RunError> {
        let dir = self.dir.clone();
        if self.readers <= 1 {
            let path = progress_path(&dir, epoch);
            let bytes = std::fs::read(&path)
                .map_err(|error| CheckpointError::Io { path: path.clone(), error })?;
            let reader: ReaderProgress = serde_json::from_slice(&bytes)
                .map_err(|e| CheckpointError::Damaged { path, what: e.to_string() })?;
            self.commit(self.manifest(epoch, changes_bytes, reader, Vec::new(), Vec::new())?)?;
            return Ok(true);
        }
        let share = serde_json::to_vec(&changes_bytes).expect("a length serializes");
        let path = sink_path(&dir, epoch, self.shard);
        write_atomic(&path, &share).map_err(|error| CheckpointError::Io { path, error })?;
        if self.shard == 0 {
            self.uncommitted.push(epoch);
        }
        self.try_commit()
    }

    /// Process 0, several readers: commits the newest checkpoint whose every share is on disk
    /// (the other sinks and readers write theirs on their own time). Returns whether one was
    /// committed.
    pub fn try_commit(&mut self) -> Result<bool, RunError> {
        let dir = self.dir.clone();
        let shard = |epoch: u64, process: usize| -> Option<u64> {
            serde_json::from_slice(&std::fs::read(sink_path(&dir, epoch, process)).ok()?).ok()
        };
        for at in (0..self.uncommitted.len()).rev() {
            let epoch = self.uncommitted[at];
            let Some(shards) =
                (0..self.shards).map(|p| shard(epoch, p)).collect::<Option<Vec<u64>>>()
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
            let (changes_bytes, reader) = (shards[0], readers[0].clone());
            self.commit(self.manifest(epoch, changes_bytes, reader, readers, shards)?)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Checkpoints not yet committed (process 0 of a cluster, waiting for other processes).
    pub fn uncommitted(&self) -> usize {
        self.uncommitted.len()
    }

    /// The manifest of the checkpoint of `epoch`: its positions, its shards' lengths, this
    /// run's provenance, and the digests of its files.
    fn manifest(
        &self,
        epoch: u64,
        changes_bytes: u64,
        reader: ReaderProgress,
        readers: Vec<ReaderProgress>,
        shards: Vec<u64>,
    ) -> Result<Manifest, RunError> {
        Ok(Manifest {
            epoch,
            changes_bytes,
            parts: self.peers,
            reader,
            readers,
            shards,
            cluster_ids: CLUSTER_IDS,
            method: self.provenance.method,
            settings: self.provenance.settings.clone(),
            format: FORMAT,
            files: collect_sums(&self.dir, epoch, self.peers)?,
            crc32: 0,
        })
    }

    /// Commits `manifest`: the current manifest becomes the previous one, the new one is
    /// written (the commit point), then the files of checkpoints before the previous one are
    /// removed, and the per-epoch files this commit consumed.
    fn commit(&self, manifest: Manifest) -> Result<(), RunError> {
        let (dir, epoch) = (&self.dir, manifest.epoch);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |error: std::io::Error| RunError::from(CheckpointError::Io { path, error })
        };
        let (current, previous) = (dir.join(MANIFEST), dir.join(PREVIOUS));
        // The newest whole checkpoint stays on disk until the next is committed: a crash between
        // these two writes leaves both manifests naming the same, whole checkpoint.
        let kept = match std::fs::read(&current) {
            Ok(bytes) => match decode_manifest(&bytes, &current) {
                Ok(kept) => {
                    write_atomic(&previous, &bytes).map_err(io(&previous))?;
                    Some(kept.epoch)
                }
                Err(_) => None,
            },
            Err(_) => None,
        };
        write_atomic(&current, &encode_manifest(&manifest)).map_err(io(&current))?;
        let oldest = kept.unwrap_or(epoch).min(epoch);
        remove_files(dir, |e| e < oldest, |e| e <= epoch);
        Ok(())
    }
}
