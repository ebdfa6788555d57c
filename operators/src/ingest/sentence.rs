//! Sentence split and normalization: text blocks to hashed, normalized sentences.
//!
//! Splitting works on one block (a paragraph, list item, cell, or code line) at a time, so a
//! sentence never spans two blocks. Sentences end at `. ! ?` followed by white space (not in
//! `3.14`, not after a common abbreviation or an initial), at the CJK terminators `。！？`
//! (no space needed), at `;`/`；` once the sentence is long, and at the block's end. Split
//! never drops a non-space character: the pieces, concatenated, are the block minus white space.
//!
//! Normalization for hashing is Unicode NFKC, lowercase, punctuation and symbols separating
//! words as white space does (or removed, as in the paper, or replaced by `_`, like the seed
//! tool `txtformat`), white space collapsed. It is idempotent.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::ingest::page::{Page, PageId, PageMeta, Sentence};
pub use crate::ingest::text::{normalize, normalize_into, Punctuation};
pub use crate::runtime::hashing::{mix64, stable_hash, MixHasher, Mixed, StableHasher};

/// Settings of the sentence stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SentenceConfig {
    /// Sentences shorter than this many units are kept for verification but not fingerprinted.
    pub min_sentence_units: u32,
    /// Units a CJK character counts for (a Latin letter counts 1).
    pub cjk_char_units: u32,
    /// `;` ends a sentence only once the sentence is at least this many characters long.
    pub semicolon_split_chars: u32,
    /// Most sentences kept per page: a longer page keeps its first and last halves, the middle
    /// is dropped and counted (`split_page`).
    pub max_sentences_per_page: u32,
    pub punctuation: Punctuation,
    /// Hash sentences by their canonical terms (stop words out, Snowball stems) instead of their
    /// normalized text, so that inflection and function words do not tell sentences apart
    /// (the cosine measure's canonicalization, shared).
    pub stem: bool,
    /// Language for stemming and stop words (`stem`, and the cosine verifier's terms): "auto"
    /// (the page's `lang` attribute, else detected from its text), or en, ru, de, fr, es, none.
    pub language: String,
    /// A synonym file (lines `form: word word …`) for the canonical terms; empty: none.
    pub synonyms: String,
    /// Where an HTML page's markup marks its main content and its chrome (landmarks: `<main>`,
    /// `<nav>`, ARIA roles), read the main content only (`html::strip_with`).
    pub landmarks: bool,
}

impl Default for SentenceConfig {
    fn default() -> Self {
        SentenceConfig {
            min_sentence_units: 20,
            cjk_char_units: 3,
            semicolon_split_chars: 80,
            max_sentences_per_page: 5_000,
            punctuation: Punctuation::Space,
            stem: false,
            language: "auto".to_string(),
            synonyms: String::new(),
            landmarks: true,
        }
    }
}

const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "no", "fig",
    "cf", "al", "approx", "dept", "est", "inc", "ltd", "co", "corp", "vol", "p", "pp", "ch", "sec",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
];

/// Whether `c` is a CJK ideograph, kana or hangul syllable (they have no spaces between words).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF
        | 0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F | 0x20000..=0x2FA1F)
}

/// Splits one block into sentences (trimmed slices of `block`, none empty).
pub fn split(block: &str, semicolon_split_chars: u32) -> Vec<&str> {
    let mut out = Vec::new();
    split_into(block, semicolon_split_chars, &mut out);
    out
}

