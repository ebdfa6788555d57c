//! Record → page, the one way every caller makes a page: the response decoded
//! (`http::interpret`), its HTML stripped to text blocks (`ingest::html`, the main content where
//! landmarks mark it), the blocks split into normalized, hashed and weighed sentences and words
//! (`ingest::sentence`); a text corpus row is split the same way, without the strip. The worker loop, the in-process engine and the commands that read
//! pages (`check`, `similar`'s corpus) all call these, so a page is the same page everywhere.

use dupflow_operators::ingest::sentence::{SentenceConfig, Shingling};
use dupflow_operators::ingest::{html, sentence};
use dupflow_operators::{Page, PageMeta, Sentence};

use crate::metrics::{self, Registry};
use crate::source::http::{self, Outcome, Revisit};
use crate::source::text::TextDoc;
use crate::source::RawRecord;

/// How pages are made: the sentence settings, the shingles kept for the fingerprints, the cap
/// on a page's bytes.
#[derive(Clone, Debug)]
pub struct Ingest {
    pub sentence: SentenceConfig,
    pub shingling: Shingling,
    pub max_page_bytes: usize,
}

/// A page, whether its sentences were capped at `max_sentences_per_page`, and whether its
/// markup's nesting was capped (`html::StrippedPage::depth_capped`).
pub struct Made {
    pub page: Page,
    pub capped: bool,
    pub depth_capped: bool,
}

impl Ingest {
    /// An HTML page stripped and split. With `metrics`, each stage is timed and counted
    /// (`strip`, `split`).
    pub fn html(&self, meta: PageMeta, html: &str, metrics: Option<&Registry>) -> Made {
        let strip = || html::strip_with(html, self.sentence.landmarks);
        let stripped = match metrics {
            Some(m) => m.stage("strip", strip),
            None => strip(),
        };
        let split = || sentence::page_of_html(meta, &stripped, &self.sentence, self.shingling);
        let (page, capped) = match metrics {
            Some(m) => m.stage("split", split),
            None => split(),
        };
        Made { page, capped, depth_capped: stripped.depth_capped }
    }

    /// A text corpus row's page (split, no strip), whether its text was cut at
    /// `max_page_bytes`, and whether its sentences were capped.
    pub fn text(&self, doc: &TextDoc) -> (Page, bool, bool) {
        crate::source::text::page_of(doc, &self.sentence, self.shingling, self.max_page_bytes)
    }

    /// A WARC record's page, if it holds one (a 2xx HTML response or resource, decoded);
    /// `None` for every other record (revisits, requests, errors, other types).
    pub fn record(&self, record: &RawRecord) -> Option<Page> {
        let Ok((Outcome::Page(doc), _)) = http::interpret(record, self.max_page_bytes) else {
            return None;
        };
        let (meta, html) = doc.into_parts();
        Some(self.html(meta, &html, None).page)
    }
}

/// A record's page as a document (its meta and HTML) for the worker loop, or `None`, counted
/// by why: a record that cannot be decoded by its error's kind, a revisit kept in `revisits`, a
/// skipped record by its reason; quirks and caps met on the way are counted too.
pub fn document<'r>(
    record: &'r RawRecord,
    max_page_bytes: usize,
    metrics: &Registry,
    revisits: &mut Vec<Revisit>,
) -> Option<(PageMeta, std::borrow::Cow<'r, str>)> {
    let (outcome, quirks) =
        match metrics.timed("decode", || http::interpret(record, max_page_bytes)) {
            Ok(interpreted) => interpreted,
            Err(error) => {
                metrics.inc(metrics::DOCUMENT_ERRORS, error.code());
                return None;
            }
        };
    for (seen, quirk) in [
        (quirks.broken_chunking, "broken_chunking"),
        (quirks.content_encoding_mismatch, "content_encoding_mismatch"),
        (quirks.missing_date, "missing_date"),
    ] {
        if seen {
            metrics.inc(metrics::QUIRKS, quirk);
        }
    }
    if quirks.page_truncated {
        metrics.inc(metrics::CAPS, "max_page_bytes");
    }
    match outcome {
        Outcome::Page(doc) => {
            metrics.inc(metrics::PAGES, "");
            let name = doc.host.clone();
            let (meta, html) = doc.into_parts();
            metrics.name_host(meta.host, &name);
            Some((meta, html))
        }
        Outcome::Revisit(revisit) => {
            metrics.inc(metrics::REVISITS, "");
            revisits.push(revisit);
            None
        }
        Outcome::Skipped(reason) => {
            metrics.inc(metrics::SKIPPED, reason);
            None
        }
    }
}

/// A sentence keeps at most `Sentence::MAX_WORDS` of its words (`sentence::compact`): each
/// sentence at that count is counted as the cap `sentence_words`.
pub fn count_long_sentences(metrics: &Registry, page: &Page) {
    let long = page.sentences.iter().filter(|s| s.words() == Sentence::MAX_WORDS).count();
    if long > 0 {
        metrics.add(metrics::CAPS, "sentence_words", long as i64);
    }
}
