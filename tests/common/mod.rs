//! Helpers shared by the integration tests.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dupflow::source::{self, http, Input, RecordErrorKind};

#[allow(dead_code)]
pub mod serve;
#[allow(dead_code)]
pub mod synth;

/// `../shared` beside the checkout, or a clear message why a test cannot run.
#[allow(dead_code)]
pub fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {} is absent. This test reads the shared corpora that CI places beside the \
             checkout; clone the project next to its shared/ folder to run it.",
            dir.display()
        );
        None
    }
}

/// What reading one input gave: record types, pages (by URL), revisits and errors by code.
#[derive(Debug, Default)]
#[allow(dead_code)]
pub struct ReadResult {
    pub types: BTreeMap<String, usize>,
    pub page_urls: Vec<String>,
    pub revisits: usize,
    pub errors: BTreeMap<&'static str, usize>,
    pub document_errors: BTreeMap<&'static str, usize>,
}

#[allow(dead_code)]
pub fn read_all(input: &Input, max_record_bytes: u64) -> ReadResult {
    let mut result = ReadResult::default();
    source::read_records(input, max_record_bytes, |item| match item {
        Ok(record) => {
            *result.types.entry(record.type_name()).or_default() += 1;
            match http::interpret(&record, 2 << 20) {
                Ok((http::Outcome::Page(doc), _)) => result.page_urls.push(doc.url),
                Ok((http::Outcome::Revisit(_), _)) => result.revisits += 1,
                Ok((http::Outcome::Skipped(_), _)) => {}
                Err(e) => *result.document_errors.entry(e.code()).or_default() += 1,
            }
        }
        Err(e) => *result.errors.entry(e.kind.code()).or_default() += 1,
    })
    .expect("input opens");
    result
}

#[allow(dead_code)]
pub fn kind_code(kind: RecordErrorKind) -> &'static str {
    kind.code()
}
