//! The run: timely's configuration, the reader thread and its channels, the workers (see
//! `worker.rs`) and the join of their results into one output.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver};
use timely::{CommunicationConfig, WorkerConfig};
use timely_communication::initialize::WorkerGuards;

use super::abort::{panic_message, Abort};
use super::memory::MemoryWatch;
use super::worker::{self, Context};
use crate::checkpoint::{self, Manifest};
use crate::config::{KeptIn, PipelineConfig};
use crate::metrics::live::Live;
use crate::metrics::{self, Registry};
use crate::source::reader::{
    read_feed, EpochClock, EpochPolicy, Feed, Message, ReadSettings, ReaderCore, ReaderReport,
};
use crate::source::{Input, ReaderShare};
use crate::types::{RunError, RunOutput};
use dupflow_operators::ingest::page::{Content, Page};
use dupflow_operators::run::Runtime;
use dupflow_operators::runtime::spill::Spill;
use dupflow_operators::runtime::store::{Store, StoreStats, WordStore};

/// How long the workers of a failing run have to leave before the run returns its error.
const FAILURE_GRACE: Duration = Duration::from_millis(1_500);

/// How long a process of a cluster waits for all the others to be up.
const CONNECT_PATIENCE: Duration = Duration::from_secs(600);

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
    /// The run's failure, seen by all its threads (a caller may raise it to stop the run).
    pub abort: Arc<Abort>,
    /// The checkpoint is an index (`dupflow index build`, `dedup --against`).
    pub index: Option<IndexRole>,
}

/// How a run uses its checkpoint as an index of an earlier crawl. Either way every capture is
/// a page (`source.recrawls = "keep"`, set by the command): an index keeps its pages, and a new
/// capture of an indexed URL is a page beside the indexed one, not in its place. An index
/// written with `"replace"` (one capture a URL, `dupflow run --checkpoint`) is continued so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexRole {
    /// `dupflow index build`: the inputs' pages are added to the index.
    Build,
    /// `dedup --against`: the inputs are read whole beside the index's pages, whatever the
    /// index's positions say of files of the same name.
    Against,
}

impl RunOptions {
    /// A run over inputs with the defaults of one process.
    pub fn new(feed: Feed, config: PipelineConfig, workers: usize) -> RunOptions {
        let live =
            Arc::new(Live::new(Arc::new(Registry::default()), config.metrics.cluster_alarm_pages));
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
            abort: Arc::default(),
            index: None,
        }
    }

    /// Reader threads in this process, and readers in the whole run.
    pub(super) fn readers(&self) -> (usize, usize) {
        let threads = self.config.source.reader_threads.max(1);
        (threads, threads * self.processes.max(1))
    }

    /// Worker threads in this process, and in the whole cluster.
    fn workers(&self) -> (usize, usize) {
        let workers = self.workers.max(1);
        (workers, workers * self.processes.max(1))
    }

    fn timely_config(&self, runtime: &Arc<Runtime>) -> timely::Config {
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
        timely::Config { communication, worker: worker_config(runtime) }
    }
}

/// Runs the pipeline over the feed (to its end, or until a stop request) and returns process
/// 0's output.
pub fn run(options: RunOptions) -> Result<RunOutput, RunError> {
    // One run at a time in a checkpoint directory: held until the run returns. A run that fails
    // leaves its checkpoint as it was committed: the files of one it had begun are removed (in
    // a cluster, process 0's commit decides, and the next run's resume removes them).
    let Some(dir) = options.checkpoint.clone() else { return run_held(options) };
    let _held = checkpoint::lock(&dir, options.process)?;
    let alone = options.processes <= 1;
    let result = run_held(options);
    if result.is_err() && alone {
        checkpoint::discard_uncommitted(&dir);
    }
    result
}

