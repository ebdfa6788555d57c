//! Metric definitions, the in-process registry, and the HTTP endpoint (`server`).
//!
//! Every metric is defined once below, with its kind and help text; names follow
//! `dupflow_<name>_<unit>` with `_total` on counters, and labels are short codes
//! (`kind="invalid_gzip"`), never raw messages. The reader, the workers and the sink update the
//! registry per record or per batch; the summary, `/metrics` and the dashboard read it.

pub mod arrangements;
pub mod live;
mod method;
pub mod progress;
pub mod server;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// How a metric behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Counter,
    Gauge,
    /// Observations in seconds (or counts), with the bucket bounds given.
    Histogram(&'static [f64]),
}

/// A metric's definition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Metric {
    /// Its place in `ALL` (the registry's slot).
    pub index: usize,
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    /// Label name, if the metric is split by one.
    pub label: Option<&'static str>,
}

const SECONDS: &[f64] = &[0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0];
const SIZES: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 64.0, 256.0, 1024.0];

macro_rules! metrics {
    ($($ident:ident = $name:literal, $kind:expr, $label:expr, $help:literal;)*) => {
        /// The metrics' places in `ALL`.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        enum Slot { $($ident),* }
        $(pub const $ident: Metric = Metric { index: Slot::$ident as usize, name: $name, kind: $kind, help: $help, label: $label };)*
        /// All metrics, in definition order.
        pub const ALL: &[Metric] = &[$($ident),*];
    };
}

use Kind::{Counter, Gauge, Histogram};

