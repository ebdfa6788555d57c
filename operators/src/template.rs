//! Template suppression: sentences frequent on one host are that site's template.
//!
//! Per host, the document frequency of each sentence key is maintained incrementally; a key on
//! at least `max(min_pages, ceil(page_fraction · pages on host))` pages of its host is template.
//! When a key becomes template (or stops being), only the pages holding it are filtered again:
//! the cost follows the key's pages, never the host's.
//! Template sentences take no part in fingerprints. Verification sees a page's own text with
//! the short runs of template inside it (a generator's boilerplate), not its menus, footers
//! or long generated blocks. A page that is nothing but template keeps all its sentences (it
//! *is* the template, and its copies are its duplicates).

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::filter;
use crate::holders::{self, HolderChange};
use crate::page::{Content, Page, PageId, Sentences, Words};

/// Settings of the template stage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TemplateConfig {
    /// A sentence on fewer pages of a host than this is never template.
    pub min_pages: u32,
    /// A sentence on at least this share of a host's pages is template (if also ≥ min_pages).
    pub page_fraction: f64,
    /// A page whose non-template sentences weigh less than this share of the page is
    /// template-dominated (a stub, a redirect notice): it keeps all its sentences.
    pub min_content_share: f64,
    /// ... unless they weigh at least this many units (a unit is about a word: 15 is one long
    /// sentence, ~90 characters): a page with that much text of its own is compared on it (and
    /// the boilerplate inside it, `interior_run_units`), however much template it carries.
    /// Below it, a page's own text is a title at most.
    pub min_content_units: u32,
    /// Template sentences inside a page's own text (between its first and last own sentence)
    /// in runs of at most this many units stay in it: a generator's boilerplate read as part
    /// of the text. Longer runs (member lists, a sidebar) are left out. 0: none stay.
    pub interior_run_units: u32,
    /// The template sentences in effect change every this many epochs (1: every epoch): a
    /// sentence that becomes template (or stops being) between refreshes takes effect at the
    /// next one, and the pages holding it are filtered again once, not at every epoch in which
    /// one of their sentences crosses its host's threshold. Pages arriving in between are
    /// filtered with the template sentences of the last refresh. When the input ends, the
    /// last refresh follows: the clusters are those of the whole input, whatever the epochs.
    /// A checkpoint is taken just after a refresh, so a run may resume with another value.
    /// (Left out of the serialized settings at 1: a checkpoint's method key is computed with 1,
    /// and stays the one of the versions before it.)
    #[serde(skip_serializing_if = "is_one")]
    pub refresh_epochs: u32,
}

impl Default for TemplateConfig {
    fn default() -> Self {
        TemplateConfig {
            min_pages: 4,
            page_fraction: 0.02,
            min_content_share: 0.25,
            min_content_units: 15,
            interior_run_units: 50,
            refresh_epochs: 8,
        }
    }
}

impl TemplateConfig {
    /// Pages a sentence must appear on, on a host with `host_pages` pages, to be template.
    pub fn threshold(&self, host_pages: u64) -> u64 {
        let by_fraction = (self.page_fraction * host_pages as f64).ceil() as u64;
        by_fraction.max(self.min_pages as u64).max(2)
    }

    /// The epoch at which a template change of epoch `time` takes effect: the next refresh,
    /// refreshes falling on the multiples of `refresh_epochs`. Monotone and never earlier than
    /// `time`.
    pub fn refresh_time(&self, time: u64) -> u64 {
        refresh_time(time, self.refresh_epochs as u64)
    }

