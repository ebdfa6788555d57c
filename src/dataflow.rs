//! The one place where the stages are wired: read this file to see the whole pipeline.
//!
//! ```text
//! reader thread (src/source): files → decode → frame → records ──bounded channels──▶ workers
//! worker: record → HTTP/charset (src/source/http) → (meta, html) ─▶ input collection
//!   strip_html → split_sentences → remove_templates ─┬─▶ fingerprints → candidate_sets ─┐
//!                                                    └─▶ contents ───────────────────────┴▶ verify_clusters
//!   → (page, url, record id, assignment) ─exchange to worker 0─▶ sink (src/sink)
//! ```
//!
//! Reading runs on its own thread and hands records to the timely workers through bounded
//! crossbeam channels (backpressure); workers poll with `try_recv` and `step_or_park`, so a
//! worker never blocks on input while the dataflow has work. The method's stages are
//! differential operators, so the clusters are maintained incrementally: every stage handles
//! insertions and retractions, and `clusters` is tested against `reference` at 1, 2 and 4 workers.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender, TryRecvError};
use differential_dataflow::input::Input as _;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use timely::dataflow::operators::{Exchange, Inspect, Probe};
use timely::{CommunicationConfig, WorkerConfig};

use dupflow_operators::candidates::{components, CandidateSets};
use dupflow_operators::fingerprint::Fingerprint;
use dupflow_operators::minhash::MinhashBands;
use dupflow_operators::simhash::{simhash, SimhashEdges};
use dupflow_operators::reference::{Fingerprinting, MethodConfig};
use dupflow_operators::sentence::stable_hash;
use dupflow_operators::template::{Filtered, RemoveTemplates};
use dupflow_operators::verify::{Assignment, VerifyClusters};
use dupflow_operators::{Page, PageId, PageMeta};

use crate::config::PipelineConfig;
use crate::metrics::live::Live;
use crate::metrics::{self, Registry};
use crate::source::http::{self, Outcome, Revisit};
use crate::source::current::{self, Change, CurrentPages};
use crate::source::{self, follow, Input, RawRecord};

/// One row of the dataflow's output: a page and where it is clustered.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClusterRow {
    pub page: PageId,
    pub url: String,
    pub record_id: String,
    pub assignment: Assignment,
}

/// The method's stages on a collection of pages: templates, fingerprints, candidate sets and
/// verification. Returns each page's cluster assignment. Counters go to `metrics`.
pub fn clusters<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    method: &MethodConfig,
    metrics: Arc<Registry>,
) -> VecCollection<'scope, u64, (PageId, Assignment), isize> {
    let (filtered, templates) = pages.clone().remove_templates(method.template);
    let template_gauge = metrics.clone();
    templates.inspect(move |((host, _), _, diff)| {
        template_gauge.add(metrics::TEMPLATE_SENTENCES, &template_gauge.host_name(*host), *diff as i64)
    });
    let sets = candidate_sets(pages, filtered.clone(), method, metrics.clone());
    let contents = filtered.map(|(id, page)| (id, page.content));
    let verify_metrics = metrics;
    sets.verify_clusters(contents, method.verify.clone(), method.candidates.max_set_pages, move |stats| {
        verify_metrics.observe(metrics::STAGE_SECONDS, "verify", stats.nanos as f64 / 1e9);
        verify_metrics.observe(metrics::SET_PAGES, "", stats.pages as f64);
        verify_metrics.add(metrics::STAGE_PAGES, "clustered", stats.pages as i64);
        verify_metrics.add(metrics::VERIFICATIONS, "accepted", stats.accepted as i64);
        verify_metrics.add(metrics::VERIFICATIONS, "rejected", stats.rejected as i64);
        if stats.cost_capped > 0 {
            verify_metrics.add(metrics::CAPS, "max_diff_distance", stats.cost_capped as i64);
        }
        if stats.set_cuts > 0 {
            verify_metrics.add(metrics::CAPS, "max_set_pages", stats.set_cuts as i64);
        }
        if stats.cache_clears > 0 {
            verify_metrics.add(metrics::CAPS, "verdict_cache_entries", stats.cache_clears as i64);
        }
    })
}

/// Candidate sets by the configured fingerprints: `(page, set label)` for every page.
pub fn candidate_sets<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    filtered: VecCollection<'scope, u64, (PageId, Filtered), isize>,
    method: &MethodConfig,
    metrics: Arc<Registry>,
) -> VecCollection<'scope, u64, (PageId, PageId), isize> {
    let page_ids = pages.clone().map(|(id, _)| id);
    let fingerprints = match &method.fingerprint {
        Fingerprinting::Sentence(config) => {
            filtered.map(|(id, page)| (id, page.fingerprint_keys)).fingerprints(config.clone())
        }
        Fingerprinting::Minhash(config) => pages.map(|(id, page)| (id, page.shingles)).minhash_bands(config.clone()),
        Fingerprinting::Simhash(config) => {
            // Edges straight from the block tables: only pairs within the Hamming distance.
            let edges = pages
                .map(|(id, page)| (id, simhash(&page.shingles)))
                .simhash_edges(config.max_distance, method.candidates.max_fingerprint_pages);
            return components(edges, page_ids);
        }
    };
    let candidates = fingerprints.candidate_sets(page_ids, method.candidates.clone());
    candidates
        .oversized_fingerprints
        .inspect(move |(_, _, diff)| metrics.add(metrics::OVERSIZED_FINGERPRINTS, "", *diff as i64));
    candidates.sets
}

