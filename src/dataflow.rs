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
use dupflow_operators::html::StripHtml;
use dupflow_operators::reference::{Fingerprinting, MethodConfig};
use dupflow_operators::sentence::{stable_hash, SplitSentences};
use dupflow_operators::template::{Filtered, RemoveTemplates};
use dupflow_operators::verify::{Assignment, VerifyClusters};
use dupflow_operators::{Page, PageId, PageMeta};

use crate::config::PipelineConfig;
use crate::metrics::live::Live;
use crate::metrics::{self, Registry};
use crate::source::http::{self, Outcome, Revisit};
use crate::source::{self, Input, RawRecord};

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

/// What a run was asked to do.
#[derive(Clone)]
pub struct RunOptions {
    pub inputs: Vec<Input>,
    pub config: PipelineConfig,
    /// Worker threads in this process.
    pub workers: usize,
    /// Timely cluster mode: number of processes, this one's index, and their addresses.
    pub processes: usize,
    pub process: usize,
    pub addresses: Vec<String>,
    /// The live view (dashboard, gauges); the sink applies every output update to it.
    pub live: Arc<Live>,
}

/// What a run produced (on process 0; other processes return an empty one).
#[derive(Debug, Default)]
pub struct RunOutput {
    /// Every change of the output, `(row, epoch, diff)`, consolidated.
    pub changes: Vec<(ClusterRow, u64, isize)>,
    pub revisits: Vec<Revisit>,
    pub elapsed: Duration,
}

#[derive(Debug, Error)]
pub enum RunError {
    #[error("timely could not start: {0}")]
    Timely(String),
    #[error("a worker failed: {0}")]
    Worker(String),
}

enum Message {
    Record(Box<RawRecord>),
    /// Close the current epoch: later records belong to this one.
    Epoch(u64),
    End,
}

/// When the reader closes epochs.
#[derive(Clone, Copy, Debug)]
struct EpochPolicy {
    records: u64,
    max_age: Duration,
}

