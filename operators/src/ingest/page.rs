//! The page record that flows through the dataflow, and its stable identity.
//!
//! A page is kept compact: per sentence only a 64-bit key (from the sentence's MD5), a weight
//! (its length in word-sized units) and whether it is long enough to be fingerprinted; per word a
//! 16-bit hash (word-level verification and fingerprints). The text itself is not kept, so state
//! is ~16 bytes per sentence and 2 per word.

use std::hash::Hash;
use std::io;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use super::words::{Loaded, Word, Words};
use crate::runtime::store::bytes::{put_bytes, put_u16, put_u32, put_u64, put_u8, Reader};
use crate::runtime::store::{Blob, WordStore};

/// Stable identity of a page, ordered so that the *earliest* page (by crawl date, then by a
/// hash of its URL and record id) is the smallest. Cluster ids are a member's id, the anchor
/// (smallest `anchor_key`), so they depend only on the set of pages, never on scheduling.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub struct PageId {
    /// Crawl date, seconds since the Unix epoch (0 when unknown).
    pub date: u64,
    /// Stable 64-bit hash of URL and WARC record id.
    pub hash: u64,
}

impl PageId {
    /// Builds the id from a crawl date and the page's URL and record id.
    pub fn new(date: u64, url: &str, record_id: &str) -> Self {
        let mut hasher = crate::runtime::hashing::StableHasher::default();
        hasher.write(url.as_bytes());
        hasher.write(&[0]);
        hasher.write(record_id.as_bytes());
        PageId { date, hash: hasher.finish() }
    }

    /// The order in which a group's anchor is chosen (its smallest): the id's hash first, then
    /// the date. The hash (of URL and record id) is fixed for a page and unrelated to when it
    /// was crawled, so the anchor of a group of n pages is a fixed, pseudo-random member: a page
    /// joining or leaving changes it with probability ~1/n, whatever the order pages come and
    /// go in (the earliest page, under retention, is always the next to leave).
    pub fn anchor_key(self) -> (u64, u64) {
        (self.hash, self.date)
    }

    /// The id in one word, for state that holds a page's id many times (the template stage's
    /// sentence holders: ~30 a page): date and hash mixed, so ids that share one of them still
    /// differ. Two pages meet on it with the odds of a 64-bit hash collision, as sentences do on
    /// their keys.
    pub fn compact(self) -> u64 {
        crate::runtime::hashing::mix64(self.hash ^ crate::runtime::hashing::mix64(self.date))
    }

    /// The id whose `anchor_key` this is.
    pub fn from_anchor_key((hash, date): (u64, u64)) -> Self {
        PageId { date, hash }
    }
}

/// The anchor of `ids` (its smallest `anchor_key`), `None` when empty.
pub fn anchor(ids: impl IntoIterator<Item = PageId>) -> Option<PageId> {
    ids.into_iter().min_by_key(|id| id.anchor_key())
}

impl std::fmt::Display for PageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.hash)
    }
}

/// One sentence of a page, as the dataflow keeps it: 12 bytes. Its key is read unaligned
/// (`packed(4)`) and its flag shares the word count's top bit, where a `bool` beside the
/// count padded every sentence to 16 bytes (a page's sentences are most of what it holds
/// besides its words). Its fields are read by value, or by the accessors.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(C, packed(4))]
pub struct Sentence {
    /// 64-bit key: the first 8 bytes of the MD5 of the normalized sentence.
    pub key: u64,
    /// Length in word-sized units (see `sentence::weight`); at least 1.
    pub weight: u16,
    /// `words()` in the low 15 bits, `fingerprinted()` in the top one.
    words_and_flag: u16,
}

impl Sentence {
    /// The most words a sentence keeps in its page's `words` (`sentence::compact` keeps a
    /// longer sentence's first this many).
    pub const MAX_WORDS: u16 = 0x7fff;
    const FINGERPRINTED: u16 = 0x8000;

