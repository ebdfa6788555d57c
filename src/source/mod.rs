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
pub mod ingest;
pub mod reader;
pub mod split;
pub mod text;
pub mod urls;
pub mod wacz;

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use decode::{ByteCounter, Compression, Decoder, Prefix};
pub use framing::Framer;

/// Why a stretch of input was skipped. The code is the metric label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordErrorKind {
    Io,
    InvalidGzip,
    TruncatedGzip,
    InvalidLz4,
    InvalidZstd,
    GarbageBetweenRecords,
    InvalidHeader,
    /// A header block longer than the framer reads (64 KiB) without its end.
    HeaderTooLarge,
    MissingContentLength,
    BadContentLength,
    TruncatedRecord,
    RecordTooLarge,
    UnsupportedFormat,
    /// A text corpus row that is not a JSON object.
    InvalidJson,
    /// A Parquet file whose content cannot be read (the file is skipped whole).
    InvalidParquet,
    /// A ZIP (WACZ) archive whose directory cannot be read or holds no WARC file (skipped whole).
    InvalidArchive,
    /// A text corpus row without its id or text field (or with one of the wrong type).
    MissingField,
}

impl RecordErrorKind {
    /// Damage only the end of a stream has: the stream ends inside a record or gzip member.
    /// Such a record may be whole when the input is read again (a file still being written).
    pub fn ends_the_input(self) -> bool {
        matches!(self, RecordErrorKind::TruncatedRecord | RecordErrorKind::TruncatedGzip)
    }

    /// Short code, used as the metric label (`invalid_gzip`, …).
    pub fn code(self) -> &'static str {
        match self {
            RecordErrorKind::Io => "io",
            RecordErrorKind::InvalidGzip => "invalid_gzip",
            RecordErrorKind::TruncatedGzip => "truncated_gzip",
            RecordErrorKind::InvalidLz4 => "invalid_lz4",
            RecordErrorKind::InvalidZstd => "invalid_zstd",
            RecordErrorKind::GarbageBetweenRecords => "garbage_between_records",
            RecordErrorKind::InvalidHeader => "invalid_header",
            RecordErrorKind::HeaderTooLarge => "header_too_large",
            RecordErrorKind::MissingContentLength => "missing_content_length",
            RecordErrorKind::BadContentLength => "bad_content_length",
            RecordErrorKind::TruncatedRecord => "truncated_record",
            RecordErrorKind::RecordTooLarge => "record_too_large",
            RecordErrorKind::UnsupportedFormat => "unsupported_format",
            RecordErrorKind::InvalidJson => "invalid_json",
            RecordErrorKind::InvalidParquet => "invalid_parquet",
            RecordErrorKind::InvalidArchive => "invalid_archive",
            RecordErrorKind::MissingField => "missing_field",
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
    #[error("cannot open {path}: {error}")]
    Open { path: PathBuf, error: io::Error },
    #[error("bad glob pattern {pattern}: {message}")]
    Glob { pattern: String, message: String },
    #[error("no such input: {0}")]
    Missing(PathBuf),
    #[cfg(feature = "parquet")]
    #[error(transparent)]
    Parquet(#[from] text::ParquetError),
    #[error("{0}")]
    Unsupported(String),
    /// A ZIP (WACZ) archive that cannot be read as one: its directory, or no WARC file in it.
    #[error("{path}: cannot read it as a WACZ archive: {message}")]
    Archive { path: PathBuf, message: String },
}

/// Which inputs one process of a cluster reads: every input is read by exactly one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReaderShare {
    pub process: usize,
    pub processes: usize,
}

impl ReaderShare {
    pub const WHOLE: ReaderShare = ReaderShare { process: 0, processes: 1 };

    /// The inputs this process reads, from the list every process is given. A file larger than
    /// twice a unit (a process's share of all bytes, halved; at least 256 KiB) is cut at record
    /// starts into ranges of about a unit (`split`); then the largest piece first, each to the
    /// process with the fewest bytes so far (ties: the lowest index), so the shares are even
    /// and the same list gives the same shares everywhere. Inputs of unknown size (stdin) go
    /// to process 0.
    pub fn inputs(&self, inputs: Vec<Input>) -> Vec<Input> {
        if self.processes <= 1 {
            return inputs;
        }
        let total: u64 = inputs.iter().filter_map(Input::size).sum();
        let unit = (total / (2 * self.processes as u64)).max(256 << 10);
        let inputs: Vec<Input> = inputs
            .into_iter()
            .flat_map(|input| match (&input, input.size()) {
                (Input::File(path), Some(size)) if size > 2 * unit => {
                    match split::record_ranges(path, size.div_ceil(unit) as usize) {
                        Ok(ranges) if ranges.len() > 1 => ranges
                            .into_iter()
                            .map(|(start, end)| Input::Range { path: path.clone(), start, end })
                            .collect(),
                        _ => vec![input],
                    }
                }
                _ => vec![input],
            })
            .collect();
        let mut order: Vec<(usize, u64)> =
            inputs.iter().enumerate().map(|(i, input)| (i, input.size().unwrap_or(0))).collect();
        order.sort_by_key(|&(i, size)| (std::cmp::Reverse(size), i));
        let mut load = vec![0u64; self.processes];
        let mut mine = vec![false; inputs.len()];
        for (i, size) in order {
            let to = if inputs[i].size().is_none() {
                0
            } else {
                (0..self.processes).min_by_key(|&p| (load[p], p)).unwrap_or(0)
            };
            load[to] += size;
            mine[i] = to == self.process;
        }
        // In the order given: a process reads its inputs in the user's order.
        inputs.into_iter().zip(mine).filter_map(|(input, mine)| mine.then_some(input)).collect()
    }

