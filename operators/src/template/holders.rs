//! Sentence holders: the pages of each (host, sentence), held compactly, for the template stage.
//!
//! The template stage needs two things of the pages holding a sentence: how many they are
//! (its document frequency on its host), and, once it is template, which they are (to filter
//! them again). Most sentences are on one page, and a differential arrangement would hold every
//! one as an update (key, page, time and difference, ~56 bytes, twice while a merge runs).
//!
//! `Holders` keeps a sentence of one page as a 16-byte entry of its own map (the sentence's
//! slot and the page's compact id, in a `SpillMap`: with the run's spill installed, its
//! newest entries in memory, 20 to 25 bytes an entry, the rest on disk with 1.6 bytes an
//! entry in memory) and a list of holders only from a second page on, as the groups keep
//! fingerprints (`groups::Slots`). Out
//! of it come the frequencies of the sentences on at least `least` pages, and those sentences'
//! holders: the only ones a template lookup can ask for, since a template sentence is on
//! `least` pages at least.
//!
//! With template refreshes, the template sentences in effect at `t` are those of the last
//! refresh `r <= t`: a sentence's holders stay out (`Holder` updates) while it is on `least`
//! pages at some time of `[r, t]`, so that a sentence in effect as template still finds its
//! pages after it fell below `least` (its holders leave at the next refresh).
//!
//! A slot mixes the host into the sentence key (`slot`): for one host, distinct sentences have
//! distinct slots; two (host, sentence) pairs of different hosts share one with probability
//! 2^-64, the same odds as two sentences sharing a key.

use std::collections::HashMap;
use std::sync::Arc;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::{AsCollection, VecCollection};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::run::Runtime;
use crate::runtime::by_time::{by_worker, ByTime, Held, Keyed, Passes};
use crate::runtime::footprint::{Gauge, Structure};
use crate::runtime::hashing::{mix64, Mixed};
use crate::runtime::spill::SpillMap;

/// A page (its compact id) holding a sentence of a host: `(host, key, page)`.
pub type Holding = (u64, u64, u64);

/// What the holders give, as one collection.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HolderChange {
    /// A sentence `(host, key)` on this many pages, `least` at least.
    Frequency((u64, u64), isize),
    /// A page (compact id) holding a sentence on `least` pages at least (or, with refreshes,
    /// at some time since the last refresh).
    Holder((u64, u64), u64),
}

/// The slot of a host's sentence.
pub fn slot(host: u64, key: u64) -> u64 {
    key ^ mix64(host)
}

/// A sentence held by more than one page, or by a page more than once, or whose holders are
/// out (`emitted`): its host, key and holders (compact id, multiplicity), sorted.
#[derive(Debug)]
struct Many {
    host: u64,
    key: u64,
    emitted: bool,
    holders: Vec<(u64, isize)>,
}

impl Many {
    fn count(&self) -> isize {
        self.holders.iter().map(|h| h.1).sum()
    }
}

/// A worker's sentence holders, in two maps: the sentences of one page (most of them) map to
/// the page, the others to their `Many`.
#[derive(Debug)]
pub struct Holders {
    least: isize,
    one: SpillMap,
    many: HashMap<u64, Box<Many>, Mixed>,
    gauge: Gauge,
}

impl Drop for Holders {
    /// What it holds at the end of the run, reported once more.
    fn drop(&mut self) {
        let bytes = self.bytes();
        self.gauge.finish(bytes);
    }
}

impl Holders {
    /// Holders whose frequencies and holder lists come out from `least` pages, held in memory.
    pub fn new(least: isize) -> Self {
        Self::in_run(least, &Runtime::default())
    }

    /// `new` in `runtime`'s run: the sentences of one page spill into its spill, if any, and
    /// its bytes go to its footprint.
    pub fn in_run(least: isize, runtime: &Runtime) -> Self {
        Holders {
            least,
            one: SpillMap::new(runtime.spill.clone()),
            many: HashMap::default(),
            gauge: Gauge::new(Structure::Holders, &runtime.footprint),
        }
    }

