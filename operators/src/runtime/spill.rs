//! A map from 64-bit keys to 64-bit values whose entries go to disk past a bound: the two
//! indexes' keys of one page, one entry for nearly every distinct sentence and fingerprint of
//! every page, the largest structures that grow with the crawl: the template stage's
//! sentences of one page (`template::holders`) and the fingerprints of one page
//! (`verify::groups::Slots`, which keeps its newest entries itself and writes them here as
//! runs: `push_run`).
//!
//! An entry is read again only when a second page brings its key or its page leaves, so most
//! entries are written once and never read. `SpillMap` keeps the newest entries in a
//! `DenseMap` (`recent`); when it holds `Spill::recent_entries`, they are sorted by key and
//! written as a run to a file of their own (unlinked at once, as the stores' files are), 16
//! bytes an entry in blocks of `BLOCK_ENTRIES`. In memory a run keeps, an entry, 1.6 bytes:
//! a blocked Bloom filter (`FILTER_BITS` bits, one cache line a key: a key it never held is
//! looked for on disk with odds of ~1%), a bit marking it taken out, and a block's first key
//! for every `BLOCK_ENTRIES`. A lookup asks `recent`, then each run's filter, and reads one
//! block (4 KiB) of a run whose filter may hold the key.
//!
//! A key is in one place at most (`recent` or one run): an insertion first looks for it. A
//! removal from a run marks its entry; a merge leaves marked entries out. Runs merge two at a
//! time while the newer holds at least 1/`MERGE_RATIO` of the older's entries, so sizes grow
//! geometrically: a map of `n` entries has about `log_MERGE_RATIO(n / recent_entries)` runs
//! and writes an entry that many times.
//!
//! What the map answers depends on its entries alone, never on where they are: a run with
//! spilling gives the clusters of a run without it. A failure to write or read its own file
//! is no input's fault and nothing can go on without it: it panics with the file and the
//! error, which the run reports as its failure.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::runtime::dense::DenseMap;
use crate::runtime::hashing::mix64;

/// Entries of a block: the unit a lookup reads (4 KiB).
const BLOCK_ENTRIES: usize = 256;
/// Bytes of an entry on disk: its key and value, little-endian.
const ENTRY_BYTES: usize = 16;
/// Filter bits an entry: with `FILTER_PROBES` bits set in a 512-bit block, a key never held
/// passes with odds of about 1%.
const FILTER_BITS: usize = 12;
const FILTER_PROBES: usize = 6;
/// A newer run merges into the older while it holds at least 1/`MERGE_RATIO` of its entries.
const MERGE_RATIO: usize = 3;
/// Bytes written to a run's file at once.
const WRITE_BYTES: usize = 1 << 20;

/// Where and when maps spill: the run's directory for such files, and the entries a map
/// keeps in memory before it writes them as a run. Its figures are the run's, over every
/// map that spilled into it.
#[derive(Debug)]
pub struct Spill {
    dir: PathBuf,
    recent_entries: usize,
    on_disk: AtomicU64,
    peak_on_disk: AtomicU64,
    written: AtomicU64,
    block_reads: AtomicU64,
    runs: AtomicU64,
}

/// What the maps of a run wrote and read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpillStats {
    /// Bytes of the runs held now, and at most.
    pub on_disk: u64,
    pub peak_on_disk: u64,
    /// Bytes written, merges included.
    pub written: u64,
    /// Blocks read by lookups (a filter let the key through).
    pub block_reads: u64,
    /// Runs written, merges included.
    pub runs: u64,
}

impl Spill {
    /// Maps spilling into `dir`, `recent_entries` (at least 1) in memory each.
    pub fn new(dir: &Path, recent_entries: usize) -> Spill {
        Spill {
            dir: dir.to_path_buf(),
            recent_entries: recent_entries.max(1),
            on_disk: AtomicU64::new(0),
            peak_on_disk: AtomicU64::new(0),
            written: AtomicU64::new(0),
            block_reads: AtomicU64::new(0),
            runs: AtomicU64::new(0),
        }
    }

    /// The entries a map keeps in memory before it writes them as a run.
    pub fn recent_entries(&self) -> usize {
        self.recent_entries
    }

