//! `dupflow dedup`: the pipeline as `run` does it, then the inputs written again without the
//! near-duplicates (or with them annotated), and `removed.jsonl` naming what was left out.
//!
//! Clustering runs in rounds until one finds nothing more to leave out: template statistics
//! and candidate sets depend on the corpus, so pages kept apart among all their copies can
//! meet once the copies are gone. Each round clusters the previous round's output (written to
//! a scratch folder under `--out`); the outputs are then written once, from the inputs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use dupflow::config::PipelineConfig;
use dupflow::dataflow::{self, Feed, RunOptions};
use dupflow::metrics::progress::Pass;
use dupflow::sink::dedup::{self, Census, Keep};
use dupflow::sink::text::{self as text_out, Marks, RemovedRow};
use dupflow::source::decode::Format;
use dupflow::source::{self, Input, Item, Items};
use dupflow::types::ClusterRow;

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
    /// row), longest (response bytes; text length), shortest-url (for text, the shortest id),
    /// canonical (the member the others name with `<link rel="canonical">` or a `Link`
    /// header, else the earliest; WARC inputs).
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
    /// Clustering rounds at most: each round clusters what the previous one kept, until one
    /// finds nothing more to leave out (then `dupflow run` on the output finds no cluster of
    /// two). 1: a single pass.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Deduplicate the inputs against an index of earlier crawls (`dupflow index build OLD
    /// --index INDEX`, or the checkpoint folder of `dupflow run OLD --checkpoint INDEX`). Its
    /// pages are kept: a page of the inputs in a cluster with one is left out, pointing at the
    /// earliest; the rest are deduplicated among themselves under --keep. Every capture is a
    /// page: a new capture of an indexed URL whose content is unchanged (or a near-duplicate of
    /// it) is left out, a changed one kept. One clustering round. The index is read, not
    /// changed, unless --update-index.
    #[arg(long, value_name = "INDEX")]
    pub against: Option<PathBuf>,
    /// With --against: write the state with the inputs' pages back into INDEX, so that the
    /// next crawl is deduplicated against both.
    #[arg(long, requires = "against")]
    pub update_index: bool,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    let config = load_config(args.config.as_deref())?;
    dupflow::files::prepare_dir(&args.out, "--out")?;
    let inputs = if args.inputs.is_empty() {
        vec![dupflow::DEFAULT_INPUT]
    } else {
        source::expand(&args.inputs)?
    };
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
    if text > 0 && args.keep == Keep::Canonical {
        bail!("--keep canonical reads the canonical links of HTML pages: give WARC files");
    }
    let corpus = Corpus {
        args: &args,
        formats: &formats,
        config: &config,
        text: text > 0,
        census: census(&inputs, &config, text > 0, args.keep == Keep::Canonical)?,
    };
    let (rows, removed) = corpus.rounds(&inputs)?;
    if corpus.text {
        corpus.write_text(&inputs, &rows, &removed)
    } else {
        corpus.write_warc(&inputs, &rows, &removed)
    }
}

/// Dates, lengths and concurrent records by record id (for text: each row's length by id).
fn census(
    inputs: &[Input],
    config: &PipelineConfig,
    text: bool,
    canonical: bool,
) -> Result<Census> {
    let mut census = Census::default();
    if !text {
        let label = "reading the records' dates and lengths";
        super::read_all_records(inputs, config.source.max_record_bytes, label, |item| {
            if let Ok(record) = item {
                census.add(&record);
                if canonical || config.urls.normalize {
                    let max = config.source.max_page_bytes as usize;
                    census.add_page(&record, max, canonical);
                }
            }
        })?;
        return Ok(census);
    }
    let pass = Pass::start("reading the rows' lengths", super::total_bytes(inputs));
    for input in inputs {
        let mut items = Items::open(input, config.source.max_record_bytes, &config.text)?;
        while let Some(item) = items.next_item() {
            if let Ok(Item::Text(doc)) = item {
                census.lengths.insert(doc.id, doc.text.len() as u64);
            }
        }
        let size = input.size().unwrap_or(0);
        pass.reading(move || size);
    }
    pass.stop();
    Ok(census)
}

struct Corpus<'a> {
    args: &'a Args,
    formats: &'a [Format],
    config: &'a PipelineConfig,
    text: bool,
    census: Census,
}

