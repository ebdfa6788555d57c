//! The worker loop: records from this process's reader → pages (HTTP, strip, split, where
//! they were read) → the worker that owns their URL (timely's exchange, across processes: a
//! compact page, not the record) → changes to the input collection (re-crawls, deletions,
//! retention); stepping the dataflow; completed epochs to the sink (the first worker of each
//! process, one shard each) and checkpoints.
//!
//! An owner applies what it receives only once the epoch is complete everywhere, in a fixed
//! order (end-of-epoch actions last, then by reader and the order it read them), so the input
//! changes depend neither on how the network interleaved them nor on which worker parsed them.
//! Workers poll their channel with `try_recv` and `step_or_park`, so a worker never blocks on
//! input while the dataflow has work.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, TryRecvError};
use differential_dataflow::input::{Input as _, InputSession};
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::operator::Operator as _;
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::{Concatenate as _, Exchange, Input as _, Inspect, Probe};
use timely::dataflow::InputHandle;
use timely::progress::Antichain;
use timely::worker::Worker;

use dupflow_operators::cluster::rows::join_by_page;
use dupflow_operators::cluster::share::Shared;
use dupflow_operators::graph::clusters_and_shares;
use dupflow_operators::ingest::sentence::Shingling;
use dupflow_operators::MethodConfig;
use dupflow_operators::{Page, PageId, PageMeta};

use crate::checkpoint::{self, Manifest};
use crate::config::PipelineConfig;
use crate::metrics::live::Live;
use crate::metrics::{self, Registry};
use crate::sink::stream::Sink;
use crate::source::current::{self, Change, CurrentPages};
use crate::source::http::Revisit;
use crate::source::ingest::{count_long_sentences, document};
use crate::source::reader::{EpochClock, Message};
use crate::source::text::TextDoc;
use crate::source::urls::UrlIdentity;
use crate::source::RawRecord;
use crate::types::{ClusterRow, RunError};
use dupflow_operators::run::Runtime;

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
    /// Processes in the cluster: each one's first worker is the sink of one shard of the rows.
    pub processes: usize,
    /// For each worker of this process, one receiver from each of its reader threads.
    pub receivers: Mutex<Vec<Option<Vec<Receiver<Message>>>>>,
    /// Readers in the whole run (processes × reader threads).
    pub readers: usize,
    /// When the first worker of this process started (after the cluster connected).
    pub workers_started: std::sync::OnceLock<std::time::Instant>,
    /// Workers of this process whose work has returned.
    pub workers_done: std::sync::atomic::AtomicUsize,
    /// The run's failure: a worker raises it with its error and leaves when another did.
    pub abort: Arc<super::abort::Abort>,
    /// The run's stores, spill and footprint (its dataflows take it from their workers'
    /// configuration).
    pub runtime: Arc<Runtime>,
    /// The run's epoch clock, shared with its readers.
    pub clock: Arc<EpochClock>,
}