    pub fn stats(&self) -> SpillStats {
        SpillStats {
            on_disk: self.on_disk.load(Ordering::Relaxed),
            peak_on_disk: self.peak_on_disk.load(Ordering::Relaxed),
            written: self.written.load(Ordering::Relaxed),
            block_reads: self.block_reads.load(Ordering::Relaxed),
            runs: self.runs.load(Ordering::Relaxed),
        }
    }

    fn wrote(&self, bytes: u64) {
        self.written.fetch_add(bytes, Ordering::Relaxed);
        self.runs.fetch_add(1, Ordering::Relaxed);
        let now = self.on_disk.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_on_disk.fetch_max(now, Ordering::Relaxed);
    }
}

/// A map from `u64` keys to `u64` values, its newest entries in memory and the rest in sorted
/// runs on disk (with no spill: all in memory).
pub struct SpillMap {
    recent: DenseMap<u64>,
    runs: Vec<Run>,
    spill: Option<Arc<Spill>>,
    /// A block as read.
    block: Vec<u8>,
}

impl std::fmt::Debug for SpillMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpillMap")
            .field("recent", &self.recent.len())
            .field("runs", &self.runs.iter().map(|r| r.live).collect::<Vec<_>>())
            .finish()
    }
}

impl SpillMap {
    pub fn new(spill: Option<Arc<Spill>>) -> SpillMap {
        SpillMap { recent: DenseMap::default(), runs: Vec::new(), spill, block: Vec::new() }
    }

    /// The entries held.
    pub fn len(&self) -> usize {
        self.recent.len() + self.runs.iter().map(|r| r.live).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes it holds in memory: `recent`'s tables, and each run's filter, marks and
    /// block index.
    pub fn memory_bytes(&self) -> usize {
        self.recent.table_bytes() + self.runs.iter().map(Run::memory_bytes).sum::<usize>()
    }

    /// The runs it holds on disk.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    pub fn get(&mut self, key: u64) -> Option<u64> {
        if let Some(&value) = self.recent.get(key) {
            return Some(value);
        }
        self.find(key).map(|(_, _, value)| value)
    }

    /// Holds `value` as the entry of `key` if `key` has none; whether it did.
    pub fn insert_absent(&mut self, key: u64, value: u64) -> bool {
        if self.find(key).is_some() || !self.recent.insert_absent(key, value) {
            return false;
        }
        self.spill_if_full();
        true
    }

    /// Holds `value` as the entry of `key`; the value it replaced, if any.
    pub fn insert(&mut self, key: u64, value: u64) -> Option<u64> {
        let old = match self.find(key) {
            Some((run, at, old)) => {
                self.runs[run].take(at);
                self.drop_empty(run);
                Some(old)
            }
            None => None,
        };
        let old = self.recent.insert(key, value).or(old);
        self.spill_if_full();
        old
    }

    /// Takes out the entry of `key` if `goes` says so.
    pub fn remove_if(&mut self, key: u64, goes: impl FnOnce(&u64) -> bool) -> Option<u64> {
        if let Some(&value) = self.recent.get(key) {
            return if goes(&value) { self.recent.remove(key) } else { None };
        }
        let (run, at, value) = self.find(key)?;
        if !goes(&value) {
            return None;
        }
        self.runs[run].take(at);
        self.drop_empty(run);
        Some(value)
    }

    /// Takes out the entry of `key`.
    pub fn remove(&mut self, key: u64) -> Option<u64> {
        self.remove_if(key, |_| true)
    }

