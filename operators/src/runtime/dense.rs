//! A map from 64-bit keys to one-word values, held denser than a `HashMap`: the groups' and the
//! sentence holders' entries of one page, tens of millions a worker at 1M pages.
//!
//! A `HashMap` (hashbrown) has a power of two of buckets and grows by doubling at 7/8 full, so
//! it is between 7/16 and 7/8 full, and while it grows it holds the old table and one twice as
//! large. At 16 bytes an entry and a control byte a bucket, an entry costs 19.4 to 38.9 bytes;
//! at the doubling, the old table is held beside the new one.
//!
//! `DenseMap` is 16 arrays of `(key, value)` slots of any length (the mixed key's low bits
//! choose one), each with linear probing in Robin Hood order (an entry displaces one closer to
//! its home slot; a removal shifts the entries after it back). An array grows by a quarter when
//! 4/5 full and shrinks when a quarter full, so it is between 0.64 and 0.8 full while it grows:
//! 20 to 25 bytes an entry (fuller arrays hold less, and lengthen the runs a removal shifts and
//! an insertion walks). Growing holds one array's old slots
//! beside its new ones, 1/16 of the map. An entry's home is its mixed key scaled to the array
//! (`(mix64(key) · len) >> 64`, no power of two needed). Key 0 marks an empty slot, so an
//! entry of key 0 is held apart.
//!
//! The keys are hashes already (fingerprints, sentence slots); they are mixed again so that a
//! run of near keys does not pile up. The slots hold the mixed keys (`mix64` is a bijection,
//! and 0 stays 0; `iter` undoes it), so a walk finds a slot's home with one multiply and steps
//! without a division. An insertion walks its run once (`seek`, then `place_from` where the
//! walk stopped); `insert_absent` and `remove_if` let a caller test and change in one walk.

use crate::runtime::hashing::mix64;

/// The fill at which a table grows: 4/5.
const GROW_AT: (usize, usize) = (4, 5);
/// The fill below which a table shrinks: 1/4.
const SHRINK_BELOW: (usize, usize) = (1, 4);
/// The smallest table.
const MIN_SLOTS: usize = 16;
/// Tables a map is split into, by its keys' low bits: one grows at a time, so growing holds
/// the old table of one of them beside the new, not of the whole map.
const TABLES: usize = 16;

/// A map from `u64` keys to values (`Default` is the empty slot's value: `Option<Arc<_>>`, a
/// number) in `TABLES` arrays of slots.
pub struct DenseMap<V> {
    tables: Box<[Table<V>]>,
    /// The entry of key 0.
    zero: Option<V>,
}

/// One array of slots.
struct Table<V> {
    /// `(key, value)`, key 0 for an empty slot.
    slots: Box<[(u64, V)]>,
    /// Entries in `slots`.
    len: usize,
}

impl<V: Default> Default for DenseMap<V> {
    fn default() -> Self {
        DenseMap {
            tables: (0..TABLES).map(|_| Table { slots: Box::new([]), len: 0 }).collect(),
            zero: None,
        }
    }
}

impl<V: Default> std::fmt::Debug for DenseMap<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseMap").field("len", &self.len()).field("slots", &self.slots()).finish()
    }
}