impl Context {
    /// The outputs this process writes.
    pub(super) fn shard(&self) -> crate::sink::Shard {
        let per_process = (self.peers / self.processes.max(1)).max(1);
        crate::sink::Shard { index: self.first_worker / per_process, count: self.processes.max(1) }
    }
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

/// The graph's outputs as they reach a sink (it takes them epoch by epoch).
struct Collected {
    rows: Rc<RefCell<Updates<ClusterRow>>>,
    shares: Rc<RefCell<Updates<(PageId, Shared)>>>,
    /// A cluster's clusters by size ((size, clusters)), at worker 0: process 0's totals.
    sizes: Rc<RefCell<Updates<(i64, i64)>>>,
}

/// One worker: its share of the records in, the dataflow stepped, the sink fed.
pub(super) fn work(worker: &mut Worker, cx: &Context) -> Result<Finished, RunError> {
    let index = worker.index();
    cx.workers_started.get_or_init(std::time::Instant::now);
    let receivers = cx.receivers.lock().expect("receivers")[index - cx.first_worker]
        .take()
        .expect("receivers for every worker");
    let method = cx.pipeline.method();
    let (mut input, probe, collected, mut transport) = build(worker, cx, &method, receivers.len());
    let sink = if index == cx.first_worker {
        let checkpoint =
            cx.checkpoint.clone().map(|dir| (dir, crate::checkpoint::Provenance::of(&cx.pipeline)));
        Some(Sink::new(
            cx.out.clone(),
            cx.restore.as_ref(),
            checkpoint,
            cx.peers,
            cx.live.clone(),
            cx.shard(),
            cx.readers,
        )?)
    } else {
        None
    };
    let mut intake = Intake::new(cx, index, method.shingling());
    intake.restore(&mut input)?;
    let start = cx.restore.as_ref().map_or(0, |m| m.epoch);
    for handle in transport.inputs.iter_mut().flatten() {
        handle.advance_to(start);
    }
    cx.clock.complete_below(start);
    let mut progress =
        Completion { cx, collected, sink, epoch: start, completed: start, checkpoints: Vec::new() };
    loop {
        if cx.abort.raised() {
            return Err(RunError::StoppedByFailure);
        }
        let mut taken = 0;
        for (reader, receiver) in receivers.iter().enumerate() {
            if transport.inputs[reader].is_some() {
                taken += receive(
                    receiver,
                    reader,
                    &mut intake,
                    &mut transport,
                    index == cx.first_worker,
                )?;
            }
        }
        if taken == 0 {
            worker.step_or_park(Some(Duration::from_millis(1)));
        } else {
            worker.step();
        }
        let done = intake.apply_complete(&mut transport, &mut input, &mut progress)?;
        input.flush();
        progress.note(&probe)?;
        if done {
            break;
        }
    }
    // Every epoch is in: close the input and drain the dataflow. Other workers' last updates
    // may sit at a later epoch than this worker's last (the frontier went from their epoch
    // straight to empty): once drained, the sink writes through the latest epoch it holds.
    drop(input);
    while !probe.with_frontier(|frontier| frontier.is_empty()) {
        if cx.abort.raised() {
            return Err(RunError::StoppedByFailure);
        }
        worker.step_or_park(Some(Duration::from_millis(1)));
        progress.note(&probe)?;
    }
    if let Some(end) = progress.sink.as_ref().and_then(Sink::pending_end) {
        progress.epoch = progress.epoch.max(end);
    }
    // The last checkpoint may lie past the last epoch with items (a stopping reader closes its
    // last epoch to just after the next template refresh): the epochs up to it are complete.
    if let Some(&last) = progress.checkpoints.last() {
        progress.epoch = progress.epoch.max(last);
    }
    progress.note(&probe)?;
    // Process 0 of a cluster commits the last checkpoint once the others' shares are on disk.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while progress.sink.as_ref().is_some_and(|s| s.uncommitted() > 0)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
        progress.note(&probe)?;
    }
    // The change stream is whole where the run ends: its file is still the one written.
    if let Some(sink) = &progress.sink {
        sink.check_changes_file()?;
    }
    let sink = progress.sink.as_ref();
    Ok(Finished {
        rows: sink.map(Sink::final_rows).unwrap_or_default(),
        shares: sink.map(Sink::final_shares).unwrap_or_default(),
        revisits: intake.revisits,
        held_bytes: intake.pages.bytes(),
        epochs: progress.epoch,
    })
}

/// An input item on its way to the worker that owns it.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Routed {
    /// A page of a record or a text row, parsed where it was read.
    Page(Box<Page>),
    /// Retract the URL's pages (captures dated up to the second field stay out).
    Delete(String, u64),
    /// End of an epoch, sent to every worker: retention's clock (pages crawled before it leave).
    Retire(u64),
    /// End of an epoch, sent to every worker: save the held pages as of this next epoch (once
    /// every epoch before it is applied).
    Checkpoint(u64),
}

impl Routed {
    /// Within an epoch, pages and deletions come first and end-of-epoch actions last.
    fn rank(&self) -> u8 {
        matches!(self, Routed::Retire(_) | Routed::Checkpoint(_)) as u8
    }
}

/// (owner, reader, the reader's sequence number, item): the owner applies an epoch's items in
/// the order of their readers' sequences, whichever worker parsed them.
type Envelope = (u64, u64, u64, Routed);

