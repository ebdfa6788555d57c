//! Fingerprint groups, maintained incrementally: the state of bounded verification.
//!
//! A group is the pages sharing a fingerprint, sorted by length, then id, then content hash
//! (`Member`'s order). Its output is a function of its members alone: each member's nearest
//! similar neighbour on each side, at most `neighbors` away and within the length filter, and
//! the similar pairs whose own texts differ (sibling candidates) met on the way
//! (`contributions`); the oversized mark when it holds more than `max_pages`; and, from
//! `min_pages` members, the blocks it repeats (`edges::group_repeated_keys`), paired with each
//! member.
//!
//! A change costs a bounded number of comparisons, whatever the group's size. A member's
//! contribution depends on its `neighbors` nearest members on each side only, so a change
//! moves the contributions of the members within `neighbors` of it (`affected`): `Group::apply`
//! computes theirs before and after the change and emits the difference. Verdicts come from the
//! worker's verdict cache (a pure function of the two contents), so a contribution is
//! retracted without comparing again while the cache holds the pair. A DD `reduce` over the
//! group instead replayed all of it at every change: on a 100k-page crawl, 150 member scans per
//! arriving page over 61 epochs (11 a page at 10k pages).
//!
//! What stays proportional to the group: crossing `max_pages` (the whole window retracted or
//! emitted once), and the repeated blocks where a count is needed: up to `BLOCK_SAMPLE`
//! members a group's tally (`edges::KeyTally`) takes the changed pages' keys and counts over
//! the members only a key that may have reached `min_pages`; over it, the sample is counted
//! again when a change touches it (a chance of `BLOCK_SAMPLE / pages`).
//!
//! The operator (`verify_groups`) sends each page once to each worker that holds one of its
//! fingerprints' groups, holds each time's pages until the input frontier passes it, and
//! applies times in order (timestamps are totally ordered), a time's groups in fingerprint
//! order: the same updates give the same output whatever the worker count or batch boundaries.

use std::collections::HashMap;
use std::sync::Arc;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::{AsCollection, VecCollection};
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::ingest::page::PageId;
use crate::run::Runtime;
use crate::runtime::by_time::{by_worker, ByTime, Held, Keyed, Passes};
use crate::runtime::dense::DenseMap;
use crate::runtime::footprint::{Gauge, Structure};
use crate::runtime::hashing::Mixed;
use crate::runtime::spill::{Spill, SpillMap};
use crate::verify::lcs::{self, Verdict};
use crate::verify::member::{
    group_blocks, pair_verdict, sample_key, BlocksChange, Edge, KeyTally, Member, PairVerdict,
    SampleKey, BLOCK_SAMPLE,
};
use crate::verify::{self, VerifyConfig, VerifyStats};

mod group;
mod scan;

pub use group::{Group, Slot, Slots};
use scan::Side;
pub use scan::{contributions, group_contributions, CachedVerdict, Entry};

/// What the groups give, as one collection.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum GroupOutput {
    /// A similar pair of a group's window: an edge (`false`) or a sibling candidate (`true`).
    Verdict(Edge, bool),
    /// A group (fingerprint, pages) over `max_pages`: verification skips it.
    Oversized(u64, isize),
    /// A member of a group of at least `min_pages` pages, and the blocks that group repeats.
    Blocks(PageId, Arc<Vec<u64>>),
}

/// The settings a group needs.
#[derive(Clone, Debug)]
pub struct GroupSettings {
    pub config: VerifyConfig,
    pub neighbors: usize,
    /// Groups over this many pages are oversized: no verdicts, no blocks.
    pub max_pages: usize,
    /// Repeated blocks from this many pages (0: no sibling rule, no blocks).
    pub min_pages: u32,
    /// Per-sentence groups (`fingerprint::is_per_sentence`) of more than this many pages
    /// compare only the pairs whose sentences may reach τ (`lcs::sentences_may_reach`); any
    /// other pair is dissimilar there, without a comparison (`VerifyStats::pruned`).
    /// `usize::MAX`: never (other fingerprints, another verifier, the central trim). The
    /// pipeline's is `[candidates] common_sentence_pages` (`SENTENCE_GROUPS_OVER` by default).
    ///
    /// A per-sentence group is the pages whose prefixes share one sentence: its promise is
    /// that pages whose sentences reach τ meet. A sentence quoted on many unrelated short
    /// pages (a licence line, a stock phrase) makes a large group of them, in which each page
    /// was compared, word by word too, with all its neighbours: on the 1M-page scale crawl most
    /// of the comparisons, and their number a page grew with the crawl. Pages alike only word
    /// by word meet in their word fingerprints (compared there with the word-level second
    /// chance) and, while the sentence is on few pages, here too: small groups keep it (on
    /// real crawls of API documentation, pruning every per-sentence group lost such pairs).
    pub sentence_groups_over: usize,
}