    /// Followed targets (files, stdin) by their place in the list.
    pub fn takes_index(&self, index: usize) -> bool {
        index % self.processes.max(1) == self.process
    }

    /// Files that appear in a followed directory, by name: the same name, the same process.
    pub fn takes_name(&self, name: &str) -> bool {
        let file = std::path::Path::new(name)
            .file_name()
            .map_or(name.to_string(), |f| f.to_string_lossy().to_string());
        self.processes <= 1
            || dupflow_operators::runtime::hashing::stable_hash(&file) % self.processes as u64
                == self.process as u64
    }
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
    /// Bytes `[start, end)` of a file, cut at record starts (see `split`): one process's share
    /// of a large file in a cluster.
    Range {
        path: PathBuf,
        start: u64,
        end: u64,
    },
    Stdin,
    /// A WARC compiled into the binary (the default input).
    Embedded {
        name: &'static str,
        bytes: &'static [u8],
    },
    /// A WACZ archive: its WARC files read as one stream (`wacz`).
    Wacz(PathBuf),
}

impl Input {
    pub fn name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Range { path, start, end } => format!("{}@{start}-{end}", path.display()),
            Input::Stdin => "-".to_string(),
            Input::Embedded { name, .. } => format!("(embedded) {name}"),
            Input::Wacz(p) => p.display().to_string(),
        }
    }

    /// Opens the input as a decoded stream.
    pub fn open(&self) -> Result<Decoder, SourceError> {
        let reader: Box<dyn Read + Send> = match self {
            Input::File(path) => Box::new(
                File::open(path)
                    .map_err(|error| SourceError::Open { path: path.clone(), error })?,
            ),
            Input::Range { path, start, end } => {
                let mut file = File::open(path)
                    .map_err(|error| SourceError::Open { path: path.clone(), error })?;
                use std::io::Seek as _;
                file.seek(io::SeekFrom::Start(*start))
                    .map_err(|error| SourceError::Open { path: path.clone(), error })?;
                Box::new(file.take(end - start))
            }
            Input::Stdin => Box::new(io::stdin()),
            Input::Embedded { bytes, .. } => Box::new(io::Cursor::new(*bytes)),
            Input::Wacz(path) => Box::new(wacz::Members::open(path)?),
        };
        let path = match self {
            Input::File(p) | Input::Wacz(p) => p.clone(),
            _ => PathBuf::from(self.name()),
        };
        Decoder::new(reader).map_err(|error| SourceError::Open { path, error })
    }

    /// Size in bytes, when known (for progress).
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
            Input::Range { start, end, .. } => Some(end - start),
            Input::Stdin => None,
            Input::Embedded { bytes, .. } => Some(bytes.len() as u64),
            Input::Wacz(p) => wacz::stored_bytes(p),
        }
    }

    /// A file named as an input: a ZIP archive is a WACZ (whatever its name), any other file
    /// is read as a stream of its format.
    pub fn of_file(path: PathBuf) -> Input {
        if wacz::is_archive(&path) {
            Input::Wacz(path)
        } else {
            Input::File(path)
        }
    }
}

/// Whether a file in a directory looks like an input: crawl output (`*.warc*`, `*.arc*`,
/// `*.wacz`) or a text corpus (`*.jsonl*`, `*.ndjson*`, `*.parquet`).
fn looks_like_input(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
    !name.starts_with('.')
        && [".warc", ".arc", ".wacz", ".jsonl", ".ndjson", ".parquet"]
            .iter()
            .any(|ext| name.contains(ext))
}

/// One item of an input: a WARC (or ARC) record, or a text corpus row.
#[derive(Clone, Debug)]
pub enum Item {
    Record(RawRecord),
    Text(text::TextDoc),
}

