//! A page's words as the dataflow keeps them: 16-bit hashes in order, in memory or in the
//! run's word store (`runtime::store`), read by `Words::load`.
//!
//! A `Words` is a run of a page's words (`Page::words` is the whole run), shared with the page
//! or of its own, like `page::Run` for sentences. It carries the digest of the words it covers,
//! made when it is made, so it compares, orders and hashes by (length, digest) without reading
//! them: two runs of the same words are equal wherever they are kept, and state that sorts or
//! consolidates contents never reads a store.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::runtime::hashing::mix64;
use crate::runtime::store::{Place, WordStore};

/// A word as the dataflow keeps it: 16 bits of its hash. Two different words of two compared
/// pages agree by chance with probability 2^-16, which moves a word-level resemblance by far
/// less than its threshold's resolution; 2 bytes a word keep page state small.
pub type Word = u16;

/// Where the words of a run are: all of its page's words.
#[derive(Clone)]
enum All {
    Resident(Arc<[Word]>),
    Stored(Arc<WordStore>, Place),
}

/// A run of a page's words (see the module's documentation).
#[derive(Clone)]
pub struct Words {
    all: All,
    start: u32,
    end: u32,
    digest: u64,
}

/// Words read from wherever they are kept; reads as the run's slice.
pub struct Loaded {
    all: Arc<[Word]>,
    start: u32,
    end: u32,
}

impl std::ops::Deref for Loaded {
    type Target = [Word];
    fn deref(&self) -> &[Word] {
        &self.all[self.start as usize..self.end as usize]
    }
}

/// The digest of a run of words (their count first, then four words a step).
pub fn digest(words: &[Word]) -> u64 {
    let mut h = mix64(words.len() as u64 ^ 0x5851_f42d_4c95_7f2d);
    for four in words.chunks(4) {
        let packed = four.iter().fold(0u64, |p, &w| p << 16 | w as u64);
        h = mix64(h ^ packed).wrapping_add(0x2545_f491_4f6c_dd1d);
    }
    h
}

impl Words {
    /// Words of their own, in memory.
    pub fn new(words: Vec<Word>) -> Words {
        let digest = digest(&words);
        let end = words.len() as u32;
        Words { all: All::Resident(words.into()), start: 0, end, digest }
    }

    /// These words kept in `store` (the run's word store) when they are in memory and there
    /// is one, else as they are. Words in memory that are a run of other words are written as
    /// words of their own. A store that cannot be written stops the run: nothing can go on
    /// without the words (the run reports the panic as its failure, one line with the file
    /// and the error).
    pub fn stored_in(self, store: Option<&Arc<WordStore>>) -> Words {
        let (Some(store), All::Resident(all)) = (store, &self.all) else { return self };
        if self.is_empty() {
            return self;
        }
        let words: Arc<[Word]> = if self.start == 0 && self.end as usize == all.len() {
            all.clone()
        } else {
            all[self.start as usize..self.end as usize].into()
        };
        let place = store.put(words, true).unwrap_or_else(|e| crate::runtime::disk::fail(e));
        Words {
            all: All::Stored(store.clone(), place),
            start: 0,
            end: self.len() as u32,
            digest: self.digest,
        }
    }

    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The digest of the words (`digest`).
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// The bytes of its words in memory when they are its holder's alone, else 0 (stored
    /// words are the store's; words shared with the page are the held page's).
    pub fn own_bytes(&self) -> usize {
        match &self.all {
            All::Resident(all) => crate::runtime::footprint::own_slice(all),
            All::Stored(..) => 0,
        }
    }

    /// Whether they are in a word store.
    pub fn is_stored(&self) -> bool {
        matches!(self.all, All::Stored(..))
    }

    /// The words, read from the store through its cache when they are stored.
    pub fn load(&self) -> Loaded {
        let all = match &self.all {
            All::Resident(all) => all.clone(),
            All::Stored(store, place) => store.get(*place),
        };
        Loaded { all, start: self.start, end: self.end }
    }

    pub fn to_vec(&self) -> Vec<Word> {
        self.load().to_vec()
    }

    /// `range` of this run (relative to it, clamped), sharing where they are kept. A part of
    /// the run reads them once, for its digest.
    pub fn sub(&self, range: std::ops::Range<usize>) -> Words {
        let end = (self.start as usize + range.end).min(self.end as usize) as u32;
        let start = (self.start as usize + range.start).min(end as usize) as u32;
        if (start, end) == (self.start, self.end) {
            return self.clone();
        }
        let digest = if start == end {
            digest(&[])
        } else {
            let loaded = self.load();
            digest(&loaded.all[start as usize..end as usize])
        };
        Words { all: self.all.clone(), start, end, digest }
    }

    /// Whether both are runs of the same kept words (shared, not copied).
    pub fn is_shared_with(&self, other: &Words) -> bool {
        match (&self.all, &other.all) {
            (All::Resident(a), All::Resident(b)) => Arc::ptr_eq(a, b),
            (All::Stored(sa, a), All::Stored(sb, b)) => Arc::ptr_eq(sa, sb) && a == b,
            _ => false,
        }
    }
}

