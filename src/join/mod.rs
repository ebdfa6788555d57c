//! Exact similarity self-joins over text records, one record a line: the All-Pairs (Bayardo
//! et al., WWW 2007), PPJoin and PPJoin+ (Xiao et al., WWW 2008) set-similarity joins and the
//! Ed-Join family (Xiao et al., VLDB 2008) for edit distance, with the record tools that prepare
//! their input (`normalize`, `exact-dedup`).
//!
//! Every algorithm returns every pair that meets the threshold and no other: the filters only
//! drop pairs they prove cannot qualify, and every survivor is verified exactly. The tests
//! compare each algorithm with a brute-force join (`brute`).
//!
//! Probing is parallel (rayon): the inverted index is built once from every record's index
//! prefix, then each record probes it for the records before it in the processing order, so
//! the result does not depend on the number of threads.

pub mod brute;
pub mod edit;
pub mod set;
pub mod text;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

/// What a join did, printed on stderr by `dupflow join`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records that took part (non-empty for set joins; long enough for edit distance).
    pub records: u64,
    /// Pairs that survived the index filters (prefix, size, position, suffix).
    pub candidates: u64,
    /// Pairs whose exact similarity or distance was computed.
    pub verifications: u64,
    /// Pairs in the result.
    pub results: u64,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, other: Stats) {
        self.records += other.records;
        self.candidates += other.candidates;
        self.verifications += other.verifications;
        self.results += other.results;
    }
}

impl Stats {
    /// One line for stderr.
    pub fn line(&self, prepare: Duration, join: Duration) -> String {
        format!(
            "records {}, candidates {}, verifications {}, results {}, tokenize {:.3} s, join {:.3} s",
            self.records,
            self.candidates,
            self.verifications,
            self.results,
            prepare.as_secs_f64(),
            join.as_secs_f64()
        )
    }
}

/// A pair of the result: 1-based line numbers, `x > y`, and the similarity (set joins) or the
/// edit distance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub x: u32,
    pub y: u32,
    pub value: f64,
}

impl Pair {
    fn new(a: u32, b: u32, value: f64) -> Pair {
        Pair { x: a.max(b), y: a.min(b), value }
    }
}

/// Sorts pairs by `(x, y)`: the output order, whatever the thread count.
pub fn sort_pairs(pairs: &mut [Pair]) {
    pairs.sort_unstable_by_key(|p| (p.x, p.y));
}

/// Errors of the join tools: bad arguments, named.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("threshold {0:?} is not a decimal number such as 0.8")]
    BadThreshold(String),
    #[error("threshold {value} is out of range for {measure}: {expected}")]
    ThresholdRange { value: String, measure: &'static str, expected: &'static str },
    #[error("q must be at least 1")]
    BadQ,
    #[error("{0} is not an algorithm for this join (expected one of: {1})")]
    BadAlgorithm(String, &'static str),
    #[error("building the thread pool: {0}")]
    Threads(String),
}

/// The tokens of a join's records: the k-th occurrence of an element (a word, a gram) in a
/// record is the token (element, k), numbered as first seen, with its document frequency.
/// `ranks` orders the tokens by ascending frequency (ties: by element, then occurrence), the
/// global order of the prefix filters.
struct Vocabulary<E, S> {
    ids: HashMap<(E, u32), u32, S>,
    keys: Vec<(E, u32)>,
    df: Vec<u32>,
    /// Occurrences so far in the current record.
    occurrence: HashMap<E, u32, S>,
}

impl<E: Hash + Eq + Ord + Copy, S: BuildHasher + Default> Vocabulary<E, S> {
    fn new() -> Self {
        Vocabulary {
            ids: HashMap::default(),
            keys: Vec::new(),
            df: Vec::new(),
            occurrence: HashMap::default(),
        }
    }

    /// Starts a record: occurrences count from 1 again.
    fn start_record(&mut self) {
        self.occurrence.clear();
    }

    /// The token id of the next occurrence of `element` in the current record.
    fn token(&mut self, element: E) -> u32 {
        let k = self.occurrence.entry(element).or_insert(0);
        *k += 1;
        let key = (element, *k);
        let (keys, df) = (&mut self.keys, &mut self.df);
        let id = *self.ids.entry(key).or_insert_with(|| {
            keys.push(key);
            df.push(0);
            (keys.len() - 1) as u32
        });
        self.df[id as usize] += 1;
        id
    }

    /// The rank of each token id.
    fn ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.keys.len() as u32).collect();
        order.sort_unstable_by_key(|&id| (self.df[id as usize], self.keys[id as usize]));
        let mut rank = vec![0u32; self.keys.len()];
        for (r, &id) in order.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        rank
    }
}

/// An inverted index in one flat array: the list of token `t` is `postings[starts[t]..starts[t + 1]]`,
/// its postings in the order they were given.
struct FlatIndex<P> {
    starts: Vec<u32>,
    postings: Vec<P>,
}

impl<P: Copy + Default> FlatIndex<P> {
    /// Builds the index of tokens `0..universe` from `entries`, which is called twice (to count,
    /// then to fill) and must give the same (token, posting) pairs both times.
    fn build<I: Iterator<Item = (u32, P)>>(
        universe: usize,
        entries: impl Fn() -> I,
    ) -> FlatIndex<P> {
        let mut starts = vec![0u32; universe + 1];
        for (token, _) in entries() {
            starts[token as usize + 1] += 1;
        }
        for k in 1..starts.len() {
            starts[k] += starts[k - 1];
        }
        let mut postings = vec![P::default(); starts[universe] as usize];
        let mut fill = starts.clone();
        for (token, posting) in entries() {
            postings[fill[token as usize] as usize] = posting;
            fill[token as usize] += 1;
        }
        FlatIndex { starts, postings }
    }

    fn list(&self, token: u32) -> &[P] {
        &self.postings
            [self.starts[token as usize] as usize..self.starts[token as usize + 1] as usize]
    }
}

/// Probes every record `0..n` in parallel, each worker thread with its own scratch state from
/// `init`, and gathers the pairs (sorted) and the summed statistics.
fn probe_all<S: Send, I, P>(n: usize, init: I, probe: P) -> (Vec<Pair>, Stats)
where
    I: Fn() -> S + Sync + Send,
    P: Fn(&mut S, usize) -> (Vec<Pair>, Stats) + Sync + Send,
{
    use rayon::prelude::*;
    // Each rayon job folds its records into its own scratch state and output; jobs' outputs are
    // then concatenated (the final sort makes the order independent of the split).
    let (mut pairs, mut stats) = (0..n)
        .into_par_iter()
        .fold(
            || (init(), Vec::new(), Stats::default()),
            |(mut scratch, mut pairs, mut stats), x| {
                let (found, counted) = probe(&mut scratch, x);
                pairs.extend(found);
                stats += counted;
                (scratch, pairs, stats)
            },
        )
        .map(|(_, pairs, stats)| (pairs, stats))
        .reduce(
            || (Vec::new(), Stats::default()),
            |(mut pa, mut sa), (pb, sb)| {
                pa.extend(pb);
                sa += sb;
                (pa, sa)
            },
        );
    stats.records = n as u64;
    sort_pairs(&mut pairs);
    (pairs, stats)
}

/// Runs `f` on a rayon pool of `threads` threads (0: one per core).
pub fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> Result<T, JoinError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| JoinError::Threads(e.to_string()))?;
    Ok(pool.install(f))
}
