//! The live view of a run: the clusters the sink shows it (`clusters`: the sink owns and
//! changes them, the view only reads them), a time series, and the JSON documents behind the
//! dashboard (`/api/...`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use dupflow_operators::runtime::footprint::{Structure, Totals};
use dupflow_operators::PageId;

use super::{Registry, CLUSTERS, DUPLICATE_PAGES, DUPLICATE_RATIO, LARGEST_CLUSTER, PAGES_HELD};
use crate::types::ClusterRow;

/// One sample of the time series.
#[derive(Clone, Debug)]
struct Sample {
    secs: f64,
    pages: i64,
    duplicate_ratio: f64,
}

#[derive(Default)]
struct Inner {
    series: VecDeque<Sample>,
    finished: bool,
}

/// Shared between the sink (worker 0), the sampler and the HTTP server.
pub struct Live {
    inner: Mutex<Inner>,
    /// The current clusters, as the sink shows them (`show_clusters`): read, never changed.
    clusters: Mutex<ClusterView>,
    pub registry: Arc<Registry>,
    pub started: Instant,
    /// A cluster larger than this raises the alarm.
    pub alarm_pages: usize,
    /// When each epoch was closed by the reader (for the epoch latency).
    pub epoch_closed: Mutex<HashMap<u64, Instant>>,
    /// Records waiting in the reader-to-worker channels (set by the dataflow).
    pub channel_depth: Mutex<Option<Box<dyn Fn() -> usize + Send>>>,
    /// When each record of an open epoch was read (for the record latency), by epoch.
    pub epoch_reads: Mutex<HashMap<u64, Vec<Instant>>>,
    /// The sentence index behind `POST /api/check` (when the endpoint is served).
    pub gate: Mutex<Option<crate::check::Gate>>,
    /// Record latencies in seconds (the first million), for p50/p99 in the summary.
    pub latencies: Mutex<Vec<f32>>,
    /// Process 0 of a cluster: clusters by size over every shard (size → clusters).
    pub cluster_sizes: Mutex<BTreeMap<i64, i64>>,
    finished_secs: Mutex<Option<f64>>,
    /// What the current run's structures hold (`watch_footprint`).
    footprint: Mutex<Arc<Totals>>,
}

const SERIES_LEN: usize = 600;

impl Live {
    pub fn new(registry: Arc<Registry>, alarm_pages: usize) -> Self {
        Live {
            inner: Mutex::default(),
            clusters: Mutex::default(),
            registry,
            started: Instant::now(),
            alarm_pages,
            epoch_closed: Mutex::default(),
            channel_depth: Mutex::new(None),
            epoch_reads: Mutex::default(),
            latencies: Mutex::default(),
            gate: Mutex::new(None),
            cluster_sizes: Mutex::default(),
            finished_secs: Mutex::new(None),
            footprint: Mutex::default(),
        }
    }

    /// Process 0 of a cluster: changes to the count of clusters of each size, over all shards.
    pub fn apply_cluster_sizes(&self, updates: &[((i64, i64), u64, isize)]) {
        let mut sizes = self.cluster_sizes.lock().expect("sizes");
        for ((size, clusters), _, diff) in updates {
            let n = sizes.entry(*size).or_default();
            *n += clusters * *diff as i64;
            if *n == 0 {
                sizes.remove(size);
            }
        }
        let (mut clusters, mut pages, mut duplicates) = (0, 0, 0);
        for (&size, &n) in sizes.iter() {
            clusters += n;
            pages += size * n;
            if size > 1 {
                duplicates += size * n;
            }
        }
        let largest = sizes.keys().next_back().copied().unwrap_or(0);
        for (of, value) in [
            ("clusters", clusters),
            ("pages", pages),
            ("duplicate_pages", duplicates),
            ("largest", largest),
        ] {
            self.registry.set(super::CLUSTER_TOTALS, of, value);
        }
    }

    /// The whole cluster's totals (process 0 of a cluster), or `None`.
    fn cluster_totals(&self) -> Option<Value> {
        let sizes = self.cluster_sizes.lock().expect("sizes");
        if sizes.is_empty() {
            return None;
        }
        let r = &self.registry;
        let get = |of: &str| r.get(super::CLUSTER_TOTALS, of);
        Some(
            json!({"clusters": get("clusters"), "pages": get("pages"), "duplicate_pages": get("duplicate_pages"), "largest": get("largest")}),
        )
    }

    pub fn finish(&self) {
        *self.finished_secs.lock().expect("live lock") = Some(self.started.elapsed().as_secs_f64());
        self.inner.lock().expect("live lock").finished = true;
        self.sample();
    }

    /// Shows `clusters` (the sink's) from now on.
    pub fn show_clusters(&self, clusters: ClusterView) {
        *self.clusters.lock().expect("live lock") = clusters;
    }

