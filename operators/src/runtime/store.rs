//! The stores: what a page holds that a run reads only now and then, written once,
//! LZ4-compressed, to an append-only file, and read back by its place in it through a bounded
//! cache.
//!
//! Three kinds are stored (`Blob`), each in a store of its own, made for a run
//! (`run::Runtime`):
//! - a page's words (16-bit hashes, 2 bytes a word): read when the page is filtered,
//!   fingerprinted, or verified by words against another page. `Words::stored_in` writes them
//!   and a `Words` holds their place and digest (`ingest::words`);
//! - the pages a run holds to retract or save them (`source::current`), and the pages the
//!   template filter holds to filter them again when their host's template changes
//!   (`template::filter`): read when a page leaves, at a checkpoint, and at a refresh;
//! - a group member's content (`verify::member`): read when the member is verified against
//!   another page.
//!
//! A `Kept` value is in memory or in its kind's store, as its holder keeps it: with a store,
//! resident memory holds a place (16 bytes) and the cache, not every page's content.
//!
//! Each file is unlinked as soon as it is created: it lives as long as the process and leaves
//! nothing behind, whatever way the process ends. What leaves (re-crawls, deletions) stays in
//! the file until the process ends: a file grows by what the run writes, compressed
//! (`bytes_written`).
//!
//! A cache holds whole values in two generations (`Generations`), by bytes: a value read again
//! moves to the current generation; when the current generation is full, the old one is
//! dropped and the current becomes old. Resident bytes are at most `cache_bytes`, besides
//! values that a caller holds while it reads them.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::runtime::hashing::Mixed;

/// A word as the store keeps it: a 16-bit hash (`ingest::page::Word`, which this module, below
/// ingest, does not import).
type Word = u16;

/// Bytes gathered before they are written to the file (one write each).
const WRITE_BYTES: usize = 1 << 20;
/// Cache shards (each its own lock): workers reading at once rarely meet.
const SHARDS: usize = 16;

/// What a store keeps: a value written as bytes and read back from them.
pub trait Blob: Send + Sync + 'static {
    /// The kind's name, for the file's name and its errors ("words", "pages", "contents").
    const KIND: &'static str;
    /// Whether its bytes are LZ4-compressed (words: ~0.6 of their size; sentence keys, 64-bit
    /// hashes, do not compress).
    const COMPRESS: bool = true;
    /// Appends the value's bytes to `out`; `words`: the word store the store's values name
    /// (`Store::create`), where stored words may be named by their place.
    fn encode(&self, out: &mut Vec<u8>, words: Option<&Arc<WordStore>>);
    /// The value `encode` wrote as `bytes`; `words`: the word store its words are in, if it
    /// names stored words (`ingest::words::Words::encode`).
    fn decode(bytes: &[u8], words: Option<&Arc<WordStore>>) -> io::Result<Arc<Self>>;
    /// The bytes it holds in memory (the cache's measure).
    fn resident_bytes(&self) -> usize;
}

/// Where a value is in a store: its offset, compressed length and length before compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    at: u64,
    compressed: u32,
    raw: u32,
}

impl Place {
    /// Its three numbers, for a value that holds a place in what it writes.
    pub fn to_parts(self) -> (u64, u32, u32) {
        (self.at, self.compressed, self.raw)
    }

    pub fn from_parts(at: u64, compressed: u32, raw: u32) -> Place {
        Place { at, compressed, raw }
    }
}

/// What a store has done, for the run's summary and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Values written.
    pub pages: u64,
    /// Bytes written to the file (compressed).
    pub bytes_written: u64,
    /// The values' bytes before compression.
    pub bytes_in: u64,
    /// Reads answered by the cache.
    pub hits: u64,
    /// Reads from the file (or its unwritten tail).
    pub misses: u64,
    /// Bytes the cache holds now.
    pub cached_bytes: u64,
}

impl std::ops::AddAssign for StoreStats {
    fn add_assign(&mut self, other: StoreStats) {
        self.pages += other.pages;
        self.bytes_written += other.bytes_written;
        self.bytes_in += other.bytes_in;
        self.hits += other.hits;
        self.misses += other.misses;
        self.cached_bytes += other.cached_bytes;
    }
}

/// The bytes not yet written: they start at `start` in the file.
struct Tail {
    start: u64,
    bytes: Vec<u8>,
}

struct Generations<V: ?Sized> {
    current: HashMap<u64, Arc<V>, Mixed>,
    old: HashMap<u64, Arc<V>, Mixed>,
    current_bytes: usize,
    old_bytes: usize,
    /// Reads of the shard answered here, and from the file (counted under the shard's lock,
    /// not in a counter every worker writes).
    hits: u64,
    misses: u64,
}