    /// A hint that `key` is looked up soon: the filter blocks its runs would read.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        for run in &self.runs {
            run.filter.prefetch(key);
        }
    }

    /// Every entry, sorted by key (reads every run: for tests and checks).
    pub fn entries(&self) -> Vec<(u64, u64)> {
        let mut all: Vec<(u64, u64)> = self.recent.iter().map(|(k, &v)| (k, v)).collect();
        for run in &self.runs {
            all.extend(run.reader().map(|r| r.unwrap_or_else(|e| run.fail("read", e))));
        }
        all.sort_unstable();
        all
    }

    /// The run, place and value of `key` in a run, if any.
    fn find(&mut self, key: u64) -> Option<(usize, usize, u64)> {
        for (i, run) in self.runs.iter().enumerate().rev() {
            if let Some((at, value)) = run.find(key, &mut self.block) {
                return Some((i, at, value));
            }
        }
        None
    }

    fn drop_empty(&mut self, run: usize) {
        if self.runs[run].live == 0 {
            self.runs.remove(run);
        }
    }

    /// Writes `recent` as a run when it is full, and merges runs while the newest holds at
    /// least 1/`MERGE_RATIO` of the entries of the one before.
    fn spill_if_full(&mut self) {
        let Some(spill) = &self.spill else { return };
        if self.recent.len() < spill.recent_entries {
            return;
        }
        let recent = std::mem::take(&mut self.recent);
        let entries: Vec<(u64, u64)> = recent.iter().map(|(k, &v)| (k, v)).collect();
        drop(recent);
        self.push_run(entries);
    }

    /// Writes `entries` (of keys it does not hold) as a run, and merges runs while the newest
    /// holds at least 1/`MERGE_RATIO` of the entries of the one before: for a caller that
    /// keeps its newest entries itself (`verify::groups::Slots`). Without a spill, they stay
    /// in memory.
    pub fn push_run(&mut self, mut entries: Vec<(u64, u64)>) {
        let Some(spill) = self.spill.clone() else {
            for (key, value) in entries {
                self.recent.insert(key, value);
            }
            return;
        };
        entries.sort_unstable_by_key(|e| e.0);
        debug_assert!(entries.iter().all(|&(k, _)| self.recent.get(k).is_none()));
        let count = entries.len();
        self.runs.push(Run::write(&spill, entries.into_iter().map(Ok), count));
        while let [.., older, newer] = self.runs.as_slice() {
            if newer.live * MERGE_RATIO < older.live {
                break;
            }
            let newer = self.runs.pop().expect("two runs");
            let older = self.runs.pop().expect("two runs");
            self.runs.push(Run::merge(&spill, &older, &newer));
        }
    }
}

/// Entries written in key order to a file, with what finds them in memory.
struct Run {
    file: File,
    path: PathBuf,
    spill: Arc<Spill>,
    /// Entries written.
    len: usize,
    /// Entries not taken out.
    live: usize,
    /// Each block's first key.
    first_keys: Vec<u64>,
    filter: Filter,
    /// A bit an entry: taken out.
    taken: Vec<u64>,
}

impl Drop for Run {
    fn drop(&mut self) {
        self.spill.on_disk.fetch_sub(self.bytes(), Ordering::Relaxed);
    }
}

impl Run {
    fn bytes(&self) -> u64 {
        (self.len * ENTRY_BYTES) as u64
    }

    fn memory_bytes(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(&self.first_keys[..])
            + size_of_val(&self.filter.blocks[..])
            + size_of_val(&self.taken[..])
    }

    fn fail(&self, what: &str, e: io::Error) -> ! {
        fail(&self.path, what, e)
    }

