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
    templates.inspect(move |(_, _, diff)| template_gauge.add(metrics::TEMPLATE_SENTENCES, "", *diff as i64));
    let sets = candidate_sets(pages, filtered.clone(), method, metrics.clone());
    let contents = filtered.map(|(id, page)| (id, page.content));
    let verify_metrics = metrics;
    sets.verify_clusters(contents, method.verify.clone(), method.candidates.max_set_pages, move |stats| {
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
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub inputs: Vec<Input>,
    pub config: PipelineConfig,
    /// Worker threads in this process.
    pub workers: usize,
    /// Timely cluster mode: number of processes, this one's index, and their addresses.
    pub processes: usize,
    pub process: usize,
    pub addresses: Vec<String>,
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
    End,
}

/// Reads all inputs on this thread, handing records to this process's workers round-robin over
/// all workers of all processes (each process reads everything and keeps its share).
fn read_inputs(
    inputs: Vec<Input>,
    senders: Vec<Sender<Message>>,
    first_worker: usize,
    peers: usize,
    max_record_bytes: u64,
    report_errors: bool,
    metrics: Arc<Registry>,
) {
    let mut index = 0usize;
    let mut printed = 0usize;
    for input in inputs {
        let name = input.name();
        let result = source::read_records(&input, max_record_bytes, |item| match item {
            Ok(record) => {
                let target = index % peers;
                index += 1;
                let Some(local) = target.checked_sub(first_worker).filter(|l| *l < senders.len()) else {
                    return;
                };
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
            Err(error) => {
                if report_errors {
                    metrics.inc(metrics::RECORD_ERRORS, error.kind.code());
                    if printed < 20 {
                        eprintln!("warning: {name}: skipped {error}");
                        printed += 1;
                    }
                }
            }
        });
        if let Err(error) = result {
            if report_errors {
                metrics.inc(metrics::RECORD_ERRORS, "open_failed");
                eprintln!("error: {error}");
            }
        }
    }
    if printed >= 20 && report_errors {
        eprintln!("warning: further skipped records are counted, not printed");
    }
    for sender in senders {
        let _ = sender.send(Message::End);
    }
}

/// Turns a record into a document for the dataflow (or counts why not).
fn to_document(record: &RawRecord, max_page_bytes: usize, metrics: &Registry, revisits: &mut Vec<Revisit>) -> Option<(PageMeta, String)> {
    match http::interpret(record, max_page_bytes) {
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
                    let meta = PageMeta {
                        id: PageId::new(doc.date_secs, &doc.url, &doc.record_id),
                        host: stable_hash(&doc.host),
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
pub fn run(options: RunOptions, metrics: Arc<Registry>) -> Result<RunOutput, RunError> {
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
    let receivers: Arc<Mutex<Vec<Option<Receiver<Message>>>>> = Arc::new(Mutex::new(receivers.into_iter().map(Some).collect()));
    let reader_metrics = metrics.clone();
    let source_config = options.config.source.clone();
    let report_errors = options.process == 0;
    let inputs = options.inputs.clone();
    let reader = std::thread::Builder::new()
        .name("dupflow-reader".into())
        .spawn(move || {
            read_inputs(inputs, senders, first_worker, peers, source_config.max_record_bytes, report_errors, reader_metrics)
        })
        .map_err(|e| RunError::Timely(e.to_string()))?;

    let pipeline = options.config.clone();
    let guards = timely::execute(config, move |worker| {
        let index = worker.index();
        let receiver = receivers.lock().expect("receivers")[index - first_worker].take().expect("one receiver per worker");
        let collected: Rc<RefCell<Vec<(ClusterRow, u64, isize)>>> = Rc::new(RefCell::new(Vec::new()));
        let method = pipeline.method();
        let sentence = pipeline.sentence.clone();
        let metrics = metrics.clone();
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, documents) = scope.new_collection::<(PageMeta, String), isize>();
            let cap_metrics = metrics.clone();
            let pages = documents
                .strip_html()
                .split_sentences(sentence, method.shingle_words(), move || cap_metrics.inc(metrics::CAPS, "max_sentences_per_page"));
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
                .inspect(move |update: &(ClusterRow, u64, isize)| sink.borrow_mut().push(update.clone()))
                .probe();
            (input, probe)
        });

        let max_page_bytes = pipeline.source.max_page_bytes as usize;
        let mut revisits = Vec::new();
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
        }
        input.advance_to(1);
        input.flush();
        drop(input);
        while probe.less_than(&1) {
            worker.step_or_park(Some(Duration::from_millis(1)));
        }
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
