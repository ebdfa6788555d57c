//! Text corpus output (`dupflow dedup` on JSONL or Parquet inputs): each input's rows again, in
//! its format and compression, with two fields added: `cluster`, the id of the row kept for the
//! row's cluster (under `--keep earliest`, the cluster's first row in input order; a row's own
//! id when it is kept), and `duplicate_of`, the same id for a row left out (null for a kept
//! row). Without `--annotate` only the kept rows are written.
//!
//! A JSONL row keeps its bytes: the two fields are spliced in before its closing brace (a row
//! that already had fields of those names is rewritten with them replaced). Rows that are not
//! documents (not JSON, no id or text) are copied unchanged and counted; they were never
//! clustered, so nothing is dropped for them. Blank lines are left out.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::dedup::{DedupError, Removed};
use crate::source::decode::Compression;
use crate::source::text::{self, Lines, TextConfig};
use crate::source::Input;
use crate::types::ClusterRow;

/// What each clustered row gets: its cluster (the id of the row kept for it) and, for a
/// left-out duplicate, that same id as `duplicate_of`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    pub by_id: HashMap<String, (String, Option<String>)>,
}

impl Marks {
    /// Marks for every clustered row (`rows`) and every left-out one (`removed`).
    pub fn new(rows: &[ClusterRow], removed: &[Removed]) -> Marks {
        let mut by_id: HashMap<String, (String, Option<String>)> =
            rows.iter().map(|r| (r.url.to_string(), (r.url.to_string(), None))).collect();
        for r in removed {
            by_id.insert(r.url.clone(), (r.kept_url.clone(), Some(r.kept_url.clone())));
        }
        Marks { by_id }
    }

    fn get(&self, id: &str) -> (Option<&str>, Option<&str>) {
        match self.by_id.get(id) {
            Some((cluster, kept)) => (Some(cluster.as_str()), kept.as_deref()),
            None => (None, None),
        }
    }
}

/// A line of `removed.jsonl` for a text corpus.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct RemovedRow {
    pub id: String,
    pub kept_id: String,
    /// Resemblance to `leader_id`, the row it was verified against.
    pub similarity: f64,
    pub leader_id: String,
}

impl From<&Removed> for RemovedRow {
    fn from(r: &Removed) -> RemovedRow {
        RemovedRow {
            id: r.url.clone(),
            kept_id: r.kept_url.clone(),
            similarity: r.similarity,
            leader_id: r.leader_url.clone(),
        }
    }
}

/// Counts of one written file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RowsWritten {
    pub rows_in: u64,
    pub rows_out: u64,
    pub dropped: u64,
    /// Rows that are not documents, copied unchanged.
    pub copied_unclustered: u64,
    /// Stretches that could not be read (and so not copied), by kind.
    pub damaged: BTreeMap<&'static str, u64>,
}

/// The file name of an input's output: its own name (made unique among the outputs).
pub fn output_name(input: &Input, taken: &mut std::collections::HashSet<String>) -> String {
    let name = input.name();
    let base = Path::new(name.trim_start_matches("(embedded) "))
        .file_name()
        .map_or("stdin".into(), |n| n.to_string_lossy().to_string());
    let mut candidate = base.clone();
    let mut n = 1;
    while !taken.insert(candidate.clone()) {
        n += 1;
        candidate = match base.split_once('.') {
            Some((stem, ext)) => format!("{stem}-{n}.{ext}"),
            None => format!("{base}-{n}"),
        };
    }
    candidate
}

fn encoder(file: File, compression: Compression) -> io::Result<Box<dyn Write>> {
    let out = BufWriter::new(file);
    Ok(match compression {
        Compression::None => Box::new(out),
        Compression::Gzip => {
            Box::new(flate2::write::GzEncoder::new(out, flate2::Compression::default()))
        }
        Compression::Zstd => Box::new(zstd::stream::write::Encoder::new(out, 3)?.auto_finish()),
        Compression::Lz4 => Box::new(lz4_flex::frame::FrameEncoder::new(out).auto_finish()),
    })
}