    /// The bytes held in memory, walked: the two maps' tables (and what finds the spilled
    /// entries) and each sentence of several pages with its list.
    fn bytes(&self) -> usize {
        Self::walk(&self.one, &self.many)
    }

    fn walk(one: &SpillMap, many: &HashMap<u64, Box<Many>, Mixed>) -> usize {
        use crate::runtime::footprint::{array, hash_table};
        one.memory_bytes()
            + hash_table(many.capacity(), std::mem::size_of::<(u64, Box<Many>)>())
            + many
                .values()
                .map(|m| std::mem::size_of::<Many>() + array::<(u64, isize)>(m.holders.capacity()))
                .sum::<usize>()
    }

    /// Walks what it holds into its gauge, when a report is due (after a complete time).
    fn report_if_due(&mut self) {
        let (one, many) = (&self.one, &self.many);
        self.gauge.report_if_due(|| Self::walk(one, many));
    }

    /// The sentences held.
    pub fn len(&self) -> usize {
        self.one.len() + self.many.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn take(&mut self, slot: u64, host: u64, key: u64) -> Box<Many> {
        if let Some(page) = self.one.remove(slot) {
            return Box::new(Many { host, key, emitted: false, holders: vec![(page, 1)] });
        }
        self.many
            .remove(&slot)
            .unwrap_or_else(|| Box::new(Many { host, key, emitted: false, holders: Vec::new() }))
    }

    fn put(&mut self, slot: u64, many: Box<Many>) {
        if !many.emitted {
            match many.holders.as_slice() {
                [] => return,
                &[(page, 1)] => {
                    self.one.insert(slot, page);
                    return;
                }
                _ => {}
            }
        }
        self.many.insert(slot, many);
    }

    /// The common cases, without a `Many`: a sentence of no page gets one, or the one page of a
    /// sentence lets it go (below `least`, nothing comes out). Whether it applied `delta`.
    fn one_page(&mut self, at: u64, delta: &[(u64, isize)]) -> bool {
        if self.least <= 1 {
            return false;
        }
        match *delta {
            [(page, 1)] => !self.many.contains_key(&at) && self.one.insert_absent(at, page),
            [(page, -1)] => self.one.remove_if(at, |&held| held == page).is_some(),
            _ => false,
        }
    }

    /// Applies one time's updates (`refresh`: the time is a template refresh). The changes go
    /// to `out`; the slots of sentences whose holders stay out though they fell below `least`
    /// go to `recheck`, to be looked at again (`recheck`) at the next refresh.
    pub fn apply(
        &mut self,
        updates: &mut [(Holding, isize)],
        refresh: bool,
        out: &mut Vec<(HolderChange, isize)>,
        recheck: &mut Vec<u64>,
    ) {
        let slot_of = |&((host, key, _), _): &(Holding, isize)| slot(host, key);
        // The operator's passes list a time's updates by slot already (`Passes`): then only
        // each sentence's run is put in page order, not the whole list sorted again.
        if !updates.is_sorted_by_key(slot_of) {
            updates.sort_unstable_by_key(slot_of);
        }
        let mut delta: Vec<(u64, isize)> = Vec::new();
        for these in updates.chunk_by_mut(|a, b| slot_of(a) == slot_of(b)) {
            these.sort_unstable_by_key(|&((_, _, page), _)| page);
            let ((host, key, _), _) = these[0];
            let at = slot(host, key);
            // The changes of its holders, consolidated.
            delta.clear();
            for &((_, _, page), diff) in these.iter() {
                match delta.last_mut() {
                    Some(last) if last.0 == page => last.1 += diff,
                    _ => delta.push((page, diff)),
                }
            }
            delta.retain(|d| d.1 != 0);
            if delta.is_empty() || self.one_page(at, &delta) {
                continue;
            }
            let mut many = self.take(at, host, key);
            let sentence = (many.host, many.key);
            let before = many.count();
            let after = before + delta.iter().map(|d| d.1).sum::<isize>();
            let emitted = after >= self.least || (many.emitted && !refresh);
            if many.emitted && !emitted {
                out.extend(
                    many.holders
                        .iter()
                        .map(|&(page, n)| (HolderChange::Holder(sentence, page), -n)),
                );
            } else if many.emitted {
                out.extend(
                    delta.iter().map(|&(page, d)| (HolderChange::Holder(sentence, page), d)),
                );
            }
            crate::runtime::sorted::merge_counts(&mut many.holders, &delta);
            if emitted && !many.emitted {
                out.extend(
                    many.holders.iter().map(|&(page, n)| (HolderChange::Holder(sentence, page), n)),
                );
            }
            if emitted && after < self.least {
                recheck.push(at);
            }
            many.emitted = emitted;
            if before != after {
                if before >= self.least {
                    out.push((HolderChange::Frequency(sentence, before), -1));
                }
                if after >= self.least {
                    out.push((HolderChange::Frequency(sentence, after), 1));
                }
            }
            self.put(at, many);
        }
    }

    /// At a refresh: the sentences of `slots` that are below `least` take their holders back.
    pub fn recheck(&mut self, slots: &[u64], out: &mut Vec<(HolderChange, isize)>) {
        for &at in slots {
            let Some(many) = self.many.get(&at) else { continue };
            if !many.emitted || many.count() >= self.least {
                continue;
            }
            let mut many = self.many.remove(&at).expect("held");
            let sentence = (many.host, many.key);
            out.extend(
                many.holders.iter().map(|&(page, n)| (HolderChange::Holder(sentence, page), -n)),
            );
            many.emitted = false;
            self.put(at, many);
        }
    }
}

/// A page's sentences as one worker of the holders operator holds them until their time is
/// complete: the host, the page (compact id), its sentences' slots that are this worker's
/// (sorted), and the change. One record a page and worker, where a `Holding` update a sentence
/// held the host and page again with each of its ~30 sentences.
struct PageSlots {
    host: u64,
    page: u64,
    slots: Box<[u64]>,
    diff: isize,
}

impl Keyed for PageSlots {
    fn keys(&self) -> &[u64] {
        &self.slots
    }
}

/// The holders operator: each page's `(host, compact id, distinct sentence keys)` in. A page
/// goes once to each worker that holds one of its sentences' slots; each time's pages are held
/// until the input frontier passes it, and times are applied in order (timestamps are totally
/// ordered), a time's sentences in passes over ranges of slots (about `pass_updates`
/// sentences a pass: `by_time::Passes`, one pass an activation), so the same updates give the
/// same output whatever the worker count or batch boundaries. A time is a refresh when
/// `refresh(time) == time`; a sentence that falls below `least` between refreshes has its
/// holders looked at again at `refresh(time)`. With the run's spill, each worker's sentences of
/// one page spill into it past its bound (`runtime::spill`).
pub fn sentence_holders<'scope, T, F>(
    pages: VecCollection<'scope, T, (u64, u64, Vec<u64>), isize>,
    least: isize,
    pass_updates: usize,
    mut refresh: F,
    runtime: &Arc<Runtime>,
) -> VecCollection<'scope, T, HolderChange, isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    F: FnMut(&T) -> T + 'static,
{
    type Update<T> = ((u64, u64, u64, Vec<u64>), T, isize);
    let scope = pages.inner.scope();
    let peers = scope.peers();
    let runtime = runtime.clone();
    let routed = pages.flat_map(move |(host, page, keys)| {
        let slots = keys.into_iter().map(move |key| slot(host, key));
        by_worker(slots, peers, mix64)
            .into_iter()
            .map(move |(worker, slots)| (worker, host, page, slots))
    });
    routed
        .inner
        .unary_frontier::<CapacityContainerBuilder<Vec<(HolderChange, T, isize)>>, _, _, _>(
            // `routed` names the worker itself (timely sends a datum to its hash modulo the peers).
            Exchange::new(|update: &Update<T>| (update.0).0),
            "Sentence holders",
            move |_capability, info| {
                let activator = scope.activator_for(info.address);
                let mut holders = Holders::in_run(least, &runtime);
                let mut pending: ByTime<T, PageSlots, Vec<u64>> = ByTime::default();
                let mut current: Option<Applying<T>> = None;
                let mut out = Vec::new();
                move |(input, frontier), output| {
                    input.for_each(|capability, data| {
                        pending.hold(&capability, data, |(_, host, page, slots), diff| PageSlots {
                            host,
                            page,
                            slots: slots.into_boxed_slice(),
                            diff,
                        })
                    });
                    if current.is_none() {
                        // Times the frontier has passed are complete: apply them in order.
                        let Some((time, Held { capability, updates: pages, extra: slots })) =
                            pending.pop_ready(frontier)
                        else {
                            return;
                        };
                        let next = refresh(&time);
                        let passes = Passes::new(&pages, pass_updates);
                        current = Some(Applying {
                            capability,
                            next,
                            pages,
                            slots,
                            passes,
                            pairs: Vec::new(),
                            updates: Vec::new(),
                            recheck: Vec::new(),
                        });
                    }
                    let Some(applying) = current.as_mut() else { return };
                    let time = applying.capability.time().clone();
                    // One pass an activation, its output sent at once: the operators after this
                    // one take it in before the next pass, so that a large time's holdings are
                    // not all in the channels at once. A sentence's updates all fall in one pass:
                    // its slot's.
                    let done = !applying.passes.next(&applying.pages, &mut applying.pairs);
                    if done {
                        holders.recheck(&applying.slots, &mut out);
                        holders.report_if_due();
                        if !applying.recheck.is_empty() {
                            debug_assert!(time < applying.next, "a refresh is never earlier");
                            let next = applying.next.clone();
                            let later = pending.later(&applying.capability, next);
                            later.extra.append(&mut applying.recheck);
                        }
                    } else {
                        applying.updates.clear();
                        let pages = &applying.pages;
                        applying.updates.extend(applying.pairs.iter().map(|&(at, i)| {
                            let page = &pages[i as usize];
                            ((page.host, at ^ mix64(page.host), page.page), page.diff)
                        }));
                        let (refreshing, recheck) = (applying.next == time, &mut applying.recheck);
                        holders.apply(&mut applying.updates, refreshing, &mut out, recheck);
                    }
                    output
                        .session(&applying.capability)
                        .give_iterator(out.drain(..).map(|(o, d)| (o, time.clone(), d)));
                    if done {
                        current = None;
                    }
                    if !done || pending.ready(frontier) {
                        activator.activate();
                    }
                }
            },
        )
        .as_collection()
}

