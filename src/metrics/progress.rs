//! Progress while replaying: a bar on a terminal (bytes of total, pages/s, ETA), a plain line
//! every 10 seconds otherwise, nothing with `--quiet`. The same thread samples the live view
//! once a second (time series and cluster gauges).

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::live::Live;
use super::{BYTES_READ, INPUT_BYTES, PAGES};

pub struct Progress {
    /// Dropped to stop the thread: it wakes at once, not at its next tick.
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Progress {
    pub fn stop(mut self) {
        drop(self.stop.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Starts the sampler (and the progress output unless `quiet`).
pub fn start(live: Arc<Live>, quiet: bool) -> Progress {
    let (stop, stopped) = mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name("dupflow-progress".into())
        .spawn(move || {
            let terminal = std::io::stderr().is_terminal();
            let started = Instant::now();
            let mut last_line = Instant::now();
            let mut drawn = false;
            loop {
                // A tick every 250 ms; the run's end wakes the thread at once (a sleep here
                // added up to a tick to every run's wall time).
                let stopping = !matches!(stopped.recv_timeout(Duration::from_millis(250)), Err(RecvTimeoutError::Timeout));
                if started.elapsed().as_millis() % 1000 < 250 || stopping {
                    live.sample();
                }
                if stopping {
                    break;
                }
                if quiet || live.is_finished() {
                    continue;
                }
                let r = &live.registry;
                let (read, total, pages) = (r.get(BYTES_READ, ""), r.get(INPUT_BYTES, ""), r.get(PAGES, ""));
                let secs = started.elapsed().as_secs_f64().max(1e-3);
                let rate = pages as f64 / secs;
                let line = if total > 0 {
                    let share = (read as f64 / total as f64).min(1.0);
                    let eta = if share > 0.0 { secs * (1.0 - share) / share } else { 0.0 };
                    let filled = (share * 30.0) as usize;
                    format!(
                        "[{}{}] {:>5.1}% {} / {} MB, {pages} pages, {rate:.0} pages/s, ETA {eta:.0} s",
                        "#".repeat(filled),
                        "-".repeat(30 - filled),
                        share * 100.0,
                        read / 1_000_000,
                        total / 1_000_000
                    )
                } else {
                    format!("{} MB read, {pages} pages, {rate:.0} pages/s", read / 1_000_000)
                };
                if terminal {
                    eprint!("\r{line}\x1b[K");
                    let _ = std::io::stderr().flush();
                    drawn = true;
                } else if last_line.elapsed() >= Duration::from_secs(10) {
                    tracing::info!("progress: {line}");
                    last_line = Instant::now();
                }
            }
            if drawn {
                eprint!("\r\x1b[K");
            }
        })
        .expect("progress thread");
    Progress { stop: Some(stop), handle: Some(handle) }
}
