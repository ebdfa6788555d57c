//! `dupflow explain`: why two pages are or are not near-duplicates (`dupflow::explain`).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;

use dupflow::explain::{self, Explained, Role, Side};
use dupflow::metrics::live::Live;
use dupflow::metrics::server::Explainer;
use dupflow::source;
use dupflow::source::http::host_of;
use hyper::StatusCode;

use super::{corpus_pages_where, finish_output, load_config, record_sentences};

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
    let clusters = args.run.as_deref().map(explain::Membership::read).transpose()?;
    let explained = explain_inputs(&inputs, &config, &args.url_a, &args.url_b, clusters.as_ref())?;
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

/// Explains two pages of `inputs` (`explain::explain`). Only the pages of the hosts that
/// matter are made: the two pages' hosts (the template rule counts per host) and, when both
/// are in one cluster of `clusters`, its members' hosts (the path is searched among them).
pub fn explain_inputs(
    inputs: &[source::Input],
    config: &dupflow::config::PipelineConfig,
    url_a: &str,
    url_b: &str,
    clusters: Option<&explain::Membership>,
) -> Result<Explained> {
    let mut hosts: HashSet<String> = [url_a, url_b].into_iter().map(host_of).collect();
    if let Some(c) = clusters {
        match (c.cluster_of.get(url_a), c.cluster_of.get(url_b)) {
            (Some(x), Some(y))
                if x == y && c.members[x].len() <= explain::MAX_PATH_SEARCH_PAGES =>
            {
                hosts.extend(c.members[x].iter().map(|u| host_of(u)));
            }
            _ => {}
        }
    }
    let pages = corpus_pages_where(inputs, config, |url| hosts.contains(&host_of(url)))?;
    let texts = sentence_texts(inputs, config, [url_a, url_b])?;
    Ok(explain::explain(&pages, &texts, url_a, url_b, &config.method(), clusters)?)
}

/// What the dashboard's side-by-side view calls (`/api/compare`): `explain_inputs` over the
/// run's inputs as they are now, with the live run's clusters. None for a run reading standard
/// input (its records cannot be read again).
pub fn live_explainer(
    inputs: &[String],
    config: &dupflow::config::PipelineConfig,
    live: &Arc<Live>,
) -> Option<Explainer> {
    if inputs.iter().any(|i| i == "-") {
        return None;
    }
    let (inputs, config, live) = (inputs.to_vec(), config.clone(), live.clone());
    Some(Arc::new(move |a: &str, b: &str| {
        let failed = |e: anyhow::Error| (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}"));
        let sources = if inputs.is_empty() {
            vec![dupflow::DEFAULT_INPUT]
        } else {
            source::expand(&inputs).map_err(|e| failed(e.into()))?
        };
        let membership = live.membership(&[a, b]);
        match explain_inputs(&sources, &config, a, b, Some(&membership)) {
            Ok(explained) => serde_json::to_value(explained).map_err(|e| failed(e.into())),
            Err(e) => match e.downcast_ref::<explain::ExplainError>() {
                Some(not_found @ explain::ExplainError::NotFound(_)) => {
                    Err((StatusCode::NOT_FOUND, not_found.to_string()))
                }
                _ => Err(failed(e)),
            },
        }
    }))
}

/// The normalized text of the sentences of the pages at `urls`, by sentence key.
fn sentence_texts(
    inputs: &[source::Input],
    config: &dupflow::config::PipelineConfig,
    urls: [&str; 2],
) -> Result<HashMap<u64, String>> {
    let mut texts = HashMap::new();
    let max = config.source.max_record_bytes;
    super::read_all_records(inputs, max, "reading the two pages", |item| {
        let Ok(record) = item else { return };
        // Only the two pages are split again: the header is enough to pass the others.
        let target = record.header("WARC-Target-URI").map(|u| u.trim_matches(['<', '>']));
        if !target.is_some_and(|t| urls.contains(&t)) {
            return;
        }
        if let Some(sentences) = record_sentences(&record, config) {
            texts.extend(sentences.into_iter().map(|s| (s.key, s.normalized)));
        }
    })?;
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
            let size = super::count(c.size_a, "page", "pages");
            writeln!(out, "cluster: both in {} ({size})", c.cluster_a)?;
        } else {
            writeln!(
                out,
                "clusters: A in {} ({}), B in {} ({})",
                show(&c.cluster_a),
                super::count(c.size_a, "page", "pages"),
                show(&c.cluster_b),
                super::count(c.size_b, "page", "pages")
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
