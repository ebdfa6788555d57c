//! The one place where the stages are wired: read this file to see the whole pipeline.
//!
//! ```text
//! reader thread (src/source/reader): inputs (read once or followed) → decode → frame → records,
//!   deletions, epoch marks (with the retention clock) ──bounded channels, by URL──▶ workers
//! worker: record → HTTP/charset (src/source/http) → strip_html → split_sentences → page
//!   → current pages (src/source/current: re-crawls replace, deletions and retention retract)
//!   → input collection (PageId, Page), insertions and retractions
//!   → remove_templates ─┬─▶ fingerprints → candidate_sets ─┐
//!                       └─▶ contents ───────────────────────┴▶ verify_clusters
//!   → (page, url, record id, assignment) ─exchange to worker 0─▶ change stream and checkpoints
//!     (src/sink/stream)
//! ```
//!
//! Reading runs on its own thread and hands records to the timely workers through bounded
//! crossbeam channels (backpressure); workers poll with `try_recv` and `step_or_park`, so a
//! worker never blocks on input while the dataflow has work. The method's stages are
//! differential operators, so the clusters are maintained incrementally: every stage handles
//! insertions and retractions, and `clusters` is tested against `reference` at 1, 2 and 4 workers.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, TryRecvError};
use differential_dataflow::input::Input as _;
use differential_dataflow::VecCollection;
use timely::dataflow::operators::{Exchange, Inspect, Probe};
use timely::{CommunicationConfig, WorkerConfig};

use dupflow_operators::candidates::{components, CandidateSets};
use dupflow_operators::fingerprint::Fingerprint;
use dupflow_operators::minhash::MinhashBands;
use dupflow_operators::reference::{Fingerprinting, MethodConfig};
use dupflow_operators::share::{SentenceShare, Shared};
use dupflow_operators::simhash::{simhash, SimhashEdges};
use dupflow_operators::template::{Filtered, RemoveTemplates};
use dupflow_operators::verify::{Assignment, VerifyClusters, VerifyMethod};
use dupflow_operators::{Content, Page, PageId, PageMeta};

use crate::config::PipelineConfig;
use crate::metrics::live::Live;
use crate::metrics::{self, Registry};
use crate::source::current::{self, Change, CurrentPages};
use crate::source::http::{self, Outcome, Revisit};
use crate::source::{Input, RawRecord};
pub use crate::types::{ClusterRow, RunError, RunOutput};

/// Each page's cluster assignment, as a collection.
pub type Assignments<'scope> = VecCollection<'scope, u64, (PageId, Assignment), isize>;

/// Each page's sentence share, as a collection.
pub type Shares<'scope> = VecCollection<'scope, u64, (PageId, Shared), isize>;

/// Updates as timely delivers them: (data, time, diff).
type Updates<D> = Vec<(D, u64, isize)>;

/// The method's stages on a collection of pages: templates, fingerprints, candidate sets and
/// verification. Returns each page's cluster assignment. Counters go to `metrics`.
pub fn clusters<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    method: &MethodConfig,
    metrics: Arc<Registry>,
) -> Assignments<'scope> {
    clusters_and_shares(pages, method, metrics, false).0
}

/// `clusters`, and with `share` the sentence share of every page with duplicated sentences.
pub fn clusters_and_shares<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    method: &MethodConfig,
    metrics: Arc<Registry>,
    share: bool,
) -> (Assignments<'scope>, Option<Shares<'scope>>) {
    let (filtered, templates) = pages.clone().remove_templates(method.template);
    let shares = share.then(|| filtered.clone().sentence_share());
    let template_gauge = metrics.clone();
    templates.inspect(move |((host, _), _, diff)| {
        template_gauge.add(metrics::TEMPLATE_SENTENCES, &template_gauge.host_name(*host), *diff as i64)
    });
    let sets = candidate_sets(pages, filtered.clone(), method, metrics.clone());
    let contents = filtered.clone().map(|(id, page)| (id, page.content));
    let contents = if method.verify.method == VerifyMethod::Cosine { with_idf_weights(filtered, contents) } else { contents };
    let verify_metrics = metrics;
    let assignments = sets.verify_clusters(contents, method.verify.clone(), method.candidates.max_set_pages, move |stats| {
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
    });
    (assignments, shares)
}