    /// `words` is at most `MAX_WORDS`.
    pub fn new(key: u64, weight: u16, fingerprinted: bool, words: u16) -> Self {
        debug_assert!(words <= Self::MAX_WORDS, "a sentence keeps at most MAX_WORDS words");
        let flag = if fingerprinted { Self::FINGERPRINTED } else { 0 };
        Sentence { key, weight, words_and_flag: (words & Self::MAX_WORDS) | flag }
    }

    /// Long enough to take part in fingerprints (`min_sentence_units`).
    pub fn fingerprinted(&self) -> bool {
        self.words_and_flag & Self::FINGERPRINTED != 0
    }

    /// Its words in the page's `words` (the next `words()` of them after the earlier
    /// sentences').
    pub fn words(&self) -> u16 {
        self.words_and_flag & Self::MAX_WORDS
    }

    /// The same sentence with `words` words.
    pub fn with_words(self, words: u16) -> Self {
        Sentence::new(self.key, self.weight, self.fingerprinted(), words)
    }
}

impl std::fmt::Debug for Sentence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (key, weight) = (self.key, self.weight);
        f.debug_struct("Sentence")
            .field("key", &key)
            .field("weight", &weight)
            .field("fingerprinted", &self.fingerprinted())
            .field("words", &self.words())
            .finish()
    }
}

/// A page after ingest: identity, provenance and its ordered sentences.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Page {
    pub id: PageId,
    /// Shared, as `sentences` is: the held copy, the output's rows and the live view point to
    /// one allocation.
    pub url: Arc<str>,
    /// Stable hash of the lowercased host name (template statistics are per host).
    pub host: u64,
    pub record_id: Arc<str>,
    /// Shared, not copied: the source's held copy, the dataflow's input and the arrangements
    /// that hold the page point to one allocation (a clone is a reference count).
    pub sentences: Arc<[Sentence]>,
    /// Hashes of word n-gram shingles, in order (only for the MinHash and SimHash methods).
    #[serde(default)]
    pub shingles: Vec<u64>,
    /// Hashes of the normalized words of all sentences, in order (see `Sentence::words`): in
    /// the run's word store when it has one (`runtime::store`), else shared as `sentences` is.
    #[serde(default)]
    pub words: Words,
    /// Its markup marked its main content (`html::StrippedPage::main_marked`): its sentences
    /// are that content, with no menu or footer at their edges, so the template at its edges is
    /// the text's own boilerplate (`template::apply`).
    #[serde(default)]
    pub main_marked: bool,
}

/// What a `Run` of it compares, hashes and serializes as.
pub trait RunItem: Copy {
    type Compared: Copy
        + Ord
        + std::hash::Hash
        + std::fmt::Debug
        + Serialize
        + for<'de> Deserialize<'de>;
    fn compared(&self) -> Self::Compared;
    fn from_compared(compared: Self::Compared) -> Self;
    /// Hashes a run as the slice of its items' `compared` values hashes.
    fn hash_run<H: std::hash::Hasher>(items: &[Self], state: &mut H) {
        state.write_usize(items.len());
        for item in items {
            item.compared().hash(state);
        }
    }
    /// Compares two runs as the slices of their `compared` values compare.
    fn cmp_run(a: &[Self], b: &[Self]) -> std::cmp::Ordering {
        a.iter().map(Self::compared).cmp(b.iter().map(Self::compared))
    }
    fn eq_run(a: &[Self], b: &[Self]) -> bool {
        a.len() == b.len() && Self::cmp_run(a, b).is_eq()
    }
}

/// A sentence as the comparisons read it, (key, weight).
impl RunItem for (u64, u16) {
    type Compared = (u64, u16);
    fn compared(&self) -> (u64, u16) {
        *self
    }
    fn from_compared(pair: (u64, u16)) -> (u64, u16) {
        pair
    }
}