    /// The clusters shown now.
    pub fn clusters_shown(&self) -> ClusterView {
        self.clusters.lock().expect("live lock").clone()
    }

    /// Shows what `footprint` (a run's) holds from now on.
    pub fn watch_footprint(&self, footprint: Arc<Totals>) {
        *self.footprint.lock().expect("live lock") = footprint;
    }

    pub fn is_finished(&self) -> bool {
        self.inner.lock().expect("live lock").finished
    }

    /// Seconds of the run: until now, or until it finished.
    fn run_secs(&self) -> f64 {
        self.finished_secs
            .lock()
            .expect("live lock")
            .unwrap_or_else(|| self.started.elapsed().as_secs_f64())
    }

    /// Updates the cluster gauges and appends to the time series (called about once a second).
    pub fn sample(&self) {
        let view = self.clusters_shown();
        let (cluster_count, (pages, duplicates), largest) = {
            let state = view.read();
            let largest = state.sizes.keys().next_back().copied().unwrap_or(0);
            (state.cluster_count(), page_counts(&state.sizes), largest)
        };
        let mut inner = self.inner.lock().expect("live lock");
        let ratio = if pages > 0 { duplicates as f64 / pages as f64 } else { 0.0 };
        let r = &self.registry;
        r.set(CLUSTERS, "", cluster_count as i64);
        r.set(PAGES_HELD, "", pages as i64);
        r.set(DUPLICATE_PAGES, "", duplicates as i64);
        r.set_f64(DUPLICATE_RATIO, "", ratio);
        r.set(LARGEST_CLUSTER, "", largest as i64);
        r.set(super::RSS_BYTES, "", super::resident_bytes());
        r.set(
            super::EPOCH_LAG,
            "",
            (r.get(super::EPOCHS_CLOSED, "") - r.get(super::EPOCHS_DONE, "")).max(0),
        );
        if let Some(depth) = self.channel_depth.lock().expect("live lock").as_ref() {
            r.set(super::CHANNEL_DEPTH, "", depth() as i64);
        }
        // While the run goes on, what the structures hold now; once it has ended (its state
        // let go), what they held at its end, as the summary states it.
        let footprint = self.footprint.lock().expect("live lock").clone();
        for structure in Structure::ALL {
            let bytes = if inner.finished {
                footprint.at_end(structure)
            } else {
                footprint.held(structure)
            };
            r.set(super::STATE_BYTES, structure.name(), bytes);
        }
        let secs = self.started.elapsed().as_secs_f64();
        let pages_read = r.get(super::PAGES, "");
        inner.series.push_back(Sample { secs, pages: pages_read, duplicate_ratio: ratio });
        while inner.series.len() > SERIES_LEN {
            inner.series.pop_front();
        }
    }