/// The exchange of input items: what this worker sends, and what it owns as it arrives.
struct Transport {
    /// One input per reader thread of this process, each at its reader's epoch; closed (`None`)
    /// once that reader has ended.
    inputs: Vec<Option<InputHandle<u64, CapacityContainerBuilder<Vec<Envelope>>>>>,
    /// Items received, by epoch, not yet applied.
    received: Rc<RefCell<BTreeMap<u64, Vec<Envelope>>>>,
    /// Epochs before this frontier are received whole (empty: every sender is done).
    frontier: Rc<RefCell<Antichain<u64>>>,
    peers: u64,
    /// How a page's URL is keyed to its owner (`[urls]`): aliases meet at one worker.
    identity: UrlIdentity,
    /// The run-wide index of this process's first reader thread.
    first_reader: u64,
}

impl Transport {
    /// Through reader `reader`'s input, at its epoch; ordered at the owner by (that reader,
    /// `seq`).
    fn send(&mut self, reader: usize, seq: u64, owner: u64, item: Routed) {
        let source = self.first_reader + reader as u64;
        let input = self.inputs[reader].as_mut().expect("sending on an open input");
        input.send((owner, source, seq, item));
    }

    /// To the worker that owns `key` (a page's URL: a text row's id).
    fn route(&mut self, reader: usize, seq: u64, key: &str, item: Routed) {
        let owner = self.identity.key(key) % self.peers;
        self.send(reader, seq, owner, item);
    }

    /// End-of-epoch actions, from one worker of the process (they come last in their epoch).
    fn broadcast(&mut self, reader: usize, item: Routed) {
        for owner in 0..self.peers {
            self.send(reader, 0, owner, item.clone());
        }
    }

    /// Every reader of this process has ended.
    fn closed(&self) -> bool {
        self.inputs.iter().all(Option::is_none)
    }
}

/// The dataflow of one worker: the exchange of input items, the graph on the input pages, its
/// rows gathered at their shard's sink (by cluster) and shares at process 0's.
fn build(
    worker: &mut Worker,
    cx: &Context,
    method: &MethodConfig,
    readers: usize,
) -> (Pages, Handle<u64>, Collected, Transport) {
    let collected = Collected { rows: Rc::default(), shares: Rc::default(), sizes: Rc::default() };
    let (rows_sink, shares_sink, sizes_sink) =
        (collected.rows.clone(), collected.shares.clone(), collected.sizes.clone());
    let (metrics, share) = (cx.metrics.clone(), cx.pipeline.share.enabled);
    let (received, frontier) = (
        Rc::<RefCell<BTreeMap<u64, Vec<Envelope>>>>::default(),
        Rc::new(RefCell::new(Antichain::from_elem(0))),
    );
    let (into, seen) = (received.clone(), frontier.clone());
    let per_process = (cx.peers / cx.processes.max(1)).max(1) as u64;
    let shards = cx.processes.max(1) as u64;
    metrics::arrangements::enable(worker, cx.metrics.clone());
    let (handles, input, probe) = worker.dataflow::<u64, _, _>(|scope| {
        // Input items to their owners; taken whole (no copy) and applied by the worker loop once
        // their epoch is complete. One input per reader thread: each follows its reader's epochs.
        let (handles, streams): (Vec<_>, Vec<_>) =
            (0..readers.max(1)).map(|_| scope.new_input::<Vec<Envelope>>()).unzip();
        scope.concatenate(streams).exchange(|envelope: &Envelope| envelope.0).sink(
            Pipeline,
            "Owners",
            move |(input, frontier)| {
                let mut received = into.borrow_mut();
                input.for_each(|stamp, data| {
                    if let Some(time) = stamp.least() {
                        received.entry(*time).or_default().append(data);
                    }
                });
                *seen.borrow_mut() = frontier.frontier().to_owned();
            },
        );
        // Pages enter compact (stripped and split in the worker loop): the worker keeps them to
        // retract on re-crawl, deletion or retention.
        let (input, pages) = scope.new_collection::<(PageId, Page), isize>();
        let (assignments, shares) = clusters_and_shares(pages.clone(), method, metrics, share);
        // Each page's row: its URL and record id beside its assignment (a hash-map entry a page,
        // not a join's two arrangements).
        let urls = pages.map(|(id, page)| (id, (page.url, page.record_id)));
        let rows = join_by_page(urls, assignments, "Rows", |page, (url, record_id), assignment| {
            ClusterRow {
                page,
                url: url.clone(),
                record_id: record_id.clone(),
                assignment: *assignment,
            }
        });
        // A cluster's totals for process 0: clusters by size, a collection as small as the
        // number of distinct sizes (each shard's sink sees only its own clusters).
        let sizes = (shards > 1).then(|| {
            rows.clone()
                .map(|row| row.assignment.cluster)
                .count()
                .map(|(_, size)| size as i64)
                .count()
        });
        let probe = Handle::new();
        let shard = move |row: &ClusterRow| (row.assignment.cluster.hash % shards) * per_process;
        gather(rows.consolidate(), shard, rows_sink, &probe);
        if let Some(sizes) = sizes {
            let sizes = sizes.map(|(size, clusters)| (size, clusters as i64));
            gather(sizes, |_| 0, sizes_sink, &probe);
        }
        if let Some(shares) = shares {
            gather(shares.consolidate(), |_| 0, shares_sink, &probe);
        }
        (handles, input, probe)
    });
    let first_reader = (cx.first_worker as u64 / per_process) * handles.len() as u64;
    let inputs = handles.into_iter().map(Some).collect();
    let identity = UrlIdentity::new(&cx.pipeline.urls);
    let peers = cx.peers as u64;
    let transport = Transport { inputs, received, frontier, peers, identity, first_reader };
    (input, probe, collected, transport)
}

