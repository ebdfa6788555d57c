//! The subcommands, one module each with its arguments beside it, and the few helpers they
//! share (reading text, writing output that may go to a closed pipe, the corpus of a check).

pub mod check;
pub mod dedup;
pub mod eval;
pub mod explain;
pub mod index;
pub mod join;
pub mod run;
pub mod sentences;
pub mod similar;
mod summary;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use dupflow::config::PipelineConfig;
use dupflow::source;

/// The pipeline.toml at `path`, or the built-in defaults.
pub fn load_config(path: Option<&Path>) -> Result<PipelineConfig> {
    Ok(match path {
        Some(path) => PipelineConfig::load(path)?,
        None => PipelineConfig::default(),
    })
}

/// `n` with its noun: `1 input`, `3 inputs`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `dupflow validate FILE`.
pub fn validate(file: &Path) -> Result<ExitCode> {
    PipelineConfig::load(file)?;
    println!("{}: ok", file.display());
    Ok(ExitCode::SUCCESS)
}

pub fn read_text(path: &std::path::Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
            .context("reading stdin")?;
        Ok(text)
    } else {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        // Records are text; invalid UTF-8 bytes become U+FFFD rather than an error.
        Ok(String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

pub fn open_output(path: Option<&std::path::Path>) -> Result<Box<dyn Write>> {
    Ok(match path {
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
        Some(p) if p.as_os_str() == "-" => {
            Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
        }
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
    })
}

/// Every record of `inputs` (and each damaged stretch) to `each`, in order, with a bar of the
/// bytes read drawn on a terminal (`label` says what the reading is for).
pub fn read_all_records(
    inputs: &[source::Input],
    max_record_bytes: u64,
    label: &str,
    mut each: impl FnMut(Result<source::RawRecord, source::RecordError>),
) -> Result<()> {
    let pass = dupflow::metrics::progress::Pass::start(label, total_bytes(inputs));
    for input in inputs {
        let decoder = input.open()?;
        let counter = decoder.counter();
        pass.reading(move || counter.get());
        let mut framer = source::framing::Framer::new(decoder, max_record_bytes);
        while let Some(item) = framer.next_record() {
            each(item);
        }
    }
    pass.stop();
    Ok(())
}

/// The inputs' bytes, where known (progress).
pub fn total_bytes(inputs: &[source::Input]) -> u64 {
    inputs.iter().filter_map(source::Input::size).sum()
}

/// The pages of WARC inputs as the pipeline sees them (stripped, split; the newest capture of
/// each URL, or every capture with `source.recrawls = "keep"`).
pub fn corpus_pages(
    inputs: &[source::Input],
    config: &PipelineConfig,
) -> Result<Vec<dupflow_operators::Page>> {
    corpus_pages_where(inputs, config, |_| true)
}

/// `corpus_pages`, of the records whose target URL `keep` accepts (the others are passed on
/// their header).
pub fn corpus_pages_where(
    inputs: &[source::Input],
    config: &PipelineConfig,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<dupflow_operators::Page>> {
    let identity = source::urls::UrlIdentity::new(&config.urls);
    let mut held = source::current::CurrentPages::new(config.source.recrawls, identity);
    let ingest = source::ingest::Ingest {
        sentence: config.sentence.clone(),
        shingling: dupflow_operators::ingest::sentence::Shingling::None,
        max_page_bytes: config.source.max_page_bytes as usize,
    };
    read_all_records(inputs, config.source.max_record_bytes, "reading the pages", |item| {
        let Ok(record) = item else { return };
        let target = record.header("WARC-Target-URI").map(|u| u.trim_matches(['<', '>']));
        if !target.is_some_and(&keep) {
            return;
        }
        if let Some(page) = ingest.record(&record) {
            let _ = held.capture(page, 0);
        }
    })?;
    Ok(held.into_pages())
}

/// A WARC record's page as the pipeline splits it: its normalized sentences (with their keys),
/// or `None` when the record holds no page.
pub fn record_sentences(
    record: &source::RawRecord,
    config: &PipelineConfig,
) -> Option<Vec<dupflow_operators::ingest::sentence::HashedSentence>> {
    let max = config.source.max_page_bytes as usize;
    let Ok((source::http::Outcome::Page(doc), _)) = source::http::interpret(record, max) else {
        return None;
    };
    let blocks =
        dupflow_operators::ingest::html::strip_with(&doc.html, config.sentence.landmarks).blocks;
    let split = dupflow_operators::ingest::sentence::split_page(&blocks, &config.sentence);
    Some(split.sentences)
}

pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// Writes lines, treating a closed pipe (`| head`) as the end, not an error.
pub fn finish_output(result: std::io::Result<()>) -> Result<ExitCode> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}
