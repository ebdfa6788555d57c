//! WARC sources: files, directories, globs and stdin, to raw records.
//!
//! Reading is byte-level and never stops on bad input: compression is sniffed (`decode`),
//! records are framed and resynchronized after damage (`framing`), and every skipped stretch is
//! a [`RecordError`] with a short code, counted by the caller. `http` turns a record's block into
//! a decoded HTML document (status, chunking, content encoding, charset).

pub mod current;
pub mod decode;
pub mod follow;
pub mod framing;
pub mod http;
pub mod reader;

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use decode::{ByteCounter, Compression, Decoder};
pub use framing::Framer;

/// Why a stretch of input was skipped. The code is the metric label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordErrorKind {
    Io,
    InvalidGzip,
    TruncatedGzip,
    InvalidLz4,
    GarbageBetweenRecords,
    InvalidHeader,
    MissingContentLength,
    BadContentLength,
    TruncatedRecord,
    RecordTooLarge,
    UnsupportedFormat,
}

impl RecordErrorKind {
    /// Short code, used as the metric label (`invalid_gzip`, …).
    pub fn code(self) -> &'static str {
        match self {
            RecordErrorKind::Io => "io",
            RecordErrorKind::InvalidGzip => "invalid_gzip",
            RecordErrorKind::TruncatedGzip => "truncated_gzip",
            RecordErrorKind::InvalidLz4 => "invalid_lz4",
            RecordErrorKind::GarbageBetweenRecords => "garbage_between_records",
            RecordErrorKind::InvalidHeader => "invalid_header",
            RecordErrorKind::MissingContentLength => "missing_content_length",
            RecordErrorKind::BadContentLength => "bad_content_length",
            RecordErrorKind::TruncatedRecord => "truncated_record",
            RecordErrorKind::RecordTooLarge => "record_too_large",
            RecordErrorKind::UnsupportedFormat => "unsupported_format",
        }
    }
}

/// A skipped stretch of input: what, where (offset in the decompressed stream), and why.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{}: at decoded offset {offset}: {message}", kind.code())]
pub struct RecordError {
    pub kind: RecordErrorKind,
    pub offset: u64,
    pub message: String,
}

impl RecordError {
    pub fn new(kind: RecordErrorKind, offset: u64, message: String) -> Self {
        RecordError { kind, offset, message }
    }
}

/// Errors that stop reading one input (it cannot be opened at all).
#[derive(Debug, Error)]
pub enum SourceError {
    #[error("cannot open {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("bad glob pattern {pattern}: {message}")]
    Glob { pattern: String, message: String },
    #[error("no such input: {0}")]
    Missing(PathBuf),
}

/// One WARC (or ARC) record: version, header fields in order, and the raw block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRecord {
    pub version: String,
    pub headers: Vec<(String, String)>,
    pub block: Vec<u8>,
    /// Offset of the record in the decompressed stream.
    pub offset: u64,
    /// The block did not end exactly at its terminator: a few stray bytes were skipped.
    pub lenient_length: bool,
    /// The header's bytes as read, through its blank line (WARC records, when the framer was
    /// asked to keep them).
    pub raw_header: Option<Vec<u8>>,
}

impl RawRecord {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The record type, as the `warc` crate names it.
    pub fn warc_type(&self) -> warc::RecordType {
        warc::RecordType::from(self.header("WARC-Type").unwrap_or("unknown"))
    }

    /// Short lowercase name of the record type (the metric label).
    pub fn type_name(&self) -> String {
        self.warc_type().to_string()
    }
}

/// Where records come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    File(PathBuf),
    Stdin,
    /// A WARC compiled into the binary (the default input).
    Embedded {
        name: &'static str,
        bytes: &'static [u8],
    },
}

impl Input {
    pub fn name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Stdin => "-".to_string(),
            Input::Embedded { name, .. } => format!("(embedded) {name}"),
        }
    }

    /// Opens the input as a decoded stream.
    pub fn open(&self) -> Result<Decoder, SourceError> {
        let reader: Box<dyn Read + Send> = match self {
            Input::File(path) => Box::new(File::open(path).map_err(|source| SourceError::Open { path: path.clone(), source })?),
            Input::Stdin => Box::new(io::stdin()),
            Input::Embedded { bytes, .. } => Box::new(io::Cursor::new(*bytes)),
        };
        let path = match self {
            Input::File(p) => p.clone(),
            _ => PathBuf::from(self.name()),
        };
        Decoder::new(reader).map_err(|source| SourceError::Open { path, source })
    }

    /// Size in bytes, when known (for progress).
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
            Input::Stdin => None,
            Input::Embedded { bytes, .. } => Some(bytes.len() as u64),
        }
    }
}

/// Whether a file in a directory looks like crawl output (`*.warc*`, `*.arc*`).
fn looks_like_warc(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
    !name.starts_with('.') && (name.contains(".warc") || name.contains(".arc"))
}

/// The WARC/ARC files under `dir` (recursively), unreadable entries left out.
fn walk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.is_dir() {
            walk_files(&path, out);
        } else if looks_like_warc(&path) {
            out.push(path);
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<Input>) -> Result<(), SourceError> {
    let entries = std::fs::read_dir(dir).map_err(|source| SourceError::Open { path: dir.to_path_buf(), source })?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, out)?;
        } else if looks_like_warc(&path) {
            out.push(Input::File(path));
        }
    }
    Ok(())
}

/// Expands command-line inputs: `-` is stdin, a directory is its WARC/ARC files (recursively,
/// sorted by name), a pattern with `*?[` is a glob, anything else a file.
pub fn expand(args: &[String]) -> Result<Vec<Input>, SourceError> {
    let mut out = Vec::new();
    for arg in args {
        if arg == "-" {
            out.push(Input::Stdin);
            continue;
        }
        let path = Path::new(arg);
        if path.is_dir() {
            walk(path, &mut out)?;
        } else if path.exists() {
            out.push(Input::File(path.to_path_buf()));
        } else if arg.contains(['*', '?', '[']) {
            let paths = glob::glob(arg).map_err(|e| SourceError::Glob { pattern: arg.clone(), message: e.to_string() })?;
            let mut matched: Vec<PathBuf> = paths.filter_map(Result::ok).filter(|p| p.is_file()).collect();
            matched.sort();
            out.extend(matched.into_iter().map(Input::File));
        } else {
            return Err(SourceError::Missing(path.to_path_buf()));
        }
    }
    Ok(out)
}

/// Reads every record of one input, calling `each` with records and skipped stretches.
pub fn read_records<F>(input: &Input, max_record_bytes: u64, mut each: F) -> Result<(), SourceError>
where
    F: FnMut(Result<RawRecord, RecordError>),
{
    let decoder = input.open()?;
    let mut framer = Framer::new(decoder, max_record_bytes);
    while let Some(item) = framer.next_record() {
        each(item);
    }
    Ok(())
}
