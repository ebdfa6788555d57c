//! Updates held by time until the input frontier passes them.
//!
//! The operators that keep their own state (`groups`, `holders`, `components`, `exact`,
//! `repeated`, `assign`, `filter`, and `distinct` below) apply a time's updates only once the
//! time is complete, and complete times one at a time, in order (timestamps are totally
//! ordered): the same updates then give the same output whatever the worker count or batch
//! boundaries. `ByTime` is that holding: each time's capability, its updates, and what else the
//! operator leaves to that time (`extra`).

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::Arc;

use differential_dataflow::{AsCollection, ExchangeData, VecCollection};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Capability, InputCapability};
use timely::progress::frontier::MutableAntichain;
use timely::progress::Timestamp;

use crate::runtime::footprint::{hash_table, Gauged, Structure, Totals};
use crate::runtime::hashing::Mixed;

/// One time's holding.
pub struct Held<T: Timestamp, D, X> {
    /// Where the time's output is sent.
    pub capability: Capability<T>,
    pub updates: Vec<D>,
    /// What the operator left to this time besides its input (`Default` until then).
    pub extra: X,
}

/// Each time's updates, held until the frontier passes it.
pub struct ByTime<T: Timestamp, D, X = ()> {
    times: BTreeMap<T, Held<T, D, X>>,
}

impl<T: Timestamp, D, X: Default> Default for ByTime<T, D, X> {
    fn default() -> Self {
        ByTime { times: BTreeMap::new() }
    }
}

impl<T: Timestamp, D, X: Default> ByTime<T, D, X> {
    /// Holds a batch of the input (`(data, time, diff)` updates, drained), each update as `f`
    /// makes it.
    pub fn hold<U>(
        &mut self,
        capability: &InputCapability<T>,
        batch: &mut Vec<(U, T, isize)>,
        mut f: impl FnMut(U, isize) -> D,
    ) {
        for (data, time, diff) in batch.drain(..) {
            self.held(time, |time| capability.delayed(time, 0)).updates.push(f(data, diff));
        }
    }

    /// The holding of `time`, a time not earlier than `capability`'s: for what a time leaves to
    /// a later one.
    pub fn later(&mut self, capability: &Capability<T>, time: T) -> &mut Held<T, D, X> {
        self.held(time, |time| capability.delayed(time))
    }

    /// The holding of `time`, made with the capability `delayed` gives for it if there is none.
    fn held(&mut self, time: T, delayed: impl FnOnce(&T) -> Capability<T>) -> &mut Held<T, D, X> {
        self.times.entry(time).or_insert_with_key(|time| Held {
            capability: delayed(time),
            updates: Vec::new(),
            extra: X::default(),
        })
    }

    /// Whether the earliest time held is complete (the frontier has passed it).
    pub fn ready(&self, frontier: &MutableAntichain<T>) -> bool {
        self.times.first_key_value().is_some_and(|(time, _)| !frontier.less_equal(time))
    }

    /// The earliest time held and its holding, if it is complete.
    pub fn pop_ready(&mut self, frontier: &MutableAntichain<T>) -> Option<(T, Held<T, D, X>)> {
        if self.ready(frontier) {
            self.times.pop_first()
        } else {
            None
        }
    }
}

/// A record of a time's input that carries keys: a page and those of its keys (sorted,
/// distinct) that are one worker's (`by_worker`). An operator keyed by fingerprint or sentence
/// holds such a record a page and worker, where an update a key held the page again with each.
pub trait Keyed {
    fn keys(&self) -> &[u64];
}

/// Splits `keys` (distinct) by the worker of each (`route(key)` modulo `peers`, as timely's
/// exchange sends a datum): each worker's keys, sorted (a `Keyed` record's), workers that get
/// none left out.
pub fn by_worker(
    keys: impl IntoIterator<Item = u64>,
    peers: usize,
    route: impl Fn(u64) -> u64,
) -> Vec<(u64, Vec<u64>)> {
    let mut split = vec![Vec::new(); peers];
    for key in keys {
        split[(route(key) % peers as u64) as usize].push(key);
    }
    split
        .into_iter()
        .enumerate()
        .filter(|(_, keys)| !keys.is_empty())
        .map(|(worker, mut keys)| {
            keys.sort_unstable();
            (worker as u64, keys)
        })
        .collect()
}

