//! Text corpora: one document per row of a JSONL file (compressed or not) or of a Parquet file.
//! Rows enter the pipeline from the sentence stage on: the text is split line by line, as the
//! check gate splits plain text, with no HTML strip.
//!
//! A document's identity is its id. The id is the page's key (a row whose id was seen before
//! replaces the earlier row, the way a re-crawl replaces a URL's page) and what the outputs name
//! it by. Its ordinal (1-based position among the run's documents) stands for its crawl date,
//! so the earliest page of a cluster (what `dedup --keep earliest` keeps) is its first row; the
//! cluster is named by its anchor, the member with the smallest hash of its id. Template statistics are per host: the host of the url field, when a row
//! has one, else one host for the whole corpus.
//!
//! The format is found from the content, like compression: a decoded stream whose first
//! non-blank byte is `{` is JSONL; a file starting with `PAR1` is Parquet (read by random
//! access, so a file, not stdin).

use std::collections::BTreeMap;

use dupflow_operators::ingest::sentence::{SentenceConfig, Shingling};
use dupflow_operators::{Page, PageId, PageMeta};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::decode::{Chunk, Decoder};
use super::{RecordError, RecordErrorKind};

/// Which fields of a row hold the document (`[text]` in pipeline.toml).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TextConfig {
    /// The row's unique id (a string or an integer).
    pub id_field: String,
    /// The document's plain text.
    pub text_field: String,
    /// Optional: the page's URL, whose host groups rows for template statistics.
    pub url_field: String,
}

impl Default for TextConfig {
    fn default() -> Self {
        TextConfig { id_field: "id".into(), text_field: "text".into(), url_field: "url".into() }
    }
}

/// One document of a text corpus.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextDoc {
    pub id: String,
    pub text: String,
    pub url: Option<String>,
    /// 1-based position among the run's documents (set by the reader).
    pub ordinal: u64,
}

impl TextDoc {
    /// The lowercased host of the url field, or "" (one host for rows without a URL).
    pub fn host(&self) -> String {
        let Some(url) = &self.url else { return String::new() };
        let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = if host.starts_with('[') {
            host.split_inclusive(']').next().unwrap_or(host)
        } else {
            host.split(':').next().unwrap_or(host)
        };
        host.to_ascii_lowercase()
    }
}

/// The page of a row: its identity (the id as URL and record id, the ordinal as date, the host
/// of its url) and its sentences, the text split line by line (cut at `max_bytes`, at a
/// character boundary). Also says whether the text was cut and whether the sentence cap was hit.
pub fn page_of(
    doc: &TextDoc,
    config: &SentenceConfig,
    shingling: Shingling,
    max_bytes: usize,
) -> (Page, bool, bool) {
    let meta = PageMeta {
        id: PageId::new(doc.ordinal, &doc.id, &doc.id),
        url: doc.id.as_str().into(),
        host: dupflow_operators::ingest::sentence::stable_hash(&doc.host()),
        record_id: doc.id.as_str().into(),
    };
    let mut text = doc.text.as_str();
    let cut = text.len() > max_bytes;
    if cut {
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text = &text[..end];
    }
    let blocks: Vec<String> = text.lines().map(str::to_string).collect();
    let (page, capped) =
        dupflow_operators::ingest::sentence::page_in(meta, &blocks, config, shingling, None);
    (page, cut, capped)
}

/// The lines of a decoded stream, with the decoded offset of each. A line longer than
/// `max_bytes` is skipped (`record_too_large`); a break in the compressed stream drops the line
/// it cut and is reported with its kind.
pub struct Lines {
    decoder: Decoder,
    buf: Vec<u8>,
    start: usize,
    offset: u64,
    eof: bool,
    skipping: bool,
    max_bytes: usize,
}

impl Lines {
    pub fn new(decoder: Decoder, max_bytes: u64) -> Lines {
        Lines {
            decoder,
            buf: Vec::new(),
            start: 0,
            offset: 0,
            eof: false,
            skipping: false,
            max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
        }
    }