impl<V: ?Sized> Default for Generations<V> {
    fn default() -> Self {
        Generations {
            current: HashMap::default(),
            old: HashMap::default(),
            current_bytes: 0,
            old_bytes: 0,
            hits: 0,
            misses: 0,
        }
    }
}

impl<V: ?Sized + Blob> Generations<V> {
    /// The value at `at`; a hit in the old generation moves to the current one.
    fn get(&mut self, at: u64, half: usize) -> Option<Arc<V>> {
        if let Some(value) = self.current.get(&at) {
            self.hits += 1;
            return Some(value.clone());
        }
        let value = self.old.remove(&at)?;
        self.hits += 1;
        self.old_bytes -= bytes_of(&*value);
        self.put(at, value.clone(), half);
        Some(value)
    }

    fn put(&mut self, at: u64, value: Arc<V>, half: usize) {
        let n = bytes_of(&*value);
        if self.current_bytes + n > half {
            self.old = std::mem::take(&mut self.current);
            self.old_bytes = std::mem::replace(&mut self.current_bytes, 0);
        }
        if n <= half && self.current.insert(at, value).is_none() {
            self.current_bytes += n;
        }
    }

    fn bytes(&self) -> usize {
        self.current_bytes + self.old_bytes
    }
}

/// A cached value's bytes: its own, its `Arc`'s counts and its entry in the cache's table.
fn bytes_of<V: ?Sized + Blob>(value: &V) -> usize {
    value.resident_bytes() + 16
}

/// An append-only file of values of one kind and its cache.
pub struct Store<V: ?Sized + Blob> {
    file: File,
    path: PathBuf,
    tail: Mutex<Tail>,
    cache: Vec<Mutex<Generations<V>>>,
    /// Bytes a generation of a shard holds at most.
    half_shard: usize,
    pages: AtomicU64,
    bytes_in: AtomicU64,
    /// The run's word store when it was created: where the words its values name are.
    words: Option<Arc<WordStore>>,
}

/// The pages' words.
pub type WordStore = Store<[Word]>;

impl<V: ?Sized + Blob> std::fmt::Debug for Store<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish_non_exhaustive()
    }
}

