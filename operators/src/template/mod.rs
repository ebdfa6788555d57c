//! Template suppression: sentences frequent on one host are that site's template.
//!
//! Per host, the document frequency of each sentence key is maintained incrementally; a key on
//! at least `max(min_pages, ceil(page_fraction · pages on host))` pages of its host is template.
//! When a key becomes template (or stops being), only the pages holding it are filtered again:
//! the cost follows the key's pages, never the host's.
//! Template sentences take no part in fingerprints. Verification sees a page's own text with
//! the runs of template inside it (a generator's boilerplate, a listing's entries), not its
//! menus, footers or long generated blocks. A page that is (nearly) nothing but template is
//! compared on its template without the site's furniture (a stub's text, a post its host
//! repeats on its listings: its copies are its duplicates), and on all of it where all of its
//! template is furniture.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use timely::order::TotalOrder;
use timely::progress::Timestamp;

use crate::ingest::page::{Page, PageId};
use holders::HolderChange;

mod batch;
pub mod filter;
pub mod holders;
mod rule;

pub use batch::{filter_templates, filter_templates_as_of};
pub use rule::{
    apply, checkpoint_epoch, distinct_keys, refresh_time, Filtered, TemplateConfig, SITE_WIDE,
};

/// The template operator.
/// Pages with their template sentences removed.
pub type FilteredPages<'scope, T> = VecCollection<'scope, T, (PageId, Filtered), isize>;

pub trait RemoveTemplates<'scope, T: Timestamp + Lattice + TotalOrder> {
    /// Maintains per-host sentence document frequencies and strips each page's template.
    /// Returns the filtered pages and the `(host, template key)` collection (for metrics).
    fn remove_templates(
        self,
        config: TemplateConfig,
    ) -> (FilteredPages<'scope, T>, VecCollection<'scope, T, (u64, u64), isize>)
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