impl<V: Default> DenseMap<V> {
    /// The entries held.
    pub fn len(&self) -> usize {
        self.tables.iter().map(|t| t.len).sum::<usize>() + usize::from(self.zero.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slots of its tables.
    pub fn slots(&self) -> usize {
        self.tables.iter().map(|t| t.slots.len()).sum()
    }

    /// The bytes of its tables.
    pub fn table_bytes(&self) -> usize {
        self.slots() * std::mem::size_of::<(u64, V)>()
    }

    pub fn get(&self, key: u64) -> Option<&V> {
        if key == 0 {
            return self.zero.as_ref();
        }
        let mixed = mix64(key);
        let table = &self.tables[mixed as usize % TABLES];
        table.find(mixed).map(|at| &table.slots[at].1)
    }

    pub fn contains_key(&self, key: u64) -> bool {
        self.get(key).is_some()
    }

    /// Holds `value` as the entry of `key`; the value it replaced, if any.
    pub fn insert(&mut self, key: u64, value: V) -> Option<V> {
        if key == 0 {
            return self.zero.replace(value);
        }
        let mixed = mix64(key);
        self.tables[mixed as usize % TABLES].insert(mixed, value)
    }

    /// Holds `value` as the entry of `key` if `key` has none (one walk); whether it did.
    pub fn insert_absent(&mut self, key: u64, value: V) -> bool {
        if key == 0 {
            if self.zero.is_some() {
                return false;
            }
            self.zero = Some(value);
            return true;
        }
        let mixed = mix64(key);
        self.tables[mixed as usize % TABLES].insert_absent(mixed, value)
    }

    /// Asks the CPU to load the cache line of `key`'s home slot: a lookup of it soon after
    /// then finds it there (a table of millions of slots misses the cache on most lookups).
    /// A hint only: nothing is read or changed.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        if key == 0 {
            return;
        }
        let mixed = mix64(key);
        let table = &self.tables[mixed as usize % TABLES];
        if table.slots.is_empty() {
            return;
        }
        let home = Table::<V>::home(mixed, table.slots.len());
        prefetch_read(&table.slots[home]);
    }

    /// Takes out the entry of `key` if `goes` says so (one walk).
    pub fn remove_if(&mut self, key: u64, goes: impl FnOnce(&V) -> bool) -> Option<V> {
        if key == 0 {
            return self.zero.take_if(|v| goes(v));
        }
        let mixed = mix64(key);
        self.tables[mixed as usize % TABLES].remove_if(mixed, goes)
    }

    /// Takes out the entry of `key`.
    pub fn remove(&mut self, key: u64) -> Option<V> {
        if key == 0 {
            return self.zero.take();
        }
        let mixed = mix64(key);
        self.tables[mixed as usize % TABLES].remove(mixed)
    }

    /// The entries, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> {
        let held = self
            .tables
            .iter()
            .flat_map(|t| t.slots.iter().filter(|s| s.0 != 0).map(|(m, v)| (unmix64(*m), v)));
        self.zero.iter().map(|v| (0, v)).chain(held)
    }
}

/// A prefetch hint for the cache line holding `value` (nothing elsewhere than x86-64).
#[inline]
pub fn prefetch_read<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and faults on no address; the pointer is a live reference's.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// The inverse of `mix64` (each of its steps undone, last first): the tables hold mixed keys.
fn unmix64(mut x: u64) -> u64 {
    x ^= (x >> 31) ^ (x >> 62);
    x = x.wrapping_mul(0x3196_42b2_d24d_8ec3);
    x ^= (x >> 27) ^ (x >> 54);
    x = x.wrapping_mul(0x96de_1b17_3f11_9089);
    x ^ (x >> 30) ^ (x >> 60)
}

impl<V: Default> Table<V> {
    /// The home slot of a mixed key in a table of `slots` slots (its high bits; its low bits
    /// chose the table).
    #[inline]
    fn home(mixed: u64, slots: usize) -> usize {
        ((mixed as u128 * slots as u128) >> 64) as usize
    }

    /// How far the entry in slot `at` is from its home.
    #[inline]
    fn distance(&self, at: usize) -> usize {
        let home = Self::home(self.slots[at].0, self.slots.len());
        if at >= home {
            at - home
        } else {
            at + self.slots.len() - home
        }
    }

    /// The slot after `at`.
    #[inline]
    fn next(&self, at: usize) -> usize {
        if at + 1 == self.slots.len() {
            0
        } else {
            at + 1
        }
    }

    /// Where the walk for `mixed` (not 0) stops: `Ok(slot)` holding it, or `Err((slot,
    /// distance))`, the slot it would take (empty, or held by an entry nearer its home).
    fn seek(&self, mixed: u64) -> Result<usize, (usize, usize)> {
        let mut at = Self::home(mixed, self.slots.len());
        let mut distance = 0;
        loop {
            let held = self.slots[at].0;
            if held == mixed {
                return Ok(at);
            }
            if held == 0 || self.distance(at) < distance {
                return Err((at, distance));
            }
            at = self.next(at);
            distance += 1;
        }
    }

