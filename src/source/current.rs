//! The pages a worker currently holds, one per URL: what turns a stream of captures, deletions
//! and a retention window into insertions and retractions for the dataflow.
//!
//! Records are routed to workers by URL, so every capture of a URL meets the same
//! `CurrentPages`. A newer capture (by WARC-Date, then record id) replaces the held one: the old
//! document is retracted and the new one inserted, so its cluster can split. An older capture
//! arriving late changes nothing (replaying archives out of order gives the same pages); of two
//! captures in the same second, the later arrival wins.
//! A deletion leaves a tombstone: the URL's key and the crawl date the deletion stands for (the
//! newest date of the feed when it was read, or of the deleted capture if newer). A capture
//! dated at or before it is a stale copy and changes nothing; a newer one is a re-crawl and
//! brings the URL back. Tombstones leave with the retention window (a capture they would stop
//! is out of the window anyway) and are saved in checkpoints.
//! To retract a page the dataflow needs it again, so the compact page is kept (sentence keys
//! and weights, shingles when a method needs them, URL, ids: no text); this is also what a
//! checkpoint saves (LZ4-framed). With a page store (`run.pages = "disk"`) the compact page is
//! written there and memory holds what a capture is checked against (`Held`), 64 bytes; the
//! page is read back when it leaves or is saved.

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Read, Write};
use std::sync::Arc;

use dupflow_operators::ingest::sentence::stable_hash;
use dupflow_operators::runtime::store::{Kept, Store};
use dupflow_operators::{Page, PageId, Sentence};
use serde::{Deserialize, Serialize};

use super::urls::UrlIdentity;

/// What a re-crawl of a URL does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Recrawls {
    /// The newest capture of a URL replaces the others (a live crawl's view).
    #[default]
    Replace,
    /// Every capture is a page of its own (an archive's view: captures of one URL cluster).
    Keep,
}

/// A change for the dataflow's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Insert(Page),
    Remove(Page),
}

/// Why a capture changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// A newer (or the same) capture of the URL is held.
    Superseded,
    /// Older than the retention window.
    Expired,
    /// Dated at or before a deletion of its URL.
    Deleted,
}

/// The key of a URL (routing and state).
pub fn url_key(url: &str) -> u64 {
    stable_hash(url)
}

/// A held page: what a capture of its URL is checked against, and the page itself, in memory
/// or in the run's page store (`runtime::store::Kept`).
struct Held {
    id: PageId,
    /// The identity key of its URL (`UrlIdentity::key`).
    url: u64,
    /// Stable hashes of its URL and record id: an alias has another URL, a record read again
    /// the same record id.
    url_hash: u64,
    record_hash: u64,
    page: Kept<Page>,
}

impl Held {
    fn new(page: Page, identity: &UrlIdentity, store: Option<&Arc<Store<Page>>>) -> Held {
        Held {
            id: page.id,
            url: identity.key(&page.url),
            url_hash: stable_hash(&page.url),
            record_hash: stable_hash(&page.record_id),
            page: Kept::keep_in(Arc::new(page), store, false),
        }
    }

    fn page(&self) -> Arc<Page> {
        self.page.get()
    }
}

