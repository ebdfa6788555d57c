//! Decompression of a WARC byte stream, detected by magic bytes (never by file name).
//!
//! gzip is read member by member, the way WARC files are written (one member per record): a
//! corrupt member is reported as a break in the stream and reading resumes at the next gzip
//! magic; a member cut short ends the stream with `truncated_gzip`. Whole-file gzip is just one
//! large member. LZ4 frames are read with lz4_flex, Zstandard frames (text corpora are often
//! `.jsonl.zst`) with the zstd crate. Anything else is read as it is.

use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::RecordErrorKind;

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
const READ_CHUNK: usize = 64 * 1024;

/// The compression a stream was found to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Lz4,
    Zstd,
}

/// One step of a decoded stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Chunk {
    /// `n` more bytes were appended.
    Data(usize),
    /// The stream was damaged here; bytes after this point do not continue what came before.
    Break(RecordErrorKind),
    /// The end of the stream (for now, when following a growing file).
    Eof,
}

/// Shared count of compressed bytes read from the source (for progress and metrics), and the
/// CRC-32 of those bytes (a checkpoint's claim on what the input held: `Prefix`).
#[derive(Clone, Default, Debug)]
pub struct ByteCounter {
    count: Arc<AtomicU64>,
    digest: Arc<Mutex<crc32fast::Hasher>>,
}

impl ByteCounter {
    pub fn get(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The bytes read from the source so far: how many, and their CRC-32.
    pub fn prefix(&self) -> Prefix {
        let digest = self.digest.lock().expect("digest").clone();
        Prefix { bytes: digest.total_len(), crc32: digest.finalize() }
    }
}

/// The first `bytes` bytes of an input and their CRC-32: what a checkpoint read of it, so that a
/// resume can tell the same input (perhaps grown) from another one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Prefix {
    pub bytes: u64,
    pub crc32: u32,
}

impl Prefix {
    /// The prefix of the file at `path` as long as this one, if the file is that long.
    pub fn of_file(&self, path: &std::path::Path) -> io::Result<Option<Prefix>> {
        self.of_reader(std::fs::File::open(path)?)
    }

    /// The prefix of the stream `reader` as long as this one, if the stream is that long.
    pub fn of_reader(&self, reader: impl Read) -> io::Result<Option<Prefix>> {
        let mut file = reader.take(self.bytes);
        let mut digest = crc32fast::Hasher::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            digest.update(&buf[..n]);
        }
        let bytes = digest.total_len();
        Ok((bytes == self.bytes).then(|| Prefix { bytes, crc32: digest.finalize() }))
    }
}

struct Counting {
    inner: Box<dyn Read + Send>,
    count: ByteCounter,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.digest.lock().expect("digest").update(&buf[..n]);
        self.count.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

type Source = BufReader<Counting>;

enum State {
    Plain(Source),
    Gzip(Box<GzipMembers>),
    Lz4(Box<lz4_flex::frame::FrameDecoder<Source>>),
    Zstd(Box<zstd::stream::read::Decoder<'static, Source>>),
    Done,
}

/// A decompressed byte stream that reports damage instead of failing.
pub struct Decoder {
    state: State,
    compression: Compression,
    counter: ByteCounter,
    scratch: Vec<u8>,
    /// Bytes decoded by `sniff` and not handed out yet, and the step that ended the sniff.
    pending: Vec<u8>,
    pending_end: Option<Chunk>,
}

impl Decoder {
    /// Sniffs the first bytes of `reader` and sets up the matching decoder.
    pub fn new(reader: Box<dyn Read + Send>) -> io::Result<Self> {
        let counter = ByteCounter::default();
        let mut source = BufReader::with_capacity(
            READ_CHUNK,
            Counting { inner: reader, count: counter.clone() },
        );
        let head = source.fill_buf()?;
        let (state, compression) = if head.starts_with(&GZIP_MAGIC[..2]) {
            (State::Gzip(Box::new(GzipMembers::new(source))), Compression::Gzip)
        } else if head.starts_with(&LZ4_MAGIC) {
            (State::Lz4(Box::new(lz4_flex::frame::FrameDecoder::new(source))), Compression::Lz4)
        } else if head.starts_with(&ZSTD_MAGIC) {
            // Concatenated frames are read as one stream.
            (
                State::Zstd(Box::new(zstd::stream::read::Decoder::with_buffer(source)?)),
                Compression::Zstd,
            )
        } else {
            (State::Plain(source), Compression::None)
        };
        Ok(Decoder {
            state,
            compression,
            counter,
            scratch: vec![0; READ_CHUNK],
            pending: Vec::new(),
            pending_end: None,
        })
    }