metrics! {
    RECORDS = "dupflow_records_total", Counter, Some("type"), "WARC/ARC records read, by record type.";
    BYTES_READ = "dupflow_input_read_bytes_total", Counter, None, "Bytes of input this process read (compressed); over a cluster the processes' figures sum to the inputs' size.";
    INPUT_BYTES = "dupflow_input_bytes", Gauge, None, "Total size of the inputs, where known (for progress).";
    RECORD_ERRORS = "dupflow_record_errors_total", Counter, Some("kind"), "Stretches of input skipped as damaged, by kind.";
    DOCUMENT_ERRORS = "dupflow_document_errors_total", Counter, Some("kind"), "Records that should have been pages but could not be decoded, by kind.";
    SKIPPED = "dupflow_skipped_records_total", Counter, Some("reason"), "Records that are not pages by design (requests, non-HTML, non-2xx), by reason.";
    REVISITS = "dupflow_revisits_total", Counter, None, "Revisit records (same content as an earlier capture).";
    PAGES = "dupflow_pages_total", Counter, None, "HTML pages sent into the dataflow.";
    SENTENCES = "dupflow_sentences_total", Counter, None, "Sentences of the pages split.";
    STAGE_PAGES = "dupflow_stage_pages_total", Counter, Some("stage"), "Pages through each stage (strip, split; filtered: pages out of the template stage, each time a page is filtered again when a sentence becomes or stops being its host's template; clustered).";
    QUIRKS = "dupflow_quirks_total", Counter, Some("kind"), "Oddities tolerated without skipping (broken chunking, missing date).";
    CAPS = "dupflow_caps_hit_total", Counter, Some("cap"), "Times a size or cost cap was hit, by cap.";
    VERIFICATIONS = "dupflow_verifications_total", Counter, Some("outcome"), "Pair verifications, by outcome (accepted, rejected, pruned: a pair of a per-sentence group whose sentences cannot reach the threshold, dissimilar there without a comparison).";
    COMPARISONS = "dupflow_comparisons_total", Counter, None, "Pairs compared (verdicts not answered by the verdict cache).";
    GROUPS_HELD = "dupflow_groups_held", Gauge, None, "Fingerprint groups held by verification (its own state, beside the arrangements).";
    GROUP_ENTRIES = "dupflow_group_entries", Gauge, None, "Pages held in those groups, over all groups (16 bytes each: a pointer and its scans' reach).";
    OVERSIZED_FINGERPRINTS = "dupflow_oversized_fingerprints", Gauge, None, "Fingerprints shared by more than max_fingerprint_pages pages (dropped).";
    EXACT_DUPLICATES = "dupflow_exact_duplicate_pages", Gauge, None, "Pages identical to an earlier page (clustered with it without comparison).";
    TEMPLATE_SENTENCES = "dupflow_template_sentences", Gauge, Some("host"), "Sentence keys currently counted as site template, by host.";
    STAGE_SECONDS = "dupflow_stage_seconds", Histogram(SECONDS), Some("stage"), "Time per page (decode, strip, split) or per candidate set (verify).";
    SET_PAGES = "dupflow_candidate_set_pages", Histogram(SIZES), None, "Pages per candidate set verified.";
    EPOCH_SECONDS = "dupflow_epoch_latency_seconds", Histogram(SECONDS), None, "From an epoch's close at the reader to its cluster changes at the sink.";
    RECORD_LATENCY = "dupflow_record_latency_seconds", Histogram(SECONDS), None, "From a record being read to its epoch's cluster changes being written.";
    URL_ALIASES = "dupflow_url_aliases_total", Counter, None, "Captures whose URL is another held page's URL once normalized ([urls]): the newer of the two is the page.";
    PAGE_UPDATES = "dupflow_page_updates_total", Counter, Some("kind"), "Captures and deletions by effect: inserted, replaced, superseded (an older capture), expired (outside retention), deleted, retired (left the retention window).";
    HELD_BYTES = "dupflow_held_page_bytes", Gauge, None, "Bytes of held pages (sentence keys, URLs, ids) and deletion tombstones, kept to retract or checkpoint them.";
    CHECKPOINTS = "dupflow_checkpoints_total", Counter, None, "Checkpoints written.";
    CHANNEL_DEPTH = "dupflow_channel_depth_records", Gauge, None, "Records waiting between the reader and the workers (backpressure when full).";
    CHANNEL_CAPACITY = "dupflow_channel_capacity_records", Gauge, None, "Capacity of the reader-to-worker channels.";
    EPOCHS_CLOSED = "dupflow_epochs_closed", Gauge, None, "Epochs closed by the reader.";
    EPOCHS_DONE = "dupflow_epochs_completed", Gauge, None, "Epochs whose cluster changes reached the sink.";
    READER_WAIT = "dupflow_reader_wait_milliseconds_total", Counter, None, "Time the readers waited for the dataflow to complete an epoch before reading on (run.epochs_in_flight).";
    EPOCH_LAG = "dupflow_epoch_lag_epochs", Gauge, None, "Epochs closed by the reader but not yet complete at the sink.";
    PAGES_HELD = "dupflow_pages_held", Gauge, None, "Pages currently in the clusters.";
    CLUSTERS = "dupflow_clusters", Gauge, None, "Clusters (singletons included).";
    DUPLICATE_PAGES = "dupflow_duplicate_pages", Gauge, None, "Pages in clusters of more than one page.";
    DUPLICATE_RATIO = "dupflow_duplicate_ratio", Gauge, None, "Share of pages in clusters of more than one page.";
    LARGEST_CLUSTER = "dupflow_largest_cluster_pages", Gauge, None, "Pages in the largest cluster.";
    CLUSTER_TOTALS = "dupflow_cluster_totals", Gauge, Some("of"), "Process 0 of a cluster: the whole cluster's clusters, pages, duplicate_pages and largest (the other gauges show this process's shard).";
    ARRANGED_UPDATES = "dupflow_arranged_updates", Gauge, Some("arrangement"), "Updates held by each of the dataflow's arrangements (all workers), by operator name and id (differential's batch log).";
    STATE_BYTES = "dupflow_state_bytes", Gauge, Some("structure"), "Bytes held by each structure of the method that grows with the pages (walked by its operator at most every 10 s; once the run has ended, what they held at its end), this process; held pages have their own (dupflow_held_page_bytes).";
    RSS_BYTES = "dupflow_process_resident_memory_bytes", Gauge, None, "Resident memory of the process.";
    HTTP_RESPONSES = "dupflow_http_responses_total", Counter, Some("status"), "Responses of the HTTP endpoint, by status code.";
    HTTP_REFUSED = "dupflow_http_refused_total", Counter, Some("reason"), "Connections or checks the endpoint turned away: connections (max_connections), check_queue (503), deadline (a connection past its time).";
}

#[derive(Debug, Clone, Default)]
struct HistogramValue {
    buckets: Vec<u64>,
    count: u64,
    sum: f64,
}