impl<V: ?Sized + Blob> Store<V> {
    /// A store in a new file in `dir` (unlinked at once), caching at most `cache_bytes`; the
    /// words its values name by their place are in `words` (the run's word store, if any).
    pub fn create(
        dir: &Path,
        cache_bytes: usize,
        words: Option<Arc<WordStore>>,
    ) -> io::Result<Store<V>> {
        let path = dir.join(format!(".dupflow-{}-{}-{}", V::KIND, std::process::id(), unique()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        std::fs::remove_file(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(Store {
            file,
            path,
            tail: Mutex::new(Tail { start: 0, bytes: Vec::with_capacity(WRITE_BYTES) }),
            cache: (0..SHARDS).map(|_| Mutex::default()).collect(),
            half_shard: cache_bytes / SHARDS / 2,
            pages: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            words,
        })
    }

    /// Writes `value` and returns its place; with `cache`, it is cached as well (a page's
    /// words are read again soon after it is made: its filtering and fingerprints).
    pub fn put(&self, value: Arc<V>, cache: bool) -> io::Result<Place> {
        let mut raw = Vec::new();
        value.encode(&mut raw, self.words.as_ref());
        let compressed = if V::COMPRESS {
            std::borrow::Cow::Owned(lz4_flex::block::compress(&raw))
        } else {
            std::borrow::Cow::Borrowed(&raw[..])
        };
        let place = {
            let mut tail = lock(&self.tail);
            let at = tail.start + tail.bytes.len() as u64;
            tail.bytes.extend_from_slice(&compressed);
            if tail.bytes.len() >= WRITE_BYTES {
                self.write_tail(&mut tail)?;
            }
            Place { at, compressed: compressed.len() as u32, raw: raw.len() as u32 }
        };
        self.pages.fetch_add(1, Ordering::Relaxed);
        self.bytes_in.fetch_add(raw.len() as u64, Ordering::Relaxed);
        if cache {
            lock(self.shard(place.at)).put(place.at, value, self.half_shard);
        }
        Ok(place)
    }

    fn write_tail(&self, tail: &mut Tail) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(&tail.bytes, tail.start).map_err(|e| self.error("written", e))?;
        tail.start += tail.bytes.len() as u64;
        tail.bytes.clear();
        Ok(())
    }

    /// The value at `place`. A failure to read the store's own file is no input's fault and
    /// nothing can go on without the value: it panics with the file and the error, which the
    /// run reports as its failure.
    pub fn get(&self, place: Place) -> Arc<V> {
        if let Some(value) = lock(self.shard(place.at)).get(place.at, self.half_shard) {
            return value;
        }
        let value = self.read(place).unwrap_or_else(|e| crate::runtime::disk::fail(e));
        let mut shard = lock(self.shard(place.at));
        shard.misses += 1;
        shard.put(place.at, value.clone(), self.half_shard);
        value
    }

    fn read(&self, place: Place) -> io::Result<Arc<V>> {
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
        let invalid = |e: String| self.error("read", io::Error::new(io::ErrorKind::InvalidData, e));
        if !V::COMPRESS {
            return V::decode(&compressed, self.words.as_ref()).map_err(|e| invalid(e.to_string()));
        }
        let raw = lz4_flex::block::decompress(&compressed, place.raw as usize)
            .map_err(|e| invalid(e.to_string()))?;
        V::decode(&raw, self.words.as_ref()).map_err(|e| invalid(e.to_string()))
    }

    fn error(&self, what: &str, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!(
                "the {} store ({}, unlinked) could not be {what}: {e}",
                V::KIND,
                self.path.display()
            ),
        )
    }

    fn shard(&self, at: u64) -> &Mutex<Generations<V>> {
        &self.cache[(crate::runtime::hashing::mix64(at) % SHARDS as u64) as usize]
    }

    pub fn stats(&self) -> StoreStats {
        let mut stats = StoreStats {
            pages: self.pages.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            ..StoreStats::default()
        };
        for shard in &self.cache {
            let shard = lock(shard);
            stats.hits += shard.hits;
            stats.misses += shard.misses;
            stats.cached_bytes += shard.bytes() as u64;
        }
        let tail = lock(&self.tail);
        stats.bytes_written = tail.start + tail.bytes.len() as u64;
        stats
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn unique() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Words as the store keeps them: two bytes each, little-endian.
impl Blob for [Word] {
    const KIND: &'static str = "words";

    fn encode(&self, out: &mut Vec<u8>, _: Option<&Arc<WordStore>>) {
        out.extend(self.iter().flat_map(|w| w.to_le_bytes()));
    }

    fn decode(bytes: &[u8], _: Option<&Arc<WordStore>>) -> io::Result<Arc<[Word]>> {
        Ok(bytes.chunks_exact(2).map(|b| Word::from_le_bytes([b[0], b[1]])).collect())
    }

    fn resident_bytes(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// A value in memory or in its kind's store (the run's, `run::Runtime`).
pub enum Kept<V: ?Sized + Blob> {
    Resident(Arc<V>),
    Stored(Arc<Store<V>>, Place),
}

impl<V: ?Sized + Blob> Clone for Kept<V> {
    fn clone(&self) -> Self {
        match self {
            Kept::Resident(value) => Kept::Resident(value.clone()),
            Kept::Stored(store, place) => Kept::Stored(store.clone(), *place),
        }
    }
}

impl<V: ?Sized + Blob> Kept<V> {
    /// `value` in `store` (cached or not), or in memory without one. A store that cannot be
    /// written stops the run, as for words (`ingest::words::Words::stored_in`).
    pub fn keep_in(value: Arc<V>, store: Option<&Arc<Store<V>>>, cache: bool) -> Kept<V> {
        match store {
            Some(store) => {
                let place =
                    store.put(value, cache).unwrap_or_else(|e| crate::runtime::disk::fail(e));
                Kept::Stored(store.clone(), place)
            }
            None => Kept::Resident(value),
        }
    }

    /// The value, read through its store's cache when it is stored.
    pub fn get(&self) -> Arc<V> {
        match self {
            Kept::Resident(value) => value.clone(),
            Kept::Stored(store, place) => store.get(*place),
        }
    }

    /// Whether it is in a store.
    pub fn is_stored(&self) -> bool {
        matches!(self, Kept::Stored(..))
    }

    /// The bytes it holds in memory: the value's when resident, none when stored (the store's
    /// cache is counted apart).
    pub fn resident_bytes(&self) -> usize {
        match self {
            Kept::Resident(value) => value.resident_bytes() + crate::runtime::footprint::ARC_COUNTS,
            Kept::Stored(..) => 0,
        }
    }
}

impl<V: ?Sized + Blob + std::fmt::Debug> std::fmt::Debug for Kept<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// Serialized as the value (a checkpoint, another process): the other side holds it in memory
/// until the operator that keeps it puts it in its run's store (`Kept::keep_in`).
impl<V: Blob + serde::Serialize> serde::Serialize for Kept<V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(serializer)
    }
}

impl<'de, V: Blob + serde::Deserialize<'de>> serde::Deserialize<'de> for Kept<V> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Kept<V>, D::Error> {
        V::deserialize(deserializer).map(|value| Kept::Resident(Arc::new(value)))
    }
}

/// Little-endian writing and reading of a blob's fields.
pub mod bytes {
    use std::io;

