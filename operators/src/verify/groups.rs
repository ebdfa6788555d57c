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
use crate::runtime::by_time::{by_worker, ByTime, Held, Keyed, Passes};
use crate::runtime::dense::DenseMap;
use crate::runtime::hashing::Mixed;
use crate::verify::lcs::{self, Verdict};
use crate::verify::member::{
    group_blocks, pair_verdict, sample_key, BlocksChange, Edge, KeyTally, Member, PairVerdict,
    SampleKey, BLOCK_SAMPLE,
};
use crate::verify::{self, VerifyConfig, VerifyStats};

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
    let weight = move |m: &Member| if weights { m.length } else { m.content.weight() };
    move |a, b| {
        if prune.get()
            && !lcs::sentences_of_weights_may_reach(
                (&a.content, weight(a), &a.keys),
                (&b.content, weight(b), &b.keys),
                tau,
            )
        {
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

fn identity(m: &Member) -> Identity {
    (m.length, m.id, m.hash)
}

/// A group's member and what its scans on each side (`scan`, before and after it) held.
#[derive(Clone, Debug)]
pub struct Entry {
    pub member: Arc<Member>,
    scans: [SideScan; 2],
}

/// A scan that ran out of list (or was never made): any change on that side may move it.
const OPEN: u8 = u8::MAX;

impl Entry {
    fn new(member: Arc<Member>) -> Self {
        Entry { member, scans: [SideScan::UNMADE; 2] }
    }
}

/// What a member's scan on one side held, in 4 bytes (an `Entry` is 16 with its member):
/// - its reach (`scan`: how many neighbours it looked at, `OPEN` when it ran out of list);
/// - whether it ended on an edge (else it went on past every neighbour it looked at: each
///   dissimilar, or a sibling candidate);
/// - whether it may have found a similar pair (false: every neighbour it looked at was
///   dissimilar, so nothing of it needs retracting);
/// - when the edge it ended on is all it gave (no sibling candidate before it), that edge's
///   resemblance in parts per million: its retraction is that edge, with the neighbour at
///   `reach`, and needs no comparison. Else a retraction makes the scan again.
#[derive(Clone, Copy, PartialEq, Eq)]
struct SideScan(u32);

impl SideScan {
    const EDGE: u32 = 1 << 8;
    const FOUND: u32 = 1 << 9;
    const HELD: u32 = 1 << 10;
    const PPM_SHIFT: u32 = 11;
    /// The largest resemblance held: 21 bits (a resemblance is at most 1,000,000 ppm).
    const PPM_MAX: u32 = (1 << (32 - Self::PPM_SHIFT)) - 1;
    /// A scan not made yet: any change moves it, and retracting it means making it.
    const UNMADE: SideScan = SideScan(OPEN as u32 | Self::EDGE | Self::FOUND);
    /// A page alone's: it looked at nothing and found nothing.
    const NOTHING: SideScan = SideScan(OPEN as u32);

    fn made(reach: u8, edge: bool, found: bool, held_edge: Option<u32>) -> Self {
        let mut bits = reach as u32;
        if edge {
            bits |= Self::EDGE;
        }
        if found {
            bits |= Self::FOUND;
        }
        if let Some(ppm) = held_edge.filter(|&ppm| edge && found && ppm <= Self::PPM_MAX) {
            bits |= Self::HELD | ppm << Self::PPM_SHIFT;
        }
        SideScan(bits)
    }

    fn reach(self) -> u8 {
        self.0 as u8
    }

    fn edge(self) -> bool {
        self.0 & Self::EDGE != 0
    }

    fn found(self) -> bool {
        self.0 & Self::FOUND != 0
    }

    /// The resemblance of the edge the scan ended on, when that edge is all it gave.
    fn held_edge(self) -> Option<u32> {
        (self.0 & Self::HELD != 0).then_some(self.0 >> Self::PPM_SHIFT)
    }
}

impl std::fmt::Debug for SideScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SideScan")
            .field("reach", &self.reach())
            .field("edge", &self.edge())
            .field("found", &self.found())
            .field("held_edge", &self.held_edge())
            .finish()
    }
}

/// What one member of a group (`list` sorted, `j` its position) contributes: scanning its
/// predecessors nearest first, then its successors nearest first, at most `neighbors` each
/// way and within the length filter, the similar pairs up to and including the first that is
/// an edge (`false`); similar pairs whose own texts differ are sibling candidates (`true`), and
/// the scan goes on past them. A family of copies costs one comparison a member (its nearest
/// neighbour on each side is the same pair seen from both ends), an unrelated page at most
/// `2 · neighbors`.
pub fn contributions<F>(
    list: &[Entry],
    j: usize,
    settings: &GroupSettings,
    stats: &mut VerifyStats,
    verdict: &mut F,
) -> Vec<(Edge, bool)>
where
    F: FnMut(&Member, &Member) -> PairVerdict,
{
    let mut out = Vec::new();
    scan(list, j, Side::Before, None, settings, stats, verdict, &mut out);
    scan(list, j, Side::After, None, settings, stats, verdict, &mut out);
    out
}

/// What member `j`'s scan on `side` gave, from what it held (`SideScan`), pushed into `out`
/// for a retraction: nothing when it found nothing similar; the edge it ended on when that was
/// all it gave; else the scan made again. On a live feed with retention a page leaves long
/// after the verdict cache lost its pairs: making its scans again (and its neighbours' that
/// reached it) compared it anew with every neighbour, only to retract what they had given.
#[allow(clippy::too_many_arguments)]
fn held_side<F>(
    list: &[Entry],
    j: usize,
    side: Side,
    settings: &GroupSettings,
    stats: &mut VerifyStats,
    verdict: &mut F,
    out: &mut Vec<(Edge, bool)>,
) where
    F: FnMut(&Member, &Member) -> PairVerdict,
{
    let held = list[j].scans[side as usize];
    if !held.found() {
        return;
    }
    if let Some(ppm) = held.held_edge() {
        let step = held.reach() as usize;
        let (me, other) = (&list[j].member, &list[side.step(j, step)].member);
        let (a, b) = if side == Side::Before { (other, me) } else { (me, other) };
        out.push((edge_of(a, b, ppm), false));
        return;
    }
    scan(list, j, side, None, settings, stats, verdict, out);
}

/// The edge of a similar pair, `a` before `b` in the group's order.
fn edge_of(a: &Member, b: &Member, similarity_ppm: u32) -> Edge {
    Edge { shorter_length: a.length, shorter: a.id, longer: b.id, similarity_ppm }
}

/// How many neighbours member `j` of a list of `len` has on `side`.
fn available(len: usize, j: usize, side: Side) -> usize {
    match side {
        Side::Before => j,
        Side::After => len - j - 1,
    }
}

/// Which neighbours a scan walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Before = 0,
    After = 1,
}

impl Side {
    /// The position of the neighbour `step` places from position `j` on this side.
    fn step(self, j: usize, step: usize) -> usize {
        match self {
            Side::Before => j - step,
            Side::After => j + step,
        }
    }
}

/// A side's scan after a change, when before the change it ended on no edge: `known` is the
/// neighbours it looked at then (sorted). A neighbour in `known` gave the same verdict before
/// (no edge: the scan went on past it) and its pair, if similar, is in the output before and
/// after, so it is passed over without a comparison and without being pushed; what the scan
/// looks at now is pushed to `walked`. The caller retracts the pairs of `known` neighbours
/// the scan no longer looks at.
struct Known<'a> {
    known: &'a [Identity],
    walked: &'a mut Vec<Identity>,
}

