//! The `dupflow` command line: parse, dispatch to a command (`cmd/`, one module each), print
//! the error chain, exit code.

mod cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc, not glibc malloc: the dataflow allocates and frees small batches all the time
/// (glibc's takes ~17% of the CPU under a live feed with retention).
/// The `system-allocator` feature leaves it out, for heap profilers that hook malloc
/// (heaptrack: docs/development.md).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's option enum (what libmimalloc-sys 0.1.49 builds):
/// how many milliseconds freed memory waits before it goes back to the system (1,000 by
/// default).
#[cfg(not(feature = "system-allocator"))]
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Under memory pressure (past half of `run.memory_limit_mb`): freed memory goes back to the
/// system at once, not up to a second later. Peak RSS 10–45% lower for 3–10% more wall time
/// (docs/faq.md#memory), a trade made only where memory is short.
#[cfg(not(feature = "system-allocator"))]
fn purge_at_once() {
    // SAFETY: sets one of mimalloc's integer options; mimalloc reads it where it purges.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) }
}

#[derive(Parser)]
#[command(
    name = "dupflow",
    version,
    about = "Streaming near-duplicate detection for web-crawl WARC output"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Cluster the pages of WARC/ARC files (WACZ archives too) or the documents of text corpora
    /// (JSONL, Parquet): files, directories, globs, `-` for stdin. With no input, runs on a
    /// small WARC compiled into the binary.
    Run(cmd::run::Args),
    /// Check a pipeline.toml: every problem is named (unknown keys, wrong types, invalid values).
    Validate {
        /// The pipeline.toml to check.
        file: PathBuf,
    },
    /// Print the pipeline's normalized sentences of the HTML pages of WARC inputs, one per line
    /// (input for record-level tools such as similarity joins).
    Sentences(cmd::sentences::Args),
    /// Normalize records (one a line) as the similarity joins expect: NFKC, case folded,
    /// punctuation and symbols turned into `_`, white space collapsed.
    Normalize(cmd::join::NormalizeArgs),
    /// Drop exact duplicate lines, keeping the first of each.
    ExactDedup(cmd::join::ExactDedupArgs),
    /// Exact similarity self-join of the lines of a file: prints `line_x line_y value` (x > y,
    /// 1-based) for every pair at or above the threshold (set measures) or within the edit
    /// distance; statistics on stderr.
    Join(cmd::join::Args),
    /// How much of a document already exists in a corpus: the share of its sentences found on
    /// corpus pages, the verdict against a threshold, the duplicated spans and the smallest set
    /// of corpus pages that covers them. Prints JSON.
    Check(cmd::check::Args),
    /// Rank the HTML pages of WARC inputs by similarity to a reference text: TF-IDF cosine over
    /// canonical terms (stop words out, Snowball stems), or w-shingling.
    Similar(cmd::similar::Args),
    /// Score a clusters.jsonl against a truth file (a JSON of judged pairs, or a pair file of
    /// `url_a url_b label` lines): page-averaged and pairwise precision, recall and F1.
    Eval(cmd::eval::Args),
    /// Why two pages are or are not near-duplicates: each page's sentences marked (own,
    /// template, shared with the other), the verdict and what decided it, and with --run the
    /// verified path between them in their cluster.
    Explain(cmd::explain::Args),
    /// Write the inputs again without near-duplicates: one capture per cluster (records copied
    /// byte for byte with their request and metadata records), removed.jsonl naming what was
    /// left out and the page kept in its place; or, with --annotate, every record kept and a
    /// metadata record marking each near-duplicate.
    Dedup(cmd::dedup::Args),
    /// Indexes for `dedup --against`: `dupflow index build CRAWL... --index DIR` saves a
    /// crawl's state (the checkpoint format).
    #[command(subcommand)]
    Index(cmd::index::Command),
    /// Merge the sharded outputs of a cluster run (`clusters-I-of-N.jsonl`, `changes-…`,
    /// `revisits-…`, one set per process) into the clusters.jsonl, changes.jsonl and
    /// revisits.jsonl a single process writes, line for line.
    Merge {
        /// The --out directory every process of the cluster wrote its shards to.
        dir: PathBuf,
    },
    /// Print a shell completion script: `dupflow completions bash > /etc/bash_completion.d/dupflow`
    /// (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff): `dupflow man > dupflow.1`; with `--dir`, write one page per
    /// command there (dupflow.1, dupflow-run.1, …).
    Man {
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    small_pages();
    #[cfg(not(feature = "system-allocator"))]
    dupflow::process::on_memory_pressure(purge_at_once);
    // Logs go to stderr; DUPFLOW_LOG (e.g. `debug`, `dupflow=trace`) sets the level. The HTML
    // parser's own warnings are about a page's markup, which it repairs as HTML says (a table's
    // stray text is "foster parenting not implemented", once per node, though it is): not shown
    // unless asked for (`DUPFLOW_LOG=info,html5ever=warn`).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DUPFLOW_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,html5ever=error")),
        )
        .init();
    match dispatch(Cli::parse().command) {
        Ok(code) => code,
        // `dupflow man | head`: the reader left; nothing is wrong.
        Err(error)
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(error) => {
            // Whatever threads of a failed run still hold, no temporary file outlives it.
            dupflow::process::remove_scratch();
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// The process's memory in 4 KiB pages, not transparent huge pages, unless
/// `MIMALLOC_ALLOW_THP` is set (mimalloc then does as it says). mimalloc asks the kernel for
/// huge pages on its arenas, and the kernel zeroes 2 MiB at every first touch: on the dev file
/// that is ~24% of the CPU samples (`clear_page_erms`), 0.3–0.7 s of system time in a 1 s run.
/// With 4 KiB pages the dev file runs in a median 0.92 s against 1.02 s, doxygen's pages in
/// 3.7–4.1 s against 4.0–4.4 s, and the 100k scale crawl as fast either way.
fn small_pages() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes no memory; a
        // kernel without it returns an error, and the process runs as it would have.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}

fn dispatch(command: Command) -> Result<ExitCode> {
    match command {
        Command::Run(args) => cmd::run::execute(args),
        Command::Validate { file } => cmd::validate(&file),
        Command::Sentences(args) => cmd::sentences::execute(args),
        Command::Normalize(args) => cmd::join::normalize(args),
        Command::ExactDedup(args) => cmd::join::exact_dedup(args),
        Command::Join(args) => cmd::join::execute(args),
        Command::Check(args) => cmd::check::execute(args),
        Command::Similar(args) => cmd::similar::execute(args),
        Command::Eval(args) => cmd::eval::execute(args),
        Command::Explain(args) => cmd::explain::execute(args),
        Command::Dedup(args) => cmd::dedup::execute(args),
        Command::Index(command) => cmd::index::execute(command),
        Command::Merge { dir } => {
            let merged = dupflow::sink::shards::merge(&dir)
                .with_context(|| format!("merging the shards in {}", dir.display()))?;
            for (path, lines) in &merged.files {
                println!("{}: {lines} lines from {} shards", path.display(), merged.shards);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "dupflow", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: None } => {
            clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: Some(dir) } => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), &dir)
                .map_err(|e| anyhow::anyhow!("cannot write man pages to {}: {e}", dir.display()))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(all(test, not(feature = "system-allocator")))]
mod tests {
    /// The option set under pressure is the purge delay: its default is 1,000 ms, and it reads
    /// back as set.
    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // SAFETY: reads one of mimalloc's integer options.
        let default = unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) };
        assert_eq!(default, 1000);
        super::purge_at_once();
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) }, 0);
    }
}