    pub fn compression(&self) -> Compression {
        self.compression
    }

    pub fn counter(&self) -> ByteCounter {
        self.counter.clone()
    }

    /// What the decoded stream holds (WARC, JSONL or Parquet), from its first bytes. The bytes
    /// read to tell are handed out again by `next_chunk`.
    pub fn sniff(&mut self) -> io::Result<Format> {
        while self.pending_end.is_none()
            && self.pending.len() < 4
            && self.pending.iter().all(u8::is_ascii_whitespace)
        {
            let mut out = std::mem::take(&mut self.pending);
            match self.decode(&mut out)? {
                Chunk::Data(_) => {}
                end => self.pending_end = Some(end),
            }
            self.pending = out;
        }
        Ok(Format::sniff(&self.pending))
    }

    /// Appends up to 64 KiB of decoded bytes to `out`.
    pub fn next_chunk(&mut self, out: &mut Vec<u8>) -> io::Result<Chunk> {
        if !self.pending.is_empty() {
            let n = self.pending.len();
            out.append(&mut self.pending);
            return Ok(Chunk::Data(n));
        }
        if let Some(end) = self.pending_end.take() {
            return Ok(end);
        }
        self.decode(out)
    }

    fn decode(&mut self, out: &mut Vec<u8>) -> io::Result<Chunk> {
        match &mut self.state {
            State::Done => Ok(Chunk::Eof),
            State::Plain(source) => {
                let n = source.read(&mut self.scratch)?;
                out.extend_from_slice(&self.scratch[..n]);
                Ok(if n == 0 { Chunk::Eof } else { Chunk::Data(n) })
            }
            State::Lz4(decoder) => match decoder.read(&mut self.scratch) {
                Ok(0) => {
                    // One frame per record is common: go on with the next frame, if any.
                    let State::Lz4(decoder) = std::mem::replace(&mut self.state, State::Done)
                    else {
                        unreachable!()
                    };
                    let mut source = decoder.into_inner();
                    if source.fill_buf()?.is_empty() {
                        return Ok(Chunk::Eof);
                    }
                    self.state = State::Lz4(Box::new(lz4_flex::frame::FrameDecoder::new(source)));
                    self.decode(out)
                }
                Ok(n) => {
                    out.extend_from_slice(&self.scratch[..n]);
                    Ok(Chunk::Data(n))
                }
                Err(_) => {
                    self.state = State::Done;
                    Ok(Chunk::Break(RecordErrorKind::InvalidLz4))
                }
            },
            State::Zstd(decoder) => match decoder.read(&mut self.scratch) {
                Ok(0) => {
                    self.state = State::Done;
                    Ok(Chunk::Eof)
                }
                Ok(n) => {
                    out.extend_from_slice(&self.scratch[..n]);
                    Ok(Chunk::Data(n))
                }
                // A damaged or cut frame: nothing after it can be located.
                Err(_) => {
                    self.state = State::Done;
                    Ok(Chunk::Break(RecordErrorKind::InvalidZstd))
                }
            },
            State::Gzip(members) => members.next_chunk(out),
        }
    }
}

/// Compressed bytes kept behind the current member's start, so that a damaged member can be
/// rescanned from its start + 1. Past this, the start is forgotten (resync from where we are).
const MAX_MEMBER_REWIND: usize = 64 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum GzState {
    Between,
    Header,
    Body,
    Trailer,
}

/// gzip members decoded one by one from our own buffer of compressed bytes, so that the exact
/// end of each member is known and a damaged member can be skipped without losing the next.
struct GzipMembers {
    source: Source,
    source_eof: bool,
    cbuf: Vec<u8>,
    pos: usize,
    member_start: Option<usize>,
    state: GzState,
    inflater: flate2::Decompress,
    crc: flate2::Crc,
    /// Bytes before the next magic were skipped (reported once the magic or the end is found).
    skipped: bool,
    /// Rescanning after a damaged member.
    in_damage: bool,
}

impl GzipMembers {
    fn new(source: Source) -> Self {
        GzipMembers {
            source,
            source_eof: false,
            cbuf: Vec::with_capacity(2 * READ_CHUNK),
            pos: 0,
            member_start: None,
            state: GzState::Between,
            inflater: flate2::Decompress::new(false),
            crc: flate2::Crc::new(),
            skipped: false,
            in_damage: false,
        }
    }