/// The sentences the holders operator lists at once, about (`sentence_holders`): 1 MB of
/// updates. A pass's output is sent before the next pass is made, so a time of any size holds
/// about one pass's lists and output in the operator and its channels, not the whole time's.
pub const PASS_UPDATES: usize = 1 << 15;

/// The time the holders operator is applying, a pass an activation.
struct Applying<T: Timestamp> {
    capability: timely::dataflow::operators::Capability<T>,
    /// The refresh its template changes take effect at.
    next: T,
    pages: Vec<PageSlots>,
    /// The slots to look at again at this time (a refresh's sentences).
    slots: Vec<u64>,
    passes: Passes,
    pairs: Vec<(u64, u32)>,
    updates: Vec<((u64, u64, u64), isize)>,
    /// The slots to look at again at the next refresh.
    recheck: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::spill::Spill;
    use crate::testing::{state_at, Rng};
    use std::collections::BTreeMap;
    use std::collections::BTreeSet;

    type Updates = Vec<(HolderChange, u64, isize)>;

    /// The operator's output, consolidated, for `steps` (each time's holding updates), on
    /// `workers` workers, with refreshes every `every` times.
    fn operator_output(
        steps: &[Vec<(Holding, isize)>],
        least: isize,
        every: u64,
        workers: usize,
        spill: Option<Arc<Spill>>,
    ) -> Updates {
        // Each step's holdings as pages (a record a host, page and difference, its keys
        // together); on 2 workers, a sentence a record and a pass a sentence as well.
        type Step = Vec<((u64, u64, Vec<u64>), isize)>;
        let steps: Vec<Step> = steps
            .iter()
            .map(|step| {
                let mut pages: BTreeMap<(u64, u64, isize), Vec<u64>> = BTreeMap::new();
                for &((host, key, page), diff) in step {
                    let keys = pages.entry((host, page, diff)).or_default();
                    if workers == 2 || keys.contains(&key) {
                        // Keys of a record are distinct: a second holding of one key, another record.
                        return step
                            .iter()
                            .map(|&((host, key, page), diff)| ((host, page, vec![key]), diff))
                            .collect();
                    }
                    keys.push(key);
                }
                pages
                    .into_iter()
                    .map(|((host, page, diff), keys)| ((host, page, keys), diff))
                    .collect()
            })
            .collect();
        // Passes of a few sentences on 2 and 4 workers: a time applied over many activations.
        let pass_updates = match workers {
            2 => 1,
            4 => 3,
            _ => PASS_UPDATES,
        };
        crate::testing::run_steps(&steps, workers, move |pages| {
            sentence_holders(
                pages,
                least,
                pass_updates,
                move |&t| crate::template::refresh_time(t, every),
                &Arc::new(Runtime { spill: spill.clone(), ..Runtime::default() }),
            )
        })
    }