/// How many `(fingerprint, page)` pairs ahead the groups operator prefetches a group's slot.
const PREFETCH_AHEAD: usize = 8;

/// `GroupSettings::sentence_groups_over` by default (`[candidates] common_sentence_pages`): a
/// sentence in the prefixes of more pages than this is a common one (PPJoin orders such tokens
/// last for the same reason: they make candidates, not near-duplicates).
pub const SENTENCE_GROUPS_OVER: usize = 32;

/// `verdict` as a group sees it: while `prune` holds (`GroupSettings::prunes`), a pair whose
/// sentences cannot reach τ is dissimilar without a comparison (counted in `pruned`).
fn group_verdict<'a, F>(
    settings: &'a GroupSettings,
    prune: &'a std::cell::Cell<bool>,
    pruned: &'a std::cell::Cell<u64>,
    mut verdict: F,
) -> impl FnMut(&Member, &Member) -> PairVerdict + 'a
where
    F: FnMut(&Member, &Member) -> PairVerdict + 'a,
{
    let tau = lcs::ppm(settings.config.threshold);
    // A member's length is its content's weight but under Jaccard (`verify::length`), where it
    // is summed again.
    let weights = settings.config.method != verify::VerifyMethod::Jaccard;
    move |a, b| {
        if prune.get() && !a.may_reach(b, weights, tau) {
            pruned.set(pruned.get() + 1);
            return (Verdict::Dissimilar, false);
        }
        verdict(a, b)
    }
}

impl GroupSettings {
    /// Whether the group of `fp`, with `pages` members, prunes its pairs by their sentences.
    pub fn prunes(&self, fp: u64, pages: usize) -> bool {
        pages > self.sentence_groups_over && crate::candidates::fingerprint::is_per_sentence(fp)
    }

    fn too_long(&self, a: &Member, b: &Member) -> bool {
        verify::too_long(self.config.method, lcs::ppm(self.config.threshold), a.length, b.length)
    }
}

type Identity = (u64, PageId, u64);

/// A scan to make again after a change: the member, the side, and for a scan that ended on
/// no edge, what it looked at and whether it found a similar pair.
type Redo = (Identity, Side, Option<(Vec<Identity>, bool)>);

/// A page as one worker of the groups operator holds it until its time is complete: its member,
/// its fingerprints that are this worker's (sorted), and the change. One entry a page and
/// worker, where an update a fingerprint held the member pointer and the difference again for
/// each of its fingerprints (24 by default: 8 sentence buckets and 16 word bands; more on a
/// short page).
struct PageChange {
    member: Arc<Member>,
    fingerprints: Box<[u64]>,
    diff: isize,
}

/// A group's changes: members, each with its difference.
type Changes = Vec<(Arc<Member>, isize)>;

impl Keyed for PageChange {
    fn keys(&self) -> &[u64] {
        &self.fingerprints
    }
}

/// Each time's pages, held until the frontier passes it.
type Pending<T> = ByTime<T, PageChange>;

/// The pages of the time the groups operator is applying: its groups are applied in
/// fingerprint order, a pass of fingerprints at a time (`Passes`).
struct Applying {
    pages: Vec<PageChange>,
    passes: Passes,
    /// The pass's `(fingerprint, page index)` pairs, and the first not applied yet.
    pairs: Vec<(u64, u32)>,
    next: usize,
}

impl Applying {
    fn new(pages: Vec<PageChange>, pass_updates: usize) -> Self {
        let passes = Passes::new(&pages, pass_updates);
        Applying { pages, passes, pairs: Vec::new(), next: 0 }
    }

    /// The next group's fingerprint and changes, the next pass listed first when this one is
    /// done; `None` once the time is applied.
    fn next_group(&mut self) -> Option<(u64, Changes)> {
        while self.next == self.pairs.len() {
            if !self.passes.next(&self.pages, &mut self.pairs) {
                return None;
            }
            self.next = 0;
        }
        let fp = self.pairs[self.next].0;
        let n = self.pairs[self.next..].iter().take_while(|p| p.0 == fp).count();
        let changes = self.pairs[self.next..self.next + n]
            .iter()
            .map(|&(_, i)| (self.pages[i as usize].member.clone(), self.pages[i as usize].diff))
            .collect();
        self.next += n;
        Some((fp, changes))
    }

