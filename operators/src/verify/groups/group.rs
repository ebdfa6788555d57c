//! One group's state (`Group`): its members in order with their scans, the blocks it repeats,
//! and a change applied to it with the difference of its output; the worker's groups by
//! fingerprint (`Slots`).

use super::scan::{
    edge_of, held_side, identity, looked_at, ppm_of, scan, Known, Side, SideScan, OPEN,
};
use super::*;

/// Verdicts a group gives (each similar pair's edge, and whether the pair's texts differ), as
/// a bag: before a change (`old`) and after it (`new`).
type Bag = Vec<(Edge, bool)>;

/// One group's state: its members in order (with their scans' reach), and the blocks it last
/// gave.
#[derive(Debug, Default)]
pub struct Group {
    pub(super) members: Vec<Entry>,
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
///
/// With the run's spill (`runtime::spill`), the fingerprints of one page go to disk when the
/// pages' map holds `Spill::recent_entries` of them: each as a key in a
/// `SpillMap` (1.6 bytes an entry in memory) naming the member (`member_key`), the member held
/// once in `Spilled`, with the count of its fingerprints there.
#[derive(Debug, Default)]
pub struct Slots {
    one: DenseMap<Option<Arc<Member>>>,
    many: HashMap<u64, Box<Group>, Mixed>,
    spilled: Option<Box<Spilled>>,
}

/// A member's identity (length, id, content hash) in one word, as `Spilled` keys it. A page
/// whose content changes under the same id (a template refresh filters it again) is a new
/// member, and the two are held at once while a time moves the page's groups from one to the
/// other: keyed by the page's id alone, the new member's fingerprints would find the old one.
/// Two members meet on it with the odds of a 64-bit hash collision.
fn member_key(member: &Member) -> u64 {
    use crate::runtime::hashing::mix64;
    mix64(member.id.compact() ^ mix64(member.hash ^ mix64(member.length)))
}

/// The fingerprints of one page on disk, and their pages' members.
#[derive(Debug)]
struct Spilled {
    /// Fingerprint → the member's key (`member_key`).
    map: SpillMap,
    /// Member's key → the member, and how many of its fingerprints `map` holds.
    members: HashMap<u64, (Arc<Member>, u32), Mixed>,
    /// The pages' map is written to `map` when it holds this many.
    after: usize,
}

impl Slots {
    /// Groups whose fingerprints of one page spill into `spill` (`None`: all in memory).
    pub fn new(spill: Option<Arc<Spill>>) -> Slots {
        let spilled = spill.map(|spill| {
            Box::new(Spilled {
                after: spill.recent_entries(),
                map: SpillMap::new(Some(spill)),
                members: HashMap::default(),
            })
        });
        Slots { spilled, ..Slots::default() }
    }

    /// Takes out the group of `fp`, if one is held.
    pub fn take(&mut self, fp: u64) -> Option<Slot> {
        if let Some(member) = self.one.remove(fp).flatten() {
            return Some(Slot::One(member));
        }
        if let Some(group) = self.many.remove(&fp) {
            return Some(Slot::Many(group));
        }
        let spilled = self.spilled.as_mut()?;
        let key = spilled.map.remove(fp)?;
        let (member, count) = spilled.members.get_mut(&key).expect("a spilled page's member");
        *count -= 1;
        let member = if *count == 0 {
            spilled.members.remove(&key).expect("held").0
        } else {
            member.clone()
        };
        Some(Slot::One(member))
    }

    /// Holds `slot` as the group of `fp` (taken out before, so held in none of the maps).
    pub fn put(&mut self, fp: u64, slot: Slot) {
        let replaced = match slot {
            Slot::One(member) => self.one.insert(fp, Some(member)).is_some(),
            Slot::Many(group) => self.many.insert(fp, group).is_some(),
        };
        debug_assert!(!replaced, "a group is put back after it was taken out");
        if let Some(spilled) = self.spilled.as_mut().filter(|s| self.one.len() >= s.after) {
            let one = std::mem::take(&mut self.one);
            let entries = one
                .iter()
                .filter_map(|(fp, member)| {
                    let member = member.as_ref()?;
                    let key = member_key(member);
                    spilled.members.entry(key).or_insert_with(|| (member.clone(), 0)).1 += 1;
                    Some((fp, key))
                })
                .collect();
            spilled.map.push_run(entries);
        }
    }