/// Sends each of `updates` to the worker `to` names, where it is appended to `sink`; `probe`
/// tells when a time's updates are all there.
fn gather<D>(
    updates: VecCollection<'_, u64, D, isize>,
    to: impl Fn(&D) -> u64 + 'static,
    sink: Rc<RefCell<Updates<D>>>,
    probe: &Handle<u64>,
) where
    D: timely::ExchangeData + Clone,
{
    updates
        .inner
        .exchange(move |(datum, _, _): &(D, u64, isize)| to(datum))
        .inspect_core(move |event: Result<(_, &Updates<D>), _>| {
            if let Ok((_, updates)) = event {
                sink.borrow_mut().extend_from_slice(updates);
            }
        })
        .probe_with(probe);
}

/// Parses what the channel holds now (at most 64 records, up to an epoch mark) and sends the
/// pages to their owners; returns how many messages it took. The process's first worker
/// (`speaker`) passes the reader's end-of-epoch actions to every worker. The channel's end
/// closes the transport.
fn receive(
    receiver: &Receiver<Message>,
    reader: usize,
    intake: &mut Intake,
    transport: &mut Transport,
    speaker: bool,
) -> Result<usize, RunError> {
    let mut taken = 0;
    loop {
        match receiver.try_recv() {
            Ok(Message::Record(seq, record)) => {
                if let Some(page) = intake.record(&record) {
                    transport.route(reader, seq, &page.url.clone(), Routed::Page(Box::new(page)));
                }
                taken += 1;
                if taken >= 64 {
                    return Ok(taken);
                }
            }
            Ok(Message::Text(seq, doc)) => {
                let page = intake.text(&doc);
                transport.route(reader, seq, &page.url.clone(), Routed::Page(Box::new(page)));
                taken += 1;
                if taken >= 64 {
                    return Ok(taken);
                }
            }
            Ok(Message::Delete(seq, url, as_of)) => {
                transport.route(reader, seq, &url.clone(), Routed::Delete(url, as_of));
                taken += 1;
            }
            Ok(Message::Epoch { next, expire_before, checkpoint }) => {
                if speaker && expire_before > 0 {
                    transport.broadcast(reader, Routed::Retire(expire_before));
                }
                if speaker && checkpoint {
                    transport.broadcast(reader, Routed::Checkpoint(next));
                }
                if let Some(input) = transport.inputs[reader].as_mut() {
                    input.advance_to(next);
                    input.flush();
                }
                return Ok(taken + 1);
            }
            Ok(Message::End) | Err(TryRecvError::Disconnected) => {
                transport.inputs[reader] = None;
                return Ok(taken + 1);
            }
            Err(TryRecvError::Empty) => {
                if let Some(input) = transport.inputs[reader].as_mut() {
                    input.flush();
                }
                return Ok(taken);
            }
        }
    }
}