    /// The slot holding `mixed` (not 0).
    fn find(&self, mixed: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        self.seek(mixed).ok()
    }

    fn insert(&mut self, mixed: u64, value: V) -> Option<V> {
        match self.seek_or_grow(mixed) {
            Ok(at) => Some(std::mem::replace(&mut self.slots[at].1, value)),
            Err((at, distance)) => {
                self.place_from(at, distance, (mixed, value));
                None
            }
        }
    }

    fn insert_absent(&mut self, mixed: u64, value: V) -> bool {
        match self.seek_or_grow(mixed) {
            Ok(_) => false,
            Err((at, distance)) => {
                self.place_from(at, distance, (mixed, value));
                true
            }
        }
    }

    /// `seek`, in a table with room for one more entry (grown if the key is not held and it
    /// has none).
    fn seek_or_grow(&mut self, mixed: u64) -> Result<usize, (usize, usize)> {
        if !self.slots.is_empty() {
            let stop = self.seek(mixed);
            if stop.is_ok() || (self.len + 1) * GROW_AT.1 <= self.slots.len() * GROW_AT.0 {
                return stop;
            }
        }
        let n = self.slots.len();
        self.resize((n + n / 4).max(MIN_SLOTS).max((self.len + 1) * GROW_AT.1 / GROW_AT.0 + 1));
        self.seek(mixed)
    }

    /// Places an entry whose key is not held in slot `at`, `distance` from its home, the slot
    /// where its walk stopped; the entries from there on move on in Robin Hood order.
    fn place_from(&mut self, mut at: usize, mut distance: usize, mut entry: (u64, V)) {
        self.len += 1;
        loop {
            if self.slots[at].0 == 0 {
                self.slots[at] = entry;
                return;
            }
            let theirs = self.distance(at);
            if theirs < distance {
                // Robin Hood: the entry nearer its home moves on.
                std::mem::swap(&mut self.slots[at], &mut entry);
                distance = theirs;
            }
            at = self.next(at);
            distance += 1;
        }
    }

    fn remove_if(&mut self, mixed: u64, goes: impl FnOnce(&V) -> bool) -> Option<V> {
        let at = self.find(mixed)?;
        if !goes(&self.slots[at].1) {
            return None;
        }
        Some(self.remove_at(at))
    }

    fn remove(&mut self, mixed: u64) -> Option<V> {
        let at = self.find(mixed)?;
        Some(self.remove_at(at))
    }

    /// Takes out the entry in slot `at`, shifting back the run after it.
    fn remove_at(&mut self, mut at: usize) -> V {
        let n = self.slots.len();
        let (_, value) = std::mem::take(&mut self.slots[at]);
        self.len -= 1;
        // Shift back the entries after it that are away from their homes.
        loop {
            let next = self.next(at);
            if self.slots[next].0 == 0 || self.distance(next) == 0 {
                break;
            }
            self.slots.swap(at, next);
            at = next;
        }
        if n > MIN_SLOTS && self.len * SHRINK_BELOW.1 < n * SHRINK_BELOW.0 {
            // Back to a table 0.64 full, as one that just grew.
            self.resize((self.len * GROW_AT.1 * 5 / (GROW_AT.0 * 4) + 1).max(MIN_SLOTS));
        }
        value
    }