    /// The fingerprint of the pair `ahead` pairs past the next group's first, if this pass has
    /// one: the group to prefetch while this one is applied.
    fn upcoming(&self, ahead: usize) -> Option<u64> {
        self.pairs.get(self.next + ahead).map(|p| p.0)
    }
}

/// The groups operator: each page's member and fingerprints in (`(member, fingerprints)`,
/// the fingerprints sorted and distinct), `GroupOutput` changes out. Every group's comparisons
/// go through the worker's verdict cache; `on_stats` sees the counters of the group changes
/// made in one activation.
///
/// A page goes to each worker that holds one of its fingerprints' groups once, with those
/// fingerprints: what waits for its time to complete is a page a worker (`PageChange`), and
/// in cluster mode its member crosses to a process once, not once a fingerprint.
///
/// A complete time is applied in fingerprint order, in passes over ranges of fingerprints and
/// in slices of about `pace.slice` of work (one group at least): after each slice the operator
/// yields (and activates itself again), so that the operators after it take in what it sent
/// before it goes on: a time that changes many groups (a large epoch, a template refresh
/// filtering many pages again) does not hold all its output in the channels at once. The
/// output is the same updates at the same time,
/// whatever the slices and passes. With `spill`, each worker's fingerprints of one page spill
/// into it past its bound (`Slots`), with the same output.
pub fn verify_groups<'scope, T, S>(
    pages: VecCollection<'scope, T, (Arc<Member>, Vec<u64>), isize>,
    settings: GroupSettings,
    pace: Pace,
    mut on_stats: S,
    runtime: &Arc<Runtime>,
) -> VecCollection<'scope, T, GroupOutput, isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    S: FnMut(&[VerifyStats]) + 'static,
{
    type Update<T> = ((u64, Arc<Member>, Vec<u64>), T, isize);
    let scope = pages.inner.scope();
    let peers = scope.peers();
    let runtime = runtime.clone();
    // Each page to the workers of its fingerprints: (worker, member, its fingerprints there).
    let routed = pages.flat_map(move |(member, fingerprints)| {
        by_worker(fingerprints, peers, crate::runtime::hashing::mix64)
            .into_iter()
            .map(move |(worker, fps)| (worker, member.clone(), fps))
    });
    routed
        .inner
        .unary_frontier::<CapacityContainerBuilder<Vec<(GroupOutput, T, isize)>>, _, _, _>(
            // `routed` names the worker itself (timely sends a datum to its hash modulo the peers).
            Exchange::new(|update: &Update<T>| (update.0).0),
            "Verify groups",
            move |_capability, info| {
                let activator = scope.activator_for(info.address);
                let mut held = WorkerGroups::new(&runtime);
                let mut pending: Pending<T> = ByTime::default();
                let mut current: Option<(Capability<T>, Applying)> = None;
                move |(input, frontier), output| {
                    input.for_each(|capability, data| {
                        pending.hold(&capability, data, |(_, member, fingerprints), diff| {
                            let fingerprints = fingerprints.into_boxed_slice();
                            // A member from another process comes in memory.
                            let member = Member::kept_in(member, &runtime);
                            PageChange { member, fingerprints, diff }
                        })
                    });
                    let slice_started = std::time::Instant::now();
                    let mut changed = Vec::new();
                    let mut out: Vec<(GroupOutput, isize)> = Vec::new();
                    let mut worked = false;
                    loop {
                        if worked && slice_started.elapsed() >= pace.slice {
                            // The slice is spent: the rest at the next activation.
                            if current.is_some() || pending.ready(frontier) {
                                activator.activate();
                            }
                            break;
                        }
                        if current.is_none() {
                            // Times the frontier has passed are complete: apply them in order.
                            let Some((_, Held { capability, updates, .. })) =
                                pending.pop_ready(frontier)
                            else {
                                break;
                            };
                            current = Some((capability, Applying::new(updates, pace.pass_updates)));
                        }
                        let Some((capability, applying)) = current.as_mut() else { break };
                        // Each group's output is sent as it is made, not held for the whole time.
                        let time = capability.time().clone();
                        let mut session = output.session(capability);
                        let mut done = false;
                        loop {
                            let Some((fp, changes)) = applying.next_group() else {
                                done = true;
                                break;
                            };
                            // The slots of the groups a few pairs on miss the cache in a table
                            // of millions: their loads start now, while this group is applied.
                            if let Some(later) = applying.upcoming(PREFETCH_AHEAD) {
                                held.groups.prefetch(later);
                            }
                            let stats = held.apply(&settings, fp, changes, &mut out);
                            session.give_iterator(out.drain(..).map(|(o, d)| (o, time.clone(), d)));
                            if stats.pages > 0 || stats.entries != 0 || stats.groups != 0 {
                                changed.push(stats);
                            }
                            worked = true;
                            if slice_started.elapsed() >= pace.slice {
                                break;
                            }
                        }
                        drop(session);
                        if done {
                            current = None;
                            held.report_if_due();
                        }
                    }
                    if !changed.is_empty() {
                        on_stats(&changed);
                    }
                }
            },
        )
        .as_collection()
}