/// One worker's pages.
pub struct CurrentPages {
    mode: Recrawls,
    /// Which URLs name one page (`[urls]`): a URL's key is its identity's.
    identity: UrlIdentity,
    /// Captures that replaced, or were superseded by, a held page of another URL of the same
    /// identity (an alias: `https` for `http`, a tracking parameter, …).
    aliases: u64,
    /// Page key (the URL's key, or in `Keep` mode the page id's hash) → held page, boxed: a
    /// slot of the table is 16 bytes, not the 64 of a `Held` inline, so the table's empty
    /// slots (a hash table is 44–88% full) and the old table held while it grows cost little.
    pages: HashMap<u64, Box<Held>>,
    /// URL key → page keys (all captures of the URL), in `Keep` mode only (in `Replace` mode a
    /// URL's page key is its own key), made at the first deletion and kept from then on: a
    /// crawl that deletes nothing holds no such map (~60 bytes a page with its vector).
    by_url: Option<HashMap<u64, Vec<u64>>>,
    /// (crawl date, page key): the retention order, made at the first expiry (retention on)
    /// and kept from then on: without retention there is none (~30 bytes a page).
    by_date: Option<BTreeSet<(u64, u64)>>,
    /// URL key → the crawl date a deletion stands for.
    tombstones: HashMap<u64, u64>,
    /// (date, URL key) of the tombstones: the retention order.
    tombstones_by_date: BTreeSet<(u64, u64)>,
    bytes: usize,
    /// Where the held pages are kept (the run's page store, if any).
    store: Option<Arc<Store<Page>>>,
}

impl CurrentPages {
    /// Pages held in memory.
    pub fn new(mode: Recrawls, identity: UrlIdentity) -> Self {
        Self::with_store(mode, identity, None)
    }

