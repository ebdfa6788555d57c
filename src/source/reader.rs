//! The reader thread: this process's share of the inputs (read once or followed), deletions,
//! epochs, the retention clock and the reader's share of checkpoints. A record goes through a
//! bounded channel (backpressure) to the local worker that owns its URL, or, when a worker of
//! another process owns it, to a local worker that sends it on (timely's exchange).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Select, SendTimeoutError, Sender, TrySendError};

use crate::checkpoint::{reader_done_path, reader_path};
pub use crate::checkpoint::{InputProgress, ReaderProgress};
use crate::dataflow::Abort;
use crate::files::write_atomic;
use crate::metrics::live::Live;
use crate::metrics::{self, Registry};
use crate::source::text::{TextConfig, TextDoc};
use crate::source::{self, follow, http, Input, Item, Items, RawRecord};
use crate::types::RunError;
use dupflow_operators::template;

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

pub(crate) enum Message {
    /// An item's first field is its sequence number at its reader: the order in which the
    /// item's owner applies it within its epoch, whichever worker parsed it.
    Record(u64, Box<RawRecord>),
    /// A text corpus row (from the sentence stage on).
    Text(u64, Box<TextDoc>),
    /// Retract the pages of this URL; captures dated up to the crawl date given (the feed's
    /// newest when the deletion was read) stay out.
    Delete(u64, String, u64),
    /// Close the current epoch: later records belong to `next`. Pages crawled before
    /// `expire_before` leave (retention); with `checkpoint`, save the held pages first.
    Epoch {
        next: u64,
        expire_before: u64,
        checkpoint: bool,
    },
    End,
}

/// When the reader closes epochs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EpochPolicy {
    pub(crate) records: u64,
    pub(crate) max_age: Duration,
    /// Template refreshes every this many epochs from the run's first (`template.refresh_epochs`):
    /// an idle reader advances the epochs to the next refresh after its last item.
    pub(crate) refresh_epochs: u64,
    /// Epochs read and not yet complete, the open one included, at most (`run.epochs_in_flight`).
    pub(crate) in_flight: u64,
}

/// The reader thread's state: routing, epochs, deletions, retention clock, progress.
pub(crate) struct ReaderCore {
    /// One channel to each worker of this process. An item goes to any worker with room in its
    /// channel (the next in turn first): the worker that parses a record need not own its URL
    /// (timely's exchange takes the page there), so a worker busy with the dataflow does not
    /// hold the reader up while another waits for records.
    pub(crate) senders: Vec<Sender<Message>>,
    /// The channel to try first for the next item.
    pub(crate) next_sender: usize,
    /// Items handed out so far: the next item's sequence number.
    pub(crate) sequence: u64,
    /// This process's share of followed inputs.
    pub(crate) part: source::Part,
    pub(crate) policy: EpochPolicy,
    pub(crate) epoch: u64,
    pub(crate) in_epoch: u64,
    pub(crate) epoch_started: Instant,
    /// When the current epoch began: the previous close (`epoch_started` is its first record).
    pub(crate) epoch_opened: Instant,
    /// Whether the current epoch reached its age while the dataflow was behind.
    pub(crate) held: bool,
    /// The age at which the previous epoch closed, when it was held (zero otherwise).
    pub(crate) held_age: Duration,
    /// Whether the reader waited for its input during the current epoch (a live feed it keeps
    /// up with, not a backlog in the input).
    pub(crate) waited: bool,
    pub(crate) live: Arc<Live>,
    pub(crate) metrics: Arc<Registry>,
    pub(crate) printed: usize,
    pub(crate) retention_secs: u64,
    pub(crate) progress: ReaderProgress,
    /// Items still to skip in the current input (resume).
    pub(crate) skip: u64,
    pub(crate) deletions: Option<PathBuf>,
    pub(crate) pending_deletion: Vec<u8>,
    pub(crate) checkpoint: Option<(PathBuf, u64)>,
    pub(crate) reads: Vec<Instant>,
    /// The last epoch that held items.
    pub(crate) items_epoch: Option<u64>,
    /// A checkpoint is due, to be taken once an epoch closes just after a template refresh.
    pub(crate) checkpoint_due: bool,
    /// Items of the inputs before the current one (text rows' ordinals continue from it).
    pub(crate) items_before: u64,
    /// The run's failure: raised here on a fatal error, and seen here in every wait.
    pub(crate) abort: Arc<Abort>,
    /// Records (or rows) read from the current input, and whether it was read from its start.
    pub(crate) input_records: u64,
    pub(crate) input_fresh: bool,
    /// Inputs read from their start that held no record.
    pub(crate) empty_inputs: Vec<String>,
}

/// What a reader thread reports when it ends.
#[derive(Clone, Debug, Default)]
pub struct ReaderReport {
    /// Inputs read from their start that held no record (a damaged file, an empty one).
    pub empty_inputs: Vec<String>,
}

/// How long a blocked send waits before it looks at the run's failure again.
const SEND_PATIENCE: Duration = Duration::from_millis(20);

/// How inputs are read: the record cap and the fields of text corpora rows.
#[derive(Clone, Debug)]
pub(crate) struct ReadSettings {
    pub(crate) max_record_bytes: u64,
    pub(crate) text: TextConfig,
}

