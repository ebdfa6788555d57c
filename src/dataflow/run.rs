//! The run: timely's configuration, the reader thread and its channels, the workers (see
//! `worker.rs`) and the join of their results into one output.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver};
use timely::{CommunicationConfig, WorkerConfig};

use super::worker::{self, Context};
use crate::checkpoint::{self, Manifest};
use crate::config::PipelineConfig;
use crate::metrics::live::Live;
use crate::metrics::{self, Registry};
use crate::source::reader::{read_feed, EpochPolicy, Feed, Message, ReadSettings, ReaderCore};
use crate::source::{Input, Part};
use crate::types::{RunError, RunOutput};

/// What a run was asked to do.
#[derive(Clone)]
pub struct RunOptions {
    pub feed: Feed,
    pub config: PipelineConfig,
    /// Worker threads in this process.
    pub workers: usize,
    /// Timely cluster mode: number of processes, this one's index, and their addresses.
    pub processes: usize,
    pub process: usize,
    pub addresses: Vec<String>,
    /// The live view (dashboard, gauges); the sink applies every output update to it.
    pub live: Arc<Live>,
    /// Where changes.jsonl is appended epoch by epoch (and clusters.jsonl kept at checkpoints).
    pub out: Option<PathBuf>,
    /// A file of URLs to retract, one a line, read as it grows.
    pub deletions: Option<PathBuf>,
    /// Directory of checkpoints: resumed from when it holds one.
    pub checkpoint: Option<PathBuf>,
}

impl RunOptions {
    /// A run over inputs with the defaults of one process.
    pub fn new(feed: Feed, config: PipelineConfig, workers: usize) -> RunOptions {
        let live = Arc::new(Live::new(Arc::new(Registry::default()), config.metrics.cluster_alarm_pages));
        RunOptions {
            feed,
            config,
            workers,
            processes: 1,
            process: 0,
            addresses: Vec::new(),
            live,
            out: None,
            deletions: None,
            checkpoint: None,
        }
    }

    /// Worker threads in this process, and in the whole cluster.
    fn workers(&self) -> (usize, usize) {
        let workers = self.workers.max(1);
        (workers, workers * self.processes.max(1))
    }

    fn timely_config(&self) -> timely::Config {
        let (workers, _) = self.workers();
        let communication = if self.processes > 1 {
            CommunicationConfig::Cluster {
                threads: workers,
                process: self.process,
                addresses: self.addresses.clone(),
                report: false,
                zerocopy: false,
            }
        } else if workers > 1 {
            CommunicationConfig::Process(workers)
        } else {
            CommunicationConfig::Thread
        };
        timely::Config { communication, worker: WorkerConfig::default() }
    }
}

/// Runs the pipeline over the feed (to its end, or until a stop request) and returns process
/// 0's output.
pub fn run(options: RunOptions) -> Result<RunOutput, RunError> {
    let started = Instant::now();
    let registry = options.live.registry.clone();
    let manifest = checkpoint::open(options.checkpoint.as_deref())?;
    if let (Some(m), Some(dir)) = (&manifest, &options.checkpoint) {
        m.check_shape(options.processes, dir)?;
    }
    if let Some(m) = &manifest {
        tracing::info!("resuming from the checkpoint of epoch {} ({} inputs read so far)", m.epoch, m.reader.inputs.len());
    }
    let (reader, receivers) = start_reader(&options, manifest.as_ref())?;
    let (workers, peers) = options.workers();
    let context = Context {
        pipeline: options.config.clone(),
        metrics: registry.clone(),
        live: options.live.clone(),
        out: options.out.clone(),
        checkpoint: options.checkpoint.clone(),
        restore: manifest.clone(),
        peers,
        first_worker: options.process * workers,
        processes: options.processes.max(1),
        receivers: Mutex::new(receivers.into_iter().map(Some).collect()),
        workers_started: Default::default(),
    };
    let context = Arc::new(context);
    let shared = context.clone();
    let guards = timely::execute(options.timely_config(), move |timely| worker::work(timely, &shared)).map_err(RunError::Timely)?;

    let mut output = RunOutput { resumed_from: manifest.as_ref().map(|m| m.epoch), ..Default::default() };
    let mut held = 0;
    for result in guards.join() {
        let finished = result.map_err(RunError::Worker)??;
        output.rows.extend(finished.rows);
        output.shares.extend(finished.shares);
        output.revisits.extend(finished.revisits);
        output.epochs = output.epochs.max(finished.epochs);
        held += finished.held_bytes;
    }
    registry.set(metrics::HELD_BYTES, "", held as i64);
    let _ = reader.join();
    output.rows.sort();
    output.revisits.sort_by(|a, b| (&a.url, &a.date).cmp(&(&b.url, &b.date)));
    output.elapsed = started.elapsed();
    output.connecting = context.workers_started.get().map_or(Duration::ZERO, |at| at.saturating_duration_since(started));
    Ok(output)
}

/// Starts the reader thread, resumed from the checkpoint's positions; returns it and one
/// bounded channel per worker of this process (backpressure).
fn start_reader(options: &RunOptions, manifest: Option<&Manifest>) -> Result<(JoinHandle<()>, Vec<Receiver<Message>>), RunError> {
    let metrics = options.live.registry.clone();
    let (workers, peers) = options.workers();
    let capacity = options.config.source.channel_capacity;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..workers).map(|_| bounded::<Message>(capacity)).unzip();
    let watched: Vec<Receiver<Message>> = receivers.clone();
    *options.live.channel_depth.lock().expect("live lock") = Some(Box::new(move || watched.iter().map(|r| r.len()).sum()));
    // This process's share of the inputs: every input is read by one process of the cluster.
    let part = Part { process: options.process, processes: options.processes.max(1) };
    let feed = match options.feed.clone() {
        Feed::Inputs(inputs) => Feed::Inputs(part.inputs(inputs)),
        other => other,
    };
    if let Feed::Inputs(inputs) = &feed {
        metrics.set(metrics::INPUT_BYTES, "", inputs.iter().filter_map(Input::size).sum::<u64>() as i64);
    }
    metrics.set(metrics::CHANNEL_CAPACITY, "", (capacity * workers) as i64);
    let run = &options.config.run;
    let core = Arc::new(Mutex::new(ReaderCore {
        senders,
        first_worker: options.process * workers,
        peers,
        part,
        policy: EpochPolicy { records: run.epoch_records.max(1), max_age: Duration::from_millis(run.epoch_ms) },
        epoch: manifest.map_or(0, |m| m.epoch),
        in_epoch: 0,
        epoch_started: Instant::now(),
        epoch_opened: Instant::now(),
        live: options.live.clone(),
        metrics,
        printed: 0,
        retention_secs: run.retention_secs,
        progress: manifest.map(|m| m.process(options.process).reader).unwrap_or_default(),
        skip: 0,
        // Deletions are a control stream: process 0 reads them and sends each to its URL's owner.
        deletions: options.deletions.clone().filter(|_| options.process == 0),
        pending_deletion: Vec::new(),
        checkpoint: options.checkpoint.clone().map(|d| (d, run.checkpoint_epochs.max(1))),
        reads: Vec::new(),
        items_before: 0,
    }));
    let settings = ReadSettings { max_record_bytes: options.config.source.max_record_bytes, text: options.config.text.clone() };
    let reader = std::thread::Builder::new()
        .name("dupflow-reader".into())
        .spawn(move || read_feed(feed, core, settings))
        .map_err(|e| RunError::Timely(e.to_string()))?;
    Ok((reader, receivers))
}