/// What the sentence kernels read a sentence as: its (key, weight), from a `Sentence` or a
/// pair.
pub trait KeyWeight: RunItem<Compared = (u64, u16)> {}

impl<T: RunItem<Compared = (u64, u16)>> KeyWeight for T {}

/// A content's sentence is its key and weight: its flags and word count are the page's.
impl RunItem for Sentence {
    type Compared = (u64, u16);
    fn compared(&self) -> (u64, u16) {
        (self.key, self.weight)
    }
    fn from_compared((key, weight): (u64, u16)) -> Sentence {
        Sentence::new(key, weight, false, 0)
    }
}

/// A run of a page's sentences (`Page::sentences`), shared with the page, or of their own.
///
/// A filtered content whose kept sentences are one run of its page's sentences (most pages:
/// the template removed is at its edges) points into the page's sentences instead of copying
/// them (12 bytes a sentence); its words do the same (`Words`). It reads as the slice it
/// covers; it compares, hashes and serializes as that slice's `RunItem::compared` (as a `Vec`
/// of them did).
#[derive(Clone)]
pub struct Run<T> {
    all: Arc<[T]>,
    start: u32,
    end: u32,
}

/// A run of a page's sentences.
pub type Sentences = Run<Sentence>;

impl<T> Default for Run<T> {
    fn default() -> Self {
        Run { all: Arc::default(), start: 0, end: 0 }
    }
}

impl<T> Run<T> {
    /// `range` of `all`, sharing it (clamped to its length).
    pub fn shared(all: &Arc<[T]>, range: std::ops::Range<usize>) -> Self {
        let end = range.end.min(all.len());
        let start = range.start.min(end);
        Run { all: all.clone(), start: start as u32, end: end as u32 }
    }

    /// Whether this run points into `all` (shared, not copied).
    pub fn is_shared_with(&self, all: &Arc<[T]>) -> bool {
        Arc::ptr_eq(&self.all, all)
    }

    /// `range` of this run (relative to it, clamped), sharing its allocation.
    pub fn sub(&self, range: std::ops::Range<usize>) -> Self {
        let end = (self.start as usize + range.end).min(self.end as usize);
        let start = (self.start as usize + range.start).min(end);
        Run { all: self.all.clone(), start: start as u32, end: end as u32 }
    }
}

impl<T> std::ops::Deref for Run<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.all[self.start as usize..self.end as usize]
    }
}

impl<'a, T> IntoIterator for &'a Run<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> From<Vec<T>> for Run<T> {
    fn from(items: Vec<T>) -> Self {
        let end = items.len() as u32;
        Run { all: items.into(), start: 0, end }
    }
}

/// Sentences of their own, from (key, weight) pairs.
impl FromIterator<(u64, u16)> for Sentences {
    fn from_iter<I: IntoIterator<Item = (u64, u16)>>(pairs: I) -> Self {
        Run::from(pairs.into_iter().map(Sentence::from_compared).collect::<Vec<_>>())
    }
}

impl<T: RunItem> Run<T> {
    /// What the run compares as, item by item.
    pub fn compared(
        &self,
    ) -> impl DoubleEndedIterator<Item = T::Compared> + ExactSizeIterator + '_ {
        self.iter().map(RunItem::compared)
    }
}

impl<T: RunItem> PartialEq for Run<T> {
    fn eq(&self, other: &Self) -> bool {
        T::eq_run(self, other)
    }
}

impl<T: RunItem> Eq for Run<T> {}

impl<T: RunItem> PartialOrd for Run<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: RunItem> Ord for Run<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        T::cmp_run(self, other)
    }
}

impl<T: RunItem> std::hash::Hash for Run<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        T::hash_run(self, state)
    }
}

impl<T: RunItem> std::fmt::Debug for Run<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.compared()).finish()
    }
}