/// Where the records come from.
#[derive(Clone, Debug)]
pub enum Feed {
    /// Inputs read once, to their end.
    Inputs(Vec<Input>),
    /// Inputs followed as they grow until SIGINT/SIGTERM: files, directories (new files read
    /// in name order; a file is complete once a later one exists) and stdin.
    Follow(Vec<Followed>),
    /// A scripted sequence (tests): WARC bytes, deletions and epoch boundaries, in order.
    Script(Vec<ScriptItem>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Followed {
    File(PathBuf),
    Dir(PathBuf),
    Stdin,
}

#[derive(Clone, Debug)]
pub enum ScriptItem {
    /// One or more WARC records.
    Warc(Vec<u8>),
    /// Retract the URL's page.
    Delete(String),
    /// Close the epoch here.
    CloseEpoch,
}

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
}

/// What a run produced (on process 0; other processes return an empty one).
#[derive(Debug, Default)]
pub struct RunOutput {
    /// The clusters at the end, sorted.
    pub rows: Vec<ClusterRow>,
    pub revisits: Vec<Revisit>,
    pub elapsed: Duration,
    /// Epochs written (the last one's number + 1).
    pub epochs: u64,
    /// The epoch a checkpoint resumed from, if any.
    pub resumed_from: Option<u64>,
}

#[derive(Debug, Error)]
pub enum RunError {
    #[error("timely could not start: {0}")]
    Timely(String),
    #[error("a worker failed: {0}")]
    Worker(String),
    #[error("checkpoint {path}: {message}")]
    Checkpoint { path: PathBuf, message: String },
    #[error("writing {path}: {source}")]
    Output { path: PathBuf, source: std::io::Error },
}

enum Message {
    Record(Box<RawRecord>),
    /// Retract the pages of this URL.
    Delete(String),
    /// Close the current epoch: later records belong to `next`. Pages crawled before
    /// `expire_before` leave (retention); with `checkpoint`, save the held pages first.
    Epoch { next: u64, expire_before: u64, checkpoint: bool },
    End,
}

/// When the reader closes epochs.
#[derive(Clone, Copy, Debug)]
struct EpochPolicy {
    records: u64,
    max_age: Duration,
}

/// How far the reader got in one input (a checkpoint's offsets: records framed, skipped on
/// resume without being parsed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputProgress {
    pub name: String,
    /// Items framed (records and skipped stretches).
    pub items: u64,
    /// Read to its end (a followed file once a later file exists).
    pub done: bool,
}

/// The reader's part of a checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaderProgress {
    pub inputs: Vec<InputProgress>,
    /// Bytes of the deletions file consumed.
    pub deletions_offset: u64,
    /// Latest crawl date seen (retention's clock).
    pub max_date: u64,
}

/// A checkpoint: written (atomically) once epoch `epoch` is complete at the sink.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Records before this epoch are in the checkpoint.
    pub epoch: u64,
    /// Length of changes.jsonl after the epochs before `epoch`.
    pub changes_bytes: u64,
    /// Workers that wrote parts (`part-EPOCH-WORKER.lz4`).
    pub parts: usize,
    pub reader: ReaderProgress,
}

pub const MANIFEST: &str = "checkpoint.json";

fn part_path(dir: &Path, epoch: u64, worker: usize) -> PathBuf {
    dir.join(format!("part-{epoch}-{worker}.lz4"))
}

fn revisits_path(dir: &Path, epoch: u64, worker: usize) -> PathBuf {
    dir.join(format!("revisits-{epoch}-{worker}.json"))
}

fn progress_path(dir: &Path, epoch: u64) -> PathBuf {
    dir.join(format!("reader-{epoch}.json"))
}

