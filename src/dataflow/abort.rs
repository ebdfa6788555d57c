//! The run's failure: the first error of any of its threads (a reader, a worker, the sink, a
//! checkpoint), kept once and seen by all. The reader leaves its waits when it is raised,
//! workers leave their loop and drop their dataflow, and the run returns that error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use dupflow_operators::runtime::disk::DiskFailure;

use crate::types::RunError;

#[derive(Debug, Default)]
pub struct Abort {
    raised: AtomicBool,
    first: Mutex<Option<RunError>>,
}

impl Abort {
    /// Records `error` unless another was recorded first; every thread of the run stops.
    pub fn raise(&self, error: RunError) {
        let mut first = self.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if first.is_none() {
            *first = Some(error);
        }
        self.raised.store(true, Ordering::SeqCst);
    }

    pub fn raised(&self) -> bool {
        self.raised.load(Ordering::Relaxed)
    }

    /// The first error, once.
    pub fn take(&self) -> Option<RunError> {
        self.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
}

/// The run's error for a caught panic: a failure of the run's own files (`DiskFailure`) as
/// itself, any other panic as a worker's (`what` says whose).
pub fn panic_error(payload: &(dyn std::any::Any + Send), what: &str) -> RunError {
    match payload.downcast_ref::<DiskFailure>() {
        Some(failure) => {
            crate::process::panic_place();
            RunError::Disk(failure.0.clone())
        }
        None => RunError::Panicked { whose: what.to_string(), message: panic_message(payload) },
    }
}

/// A caught panic's message (`&str` or `String` payloads; others are named as such), with its
/// place when the hook of `process::catch_run_panics` saw it.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(failure) = payload.downcast_ref::<DiskFailure>() {
        crate::process::panic_place();
        return failure.0.clone();
    }
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    match crate::process::panic_place() {
        Some(at) => format!("{message} (at {at})"),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_error_is_kept() {
        let abort = Abort::default();
        assert!(!abort.raised());
        abort.raise(RunError::Worker("first".into()));
        abort.raise(RunError::Worker("second".into()));
        assert!(abort.raised());
        assert_eq!(abort.take().unwrap().to_string(), "a worker failed: first");
        assert!(abort.take().is_none());
    }

    #[test]
    fn a_panic_names_whose_it_was() {
        let payload: Box<dyn std::any::Any + Send> = Box::new("boom".to_string());
        let err = panic_error(&*payload, "the reader");
        assert!(matches!(&err, RunError::Panicked { whose, .. } if whose == "the reader"), "{err}");
        assert!(err.to_string().starts_with("a worker failed: the reader panicked: boom"), "{err}");
    }
}