impl<'scope, T: Timestamp + Lattice + TotalOrder + Ord> RemoveTemplates<'scope, T>
    for VecCollection<'scope, T, (PageId, Page), isize>
{
    fn remove_templates_refreshed<F>(
        self,
        config: TemplateConfig,
        refresh: F,
    ) -> (
        VecCollection<'scope, T, (PageId, Filtered), isize>,
        VecCollection<'scope, T, (u64, u64), isize>,
    )
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
        let holdings =
            self.clone().map(|(id, page)| (page.host, id.compact(), distinct_keys(&page)));
        let runtime = crate::run::Runtime::of(&self.scope());
        let changes = holders::sentence_holders(
            holdings,
            least,
            holders::PASS_UPDATES,
            refresh.clone(),
            &runtime,
        );
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
            self.clone().map(|(_, page)| page.host).count().map(move |(host, pages)| {
                // The host's pages as a power of two (for the classes): changes at doublings.
                let pages = pages as u64;
                (host, (config.threshold(pages), 1u64 << pages.max(1).ilog2()))
            });
        // A template sentence with its frequency class (`TemplateConfig::class`), which
        // changes at each doubling of its pages or of its host's, not at each page.
        let classed = document_frequency
            .map(|((host, key), count)| (host, (key, count)))
            .join_map(host_thresholds, move |&host, &(key, count), &(threshold, host_pages)| {
                let count = count as u64;
                (count >= threshold)
                    .then(|| ((host, key), TemplateConfig::class(count, host_pages)))
            })
            .flat_map(|template| template)
            // In effect from the next refresh.
            .delay(refresh);
        let templates = classed.clone().map(|(sentence, _)| sentence);
        // Each page filtered with the template keys it holds (none for most pages of a small
        // host), in one operator keyed by the page's compact id (the holders hold that, 8 bytes,
        // not the 16 of a `PageId`). It holds every page for its next filtering, which reads its
        // sentences, words and shingles: not its URL and record id. They are shared with the
        // source's copy in one process, but a page from another process would hold its own.
        let held = holders.join_core(
            classed.arrange_by_key_named("Arrange: template sentences"),
            |&(_, key), &id, &class| Some(filter::FilterUpdate::Template(id, key, class)),
        );
        let pages = self.map(|(id, mut page)| {
            page.url = crate::ingest::page::no_text();
            page.record_id = crate::ingest::page::no_text();
            filter::FilterUpdate::Page(id.compact(), Box::new((id, page)))
        });
        let filtered = filter::filtered_pages(pages.concat(held), config);
        (filtered, templates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::page::Sentence;

    fn page(keys: &[u64]) -> Page {
        Page::of_keys(keys, |key| Sentence::new(key, 2, key < 100, 0))
    }

    /// Template keys, all of one frequency class.
    fn t(keys: &[u64]) -> Vec<(u64, u8)> {
        classed(keys, 5)
    }

    fn classed(keys: &[u64], class: u8) -> Vec<(u64, u8)> {
        let mut keys: Vec<(u64, u8)> = keys.iter().map(|&key| (key, class)).collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn threshold_uses_the_larger_bound() {
        let config = TemplateConfig { min_pages: 4, page_fraction: 0.5, ..Default::default() };
        assert_eq!(config.threshold(2), 4);
        assert_eq!(config.threshold(20), 10);
        assert_eq!(
            TemplateConfig { min_pages: 0, page_fraction: 0.0, ..Default::default() }.threshold(5),
            2
        );
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
        let off =
            TemplateConfig { interior_run_units: 0, interior_run_share: 0.0, ..Default::default() };
        let filtered = apply(&page(&[1, 2, 3, 2]), &t(&[2]), &off);
        assert_eq!(filtered.content.sentences.compared().collect::<Vec<_>>(), vec![(1, 2), (3, 2)]);
        assert_eq!(filtered.content.fingerprint_keys(), vec![1, 3]);
        // By default the template sentence inside the own text stays (not the trailing one),
        // named, and still out of the fingerprints and of the own sentences.
        let filtered = apply(&page(&[1, 2, 3, 2]), &t(&[2]), &TemplateConfig::default());
        assert_eq!(
            filtered.content.sentences.compared().collect::<Vec<_>>(),
            vec![(1, 2), (2, 2), (3, 2)]
        );
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
        page.words = sizes
            .iter()
            .enumerate()
            .flat_map(|(i, &n)| std::iter::repeat_n(i as u16, n as usize))
            .collect::<Vec<_>>()
            .into();
        let words = |f: &Filtered| f.content.words.to_vec();
        // The edges go, the short run inside stays: one run of the page's words, shared.
        let filtered = apply(&page, &t(&[10, 11]), &TemplateConfig::default());
        assert_eq!(words(&filtered), [1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4]);
        assert_eq!(filtered.content.word_counts, [2, 3, 4, 5]);
        assert!(filtered.content.words.is_shared_with(&page.words));
        let keys_of = |f: &Filtered| f.content.sentences.iter().map(|s| s.key).collect::<Vec<_>>();
        assert_eq!(keys_of(&filtered), [1, 2, 11, 3]);
        assert!(filtered.content.sentences.is_shared_with(&page.sentences));
        // The run inside goes too: two runs, copied.
        let off =
            TemplateConfig { interior_run_units: 0, interior_run_share: 0.0, ..Default::default() };
        let filtered = apply(&page, &t(&[10, 11]), &off);
        assert_eq!(words(&filtered), [1, 1, 2, 2, 2, 4, 4, 4, 4, 4]);
        assert!(!filtered.content.words.is_shared_with(&page.words));
        assert_eq!(keys_of(&filtered), [1, 2, 3]);
        assert!(!filtered.content.sentences.is_shared_with(&page.sentences));
        // No template: the whole page, shared.
        let filtered = apply(&page, &t(&[]), &TemplateConfig::default());
        assert_eq!(words(&filtered), page.words.to_vec());
        assert!(filtered.content.words.is_shared_with(&page.words));
        assert_eq!(keys_of(&filtered), keys);
        assert!(filtered.content.sentences.is_shared_with(&page.sentences));
    }

    #[test]
    fn short_sentences_fingerprint_only_when_nothing_else_is_left() {
        let filtered = apply(&page(&[200, 300]), &t(&[]), &TemplateConfig::default());
        assert_eq!(filtered.content.fingerprint_keys(), vec![200, 300]);
        let filtered = apply(&page(&[1, 300]), &t(&[]), &TemplateConfig::default());
        assert_eq!(filtered.content.fingerprint_keys(), vec![1]);
    }

    #[test]
    fn a_pure_template_page_keeps_everything() {
        let filtered = apply(&page(&[5, 6]), &t(&[5, 6]), &TemplateConfig::default());
        assert_eq!(filtered.content.sentences.compared().collect::<Vec<_>>(), vec![(5, 2), (6, 2)]);
        assert_eq!(filtered.content.fingerprint_keys(), vec![5, 6]);
        // One sentence of five left (20% < 25%): template-dominated, its template all of one
        // class: it keeps everything.
        let filtered =
            apply(&page(&[5, 6, 1, 7, 8]), &t(&[5, 6, 7, 8]), &TemplateConfig::default());
        assert_eq!(
            filtered.content.sentences.compared().collect::<Vec<_>>(),
            vec![(5, 2), (6, 2), (1, 2), (7, 2), (8, 2)]
        );
        let filtered = apply(&page(&[1, 2, 6, 7, 8]), &t(&[6, 7, 8]), &TemplateConfig::default());
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
        assert_eq!(
            apply(&page(&keys), &t(&templates), &stub).content.sentences.len(),
            30,
            "a title at most: a stub, its template all of one class"
        );
        let own = TemplateConfig { min_content_units: 6, ..Default::default() };
        let filtered = apply(&page(&keys), &t(&templates), &own);
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
        let filtered = apply(&page(&keys), &t(&templates), &config);
        assert_eq!(
            filtered.content.sentences.compared().collect::<Vec<_>>(),
            vec![(1, 2), (12, 2), (2, 2), (3, 2)],
            "short runs inside stay, long runs and the edges go"
        );
        assert_eq!(filtered.content.template_keys, vec![12]);
        assert_eq!(
            filtered.content.fingerprint_keys(),
            vec![1, 2, 3],
            "template never fingerprints a page with text of its own"
        );
        // The bound is inclusive: a run of exactly interior_run_units stays.
        let exact = TemplateConfig { interior_run_units: 52, ..config };
        assert_eq!(apply(&page(&keys), &t(&templates), &exact).content.sentences.len(), 30);
        let off = TemplateConfig { interior_run_units: 0, interior_run_share: 0.0, ..config };
        let filtered = apply(&page(&keys), &t(&templates), &off);
        assert_eq!(
            filtered.content.sentences.compared().collect::<Vec<_>>(),
            vec![(1, 2), (2, 2), (3, 2)],
            "0: the own text alone"
        );
        assert!(filtered.content.template_keys.is_empty());
    }

    #[test]
    fn a_page_with_its_main_content_marked_keeps_the_boilerplate_at_its_edges() {
        // Heading 10 (2 units), own 1, 2, closing boilerplate 11, 12 (4 units).
        let templates: Vec<u64> = (10..39).collect();
        let config = TemplateConfig { min_content_units: 4, ..Default::default() };
        let mut marked = page(&[10, 1, 2, 11, 12]);
        assert_eq!(
            apply(&marked, &t(&templates), &config).content.sentences.len(),
            2,
            "unmarked: menus may sit at the edges"
        );
        marked.main_marked = true;
        let filtered = apply(&marked, &t(&templates), &config);
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
        assert_eq!(
            apply(&long, &t(&templates), &config).content.sentences.compared().collect::<Vec<_>>(),
            vec![(1, 2), (2, 2)]
        );
        assert_eq!(filtered.content.fingerprint_keys(), vec![1, 2]);
    }

    #[test]
    fn a_template_dominated_page_leaves_out_the_sites_furniture() {
        // A post the site repeats on its listings (keys 1..=6, on 16-31 pages: class 4) with
        // its byline (100, its own), between a menu (50, 51) and a sidebar and footer (60..=63)
        // on 1,024 pages or more (class 10).
        let keys = [50, 51, 100, 1, 2, 3, 4, 5, 6, 60, 61, 62, 63];
        let mut templates = classed(&[1, 2, 3, 4, 5, 6], 4);
        templates.extend(classed(&[50, 51, 60, 61, 62, 63], 10));
        templates.sort_unstable();
        let filtered = apply(&page(&keys), &templates, &TemplateConfig::default());
        assert!(filtered.content.dominated);
        assert_eq!(
            filtered.content.sentences.iter().map(|s| s.key).collect::<Vec<_>>(),
            vec![100, 1, 2, 3, 4, 5, 6],
            "the post and its byline, not the menu, sidebar or footer"
        );
        assert_eq!(filtered.content.template_keys, vec![1, 2, 3, 4, 5, 6]);
        // Within `furniture_classes` of the rarest (class 7 against 4 with 3): kept. A stub
        // whose sentences are shared by families of stubs of different sizes stays whole.
        let mut near = classed(&[1, 2, 3, 4, 5, 6], 4);
        near.extend(classed(&[50, 51, 60, 61, 62, 63], 7));
        near.sort_unstable();
        assert_eq!(
            apply(&page(&keys), &near, &TemplateConfig::default()).content.sentences.len(),
            13
        );
        let tight = TemplateConfig { furniture_classes: 2, ..TemplateConfig::default() };
        assert_eq!(apply(&page(&keys), &near, &tight).content.sentences.len(), 7);
        // Site-wide template goes whatever the span, unless all the page's template is; 255
        // keeps everything.
        let mut small = classed(&[1, 2, 3, 4, 5, 6], 4);
        small.extend(classed(&[50, 51, 60, 61, 62, 63], SITE_WIDE));
        small.sort_unstable();
        let wide = TemplateConfig { furniture_classes: 200, ..TemplateConfig::default() };
        assert_eq!(apply(&page(&keys), &small, &wide).content.sentences.len(), 7);
        let all = classed(&[1, 2, 3, 4, 5, 6, 50, 51, 60, 61, 62, 63], SITE_WIDE);
        assert_eq!(apply(&page(&keys), &all, &wide).content.sentences.len(), 13);
        let off = TemplateConfig { furniture_classes: u8::MAX, ..TemplateConfig::default() };
        assert_eq!(apply(&page(&keys), &small, &off).content.sentences.len(), 13);
    }

    #[test]
    fn a_listings_entries_inside_its_own_text_stay() {
        // Own 1, 2 and 3 (6 units), between them entries the host repeats: 20, 21 (4 units)
        // and 22..=25 (8 units); the menu 30 before, the footer 31 after.
        let keys = [30, 1, 20, 21, 2, 22, 23, 24, 25, 3, 31];
        let templates = t(&[20, 21, 22, 23, 24, 25, 30, 31]);
        let compared = |config: &TemplateConfig| {
            let filtered = apply(&page(&keys), &templates, config);
            filtered.content.sentences.iter().map(|s| s.key).collect::<Vec<_>>()
        };
        let short = TemplateConfig {
            min_content_units: 6,
            interior_run_units: 0,
            interior_run_share: 1.0,
            ..TemplateConfig::default()
        };
        assert_eq!(compared(&short), vec![1, 20, 21, 2, 3], "runs up to the own text's 6 units");
        let twice = TemplateConfig { interior_run_share: 2.0, ..short };
        assert_eq!(
            compared(&twice),
            vec![1, 20, 21, 2, 22, 23, 24, 25, 3],
            "runs up to twice the own text: the edges still go"
        );
        let none = TemplateConfig { interior_run_share: 0.0, ..short };
        assert_eq!(compared(&none), vec![1, 2, 3]);
    }

    #[test]
    fn a_frequency_class_changes_at_each_doubling() {
        let class = |pages| TemplateConfig::class(pages, 4096);
        let classes: Vec<u8> = [1, 2, 3, 4, 31, 32, 1023, 1024].map(class).to_vec();
        assert_eq!(classes, vec![0, 1, 1, 2, 4, 5, 9, 10]);
        assert_eq!(class(0), 0);
        // From a quarter to a half of the host's pages on (by their powers of two): site-wide.
        assert_eq!(class(2047), 10);
        assert_eq!(class(2048), SITE_WIDE);
        assert_eq!(TemplateConfig::class(2048, 6000), SITE_WIDE);
        assert_eq!(TemplateConfig::class(2047, 8192), 10);
        assert_eq!(TemplateConfig::class(4, 8), SITE_WIDE, "on a small host, all template is");
    }

    #[test]
    fn a_stub_names_its_template() {
        let filtered =
            apply(&page(&[5, 6, 1, 7, 8]), &t(&[5, 6, 7, 8]), &TemplateConfig::default());
        assert_eq!(filtered.content.template_keys, vec![5, 6, 7, 8]);
        assert!(filtered.content.dominated);
        assert_eq!(
            filtered.own_sentences(),
            filtered.content.sentences.compared().collect::<Vec<_>>(),
            "a stub's sentences are its own"
        );
    }
}