/// [`run`], its checkpoint directory (if any) held.
fn run_held(options: RunOptions) -> Result<RunOutput, RunError> {
    let started = Instant::now();
    crate::process::catch_run_panics();
    let registry = options.live.registry.clone();
    let manifest = resume_point(&options)?;
    let runtime = Arc::new(runtime(&options)?);
    options.live.watch_footprint(runtime.footprint.clone());
    let clock = Arc::new(EpochClock::default());
    let (readers, receivers) = start_readers(&options, manifest.as_ref(), &clock)?;
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
        workers_done: Default::default(),
        abort: options.abort.clone(),
        readers: options.readers().1,
        runtime: runtime.clone(),
        clock,
    };
    let context = Arc::new(context);
    let shared = context.clone();
    let work = move |timely: &mut timely::worker::Worker| {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            worker::work(timely, &shared)
        }));
        let result =
            result.unwrap_or_else(|panic| Err(super::abort::panic_error(&*panic, "a worker")));
        let result = result.map_err(|error| {
            // The first failure of the run is kept; the others follow from it. The dataflow is
            // dropped, not drained: its peers are leaving too.
            shared.abort.raise(error);
            for dataflow in timely.installed_dataflows() {
                timely.drop_dataflow(dataflow);
            }
        });
        shared.workers_done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        result
    };
    let guards = start_workers(&options, workers, &runtime, work)?;

    let guards = wait_for_workers(&context, &options.abort, workers, guards)?;
    let mut output =
        RunOutput { resumed_from: manifest.as_ref().map(|m| m.epoch), ..Default::default() };
    let mut held = 0;
    for result in guards.join() {
        let finished = result
            .map_err(RunError::Worker)?
            .map_err(|()| options.abort.take().unwrap_or(RunError::Unexplained))?;
        output.rows.extend(finished.rows);
        output.shares.extend(finished.shares);
        output.revisits.extend(finished.revisits);
        output.epochs = output.epochs.max(finished.epochs);
        held += finished.held_bytes;
    }
    registry.set(metrics::HELD_BYTES, "", held as i64);
    for reader in readers {
        let report = reader.join().map_err(|panic| RunError::Panicked {
            whose: "the reader".into(),
            message: panic_message(&*panic),
        })?;
        output.empty_inputs.extend(report.empty_inputs);
    }
    // A reader's failure after the workers finished (a checkpoint position it could not write).
    if let Some(error) = options.abort.take() {
        return Err(error);
    }
    (output.word_store, output.page_store) = store_stats(&runtime);
    output.spilled = runtime.spill.as_ref().map(|spill| spill.stats());
    output.footprint = runtime.footprint.clone();
    output.empty_inputs.sort();
    output.rows.sort();
    output.revisits.sort_by(|a, b| (&a.url, &a.date).cmp(&(&b.url, &b.date)));
    output.elapsed = started.elapsed();
    output.connecting = context
        .workers_started
        .get()
        .map_or(Duration::ZERO, |at| at.saturating_duration_since(started));
    Ok(output)
}

/// The run's resources (`dupflow_operators::run::Runtime`): its stores and spill where
/// `run.words = "disk"` or `run.pages = "disk"` (what they hold stays readable as long as a
/// page, a held page or a member holds its place), and the totals of its operators' gauges.
fn runtime(options: &RunOptions) -> Result<Runtime, RunError> {
    let run = &options.config.run;
    let mut runtime = Runtime::default();
    if run.words != KeptIn::Disk && run.pages != KeptIn::Disk {
        return Ok(runtime);
    }
    let dir = match (&run.word_store_dir, &options.out) {
        (dir, _) if !dir.is_empty() => PathBuf::from(dir),
        (_, Some(out)) => out.clone(),
        _ => std::env::temp_dir(),
    };
    std::fs::create_dir_all(&dir).map_err(|error| RunError::Output { path: dir.clone(), error })?;
    let failed = |error| RunError::Output { path: dir.clone(), error };
    let mib = |n: u64| (n as usize).saturating_mul(1 << 20);
    if run.words == KeptIn::Disk {
        let store = WordStore::create(&dir, mib(run.word_cache_mb), None).map_err(failed)?;
        runtime.words = Some(Arc::new(store));
    }
    if run.pages == KeptIn::Disk {
        // Members' contents are read at every verification, held pages only when a page
        // leaves or its host's template changes: most of the cache is the contents'.
        let (cache, words) = (mib(run.page_cache_mb), runtime.words.clone());
        let pages = Store::<Page>::create(&dir, cache / 8, words.clone()).map_err(failed)?;
        let contents = Store::<Content>::create(&dir, cache - cache / 8, words).map_err(failed)?;
        runtime.pages = Some(Arc::new(pages));
        runtime.contents = Some(Arc::new(contents));
        runtime.spill = Some(Arc::new(Spill::new(&dir, run.spill_after as usize)));
    }
    Ok(runtime)
}