/// Records → pages → input changes: what a worker holds on the way in.
struct Intake<'a> {
    cx: &'a Context,
    index: usize,
    pages: CurrentPages,
    /// How a record or a text row becomes a page.
    make: crate::source::ingest::Ingest,
    /// Revisit records seen (reported, not clustered).
    revisits: Vec<Revisit>,
    /// Retention: captures dated before this are out of the window.
    expire_before: u64,
    /// The last checkpoint epoch this worker saved its part for.
    saved: u64,
    /// Fault injection for the fault-table tests (`DUPFLOW_FAULT=panic-after-pages:N`, read
    /// in test builds only): the worker panics at its N-th page.
    panic_after: Option<u64>,
    captured: u64,
    /// Checkpoint epochs marked but not yet saved: a mark travels at the marking reader's epoch,
    /// which may lie well before the checkpoint's (that reader jumped to the cluster's epoch),
    /// so the part is saved only once every epoch before the checkpoint's is applied, and
    /// nothing at or after it.
    marked: std::collections::BTreeSet<u64>,
}

/// The page at which a worker panics, for the fault-table tests: `DUPFLOW_FAULT=
/// panic-after-pages:N`, read only in a build with the `testing` feature (the crate's tests).
#[cfg(feature = "testing")]
fn injected_panic() -> Option<u64> {
    std::env::var("DUPFLOW_FAULT")
        .ok()
        .and_then(|fault| fault.strip_prefix("panic-after-pages:").and_then(|n| n.parse().ok()))
}

/// Builds for use inject no fault.
#[cfg(not(feature = "testing"))]
fn injected_panic() -> Option<u64> {
    None
}

impl<'a> Intake<'a> {
    fn new(cx: &'a Context, index: usize, shingling: Shingling) -> Self {
        Intake {
            cx,
            index,
            pages: CurrentPages::with_store(
                cx.pipeline.source.recrawls,
                UrlIdentity::new(&cx.pipeline.urls),
                cx.runtime.pages.clone(),
            ),
            make: crate::source::ingest::Ingest {
                sentence: cx.pipeline.sentence.clone(),
                shingling,
                max_page_bytes: cx.pipeline.source.max_page_bytes as usize,
            },
            revisits: Vec::new(),
            expire_before: 0,
            saved: cx.restore.as_ref().map_or(0, |m| m.epoch),
            panic_after: injected_panic(),
            captured: 0,
            marked: Default::default(),
        }
    }

    /// Resume: this worker's share of the checkpoint's pages, as of its epoch (and worker 0
    /// every worker's revisits).
    fn restore(&mut self, input: &mut Pages) -> Result<(), RunError> {
        let (Some(manifest), Some(dir)) = (&self.cx.restore, &self.cx.checkpoint) else {
            return Ok(());
        };
        let (gate, runtime) = (self.cx.live.clone(), self.cx.runtime.clone());
        checkpoint::restore_pages(
            dir,
            manifest,
            self.cx.peers,
            self.index,
            &mut self.pages,
            |pages, mut page| {
                runtime.keep_words(&mut page);
                if let Ok(changes) = pages.capture(page, 0) {
                    apply(&gate, input, changes);
                }
            },
        )?;
        input.advance_to(manifest.epoch);
        self.revisits = checkpoint::restore_revisits(dir, manifest, self.cx.peers, self.index)?;
        Ok(())
    }

    /// A record: decoded, stripped and split into its page (a revisit is kept, other records
    /// are counted by why they hold no page).
    fn record(&mut self, record: &RawRecord) -> Option<Page> {
        let metrics = &self.cx.metrics;
        let (meta, html) = document(record, self.make.max_page_bytes, metrics, &mut self.revisits)?;
        Some(self.page_of(meta, &html))
    }