/// Reads the checkpoint in `dir`, if there is one.
pub fn load_manifest(dir: &Path) -> Result<Option<Manifest>, RunError> {
    let path = dir.join(MANIFEST);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| RunError::Checkpoint { path, message: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RunError::Checkpoint { path, message: e.to_string() }),
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, synced.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// The reader thread's state: routing, epochs, deletions, retention clock, progress.
struct ReaderCore {
    senders: Vec<Sender<Message>>,
    first_worker: usize,
    peers: usize,
    report_errors: bool,
    policy: EpochPolicy,
    epoch: u64,
    in_epoch: u64,
    epoch_started: Instant,
    live: Arc<Live>,
    metrics: Arc<Registry>,
    printed: usize,
    retention_secs: u64,
    progress: ReaderProgress,
    /// Items still to skip in the current input (resume).
    skip: u64,
    deletions: Option<PathBuf>,
    pending_deletion: Vec<u8>,
    checkpoint: Option<(PathBuf, u64)>,
    reads: Vec<Instant>,
}

impl ReaderCore {
    fn route(&self, url: &str) -> Option<usize> {
        let target = (current::url_key(url) % self.peers as u64) as usize;
        target.checked_sub(self.first_worker).filter(|l| *l < self.senders.len())
    }

    /// Starts reading input `name`; false when a checkpoint says it was read to its end.
    fn begin(&mut self, name: &str) -> bool {
        match self.progress.inputs.iter().position(|p| p.name == name) {
            Some(i) => {
                let p = &self.progress.inputs[i];
                self.skip = p.items;
                if p.done {
                    return false;
                }
                let p = self.progress.inputs.remove(i);
                self.progress.inputs.push(p);
            }
            None => {
                self.skip = 0;
                self.progress.inputs.push(InputProgress { name: name.to_string(), items: 0, done: false });
            }
        }
        true
    }

    fn end_input(&mut self) {
        if let Some(p) = self.progress.inputs.last_mut() {
            p.done = true;
        }
    }

    fn item(&mut self, item: Result<RawRecord, source::RecordError>, name: &str) {
        if let Some(p) = self.progress.inputs.last_mut() {
            p.items += 1;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        match item {
            Ok(record) => {
                let url = record.header("WARC-Target-URI").unwrap_or("").trim_matches(['<', '>']).to_string();
                if let Some(date) = record.header("WARC-Date").and_then(http::parse_warc_date) {
                    self.progress.max_date = self.progress.max_date.max(date);
                }
                if let Some(local) = self.route(&url) {
                    self.metrics.inc(metrics::RECORDS, &record.type_name());
                    if record.lenient_length {
                        self.metrics.inc(metrics::QUIRKS, "content_length_mismatch");
                    }
                    use warc::RecordType::*;
                    match record.warc_type() {
                        Response | Resource | Revisit => {
                            if self.report_errors {
                                self.reads.push(Instant::now());
                            }
                            // Blocks when the worker is behind: backpressure, no unbounded buffer.
                            let _ = self.senders[local].send(Message::Record(Box::new(record)));
                        }
                        other => self.metrics.inc(metrics::SKIPPED, &other.to_string()),
                    }
                }
                if self.in_epoch == 0 {
                    self.epoch_started = Instant::now();
                }
                self.in_epoch += 1;
            }
            Err(error) => {
                if self.report_errors {
                    self.metrics.inc(metrics::RECORD_ERRORS, error.kind.code());
                    if self.printed < 20 {
                        tracing::warn!("{name}: skipped {error}");
                        self.printed += 1;
                    } else if self.printed == 20 {
                        tracing::warn!("further skipped records are counted, not printed");
                        self.printed += 1;
                    }
                }
            }
        }
        if self.in_epoch >= self.policy.records {
            self.close_epoch();
        }
    }

    fn delete(&mut self, url: &str) {
        if let Some(local) = self.route(url) {
            let _ = self.senders[local].send(Message::Delete(url.to_string()));
        }
        if self.in_epoch == 0 {
            self.epoch_started = Instant::now();
        }
        self.in_epoch += 1;
    }

    /// Reads the complete lines added to the deletions file since the last look.
    fn poll_deletions(&mut self) {
        let Some(path) = self.deletions.clone() else { return };
        let Ok(mut file) = std::fs::File::open(&path) else { return };
        use std::io::{Read as _, Seek as _};
        if file.seek(std::io::SeekFrom::Start(self.progress.deletions_offset + self.pending_deletion.len() as u64)).is_err() {
            return;
        }
        let mut fresh = Vec::new();
        if file.read_to_end(&mut fresh).is_err() {
            return;
        }
        self.pending_deletion.extend_from_slice(&fresh);
        while let Some(end) = memchr::memchr(b'\n', &self.pending_deletion) {
            let line: Vec<u8> = self.pending_deletion.drain(..=end).collect();
            self.progress.deletions_offset += line.len() as u64;
            let url = String::from_utf8_lossy(&line).trim().to_string();
            if !url.is_empty() && !url.starts_with('#') {
                self.delete(&url);
            }
        }
    }

    /// The periodic work while an input is quiet: deletions, epochs by age, stop requests.
    fn tick(&mut self) -> follow::Wait {
        self.poll_deletions();
        if self.in_epoch > 0 && self.epoch_started.elapsed() >= self.policy.max_age {
            self.close_epoch();
        }
        if follow::stop_requested() {
            follow::Wait::Finish
        } else {
            follow::Wait::Again
        }
    }

    fn age_check(&mut self) {
        if self.in_epoch > 0 && self.epoch_started.elapsed() >= self.policy.max_age {
            self.close_epoch();
        }
    }

    fn close_epoch(&mut self) {
        self.epoch += 1;
        self.in_epoch = 0;
        let now = Instant::now();
        self.live.epoch_closed.lock().expect("epochs").insert(self.epoch - 1, now);
        if !self.reads.is_empty() {
            self.live.epoch_reads.lock().expect("reads").insert(self.epoch - 1, std::mem::take(&mut self.reads));
        }
        let expire_before = if self.retention_secs > 0 { self.progress.max_date.saturating_sub(self.retention_secs) } else { 0 };
        let checkpoint = match &self.checkpoint {
            Some((dir, every)) if self.epoch % every == 0 => {
                if self.report_errors {
                    let bytes = serde_json::to_vec(&self.progress).expect("progress serializes");
                    if let Err(e) = write_atomic(&progress_path(dir, self.epoch), &bytes) {
                        tracing::error!("checkpoint: {e}");
                    }
                }
                true
            }
            _ => false,
        };
        for sender in &self.senders {
            let _ = sender.send(Message::Epoch { next: self.epoch, expire_before, checkpoint });
        }
        self.metrics.set(metrics::EPOCHS_CLOSED, "", self.epoch as i64);
    }

    fn finish(&mut self) {
        self.poll_deletions();
        if self.in_epoch > 0 || self.checkpoint.is_some() {
            // The last epoch is always a checkpoint: a stopped run resumes where it ended.
            if let Some((_, every)) = &mut self.checkpoint {
                *every = 1;
            }
            self.close_epoch();
        }
        for sender in &self.senders {
            let _ = sender.send(Message::End);
        }
    }
}

type Core = Arc<Mutex<ReaderCore>>;

fn lock(core: &Core) -> std::sync::MutexGuard<'_, ReaderCore> {
    core.lock().expect("reader core")
}

/// Frames records from `decoder` into the core until its end.
fn pump(core: &Core, decoder: source::Decoder, name: &str, max_record_bytes: u64) {
    let counter = decoder.counter();
    let metrics = lock(core).metrics.clone();
    let report = lock(core).report_errors;
    let mut counted = 0u64;
    let mut framer = source::Framer::new(decoder, max_record_bytes);
    while let Some(item) = framer.next_record() {
        let mut c = lock(core);
        c.item(item, name);
        c.age_check();
        drop(c);
        let read = counter.get();
        if report && read > counted {
            metrics.add(metrics::BYTES_READ, "", (read - counted) as i64);
            counted = read;
        }
        if follow::stop_requested() {
            break;
        }
    }
    if report {
        metrics.add(metrics::BYTES_READ, "", counter.get().saturating_sub(counted) as i64);
    }
}

fn open_failed(core: &Core, error: impl std::fmt::Display) {
    let c = lock(core);
    if c.report_errors {
        c.metrics.inc(metrics::RECORD_ERRORS, "open_failed");
        tracing::error!("{error}");
    }
}

/// The reader thread: every input in order, each record to the worker that owns its URL.
fn read_feed(feed: Feed, core: Core, max_record_bytes: u64) {
    let waiter = |core: &Core, finished: Box<dyn Fn() -> bool + Send>| -> follow::Waiter {
        let core = core.clone();
        Box::new(move || {
            let wait = lock(&core).tick();
            if wait == follow::Wait::Finish || finished() {
                follow::Wait::Finish
            } else {
                follow::Wait::Again
            }
        })
    };
    match feed {
        Feed::Inputs(inputs) => {
            for input in inputs {
                if follow::stop_requested() {
                    break;
                }
                let name = input.name();
                if !lock(&core).begin(&name) {
                    continue;
                }
                let decoder = match input {
                    Input::Stdin => {
                        let pump_reader = follow::StdinPump::start(waiter(&core, Box::new(|| false)));
                        source::Decoder::new(Box::new(pump_reader))
                            .map_err(|source| source::SourceError::Open { path: "-".into(), source })
                    }
                    other => other.open(),
                };
                match decoder {
                    Ok(d) => pump(&core, d, &name, max_record_bytes),
                    Err(e) => open_failed(&core, e),
                }
                lock(&core).end_input();
            }
            lock(&core).poll_deletions();
        }
        Feed::Follow(targets) => {
            let multiple = targets.len() > 1;
            'targets: for (t, target) in targets.iter().enumerate() {
                match target {
                    Followed::Stdin => {
                        if !lock(&core).begin("-") {
                            continue;
                        }
                        let reader = follow::StdinPump::start(waiter(&core, Box::new(|| false)));
                        match source::Decoder::new(Box::new(reader)) {
                            Ok(d) => pump(&core, d, "-", max_record_bytes),
                            Err(e) => open_failed(&core, e),
                        }
                        lock(&core).end_input();
                    }
                    Followed::File(path) => {
                        let name = path.display().to_string();
                        if !lock(&core).begin(&name) {
                            continue;
                        }
                        // Several followed files: one is complete when the next one exists.
                        let next = targets.get(t + 1).cloned().filter(|_| multiple);
                        let finished = Box::new(move || match &next {
                            Some(Followed::File(p)) | Some(Followed::Dir(p)) => p.exists(),
                            _ => false,
                        });
                        // A file the crawler has not created yet: wait for it.
                        while !path.exists() {
                            if lock(&core).tick() == follow::Wait::Finish {
                                break 'targets;
                            }
                            std::thread::sleep(follow::POLL);
                        }
                        let opened = follow::TailFile::open(path, waiter(&core, finished))
                            .and_then(|r| source::Decoder::new(Box::new(r)))
                            .map_err(|source| source::SourceError::Open { path: path.clone(), source });
                        match opened {
                            Ok(d) => pump(&core, d, &name, max_record_bytes),
                            Err(e) => open_failed(&core, e),
                        }
                        lock(&core).end_input();
                    }
                    Followed::Dir(dir) => loop {
                        let files = follow::list_dir(dir);
                        let next = {
                            let c = lock(&core);
                            files.iter().find(|f| {
                                let name = f.display().to_string();
                                !c.progress.inputs.iter().any(|p| p.name == name && p.done)
                            }).cloned()
                        };
                        let Some(file) = next else {
                            if lock(&core).tick() == follow::Wait::Finish {
                                break 'targets;
                            }
                            std::thread::sleep(follow::POLL);
                            continue;
                        };
                        let name = file.display().to_string();
                        if !lock(&core).begin(&name) {
                            continue;
                        }
                        let (dir2, me) = (dir.clone(), file.clone());
                        let finished = Box::new(move || follow::list_dir(&dir2).iter().any(|f| f > &me));
                        let opened = follow::TailFile::open(&file, waiter(&core, finished))
                            .and_then(|r| source::Decoder::new(Box::new(r)))
                            .map_err(|source| source::SourceError::Open { path: file.clone(), source });
                        match opened {
                            Ok(d) => pump(&core, d, &name, max_record_bytes),
                            Err(e) => open_failed(&core, e),
                        }
                        if follow::stop_requested() {
                            break 'targets;
                        }
                        lock(&core).end_input();
                    },
                }
            }
        }
        Feed::Script(items) => {
            lock(&core).begin("script");
            for item in items {
                match item {
                    ScriptItem::Warc(bytes) => {
                        let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                        match (Input::Embedded { name: "script", bytes: leaked }).open() {
                            Ok(d) => pump(&core, d, "script", max_record_bytes),
                            Err(e) => open_failed(&core, e),
                        }
                    }
                    ScriptItem::Delete(url) => lock(&core).delete(&url),
                    ScriptItem::CloseEpoch => {
                        let mut c = lock(&core);
                        if c.in_epoch > 0 {
                            c.close_epoch();
                        }
                    }
                }
            }
        }
    }
    lock(&core).finish();
}