/// A complete time's records (`Keyed`) listed in key order, in passes over ranges of keys of
/// about `pass_updates` keys each: every `(key, record)` pair once, and never a list of all of a
/// time's pairs at once (a template refresh changes many pages). Keys are hashes, so equal
/// ranges of them hold about equal shares.
pub struct Passes {
    /// Per record, how many of its keys earlier passes took.
    taken: Vec<u32>,
    passes: u64,
    made: u64,
}

impl Passes {
    pub fn new<R: Keyed>(records: &[R], pass_updates: usize) -> Self {
        let pairs: usize = records.iter().map(|r| r.keys().len()).sum();
        let passes = pairs.div_ceil(pass_updates.max(1)).max(1) as u64;
        Passes { taken: vec![0; records.len()], passes, made: 0 }
    }

    /// Lists the next pass's `(key, record index)` pairs in `pairs`, sorted: the keys below its
    /// bound (the last pass: all the rest). False once every pass is made.
    pub fn next<R: Keyed>(&mut self, records: &[R], pairs: &mut Vec<(u64, u32)>) -> bool {
        if self.made == self.passes {
            return false;
        }
        // This pass's keys are `low..bound`: earlier passes took those below `low`.
        let low = (((self.made as u128) << 64) / self.passes as u128) as u64;
        self.made += 1;
        let bound =
            (self.made < self.passes).then(|| ((self.made as u128) << 64) / self.passes as u128);
        let span = bound.unwrap_or(1 << 64) - low as u128;
        fn taken_in<R: Keyed>(record: &R, taken: u32, bound: Option<u128>) -> &[u64] {
            let rest = &record.keys()[taken as usize..];
            &rest[..bound.map_or(rest.len(), |b| rest.partition_point(|&key| (key as u128) < b))]
        }
        // Listed by a counting sort on the keys' top bits below `span` (keys are hashes, so the
        // buckets hold a few pairs each), then each bucket sorted: what sorting the whole list
        // gives, without its log n passes over it.
        let listed: usize = records
            .iter()
            .zip(&self.taken)
            .map(|(record, &taken)| taken_in(record, taken, bound).len())
            .sum();
        let bucket_bits = (listed / BUCKET_PAIRS).max(1).ilog2().min(MAX_BUCKET_BITS);
        let shift = (u128::BITS - (span - 1).leading_zeros()).saturating_sub(bucket_bits);
        let bucket = |key: u64| ((key - low) as u128 >> shift) as usize;
        let mut starts = vec![0u32; (1 << bucket_bits) + 1];
        for (record, &taken) in records.iter().zip(&self.taken) {
            for &key in taken_in(record, taken, bound) {
                starts[bucket(key) + 1] += 1;
            }
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        pairs.clear();
        pairs.resize(listed, (0, 0));
        for (i, (record, taken)) in records.iter().zip(self.taken.iter_mut()).enumerate() {
            let keys = taken_in(record, *taken, bound);
            for &key in keys {
                let at = &mut starts[bucket(key)];
                pairs[*at as usize] = (key, i as u32);
                *at += 1;
            }
            *taken += keys.len() as u32;
        }
        // `starts[b]` is now where bucket `b + 1` starts.
        let mut start = 0;
        for &end in &starts[..starts.len() - 1] {
            pairs[start..end as usize].sort_unstable();
            start = end as usize;
        }
        true
    }
}

/// Pairs a bucket of `Passes::next`'s counting sort, about (fewer make more buckets to count).
const BUCKET_PAIRS: usize = 4;

/// At most 2^this buckets (a 256 KiB table of starts).
const MAX_BUCKET_BITS: u32 = 16;

/// An operator that keeps its own state: updates go to the worker `route` names, each time's
/// are applied (`apply`, one per worker, with the time's updates and a buffer for its changes)
/// once the input frontier has passed the time, times in order, and the changes come out at
/// that time. For operators with nothing to leave to a later time (`ByTime::later`).
pub fn in_time_order<'scope, T, D, O>(
    input: VecCollection<'scope, T, D, isize>,
    name: &str,
    route: impl Fn(&D) -> u64 + 'static,
    mut apply: impl FnMut(&mut Vec<(D, isize)>, &mut Vec<(O, isize)>) + 'static,
) -> VecCollection<'scope, T, O, isize>
where
    T: Timestamp + Ord,
    D: ExchangeData,
    O: ExchangeData,
{
    input
        .inner
        .unary_frontier::<CapacityContainerBuilder<Vec<(O, T, isize)>>, _, _, _>(
            Exchange::new(move |(data, _, _): &(D, T, isize)| route(data)),
            name,
            move |_capability, _info| {
                let mut pending: ByTime<T, (D, isize)> = ByTime::default();
                let mut out = Vec::new();
                move |(input, frontier), output| {
                    input.for_each(|capability, data| {
                        pending.hold(&capability, data, |data, diff| (data, diff))
                    });
                    // Times the frontier has passed are complete: apply them in order.
                    while let Some((time, Held { capability, mut updates, .. })) =
                        pending.pop_ready(frontier)
                    {
                        apply(&mut updates, &mut out);
                        output
                            .session(&capability)
                            .give_iterator(out.drain(..).map(|(o, d)| (o, time.clone(), d)));
                        release_large(&mut out);
                    }
                }
            },
        )
        .as_collection()
}

