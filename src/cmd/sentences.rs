//! `dupflow sentences`: the pipeline's normalized sentences of WARC pages, one a line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use dupflow::source;

use super::{load_config, record_sentences};

/// Arguments of `dupflow sentences`.
#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// pipeline.toml whose [source] and [sentence] settings to use.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    let Args { inputs, config } = args;
    let config = load_config(config.as_deref())?;
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let mut failure = None;
    let inputs = source::expand(&inputs)?;
    let max = config.source.max_record_bytes;
    super::read_all_records(&inputs, max, "reading the pages", |item| {
        let Some(sentences) = item.ok().and_then(|r| record_sentences(&r, &config)) else {
            return;
        };
        for sentence in sentences {
            if failure.is_none() {
                if let Err(e) = writeln!(stdout, "{}", sentence.normalized) {
                    failure = Some(e);
                }
            }
        }
    })?;
    stdout.flush()?;
    match failure {
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}