    /// The next line (without its newline) and its offset, or a skipped stretch.
    pub fn next_line(&mut self) -> Option<Result<(u64, &[u8]), RecordError>> {
        loop {
            if let Some(n) = memchr::memchr(b'\n', &self.buf[self.start..]) {
                let (from, offset) = (self.start, self.offset);
                self.start += n + 1;
                self.offset += n as u64 + 1;
                if std::mem::take(&mut self.skipping) {
                    continue;
                }
                return Some(Ok((offset, &self.buf[from..from + n])));
            }
            if self.eof {
                if self.start == self.buf.len() || std::mem::take(&mut self.skipping) {
                    return None;
                }
                let (from, offset) = (self.start, self.offset);
                self.offset += (self.buf.len() - from) as u64;
                self.start = self.buf.len();
                return Some(Ok((offset, &self.buf[from..])));
            }
            if self.buf.len() - self.start > self.max_bytes && !self.skipping {
                self.skipping = true;
                self.offset += (self.buf.len() - self.start) as u64;
                self.buf.clear();
                self.start = 0;
                return Some(Err(RecordError::new(
                    RecordErrorKind::RecordTooLarge,
                    self.offset,
                    format!("a line longer than {} bytes", self.max_bytes),
                )));
            }
            if self.skipping {
                self.offset += (self.buf.len() - self.start) as u64;
                self.buf.clear();
                self.start = 0;
            } else if self.start > 0 && self.start * 2 >= self.buf.len() {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            match self.decoder.next_chunk(&mut self.buf) {
                Ok(Chunk::Data(_)) => {}
                Ok(Chunk::Eof) => self.eof = true,
                Ok(Chunk::Break(kind)) => {
                    // The cut line does not continue after the break.
                    let at = self.offset;
                    self.offset += (self.buf.len() - self.start) as u64;
                    self.buf.truncate(self.start);
                    self.skipping = false;
                    return Some(Err(RecordError::new(
                        kind,
                        at,
                        "the compressed stream is damaged here".into(),
                    )));
                }
                Err(e) => {
                    self.eof = true;
                    self.buf.truncate(self.start);
                    return Some(Err(RecordError::new(
                        RecordErrorKind::Io,
                        self.offset,
                        e.to_string(),
                    )));
                }
            }
        }
    }
}

/// A row's fields, parsed lazily: only the id, text and url values are decoded.
pub type RowFields<'a> = BTreeMap<String, &'a RawValue>;

/// Parses one JSONL line into its fields (`None` for a blank line).
pub fn row_fields(line: &[u8], offset: u64) -> Option<Result<RowFields<'_>, RecordError>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(serde_json::from_slice::<RowFields>(line).map_err(|e| {
        RecordError::new(RecordErrorKind::InvalidJson, offset, format!("not a JSON object: {e}"))
    }))
}

/// A row's id as a string: a JSON string, or a number as written.
pub fn id_of(fields: &RowFields, config: &TextConfig) -> Option<String> {
    let raw = fields.get(&config.id_field)?.get();
    if raw.starts_with('"') {
        serde_json::from_str::<String>(raw).ok()
    } else if raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        Some(raw.to_string())
    } else {
        None
    }
}

/// The document of a JSONL row.
pub fn doc_of(
    fields: &RowFields,
    config: &TextConfig,
    offset: u64,
) -> Result<TextDoc, RecordError> {
    let missing = |what: &str, name: &str| {
        RecordError::new(RecordErrorKind::MissingField, offset, format!("no {what} field `{name}`"))
    };
    let id = id_of(fields, config).ok_or_else(|| missing("string or integer", &config.id_field))?;
    let text = fields
        .get(&config.text_field)
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
        .ok_or_else(|| missing("string", &config.text_field))?;
    let url = fields
        .get(&config.url_field)
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
    Ok(TextDoc { id, text, url, ordinal: 0 })
}

/// The documents of a JSONL stream.
pub struct JsonlRows {
    lines: Lines,
    config: TextConfig,
}

impl JsonlRows {
    pub fn new(decoder: Decoder, config: TextConfig, max_bytes: u64) -> JsonlRows {
        JsonlRows { lines: Lines::new(decoder, max_bytes), config }
    }

    pub fn next_doc(&mut self) -> Option<Result<TextDoc, RecordError>> {
        loop {
            let (offset, line) = match self.lines.next_line()? {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            match row_fields(line, offset) {
                None => continue,
                Some(Ok(fields)) => return Some(doc_of(&fields, &self.config, offset)),
                Some(Err(e)) => return Some(Err(e)),
            }
        }
    }
}

#[cfg(feature = "parquet")]
pub(crate) use self::parquet_rows::string_at;
#[cfg(feature = "parquet")]
pub use self::parquet_rows::{ParquetError, ParquetRows};

#[cfg(feature = "parquet")]
mod parquet_rows {
    use std::fs::File;
    use std::path::Path;

    use arrow_array::{Array, RecordBatch};
    use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
    use parquet::arrow::ProjectionMask;
    use thiserror::Error;