/// `line` (a JSON object) with `cluster` and `duplicate_of` set.
fn marked(
    line: &[u8],
    fields: &text::RowFields,
    cluster: Option<&str>,
    duplicate_of: Option<&str>,
) -> Vec<u8> {
    let added = format!(
        "\"cluster\":{},\"duplicate_of\":{}",
        serde_json::to_string(&cluster).expect("strings serialize"),
        serde_json::to_string(&duplicate_of).expect("strings serialize")
    );
    let trimmed = line.trim_ascii_end();
    if fields.contains_key("cluster")
        || fields.contains_key("duplicate_of")
        || trimmed.last() != Some(&b'}')
    {
        let mut object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(line).unwrap_or_default();
        object.insert("cluster".into(), cluster.into());
        object.insert("duplicate_of".into(), duplicate_of.into());
        return serde_json::to_vec(&object).expect("values serialize");
    }
    let mut out = trimmed[..trimmed.len() - 1].to_vec();
    if !fields.is_empty() {
        out.push(b',');
    }
    out.extend_from_slice(added.as_bytes());
    out.push(b'}');
    out
}

/// Writes a JSONL input's rows to `path` (atomically), marked or, unless `annotate`, only the
/// kept ones.
pub fn write_jsonl(
    input: &Input,
    path: &Path,
    marks: &Marks,
    annotate: bool,
    config: &TextConfig,
    max_record_bytes: u64,
) -> Result<RowsWritten, DedupError> {
    let fail = |error| DedupError::Write { path: path.to_path_buf(), error };
    let decoder = input.open()?;
    let tmp = tmp_path(path);
    let mut out =
        encoder(File::create(tmp.path()).map_err(fail)?, decoder.compression()).map_err(fail)?;
    let mut lines = Lines::new(decoder, max_record_bytes);
    let mut written = RowsWritten::default();
    while let Some(line) = lines.next_line() {
        let (offset, line) = match line {
            Ok(line) => line,
            Err(error) => {
                *written.damaged.entry(error.kind.code()).or_default() += 1;
                continue;
            }
        };
        let Some(fields) = text::row_fields(line, offset) else { continue };
        written.rows_in += 1;
        let doc = fields.as_ref().ok().filter(|f| text::doc_of(f, config, offset).is_ok());
        let bytes = match doc {
            None => {
                written.copied_unclustered += 1;
                line.to_vec()
            }
            Some(fields) => {
                let id = text::id_of(fields, config).expect("a document has an id");
                let (cluster, duplicate_of) = marks.get(&id);
                if duplicate_of.is_some() && !annotate {
                    written.dropped += 1;
                    continue;
                }
                marked(line, fields, cluster, duplicate_of)
            }
        };
        out.write_all(&bytes).and_then(|_| out.write_all(b"\n")).map_err(fail)?;
        written.rows_out += 1;
    }
    out.flush().map_err(fail)?;
    drop(out);
    std::fs::rename(tmp.path(), path).map_err(fail)?;
    tmp.keep();
    Ok(written)
}

/// The temporary file `path` is written to before its rename (removed on any error).
fn tmp_path(path: &Path) -> crate::files::Scratch {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    crate::files::Scratch::new(path.with_file_name(name))
}

#[cfg(feature = "parquet")]
pub use self::parquet_out::write_parquet;

#[cfg(feature = "parquet")]
mod parquet_out {
    use std::fs::File;
    use std::path::Path;
    use std::sync::Arc;