/// The cosine verifier's weights: document frequencies of the pages' terms and the number of
/// pages, maintained under insertions and retractions, give each term its IDF weight
/// (`cosine::idf_weight`, quantized), joined back into each page's content.
fn with_idf_weights<'scope>(
    filtered: VecCollection<'scope, u64, (PageId, Filtered), isize>,
    contents: VecCollection<'scope, u64, (PageId, Content), isize>,
) -> VecCollection<'scope, u64, (PageId, Content), isize> {
    let documents = filtered.clone().map(|_| ()).count();
    let terms = filtered.flat_map(|(id, f)| f.content.shingles.into_iter().map(move |t| (t, id)));
    let weights = terms
        .clone()
        .map(|(t, _)| t)
        .count()
        .map(|(t, df)| ((), (t, df)))
        .join_map(documents, |_, &(t, df), &n| (t, dupflow_operators::cosine::idf_weight(n as u64, df as u64)));
    let by_page = terms.join_map(weights, |&t, &id, &w| (id, (t, w))).reduce(|_id, tw, output| {
        output.push((tw.iter().map(|((t, w), _)| (*t, *w)).collect::<Vec<(u64, u32)>>(), 1isize));
    });
    let weighted = contents.clone().join_map(by_page.clone(), |&id, content, tw| {
        let mut content = content.clone();
        content.term_weights = tw.iter().map(|&(_, w)| w).collect();
        (id, content)
    });
    // Pages without terms keep empty weights (their cosine with anything is 0).
    weighted.concat(contents.antijoin(by_page.map(|(id, _)| id)))
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
        Fingerprinting::Sentence(config) => filtered.map(|(id, page)| (id, page.fingerprint_keys)).fingerprints(config.clone()),
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
    candidates.oversized_fingerprints.inspect(move |(_, _, diff)| metrics.add(metrics::OVERSIZED_FINGERPRINTS, "", *diff as i64));
    candidates.sets
}

