//! Filtering: each page with its template removed (`template::apply`), from the page and the
//! template sentences it holds, in one operator.
//!
//! This was a reduce (each page's template keys, from `(page, None)` and `(page, Some(key))`
//! updates) and a join of its output with the pages: ~4.4 arranged updates a page on a
//! 100k-page crawl, each holding a page's compact id, its keys or the page again. Here a page
//! is one hash-map entry of the operator: what the filtering reads of the page alone (72
//! bytes, its sentences and words shared with the page's) for a page that holds no template
//! sentence (most pages), with its template keys otherwise.
//!
//! A change costs what it touches: a page coming or going is filtered once; a template
//! sentence coming or going (at a refresh) filters again the pages that hold it, each once
//! for all of its changes of the time (the join did the same: old and new filtering of each).
//! The operator exchanges by the page's compact id, holds each time's updates until the input
//! frontier passes it and applies times in order (timestamps are totally ordered), so the
//! same updates give the same output whatever the worker count or batch boundaries.

use std::sync::Arc;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::ingest::page::{Page, PageId};
use crate::run::Runtime;
use crate::runtime::by_time::in_time_order;
use crate::runtime::compact::{Compact, Narrow};
use crate::runtime::footprint::{Gauge, Structure};
use crate::runtime::sorted::{consolidated, merge_counts};
use crate::runtime::store::Kept;
use crate::template::{apply, Filtered, TemplateConfig};

/// One input update of the operator, keyed by the page's compact id (`PageId::compact`): 24
/// bytes. The page is boxed: a time's updates wait in the operator until the time is complete,
/// and a page's template sentences (tens a page on a template-heavy site) would each take a
/// `Page`'s room (184 bytes an update with the time and difference, not 40).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FilterUpdate {
    /// A page: `(compact id, (id, page))`.
    Page(u64, Box<(PageId, Page)>),
    /// A template sentence the page holds: `(compact id, key, frequency class)`.
    Template(u64, u64, u8),
}

impl FilterUpdate {
    /// The compact id of the page whose entry it changes.
    pub fn page(&self) -> u64 {
        match *self {
            FilterUpdate::Page(page, ..) | FilterUpdate::Template(page, ..) => page,
        }
    }
}

/// What the filtering reads of a page (`template::apply`), as the operator holds it: 48 bytes,
/// the page (its sentences, words and shingles; no URL) in the run's page store once the
/// operator holds it (`store`), or in memory, its sentences and words shared with the page's.
/// It compares, orders and hashes by its id and the digest of what the filtering reads, never
/// reading a store: two copies of one page with the same 64-bit digest would count as one
/// (probability 2^-64 a change), as group members do (`verify::member::Member`).
#[derive(Clone, Debug)]
struct Held {
    id: PageId,
    digest: u64,
    page: Kept<Page>,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        (self.id, self.digest) == (other.id, other.digest)
    }
}

impl Eq for Held {}

impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.id, self.digest).cmp(&(other.id, other.digest))
    }
}

impl Held {
    fn new(id: PageId, page: &Page) -> Held {
        let page = Page {
            id,
            url: crate::ingest::page::no_text(),
            host: 0,
            record_id: crate::ingest::page::no_text(),
            sentences: page.sentences.clone(),
            shingles: page.shingles.clone(),
            words: page.words.clone(),
            main_marked: page.main_marked,
        };
        Held { id, digest: Self::digest(&page), page: Kept::Resident(Arc::new(page)) }
    }

    /// The digest of what the filtering reads of `page`.
    fn digest(page: &Page) -> u64 {
        use crate::runtime::hashing::mix64;
        let mut h = mix64(page.sentences.len() as u64 ^ (page.main_marked as u64) << 40);
        for s in page.sentences.iter() {
            h = mix64(h ^ s.key).wrapping_add(
                (s.weight as u64) << 32 | (s.words() as u64) << 1 | s.fingerprinted() as u64,
            );
        }
        h = mix64(h ^ page.words.digest()).wrapping_add(page.words.len() as u64);
        for &shingle in &page.shingles {
            h = mix64(h ^ shingle);
        }
        mix64(h ^ page.shingles.len() as u64)
    }