    /// A hint that the group of `fp` is taken soon: its slot in the pages alone's map
    /// (`DenseMap::prefetch`), where `take` looks first and most fingerprints are, and the
    /// filters of the spilled ones. The groups of several pages are in a `HashMap`, which
    /// offers no prefetch.
    pub fn prefetch(&self, fp: u64) {
        self.one.prefetch(fp);
        if let Some(spilled) = &self.spilled {
            spilled.map.prefetch(fp);
        }
    }

    /// The groups held.
    pub fn len(&self) -> usize {
        self.one.len() + self.many.len() + self.spilled.as_ref().map_or(0, |s| s.map.len())
    }

    /// The bytes held, walked: the maps' tables (and what finds the spilled fingerprints), and
    /// each group of several pages with its list and blocks (its members are counted where
    /// they are made: `Structure::Members`).
    pub fn bytes(&self) -> usize {
        use crate::runtime::footprint::{arc_share, array, hash_table};
        let many = self.many.values().map(|group| {
            std::mem::size_of::<Group>()
                + array::<Entry>(group.members.capacity())
                + group.blocks.as_ref().map_or(0, |b| {
                    arc_share(b, std::mem::size_of::<Vec<u64>>() + array::<u64>(b.capacity()))
                })
                + group.sample_bound.as_ref().map_or(0, |_| std::mem::size_of::<SampleKey>())
                + group
                    .tally
                    .as_ref()
                    .map_or(0, |t| std::mem::size_of::<KeyTally>() + t.own_bytes())
        });
        let spilled = self.spilled.as_ref().map_or(0, |s| {
            s.map.memory_bytes()
                + hash_table(s.members.capacity(), std::mem::size_of::<(u64, (Arc<Member>, u32))>())
        });
        self.one.table_bytes()
            + hash_table(self.many.capacity(), std::mem::size_of::<(u64, Box<Group>)>())
            + many.sum::<usize>()
            + spilled
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
        changes: Vec<(Arc<Member>, isize)>,
        settings: &GroupSettings,
        stats: &mut VerifyStats,
        (prune, pruned): (&std::cell::Cell<bool>, &std::cell::Cell<u64>),
        mut verdict: F,
        out: &mut Vec<(GroupOutput, isize)>,
    ) where
        F: FnMut(&Member, &Member) -> PairVerdict,
    {
        let (inserted, removed) = self.entering_and_leaving(changes);
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
        let mut old: Bag = Vec::new();
        let mut new: Bag = Vec::new();
        // The scans to make again after the change (`Redo`): for a scan that ended on no edge,
        // with what it looked at and whether it found anything.
        let mut redo: Vec<Redo> = Vec::new();
        if incremental {
            redo = self.retract_near(&changed, settings, stats, &mut verdict, &mut old);
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
        self.replace_members(&changed, &inserted, !removed.is_empty());
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
            self.rescan(
                redo,
                &removed,
                settings,
                stats,
                pruned,
                &mut verdict,
                (&mut old, &mut new),
            );
        }
        verdict_difference(old, new, out);
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

    /// Before a change: the members within `neighbors` of a changed key (no scan reaches
    /// farther), and of those, the sides whose scan reaches the nearest changed key. Their
    /// pairs that go are pushed to `old`; the scans to make again are returned (`Redo`: for a
    /// scan that ended on no edge, with what it looked at and whether it found anything).
    fn retract_near<F>(
        &self,
        changed: &[Identity],
        settings: &GroupSettings,
        stats: &mut VerifyStats,
        verdict: &mut F,
        old: &mut Bag,
    ) -> Vec<Redo>
    where
        F: FnMut(&Member, &Member) -> PairVerdict,
    {
        let (n, old_len) = (settings.neighbors, self.members.len());
        let mut redo: Vec<Redo> = Vec::new();
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
                    held_side(&self.members, jo, side, settings, stats, verdict, old);
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
                        held_side(&self.members, jo, side, settings, stats, verdict, old);
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
        redo
    }

    /// The member list after a change: the removed members out, the inserted in, in key order.
    fn replace_members(
        &mut self,
        changed: &[Identity],
        inserted: &[Arc<Member>],
        any_removed: bool,
    ) {
        // In one pass each, not one shift of the list per member: a stub family (an oversized
        // group of up to N/20 pages on the scale crawl) gains thousands of members a time, and
        // shifting its list once for each cost O(members) apiece.
        if any_removed {
            // The held members among the changed keys are the removed ones (none of the
            // inserted is held yet).
            self.members.retain(|e| changed.binary_search(&identity(&e.member)).is_err());
        }
        if !inserted.is_empty() {
            // Two sorted runs (none of the inserted is present): the stable sort merges them.
            self.members.extend(inserted.iter().cloned().map(Entry::new));
            self.members.sort_by_key(|e| identity(&e.member));
        }
    }

    /// Makes the scans of `redo` again, each holding what it found (`SideScan`) and pushing its
    /// pairs into `new`; a scan made again after a change (`known`: what it looked at before)
    /// passes over the pairs it knows, and those it looked at before and not now go to `old`
    /// (retracted; compared again only if the verdict cache lost them).
    #[allow(clippy::too_many_arguments)]
    fn rescan<F>(
        &mut self,
        redo: Vec<Redo>,
        removed: &[Arc<Member>],
        settings: &GroupSettings,
        stats: &mut VerifyStats,
        pruned: &std::cell::Cell<u64>,
        verdict: &mut F,
        (old, new): (&mut Bag, &mut Bag),
    ) where
        F: FnMut(&Member, &Member) -> PairVerdict,
    {
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
                verdict,
                new,
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
                    let (a, b) = if side == Side::Before { (&other, &me) } else { (&me, &other) };
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

    /// The members that enter and that leave the group under `changes` (net per member: a
    /// member added and removed at once does neither), each sorted.
    fn entering_and_leaving(
        &self,
        mut changes: Vec<(Arc<Member>, isize)>,
    ) -> (Vec<Arc<Member>>, Vec<Arc<Member>>) {
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
        (inserted, removed)
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
            let BlocksChange::Now(new) = self.tallied_blocks(settings, inserted, removed) else {
                same(&self.blocks, out);
                return;
            };
            Some(new).filter(|blocks| !blocks.is_empty())
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

    /// The blocks of a group that is the whole sample before and after a change: the tally
    /// takes the changed pages' keys, and only the keys it cannot settle are counted over the
    /// members.
    fn tallied_blocks(
        &mut self,
        settings: &GroupSettings,
        inserted: &[Arc<Member>],
        removed: &[Arc<Member>],
    ) -> BlocksChange {
        debug_assert!(self.sample_bound.is_none());
        if self.members.len() < settings.min_pages as usize {
            // Too few pages for a block.
            self.tally = None;
            return BlocksChange::Now(Vec::new());
        }
        let entries = &self.members;
        let members = || -> Vec<&Member> { entries.iter().map(|e| e.member.as_ref()).collect() };
        let blocks = match self.tally.as_deref_mut() {
            Some(tally) => {
                let (ins, rem): (Vec<&Member>, Vec<&Member>) = (
                    inserted.iter().map(|m| &**m).collect(),
                    removed.iter().map(|m| &**m).collect(),
                );
                let before = self.blocks.as_deref().map_or(&[][..], |b| b.as_slice());
                match tally.apply(before, members, &ins, &rem, settings.min_pages) {
                    BlocksChange::Same => return BlocksChange::Same,
                    BlocksChange::Now(blocks) => blocks,
                }
            }
            None => {
                let (blocks, tally) = KeyTally::count(&members(), settings.min_pages);
                self.tally = Some(Box::new(tally));
                blocks
            }
        };
        BlocksChange::Now(blocks)
    }
}

/// The difference of two bags of verdicts, sorted here: what `old` holds and `new` does not is
/// retracted, what `new` holds and `old` does not is added.
fn verdict_difference(mut old: Bag, mut new: Bag, out: &mut Vec<(GroupOutput, isize)>) {
    old.sort_unstable();
    new.sort_unstable();
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
}
