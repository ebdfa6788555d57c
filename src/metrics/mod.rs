//! Metric definitions and the in-process registry the pipeline updates.
//!
//! Every metric is defined once below, with its help text; names follow
//! `dupflow_<name>_<unit>` with `_total` on counters, and labels are short codes
//! (`kind="invalid_gzip"`), never raw messages. Workers and the reader update the registry per
//! record or per batch; the summary (and later the `/metrics` endpoint) reads it.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// A metric's definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub help: &'static str,
    /// Label name, if the metric is split by one.
    pub label: Option<&'static str>,
}

macro_rules! metrics {
    ($($ident:ident = $name:literal, $label:expr, $help:literal;)*) => {
        $(pub const $ident: Metric = Metric { name: $name, help: $help, label: $label };)*
        /// All metrics, in definition order.
        pub const ALL: &[Metric] = &[$($ident),*];
    };
}

metrics! {
    RECORDS = "dupflow_records_total", Some("type"), "WARC/ARC records read, by record type.";
    BYTES_READ = "dupflow_read_bytes_total", None, "Bytes read from the inputs (compressed).";
    RECORD_ERRORS = "dupflow_record_errors_total", Some("kind"), "Stretches of input skipped as damaged, by kind.";
    DOCUMENT_ERRORS = "dupflow_document_errors_total", Some("kind"), "Records that should have been pages but could not be decoded, by kind.";
    SKIPPED = "dupflow_skipped_records_total", Some("reason"), "Records that are not pages by design (requests, non-HTML, non-2xx), by reason.";
    REVISITS = "dupflow_revisits_total", None, "Revisit records (same content as an earlier capture).";
    PAGES = "dupflow_pages_total", None, "HTML pages sent into the dataflow.";
    QUIRKS = "dupflow_quirks_total", Some("kind"), "Oddities tolerated without skipping (broken chunking, missing date).";
    CAPS = "dupflow_caps_hit_total", Some("cap"), "Times a size or cost cap was hit, by cap.";
    VERIFICATIONS = "dupflow_verifications_total", Some("outcome"), "LCS verifications, by outcome (accepted, rejected).";
    OVERSIZED_FINGERPRINTS = "dupflow_oversized_fingerprints", None, "Fingerprints shared by more than max_fingerprint_pages pages (dropped).";
    TEMPLATE_SENTENCES = "dupflow_template_sentences", None, "Sentence keys currently counted as site template.";
}

/// The registry: counters by (metric, label value).
#[derive(Debug, Default)]
pub struct Registry {
    values: Mutex<BTreeMap<(&'static str, String), i64>>,
}

impl Registry {
    /// Adds `n` to a counter.
    pub fn add(&self, metric: Metric, label: &str, n: i64) {
        let mut values = self.values.lock().expect("metrics lock");
        *values.entry((metric.name, label.to_string())).or_default() += n;
    }

    pub fn inc(&self, metric: Metric, label: &str) {
        self.add(metric, label, 1);
    }

    /// Sets a gauge.
    pub fn set(&self, metric: Metric, label: &str, value: i64) {
        self.values.lock().expect("metrics lock").insert((metric.name, label.to_string()), value);
    }

    /// One value (0 if never set).
    pub fn get(&self, metric: Metric, label: &str) -> i64 {
        self.values.lock().expect("metrics lock").get(&(metric.name, label.to_string())).copied().unwrap_or(0)
    }

    /// All values of a metric by label.
    pub fn by_label(&self, metric: Metric) -> BTreeMap<String, i64> {
        self.values
            .lock()
            .expect("metrics lock")
            .iter()
            .filter(|((name, _), _)| *name == metric.name)
            .map(|((_, label), v)| (label.clone(), *v))
            .collect()
    }

    /// Sum over labels.
    pub fn total(&self, metric: Metric) -> i64 {
        self.by_label(metric).values().sum()
    }
}