    /// Kept as `runtime`'s run keeps pages: its words in the word store and the page in the
    /// page store, where the run has them (a page from another process comes in memory). The
    /// operator holds it from now on.
    fn store(&mut self, runtime: &Runtime) {
        let Kept::Resident(page) = &self.page else { return };
        let words = runtime.words.is_some() && !page.words.is_stored();
        if runtime.pages.is_none() && !words {
            return;
        }
        let mut page = Page::clone(page);
        runtime.keep_words(&mut page);
        self.page = Kept::keep_in(Arc::new(page), runtime.pages.as_ref(), false);
    }

    /// `(page, filtered)` with the template `keys` (`(key, class)`, sorted) removed.
    fn filtered(&self, keys: &[(u64, u8)], config: &TemplateConfig) -> (PageId, Filtered) {
        (self.id, apply(&self.page.get(), keys, config))
    }
}

/// A page's entry beyond a page alone: its pages (one, but any multiplicity) and its template
/// keys, each sorted, with their multiplicities (none zero).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Entry {
    pages: Vec<(Held, isize)>,
    templates: Vec<((u64, u8), isize)>,
}

impl Entry {
    /// The template keys in effect: those with a multiplicity (as the reduce listed them).
    fn keys(&self) -> Vec<(u64, u8)> {
        self.templates.iter().map(|&(key, _)| key).collect()
    }
}

/// A worker's pages: a page that holds no template sentence (most) is held alone, the others
/// with their keys.
#[derive(Debug)]
pub struct Filter {
    config: TemplateConfig,
    pages: Compact<u64, Held, Entry>,
    /// Where the pages it holds are kept (the run's stores).
    runtime: Arc<Runtime>,
    gauge: Gauge,
}

impl Drop for Filter {
    /// What it holds at the end of the run, reported once more.
    fn drop(&mut self) {
        let bytes = self.bytes();
        self.gauge.finish(bytes);
    }
}

impl Filter {
    /// A filter that holds its pages in memory.
    pub fn new(config: TemplateConfig) -> Self {
        Self::in_run(config, &Runtime::in_memory())
    }

    /// A filter that keeps its pages as `runtime`'s run keeps them, its bytes in its footprint.
    pub fn in_run(config: TemplateConfig, runtime: &Arc<Runtime>) -> Self {
        let gauge = Gauge::new(Structure::Filtered, &runtime.footprint);
        Filter { config, pages: Compact::default(), runtime: runtime.clone(), gauge }
    }

    /// The bytes held, walked: the two maps' tables, each page's own buffers (its sentences
    /// and words only where they are not the page's), and each entry of several parts.
    fn bytes(&self) -> usize {
        Self::walk(&self.pages)
    }

    fn walk(pages: &Compact<u64, Held, Entry>) -> usize {
        use crate::runtime::footprint::{array, own_slice, ARC_COUNTS};
        let held = |h: &Held| match &h.page {
            Kept::Resident(page) => {
                ARC_COUNTS
                    + std::mem::size_of::<Page>()
                    + own_slice(&page.sentences)
                    + page.words.own_bytes()
                    + array::<u64>(page.shingles.capacity())
            }
            // The page store's cache is counted apart.
            Kept::Stored(..) => 0,
        };
        pages.bytes(held, |e| {
            array::<(Held, isize)>(e.pages.capacity())
                + e.pages.iter().map(|(h, _)| held(h)).sum::<usize>()
                + array::<((u64, u8), isize)>(e.templates.capacity())
        })
    }

    /// Walks what it holds into its gauge, when a report is due (after a complete time).
    fn report_if_due(&mut self) {
        let pages = &self.pages;
        self.gauge.report_if_due(|| Self::walk(pages));
    }

