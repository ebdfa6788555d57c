//! Progress while replaying: a bar on a terminal (bytes of total, pages/s, ETA), a plain line
//! every 10 seconds otherwise, nothing with `--quiet`. The same thread samples the live view
//! once a second (time series and cluster gauges).

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::live::Live;
use super::{BYTES_READ, INPUT_BYTES, PAGES};

pub struct Progress {
    /// Dropped to stop the thread: it wakes at once, not at its next tick.
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
    line: Arc<Mutex<Line>>,
}

/// The progress line on a terminal: drawn or not, and whether it may be drawn again.
#[derive(Default)]
struct Line {
    drawn: bool,
    ended: bool,
}

impl Line {
    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[K");
            let _ = std::io::stderr().flush();
            self.drawn = false;
        }
    }
}

impl Progress {
    /// Ends the progress output (the line is cleared; the sampling goes on), so that what is
    /// printed next starts on a clean line.
    pub fn end_output(&self) {
        let mut line = self.line.lock().unwrap_or_else(|e| e.into_inner());
        line.clear();
        line.ended = true;
    }

    pub fn stop(mut self) {
        self.end_output();
        drop(self.stop.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Starts the sampler (and the progress output unless `quiet`).
pub fn start(live: Arc<Live>, quiet: bool) -> Progress {
    let (stop, stopped) = mpsc::channel::<()>();
    let line = Arc::new(Mutex::new(Line::default()));
    let shared = line.clone();
    let handle = std::thread::Builder::new()
        .name("dupflow-progress".into())
        .spawn(move || {
            let terminal = std::io::stderr().is_terminal();
            let started = Instant::now();
            let mut last_line = Instant::now();
            let mut before_pages = (started, 0);
            loop {
                // A tick every 250 ms; the run's end wakes the thread at once (a sleep here
                // added up to a tick to every run's wall time).
                let stopping = !matches!(
                    stopped.recv_timeout(Duration::from_millis(250)),
                    Err(RecvTimeoutError::Timeout)
                );
                if started.elapsed().as_millis() % 1000 < 250 || stopping {
                    live.sample();
                }
                if stopping {
                    break;
                }
                let ended = shared.lock().unwrap_or_else(|e| e.into_inner()).ended;
                if quiet || ended || live.is_finished() {
                    continue;
                }
                let r = &live.registry;
                let (read, total, pages) =
                    (r.get(BYTES_READ, ""), r.get(INPUT_BYTES, ""), r.get(PAGES, ""));
                // Rates run from the last tick before the first page: a resume reads past what
                // its checkpoint holds before it, and those bytes are no page of this run's.
                if pages == 0 {
                    before_pages = (Instant::now(), read);
                }
                let (since, skipped) = before_pages;
                let secs = since.elapsed().as_secs_f64().max(1e-3);
                let line = progress_line(read, total, pages, skipped, secs);
                if terminal {
                    let mut drawing = shared.lock().unwrap_or_else(|e| e.into_inner());
                    if !drawing.ended {
                        eprint!("\r{line}\x1b[K");
                        let _ = std::io::stderr().flush();
                        drawing.drawn = true;
                    }
                } else if last_line.elapsed() >= Duration::from_secs(10) {
                    tracing::info!("progress: {line}");
                    last_line = Instant::now();
                }
            }
            shared.lock().unwrap_or_else(|e| e.into_inner()).clear();
        })
        .expect("progress thread");
    Progress { stop: Some(stop), handle: Some(handle), line }
}

/// Progress of a pass that reads the inputs again (`dedup`'s census and its writing): a bar of
/// the inputs' bytes read, drawn on a terminal (nothing elsewhere), cleared when it stops.
pub struct Pass {
    shared: Arc<PassState>,
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

/// Bytes of the inputs read before the current one, and the current one's count.
type Reading = Box<dyn Fn() -> u64 + Send>;

struct PassState {
    label: String,
    total: u64,
    done: std::sync::atomic::AtomicU64,
    current: Mutex<Option<Reading>>,
}

impl PassState {
    fn read(&self) -> u64 {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        self.done.load(std::sync::atomic::Ordering::Relaxed) + current.as_ref().map_or(0, |c| c())
    }
}

impl Pass {
    /// A pass over `total` bytes of inputs; `label` says what it does.
    pub fn start(label: &str, total: u64) -> Pass {
        let shared = Arc::new(PassState {
            label: label.to_string(),
            total,
            done: Default::default(),
            current: Mutex::new(None),
        });
        if !std::io::stderr().is_terminal() {
            return Pass { shared, stop: None, handle: None };
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let state = shared.clone();
        let handle = std::thread::Builder::new()
            .name("dupflow-pass".into())
            .spawn(move || {
                let started = Instant::now();
                let mut drawn = false;
                while let Err(RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(Duration::from_millis(250))
                {
                    let read = state.read();
                    let share = if state.total > 0 {
                        (read as f64 / state.total as f64).min(1.0)
                    } else {
                        0.0
                    };
                    let secs = started.elapsed().as_secs_f64();
                    let eta = if read > 0 {
                        secs * state.total.saturating_sub(read) as f64 / read as f64
                    } else {
                        0.0
                    };
                    eprint!(
                        "\r{} {}: {} / {} MB, ETA {eta:.0} s\x1b[K",
                        bar(share),
                        state.label,
                        read / 1_000_000,
                        state.total / 1_000_000
                    );
                    let _ = std::io::stderr().flush();
                    drawn = true;
                }
                if drawn {
                    eprint!("\r\x1b[K");
                    let _ = std::io::stderr().flush();
                }
            })
            .ok();
        Pass { shared, stop: Some(stop), handle }
    }

    /// The next input is being read: `read` counts its bytes so far.
    pub fn reading(&self, read: impl Fn() -> u64 + Send + 'static) {
        let mut current = self.shared.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(previous) = current.take() {
            self.shared.done.fetch_add(previous(), std::sync::atomic::Ordering::Relaxed);
        }
        *current = Some(Box::new(read));
    }

    /// Ends the pass, its line cleared.
    pub fn stop(mut self) {
        drop(self.stop.take());
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// One line of progress: where the reading is in the inputs (`read` of `total` bytes, when
/// known), the pages of this run and their rate, and the time left at the rate the bytes after
/// `skipped` (read before the first page: a resume's way past what its checkpoint holds) were
/// read in `secs`.
fn progress_line(read: i64, total: i64, pages: i64, skipped: i64, secs: f64) -> String {
    let rate = pages as f64 / secs;
    let pages_word = if pages == 1 { "page" } else { "pages" };
    if total <= 0 {
        return format!("{} MB read, {pages} {pages_word}, {rate:.0} pages/s", read / 1_000_000);
    }
    let share = (read as f64 / total as f64).min(1.0);
    let done = (read - skipped).max(0) as f64;
    let eta = if done > 0.0 { secs * (total - read).max(0) as f64 / done } else { 0.0 };
    format!(
        "{} {} / {} MB, {pages} {pages_word}, {rate:.0} pages/s, ETA {eta:.0} s",
        bar(share),
        read / 1_000_000,
        total / 1_000_000
    )
}

/// `[#####-------…]  17.0%`: a share of 30 marks and its percentage.
fn bar(share: f64) -> String {
    let filled = ((share.clamp(0.0, 1.0)) * 30.0) as usize;
    format!("[{}{}] {:>5.1}%", "#".repeat(filled), "-".repeat(30 - filled), share * 100.0)
}

#[cfg(test)]
mod tests {
    use super::progress_line;

    #[test]
    fn a_resume_counts_its_own_pages_and_times_what_is_left_by_its_own_reading() {
        // A fresh run, a quarter read in 10 s: 30 s left.
        let line = progress_line(25_000_000, 100_000_000, 1000, 0, 10.0);
        assert!(line.contains(" 25.0% 25 / 100 MB, 1000 pages, 100 pages/s, ETA 30 s"), "{line}");
        // A resume that passed 50 MB held by its checkpoint, then read 25 MB in 10 s: 10 s left.
        let line = progress_line(75_000_000, 100_000_000, 1000, 50_000_000, 10.0);
        assert!(line.contains(" 75.0% 75 / 100 MB, 1000 pages, 100 pages/s, ETA 10 s"), "{line}");
        assert!(progress_line(0, 0, 1, 0, 1.0).ends_with("1 page, 1 pages/s"));
    }
}