enum Reading {
    Warc(Box<Framer>),
    Jsonl(Box<text::JsonlRows>),
    #[cfg(feature = "parquet")]
    Parquet(Box<text::ParquetRows>),
    /// A format this stream cannot be read as: one error, then the end.
    Failed(Option<RecordError>),
}

/// The items of one input, whatever its format (found from its content).
pub struct Items {
    reading: Reading,
    counter: Option<ByteCounter>,
    /// Bytes of a Parquet file, counted as read once it is.
    size: u64,
    done: bool,
}

impl Items {
    /// The items of a decoded stream: WARC/ARC records or JSONL rows.
    pub fn from_decoder(
        mut decoder: Decoder,
        max_record_bytes: u64,
        text: &text::TextConfig,
    ) -> Items {
        let counter = Some(decoder.counter());
        let reading = match decoder.sniff() {
            Ok(decode::Format::Warc) => {
                Reading::Warc(Box::new(Framer::new(decoder, max_record_bytes)))
            }
            Ok(decode::Format::Jsonl) => Reading::Jsonl(Box::new(text::JsonlRows::new(
                decoder,
                text.clone(),
                max_record_bytes,
            ))),
            Ok(decode::Format::Parquet) => Reading::Failed(Some(RecordError::new(
                RecordErrorKind::UnsupportedFormat,
                0,
                "a Parquet file is read by random access: give it as a file, not a stream".into(),
            ))),
            Err(e) => {
                Reading::Failed(Some(RecordError::new(RecordErrorKind::Io, 0, e.to_string())))
            }
        };
        Items { reading, counter, size: 0, done: false }
    }

    /// What an input holds (WARC/ARC, JSONL or Parquet), from its first bytes.
    pub fn format(input: &Input) -> Result<decode::Format, SourceError> {
        if let Input::File(path) = input {
            let mut magic = [0u8; 4];
            if File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
                && &magic == b"PAR1"
            {
                return Ok(decode::Format::Parquet);
            }
        }
        let path = PathBuf::from(input.name());
        input.open()?.sniff().map_err(|error| SourceError::Open { path, error })
    }

    /// Opens an input: a Parquet file by random access, anything else as a decoded stream.
    pub fn open(
        input: &Input,
        max_record_bytes: u64,
        text: &text::TextConfig,
    ) -> Result<Items, SourceError> {
        if let (Input::File(path), decode::Format::Parquet) = (input, Items::format(input)?) {
            #[cfg(feature = "parquet")]
            {
                let rows = text::ParquetRows::open(path, text)?;
                return Ok(Items {
                    reading: Reading::Parquet(Box::new(rows)),
                    counter: None,
                    size: input.size().unwrap_or(0),
                    done: false,
                });
            }
            #[cfg(not(feature = "parquet"))]
            return Err(SourceError::Unsupported(format!(
                "{}: Parquet input needs dupflow built with the `parquet` feature",
                path.display()
            )));
        }
        Ok(Items::from_decoder(input.open()?, max_record_bytes, text))
    }

    pub fn next_item(&mut self) -> Option<Result<Item, RecordError>> {
        let next = match &mut self.reading {
            Reading::Warc(framer) => framer.next_record().map(|r| r.map(Item::Record)),
            Reading::Jsonl(rows) => rows.next_doc().map(|r| r.map(Item::Text)),
            #[cfg(feature = "parquet")]
            Reading::Parquet(rows) => rows.next_doc().map(|r| r.map(Item::Text)),
            Reading::Failed(error) => error.take().map(Err),
        };
        self.done |= next.is_none();
        next
    }

    /// The bytes read from the input so far and their digest (`None` for Parquet, read by
    /// random access).
    pub fn counter(&self) -> Option<ByteCounter> {
        self.counter.clone()
    }

    /// Compressed bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        match &self.counter {
            Some(counter) => counter.get(),
            None if self.done => self.size,
            None => 0,
        }
    }
}

/// The WARC/ARC files under `dir` (recursively), unreadable entries left out.
fn walk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.is_dir() {
            walk_files(&path, out);
        } else if looks_like_input(&path) {
            out.push(path);
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<Input>) -> Result<(), SourceError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| SourceError::Open { path: dir.to_path_buf(), error })?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, out)?;
        } else if looks_like_input(&path) {
            out.push(Input::of_file(path));
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
            out.push(Input::of_file(path.to_path_buf()));
        } else if arg.contains(['*', '?', '[']) {
            let paths = glob::glob(arg)
                .map_err(|e| SourceError::Glob { pattern: arg.clone(), message: e.to_string() })?;
            let mut matched: Vec<PathBuf> =
                paths.filter_map(Result::ok).filter(|p| p.is_file()).collect();
            matched.sort();
            out.extend(matched.into_iter().map(Input::of_file));
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
