//! A worker's scratch for word comparisons, and how often a bounded count checks its bound.

/// The counts that stop once what is left cannot reach their bound (the bit-parallel LCS, the
/// bag and bigram filters) check it every this many tokens.
pub(super) const CHECK_EVERY: usize = 64;

/// A worker's scratch for word comparisons: a table over the 65,536 words (all zeros between
/// uses) and a hash table of bigrams. Word comparisons are most of a large run's verification;
/// counting in a table replaces sorting both pages' words for every pair.
pub(super) struct WordScratch {
    pub(super) words: Vec<u32>,
    pub(super) bigrams: Vec<u64>,
}

thread_local! {
    pub(super) static WORD_SCRATCH: std::cell::RefCell<WordScratch> =
        std::cell::RefCell::new(WordScratch { words: vec![0; 1 << 16], bigrams: Vec::new() });
}

/// Runs `f` with the worker's word table; `f` leaves it all zeros.
pub(super) fn with_word_table<R>(f: impl FnOnce(&mut [u32]) -> R) -> R {
    WORD_SCRATCH.with(|s| {
        let words = &mut s.borrow_mut().words;
        let out = f(words);
        debug_assert!(words.iter().all(|&c| c == 0), "the word table is left all zeros");
        out
    })
}
