//! A file of the run's own (a store, a spill file) that could not be made, written or read. It
//! is no input's fault and nothing can go on without it; it is met deep inside an operator, where
//! no error can be returned, so it unwinds as a `DiskFailure` payload, which the run reports as
//! its failure: the file and the error in one line, not as a panic of the code.

/// The payload of a failure of the run's own files: what could not be done, with the file and
/// the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFailure(pub String);

/// Stops the operator with a `DiskFailure` saying `message`.
pub fn fail(message: impl std::fmt::Display) -> ! {
    std::panic::panic_any(DiskFailure(message.to_string()))
}