/// Capacity a buffer reused from time to time keeps: a large time's output is let go once it
/// is sent, not held beside every later time's state (on a template-heavy crawl the sibling
/// halves of its largest time are ~2.5 KB a page of the crawl).
pub const RETAINED_CAPACITY: usize = 4096;

/// Empties a drained buffer's capacity when it is over `RETAINED_CAPACITY`.
pub fn release_large<V>(buffer: &mut Vec<V>) {
    if buffer.capacity() > RETAINED_CAPACITY {
        *buffer = Vec::new();
    }
}

/// Differential's `distinct` as an operator of this shape: a record is in the output, once,
/// while its accumulated multiplicity is positive. `distinct` arranges its input and its output
/// (two updates a record, each with its time and difference, and again while a merge runs);
/// this holds one hash-map entry a record, the record and its count, and reports the table's
/// bytes as `structure` into `totals` (what the records point to is their holders').
pub fn distinct<'scope, T, D>(
    input: VecCollection<'scope, T, D, isize>,
    name: &str,
    (totals, structure): (&Arc<Totals>, Structure),
    route: impl Fn(&D) -> u64 + 'static,
) -> VecCollection<'scope, T, D, isize>
where
    T: Timestamp + Ord,
    D: ExchangeData + Hash,
{
    let mut gauged =
        Gauged::new(totals, structure, HashMap::<D, isize, Mixed>::default(), |counts| {
            hash_table(counts.capacity(), std::mem::size_of::<(D, isize)>())
        });
    in_time_order(input, name, route, move |updates, out| {
        differential_dataflow::consolidation::consolidate(updates);
        let counts = &mut gauged.state;
        for (data, diff) in updates.drain(..) {
            // One lookup a record: its count changed in place, the entry gone at zero.
            match counts.entry(data) {
                Entry::Occupied(mut held) => {
                    let (was, now) = (*held.get(), *held.get() + diff);
                    if (was > 0) != (now > 0) {
                        out.push((held.key().clone(), if now > 0 { 1 } else { -1 }));
                    }
                    if now == 0 {
                        held.remove();
                    } else {
                        *held.get_mut() = now;
                    }
                }
                Entry::Vacant(new) => {
                    if diff > 0 {
                        out.push((new.key().clone(), 1));
                    }
                    new.insert(diff);
                }
            }
        }
        gauged.report();
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_incremental, input_at, Rng};

    fn build(
        input: VecCollection<'_, u64, (u64, u64), isize>,
    ) -> VecCollection<'_, u64, (u64, u64), isize> {
        distinct(input, "Distinct", (&Default::default(), Structure::Edges), |&(a, b)| a ^ b)
    }

    struct Record(Vec<u64>);

    impl Keyed for Record {
        fn keys(&self) -> &[u64] {
            &self.0
        }
    }

    /// `count` records of up to `max_keys` keys each (sorted, distinct) drawn by `key`.
    fn records(
        rng: &mut Rng,
        count: u64,
        max_keys: u64,
        key: impl Fn(&mut Rng) -> u64,
    ) -> Vec<Record> {
        (0..count)
            .map(|_| {
                let mut keys: Vec<u64> = (0..rng.below(max_keys)).map(|_| key(rng)).collect();
                keys.sort_unstable();
                keys.dedup();
                Record(keys)
            })
            .collect()
    }

    /// Every `(key, record)` pair sorted whole: what the passes must list.
    fn all_pairs_sorted(records: &[Record]) -> Vec<(u64, u32)> {
        let mut all: Vec<(u64, u32)> = records
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.0.iter().map(move |&key| (key, i as u32)))
            .collect();
        all.sort_unstable();
        all
    }

    /// The pairs the passes list, in their order, and how many passes made them.
    fn listed(records: &[Record], pass_updates: usize) -> (Vec<(u64, u32)>, usize) {
        let mut passes = Passes::new(records, pass_updates);
        let (mut listed, mut pairs, mut made) = (Vec::new(), Vec::new(), 0);
        while passes.next(records, &mut pairs) {
            listed.extend_from_slice(&pairs);
            made += 1;
        }
        (listed, made)
    }

    #[test]
    fn passes_list_every_pair_once_in_key_order() {
        // Records of up to a dozen keys spread over the range of u64, in 1 to 40 passes.
        let records =
            records(&mut Rng(7), 20, 12, |rng| rng.below(40).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let expected = all_pairs_sorted(&records);
        for pass_updates in [1, 3, 17, 1000] {
            let (listed, made) = listed(&records, pass_updates);
            assert_eq!(made, expected.len().div_ceil(pass_updates), "{pass_updates} a pass");
            // In order across the passes, not only within each.
            assert_eq!(listed, expected, "{pass_updates} a pass");
        }
    }

    /// The counting sort of `Passes::next` on keys that are not spread evenly: all in a narrow
    /// range, many records with one key, the two ends of u64, a key space's upper half (a
    /// tag bit), and hashes; in one pass and in many.
    #[test]
    fn passes_list_any_keys_in_order() {
        type Spread = fn(&mut Rng) -> u64;
        let spreads: [(&str, Spread); 6] = [
            ("hashes", |rng| crate::runtime::hashing::mix64(rng.below(1 << 40))),
            ("narrow", |rng| (1 << 40) + rng.below(300)),
            ("few", |rng| rng.below(3).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            ("ends", |rng| if rng.below(2) == 0 { rng.below(5) } else { u64::MAX - rng.below(5) }),
            ("upper half", |rng| crate::runtime::hashing::mix64(rng.below(1 << 40)) | 1 << 63),
            ("small", |rng| rng.below(1 << 20)),
        ];
        for (name, key) in spreads {
            for seed in 0..4 {
                let mut rng = Rng(seed);
                let count = 1 + rng.below(3000);
                let records = records(&mut rng, count, 40, key);
                let expected = all_pairs_sorted(&records);
                for pass_updates in [1 << 20, 5000, 777, 64] {
                    assert!(
                        listed(&records, pass_updates).0 == expected,
                        "{name}, seed {seed}, {pass_updates} a pass"
                    );
                }
            }
        }
    }

    #[test]
    fn by_worker_splits_keys_as_the_exchange_routes_them() {
        let keys: Vec<u64> = (0..50).map(|k: u64| k.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        for peers in [1, 2, 3, 4] {
            let split = by_worker(keys.iter().copied(), peers, crate::runtime::hashing::mix64);
            assert!(split.iter().all(|(w, keys)| !keys.is_empty()
                && keys.iter().all(|&k| crate::runtime::hashing::mix64(k) % peers as u64 == *w)));
            assert!(
                split.iter().all(|(_, keys)| keys.windows(2).all(|w| w[0] < w[1])),
                "each worker's keys sorted"
            );
            let mut all: Vec<u64> = split.into_iter().flat_map(|(_, keys)| keys).collect();
            all.sort_unstable();
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            assert_eq!(all, sorted, "{peers} peers");
        }
    }

    #[test]
    fn incremental_distinct_equals_the_distinct_from_scratch() {
        for seed in 0..10 {
            // Records coming and going with multiplicities from -2 to 3, several in one time.
            let mut rng = Rng(seed);
            let steps: Vec<Vec<((u64, u64), isize)>> = (0..10)
                .map(|_| {
                    (0..8)
                        .map(|_| ((rng.below(4), rng.below(3)), rng.below(6) as isize - 2))
                        .collect()
                })
                .collect();
            let from_scratch = |time| {
                input_at(&steps, time)
                    .into_iter()
                    .filter(|&(_, n)| n > 0)
                    .map(|(data, _)| (data, 1))
                    .collect()
            };
            assert_incremental(&steps, build, from_scratch, &format!("seed {seed}"));
        }
    }
}