    /// The epoch whose pages give the template sentences in effect at `time`: the last refresh
    /// at or before it.
    pub fn in_effect_at(&self, time: u64) -> u64 {
        let every = self.refresh_epochs.max(1) as u64;
        time / every * every
    }
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The epoch at which a template change of epoch `time` takes effect: refreshes fall on the
/// multiples of `every` (0 and 1: every epoch), in a resumed run as in the run it resumes
/// (its checkpoint is taken just after a refresh: see `checkpoint_epoch`).
pub fn refresh_time(time: u64, every: u64) -> u64 {
    time.div_ceil(every.max(1)) * every.max(1)
}

/// The epoch a checkpoint due at `next` is taken at: the first `c >= next` with `c - 1` a
/// refresh. The state the checkpoint's change stream ends on (at `c - 1`) then holds the
/// template sentences of all its pages, which a resumed run rebuilds from them (at any
/// `refresh_epochs`); between refreshes it holds an earlier refresh's, which it could not.
pub fn checkpoint_epoch(next: u64, every: u64) -> u64 {
    if next == 0 {
        return 0;
    }
    refresh_time(next - 1, every) + 1
}

/// A page with its template removed: what fingerprinting and verification see.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
pub struct Filtered {
    /// Non-template sentences in order (all sentences if the page is pure template); whether
    /// the page is template-dominated, and the keys to fingerprint (`Content::fingerprint_keys`).
    pub content: Content,
}

impl Filtered {
    /// The page's own sentences: without the template kept inside its text (all of a
    /// template-dominated page's), as the sentence share counts them.
    pub fn own_sentences(&self) -> Vec<(u64, u16)> {
        self.content.sentences.compared().filter(|&(k, _)| self.content.is_own(k)).collect()
    }
}

/// Distinct sentence keys of a page, sorted.
pub fn distinct_keys(page: &Page) -> Vec<u64> {
    let mut keys: Vec<u64> = page.sentences.iter().map(|s| s.key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Removes the host's template keys (`templates` sorted) from a page.
///
/// A page left with less than `min_content_share` of its weight, and less than
/// `min_content_units` of text of its own (a title at most), is template-dominated (a stub, a
/// redirect notice: its main text is shared with its siblings). It keeps everything after its
/// leading run of template sentences (menus and sidebars come first in document order), so that
/// its siblings are compared on that shared text; a page that is template from end to end
/// keeps everything. A page with more text of its own is compared on that text, and on the
/// template sentences inside it in runs of at most `interior_run_units` (a generator's
/// boilerplate: headings, "This is an internal header file…"): what comes before its first
/// own sentence and after its last (menus, footers) and longer runs inside (a member list, a
/// sidebar) are left out. Sibling pages sharing generated blocks are not duplicates when their
/// own text differs: the template sentences kept are named in `Content::template_keys`, which
/// the sibling rule counts as repeated blocks.
pub fn apply(page: &Page, templates: &[u64], config: &TemplateConfig) -> Filtered {
    // Each sentence looked up once: whether it is template.
    let template: Vec<bool> = page.sentences.iter().map(|s| templates.binary_search(&{ s.key }).is_ok()).collect();
    let total: u64 = page.sentences.iter().map(|s| s.weight as u64).sum();
    let kept: u64 = page.sentences.iter().zip(&template).filter(|(_, &t)| !t).map(|(s, _)| s.weight as u64).sum();
    let dominated = kept == 0 || ((kept as f64) < config.min_content_share * total as f64 && kept < config.min_content_units as u64);
    let keep = if dominated {
        let head = template.iter().take_while(|&&t| t).count();
        let head = if head == page.sentences.len() { 0 } else { head };
        (0..page.sentences.len()).map(|i| i >= head).collect()
    } else {
        interior(page, &template, config.interior_run_units as u64)
    };
    // The kept sentences and their words (`page.words`, each sentence's run in order). Kept
    // sentences in one run (the template removed at the edges, or none) share the page's words.
    let (mut selected, mut runs, mut word_counts) = (Vec::new(), Vec::<std::ops::Range<usize>>::new(), Vec::new());
    let mut sentence_runs = Vec::<std::ops::Range<usize>>::new();
    let mut template_keys: Vec<u64> = Vec::new();
    let mut offset = 0usize;
    for (i, (s, &keep)) in page.sentences.iter().zip(&keep).enumerate() {
        let end = (offset + s.words() as usize).min(page.words.len());
        if keep {
            selected.push(s);
            if template[i] {
                template_keys.push(s.key);
            }
            match runs.last_mut() {
                Some(run) if run.end == offset => run.end = end,
                _ => runs.push(offset..end),
            }
            match sentence_runs.last_mut() {
                Some(run) if run.end == i => run.end = i + 1,
                _ => sentence_runs.push(i..i + 1),
            }
            word_counts.push((end - offset) as u16);
        }
        offset = end;
    }
    let words = match runs.as_slice() {
        [] => Words::default(),
        [run] => Words::shared(&page.words, run.clone()),
        runs => Words::from(runs.iter().flat_map(|run| page.words[run.clone()].iter().copied()).collect::<Vec<_>>()),
    };
    if words.is_empty() {
        word_counts.clear();
    }
    // The kept sentences: in one run (most pages), shared with the page's.
    let content = match sentence_runs.as_slice() {
        [] => Sentences::default(),
        [run] => Sentences::shared(&page.sentences, run.clone()),
        _ => Sentences::from(selected.iter().map(|&&s| s).collect::<Vec<_>>()),
    };
    template_keys.sort_unstable();
    template_keys.dedup();
    let mut shingles = page.shingles.clone();
    shingles.sort_unstable();
    shingles.dedup();
    Filtered { content: Content { sentences: content, shingles, term_weights: Vec::new(), words, word_counts, template_keys, dominated } }
}

/// Which sentences of a page with text of its own are kept: its own (non-template) sentences,
/// and the template sentences between its first and last own sentence that come in runs of at
/// most `max_run` units. On a page whose markup marked its main content (`main_marked`: no
/// menu or footer is left), the runs before the first own sentence and after the last are
/// such runs too: a reference page's heading or its closing boilerplate ("This policy was
/// introduced in …", a licence note) is part of its text.
fn interior(page: &Page, template: &[bool], max_run: u64) -> Vec<bool> {
    let mut keep: Vec<bool> = template.iter().map(|&t| !t).collect();
    let (Some(mut first), Some(mut last)) = (keep.iter().position(|&k| k), keep.iter().rposition(|&k| k)) else {
        return keep;
    };
    if page.main_marked {
        (first, last) = (0, keep.len());
    }
    let mut i = first;
    while i < last {
        if keep[i] {
            i += 1;
            continue;
        }
        let start = i;
        let mut units = 0u64;
        while i < keep.len() && !keep[i] {
            units += page.sentences[i].weight as u64;
            i += 1;
        }
        if units <= max_run {
            keep[start..i].iter_mut().for_each(|k| *k = true);
        }
    }
    keep
}

/// The template operator.
/// Pages with their template sentences removed.
pub type FilteredPages<'scope, T> = VecCollection<'scope, T, (PageId, Filtered), isize>;

pub trait RemoveTemplates<'scope, T: Timestamp + Lattice + TotalOrder> {
    /// Maintains per-host sentence document frequencies and strips each page's template.
    /// Returns the filtered pages and the `(host, template key)` collection (for metrics).
    fn remove_templates(self, config: TemplateConfig) -> (FilteredPages<'scope, T>, VecCollection<'scope, T, (u64, u64), isize>)
    where
        Self: Sized,
    {
        self.remove_templates_refreshed(config, |time: &T| time.clone())
    }

    /// `remove_templates` with the template sentences' changes taking effect at `refresh(time)`
    /// (monotone, never earlier than `time`): the pages holding a sentence that changed are
    /// filtered again at the refresh, once for all the changes since the last one.
    fn remove_templates_refreshed<F>(
        self,
        config: TemplateConfig,
        refresh: F,
    ) -> (FilteredPages<'scope, T>, VecCollection<'scope, T, (u64, u64), isize>)
    where
        F: FnMut(&T) -> T + Clone + 'static;
}

impl<'scope, T: Timestamp + Lattice + TotalOrder + Ord> RemoveTemplates<'scope, T> for VecCollection<'scope, T, (PageId, Page), isize> {
    fn remove_templates_refreshed<F>(
        self,
        config: TemplateConfig,
        refresh: F,
    ) -> (VecCollection<'scope, T, (PageId, Filtered), isize>, VecCollection<'scope, T, (u64, u64), isize>)
    where
        F: FnMut(&T) -> T + Clone + 'static,
    {
        // Each page's distinct sentences by (host, key): counted for the document frequencies,
        // and looked up when a sentence becomes template (or stops being): only the pages that
        // hold it are filtered again, not every page of its host. Only a sentence on at least
        // `threshold(0)` pages (min_pages) can be template at any host size: the holders
        // operator gives the frequencies of those sentences and their pages only, and keeps the
        // rest (most sentences are on one page) in its own compact maps (`holders`).
        let least = config.threshold(0) as isize;
        let holdings = self.clone().map(|(id, page)| (page.host, id.compact(), distinct_keys(&page)));
        let changes = holders::sentence_holders(holdings, least, holders::PASS_UPDATES, refresh.clone());
        let document_frequency = changes.clone().flat_map(|change| match change {
            HolderChange::Frequency(sentence, count) => Some((sentence, count)),
            HolderChange::Holder(..) => None,
        });
        let holders = changes
            .flat_map(|change| match change {
                HolderChange::Holder(sentence, page) => Some((sentence, page)),
                HolderChange::Frequency(..) => None,
            })
            .arrange_by_key_named("Arrange: repeated sentences by host");
        // The threshold, not the page count, meets the frequencies: it changes once in 1/fraction
        // pages, so a page arriving does not re-join every key of its host.
        let host_thresholds =
            self.clone().map(|(_, page)| page.host).count().map(move |(host, pages)| (host, config.threshold(pages as u64)));
        let templates = document_frequency
            .map(|((host, key), count)| (host, (key, count)))
            .join_map(host_thresholds, move |&host, &(key, count), &threshold| (host, key, count as u64 >= threshold))
            .filter(|&(_, _, is_template)| is_template)
            .map(|(host, key, _)| (host, key))
            // In effect from the next refresh.
            .delay(refresh);
        // Each page filtered with the template keys it holds (none for most pages of a small
        // host), in one operator keyed by the page's compact id (the holders hold that, 8 bytes,
        // not the 16 of a `PageId`). It holds every page for its next filtering, which reads its
        // sentences, words and shingles: not its URL and record id. They are shared with the
        // source's copy in one process, but a page from another process would hold its own.
        let held = holders.join_core(templates.clone().arrange_by_self_named("Arrange: template sentences"), |&(_, key), &id, &()| {
            Some(filter::Part::Template(id, key))
        });
        let pages = self.map(|(id, mut page)| {
            page.url = crate::page::no_text();
            page.record_id = crate::page::no_text();
            filter::Part::Page(id.compact(), Box::new((id, page)))
        });
        let filtered = filter::filtered_pages(pages.concat(held), config);
        (filtered, templates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::Sentence;

    fn page(keys: &[u64]) -> Page {
        Page::of_keys(keys, |key| Sentence::new(key, 2, key < 100, 0))
    }

    #[test]
    fn threshold_uses_the_larger_bound() {
        let config = TemplateConfig { min_pages: 4, page_fraction: 0.5, ..Default::default() };
        assert_eq!(config.threshold(2), 4);
        assert_eq!(config.threshold(20), 10);
        assert_eq!(TemplateConfig { min_pages: 0, page_fraction: 0.0, ..Default::default() }.threshold(5), 2);
    }

    #[test]
    fn template_changes_take_effect_at_the_next_refresh() {
        let config = TemplateConfig { refresh_epochs: 4, ..Default::default() };
        // From a run's start at 0: changes of epochs 1-4 at 4, the pages of epochs 4-7 filtered
        // with epoch 4's template.
        let effect: Vec<u64> = (0..10).map(|t| config.refresh_time(t)).collect();
        assert_eq!(effect, vec![0, 4, 4, 4, 4, 8, 8, 8, 8, 12]);
        let in_effect: Vec<u64> = (0..10).map(|t| config.in_effect_at(t)).collect();
        assert_eq!(in_effect, vec![0, 0, 0, 0, 4, 4, 4, 4, 8, 8]);
        // 1 (and 0) refresh every epoch.
        let every = TemplateConfig { refresh_epochs: 1, ..Default::default() };
        assert!((0..10).all(|t| every.refresh_time(t) == t && every.in_effect_at(t) == t));
        assert_eq!(TemplateConfig { refresh_epochs: 0, ..Default::default() }.refresh_time(7), 7);
    }

    #[test]
    fn checkpoints_fall_just_after_a_refresh() {
        // Due at 10 with refreshes every 4: at 13 (12 a refresh); already after one at 9.
        assert_eq!(checkpoint_epoch(10, 4), 13);
        assert_eq!(checkpoint_epoch(9, 4), 9);
        assert_eq!(checkpoint_epoch(12, 4), 13);
        assert_eq!(checkpoint_epoch(0, 4), 0);
        assert!((0..20).all(|n| checkpoint_epoch(n, 1) == n));
        assert!((1..40).all(|n| {
            let c = checkpoint_epoch(n, 8);
            c >= n && c < n + 8 && refresh_time(c - 1, 8) == c - 1
        }));
    }

    #[test]
    fn template_keys_leave_content_and_fingerprints() {
        let off = TemplateConfig { interior_run_units: 0, ..Default::default() };
        let filtered = apply(&page(&[1, 2, 3, 2]), &[2], &off);
        assert_eq!(filtered.content.sentences.compared().collect::<Vec<_>>(), vec![(1, 2), (3, 2)]);
        assert_eq!(filtered.content.fingerprint_keys(), vec![1, 3]);
        // By default the template sentence inside the own text stays (not the trailing one),
        // named, and still out of the fingerprints and of the own sentences.
        let filtered = apply(&page(&[1, 2, 3, 2]), &[2], &TemplateConfig::default());
        assert_eq!(filtered.content.sentences.compared().collect::<Vec<_>>(), vec![(1, 2), (2, 2), (3, 2)]);
        assert_eq!(filtered.content.template_keys, vec![2]);
        assert_eq!(filtered.content.fingerprint_keys(), vec![1, 3]);
        assert_eq!(filtered.own_sentences(), vec![(1, 2), (3, 2)]);
    }

    #[test]
    fn kept_sentences_in_one_run_share_the_pages_sentences_and_words() {
        // Sentence k has k + 1 words: 1, 22, 333, ...; template 10 at the edges, 11 inside.
        let keys = [10, 1, 2, 11, 3, 10];
        let mut page = page(&keys);
        let sizes: Vec<u16> = (0..keys.len() as u16).map(|i| i + 1).collect();
        page.sentences = page.sentences.iter().zip(&sizes).map(|(s, &n)| s.with_words(n)).collect();
        page.words = sizes.iter().enumerate().flat_map(|(i, &n)| std::iter::repeat_n(i as u16, n as usize)).collect::<Vec<_>>().into();
        let words = |f: &Filtered| f.content.words.to_vec();
        // The edges go, the short run inside stays: one run of the page's words, shared.
        let filtered = apply(&page, &[10, 11], &TemplateConfig::default());
        assert_eq!(words(&filtered), [1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4]);
        assert_eq!(filtered.content.word_counts, [2, 3, 4, 5]);
        assert!(filtered.content.words.is_shared_with(&page.words));
        let keys_of = |f: &Filtered| f.content.sentences.iter().map(|s| s.key).collect::<Vec<_>>();
        assert_eq!(keys_of(&filtered), [1, 2, 11, 3]);
        assert!(filtered.content.sentences.is_shared_with(&page.sentences));
        // The run inside goes too: two runs, copied.
        let off = TemplateConfig { interior_run_units: 0, ..Default::default() };
        let filtered = apply(&page, &[10, 11], &off);
        assert_eq!(words(&filtered), [1, 1, 2, 2, 2, 4, 4, 4, 4, 4]);
        assert!(!filtered.content.words.is_shared_with(&page.words));
        assert_eq!(keys_of(&filtered), [1, 2, 3]);
        assert!(!filtered.content.sentences.is_shared_with(&page.sentences));
        // No template: the whole page, shared.
        let filtered = apply(&page, &[], &TemplateConfig::default());
        assert_eq!(words(&filtered), page.words.to_vec());
        assert!(filtered.content.words.is_shared_with(&page.words));
        assert_eq!(keys_of(&filtered), keys);
        assert!(filtered.content.sentences.is_shared_with(&page.sentences));
    }

    #[test]
    fn short_sentences_fingerprint_only_when_nothing_else_is_left() {
        let filtered = apply(&page(&[200, 300]), &[], &TemplateConfig::default());
        assert_eq!(filtered.content.fingerprint_keys(), vec![200, 300]);
        let filtered = apply(&page(&[1, 300]), &[], &TemplateConfig::default());
        assert_eq!(filtered.content.fingerprint_keys(), vec![1]);
    }

    #[test]
    fn a_pure_template_page_keeps_everything() {
        let filtered = apply(&page(&[5, 6]), &[5, 6], &TemplateConfig::default());
        assert_eq!(filtered.content.sentences.compared().collect::<Vec<_>>(), vec![(5, 2), (6, 2)]);
        assert_eq!(filtered.content.fingerprint_keys(), vec![5, 6]);
        // One sentence of five left (20% < 25%): template-dominated, keeps all after the
        // leading template run.
        let filtered = apply(&page(&[5, 6, 1, 7, 8]), &[5, 6, 7, 8], &TemplateConfig::default());
        assert_eq!(filtered.content.sentences.compared().collect::<Vec<_>>(), vec![(1, 2), (7, 2), (8, 2)]);
        let filtered = apply(&page(&[1, 2, 6, 7, 8]), &[6, 7, 8], &TemplateConfig::default());
        assert_eq!(filtered.content.sentences.len(), 2);
    }

    #[test]
    fn a_page_with_text_of_its_own_is_compared_on_it_alone() {
        // Own text of 3 sentences (6 units) among 27 template ones: 10% of the page.
        let mut keys: Vec<u64> = (10..22).collect();
        keys.extend([1, 2, 3]);
        keys.extend(22..37);
        let templates: Vec<u64> = (10..37).collect();
        let stub = TemplateConfig { min_content_units: 7, ..Default::default() };
        assert_eq!(apply(&page(&keys), &templates, &stub).content.sentences.len(), 18, "a title at most: a stub");
        let own = TemplateConfig { min_content_units: 6, ..Default::default() };
        let filtered = apply(&page(&keys), &templates, &own);
        assert_eq!(
            filtered.content.sentences.compared().collect::<Vec<_>>(),
            vec![(1, 2), (2, 2), (3, 2)],
            "its own text, nothing of the generated blocks"
        );
    }

    #[test]
    fn boilerplate_inside_the_own_text_stays_and_is_named() {
        // Menu (10, 11), own 1, boilerplate 12 (2 units), own 2, a generated list 13..=38
        // (52 units), own 3, footer 39.
        let mut keys: Vec<u64> = vec![10, 11, 1, 12, 2];
        keys.extend(13..39);
        keys.extend([3, 39]);
        let templates: Vec<u64> = (10..40).collect();
        // 6 units of its own: enough not to be a stub.
        let config = TemplateConfig { min_content_units: 6, ..Default::default() };
        let filtered = apply(&page(&keys), &templates, &config);
        assert_eq!(
            filtered.content.sentences.compared().collect::<Vec<_>>(),
            vec![(1, 2), (12, 2), (2, 2), (3, 2)],
            "short runs inside stay, long runs and the edges go"
        );
        assert_eq!(filtered.content.template_keys, vec![12]);
        assert_eq!(filtered.content.fingerprint_keys(), vec![1, 2, 3], "template never fingerprints a page with text of its own");
        // The bound is inclusive: a run of exactly interior_run_units stays.
        let exact = TemplateConfig { interior_run_units: 52, ..config };
        assert_eq!(apply(&page(&keys), &templates, &exact).content.sentences.len(), 30);
        let off = TemplateConfig { interior_run_units: 0, ..config };
        let filtered = apply(&page(&keys), &templates, &off);
        assert_eq!(filtered.content.sentences.compared().collect::<Vec<_>>(), vec![(1, 2), (2, 2), (3, 2)], "0: the own text alone");
        assert!(filtered.content.template_keys.is_empty());
    }

    #[test]
    fn a_page_with_its_main_content_marked_keeps_the_boilerplate_at_its_edges() {
        // Heading 10 (2 units), own 1, 2, closing boilerplate 11, 12 (4 units).
        let templates: Vec<u64> = (10..39).collect();
        let config = TemplateConfig { min_content_units: 4, ..Default::default() };
        let mut marked = page(&[10, 1, 2, 11, 12]);
        assert_eq!(apply(&marked, &templates, &config).content.sentences.len(), 2, "unmarked: menus may sit at the edges");
        marked.main_marked = true;
        let filtered = apply(&marked, &templates, &config);
        assert_eq!(
            filtered.content.sentences.compared().collect::<Vec<_>>(),
            vec![(10, 2), (1, 2), (2, 2), (11, 2), (12, 2)],
            "short edge runs stay"
        );
        assert_eq!(filtered.content.template_keys, vec![10, 11, 12]);
        // A long generated block at the edge (52 units) still goes.
        let mut keys = vec![1, 2];
        keys.extend(13..39);
        let mut long = page(&keys);
        long.main_marked = true;
        assert_eq!(apply(&long, &templates, &config).content.sentences.compared().collect::<Vec<_>>(), vec![(1, 2), (2, 2)]);
        assert_eq!(filtered.content.fingerprint_keys(), vec![1, 2]);
    }

    #[test]
    fn a_stub_names_its_template() {
        let filtered = apply(&page(&[5, 6, 1, 7, 8]), &[5, 6, 7, 8], &TemplateConfig::default());
        assert_eq!(filtered.content.template_keys, vec![7, 8]);
        assert!(filtered.content.dominated);
        assert_eq!(filtered.own_sentences(), filtered.content.sentences.compared().collect::<Vec<_>>(), "a stub's sentences are its own");
    }
}