/// Serialized item by item, whole: a content that crosses to another process (timely's
/// exchange, in cluster mode) keeps what its sentences carry besides what they compare as (a
/// sentence's `fingerprinted` flag, which picks its fingerprints, and its word count). As its
/// (key, weight) pairs only, every sentence came back unfingerprinted, and a page verified in
/// another process was given other fingerprints there.
impl<T: Serialize> Serialize for Run<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Run<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Run<T>, D::Error> {
        Vec::<T>::deserialize(deserializer).map(Run::from)
    }
}

/// What verification compares: a page's own sentences in document order, with the template
/// sentences among them (`template::apply`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Content {
    /// The kept sentences, in order: shared with the page when they are one run of its.
    pub sentences: Sentences,
    /// Distinct shingle hashes, sorted (when verification is by Jaccard), or distinct canonical
    /// term hashes (by cosine).
    pub shingles: Vec<u64>,
    /// For cosine: each term's IDF weight in 1/64ths, parallel to `shingles` (set by the
    /// dataflow from the document frequencies it maintains; empty otherwise).
    pub term_weights: Vec<u32>,
    /// The words of `sentences`, in order (hashes): word-level verification and fingerprints,
    /// where sentences are too coarse. Shared with the page when `sentences` are one run of its.
    pub words: Words,
    /// Each sentence's number of `words`, parallel to `sentences` (empty without words).
    pub word_counts: Vec<u16>,
    /// The distinct keys of `sentences` that are its host's template, sorted: boilerplate kept
    /// inside the page's own text (`template::apply`). The sibling rule counts them as blocks
    /// repeated for both pages of a pair.
    pub template_keys: Vec<u64>,
    /// Template-dominated (a stub, a redirect notice; `template::apply`): `sentences` are all
    /// its sentences after its leading template, and all of them count as its own.
    pub dominated: bool,
}

impl Content {
    /// The bytes of its vectors beyond the struct, by their lengths (a function of the content,
    /// so a change and its retraction count the same): its sentences and words not among
    /// them, which are the page's (`runtime::footprint`).
    pub fn vector_bytes(&self) -> usize {
        use crate::runtime::footprint::array;
        array::<u64>(self.shingles.len())
            + array::<u32>(self.term_weights.len())
            + array::<u16>(self.word_counts.len())
            + array::<u64>(self.template_keys.len())
    }

    /// The distinct keys its sentence fingerprints are made of, sorted: its own sentences'
    /// (not the template kept inside its text, which would put every page of a generator in
    /// one group; all of a template-dominated page's), of those long enough to take part
    /// (`Sentence::fingerprinted`), or of all of them when none is. A function of the content
    /// alone, so a page's fingerprints are computed again from it when it leaves.
    pub fn fingerprint_keys(&self) -> Vec<u64> {
        let own = || self.sentences.iter().filter(|s| self.is_own(s.key));
        let mut keys: Vec<u64> = own().filter(|s| s.fingerprinted()).map(|s| s.key).collect();
        if keys.is_empty() {
            keys = own().map(|s| s.key).collect();
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Whether sentence `key` is the page's own: not its host's template (`template_keys`), or
    /// any sentence of a template-dominated page.
    pub fn is_own(&self, key: u64) -> bool {
        self.dominated || self.template_keys.binary_search(&key).is_err()
    }

    /// Total weight: the page's length for the resemblance formula.
    pub fn weight(&self) -> u64 {
        self.sentences.iter().map(|s| s.weight as u64).sum()
    }
}

fn put_sentences(out: &mut Vec<u8>, sentences: &[Sentence]) {
    put_u32(out, sentences.len() as u32);
    for s in sentences {
        put_u64(out, s.key);
        put_u16(out, s.weight);
        put_u16(out, s.words_and_flag);
    }
}

fn read_sentences(input: &mut Reader) -> io::Result<Vec<Sentence>> {
    input.list(|r| Ok(Sentence { key: r.u64()?, weight: r.u16()?, words_and_flag: r.u16()? }))
}

fn read_text(input: &mut Reader) -> io::Result<Arc<str>> {
    let text = std::str::from_utf8(input.bytes()?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "stored text is not UTF-8"))?;
    Ok(if text.is_empty() { no_text() } else { Arc::from(text) })
}

/// A page as the page store keeps it: every field, its words by their place in the word store
/// when they are stored there (`Words::encode`).
impl Blob for Page {
    const KIND: &'static str = "pages";
    const COMPRESS: bool = false;