/// Turns a record into a document for the dataflow (or counts why not).
fn to_document(record: &RawRecord, max_page_bytes: usize, metrics: &Registry, revisits: &mut Vec<Revisit>) -> Option<(PageMeta, String)> {
    let started = Instant::now();
    let outcome = http::interpret(record, max_page_bytes);
    metrics.observe(metrics::STAGE_SECONDS, "decode", started.elapsed().as_secs_f64());
    match outcome {
        Ok((outcome, quirks)) => {
            if quirks.broken_chunking {
                metrics.inc(metrics::QUIRKS, "broken_chunking");
            }
            if quirks.content_encoding_mismatch {
                metrics.inc(metrics::QUIRKS, "content_encoding_mismatch");
            }
            if quirks.missing_date {
                metrics.inc(metrics::QUIRKS, "missing_date");
            }
            if quirks.page_truncated {
                metrics.inc(metrics::CAPS, "max_page_bytes");
            }
            match outcome {
                Outcome::Page(doc) => {
                    metrics.inc(metrics::PAGES, "");
                    let host = stable_hash(&doc.host);
                    metrics.name_host(host, &doc.host);
                    let meta = PageMeta {
                        id: PageId::new(doc.date_secs, &doc.url, &doc.record_id),
                        host,
                        url: doc.url,
                        record_id: doc.record_id,
                    };
                    Some((meta, doc.html))
                }
                Outcome::Revisit(revisit) => {
                    metrics.inc(metrics::REVISITS, "");
                    revisits.push(revisit);
                    None
                }
                Outcome::Skipped(reason) => {
                    metrics.inc(metrics::SKIPPED, reason);
                    None
                }
            }
        }
        Err(error) => {
            metrics.inc(metrics::DOCUMENT_ERRORS, error.code());
            None
        }
    }
}

