//! What belongs to the process, not to a run: the panic hook, the allocator's pressure hook,
//! the stop signals and the scratch paths a forced exit removes. Everything a run holds (its
//! stores, spill and footprint) is its own (`dupflow_operators::run::Runtime`); these are the
//! process's only globals.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Once, OnceLock};
use std::time::Duration;

/// What the process does under memory pressure (registered once, by the binary).
static PRESSURE_HOOK: OnceLock<fn()> = OnceLock::new();

/// Registers what the process does once its resident memory passes
/// `dataflow::memory::PRESSURE_SHARE` of a run's limit: the binary makes its allocator return
/// freed memory at once rather than after a delay (docs/faq.md#memory). A second call is
/// ignored.
pub fn on_memory_pressure(hook: fn()) {
    let _ = PRESSURE_HOOK.set(hook);
}

/// The registered pressure hook, if any.
pub fn pressure_hook() -> Option<fn()> {
    PRESSURE_HOOK.get().copied()
}

std::thread_local! {
    /// Where the last panic of this thread happened (`file:line`), for its error line.
    static PANIC_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Panics in runs' own threads (workers, readers) are caught and become their run's error,
/// one line with their place (`panic_place`): the default report (and backtrace) is left out
/// for them, and kept for every other thread.
pub fn catch_run_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let name = std::thread::current().name().unwrap_or("").to_string();
            if name.starts_with("timely:work") || name.starts_with("dupflow-reader") {
                let at = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
                PANIC_AT.with(|cell| *cell.borrow_mut() = at);
            } else {
                default(info);
            }
        }));
    });
}

/// Where this thread's last caught panic happened, once.
pub fn panic_place() -> Option<String> {
    PANIC_AT.with(|cell| cell.borrow_mut().take())
}

/// Set by SIGINT and SIGTERM (or `request_stop`): every run of the process stops reading.
static STOP: AtomicBool = AtomicBool::new(false);
/// SIGINT and SIGTERM received so far.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// Makes SIGINT and SIGTERM request a clean stop: reading stops, the last epoch closes, the
/// outputs are written, and the process exits 0. A run that has not ended `grace` after the
/// first signal, or a second signal, ends the process at once: its scratch paths are removed,
/// one line says what was not finished, and the exit code is 2.
pub fn install_stop_handler(grace: Duration) -> std::io::Result<()> {
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // SAFETY: the action only stores and increments atomics, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(signal, || {
                STOP.store(true, Ordering::SeqCst);
                SIGNALS.fetch_add(1, Ordering::SeqCst);
            })?;
        }
    }
    std::thread::Builder::new().name("dupflow-stop".into()).spawn(move || {
        while SIGNALS.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        let first = std::time::Instant::now();
        while SIGNALS.load(Ordering::SeqCst) < 2 && first.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(20));
        }
        remove_scratch();
        let why = if SIGNALS.load(Ordering::SeqCst) >= 2 {
            "a second signal".to_string()
        } else {
            format!(
                "the run did not finish within {} s of the signal (run.stop_timeout_secs)",
                grace.as_secs()
            )
        };
        eprintln!(
            "error: stopped at once by {why}: the outputs of this run are incomplete; a checkpoint, if any, is the last one committed"
        );
        std::process::exit(2);
    })?;
    Ok(())
}

/// Asks every run of the process to stop reading, as a signal would.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Whether a stop was requested (a signal, `request_stop`).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Scratch paths alive now (`files::Scratch`), removed by `remove_scratch` on a forced exit.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The registered scratch paths.
pub fn scratch() -> MutexGuard<'static, Vec<PathBuf>> {
    SCRATCH.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes every scratch path still registered: the exit path of a fatal error or a forced
/// stop, where threads that hold guards may never drop them.
pub fn remove_scratch() {
    let paths = std::mem::take(&mut *scratch());
    for path in &paths {
        remove_path(path);
    }
}

/// `remove_scratch` for the registered paths under `dir` alone (a test's, beside other tests'
/// files in flight).
#[cfg(test)]
pub(crate) fn remove_scratch_under(dir: &Path) {
    let mut registered = scratch();
    let (under, others) = registered.drain(..).partition(|path| path.starts_with(dir));
    *registered = others;
    drop(registered);
    let under: Vec<PathBuf> = under;
    for path in &under {
        remove_path(path);
    }
}

/// Removes a file or a folder with what it holds, whichever `path` is.
pub(crate) fn remove_path(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}