    fn encode(&self, out: &mut Vec<u8>, words: Option<&Arc<WordStore>>) {
        for n in [self.id.date, self.id.hash, self.host] {
            put_u64(out, n);
        }
        put_bytes(out, self.url.as_bytes());
        put_bytes(out, self.record_id.as_bytes());
        put_sentences(out, &self.sentences);
        put_u32(out, self.shingles.len() as u32);
        self.shingles.iter().for_each(|&s| put_u64(out, s));
        self.words.encode(out, words);
        put_u8(out, self.main_marked as u8);
    }

    fn decode(bytes: &[u8], words: Option<&Arc<WordStore>>) -> io::Result<Arc<Page>> {
        let input = &mut Reader(bytes);
        let id = PageId { date: input.u64()?, hash: input.u64()? };
        let host = input.u64()?;
        let (url, record_id) = (read_text(input)?, read_text(input)?);
        let sentences = read_sentences(input)?.into();
        let shingles = input.list(|r| r.u64())?;
        let words = Words::decode(input, words)?;
        let main_marked = input.u8()? != 0;
        Ok(Arc::new(Page { id, url, host, record_id, sentences, shingles, words, main_marked }))
    }

    fn resident_bytes(&self) -> usize {
        std::mem::size_of::<Page>()
            + std::mem::size_of_val(&*self.sentences)
            + self.shingles.capacity() * 8
            + self.url.len()
            + self.record_id.len()
    }
}

/// A content as the content store keeps it (its sentences its own when read back).
impl Blob for Content {
    const KIND: &'static str = "contents";
    const COMPRESS: bool = false;

    fn encode(&self, out: &mut Vec<u8>, words: Option<&Arc<WordStore>>) {
        put_sentences(out, &self.sentences);
        put_u32(out, self.shingles.len() as u32);
        self.shingles.iter().for_each(|&s| put_u64(out, s));
        put_u32(out, self.term_weights.len() as u32);
        self.term_weights.iter().for_each(|&w| put_u32(out, w));
        self.words.encode(out, words);
        put_u32(out, self.word_counts.len() as u32);
        self.word_counts.iter().for_each(|&n| put_u16(out, n));
        put_u32(out, self.template_keys.len() as u32);
        self.template_keys.iter().for_each(|&k| put_u64(out, k));
        put_u8(out, self.dominated as u8);
    }

    fn decode(bytes: &[u8], words: Option<&Arc<WordStore>>) -> io::Result<Arc<Content>> {
        let input = &mut Reader(bytes);
        Ok(Arc::new(Content {
            sentences: read_sentences(input)?.into(),
            shingles: input.list(|r| r.u64())?,
            term_weights: input.list(|r| r.u32())?,
            words: Words::decode(input, words)?,
            word_counts: input.list(|r| r.u16())?,
            template_keys: input.list(|r| r.u64())?,
            dominated: input.u8()? != 0,
        }))
    }

    fn resident_bytes(&self) -> usize {
        std::mem::size_of::<Content>()
            + self.vector_bytes()
            + std::mem::size_of_val(&*self.sentences)
            + self.words.own_bytes()
    }
}

/// The empty URL or record id, one allocation for all: what a copy of a page that needs
/// neither (the template filtering's) holds.
pub fn no_text() -> Arc<str> {
    static EMPTY: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from(""));
    EMPTY.clone()
}