/// Reads all inputs on this thread, handing records to this process's workers round-robin over
/// all workers of all processes (each process reads everything and keeps its share), and closing
/// epochs (broadcast to every worker) by record count or age.
#[allow(clippy::too_many_arguments)]
fn read_inputs(
    inputs: Vec<Input>,
    senders: Vec<Sender<Message>>,
    first_worker: usize,
    peers: usize,
    max_record_bytes: u64,
    report_errors: bool,
    epochs: EpochPolicy,
    live: Arc<Live>,
) {
    let metrics = live.registry.clone();
    let mut index = 0usize;
    let mut printed = 0usize;
    let mut epoch = 0u64;
    let mut in_epoch = 0u64;
    let mut epoch_started = Instant::now();
    let close_epoch = |senders: &[Sender<Message>], epoch: &mut u64, in_epoch: &mut u64| {
        *epoch += 1;
        *in_epoch = 0;
        live.epoch_closed.lock().expect("epochs").insert(*epoch - 1, Instant::now());
        for sender in senders {
            let _ = sender.send(Message::Epoch(*epoch));
        }
        metrics.set(metrics::EPOCHS_CLOSED, "", *epoch as i64);
    };
    for input in inputs {
        let name = input.name();
        let decoder = match input.open() {
            Ok(d) => d,
            Err(error) => {
                if report_errors {
                    metrics.inc(metrics::RECORD_ERRORS, "open_failed");
                    tracing::error!("{error}");
                }
                continue;
            }
        };
        let counter = decoder.counter();
        let mut counted = 0u64;
        let mut framer = source::Framer::new(decoder, max_record_bytes);
        while let Some(item) = framer.next_record() {
            match item {
                Ok(record) => {
                    let target = index % peers;
                    index += 1;
                    if let Some(local) = target.checked_sub(first_worker).filter(|l| *l < senders.len()) {
                        metrics.inc(metrics::RECORDS, &record.type_name());
                        if record.lenient_length {
                            metrics.inc(metrics::QUIRKS, "content_length_mismatch");
                        }
                        use warc::RecordType::*;
                        match record.warc_type() {
                            Response | Resource | Revisit => {
                                // Blocks when the worker is behind: backpressure, no unbounded buffer.
                                let _ = senders[local].send(Message::Record(Box::new(record)));
                            }
                            other => metrics.inc(metrics::SKIPPED, &other.to_string()),
                        }
                    }
                    if in_epoch == 0 {
                        epoch_started = Instant::now();
                    }
                    in_epoch += 1;
                }
                Err(error) => {
                    if report_errors {
                        metrics.inc(metrics::RECORD_ERRORS, error.kind.code());
                        if printed < 20 {
                            tracing::warn!("{name}: skipped {error}");
                            printed += 1;
                        } else if printed == 20 {
                            tracing::warn!("further skipped records are counted, not printed");
                            printed += 1;
                        }
                    }
                }
            }
            if in_epoch >= epochs.records || (in_epoch > 0 && epoch_started.elapsed() >= epochs.max_age) {
                close_epoch(&senders, &mut epoch, &mut in_epoch);
            }
            let read = counter.get();
            if report_errors && read > counted {
                metrics.add(metrics::BYTES_READ, "", (read - counted) as i64);
                counted = read;
            }
        }
        if report_errors {
            metrics.add(metrics::BYTES_READ, "", (counter.get() - counted) as i64);
        }
    }
    if in_epoch > 0 {
        close_epoch(&senders, &mut epoch, &mut in_epoch);
    }
    for sender in senders {
        let _ = sender.send(Message::End);
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

/// Runs the pipeline over the inputs to the end and returns process 0's output.
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

    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..workers).map(|_| bounded::<Message>(options.config.source.channel_capacity)).unzip();
    let watched: Vec<Receiver<Message>> = receivers.clone();
    *options.live.channel_depth.lock().expect("live lock") = Some(Box::new(move || watched.iter().map(|r| r.len()).sum()));
    let receivers: Arc<Mutex<Vec<Option<Receiver<Message>>>>> = Arc::new(Mutex::new(receivers.into_iter().map(Some).collect()));
    let reader_live = options.live.clone();
    let source_config = options.config.source.clone();
    let report_errors = options.process == 0;
    let inputs = options.inputs.clone();
    metrics.set(metrics::INPUT_BYTES, "", inputs.iter().filter_map(Input::len).sum::<u64>() as i64);
    metrics.set(metrics::CHANNEL_CAPACITY, "", (source_config.channel_capacity * workers) as i64);
    let epochs = EpochPolicy {
        records: options.config.run.epoch_records.max(1),
        max_age: Duration::from_millis(options.config.run.epoch_ms),
    };
    let reader = std::thread::Builder::new()
        .name("dupflow-reader".into())
        .spawn(move || {
            read_inputs(inputs, senders, first_worker, peers, source_config.max_record_bytes, report_errors, epochs, reader_live)
        })
        .map_err(|e| RunError::Timely(e.to_string()))?;
    let live = options.live.clone();

    let pipeline = options.config.clone();
    let guards = timely::execute(config, move |worker| {
        let index = worker.index();
        let receiver = receivers.lock().expect("receivers")[index - first_worker].take().expect("one receiver per worker");
        let collected: Rc<RefCell<Vec<(ClusterRow, u64, isize)>>> = Rc::new(RefCell::new(Vec::new()));
        let method = pipeline.method();
        let sentence = pipeline.sentence.clone();
        let metrics = metrics.clone();
        let live = live.clone();
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, documents) = scope.new_collection::<(PageMeta, String), isize>();
            let cap_metrics = metrics.clone();
            let strip_metrics = metrics.clone();
            let pages = documents
                .strip_html_timed(move |elapsed| {
                    strip_metrics.observe(metrics::STAGE_SECONDS, "strip", elapsed.as_secs_f64());
                    strip_metrics.inc(metrics::STAGE_PAGES, "strip");
                })
                .split_sentences(sentence, method.shingle_words(), move |elapsed, truncated, sentences| {
                    cap_metrics.observe(metrics::STAGE_SECONDS, "split", elapsed.as_secs_f64());
                    cap_metrics.inc(metrics::STAGE_PAGES, "split");
                    cap_metrics.add(metrics::SENTENCES, "", sentences as i64);
                    if truncated {
                        cap_metrics.inc(metrics::CAPS, "max_sentences_per_page");
                    }
                });
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
            let sink_live = live.clone();
            let (probe, _) = rows
                .consolidate()
                .inner
                .exchange(|_| 0)
                .inspect_core(move |event: Result<(_, &Vec<(ClusterRow, u64, isize)>), _>| {
                    if let Ok((_, updates)) = event {
                        sink_live.apply(updates);
                        sink.borrow_mut().extend_from_slice(updates);
                    }
                })
                .probe();
            (input, probe)
        });

        let max_page_bytes = pipeline.source.max_page_bytes as usize;
        let mut revisits = Vec::new();
        let mut epoch = 0u64;
        let mut completed = 0u64;
        // Epochs below `completed` are done at the sink: record their latency (worker 0).
        let note_progress = |probe: &timely::dataflow::operators::probe::Handle<u64>, completed: &mut u64, epoch: u64| {
            while !probe.less_than(&(*completed + 1)) && *completed < epoch {
                if index == 0 {
                    if let Some(closed) = live.epoch_closed.lock().expect("epochs").remove(completed) {
                        metrics.observe(metrics::EPOCH_SECONDS, "", closed.elapsed().as_secs_f64());
                    }
                    metrics.set(metrics::EPOCHS_DONE, "", *completed as i64 + 1);
                }
                *completed += 1;
            }
        };
        'feed: loop {
            let mut taken = 0;
            loop {
                match receiver.try_recv() {
                    Ok(Message::Record(record)) => {
                        if let Some(document) = to_document(&record, max_page_bytes, &metrics, &mut revisits) {
                            input.insert(document);
                        }
                        taken += 1;
                        if taken >= 64 {
                            break;
                        }
                    }
                    Ok(Message::Epoch(next)) => {
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
            note_progress(&probe, &mut completed, epoch);
        }
        epoch += 1;
        input.advance_to(epoch);
        input.flush();
        drop(input);
        while probe.less_than(&epoch) {
            worker.step_or_park(Some(Duration::from_millis(1)));
            note_progress(&probe, &mut completed, epoch);
        }
        note_progress(&probe, &mut completed, epoch);
        let changes = std::mem::take(&mut *collected.borrow_mut());
        (changes, revisits)
    })
    .map_err(RunError::Timely)?;

    let mut output = RunOutput::default();
    for result in guards.join() {
        let (changes, revisits) = result.map_err(RunError::Worker)?;
        output.changes.extend(changes);
        output.revisits.extend(revisits);
    }
    let _ = reader.join();
    output.changes.sort();
    output.revisits.sort_by(|a, b| (&a.url, &a.date).cmp(&(&b.url, &b.date)));
    output.elapsed = started.elapsed();
    Ok(output)
}
