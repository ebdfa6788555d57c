//! `dupflow dedup`: the pipeline as `run` does it, then the inputs written again without the
//! near-duplicates (or with them annotated), and `removed.jsonl` naming what was left out.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use dupflow::config::PipelineConfig;
use dupflow::dataflow::{self, Feed, RunOptions};
use dupflow::sink::dedup::{self, Census, Keep};
use dupflow::sink::text::{self as text_out, Marks, RemovedRow};
use dupflow::source::text::Format;
use dupflow::source::{self, Input, Item, Items};
use dupflow::types::RunOutput;

use super::load_config;

/// Arguments of `dupflow dedup`.
#[derive(clap::Args)]
pub struct Args {
    /// WARC files, or text corpora (JSONL, .gz/.zst, or Parquet), as files, directories or
    /// globs (read twice more after clustering: not stdin). With none, the WARC compiled into
    /// the binary.
    pub inputs: Vec<String>,
    /// Directory for the deduplicated files and removed.jsonl: for WARC, one `NAME.warc.gz` per
    /// input (a gzip member per record); for a text corpus, each input's rows under its own
    /// name, in its format and compression, with `cluster` and `duplicate_of` added.
    #[arg(long)]
    pub out: PathBuf,
    /// Which page of a cluster is kept: earliest (crawl date, then id; for text, the first
    /// row), longest (response bytes; text length), shortest-url (for text, the shortest id).
    #[arg(long, default_value = "earliest")]
    pub keep: Keep,
    /// Keep every record and add a WARC metadata record after each near-duplicate, pointing at
    /// the page kept in its place (WARC-Refers-To-Target-URI, WARC-Refers-To-Date); for text,
    /// keep every row (each with `cluster` and `duplicate_of`).
    #[arg(long)]
    pub annotate: bool,
    /// pipeline.toml to use (defaults are built in).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Worker threads (default: run.workers of the config).
    #[arg(long)]
    pub workers: Option<usize>,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    let config = load_config(args.config.as_deref())?;
    let inputs = if args.inputs.is_empty() { vec![dupflow::DEFAULT_INPUT] } else { source::expand(&args.inputs)? };
    if inputs.iter().any(|i| matches!(i, Input::Stdin)) {
        bail!("dedup reads its inputs again after clustering: give files, not `-`");
    }
    let mut formats = Vec::new();
    for input in &inputs {
        formats.push(Items::format(input)?);
    }
    let text = formats.iter().filter(|f| **f != Format::Warc).count();
    if text > 0 && text < inputs.len() {
        bail!("dedup takes WARC files or text corpora, not both in one run");
    }
    let max_record_bytes = config.source.max_record_bytes;
    let workers = args.workers.unwrap_or(config.run.workers);
    let output = dataflow::run(RunOptions::new(Feed::Inputs(inputs.clone()), config.clone(), workers))?;
    if text > 0 {
        return text_corpus(&args, &inputs, &formats, &config, &output);
    }

    let mut census = Census::default();
    for input in &inputs {
        source::read_records(input, max_record_bytes, |item| {
            if let Ok(record) = item {
                census.add(&record);
            }
        })?;
    }
    let removed = dedup::plan(&output.rows, args.keep, &census);
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut names = HashSet::new();
    let mut total = dedup::Written::default();
    for input in &inputs {
        let path = args.out.join(dedup::output_name(input, &mut names));
        let written = dedup::write_warc(input, &path, &removed, &census, args.annotate, max_record_bytes)
            .with_context(|| format!("deduplicating {}", input.name()))?;
        for (kind, n) in &written.damaged {
            tracing::warn!("{}: {n} damaged record(s) ({kind}) could not be copied", input.name());
            *total.damaged.entry(kind).or_default() += n;
        }
        total.records_in += written.records_in;
        total.records_out += written.records_out;
        total.pages_dropped += written.pages_dropped;
        total.concurrent_dropped += written.concurrent_dropped;
        total.annotations += written.annotations;
        println!("wrote {}", path.display());
    }
    let removed_path = args.out.join("removed.jsonl");
    dupflow::sink::write_jsonl(&removed_path, &removed).with_context(|| format!("writing {}", removed_path.display()))?;
    let pages = output.rows.len();
    if args.annotate {
        println!("pages:     {pages}, {} near-duplicates annotated ({} metadata records added)", removed.len(), total.annotations);
    } else {
        println!(
            "pages:     kept {} of {pages}; {} near-duplicates left out with {} concurrent request/metadata records",
            pages - total.pages_dropped as usize,
            total.pages_dropped,
            total.concurrent_dropped
        );
    }
    println!("records:   {} in, {} out; wrote {}", total.records_in, total.records_out, removed_path.display());
    Ok(ExitCode::SUCCESS)
}

/// `dedup` of text corpora: each input's rows again, in its format, marked or only the kept.
fn text_corpus(args: &Args, inputs: &[Input], formats: &[Format], config: &PipelineConfig, output: &RunOutput) -> Result<ExitCode> {
    // The text length of every row (the `longest` policy); ids are record ids for text.
    let mut census = Census::default();
    for input in inputs {
        let mut items = Items::open(input, config.source.max_record_bytes, &config.text)?;
        while let Some(item) = items.next_item() {
            if let Ok(Item::Text(doc)) = item {
                census.lengths.insert(doc.id, doc.text.len() as u64);
            }
        }
    }
    let removed = dedup::plan(&output.rows, args.keep, &census);
    let marks = Marks::new(&output.rows, &removed);
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut names = HashSet::new();
    let mut total = text_out::RowsWritten::default();
    for (input, format) in inputs.iter().zip(formats) {
        let path = args.out.join(text_out::output_name(input, &mut names));
        let written = match (format, input) {
            #[cfg(feature = "parquet")]
            (Format::Parquet, Input::File(file)) => text_out::write_parquet(file, &path, &marks, args.annotate, &config.text),
            (Format::Parquet, _) => bail!("{}: Parquet output needs a Parquet file and the `parquet` feature", input.name()),
            _ => text_out::write_jsonl(input, &path, &marks, args.annotate, &config.text, config.source.max_record_bytes),
        }
        .with_context(|| format!("deduplicating {}", input.name()))?;
        for (kind, n) in &written.damaged {
            tracing::warn!("{}: {n} damaged stretch(es) ({kind}) could not be copied", input.name());
        }
        total.rows_in += written.rows_in;
        total.rows_out += written.rows_out;
        total.dropped += written.dropped;
        total.copied_unclustered += written.copied_unclustered;
        println!("wrote {}", path.display());
    }
    let removed_path = args.out.join("removed.jsonl");
    let rows: Vec<RemovedRow> = removed.iter().map(RemovedRow::from).collect();
    dupflow::sink::write_jsonl(&removed_path, &rows).with_context(|| format!("writing {}", removed_path.display()))?;
    println!(
        "rows:      {} in, {} out; {} near-duplicates {}; {} rows that are not documents copied as they were",
        total.rows_in,
        total.rows_out,
        removed.len(),
        if args.annotate { "marked" } else { "left out" },
        total.copied_unclustered
    );
    println!("wrote {}", removed_path.display());
    Ok(ExitCode::SUCCESS)
}