/// Where a page comes from: what the output names it by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PageMeta {
    pub id: PageId,
    pub url: Arc<str>,
    /// Stable hash of the host name.
    pub host: u64,
    pub record_id: Arc<str>,
}

#[cfg(test)]
impl Page {
    /// A page of host 1 made of sentences with `keys` (unit tests of the stages).
    pub(crate) fn of_keys(keys: &[u64], sentence: impl Fn(u64) -> Sentence) -> Page {
        Page {
            id: PageId::default(),
            url: "".into(),
            host: 1,
            record_id: "".into(),
            sentences: keys.iter().map(|&key| sentence(key)).collect(),
            shingles: Vec::new(),
            words: Default::default(),
            main_marked: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::store::Store;

    #[test]
    fn a_page_is_144_bytes() {
        assert_eq!(std::mem::size_of::<Page>(), 144);
    }

    /// A page and a content read back from their stores are what was written, with words in
    /// memory (written whole) and in a word store (written as their place).
    #[test]
    fn pages_and_contents_come_back_from_their_stores() {
        let dir = std::env::temp_dir();
        let words = Arc::new(WordStore::create(&dir, 0, None).unwrap());
        let pages = Store::<Page>::create(&dir, 0, Some(words.clone())).unwrap();
        let contents = Store::<Content>::create(&dir, 0, Some(words.clone())).unwrap();
        // Words 3..9 of 0..40, stored in `store`.
        let stored_in = |store: &Arc<WordStore>| {
            let place = store.put((0..40).collect::<Vec<Word>>().into(), false).unwrap();
            let mut out = vec![1];
            let (at, compressed, raw) = place.to_parts();
            out.extend(at.to_le_bytes());
            out.extend(compressed.to_le_bytes());
            out.extend(raw.to_le_bytes());
            out.extend(3u32.to_le_bytes());
            out.extend(9u32.to_le_bytes());
            out.extend(super::super::words::digest(&(3..9).collect::<Vec<Word>>()).to_le_bytes());
            let words = Words::decode(&mut Reader(&out), Some(store)).unwrap();
            assert!(words.is_stored());
            assert_eq!(words.to_vec(), (3..9).collect::<Vec<Word>>());
            words
        };
        let from_store = stored_in(&words);
        // Words of another store (another run's) are written whole, not by a place the
        // blob's store would read in its own word store.
        let other = Arc::new(WordStore::create(&dir, 0, None).unwrap());
        other.put(vec![1; 300].into(), false).unwrap();
        let from_other = stored_in(&other);
        for words in [Words::new(vec![5, 6, 7]), from_store, from_other] {
            let page = Page {
                id: PageId { date: 7, hash: 9 },
                url: "https://example.org/ü".into(),
                host: 3,
                record_id: "<urn:uuid:1>".into(),
                sentences: vec![Sentence::new(u64::MAX, 4, true, 3), Sentence::new(2, 1, false, 0)]
                    .into(),
                shingles: vec![1, u64::MAX],
                words: words.clone(),
                main_marked: true,
            };
            let place = pages.put(Arc::new(page.clone()), false).unwrap();
            let back = pages.get(place);
            assert_eq!(*back, page);
            assert_eq!(back.words.to_vec(), words.to_vec());
            let content = Content {
                sentences: Run::shared(&page.sentences, 1..2),
                shingles: vec![4],
                term_weights: vec![64],
                words: words.sub(1..3),
                word_counts: vec![2],
                template_keys: vec![2],
                dominated: true,
            };
            let place = contents.put(Arc::new(content.clone()), false).unwrap();
            let back = contents.get(place);
            assert_eq!(*back, content);
            assert_eq!(back.words.to_vec(), content.words.to_vec());
        }
        assert_eq!(pages.stats().hits, 0, "every read from the file");
    }

    #[test]
    fn a_sentence_is_twelve_bytes_and_keeps_its_flag_and_word_count_apart() {
        assert_eq!(std::mem::size_of::<Sentence>(), 12);
        for (fingerprinted, words) in [
            (false, 0),
            (true, 0),
            (false, 1),
            (true, 1),
            (false, Sentence::MAX_WORDS),
            (true, Sentence::MAX_WORDS),
            (true, 300),
        ] {
            let s = Sentence::new(u64::MAX - 5, 65_535, fingerprinted, words);
            let (key, weight) = (s.key, s.weight);
            assert_eq!(
                (key, weight, s.fingerprinted(), s.words()),
                (u64::MAX - 5, 65_535, fingerprinted, words)
            );
            let other = s.with_words(7);
            assert_eq!(
                (other.fingerprinted(), other.words()),
                (fingerprinted, 7),
                "the flag stays"
            );
        }
        // Sentences differ by their flag and by their word count.
        assert_ne!(Sentence::new(1, 2, true, 3), Sentence::new(1, 2, false, 3));
        assert_ne!(Sentence::new(1, 2, true, 3), Sentence::new(1, 2, true, 4));
    }

    #[test]
    fn shared_sentences_compare_and_hash_as_their_keys_and_weights() {
        use std::hash::{BuildHasher, RandomState};
        let sentence = |key, weight, words| Sentence::new(key, weight, key % 2 == 0, words);
        let all: Arc<[Sentence]> =
            vec![sentence(1, 3, 4), sentence(2, 1, 1), sentence(3, 5, 9)].into();
        let run = Sentences::shared(&all, 1..3);
        assert!(run.is_shared_with(&all));
        assert_eq!(
            run.iter().map(|s| s.words()).collect::<Vec<_>>(),
            [1, 9],
            "read as the page's sentences"
        );
        // Compared as (key, weight) pairs: a page's flags and word counts are not the content.
        let pairs: Sentences = [(2, 1), (3, 5)].into_iter().collect();
        assert!(!pairs.is_shared_with(&all));
        assert_eq!(run, pairs);
        assert_eq!(run.cmp(&[(2, 1), (3, 6)].into_iter().collect()), std::cmp::Ordering::Less);
        assert_eq!(run.cmp(&[(2, 1)].into_iter().collect()), std::cmp::Ordering::Greater);
        assert_ne!(run, [(2, 1), (4, 5)].into_iter().collect());
        // And hashed as the `Vec<(u64, u16)>` a content held before.
        let hasher = RandomState::new();
        assert_eq!(hasher.hash_one(&run), hasher.hash_one(vec![(2u64, 1u16), (3, 5)]));
        assert_eq!(format!("{run:?}"), "[(2, 1), (3, 5)]");
        assert_eq!(run.compared().rev().collect::<Vec<_>>(), [(3, 5), (2, 1)]);
        assert_eq!(run.sub(1..2).compared().collect::<Vec<_>>(), [(3, 5)]);
    }

    #[test]
    fn a_content_crossing_processes_keeps_its_sentences_whole() {
        // Timely's exchange serializes with bincode between processes.
        let sentence =
            |key, weight, fingerprinted, words| Sentence::new(key, weight, fingerprinted, words);
        let all: Arc<[Sentence]> =
            vec![sentence(1, 3, false, 4), sentence(2, 9, true, 7), sentence(3, 5, false, 2)]
                .into();
        let content = Content {
            sentences: Sentences::shared(&all, 0..3),
            words: Words::from(vec![5, 6, 7]),
            word_counts: vec![1, 1, 1],
            template_keys: vec![3],
            ..Default::default()
        };
        let back: Content = bincode::deserialize(&bincode::serialize(&content).unwrap()).unwrap();
        assert_eq!(back.sentences.iter().copied().collect::<Vec<_>>(), &all[..]);
        assert_eq!(back.fingerprint_keys(), [2], "only the fingerprinted sentence");
        assert_eq!(back, content);
        assert_eq!(back.words.to_vec(), [5, 6, 7]);
    }
}