/// `split`, appending to `out`: a page's blocks go into one list.
pub fn split_into<'a>(block: &'a str, semicolon_split_chars: u32, out: &mut Vec<&'a str>) {
    let bytes = block.as_bytes();
    let mut start = 0usize;
    let mut at = 0usize;
    // Only `. ! ? ;` and the full-width terminators (UTF-8 lead bytes E3, EF) can end a
    // sentence: the scan jumps from one such byte to the next, found by two `memchr3`
    // searches whose next hits are kept until the scan passes them (`Terminators`).
    let mut terminators = Terminators::new(bytes);
    while let Some(i) = terminators.next_from(at) {
        let c = block[i..].chars().next().expect("a lead byte starts a char");
        let end = i + c.len_utf8();
        at = end;
        let boundary = match c {
            '。' | '！' | '？' | '．' => true,
            '.' | '!' | '?' => {
                // Closing quotes and brackets may stand between the terminator and the space.
                let after = block[end..].trim_start_matches(is_closing);
                let followed_by_space = after.chars().next().is_none_or(char::is_whitespace);
                followed_by_space && !(c == '.' && is_abbreviation(&block[start..i]))
            }
            ';' | '；' => {
                let len = block[start..i].chars().count() as u32;
                len >= semicolon_split_chars
                    && block[end..].chars().next().is_none_or(|n| n.is_whitespace() || c == '；')
            }
            _ => false,
        };
        if boundary {
            // Keep closing quotes and brackets with the sentence they close.
            let stop = block.len() - block[end..].trim_start_matches(is_closing).len();
            push_trimmed(out, &block[start..stop]);
            start = stop;
            at = stop;
        }
    }
    push_trimmed(out, &block[start..]);
}

/// The bytes that may end a sentence, `. ! ?` (most of them) and `;` with the full-width
/// terminators' UTF-8 lead bytes E3 and EF, found from a position on: the first byte at or
/// after it of either set. Each set's next hit is searched once (`memchr3`, many bytes a step)
/// and kept while the scan has not passed it, so the text is read about twice in all, not
/// tested byte by byte against six values.
struct Terminators<'a> {
    bytes: &'a [u8],
    /// The next hit of each set at or after the position it was searched from (`bytes.len()`:
    /// none), and that position.
    hits: [(usize, usize); 2],
}

impl<'a> Terminators<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Terminators { bytes, hits: [(0, usize::MAX); 2] }
    }

    fn search(bytes: &[u8], set: usize, from: usize) -> usize {
        let rest = &bytes[from..];
        let found = if set == 0 {
            memchr::memchr3(b'.', b'!', b'?', rest)
        } else {
            memchr::memchr3(b';', 0xE3, 0xEF, rest)
        };
        found.map_or(bytes.len(), |k| from + k)
    }

    /// The first terminator byte at or after `from`.
    fn next_from(&mut self, from: usize) -> Option<usize> {
        let mut first = self.bytes.len();
        for set in 0..2 {
            let (hit, searched_from) = self.hits[set];
            // A hit found from before `from` stands if it is not before `from`: no byte of the
            // set lies between where it was searched from and the hit.
            if searched_from > from || hit < from {
                self.hits[set] = (Self::search(self.bytes, set, from), from);
            }
            first = first.min(self.hits[set].0);
        }
        (first < self.bytes.len()).then_some(first)
    }
}

fn is_closing(c: char) -> bool {
    matches!(c, '"' | '\'' | ')' | ']' | '”' | '’' | '」' | '』' | '）' | '»')
}

fn push_trimmed<'a>(out: &mut Vec<&'a str>, piece: &'a str) {
    let piece = piece.trim();
    if !piece.is_empty() {
        out.push(piece);
    }
}

/// Whether the text before a `.` ends with an abbreviation or a single-letter initial.
fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
    if word.is_empty() {
        return false;
    }
    let mut chars = word.chars();
    let first = chars.next().unwrap();
    if chars.next().is_none() && first.is_alphabetic() && first.is_uppercase() {
        return true; // "J. R. R. Tolkien"
    }
    // The abbreviations are ASCII; an ASCII word matches one as its lowercase would, with no
    // allocation. A word with other characters is lowercased as before (the Kelvin sign
    // lowercases to an ASCII `k`).
    if word.is_ascii() {
        return ABBREVIATIONS.iter().any(|a| a.eq_ignore_ascii_case(word));
    }
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
}