    use super::{RecordError, RecordErrorKind, TextConfig, TextDoc};

    #[derive(Debug, Error)]
    pub enum ParquetError {
        #[error("{path}: {error}")]
        Open { path: String, error: std::io::Error },
        #[error("{path}: {message}")]
        Read { path: String, message: String },
        #[error("{path}: no column `{column}` (columns: {columns})")]
        Column { path: String, column: String, columns: String },
    }

    impl ParquetError {
        /// What is wrong with the file's content (a damaged file, a missing column), as a
        /// skipped input's error kind; `None` when the file could not be opened at all.
        pub fn damage(&self) -> Option<RecordErrorKind> {
            match self {
                ParquetError::Open { .. } => None,
                ParquetError::Read { .. } => Some(RecordErrorKind::InvalidParquet),
                ParquetError::Column { .. } => Some(RecordErrorKind::MissingField),
            }
        }
    }

    /// A column's value at `row` as a string: strings as they are, integers written out.
    pub(crate) fn string_at(array: &dyn Array, row: usize) -> Option<String> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::*;
        use arrow_schema::DataType;
        if array.is_null(row) {
            return None;
        }
        Some(match array.data_type() {
            DataType::Utf8 => array.as_string::<i32>().value(row).to_string(),
            DataType::LargeUtf8 => array.as_string::<i64>().value(row).to_string(),
            DataType::Utf8View => array.as_string_view().value(row).to_string(),
            DataType::Int64 => array.as_primitive::<Int64Type>().value(row).to_string(),
            DataType::Int32 => array.as_primitive::<Int32Type>().value(row).to_string(),
            DataType::UInt64 => array.as_primitive::<UInt64Type>().value(row).to_string(),
            DataType::UInt32 => array.as_primitive::<UInt32Type>().value(row).to_string(),
            _ => return None,
        })
    }

    /// The documents of a Parquet file, batch by batch (only the id, text and url columns are
    /// read).
    pub struct ParquetRows {
        reader: ParquetRecordBatchReader,
        batch: Option<RecordBatch>,
        row: usize,
        /// Column positions in the projected batches.
        id: usize,
        text: usize,
        url: Option<usize>,
        /// Rows handed out so far (the offset of errors).
        seen: u64,
        path: String,
    }

    impl ParquetRows {
        pub fn open(path: &Path, config: &TextConfig) -> Result<ParquetRows, ParquetError> {
            let name = path.display().to_string();
            let file = File::open(path)
                .map_err(|error| ParquetError::Open { path: name.clone(), error })?;
            let read = |e: parquet::errors::ParquetError| ParquetError::Read {
                path: name.clone(),
                message: e.to_string(),
            };
            let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(read)?;
            let schema = builder.schema().clone();
            let position = |column: &str| schema.fields().iter().position(|f| f.name() == column);
            let columns =
                || schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>().join(", ");
            let id = position(&config.id_field).ok_or_else(|| ParquetError::Column {
                path: name.clone(),
                column: config.id_field.clone(),
                columns: columns(),
            })?;
            let text = position(&config.text_field).ok_or_else(|| ParquetError::Column {
                path: name.clone(),
                column: config.text_field.clone(),
                columns: columns(),
            })?;
            let url = position(&config.url_field);
            let mut wanted: Vec<usize> =
                [Some(id), Some(text), url].into_iter().flatten().collect();
            wanted.sort_unstable();
            let projected = |i: usize| wanted.iter().position(|&w| w == i).expect("projected");
            let mask = ProjectionMask::roots(builder.parquet_schema(), wanted.iter().copied());
            let reader =
                builder.with_projection(mask).with_batch_size(1024).build().map_err(read)?;
            Ok(ParquetRows {
                reader,
                batch: None,
                row: 0,
                id: projected(id),
                text: projected(text),
                url: url.map(projected),
                seen: 0,
                path: name,
            })
        }