    /// Reads more compressed bytes; false at the end of the source.
    fn read_more(&mut self) -> io::Result<bool> {
        if self.source_eof {
            return Ok(false);
        }
        // Drop what is no longer needed before growing the buffer.
        let keep_from = self.member_start.unwrap_or(self.pos).min(self.pos);
        let keep_from = if self.pos - keep_from > MAX_MEMBER_REWIND {
            self.member_start = None;
            self.pos
        } else {
            keep_from
        };
        if keep_from > 0 {
            self.cbuf.drain(..keep_from);
            self.pos -= keep_from;
            self.member_start = self.member_start.map(|s| s - keep_from);
        }
        let buf = self.source.fill_buf()?;
        if buf.is_empty() {
            self.source_eof = true;
            return Ok(false);
        }
        let n = buf.len();
        self.cbuf.extend_from_slice(buf);
        self.source.consume(n);
        Ok(true)
    }

    /// After damage: rescan from just after the damaged member's start.
    fn resync(&mut self) -> Chunk {
        self.pos = self.member_start.map_or(self.pos, |s| s + 1).min(self.cbuf.len());
        self.member_start = None;
        self.state = GzState::Between;
        // The bytes up to the next magic are the rest of the damaged member: same error.
        self.skipped = false;
        self.in_damage = true;
        Chunk::Break(RecordErrorKind::InvalidGzip)
    }

