//! The sentence-share gate: "how much of this document already exists?"
//!
//! A corpus is indexed by sentence key (the pipeline's normalized-sentence hash). A document's
//! share is the weight (sentence length) of its sentences found on corpus pages over its whole
//! weight; template sentences of the corpus (by the pipeline's per-host rule) are left out of
//! both, so a site's boilerplate does not make every page a duplicate. Duplicated sentences are
//! reported as spans (runs of consecutive sentences first seen on the same page), and the
//! smallest set of corpus pages that together hold them is approximated greedily (the set-cover
//! heuristic: take the page covering the most uncovered weight, repeat), so a patchwork of
//! pages A, B and C shows as such.
//!
//! The threshold can be fixed or derived from the corpus itself: every corpus page's share
//! against the other pages is computed and the cut is Otsu's threshold of that distribution
//! (the split of the histogram into two classes with the largest between-class variance: the
//! "mostly new" and "mostly copied" pages), over the whole corpus or per site.

use std::collections::{BTreeMap, HashMap};

use dupflow_operators::ingest::sentence::SentenceConfig;
use dupflow_operators::template::TemplateConfig;
use dupflow_operators::{Page, PageId, PageMeta};
use serde::Serialize;

/// One corpus page, as the index keeps it.
#[derive(Clone, Debug)]
pub struct IndexedPage {
    pub url: String,
    pub host: u64,
    /// Sentences in order: (key, weight).
    pub sentences: Vec<(u64, u16)>,
}

/// Corpus pages by sentence key, kept under insertions and removals (a live run's index is
/// updated as pages come and go).
#[derive(Debug, Default)]
pub struct ShareIndex {
    /// By page id: the earliest first.
    pages: BTreeMap<PageId, IndexedPage>,
    by_url: HashMap<String, PageId>,
    /// Key → the pages holding it, ascending.
    holders: HashMap<u64, Vec<PageId>>,
    /// (host, key) → pages of the host holding the key; host → pages.
    df: HashMap<(u64, u64), u64>,
    host_pages: HashMap<u64, u64>,
    template: TemplateConfig,
}

/// A run of consecutive duplicated sentences first seen on the same page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    /// Sentence offsets in the document, `[from, to)`.
    pub from: usize,
    pub to: usize,
    /// The earliest corpus page holding these sentences.
    pub first_url: String,
}

/// A page of the cover and what it contributes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoverPage {
    pub url: String,
    /// Duplicated sentences of the document this page holds and no page chosen before it.
    pub sentences: usize,
    /// Their weight over the document's weight.
    pub share: f64,
}

/// The gate's answer for one document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShareReport {
    /// Weight of duplicated sentences over the weight of all (non-template) sentences.
    pub share: f64,
    pub sentences: usize,
    pub duplicate_sentences: usize,
    pub spans: Vec<Span>,
    pub cover: Vec<CoverPage>,
}