    /// From scratch at `time`: the holdings alive then, each sentence's frequency from `least`
    /// pages, and the holders of the sentences on `least` pages at some time since the last
    /// refresh (`[in_effect, time]`).
    fn from_scratch(
        steps: &[Vec<(Holding, isize)>],
        least: isize,
        every: u64,
        time: u64,
    ) -> BTreeMap<HolderChange, isize> {
        let alive = |t: u64| {
            let mut count: BTreeMap<Holding, isize> = BTreeMap::new();
            for step in &steps[..=t as usize] {
                for &(h, d) in step {
                    *count.entry(h).or_default() += d;
                }
            }
            count.retain(|_, d| *d != 0);
            count
        };
        let frequency = |t: u64| {
            let mut by: BTreeMap<(u64, u64), isize> = BTreeMap::new();
            for ((host, key, _), n) in alive(t) {
                *by.entry((host, key)).or_default() += n;
            }
            by
        };
        let in_effect = time / every * every;
        let repeated: BTreeSet<(u64, u64)> = (in_effect..=time)
            .flat_map(|t| frequency(t).into_iter().filter(|&(_, n)| n >= least).map(|(s, _)| s))
            .collect();
        let mut state = BTreeMap::new();
        for (sentence, n) in frequency(time) {
            if n >= least {
                state.insert(HolderChange::Frequency(sentence, n), 1);
            }
        }
        for ((host, key, page), n) in alive(time) {
            if repeated.contains(&(host, key)) {
                state.insert(HolderChange::Holder((host, key), page), n);
            }
        }
        state
    }

