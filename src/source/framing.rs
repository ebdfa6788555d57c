//! Record framing: a decoded byte stream to WARC (or ARC) records, resynchronizing after damage.
//!
//! The header block of a WARC record is parsed with the `warc` crate's parser; the block is
//! then taken by its Content-Length, and the record must be followed by its terminator (any run
//! of CR/LF) and then the next `WARC/` line or the end. When that check fails, the length was
//! wrong: the record is skipped as `bad_content_length` and reading resumes at the next line
//! that starts with `WARC/` after the bad record's headers, so a record that swallowed the start
//! of the next one does not take it with it. Damage reported by the decoder (a corrupt or
//! truncated gzip member) ends the record in progress with that error, and reading resumes
//! after the damage. Every skipped stretch is one counted error; nothing after it is lost.
//!
//! ARC files (`filedesc://` first) are read too: one header line per record, the length last.

use super::decode::{find, Chunk, Decoder};
use super::{RawRecord, RecordError, RecordErrorKind};

const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Look-ahead after a record's block: enough for the terminator and the next `WARC/`.
const LOOKAHEAD: usize = 32;
/// How far into the block of a record over `max_record_bytes` a record start is looked for
/// before the record is skipped whole.
const RESYNC_WINDOW: usize = 1 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Unknown,
    Warc,
    Arc,
}

/// Frames records out of a decoded stream.
pub struct Framer {
    decoder: Decoder,
    buf: Vec<u8>,
    /// Start of unconsumed bytes in `buf`.
    start: usize,
    /// Offset in the decoded stream of `buf[0]`.
    base: u64,
    eof: bool,
    /// Position in `buf` where the decoder reported damage, and what it was.
    damage: Option<(usize, RecordErrorKind)>,
    format: Format,
    max_record_bytes: u64,
    /// Bytes of an oversized block still to discard.
    discarding: u64,
    /// Keep each WARC record's header bytes (`RawRecord::raw_header`), for byte-exact copies.
    raw_headers: bool,
}

impl Framer {
    pub fn new(decoder: Decoder, max_record_bytes: u64) -> Self {
        Framer {
            decoder,
            buf: Vec::with_capacity(256 * 1024),
            start: 0,
            base: 0,
            eof: false,
            damage: None,
            format: Format::Unknown,
            max_record_bytes,
            discarding: 0,
            raw_headers: false,
        }
    }

