//! `dupflow run`: cluster the pages of WARC inputs, once or followed as they grow; the
//! endpoint, progress and the summary printed at the end.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use dupflow::dataflow::{self, IndexRole, RunOptions};
use dupflow::metrics::live::Live;
use dupflow::metrics::{progress, server, Registry};
use dupflow::{sink, source};

use super::load_config;

/// Arguments of `dupflow run`.
#[derive(clap::Args)]
pub struct Args {
    /// WARC/ARC files, WACZ archives, text corpora (JSONL, Parquet), directories, quoted globs,
    /// or `-` for stdin. With none, the small WARC compiled into the binary.
    pub inputs: Vec<String>,
    /// pipeline.toml to use (defaults are built in).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Worker threads per process (default: run.workers of the config).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Directory for clusters.jsonl, changes.jsonl, spans.jsonl and revisits.jsonl.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Timely cluster mode: number of processes.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// Timely cluster mode: this process's index.
    #[arg(long, default_value_t = 0)]
    pub process: usize,
    /// Timely cluster mode: file with one `host:port` per process.
    #[arg(long)]
    pub hostfile: Option<PathBuf>,
    /// Serve /metrics, the dashboard (/) and /api/... on this address (e.g. 127.0.0.1:9464;
    /// port 0 picks a free one, printed on stderr).
    #[arg(long)]
    pub metrics_address: Option<String>,
    /// Keep serving the endpoint this many seconds after the run ends.
    #[arg(long, default_value_t = 0)]
    pub linger: u64,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Follow the inputs as a crawler writes them: a WARC file being written (complete
    /// records are read, the reader waits at a partial one), a directory where new WARC
    /// files appear, or `-`. Runs until SIGINT/SIGTERM, then closes the last epoch and
    /// writes the outputs.
    #[arg(long)]
    pub follow: bool,
    /// A file of URLs to retract (one a line, `#` comments), read as it grows.
    #[arg(long)]
    pub deletions: Option<PathBuf>,
    /// Checkpoint directory: state is saved there every `run.checkpoint_epochs` epochs and
    /// at the end; a run started with a directory holding a checkpoint resumes from it. In a
    /// cluster, a directory every process sees (a shared file system), the same for all.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Exit with code 1 (after writing the outputs) when an input yields nothing: a directory
    /// or glob with no file, an input with no record. Without it these are warnings.
    #[arg(long)]
    pub strict: bool,
}

pub fn execute(args: Args) -> Result<ExitCode> {
    execute_as(args, None)
}

/// `execute`, with the checkpoint used as an index (`index build`): every capture a page.
pub(super) fn execute_as(args: Args, index: Option<IndexRole>) -> Result<ExitCode> {
    let Args {
        inputs,
        config,
        workers,
        out,
        processes,
        process,
        hostfile,
        metrics_address,
        linger,
        quiet,
        follow,
        deletions,
        checkpoint,
        strict,
    } = args;
    let mut config = load_config(config.as_deref())?;
    if index.is_some() {
        config.source.recrawls = source::current::Recrawls::Keep;
    }
    // Where the run writes is checked before anything is read: a run that cannot write fails now.
    if let Some(dir) = &out {
        dupflow::files::prepare_dir(dir, "--out")?;
    }
    if let Some(dir) = &checkpoint {
        dupflow::files::prepare_dir(dir, "--checkpoint")?;
    }
    let (feed, mut nothing) = feed(&inputs, follow)?;
    if config.share.enabled && processes > 1 {
        bail!(
            "share.enabled (spans.jsonl) works in one process: its spans name pages of every shard"
        );
    }
    dupflow::process::install_stop_handler(std::time::Duration::from_secs(
        config.run.stop_timeout_secs,
    ))
    .context("installing the SIGINT/SIGTERM handler")?;
    if processes == 0 || process >= processes {
        bail!("--process must be below --processes");
    }
    let addresses = addresses(hostfile.as_deref(), processes)?;
    let workers = workers.unwrap_or(config.run.workers);
    let metrics = Arc::new(Registry::default());
    let live = Arc::new(Live::new(metrics.clone(), config.metrics.cluster_alarm_pages));
    let address = metrics_address.unwrap_or_else(|| config.metrics.address.clone());
    // Every process serves its share (its reading, its workers, its shard of the clusters).
    if !address.is_empty() {
        serve(&address, &inputs, &config, &live)?;
    }
    let sampler = progress::start(live.clone(), quiet || process != 0);
    if processes > 1 {
        tracing::info!(
            "process {process} of {processes}: reads its share of the inputs, writes \
            shard {process} of the outputs"
        );
    }
    name_inputs(&feed, &inputs, follow);
    let options = RunOptions {
        feed,
        config,
        workers,
        processes,
        process,
        addresses,
        live: live.clone(),
        out: out.clone(),
        deletions,
        checkpoint,
        abort: Default::default(),
        index,
    };
    let output = dataflow::run(options);
    // The summary starts on a clean line.
    sampler.end_output();
    let output = output?;
    let shard = sink::Shard { index: process, count: processes };
    write_and_report(out.as_deref(), &output, shard, (&metrics, &live))?;
    nothing.extend(output.empty_inputs.iter().map(|input| format!("{input}: no record in it")));
    for warning in &nothing {
        tracing::warn!("{warning}");
    }
    // Outputs are on disk: the live view says "finished".
    live.finish();
    if !address.is_empty() {
        serve_on(linger);
    }
    sampler.stop();
    if strict && !nothing.is_empty() {
        eprintln!("error: --strict: {} input(s) yielded nothing", nothing.len());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Says what the run reads, as it starts reading.
fn name_inputs(feed: &dataflow::Feed, args: &[String], follow: bool) {
    let names: Vec<String> = match feed {
        dataflow::Feed::Inputs(inputs) => inputs.iter().map(|i| i.name()).collect(),
        _ => args.to_vec(),
    };
    tracing::info!(
        "{} {}: {}",
        if follow { "following" } else { "reading" },
        super::count(names.len(), "input", "inputs"),
        if names.len() <= 3 { names.join(", ") } else { format!("{} …", names[0]) }
    );
}

/// `--linger`: the endpoint served `linger` more seconds after the outputs are written. The
/// outputs are whole: SIGINT or SIGTERM ends the lingering at once, exit code 0.
fn serve_on(linger: u64) {
    if linger == 0 {
        return;
    }
    tracing::info!("serving for {linger} more seconds (Ctrl-C ends it)");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(linger);
    while std::time::Instant::now() < until && !dupflow::process::stop_requested() {
        std::thread::sleep(source::follow::POLL);
    }
}

/// Serves the metrics, the dashboard and its API at `address` while the run goes on.
fn serve(
    address: &str,
    inputs: &[String],
    config: &dupflow::config::PipelineConfig,
    live: &Arc<Live>,
) -> Result<()> {
    // POST /api/check, when asked for: the workers keep a sentence index of the pages they
    // hold (in a cluster, a process's index holds the pages its workers own).
    if config.metrics.check {
        *live.gate.lock().expect("gate") = Some(dupflow::check::Gate {
            index: dupflow::check::ShareIndex::empty(&config.template),
            sentence: config.sentence.clone(),
        });
    }
    let explainer = super::explain::live_explainer(inputs, config, live);
    let limits = server::Limits::from_config(&config.metrics);
    let bound = server::serve(address, live.clone(), limits, explainer)?;
    tracing::info!("metrics on http://{bound}/metrics, dashboard on http://{bound}/");
    Ok(())
}

/// Writes the outputs to `out` (each process its shard: the clusters whose id falls to it,
/// whole) and prints the run's summary and what it wrote.
fn write_and_report(
    out: Option<&std::path::Path>,
    output: &dataflow::RunOutput,
    shard: sink::Shard,
    (metrics, live): (&Registry, &Live),
) -> Result<()> {
    let rows = &output.rows;
    if let Some(dir) = out {
        sink::write_outputs(dir, output, rows, shard)
            .with_context(|| format!("writing to {}", dir.display()))?;
    }
    if shard.count > 1 {
        println!(
            "process {} of {}: the inputs it read, the pages its workers own, the clusters of \
            its shard",
            shard.index, shard.count
        );
    }
    super::summary::print(rows, output, metrics, live);
    if let Some(dir) = out {
        print_written(dir, shard);
    }
    Ok(())
}

/// Names the files the run wrote to `dir`: this process's shard of them in a cluster.
fn print_written(dir: &std::path::Path, shard: sink::Shard) {
    match shard.count {
        1 => println!(
            "wrote {}, changes.jsonl, spans.jsonl, revisits.jsonl",
            dir.join("clusters.jsonl").display()
        ),
        _ => println!(
            "wrote {}, {}, {}",
            dir.join(shard.file("clusters")).display(),
            shard.file("changes"),
            shard.file("revisits")
        ),
    }
}

/// What to read: inputs read once (the embedded default without any), or followed targets;
/// and the arguments that name no file (a directory without one, a glob matching none).
fn feed(inputs: &[String], follow: bool) -> Result<(dataflow::Feed, Vec<String>)> {
    let mut nothing = Vec::new();
    let feed = if follow {
        if inputs.is_empty() {
            bail!("--follow needs a file, a directory or `-` to follow");
        }
        let targets = inputs
            .iter()
            .map(|arg| match arg.as_str() {
                "-" => Ok(dataflow::Followed::Stdin),
                path if std::path::Path::new(path).is_dir() => {
                    Ok(dataflow::Followed::Dir(path.into()))
                }
                path if path.contains(['*', '?', '[']) && !std::path::Path::new(path).exists() => {
                    bail!(
                        "--follow {path}: a glob is not followed (files matching it later would \
                        be missed); follow the directory instead"
                    )
                }
                path => Ok(dataflow::Followed::File(path.into())),
            })
            .collect::<Result<_>>()?;
        dataflow::Feed::Follow(targets)
    } else if inputs.is_empty() {
        dataflow::Feed::Inputs(vec![dupflow::DEFAULT_INPUT])
    } else {
        for arg in inputs {
            if arg != "-" && source::expand(std::slice::from_ref(arg))?.is_empty() {
                nothing.push(match std::path::Path::new(arg).is_dir() {
                    true => format!("{arg}: a directory with no file in it"),
                    false => format!("{arg}: matches no file"),
                });
            }
        }
        dataflow::Feed::Inputs(source::expand(inputs)?)
    };
    Ok((feed, nothing))
}

/// Timely cluster mode: the processes' addresses (the hostfile's, or 127.0.0.1 ports).
fn addresses(hostfile: Option<&Path>, processes: usize) -> Result<Vec<String>> {
    Ok(match (hostfile, processes) {
        (_, 1) => Vec::new(),
        (Some(path), n) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let addresses: Vec<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(n)
                .map(str::to_string)
                .collect();
            if addresses.len() < n {
                bail!("{} lists {} addresses, --processes is {n}", path.display(), addresses.len());
            }
            addresses
        }
        (None, n) => (0..n).map(|i| format!("127.0.0.1:{}", 2101 + i)).collect(),
    })
}