    pub fn put_u8(out: &mut Vec<u8>, n: u8) {
        out.push(n);
    }
    pub fn put_u16(out: &mut Vec<u8>, n: u16) {
        out.extend_from_slice(&n.to_le_bytes());
    }
    pub fn put_u32(out: &mut Vec<u8>, n: u32) {
        out.extend_from_slice(&n.to_le_bytes());
    }
    pub fn put_u64(out: &mut Vec<u8>, n: u64) {
        out.extend_from_slice(&n.to_le_bytes());
    }
    /// A length (u32), then the bytes.
    pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
        put_u32(out, bytes.len() as u32);
        out.extend_from_slice(bytes);
    }

    /// Reads fields from the front of a blob.
    pub struct Reader<'a>(pub &'a [u8]);

    impl<'a> Reader<'a> {
        pub fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
            if self.0.len() < n {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "a stored value is cut short",
                ));
            }
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            Ok(head)
        }
        pub fn u8(&mut self) -> io::Result<u8> {
            Ok(self.take(1)?[0])
        }
        pub fn u16(&mut self) -> io::Result<u16> {
            Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
        }
        pub fn u32(&mut self) -> io::Result<u32> {
            Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
        }
        pub fn u64(&mut self) -> io::Result<u64> {
            Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
        }
        /// A count (u32) of items, each read by `item`.
        pub fn list<T>(
            &mut self,
            mut item: impl FnMut(&mut Self) -> io::Result<T>,
        ) -> io::Result<Vec<T>> {
            let n = self.u32()? as usize;
            // No more items than bytes left: a damaged count allocates nothing large.
            let mut items = Vec::with_capacity(n.min(self.0.len()));
            for _ in 0..n {
                items.push(item(self)?);
            }
            Ok(items)
        }
        /// What `put_bytes` wrote.
        pub fn bytes(&mut self) -> io::Result<&'a [u8]> {
            let n = self.u32()? as usize;
            self.take(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_come_back_from_the_cache_the_tail_and_the_file() {
        let dir = std::env::temp_dir();
        // A cache too small to hold anything: every read goes to the tail or the file.
        let store = WordStore::create(&dir, 0, None).unwrap();
        let pages: Vec<Arc<[Word]>> =
            (0..3000u32).map(|p| (0..(p % 700)).map(|w| (w * 7 + p) as Word).collect()).collect();
        let places: Vec<Place> =
            pages.iter().map(|w| store.put(w.clone(), true).unwrap()).collect();
        let stats = store.stats();
        assert!(stats.bytes_written > WRITE_BYTES as u64, "part of it is in the file");
        for (words, place) in pages.iter().zip(&places) {
            assert_eq!(&store.get(*place)[..], &words[..]);
        }
        assert_eq!(store.stats().hits, 0);
        // With a cache, a read again is a hit.
        let cached = WordStore::create(&dir, 1 << 20, None).unwrap();
        let place = cached.put(pages[5].clone(), true).unwrap();
        assert_eq!(&cached.get(place)[..], &pages[5][..]);
        assert_eq!(cached.stats().hits, 1);
        assert_eq!(cached.stats().pages, 1);
    }

    #[test]
    fn the_cache_holds_at_most_its_bytes() {
        let store = WordStore::create(&std::env::temp_dir(), 64 * 1024, None).unwrap();
        for p in 0..1000u32 {
            store.put((0..200).map(|w| (w + p) as Word).collect(), true).unwrap();
        }
        assert!(store.stats().cached_bytes <= 64 * 1024, "{:?}", store.stats());
        assert!(store.stats().cached_bytes > 0);
    }

    #[test]
    fn the_file_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("dupflow-store-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = WordStore::create(&dir, 0, None).unwrap();
        store.put(vec![1, 2, 3].into(), true).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "unlinked at once");
        std::fs::remove_dir(&dir).unwrap();
    }
}
