//! The template rule: when a sentence is its host's template (`TemplateConfig`), when the
//! template in effect changes (`refresh_time`, `checkpoint_epoch`), and what of a page is
//! compared once its host's template sentences are known (`apply`: a page's own text, the
//! template inside it, a template-dominated page's shared text).

use serde::{Deserialize, Serialize};

use crate::ingest::page::{Content, Page, Sentences, Words};

/// The frequency class of a template sentence on a large share of its host's pages
/// (`TemplateConfig::class`).
pub const SITE_WIDE: u8 = u8::MAX;

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
    /// of the text. Longer runs (member lists, a sidebar) are left out. 0 (with
    /// `interior_run_share` 0): none stay.
    pub interior_run_units: u32,
    /// ... or of at most this many times the page's own text, if that is more: a listing's
    /// entries repeated on the host's other listings are what the listing shows, where a
    /// generated block many times the page's own text (an implemented trait's methods) is not.
    pub interior_run_share: f64,
    /// A template-dominated page is compared without its site-wide template sentences and
    /// those more than this many frequency classes above its rarest (a class is ⌊log2 pages⌋
    /// of the sentence's host; `TemplateConfig::class`): a stub's or a repeated post's text
    /// without the site's menus and sidebars around it. 255: with all of them.
    pub furniture_classes: u8,
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
            interior_run_share: 2.0,
            furniture_classes: 3,
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

    /// The frequency class of a template sentence on `pages` pages of a host of `host_pages`:
    /// ⌊log2 pages⌋, or `SITE_WIDE` when that is at least the host's ⌊log2 host_pages⌋ less one
    /// (a sentence on a quarter to a half of the host's pages or more: its menus, sidebars and
    /// footers). It changes when either count crosses a power of two, so a sentence's holders
    /// are filtered again once for each doubling, not at each page.
    pub fn class(pages: u64, host_pages: u64) -> u8 {
        let class = pages.max(1).ilog2();
        if class + 1 >= host_pages.max(1).ilog2() {
            SITE_WIDE
        } else {
            class as u8
        }
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
    /// The sentences compared, in order (`apply`: the own ones and the template kept); whether
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

/// Removes the host's template sentences (`templates`: `(key, frequency class)`, sorted by key)
/// from a page.
///
/// A page left with less than `min_content_share` of its weight, and less than
/// `min_content_units` of text of its own (a title at most), is template-dominated (a stub, a
/// redirect notice, a post whose text the site repeats on its listings: its main text is shared
/// with other pages). It keeps its sentences but the template ones more than
/// `furniture_classes` frequency classes above its rarest (the site's menus, sidebars and
/// footers, on many times as many pages as that text), so that it is compared on that shared
/// text. A page with more text of its own is compared on that text, and on the template
/// sentences inside it in runs of at most `interior_run_units`, or `interior_run_share` times
/// its own text (a generator's boilerplate: headings, "This is an internal header file…"; a
/// listing's entries): what comes before its first own sentence and after its last (menus,
/// footers) and longer runs inside (a member list, a sidebar) are left out. Sibling pages
/// sharing generated blocks are not duplicates when their own text differs: the template
/// sentences kept are named in `Content::template_keys`, which the sibling rule counts as
/// repeated blocks.
pub fn apply(page: &Page, templates: &[(u64, u8)], config: &TemplateConfig) -> Filtered {
    // Each sentence looked up once: its frequency class if it is template.
    let class: Vec<Option<u8>> = page
        .sentences
        .iter()
        .map(|s| {
            templates.binary_search_by_key(&{ s.key }, |&(key, _)| key).ok().map(|i| templates[i].1)
        })
        .collect();
    let template: Vec<bool> = class.iter().map(Option::is_some).collect();
    let total: u64 = page.sentences.iter().map(|s| s.weight as u64).sum();
    let kept: u64 = page
        .sentences
        .iter()
        .zip(&template)
        .filter(|(_, &t)| !t)
        .map(|(s, _)| s.weight as u64)
        .sum();
    let dominated = kept == 0
        || ((kept as f64) < config.min_content_share * total as f64
            && kept < config.min_content_units as u64);
    let keep = if dominated {
        dominated_text(&class, config.furniture_classes)
    } else {
        let max_run = (config.interior_run_units as u64)
            .max((config.interior_run_share * kept as f64) as u64);
        interior(page, &template, max_run)
    };
    // The kept sentences and their words (`page.words`, each sentence's run in order). Kept
    // sentences in one run (the template removed at the edges, or none) share the page's words.
    let (mut selected, mut runs, mut word_counts) =
        (Vec::new(), Vec::<std::ops::Range<usize>>::new(), Vec::new());
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
        [run] => page.words.sub(run.clone()),
        runs => {
            let all = page.words.load();
            Words::from(
                runs.iter().flat_map(|run| all[run.clone()].iter().copied()).collect::<Vec<_>>(),
            )
        }
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
    // Both live as long as the page does (in its member): at their length, not the capacity
    // their pushes reached.
    template_keys.shrink_to_fit();
    word_counts.shrink_to_fit();
    let mut shingles = page.shingles.clone();
    shingles.sort_unstable();
    shingles.dedup();
    Filtered {
        content: Content {
            sentences: content,
            shingles,
            term_weights: Vec::new(),
            words,
            word_counts,
            template_keys,
            dominated,
        },
    }
}

/// Which sentences of a template-dominated page are kept (`class`: each sentence's frequency
/// class, `None` for its own): all but the site-wide template sentences and those more than
/// `span` classes above the rarest; all of a page whose template is all site-wide, and all of
/// every page with `span` 255.
fn dominated_text(class: &[Option<u8>], span: u8) -> Vec<bool> {
    let rarest = class.iter().flatten().min().copied().unwrap_or(0);
    let furniture = rarest.saturating_add(span);
    class.iter().map(|c| c.is_none_or(|c| c <= furniture)).collect()
}

/// Which sentences of a page with text of its own are kept: its own (non-template) sentences,
/// and the template sentences between its first and last own sentence that come in runs of at
/// most `max_run` units. On a page whose markup marked its main content (`main_marked`: no
/// menu or footer is left), the runs before the first own sentence and after the last are
/// such runs too: a reference page's heading or its closing boilerplate ("This policy was
/// introduced in …", a licence note) is part of its text.
fn interior(page: &Page, template: &[bool], max_run: u64) -> Vec<bool> {
    let mut keep: Vec<bool> = template.iter().map(|&t| !t).collect();
    let (Some(mut first), Some(mut last)) =
        (keep.iter().position(|&k| k), keep.iter().rposition(|&k| k))
    else {
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