    use arrow_array::{Array, BooleanArray, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;

    use super::{tmp_path, DedupError, Marks, RowsWritten};
    use crate::source::text::TextConfig;

    fn read_error(path: &Path, e: impl std::fmt::Display) -> DedupError {
        DedupError::Write { path: path.to_path_buf(), error: std::io::Error::other(e.to_string()) }
    }

    /// Writes a Parquet input's rows to `path` (atomically, snappy-compressed): every column
    /// as read, with `cluster` and `duplicate_of` (strings) after them; unless `annotate`, only
    /// the kept rows.
    pub fn write_parquet(
        input: &Path,
        path: &Path,
        marks: &Marks,
        annotate: bool,
        config: &TextConfig,
    ) -> Result<RowsWritten, DedupError> {
        let open = File::open(input)
            .map_err(|error| DedupError::Write { path: input.to_path_buf(), error })?;
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(open).map_err(|e| read_error(input, e))?;
        let schema = builder.schema().clone();
        let id_column = schema
            .fields()
            .iter()
            .position(|f| f.name() == &config.id_field)
            .ok_or_else(|| read_error(input, format!("no column `{}`", config.id_field)))?;
        let kept: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| !["cluster", "duplicate_of"].contains(&schema.field(i).name().as_str()))
            .collect();
        let mut fields: Vec<Field> = kept.iter().map(|&i| schema.field(i).clone()).collect();
        fields.push(Field::new("cluster", DataType::Utf8, true));
        fields.push(Field::new("duplicate_of", DataType::Utf8, true));
        let mut metadata = schema.metadata().clone();
        metadata.remove("ARROW:schema");
        let out_schema = Arc::new(Schema::new_with_metadata(fields, metadata));
        let tmp = tmp_path(path);
        let file = File::create(tmp.path())
            .map_err(|error| DedupError::Write { path: path.to_path_buf(), error })?;
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let mut writer = ArrowWriter::try_new(file, out_schema.clone(), Some(props))
            .map_err(|e| read_error(path, e))?;
        let mut written = RowsWritten::default();
        for batch in builder.build().map_err(|e| read_error(input, e))? {
            let batch = batch.map_err(|e| read_error(input, e))?;
            let ids = batch.column(id_column);
            let mut clusters = Vec::with_capacity(batch.num_rows());
            let mut duplicates = Vec::with_capacity(batch.num_rows());
            for row in 0..batch.num_rows() {
                let (cluster, duplicate_of) =
                    match crate::source::text::string_at(ids.as_ref(), row) {
                        Some(id) => marks.get(&id),
                        None => (None, None),
                    };
                clusters.push(cluster.map(str::to_string));
                duplicates.push(duplicate_of.map(str::to_string));
            }
            let duplicates = StringArray::from(duplicates);
            let mut columns: Vec<Arc<dyn Array>> =
                kept.iter().map(|&i| batch.column(i).clone()).collect();
            columns.push(Arc::new(StringArray::from(clusters)));
            columns.push(Arc::new(duplicates.clone()));
            let mut out = RecordBatch::try_new(out_schema.clone(), columns)
                .map_err(|e| read_error(path, e))?;
            written.rows_in += batch.num_rows() as u64;
            if !annotate {
                let keep = BooleanArray::from(
                    (0..duplicates.len()).map(|i| duplicates.is_null(i)).collect::<Vec<_>>(),
                );
                out = arrow_select::filter::filter_record_batch(&out, &keep)
                    .map_err(|e| read_error(path, e))?;
            }
            written.rows_out += out.num_rows() as u64;
            written.dropped += (batch.num_rows() - out.num_rows()) as u64;
            writer.write(&out).map_err(|e| read_error(path, e))?;
        }
        writer.close().map_err(|e| read_error(path, e))?;
        std::fs::rename(tmp.path(), path)
            .map_err(|error| DedupError::Write { path: path.to_path_buf(), error })?;
        tmp.keep();
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_spliced_in_and_the_row_keeps_its_bytes() {
        let line = br#"{"id": "b", "text": "x", "meta": {"a": [1, 2]}}  "#;
        let fields = text::row_fields(line, 0).unwrap().unwrap();
        let out = marked(line, &fields, Some("a"), Some("a"));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"id": "b", "text": "x", "meta": {"a": [1, 2]},"cluster":"a","duplicate_of":"a"}"#
        );
        let line = br#"{"id": "c", "text": "x", "cluster": 5}"#;
        let fields = text::row_fields(line, 0).unwrap().unwrap();
        let out: serde_json::Value =
            serde_json::from_slice(&marked(line, &fields, Some("c"), None)).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"id": "c", "text": "x", "cluster": "c", "duplicate_of": null})
        );
    }
}