    /// Pages held in `store` (in memory without one).
    pub fn with_store(
        mode: Recrawls,
        identity: UrlIdentity,
        store: Option<Arc<Store<Page>>>,
    ) -> Self {
        CurrentPages {
            store,
            mode,
            identity,
            aliases: 0,
            pages: HashMap::new(),
            by_url: None,
            by_date: None,
            tombstones: HashMap::new(),
            tombstones_by_date: BTreeSet::new(),
            bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// How URLs are keyed.
    pub fn identity(&self) -> &UrlIdentity {
        &self.identity
    }

    /// Captures of an alias of a held page's URL so far (`identity`).
    pub fn aliases(&self) -> u64 {
        self.aliases
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Bytes held (sentences, shingles, URLs, ids, tombstones): the `held:` line of the summary.
    pub fn bytes(&self) -> usize {
        self.bytes + self.tombstones.len() * Self::TOMBSTONE_COST
    }

    /// Tombstones held.
    pub fn tombstones(&self) -> usize {
        self.tombstones.len()
    }

    /// A tombstone's bytes: its map entry and its retention-order entry, with their overhead.
    const TOMBSTONE_COST: usize = 48;

    fn bury(&mut self, url: u64, date: u64) {
        let old = self.tombstones.get(&url).copied();
        if old.is_some_and(|d| d >= date) {
            return;
        }
        if let Some(d) = old {
            self.tombstones_by_date.remove(&(d, url));
        }
        self.tombstones.insert(url, date);
        self.tombstones_by_date.insert((date, url));
    }

    fn unbury(&mut self, url: u64) {
        if let Some(d) = self.tombstones.remove(&url) {
            self.tombstones_by_date.remove(&(d, url));
        }
    }

    /// The held page's bytes: its entry (with its box), and a page in memory whole (its
    /// sentences and words are shared with the dataflow's copies, reference counted, so they
    /// are counted once, here); a page in the page store, or words in the word store, not at
    /// all.
    fn cost(page: &Page, stored: bool) -> usize {
        let entry = std::mem::size_of::<Held>() + 16 + 16;
        if stored {
            return entry;
        }
        let words = if page.words.is_stored() { 0 } else { page.words.len() };
        entry
            + page.sentences.len() * std::mem::size_of::<Sentence>()
            + words * std::mem::size_of::<dupflow_operators::ingest::page::Word>()
            + page.shingles.len() * 8
            + page.url.len()
            + page.record_id.len()
            + std::mem::size_of::<Page>()
            + 16
    }

    fn page_key(&self, page: &Page) -> u64 {
        match self.mode {
            Recrawls::Replace => self.identity.key(&page.url),
            Recrawls::Keep => page.id.hash ^ self.identity.key(&page.url).rotate_left(17),
        }
    }

    /// The URL index (`Keep` mode), made from the held pages the first time it is needed.
    fn by_url(&mut self) -> &HashMap<u64, Vec<u64>> {
        let pages = &self.pages;
        self.by_url.get_or_insert_with(|| {
            let mut by_url: HashMap<u64, Vec<u64>> = HashMap::new();
            for (&key, held) in pages {
                by_url.entry(held.url).or_default().push(key);
            }
            // The table's order is the process's own: each URL's keys sorted instead.
            by_url.values_mut().for_each(|keys| keys.sort_unstable());
            by_url
        })
    }

    /// The retention order, made from the held pages the first time it is needed.
    fn by_date(&mut self) -> &BTreeSet<(u64, u64)> {
        let pages = &self.pages;
        self.by_date
            .get_or_insert_with(|| pages.iter().map(|(&key, held)| (held.id.date, key)).collect())
    }

    fn take(&mut self, key: u64) -> Option<Change> {
        let held = *self.pages.remove(&key)?;
        let page = Arc::unwrap_or_clone(held.page());
        self.bytes -= Self::cost(&page, held.page.is_stored());
        if let Some(by_date) = self.by_date.as_mut() {
            by_date.remove(&(page.id.date, key));
        }
        if let Some(by_url) = self.by_url.as_mut() {
            let url = self.identity.key(&page.url);
            if let Some(keys) = by_url.get_mut(&url) {
                keys.retain(|k| *k != key);
                if keys.is_empty() {
                    by_url.remove(&url);
                }
            }
        }
        Some(Change::Remove(page))
    }

    fn put(&mut self, key: u64, page: Page) {
        // Counted from the page in hand: a stored page is not read back for it.
        self.bytes += Self::cost(&page, self.store.is_some());
        let held = Held::new(page, &self.identity, self.store.as_ref());
        if let Some(by_date) = self.by_date.as_mut() {
            by_date.insert((held.id.date, key));
        }
        if let Some(by_url) = self.by_url.as_mut() {
            by_url.entry(held.url).or_default().push(key);
        }
        self.pages.insert(key, Box::new(held));
    }

    /// A capture: inserts it (retracting what it replaces), or says why it changed nothing.
    /// `expire_before`: captures older than this crawl date are out of the retention window.
    pub fn capture(&mut self, page: Page, expire_before: u64) -> Result<Vec<Change>, Ignored> {
        if page.id.date < expire_before {
            return Err(Ignored::Expired);
        }
        let url = self.identity.key(&page.url);
        match self.tombstones.get(&url) {
            Some(&deleted) if page.id.date <= deleted => return Err(Ignored::Deleted),
            Some(_) => self.unbury(url),
            None => {}
        }
        let key = self.page_key(&page);
        let mut changes = Vec::with_capacity(2);
        if let Some(held) = self.pages.get(&key) {
            if held.url_hash != stable_hash(&page.url) {
                self.aliases += 1;
            }
            // Same crawl second: the later arrival wins (WARC-Date has second precision). The
            // same record read again changes nothing.
            if held.id.date > page.id.date || held.record_hash == stable_hash(&page.record_id) {
                return Err(Ignored::Superseded);
            }
            changes.extend(self.take(key));
        }
        self.put(key, page.clone());
        changes.push(Change::Insert(page));
        Ok(changes)
    }

    /// Retracts every held capture of `url`, and leaves a tombstone at `as_of` (the feed's
    /// newest crawl date when the deletion was read) or the newest deleted capture's date.
    pub fn delete(&mut self, url: &str, as_of: u64) -> Vec<Change> {
        let url = self.identity.key(url);
        let keys = match self.mode {
            // The URL's page key is its own key (`take` passes over it if it is not held).
            Recrawls::Replace => vec![url],
            Recrawls::Keep => self.by_url().get(&url).cloned().unwrap_or_default(),
        };
        let changes: Vec<Change> = keys.into_iter().filter_map(|k| self.take(k)).collect();
        let newest = changes
            .iter()
            .map(|c| if let Change::Remove(p) = c { p.id.date } else { 0 })
            .max()
            .unwrap_or(0);
        self.bury(url, as_of.max(newest));
        changes
    }

    /// Retracts the pages crawled before `date`, and forgets the tombstones before it.
    pub fn expire(&mut self, date: u64) -> Vec<Change> {
        let buried: Vec<u64> =
            self.tombstones_by_date.range(..(date, 0)).map(|&(_, u)| u).collect();
        for url in buried {
            self.unbury(url);
        }
        let old: Vec<u64> = self.by_date().range(..(date, 0)).map(|&(_, k)| k).collect();
        old.into_iter().filter_map(|k| self.take(k)).collect()
    }

    /// Restores a tombstone read from a checkpoint.
    pub fn restore_tombstone(&mut self, url: u64, date: u64) {
        self.bury(url, date);
    }

    /// The held pages, by page id.
    pub fn into_pages(self) -> Vec<Page> {
        let mut pages: Vec<Page> =
            self.pages.into_values().map(|held| Arc::unwrap_or_clone(held.page())).collect();
        pages.sort_by_key(|p| p.id);
        pages
    }

    /// The held pages, for a checkpoint: a length-prefixed binary list.
    pub fn save(&self, out: &mut impl Write) -> io::Result<()> {
        let mut keys: Vec<&u64> = self.pages.keys().collect();
        keys.sort();
        out.write_all(&(keys.len() as u64).to_le_bytes())?;
        for key in keys {
            let page = self.pages[key].page();
            for n in [page.id.date, page.id.hash, page.host] {
                out.write_all(&n.to_le_bytes())?;
            }
            for field in [page.url.as_bytes(), page.record_id.as_bytes()] {
                out.write_all(&(field.len() as u32).to_le_bytes())?;
                out.write_all(field)?;
            }
            out.write_all(&(page.sentences.len() as u32).to_le_bytes())?;
            for s in page.sentences.iter() {
                out.write_all(&s.key.to_le_bytes())?;
                out.write_all(&s.weight.to_le_bytes())?;
                out.write_all(&[s.fingerprinted() as u8])?;
                out.write_all(&s.words().to_le_bytes())?;
            }
            out.write_all(&(page.shingles.len() as u32).to_le_bytes())?;
            for s in &page.shingles {
                out.write_all(&s.to_le_bytes())?;
            }
            out.write_all(&(page.words.len() as u32).to_le_bytes())?;
            for w in page.words.load().iter() {
                out.write_all(&w.to_le_bytes())?;
            }
            out.write_all(&[page.main_marked as u8])?;
        }
        // Then the tombstones: a count and (URL key, date) pairs.
        out.write_all(&(self.tombstones_by_date.len() as u64).to_le_bytes())?;
        for &(date, url) in &self.tombstones_by_date {
            out.write_all(&url.to_le_bytes())?;
            out.write_all(&date.to_le_bytes())?;
        }
        Ok(())
    }

    /// Reads what `save` wrote, calling `each` with every page and `buried` with every
    /// tombstone (URL key, date).
    pub fn load(
        input: &mut impl Read,
        mut each: impl FnMut(Page),
        mut buried: impl FnMut(u64, u64),
    ) -> io::Result<()> {
        fn array<const N: usize>(input: &mut impl Read) -> io::Result<[u8; N]> {
            let mut b = [0u8; N];
            input.read_exact(&mut b)?;
            Ok(b)
        }
        let u64_of = |input: &mut dyn Read| -> io::Result<u64> {
            let mut b = [0u8; 8];
            input.read_exact(&mut b)?;
            Ok(u64::from_le_bytes(b))
        };
        let bad =
            |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("checkpoint: {what}"));
        let count = u64_of(input)?;
        for _ in 0..count {
            let (date, hash, host) = (u64_of(input)?, u64_of(input)?, u64_of(input)?);
            let mut text = || -> io::Result<String> {
                let n = u32::from_le_bytes(array::<4>(input)?) as usize;
                let mut v = vec![0u8; n.min(1 << 20)];
                input.read_exact(&mut v)?;
                String::from_utf8(v).map_err(|_| bad("text is not UTF-8"))
            };
            let (url, record_id) = (text()?, text()?);
            let n = u32::from_le_bytes(array::<4>(input)?) as usize;
            let mut sentences = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                let key = u64::from_le_bytes(array::<8>(input)?);
                let weight = u16::from_le_bytes(array::<2>(input)?);
                let fingerprinted = array::<1>(input)?[0] != 0;
                let words = u16::from_le_bytes(array::<2>(input)?);
                if words > Sentence::MAX_WORDS {
                    // Only an earlier dupflow kept more (up to 65,535): its page cannot be kept as it was.
                    return Err(bad(
                        "a sentence has more words than a sentence keeps (Sentence::MAX_WORDS)",
                    ));
                }
                sentences.push(Sentence::new(key, weight, fingerprinted, words));
            }
            let n = u32::from_le_bytes(array::<4>(input)?) as usize;
            let mut shingles = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                shingles.push(u64::from_le_bytes(array::<8>(input)?));
            }
            let n = u32::from_le_bytes(array::<4>(input)?) as usize;
            let mut words = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                words.push(u16::from_le_bytes(array::<2>(input)?));
            }
            let main_marked = array::<1>(input)?[0] != 0;
            each(Page {
                id: PageId { date, hash },
                url: url.into(),
                host,
                record_id: record_id.into(),
                sentences: sentences.into(),
                shingles,
                words: words.into(),
                main_marked,
            });
        }
        let count = u64_of(input)?;
        for _ in 0..count {
            let (url, date) = (u64_of(input)?, u64_of(input)?);
            buried(url, date);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each test runs with the pages in memory and in a page store that caches nothing (every
    /// read from its file).
    fn stores() -> [Option<Arc<Store<Page>>>; 2] {
        let store = Store::create(&std::env::temp_dir(), 0, None).expect("a store in the temp dir");
        [None, Some(Arc::new(store))]
    }

    fn held(mode: Recrawls, store: &Option<Arc<Store<Page>>>) -> CurrentPages {
        CurrentPages::with_store(mode, UrlIdentity::exact(), store.clone())
    }

    fn page(url: &str, date: u64, rid: &str) -> Page {
        Page {
            id: PageId::new(date, url, rid),
            url: url.into(),
            host: 1,
            record_id: rid.into(),
            sentences: vec![Sentence::new(date, 3, true, 2)].into(),
            shingles: vec![date, 7],
            words: vec![date as u16, 9].into(),
            main_marked: date.is_multiple_of(2),
        }
    }

    #[test]
    fn a_page_store_holds_the_pages_and_memory_what_a_capture_is_checked_against() {
        let [_, store] = stores();
        let (mut stored, mut resident) =
            (held(Recrawls::Replace, &store), held(Recrawls::Replace, &None));
        for i in 0..100 {
            for pages in [&mut stored, &mut resident] {
                pages.capture(page(&format!("u{i}"), 10 + i, "a"), 0).unwrap();
            }
        }
        assert_eq!(store.as_ref().unwrap().stats().pages, 100);
        assert_eq!(std::mem::size_of::<Held>(), 64, "what a held page keeps in memory");
        assert!(stored.bytes() < resident.bytes() / 2, "{} {}", stored.bytes(), resident.bytes());
        // A re-crawl retracts the page read back from the store.
        assert_eq!(
            stored.capture(page("u7", 500, "b"), 0).unwrap(),
            vec![Change::Remove(page("u7", 17, "a")), Change::Insert(page("u7", 500, "b"))]
        );
        resident.capture(page("u7", 500, "b"), 0).unwrap();
        assert_eq!(stored.into_pages(), resident.into_pages());
    }

    #[test]
    fn newer_capture_replaces_older_is_ignored() {
        for store in stores() {
            let mut pages = held(Recrawls::Replace, &store);
            assert_eq!(pages.capture(page("u", 10, "a"), 0).unwrap().len(), 1);
            let changes = pages.capture(page("u", 20, "b"), 0).unwrap();
            assert_eq!(
                changes,
                vec![Change::Remove(page("u", 10, "a")), Change::Insert(page("u", 20, "b"))]
            );
            assert_eq!(pages.capture(page("u", 15, "c"), 0), Err(Ignored::Superseded));
            assert_eq!(pages.capture(page("u", 20, "b"), 0), Err(Ignored::Superseded));
            assert_eq!(pages.len(), 1);
            assert_eq!(pages.delete("u", 0), vec![Change::Remove(page("u", 20, "b"))]);
            assert!(pages.is_empty());
            assert_eq!((pages.tombstones(), pages.bytes()), (1, CurrentPages::TOMBSTONE_COST));
        }
    }

    #[test]
    fn keep_mode_holds_every_capture_and_deletes_them_all() {
        for store in stores() {
            let mut pages = held(Recrawls::Keep, &store);
            pages.capture(page("u", 10, "a"), 0).unwrap();
            pages.capture(page("u", 20, "b"), 0).unwrap();
            assert_eq!(pages.len(), 2);
            assert_eq!(pages.delete("u", 0).len(), 2);
            assert_eq!(pages.capture(page("u", 20, "c"), 0), Err(Ignored::Deleted));
            assert_eq!(pages.capture(page("u", 21, "d"), 0).unwrap().len(), 1);
        }
    }

    #[test]
    fn a_deletion_stops_older_captures_and_a_recrawl_brings_the_url_back() {
        for store in stores() {
            let mut pages = held(Recrawls::Replace, &store);
            pages.capture(page("u", 10, "a"), 0).unwrap();
            // Read when the feed had reached date 30: captures up to 30 are stale copies.
            assert_eq!(pages.delete("u", 30).len(), 1);
            assert_eq!(pages.capture(page("u", 5, "old"), 0), Err(Ignored::Deleted));
            assert_eq!(pages.capture(page("u", 30, "same"), 0), Err(Ignored::Deleted));
            // A URL never held is buried too (its capture may still be on its way).
            assert!(pages.delete("w", 30).is_empty());
            assert_eq!(pages.capture(page("w", 12, "late"), 0), Err(Ignored::Deleted));
            // Deleting a capture newer than the feed's clock buries at the capture's date.
            pages.capture(page("x", 50, "a"), 0).unwrap();
            pages.delete("x", 30);
            assert_eq!(pages.capture(page("x", 40, "b"), 0), Err(Ignored::Deleted));
            // A re-crawl after the deletion is back, and its tombstone gone.
            assert_eq!(
                pages.capture(page("u", 31, "new"), 0).unwrap(),
                vec![Change::Insert(page("u", 31, "new"))]
            );
            assert_eq!(pages.tombstones(), 2);
            // Retention forgets tombstones before the window (what they stop is expired anyway).
            pages.expire(31);
            assert_eq!(pages.tombstones(), 1);
            assert_eq!(pages.capture(page("w", 12, "late"), 31), Err(Ignored::Expired));
            assert_eq!(pages.capture(page("x", 45, "c"), 31), Err(Ignored::Deleted));
        }
    }

    #[test]
    fn retention_expires_by_crawl_date() {
        for store in stores() {
            let mut pages = held(Recrawls::Replace, &store);
            for (i, url) in ["a", "b", "c"].iter().enumerate() {
                pages.capture(page(url, 10 * (i as u64 + 1), "r"), 0).unwrap();
            }
            assert_eq!(pages.capture(page("d", 5, "r"), 11), Err(Ignored::Expired));
            let gone = pages.expire(25);
            assert_eq!(gone.len(), 2);
            assert_eq!(pages.len(), 1);
        }
    }

    /// The URL index and the retention order are made from the held pages when first needed
    /// and kept from then on: captures before and after give the same answers.
    #[test]
    fn the_indexes_made_late_hold_the_captures_before_and_after() {
        for store in stores() {
            let mut pages = held(Recrawls::Keep, &store);
            pages.capture(page("u", 10, "a"), 0).unwrap();
            pages.capture(page("u", 20, "b"), 0).unwrap();
            pages.capture(page("v", 15, "a"), 0).unwrap();
            assert!(
                pages.by_url.is_none() && pages.by_date.is_none(),
                "no index before it is needed"
            );
            assert_eq!(pages.delete("v", 0).len(), 1);
            pages.capture(page("u", 30, "c"), 0).unwrap();
            pages.capture(page("w", 12, "a"), 0).unwrap();
            let mut gone: Vec<PageId> = pages
                .delete("u", 0)
                .into_iter()
                .map(|c| if let Change::Remove(p) = c { p.id } else { panic!("{c:?}") })
                .collect();
            gone.sort();
            let mut expected =
                vec![page("u", 10, "a").id, page("u", 20, "b").id, page("u", 30, "c").id];
            expected.sort();
            assert_eq!(gone, expected);
            assert_eq!(pages.len(), 1);

            let mut pages = held(Recrawls::Replace, &store);
            pages.capture(page("a", 10, "r"), 0).unwrap();
            pages.capture(page("b", 20, "r"), 0).unwrap();
            assert_eq!(pages.expire(15), vec![Change::Remove(page("a", 10, "r"))]);
            pages.capture(page("c", 25, "r"), 0).unwrap();
            pages.capture(page("b", 30, "s"), 0).unwrap();
            assert_eq!(pages.expire(28), vec![Change::Remove(page("c", 25, "r"))]);
            assert_eq!(pages.into_pages(), vec![page("b", 30, "s")]);
            // In `Replace` mode a deletion needs no index.
            let mut pages = held(Recrawls::Replace, &store);
            pages.capture(page("a", 10, "r"), 0).unwrap();
            assert_eq!(pages.delete("a", 0), vec![Change::Remove(page("a", 10, "r"))]);
            assert!(pages.delete("a", 0).is_empty());
            assert!(pages.by_url.is_none());
        }
    }

    #[test]
    fn save_and_load_round_trip() {
        for store in stores() {
            let mut pages = held(Recrawls::Replace, &store);
            pages.capture(page("ü", 10, "a"), 0).unwrap();
            pages.capture(page("v", 11, "b"), 0).unwrap();
            pages.delete("gone", 40);
            let mut bytes = Vec::new();
            pages.save(&mut bytes).unwrap();
            let (mut loaded, mut buried) = (Vec::new(), Vec::new());
            CurrentPages::load(
                &mut bytes.as_slice(),
                |p| loaded.push(p),
                |url, date| buried.push((url, date)),
            )
            .unwrap();
            loaded.sort();
            let mut expected = vec![page("ü", 10, "a"), page("v", 11, "b")];
            expected.sort();
            assert_eq!(loaded, expected);
            assert_eq!(buried, vec![(url_key("gone"), 40)]);
            assert!(CurrentPages::load(&mut &bytes[..bytes.len() - 3], |_| {}, |_, _| {}).is_err());
            // A sentence with more words than a sentence keeps (an earlier dupflow kept up to
            // 65,535) is an error, not a page with a wrong count.
            let sentence =
                [&10u64.to_le_bytes()[..], &3u16.to_le_bytes(), &[1], &2u16.to_le_bytes()].concat();
            let at = bytes
                .windows(sentence.len())
                .position(|w| w == sentence)
                .expect("the first page's sentence")
                + sentence.len()
                - 2;
            bytes[at..at + 2].copy_from_slice(&(Sentence::MAX_WORDS + 1).to_le_bytes());
            let error = CurrentPages::load(&mut bytes.as_slice(), |_| {}, |_, _| {}).unwrap_err();
            assert!(error.to_string().contains("more words than a sentence keeps"), "{error}");
        }
    }
}