/// Length of a normalized sentence in units: a CJK character counts `cjk_char_units`, any
/// other non-space character 1.
pub fn units(normalized: &str, cjk_char_units: u32) -> u32 {
    if normalized.is_ascii() {
        return normalized.bytes().filter(|b| !matches!(b, b'\t'..=b'\r' | b' ')).count() as u32;
    }
    normalized
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if is_cjk(c) { cjk_char_units } else { 1 })
        .sum()
}

/// Weight of a sentence for LCS resemblance: word-sized units (6 characters each), at least 1.
pub fn weight(units: u32) -> u16 {
    (units.div_ceil(6)).clamp(1, u16::MAX as u32) as u16
}

/// MD5 of a normalized sentence, and the 64-bit key derived from it.
pub fn hash(normalized: &str) -> (u128, u64) {
    let digest: [u8; 16] = Md5::digest(normalized.as_bytes()).into();
    let md5 = u128::from_be_bytes(digest);
    let key = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
    (md5, key)
}

/// A sentence as ingest reports it (text kept for `dupflow sentences` and inspection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashedSentence {
    pub normalized: String,
    pub md5: u128,
    pub key: u64,
    pub units: u32,
}

/// Result of splitting a page's blocks: its sentences and whether the cap was hit.
#[derive(Clone, Debug, Default)]
pub struct SplitPage {
    pub sentences: Vec<HashedSentence>,
    pub truncated: bool,
}

/// Splits and normalizes all blocks of a page. Sentences that normalize to nothing are dropped.
///
/// A page with more than `max_sentences_per_page` sentences keeps its first half and its last
/// half: the middle is dropped (`truncated`). Generated pages put their navigation first (an
/// API reference's table of every module and function can run to thousands of lines) and their
/// own text after it; a cap that kept the head alone left such pages nothing but the
/// navigation, all alike.
pub fn split_page<S: AsRef<str>>(blocks: &[S], config: &SentenceConfig) -> SplitPage {
    let mut sentences = Vec::new();
    let truncated = each_sentence(blocks, config, |normalized| {
        let (md5, key) = hash(normalized);
        let units = units(normalized, config.cjk_char_units);
        sentences.push(HashedSentence { normalized: normalized.to_string(), md5, key, units });
    });
    SplitPage { sentences, truncated }
}

/// The sentences `split_page` keeps, normalized, each handed to `f` in order (in one buffer
/// that the next sentence reuses); true when the cap dropped some.
pub fn each_sentence<S: AsRef<str>>(
    blocks: &[S],
    config: &SentenceConfig,
    mut f: impl FnMut(&str),
) -> bool {
    let mut raw: Vec<&str> = Vec::new();
    for block in blocks {
        split_into(block.as_ref(), config.semicolon_split_chars, &mut raw);
    }
    let mut normalized = String::new();
    let cap = config.max_sentences_per_page as usize;
    if raw.len() <= cap {
        // Every sentence is kept (the usual page).
        for sentence in raw {
            normalize_into(sentence, config.punctuation, &mut normalized);
            if !normalized.is_empty() {
                f(&normalized);
            }
        }
        return false;
    }
    // The first `cap - cap / 2` sentences, then the last `cap / 2` of the rest. Only those are
    // normalized and hashed.
    let mut kept = 0;
    let mut next = 0;
    while next < raw.len() && kept < cap - cap / 2 {
        normalize_into(raw[next], config.punctuation, &mut normalized);
        if !normalized.is_empty() {
            f(&normalized);
            kept += 1;
        }
        next += 1;
    }
    let mut tail = Vec::new();
    let mut end = raw.len();
    while end > next && tail.len() < cap / 2 {
        end -= 1;
        let normalized = normalize(raw[end], config.punctuation);
        if !normalized.is_empty() {
            tail.push(normalized);
        }
    }
    let truncated = raw[next..end].iter().any(|r| !normalize(r, config.punctuation).is_empty());
    tail.iter().rev().for_each(|normalized| f(normalized));
    truncated
}