/// A run of words in a blob of the stores (`runtime::store::Blob`: a held page, a member's
/// content): its place in the word store with its range and digest when its words are in the
/// blob's store's word store (`store`, the run's), else the words themselves (words of another
/// store, or in memory).
impl Words {
    pub(crate) fn encode(&self, out: &mut Vec<u8>, store: Option<&Arc<WordStore>>) {
        use crate::runtime::store::bytes::*;
        match &self.all {
            All::Stored(own, place) if store.is_some_and(|s| Arc::ptr_eq(s, own)) => {
                let (at, compressed, raw) = place.to_parts();
                put_u8(out, 1);
                put_u64(out, at);
                put_u32(out, compressed);
                put_u32(out, raw);
                put_u32(out, self.start);
                put_u32(out, self.end);
                put_u64(out, self.digest);
            }
            _ => {
                put_u8(out, 0);
                let words = self.load();
                put_u32(out, words.len() as u32);
                words.iter().for_each(|&w| put_u16(out, w));
            }
        }
    }

    /// What `encode` wrote; stored words are in `store`.
    pub(crate) fn decode(
        input: &mut crate::runtime::store::bytes::Reader,
        store: Option<&Arc<WordStore>>,
    ) -> std::io::Result<Words> {
        if input.u8()? == 0 {
            return Ok(Words::new(input.list(|r| r.u16())?));
        }
        let place = Place::from_parts(input.u64()?, input.u32()?, input.u32()?);
        let (start, end, digest) = (input.u32()?, input.u32()?, input.u64()?);
        let store = store.cloned().ok_or_else(|| {
            std::io::Error::other(
                "a stored value names stored words, and its store names no word store",
            )
        })?;
        Ok(Words { all: All::Stored(store, place), start, end, digest })
    }
}

impl Default for Words {
    fn default() -> Self {
        Words { all: All::Resident(Arc::from([])), start: 0, end: 0, digest: digest(&[]) }
    }
}

impl From<Vec<Word>> for Words {
    fn from(words: Vec<Word>) -> Self {
        Words::new(words)
    }
}

impl FromIterator<Word> for Words {
    fn from_iter<I: IntoIterator<Item = Word>>(words: I) -> Self {
        Words::new(words.into_iter().collect())
    }
}

impl PartialEq for Words {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.digest == other.digest
    }
}

impl Eq for Words {}

impl PartialOrd for Words {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Words {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.len(), self.digest).cmp(&(other.len(), other.digest))
    }
}

impl std::hash::Hash for Words {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        state.write_u64(self.digest);
    }
}

impl std::fmt::Debug for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.load().iter()).finish()
    }
}

/// Serialized as the words themselves (a checkpoint, another process): the other side holds
/// them in memory until what keeps them puts them in its run's store (`Words::stored_in`).
impl Serialize for Words {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.load().iter())
    }
}

impl<'de> Deserialize<'de> for Words {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Words, D::Error> {
        Vec::<Word>::deserialize(deserializer).map(Words::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_compare_and_hash_by_what_they_cover_never_reading_it() {
        use std::hash::{BuildHasher, RandomState};
        let all = Words::new(vec![1, 2, 3, 4, 5, 6]);
        let run = all.sub(1..4);
        assert_eq!(&*run.load(), &[2, 3, 4]);
        assert!(run.is_shared_with(&all));
        let own = Words::new(vec![2, 3, 4]);
        assert!(!own.is_shared_with(&all));
        assert_eq!(run, own);
        assert_ne!(run, Words::new(vec![2, 3, 5]));
        assert_ne!(run, Words::new(vec![2, 3]));
        let hasher = RandomState::new();
        assert_eq!(hasher.hash_one(&run), hasher.hash_one(&own));
        assert_eq!(format!("{run:?}"), "[2, 3, 4]");
        // A sub-run is relative to the run, clamped to it, and still shared.
        let sub = run.sub(1..5);
        assert_eq!(&*sub.load(), &[3, 4]);
        assert!(sub.is_shared_with(&all));
        assert!(run.sub(7..9).is_empty());
        assert_eq!(run.sub(7..9), Words::default());
        assert!(all.sub(4..10).load().iter().eq([5, 6].iter()));
        assert!(Words::default().is_empty());
    }

    #[test]
    fn a_run_of_words_is_40_bytes() {
        assert_eq!(std::mem::size_of::<Words>(), 40);
    }

    #[test]
    fn stored_words_read_and_compare_as_words_in_memory() {
        let store = Arc::new(WordStore::create(&std::env::temp_dir(), 0, None).unwrap());
        let words: Vec<Word> = (0..500).map(|i| (i * 31) as Word).collect();
        let resident = Words::new(words.clone());
        let stored = resident.clone().stored_in(Some(&store));
        assert!(stored.is_stored() && !resident.is_stored());
        assert_eq!(resident.clone().stored_in(None), resident, "no store: as they are");
        assert!(!resident.clone().stored_in(None).is_stored());
        // A run of words in memory is stored as words of its own.
        let run = resident.sub(100..150).stored_in(Some(&store));
        assert!(run.is_stored());
        assert_eq!(&*run.load(), &words[100..150]);
        assert_eq!(run, resident.sub(100..150));
        assert_eq!(stored, resident);
        assert_eq!(&*stored.load(), &words[..]);
        assert_eq!(stored.sub(10..20), resident.sub(10..20));
        assert_eq!(&*stored.sub(10..20).load(), &words[10..20]);
        assert!(stored.sub(10..20).is_shared_with(&stored));
        let back: Words = bincode::deserialize(&bincode::serialize(&stored).unwrap()).unwrap();
        assert_eq!(back, stored);
        assert_eq!(back.to_vec(), words);
    }
}
