//! Entries in one vector, found by their key through a table of their places (4 bytes a
//! bucket; a removed entry's place is taken by the last one). A `HashMap` holds an entry in a
//! bucket of its own size at 7/16 to 7/8 full; here the vector grows by a quarter, so it is at
//! least 4/5 full as it grows, and the table's slack costs 5 bytes a bucket: for a page's row
//! (88 bytes), about half a `HashMap`'s bytes.

use std::hash::{BuildHasher, Hash};

use hashbrown::HashTable;

use crate::runtime::hashing::Mixed;

/// An entry that carries its own key.
pub trait KeyOf {
    type Key: Hash + Eq;
    fn key(&self) -> &Self::Key;
}

impl<K: Hash + Eq, V> KeyOf for (K, V) {
    type Key = K;
    fn key(&self) -> &K {
        &self.0
    }
}

/// Entries by key, at most one a key.
#[derive(Debug)]
pub struct Placed<E> {
    entries: Vec<E>,
    places: HashTable<u32>,
}

impl<E> Default for Placed<E> {
    fn default() -> Self {
        Placed { entries: Vec::new(), places: HashTable::new() }
    }
}

fn hash<K: Hash>(key: &K) -> u64 {
    Mixed.hash_one(key)
}

impl<E: KeyOf> Placed<E> {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &E::Key) -> Option<&E> {
        let entries = &self.entries;
        let at = self.places.find(hash(key), |&at| entries[at as usize].key() == key)?;
        Some(&entries[*at as usize])
    }

    /// Holds `entry` (in place of the one of its key, which comes out).
    pub fn insert(&mut self, entry: E) -> Option<E> {
        let Placed { entries, places } = self;
        let found = places.find(hash(entry.key()), |&at| entries[at as usize].key() == entry.key());
        if let Some(&at) = found {
            return Some(std::mem::replace(&mut entries[at as usize], entry));
        }
        self.insert_absent(entry);
        None
    }

    /// Holds `entry`, whose key is not held.
    pub fn insert_absent(&mut self, entry: E) {
        let Placed { entries, places } = self;
        let at = u32::try_from(entries.len()).expect("fewer than 2^32 entries");
        let hashed = hash(entry.key());
        if entries.len() == entries.capacity() {
            // By a quarter, not twice: the vector is 4/5 full or more as it grows.
            entries.reserve_exact((entries.len() / 4).max(16));
        }
        entries.push(entry);
        places.insert_unique(hashed, at, |&at| hash(entries[at as usize].key()));
    }

    /// Lets go of the entry of `key`: the last entry takes its place.
    pub fn remove(&mut self, key: &E::Key) -> Option<E> {
        let Placed { entries, places } = self;
        let at = match places.find_entry(hash(key), |&at| entries[at as usize].key() == key) {
            Ok(entry) => entry.remove().0 as usize,
            Err(_) => return None,
        };
        let last = entries.len() - 1;
        if at != last {
            let moved = places
                .find_mut(hash(entries[last].key()), |&place| place as usize == last)
                .expect("the last entry has a place");
            *moved = at as u32;
        }
        let entry = entries.swap_remove(at);
        if entries.capacity() > 64 && entries.len() < entries.capacity() / 4 {
            entries.shrink_to(entries.len() * 2);
            places.shrink_to(entries.len() * 2, |&at| hash(entries[at as usize].key()));
        }
        Some(entry)
    }

    /// Every entry, in no order.
    pub fn iter(&self) -> std::slice::Iter<'_, E> {
        self.entries.iter()
    }

    /// The room the vector holds.
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// The bytes held (not what the entries point to): the vector at its capacity and the
    /// table.
    pub fn bytes(&self) -> usize {
        use crate::runtime::footprint::{array, hash_table};
        array::<E>(self.entries.capacity()) + hash_table(self.places.capacity(), 4)
    }
}