    /// `/api/summary`: everything the dashboard shows.
    pub fn summary(&self) -> Value {
        let r = &self.registry;
        let view = self.clusters_shown();
        let state = view.read();
        let inner = self.inner.lock().expect("live lock");
        let pages = r.get(super::PAGES, "");
        let secs = self.run_secs();
        let series: Vec<Value> = inner
            .series
            .iter()
            .zip(inner.series.iter().skip(1))
            .map(|(a, b)| {
                let rate = (b.pages - a.pages) as f64 / (b.secs - a.secs).max(1e-9);
                json!({"t": (b.secs * 10.0).round() / 10.0, "pages_per_sec": rate.round(), "duplicate_ratio": b.duplicate_ratio})
            })
            .collect();
        let mut hosts: Vec<(&String, &(usize, usize))> = state.hosts.iter().collect();
        hosts.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(b.1 .0.cmp(&a.1 .0)).then(a.0.cmp(b.0)));
        // Mean milliseconds of each stage; none (null) before its first measurement.
        let stages: BTreeMap<&str, Option<f64>> = ["decode", "strip", "split", "verify"]
            .into_iter()
            .map(|s| {
                let (count, sum) = r.histogram(super::STAGE_SECONDS, s);
                (s, (count > 0).then(|| sum / count as f64 * 1000.0))
            })
            .collect();
        let largest = state.largest(20);
        let alarms: Vec<&Value> = largest
            .iter()
            .filter(|c| c["size"].as_u64().unwrap_or(0) as usize > self.alarm_pages)
            .collect();
        let (page_count, duplicates) = page_counts(&state.sizes);
        json!({
            "finished": inner.finished,
            "cluster_totals": self.cluster_totals(),
            "elapsed_secs": (secs * 10.0).round() / 10.0,
            "records": r.total(super::RECORDS),
            "pages": pages,
            "pages_per_sec": (pages as f64 / secs.max(1e-9)).round(),
            "bytes_read": r.get(super::BYTES_READ, ""),
            "input_bytes": r.get(super::INPUT_BYTES, ""),
            "revisits": r.get(super::REVISITS, ""),
            "errors": r.by_label(super::RECORD_ERRORS).into_iter().chain(r.by_label(super::DOCUMENT_ERRORS)).collect::<BTreeMap<_, _>>(),
            "skipped": r.by_label(super::SKIPPED),
            "caps": r.by_label(super::CAPS),
            "clusters": state.cluster_count(),
            "pages_held": page_count,
            "duplicate_pages": duplicates,
            "duplicate_ratio": if page_count > 0 { duplicates as f64 / page_count as f64 } else { 0.0 },
            "largest_clusters": largest,
            "alarm_pages": self.alarm_pages,
            "alarms": alarms,
            "stage_ms": stages,
            "channel_depth": r.get(super::CHANNEL_DEPTH, ""),
            "epoch_lag": r.get(super::EPOCH_LAG, ""),
            "rss_bytes": r.get(super::RSS_BYTES, ""),
            "state_bytes": r.by_label(super::STATE_BYTES),
            "hosts": hosts.into_iter().take(20).map(|(h, (n, d))| json!({"host": h, "pages": n, "duplicate_pages": d})).collect::<Vec<_>>(),
            "series": series,
        })
    }

    /// `/api/clusters?limit=N`.
    pub fn clusters(&self, limit: usize) -> Value {
        json!({ "clusters": self.clusters_shown().read().largest(limit) })
    }

    /// `/api/clusters/ID`: the members of one cluster.
    pub fn cluster(&self, id: &str) -> Option<Value> {
        let view = self.clusters_shown();
        let inner = view.read();
        let (cluster, members) = inner.clusters().find(|(c, _)| c.to_string() == id)?;
        let list: Vec<Value> = members
            .members()
            .map(|(url, _, ppm, leader)| {
                json!({"url": url, "similarity": ppm as f64 / 1e6, "leader_url": inner.url_of(&leader)})
            })
            .collect();
        Some(json!({
            "cluster": cluster.to_string(),
            "cluster_url": inner.url_of(cluster),
            "size": list.len(),
            "members": list,
        }))
    }

    /// `/api/find?url=Q`: the pages whose URL is `query` or holds it, the exact one first, then
    /// by URL, at most `limit`: each with its cluster (id, size, anchor URL) and how it joined
    /// (the page it was verified against, the similarity). A pass over the pages held.
    pub fn find(&self, query: &str, limit: usize) -> Value {
        let view = self.clusters_shown();
        let inner = view.read();
        let mut found: Vec<&ClusterRow> =
            inner.current.iter().filter(|r| r.url.contains(query)).collect();
        found.sort_unstable_by(|a, b| (&*a.url != query, &a.url).cmp(&(&*b.url != query, &b.url)));
        let matches: Vec<Value> = found
            .iter()
            .take(limit)
            .map(|r| {
                let cluster = &r.assignment.cluster;
                json!({
                    "url": r.url,
                    "cluster": cluster.to_string(),
                    "size": inner.cluster(cluster).map_or(0, |c| c.len()),
                    "cluster_url": inner.url_of(cluster),
                    "similarity": r.assignment.similarity_ppm as f64 / 1e6,
                    "leader_url": inner.url_of(&r.assignment.leader),
                })
            })
            .collect();
        json!({ "query": query, "total": found.len(), "matches": matches })
    }

    /// The clusters of the pages at `urls` with all their members (what `explain` needs to
    /// name the clusters and search a path between the pages).
    pub fn membership(&self, urls: &[&str]) -> crate::explain::Membership {
        let view = self.clusters_shown();
        let inner = view.read();
        let mut membership =
            crate::explain::Membership { source: "the run".into(), ..Default::default() };
        let clusters: BTreeSet<PageId> = inner
            .current
            .iter()
            .filter(|r| urls.contains(&&*r.url))
            .map(|r| r.assignment.cluster)
            .collect();
        for cluster in clusters {
            for url in inner.cluster(&cluster).iter().flat_map(Cluster::urls) {
                membership.insert(url.to_string(), cluster.to_string());
            }
        }
        membership
    }

    /// The bytes the clusters shown hold (a pass over every page: for the run's summary).
    pub fn bytes(&self) -> usize {
        self.clusters_shown().bytes()
    }

    /// All clusters shown as (cluster, size), for tests and summaries.
    pub fn sizes(&self) -> BTreeSet<(String, usize)> {
        self.clusters_shown().sizes()
    }
}

mod clusters;
mod current;

use clusters::{page_counts, Cluster};
pub use clusters::{ClusterView, Clusters};

#[cfg(test)]
mod tests;
