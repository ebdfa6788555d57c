//! `dupflow eval`: score a clusters.jsonl against a truth file.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

/// Arguments of `dupflow eval`.
#[derive(clap::Args)]
pub struct Args {
    /// The truth: a JSON of judged pairs (`urls`, `sims` "i j" → resemblance, `dup`, `non`, as
    /// the dev benchmark's), or a text file of `url_a url_b label` lines (label dup/1 or non/0).
    #[arg(long)]
    pub truth: PathBuf,
    /// The clusters.jsonl to score (each line with `url` and `cluster`).
    pub clusters: PathBuf,
    /// Pairwise figures per section (the URL's 4th path component).
    #[arg(long)]
    pub by_section: bool,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    let Args { truth, clusters, by_section } = args;
    let truth = dupflow::eval::Truth::load(&truth)?;
    let clusters = dupflow::eval::load_clusters(&clusters)?;
    print!("{}", dupflow::eval::score(&truth, &clusters, by_section));
    Ok(ExitCode::SUCCESS)
}
