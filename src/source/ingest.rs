//! Record → page, the one way every caller makes a page: the response decoded
//! (`http::interpret`), its HTML stripped to text blocks (`ingest::html`, the main content where
//! landmarks mark it), the blocks split into normalized, hashed and weighed sentences and words
//! (`ingest::sentence`); a text corpus row is split the same way, without the strip. The worker loop, the in-process engine and the commands that read
//! pages (`check`, `similar`'s corpus) all call these, so a page is the same page everywhere.

use dupflow_operators::ingest::sentence::{SentenceConfig, Shingling};
use dupflow_operators::ingest::{html, sentence};
use dupflow_operators::{Page, PageMeta};

use crate::metrics::Registry;
use crate::source::http::{self, Outcome};
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