    /// Applies one time's updates and appends the changes of `(page, filtered)` to `out`.
    pub fn apply(
        &mut self,
        updates: &mut [(FilterUpdate, isize)],
        out: &mut Vec<((PageId, Filtered), isize)>,
    ) {
        let config = self.config;
        updates.sort_unstable_by_key(|(part, _)| part.page());
        for these in updates.chunk_by(|a, b| a.0.page() == b.0.page()) {
            let compact = these[0].0.page();
            let mut pages = consolidated(these.iter().filter_map(|(part, d)| match part {
                FilterUpdate::Page(_, page) => Some((Held::new(page.0, &page.1), *d)),
                FilterUpdate::Template(..) => None,
            }));
            let templates = consolidated(these.iter().filter_map(|(part, d)| match part {
                FilterUpdate::Template(_, key, class) => Some(((*key, *class), *d)),
                FilterUpdate::Page(..) => None,
            }));
            if pages.is_empty() && templates.is_empty() {
                continue;
            }
            // The common case: a page holding no template sentence comes or goes.
            if let ([(page, d)], true) = (pages.as_slice(), templates.is_empty()) {
                if *d == 1 && !self.pages.contains(&compact) {
                    out.push((page.filtered(&[], &config), 1));
                    let (mut page, _) = pages.pop().expect("one page");
                    page.store(&self.runtime);
                    self.pages.insert_new(compact, page);
                    continue;
                }
                if *d == -1 && self.pages.remove_one(&compact, page) {
                    out.push((page.filtered(&[], &config), -1));
                    continue;
                }
            }
            let mut entry = self.pages.take(
                &compact,
                |page| Entry { pages: vec![(page, 1)], templates: Vec::new() },
                Entry::default,
            );
            let before = entry.keys();
            merge_counts(&mut entry.templates, &templates);
            let after = entry.keys();
            if before == after {
                // Only the pages that came or went are filtered.
                out.extend(pages.iter().map(|(page, d)| (page.filtered(&after, &config), *d)));
                merge_counts(&mut entry.pages, &pages);
            } else if pages.is_empty() {
                // Only its template sentences changed: each page filtered again, out as it was
                // and in as it is, where it reads otherwise (a sentence changing class leaves
                // most pages as they were).
                for (page, n) in &entry.pages {
                    let (old, new) =
                        (page.filtered(&before, &config), page.filtered(&after, &config));
                    if old != new {
                        out.push((old, -n));
                        out.push((new, *n));
                    }
                }
            } else {
                // Every page filtered again: out as it was, in as it is.
                out.extend(
                    entry.pages.iter().map(|(page, n)| (page.filtered(&before, &config), -n)),
                );
                merge_counts(&mut entry.pages, &pages);
                out.extend(
                    entry.pages.iter().map(|(page, n)| (page.filtered(&after, &config), *n)),
                );
            }
            entry.pages.iter_mut().for_each(|(page, _)| page.store(&self.runtime));
            self.pages.put(compact, entry, |entry| {
                match (entry.pages.as_slice(), entry.templates.is_empty()) {
                    ([], true) => Narrow::Gone,
                    ([(page, 1)], true) => Narrow::One(page.clone()),
                    _ => Narrow::Many,
                }
            });
        }
    }
}

