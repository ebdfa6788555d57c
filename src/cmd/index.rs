//! `dupflow index build`: a crawl's state saved as an index for `dedup --against` (the
//! checkpoint format: a run of the inputs with `--checkpoint`, no other output). An index keeps
//! every capture as a page of its own (`source.recrawls = "keep"`, whatever the config says).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

/// Arguments of `dupflow index build`.
#[derive(clap::Args)]
pub struct BuildArgs {
    /// The crawl to index: WARC files, text corpora, directories, quoted globs.
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// The index folder. An empty or new folder gets the inputs' pages; a folder holding an
    /// index gets them added (as `dedup --against --update-index` does).
    #[arg(long)]
    pub index: PathBuf,
    /// pipeline.toml to use: the dedups against the index need the same settings.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Worker threads (default: run.workers of the config).
    #[arg(long)]
    pub workers: Option<usize>,
}

/// Subcommands of `dupflow index`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Save the state of a crawl as an index (`dupflow dedup NEW --against INDEX`).
    Build(BuildArgs),
}

pub fn execute(command: Command) -> Result<ExitCode> {
    let Command::Build(args) = command;
    let args = super::run::Args {
        inputs: args.inputs,
        config: args.config,
        workers: args.workers,
        out: None,
        processes: 1,
        process: 0,
        hostfile: None,
        metrics_address: Some(String::new()),
        linger: 0,
        quiet: false,
        follow: false,
        deletions: None,
        checkpoint: Some(args.index),
        strict: true,
    };
    super::run::execute_as(args, Some(dupflow::dataflow::IndexRole::Build))
}