/// A worker's groups and its cache of verdicts, with their gauges (`runtime::footprint`).
struct WorkerGroups {
    groups: Slots,
    cache: verify::VerdictCache<CachedVerdict>,
    gauges: [Gauge; 2],
}

impl Drop for WorkerGroups {
    /// What it holds at the end of the run, reported once more.
    fn drop(&mut self) {
        let [groups, verdicts] = &mut self.gauges;
        groups.finish(self.groups.bytes());
        verdicts.finish(self.cache.bytes());
    }
}

impl WorkerGroups {
    fn new(runtime: &Runtime) -> Self {
        let footprint = &runtime.footprint;
        WorkerGroups {
            groups: Slots::new(runtime.spill.clone()),
            cache: verify::VerdictCache::new(verify::VERDICT_CACHE_ENTRIES),
            gauges: [
                Gauge::new(Structure::Groups, footprint),
                Gauge::new(Structure::Verdicts, footprint),
            ],
        }
    }

    /// Walks what it holds into its gauges, when a report is due (after a complete time).
    fn report_if_due(&mut self) {
        let ([groups, verdicts], slots) = (&mut self.gauges, &self.groups);
        if groups.due() {
            groups.report_if_due(|| slots.bytes());
            verdicts.set(self.cache.bytes());
        }
    }

    /// Applies one group's `changes`; the group's output goes to `out`.
    fn apply(
        &mut self,
        settings: &GroupSettings,
        fp: u64,
        changes: Vec<(Arc<Member>, isize)>,
        out: &mut Vec<(GroupOutput, isize)>,
    ) -> VerifyStats {
        let started = std::time::Instant::now();
        let mut stats = apply_group(&mut self.groups, &mut self.cache, settings, fp, changes, out);
        stats.nanos = started.elapsed().as_nanos() as u64;
        stats
    }
}

/// Applies one group's `changes` to the worker's `groups`, with the verdicts of the worker's
/// `cache`; the group's output goes to `out`. The statistics but for the time taken.
fn apply_group(
    groups: &mut Slots,
    cache: &mut verify::VerdictCache<CachedVerdict>,
    settings: &GroupSettings,
    fp: u64,
    changes: Vec<(Arc<Member>, isize)>,
    out: &mut Vec<(GroupOutput, isize)>,
) -> VerifyStats {
    let mut stats = VerifyStats::default();
    if cache.rotate_if_full() {
        stats.cache_clears += 1;
    }
    let held_before = groups.len();
    let mut group = Group::from_slot(groups.take(fp));
    let entries_before = group.len();
    let mut computed = 0;
    let config = &settings.config;
    group.apply(
        fp,
        changes,
        settings,
        &mut stats,
        |a, b| {
            cache
                .get_or_insert_with((a.hash, b.hash), || {
                    computed += 1;
                    CachedVerdict::of(pair_verdict(config, a, b))
                })
                .verdict()
        },
        out,
    );
    stats.computed = computed;
    stats.entries = group.len() as i64 - entries_before as i64;
    if let Some(slot) = group.into_slot() {
        groups.put(fp, slot);
    }
    stats.groups = groups.len() as i64 - held_before as i64;
    stats
}

/// How the groups operator paces a time's work (`verify_groups`).
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// The work it does before it yields.
    pub slice: std::time::Duration,
    /// The `(fingerprint, page)` pairs it lists at once, about.
    pub pass_updates: usize,
}

/// The pipeline's pace: slices short enough that what the operator sent does not pile up in
/// the channels, long enough that yielding costs nothing; passes of ~1M pairs (16 MB).
pub const PACE: Pace = Pace { slice: std::time::Duration::from_millis(20), pass_updates: 1 << 20 };

#[cfg(test)]
mod tests;