    /// A text corpus row: split (no strip), to be captured like a record's page.
    fn text(&mut self, doc: &TextDoc) -> Page {
        let metrics = &self.cx.metrics;
        let (page, cut, capped) = metrics.stage("split", || self.make.text(doc));
        metrics.inc(metrics::PAGES, "");
        metrics.add(metrics::SENTENCES, "", page.sentences.len() as i64);
        if cut {
            metrics.inc(metrics::CAPS, "max_page_bytes");
        }
        if capped {
            metrics.inc(metrics::CAPS, "max_sentences_per_page");
        }
        count_long_sentences(metrics, &page);
        self.kept(page)
    }

    /// `page`, its words in the run's word store (if any) from now on: while it waits for its
    /// epoch to complete and while it is held.
    fn kept(&self, mut page: Page) -> Page {
        self.cx.runtime.keep_words(&mut page);
        page
    }

    /// A page in: inserted, or replacing its URL's (or id's) page. A page from another process
    /// comes with its words in memory: they go to the run's word store here, where it is held.
    fn capture(&mut self, input: &mut Pages, page: Page) {
        let page = self.kept(page);
        self.captured += 1;
        if self.panic_after.is_some_and(|n| self.captured >= n) {
            panic!("injected fault: DUPFLOW_FAULT=panic-after-pages at page {}", self.captured);
        }
        let metrics = &self.cx.metrics;
        let aliases = self.pages.aliases();
        let captured = self.pages.capture(page, self.expire_before);
        if self.pages.aliases() > aliases {
            metrics.inc(metrics::URL_ALIASES, "");
        }
        match captured {
            Ok(changes) => {
                // A replacement retracts the old page and inserts the new.
                metrics.inc(
                    metrics::PAGE_UPDATES,
                    if changes.len() > 1 { "replaced" } else { "inserted" },
                );
                apply(&self.cx.live, input, changes);
            }
            Err(current::Ignored::Superseded) => metrics.inc(metrics::PAGE_UPDATES, "superseded"),
            Err(current::Ignored::Expired) => metrics.inc(metrics::PAGE_UPDATES, "expired"),
            Err(current::Ignored::Deleted) => metrics.inc(metrics::PAGE_UPDATES, "after_deletion"),
        }
    }

    /// Strip and split: the first two stages, per record, on a worker of the process that read it.
    fn page_of(&self, meta: PageMeta, html: &str) -> Page {
        let metrics = &self.cx.metrics;
        let made = self.make.html(meta, html, Some(metrics));
        let (page, truncated) = (made.page, made.capped);
        metrics.add(metrics::SENTENCES, "", page.sentences.len() as i64);
        if truncated {
            metrics.inc(metrics::CAPS, "max_sentences_per_page");
        }
        if made.depth_capped {
            metrics.inc(metrics::CAPS, "max_nesting_depth");
        }
        count_long_sentences(metrics, &page);
        self.kept(page)
    }

    fn delete(&mut self, input: &mut Pages, url: &str, as_of: u64) {
        let changes = self.pages.delete(url, as_of);
        self.cx.metrics.add(metrics::PAGE_UPDATES, "deleted", changes.len() as i64);
        apply(&self.cx.live, input, changes);
    }

