//! Checkpoints: what one holds (the manifest, the reader's positions) and where its parts are.
//! The reader writes its positions (`reader-EPOCH.json`) when it closes a checkpoint epoch, each
//! worker its held pages and revisits (`part-EPOCH-WORKER.lz4`, `revisits-EPOCH-WORKER.json`)
//! and their digests (`sums-EPOCH-WORKER.json`), and the sink commits the checkpoint by writing
//! `checkpoint.json` last, atomically.
//!
//! A checkpoint verifies itself before it is resumed from: the parts are LZ4 frames with block
//! and content checksums, the manifest holds the length and CRC-32 of every file it names, and
//! the manifest carries a CRC-32 of its own text. The previous committed checkpoint is kept
//! (`checkpoint.previous.json` and its files) until the next one is committed; a resume whose
//! newest checkpoint is damaged or incomplete says so on stderr and falls back to it.
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
//! checkpoint epoch and `restore_pages` / `restore_revisits` when it resumes. `provenance`: what
//! a manifest says of how its pages and clusters were made (a resume must make them the same
//! way); `lock`: one run at a time in a directory; `commit`: the manifest built and written
//! (`Committer`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::write_atomic;
use crate::source::current::CurrentPages;
use crate::source::http::Revisit;
use crate::types::RunError;

mod commit;
pub mod error;
mod lock;
mod provenance;

pub use commit::Committer;
pub use error::CheckpointError;
pub use lock::{lock, DirLock};
pub use provenance::{
    as_index, method_key, settings_changed, shaping_settings, Provenance, METHOD_VERSION,
};

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
    /// The bytes of the input read when the position was taken, and their digest: a resume
    /// reads on only from the same input (grown or not), and refuses another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<crate::source::Prefix>,
    /// A file read to its end: its modification time then (nanoseconds since 1970). A resume
    /// that finds the file of that size and time takes it as it was, without reading it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_ns: Option<u64>,
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
    /// Every setting that shapes a page or a verdict, by `section.key` (`shaping_settings`): a
    /// resume with another value is refused with the setting named. Empty, absent: written
    /// before the settings were kept (then `method` alone is checked).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// The format of the checkpoint's files (`FORMAT`; 0, absent: without checksums).
    #[serde(default)]
    pub format: u32,
    /// Every file of the checkpoint (parts, revisits) by name: its length and CRC-32.
    #[serde(default)]
    pub files: BTreeMap<String, FileSum>,
    /// CRC-32 of the manifest's own text, written with this field at 0.
    #[serde(default)]
    pub crc32: u32,
}

/// The length and CRC-32 of one file of a checkpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    pub bytes: u64,
    pub crc32: u32,
}

impl FileSum {
    pub fn of(bytes: &[u8]) -> FileSum {
        FileSum { bytes: bytes.len() as u64, crc32: crc32fast::hash(bytes) }
    }

    /// The sum of the file at `path`, read a block at a time (a part is as large as the pages
    /// it holds: it is never read whole into memory).
    pub fn of_file(path: &Path) -> std::io::Result<FileSum> {
        let mut summing = Summing::new(std::io::sink());
        std::io::copy(&mut std::fs::File::open(path)?, &mut summing)?;
        Ok(summing.sum())
    }
}

/// A writer that passes its bytes on and sums them as they go (`FileSum`): a checkpoint's part
/// is written to its file as it is encoded, never held whole in memory.
pub struct Summing<W> {
    inner: W,
    bytes: u64,
    crc32: crc32fast::Hasher,
}

impl<W: std::io::Write> Summing<W> {
    pub fn new(inner: W) -> Self {
        Summing { inner, bytes: 0, crc32: crc32fast::Hasher::new() }
    }

    /// The sum of the bytes written so far.
    pub fn sum(&self) -> FileSum {
        FileSum { bytes: self.bytes, crc32: self.crc32.clone().finalize() }
    }
}