    /// Pages of two hosts arriving, leaving and coming back changed: sentences crossing
    /// `least` both ways between refreshes, a page holding a sentence twice for a while.
    fn workload(seed: u64) -> Vec<Vec<(Holding, isize)>> {
        let mut rng = Rng(seed);
        let mut alive: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
        let mut steps = Vec::new();
        for time in 0..9u64 {
            let mut step = Vec::new();
            for _ in 0..6 {
                let page = rng.below(14);
                if let Some(old) = alive.remove(&page) {
                    step.extend(old.iter().map(|&(host, key)| ((host, key, page), -1)));
                    if rng.below(3) == 0 {
                        continue;
                    }
                }
                let host = page % 2;
                // A few common sentences (frequent on the host), a few rare, one of its own.
                let mut keys: Vec<(u64, u64)> =
                    (0..1 + rng.below(3)).map(|_| (host, rng.below(4))).collect();
                keys.extend((0..rng.below(3)).map(|_| (host, 10 + rng.below(12))));
                keys.push((host, 1000 + 100 * time + page));
                if time == 4 && page.is_multiple_of(3) {
                    keys.push(keys[0]);
                }
                step.extend(keys.iter().map(|&(host, key)| ((host, key, page), 1)));
                alive.insert(page, keys);
            }
            steps.push(step);
        }
        steps
    }