    /// Keeps each WARC record's header bytes as read (`dupflow dedup` copies records byte for
    /// byte); the pipeline does not need them.
    pub fn with_raw_headers(mut self) -> Self {
        self.raw_headers = true;
        self
    }

    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    /// Reads more decoded bytes; false when nothing more can come before the damage mark or end.
    fn fill(&mut self) -> Result<bool, RecordError> {
        if self.eof || self.damage.is_some() {
            return Ok(false);
        }
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.base += self.start as u64;
            self.start = 0;
        }
        match self.decoder.next_chunk(&mut self.buf) {
            Ok(Chunk::Data(_)) => Ok(true),
            Ok(Chunk::Eof) => {
                self.eof = true;
                Ok(false)
            }
            Ok(Chunk::Break(kind)) => {
                self.damage = Some((self.buf.len(), kind));
                Ok(false)
            }
            Err(e) => {
                self.eof = true;
                Err(RecordError::new(RecordErrorKind::Io, self.offset(), e.to_string()))
            }
        }
    }

    fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    fn available(&self) -> &[u8] {
        let end = self.damage.map_or(self.buf.len(), |(at, _)| at);
        &self.buf[self.start..end]
    }

    /// At a damage mark with nothing before it: report it once and step over it.
    fn take_damage(&mut self) -> Option<RecordError> {
        let (at, kind) = self.damage?;
        if self.start >= at || self.available().iter().all(|b| b.is_ascii_whitespace()) {
            let offset = self.offset();
            self.start = at.max(self.start);
            self.damage = None;
            return Some(RecordError::new(
                kind,
                offset,
                "the compressed stream is damaged here".into(),
            ));
        }
        None
    }

    /// Ends the record in progress at the damage mark (if any) or at the end of the stream.
    fn cut_short(&mut self, offset: u64) -> RecordError {
        match self.damage.take() {
            Some((at, kind)) => {
                self.start = at;
                RecordError::new(kind, offset, "record cut by damaged compressed data".into())
            }
            None => {
                self.start = self.buf.len();
                RecordError::new(
                    RecordErrorKind::TruncatedRecord,
                    offset,
                    "the stream ends inside this record".into(),
                )
            }
        }
    }

    /// The next record, or an error for a skipped stretch; `None` at the end.
    pub fn next_record(&mut self) -> Option<Result<RawRecord, RecordError>> {
        loop {
            if self.discarding > 0 {
                let n = (self.available().len() as u64).min(self.discarding);
                self.start += n as usize;
                self.discarding -= n;
                if self.discarding > 0 {
                    match self.fill() {
                        Ok(true) => continue,
                        Ok(false) => {
                            self.discarding = 0;
                            if let Some(e) = self.take_damage() {
                                return Some(Err(e));
                            }
                            continue;
                        }
                        Err(e) => return Some(Err(e)),
                    }
                }
            }
            // Skip white space between records.
            let skip = self.available().iter().take_while(|b| b.is_ascii_whitespace()).count();
            self.start += skip;
            if self.available().len() < 12 {
                match self.fill() {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => return Some(Err(e)),
                }
                if let Some(e) = self.take_damage() {
                    return Some(Err(e));
                }
                if self.available().is_empty() {
                    return None;
                }
            }
            if self.format == Format::Unknown {
                self.format = if self.available().starts_with(b"filedesc://") {
                    Format::Arc
                } else {
                    Format::Warc
                };
                if self.available().starts_with(b"PK\x03\x04") {
                    let offset = self.offset();
                    self.start = self.buf.len();
                    self.eof = true;
                    return Some(Err(RecordError::new(
                        RecordErrorKind::UnsupportedFormat,
                        offset,
                        "a ZIP archive (WACZ?) as a stream: give it as a file, which is read by its directory".into(),
                    )));
                }
            }
            let result = match self.format {
                Format::Arc => self.next_arc(),
                _ => self.next_warc(),
            };
            match result {
                Step::Record(r) => return Some(Ok(r)),
                Step::Error(e) => return Some(Err(e)),
                Step::NeedMore if self.eof || self.damage.is_some() => {
                    let offset = self.offset();
                    return Some(Err(self.cut_short(offset)));
                }
                Step::NeedMore => {
                    if let Err(e) = self.fill() {
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    /// Skips to the next `WARC/` version line at or after `from` (an index in `buf`),
    /// reading on as far as needed; stops at damage or the end.
    fn skip_to_next_warc(&mut self, mut from: usize) {
        loop {
            let end = self.damage.map_or(self.buf.len(), |(at, _)| at);
            let from_clamped = from.min(end);
            if let Some(at) = find_version_line(&self.buf[from_clamped..end]) {
                self.start = from_clamped + at;
                return;
            }
            // Keep a tail in case the marker straddles the next read.
            self.start = end.saturating_sub(6).max(from_clamped).max(self.start);
            match self.fill() {
                Ok(true) => from = self.start,
                _ => {
                    self.start = self.damage.map_or(self.buf.len(), |(at, _)| at);
                    return;
                }
            }
        }
    }

    /// The header of the WARC record at the start of the buffer: its length and what it says;
    /// or the step to take instead (garbage skipped, a header too large or unparsable, more
    /// bytes needed).
    fn warc_header(&mut self, offset: u64) -> Result<(usize, Headers), Step> {
        let avail = self.available();
        if !avail.starts_with(b"WARC/") {
            // Garbage: skip to the next record, however far it is, as one error.
            self.skip_to_next_warc(self.start);
            return Err(Step::Error(RecordError::new(
                RecordErrorKind::GarbageBetweenRecords,
                offset,
                "bytes that are not a WARC record were skipped".into(),
            )));
        }
        let header_len = match header_end(&avail[..avail.len().min(MAX_HEADER_BYTES)]) {
            Some(n) => n,
            None if avail.len() >= MAX_HEADER_BYTES => {
                self.skip_to_next_warc(self.start + 1);
                return Err(Step::Error(RecordError::new(
                    RecordErrorKind::HeaderTooLarge,
                    offset,
                    format!(
                        "a header block over {} KiB (no blank line ends it within that)",
                        MAX_HEADER_BYTES / 1024
                    ),
                )));
            }
            None => return Err(Step::NeedMore),
        };
        match parse_headers(&avail[..header_len]) {
            Ok(parsed) => Ok((header_len, parsed)),
            Err((kind, message)) => {
                self.skip_to_next_warc(self.start + 1);
                Err(Step::Error(RecordError::new(kind, offset, message)))
            }
        }
    }

    /// A record whose length is over `max_record_bytes`: a record to skip, or a damaged length.
    /// A record that starts within the next `RESYNC_WINDOW` bytes (its header whole, as
    /// parsed) says the length ran past the end of its block: reading resumes there.
    fn over_cap(&mut self, offset: u64, header_len: usize, content_length: u64) -> Step {
        let avail = self.available();
        let window = header_len + RESYNC_WINDOW;
        if avail.len() < window && !(self.eof || self.damage.is_some()) {
            return Step::NeedMore;
        }
        if let Some(at) = embedded_record(&avail[header_len..avail.len().min(window)]) {
            return self.resync_in_block(offset, header_len + at, format!(
                "Content-Length {content_length} runs past the next record, which starts {at} bytes into the block"
            ));
        }
        self.start += header_len;
        self.discarding = content_length;
        Step::Error(RecordError::new(
            RecordErrorKind::RecordTooLarge,
            offset,
            format!("record of {content_length} bytes is over max_record_bytes"),
        ))
    }

    fn next_warc(&mut self) -> Step {
        let offset = self.offset();
        let (header_len, (version, headers, content_length)) = match self.warc_header(offset) {
            Ok(header) => header,
            Err(step) => return step,
        };
        if content_length > self.max_record_bytes {
            return self.over_cap(offset, header_len, content_length);
        }
        let avail = self.available();
        let content_length = content_length as usize;
        let needed = header_len + content_length;
        // A block followed by its terminator is complete without the look-ahead: a followed
        // file's last record must not wait for the next one.
        let terminated_here = avail
            .get(needed..)
            .is_some_and(|a| a.starts_with(b"\r\n\r\n") || a.starts_with(b"\n\n"));
        if avail.len() < needed + LOOKAHEAD
            && !terminated_here
            && !(self.eof || self.damage.is_some())
        {
            return Step::NeedMore;
        }
        if avail.len() < needed {
            // The input ends before the block does: when a whole record stands inside what is
            // there, the length was wrong (damage to step over), else the record is cut short.
            if let Some(at) = embedded_record(&avail[header_len..]) {
                return self.resync_in_block(offset, header_len + at, format!(
                    "Content-Length {content_length} runs past the end of the input, over the record {at} bytes into the block"
                ));
            }
            return Step::Error(self.cut_short(offset));
        }
        // The terminator, then the next record or the end.
        let after = &avail[needed..];
        let ws = after.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let rest = &after[ws..];
        let finished = self.eof || self.damage.is_some();
        // A proper terminator ends the record, whatever follows (garbage is the next step's
        // business) — unless the block itself holds a terminator and a `WARC/` line: then the
        // length ran into the next record. A few stray bytes before the next record (a length
        // off by a little, as some old tools wrote) are tolerated and counted.
        let block = &avail[header_len..needed];
        let ran_into_next =
            find(block, b"\r\n\r\nWARC/").is_some() || find(block, b"\n\nWARC/").is_some();
        let terminated = after.starts_with(b"\r\n\r\n") || after.starts_with(b"\n\n");
        let near_next = find_version_line(&after[..after.len().min(LOOKAHEAD)]);
        let mut lenient_length = false;
        let consumed;
        if !ran_into_next
            && (terminated || rest.starts_with(b"WARC/") || (rest.is_empty() && finished))
        {
            consumed = needed + ws;
        } else if let (false, Some(next)) = (ran_into_next, near_next) {
            lenient_length = true;
            consumed = needed + next;
        } else {
            if !finished && after.len() < LOOKAHEAD {
                return Step::NeedMore;
            }
            self.skip_to_next_warc(self.start + header_len);
            return Step::Error(RecordError::new(
                RecordErrorKind::BadContentLength,
                offset,
                format!("Content-Length {content_length} does not end at a record boundary"),
            ));
        }
        let raw_header = self.raw_headers.then(|| avail[..header_len].to_vec());
        let block = block.to_vec();
        self.start += consumed;
        Step::Record(RawRecord { version, headers, block, offset, lenient_length, raw_header })
    }

    /// The record at `offset` claimed a length past a record that starts `at` bytes into it:
    /// its bytes up to there are skipped as `bad_content_length`, and reading resumes there.
    fn resync_in_block(&mut self, offset: u64, at: usize, message: String) -> Step {
        self.start += at;
        Step::Error(RecordError::new(RecordErrorKind::BadContentLength, offset, message))
    }

    fn next_arc(&mut self) -> Step {
        let offset = self.offset();
        let avail = self.available();
        let Some(line_end) = avail.iter().position(|&b| b == b'\n') else {
            if avail.len() > MAX_HEADER_BYTES {
                self.start = self.buf.len();
                return Step::Error(RecordError::new(
                    RecordErrorKind::HeaderTooLarge,
                    offset,
                    "an ARC header line over 64 KiB".into(),
                ));
            }
            return Step::NeedMore;
        };
        let line = String::from_utf8_lossy(&avail[..line_end]).trim_end().to_string();
        let fields: Vec<&str> = line.split(' ').filter(|f| !f.is_empty()).collect();
        let length = fields.last().and_then(|l| l.parse::<u64>().ok());
        let (Some(length), true) = (length, fields.len() >= 5) else {
            self.start += line_end + 1;
            return Step::Error(RecordError::new(
                RecordErrorKind::InvalidHeader,
                offset,
                format!("ARC header line without a valid length: {line:.120}"),
            ));
        };
        if length > self.max_record_bytes {
            self.start += line_end + 1;
            self.discarding = length;
            return Step::Error(RecordError::new(
                RecordErrorKind::RecordTooLarge,
                offset,
                "ARC record over max_record_bytes".into(),
            ));
        }
        let needed = line_end + 1 + length as usize;
        if avail.len() < needed {
            return Step::NeedMore;
        }
        let url = fields[0].to_string();
        let date = fields[2];
        let block = avail[line_end + 1..needed].to_vec();
        self.start += needed;
        let warc_type = if url.starts_with("filedesc:") { "warcinfo" } else { "response" };
        let mut headers = vec![
            ("WARC-Type".to_string(), warc_type.to_string()),
            ("WARC-Target-URI".to_string(), url),
            ("WARC-Record-ID".to_string(), format!("<urn:arc-offset:{offset}>")),
            ("Content-Length".to_string(), length.to_string()),
        ];
        if let Some(iso) = arc_date(date) {
            headers.push(("WARC-Date".to_string(), iso));
        }
        headers
            .push(("Content-Type".to_string(), "application/http; msgtype=response".to_string()));
        Step::Record(RawRecord {
            version: "ARC".to_string(),
            headers,
            block,
            offset,
            lenient_length: false,
            raw_header: None,
        })
    }
}

enum Step {
    Record(RawRecord),
    Error(RecordError),
    NeedMore,
}

/// Position of the next `WARC/0.` or `WARC/1.`: where a record starts (garbage may stand
/// right before it, without a line break).
fn find_version_line(buf: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = find(&buf[from..], b"WARC/") {
        let pos = from + at;
        match buf.get(pos + 5..pos + 7) {
            Some([b'0' | b'1', b'.']) => return Some(pos),
            None => return None,
            _ => from = pos + 1,
        }
    }
    None
}

/// Where a whole WARC record starts inside `block` (at a line start, its header block complete
/// and parsed, with a Content-Length): the sign that a length ran past its record.
fn embedded_record(block: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = find_version_line(&block[from..]) {
        let pos = from + at;
        let line_start = pos == 0 || block[pos - 1] == b'\n';
        if line_start {
            let head = &block[pos..block.len().min(pos + MAX_HEADER_BYTES)];
            if header_end(head).is_some_and(|len| parse_headers(&head[..len]).is_ok()) {
                return Some(pos);
            }
        }
        from = pos + 1;
    }
    None
}

/// Length of the header block including its blank line. Lines end in CRLF or, leniently, LF
/// alone or CR CR LF (all seen in the wild).
fn header_end(buf: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = buf[from..].iter().position(|&b| b == b'\n') {
        let line_end = from + at + 1;
        let blank = buf[line_end..].iter().take_while(|&&b| b == b'\r').count();
        if buf.get(line_end + blank) == Some(&b'\n') {
            return Some(line_end + blank + 1);
        }
        from = line_end;
    }
    None
}

type Headers = (String, Vec<(String, String)>, u64);

/// Parses a header block with the `warc` crate's parser.
fn parse_headers(block: &[u8]) -> Result<Headers, (RecordErrorKind, String)> {
    // The `warc` parser takes CRLF or LF; fold CR CR LF (and longer CR runs) first.
    let folded;
    let block = if find(block, b"\r\r").is_some() {
        folded = fold_carriage_returns(block);
        &folded[..]
    } else {
        block
    };
    let (_, (version, fields, content_length)) = warc::parser::headers(block).map_err(|e| {
        (
            RecordErrorKind::InvalidHeader,
            format!("WARC header block rejected: {e:?}").chars().take(200).collect(),
        )
    })?;
    let mut headers = Vec::with_capacity(fields.len());
    let mut has_length = false;
    for (name, value) in fields {
        has_length |= name.eq_ignore_ascii_case("content-length");
        headers.push((name.to_string(), String::from_utf8_lossy(value).trim().to_string()));
    }
    if !has_length {
        return Err((RecordErrorKind::MissingContentLength, "no Content-Length header".into()));
    }
    Ok((version.to_string(), headers, content_length as u64))
}

fn fold_carriage_returns(block: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(block.len());
    for (i, &b) in block.iter().enumerate() {
        if b == b'\r' && block.get(i + 1) == Some(&b'\r') {
            continue;
        }
        out.push(b);
    }
    out
}

/// `20140301000000` → `2014-03-01T00:00:00Z`.
fn arc_date(date: &str) -> Option<String> {
    if date.len() < 14 || !date.bytes().take(14).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let d = &date[..14];
    Some(format!(
        "{}-{}-{}T{}:{}:{}Z",
        &d[0..4],
        &d[4..6],
        &d[6..8],
        &d[8..10],
        &d[10..12],
        &d[12..14]
    ))
}