impl ReaderCore {
    /// Waits until the open epoch is within `policy.in_flight` of the dataflow's completed
    /// epochs: a reader that is ahead (a replay, a burst, a followed file far behind its end)
    /// stops there, so the epochs in the dataflow, and all they hold until complete, stay
    /// bounded whatever the input's pace. The open epoch does not change while it waits, and
    /// only its first item can wait (the completed epochs only grow). Called before an item is
    /// stamped as read: the wait is the input's, as a full channel's is.
    fn wait_for_the_dataflow(&mut self) {
        let done = || self.live.epochs_done.load(std::sync::atomic::Ordering::Relaxed);
        if self.epoch < done().saturating_add(self.policy.in_flight) {
            return;
        }
        let started = Instant::now();
        while self.epoch >= done().saturating_add(self.policy.in_flight) && !self.abort.raised() {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.metrics.add(metrics::READER_WAIT, "", started.elapsed().as_millis() as i64);
    }

    /// Hands an item to a worker: the first, from the next in turn, whose channel has room;
    /// when every channel is full, the first to have room (backpressure).
    fn dispatch(&mut self, make: impl FnOnce(u64) -> Message) {
        let mut message = make(self.sequence);
        self.sequence += 1;
        let n = self.senders.len();
        for k in 0..n {
            let i = (self.next_sender + k) % n;
            match self.senders[i].try_send(message) {
                Ok(()) => {
                    self.next_sender = (i + 1) % n;
                    return;
                }
                Err(TrySendError::Full(m) | TrySendError::Disconnected(m)) => message = m,
            }
        }
        let mut select = Select::new();
        for sender in &self.senders {
            select.send(sender);
        }
        // Every channel is full: wait for room, unless the run has failed (the workers may be
        // gone) — then the message is dropped, as the run ends.
        loop {
            match select.select_timeout(SEND_PATIENCE) {
                Ok(operation) => {
                    let i = operation.index();
                    if operation.send(&self.senders[i], message).is_err() {
                        // That worker has ended: the run is failing, nothing more is delivered.
                        self.abort.raise(RunError::Worker(
                            "a worker ended while records were still being read".into(),
                        ));
                    }
                    self.next_sender = (i + 1) % n;
                    return;
                }
                Err(_) if self.abort.raised() => return,
                Err(_) => {}
            }
        }
    }

    /// A message every worker must see (an epoch's close, the end): waits for room in each
    /// channel, unless the run has failed.
    fn send_all(&self, message: impl Fn() -> Message) {
        for sender in &self.senders {
            let mut pending = message();
            loop {
                match sender.send_timeout(pending, SEND_PATIENCE) {
                    Ok(()) | Err(SendTimeoutError::Disconnected(_)) => break,
                    Err(SendTimeoutError::Timeout(m)) if !self.abort.raised() => pending = m,
                    Err(SendTimeoutError::Timeout(_)) => return,
                }
            }
        }
    }

    /// A checkpoint file the reader could not write: the run stops (a checkpoint without its
    /// positions could not be committed, nor resumed from).
    fn checkpoint_failed(&self, path: PathBuf, error: std::io::Error) {
        self.abort.raise(RunError::Checkpoint { path, message: error.to_string() });
    }

    /// Starts reading input `name`; false when a checkpoint says it was read to its end.
    fn begin(&mut self, name: &str) -> bool {
        self.input_records = 0;
        self.input_fresh = !self.progress.inputs.iter().any(|p| p.name == name);
        self.items_before =
            self.progress.inputs.iter().filter(|p| p.name != name).map(|p| p.items).sum();
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
                self.progress.inputs.push(InputProgress {
                    name: name.to_string(),
                    items: 0,
                    done: false,
                });
            }
        }
        true
    }

    /// The current input was read to its end, unless a stop or the run's failure cut it short:
    /// then it is not marked done, and a resume reads on from its position.
    fn end_input(&mut self) {
        if follow::stop_requested() || self.abort.raised() {
            return;
        }
        if let Some(p) = self.progress.inputs.last_mut() {
            p.done = true;
            if self.input_fresh && self.input_records == 0 {
                self.empty_inputs.push(p.name.clone());
            }
        }
    }

    /// Counts an item into the input's position; false while a resume skips what was read.
    fn advance(&mut self) -> bool {
        // On resume the checkpoint's position already counts the skipped prefix: the position
        // grows only from where the skip ends, so it stays exact across any number of resumes
        // (counting skipped items again would move it past records never processed).
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        if let Some(p) = self.progress.inputs.last_mut() {
            p.items += 1;
        }
        true
    }

    /// An item of any format.
    fn take(&mut self, item: Result<Item, source::RecordError>, name: &str) {
        match item {
            Ok(Item::Record(record)) => self.item(Ok(record), name),
            Ok(Item::Text(doc)) => self.text(doc),
            Err(error) => self.item(Err(error), name),
        }
    }

    /// A text corpus row: to the worker that owns its id, numbered by its position.
    fn text(&mut self, mut doc: TextDoc) {
        if !self.advance() {
            return;
        }
        doc.ordinal = self.items_before + self.progress.inputs.last().map_or(0, |p| p.items);
        self.metrics.inc(metrics::RECORDS, "text");
        self.input_records += 1;
        self.wait_for_the_dataflow();
        self.reads.push(Instant::now());
        self.dispatch(|seq| Message::Text(seq, Box::new(doc)));
        if self.in_epoch == 0 {
            self.epoch_started = Instant::now();
        }
        self.in_epoch += 1;
        if self.in_epoch >= self.policy.records {
            self.close_epoch();
        }
    }

    fn item(&mut self, item: Result<RawRecord, source::RecordError>, name: &str) {
        if !self.advance() {
            return;
        }
        match item {
            Ok(record) => {
                self.input_records += 1;
                if let Some(date) = record.header("WARC-Date").and_then(http::parse_warc_date) {
                    self.progress.max_date = self.progress.max_date.max(date);
                }
                self.metrics.inc(metrics::RECORDS, &record.type_name());
                if record.lenient_length {
                    self.metrics.inc(metrics::QUIRKS, "content_length_mismatch");
                }
                use warc::RecordType::*;
                match record.warc_type() {
                    Response | Resource | Revisit => {
                        self.wait_for_the_dataflow();
                        self.reads.push(Instant::now());
                        // Blocks when the worker is behind: backpressure, no unbounded buffer.
                        self.dispatch(|seq| Message::Record(seq, Box::new(record)));
                    }
                    other => self.metrics.inc(metrics::SKIPPED, &other.to_string()),
                }
                if self.in_epoch == 0 {
                    self.epoch_started = Instant::now();
                }
                self.in_epoch += 1;
            }
            // The input itself cannot be read (the disk, the network file system): nothing after
            // this point of it can be, and a run that went on would lose it silently.
            Err(error) if error.kind == source::RecordErrorKind::Io => {
                self.abort.raise(RunError::Input {
                    input: name.to_string(),
                    message: error.message.clone(),
                });
            }
            Err(error) => {
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
        if self.in_epoch >= self.policy.records {
            self.close_epoch();
        }
    }

    fn delete(&mut self, url: &str) {
        self.wait_for_the_dataflow();
        let as_of = self.progress.max_date;
        self.dispatch(|seq| Message::Delete(seq, url.to_string(), as_of));
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
        if file
            .seek(std::io::SeekFrom::Start(
                self.progress.deletions_offset + self.pending_deletion.len() as u64,
            ))
            .is_err()
        {
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
        self.waited = true;
        self.poll_deletions();
        self.age_check();
        if follow::stop_requested() || self.abort.raised() {
            follow::Wait::Finish
        } else {
            follow::Wait::Again
        }
    }

    /// Closes the epoch when it is old enough and the dataflow has completed the epochs before
    /// it: while the dataflow is behind, the open epoch grows (up to `policy.records`) instead
    /// of queueing behind others, so a replay or a burst runs in few large epochs and a feed
    /// the dataflow keeps up with in epochs of `max_age`. An epoch that reached its age with the
    /// dataflow behind (held) after one that was held too closes no younger than twice the
    /// age that one closed at: under a lasting backlog epochs double, so a replay of N records
    /// takes O(log N) epochs below the record cap; the first epoch the dataflow is not behind
    /// for closes at `max_age` again. The doubling is for a backlog in the input (a replay, a
    /// followed file far ahead of the reader): an epoch during which the reader waited for its
    /// input (a live feed it has caught up with) closes as soon as the epochs before it are
    /// complete, so its size follows what arrives while the dataflow works on the one before.
    /// (Many small epochs cost more than their records: a sentence crossing its host's
    /// template threshold re-filters its pages once per epoch it crosses in.) In a cluster
    /// also when another process's reader is ahead (its items arrived at a later epoch: jump
    /// to it at once), or when items sent at this very epoch are waiting for this reader to
    /// move on (close it once it is as old as an epoch may be, even with no records of its
    /// own): the cluster's epochs advance in step, no reader holds the others' records back,
    /// and an idle one does not stop the frontier.
    fn age_check(&mut self) {
        let caught_up =
            self.live.epochs_done.load(std::sync::atomic::Ordering::Relaxed) >= self.epoch;
        let age = self.epoch_started.elapsed();
        let old = self.in_epoch > 0 && age >= self.policy.max_age;
        if old && !caught_up {
            self.held = true;
        }
        let due = old && caught_up && (!self.held || self.waited || age >= 2 * self.held_age);
        let cluster = self.part.processes > 1;
        let floor = self.live.epoch_floor.load(std::sync::atomic::Ordering::Relaxed);
        let behind = floor > self.epoch
            || (floor == self.epoch && self.epoch_opened.elapsed() >= self.policy.max_age);
        if due || (cluster && behind) {
            self.close_epoch();
            return;
        }
        // Idle with a template refresh still ahead of the last items (their template changes
        // take effect there): the epochs advance to it, empty, so that a paused feed's clusters
        // do not wait for its next record.
        let refresh =
            self.items_epoch.map(|e| template::refresh_time(e, self.policy.refresh_epochs));
        if let Some(refresh) = refresh.filter(|&r| r >= self.epoch) {
            if self.in_epoch == 0 && caught_up && self.epoch_opened.elapsed() >= self.policy.max_age
            {
                self.close_epoch_to(refresh + 1);
            }
        }
    }

    fn close_epoch(&mut self) {
        self.close_epoch_to(0);
    }

    /// Closes the current epoch; the next is at least `at`.
    fn close_epoch_to(&mut self, at: u64) {
        if self.in_epoch > 0 {
            self.items_epoch = Some(self.epoch);
        }
        self.held_age =
            if self.held && !self.waited { self.epoch_started.elapsed() } else { Duration::ZERO };
        self.held = false;
        self.waited = false;
        self.epoch_opened = Instant::now();
        let previous = self.epoch;
        self.epoch = (self.epoch + 1)
            .max(self.live.epoch_floor.load(std::sync::atomic::Ordering::Relaxed))
            .max(at);
        // Process 0's reader chooses the checkpoint epochs: one is due where a multiple of
        // `every` is reached or passed (epochs may jump, see `age_check`), and taken at the
        // first epoch that follows a template refresh (a resumed run rebuilds the state there
        // from the pages alone; `template::checkpoint_epoch`).
        let marks = match &self.checkpoint {
            Some((_, every)) if self.part.process == 0 => {
                let due = self.checkpoint_due || previous / every < self.epoch / every;
                let after_refresh =
                    template::checkpoint_epoch(self.epoch, self.policy.refresh_epochs)
                        == self.epoch;
                self.checkpoint_due = due && !after_refresh;
                due && after_refresh
            }
            _ => false,
        };
        self.in_epoch = 0;
        let now = Instant::now();
        // Several reader threads close the same epochs: the first close and every read count.
        self.live.epoch_closed.lock().expect("epochs").entry(previous).or_insert(now);
        if !self.reads.is_empty() {
            self.live
                .epoch_reads
                .lock()
                .expect("reads")
                .entry(previous)
                .or_default()
                .append(&mut self.reads);
        }
        let expire_before = if self.retention_secs > 0 {
            self.progress.max_date.saturating_sub(self.retention_secs)
        } else {
            0
        };
        // In a cluster every reader writes its positions at each epoch it closes (a checkpoint
        // of process 0's may fall on any).
        let (part, cluster) = (self.part, self.part.processes > 1);
        let checkpoint = match &self.checkpoint {
            Some((dir, _)) => {
                if marks || cluster {
                    let bytes = serde_json::to_vec(&self.progress).expect("progress serializes");
                    let path = reader_path(dir, self.epoch, part.process, part.processes);
                    if let Err(e) = write_atomic(&path, &bytes) {
                        self.checkpoint_failed(path, e);
                    }
                }
                marks
            }
            None => false,
        };
        let next = self.epoch;
        self.send_all(|| Message::Epoch { next, expire_before, checkpoint });
        self.metrics.set(metrics::EPOCHS_CLOSED, "", self.epoch as i64);
    }

    fn finish(&mut self) {
        if self.abort.raised() {
            // The run is failing: no last epoch, no checkpoint of a state that is not whole.
            return;
        }
        self.poll_deletions();
        if self.in_epoch > 0 || self.checkpoint.is_some() {
            // The last epoch is always a checkpoint: a stopped run resumes where it ended (the
            // epochs jump to just after the next template refresh).
            let mut at = 0;
            if let Some((_, every)) = &mut self.checkpoint {
                *every = 1;
                at = template::checkpoint_epoch(self.epoch + 1, self.policy.refresh_epochs);
            }
            self.close_epoch_to(at);
        }
        if let (Some((dir, _)), true) = (&self.checkpoint, self.part.processes > 1) {
            let bytes = serde_json::to_vec(&self.progress).expect("progress serializes");
            let path = reader_done_path(dir, self.part.process);
            if let Err(e) = write_atomic(&path, &bytes) {
                self.checkpoint_failed(path, e);
            }
        }
        self.send_all(|| Message::End);
    }
}

pub(crate) type Core = Arc<Mutex<ReaderCore>>;

fn lock(core: &Core) -> std::sync::MutexGuard<'_, ReaderCore> {
    core.lock().expect("reader core")
}

/// Items of a decoded stream (WARC records or JSONL rows) into the core until its end.
fn pump(core: &Core, decoder: source::Decoder, name: &str, settings: &ReadSettings) {
    pump_items(core, Items::from_decoder(decoder, settings.max_record_bytes, &settings.text), name)
}

fn pump_items(core: &Core, mut items: Items, name: &str) {
    let metrics = lock(core).metrics.clone();
    let mut counted = 0u64;
    while let Some(item) = items.next_item() {
        let mut c = lock(core);
        c.take(item, name);
        c.age_check();
        drop(c);
        let read = items.bytes_read();
        if read > counted {
            metrics.add(metrics::BYTES_READ, "", (read - counted) as i64);
            counted = read;
        }
        if follow::stop_requested() || lock(core).abort.raised() {
            break;
        }
    }
    metrics.add(metrics::BYTES_READ, "", items.bytes_read().saturating_sub(counted) as i64);
}

/// An input that cannot be opened stops the run: the user named it, and a run that went on
/// would cluster a corpus without it.
fn open_failed(core: &Core, name: &str, error: impl std::fmt::Display) {
    let message = error.to_string();
    let message =
        if message.contains(name) { message } else { format!("cannot open {name}: {message}") };
    lock(core).abort.raise(RunError::Open(message));
}

/// The wait between polls of a quiet input: deletions, epochs by age and stop requests, until
/// `finished` says the input is complete.
fn waiter(core: &Core, finished: Box<dyn Fn() -> bool + Send>) -> follow::Waiter {
    let core = core.clone();
    Box::new(move || {
        let wait = lock(&core).tick();
        if wait == follow::Wait::Finish || finished() {
            follow::Wait::Finish
        } else {
            follow::Wait::Again
        }
    })
}

/// Followed targets in order until a stop is requested: files (complete once the next target
/// exists), directories (new files in name order) and stdin.
fn read_followed(targets: &[Followed], core: &Core, settings: &ReadSettings) {
    let multiple = targets.len() > 1;
    let part = lock(core).part;
    'targets: for (t, target) in targets.iter().enumerate() {
        if !matches!(target, Followed::Dir(_)) && !part.takes_index(t) {
            continue;
        }
        match target {
            Followed::Stdin => {
                if !lock(core).begin("-") {
                    continue;
                }
                let reader = follow::StdinPump::start(waiter(core, Box::new(|| false)));
                match source::Decoder::new(Box::new(reader)) {
                    Ok(d) => pump(core, d, "-", settings),
                    Err(e) => open_failed(core, "-", e),
                }
                lock(core).end_input();
            }
            Followed::File(path) => {
                let name = path.display().to_string();
                if !lock(core).begin(&name) {
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
                    if lock(core).tick() == follow::Wait::Finish {
                        break 'targets;
                    }
                    std::thread::sleep(follow::POLL);
                }
                let opened = follow::TailFile::open(path, waiter(core, finished))
                    .and_then(|r| source::Decoder::new(Box::new(r)))
                    .map_err(|error| source::SourceError::Open { path: path.clone(), error });
                match opened {
                    Ok(d) => pump(core, d, &name, settings),
                    Err(e) => open_failed(core, &name, e),
                }
                lock(core).end_input();
            }
            Followed::Dir(dir) => loop {
                let files = follow::list_dir(dir);
                let next = {
                    let c = lock(core);
                    files
                        .iter()
                        .find(|f| {
                            let name = f.display().to_string();
                            part.takes_name(&name)
                                && !c.progress.inputs.iter().any(|p| p.name == name && p.done)
                        })
                        .cloned()
                };
                let Some(file) = next else {
                    if lock(core).tick() == follow::Wait::Finish {
                        break 'targets;
                    }
                    std::thread::sleep(follow::POLL);
                    continue;
                };
                let name = file.display().to_string();
                if !lock(core).begin(&name) {
                    continue;
                }
                let (dir2, me) = (dir.clone(), file.clone());
                let finished = Box::new(move || follow::list_dir(&dir2).iter().any(|f| f > &me));
                let opened = follow::TailFile::open(&file, waiter(core, finished))
                    .and_then(|r| source::Decoder::new(Box::new(r)))
                    .map_err(|error| source::SourceError::Open { path: file.clone(), error });
                match opened {
                    Ok(d) => pump(core, d, &name, settings),
                    Err(e) => open_failed(core, &name, e),
                }
                if follow::stop_requested() {
                    break 'targets;
                }
                lock(core).end_input();
            },
        }
    }
}