    /// A run of `count` entries, sorted by key, written to a new file in the spill's directory.
    fn write(
        spill: &Arc<Spill>,
        entries: impl Iterator<Item = io::Result<(u64, u64)>>,
        count: usize,
    ) -> Run {
        static UNIQUE: AtomicU64 = AtomicU64::new(0);
        let path = spill.dir.join(format!(
            ".dupflow-index-{}-{}",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::Relaxed)
        ));
        let fail = |what: &str, e: io::Error| -> ! { fail(&path, what, e) };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap_or_else(|e| fail("made", e));
        std::fs::remove_file(&path).unwrap_or_else(|e| fail("unlinked", e));
        let mut filter = Filter::new(count);
        let mut first_keys = Vec::with_capacity(count.div_ceil(BLOCK_ENTRIES));
        let mut out = BufWriter::with_capacity(WRITE_BYTES, &file);
        let mut len = 0;
        for entry in entries {
            let (key, value) = entry.unwrap_or_else(|e| fail("read", e));
            debug_assert!(first_keys.last().is_none_or(|&k| k <= key), "sorted");
            if len % BLOCK_ENTRIES == 0 {
                first_keys.push(key);
            }
            filter.add(key);
            out.write_all(&key.to_le_bytes()).unwrap_or_else(|e| fail("written", e));
            out.write_all(&value.to_le_bytes()).unwrap_or_else(|e| fail("written", e));
            len += 1;
        }
        out.flush().unwrap_or_else(|e| fail("written", e));
        drop(out);
        debug_assert_eq!(len, count);
        let run = Run {
            file,
            path: path.clone(),
            spill: spill.clone(),
            len,
            live: len,
            first_keys,
            filter,
            taken: vec![0; len.div_ceil(64)],
        };
        spill.wrote(run.bytes());
        run
    }

    /// The entries of `older` and `newer` not taken out, as one run.
    fn merge(spill: &Arc<Spill>, older: &Run, newer: &Run) -> Run {
        let count = older.live + newer.live;
        let mut a = older.reader().peekable();
        let mut b = newer.reader().peekable();
        let merged = std::iter::from_fn(move || {
            let take_a = match (a.peek(), b.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) => true,
                (_, Some(Err(_))) => false,
                (Some(Ok(x)), Some(Ok(y))) => x.0 <= y.0,
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            if take_a {
                a.next()
            } else {
                b.next()
            }
        });
        Run::write(spill, merged, count)
    }

    /// Its entries not taken out, in key order, read a block at a time.
    fn reader(&self) -> impl Iterator<Item = io::Result<(u64, u64)>> + '_ {
        let mut block = Vec::new();
        (0..self.first_keys.len()).flat_map(move |b| {
            let entries = match self.read_block(b, &mut block) {
                Ok(()) => (0..block.len() / ENTRY_BYTES)
                    .filter(|&i| !self.is_taken(b * BLOCK_ENTRIES + i))
                    .map(|i| Ok(entry(&block, i)))
                    .collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            };
            entries.into_iter()
        })
    }

    fn read_block(&self, b: usize, block: &mut Vec<u8>) -> io::Result<()> {
        let start = b * BLOCK_ENTRIES;
        let n = BLOCK_ENTRIES.min(self.len - start);
        block.resize(n * ENTRY_BYTES, 0);
        self.file.read_exact_at(block, (start * ENTRY_BYTES) as u64)
    }

    fn is_taken(&self, at: usize) -> bool {
        self.taken[at / 64] & (1 << (at % 64)) != 0
    }

    fn take(&mut self, at: usize) {
        debug_assert!(!self.is_taken(at));
        self.taken[at / 64] |= 1 << (at % 64);
        self.live -= 1;
    }

    /// The place and value of `key`, if it holds it (not taken out).
    fn find(&self, key: u64, block: &mut Vec<u8>) -> Option<(usize, u64)> {
        if !self.filter.may_hold(key) {
            return None;
        }
        let b = self.first_keys.partition_point(|&k| k <= key).checked_sub(1)?;
        self.read_block(b, block).unwrap_or_else(|e| self.fail("read", e));
        self.spill.block_reads.fetch_add(1, Ordering::Relaxed);
        let n = block.len() / ENTRY_BYTES;
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match entry(block, mid).0.cmp(&key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let at = b * BLOCK_ENTRIES + mid;
                    return (!self.is_taken(at)).then(|| (at, entry(block, mid).1));
                }
            }
        }
        None
    }
}

/// A spill file that could not be made, written or read: no input's fault, and nothing can go
/// on without it. The run reports the panic as its failure, in one line.
fn fail(path: &Path, what: &str, e: io::Error) -> ! {
    super::disk::fail(format_args!(
        "an index's spilled keys ({}, unlinked) could not be {what}: {e}",
        path.display()
    ))
}

/// The entry `i` of a block as read.
fn entry(block: &[u8], i: usize) -> (u64, u64) {
    let at = i * ENTRY_BYTES;
    let word = |from: usize| u64::from_le_bytes(block[from..from + 8].try_into().expect("8 bytes"));
    (word(at), word(at + 8))
}

/// A blocked Bloom filter: a key sets `FILTER_PROBES` bits of one 512-bit block.
struct Filter {
    blocks: Box<[[u64; 8]]>,
}

impl Filter {
    fn new(entries: usize) -> Filter {
        let blocks = (entries * FILTER_BITS).div_ceil(512).max(1);
        Filter { blocks: vec![[0; 8]; blocks].into_boxed_slice() }
    }

    /// The block and the bits of `key`.
    fn probes(&self, key: u64) -> (usize, [usize; FILTER_PROBES]) {
        let h = mix64(key ^ 0x243f_6a88_85a3_08d3);
        let block = ((h as u128 * self.blocks.len() as u128) >> 64) as usize;
        let bits = mix64(h);
        (block, std::array::from_fn(|i| ((bits >> (9 * i)) & 511) as usize))
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        let (block, _) = self.probes(key);
        crate::runtime::dense::prefetch_read(&self.blocks[block]);
    }

    fn add(&mut self, key: u64) {
        let (block, bits) = self.probes(key);
        let block = &mut self.blocks[block];
        for bit in bits {
            block[bit / 64] |= 1 << (bit % 64);
        }
    }