/// The sink of process 0's worker 0: cluster changes, written epoch by epoch as epochs
/// complete, the current clusters, and checkpoints.
struct Sink {
    changes: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    changes_bytes: u64,
    out: Option<PathBuf>,
    /// Updates of epochs not yet complete.
    pending: std::collections::BTreeMap<u64, Vec<(ClusterRow, isize)>>,
    /// The clusters now: row → count (1).
    rows: std::collections::BTreeMap<ClusterRow, isize>,
    /// Epochs before this one are written (or restored from a checkpoint).
    written: u64,
    /// Updates of epochs before this are the restored state: applied, not written.
    restored_below: u64,
    checkpoint: Option<PathBuf>,
    peers: usize,
    live: Arc<Live>,
}

impl Sink {
    fn new(out: Option<PathBuf>, manifest: Option<&Manifest>, checkpoint: Option<PathBuf>, peers: usize, live: Arc<Live>) -> Result<Sink, RunError> {
        let mut changes = None;
        let mut changes_bytes = 0;
        if let Some(dir) = &out {
            let fail = |path: PathBuf| move |source| RunError::Output { path, source };
            std::fs::create_dir_all(dir).map_err(fail(dir.clone()))?;
            let path = dir.join("changes.jsonl");
            let file = std::fs::OpenOptions::new().create(true).write(true).truncate(false).open(&path).map_err(fail(path.clone()))?;
            // A resumed run continues the change stream where its checkpoint ended it.
            changes_bytes = manifest.map_or(0, |m| m.changes_bytes);
            file.set_len(changes_bytes).map_err(fail(path.clone()))?;
            let mut file = std::io::BufWriter::new(file);
            use std::io::Seek as _;
            file.seek(std::io::SeekFrom::Start(changes_bytes)).map_err(fail(path.clone()))?;
            changes = Some((path, file));
        }
        let restored_below = manifest.map_or(0, |m| m.epoch);
        Ok(Sink {
            changes,
            changes_bytes,
            out,
            pending: Default::default(),
            rows: Default::default(),
            written: restored_below,
            restored_below,
            checkpoint,
            peers,
            live,
        })
    }

    fn accept(&mut self, updates: &[(ClusterRow, u64, isize)]) {
        for (row, time, diff) in updates {
            self.pending.entry(*time).or_default().push((row.clone(), *diff));
        }
    }

    /// Writes every pending epoch before `frontier`.
    fn flush_before(&mut self, frontier: u64) -> Result<(), RunError> {
        use std::io::Write as _;
        let done: Vec<u64> = self.pending.range(..frontier).map(|(t, _)| *t).collect();
        for time in done {
            let mut updates = self.pending.remove(&time).unwrap_or_default();
            updates.sort();
            differential_dataflow::consolidation::consolidate(&mut updates);
            let live_updates: Vec<(ClusterRow, u64, isize)> = updates.iter().map(|(r, d)| (r.clone(), time, *d)).collect();
            self.live.apply(&live_updates);
            for (row, diff) in &updates {
                let count = self.rows.entry(row.clone()).or_insert(0);
                *count += diff;
                if *count == 0 {
                    self.rows.remove(row);
                }
            }
            if time < self.restored_below {
                continue;
            }
            if let Some((path, file)) = &mut self.changes {
                let mut lines: Vec<crate::sink::ChangeLine> = updates
                    .iter()
                    .map(|(row, diff)| crate::sink::ChangeLine { epoch: time, url: row.url.clone(), cluster: row.assignment.cluster.to_string(), diff: *diff })
                    .collect();
                lines.sort_by(|a, b| (&a.url, a.diff, &a.cluster).cmp(&(&b.url, b.diff, &b.cluster)));
                let mut bytes = Vec::new();
                for line in &lines {
                    serde_json::to_writer(&mut bytes, line).expect("change serializes");
                    bytes.push(b'\n');
                }
                file.write_all(&bytes).map_err(|source| RunError::Output { path: path.clone(), source })?;
                file.flush().map_err(|source| RunError::Output { path: path.clone(), source })?;
                self.changes_bytes += bytes.len() as u64;
            }
        }
        // Latency of the records of every epoch now complete.
        let now = Instant::now();
        while self.written < frontier {
            if let Some(reads) = self.live.epoch_reads.lock().expect("reads").remove(&self.written) {
                if let Some(first) = reads.first() {
                    tracing::debug!(
                        "epoch {}: {} records, {:.1} ms from its first record read to its changes written",
                        self.written,
                        reads.len(),
                        now.duration_since(*first).as_secs_f64() * 1e3
                    );
                }
                let mut latencies = self.live.latencies.lock().expect("latencies");
                for read in reads {
                    let secs = now.duration_since(read).as_secs_f64();
                    self.live.registry.observe(metrics::RECORD_LATENCY, "", secs);
                    if latencies.len() < 1_000_000 {
                        latencies.push(secs as f32);
                    }
                }
            }
            self.written += 1;
        }
        Ok(())
    }