    #[test]
    fn incremental_holders_equal_the_holders_from_scratch() {
        for seed in 0..6 {
            let steps = workload(seed);
            for (least, every) in [(3, 1), (3, 3), (2, 4), (4, 2)] {
                let one = operator_output(&steps, least, every, 1, None);
                for time in 0..steps.len() as u64 {
                    assert_eq!(
                        state_at(&one, time),
                        from_scratch(&steps, least, every, time),
                        "seed {seed}, least {least}, every {every}, time {time}"
                    );
                }
                for workers in [2, 4] {
                    assert_eq!(
                        operator_output(&steps, least, every, workers, None),
                        one,
                        "seed {seed}, least {least}, every {every}, {workers} workers"
                    );
                }
            }
        }
    }

    /// With the sentences of one page spilling to disk past two entries a worker (a run
    /// written, and runs merged, at nearly every time), the operator gives what it gives in
    /// memory, on 1, 2 and 4 workers, insertions and retractions alike.
    #[test]
    fn spilled_holders_equal_the_holders_from_scratch() {
        let spill = Arc::new(Spill::new(&std::env::temp_dir(), 2));
        for seed in 0..6 {
            let steps = workload(seed);
            for (least, every) in [(3, 1), (2, 4)] {
                for workers in [1, 2, 4] {
                    let out = operator_output(&steps, least, every, workers, Some(spill.clone()));
                    for time in 0..steps.len() as u64 {
                        assert_eq!(
                            state_at(&out, time),
                            from_scratch(&steps, least, every, time),
                            "seed {seed}, least {least}, every {every}, {workers} workers, time {time}"
                        );
                    }
                }
            }
        }
        let stats = spill.stats();
        assert!(stats.runs > 100 && stats.block_reads > 100, "it spilled and read: {stats:?}");
        assert_eq!(stats.on_disk, 0, "the runs went with their operators");
    }

    /// What a worker's holders hold: each one-page sentence's page, and each other sentence's
    /// host, key, whether its holders are out, and its holders' list as it is kept.
    #[allow(clippy::type_complexity)]
    fn held(
        holders: &Holders,
    ) -> (BTreeMap<u64, u64>, BTreeMap<u64, (u64, u64, bool, Vec<(u64, isize)>)>) {
        let one = holders.one.entries().into_iter().collect();
        let many = holders
            .many
            .iter()
            .map(|(&slot, m)| (slot, (m.host, m.key, m.emitted, m.holders.clone())))
            .collect();
        (one, many)
    }