/// The reader thread: every input in order, each record to the worker that owns its URL.
pub(crate) fn read_feed(feed: Feed, core: Core, settings: ReadSettings) -> ReaderReport {
    match feed {
        Feed::Inputs(inputs) => {
            for input in inputs {
                if follow::stop_requested() || lock(&core).abort.raised() {
                    break;
                }
                let name = input.name();
                if !lock(&core).begin(&name) {
                    continue;
                }
                let items = match input {
                    Input::Stdin => {
                        let pump_reader =
                            follow::StdinPump::start(waiter(&core, Box::new(|| false)));
                        source::Decoder::new(Box::new(pump_reader))
                            .map(|d| {
                                Items::from_decoder(d, settings.max_record_bytes, &settings.text)
                            })
                            .map_err(|error| source::SourceError::Open { path: "-".into(), error })
                    }
                    other => Items::open(&other, settings.max_record_bytes, &settings.text),
                };
                match items {
                    Ok(items) => pump_items(&core, items, &name),
                    Err(e) => open_failed(&core, &name, e),
                }
                lock(&core).end_input();
            }
            lock(&core).poll_deletions();
        }
        Feed::Follow(targets) => read_followed(&targets, &core, &settings),
        Feed::Script(items) => {
            lock(&core).begin("script");
            for item in items {
                match item {
                    ScriptItem::Warc(bytes) => {
                        let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                        match (Input::Embedded { name: "script", bytes: leaked }).open() {
                            Ok(d) => pump(&core, d, "script", &settings),
                            Err(e) => open_failed(&core, "script", e),
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
    let mut core = lock(&core);
    core.finish();
    ReaderReport { empty_inputs: std::mem::take(&mut core.empty_inputs) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` uncompressed WARC response records for `http://t.example/pI`.
    fn warc(n: usize) -> &'static [u8] {
        let mut out = Vec::new();
        for i in 0..n {
            let http = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>page {i}</p>");
            out.extend_from_slice(
                format!(
                    "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://t.example/p{i}\r\nWARC-Date: 2026-01-01T00:00:{:02}Z\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
                    i % 60,
                    http.len()
                )
                .as_bytes(),
            );
        }
        Box::leak(out.into_boxed_slice())
    }

    fn core(progress: ReaderProgress) -> (ReaderCore, crossbeam_channel::Receiver<Message>) {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let registry = Arc::new(Registry::default());
        let core = ReaderCore {
            senders: vec![sender],
            next_sender: 0,
            sequence: 0,
            part: source::Part::WHOLE,
            policy: EpochPolicy {
                records: u64::MAX,
                max_age: Duration::from_secs(3600),
                refresh_epochs: 1,
                in_flight: u64::MAX,
            },
            epoch: 0,
            in_epoch: 0,
            epoch_started: Instant::now(),
            epoch_opened: Instant::now(),
            held: false,
            held_age: Duration::ZERO,
            waited: false,
            live: Arc::new(Live::new(registry.clone(), 0)),
            metrics: registry,
            printed: 0,
            retention_secs: 0,
            progress,
            skip: 0,
            deletions: None,
            pending_deletion: Vec::new(),
            checkpoint: None,
            reads: Vec::new(),
            items_epoch: None,
            checkpoint_due: false,
            items_before: 0,
            abort: Default::default(),
            input_records: 0,
            input_fresh: false,
            empty_inputs: Vec::new(),
        };
        (core, receiver)
    }

    /// One run from `progress`: frames the input from its start, as a restarted reader does,
    /// and "crashes" once its position reaches `stop` (or at the end). Returns the position it
    /// would have checkpointed and the URLs it handed to the workers.
    fn run(
        bytes: &'static [u8],
        progress: ReaderProgress,
        stop: u64,
    ) -> (ReaderProgress, Vec<String>) {
        let (mut core, receiver) = core(progress);
        if core.begin("in") {
            let decoder = (Input::Embedded { name: "in", bytes }).open().unwrap();
            let mut framer = source::Framer::new(decoder, 1 << 20);
            while core.progress.inputs.last().unwrap().items < stop {
                let Some(item) = framer.next_record() else {
                    core.end_input();
                    break;
                };
                core.item(item, "in");
            }
        }
        let urls = receiver
            .try_iter()
            .filter_map(|m| match m {
                Message::Record(_, r) => r.header("WARC-Target-URI").map(str::to_string),
                _ => None,
            })
            .collect();
        (core.progress, urls)
    }

    /// A reader of `bytes` under `policy`, begun, and the framer of its input.
    fn reading(
        bytes: &'static [u8],
        policy: EpochPolicy,
    ) -> (ReaderCore, crossbeam_channel::Receiver<Message>, source::Framer) {
        let (mut core, receiver) = core(ReaderProgress::default());
        core.policy = policy;
        assert!(core.begin("in"));
        let decoder = (Input::Embedded { name: "in", bytes }).open().unwrap();
        (core, receiver, source::Framer::new(decoder, 1 << 20))
    }

    /// The epoch marks sent since the last look.
    fn marks(receiver: &crossbeam_channel::Receiver<Message>) -> Vec<u64> {
        receiver
            .try_iter()
            .filter_map(|m| if let Message::Epoch { next, .. } = m { Some(next) } else { None })
            .collect()
    }

    /// Records go to the workers in turn, past a full channel (a worker busy with the dataflow
    /// does not hold the reader up), numbered in the order read; with every channel full the
    /// reader waits for the first to have room.
    #[test]
    fn records_go_to_any_worker_with_room_numbered_in_the_order_read() {
        let (mut core, _unused, mut framer) = reading(
            warc(8),
            EpochPolicy {
                records: u64::MAX,
                max_age: Duration::from_secs(3600),
                refresh_epochs: 1,
                in_flight: u64::MAX,
            },
        );
        let (busy_tx, busy) = crossbeam_channel::bounded(1);
        let (free_tx, free) = crossbeam_channel::bounded(8);
        core.senders = vec![busy_tx, free_tx];
        for _ in 0..4 {
            core.item(framer.next_record().expect("a record"), "in");
        }
        let seqs = |r: &crossbeam_channel::Receiver<Message>| -> Vec<u64> {
            r.try_iter()
                .filter_map(|m| if let Message::Record(seq, _) = m { Some(seq) } else { None })
                .collect()
        };
        // The first went to the busy worker and filled its channel: the rest to the other.
        assert_eq!((seqs(&busy), seqs(&free)), (vec![0], vec![1, 2, 3]));
        // Both full: the reader waits, and the record goes to the first worker with room.
        let (busy_tx, busy) = crossbeam_channel::bounded(1);
        let (slow_tx, slow) = crossbeam_channel::bounded(1);
        core.senders = vec![busy_tx, slow_tx];
        core.item(framer.next_record().expect("a record"), "in");
        core.item(framer.next_record().expect("a record"), "in");
        let taker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let first = slow.recv().expect("a record");
            (first, slow.recv_timeout(Duration::from_secs(10)).expect("the waiting record"))
        });
        core.item(framer.next_record().expect("a record"), "in");
        let (first, waited) = taker.join().expect("taker");
        assert!(matches!(first, Message::Record(5, _)) && matches!(waited, Message::Record(6, _)));
        assert_eq!(seqs(&busy), vec![4]);
    }

    #[test]
    fn an_idle_reader_advances_the_epochs_to_the_template_refresh_after_its_last_items() {
        // Template changes of an epoch take effect at the next refresh (every 4 epochs here):
        // with no more input, the epochs still advance to it, so that they are applied.
        let (mut core, receiver, mut framer) = reading(
            warc(3),
            EpochPolicy {
                records: 1,
                max_age: Duration::ZERO,
                refresh_epochs: 4,
                in_flight: u64::MAX,
            },
        );
        // An item into epoch 0 (a refresh point itself): nothing is pending once it closes.
        core.item(framer.next_record().expect("a record"), "in");
        assert_eq!(marks(&receiver), vec![1]);
        done(&core, 1);
        core.age_check();
        assert!(
            marks(&receiver).is_empty(),
            "epoch 0's changes took effect at 0: nothing to advance to"
        );
        // Items into epochs 1 and 2: their changes take effect at 4. While the dataflow is
        // behind, the idle reader waits; once it is done, one empty epoch takes it past 4.
        core.item(framer.next_record().expect("a record"), "in");
        core.item(framer.next_record().expect("a record"), "in");
        assert_eq!(marks(&receiver), vec![2, 3]);
        core.age_check();
        assert!(marks(&receiver).is_empty(), "the dataflow is behind");
        done(&core, 3);
        core.age_check();
        assert_eq!(marks(&receiver), vec![5], "to the refresh at 4, and past it");
        done(&core, 5);
        core.age_check();
        assert!(marks(&receiver).is_empty(), "no refresh ahead: the idle reader rests");
        // Refreshes every epoch: never an empty epoch.
        let (mut core, receiver, mut framer) = reading(
            warc(3),
            EpochPolicy {
                records: 1,
                max_age: Duration::ZERO,
                refresh_epochs: 1,
                in_flight: u64::MAX,
            },
        );
        core.item(framer.next_record().expect("a record"), "in");
        core.item(framer.next_record().expect("a record"), "in");
        done(&core, 2);
        core.age_check();
        assert_eq!(marks(&receiver), vec![1, 2]);
    }

    /// Reads `records` records an epoch each, with checkpoints due every 2 epochs and template
    /// refreshes every `refresh_epochs`, to the end and a stop: the epochs closed (`next`) and
    /// those that are checkpoints.
    fn checkpointed(
        dir: &std::path::Path,
        records: usize,
        refresh_epochs: u64,
    ) -> (Vec<u64>, Vec<u64>) {
        let (mut core, receiver, mut framer) = reading(
            warc(records),
            EpochPolicy {
                records: 1,
                max_age: Duration::from_secs(3600),
                refresh_epochs,
                in_flight: u64::MAX,
            },
        );
        core.checkpoint = Some((dir.to_path_buf(), 2));
        while let Some(item) = framer.next_record() {
            core.item(item, "in");
        }
        core.end_input();
        core.finish();
        let epochs: Vec<(u64, bool)> = receiver
            .try_iter()
            .filter_map(|m| {
                if let Message::Epoch { next, checkpoint, .. } = m {
                    Some((next, checkpoint))
                } else {
                    None
                }
            })
            .collect();
        (
            epochs.iter().map(|&(next, _)| next).collect(),
            epochs.iter().filter(|&&(_, c)| c).map(|&(next, _)| next).collect(),
        )
    }

    #[test]
    fn checkpoints_fall_just_after_a_template_refresh_and_the_last_one_too() {
        // Due every 2 epochs, taken at the first epoch after a refresh (every 3): the state a
        // resumed run rebuilds from the pages alone. The epochs themselves do not move.
        let dir =
            std::env::temp_dir().join(format!("dupflow-reader-checkpoints-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (closed, checkpoints) = checkpointed(&dir, 11, 3);
        // Eleven epochs of one record; at the end, the last is closed to just after the
        // refresh at 12.
        assert_eq!(closed, (1..=11).chain([13]).collect::<Vec<u64>>());
        assert_eq!(checkpoints, vec![4, 7, 10, 13]);
        // Refreshes every epoch: every epoch where a multiple of 2 is reached.
        let (closed, checkpoints) = checkpointed(&dir, 5, 1);
        assert_eq!(closed, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(checkpoints, vec![2, 4, 6]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_old_epoch_waits_for_the_dataflow_and_the_record_cap_does_not() {
        // Epochs grow while the dataflow is behind: an epoch past its age closes only once
        // the epochs before it are complete; `records` closes it whatever the dataflow does.
        let (mut core, receiver, mut framer) = reading(
            warc(30),
            EpochPolicy {
                records: 20,
                max_age: Duration::ZERO,
                refresh_epochs: 1,
                in_flight: u64::MAX,
            },
        );
        let mut next = |core: &mut ReaderCore| {
            let item = framer.next_record().expect("a record");
            core.item(item, "in");
            core.age_check();
        };
        // Nothing is behind at the start: the first record's epoch closes at its age.
        next(&mut core);
        assert_eq!(marks(&receiver), vec![1]);
        // Epoch 0 is not complete: epoch 1 stays open however old, and grows.
        for _ in 0..5 {
            next(&mut core);
        }
        assert_eq!((core.epoch, core.in_epoch), (1, 5));
        assert!(marks(&receiver).is_empty());
        // Epoch 0 done: the next look closes epoch 1.
        done(&core, 1);
        core.age_check();
        assert_eq!(marks(&receiver), vec![2]);
        // Behind again: the record cap still closes epoch 2 at 20 records.
        for _ in 0..24 {
            next(&mut core);
        }
        assert_eq!(marks(&receiver), vec![3]);
        assert_eq!((core.epoch, core.in_epoch), (3, 4));
    }

    #[test]
    fn the_reader_waits_while_epochs_in_flight_are_at_the_bound() {
        // Epochs of two records, two in flight at most: epoch 0 and 1 are read with the
        // dataflow at 0; the first record of epoch 2 waits until epoch 0 is complete.
        let (mut core, receiver, mut framer) = reading(
            warc(6),
            EpochPolicy {
                records: 2,
                max_age: Duration::from_secs(3600),
                refresh_epochs: 1,
                in_flight: 2,
            },
        );
        for _ in 0..4 {
            core.item(framer.next_record().expect("a record"), "in");
        }
        assert_eq!(marks(&receiver), vec![1, 2]);
        let live = core.live.clone();
        let completed = std::thread::scope(|scope| {
            let dataflow = scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                let at = Instant::now();
                live.epochs_done.store(1, std::sync::atomic::Ordering::Relaxed);
                at
            });
            core.item(framer.next_record().expect("a record"), "in");
            let read = Instant::now();
            (dataflow.join().unwrap(), read)
        });
        assert!(
            completed.1 >= completed.0,
            "epoch 2's first record is read only once epoch 0 is complete"
        );
        let waited = core.metrics.get(metrics::READER_WAIT, "");
        assert!(waited >= 150, "the wait is counted: {waited} ms");
        // Within the bound again: the next record does not wait.
        let before = Instant::now();
        core.item(framer.next_record().expect("a record"), "in");
        assert!(before.elapsed() < Duration::from_millis(100));
        assert_eq!(marks(&receiver), vec![3]);
    }

    /// A reader core whose epochs close at 1 s of age (never by records), inside input "in",
    /// with a framer over four records; its epoch 0 (one record, nothing behind) has closed.
    fn epoch_core() -> (ReaderCore, crossbeam_channel::Receiver<Message>, source::Framer) {
        let (mut core, receiver) = core(ReaderProgress::default());
        core.policy = EpochPolicy {
            records: u64::MAX,
            max_age: Duration::from_secs(1),
            refresh_epochs: 1,
            in_flight: u64::MAX,
        };
        assert!(core.begin("in"));
        let decoder = (Input::Embedded { name: "in", bytes: warc(4) }).open().unwrap();
        let mut framer = source::Framer::new(decoder, 1 << 20);
        core.item(framer.next_record().expect("a record"), "in");
        aged(&mut core, 2);
        core.age_check();
        assert_eq!(
            (closes(&receiver), core.held_age),
            (1, Duration::ZERO),
            "epoch 0 closes at its age"
        );
        (core, receiver, framer)
    }

    /// Epoch marks sent since the last look.
    fn closes(receiver: &crossbeam_channel::Receiver<Message>) -> usize {
        receiver.try_iter().filter(|m| matches!(m, Message::Epoch { .. })).count()
    }

    /// The dataflow has completed the epochs before `n`.
    fn done(core: &ReaderCore, n: u64) {
        core.live.epochs_done.store(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The open epoch's first record was read `secs` seconds ago.
    fn aged(core: &mut ReaderCore, secs: u64) {
        core.epoch_started = Instant::now() - Duration::from_secs(secs);
    }

    /// Epoch 1 (one record) reaches its age of 2 s while epoch 0 is incomplete: held, it closes
    /// once epoch 0 is done, and its age sets the doubling for the next.
    fn held_epoch(
        core: &mut ReaderCore,
        receiver: &crossbeam_channel::Receiver<Message>,
        record: &mut impl FnMut(&mut ReaderCore),
    ) {
        record(core);
        aged(core, 2);
        core.age_check();
        assert_eq!(closes(receiver), 0);
        done(core, 1);
        core.age_check();
        assert_eq!(closes(receiver), 1);
        assert!(core.held_age >= Duration::from_secs(2));
    }

    #[test]
    fn epochs_held_behind_the_dataflow_double_and_the_first_not_held_closes_at_its_age() {
        let (mut core, receiver, mut framer) = epoch_core();
        let mut record =
            |core: &mut ReaderCore| core.item(framer.next_record().expect("a record"), "in");
        // Epoch 1 reaches its age with epoch 0 incomplete: held; it closes once epoch 0 is done.
        held_epoch(&mut core, &receiver, &mut record);
        // Epoch 2 is held too: once the dataflow catches up it still waits for twice epoch 1's age.
        record(&mut core);
        aged(&mut core, 3);
        core.age_check();
        done(&core, 2);
        core.age_check();
        assert_eq!(closes(&receiver), 0, "3 s is under twice 2 s");
        aged(&mut core, 5);
        core.age_check();
        assert_eq!(closes(&receiver), 1);
        // Epoch 3: the dataflow is not behind when it reaches its age: it closes then.
        record(&mut core);
        done(&core, 3);
        aged(&mut core, 1);
        core.age_check();
        assert_eq!((closes(&receiver), core.held_age), (1, Duration::ZERO));
    }

    #[test]
    fn an_epoch_the_reader_waited_in_closes_once_the_dataflow_is_done_without_doubling() {
        let (mut core, receiver, mut framer) = epoch_core();
        let mut record =
            |core: &mut ReaderCore| core.item(framer.next_record().expect("a record"), "in");
        // Epoch 1 is held behind the dataflow with a backlog in the input (the reader never
        // waited): it sets the doubling for the next.
        held_epoch(&mut core, &receiver, &mut record);
        // Epochs 2 and 3 are held too, but the reader waits for its input in both (a live
        // feed): each closes once the one before is complete, at 3 s, under twice epoch 1's
        // age, and sets no doubling.
        for epoch in 2..4 {
            record(&mut core);
            assert_eq!(core.tick(), follow::Wait::Again);
            aged(&mut core, 3);
            core.age_check();
            assert_eq!(closes(&receiver), 0, "epoch {epoch} waits for the one before");
            done(&core, epoch);
            aged(&mut core, 3);
            core.age_check();
            assert_eq!(
                (closes(&receiver), core.held_age),
                (1, Duration::ZERO),
                "epoch {epoch} closes without doubling"
            );
        }
    }

    #[test]
    fn resuming_twice_inside_one_input_reads_every_record_once() {
        // A second resume must not skip records never processed.
        let bytes = warc(100);
        let (first, a) = run(bytes, ReaderProgress::default(), 60);
        assert_eq!(first.inputs[0].items, 60);
        let (second, b) = run(bytes, first, 90);
        assert_eq!(second.inputs[0].items, 90, "the position counts the skipped prefix once");
        let (third, c) = run(bytes, second, u64::MAX);
        assert_eq!(third.inputs[0].items, 100, "never past the records the input holds");
        assert!(third.inputs[0].done);
        let all: Vec<String> = a.into_iter().chain(b).chain(c).collect();
        let want: Vec<String> = (0..100).map(|i| format!("http://t.example/p{i}")).collect();
        assert_eq!(all, want, "every record handed on once, in order");
        // A fourth start reads nothing: the input is done.
        let (_, d) = run(bytes, third, u64::MAX);
        assert!(d.is_empty());
    }

    #[test]
    fn a_crash_while_skipping_keeps_the_full_position() {
        // A checkpoint taken before the skip is over (deletions can close epochs meanwhile)
        // states the position of the prefix, not of the part skipped so far.
        let bytes = warc(50);
        let (first, _) = run(bytes, ReaderProgress::default(), 40);
        let (mut core, _receiver) = core(first);
        assert!(core.begin("in"));
        let decoder = (Input::Embedded { name: "in", bytes }).open().unwrap();
        let mut framer = source::Framer::new(decoder, 1 << 20);
        for _ in 0..10 {
            core.item(framer.next_record().unwrap(), "in");
        }
        assert_eq!(core.progress.inputs[0].items, 40);
        let (rest, urls) = run(bytes, core.progress.clone(), u64::MAX);
        assert_eq!(rest.inputs[0].items, 50);
        assert_eq!(urls.first().map(String::as_str), Some("http://t.example/p40"));
        assert_eq!(urls.len(), 10);
    }

    #[test]
    fn the_deletions_offset_counts_complete_lines_only() {
        let dir = std::env::temp_dir().join(format!("dupflow-deletions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("deleted.txt");
        std::fs::write(&path, "http://t.example/p1\nhttp://t.example/p2\nhttp://t.ex").unwrap();
        let (mut core, receiver) = core(ReaderProgress::default());
        core.deletions = Some(path.clone());
        core.poll_deletions();
        assert_eq!(core.progress.deletions_offset, 40);
        // Resumed twice from that offset, the partial line is read once, when complete.
        for _ in 0..2 {
            let (mut again, receiver) = self::core(core.progress.clone());
            again.deletions = Some(path.clone());
            again.poll_deletions();
            assert_eq!(again.progress.deletions_offset, 40);
            assert_eq!(receiver.try_iter().count(), 0);
        }
        std::fs::write(&path, "http://t.example/p1\nhttp://t.example/p2\nhttp://t.example/p3\n")
            .unwrap();
        core.poll_deletions();
        let deleted: Vec<String> = receiver
            .try_iter()
            .filter_map(|m| match m {
                Message::Delete(_, url, _) => Some(url),
                _ => None,
            })
            .collect();
        assert_eq!(deleted, ["http://t.example/p1", "http://t.example/p2", "http://t.example/p3"]);
        assert_eq!(core.progress.deletions_offset, std::fs::metadata(&path).unwrap().len());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