impl<W: std::io::Write> std::io::Write for Summing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc32.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The format of a checkpoint's files: 2 adds the checksums (LZ4 frame checksums, the digests of
/// its files and of the manifest itself).
pub const FORMAT: u32 = 2;

/// The previous committed checkpoint's manifest, kept until the next one is committed.
pub const PREVIOUS: &str = "checkpoint.previous.json";

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
    pub fn check_shape(
        &self,
        processes: usize,
        readers: usize,
        run: &Provenance,
        path: &Path,
    ) -> Result<(), RunError> {
        let changed = if self.settings.is_empty() {
            Vec::new()
        } else {
            settings_changed(&self.settings, &run.settings)
        };
        let path = path.to_path_buf();
        if !changed.is_empty() {
            return Err(CheckpointError::OtherSettings { path, changed }.into());
        }
        if self.cluster_ids != CLUSTER_IDS {
            return Err(CheckpointError::ClusterIds { path }.into());
        }
        if self.method != run.method {
            return Err(CheckpointError::OtherMethod { path }.into());
        }
        let (shards, written) = (self.shards.len().max(1), self.readers.len().max(1));
        if shards != processes.max(1) || written != readers.max(1) {
            let readers = written / shards;
            return Err(CheckpointError::OtherShape { path, processes: shards, readers }.into());
        }
        Ok(())
    }
}

/// Where reader `reader` of `readers` writes its positions as of `epoch`.
pub fn reader_path(dir: &Path, epoch: u64, reader: usize, readers: usize) -> PathBuf {
    match readers {
        0 | 1 => progress_path(dir, epoch),
        _ => one_of_readers_path(dir, epoch, reader),
    }
}

