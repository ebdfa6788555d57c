//! The type of an arrangement that more than one operator reads.
//!
//! `Collection::reduce` or a join arranges its input anew, so two readers of one collection
//! hold it twice. Arranging once and handing the arrangement around holds it once: the edges
//! stage's members serve both the verification and its bookkeeping.

use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::implementations::ValSpine;

/// An arrangement of `(K, V)` with `isize` differences.
pub type ByKey<'scope, K, V, T> = Arranged<'scope, TraceAgent<ValSpine<K, V, T, isize>>>;