/// The word store's figures, and the page and content stores' summed.
fn store_stats(runtime: &Runtime) -> (Option<StoreStats>, Option<StoreStats>) {
    let pages = runtime.pages.as_ref().zip(runtime.contents.as_ref()).map(|(pages, contents)| {
        let mut stats = pages.stats();
        stats += contents.stats();
        stats
    });
    (runtime.words.as_ref().map(|store| store.stats()), pages)
}

/// The checkpoint the run resumes from, if any, checked against the run's shape and method.
fn resume_point(options: &RunOptions) -> Result<Option<Manifest>, RunError> {
    let mut manifest = checkpoint::open(options.checkpoint.as_deref())?;
    if let (Some(m), Some(role)) = (manifest.as_mut(), options.index) {
        checkpoint::as_index(&mut m.settings, &options.config);
        if role == IndexRole::Against {
            // The index's positions are of its own crawl's files.
            for reader in std::iter::once(&mut m.reader).chain(m.readers.iter_mut()) {
                reader.inputs.clear();
            }
        }
    }
    if let (Some(m), Some(dir)) = (&manifest, &options.checkpoint) {
        m.check_shape(
            options.processes,
            options.readers().1,
            &checkpoint::Provenance::of(&options.config),
            dir,
        )?;
    }
    if let Some(m) = manifest.as_ref().filter(|_| options.index.is_none()) {
        tracing::info!(
            "resuming from the checkpoint of epoch {} ({} inputs read so far)",
            m.epoch,
            m.reader.inputs.len()
        );
    }
    Ok(manifest)
}

/// Starts this process's timely workers, each running `work`: in a cluster, over the
/// connections dupflow makes itself.
fn start_workers<T, F>(
    options: &RunOptions,
    workers: usize,
    runtime: &Arc<Runtime>,
    work: F,
) -> Result<WorkerGuards<T>, RunError>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> T + Send + Sync + 'static,
{
    if options.processes > 1 {
        // A cluster: dupflow connects the processes itself (fast retries, see `connect`) and
        // hands the sockets to timely.
        let sockets =
            super::connect::sockets(&options.addresses, options.process, CONNECT_PATIENCE)
                .map_err(RunError::Connect)?;
        let hooks = timely_communication::Hooks::default();
        let local = timely_communication::allocator::ProcessBuilder::new_typed_vector(
            workers,
            hooks.refill.clone(),
            hooks.spill.clone(),
        );
        let (builders, guard) = timely_communication::allocator::zero_copy::initialize::initialize_networking_from_sockets(
            local,
            sockets,
            options.process,
            workers,
            hooks,
        )
        .map_err(RunError::Connect)?;
        let builders =
            builders.into_iter().map(timely_communication::AllocatorBuilder::Tcp).collect();
        timely::execute::execute_from(builders, Box::new(guard), worker_config(runtime), work)
            .map_err(RunError::Timely)
    } else {
        timely::execute(options.timely_config(runtime), work).map_err(RunError::Timely)
    }
}

/// Waits for the workers, or for the run's first failure: then the workers get a moment to
/// leave (they see the failure within a step), and the run returns the error whether or not
/// every thread has (a thread stuck in a system call must not hold the process).
fn wait_for_workers<T: Send + 'static>(
    context: &Context,
    abort: &Abort,
    workers: usize,
    guards: WorkerGuards<T>,
) -> Result<WorkerGuards<T>, RunError> {
    let mut memory =
        MemoryWatch::new(context.pipeline.run.memory_limit_mb, context.runtime.footprint.clone());
    while context.workers_done.load(std::sync::atomic::Ordering::SeqCst) < workers
        && !abort.raised()
    {
        std::thread::sleep(Duration::from_millis(2));
        if let Err(error) = memory.check() {
            abort.raise(error);
        }
    }
    if abort.raised() {
        let deadline = Instant::now() + FAILURE_GRACE;
        while context.workers_done.load(std::sync::atomic::Ordering::SeqCst) < workers
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        if context.workers_done.load(std::sync::atomic::Ordering::SeqCst) == workers {
            drop(guards.join());
        } else {
            std::mem::forget(guards);
        }
        return Err(abort.take().unwrap_or(RunError::Unexplained));
    }
    Ok(guards)
}

/// For each worker of a process, one channel from each of its reader threads.
type WorkerChannels = Vec<Vec<Receiver<Message>>>;

