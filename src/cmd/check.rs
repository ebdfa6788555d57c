//! `dupflow check`: how much of a document already exists in a corpus of WARC pages.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use dupflow::source;

use super::{corpus_pages, load_config, read_text};

/// Arguments of `dupflow check`.
#[derive(clap::Args)]
pub struct Args {
    /// The document: an HTML or text file, `-` for stdin, or the URL of a corpus page.
    /// Without one: the corpus's own distribution of shares (each page against the others).
    pub document: Option<String>,
    /// The corpus: WARC inputs (files, directories, globs).
    #[arg(long, required = true, num_args = 1..)]
    pub corpus: Vec<String>,
    /// Refuse the document when its share is above this.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f64,
    /// Derive the threshold from the corpus's own shares (Otsu's cut), instead of --threshold.
    #[arg(long)]
    pub adaptive: bool,
    /// With --adaptive: a cut per site (hosts with at least 20 pages).
    #[arg(long)]
    pub per_site: bool,
    /// pipeline.toml whose [source], [sentence] and [template] settings to use.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    let Args { document, corpus, threshold, adaptive, per_site, config } = args;
    let config = load_config(config.as_deref())?;
    let pages = corpus_pages(&source::expand(&corpus)?, &config)?;
    let index = dupflow::check::ShareIndex::new(pages, &config.template);
    let Some(document) = document else {
        let shares = index.corpus_shares();
        let (global, _) = dupflow::check::adaptive_thresholds(&shares, 20);
        let mut values: Vec<f64> = shares.iter().map(|&(_, s)| s).collect();
        values.sort_by(f64::total_cmp);
        let at = |q: f64| {
            values
                .get(((values.len().max(1) - 1) as f64 * q).round() as usize)
                .copied()
                .unwrap_or(0.0)
        };
        let count =
            |lo: f64, hi: f64| values.iter().filter(|&&v| v >= lo && (v < hi || hi > 1.0)).count();
        let bands: Vec<serde_json::Value> = (0..10)
            .map(|b| {
                let (lo, hi) = (b as f64 / 10.0, (b + 1) as f64 / 10.0 + if b == 9 { 1.0 } else { 0.0 });
                serde_json::json!({"from": lo, "to": ((b + 1) as f64 / 10.0), "pages": count(lo, hi)})
            })
            .collect();
        let out = serde_json::json!({
            "corpus_pages": values.len(),
            "pages_at_least_half_duplicated": count(0.5, 2.0),
            "pages_with_no_duplicated_sentence": count(0.0, 1e-12),
            "median_share": at(0.5),
            "p90_share": at(0.9),
            "adaptive_threshold": global,
            "histogram": bands,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    };
    let (sentences, host, exclude) =
        match index.find(&document).and_then(|id| index.page(id).map(|p| (id, p))) {
            Some((id, page)) => (page.sentences.clone(), Some(page.host), Some(id)),
            None => {
                let text = read_text(std::path::Path::new(&document))?;
                (dupflow::check::document_sentences(&text, &config.sentence), None, None)
            }
        };
    let report = index.report(&sentences, host, exclude);
    let (threshold, rule) = if adaptive {
        let (global, per_host) = dupflow::check::adaptive_thresholds(&index.corpus_shares(), 20);
        match (per_site, host.and_then(|h| per_host.get(&h))) {
            (true, Some(t)) => (*t, "adaptive (Otsu, this site)"),
            _ => (
                global.unwrap_or(threshold),
                if global.is_some() {
                    "adaptive (Otsu, corpus)"
                } else {
                    "fixed (corpus too uniform for Otsu)"
                },
            ),
        }
    } else {
        (threshold, "fixed")
    };
    let out = dupflow::check::answer(&document, &report, threshold, rule, index.len());
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::SUCCESS)
}