/// The registry: values by (metric, label value). Each metric has its own slot and lock, so
/// workers counting different things do not wait on each other, and finding a metric is an
/// index, not a search by name (the workers count per page and per verified group).
#[derive(Debug)]
pub struct Registry {
    values: Box<[Mutex<BTreeMap<String, f64>>]>,
    histograms: Box<[Mutex<BTreeMap<String, HistogramValue>>]>,
    /// Host names by their stable hash (the dataflow carries hashes), for labels.
    host_names: Mutex<std::collections::HashMap<u64, String>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            values: ALL.iter().map(|_| Mutex::default()).collect(),
            histograms: ALL.iter().map(|_| Mutex::default()).collect(),
            host_names: Mutex::default(),
        }
    }
}

/// The entry of `label` in `map`, allocating the label only the first time (hot path).
fn entry<'a, V: Default>(map: &'a mut BTreeMap<String, V>, label: &str) -> &'a mut V {
    if !map.contains_key(label) {
        map.insert(label.to_string(), V::default());
    }
    map.get_mut(label).expect("just inserted")
}

impl Registry {
    /// Adds `n` to a counter (or moves a gauge by `n`).
    pub fn add(&self, metric: Metric, label: &str, n: i64) {
        *entry(&mut self.values[metric.index].lock().expect("metrics lock"), label) += n as f64;
    }

    /// Remembers the name behind a host hash.
    pub fn name_host(&self, hash: u64, name: &str) {
        let mut names = self.host_names.lock().expect("metrics lock");
        names.entry(hash).or_insert_with(|| name.to_string());
    }

    /// The name of a host hash (its hex when unknown, e.g. seen by another process).
    pub fn host_name(&self, hash: u64) -> String {
        self.host_names
            .lock()
            .expect("metrics lock")
            .get(&hash)
            .cloned()
            .unwrap_or_else(|| format!("{hash:016x}"))
    }

    pub fn inc(&self, metric: Metric, label: &str) {
        self.add(metric, label, 1);
    }

    /// Sets a gauge.
    pub fn set(&self, metric: Metric, label: &str, value: i64) {
        self.set_f64(metric, label, value as f64);
    }

    /// Sets a gauge to a fractional value.
    pub fn set_f64(&self, metric: Metric, label: &str, value: f64) {
        *entry(&mut self.values[metric.index].lock().expect("metrics lock"), label) = value;
    }

    /// Runs one stage's step on one page: its time goes to `dupflow_stage_seconds{stage}` and
    /// the page to `dupflow_stage_pages_total{stage}`, so the caller reads as the method's step.
    pub fn stage<T>(&self, stage: &str, step: impl FnOnce() -> T) -> T {
        let value = self.timed(stage, step);
        self.inc(STAGE_PAGES, stage);
        value
    }

    /// `stage` without the page count (a step that does not always yield a page).
    pub fn timed<T>(&self, stage: &str, step: impl FnOnce() -> T) -> T {
        let started = std::time::Instant::now();
        let value = step();
        self.observe(STAGE_SECONDS, stage, started.elapsed().as_secs_f64());
        value
    }

    /// Records an observation of a histogram.
    pub fn observe(&self, metric: Metric, label: &str, value: f64) {
        self.observe_all(metric, label, std::iter::once(value));
    }

    /// Records observations of a histogram, under one lock.
    pub fn observe_all(&self, metric: Metric, label: &str, values: impl IntoIterator<Item = f64>) {
        let Kind::Histogram(bounds) = metric.kind else { return };
        let mut histograms = self.histograms[metric.index].lock().expect("metrics lock");
        let h = entry(&mut histograms, label);
        if h.buckets.is_empty() {
            h.buckets = vec![0; bounds.len()];
        }
        for value in values {
            for (i, &bound) in bounds.iter().enumerate() {
                if value <= bound {
                    h.buckets[i] += 1;
                }
            }
            h.count += 1;
            h.sum += value;
        }
    }

    /// One value (0 if never set).
    pub fn get(&self, metric: Metric, label: &str) -> i64 {
        self.values[metric.index].lock().expect("metrics lock").get(label).copied().unwrap_or(0.0)
            as i64
    }

    /// Observations of a histogram: (count, sum).
    pub fn histogram(&self, metric: Metric, label: &str) -> (u64, f64) {
        self.histograms[metric.index]
            .lock()
            .expect("metrics lock")
            .get(label)
            .map_or((0, 0.0), |h| (h.count, h.sum))
    }

