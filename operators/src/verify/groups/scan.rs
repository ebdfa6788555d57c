//! The scans of a group's members: each member's nearest similar neighbour on each side,
//! within `neighbors` and the length filter, the sibling candidates met on the way, and what
//! each scan held (`SideScan`), so that a change rescans only the members it may move.

use super::*;

pub(super) fn identity(m: &Member) -> Identity {
    (m.length, m.id, m.hash)
}

/// A group's member and what its scans on each side (`scan`, before and after it) held.
#[derive(Clone, Debug)]
pub struct Entry {
    pub member: Arc<Member>,
    pub(super) scans: [SideScan; 2],
}

/// A scan that ran out of list (or was never made): any change on that side may move it.
pub(super) const OPEN: u8 = u8::MAX;

impl Entry {
    pub(super) fn new(member: Arc<Member>) -> Self {
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
pub(super) struct SideScan(u32);

impl SideScan {
    pub(super) const EDGE: u32 = 1 << 8;
    pub(super) const FOUND: u32 = 1 << 9;
    pub(super) const HELD: u32 = 1 << 10;
    pub(super) const PPM_SHIFT: u32 = 11;
    /// The largest resemblance held: 21 bits (a resemblance is at most 1,000,000 ppm).
    pub(super) const PPM_MAX: u32 = (1 << (32 - Self::PPM_SHIFT)) - 1;
    /// A scan not made yet: any change moves it, and retracting it means making it.
    pub(super) const UNMADE: SideScan = SideScan(OPEN as u32 | Self::EDGE | Self::FOUND);
    /// A page alone's: it looked at nothing and found nothing.
    pub(super) const NOTHING: SideScan = SideScan(OPEN as u32);

    pub(super) fn made(reach: u8, edge: bool, found: bool, held_edge: Option<u32>) -> Self {
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

    pub(super) fn reach(self) -> u8 {
        self.0 as u8
    }

    pub(super) fn edge(self) -> bool {
        self.0 & Self::EDGE != 0
    }

    pub(super) fn found(self) -> bool {
        self.0 & Self::FOUND != 0
    }

    /// The resemblance of the edge the scan ended on, when that edge is all it gave.
    pub(super) fn held_edge(self) -> Option<u32> {
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
pub(super) fn held_side<F>(
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
pub(super) fn edge_of(a: &Member, b: &Member, similarity_ppm: u32) -> Edge {
    Edge { shorter_length: a.length, shorter: a.id, longer: b.id, similarity_ppm }
}

/// How many neighbours member `j` of a list of `len` has on `side`.
pub(super) fn available(len: usize, j: usize, side: Side) -> usize {
    match side {
        Side::Before => j,
        Side::After => len - j - 1,
    }
}

/// Which neighbours a scan walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
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
pub(super) struct Known<'a> {
    pub(super) known: &'a [Identity],
    pub(super) walked: &'a mut Vec<Identity>,
}

/// One side of `contributions`, pushed into `out`. Returns the scan's reach: how many
/// neighbours it looked at before it ended on its own (an edge, the length filter,
/// `neighbors` steps), or `OPEN` when it ran out of list; whether it ended on an edge; and
/// whether it pushed a similar pair. A change beyond the reach cannot move the scan: the same
/// neighbours, in the same order, give the same pairs. With `known` (a scan made again after a
/// change), the neighbours it holds are passed over.
#[allow(clippy::too_many_arguments)]
pub(super) fn scan<F>(
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
pub(super) fn looked_at(list: &[Entry], j: usize, side: Side, reach: u8) -> Vec<Identity> {
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
pub(super) fn ppm_of(similarity: f64) -> u32 {
    (similarity * 1_000_000.0).round() as u32
}
