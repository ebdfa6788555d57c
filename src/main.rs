//! The `dupflow` command line: parse, run, print the error chain, exit code.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use std::io::Write as _;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use dupflow::config::PipelineConfig;
use dupflow::dataflow::{self, RunOptions};
use dupflow::metrics::live::Live;
use dupflow::metrics::{self, progress, server, Registry};
use dupflow::{sink, source};

#[derive(Parser)]
#[command(name = "dupflow", version, about = "Streaming near-duplicate detection for web-crawl WARC output")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Cluster the pages of WARC inputs (files, directories, globs, `-` for stdin).
    /// With no input, runs on a small WARC compiled into the binary.
    Run {
        inputs: Vec<String>,
        /// pipeline.toml to use (defaults are built in).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Worker threads per process (default: run.workers of the config).
        #[arg(long)]
        workers: Option<usize>,
        /// Directory for clusters.jsonl, changes.jsonl and revisits.jsonl.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Timely cluster mode: number of processes.
        #[arg(long, default_value_t = 1)]
        processes: usize,
        /// Timely cluster mode: this process's index.
        #[arg(long, default_value_t = 0)]
        process: usize,
        /// Timely cluster mode: file with one `host:port` per process.
        #[arg(long)]
        hostfile: Option<PathBuf>,
        /// Serve /metrics, the dashboard (/) and /api/... on this address (e.g. 127.0.0.1:9464;
        /// port 0 picks a free one, printed on stderr).
        #[arg(long)]
        metrics_address: Option<String>,
        /// Keep serving the endpoint this many seconds after the run ends.
        #[arg(long, default_value_t = 0)]
        linger: u64,
        /// No progress output.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check a pipeline.toml: unknown keys and invalid values are named.
    Validate { file: PathBuf },
    /// Print the pipeline's normalized sentences of the HTML pages of WARC inputs, one per line
    /// (input for record-level tools such as similarity joins).
    Sentences {
        #[arg(required = true)]
        inputs: Vec<String>,
        /// pipeline.toml whose [source] and [sentence] settings to use.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Score a clusters.jsonl against a truth file (the dev benchmark's JSON, or a pair file
    /// of `url_a url_b label` lines), as ../shared/bench/score.py does.
    Eval {
        #[arg(long)]
        truth: PathBuf,
        clusters: PathBuf,
        /// Pairwise figures per section (the URL's 4th path component).
        #[arg(long)]
        by_section: bool,
    },
}

fn main() -> ExitCode {
    // Logs go to stderr; DUPFLOW_LOG (e.g. `debug`, `dupflow=trace`) sets the level.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DUPFLOW_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match real_main() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<ExitCode> {
    match Cli::parse().command {
        Command::Eval { truth, clusters, by_section } => {
            let truth = dupflow::eval::Truth::load(&truth)?;
            let clusters = dupflow::eval::load_clusters(&clusters)?;
            print!("{}", dupflow::eval::score(&truth, &clusters, by_section));
            Ok(ExitCode::SUCCESS)
        }
        Command::Sentences { inputs, config } => {
            let config = match &config {
                Some(path) => PipelineConfig::load(path)?,
                None => PipelineConfig::default(),
            };
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            let mut failure = None;
            for input in source::expand(&inputs)? {
                source::read_records(&input, config.source.max_record_bytes, |item| {
                    let Ok(record) = item else { return };
                    let Ok((source::http::Outcome::Page(doc), _)) = source::http::interpret(&record, config.source.max_page_bytes as usize) else {
                        return;
                    };
                    let blocks = dupflow_operators::html::strip(&doc.html).blocks;
                    for sentence in dupflow_operators::sentence::split_page(&blocks, &config.sentence).sentences {
                        if failure.is_none() {
                            if let Err(e) = writeln!(stdout, "{}", sentence.normalized) {
                                failure = Some(e);
                            }
                        }
                    }
                })?;
            }
            stdout.flush()?;
            match failure {
                Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
                Some(e) => Err(e.into()),
                None => Ok(ExitCode::SUCCESS),
            }
        }
        Command::Validate { file } => {
            PipelineConfig::load(&file)?;
            println!("{}: ok", file.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { inputs, config, workers, out, processes, process, hostfile, metrics_address, linger, quiet } => {
            let config = match &config {
                Some(path) => PipelineConfig::load(path)?,
                None => PipelineConfig::default(),
            };
            let inputs = if inputs.is_empty() { vec![dupflow::DEFAULT_INPUT] } else { source::expand(&inputs)? };
            if processes == 0 || process >= processes {
                bail!("--process must be below --processes");
            }
            let addresses = match (&hostfile, processes) {
                (_, 1) => Vec::new(),
                (Some(path), n) => {
                    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                    let addresses: Vec<String> =
                        text.lines().map(str::trim).filter(|l| !l.is_empty()).take(n).map(str::to_string).collect();
                    if addresses.len() < n {
                        bail!("{} lists {} addresses, --processes is {n}", path.display(), addresses.len());
                    }
                    addresses
                }
                (None, n) => (0..n).map(|i| format!("127.0.0.1:{}", 2101 + i)).collect(),
            };
            let workers = workers.unwrap_or(config.run.workers);
            let metrics = Arc::new(Registry::default());
            let live = Arc::new(Live::new(metrics.clone(), config.metrics.cluster_alarm_pages));
            let address = metrics_address.unwrap_or_else(|| config.metrics.address.clone());
            if !address.is_empty() && process == 0 {
                let bound = server::serve(&address, live.clone())?;
                tracing::info!("metrics on http://{bound}/metrics, dashboard on http://{bound}/");
            }
            let sampler = progress::start(live.clone(), quiet || process != 0);
            let names: Vec<String> = inputs.iter().map(|i| i.name()).collect();
            let options = RunOptions { inputs, config, workers, processes, process, addresses, live: live.clone() };
            let output = dataflow::run(options)?;
            if process != 0 {
                sampler.stop();
                return Ok(ExitCode::SUCCESS);
            }
            let rows = sink::final_rows(&output.changes);
            if let Some(dir) = &out {
                sink::write_outputs(dir, &output, &rows).with_context(|| format!("writing to {}", dir.display()))?;
            }
            let summary = sink::summarize(&rows);
            let secs = output.elapsed.as_secs_f64();
            let pages = metrics.get(metrics::PAGES, "");
            let label = |m| {
                metrics.by_label(m).iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
            };
            tracing::info!("read {} input(s): {}", names.len(), if names.len() <= 3 { names.join(", ") } else { format!("{} …", names[0]) });
            println!("records:   {} ({})", metrics.total(metrics::RECORDS), label(metrics::RECORDS));
            println!("pages:     {pages} in {secs:.2} s ({:.0} pages/s), {} revisits", pages as f64 / secs.max(1e-9), metrics.get(metrics::REVISITS, ""));
            println!(
                "clusters:  {} ({} with more than one page, holding {} pages; largest {})",
                summary.clusters, summary.multi_page_clusters, summary.pages_in_multi_page_clusters, summary.largest_cluster
            );
            let errors = metrics.total(metrics::RECORD_ERRORS) + metrics.total(metrics::DOCUMENT_ERRORS);
            if errors > 0 {
                println!("skipped as damaged: {errors} ({}; {})", label(metrics::RECORD_ERRORS), label(metrics::DOCUMENT_ERRORS));
            }
            let caps = label(metrics::CAPS);
            if !caps.is_empty() {
                println!("caps hit:  {caps}");
            }
            if let Some(dir) = &out {
                println!("wrote {}/clusters.jsonl, changes.jsonl, revisits.jsonl", dir.display());
            }
            // Outputs are on disk: the live view says "finished".
            live.finish();
            if linger > 0 && !address.is_empty() {
                tracing::info!("serving for {linger} more seconds");
                std::thread::sleep(std::time::Duration::from_secs(linger));
            }
            sampler.stop();
            Ok(ExitCode::SUCCESS)
        }
    }
}