    fn final_rows(&self) -> Vec<ClusterRow> {
        self.rows.keys().cloned().collect()
    }

    /// Commits the checkpoint of `epoch` (every epoch before it is written): the manifest is
    /// the commit point; older parts are removed after it.
    fn commit_checkpoint(&mut self, epoch: u64) -> Result<(), RunError> {
        let Some(dir) = self.checkpoint.clone() else { return Ok(()) };
        let fail = |message: String| RunError::Checkpoint { path: dir.clone(), message };
        if let Some((_, file)) = &mut self.changes {
            file.get_ref().sync_data().map_err(|e| fail(e.to_string()))?;
        }
        if let Some(out) = &self.out {
            crate::sink::write_jsonl(&out.join("clusters.jsonl"), &crate::sink::cluster_lines(&self.final_rows())).map_err(|e| fail(e.to_string()))?;
        }
        let reader: ReaderProgress = serde_json::from_slice(&std::fs::read(progress_path(&dir, epoch)).map_err(|e| fail(e.to_string()))?)
            .map_err(|e| fail(e.to_string()))?;
        let manifest = Manifest { epoch, changes_bytes: self.changes_bytes, parts: self.peers, reader };
        write_atomic(&dir.join(MANIFEST), &serde_json::to_vec_pretty(&manifest).expect("manifest serializes")).map_err(|e| fail(e.to_string()))?;
        self.live.registry.inc(metrics::CHECKPOINTS, "");
        // Older checkpoints are no longer needed.
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let epoch_of = name
                    .strip_prefix("part-")
                    .or_else(|| name.strip_prefix("revisits-"))
                    .and_then(|r| r.split('-').next())
                    .or_else(|| name.strip_prefix("reader-").and_then(|r| r.strip_suffix(".json")))
                    .and_then(|e| e.parse::<u64>().ok());
                if epoch_of.is_some_and(|e| e < epoch) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(())
    }
}

