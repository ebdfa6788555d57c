//! The word store: each page's words (16-bit hashes, 2 bytes a word, most of what a page holds)
//! written once, LZ4-compressed, to an append-only file, and read back by their place in it
//! through a bounded cache.
//!
//! A page's words are read only when the page is filtered, fingerprinted, or verified by
//! words against another page; between those times they need not be resident. A run with a
//! store installed (`install`) writes every page's words to it as the page is made
//! (`ingest::page::Words::new`); a `Words` then holds the place (16 bytes) and its digest, and
//! `Words::load` reads the words through the cache. Without a store, words stay in memory.
//!
//! The file is unlinked as soon as it is created: it lives as long as the process and leaves
//! nothing behind, whatever way the process ends. Words of pages that leave (re-crawls,
//! deletions) stay in the file until the process ends: the file grows by the words of every
//! page made, compressed (`bytes_written`).
//!
//! The cache holds whole pages' words in two generations (`Generations`), by bytes: a page read
//! again moves to the current generation; when the current generation is full, the old one is
//! dropped and the current becomes old. Resident bytes are at most `cache_bytes`, besides
//! words that a caller holds while it reads them.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::runtime::hashing::Mixed;

/// A word as the store keeps it: a 16-bit hash (`ingest::page::Word`, which this module, below
/// ingest, does not import).
type Word = u16;

/// Bytes gathered before they are written to the file (one write each).
const WRITE_BYTES: usize = 1 << 20;
/// Cache shards (each its own lock): workers reading at once rarely meet.
const SHARDS: usize = 16;

/// Where a page's words are in a store: their offset, compressed length and word count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    at: u64,
    compressed: u32,
    words: u32,
}

impl Place {
    /// The number of words stored there.
    pub fn words(&self) -> usize {
        self.words as usize
    }
}

/// What a store has done, for the run's summary and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Pages whose words were written.
    pub pages: u64,
    /// Bytes written to the file (compressed words).
    pub bytes_written: u64,
    /// The words' bytes before compression.
    pub bytes_in: u64,
    /// Reads answered by the cache.
    pub hits: u64,
    /// Reads from the file (or its unwritten tail).
    pub misses: u64,
    /// Bytes the cache holds now.
    pub cached_bytes: u64,
}

/// The bytes not yet written: they start at `start` in the file.
struct Tail {
    start: u64,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct Generations {
    current: HashMap<u64, Arc<[Word]>, Mixed>,
    old: HashMap<u64, Arc<[Word]>, Mixed>,
    current_bytes: usize,
    old_bytes: usize,
}

impl Generations {
    /// The words at `at`; a hit in the old generation moves to the current one.
    fn get(&mut self, at: u64, half: usize) -> Option<Arc<[Word]>> {
        if let Some(words) = self.current.get(&at) {
            return Some(words.clone());
        }
        let words = self.old.remove(&at)?;
        self.old_bytes -= bytes_of(&words);
        self.put(at, words.clone(), half);
        Some(words)
    }

    fn put(&mut self, at: u64, words: Arc<[Word]>, half: usize) {
        let n = bytes_of(&words);
        if self.current_bytes + n > half {
            self.old = std::mem::take(&mut self.current);
            self.old_bytes = std::mem::replace(&mut self.current_bytes, 0);
        }
        if n <= half && self.current.insert(at, words).is_none() {
            self.current_bytes += n;
        }
    }

    fn bytes(&self) -> usize {
        self.current_bytes + self.old_bytes
    }
}

fn bytes_of(words: &[Word]) -> usize {
    std::mem::size_of_val(words) + 16
}

/// An append-only file of pages' words and its cache.
pub struct WordStore {
    file: File,
    path: PathBuf,
    tail: Mutex<Tail>,
    cache: Vec<Mutex<Generations>>,
    /// Bytes a generation of a shard holds at most.
    half_shard: usize,
    pages: AtomicU64,
    bytes_in: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for WordStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordStore").field("path", &self.path).finish_non_exhaustive()
    }
}