/// The compact form the dataflow keeps: sentences and their words.
pub fn compact(
    sentences: &[HashedSentence],
    config: &SentenceConfig,
) -> (Vec<Sentence>, Vec<crate::ingest::page::Word>) {
    let mut words: Vec<u64> = Vec::new();
    let mut all = Vec::new();
    let compact = sentences
        .iter()
        .map(|s| compact_one(s.key, s.units, &s.normalized, config, &mut words, &mut all))
        .collect();
    (compact, all)
}

/// One sentence's compact form, its words appended to `all` (`words` holds its hashes).
fn compact_one(
    key: u64,
    units: u32,
    normalized: &str,
    config: &SentenceConfig,
    words: &mut Vec<u64>,
    all: &mut Vec<crate::ingest::page::Word>,
) -> Sentence {
    words.clear();
    word_hashes(normalized, words);
    compact_words(key, units, config, words, all)
}

fn compact_words(
    key: u64,
    units: u32,
    config: &SentenceConfig,
    words: &mut Vec<u64>,
    all: &mut Vec<crate::ingest::page::Word>,
) -> Sentence {
    words.truncate(Sentence::MAX_WORDS as usize);
    all.extend(words.iter().map(|&w| (w >> 48) as crate::ingest::page::Word));
    Sentence::new(key, weight(units), units >= config.min_sentence_units, words.len() as u16)
}

/// `compact(&split_page(blocks, config).sentences, config)` and whether the cap was hit,
/// without keeping each sentence's text: what the dataflow's pages are made of.
pub fn compact_page<S: AsRef<str>>(
    blocks: &[S],
    config: &SentenceConfig,
) -> (Vec<Sentence>, Vec<crate::ingest::page::Word>, bool) {
    let mut words: Vec<u64> = Vec::new();
    let mut all = Vec::new();
    let mut compact = Vec::new();
    let truncated = each_sentence(blocks, config, |normalized| {
        let (_, key) = hash(normalized);
        words.clear();
        let units = units_and_words(normalized, config.cjk_char_units, &mut words);
        compact.push(compact_words(key, units, config, &mut words, &mut all));
    });
    (compact, all, truncated)
}

/// Appends the hashes of a normalized sentence's words: split at white space, a CJK character
/// is a word of its own.
pub fn word_hashes(text: &str, words: &mut Vec<u64>) {
    if text.is_ascii() {
        ascii_words(text, words);
        return;
    }
    word_hashes_chars(text, words);
}

/// `units` and `word_hashes` of a normalized sentence, in one pass over ASCII.
pub fn units_and_words(normalized: &str, cjk_char_units: u32, words: &mut Vec<u64>) -> u32 {
    if normalized.is_ascii() {
        return ascii_words(normalized, words);
    }
    word_hashes_chars(normalized, words);
    units(normalized, cjk_char_units)
}

/// `word_hashes` of ASCII text (its white space is what `char::is_whitespace` finds there,
/// and it has no CJK), each word's `stable_hash` folded as its bytes go by; returns the bytes
/// that are not white space (`units`).
fn ascii_words(text: &str, words: &mut Vec<u64>) -> u32 {
    let mut hasher = StableHasher::default();
    let mut word = 0u32;
    let mut units = 0u32;
    for &b in text.as_bytes() {
        if matches!(b, b'\t'..=b'\r' | b' ') {
            if word > 0 {
                words.push(hasher.finish());
                hasher = StableHasher::default();
                units += word;
                word = 0;
            }
        } else {
            hasher.write(&[b]);
            word += 1;
        }
    }
    if word > 0 {
        words.push(hasher.finish());
        units += word;
    }
    units
}

