//! The worker loop: records from the reader → pages (HTTP, strip, split) → changes to the
//! input collection (re-crawls, deletions, retention); stepping the dataflow; completed epochs
//! to the sink (worker 0 of process 0) and checkpoints.
//!
//! Workers poll their channel with `try_recv` and `step_or_park`, so a worker never blocks on
//! input while the dataflow has work.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, TryRecvError};
use differential_dataflow::input::{Input as _, InputSession};
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::{Exchange, Inspect, Probe};
use timely::worker::Worker;

use dupflow_operators::reference::MethodConfig;
use dupflow_operators::sentence::{SentenceConfig, Shingling};
use dupflow_operators::share::Shared;
use dupflow_operators::{Page, PageId, PageMeta};

use super::graph::clusters_and_shares;
use crate::checkpoint::{self, Manifest};
use crate::config::PipelineConfig;
use crate::metrics::live::Live;
use crate::metrics::{self, Registry};
use crate::sink::stream::Sink;
use crate::source::current::{self, Change, CurrentPages};
use crate::source::http::{self, Outcome, Revisit};
use crate::source::reader::Message;
use crate::source::text::TextDoc;
use crate::source::RawRecord;
use crate::types::{ClusterRow, RunError};

/// What every worker of a process shares: the configuration, the edges and the channels.
pub(super) struct Context {
    pub pipeline: PipelineConfig,
    pub metrics: Arc<Registry>,
    pub live: Arc<Live>,
    pub out: Option<PathBuf>,
    pub checkpoint: Option<PathBuf>,
    /// The checkpoint resumed from.
    pub restore: Option<Manifest>,
    /// Workers in the whole cluster, and the index of this process's first.
    pub peers: usize,
    pub first_worker: usize,
    /// Process 0: its worker 0 is the sink.
    pub sink_process: bool,
    /// One receiver per worker of this process, taken by its worker.
    pub receivers: Mutex<Vec<Option<Receiver<Message>>>>,
}

/// What a worker hands back when the feed is done.
pub(super) struct Finished {
    pub rows: Vec<ClusterRow>,
    pub shares: Vec<(PageId, Shared)>,
    pub revisits: Vec<Revisit>,
    pub held_bytes: usize,
    pub epochs: u64,
}

/// Updates as timely delivers them: (data, time, diff).
type Updates<D> = Vec<(D, u64, isize)>;
type Pages = InputSession<u64, (PageId, Page), isize>;

/// The graph's outputs as they reach worker 0 (the sink takes them epoch by epoch).
struct Collected {
    rows: Rc<RefCell<Updates<ClusterRow>>>,
    shares: Rc<RefCell<Updates<(PageId, Shared)>>>,
}

/// One worker: its share of the records in, the dataflow stepped, the sink fed.
pub(super) fn work(worker: &mut Worker, cx: &Context) -> Result<Finished, RunError> {
    let index = worker.index();
    let receiver = cx.receivers.lock().expect("receivers")[index - cx.first_worker].take().expect("one receiver per worker");
    let method = cx.pipeline.method();
    let (mut input, probe, collected) = build(worker, cx, &method);
    let sink = if index == 0 && cx.sink_process {
        Some(Sink::new(cx.out.clone(), cx.restore.as_ref(), cx.checkpoint.clone(), cx.peers, cx.live.clone())?)
    } else {
        None
    };
    let mut ingest = Ingest::new(cx, index, method.shingling());
    ingest.restore(&mut input)?;
    let start = cx.restore.as_ref().map_or(0, |m| m.epoch);
    let mut progress = Progress { cx, collected, sink, epoch: start, completed: start, checkpoints: Vec::new() };
    while let Some(taken) = receive(&receiver, &mut ingest, &mut input, &mut progress)? {
        if taken == 0 {
            worker.step_or_park(Some(Duration::from_millis(1)));
        } else {
            input.flush();
            worker.step();
        }
        progress.note(&probe)?;
    }
    // The feed is done: close the last epoch and drain the dataflow.
    progress.epoch += 1;
    input.advance_to(progress.epoch);
    input.flush();
    drop(input);
    while probe.less_than(&progress.epoch) {
        worker.step_or_park(Some(Duration::from_millis(1)));
        progress.note(&probe)?;
    }
    progress.note(&probe)?;
    let sink = progress.sink.as_ref();
    Ok(Finished {
        rows: sink.map(Sink::final_rows).unwrap_or_default(),
        shares: sink.map(Sink::final_shares).unwrap_or_default(),
        revisits: ingest.revisits,
        held_bytes: ingest.pages.bytes(),
        epochs: progress.epoch,
    })
}