    fn next_chunk(&mut self, out: &mut Vec<u8>) -> io::Result<Chunk> {
        loop {
            match self.state {
                GzState::Between => {
                    let avail = &self.cbuf[self.pos..];
                    if let Some(at) = find(avail, &GZIP_MAGIC) {
                        self.pos += at;
                        self.member_start = Some(self.pos);
                        self.state = GzState::Header;
                        let garbage = at > 0 || std::mem::take(&mut self.skipped);
                        if garbage && !std::mem::take(&mut self.in_damage) {
                            return Ok(Chunk::Break(RecordErrorKind::GarbageBetweenRecords));
                        }
                        continue;
                    }
                    if self.source_eof {
                        let garbage = (!avail.is_empty() || std::mem::take(&mut self.skipped))
                            && !std::mem::take(&mut self.in_damage);
                        self.pos = self.cbuf.len();
                        return Ok(if garbage {
                            Chunk::Break(RecordErrorKind::GarbageBetweenRecords)
                        } else {
                            Chunk::Eof
                        });
                    }
                    // Keep two bytes: a magic may straddle the next read.
                    let skip = avail.len().saturating_sub(2);
                    if skip > 0 {
                        self.pos += skip;
                        self.skipped = true;
                    }
                    self.read_more()?;
                }
                GzState::Header => match parse_gzip_header(&self.cbuf[self.pos..]) {
                    HeaderParse::Complete(len) => {
                        self.pos += len;
                        self.inflater.reset(false);
                        self.crc.reset();
                        self.state = GzState::Body;
                    }
                    HeaderParse::Invalid => return Ok(self.resync()),
                    HeaderParse::Incomplete => {
                        if !self.read_more()? {
                            return Ok(self.truncated());
                        }
                    }
                },
                GzState::Body => {
                    // Inflated straight into `out`'s spare room (at least a chunk's): no copy.
                    let (in_before, out_before) =
                        (self.inflater.total_in(), self.inflater.total_out());
                    let len_before = out.len();
                    out.reserve(READ_CHUNK);
                    let status = self.inflater.decompress_vec(
                        &self.cbuf[self.pos..],
                        out,
                        flate2::FlushDecompress::None,
                    );
                    let consumed = (self.inflater.total_in() - in_before) as usize;
                    let produced = (self.inflater.total_out() - out_before) as usize;
                    self.pos += consumed;
                    self.crc.update(&out[len_before..]);
                    match status {
                        Err(_) => return Ok(self.resync()),
                        Ok(flate2::Status::StreamEnd) => self.state = GzState::Trailer,
                        Ok(_) => {}
                    }
                    if produced > 0 {
                        return Ok(Chunk::Data(produced));
                    }
                    if consumed == 0 && self.state == GzState::Body && !self.read_more()? {
                        return Ok(self.truncated());
                    }
                }
                GzState::Trailer => {
                    if self.cbuf.len() - self.pos < 8 {
                        if !self.read_more()? {
                            return Ok(self.truncated());
                        }
                        continue;
                    }
                    let trailer = &self.cbuf[self.pos..self.pos + 8];
                    let crc = u32::from_le_bytes(trailer[..4].try_into().expect("4 bytes"));
                    let size = u32::from_le_bytes(trailer[4..].try_into().expect("4 bytes"));
                    if crc != self.crc.sum() || size != self.crc.amount() {
                        return Ok(self.resync());
                    }
                    self.pos += 8;
                    self.member_start = None;
                    self.state = GzState::Between;
                }
            }
        }
    }

    fn truncated(&mut self) -> Chunk {
        self.pos = self.cbuf.len();
        self.source_eof = true;
        self.member_start = None;
        self.state = GzState::Between;
        Chunk::Break(RecordErrorKind::TruncatedGzip)
    }
}

enum HeaderParse {
    Complete(usize),
    Incomplete,
    Invalid,
}

/// Parses a gzip member header (RFC 1952), including FEXTRA, FNAME, FCOMMENT and FHCRC.
fn parse_gzip_header(b: &[u8]) -> HeaderParse {
    if b.len() < 10 {
        return HeaderParse::Incomplete;
    }
    if b[..3] != GZIP_MAGIC || b[3] & 0xe0 != 0 {
        return HeaderParse::Invalid;
    }
    let flags = b[3];
    let mut at = 10usize;
    if flags & 0x04 != 0 {
        if b.len() < at + 2 {
            return HeaderParse::Incomplete;
        }
        at += 2 + u16::from_le_bytes([b[at], b[at + 1]]) as usize;
    }
    for flag in [0x08u8, 0x10] {
        if flags & flag != 0 {
            match b.get(at..).and_then(|rest| rest.iter().position(|&c| c == 0)) {
                Some(end) => at += end + 1,
                None => {
                    return if b.len() > 1 << 20 {
                        HeaderParse::Invalid
                    } else {
                        HeaderParse::Incomplete
                    }
                }
            }
        }
    }
    if flags & 0x02 != 0 {
        at += 2;
    }
    if b.len() < at {
        return HeaderParse::Incomplete;
    }
    HeaderParse::Complete(at)
}

/// Position of `needle` in `haystack` (SIMD substring search).
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// What an input holds, from its first decoded bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Warc,
    Jsonl,
    Parquet,
}

impl Format {
    /// The format of a stream starting with `head` (decoded bytes).
    pub fn sniff(head: &[u8]) -> Format {
        if head.starts_with(b"PAR1") {
            return Format::Parquet;
        }
        match head.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => Format::Jsonl,
            _ => Format::Warc,
        }
    }
}