/// `word_hashes` for any text, character by character.
fn word_hashes_chars(text: &str, words: &mut Vec<u64>) {
    let mut start = None;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() || is_cjk(c) {
            if let Some(s) = start.take() {
                words.push(stable_hash(&text[s..i]));
            }
            if is_cjk(c) {
                words.push(stable_hash(&text[i..i + c.len_utf8()]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        words.push(stable_hash(&text[s..]));
    }
}

/// Hashes of the word `n`-grams of a page's normalized sentences, in order. A page with fewer
/// than `n` words has one shingle of all of them.
pub fn shingles(sentences: &[HashedSentence], n: usize) -> Vec<u64> {
    let mut words: Vec<u64> = Vec::new();
    for sentence in sentences {
        word_hashes(&sentence.normalized, &mut words);
    }
    word_shingles(&words, n)
}

/// Hashes of the `n`-grams of a word sequence (one of all of them when shorter than `n`).
pub fn word_shingles<W: Copy + Into<u64>>(words: &[W], n: usize) -> Vec<u64> {
    let n = n.max(1);
    if words.is_empty() {
        return Vec::new();
    }
    if words.len() < n {
        return vec![words.iter().fold(0u64, |acc, &w| mix64(acc ^ w.into()))];
    }
    words.windows(n).map(|w| w.iter().fold(0u64, |acc, &x| mix64(acc ^ x.into()))).collect()
}

/// The sentence operator.
pub trait SplitSentences<'scope, T: Timestamp + Lattice> {
    /// Splits each page's blocks into hashed sentences; `on_truncated` is called for each page
    /// that hit `max_sentences_per_page`.
    /// `shingling` adds the page's word shingles (MinHash, SimHash, Jaccard) or canonical terms
    /// (cosine). `on_page(elapsed, truncated, sentences)` is called for every page (for metrics).
    fn split_sentences<F>(
        self,
        config: SentenceConfig,
        shingling: Shingling,
        on_page: F,
    ) -> VecCollection<'scope, T, (PageId, Page), isize>
    where
        F: FnMut(std::time::Duration, bool, usize) + 'static;
}

/// What a page carries besides its sentences, for the methods that need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shingling {
    None,
    /// Word n-gram hashes across sentences (MinHash, SimHash, Jaccard).
    Words(usize),
    /// Distinct canonical terms (stop words out, Snowball stems; language detected per page),
    /// for the TF-IDF cosine.
    Terms,
}

/// Runs `f` with this thread's canonicalizer for `language` and the synonym file `synonyms`
/// (built once: stop words, stemmer, synonyms; an unreadable file was refused by validation).
fn with_canonicalizer<R>(
    language: crate::ingest::terms::Language,
    synonyms: &str,
    f: impl FnOnce(&crate::ingest::terms::Canonicalizer) -> R,
) -> R {
    use crate::ingest::terms::{Canonicalizer, Language};
    thread_local! {
        static CANONICALIZERS: std::cell::RefCell<std::collections::HashMap<(Language, String), Canonicalizer>> = Default::default();
    }
    CANONICALIZERS.with(|c| {
        let mut cache = c.borrow_mut();
        let canonicalizer = cache.entry((language, synonyms.to_string())).or_insert_with(|| {
            let text = if synonyms.is_empty() {
                String::new()
            } else {
                std::fs::read_to_string(synonyms).unwrap_or_default()
            };
            Canonicalizer::new(language).with_synonyms(&text)
        });
        f(canonicalizer)
    })
}

/// A page's distinct canonical terms (hashes, sorted) in `language`, with a synonym file.
pub fn terms_in(
    blocks: &[String],
    language: crate::ingest::terms::Language,
    synonyms: &str,
) -> Vec<u64> {
    let text = blocks.join("\n");
    let mut out: Vec<u64> = with_canonicalizer(language, synonyms, |c| {
        c.terms(&text).iter().map(|t| stable_hash(t)).collect()
    });
    out.sort_unstable();
    out.dedup();
    out
}

/// The kernel of the stage: a page's text blocks to its compact page (sentence keys and
/// weights, shingles of `shingle_words` words when a method needs them), and whether the
/// sentence cap was hit.
pub fn page_of(
    meta: PageMeta,
    blocks: &[String],
    config: &SentenceConfig,
    shingling: Shingling,
) -> (Page, bool) {
    page_in(meta, blocks, config, shingling, None)
}

/// `page_of` with the page's declared language (its HTML `lang`), used when
/// `config.language` is "auto".
pub fn page_in(
    meta: PageMeta,
    blocks: &[String],
    config: &SentenceConfig,
    shingling: Shingling,
    declared: Option<&str>,
) -> (Page, bool) {
    use crate::ingest::terms::Language;
    let needs_language = config.stem || shingling == Shingling::Terms;
    let language = needs_language.then(|| match config.language.as_str() {
        "auto" => declared
            .map(Language::from_code)
            .filter(|l| *l != Language::Other)
            .unwrap_or_else(|| Language::detect(&blocks.join("\n"))),
        code => Language::from_code(code),
    });
    let (sentences, words, truncated, word_shingles) =
        if !config.stem && !matches!(shingling, Shingling::Words(_)) {
            // Nothing reads the sentences' text after their hashes and words: none is kept.
            let (sentences, words, truncated) = compact_page(blocks, config);
            (sentences, words, truncated, Vec::new())
        } else {
            let mut split = split_page(blocks, config);
            if let (true, Some(language)) = (config.stem, language) {
                with_canonicalizer(language, &config.synonyms, |c| {
                    for s in &mut split.sentences {
                        let canonical = c.terms(&s.normalized).join(" ");
                        if !canonical.is_empty() {
                            (s.md5, s.key) = hash(&canonical);
                        }
                    }
                });
            }
            let (sentences, words) = compact(&split.sentences, config);
            let word_shingles = match shingling {
                Shingling::Words(n) => shingles(&split.sentences, n),
                _ => Vec::new(),
            };
            (sentences, words, split.truncated, word_shingles)
        };
    let shingles = match (shingling, language) {
        (Shingling::Words(_), _) => word_shingles,
        (Shingling::Terms, Some(language)) => terms_in(blocks, language, &config.synonyms),
        _ => Vec::new(),
    };
    (
        Page {
            id: meta.id,
            url: meta.url,
            host: meta.host,
            record_id: meta.record_id,
            sentences: sentences.into(),
            shingles,
            words: words.into(),
            main_marked: false,
        },
        truncated,
    )
}

/// `page_in` for an HTML page as `html::strip` read it: its blocks, its declared language and
/// whether its markup marked its main content.
pub fn page_of_html(
    meta: PageMeta,
    stripped: &crate::ingest::html::StrippedPage,
    config: &SentenceConfig,
    shingling: Shingling,
) -> (Page, bool) {
    let (mut page, truncated) =
        page_in(meta, &stripped.blocks, config, shingling, stripped.lang.as_deref());
    page.main_marked = stripped.main_marked;
    (page, truncated)
}

impl<'scope, T: Timestamp + Lattice> SplitSentences<'scope, T>
    for VecCollection<'scope, T, (PageMeta, Vec<String>), isize>
{
    fn split_sentences<F>(
        self,
        config: SentenceConfig,
        shingling: Shingling,
        mut on_page: F,
    ) -> VecCollection<'scope, T, (PageId, Page), isize>
    where
        F: FnMut(std::time::Duration, bool, usize) + 'static,
    {
        self.map(move |(meta, blocks)| {
            let started = std::time::Instant::now();
            let (page, truncated) = page_of(meta, &blocks, &config, shingling);
            on_page(started.elapsed(), truncated, page.sentences.len());
            (page.id, page)
        })
    }
}

#[cfg(test)]
mod tests;
