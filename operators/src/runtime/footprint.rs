//! Resident bytes by structure: what the operators that hold pages' state hold, summed over
//! the workers of the process.
//!
//! A structure counts its own allocations: its tables at their capacity, its entries, and the
//! buffers it points to. A buffer shared by several holders is counted once: by each holder at
//! its share (`arc_share`: a group's blocks), or where it is made, from its changes (`Tally`:
//! the members, each held by every group of its page). The sentences and words a structure
//! shares with the page held to retract it are that page's, counted with the held pages
//! (`dupflow_held_page_bytes`), not here.
//!
//! An operator walks what it holds into its `Gauge` while it runs, at most once in
//! `REPORT_EVERY` and never more often than its walks allow (a walk's time, times
//! `WALK_SHARE`, apart), and once more as it is dropped: what it held at the end of the run,
//! which `Totals::at_end` gives. The totals are a run's (`run::Runtime::footprint`): every
//! worker's operators of the run report into them, and two runs of one process have two.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A structure of the method that holds state for every page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Structure {
    /// The fingerprint index: each fingerprint's group (its members in order, their scans,
    /// its repeated blocks), a pointer for a fingerprint of one page.
    Groups,
    /// The groups' members: a page's length, id, hash, sorted keys and content (its sentences
    /// and words are the page's).
    Members,
    /// The verdict cache (capped by `verify::VERDICT_CACHE_ENTRIES` a worker).
    Verdicts,
    /// Each host's sentences and the pages holding them (template statistics).
    Holders,
    /// The template filter's pages: what it reads of a page to filter it again.
    Filtered,
    /// Each verified pair once (`by_time::distinct`): the edges and the sibling candidates.
    Edges,
    /// The sibling rule's pages: each page's member pointer and repeated keys, and the
    /// candidates each page is in.
    Siblings,
    /// The incremental union-find: a node a page (its edges, component and label) and each
    /// component's members.
    Components,
    /// The exact-duplicate families: each content key's page, or its members.
    Families,
    /// Each page's label and the partners it verified against (its assignment's parts).
    Assignments,
    /// The joins by page (`rows::join_by_page`): each page's row (its URL and record id, whose
    /// text the rows count, beside its assignment) and its member pointer.
    Joins,
}

impl Structure {
    pub const ALL: [Structure; 11] = [
        Structure::Groups,
        Structure::Members,
        Structure::Verdicts,
        Structure::Holders,
        Structure::Filtered,
        Structure::Edges,
        Structure::Siblings,
        Structure::Components,
        Structure::Families,
        Structure::Assignments,
        Structure::Joins,
    ];

