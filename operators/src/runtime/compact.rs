//! A map whose common entries stay small.
//!
//! The operators that keep their own state (`exact`, `repeated`, `assign`, `filter`, the joins
//! by page) hold an entry a key, and most entries are the simplest case: a family of one
//! page, a page in no group with blocks, a page with its label alone, a page holding no
//! template sentence, a page's row. `Compact` keeps those as one small value (`one`), and the
//! others boxed (`many`), so the common case costs its key and a value, not a whole entry.
//!
//! The common entries sit in one vector, found through a table of their places
//! (`runtime::placed`).

use std::collections::HashMap;
use std::hash::Hash;

use crate::runtime::hashing::Mixed;
use crate::runtime::placed::Placed;

/// What an entry narrows to when it is put back.
pub enum Narrow<O> {
    /// Nothing left: the key goes.
    Gone,
    /// The common case, as its small value.
    One(O),
    /// Anything else: the entry is kept as it is.
    Many,
}

/// An entry looked at where it is held.
pub enum Held<'a, O, M> {
    One(&'a O),
    Many(&'a M),
}

/// Entries by key: the common case as an `O`, the others as a boxed `M`.
#[derive(Debug)]
pub struct Compact<K, O, M> {
    one: Placed<(K, O)>,
    many: HashMap<K, Box<M>, Mixed>,
}

impl<K, O, M> Default for Compact<K, O, M> {
    fn default() -> Self {
        Compact { one: Placed::default(), many: HashMap::default() }
    }
}

impl<K: Hash + Eq, O: PartialEq, M> Compact<K, O, M> {
    /// The keys held.
    pub fn len(&self) -> usize {
        self.one.len() + self.many.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes held (`runtime::footprint`): the common entries' vector and table, the other
    /// entries' table, and the buffers of each value in the common case (`one`) and of each
    /// other entry (`many`, beside its box).
    pub fn bytes(&self, one: impl Fn(&O) -> usize, many: impl Fn(&M) -> usize) -> usize {
        use crate::runtime::footprint::hash_table;
        self.one.bytes()
            + hash_table(self.many.capacity(), std::mem::size_of::<(K, Box<M>)>())
            + self.one.iter().map(|(_, value)| one(value)).sum::<usize>()
            + self.many.values().map(|m| std::mem::size_of::<M>() + many(m)).sum::<usize>()
    }

    /// The keys held in the common case, and the others.
    pub fn sizes(&self) -> (usize, usize) {
        (self.one.len(), self.many.len())
    }

    /// Holds `value` at `key` if the key is held nowhere; whether it did.
    pub fn insert_new(&mut self, key: K, value: O) -> bool {
        if self.contains(&key) {
            return false;
        }
        self.one.insert_absent((key, value));
        true
    }

    /// Whether `key` is held.
    pub fn contains(&self, key: &K) -> bool {
        self.one.get(key).is_some() || self.many.contains_key(key)
    }

    /// The entry of `key`, if held.
    pub fn get(&self, key: &K) -> Option<Held<'_, O, M>> {
        if let Some((_, value)) = self.one.get(key) {
            return Some(Held::One(value));
        }
        self.many.get(key).map(|entry| Held::Many(&**entry))
    }

    /// Lets `key` go if it holds exactly `value` in the common case; whether it did.
    pub fn remove_one(&mut self, key: &K, value: &O) -> bool {
        if self.one.get(key).is_some_and(|(_, held)| held == value) {
            self.one.remove(key);
            return true;
        }
        false
    }

    /// Takes out the entry of `key`: the common case widened, the entry held, or `fresh`.
    pub fn take(
        &mut self,
        key: &K,
        widen: impl FnOnce(O) -> M,
        fresh: impl FnOnce() -> M,
    ) -> Box<M> {
        if let Some((_, value)) = self.one.remove(key) {
            return Box::new(widen(value));
        }
        self.many.remove(key).unwrap_or_else(|| Box::new(fresh()))
    }

    /// Puts back the entry of `key` (taken out before), as `narrow` says.
    pub fn put(&mut self, key: K, entry: Box<M>, narrow: impl FnOnce(&M) -> Narrow<O>) {
        match narrow(&entry) {
            Narrow::Gone => {}
            Narrow::One(value) => {
                self.one.insert((key, value));
            }
            Narrow::Many => {
                self.many.insert(key, entry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_small_while_it_can_be() {
        let mut map: Compact<u64, u64, Vec<u64>> = Compact::default();
        assert!(map.insert_new(1, 10));
        assert!(!map.insert_new(1, 11), "held already");
        let narrow = |v: &Vec<u64>| match v.as_slice() {
            [] => Narrow::Gone,
            [one] => Narrow::One(*one),
            _ => Narrow::Many,
        };
        let mut entry = map.take(&1, |one| vec![one], Vec::new);
        entry.push(12);
        map.put(1, entry, narrow);
        assert_eq!(map.sizes(), (0, 1));
        assert!(!map.remove_one(&1, &10), "not in the common case");
        let mut entry = map.take(&1, |one| vec![one], Vec::new);
        entry.pop();
        map.put(1, entry, narrow);
        assert_eq!(map.sizes(), (1, 0));
        assert!(map.remove_one(&1, &10));
        assert!(map.is_empty());
        let entry = map.take(&2, |one| vec![one], Vec::new);
        map.put(2, entry, narrow);
        assert!(map.is_empty(), "an empty entry is not kept");
    }

    /// Entries of one to three values come, change and go in a random order, against a
    /// `HashMap` of the same vectors: the same entries found, each in its right place (the
    /// common entries' vector moves its last entry into a removed one's place), and the vector
    /// lets go of its room as most keys go.
    #[test]
    fn entries_are_those_a_hash_map_holds() {
        let mut map: Compact<u64, u64, Vec<u64>> = Compact::default();
        let mut oracle: std::collections::HashMap<u64, Vec<u64>> = Default::default();
        let narrow = |v: &Vec<u64>| match v.as_slice() {
            [] => Narrow::Gone,
            [one] => Narrow::One(*one),
            _ => Narrow::Many,
        };
        let mut seed = 7u64;
        let mut below = |n: u64| {
            seed = crate::runtime::hashing::mix64(seed.wrapping_add(1));
            seed % n
        };
        for step in 0..30_000u64 {
            let keys = if step < 20_000 { 5_000 } else { 100 };
            if step == 20_000 {
                for key in 100..5_000 {
                    let entry = map.take(&key, |one| vec![one], Vec::new);
                    assert_eq!(*entry, oracle.remove(&key).unwrap_or_default(), "key {key}");
                    map.put(key, Box::default(), narrow);
                }
            }
            let key = below(keys);
            let mut entry = map.take(&key, |one| vec![one], Vec::new);
            assert_eq!(*entry, oracle.get(&key).cloned().unwrap_or_default(), "step {step}");
            match below(3) {
                0 => {
                    entry.pop();
                }
                _ if entry.len() < 3 => entry.push(below(1_000)),
                _ => entry.clear(),
            }
            if entry.is_empty() {
                oracle.remove(&key);
            } else {
                oracle.insert(key, entry.to_vec());
            }
            map.put(key, entry, narrow);
            assert_eq!(map.len(), oracle.len(), "step {step}");
        }
        for key in 0..5_000 {
            let held = match map.get(&key) {
                None => None,
                Some(Held::One(&one)) => Some(vec![one]),
                Some(Held::Many(many)) => Some(many.clone()),
            };
            assert_eq!(held.as_ref(), oracle.get(&key), "key {key}");
        }
        assert!(map.one.capacity() < 1_000, "{}", map.one.capacity());
    }
}
