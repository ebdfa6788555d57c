//! The reader thread: this process's share of the inputs (read once or followed), deletions,
//! epochs, the retention clock and the reader's share of checkpoints. A record goes through a
//! bounded channel (backpressure) to the local worker that owns its URL, or, when a worker of
//! another process owns it, to a local worker that sends it on (timely's exchange).
//!
//! Here: the messages, the core's state, and how it routes an item and counts positions;
//! `epochs.rs`: when epochs close and checkpoints are marked; `deletions.rs`: the deletions
//! file; `feed.rs`: the thread's loop over inputs read once or followed.

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
    /// A scripted sequence: WARC bytes, deletions and epoch boundaries, in order. Test support,
    /// built with the `testing` feature (the crate's own tests turn it on).
    #[cfg(feature = "testing")]
    Script(Vec<ScriptItem>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Followed {
    File(PathBuf),
    Dir(PathBuf),
    Stdin,
}

/// An item of a scripted feed (`Feed::Script`).
#[cfg(feature = "testing")]
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
    pub(crate) part: source::ReaderShare,
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
    /// The run's epoch clock, shared with its workers.
    pub(crate) clock: Arc<EpochClock>,
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
    /// The bytes of the current input read so far (the position's claim on the input).
    pub(crate) reading: Option<source::ByteCounter>,
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
    /// A reader at epoch 0 that has read nothing of `progress`'s inputs yet, with no deletions
    /// file, no checkpoints and no retention (the run sets those it has).
    pub(crate) fn new(
        senders: Vec<Sender<Message>>,
        part: source::ReaderShare,
        policy: EpochPolicy,
        (live, clock): (Arc<Live>, Arc<EpochClock>),
        progress: ReaderProgress,
        abort: Arc<Abort>,
    ) -> ReaderCore {
        let metrics = live.registry.clone();
        ReaderCore {
            senders,
            next_sender: 0,
            sequence: 0,
            part,
            policy,
            epoch: 0,
            in_epoch: 0,
            epoch_started: Instant::now(),
            epoch_opened: Instant::now(),
            held: false,
            held_age: Duration::ZERO,
            waited: false,
            live,
            clock,
            metrics,
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
            abort,
            input_records: 0,
            input_fresh: false,
            empty_inputs: Vec::new(),
            reading: None,
        }
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
                        self.abort.raise(RunError::WorkerEnded);
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
        self.abort.raise(crate::checkpoint::CheckpointError::Io { path, error }.into());
    }

    /// Starts reading input `name`; false when a checkpoint says it was read to its end (and it
    /// has not grown since), or when it is not the input the checkpoint read (the run fails).
    fn begin(&mut self, name: &str) -> bool {
        self.input_records = 0;
        self.reading = None;
        self.input_fresh = !self.progress.inputs.iter().any(|p| p.name == name);
        self.items_before =
            self.progress.inputs.iter().filter(|p| p.name != name).map(|p| p.items).sum();
        match self.progress.inputs.iter().position(|p| p.name == name) {
            Some(i) => {
                let p = &self.progress.inputs[i];
                self.skip = p.items;
                match same_input(name, p) {
                    Err(error) => {
                        self.abort.raise(error);
                        return false;
                    }
                    // Read to its end and not grown since.
                    Ok(false) if p.done => return false,
                    Ok(_) => {}
                }
                let mut p = self.progress.inputs.remove(i);
                p.done = false;
                self.progress.inputs.push(p);
            }
            None => {
                self.skip = 0;
                self.progress.inputs.push(InputProgress {
                    name: name.to_string(),
                    items: 0,
                    done: false,
                    read: None,
                    modified_ns: None,
                });
            }
        }
        true
    }

    /// The current input's position takes the bytes read of it so far (written with the
    /// positions at a checkpoint).
    pub(crate) fn note_read(&mut self) {
        if let (Some(counter), Some(p)) = (&self.reading, self.progress.inputs.last_mut()) {
            if self.skip == 0 {
                p.read = Some(counter.prefix());
            }
        }
    }

    /// The current input was read to its end, unless a stop or the run's failure cut it short:
    /// then it is not marked done, and a resume reads on from its position.
    fn end_input(&mut self) {
        self.note_read();
        self.reading = None;
        if crate::process::stop_requested() || self.abort.raised() {
            return;
        }
        if let Some(p) = self.progress.inputs.last_mut() {
            p.done = true;
            p.modified_ns = modified_ns(std::path::Path::new(&p.name));
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
        // A record the input ends inside is not a position: a stopped follower's file (or a
        // file a batch run met cut short) may be whole when the run resumes, and the record is
        // read then. It is damage only if nothing more comes; at a stop it is no error at all.
        if let Err(error) = &item {
            if error.kind.ends_the_input() {
                if !crate::process::stop_requested() {
                    self.skipped(error, name);
                }
                return;
            }
        }
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
            Err(error) => self.skipped(&error, name),
        }
        if self.in_epoch >= self.policy.records {
            self.close_epoch();
        }
    }

    /// A skipped stretch of input: counted by kind, and the first 20 said.
    pub(crate) fn skipped(&mut self, error: &source::RecordError, name: &str) {
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

/// A file's modification time in nanoseconds since 1970, if it has one.
fn modified_ns(path: &std::path::Path) -> Option<u64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    u64::try_from(modified.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos()).ok()
}

/// Whether the file `name` is the input a checkpoint's position `at` read: `Ok(true)` when it has
/// grown past what was read, `Ok(false)` when it is as it was; an error naming what differs when
/// its first bytes are not those the checkpoint read. A file read to its end whose size and
/// modification time are unchanged is not read again. Inputs that are not files (stdin, a range
/// of a file, an embedded one) and positions without a digest are taken as they are.
fn same_input(name: &str, at: &InputProgress) -> Result<bool, RunError> {
    let path = std::path::Path::new(name);
    let Some(read) = at.read.filter(|_| path.is_file()) else { return Ok(false) };
    let changed = |why: String| RunError::InputChanged { input: name.to_string(), why };
    // A WACZ is read as the stream of its WARC members (`source::wacz`).
    let archive = crate::source::wacz::is_archive(path);
    let size = match archive {
        true => crate::source::wacz::stored_bytes(path).unwrap_or(0),
        false => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
    };
    if at.done
        && size == read.bytes
        && at.modified_ns.is_some()
        && at.modified_ns == modified_ns(path)
    {
        return Ok(false);
    }
    let now = match archive {
        true => crate::source::wacz::Members::open(path)
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|members| read.of_reader(members)),
        false => read.of_file(path),
    };
    match now {
        Ok(Some(now)) if now == read => Ok(size > read.bytes),
        Ok(Some(_)) => Err(changed(format!(
            "its first {} bytes differ from those the checkpoint read",
            read.bytes
        ))),
        Ok(None) => Err(changed(format!(
            "it is {size} bytes, shorter than the {} the checkpoint read",
            read.bytes
        ))),
        Err(error) => Err(changed(format!("it cannot be read: {error}"))),
    }
}

mod deletions;
mod epochs;
pub use epochs::EpochClock;
mod feed;
#[cfg(test)]
mod tests;

pub(crate) use feed::read_feed;