    /// All values of a metric by label.
    pub fn by_label(&self, metric: Metric) -> BTreeMap<String, i64> {
        self.values[metric.index]
            .lock()
            .expect("metrics lock")
            .iter()
            .map(|(label, v)| (label.clone(), *v as i64))
            .collect()
    }

    /// Sum over labels.
    pub fn total(&self, metric: Metric) -> i64 {
        self.by_label(metric).values().sum()
    }

    /// The Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for metric in ALL {
            let kind = match metric.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram(_) => "histogram",
            };
            let _ = writeln!(out, "# HELP {} {}", metric.name, metric.help);
            let _ = writeln!(out, "# TYPE {} {kind}", metric.name);
            let labels = |label: &str, extra: Option<String>| -> String {
                let mut parts = Vec::new();
                if let Some(name) = metric.label {
                    parts.push(format!("{name}=\"{}\"", escape(label)));
                }
                parts.extend(extra);
                if parts.is_empty() {
                    String::new()
                } else {
                    format!("{{{}}}", parts.join(","))
                }
            };
            match metric.kind {
                Kind::Histogram(bounds) => {
                    let name = metric.name;
                    for (label, h) in
                        self.histograms[metric.index].lock().expect("metrics lock").iter()
                    {
                        for (bound, count) in bounds.iter().zip(&h.buckets) {
                            let _ = writeln!(
                                out,
                                "{name}_bucket{} {count}",
                                labels(label, Some(format!("le=\"{bound}\"")))
                            );
                        }
                        let _ = writeln!(
                            out,
                            "{name}_bucket{} {}",
                            labels(label, Some("le=\"+Inf\"".into())),
                            h.count
                        );
                        let _ = writeln!(out, "{name}_sum{} {}", labels(label, None), h.sum);
                        let _ = writeln!(out, "{name}_count{} {}", labels(label, None), h.count);
                    }
                }
                _ => {
                    let mut any = false;
                    let name = metric.name;
                    for (label, v) in self.values[metric.index].lock().expect("metrics lock").iter()
                    {
                        let _ = writeln!(out, "{name}{} {v}", labels(label, None));
                        any = true;
                    }
                    if !any && metric.label.is_none() {
                        let _ = writeln!(out, "{} 0", metric.name);
                    }
                }
            }
        }
        out
    }
}

fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Resident memory of this process, from /proc (0 where unavailable).
pub fn resident_bytes() -> i64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: i64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_metric_with_help_and_type() {
        let registry = Registry::default();
        registry.inc(RECORDS, "response");
        registry.observe(STAGE_SECONDS, "strip", 0.002);
        let text = registry.render();
        for metric in ALL {
            assert!(text.contains(&format!("# HELP {} ", metric.name)), "{}", metric.name);
        }
        assert!(text.contains("dupflow_records_total{type=\"response\"} 1"));
        assert!(text.contains("dupflow_stage_seconds_bucket{stage=\"strip\",le=\"0.005\"} 1"));
        assert!(text.contains("dupflow_stage_seconds_count{stage=\"strip\"} 1"));
        registry.observe_all(STAGE_SECONDS, "strip", [0.02, 2.0]);
        let (count, sum) = registry.histogram(STAGE_SECONDS, "strip");
        assert_eq!(count, 3);
        assert!((sum - 2.022).abs() < 1e-9, "{sum}");
        let text = registry.render();
        assert!(text.contains("dupflow_stage_seconds_bucket{stage=\"strip\",le=\"0.005\"} 1"));
        assert!(text.contains("dupflow_stage_seconds_bucket{stage=\"strip\",le=\"5\"} 3"));
    }

    #[test]
    fn every_metric_has_its_own_slot() {
        for (i, metric) in ALL.iter().enumerate() {
            assert_eq!(metric.index, i, "{}", metric.name);
        }
    }

    #[test]
    fn names_follow_the_convention() {
        for metric in ALL {
            assert!(metric.name.starts_with("dupflow_"), "{}", metric.name);
            assert_eq!(
                metric.kind == Kind::Counter,
                metric.name.ends_with("_total"),
                "{}",
                metric.name
            );
        }
    }
}
