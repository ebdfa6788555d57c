//! The reader thread's loop: inputs read once or followed (files, directories, stdin), each
//! item handed to the core, the quiet input's periodic work, and the report at the end.

use super::*;

pub(crate) type Core = Arc<Mutex<ReaderCore>>;

fn lock(core: &Core) -> std::sync::MutexGuard<'_, ReaderCore> {
    core.lock().expect("reader core")
}

/// Items of a decoded stream (WARC records or JSONL rows) into the core until its end.
fn pump(core: &Core, decoder: source::Decoder, name: &str, settings: &ReadSettings) {
    pump_items(core, Items::from_decoder(decoder, settings.max_record_bytes, &settings.text), name)
}

fn pump_items(core: &Core, mut items: Items, name: &str) {
    let metrics = {
        let mut c = lock(core);
        c.reading = items.counter();
        c.metrics.clone()
    };
    let mut counted = 0u64;
    while let Some(item) = items.next_item() {
        let mut c = lock(core);
        c.take(item, name);
        c.age_check();
        let failed = c.abort.raised();
        drop(c);
        let read = items.bytes_read();
        if read > counted {
            metrics.add(metrics::BYTES_READ, "", (read - counted) as i64);
            counted = read;
        }
        if failed || crate::process::stop_requested() {
            break;
        }
    }
    metrics.add(metrics::BYTES_READ, "", items.bytes_read().saturating_sub(counted) as i64);
}

/// A WACZ archive of a followed target, read whole; one that cannot be read is damage.
fn read_archive(core: &Core, path: &std::path::Path, name: &str, settings: &ReadSettings) {
    match Items::open(&Input::Wacz(path.to_path_buf()), settings.max_record_bytes, &settings.text) {
        Ok(items) => pump_items(core, items, name),
        Err(e) => match damage_of(&e) {
            Some(kind) => {
                lock(core).skipped(&source::RecordError::new(kind, 0, e.to_string()), name)
            }
            None => open_failed(core, name, e),
        },
    }
}

/// An input that cannot be opened stops the run: the user named it, and a run that went on
/// would cluster a corpus without it.
fn open_failed(core: &Core, name: &str, error: impl std::fmt::Display) {
    let message = error.to_string();
    let message =
        if message.contains(name) { message } else { format!("cannot open {name}: {message}") };
    lock(core).abort.raise(RunError::Open(message));
}

/// The kind of damage an input that opened but cannot be read as its format has, if that is
/// what `error` is (else it is a failure to open it).
fn damage_of(error: &source::SourceError) -> Option<source::RecordErrorKind> {
    match error {
        source::SourceError::Archive { .. } => Some(source::RecordErrorKind::InvalidArchive),
        #[cfg(feature = "parquet")]
        source::SourceError::Parquet(e) => e.damage(),
        _ => None,
    }
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

/// Whether the reading of followed targets goes on after one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Stop,
}

/// Followed targets in order until a stop is requested: files (complete once the next target
/// exists), directories (new files in name order) and stdin.
fn read_followed(targets: &[Followed], core: &Core, settings: &ReadSettings) {
    let multiple = targets.len() > 1;
    let part = lock(core).part;
    for (t, target) in targets.iter().enumerate() {
        if !matches!(target, Followed::Dir(_)) && !part.takes_index(t) {
            continue;
        }
        let flow = match target {
            Followed::Stdin => follow_stdin(core, settings),
            Followed::File(path) => {
                // Several followed files: one is complete when the next one exists.
                let next = targets.get(t + 1).cloned().filter(|_| multiple);
                follow_file(core, path, next, settings)
            }
            Followed::Dir(dir) => follow_dir(core, dir, settings),
        };
        if flow == Flow::Stop {
            break;
        }
    }
}

fn follow_stdin(core: &Core, settings: &ReadSettings) -> Flow {
    if !lock(core).begin("-") {
        return Flow::Next;
    }
    let reader = follow::StdinPump::start(waiter(core, Box::new(|| false)));
    match source::Decoder::new(Box::new(reader)) {
        Ok(d) => pump(core, d, "-", settings),
        Err(e) => open_failed(core, "-", e),
    }
    lock(core).end_input();
    Flow::Next
}