/// One side of `contributions`, pushed into `out`. Returns the scan's reach: how many
/// neighbours it looked at before it ended on its own (an edge, the length filter,
/// `neighbors` steps), or `OPEN` when it ran out of list; whether it ended on an edge; and
/// whether it pushed a similar pair. A change beyond the reach cannot move the scan: the same
/// neighbours, in the same order, give the same pairs. With `known` (a scan made again after a
/// change), the neighbours it holds are passed over.
#[allow(clippy::too_many_arguments)]
fn scan<F>(
    list: &[Entry],
    j: usize,
    side: Side,
    mut known: Option<Known>,
    settings: &GroupSettings,
    stats: &mut VerifyStats,
    verdict: &mut F,
    out: &mut Vec<(Edge, bool)>,
) -> (u8, bool, bool)
where
    F: FnMut(&Member, &Member) -> PairVerdict,
{
    let me = &list[j].member;
    let available = available(list.len(), j, side);
    let pushed = out.len();
    for step in 1..=settings.neighbors.min(available) {
        let i = side.step(j, step);
        let other = &list[i].member;
        if let Some(k) = known.as_mut() {
            k.walked.push(identity(other));
        }
        let (a, b) = if side == Side::Before { (other, me) } else { (me, other) };
        // Sorted by length: once a neighbour is out of the length filter, the rest are too.
        if settings.too_long(a, b) {
            return (step as u8, false, out.len() > pushed);
        }
        if known.as_ref().is_some_and(|k| k.known.binary_search(&identity(other)).is_ok()) {
            continue;
        }
        match verdict(a, b) {
            (Verdict::Similar(s), differ) => {
                stats.accepted += 1;
                out.push((edge_of(a, b, ppm_of(s)), differ));
                if !differ {
                    return (step as u8, true, true);
                }
            }
            (Verdict::Dissimilar, _) => stats.rejected += 1,
            (Verdict::CostCapped, _) => {
                stats.rejected += 1;
                stats.cost_capped += 1;
            }
        }
    }
    (
        if available >= settings.neighbors { settings.neighbors as u8 } else { OPEN },
        false,
        out.len() > pushed,
    )
}

/// The neighbours member `j`'s scan on `side` looked at: the first `reach` (all there are when
/// `OPEN`), sorted.
fn looked_at(list: &[Entry], j: usize, side: Side, reach: u8) -> Vec<Identity> {
    let available = available(list.len(), j, side);
    let steps = if reach == OPEN { available } else { (reach as usize).min(available) };
    let mut ids: Vec<Identity> =
        (1..=steps).map(|step| identity(&list[side.step(j, step)].member)).collect();
    ids.sort_unstable();
    ids
}

/// A group's verdicts from scratch: every member's `contributions`, as a bag (a pair both of
/// whose pages name it counts twice; the operator's consumer keeps each pair once).
pub fn group_contributions<F>(
    fp: u64,
    members: &[Arc<Member>],
    settings: &GroupSettings,
    stats: &mut VerifyStats,
    verdict: F,
) -> Vec<(Edge, bool)>
where
    F: FnMut(&Member, &Member) -> PairVerdict,
{
    let pruned = std::cell::Cell::new(0);
    let prune = std::cell::Cell::new(settings.prunes(fp, members.len()));
    let mut verdict = group_verdict(settings, &prune, &pruned, verdict);
    let list: Vec<Entry> = members.iter().cloned().map(Entry::new).collect();
    let mut out: Vec<(Edge, bool)> = (0..list.len())
        .flat_map(|j| contributions(&list, j, settings, stats, &mut verdict))
        .collect();
    out.sort_unstable();
    stats.pruned += pruned.get();
    out
}

/// A pair's verdict as the worker's verdict cache holds it: 4 bytes, not a `PairVerdict`'s 24,
/// so an entry of the cache is 24 bytes with its key, not 40 (the cache holds up to two
/// generations of `VERDICT_CACHE_ENTRIES` pairs a worker). A similar pair keeps its resemblance
/// in parts per million, which is all its edge keeps (`edge_of`): the edge is the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachedVerdict(u32);

impl CachedVerdict {
    const DIFFER: u32 = 1 << 31;
    const DISSIMILAR: u32 = Self::DIFFER - 1;
    const COST_CAPPED: u32 = Self::DIFFER - 2;

    pub fn of((verdict, differ): PairVerdict) -> Self {
        let value = match verdict {
            Verdict::Similar(s) => ppm_of(s).min(Self::COST_CAPPED - 1),
            Verdict::Dissimilar => Self::DISSIMILAR,
            Verdict::CostCapped => Self::COST_CAPPED,
        };
        CachedVerdict(value | if differ { Self::DIFFER } else { 0 })
    }

    pub fn verdict(self) -> PairVerdict {
        let differ = self.0 & Self::DIFFER != 0;
        let verdict = match self.0 & !Self::DIFFER {
            Self::DISSIMILAR => Verdict::Dissimilar,
            Self::COST_CAPPED => Verdict::CostCapped,
            ppm => Verdict::Similar(ppm as f64 / 1_000_000.0),
        };
        (verdict, differ)
    }
}

/// A resemblance in parts per million, as an edge keeps it.
fn ppm_of(similarity: f64) -> u32 {
    (similarity * 1_000_000.0).round() as u32
}

/// One group's state: its members in order (with their scans' reach), and the blocks it last
/// gave.
#[derive(Debug, Default)]
pub struct Group {
    members: Vec<Entry>,
    blocks: Option<Arc<Vec<u64>>>,
    /// Over `BLOCK_SAMPLE` pages: the largest key of the block sample.
    sample_bound: Option<Box<SampleKey>>,
    /// From `min_pages` to `BLOCK_SAMPLE` pages: the blocks' counts and the other keys'
    /// bounds, from one change to the next (`edges::KeyTally`).
    tally: Option<Box<KeyTally>>,
}

/// A held group. Most fingerprints are a page's alone (its own sentences): such a group is one
/// pointer (no allocation), not a `Group` (a boxed list).
#[derive(Debug)]
pub enum Slot {
    One(Arc<Member>),
    Many(Box<Group>),
}

/// A worker's groups by fingerprint, in two maps: the fingerprints of one page (most of them,
/// ~37 a page) map to the page, the others to their `Group`. An entry of either is 16 bytes
/// (a key and a pointer), where one map of `Slot`s would spend 24 (the enum's tag takes a
/// word): at 1 M pages, ~18 M entries a worker, that is ~0.3 KB a page less. The pages'
/// map is a `DenseMap` (0.64 to 0.8 full, where a `HashMap` is 0.44 to 0.88 full).
#[derive(Debug, Default)]
pub struct Slots {
    one: DenseMap<Option<Arc<Member>>>,
    many: HashMap<u64, Box<Group>, Mixed>,
}

impl Slots {
    /// Takes out the group of `fp`, if one is held.
    pub fn take(&mut self, fp: u64) -> Option<Slot> {
        match self.one.remove(fp).flatten() {
            Some(member) => Some(Slot::One(member)),
            None => self.many.remove(&fp).map(Slot::Many),
        }
    }

    /// Holds `slot` as the group of `fp` (taken out before, so held in neither map).
    pub fn put(&mut self, fp: u64, slot: Slot) {
        let replaced = match slot {
            Slot::One(member) => self.one.insert(fp, Some(member)).is_some(),
            Slot::Many(group) => self.many.insert(fp, group).is_some(),
        };
        debug_assert!(!replaced, "a group is put back after it was taken out");
    }

    /// A hint that the group of `fp` is taken soon: its slot in the pages alone's map
    /// (`DenseMap::prefetch`), where `take` looks first and most fingerprints are. The groups of
    /// several pages are in a `HashMap`, which offers no prefetch.
    pub fn prefetch(&self, fp: u64) {
        self.one.prefetch(fp);
    }