/// The dataflow of one worker: the graph on the input pages, its rows and shares gathered at
/// worker 0.
fn build(worker: &mut Worker, cx: &Context, method: &MethodConfig) -> (Pages, Handle<u64>, Collected) {
    let collected = Collected { rows: Rc::default(), shares: Rc::default() };
    let (rows_sink, shares_sink) = (collected.rows.clone(), collected.shares.clone());
    let (metrics, share) = (cx.metrics.clone(), cx.pipeline.share.enabled);
    let (input, probe) = worker.dataflow::<u64, _, _>(|scope| {
        // Pages enter compact (stripped and split in the worker loop): the worker keeps them to
        // retract on re-crawl, deletion or retention.
        let (input, pages) = scope.new_collection::<(PageId, Page), isize>();
        let (assignments, shares) = clusters_and_shares(pages.clone(), method, metrics, share);
        let rows = pages.map(|(id, page)| (id, (page.url, page.record_id))).join_map(assignments, |&page, (url, record_id), assignment| {
            ClusterRow { page, url: url.clone(), record_id: record_id.clone(), assignment: *assignment }
        });
        let (probe, _) = rows
            .consolidate()
            .inner
            .exchange(|_| 0)
            .inspect_core(move |event: Result<(_, &Updates<ClusterRow>), _>| {
                if let Ok((_, updates)) = event {
                    rows_sink.borrow_mut().extend_from_slice(updates);
                }
            })
            .probe();
        if let Some(shares) = shares {
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
    (input, probe, collected)
}

/// Takes what the channel holds now (at most 64 records, up to an epoch mark) into the input.
/// `None` once the feed has ended.
fn receive(
    receiver: &Receiver<Message>,
    ingest: &mut Ingest,
    input: &mut Pages,
    progress: &mut Progress,
) -> Result<Option<usize>, RunError> {
    let mut taken = 0;
    loop {
        match receiver.try_recv() {
            Ok(Message::Record(record)) => {
                ingest.record(input, &record);
                taken += 1;
                if taken >= 64 {
                    return Ok(Some(taken));
                }
            }
            Ok(Message::Text(doc)) => {
                ingest.text(input, &doc);
                taken += 1;
                if taken >= 64 {
                    return Ok(Some(taken));
                }
            }
            Ok(Message::Delete(url, as_of)) => {
                ingest.delete(input, &url, as_of);
                taken += 1;
            }
            Ok(Message::Epoch { next, expire_before, checkpoint }) => {
                ingest.close_epoch(input, next, expire_before, checkpoint)?;
                if checkpoint {
                    progress.checkpoints.push(next);
                }
                progress.epoch = next;
                return Ok(Some(taken + 1));
            }
            Ok(Message::End) | Err(TryRecvError::Disconnected) => return Ok(None),
            Err(TryRecvError::Empty) => return Ok(Some(taken)),
        }
    }
}

/// Records → pages → input changes: what a worker holds on the way in.
struct Ingest<'a> {
    cx: &'a Context,
    index: usize,
    pages: CurrentPages,
    sentence: SentenceConfig,
    shingling: Shingling,
    max_page_bytes: usize,
    /// Revisit records seen (reported, not clustered).
    revisits: Vec<Revisit>,
    /// Retention: captures dated before this are out of the window.
    expire_before: u64,
}

impl<'a> Ingest<'a> {
    fn new(cx: &'a Context, index: usize, shingling: Shingling) -> Self {
        Ingest {
            cx,
            index,
            pages: CurrentPages::new(cx.pipeline.source.recrawls),
            sentence: cx.pipeline.sentence.clone(),
            shingling,
            max_page_bytes: cx.pipeline.source.max_page_bytes as usize,
            revisits: Vec::new(),
            expire_before: 0,
        }
    }

    /// Resume: this worker's share of the checkpoint's pages, as of its epoch (and worker 0
    /// every worker's revisits).
    fn restore(&mut self, input: &mut Pages) -> Result<(), RunError> {
        let (Some(manifest), Some(dir)) = (&self.cx.restore, &self.cx.checkpoint) else { return Ok(()) };
        let gate = self.cx.live.clone();
        checkpoint::restore_pages(dir, manifest, self.cx.peers, self.index, &mut self.pages, |pages, page| {
            if let Ok(changes) = pages.capture(page, 0) {
                apply(&gate, input, changes);
            }
        })?;
        input.advance_to(manifest.epoch);
        if self.index == 0 {
            self.revisits = checkpoint::restore_revisits(dir, manifest)?;
        }
        Ok(())
    }

    /// A record: decoded, stripped, split, and captured (inserted, or replacing its URL's page).
    fn record(&mut self, input: &mut Pages, record: &RawRecord) {
        let metrics = &self.cx.metrics;
        let Some((meta, html)) = to_document(record, self.max_page_bytes, metrics, &mut self.revisits) else { return };
        let page = self.page_of(meta, html);
        self.capture(input, page);
    }

    /// A text corpus row: split (no strip) and captured like a record's page.
    fn text(&mut self, input: &mut Pages, doc: &TextDoc) {
        let metrics = &self.cx.metrics;
        let (page, cut, capped) =
            metrics.stage("split", || crate::source::text::page_of(doc, &self.sentence, self.shingling, self.max_page_bytes));
        metrics.inc(metrics::PAGES, "");
        metrics.add(metrics::SENTENCES, "", page.sentences.len() as i64);
        if cut {
            metrics.inc(metrics::CAPS, "max_page_bytes");
        }
        if capped {
            metrics.inc(metrics::CAPS, "max_sentences_per_page");
        }
        self.capture(input, page);
    }

    /// A page in: inserted, or replacing its URL's (or id's) page.
    fn capture(&mut self, input: &mut Pages, page: Page) {
        let metrics = &self.cx.metrics;
        match self.pages.capture(page, self.expire_before) {
            Ok(changes) => {
                // A replacement retracts the old page and inserts the new.
                metrics.inc(metrics::PAGE_UPDATES, if changes.len() > 1 { "replaced" } else { "inserted" });
                apply(&self.cx.live, input, changes);
            }
            Err(current::Ignored::Superseded) => metrics.inc(metrics::PAGE_UPDATES, "superseded"),
            Err(current::Ignored::Expired) => metrics.inc(metrics::PAGE_UPDATES, "expired"),
            Err(current::Ignored::Deleted) => metrics.inc(metrics::PAGE_UPDATES, "after_deletion"),
        }
    }

    /// Strip and split: the first two stages, per record, on the worker that owns its URL.
    fn page_of(&self, meta: PageMeta, html: String) -> Page {
        let metrics = &self.cx.metrics;
        let stripped = metrics.stage("strip", || dupflow_operators::html::strip(&html));
        let (page, truncated) = metrics.stage("split", || {
            dupflow_operators::sentence::page_in(meta, &stripped.blocks, &self.sentence, self.shingling, stripped.lang.as_deref())
        });
        metrics.add(metrics::SENTENCES, "", page.sentences.len() as i64);
        if truncated {
            metrics.inc(metrics::CAPS, "max_sentences_per_page");
        }
        page
    }

    fn delete(&mut self, input: &mut Pages, url: &str, as_of: u64) {
        let changes = self.pages.delete(url, as_of);
        self.cx.metrics.add(metrics::PAGE_UPDATES, "deleted", changes.len() as i64);
        apply(&self.cx.live, input, changes);
    }

    /// An epoch mark: retention retires what fell out of the window, a checkpoint epoch saves
    /// this worker's part, and the input moves on to `next`.
    fn close_epoch(&mut self, input: &mut Pages, next: u64, expire_before: u64, save: bool) -> Result<(), RunError> {
        self.expire_before = expire_before;
        if expire_before > 0 {
            let changes = self.pages.expire(expire_before);
            self.cx.metrics.add(metrics::PAGE_UPDATES, "retired", changes.len() as i64);
            apply(&self.cx.live, input, changes);
        }
        if let (true, Some(dir)) = (save, &self.cx.checkpoint) {
            checkpoint::save_part(dir, next, self.index, &self.pages, &self.revisits)?;
        }
        input.advance_to(next);
        Ok(())
    }
}

/// Changes to the input collection, and to the check gate's index when one is served.
fn apply(live: &Live, input: &mut Pages, changes: Vec<Change>) {
    if let Some(gate) = live.gate.lock().expect("gate").as_mut() {
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
}

/// Turns a record into a document for the dataflow (or counts why not).
fn to_document(record: &RawRecord, max_page_bytes: usize, metrics: &Registry, revisits: &mut Vec<Revisit>) -> Option<(PageMeta, String)> {
    let (outcome, quirks) = match metrics.timed("decode", || http::interpret(record, max_page_bytes)) {
        Ok(interpreted) => interpreted,
        Err(error) => {
            metrics.inc(metrics::DOCUMENT_ERRORS, error.code());
            return None;
        }
    };
    for (seen, quirk) in [
        (quirks.broken_chunking, "broken_chunking"),
        (quirks.content_encoding_mismatch, "content_encoding_mismatch"),
        (quirks.missing_date, "missing_date"),
    ] {
        if seen {
            metrics.inc(metrics::QUIRKS, quirk);
        }
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

/// Completed epochs: worker 0 writes them through the sink and commits checkpoints.
struct Progress<'a> {
    cx: &'a Context,
    collected: Collected,
    sink: Option<Sink>,
    /// The input's current epoch.
    epoch: u64,
    /// Epochs below this are complete at the sink.
    completed: u64,
    /// Checkpoint epochs whose parts are saved, to commit once complete.
    checkpoints: Vec<u64>,
}

impl Progress<'_> {
    /// Epochs the probe has passed are done at the sink: write them, record their latency,
    /// commit the checkpoints they complete.
    fn note(&mut self, probe: &Handle<u64>) -> Result<(), RunError> {
        let before = self.completed;
        while !probe.less_than(&(self.completed + 1)) && self.completed < self.epoch {
            self.completed += 1;
        }
        let Some(sink) = &mut self.sink else { return Ok(()) };
        sink.accept(&std::mem::take(&mut *self.collected.rows.borrow_mut()));
        sink.accept_shares(&std::mem::take(&mut *self.collected.shares.borrow_mut()));
        // Epoch by epoch, so that a checkpoint records the change stream up to it.
        for e in before..self.completed {
            sink.flush_before(e + 1)?;
            if let Some(closed) = self.cx.live.epoch_closed.lock().expect("epochs").remove(&e) {
                self.cx.metrics.observe(metrics::EPOCH_SECONDS, "", closed.elapsed().as_secs_f64());
                tracing::debug!("epoch {e}: changes written {:.1} ms after its close", closed.elapsed().as_secs_f64() * 1e3);
            }
            while let Some(&c) = self.checkpoints.first() {
                if c > e + 1 {
                    break;
                }
                self.checkpoints.remove(0);
                sink.commit_checkpoint(c)?;
            }
        }
        self.cx.metrics.set(metrics::EPOCHS_DONE, "", self.completed as i64);
        Ok(())
    }
}