    /// `apply` sorts a list in slot order (what the operator's passes give) by sorting each
    /// sentence's run alone: the same changes as a list in any order, sorted whole; and
    /// holders whose sentences of one page spill hold what holders in memory hold.
    #[test]
    fn a_list_in_slot_order_gives_what_any_order_gives() {
        for seed in 0..20 {
            let mut rng = Rng(seed);
            let least = 2 + rng.below(3) as isize;
            // One spilling past three sentences of one page, the other in memory.
            let spill = Arc::new(Spill::new(&std::env::temp_dir(), 3));
            let (mut by_slot, mut any) = (
                Holders::in_run(least, &Runtime { spill: Some(spill), ..Runtime::default() }),
                Holders::new(least),
            );
            for (time, step) in workload(seed).into_iter().enumerate() {
                let refresh = rng.below(2) == 0;
                // Any order: rotated by a random amount. Slot order: the pages of each run last
                // first, and an update given twice split in two.
                let mut shuffled = step.clone();
                shuffled.rotate_left(rng.below(step.len().max(1) as u64) as usize);
                let mut sorted: Vec<(Holding, isize)> = step
                    .iter()
                    .flat_map(|&(h, d)| {
                        if d == 1 && rng.below(4) == 0 {
                            vec![(h, 2), (h, -1)]
                        } else {
                            vec![(h, d)]
                        }
                    })
                    .collect();
                sorted.sort_by_key(|&((host, key, page), _)| {
                    (slot(host, key), std::cmp::Reverse(page))
                });
                let (mut out_a, mut recheck_a, mut out_b, mut recheck_b) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                by_slot.apply(&mut sorted, refresh, &mut out_a, &mut recheck_a);
                any.apply(&mut shuffled, refresh, &mut out_b, &mut recheck_b);
                let consolidated = |v: Vec<(HolderChange, isize)>| {
                    crate::runtime::sorted::consolidated(v.into_iter())
                };
                assert_eq!(consolidated(out_a), consolidated(out_b), "seed {seed}, time {time}");
                assert_eq!(recheck_a, recheck_b, "seed {seed}, time {time}");
                assert_eq!(held(&by_slot), held(&any), "seed {seed}, time {time}");
            }
        }
    }

    #[test]
    fn a_sentence_of_one_page_is_one_small_entry() {
        let mut holders = Holders::new(3);
        let (mut out, mut recheck) = (Vec::new(), Vec::new());
        let mut updates: Vec<(Holding, isize)> = (0..100).map(|k| ((7, k, 1), 1)).collect();
        updates.push(((7, 5, 2), 1));
        holders.apply(&mut updates, true, &mut out, &mut recheck);
        assert_eq!((holders.one.len(), holders.many.len()), (99, 1));
        assert!(out.is_empty(), "below least: nothing out");
        // A third page: the sentence's frequency and its holders come out.
        holders.apply(&mut [((7, 5, 3), 1)], true, &mut out, &mut recheck);
        out.sort();
        assert_eq!(
            out,
            vec![
                (HolderChange::Frequency((7, 5), 3), 1),
                (HolderChange::Holder((7, 5), 1), 1),
                (HolderChange::Holder((7, 5), 2), 1),
                (HolderChange::Holder((7, 5), 3), 1),
            ]
        );
        // Retracted between refreshes, the holders stay out until the refresh looks again.
        out.clear();
        holders.apply(&mut [((7, 5, 3), -1)], false, &mut out, &mut recheck);
        assert_eq!(
            out,
            vec![(HolderChange::Holder((7, 5), 3), -1), (HolderChange::Frequency((7, 5), 3), -1)]
        );
        assert_eq!(recheck, vec![slot(7, 5)]);
        out.clear();
        holders.recheck(&recheck, &mut out);
        out.sort();
        assert_eq!(
            out,
            vec![(HolderChange::Holder((7, 5), 1), -1), (HolderChange::Holder((7, 5), 2), -1)]
        );
        // Everything retracted: nothing held.
        let mut all: Vec<(Holding, isize)> = (0..100).map(|k| ((7, k, 1), -1)).collect();
        all.push(((7, 5, 2), -1));
        holders.apply(&mut all, true, &mut out, &mut recheck);
        assert!(holders.is_empty());
    }
}