    /// The groups held.
    pub fn len(&self) -> usize {
        self.one.len() + self.many.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Group {
    /// The group a slot holds (an empty one for none).
    pub fn from_slot(slot: Option<Slot>) -> Group {
        match slot {
            // A page alone: its scans looked at nothing and found nothing.
            Some(Slot::One(member)) => Group {
                members: vec![Entry { member, scans: [SideScan::NOTHING; 2] }],
                ..Default::default()
            },
            Some(Slot::Many(group)) => *group,
            None => Group::default(),
        }
    }

    /// The slot to hold, None for an empty group. A page alone keeps nothing else: its scans
    /// are empty (every change that left it alone scanned it again) and it repeats no block.
    pub fn into_slot(self) -> Option<Slot> {
        if self.is_empty() {
            return None;
        }
        if self.members.len() == 1
            && self.blocks.is_none()
            && self.sample_bound.is_none()
            && self.tally.is_none()
        {
            let entry = &self.members[0];
            debug_assert_eq!(entry.scans, [SideScan::NOTHING; 2], "a page alone scanned nothing");
            return self.members.into_iter().next().map(|e| Slot::One(e.member));
        }
        Some(Slot::Many(Box::new(self)))
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.blocks.is_none() && self.sample_bound.is_none()
    }

    fn find(&self, id: &Identity) -> Result<usize, usize> {
        self.members.binary_search_by(|e| identity(&e.member).cmp(id))
    }

    /// Applies `changes` (members and their multiplicity changes, in any order) to the group of
    /// fingerprint `fp`, and pushes what its output gains and loses into `out` (verdicts as a
    /// bag: see `group_contributions`). A member is in a group at most once (a page's
    /// fingerprints are distinct).
    ///
    /// Only the scans a change reaches are made again: a member's scan on one side looked at
    /// `reach` neighbours; when the nearest changed key on that side lies beyond them, the scan
    /// is the same after the change. What a scan gave is retracted from what it held
    /// (`held_side`). In a family of copies, an arriving page costs four comparisons (the two
    /// pages beside it scan toward it, and it scans both ways), a leaving one two (the pages
    /// beside it scan toward each other).
    pub fn apply<F>(
        &mut self,
        fp: u64,
        changes: Vec<(Arc<Member>, isize)>,
        settings: &GroupSettings,
        stats: &mut VerifyStats,
        verdict: F,
        out: &mut Vec<(GroupOutput, isize)>,
    ) where
        F: FnMut(&Member, &Member) -> PairVerdict,
    {
        let pruned = std::cell::Cell::new(0);
        let prune = std::cell::Cell::new(false);
        let mut verdict = group_verdict(settings, &prune, &pruned, verdict);
        self.apply_with(fp, changes, settings, stats, (&prune, &pruned), &mut verdict, out);
        stats.pruned += pruned.get();
    }

    /// `apply` with the group's verdict (`group_verdict`), pruning while `prune` holds: set
    /// here for the group before the change, then for the group after it. `pruned` counts the
    /// scans' pruned pairs (each also one of `stats.rejected`), not a retraction's re-check.
    #[allow(clippy::too_many_arguments)]
    fn apply_with<F>(
        &mut self,
        fp: u64,
        mut changes: Vec<(Arc<Member>, isize)>,
        settings: &GroupSettings,
        stats: &mut VerifyStats,
        (prune, pruned): (&std::cell::Cell<bool>, &std::cell::Cell<u64>),
        mut verdict: F,
        out: &mut Vec<(GroupOutput, isize)>,
    ) where
        F: FnMut(&Member, &Member) -> PairVerdict,
    {
        // Net change per member; only those that enter or leave count.
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        let mut net: Vec<(Arc<Member>, isize)> = Vec::with_capacity(changes.len());
        for (m, d) in changes {
            match net.last_mut() {
                Some((last, sum)) if *last == m => *sum += d,
                _ => net.push((m, d)),
            }
        }
        let mut inserted: Vec<Arc<Member>> = Vec::new();
        let mut removed: Vec<Arc<Member>> = Vec::new();
        for (m, d) in net {
            let present = self.find(&identity(&m)).is_ok();
            if d > 0 && !present {
                inserted.push(m);
            } else if d < 0 && present {
                removed.push(m);
            }
        }
        if inserted.is_empty() && removed.is_empty() {
            return;
        }
        let mut changed: Vec<Identity> =
            inserted.iter().chain(&removed).map(|m| identity(m)).collect();
        changed.sort_unstable();
        // Sorted, as `net` was.
        let inserted_ids: Vec<Identity> = inserted.iter().map(|m| identity(m)).collect();
        let old_len = self.members.len();
        let new_len = old_len + inserted.len() - removed.len();
        let (old_active, new_active) =
            (old_len <= settings.max_pages, new_len <= settings.max_pages);
        // A change that crosses `sentence_groups_over` changes every pair's verdict rule: the
        // group's verdicts go and come whole, as when it crosses max_pages.
        let (old_prunes, new_prunes) = (settings.prunes(fp, old_len), settings.prunes(fp, new_len));
        let incremental = old_active && new_active && old_prunes == new_prunes;
        prune.set(old_prunes);
        let mut old: Vec<(Edge, bool)> = Vec::new();
        let mut new: Vec<(Edge, bool)> = Vec::new();
        // The scans to make again after the change (`Redo`): for a scan that ended on no edge,
        // with what it looked at and whether it found anything.
        let mut redo: Vec<Redo> = Vec::new();
        let n = settings.neighbors;
        if incremental {
            // Before the change: the members within `neighbors` of a change (no scan reaches
            // farther), and of those, the sides whose scan reaches the nearest changed key.
            // Each changed key's place among them: the members below it, and those at or below
            // it (one more for a removal). Searched once a key, not once a member near it (a
            // search reads a member at each step, most of them out of the cache in a large
            // group).
            let places: Vec<(usize, usize)> = changed
                .iter()
                .map(|k| match self.find(k) {
                    Ok(at) => (at, at + 1),
                    Err(below) => (below, below),
                })
                .collect();
            let mut near: Vec<usize> = Vec::new();
            for &(p, _) in &places {
                near.extend(p.saturating_sub(n)..old_len.min(p + n + 1));
            }
            near.sort_unstable();
            near.dedup();
            for jo in near {
                let id = identity(&self.members[jo].member);
                if changed.binary_search(&id).is_ok() {
                    // Removed: all of its contribution goes.
                    for side in [Side::Before, Side::After] {
                        held_side(&self.members, jo, side, settings, stats, &mut verdict, &mut old);
                    }
                    continue;
                }
                let below = changed.partition_point(|k| *k < id);
                for side in [Side::Before, Side::After] {
                    // The members strictly between this one and the nearest changed key.
                    let between = match side {
                        Side::Before if below > 0 => jo - places[below - 1].1,
                        Side::After if below < changed.len() => places[below].0 - jo - 1,
                        _ => continue,
                    };
                    let held = self.members[jo].scans[side as usize];
                    let (reach, found) = (held.reach(), held.found());
                    if reach == OPEN || reach as usize > between {
                        if held.edge() {
                            // A short scan (it stopped at an edge): retracted (`held_side`)
                            // and made again whole.
                            held_side(
                                &self.members,
                                jo,
                                side,
                                settings,
                                stats,
                                &mut verdict,
                                &mut old,
                            );
                            redo.push((id, side, None));
                        } else {
                            // What it looked at need not be compared again.
                            redo.push((
                                id,
                                side,
                                Some((looked_at(&self.members, jo, side, reach), found)),
                            ));
                        }
                    }
                }
            }
            stats.pages += redo.len() as u64 + removed.len() as u64;
        } else if old_active {
            // Crossing max_pages (or sentence_groups_over): the whole group's verdicts go, once.
            for j in 0..old_len {
                for side in [Side::Before, Side::After] {
                    held_side(&self.members, j, side, settings, stats, &mut verdict, &mut old);
                }
            }
            stats.pages += old_len as u64;
        }
        // In one pass each, not one shift of the list per member: a stub family (an oversized
        // group of up to N/20 pages on the scale crawl) gains thousands of members a time, and
        // shifting its list once for each cost O(members) apiece.
        if !removed.is_empty() {
            // The held members among the changed keys are the removed ones (none of the
            // inserted is held yet).
            self.members.retain(|e| changed.binary_search(&identity(&e.member)).is_err());
        }
        if !inserted.is_empty() {
            // Two sorted runs (none of the inserted is present): the stable sort merges them.
            self.members.extend(inserted.iter().cloned().map(Entry::new));
            self.members.sort_by_key(|e| identity(&e.member));
        }
        prune.set(new_prunes);
        if new_active {
            if incremental {
                redo.extend(
                    inserted_ids
                        .iter()
                        .flat_map(|&id| [(id, Side::Before, None), (id, Side::After, None)]),
                );
            } else {
                // Out of oversize (or across sentence_groups_over): the whole group's verdicts
                // come, once.
                redo = self
                    .members
                    .iter()
                    .flat_map(|e| {
                        [
                            (identity(&e.member), Side::Before, None),
                            (identity(&e.member), Side::After, None),
                        ]
                    })
                    .collect();
                stats.pages += self.members.len() as u64;
            }
            let mut walked = Vec::new();
            for (id, side, known) in redo {
                let Ok(jn) = self.find(&id) else { continue };
                walked.clear();
                let pushed = new.len();
                let (reach, edge, found) = scan(
                    &self.members,
                    jn,
                    side,
                    known.as_ref().map(|(known, _)| Known { known, walked: &mut walked }),
                    settings,
                    stats,
                    &mut verdict,
                    &mut new,
                );
                // A pair passed over as known may be a sibling candidate: found stays when the
                // scan passed over any.
                walked.sort_unstable();
                let passed_over_found = known.as_ref().is_some_and(|(known, found)| {
                    *found && walked.iter().any(|w| known.binary_search(w).is_ok())
                });
                // The edge it ended on is all it gave when it pushed that alone and passed over
                // no sibling candidate.
                let held_edge = (edge && new.len() == pushed + 1 && !passed_over_found)
                    .then(|| new[pushed].0.similarity_ppm);
                self.members[jn].scans[side as usize] =
                    SideScan::made(reach, edge, found || passed_over_found, held_edge);
                // The pairs it looked at before and not now (removed, or out of its reach):
                // retracted, compared again only if the cache lost them; none when it had
                // found nothing similar.
                if let Some((known, true)) = known {
                    let me = self.members[jn].member.clone();
                    for other in known.iter().filter(|k| walked.binary_search(k).is_err()) {
                        let gone = removed.iter().find(|m| identity(m) == *other);
                        let other = match gone {
                            Some(m) => m.clone(),
                            None => match self.find(other) {
                                Ok(at) => self.members[at].member.clone(),
                                Err(_) => continue,
                            },
                        };
                        let (a, b) =
                            if side == Side::Before { (&other, &me) } else { (&me, &other) };
                        if settings.too_long(a, b) {
                            continue;
                        }
                        // A pruned re-check is no verification: `pruned` stays a part of
                        // `stats.rejected`.
                        let counted = pruned.get();
                        let decided = verdict(a, b);
                        pruned.set(counted);
                        if let (Verdict::Similar(s), differ) = decided {
                            old.push((edge_of(a, b, ppm_of(s)), differ));
                        }
                    }
                }
            }
        }
        old.sort_unstable();
        new.sort_unstable();
        // The difference of two sorted bags.
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < new.len() {
            match (old.get(i), new.get(j)) {
                (Some(o), Some(n)) if o == n => {
                    i += 1;
                    j += 1;
                }
                (Some(o), Some(n)) if o < n => {
                    out.push((GroupOutput::Verdict(o.0, o.1), -1));
                    i += 1;
                }
                (Some(o), None) => {
                    out.push((GroupOutput::Verdict(o.0, o.1), -1));
                    i += 1;
                }
                (_, Some(n)) => {
                    out.push((GroupOutput::Verdict(n.0, n.1), 1));
                    j += 1;
                }
                (None, None) => unreachable!(),
            }
        }
        if old_len != new_len {
            if !old_active {
                out.push((GroupOutput::Oversized(fp, old_len as isize), -1));
            }
            if !new_active {
                out.push((GroupOutput::Oversized(fp, new_len as isize), 1));
            }
        }
        self.update_blocks(settings, &inserted, &removed, out);
    }

    /// The repeated blocks after a change (`edges::group_blocks`), each member paired with
    /// them: up to `BLOCK_SAMPLE` pages, the group's tally takes the changed pages' keys
    /// (`edges::KeyTally`); over it, recounted when the change touches the sample.
    fn update_blocks(
        &mut self,
        settings: &GroupSettings,
        inserted: &[Arc<Member>],
        removed: &[Arc<Member>],
        out: &mut Vec<(GroupOutput, isize)>,
    ) {
        if settings.min_pages == 0 {
            return;
        }
        let unsampled = match self.sample_bound.as_deref() {
            Some(bound) => {
                self.members.len() > BLOCK_SAMPLE
                    && inserted.iter().all(|m| sample_key(m) > *bound)
                    && removed.iter().all(|m| sample_key(m) > *bound)
            }
            None => false,
        };
        // The blocks as they were: only the changed members' pairings with them move.
        let same = |blocks: &Option<Arc<Vec<u64>>>, out: &mut Vec<(GroupOutput, isize)>| {
            if let Some(blocks) = blocks {
                out.extend(removed.iter().map(|m| (GroupOutput::Blocks(m.id, blocks.clone()), -1)));
                out.extend(inserted.iter().map(|m| (GroupOutput::Blocks(m.id, blocks.clone()), 1)));
            }
        };
        if unsampled {
            // The sample, and so the blocks, are as they were.
            same(&self.blocks, out);
            return;
        }
        let old_len = self.members.len() + removed.len() - inserted.len();
        let whole = |pages: usize| pages <= BLOCK_SAMPLE && pages <= settings.max_pages;
        let new = if whole(old_len) && whole(self.members.len()) {
            debug_assert!(self.sample_bound.is_none());
            if self.members.len() < settings.min_pages as usize {
                // Too few pages for a block.
                self.tally = None;
                None
            } else {
                // The whole group is the sample before and after: the tally takes the changed
                // pages' keys, and only the keys it cannot settle are counted over the members.
                let entries = &self.members;
                let members =
                    || -> Vec<&Member> { entries.iter().map(|e| e.member.as_ref()).collect() };
                let blocks = match self.tally.as_deref_mut() {
                    Some(tally) => {
                        let (ins, rem): (Vec<&Member>, Vec<&Member>) = (
                            inserted.iter().map(|m| &**m).collect(),
                            removed.iter().map(|m| &**m).collect(),
                        );
                        let before = self.blocks.as_deref().map_or(&[][..], |b| b.as_slice());
                        match tally.apply(before, members, &ins, &rem, settings.min_pages) {
                            BlocksChange::Same => {
                                same(&self.blocks, out);
                                return;
                            }
                            BlocksChange::Now(blocks) => blocks,
                        }
                    }
                    None => {
                        let (blocks, tally) = KeyTally::count(&members(), settings.min_pages);
                        self.tally = Some(Box::new(tally));
                        blocks
                    }
                };
                Some(blocks).filter(|b| !b.is_empty())
            }
        } else if self.members.len() <= settings.max_pages {
            self.tally = None;
            let members: Vec<&Member> = self.members.iter().map(|e| e.member.as_ref()).collect();
            let (blocks, bound) = group_blocks(&members, settings.min_pages);
            self.sample_bound = bound.map(Box::new);
            blocks
        } else {
            self.tally = None;
            self.sample_bound = None;
            None
        };
        let old = self.blocks.take();
        if old.as_deref() == new.as_ref() {
            same(&old, out);
            self.blocks = old;
            return;
        }
        if let Some(blocks) = &old {
            // The members before the change: those now present but not inserted, and the removed.
            let stayed = self
                .members
                .iter()
                .map(|e| &e.member)
                .filter(|m| inserted.binary_search(m).is_err());
            out.extend(
                stayed.chain(removed).map(|m| (GroupOutput::Blocks(m.id, blocks.clone()), -1)),
            );
        }
        let new = new.map(Arc::new);
        if let Some(blocks) = &new {
            out.extend(
                self.members.iter().map(|e| (GroupOutput::Blocks(e.member.id, blocks.clone()), 1)),
            );
        }
        self.blocks = new;
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
/// before it goes on. A time that changes many groups (a large epoch, a template refresh
/// filtering many pages again) otherwise held all its output in the channels at once: ~0.9 GB
/// at the peak of the 1M-page scale crawl. The output is the same updates at the same time,
/// whatever the slices and passes.
pub fn verify_groups<'scope, T, S>(
    pages: VecCollection<'scope, T, (Arc<Member>, Vec<u64>), isize>,
    settings: GroupSettings,
    pace: Pace,
    mut on_stats: S,
) -> VecCollection<'scope, T, GroupOutput, isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
    S: FnMut(&[VerifyStats]) + 'static,
{
    type Update<T> = ((u64, Arc<Member>, Vec<u64>), T, isize);
    let scope = pages.inner.scope();
    let peers = scope.peers();
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
                let mut groups = Slots::default();
                let mut pending: Pending<T> = ByTime::default();
                let mut current: Option<(Capability<T>, Applying)> = None;
                let mut cache: verify::VerdictCache<CachedVerdict> = verify::VerdictCache::new(verify::VERDICT_CACHE_ENTRIES);
                let config = settings.config.clone();
                move |(input, frontier), output| {
                    input.for_each(|capability, data| {
                        pending.hold(&capability, data, |(_, member, fingerprints), diff| PageChange {
                            member,
                            fingerprints: fingerprints.into_boxed_slice(),
                            diff,
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
                            let Some((_, Held { capability, updates, .. })) = pending.pop_ready(frontier) else { break };
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
                            let started = std::time::Instant::now();
                            let mut stats = VerifyStats::default();
                            if cache.rotate_if_full() {
                                stats.cache_clears += 1;
                            }
                            // The slots of the groups a few pairs on miss the cache in a table
                            // of millions: their loads start now, while this group is applied.
                            if let Some(later) = applying.upcoming(PREFETCH_AHEAD) {
                                groups.prefetch(later);
                            }
                            let held_before = groups.len();
                            let mut group = Group::from_slot(groups.take(fp));
                            let entries_before = group.len();
                            let mut computed = 0;
                            group.apply(
                                fp,
                                changes,
                                &settings,
                                &mut stats,
                                |a, b| {
                                    cache
                                        .get_or_insert_with((a.hash, b.hash), || {
                                            computed += 1;
                                            CachedVerdict::of(pair_verdict(&config, a, b))
                                        })
                                        .verdict()
                                },
                                &mut out,
                            );
                            stats.computed = computed;
                            stats.entries = group.len() as i64 - entries_before as i64;
                            if let Some(slot) = group.into_slot() {
                                groups.put(fp, slot);
                            }
                            stats.groups = groups.len() as i64 - held_before as i64;
                            stats.nanos = started.elapsed().as_nanos() as u64;
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
mod tests {
    use super::*;
    use crate::ingest::page::Content;
    use crate::verify::edges::group_edges;
    use crate::verify::VerifyMethod;
    use std::collections::BTreeMap;

    fn id(n: u64) -> PageId {
        PageId { date: n, hash: n }
    }

    fn member(n: u64, keys: &[u64]) -> Arc<Member> {
        let content =
            Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), ..Default::default() };
        Arc::new(Member::new(VerifyMethod::Lcs, id(n), content))
    }

    type Updates = Vec<(GroupOutput, u64, isize)>;

    /// One time's pages: `(member, fingerprints, diff)`.
    type PageStep = Vec<(Arc<Member>, Vec<u64>, isize)>;

    /// The groups operator's output, consolidated, for `steps` (the `(member, fingerprints,
    /// diff)` updates of each time), on `workers` workers at `pace`.
    fn operator_output(steps: &[PageStep], workers: usize, pace: Pace) -> Updates {
        type Step = Vec<((Arc<Member>, Vec<u64>), isize)>;
        let steps: Vec<Step> = steps
            .iter()
            .map(|step| {
                step.iter()
                    .map(|(member, fps, diff)| ((member.clone(), fps.clone()), *diff))
                    .collect()
            })
            .collect();
        crate::testing::run_steps(&steps, workers, move |pages| {
            verify_groups(pages, settings(2, 12, 3), pace, |_| {})
        })
    }

    #[test]
    fn a_time_applied_in_slices_and_passes_gives_what_one_pass_and_a_rebuild_give() {
        // Four families of near-copies over eleven fingerprints (a page in three groups; the
        // groups of fingerprints 9 and 10 cross max_pages and drop back), pages that arrive,
        // leave, and come back changed (into another family) in later times. The fingerprints
        // are spread over the range of u64, so that passes split them.
        let page = |n: u64, version: u64| {
            let family = (n + version) % 4;
            member(
                n + 1000 * version,
                &[10 * family + 1, 10 * family + 2, 10 * family + 3, 10 * family + 4, 500 + n],
            )
        };
        let fps = |n: u64| {
            let mut fps = [n % 6, 6 + n % 3, 9 + n % 2]
                .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .to_vec();
            fps.sort_unstable();
            fps
        };
        let of = |pages: &[(u64, u64)], diff: isize| -> PageStep {
            pages.iter().map(|&(n, v)| (page(n, v), fps(n), diff)).collect()
        };
        let first: Vec<(u64, u64)> = (0..30).map(|n| (n, 0)).collect();
        let leaving: Vec<(u64, u64)> = (0..10).map(|n| (n, 0)).collect();
        let arriving: Vec<(u64, u64)> = (30..34).map(|n| (n, 0)).collect();
        let changed: Vec<(u64, u64)> = (12..18).map(|n| (n, 1)).collect();
        let steps = vec![
            of(&first, 1),
            [of(&leaving, -1), of(&arriving, 1)].concat(),
            [of(&changed.iter().map(|&(n, _)| (n, 0)).collect::<Vec<_>>(), -1), of(&changed, 1)]
                .concat(),
        ];
        let hour = std::time::Duration::from_secs(3600);
        let whole = operator_output(&steps, 1, Pace { slice: hour, pass_updates: usize::MAX });
        assert!(whole.iter().any(|(o, _, _)| matches!(o, GroupOutput::Verdict(..))), "{whole:?}");
        assert!(whole.iter().any(|(o, _, _)| matches!(o, GroupOutput::Blocks(..))));
        assert!(
            whole.iter().any(|(o, _, d)| matches!(o, GroupOutput::Oversized(..)) && *d < 0),
            "a group drops back"
        );
        // The same updates with a page's fingerprints one a record.
        let one_each: Vec<PageStep> = steps
            .iter()
            .map(|step| {
                step.iter()
                    .flat_map(|(m, fps, d)| fps.iter().map(|&fp| (m.clone(), vec![fp], *d)))
                    .collect()
            })
            .collect();
        for workers in [1, 2, 4] {
            for pace in [
                Pace { slice: std::time::Duration::ZERO, pass_updates: usize::MAX },
                Pace { slice: hour, pass_updates: usize::MAX },
                Pace { slice: hour, pass_updates: 1 },
                Pace { slice: std::time::Duration::ZERO, pass_updates: 7 },
            ] {
                assert_eq!(
                    operator_output(&steps, workers, pace),
                    whole,
                    "{pace:?}, {workers} workers"
                );
            }
            assert_eq!(
                operator_output(&one_each, workers, PACE),
                whole,
                "a fingerprint a record, {workers} workers"
            );
        }
        // From scratch: the final pages in one time give what the three times add up to.
        let mut last: Vec<(u64, u64)> =
            (10..34).map(|n| (n, if (12..18).contains(&n) { 1 } else { 0 })).collect();
        last.sort();
        let rebuilt = operator_output(
            &[of(&last, 1)],
            2,
            Pace { slice: std::time::Duration::ZERO, pass_updates: 5 },
        );
        let mut total: Updates = whole.iter().map(|(o, _, d)| (o.clone(), 0, *d)).collect();
        differential_dataflow::consolidation::consolidate_updates(&mut total);
        assert_eq!(total, rebuilt);
    }

    fn settings(neighbors: usize, max_pages: usize, min_pages: u32) -> GroupSettings {
        GroupSettings {
            config: VerifyConfig { threshold: 0.8, word_threshold: 0.0, ..Default::default() },
            neighbors,
            max_pages,
            min_pages,
            sentence_groups_over: usize::MAX,
        }
    }

    /// A page of sentences made of the given words (a sentence's key is a hash of its words,
    /// its weight their count), for the word-level second chance.
    fn worded(n: u64, sentences: &[Vec<u16>]) -> Arc<Member> {
        let key = |w: &[u16]| {
            w.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
                (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
            })
        };
        let content = Content {
            sentences: sentences.iter().map(|s| (key(s), s.len() as u16)).collect(),
            words: sentences.iter().flatten().copied().collect(),
            word_counts: sentences.iter().map(|s| s.len() as u16).collect(),
            ..Default::default()
        };
        Arc::new(Member::new(VerifyMethod::Lcs, id(n), content))
    }

    /// The group's whole output from scratch, as a bag: `group_contributions`, the oversized
    /// mark and the blocks.
    fn from_scratch(
        fp: u64,
        members: &[Arc<Member>],
        s: &GroupSettings,
    ) -> BTreeMap<GroupOutput, isize> {
        let mut sorted: Vec<Arc<Member>> = members.to_vec();
        sorted.sort();
        let mut out = BTreeMap::new();
        if sorted.len() > s.max_pages {
            out.insert(GroupOutput::Oversized(fp, sorted.len() as isize), 1);
            return out;
        }
        let bag = group_contributions(fp, &sorted, s, &mut VerifyStats::default(), |a, b| {
            pair_verdict(&s.config, a, b)
        });
        for (e, c) in bag {
            *out.entry(GroupOutput::Verdict(e, c)).or_default() += 1;
        }
        let refs: Vec<&Member> = sorted.iter().map(|m| m.as_ref()).collect();
        if let (Some(common), _) = group_blocks(&refs, s.min_pages) {
            let common = Arc::new(common);
            out.extend(sorted.iter().map(|m| (GroupOutput::Blocks(m.id, common.clone()), 1)));
        }
        // The reference's view (`edges::group_edges`): the same pairs, each once.
        let refs: Vec<&Member> = sorted.iter().map(|m| m.as_ref()).collect();
        let v = group_edges(
            fp,
            &refs,
            &s.config,
            s.sentence_groups_over,
            s.neighbors,
            &mut VerifyStats::default(),
            |a, b| pair_verdict(&s.config, a, b),
        );
        let mut pairs: Vec<(Edge, bool)> = v
            .edges
            .into_iter()
            .map(|e| (e, false))
            .chain(v.candidates.into_iter().map(|e| (e, true)))
            .collect();
        pairs.sort();
        let from_bag: Vec<(Edge, bool)> = out
            .keys()
            .filter_map(|o| if let GroupOutput::Verdict(e, c) = o { Some((*e, *c)) } else { None })
            .collect();
        assert_eq!(pairs, from_bag);
        out
    }

    /// Accumulates emitted changes into a bag (no multiplicity may go below 0).
    fn accumulate(state: &mut BTreeMap<GroupOutput, isize>, out: Vec<(GroupOutput, isize)>) {
        for (o, d) in out {
            let e = state.entry(o.clone()).or_default();
            *e += d;
            assert!(*e >= 0, "{o:?} at multiplicity {e}");
            if *e == 0 {
                state.remove(&o);
            }
        }
    }

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    #[test]
    fn a_cached_verdict_gives_the_same_edge() {
        for differ in [false, true] {
            assert_eq!(
                CachedVerdict::of((Verdict::Dissimilar, differ)).verdict(),
                (Verdict::Dissimilar, differ)
            );
            assert_eq!(
                CachedVerdict::of((Verdict::CostCapped, differ)).verdict(),
                (Verdict::CostCapped, differ)
            );
            for s in [0.8, 0.812_345_678_9, 0.999_999_5, 1.0, 0.5] {
                let (verdict, d) = CachedVerdict::of((Verdict::Similar(s), differ)).verdict();
                let Verdict::Similar(cached) = verdict else { panic!("{s}: {verdict:?}") };
                assert_eq!((ppm_of(cached), d), (ppm_of(s), differ), "{s}");
            }
        }
        // Every resemblance an edge can hold comes back as itself.
        assert!((0..=1_000_000u32).all(|ppm| ppm_of(ppm as f64 / 1_000_000.0) == ppm));
        assert_eq!(std::mem::size_of::<((u64, u64), CachedVerdict)>(), 24);
    }

    #[test]
    fn many_members_in_and_out_at_once_keep_the_list_sorted() {
        // An oversized group (a stub family) and a small one gain and lose many members in one
        // change, in no order: the list is the alive members sorted, the output as from scratch.
        for max_pages in [1000, 50] {
            let s = settings(2, max_pages, 0);
            let mut rng = Rng(11);
            let mut group = Group::default();
            let mut state = BTreeMap::new();
            let mut alive: Vec<Arc<Member>> = Vec::new();
            for round in 0..4u64 {
                let mut changes: Vec<(Arc<Member>, isize)> = Vec::new();
                for n in 0..120 {
                    let m = member(round * 1000 + n, &[1, 2, 3, 10_000 + rng.below(40)]);
                    alive.push(m.clone());
                    changes.push((m, 1));
                }
                for _ in 0..40 {
                    let gone = alive.swap_remove(rng.below(alive.len() as u64) as usize);
                    changes.retain(|(m, _)| *m != gone);
                    if (gone.id.date / 1000) < round {
                        changes.push((gone, -1));
                    }
                }
                // In no particular order.
                changes.sort_by_key(|(m, _)| m.hash.rotate_left(17) ^ m.id.date);
                let mut out = Vec::new();
                group.apply(
                    3,
                    changes,
                    &s,
                    &mut VerifyStats::default(),
                    |a, b| pair_verdict(&s.config, a, b),
                    &mut out,
                );
                accumulate(&mut state, out);
                let mut expected: Vec<Identity> = alive.iter().map(|m| identity(m)).collect();
                expected.sort_unstable();
                let held: Vec<Identity> =
                    group.members.iter().map(|e| identity(&e.member)).collect();
                assert_eq!(held, expected, "max_pages {max_pages}, round {round}");
                assert_eq!(
                    state,
                    from_scratch(3, &alive, &s),
                    "max_pages {max_pages}, round {round}"
                );
            }
        }
    }

    #[test]
    fn incremental_group_equals_the_group_from_scratch() {
        // Families of near-copies (shared sentences, a few of their own) and unrelated pages,
        // inserted and retracted in random batches; after each batch, the accumulated output
        // is the group's output from scratch. Small caps make the group cross max_pages.
        for (seed, neighbors, max_pages, min_pages) in [
            (1, 2, 1000, 4),
            (2, 8, 1000, 16),
            (3, 3, 12, 3),
            (4, 1, 1000, 0),
            (5, 4, 1000, 8),
            (6, 2, 30, 5),
            (7, 8, 1000, 0),
        ] {
            let s = settings(neighbors, max_pages, min_pages);
            let mut rng = Rng(seed);
            let page = |n: u64, rng: &mut Rng| {
                let family = rng.below(3);
                let mut keys: Vec<u64> =
                    (0..12).map(|k| family * 1000 + k).filter(|_| rng.below(8) > 0).collect();
                keys.extend((0..1 + rng.below(3)).map(|k| 100_000 + n * 10 + k));
                member(n, &keys)
            };
            let mut group = Group::default();
            let mut alive: Vec<Arc<Member>> = Vec::new();
            let mut state = BTreeMap::new();
            let mut next = 0;
            let mut verdicts_seen = 0;
            for round in 0..60 {
                let mut changes = Vec::new();
                for _ in 0..1 + rng.below(4) {
                    if !alive.is_empty() && rng.below(3) == 0 {
                        let gone = alive.remove(rng.below(alive.len() as u64) as usize);
                        changes.push((gone, -1));
                    } else {
                        let m = page(next, &mut rng);
                        next += 1;
                        alive.push(m.clone());
                        changes.push((m, 1));
                    }
                }
                // A member in and out in the same batch changes nothing.
                let transient = page(next + 10_000, &mut rng);
                changes.push((transient.clone(), 1));
                changes.push((transient, -1));
                let mut out = Vec::new();
                group.apply(
                    7,
                    changes,
                    &s,
                    &mut VerifyStats::default(),
                    |a, b| pair_verdict(&s.config, a, b),
                    &mut out,
                );
                // Held as the operator holds it: a page alone as a pointer.
                group = Group::from_slot(group.into_slot());
                accumulate(&mut state, out);
                let expected = from_scratch(7, &alive, &s);
                assert_eq!(state, expected, "seed {seed}, round {round}, {} members", alive.len());
                verdicts_seen += state
                    .keys()
                    .filter(|o| matches!(o, GroupOutput::Verdict(..) | GroupOutput::Oversized(..)))
                    .count();
            }
            assert!(
                verdicts_seen > 50,
                "seed {seed}: the workload has similar pairs or crosses the cap ({verdicts_seen})"
            );
        }
    }

    #[test]
    fn a_page_inserted_into_a_large_family_costs_a_bounded_number_of_comparisons() {
        let s = settings(8, 1000, 0);
        // 500 copies, each with its own last sentence and one more common sentence every 10.
        let copy = |n: u64| member(n, &(1..=20 + n / 10).chain([1000 + n]).collect::<Vec<u64>>());
        let mut group = Group::default();
        let mut state = BTreeMap::new();
        let mut out = Vec::new();
        group.apply(
            1,
            (0..500).map(|n| (copy(n), 1)).collect(),
            &s,
            &mut VerifyStats::default(),
            |a, b| pair_verdict(&s.config, a, b),
            &mut out,
        );
        accumulate(&mut state, out);
        // The page comes (1) or goes (-1): the comparisons it cost and the pairs with it that
        // came or went.
        let change = |group: &mut Group, state: &mut BTreeMap<GroupOutput, isize>, diff: isize| {
            let mut compared = 0;
            let mut out = Vec::new();
            group.apply(
                1,
                vec![(member(5000, &(1..=45).chain([9000]).collect::<Vec<u64>>()), diff)],
                &s,
                &mut VerifyStats::default(),
                |a, b| {
                    compared += 1;
                    pair_verdict(&s.config, a, b)
                },
                &mut out,
            );
            let with_it = out
                .iter()
                .filter(|(o, d)| matches!(o, GroupOutput::Verdict(e, _) if e.shorter.date == 5000 || e.longer.date == 5000) && *d == diff)
                .count();
            accumulate(state, out);
            (compared, with_it)
        };
        let (compared, gained) = change(&mut group, &mut state, 1);
        // The two pages beside it retract the edge their scan toward it ended on as they held
        // it (`SideScan`: no comparison) and scan again (2), and it scans its two sides (2):
        // four comparisons, whatever the group's size (six when a retraction scanned again).
        assert_eq!(compared, 4, "comparisons for one page in a group of 500");
        assert!(
            gained > 0 && gained <= 16,
            "the new page verified against its neighbours: {gained}"
        );
        // It leaves: its edges and its two neighbours' go as they were held, and the neighbours
        // scan again, now toward each other (2); the group's output is the group's from
        // scratch.
        let (compared, lost) = change(&mut group, &mut state, -1);
        assert_eq!(compared, 2, "comparisons for one page leaving a group of 501");
        assert_eq!(lost, gained, "every pair it had gained goes");
        let alive: Vec<Arc<Member>> = (0..500).map(copy).collect();
        assert_eq!(
            state,
            from_scratch(1, &alive, &s),
            "the group after it left is the group from scratch"
        );
    }

    #[test]
    fn a_side_scan_holds_its_reach_flags_and_edge_in_four_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        for reach in [0, 1, 7, OPEN] {
            for (edge, found) in [(false, false), (false, true), (true, true)] {
                for ppm in [None, Some(0), Some(812_345), Some(1_000_000)] {
                    let held = SideScan::made(reach, edge, found, ppm);
                    assert_eq!((held.reach(), held.edge(), held.found()), (reach, edge, found));
                    assert_eq!(
                        held.held_edge(),
                        ppm.filter(|_| edge),
                        "an edge is held only where the scan ended on one"
                    );
                }
            }
        }
        assert_eq!(
            SideScan::made(3, true, true, Some(SideScan::PPM_MAX + 1)).held_edge(),
            None,
            "out of range: made again"
        );
    }

    #[test]
    fn a_page_inserted_among_unrelated_pages_is_compared_with_its_neighbours_only() {
        // 500 unrelated pages of one length sharing a fingerprint (a site's template): every
        // scan runs its eight steps and finds nothing. An arriving page is compared with its
        // eight nearest on each side; each of those compares it once, as the one new page in
        // its scan; what they had compared before is known dissimilar.
        let s = settings(8, 1000, 0);
        let page = |n: u64| member(n, &(0..10).map(|k| n * 100 + k).collect::<Vec<u64>>());
        let mut group = Group::default();
        let mut out = Vec::new();
        group.apply(
            1,
            (0..500).map(|n| (page(2 * n), 1)).collect(),
            &s,
            &mut VerifyStats::default(),
            |a, b| pair_verdict(&s.config, a, b),
            &mut out,
        );
        let mut compared = std::collections::BTreeSet::new();
        let mut calls = 0;
        let mut out = Vec::new();
        group.apply(
            1,
            vec![(page(501), 1)],
            &s,
            &mut VerifyStats::default(),
            |a, b| {
                calls += 1;
                compared.insert((a.id.date, b.id.date));
                pair_verdict(&s.config, a, b)
            },
            &mut out,
        );
        assert!(out.is_empty());
        assert_eq!(compared.len(), 16, "the new page and its 16 nearest: {compared:?}");
        assert!(calls <= 32, "each pair at most twice (once from each end): {calls}");
    }

    #[test]
    fn the_blocks_of_a_large_group_follow_its_sample() {
        // 400 pages (over BLOCK_SAMPLE): a block on every third page, another on every fifth,
        // and text of their own; pages come and go. After each change the blocks (counted on
        // the sample) and the verdicts are the group's from scratch.
        const { assert!(BLOCK_SAMPLE < 400) };
        let s = settings(2, 1000, 16);
        let page = |n: u64| {
            let mut keys: Vec<u64> = (0..6).map(|k| 100_000 + n * 10 + k).collect();
            if n.is_multiple_of(3) {
                keys.extend(1..=10);
            }
            if n.is_multiple_of(5) {
                keys.extend(20..=25);
            }
            member(n, &keys)
        };
        let mut rng = Rng(11);
        let mut alive: Vec<Arc<Member>> = (0..400).map(page).collect();
        let mut group = Group::default();
        let mut state = BTreeMap::new();
        let mut out = Vec::new();
        group.apply(
            3,
            alive.iter().map(|m| (m.clone(), 1)).collect(),
            &s,
            &mut VerifyStats::default(),
            |a, b| pair_verdict(&s.config, a, b),
            &mut out,
        );
        accumulate(&mut state, out);
        assert_eq!(state, from_scratch(3, &alive, &s));
        let mut next = 400;
        for round in 0..40 {
            let mut changes = Vec::new();
            for _ in 0..1 + rng.below(3) {
                if rng.below(2) == 0 {
                    let gone = alive.remove(rng.below(alive.len() as u64) as usize);
                    changes.push((gone, -1));
                } else {
                    let m = page(next);
                    next += 1;
                    alive.push(m.clone());
                    changes.push((m, 1));
                }
            }
            let mut out = Vec::new();
            group.apply(
                3,
                changes,
                &s,
                &mut VerifyStats::default(),
                |a, b| pair_verdict(&s.config, a, b),
                &mut out,
            );
            accumulate(&mut state, out);
            assert_eq!(state, from_scratch(3, &alive, &s), "round {round}");
        }
        assert!(
            state.keys().any(|o| matches!(o, GroupOutput::Blocks(..))),
            "the group repeats blocks"
        );
    }

    #[test]
    fn a_per_sentence_group_compares_only_pairs_whose_sentences_may_reach_tau() {
        // A quoted sentence on four pages: `b` is `a` with one word changed in each of its other
        // sentences (alike word by word, 0.91; by sentences only the quote), `c` another text
        // quoting it, `d` a copy of `a`. Where the fingerprint is a bucket's (or a word band's),
        // a–b is an edge by the word-level second chance; in the quote's per-sentence group, of
        // more pages than `sentence_groups_over` (3), only a–d is compared.
        let s = GroupSettings {
            config: VerifyConfig::default(),
            neighbors: 8,
            max_pages: 1000,
            min_pages: 0,
            sentence_groups_over: 3,
        };
        let quote: Vec<u16> = (500..510).collect();
        let text = |base: u16, changed: bool| -> Vec<Vec<u16>> {
            let mut t = vec![quote.clone()];
            t.extend((0..10u16).map(|i| {
                (0..10u16)
                    .map(|w| if changed && w == i { 9000 + i } else { base + 10 * i + w })
                    .collect()
            }));
            t
        };
        let (a, b, c, d) = (
            worded(1, &text(0, false)),
            worded(2, &text(0, true)),
            worded(3, &text(1000, false)),
            worded(4, &text(0, false)),
        );
        let pair =
            |e: &Edge| (e.shorter.date.min(e.longer.date), e.shorter.date.max(e.longer.date));
        // By length then id: a, b, c, d; a scan stops at its first edge.
        for (fp, expected) in [
            (5, vec![(1, 2), (2, 4)]),
            (5 | crate::candidates::fingerprint::PER_SENTENCE, vec![(1, 4)]),
        ] {
            let mut group = Group::default();
            let mut stats = VerifyStats::default();
            let mut out = Vec::new();
            let mut compared = std::collections::BTreeSet::new();
            let changes = [&a, &b, &c, &d].iter().map(|m| ((*m).clone(), 1)).collect();
            group.apply(
                fp,
                changes,
                &s,
                &mut stats,
                |x, y| {
                    compared.insert((x.id.date.min(y.id.date), x.id.date.max(y.id.date)));
                    pair_verdict(&s.config, x, y)
                },
                &mut out,
            );
            let mut edges: Vec<(u64, u64)> = out
                .iter()
                .filter_map(
                    |(o, _)| if let GroupOutput::Verdict(e, _) = o { Some(pair(e)) } else { None },
                )
                .collect();
            edges.sort();
            edges.dedup();
            assert_eq!(edges, expected, "fingerprint {fp:#x}");
            let per_sentence = crate::candidates::fingerprint::is_per_sentence(fp);
            if per_sentence {
                assert_eq!(
                    compared.iter().copied().collect::<Vec<_>>(),
                    vec![(1, 4)],
                    "only the pair whose sentences reach τ"
                );
                assert!(stats.pruned >= 5, "the other five pairs pruned: {}", stats.pruned);
            } else {
                assert_eq!(stats.pruned, 0);
            }
            // The same without the rule: every group compares as a bucket's does.
            let off = GroupSettings { sentence_groups_over: 4, ..s.clone() };
            let bag = group_contributions(
                fp,
                &[a.clone(), b.clone(), c.clone(), d.clone()],
                &off,
                &mut VerifyStats::default(),
                |x, y| pair_verdict(&s.config, x, y),
            );
            assert!(
                bag.iter().any(|(e, _)| pair(e) == (1, 2)),
                "fingerprint {fp:#x} without the rule: a–b by words"
            );
        }
    }

    #[test]
    fn an_incremental_per_sentence_group_equals_the_group_from_scratch() {
        // Families whose copies change a word in some sentences (alike by words more than by
        // sentences), inserted and retracted in random batches, in a per-sentence group with
        // the rule on and in a bucket group: after each batch, the output is the group's from
        // scratch (the rule is a function of the pair: a scan treats a pruned pair as dissimilar,
        // before and after a change).
        // Pruning over 0 pages (always), over 6 and over 12 (the group grows across them).
        let per_sentence = 9 | crate::candidates::fingerprint::PER_SENTENCE;
        for (seed, fp, over) in
            [(1u64, per_sentence, 0), (2, per_sentence, 6), (4, per_sentence, 12), (3, 9, 0)]
        {
            let s = GroupSettings {
                config: VerifyConfig::default(),
                neighbors: 3,
                max_pages: 1000,
                min_pages: 0,
                sentence_groups_over: over,
            };
            let mut rng = Rng(seed);
            let page = |n: u64, rng: &mut Rng| {
                let family = rng.below(3) as u16;
                let sentences: Vec<Vec<u16>> = (0..8u16)
                    .map(|i| {
                        let changed = rng.below(3) == 0;
                        (0..8u16)
                            .map(|w| {
                                if changed && w == i {
                                    30_000 + rng.below(1000) as u16
                                } else {
                                    family * 1000 + 10 * i + w
                                }
                            })
                            .collect()
                    })
                    .collect();
                worded(n, &sentences)
            };
            let mut group = Group::default();
            let mut alive: Vec<Arc<Member>> = Vec::new();
            let mut state = BTreeMap::new();
            let (mut next, mut pruned, mut edges_seen) = (0, 0, 0);
            for round in 0..50 {
                let mut changes = Vec::new();
                for _ in 0..1 + rng.below(4) {
                    if !alive.is_empty() && rng.below(3) == 0 {
                        changes.push((alive.remove(rng.below(alive.len() as u64) as usize), -1));
                    } else {
                        let m = page(next, &mut rng);
                        next += 1;
                        alive.push(m.clone());
                        changes.push((m, 1));
                    }
                }
                let mut out = Vec::new();
                let mut stats = VerifyStats::default();
                group.apply(
                    fp,
                    changes,
                    &s,
                    &mut stats,
                    |a, b| pair_verdict(&s.config, a, b),
                    &mut out,
                );
                assert!(
                    stats.pruned <= stats.rejected,
                    "pruned pairs are rejected ones: {stats:?}"
                );
                pruned += stats.pruned;
                group = Group::from_slot(group.into_slot());
                accumulate(&mut state, out);
                assert_eq!(state, from_scratch(fp, &alive, &s), "seed {seed}, round {round}");
                edges_seen +=
                    state.keys().filter(|o| matches!(o, GroupOutput::Verdict(..))).count();
            }
            assert!(edges_seen > 50, "seed {seed}: the workload has similar pairs ({edges_seen})");
            assert_eq!(
                pruned > 0,
                crate::candidates::fingerprint::is_per_sentence(fp),
                "seed {seed}: pairs pruned only in a per-sentence group"
            );
        }
    }
}