/// Starts this process's reader threads, each resumed from the checkpoint's positions; returns
/// them and, for each worker of this process, one bounded channel from each reader
/// (backpressure).
fn start_readers(
    options: &RunOptions,
    manifest: Option<&Manifest>,
    clock: &Arc<EpochClock>,
) -> Result<(Vec<JoinHandle<ReaderReport>>, WorkerChannels), RunError> {
    let metrics = options.live.registry.clone();
    let (workers, _) = options.workers();
    let (threads, readers) = options.readers();
    let capacity = options.config.source.channel_capacity;
    // channels[reader][worker]
    let channels: Vec<(Vec<_>, Vec<_>)> =
        (0..threads).map(|_| (0..workers).map(|_| bounded::<Message>(capacity)).unzip()).collect();
    let watched: Vec<Receiver<Message>> =
        channels.iter().flat_map(|(_, r)| r.iter().cloned()).collect();
    *options.live.channel_depth.lock().expect("live lock") =
        Some(Box::new(move || watched.iter().map(|r| r.len()).sum()));
    metrics.set(metrics::CHANNEL_CAPACITY, "", (capacity * workers * threads) as i64);
    let mut input_bytes = 0;
    let mut handles = Vec::new();
    let mut receivers: WorkerChannels = (0..workers).map(|_| Vec::new()).collect();
    for (thread, (senders, from)) in channels.into_iter().enumerate() {
        for (worker, receiver) in from.into_iter().enumerate() {
            receivers[worker].push(receiver);
        }
        // This reader's share of the inputs: every input is read by one reader of the run.
        let reader = options.process * threads + thread;
        let part = ReaderShare { process: reader, processes: readers };
        let feed = match options.feed.clone() {
            Feed::Inputs(inputs) => Feed::Inputs(part.inputs(inputs)),
            other => other,
        };
        if let Feed::Inputs(inputs) = &feed {
            input_bytes += inputs.iter().filter_map(Input::size).sum::<u64>();
        }
        let run = &options.config.run;
        let policy = EpochPolicy {
            records: run.epoch_records.max(1),
            max_age: Duration::from_millis(run.epoch_ms),
            refresh_epochs: options.config.template.refresh_epochs as u64,
            in_flight: run.epochs_in_flight.max(1),
        };
        let progress = manifest.map(|m| m.reader_of(reader)).unwrap_or_default();
        let core = Arc::new(Mutex::new(ReaderCore {
            epoch: manifest.map_or(0, |m| m.epoch),
            retention_secs: run.retention_secs,
            // Deletions are a control stream: reader 0 reads them and sends each to its URL's owner.
            deletions: options.deletions.clone().filter(|_| reader == 0),
            checkpoint: options.checkpoint.clone().map(|d| (d, run.checkpoint_epochs.max(1))),
            ..ReaderCore::new(
                senders,
                part,
                policy,
                (options.live.clone(), clock.clone()),
                progress,
                options.abort.clone(),
            )
        }));
        let settings = ReadSettings {
            max_record_bytes: options.config.source.max_record_bytes,
            text: options.config.text.clone(),
        };
        let abort = options.abort.clone();
        let handle = std::thread::Builder::new()
            .name(format!("dupflow-reader-{thread}"))
            .spawn(move || {
                // A reader that panics stops the run (its workers would wait for it for ever).
                let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    read_feed(feed, core, settings)
                }));
                read.unwrap_or_else(|panic| {
                    abort.raise(super::abort::panic_error(&*panic, "the reader"));
                    ReaderReport::default()
                })
            })
            .map_err(RunError::Spawn)?;
        handles.push(handle);
    }
    metrics.set(metrics::INPUT_BYTES, "", input_bytes as i64);
    Ok((handles, receivers))
}

/// Each worker's configuration: the run's runtime for its operators, and arrangements that
/// compact themselves while the worker is idle (differential's idle merge effort), so merges in
/// progress finish and free their inputs.
fn worker_config(runtime: &Arc<Runtime>) -> WorkerConfig {
    let mut config = WorkerConfig::default();
    Runtime::configure(runtime, &mut config);
    differential_dataflow::configure(
        &mut config,
        &differential_dataflow::Config::default().idle_merge_effort(Some(IDLE_MERGE_EFFORT)),
    );
    config
}

/// Updates' worth of merge work an idle arrangement does per scheduling.
const IDLE_MERGE_EFFORT: isize = 1_000;
