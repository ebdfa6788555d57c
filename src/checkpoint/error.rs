//! Why a checkpoint cannot be written, read or continued: each kind with the advice it needs.

use std::path::PathBuf;

/// A checkpoint that cannot be used, by kind; each message names the file or directory and says
/// what to do.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file of the checkpoint could not be read or written (the message holds the OS error:
    /// the error line names it once).
    #[error("checkpoint {path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    /// A file the manifest names is not there; `previous`: the newest manifest is gone while
    /// the previous one is there.
    #[error("checkpoint {path}: missing{}", if *previous { ", though the previous checkpoint's manifest is there" } else { "" })]
    Missing { path: PathBuf, previous: bool },
    /// A file (or the manifest) is not what the manifest says it is.
    #[error("checkpoint {path}: damaged: {what}")]
    Damaged { path: PathBuf, what: String },
    /// Written in another checkpoint format.
    #[error(
        "checkpoint {path}: written in checkpoint format {found} (this dupflow reads format \
         {reads}, whose files carry checksums): start the run afresh with an empty checkpoint \
         directory"
    )]
    Format { path: PathBuf, found: u32, reads: u32 },
    /// Its change stream names clusters otherwise than this version's.
    #[error(
        "checkpoint {path}: written by an earlier dupflow, whose change stream named clusters by \
         their earliest page; this one names them by their anchor (a member chosen by a hash of \
         URL and record id), so the stream cannot be continued: start the run afresh"
    )]
    ClusterIds { path: PathBuf },
    /// Written with other shaping settings: each `key = written, now`.
    #[error(
        "checkpoint {path}: written with other settings ({}): its pages and change stream were \
         made with those, so it cannot be continued with these; resume with the checkpoint's \
         settings, or start the run afresh",
        changed.join("; ")
    )]
    OtherSettings { path: PathBuf, changed: Vec<String> },
    /// Written with another method (rules or method settings).
    #[error(
        "checkpoint {path}: written with another method (an earlier dupflow's rules, or other \
         [template], [fingerprint], [candidates], [verify] or [urls] settings): its change \
         stream holds clusters this run would form otherwise, so it cannot be continued; resume \
         with the settings and version it was written with, or start the run afresh"
    )]
    OtherMethod { path: PathBuf },
    /// Written by another number of processes or reader threads.
    #[error(
        "checkpoint {path}: written by {processes} process(es) with {readers} reader thread(s) \
         each; resume it with --processes {processes} and source.reader_threads = {readers}"
    )]
    OtherShape { path: PathBuf, processes: usize, readers: usize },
    /// Another run holds the directory.
    #[error(
        "checkpoint {path}: in use by another run (process {holder}): one run at a time resumes \
         and writes a checkpoint directory; wait for that run to end, or give this one another \
         --checkpoint"
    )]
    InUse { path: PathBuf, holder: String },
    /// The change stream is shorter than the checkpoint's length of it.
    #[error(
        "checkpoint {path}: the change stream is {found} bytes, shorter than the {expected} the \
         checkpoint continues from (deleted or cut since): the changes of the earlier epochs are \
         gone, so the stream cannot be continued; put the file back, or start afresh with an \
         empty checkpoint directory and output"
    )]
    ChangesCut { path: PathBuf, found: u64, expected: u64 },
}