pub use crate::checkpoint::{load_manifest, Manifest, MANIFEST};
use crate::checkpoint::{part_path, revisits_path};
use crate::files::write_atomic;
use crate::sink::stream::Sink;
use crate::source::reader::{read_feed, EpochPolicy, Message, ReaderCore};
pub use crate::source::reader::{Feed, Followed, InputProgress, ReaderProgress, ScriptItem};

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
                    let name = doc.host.clone();
                    let (meta, html) = doc.into_parts();
                    metrics.name_host(meta.host, &name);
                    Some((meta, html))
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

    let (senders, receivers): (Vec<_>, Vec<_>) = (0..workers).map(|_| bounded::<Message>(options.config.source.channel_capacity)).unzip();
    let watched: Vec<Receiver<Message>> = receivers.clone();
    *options.live.channel_depth.lock().expect("live lock") = Some(Box::new(move || watched.iter().map(|r| r.len()).sum()));
    let receivers: Arc<Mutex<Vec<Option<Receiver<Message>>>>> = Arc::new(Mutex::new(receivers.into_iter().map(Some).collect()));
    let source_config = options.config.source.clone();
    let report_errors = options.process == 0;
    if let Feed::Inputs(inputs) = &options.feed {
        metrics.set(metrics::INPUT_BYTES, "", inputs.iter().filter_map(Input::size).sum::<u64>() as i64);
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
        let collected: Rc<RefCell<Updates<ClusterRow>>> = Rc::new(RefCell::new(Vec::new()));
        let collected_shares: Rc<RefCell<Updates<(PageId, Shared)>>> = Rc::new(RefCell::new(Vec::new()));
        let method = pipeline.method();
        let metrics = metrics.clone();
        let live = live.clone();
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            // Pages enter compact (stripped and split in the worker, below): the worker keeps
            // them to retract on re-crawl, deletion or retention.
            let (input, pages) = scope.new_collection::<(PageId, Page), isize>();
            let (assignments, shares) = clusters_and_shares(pages.clone(), &method, metrics.clone(), pipeline.share.enabled);
            let rows =
                pages.map(|(id, page)| (id, (page.url, page.record_id))).join_map(assignments, |&page, (url, record_id), assignment| {
                    ClusterRow { page, url: url.clone(), record_id: record_id.clone(), assignment: *assignment }
                });
            let sink = collected.clone();
            let (probe, _) = rows
                .consolidate()
                .inner
                .exchange(|_| 0)
                .inspect_core(move |event: Result<(_, &Updates<ClusterRow>), _>| {
                    if let Ok((_, updates)) = event {
                        sink.borrow_mut().extend_from_slice(updates);
                    }
                })
                .probe();
            if let Some(shares) = shares {
                let shares_sink = collected_shares.clone();
                shares
                    .consolidate()
                    .inner
                    .exchange(|_| 0)
                    .inspect_core(move |event: Result<(_, &Updates<(PageId, Shared)>), _>| {
                        if let Ok((_, updates)) = event {
                            shares_sink.borrow_mut().extend_from_slice(updates);
                        }
                    })
                    .probe_with(&probe);
            }
            (input, probe)
        });

        let is_sink = index == 0 && report_errors;
        let mut sink =
            if is_sink { Some(Sink::new(out.clone(), restore.as_ref(), checkpoint.clone(), peers, live.clone())?) } else { None };
        let mut pages = CurrentPages::new(pipeline.source.recrawls);
        let gate_live = live.clone();
        let apply = |input: &mut differential_dataflow::input::InputSession<u64, (PageId, Page), isize>, changes: Vec<Change>| {
            if let Some(gate) = gate_live.gate.lock().expect("gate").as_mut() {
                for change in &changes {
                    match change {
                        Change::Insert(page) => gate.index.insert(page),
                        Change::Remove(page) => gate.index.remove(page),
                    }
                }
            }
            for change in changes {
                match change {
                    Change::Insert(page) => input.insert((page.id, page)),
                    Change::Remove(page) => input.remove((page.id, page)),
                }
            }
        };
        let sentence = pipeline.sentence.clone();
        let shingling = method.shingling();
        // Strip and split: the first two stages, per record, on the worker that owns its URL.
        let page_of = |meta: PageMeta, html: String| -> Page {
            let started = Instant::now();
            let stripped = dupflow_operators::html::strip(&html);
            metrics.observe(metrics::STAGE_SECONDS, "strip", started.elapsed().as_secs_f64());
            metrics.inc(metrics::STAGE_PAGES, "strip");
            let started = Instant::now();
            let (page, truncated) =
                dupflow_operators::sentence::page_in(meta, &stripped.blocks, &sentence, shingling, stripped.lang.as_deref());
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
                let mut buried = Vec::new();
                CurrentPages::load(
                    &mut raw,
                    |page| {
                        if (current::url_key(&page.url) % peers as u64) as usize == index {
                            if let Ok(changes) = pages.capture(page, 0) {
                                apply(&mut input, changes);
                            }
                        }
                    },
                    |url, date| {
                        if (url % peers as u64) as usize == index {
                            buried.push((url, date));
                        }
                    },
                )
                .map_err(|e| RunError::Checkpoint { path, message: e.to_string() })?;
                // After the pages: a tombstone never stands between a saved page and its URL.
                for (url, date) in buried {
                    pages.restore_tombstone(url, date);
                }
            }
            input.advance_to(m.epoch);
        }
        let max_page_bytes = pipeline.source.max_page_bytes as usize;
        let mut revisits: Vec<Revisit> = Vec::new();
        if let (Some(m), Some(dir), true) = (&restore, &checkpoint, index == 0) {
            for part in 0..m.parts {
                let path = revisits_path(dir, m.epoch, part);
                let bytes = std::fs::read(&path).map_err(|e| RunError::Checkpoint { path: path.clone(), message: e.to_string() })?;
                let saved: Vec<Revisit> =
                    serde_json::from_slice(&bytes).map_err(|e| RunError::Checkpoint { path, message: e.to_string() })?;
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
                sink.accept_shares(&std::mem::take(&mut *collected_shares.borrow_mut()));
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
                            match pages.capture(page_of(meta, html), expire_before) {
                                Ok(changes) => {
                                    // A replacement retracts the old page and inserts the new.
                                    metrics.inc(metrics::PAGE_UPDATES, if changes.len() > 1 { "replaced" } else { "inserted" });
                                    apply(&mut input, changes);
                                }
                                Err(current::Ignored::Superseded) => metrics.inc(metrics::PAGE_UPDATES, "superseded"),
                                Err(current::Ignored::Expired) => metrics.inc(metrics::PAGE_UPDATES, "expired"),
                                Err(current::Ignored::Deleted) => metrics.inc(metrics::PAGE_UPDATES, "after_deletion"),
                            }
                        }
                        taken += 1;
                        if taken >= 64 {
                            break;
                        }
                    }
                    Ok(Message::Delete(url, as_of)) => {
                        let changes = pages.delete(&url, as_of);
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
                                pages
                                    .save(&mut encoder)
                                    .and_then(|_| encoder.finish().map_err(std::io::Error::other))
                                    .and_then(|bytes| write_atomic(&path, &bytes))
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
        let shares = sink.as_ref().map(Sink::final_shares).unwrap_or_default();
        Ok((rows, shares, revisits, pages.bytes(), epoch))
    })
    .map_err(RunError::Timely)?;

    let mut output = RunOutput { resumed_from: manifest.as_ref().map(|m| m.epoch), ..Default::default() };
    let mut held = 0;
    for result in guards.join() {
        let (rows, shares, revisits, bytes, epochs) = result.map_err(RunError::Worker)??;
        output.rows.extend(rows);
        output.shares.extend(shares);
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