    fn may_hold(&self, key: u64) -> bool {
        let (block, bits) = self.probes(key);
        let block = &self.blocks[block];
        bits.iter().all(|bit| block[bit / 64] & (1 << (bit % 64)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;
    use std::collections::BTreeMap;

    fn spill(recent: usize) -> Arc<Spill> {
        Arc::new(Spill::new(&std::env::temp_dir(), recent))
    }

    /// Random insertions and removals of a few hundred keys, a few entries in memory: every
    /// answer and every entry held as a `BTreeMap`'s, through many spills and merges.
    #[test]
    fn a_spilling_map_answers_as_a_map_in_memory() {
        for (seed, recent) in [(1, 1), (2, 3), (3, 8), (4, 64), (5, 1000)] {
            let spill = spill(recent);
            let mut map = SpillMap::new(Some(spill.clone()));
            let mut oracle: BTreeMap<u64, u64> = BTreeMap::new();
            let mut rng = Rng(seed);
            for step in 0..6000 {
                // Keys from a small range meet often; 0 is a key like any other.
                let key = rng.below(400) * 0x9e37_79b9 % 1_000_003;
                let value = rng.below(1 << 40);
                match rng.below(5) {
                    0 | 1 => assert_eq!(
                        map.insert_absent(key, value),
                        !oracle.contains_key(&key) && oracle.insert(key, value).is_none(),
                        "seed {seed}, step {step}"
                    ),
                    2 => assert_eq!(map.insert(key, value), oracle.insert(key, value)),
                    3 => {
                        let goes = |v: &u64| v.is_multiple_of(2);
                        let expected = oracle.get(&key).copied().filter(goes);
                        if expected.is_some() {
                            oracle.remove(&key);
                        }
                        assert_eq!(map.remove_if(key, goes), expected, "seed {seed}, step {step}");
                    }
                    _ => {
                        assert_eq!(map.remove(key), oracle.remove(&key), "seed {seed}, step {step}")
                    }
                }
                assert_eq!(map.get(key), oracle.get(&key).copied(), "seed {seed}, step {step}");
                assert_eq!(map.len(), oracle.len(), "seed {seed}, step {step}");
            }
            assert_eq!(map.entries(), oracle.into_iter().collect::<Vec<_>>(), "seed {seed}");
            if recent < 100 {
                assert!(spill.stats().runs > 10, "seed {seed}: it spilled ({:?})", spill.stats());
            }
            // Runs merge: their number stays logarithmic in the entries.
            assert!(map.runs() <= 12, "seed {seed}: {} runs", map.runs());
        }
    }

    #[test]
    fn a_run_keeps_less_than_two_bytes_an_entry_in_memory_and_its_bytes_on_disk_are_counted() {
        let spill = spill(100_000);
        let mut map = SpillMap::new(Some(spill.clone()));
        for key in 1..=100_000u64 {
            assert!(map.insert_absent(mix64(key), key));
        }
        assert_eq!((map.runs(), map.recent.len()), (1, 0));
        assert!(map.memory_bytes() < 2 * 100_000, "{} bytes", map.memory_bytes());
        assert_eq!(spill.stats().on_disk, 16 * 100_000);
        // A key it never held reads a block about once in a hundred lookups.
        let before = spill.stats().block_reads;
        for key in 100_001..=200_000u64 {
            assert_eq!(map.get(mix64(key)), None);
        }
        let reads = spill.stats().block_reads - before;
        assert!(reads < 2_000, "{reads} blocks read for 100,000 absent keys");
        for key in (1..=100_000u64).step_by(7) {
            assert_eq!(map.get(mix64(key)), Some(key));
        }
        drop(map);
        assert_eq!(spill.stats().on_disk, 0, "its files go with it");
    }

    #[test]
    fn a_failure_to_make_its_file_names_it() {
        let spill = Arc::new(Spill::new(Path::new("/nonexistent/dupflow"), 1));
        let mut map = SpillMap::new(Some(spill));
        let failure = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| map.insert(7, 1)))
            .expect_err("no directory");
        let message =
            &failure.downcast_ref::<super::super::disk::DiskFailure>().expect("a disk failure").0;
        assert!(message.contains("/nonexistent/dupflow/.dupflow-index-"), "{message}");
        assert!(message.contains("could not be made"), "{message}");
    }
}