fn distinct(page: &Page) -> Vec<u64> {
    let mut keys: Vec<u64> = page.sentences.iter().map(|s| s.key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

impl ShareIndex {
    /// An index of `pages`; template keys follow `template`.
    pub fn new(pages: Vec<Page>, template: &TemplateConfig) -> ShareIndex {
        let mut index = ShareIndex::empty(template);
        for page in &pages {
            index.insert(page);
        }
        index
    }

    pub fn empty(template: &TemplateConfig) -> ShareIndex {
        ShareIndex { template: *template, ..Default::default() }
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    pub fn insert(&mut self, page: &Page) {
        if self.pages.contains_key(&page.id) {
            return;
        }
        *self.host_pages.entry(page.host).or_default() += 1;
        for key in distinct(page) {
            *self.df.entry((page.host, key)).or_default() += 1;
            let holders = self.holders.entry(key).or_default();
            let at = holders.partition_point(|p| *p < page.id);
            holders.insert(at, page.id);
        }
        self.by_url.insert(page.url.to_string(), page.id);
        let sentences = page.sentences.iter().map(|s| (s.key, s.weight)).collect();
        self.pages
            .insert(page.id, IndexedPage { url: page.url.to_string(), host: page.host, sentences });
    }

    pub fn remove(&mut self, page: &Page) {
        if self.pages.remove(&page.id).is_none() {
            return;
        }
        if let Some(n) = self.host_pages.get_mut(&page.host) {
            *n -= 1;
            if *n == 0 {
                self.host_pages.remove(&page.host);
            }
        }
        for key in distinct(page) {
            if let Some(n) = self.df.get_mut(&(page.host, key)) {
                *n -= 1;
                if *n == 0 {
                    self.df.remove(&(page.host, key));
                }
            }
            if let Some(holders) = self.holders.get_mut(&key) {
                holders.retain(|p| *p != page.id);
                if holders.is_empty() {
                    self.holders.remove(&key);
                }
            }
        }
        if self.by_url.get(&*page.url) == Some(&page.id) {
            self.by_url.remove(&*page.url);
        }
    }

    /// The page with this URL, if indexed.
    pub fn find(&self, url: &str) -> Option<PageId> {
        self.by_url.get(url).copied()
    }

    pub fn page(&self, id: PageId) -> Option<&IndexedPage> {
        self.pages.get(&id)
    }

    fn is_template_on(&self, host: u64, key: u64) -> bool {
        let pages = self.host_pages.get(&host).copied().unwrap_or(0);
        pages > 0
            && self.df.get(&(host, key)).copied().unwrap_or(0) >= self.template.threshold(pages)
    }

    /// The share report of a document's sentences. `host`: the document's host (its template
    /// sentences are left out); `None` leaves out every sentence that is template on the host
    /// of any page holding it. `exclude`: a corpus page not to count (the document itself).
    pub fn report(
        &self,
        sentences: &[(u64, u16)],
        host: Option<u64>,
        exclude: Option<PageId>,
    ) -> ShareReport {
        let is_template = |key: u64| match host {
            Some(h) => self.is_template_on(h, key),
            None => self.holders.get(&key).is_some_and(|holders| {
                holders
                    .iter()
                    .filter_map(|p| self.pages.get(p))
                    .any(|p| self.is_template_on(p.host, key))
            }),
        };
        let kept: Vec<(usize, u64, u16)> = sentences
            .iter()
            .enumerate()
            .filter(|(_, (k, _))| !is_template(*k))
            .map(|(i, &(k, w))| (i, k, w))
            .collect();
        let total: u64 = kept.iter().map(|&(_, _, w)| w as u64).sum();
        let holders = |key: u64| -> Vec<PageId> {
            self.holders
                .get(&key)
                .map(|v| v.iter().copied().filter(|&p| Some(p) != exclude).collect())
                .unwrap_or_default()
        };
        let dup: Vec<(usize, u16, Vec<PageId>)> =
            kept.iter().map(|&(i, k, w)| (i, w, holders(k))).filter(|d| !d.2.is_empty()).collect();
        let dup_weight: u64 = dup.iter().map(|d| d.1 as u64).sum();
        let share = if total == 0 { 0.0 } else { dup_weight as f64 / total as f64 };
        let url = |p: &PageId| self.pages[p].url.clone();

        let mut spans: Vec<Span> = Vec::new();
        for (i, _, pages) in &dup {
            let first = url(&pages[0]);
            match spans.last_mut() {
                Some(span) if span.to == *i && span.first_url == first => span.to = i + 1,
                _ => spans.push(Span { from: *i, to: i + 1, first_url: first }),
            }
        }

        // Greedy set cover over the duplicated sentences, by weight; ties: the earliest page.
        let mut uncovered: BTreeMap<usize, (u16, &Vec<PageId>)> =
            dup.iter().map(|(i, w, p)| (*i, (*w, p))).collect();
        let mut cover = Vec::new();
        while !uncovered.is_empty() {
            let mut gain: BTreeMap<PageId, (u64, usize)> = BTreeMap::new();
            for (w, pages) in uncovered.values() {
                for &p in pages.iter() {
                    let g = gain.entry(p).or_default();
                    g.0 += *w as u64;
                    g.1 += 1;
                }
            }
            let Some((&best, &(weight, count))) =
                gain.iter().max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.0.cmp(a.0)))
            else {
                break;
            };
            uncovered.retain(|_, (_, pages)| !pages.contains(&best));
            cover.push(CoverPage {
                url: url(&best),
                sentences: count,
                share: if total == 0 { 0.0 } else { weight as f64 / total as f64 },
            });
        }
        ShareReport { share, sentences: kept.len(), duplicate_sentences: dup.len(), spans, cover }
    }

    /// Every corpus page's share against the other pages (leave-one-out).
    pub fn corpus_shares(&self) -> Vec<(u64, f64)> {
        self.pages
            .iter()
            .map(|(id, page)| {
                (page.host, self.report(&page.sentences, Some(page.host), Some(*id)).share)
            })
            .collect()
    }
}

/// A live gate: the index of a running `dupflow run` (updated by its workers as pages come and
/// go) and how documents are split, for `POST /api/check`.
pub struct Gate {
    pub index: ShareIndex,
    pub sentence: SentenceConfig,
}

impl Gate {
    /// The JSON answer for a document (HTML or text) at `threshold`.
    pub fn check(&self, document: &str, threshold: f64) -> serde_json::Value {
        let sentences = document_sentences(document, &self.sentence);
        let report = self.index.report(&sentences, None, None);
        answer("(posted)", &report, threshold, "fixed", self.index.len())
    }
}

/// A document's sentences (key, weight), split as the pipeline splits pages: HTML is stripped,
/// plain text taken line by line.
pub fn document_sentences(text: &str, config: &SentenceConfig) -> Vec<(u64, u16)> {
    let (blocks, lang): (Vec<String>, Option<String>) = if text.contains('<') && text.contains('>')
    {
        let stripped = dupflow_operators::ingest::html::strip_with(text, config.landmarks);
        (stripped.blocks, stripped.lang)
    } else {
        (text.lines().map(str::to_string).collect(), None)
    };
    let meta = PageMeta { id: PageId::default(), url: "".into(), host: 0, record_id: "".into() };
    let (page, _) = dupflow_operators::ingest::sentence::page_in(
        meta,
        &blocks,
        config,
        dupflow_operators::ingest::sentence::Shingling::None,
        lang.as_deref(),
    );
    page.sentences.iter().map(|s| (s.key, s.weight)).collect()
}

/// The JSON of a report against a threshold.
pub fn answer(
    document: &str,
    report: &ShareReport,
    threshold: f64,
    rule: &str,
    corpus_pages: usize,
) -> serde_json::Value {
    serde_json::json!({
        "document": document,
        "share": report.share,
        "threshold": threshold,
        "threshold_rule": rule,
        "verdict": if report.share > threshold { "duplicate" } else { "new" },
        "sentences": report.sentences,
        "duplicate_sentences": report.duplicate_sentences,
        "patchwork": report.cover.len() > 1,
        "cover": report.cover,
        "spans": report.spans,
        "corpus_pages": corpus_pages,
    })
}

/// Otsu's threshold of values in [0, 1] (100 bins): the cut maximizing the between-class
/// variance. `None` for fewer than two distinct values.
pub fn otsu(values: &[f64]) -> Option<f64> {
    const BINS: usize = 100;
    let mut hist = [0u64; BINS + 1];
    for &v in values {
        hist[((v.clamp(0.0, 1.0) * BINS as f64).round()) as usize] += 1;
    }
    if hist.iter().filter(|&&c| c > 0).count() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let total: f64 = hist.iter().enumerate().map(|(i, &c)| i as f64 * c as f64).sum();
    let (mut w0, mut sum0, mut best, mut cut) = (0.0, 0.0, -1.0, 0);
    for (t, &count) in hist.iter().enumerate().take(BINS) {
        w0 += count as f64;
        sum0 += t as f64 * count as f64;
        let w1 = n - w0;
        if w0 == 0.0 || w1 == 0.0 {
            continue;
        }
        let (m0, m1) = (sum0 / w0, (total - sum0) / w1);
        let between = w0 * w1 * (m0 - m1) * (m0 - m1);
        if between > best {
            best = between;
            cut = t;
        }
    }
    // Values above the cut bin are the upper class.
    Some((cut as f64 + 0.5) / BINS as f64)
}

/// Adaptive thresholds: Otsu over all corpus pages, and per host where a host has at least
/// `min_pages` pages (else the global one).
pub fn adaptive_thresholds(
    shares: &[(u64, f64)],
    min_pages: usize,
) -> (Option<f64>, HashMap<u64, f64>) {
    let all: Vec<f64> = shares.iter().map(|&(_, s)| s).collect();
    let global = otsu(&all);
    let mut by_host: HashMap<u64, Vec<f64>> = HashMap::new();
    for &(h, s) in shares {
        by_host.entry(h).or_default().push(s);
    }
    let per_host = by_host
        .into_iter()
        .filter(|(_, v)| v.len() >= min_pages)
        .filter_map(|(h, v)| otsu(&v).map(|t| (h, t)))
        .collect();
    (global, per_host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dupflow_operators::Sentence;

    fn page(n: u64, host: u64, keys: &[u64]) -> Page {
        Page {
            id: PageId { date: n, hash: 0 },
            url: format!("u{n}").into(),
            host,
            record_id: "".into(),
            sentences: keys
                .iter()
                .map(|&key| Sentence::new(key, (key % 7 + 1) as u16, true, 0))
                .collect(),
            shingles: Vec::new(),
            words: Default::default(),
            main_marked: false,
        }
    }

    fn sentences(keys: &[u64]) -> Vec<(u64, u16)> {
        keys.iter().map(|&k| (k, (k % 7 + 1) as u16)).collect()
    }

    fn no_templates() -> TemplateConfig {
        TemplateConfig { min_pages: 1000, page_fraction: 1.0, ..Default::default() }
    }

    #[test]
    fn share_and_spans_are_exact() {
        let index = ShareIndex::new(
            vec![page(1, 1, &[10, 11, 12]), page(2, 1, &[20, 21]), page(3, 1, &[11, 30])],
            &no_templates(),
        );
        // Weights: 10→4, 11→5, 12→6, 20→7, 21→1, 99→2, 30→3.
        let report = index.report(&sentences(&[10, 11, 99, 20, 21, 30]), None, None);
        assert_eq!(report.sentences, 6);
        assert_eq!(report.duplicate_sentences, 5);
        assert!((report.share - 20.0 / 22.0).abs() < 1e-12, "{}", report.share);
        assert_eq!(
            report.spans,
            vec![
                Span { from: 0, to: 2, first_url: "u1".into() },
                Span { from: 3, to: 5, first_url: "u2".into() },
                Span { from: 5, to: 6, first_url: "u3".into() },
            ]
        );
        let nothing = index.report(&sentences(&[98, 99]), None, None);
        assert_eq!((nothing.share, nothing.spans.len(), nothing.cover.len()), (0.0, 0, 0));
    }

    #[test]
    fn set_cover_finds_the_planted_sources() {
        // The document is stitched from A (1..=4), B (5..=7) and C (8, 9); D overlaps A and B
        // partly (less weight than either); E holds one of C's sentences.
        let a = page(1, 1, &[1, 2, 3, 4, 100]);
        let b = page(2, 1, &[5, 6, 7, 101]);
        let c = page(3, 1, &[8, 9, 102]);
        let d = page(4, 1, &[4, 5, 103]);
        let e = page(5, 1, &[9, 104]);
        let index = ShareIndex::new(vec![e, d, c, b, a], &no_templates());
        let report = index.report(&sentences(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 50]), None, None);
        let urls: Vec<&str> = report.cover.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(urls, vec!["u1", "u2", "u3"]);
        assert_eq!(report.cover.iter().map(|c| c.sentences).sum::<usize>(), 9);
    }

    #[test]
    fn template_sentences_do_not_count() {
        let template = TemplateConfig { min_pages: 2, page_fraction: 0.5, ..Default::default() };
        let index = ShareIndex::new(
            vec![page(1, 1, &[1, 2]), page(2, 1, &[1, 3]), page(3, 1, &[1, 4])],
            &template,
        );
        let report = index.report(&sentences(&[1, 2, 5]), Some(1), None);
        assert_eq!(report.sentences, 2, "key 1 is the host's template");
        assert_eq!(report.duplicate_sentences, 1);
        // Leave-one-out: page 2's sentence 3 is on no other page.
        let shares = index.corpus_shares();
        assert!(shares.iter().all(|&(_, s)| s == 0.0));
    }

    #[test]
    fn removing_pages_equals_building_without_them() {
        let pages = vec![
            page(1, 1, &[1, 2, 3]),
            page(2, 1, &[2, 3, 4]),
            page(3, 2, &[3, 4, 5]),
            page(4, 2, &[1, 5]),
        ];
        let template = TemplateConfig { min_pages: 2, page_fraction: 0.5, ..Default::default() };
        let mut live = ShareIndex::new(pages.clone(), &template);
        live.remove(&pages[1]);
        let rebuilt =
            ShareIndex::new(vec![pages[0].clone(), pages[2].clone(), pages[3].clone()], &template);
        let doc = sentences(&[1, 2, 3, 4, 5, 9]);
        for host in [None, Some(1), Some(2)] {
            assert_eq!(live.report(&doc, host, None), rebuilt.report(&doc, host, None));
        }
        assert_eq!(live.corpus_shares(), rebuilt.corpus_shares());
        assert_eq!(live.find("u2"), None);
    }

    #[test]
    fn otsu_splits_a_bimodal_distribution() {
        let mut values: Vec<f64> = (0..80).map(|i| (i % 10) as f64 / 100.0).collect();
        values.extend((0..20).map(|i| 0.85 + (i % 10) as f64 / 100.0));
        let t = otsu(&values).unwrap();
        assert!(t > 0.09 && t < 0.85, "{t}");
        assert_eq!(otsu(&[0.5, 0.5]), None);
    }
}