/// Where reader `reader`, one of several, writes its positions as of `epoch`.
fn one_of_readers_path(dir: &Path, epoch: u64, reader: usize) -> PathBuf {
    dir.join(format!("reader-{epoch}-p{reader}.json"))
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
        Some(e) => one_of_readers_path(dir, e, reader),
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

/// Where a worker writes the digests of its part and revisits of `epoch`, for the commit.
pub fn sums_path(dir: &Path, epoch: u64, worker: usize) -> PathBuf {
    dir.join(format!("sums-{epoch}-{worker}.json"))
}

/// The file name of `path` (the key of `Manifest::files`).
fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

pub fn progress_path(dir: &Path, epoch: u64) -> PathBuf {
    dir.join(format!("reader-{epoch}.json"))
}

/// The manifest's text: pretty JSON whose `crc32` is the CRC-32 of the same text written with
/// `crc32` at 0.
pub fn encode_manifest(manifest: &Manifest) -> Vec<u8> {
    let mut manifest = Manifest { crc32: 0, ..manifest.clone() };
    manifest.crc32 =
        crc32fast::hash(&serde_json::to_vec_pretty(&manifest).expect("manifest serializes"));
    serde_json::to_vec_pretty(&manifest).expect("manifest serializes")
}

/// A manifest read back: refused unless it is exactly the text `encode_manifest` writes for it
/// (so a changed byte anywhere, value or layout, is caught) and of this format.
pub fn decode_manifest(bytes: &[u8], path: &Path) -> Result<Manifest, RunError> {
    let damaged = |what: String| CheckpointError::Damaged { path: path.to_path_buf(), what };
    let manifest: Manifest =
        serde_json::from_slice(bytes).map_err(|e| damaged(format!("not a manifest ({e})")))?;
    if manifest.format != FORMAT {
        let path = path.to_path_buf();
        return Err(CheckpointError::Format { path, found: manifest.format, reads: FORMAT }.into());
    }
    if encode_manifest(&manifest) != bytes {
        return Err(damaged("its text does not match its checksum".into()).into());
    }
    Ok(manifest)
}

/// Reads the checkpoint in `dir`, if there is one (its manifest checked, not its files).
pub fn load_manifest(dir: &Path) -> Result<Option<Manifest>, RunError> {
    let path = dir.join(MANIFEST);
    match std::fs::read(&path) {
        Ok(bytes) => decode_manifest(&bytes, &path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(CheckpointError::Io { path, error }.into()),
    }
}

/// A checkpoint file of JSON that does not parse.
fn damaged_json(path: &Path, error: &serde_json::Error) -> RunError {
    CheckpointError::Damaged { path: path.to_path_buf(), what: error.to_string() }.into()
}

fn failed(path: PathBuf) -> impl FnOnce(std::io::Error) -> RunError {
    move |error| CheckpointError::Io { path, error }.into()
}

/// Every file the manifest's checkpoint needs is there, whole: its length and CRC-32 as the
/// manifest says. The first that is not is named.
pub fn verify(dir: &Path, manifest: &Manifest) -> Result<(), RunError> {
    for worker in 0..manifest.parts {
        for path in
            [part_path(dir, manifest.epoch, worker), revisits_path(dir, manifest.epoch, worker)]
        {
            let damaged = |what: String| -> RunError {
                CheckpointError::Damaged { path: path.clone(), what }.into()
            };
            let Some(sum) = manifest.files.get(&file_name(&path)) else {
                return Err(damaged("the manifest holds no checksum for it".into()));
            };
            let found = match FileSum::of_file(&path) {
                Ok(found) => found,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(CheckpointError::Missing { path, previous: false }.into())
                }
                Err(error) => return Err(CheckpointError::Io { path, error }.into()),
            };
            if found.bytes != sum.bytes {
                return Err(damaged(format!(
                    "{} bytes, the manifest says {}",
                    found.bytes, sum.bytes
                )));
            }
            if found.crc32 != sum.crc32 {
                return Err(damaged("its checksum does not match the manifest's".into()));
            }
        }
    }
    Ok(())
}

/// Opens (creating it) the checkpoint directory and reads its newest checkpoint whose files are
/// whole, if there is one. When the newest is damaged or incomplete and the previous one is
/// whole, that is said on stderr and the previous one becomes the newest (the newer files are
/// removed); when neither is whole, the error names the newest's damaged file.
pub fn open(dir: Option<&Path>) -> Result<Option<Manifest>, RunError> {
    let Some(dir) = dir else { return Ok(None) };
    std::fs::create_dir_all(dir).map_err(failed(dir.to_path_buf()))?;
    let newest = match load_manifest(dir) {
        // No manifest and no previous one: a new directory. A previous one alone means the
        // newest was removed: resumed from the previous, as from a damaged newest.
        Ok(None) if !dir.join(PREVIOUS).exists() => return Ok(None),
        Ok(None) => {
            Err(CheckpointError::Missing { path: dir.join(MANIFEST), previous: true }.into())
        }
        Ok(Some(manifest)) => verify(dir, &manifest).map(|()| manifest),
        Err(error) => Err(error),
    };
    let damage = match newest {
        Ok(manifest) => return Ok(Some(manifest)),
        Err(error) => error,
    };
    let previous_path = dir.join(PREVIOUS);
    let previous = match std::fs::read(&previous_path) {
        Ok(bytes) => decode_manifest(&bytes, &previous_path)
            .and_then(|m| verify(dir, &m).map(|()| (m, bytes))),
        Err(_) => return Err(damage),
    };
    let Ok((manifest, bytes)) = previous else { return Err(damage) };
    tracing::warn!(
        "{damage}; resuming from the previous checkpoint (epoch {}) instead",
        manifest.epoch
    );
    write_atomic(&dir.join(MANIFEST), &bytes).map_err(failed(dir.join(MANIFEST)))?;
    remove_files(dir, |epoch| epoch > manifest.epoch, |_| true);
    Ok(Some(manifest))
}

/// Removes the files of a checkpoint begun and not committed (of epochs past the committed
/// one's, or all of them when none was committed): a failed run leaves the directory as its
/// last commit left it.
pub fn discard_uncommitted(dir: &Path) {
    let committed = match load_manifest(dir) {
        Ok(Some(manifest)) => Some(manifest.epoch),
        Ok(None) if !dir.join(PREVIOUS).exists() => None,
        // A damaged or missing manifest beside a previous one: nothing is removed, the next
        // resume says what it finds.
        _ => return,
    };
    remove_files(dir, |epoch| committed.is_none_or(|c| epoch > c), |_| false);
}

/// Removes the checkpoint's epoch-numbered files (`part-`, `revisits-`, `sums-`, `reader-`,
/// `sink-`) whose epoch satisfies `old`, those of the per-epoch kinds (`reader-`, `sink-`,
/// `sums-`) only where `transient` says so too.
pub(crate) fn remove_files(dir: &Path, old: impl Fn(u64) -> bool, transient: impl Fn(u64) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some((prefix, rest)) = ["part-", "revisits-", "sums-", "reader-", "sink-"]
            .iter()
            .find_map(|p| Some((*p, name.strip_prefix(p)?)))
        else {
            continue;
        };
        let Some(epoch) = rest.split(['-', '.']).next().and_then(|e| e.parse::<u64>().ok()) else {
            continue;
        };
        let kept_whole = matches!(prefix, "part-" | "revisits-");
        if old(epoch) || (!kept_whole && transient(epoch)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// One worker's part of the checkpoint of `epoch`: its held pages (an LZ4 frame with block and
/// content checksums), the revisits it has seen (they are reported, not clustered), and the
/// digests of both for the manifest.
pub fn save_part(
    dir: &Path,
    epoch: u64,
    worker: usize,
    pages: &CurrentPages,
    revisits: &[Revisit],
) -> Result<(), RunError> {
    let path = part_path(dir, epoch, worker);
    let frame = lz4_flex::frame::FrameInfo::new().block_checksums(true).content_checksum(true);
    let mut part = FileSum::default();
    crate::files::write_with(&path, |file| {
        let mut summing = Summing::new(file);
        let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(frame, &mut summing);
        pages.save(&mut encoder)?;
        encoder.finish().map_err(std::io::Error::other)?;
        part = summing.sum();
        Ok(())
    })
    .map_err(failed(path.clone()))?;
    let revisits_file = revisits_path(dir, epoch, worker);
    let revisits = serde_json::to_vec(revisits).expect("revisits serialize");
    write_atomic(&revisits_file, &revisits).map_err(failed(revisits_file.clone()))?;
    let sums: BTreeMap<String, FileSum> =
        [(file_name(&path), part), (file_name(&revisits_file), FileSum::of(&revisits))]
            .into_iter()
            .collect();
    let path = sums_path(dir, epoch, worker);
    write_atomic(&path, &serde_json::to_vec(&sums).expect("sums serialize")).map_err(failed(path))
}

/// The digests of every worker's files of checkpoint `epoch` (`parts` workers), for its manifest.
pub fn collect_sums(
    dir: &Path,
    epoch: u64,
    parts: usize,
) -> Result<BTreeMap<String, FileSum>, RunError> {
    let mut files = BTreeMap::new();
    for worker in 0..parts {
        let path = sums_path(dir, epoch, worker);
        let bytes = std::fs::read(&path).map_err(failed(path.clone()))?;
        let sums: BTreeMap<String, FileSum> =
            serde_json::from_slice(&bytes).map_err(|e| damaged_json(&path, &e))?;
        files.extend(sums);
    }
    Ok(files)
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
    let identity = pages.identity().clone();
    for part in 0..manifest.parts {
        let mut buried = Vec::new();
        load_part(
            dir,
            manifest,
            part,
            |page| {
                if mine(identity.key(&page.url)) {
                    restore(pages, page);
                }
            },
            |url, date| {
                if mine(url) {
                    buried.push((url, date));
                }
            },
        )?;
        // After the pages: a tombstone never stands between a saved page and its URL.
        for (url, date) in buried {
            pages.restore_tombstone(url, date);
        }
    }
    Ok(())
}

/// The held pages (`each`) and tombstones (`buried`) of part `part` of a checkpoint.
fn load_part(
    dir: &Path,
    manifest: &Manifest,
    part: usize,
    each: impl FnMut(dupflow_operators::Page),
    buried: impl FnMut(u64, u64),
) -> Result<(), RunError> {
    let path = part_path(dir, manifest.epoch, part);
    let file = std::fs::File::open(&path).map_err(failed(path.clone()))?;
    let mut raw =
        std::io::BufReader::new(lz4_flex::frame::FrameDecoder::new(std::io::BufReader::new(file)));
    CurrentPages::load(&mut raw, each, buried).map_err(failed(path))
}

/// The record ids of the pages a checkpoint holds (an index's pages: `dedup --against`); none
/// for a directory without one.
pub fn held_record_ids(dir: &Path) -> Result<std::collections::HashSet<String>, RunError> {
    let mut ids = std::collections::HashSet::new();
    if let Some(manifest) = open(Some(dir))? {
        for part in 0..manifest.parts {
            load_part(
                dir,
                &manifest,
                part,
                |page| {
                    ids.insert(page.record_id.to_string());
                },
                |_, _| {},
            )?;
        }
    }
    Ok(ids)
}

/// Resume: the revisits worker `index` of `peers` takes back: its own part's when the worker
/// count is the checkpoint's, else worker 0 takes every part's.
pub fn restore_revisits(
    dir: &Path,
    manifest: &Manifest,
    peers: usize,
    index: usize,
) -> Result<Vec<Revisit>, RunError> {
    let mut revisits = Vec::new();
    let mine = |part: usize| if peers == manifest.parts { part == index } else { index == 0 };
    for part in (0..manifest.parts).filter(|p| mine(*p)) {
        let path = revisits_path(dir, manifest.epoch, part);
        let bytes = std::fs::read(&path).map_err(failed(path.clone()))?;
        let saved: Vec<Revisit> =
            serde_json::from_slice(&bytes).map_err(|e| damaged_json(&path, &e))?;
        revisits.extend(saved);
    }
    Ok(revisits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part's sum taken as it is written, in pieces of any size, and a file's sum read back
    /// a block at a time, are the sum of its bytes whole.
    #[test]
    fn sums_taken_while_writing_and_reading_are_the_sum_of_the_bytes() {
        use std::io::Write as _;
        let bytes: Vec<u8> =
            (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let mut summing = Summing::new(Vec::new());
        for piece in bytes.chunks(77_777) {
            summing.write_all(piece).unwrap();
        }
        assert_eq!(summing.sum(), FileSum::of(&bytes));
        assert_eq!(summing.inner, bytes);
        let dir = std::env::temp_dir().join(format!("dupflow-sums-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("part");
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(FileSum::of_file(&path).unwrap(), FileSum::of(&bytes));
        std::fs::write(&path, b"").unwrap();
        assert_eq!(FileSum::of_file(&path).unwrap(), FileSum::of(b""));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_checkpoint_from_before_cluster_anchors_is_refused_with_a_reason() {
        let path = Path::new("state");
        let written =
            Manifest { parts: 2, cluster_ids: CLUSTER_IDS, method: 7, ..Manifest::default() };
        let run = Provenance { method: 7, ..Provenance::default() };
        assert!(written.check_shape(1, 1, &run, path).is_ok());
        // A manifest of an earlier version has no `cluster_ids`.
        let mut json: serde_json::Value = serde_json::to_value(&written).unwrap();
        json.as_object_mut().unwrap().remove("cluster_ids");
        let old: Manifest = serde_json::from_value(json).unwrap();
        let err = old.check_shape(1, 1, &run, path).unwrap_err();
        assert!(matches!(err, RunError::Checkpoint(CheckpointError::ClusterIds { .. })), "{err}");
        assert!(err.to_string().contains("earliest page") && err.to_string().contains("afresh"));
    }
}