/// Runs the pipeline over the feed (to its end, or until a stop request) and returns process
/// 0's output.
pub fn run(options: RunOptions) -> Result<RunOutput, RunError> {
    let metrics = options.live.registry.clone();
    let started = Instant::now();
    let workers = options.workers.max(1);
    let peers = workers * options.processes.max(1);
    let first_worker = options.process * workers;
    let communication = if options.processes > 1 {
        CommunicationConfig::Cluster {
            threads: workers,
            process: options.process,
            addresses: options.addresses.clone(),
            report: false,
            zerocopy: false,
        }
    } else if workers > 1 {
        CommunicationConfig::Process(workers)
    } else {
        CommunicationConfig::Thread
    };
    let config = timely::Config { communication, worker: WorkerConfig::default() };

    let manifest = match &options.checkpoint {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| RunError::Checkpoint { path: dir.clone(), message: e.to_string() })?;
            load_manifest(dir)?
        }
        None => None,
    };
    if let Some(m) = &manifest {
        tracing::info!("resuming from the checkpoint of epoch {} ({} inputs read so far)", m.epoch, m.reader.inputs.len());
    }

    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..workers).map(|_| bounded::<Message>(options.config.source.channel_capacity)).unzip();
    let watched: Vec<Receiver<Message>> = receivers.clone();
    *options.live.channel_depth.lock().expect("live lock") = Some(Box::new(move || watched.iter().map(|r| r.len()).sum()));
    let receivers: Arc<Mutex<Vec<Option<Receiver<Message>>>>> = Arc::new(Mutex::new(receivers.into_iter().map(Some).collect()));
    let source_config = options.config.source.clone();
    let report_errors = options.process == 0;
    if let Feed::Inputs(inputs) = &options.feed {
        metrics.set(metrics::INPUT_BYTES, "", inputs.iter().filter_map(Input::len).sum::<u64>() as i64);
    }
    metrics.set(metrics::CHANNEL_CAPACITY, "", (source_config.channel_capacity * workers) as i64);
    let start_epoch = manifest.as_ref().map_or(0, |m| m.epoch);
    let core = Arc::new(Mutex::new(ReaderCore {
        senders,
        first_worker,
        peers,
        report_errors,
        policy: EpochPolicy {
            records: options.config.run.epoch_records.max(1),
            max_age: Duration::from_millis(options.config.run.epoch_ms),
        },
        epoch: start_epoch,
        in_epoch: 0,
        epoch_started: Instant::now(),
        live: options.live.clone(),
        metrics: metrics.clone(),
        printed: 0,
        retention_secs: options.config.run.retention_secs,
        progress: manifest.as_ref().map(|m| m.reader.clone()).unwrap_or_default(),
        skip: 0,
        deletions: options.deletions.clone(),
        pending_deletion: Vec::new(),
        checkpoint: options.checkpoint.clone().map(|d| (d, options.config.run.checkpoint_epochs.max(1))),
        reads: Vec::new(),
    }));
    let feed = options.feed.clone();
    let max_record_bytes = source_config.max_record_bytes;
    let reader = std::thread::Builder::new()
        .name("dupflow-reader".into())
        .spawn(move || read_feed(feed, core, max_record_bytes))
        .map_err(|e| RunError::Timely(e.to_string()))?;
    let live = options.live.clone();

    let pipeline = options.config.clone();
    let registry = metrics.clone();
    let out = options.out.clone();
    let checkpoint = options.checkpoint.clone();
    let restore = manifest.clone();
    let guards = timely::execute(config, move |worker| -> Result<_, RunError> {
        let index = worker.index();
        let receiver = receivers.lock().expect("receivers")[index - first_worker].take().expect("one receiver per worker");
        let collected: Rc<RefCell<Vec<(ClusterRow, u64, isize)>>> = Rc::new(RefCell::new(Vec::new()));
        let method = pipeline.method();
        let metrics = metrics.clone();
        let live = live.clone();
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            // Pages enter compact (stripped and split in the worker, below): the worker keeps
            // them to retract on re-crawl, deletion or retention.
            let (input, pages) = scope.new_collection::<(PageId, Page), isize>();
            let assignments = clusters(pages.clone(), &method, metrics.clone());
            let rows = pages
                .map(|(id, page)| (id, (page.url, page.record_id)))
                .join_map(assignments, |&page, (url, record_id), assignment| ClusterRow {
                    page,
                    url: url.clone(),
                    record_id: record_id.clone(),
                    assignment: *assignment,
                });
            let sink = collected.clone();
            let (probe, _) = rows
                .consolidate()
                .inner
                .exchange(|_| 0)
                .inspect_core(move |event: Result<(_, &Vec<(ClusterRow, u64, isize)>), _>| {
                    if let Ok((_, updates)) = event {
                        sink.borrow_mut().extend_from_slice(updates);
                    }
                })
                .probe();
            (input, probe)
        });

        let is_sink = index == 0 && report_errors;
        let mut sink = if is_sink { Some(Sink::new(out.clone(), restore.as_ref(), checkpoint.clone(), peers, live.clone())?) } else { None };
        let mut pages = CurrentPages::new(pipeline.source.recrawls);
        let apply = |input: &mut differential_dataflow::input::InputSession<u64, (PageId, Page), isize>, changes: Vec<Change>| {
            for change in changes {
                match change {
                    Change::Insert(page) => input.insert((page.id, page)),
                    Change::Remove(page) => input.remove((page.id, page)),
                }
            }
        };
        let sentence = pipeline.sentence.clone();
        let shingle_words = method.shingle_words();
        // Strip and split: the first two stages, per record, on the worker that owns its URL.
        let page_of = |meta: PageMeta, html: String| -> Page {
            let started = Instant::now();
            let blocks = dupflow_operators::html::strip(&html).blocks;
            metrics.observe(metrics::STAGE_SECONDS, "strip", started.elapsed().as_secs_f64());
            metrics.inc(metrics::STAGE_PAGES, "strip");
            let started = Instant::now();
            let (page, truncated) = dupflow_operators::sentence::page_of(meta, &blocks, &sentence, shingle_words);
            metrics.observe(metrics::STAGE_SECONDS, "split", started.elapsed().as_secs_f64());
            metrics.inc(metrics::STAGE_PAGES, "split");
            metrics.add(metrics::SENTENCES, "", page.sentences.len() as i64);
            if truncated {
                metrics.inc(metrics::CAPS, "max_sentences_per_page");
            }
            page
        };
        // Resume: this worker's share of the checkpoint's pages, as of its epoch.
        if let (Some(m), Some(dir)) = (&restore, &checkpoint) {
            for part in 0..m.parts {
                let path = part_path(dir, m.epoch, part);
                let bytes = std::fs::read(&path).map_err(|e| RunError::Checkpoint { path: path.clone(), message: e.to_string() })?;
                let raw = lz4_flex::frame::FrameDecoder::new(bytes.as_slice());
                let mut raw = std::io::BufReader::new(raw);
                CurrentPages::load(&mut raw, |page| {
                    if (current::url_key(&page.url) % peers as u64) as usize == index {
                        if let Ok(changes) = pages.capture(page, 0) {
                            apply(&mut input, changes);
                        }
                    }
                })
                .map_err(|e| RunError::Checkpoint { path, message: e.to_string() })?;
            }
            input.advance_to(m.epoch);
        }
        let max_page_bytes = pipeline.source.max_page_bytes as usize;
        let mut revisits: Vec<Revisit> = Vec::new();
        if let (Some(m), Some(dir), true) = (&restore, &checkpoint, index == 0) {
            for part in 0..m.parts {
                let path = revisits_path(dir, m.epoch, part);
                let bytes = std::fs::read(&path).map_err(|e| RunError::Checkpoint { path: path.clone(), message: e.to_string() })?;
                let saved: Vec<Revisit> = serde_json::from_slice(&bytes).map_err(|e| RunError::Checkpoint { path, message: e.to_string() })?;
                revisits.extend(saved);
            }
        }
        let mut epoch = restore.as_ref().map_or(0, |m| m.epoch);
        let mut expire_before = 0u64;
        let mut completed = epoch;
        let mut checkpoints: Vec<u64> = Vec::new();
        // Epochs below `completed` are done at the sink: write them, record their latency.
        let note_progress = |probe: &timely::dataflow::operators::probe::Handle<u64>,
                                 completed: &mut u64,
                                 epoch: u64,
                                 sink: &mut Option<Sink>,
                                 checkpoints: &mut Vec<u64>|
         -> Result<(), RunError> {
            let before = *completed;
            while !probe.less_than(&(*completed + 1)) && *completed < epoch {
                *completed += 1;
            }
            if let Some(sink) = sink {
                sink.accept(&std::mem::take(&mut *collected.borrow_mut()));
                // Epoch by epoch, so that a checkpoint records the change stream up to it.
                for e in before..*completed {
                    sink.flush_before(e + 1)?;
                    if let Some(closed) = live.epoch_closed.lock().expect("epochs").remove(&e) {
                        metrics.observe(metrics::EPOCH_SECONDS, "", closed.elapsed().as_secs_f64());
                        tracing::debug!("epoch {e}: changes written {:.1} ms after its close", closed.elapsed().as_secs_f64() * 1e3);
                    }
                    while let Some(&c) = checkpoints.first() {
                        if c > e + 1 {
                            break;
                        }
                        checkpoints.remove(0);
                        sink.commit_checkpoint(c)?;
                    }
                }
                metrics.set(metrics::EPOCHS_DONE, "", *completed as i64);
            }
            Ok(())
        };
        'feed: loop {
            let mut taken = 0;
            loop {
                match receiver.try_recv() {
                    Ok(Message::Record(record)) => {
                        if let Some((meta, html)) = to_document(&record, max_page_bytes, &metrics, &mut revisits) {
                            let replacing = pages.len();
                            match pages.capture(page_of(meta, html), expire_before) {
                                Ok(changes) => {
                                    metrics.inc(metrics::PAGE_UPDATES, if changes.len() > 1 || pages.len() == replacing { "replaced" } else { "inserted" });
                                    apply(&mut input, changes);
                                }
                                Err(current::Ignored::Superseded) => metrics.inc(metrics::PAGE_UPDATES, "superseded"),
                                Err(current::Ignored::Expired) => metrics.inc(metrics::PAGE_UPDATES, "expired"),
                            }
                        }
                        taken += 1;
                        if taken >= 64 {
                            break;
                        }
                    }
                    Ok(Message::Delete(url)) => {
                        let changes = pages.delete(&url);
                        metrics.add(metrics::PAGE_UPDATES, "deleted", changes.len() as i64);
                        apply(&mut input, changes);
                        taken += 1;
                    }
                    Ok(Message::Epoch { next, expire_before: before, checkpoint: save }) => {
                        expire_before = before;
                        if before > 0 {
                            let changes = pages.expire(before);
                            metrics.add(metrics::PAGE_UPDATES, "retired", changes.len() as i64);
                            apply(&mut input, changes);
                        }
                        if save {
                            if let Some(dir) = &checkpoint {
                                let path = part_path(dir, next, index);
                                let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
                                pages.save(&mut encoder).and_then(|_| encoder.finish().map_err(std::io::Error::other)).and_then(|bytes| write_atomic(&path, &bytes))
                                    .map_err(|e| RunError::Checkpoint { path, message: e.to_string() })?;
                                // Revisits so far (they are reported, not clustered).
                                let path = revisits_path(dir, next, index);
                                write_atomic(&path, &serde_json::to_vec(&revisits).expect("revisits serialize"))
                                    .map_err(|e| RunError::Checkpoint { path, message: e.to_string() })?;
                            }
                            checkpoints.push(next);
                        }
                        epoch = next;
                        input.advance_to(next);
                        taken += 1;
                        break;
                    }
                    Ok(Message::End) | Err(TryRecvError::Disconnected) => break 'feed,
                    Err(TryRecvError::Empty) => break,
                }
            }
            if taken == 0 {
                worker.step_or_park(Some(Duration::from_millis(1)));
            } else {
                input.flush();
                worker.step();
            }
            note_progress(&probe, &mut completed, epoch, &mut sink, &mut checkpoints)?;
        }
        epoch += 1;
        input.advance_to(epoch);
        input.flush();
        drop(input);
        while probe.less_than(&epoch) {
            worker.step_or_park(Some(Duration::from_millis(1)));
            note_progress(&probe, &mut completed, epoch, &mut sink, &mut checkpoints)?;
        }
        note_progress(&probe, &mut completed, epoch, &mut sink, &mut checkpoints)?;
        let rows = sink.as_ref().map(Sink::final_rows).unwrap_or_default();
        Ok((rows, revisits, pages.bytes(), epoch))
    })
    .map_err(RunError::Timely)?;

    let mut output = RunOutput { resumed_from: manifest.as_ref().map(|m| m.epoch), ..Default::default() };
    let mut held = 0;
    for result in guards.join() {
        let (rows, revisits, bytes, epochs) = result.map_err(RunError::Worker)??;
        output.rows.extend(rows);
        output.revisits.extend(revisits);
        output.epochs = output.epochs.max(epochs);
        held += bytes;
    }
    registry.set(metrics::HELD_BYTES, "", held as i64);
    let _ = reader.join();
    output.rows.sort();
    output.revisits.sort_by(|a, b| (&a.url, &a.date).cmp(&(&b.url, &b.date)));
    output.elapsed = started.elapsed();
    Ok(output)
}