    /// Its name in the run summary and the `structure` label of `dupflow_state_bytes`.
    pub fn name(self) -> &'static str {
        match self {
            Structure::Groups => "groups",
            Structure::Members => "members",
            Structure::Verdicts => "verdicts",
            Structure::Holders => "holders",
            Structure::Filtered => "filtered",
            Structure::Edges => "edges",
            Structure::Siblings => "siblings",
            Structure::Components => "components",
            Structure::Families => "families",
            Structure::Assignments => "assignments",
            Structure::Joins => "joins",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// At least this long between two reports of one gauge while it runs.
pub const REPORT_EVERY: Duration = Duration::from_secs(10);
/// A walk takes at most this share of its operator's time: the next report waits a walk's
/// time times its inverse.
pub const WALK_SHARE: u32 = 100;

const COUNT: usize = Structure::ALL.len();

/// The bytes of each structure, now and at the end of a run, over a set of gauges: a run's
/// (`run::Runtime::footprint`), or a test's own.
#[derive(Debug)]
pub struct Totals {
    now: [AtomicI64; COUNT],
    at_end: [AtomicI64; COUNT],
}

impl Totals {
    pub const fn new() -> Self {
        Totals {
            now: [const { AtomicI64::new(0) }; COUNT],
            at_end: [const { AtomicI64::new(0) }; COUNT],
        }
    }
}

impl Default for Totals {
    fn default() -> Self {
        Self::new()
    }
}

impl Totals {
    /// The bytes `structure` holds now (the last reports of its gauges).
    pub fn held(&self, structure: Structure) -> i64 {
        self.now[structure.index()].load(Ordering::Relaxed)
    }

    /// The bytes `structure` held when its operators were dropped (at the end of the run).
    pub fn at_end(&self, structure: Structure) -> i64 {
        self.at_end[structure.index()].load(Ordering::Relaxed)
    }
}

/// One operator's share of a structure on one worker.
#[derive(Debug)]
pub struct Gauge {
    structure: Structure,
    totals: Arc<Totals>,
    reported: i64,
    next: Option<Instant>,
}

impl Gauge {
    /// A gauge of `totals` (its run's).
    pub fn new(structure: Structure, totals: &Arc<Totals>) -> Self {
        Gauge { structure, totals: totals.clone(), reported: 0, next: None }
    }

    /// Whether a report is due (the first is due at once).
    pub fn due(&self) -> bool {
        self.next.is_none_or(|next| Instant::now() >= next)
    }

    /// Reports `walk()` (the bytes held now) if a report is due.
    pub fn report_if_due(&mut self, walk: impl FnOnce() -> usize) {
        if !self.due() {
            return;
        }
        let started = Instant::now();
        let bytes = walk();
        let took = started.elapsed();
        self.set(bytes);
        self.next = Some(Instant::now() + REPORT_EVERY.max(took * WALK_SHARE));
    }

    /// Sets its share to `bytes`.
    pub fn set(&mut self, bytes: usize) {
        let bytes = bytes as i64;
        self.totals.now[self.structure.index()].fetch_add(bytes - self.reported, Ordering::Relaxed);
        self.reported = bytes;
    }

    /// Its last report: what the operator holds, `bytes`, as it is dropped at the end of a run
    /// (into `at_end`); the process no longer holds it.
    pub fn finish(&mut self, bytes: usize) {
        self.totals.at_end[self.structure.index()].fetch_add(bytes as i64, Ordering::Relaxed);
        self.set(0);
    }
}

impl Drop for Gauge {
    fn drop(&mut self) {
        // An owner that did not `finish` (a panic, an abort) still leaves `held`.
        self.set(0);
    }
}

/// A structure's bytes kept from the changes of its records (each record's bytes times its
/// difference), where walking the structure would cost more than the changes: the members,
/// shared by every group of their pages.
#[derive(Debug)]
pub struct Tally {
    gauge: Gauge,
    bytes: i64,
}

impl Tally {
    pub fn new(structure: Structure, totals: &Arc<Totals>) -> Self {
        Tally { gauge: Gauge::new(structure, totals), bytes: 0 }
    }

    /// A record of `bytes` came (`diff` 1) or went (-1).
    pub fn add(&mut self, bytes: usize, diff: isize) {
        self.bytes += bytes as i64 * diff as i64;
    }

    /// Reports the bytes kept (after a batch of changes).
    pub fn report(&mut self) {
        self.gauge.set(self.bytes.max(0) as usize);
    }
}

impl Drop for Tally {
    /// What the structure holds at the end of the run.
    fn drop(&mut self) {
        self.gauge.finish(self.bytes.max(0) as usize);
    }
}

/// An operator's state with its gauge: `report` walks the state into the gauge when a report
/// is due (after a complete time), and dropping it reports what the state held at the end.
pub struct Gauged<S> {
    pub state: S,
    gauge: Gauge,
    walk: fn(&S) -> usize,
}

impl<S> Gauged<S> {
    pub fn new(
        totals: &Arc<Totals>,
        structure: Structure,
        state: S,
        walk: fn(&S) -> usize,
    ) -> Self {
        Gauged { state, gauge: Gauge::new(structure, totals), walk }
    }

    /// Walks the state into the gauge, when a report is due.
    pub fn report(&mut self) {
        let (state, walk) = (&self.state, self.walk);
        self.gauge.report_if_due(|| walk(state));
    }
}

impl<S> Drop for Gauged<S> {
    fn drop(&mut self) {
        let bytes = (self.walk)(&self.state);
        self.gauge.finish(bytes);
    }
}

/// The bytes an `Arc`'s allocation holds beside its value: its two counts.
pub const ARC_COUNTS: usize = 2 * std::mem::size_of::<usize>();

/// A heap allocation's bytes for `len` elements of `T` (its capacity, for a `Vec`).
pub fn array<T>(len: usize) -> usize {
    len * std::mem::size_of::<T>()
}

/// The bytes of an `Arc`'s allocation (its two counts and `value_bytes`), at this holder's
/// share: over the `Arc`'s holders.
pub fn arc_share<T: ?Sized>(arc: &Arc<T>, value_bytes: usize) -> usize {
    (ARC_COUNTS + value_bytes) / Arc::strong_count(arc)
}

/// The bytes of a slice's `Arc` when it is its holder's alone, else 0: a slice shared with
/// the page is the held page's.
pub fn own_slice<T>(arc: &Arc<[T]>) -> usize {
    if Arc::strong_count(arc) > 1 || arc.is_empty() {
        return 0;
    }
    ARC_COUNTS + std::mem::size_of_val(&**arc)
}

/// A `hashbrown` table's bytes at `capacity` entries of `entry` bytes: its buckets (a power of
/// two, at most 7/8 full) and a control byte each.
pub fn hash_table(capacity: usize, entry: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        capacity.next_power_of_two().max(4)
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    buckets * (entry + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gauge_moves_its_structure_by_its_changes_and_leaves_it_when_dropped() {
        let totals = Arc::new(Totals::new());
        let structure = Structure::Verdicts;
        let held = || totals.held(structure);
        let mut a = Gauge::new(structure, &totals);
        let mut b = Gauge::new(structure, &totals);
        a.set(100);
        b.set(50);
        assert_eq!(held(), 150);
        a.set(70);
        assert_eq!(held(), 120);
        drop(b);
        assert_eq!(held(), 70);
        a.finish(80);
        assert_eq!(held(), 0, "a finished gauge holds nothing");
        assert_eq!(totals.at_end(structure), 80);
        drop(a);
        assert_eq!(held(), 0);
        assert_eq!(totals.held(Structure::Groups), 0, "other structures move not");
    }

    #[test]
    fn a_report_is_due_at_once_then_not_before_its_interval() {
        let totals = Arc::new(Totals::new());
        let mut gauge = Gauge::new(Structure::Filtered, &totals);
        assert!(gauge.due());
        let mut walks = 0;
        gauge.report_if_due(|| {
            walks += 1;
            10
        });
        gauge.report_if_due(|| {
            walks += 1;
            20
        });
        assert_eq!(walks, 1, "the second report waits for REPORT_EVERY");
        assert!(!gauge.due());
    }

    #[test]
    fn a_tally_holds_what_came_and_did_not_go() {
        let structure = Structure::Members;
        let totals = Arc::new(Totals::new());
        let mut tally = Tally::new(structure, &totals);
        tally.add(100, 1);
        tally.add(40, 1);
        tally.add(100, -1);
        tally.report();
        assert_eq!(tally.bytes, 40);
        drop(tally);
        assert_eq!(totals.at_end(structure), 40);
    }

    #[test]
    fn a_gauged_state_reports_what_it_held_at_its_end() {
        let structure = Structure::Families;
        let totals = Arc::new(Totals::new());
        let mut gauged = Gauged::new(&totals, structure, vec![0u64; 3], |v| v.len() * 8);
        gauged.report();
        gauged.state.push(1);
        drop(gauged);
        assert_eq!(totals.at_end(structure), 32);
    }

    #[test]
    fn an_arc_is_counted_once_over_its_holders() {
        let one = Arc::new([0u64; 4]);
        let two = one.clone();
        let whole = 16 + 32;
        assert_eq!(arc_share(&one, 32) + arc_share(&two, 32), whole);
    }

    #[test]
    fn a_hash_table_is_a_power_of_two_of_buckets_at_most_seven_eighths_full() {
        let mut map: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        for n in 0..1000 {
            map.insert(n, n);
        }
        let bytes = hash_table(map.capacity(), 16);
        // 1,024 buckets hold 896 entries: 1,000 take 2,048.
        assert_eq!(bytes, 2048 * 17, "capacity {}", map.capacity());
    }
}
