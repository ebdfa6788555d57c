//! `dupflow explain`: why two pages are or are not near-duplicates (`dupflow::explain`).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use dupflow::explain::{self, Explained, Role, Side};
use dupflow::source;

use super::{corpus_pages, finish_output, load_config, record_sentences};

/// Arguments of `dupflow explain`.
#[derive(clap::Args)]
pub struct Args {
    /// The first page's URL, as the inputs name it (clusters.jsonl's `url`).
    pub url_a: String,
    /// The second page's URL.
    pub url_b: String,
    /// The WARC inputs the pages are read from (every page counts for the template rule).
    /// With none, the WARC compiled into the binary.
    pub inputs: Vec<String>,
    /// A run's --out folder (or its clusters.jsonl): name each page's cluster and search the
    /// verified path between them among the cluster's pages.
    #[arg(long)]
    pub run: Option<PathBuf>,
    /// pipeline.toml whose settings to use (the run's, for the same verdicts).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    let config = load_config(args.config.as_deref())?;
    let inputs = if args.inputs.is_empty() {
        vec![dupflow::DEFAULT_INPUT]
    } else {
        source::expand(&args.inputs)?
    };
    let pages = corpus_pages(&inputs, &config)?;
    let texts = sentence_texts(&inputs, &config, [&args.url_a, &args.url_b])?;
    let explained = explain::explain(
        &pages,
        &texts,
        &args.url_a,
        &args.url_b,
        &config.method(),
        args.run.as_deref(),
    )?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &explained)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        write_text(&mut out, &explained)
    };
    finish_output(written.and_then(|()| out.flush()))
}

/// The normalized text of the sentences of the pages at `urls`, by sentence key.
fn sentence_texts(
    inputs: &[source::Input],
    config: &dupflow::config::PipelineConfig,
    urls: [&String; 2],
) -> Result<HashMap<u64, String>> {
    let mut texts = HashMap::new();
    for input in inputs {
        source::read_records(input, config.source.max_record_bytes, |item| {
            let Ok(record) = item else { return };
            // Only the two pages are split again: the header is enough to pass the others.
            let target = record.header("WARC-Target-URI").map(|u| u.trim_matches(['<', '>']));
            if !target.is_some_and(|t| urls.iter().any(|u| u.as_str() == t)) {
                return;
            }
            if let Some(sentences) = record_sentences(&record, config) {
                texts.extend(sentences.into_iter().map(|s| (s.key, s.normalized)));
            }
        })?;
    }
    Ok(texts)
}

fn write_text(out: &mut impl Write, e: &Explained) -> std::io::Result<()> {
    for (name, side) in [("A", &e.a), ("B", &e.b)] {
        writeln!(out, "{name}: {}", side.url)?;
        writeln!(out, "   {}", summary(side))?;
    }
    writeln!(out)?;
    writeln!(out, "verdict: {}", e.verdict.reason)?;
    if let Some(c) = &e.clusters {
        if c.same {
            writeln!(out, "cluster: both in {} ({} pages)", c.cluster_a, c.size_a)?;
        } else {
            writeln!(
                out,
                "clusters: A in {} ({} pages), B in {} ({} pages)",
                show(&c.cluster_a),
                c.size_a,
                show(&c.cluster_b),
                c.size_b
            )?;
        }
        match (&c.path, &c.no_path) {
            (Some(path), _) => {
                writeln!(
                    out,
                    "path ({} verified pair{}):",
                    path.len(),
                    if path.len() == 1 { "" } else { "s" }
                )?;
                for step in path {
                    writeln!(out, "   {} -> {}  {:.3}", step.from, step.to, step.similarity)?;
                }
            }
            (None, Some(why)) => writeln!(out, "path: none: {why}")?,
            (None, None) => {}
        }
    }
    for (name, side) in [("A", &e.a), ("B", &e.b)] {
        writeln!(out)?;
        writeln!(out, "{name}'s sentences (= shared with the other page, + its own, t template compared, T template left out):")?;
        for line in &side.sentences {
            let mark = match (line.role, line.shared) {
                (Role::Template, _) => 'T',
                (_, true) => '=',
                (Role::TemplateKept, false) => 't',
                (Role::Own, false) => '+',
            };
            writeln!(out, "{mark} {}", line.text)?;
        }
    }
    Ok(())
}

fn show(cluster: &str) -> &str {
    if cluster.is_empty() {
        "no cluster"
    } else {
        cluster
    }
}

fn summary(side: &Side) -> String {
    let count = |role: Role| side.sentences.iter().filter(|l| l.role == role).count();
    format!(
        "{} sentences: {} own, {} template compared, {} template left out; {} of {} units compared{}",
        side.sentences.len(),
        count(Role::Own),
        count(Role::TemplateKept),
        count(Role::Template),
        side.compared_units,
        side.total_units,
        if side.template_dominated { " (template-dominated: its text after its leading template)" } else { "" },
    )
}