/// A followed file, read as it grows until `next` (the following target) exists.
fn follow_file(
    core: &Core,
    path: &std::path::Path,
    next: Option<Followed>,
    settings: &ReadSettings,
) -> Flow {
    let name = path.display().to_string();
    if !lock(core).begin(&name) {
        return Flow::Next;
    }
    let finished = Box::new(move || match &next {
        Some(Followed::File(p)) | Some(Followed::Dir(p)) => p.exists(),
        _ => false,
    });
    // A file the crawler has not created yet: wait for it.
    while !path.exists() {
        if lock(core).tick() == follow::Wait::Finish {
            return Flow::Stop;
        }
        std::thread::sleep(follow::POLL);
    }
    if source::wacz::is_archive(path) {
        // A WACZ is written whole, not grown: it is read as it is.
        read_archive(core, path, &name, settings);
        lock(core).end_input();
        return Flow::Next;
    }
    let opened = follow::TailFile::open(path, waiter(core, finished))
        .and_then(|r| source::Decoder::new(Box::new(r)))
        .map_err(|error| source::SourceError::Open { path: path.to_path_buf(), error });
    match opened {
        Ok(d) => pump(core, d, &name, settings),
        Err(e) => open_failed(core, &name, e),
    }
    lock(core).end_input();
    Flow::Next
}

/// A followed directory: its files in name order as they appear, each complete once a later
/// one exists, until a stop.
fn follow_dir(core: &Core, dir: &std::path::Path, settings: &ReadSettings) -> Flow {
    let part = lock(core).part;
    let later = |me: &std::path::Path| follow::list_dir(dir).iter().any(|f| f.as_path() > me);
    loop {
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
        // None yet, or a WACZ being written (no ZIP directory yet: it is read once it has one,
        // or passed over as damaged once a later file appears): wait.
        let waiting = next.as_ref().is_none_or(|file| {
            source::wacz::is_archive(file) && source::wacz::members(file).is_err() && !later(file)
        });
        let Some(file) = next.filter(|_| !waiting) else {
            if lock(core).tick() == follow::Wait::Finish {
                return Flow::Stop;
            }
            std::thread::sleep(follow::POLL);
            continue;
        };
        let name = file.display().to_string();
        if !lock(core).begin(&name) {
            continue;
        }
        if source::wacz::is_archive(&file) {
            read_archive(core, &file, &name, settings);
            lock(core).end_input();
            continue;
        }
        let (dir2, me) = (dir.to_path_buf(), file.clone());
        let finished = Box::new(move || follow::list_dir(&dir2).iter().any(|f| f > &me));
        let opened = follow::TailFile::open(&file, waiter(core, finished))
            .and_then(|r| source::Decoder::new(Box::new(r)))
            .map_err(|error| source::SourceError::Open { path: file.clone(), error });
        match opened {
            Ok(d) => pump(core, d, &name, settings),
            Err(e) => open_failed(core, &name, e),
        }
        if crate::process::stop_requested() {
            return Flow::Stop;
        }
        lock(core).end_input();
    }
}

/// The reader thread: every input in order, each record to the worker that owns its URL.
pub(crate) fn read_feed(feed: Feed, core: Core, settings: ReadSettings) -> ReaderReport {
    match feed {
        Feed::Inputs(inputs) => {
            for input in inputs {
                if crate::process::stop_requested() || lock(&core).abort.raised() {
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
                    Err(e) => match damage_of(&e) {
                        // A file whose content is damaged is skipped, counted and named; the
                        // other inputs are read.
                        Some(kind) => lock(&core)
                            .skipped(&source::RecordError::new(kind, 0, e.to_string()), &name),
                        None => open_failed(&core, &name, e),
                    },
                }
                lock(&core).end_input();
            }
            lock(&core).poll_deletions();
        }
        Feed::Follow(targets) => read_followed(&targets, &core, &settings),
        #[cfg(feature = "testing")]
        Feed::Script(items) => read_script(items, &core, &settings),
    }
    let mut core = lock(&core);
    core.finish();
    ReaderReport { empty_inputs: std::mem::take(&mut core.empty_inputs) }
}

/// A scripted feed (test support): its WARC bytes, deletions and epoch boundaries, in order.
#[cfg(feature = "testing")]
fn read_script(items: Vec<ScriptItem>, core: &Core, settings: &ReadSettings) {
    lock(core).begin("script");
    for item in items {
        match item {
            ScriptItem::Warc(bytes) => {
                match source::Decoder::new(Box::new(std::io::Cursor::new(bytes))) {
                    Ok(d) => pump(core, d, "script", settings),
                    Err(error) => {
                        let path = "script".into();
                        open_failed(core, "script", source::SourceError::Open { path, error })
                    }
                }
            }
            ScriptItem::Delete(url) => lock(core).delete(&url),
            ScriptItem::CloseEpoch => {
                let mut c = lock(core);
                if c.in_epoch > 0 {
                    c.close_epoch();
                }
            }
        }
    }
}