impl WordStore {
    /// A store in a new file in `dir` (unlinked at once), caching at most `cache_bytes`.
    pub fn create(dir: &Path, cache_bytes: usize) -> io::Result<WordStore> {
        let path = dir.join(format!(".dupflow-words-{}-{}", std::process::id(), unique()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        std::fs::remove_file(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(WordStore {
            file,
            path,
            tail: Mutex::new(Tail { start: 0, bytes: Vec::with_capacity(WRITE_BYTES) }),
            cache: (0..SHARDS).map(|_| Mutex::default()).collect(),
            half_shard: cache_bytes / SHARDS / 2,
            pages: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    /// Writes `words` and returns their place; they are cached as well (a page's words are
    /// read again soon after it is made: its filtering and fingerprints).
    pub fn put(&self, words: Arc<[Word]>) -> io::Result<Place> {
        let raw: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let compressed = lz4_flex::block::compress(&raw);
        let place = {
            let mut tail = lock(&self.tail);
            let at = tail.start + tail.bytes.len() as u64;
            tail.bytes.extend_from_slice(&compressed);
            if tail.bytes.len() >= WRITE_BYTES {
                self.write_tail(&mut tail)?;
            }
            Place { at, compressed: compressed.len() as u32, words: words.len() as u32 }
        };
        self.pages.fetch_add(1, Ordering::Relaxed);
        self.bytes_in.fetch_add(raw.len() as u64, Ordering::Relaxed);
        lock(self.shard(place.at)).put(place.at, words, self.half_shard);
        Ok(place)
    }

    fn write_tail(&self, tail: &mut Tail) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(&tail.bytes, tail.start).map_err(|e| self.error("written", e))?;
        tail.start += tail.bytes.len() as u64;
        tail.bytes.clear();
        Ok(())
    }

    /// The words at `place`. A failure to read the store's own file is no input's fault and
    /// nothing can go on without the words: it panics with the file and the error, which the
    /// run reports as its failure.
    pub fn get(&self, place: Place) -> Arc<[Word]> {
        if let Some(words) = lock(self.shard(place.at)).get(place.at, self.half_shard) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return words;
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let words = self.read(place).unwrap_or_else(|e| panic!("{e}"));
        lock(self.shard(place.at)).put(place.at, words.clone(), self.half_shard);
        words
    }

    fn read(&self, place: Place) -> io::Result<Arc<[Word]>> {
        use std::os::unix::fs::FileExt;
        let mut compressed = vec![0u8; place.compressed as usize];
        {
            let tail = lock(&self.tail);
            if place.at >= tail.start {
                let from = (place.at - tail.start) as usize;
                let n = compressed.len();
                compressed.copy_from_slice(&tail.bytes[from..from + n]);
            } else {
                drop(tail);
                self.file
                    .read_exact_at(&mut compressed, place.at)
                    .map_err(|e| self.error("read", e))?;
            }
        }
        let raw = lz4_flex::block::decompress(&compressed, place.words() * 2)
            .map_err(|e| self.error("read", io::Error::new(io::ErrorKind::InvalidData, e)))?;
        Ok(raw.chunks_exact(2).map(|b| Word::from_le_bytes([b[0], b[1]])).collect())
    }

    fn error(&self, what: &str, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("the word store ({}, unlinked) could not be {what}: {e}", self.path.display()),
        )
    }

    fn shard(&self, at: u64) -> &Mutex<Generations> {
        &self.cache[(crate::runtime::hashing::mix64(at) % SHARDS as u64) as usize]
    }

    pub fn stats(&self) -> StoreStats {
        let tail = lock(&self.tail);
        StoreStats {
            pages: self.pages.load(Ordering::Relaxed),
            bytes_written: tail.start + tail.bytes.len() as u64,
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            cached_bytes: self.cache.iter().map(|s| lock(s).bytes() as u64).sum(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn unique() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

static INSTALLED: RwLock<Option<Arc<WordStore>>> = RwLock::new(None);

/// Makes `store` the one new pages' words go to (`None`: they stay in memory). Words already
/// stored keep their store.
pub fn install(store: Option<Arc<WordStore>>) {
    *INSTALLED.write().unwrap_or_else(std::sync::PoisonError::into_inner) = store;
}

/// The installed store, if any.
pub fn installed() -> Option<Arc<WordStore>> {
    INSTALLED.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_come_back_from_the_cache_the_tail_and_the_file() {
        let dir = std::env::temp_dir();
        // A cache too small to hold anything: every read goes to the tail or the file.
        let store = WordStore::create(&dir, 0).unwrap();
        let pages: Vec<Arc<[Word]>> =
            (0..3000u32).map(|p| (0..(p % 700)).map(|w| (w * 7 + p) as Word).collect()).collect();
        let places: Vec<Place> = pages.iter().map(|w| store.put(w.clone()).unwrap()).collect();
        let stats = store.stats();
        assert!(stats.bytes_written > WRITE_BYTES as u64, "part of it is in the file");
        for (words, place) in pages.iter().zip(&places) {
            assert_eq!(&store.get(*place)[..], &words[..]);
        }
        assert_eq!(store.stats().hits, 0);
        // With a cache, a read again is a hit.
        let cached = WordStore::create(&dir, 1 << 20).unwrap();
        let place = cached.put(pages[5].clone()).unwrap();
        assert_eq!(&cached.get(place)[..], &pages[5][..]);
        assert_eq!(cached.stats().hits, 1);
        assert_eq!(cached.stats().pages, 1);
    }

    #[test]
    fn the_cache_holds_at_most_its_bytes() {
        let store = WordStore::create(&std::env::temp_dir(), 64 * 1024).unwrap();
        for p in 0..1000u32 {
            store.put((0..200).map(|w| (w + p) as Word).collect()).unwrap();
        }
        assert!(store.stats().cached_bytes <= 64 * 1024, "{:?}", store.stats());
        assert!(store.stats().cached_bytes > 0);
    }

    #[test]
    fn the_file_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("dupflow-store-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = WordStore::create(&dir, 0).unwrap();
        store.put(vec![1, 2, 3].into()).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "unlinked at once");
        std::fs::remove_dir(&dir).unwrap();
    }
}