/// The filtering operator: `parts` in, `(page, filtered)` out, for every page with the template
/// keys it holds removed as `config` says.
pub fn filtered_pages<'scope, T>(
    parts: VecCollection<'scope, T, FilterUpdate, isize>,
    config: TemplateConfig,
) -> VecCollection<'scope, T, (PageId, Filtered), isize>
where
    T: Timestamp + Lattice + TotalOrder + Ord,
{
    let runtime = crate::run::Runtime::of(&parts.scope());
    let mut filter = Filter::in_run(config, &runtime);
    in_time_order(parts, "Filtered pages", FilterUpdate::page, move |updates, out| {
        filter.apply(updates, out);
        // Words of their own (a content of several runs of its page's words) go to the run's
        // word store, as the page's did: an insertion's (a retraction's words compare equal to
        // the stored ones, by length and digest, and are let go).
        if let Some(words) = &runtime.words {
            for ((_, filtered), _) in out.iter_mut().filter(|(_, diff)| *diff > 0) {
                let own = std::mem::take(&mut filtered.content.words);
                filtered.content.words = own.stored_in(Some(words));
            }
        }
        filter.report_if_due();
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::page::Sentence;
    use crate::runtime::store::Store;
    use crate::testing::{assert_incremental, input_at, Rng};
    use std::collections::{BTreeMap, BTreeSet};

    fn page(n: u64, keys: &[u64]) -> FilterUpdate {
        let mut page =
            Page::of_keys(keys, |key| Sentence::new(key, 2 + (key % 3) as u16, key % 5 != 0, 0));
        page.id = PageId { date: n, hash: crate::runtime::hashing::mix64(n + 1000) };
        FilterUpdate::Page(page.id.compact(), Box::new((page.id, page)))
    }

    fn compact(n: u64) -> u64 {
        PageId { date: n, hash: crate::runtime::hashing::mix64(n + 1000) }.compact()
    }

    /// From scratch at `time`: every page filtered with the template keys it holds then (what
    /// the reduce and the join gave).
    fn from_scratch(
        steps: &[Vec<(FilterUpdate, isize)>],
        time: u64,
        config: TemplateConfig,
    ) -> BTreeMap<(PageId, Filtered), isize> {
        let alive = input_at(steps, time);
        let mut state = BTreeMap::new();
        for (part, &n) in &alive {
            let FilterUpdate::Page(c, page) = part else { continue };
            let (id, page) = &**page;
            let keys: BTreeSet<(u64, u8)> = alive
                .keys()
                .filter_map(|p| match *p {
                    FilterUpdate::Template(of, key, class) if of == *c => Some((key, class)),
                    _ => None,
                })
                .collect();
            let keys: Vec<(u64, u8)> = keys.into_iter().collect();
            *state.entry((*id, apply(page, &keys, &config))).or_insert(0) += n;
        }
        state.retain(|_, d| *d != 0);
        state
    }

    /// Pages coming, going and coming back with other sentences; template keys coming, going
    /// and changing class on them (on keys they hold and keys they do not), now and then twice
    /// or negative.
    fn workload(seed: u64) -> Vec<Vec<(FilterUpdate, isize)>> {
        let mut rng = Rng(seed);
        let mut below = |n: u64| rng.below(n);
        let mut pages: BTreeMap<u64, FilterUpdate> = BTreeMap::new();
        let mut templates: BTreeMap<(u64, u64), (u8, isize)> = BTreeMap::new();
        let mut steps = Vec::new();
        for _ in 0..10 {
            let mut step = Vec::new();
            for _ in 0..6 {
                let n = below(8);
                match below(4) {
                    0 | 1 => {
                        if let Some(old) = pages.remove(&n) {
                            step.push((old, -1));
                        }
                        if below(4) != 0 {
                            let keys: Vec<u64> = (0..2 + below(5)).map(|_| below(10)).collect();
                            let new = page(n, &keys);
                            step.push((new.clone(), 1));
                            pages.insert(n, new);
                        }
                    }
                    2 => {
                        let key = below(10);
                        let class = below(4) as u8;
                        match templates.remove(&(n, key)) {
                            Some((old, d)) if below(2) == 0 => {
                                // Its class changes: out at the old one, in at the new.
                                step.push((FilterUpdate::Template(compact(n), key, old), -d));
                                step.push((FilterUpdate::Template(compact(n), key, class), d));
                                templates.insert((n, key), (class, d));
                            }
                            Some((old, d)) => {
                                step.push((FilterUpdate::Template(compact(n), key, old), -d))
                            }
                            None => {
                                let d = [1, 1, 1, 2, -1][below(5) as usize];
                                step.push((FilterUpdate::Template(compact(n), key, class), d));
                                templates.insert((n, key), (class, d));
                            }
                        }
                    }
                    _ => {
                        // A page twice, or taken out before it came (a negative multiplicity).
                        let part = page(20 + n, &[below(10), below(10)]);
                        step.push((part, if below(2) == 0 { 2 } else { -1 }));
                    }
                }
            }
            steps.push(step);
        }
        steps
    }

    /// Short interior runs of template stay, and a template-dominated page leaves out the
    /// template more than one class above its rarest: pages filter differently as their keys
    /// and the keys' classes change.
    fn config() -> TemplateConfig {
        TemplateConfig {
            interior_run_units: 3,
            interior_run_share: 0.0,
            furniture_classes: 1,
            ..TemplateConfig::default()
        }
    }

    fn build(
        parts: VecCollection<'_, u64, FilterUpdate, isize>,
    ) -> VecCollection<'_, u64, (PageId, Filtered), isize> {
        filtered_pages(parts, config())
    }

    #[test]
    fn incremental_filtering_equals_the_filtering_from_scratch() {
        for seed in 0..10 {
            let steps = workload(seed);
            assert_incremental(
                &steps,
                build,
                |time| from_scratch(&steps, time, config()),
                &format!("seed {seed}"),
            );
        }
    }

    /// Pages held in a page store that caches nothing (every page read back from its file)
    /// filter as pages held in memory, step by step, and leave memory the entries alone.
    #[test]
    fn pages_in_a_store_filter_as_pages_in_memory() {
        let store = Arc::new(Store::create(&std::env::temp_dir(), 0, None).unwrap());
        for seed in 0..10 {
            let runtime = Runtime { pages: Some(store.clone()), ..Runtime::default() };
            let mut stored = Filter::in_run(config(), &Arc::new(runtime));
            let mut resident = Filter::new(config());
            for step in workload(seed) {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                stored.apply(&mut step.clone(), &mut a);
                resident.apply(&mut step.clone(), &mut b);
                a.sort();
                b.sort();
                assert_eq!(a, b, "seed {seed}");
            }
            assert!(stored.bytes() <= resident.bytes(), "seed {seed}");
        }
        assert!(store.stats().pages > 0 && store.stats().misses > 0);
    }

    #[test]
    fn a_page_without_template_is_held_alone() {
        assert_eq!(std::mem::size_of::<Held>(), 48);
        assert_eq!(std::mem::size_of::<FilterUpdate>(), 24);
        let config = TemplateConfig::default();
        let mut filter = Filter::new(config);
        let mut out = Vec::new();
        let (one, two) = (page(1, &[1, 2, 3]), page(2, &[2, 4]));
        filter.apply(&mut [(one.clone(), 1), (two.clone(), 1)], &mut out);
        assert_eq!(filter.pages.sizes(), (2, 0));
        assert_eq!(out.len(), 2);
        // A template key on page 1 filters it again; page 2 is left alone.
        out.clear();
        filter.apply(&mut [(FilterUpdate::Template(compact(1), 2, 3), 1)], &mut out);
        let FilterUpdate::Page(_, page) = &one else { unreachable!() };
        let (id, p) = &**page;
        let mut expected =
            vec![((*id, apply(p, &[], &config)), -1), ((*id, apply(p, &[(2, 3)], &config)), 1)];
        expected.sort();
        out.sort();
        assert_eq!(out, expected);
        assert_eq!(filter.pages.sizes(), (1, 1));
        // The key goes and the page with it: nothing is held.
        out.clear();
        filter.apply(
            &mut [(FilterUpdate::Template(compact(1), 2, 3), -1), (one, -1), (two, -1)],
            &mut out,
        );
        assert_eq!(out.iter().map(|(_, d)| d).sum::<isize>(), -2);
        assert_eq!(filter.pages.sizes(), (0, 0));
    }
}