    /// Applies every epoch the transport has received whole, oldest first, and moves the input
    /// to the transport's frontier. True once every sender is done and all is applied.
    fn apply_complete(
        &mut self,
        transport: &mut Transport,
        input: &mut Pages,
        progress: &mut Completion,
    ) -> Result<bool, RunError> {
        let bound = transport.frontier.borrow().first().copied();
        let received = transport.received.borrow();
        if let Some(latest) = received.keys().next_back() {
            self.cx.clock.received(*latest);
        }
        let complete: Vec<u64> =
            received.keys().copied().take_while(|t| bound.is_none_or(|b| *t < b)).collect();
        drop(received);
        for time in complete {
            // Every epoch before `time` is applied, none after it: the checkpoints up to it
            // hold exactly their epochs' items (no item lies between them and `time`).
            self.save_marked(Some(time), progress)?;
            let mut items = transport.received.borrow_mut().remove(&time).unwrap_or_default();
            items.sort_by_key(|(_, source, sent, item)| (item.rank(), *source, *sent));
            input.advance_to(time);
            progress.epoch = progress.epoch.max(time + 1);
            for (_, _, _, item) in items {
                match item {
                    Routed::Page(page) => self.capture(input, *page),
                    Routed::Delete(url, as_of) => self.delete(input, &url, as_of),
                    Routed::Retire(before) => self.retire(input, before),
                    Routed::Checkpoint(next) => {
                        self.marked.insert(next);
                    }
                }
            }
        }
        // Every epoch before the transport's frontier is applied (all of them once it is empty).
        self.save_marked(bound, progress)?;
        if let Some(bound) = bound {
            progress.epoch = progress.epoch.max(bound);
        }
        input.advance_to(progress.epoch);
        Ok(bound.is_none() && transport.closed())
    }

    /// End of an epoch: retention retires what fell out of the window.
    fn retire(&mut self, input: &mut Pages, expire_before: u64) {
        if expire_before <= self.expire_before {
            return;
        }
        self.expire_before = expire_before;
        let changes = self.pages.expire(expire_before);
        self.cx.metrics.add(metrics::PAGE_UPDATES, "retired", changes.len() as i64);
        apply(&self.cx.live, input, changes);
    }

    /// The marked checkpoints at or before `applied` (every epoch before it is applied and none
    /// at or after it; `None`: every epoch is): this worker's part (held pages, revisits) as of
    /// each, saved once however many readers marked it; the sink commits it when the epoch is
    /// complete. Marks past `applied` wait for the epochs before them.
    fn save_marked(
        &mut self,
        applied: Option<u64>,
        progress: &mut Completion,
    ) -> Result<(), RunError> {
        while let Some(&next) = self.marked.first() {
            if applied.is_some_and(|applied| next > applied) {
                break;
            }
            self.marked.remove(&next);
            let Some(dir) = &self.cx.checkpoint else { continue };
            if next <= self.saved {
                continue;
            }
            checkpoint::save_part(dir, next, self.index, &self.pages, &self.revisits)?;
            self.saved = next;
            if progress.sink.is_some() {
                progress.checkpoints.push(next);
            }
        }
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

/// Completed epochs: worker 0 writes them through the sink and commits checkpoints.
struct Completion<'a> {
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

impl Completion<'_> {
    /// Epochs the probe has passed are done at the sink: write them, record their latency,
    /// commit the checkpoints they complete.
    fn note(&mut self, probe: &Handle<u64>) -> Result<(), RunError> {
        let before = self.completed;
        while !probe.less_than(&(self.completed + 1)) && self.completed < self.epoch {
            self.completed += 1;
        }
        self.cx.clock.complete_below(self.completed);
        let Some(sink) = &mut self.sink else { return Ok(()) };
        let sizes = std::mem::take(&mut *self.collected.sizes.borrow_mut());
        if !sizes.is_empty() {
            self.cx.live.apply_cluster_sizes(&sizes);
        }
        sink.accept(&std::mem::take(&mut *self.collected.rows.borrow_mut()));
        sink.accept_shares(&std::mem::take(&mut *self.collected.shares.borrow_mut()));
        // Epoch by epoch, so that a checkpoint records the change stream up to it.
        for e in before..self.completed {
            sink.flush_before(e + 1)?;
            if let Some(closed) = self.cx.live.epoch_closed.lock().expect("epochs").remove(&e) {
                self.cx.metrics.observe(metrics::EPOCH_SECONDS, "", closed.elapsed().as_secs_f64());
                tracing::debug!(
                    "epoch {e}: changes written {:.1} ms after its close",
                    closed.elapsed().as_secs_f64() * 1e3
                );
            }
            while let Some(&c) = self.checkpoints.first() {
                if c > e + 1 {
                    break;
                }
                self.checkpoints.remove(0);
                sink.commit_checkpoint(c)?;
            }
        }
        sink.try_commit()?;
        self.cx.metrics.set(metrics::EPOCHS_DONE, "", self.completed as i64);
        Ok(())
    }
}