    /// Moves the entries into a table of `slots` slots.
    fn resize(&mut self, slots: usize) {
        let old =
            std::mem::replace(&mut self.slots, (0..slots).map(|_| (0, V::default())).collect());
        self.len = 0;
        for (mixed, value) in old.into_vec() {
            if mixed != 0 {
                let (at, distance) = self.seek(mixed).unwrap_err();
                self.place_from(at, distance, (mixed, value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u64),
        Remove(u64),
        InsertAbsent(u64, u64),
        RemoveIfEven(u64),
    }

    /// Keys from a small range (so that removals and replacements hit), key 0 among them, and
    /// spread keys.
    fn op() -> impl Strategy<Value = Op> {
        let key = prop_oneof![0u64..64, any::<u64>()];
        prop_oneof![
            3 => (key.clone(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
            2 => key.clone().prop_map(Op::Remove),
            2 => (key.clone(), any::<u64>()).prop_map(|(k, v)| Op::InsertAbsent(k, v)),
            1 => key.prop_map(Op::RemoveIfEven),
        ]
    }

    proptest! {
        /// Every insertion and removal gives what a `HashMap` gives, and after each the map
        /// holds what the `HashMap` holds: grown, shrunk and shifted as it goes.
        #[test]
        fn a_dense_map_does_what_a_hash_map_does(ops in proptest::collection::vec(op(), 0..600)) {
            let mut dense: DenseMap<u64> = DenseMap::default();
            let mut model: HashMap<u64, u64> = HashMap::new();
            for op in ops {
                // A hint, on an empty table too: it changes nothing that follows.
                let (Op::Insert(k, _) | Op::Remove(k) | Op::InsertAbsent(k, _) | Op::RemoveIfEven(k)) = op;
                dense.prefetch(k);
                match op {
                    Op::Insert(k, v) => prop_assert_eq!(dense.insert(k, v), model.insert(k, v)),
                    Op::Remove(k) => prop_assert_eq!(dense.remove(k), model.remove(&k)),
                    Op::InsertAbsent(k, v) => {
                        let absent = !model.contains_key(&k);
                        if absent {
                            model.insert(k, v);
                        }
                        prop_assert_eq!(dense.insert_absent(k, v), absent);
                    }
                    Op::RemoveIfEven(k) => {
                        let even = model.get(&k).is_some_and(|v| v % 2 == 0);
                        let wanted = if even { model.remove(&k) } else { None };
                        prop_assert_eq!(dense.remove_if(k, |v| v % 2 == 0), wanted);
                    }
                }
                prop_assert_eq!(dense.len(), model.len());
                for (k, v) in &model {
                    prop_assert_eq!(dense.get(*k), Some(v));
                }
                let mut held: Vec<(u64, u64)> = dense.iter().map(|(k, v)| (k, *v)).collect();
                held.sort_unstable();
                let mut wanted: Vec<(u64, u64)> = model.iter().map(|(k, v)| (*k, *v)).collect();
                wanted.sort_unstable();
                prop_assert_eq!(held, wanted);
            }
        }
    }

    #[test]
    fn a_grown_map_is_between_six_tenths_and_four_fifths_full_and_shrinks_as_it_empties() {
        let mut map: DenseMap<u64> = DenseMap::default();
        let keys: Vec<u64> = (1..=200_000u64).map(|i| mix64(i) | 1).collect();
        for (i, &k) in keys.iter().enumerate() {
            map.insert(k, i as u64);
            if map.len() > 1_000 {
                let fill = map.len() as f64 / map.slots() as f64;
                assert!(
                    (0.63..=0.8).contains(&fill),
                    "{} entries in {} slots",
                    map.len(),
                    map.slots()
                );
            }
        }
        assert!(map.table_bytes() <= 200_000 * 16 * 100 / 63, "{} bytes", map.table_bytes());
        for &k in &keys[..190_000] {
            assert!(map.remove(k).is_some());
        }
        assert_eq!(map.len(), 10_000);
        assert!(map.slots() <= 40_000, "{} slots for 10,000 entries", map.slots());
        for (i, &k) in keys.iter().enumerate().skip(190_000) {
            assert_eq!(map.get(k), Some(&(i as u64)));
        }
    }

    #[test]
    fn unmixing_undoes_the_mix() {
        for k in (0..10_000u64)
            .chain([u64::MAX, 1 << 63, 0xdead_beef])
            .chain((0..10_000).map(|i| mix64(i) ^ i))
        {
            assert_eq!(unmix64(mix64(k)), k);
        }
        assert_eq!(mix64(0), 0);
    }

    #[test]
    fn values_with_no_zero_word_drop_with_the_map() {
        let member = std::sync::Arc::new(7u32);
        let mut map: DenseMap<Option<std::sync::Arc<u32>>> = DenseMap::default();
        for k in 0..100 {
            map.insert(k, Some(member.clone()));
        }
        assert_eq!(std::sync::Arc::strong_count(&member), 101);
        assert_eq!(map.remove(5).flatten().as_deref(), Some(&7));
        drop(map);
        assert_eq!(std::sync::Arc::strong_count(&member), 1);
    }
}