impl Corpus<'_> {
    fn identity(&self) -> dupflow::source::urls::UrlIdentity {
        dupflow::source::urls::UrlIdentity::new(&self.config.urls)
    }

    /// Clusters in rounds; returns the first round's rows (every page) and every page left
    /// out, each pointing at the page finally kept in its place.
    fn rounds(&self, inputs: &[Input]) -> Result<(Vec<ClusterRow>, Vec<dedup::Removed>)> {
        let workers = self.args.workers.unwrap_or(self.config.run.workers);
        if let Some(index) = &self.args.against {
            return self.against(inputs, index, workers);
        }
        // The rounds' outputs, removed however the rounds end.
        let scratch = dupflow::files::Scratch::new(self.args.out.join(".dedup-rounds"));
        let mut current = inputs.to_vec();
        let mut first = None;
        let mut removed = Vec::new();
        let mut settled = false;
        let mut round = 0;
        while round < self.args.rounds {
            round += 1;
            let options =
                RunOptions::new(Feed::Inputs(current.clone()), self.config.clone(), workers);
            let output = cluster(
                options,
                &format!("round {round} of at most {}: clustering", self.args.rounds),
            )?;
            let mut more = dedup::plan(&output.rows, self.args.keep, &self.census);
            if round == 1 {
                // Aliases are found in the first round, which reads every capture.
                more.extend(dedup::aliases(&output.rows, &self.census, &self.identity()));
            }
            first.get_or_insert(output.rows);
            if more.is_empty() {
                settled = true;
                break;
            }
            if round < self.args.rounds {
                let dir = scratch.path().join(format!("round-{round}"));
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                current = self.write_round(&current, &dir, &more)?;
            }
            removed.extend(more);
        }
        drop(scratch);
        if settled {
            println!("rounds:    {round} (the last found nothing more to leave out)");
        } else {
            tracing::warn!("dedup: round {round} still found near-duplicates; raise --rounds for an output without any");
            println!("rounds:    {round} (the limit; the last still left pages out)");
        }
        Ok((first.unwrap_or_default(), dedup::resolve(removed)))
    }

    /// One run resumed from the index's state with the inputs on top; the index's pages are
    /// the kept ones of their clusters.
    fn against(
        &self,
        inputs: &[Input],
        index: &std::path::Path,
        workers: usize,
    ) -> Result<(Vec<ClusterRow>, Vec<dedup::Removed>)> {
        if !index.join("checkpoint.json").is_file() {
            bail!("--against {}: not an index (no checkpoint.json; make one with `dupflow run OLD --checkpoint {}`)", index.display(), index.display());
        }
        // The index's own records: a capture of the inputs among them is already archived.
        let held_ids = dupflow::checkpoint::held_record_ids(index)?;
        let scratch = dupflow::files::Scratch::new(self.args.out.join(".dedup-index"));
        let state = if self.args.update_index {
            index.to_path_buf()
        } else {
            copy_dir(index, scratch.path())?;
            scratch.path().to_path_buf()
        };
        // Every capture is a page: a new capture of an indexed URL meets the indexed page
        // instead of replacing it.
        let mut config = self.config.clone();
        config.source.recrawls = dupflow::source::current::Recrawls::Keep;
        let mut options = RunOptions::new(Feed::Inputs(inputs.to_vec()), config, workers);
        options.checkpoint = Some(state);
        options.index = Some(dataflow::IndexRole::Against);
        let output = cluster(options, &format!("clustering against {}", index.display()))?;
        drop(scratch);
        let indexed = |r: &ClusterRow| held_ids.contains(&*r.record_id);
        let mut removed = dedup::plan_against(&output.rows, self.args.keep, &self.census, indexed);
        removed.extend(dedup::aliases(&output.rows, &self.census, &self.identity()));
        removed.extend(dedup::already_indexed(&output.rows, &self.census, indexed));
        let removed = dedup::resolve(removed);
        let held = output.rows.iter().filter(|r| indexed(r)).count();
        // The inputs' pages (the census reads them), those already in the index among them.
        let rows: Vec<ClusterRow> = output
            .rows
            .into_iter()
            .filter(|r| self.census.lengths.contains_key(&*r.record_id))
            .collect();
        println!("index:     {held} pages of {} held", index.display());
        let again = removed.iter().filter(|r| r.already_indexed).count();
        if again > 0 {
            println!(
                "           {again} pages of the inputs are records the index holds: left out"
            );
        }
        Ok((rows, removed))
    }

    /// One round's kept pages, as the next round's inputs.
    fn write_round(
        &self,
        inputs: &[Input],
        dir: &std::path::Path,
        removed: &[dedup::Removed],
    ) -> Result<Vec<Input>> {
        let mut names = HashSet::new();
        let mut next = Vec::new();
        let marks = Marks::new(&[], removed);
        let pass = Pass::start("writing what the round kept", super::total_bytes(inputs));
        for (input, format) in inputs.iter().zip(self.formats) {
            let path = if self.text {
                let path = dir.join(text_out::output_name(input, &mut names));
                self.write_rows(input, *format, &path, &marks, false)?;
                let size = input.size().unwrap_or(0);
                pass.reading(move || size);
                path
            } else {
                let path = dir.join(dedup::output_name(input, &mut names));
                dedup::write_warc(
                    input,
                    &path,
                    removed,
                    &self.census,
                    false,
                    self.config.source.max_record_bytes,
                    &|counter| pass.reading(move || counter.get()),
                )?;
                path
            };
            next.push(Input::File(path));
        }
        pass.stop();
        Ok(next)
    }

    fn write_rows(
        &self,
        input: &Input,
        format: Format,
        path: &std::path::Path,
        marks: &Marks,
        annotate: bool,
    ) -> Result<text_out::RowsWritten> {
        Ok(match (format, input) {
            #[cfg(feature = "parquet")]
            (Format::Parquet, Input::File(file)) => {
                text_out::write_parquet(file, path, marks, annotate, &self.config.text)?
            }
            (Format::Parquet, _) => bail!(
                "{}: Parquet output needs a Parquet file and the `parquet` feature",
                input.name()
            ),
            _ => text_out::write_jsonl(
                input,
                path,
                marks,
                annotate,
                &self.config.text,
                self.config.source.max_record_bytes,
            )?,
        })
    }

    /// WARC outputs: every input without its left-out pages (or annotated), and removed.jsonl.
    fn write_warc(
        &self,
        inputs: &[Input],
        rows: &[ClusterRow],
        removed: &[dedup::Removed],
    ) -> Result<ExitCode> {
        let args = self.args;
        let mut names = HashSet::new();
        let mut total = dedup::Written::default();
        let pass = Pass::start("writing", super::total_bytes(inputs));
        let mut wrote = Vec::new();
        for input in inputs {
            let path = args.out.join(dedup::output_name(input, &mut names));
            let written = dedup::write_warc(
                input,
                &path,
                removed,
                &self.census,
                args.annotate,
                self.config.source.max_record_bytes,
                &|counter| pass.reading(move || counter.get()),
            )
            .with_context(|| format!("deduplicating {}", input.name()))?;
            for (kind, n) in &written.damaged {
                tracing::warn!(
                    "{}: {n} damaged record(s) ({kind}) could not be copied",
                    input.name()
                );
                *total.damaged.entry(kind).or_default() += n;
            }
            total.records_in += written.records_in;
            total.records_out += written.records_out;
            total.pages_dropped += written.pages_dropped;
            total.concurrent_dropped += written.concurrent_dropped;
            total.annotations += written.annotations;
            wrote.push(path);
        }
        pass.stop();
        for path in wrote {
            println!("wrote {}", path.display());
        }
        let removed_path = args.out.join("removed.jsonl");
        dupflow::sink::write_jsonl(&removed_path, removed)
            .with_context(|| format!("writing {}", removed_path.display()))?;
        let pages = rows.len();
        if args.annotate {
            println!(
                "pages:     {pages}, {} near-duplicates annotated ({} metadata records added)",
                removed.len(),
                total.annotations
            );
        } else {
            println!(
                "pages:     kept {} of {pages}; {} near-duplicates left out with {} concurrent request/metadata records",
                pages - total.pages_dropped as usize,
                total.pages_dropped,
                total.concurrent_dropped
            );
        }
        println!(
            "records:   {} in, {} out; wrote {}",
            total.records_in,
            total.records_out,
            removed_path.display()
        );
        Ok(ExitCode::SUCCESS)
    }

    /// Text outputs: each input's rows in its format, marked or only the kept, and removed.jsonl.
    fn write_text(
        &self,
        inputs: &[Input],
        rows: &[ClusterRow],
        removed: &[dedup::Removed],
    ) -> Result<ExitCode> {
        let args = self.args;
        let marks = Marks::new(rows, removed);
        let mut names = HashSet::new();
        let mut total = text_out::RowsWritten::default();
        let pass = Pass::start("writing", super::total_bytes(inputs));
        let mut wrote = Vec::new();
        for (input, format) in inputs.iter().zip(self.formats) {
            let path = args.out.join(text_out::output_name(input, &mut names));
            let written = self
                .write_rows(input, *format, &path, &marks, args.annotate)
                .with_context(|| format!("deduplicating {}", input.name()))?;
            for (kind, n) in &written.damaged {
                tracing::warn!(
                    "{}: {n} damaged stretch(es) ({kind}) could not be copied",
                    input.name()
                );
            }
            total.rows_in += written.rows_in;
            total.rows_out += written.rows_out;
            total.dropped += written.dropped;
            total.copied_unclustered += written.copied_unclustered;
            let size = input.size().unwrap_or(0);
            pass.reading(move || size);
            wrote.push(path);
        }
        pass.stop();
        for path in wrote {
            println!("wrote {}", path.display());
        }
        let removed_path = args.out.join("removed.jsonl");
        let lines: Vec<RemovedRow> = removed.iter().map(RemovedRow::from).collect();
        dupflow::sink::write_jsonl(&removed_path, &lines)
            .with_context(|| format!("writing {}", removed_path.display()))?;
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
}

/// One clustering run, with its progress shown (drawn on a terminal, a line every 10 s
/// elsewhere) after `what` is logged.
fn cluster(options: RunOptions, what: &str) -> Result<dupflow::dataflow::RunOutput> {
    tracing::info!("{what}");
    let sampler = dupflow::metrics::progress::start(options.live.clone(), false);
    let output = dataflow::run(options);
    sampler.stop();
    Ok(output?)
}

/// The files of `from` (a checkpoint folder) copied into `to`.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry.with_context(|| format!("reading {}", from.display()))?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}
