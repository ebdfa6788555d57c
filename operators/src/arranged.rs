//! Reductions over an arrangement that other operators also read.
//!
//! `Collection::reduce` arranges its input anew, so two reductions of one collection (or a
//! join and a reduction) hold it twice. Arranging once and reducing the arrangement holds it
//! once: the groups verification and its bookkeeping share one arrangement, the template
//! stage's sentence holders serve both the document frequencies and the lookup of a template
//! sentence's pages.

use differential_dataflow::difference::Abelian;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::implementations::{ValBuilder, ValSpine};
use differential_dataflow::{ExchangeData, Hashable, VecCollection};
use timely::progress::Timestamp;

/// An arrangement of `(K, V)` with `isize` differences.
pub type ByKey<'scope, K, V, T> = Arranged<'scope, TraceAgent<ValSpine<K, V, T, isize>>>;

/// `reduce` (named `name`) over an existing arrangement: `logic` sees a key and its values
/// with their counts, as `Collection::reduce_named`'s does.
pub fn reduce<'scope, K, V, V2, R2, T, L>(arranged: ByKey<'scope, K, V, T>, name: &str, logic: L) -> VecCollection<'scope, T, (K, V2), R2>
where
    K: ExchangeData + Hashable,
    V: ExchangeData,
    V2: ExchangeData,
    R2: Ord + Abelian + ExchangeData,
    T: Timestamp + Lattice + Ord,
    L: FnMut(&K, &[(&V, isize)], &mut Vec<(V2, R2)>) + 'static,
{
    arranged
        .reduce_abelian::<_, ValBuilder<_, _, _, _>, ValSpine<K, V2, T, R2>, _, _>(name, logic, |vec, key: &K, updates| {
            vec.clear();
            vec.extend(updates.drain(..).map(|(v, t, r)| ((key.clone(), v), t, r)));
        })
        .as_collection(|k, v| (k.clone(), v.clone()))
}