        pub fn next_doc(&mut self) -> Option<Result<TextDoc, RecordError>> {
            loop {
                if let Some(batch) = &self.batch {
                    if self.row < batch.num_rows() {
                        let row = self.row;
                        self.row += 1;
                        self.seen += 1;
                        let id = string_at(batch.column(self.id).as_ref(), row);
                        let text = string_at(batch.column(self.text).as_ref(), row);
                        let url = self.url.and_then(|u| string_at(batch.column(u).as_ref(), row));
                        return Some(match (id, text) {
                            (Some(id), Some(text)) => Ok(TextDoc { id, text, url, ordinal: 0 }),
                            _ => Err(RecordError::new(
                                RecordErrorKind::MissingField,
                                self.seen - 1,
                                format!("row {}: a null or non-text id or text", self.seen - 1),
                            )),
                        });
                    }
                }
                match self.reader.next()? {
                    Ok(batch) => {
                        self.batch = Some(batch);
                        self.row = 0;
                    }
                    Err(e) => {
                        return Some(Err(RecordError::new(
                            RecordErrorKind::Io,
                            self.seen,
                            format!("{}: {e}", self.path),
                        )));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::decode::Format;

    fn rows(bytes: &'static [u8], max: u64) -> Vec<Result<TextDoc, RecordErrorKind>> {
        let decoder = (super::super::Input::Embedded { name: "t", bytes }).open().unwrap();
        let mut rows = JsonlRows::new(decoder, TextConfig::default(), max);
        std::iter::from_fn(|| rows.next_doc()).map(|r| r.map_err(|e| e.kind)).collect()
    }

    #[test]
    fn rows_become_documents_and_bad_rows_are_skipped_by_kind() {
        let got = rows(
            b"{\"id\": \"a\", \"text\": \"one\\ntwo\", \"url\": \"https://Ex.org:8080/x\", \"meta\": {\"k\": [1]}}\n\
              \n\
              not json\n\
              {\"id\": 7, \"text\": \"seven\"}\n\
              {\"id\": \"b\"}\n\
              {\"id\": null, \"text\": \"x\"}\n\
              {\"id\": \"last\", \"text\": \"no newline\"}",
            1 << 20,
        );
        let ok = |id: &str, text: &str, url: Option<&str>| {
            Ok(TextDoc { id: id.into(), text: text.into(), url: url.map(Into::into), ordinal: 0 })
        };
        assert_eq!(
            got,
            vec![
                ok("a", "one\ntwo", Some("https://Ex.org:8080/x")),
                Err(RecordErrorKind::InvalidJson),
                ok("7", "seven", None),
                Err(RecordErrorKind::MissingField),
                Err(RecordErrorKind::MissingField),
                ok("last", "no newline", None),
            ]
        );
        let doc = TextDoc {
            id: "a".into(),
            text: String::new(),
            url: Some("https://u@Ex.org:8080/x".into()),
            ordinal: 0,
        };
        assert_eq!(doc.host(), "ex.org");
    }

    #[test]
    fn an_overlong_line_is_skipped_and_the_next_is_read() {
        let got = rows(
            Box::leak(
                format!(
                    "{{\"id\":\"big\",\"text\":\"{}\"}}\n{{\"id\":\"small\",\"text\":\"t\"}}\n",
                    "x".repeat(200_000)
                )
                .into_bytes()
                .into_boxed_slice(),
            ),
            100_000,
        );
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], Err(RecordErrorKind::RecordTooLarge));
        assert!(matches!(&got[1], Ok(d) if d.id == "small"));
    }

    #[test]
    fn zstd_and_gzip_streams_are_read() {
        let plain = b"{\"id\":\"a\",\"text\":\"alpha\"}\n{\"id\":\"b\",\"text\":\"beta\"}\n";
        let zst = zstd::stream::encode_all(&plain[..], 3).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, plain).unwrap();
        for bytes in [zst, gz.finish().unwrap()] {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            let ids: Vec<String> =
                rows(bytes, 1 << 20).into_iter().map(|r| r.unwrap().id).collect();
            assert_eq!(ids, ["a", "b"]);
        }
        let many: String = (0..20_000)
            .map(|i| format!("{{\"id\":\"{i}\",\"text\":\"row {}\"}}\n", i * 7919 % 10_007))
            .collect();
        let mut cut = zstd::stream::encode_all(many.as_bytes(), 3).unwrap();
        cut.truncate(cut.len() / 2);
        let got = rows(Box::leak(cut.into_boxed_slice()), 1 << 20);
        assert!(got.iter().filter(|r| r.is_ok()).count() > 10);
        assert_eq!(
            got.last(),
            Some(&Err(RecordErrorKind::InvalidZstd)),
            "a cut frame is reported, not a panic"
        );
    }

    #[test]
    fn formats_are_sniffed_from_content() {
        assert_eq!(Format::sniff(b"PAR1\x15\x04"), Format::Parquet);
        assert_eq!(Format::sniff(b"\n  {\"id\":1}"), Format::Jsonl);
        assert_eq!(Format::sniff(b"WARC/1.0\r\n"), Format::Warc);
        assert_eq!(Format::sniff(b""), Format::Warc);
    }
}
