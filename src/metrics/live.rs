//! The live view of a run: cluster membership as the sink receives it, a time series, and the
//! JSON documents behind the dashboard (`/api/...`).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use dupflow_operators::runtime::footprint::{Structure, Totals};
use dupflow_operators::PageId;

use super::{Registry, CLUSTERS, DUPLICATE_PAGES, DUPLICATE_RATIO, LARGEST_CLUSTER, PAGES_HELD};
use crate::types::ClusterRow;

/// The clusters of more than one page, largest first, then by id.
type BySize = BTreeSet<(Reverse<usize>, PageId)>;

/// The pages held, and those in clusters of more than one page, from the clusters by size.
fn page_counts(sizes: &BTreeMap<usize, usize>) -> (usize, usize) {
    sizes.iter().fold((0, 0), |(pages, duplicates), (&size, &n)| {
        (pages + size * n, duplicates + if size > 1 { size * n } else { 0 })
    })
}

/// Records that `cluster` went from `before` to `after` pages (0: no cluster).
fn resized(
    sizes: &mut BTreeMap<usize, usize>,
    multi: &mut BySize,
    cluster: PageId,
    before: usize,
    after: usize,
) {
    if before > 0 {
        if let Some(n) = sizes.get_mut(&before) {
            *n -= 1;
            if *n == 0 {
                sizes.remove(&before);
            }
        }
    }
    if after > 0 {
        *sizes.entry(after).or_default() += 1;
    }
    if before > 1 {
        multi.remove(&(Reverse(before), cluster));
    }
    if after > 1 {
        multi.insert((Reverse(after), cluster));
    }
}

/// Adds `n` pages and `d` duplicate pages to the host of `url` (dropping a host down to none).
fn add_to_host(hosts: &mut HashMap<String, (usize, usize)>, url: &str, n: isize, d: isize) {
    let host = crate::source::http::host_of(url);
    let (pages, duplicates) = hosts.get(&host).copied().unwrap_or_default();
    let now = (pages.saturating_add_signed(n), duplicates.saturating_add_signed(d));
    if now == (0, 0) {
        hosts.remove(&host);
    } else {
        hosts.insert(host, now);
    }
}

/// The page of `url` left a cluster of `before` pages; `left` is what remains of it.
fn host_left(
    hosts: &mut HashMap<String, (usize, usize)>,
    url: &str,
    before: usize,
    left: Option<&Members>,
) {
    add_to_host(hosts, url, -1, if before > 1 { -1 } else { 0 });
    if let (2, Some(Members::One((other, _), _))) = (before, left) {
        // The page left behind is alone now: no longer a duplicate.
        add_to_host(hosts, other, 0, -1);
    }
}

/// The page `page` of `url` joined a cluster, `members` now.
fn host_joined(
    hosts: &mut HashMap<String, (usize, usize)>,
    url: &str,
    page: PageId,
    members: &Members,
) {
    let after = members.len();
    add_to_host(hosts, url, 1, if after > 1 { 1 } else { 0 });
    if after == 2 {
        // The page it joined was alone: a duplicate now.
        if let Some((other, _)) = members.keys().find(|(_, p)| *p != page) {
            add_to_host(hosts, other, 0, 1);
        }
    }
}

/// One sample of the time series.
#[derive(Clone, Debug)]
struct Sample {
    secs: f64,
    pages: i64,
    duplicate_ratio: f64,
}

/// A member of a cluster, (url, page), and how it joined: (similarity ppm, leader).
type MemberKey = (Arc<str>, PageId);
type MemberValue = (u32, PageId);

/// Members a cluster holds in a sorted vector (`Members::Few`) at most; a larger one is a
/// `BTreeMap`, and back to a vector at half of this.
const FEW_MEMBERS: usize = 32;

/// A cluster's members, in (url, page) order. Most clusters are one page (a page with no
/// duplicate), named by its own id: such a cluster has no members' entry at all (its page's
/// row is it, `Cluster::Alone`); one page in a cluster another page names is held inline. A
/// small cluster is a sorted vector of exactly its members (56 bytes each), not a `BTreeMap`,
/// whose first leaf holds room for eleven (~630 bytes for a cluster of two); a large one is a
/// `BTreeMap`, whose insertions stay logarithmic.
#[derive(Debug)]
enum Members {
    One(MemberKey, MemberValue),
    Few(Vec<(MemberKey, MemberValue)>),
    Many(BTreeMap<MemberKey, MemberValue>),
}

impl Members {
    fn len(&self) -> usize {
        match self {
            Members::One(..) => 1,
            Members::Few(m) => m.len(),
            Members::Many(m) => m.len(),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (&MemberKey, &MemberValue)> + '_> {
        match self {
            Members::One(k, v) => Box::new(std::iter::once((k, v))),
            Members::Few(m) => Box::new(m.iter().map(|(k, v)| (k, v))),
            Members::Many(m) => Box::new(m.iter()),
        }
    }

    fn keys(&self) -> impl Iterator<Item = &MemberKey> {
        self.iter().map(|(k, _)| k)
    }

    /// Adds (or updates) a member of the cluster `members` holds, if any.
    fn insert(members: Option<Members>, key: MemberKey, value: MemberValue) -> Members {
        match members {
            None => Members::One(key, value),
            Some(Members::One(k, v)) if k != key => {
                let mut few = vec![(k, v), (key, value)];
                few.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                Members::Few(few)
            }
            Some(Members::One(..)) => Members::One(key, value),
            Some(Members::Few(mut m)) => {
                match m.binary_search_by(|(k, _)| k.cmp(&key)) {
                    Ok(at) => m[at].1 = value,
                    Err(at) => m.insert(at, (key, value)),
                }
                if m.len() > FEW_MEMBERS {
                    return Members::Many(m.into_iter().collect());
                }
                m.shrink_to_fit();
                Members::Few(m)
            }
            Some(Members::Many(mut m)) => {
                m.insert(key, value);
                Members::Many(m)
            }
        }
    }

    /// Removes a member; `None` when none is left. A cluster down to one page is held inline
    /// again, one down to half of `FEW_MEMBERS` in a vector.
    fn remove(self, key: &MemberKey) -> Option<Members> {
        match self {
            Members::One(k, _) if k == *key => None,
            one @ Members::One(..) => Some(one),
            Members::Few(mut m) => {
                if let Ok(at) = m.binary_search_by(|(k, _)| k.cmp(key)) {
                    m.remove(at);
                }
                match m.len() {
                    0 => None,
                    1 => m.pop().map(|(k, v)| Members::One(k, v)),
                    _ => {
                        m.shrink_to_fit();
                        Some(Members::Few(m))
                    }
                }
            }
            Members::Many(mut m) => {
                m.remove(key);
                match m.len() {
                    0 => None,
                    1 => m.pop_first().map(|(k, v)| Members::One(k, v)),
                    n if n <= FEW_MEMBERS / 2 => Some(Members::Few(m.into_iter().collect())),
                    _ => Some(Members::Many(m)),
                }
            }
        }
    }
}

/// A cluster as the view holds it: its members' entry, or the row of the page that is the
/// whole cluster and names it (`Inner::members` holds no entry for such a cluster).
enum Cluster<'a> {
    Held(&'a Members),
    Alone(&'a ClusterRow),
}

impl Cluster<'_> {
    fn len(&self) -> usize {
        match self {
            Cluster::Held(members) => members.len(),
            Cluster::Alone(_) => 1,
        }
    }

    /// Its members in (url, page) order: (url, page, similarity ppm, leader).
    fn members(&self) -> Box<dyn Iterator<Item = (&Arc<str>, PageId, u32, PageId)> + '_> {
        match self {
            Cluster::Held(members) => Box::new(
                members.iter().map(|((url, page), (ppm, leader))| (url, *page, *ppm, *leader)),
            ),
            Cluster::Alone(row) => Box::new(std::iter::once((
                &row.url,
                row.page,
                row.assignment.similarity_ppm,
                row.assignment.leader,
            ))),
        }
    }

    fn urls(&self) -> impl Iterator<Item = &Arc<str>> {
        self.members().map(|(url, ..)| url)
    }
}

#[derive(Default)]
struct Inner {
    /// The rows of each page whose rows are unsettled (a change in flight: a retraction before
    /// its insertion, or two rows at once), with their accumulated counts; a settled page's row
    /// is `current`.
    rows_of: HashMap<PageId, Vec<(ClusterRow, isize)>>,
    /// The row each page is shown with.
    current: Current,
    /// cluster → members (url, page, similarity ppm, leader), but for the clusters that are
    /// one page named by its own id (most pages: a page with no duplicate), which `current`
    /// alone holds (`Cluster::Alone`): an entry for each would take ~150 bytes a page.
    members: HashMap<PageId, Members>,
    /// What the gauges and the dashboard read, kept as members come and go: a sample or a
    /// summary costs the clusters it shows, not a pass over every cluster and URL held (at a
    /// million pages such a pass took the live lock, which the sink waits on, every second).
    /// Clusters by size: size → clusters.
    sizes: BTreeMap<usize, usize>,
    /// The clusters of more than one page, largest first, then by id.
    multi: BySize,
    /// Per host: (pages, pages in a cluster of more than one page).
    hosts: HashMap<String, (usize, usize)>,
    series: VecDeque<Sample>,
    finished: bool,
}

impl Inner {
    /// The cluster named `id`, if any.
    fn cluster(&self, id: &PageId) -> Option<Cluster<'_>> {
        if let Some(members) = self.members.get(id) {
            return Some(Cluster::Held(members));
        }
        self.current.get(id).filter(|row| row.assignment.cluster == *id).map(Cluster::Alone)
    }

    /// Every cluster, in no order.
    fn clusters(&self) -> impl Iterator<Item = (&PageId, Cluster<'_>)> {
        let held = self.members.iter().map(|(id, members)| (id, Cluster::Held(members)));
        let alone = self
            .current
            .iter()
            .filter(|row| {
                row.assignment.cluster == row.page && !self.members.contains_key(&row.page)
            })
            .map(|row| (&row.page, Cluster::Alone(row)));
        held.chain(alone)
    }

    /// The clusters held: one for each size's count.
    fn cluster_count(&self) -> usize {
        self.sizes.values().sum()
    }

    /// Takes out the members of `cluster` (an entry, or the page alone that names it) to
    /// change them.
    fn take_members(&mut self, cluster: PageId) -> Option<Members> {
        self.members.remove(&cluster).or_else(|| {
            let row = self.current.get(&cluster).filter(|row| row.assignment.cluster == cluster)?;
            let a = row.assignment;
            Some(Members::One((row.url.clone(), cluster), (a.similarity_ppm, a.leader)))
        })
    }

    /// Puts back the members of `cluster`: no entry when they are the page that names it.
    fn put_members(&mut self, cluster: PageId, members: Members) {
        if !matches!(&members, Members::One((_, page), _) if *page == cluster) {
            self.members.insert(cluster, members);
        }
    }
}

/// Shared between the sink (worker 0), the sampler and the HTTP server.
pub struct Live {
    inner: Mutex<Inner>,
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

    /// Applies output updates from the dataflow. Updates of one page may arrive in any order
    /// (the new row before the old one's retraction), so membership follows each page's row with
    /// a positive count, not the order of arrival. A page's rows are tallied apart only while
    /// they are unsettled (anything but its current row once): most pages cost their current
    /// row alone.
    pub fn apply(&self, updates: &[(ClusterRow, u64, isize)]) {
        let mut inner = self.inner.lock().expect("live lock");
        let inner = &mut *inner;
        let mut touched = BTreeSet::new();
        for (row, _, diff) in updates {
            let rows = inner.rows_of.entry(row.page).or_insert_with(|| {
                inner.current.get(&row.page).map(|r| (r.clone(), 1)).into_iter().collect()
            });
            match rows.iter().position(|(r, _)| r == row) {
                Some(i) => {
                    rows[i].1 += diff;
                    if rows[i].1 == 0 {
                        rows.swap_remove(i);
                    }
                }
                None => rows.push((row.clone(), *diff)),
            }
            touched.insert(row.page);
        }
        for page in touched {
            let rows = inner.rows_of.get(&page).map(Vec::as_slice).unwrap_or_default();
            let now = rows.iter().filter(|(_, c)| *c > 0).map(|(r, _)| r).max().cloned();
            let settled = match (rows, &now) {
                ([], _) => true,
                ([(row, 1)], Some(now)) => row == now,
                _ => false,
            };
            if settled {
                inner.rows_of.remove(&page);
            }
            let before = inner.current.get(&page);
            if before == now.as_ref() {
                continue;
            }
            if let Some(old) = inner.current.remove(&page) {
                let cluster = old.assignment.cluster;
                // The page that named a cluster alone: its row was the cluster.
                let alone = (cluster == page).then(|| {
                    let a = old.assignment;
                    Members::One((old.url.clone(), page), (a.similarity_ppm, a.leader))
                });
                if let Some(members) = inner.members.remove(&cluster).or(alone) {
                    let before = members.len();
                    let key = (old.url, page);
                    let left = members.remove(&key);
                    let after = left.as_ref().map_or(0, Members::len);
                    if after < before {
                        host_left(&mut inner.hosts, &key.0, before, left.as_ref());
                        resized(&mut inner.sizes, &mut inner.multi, cluster, before, after);
                    }
                    if let Some(left) = left {
                        inner.put_members(cluster, left);
                    }
                }
            }
            if let Some(row) = now {
                let a = row.assignment;
                let held = inner.take_members(a.cluster);
                let before = held.as_ref().map_or(0, Members::len);
                let members =
                    Members::insert(held, (row.url.clone(), page), (a.similarity_ppm, a.leader));
                let after = members.len();
                if after > before {
                    host_joined(&mut inner.hosts, &row.url, page, &members);
                    resized(&mut inner.sizes, &mut inner.multi, a.cluster, before, after);
                }
                inner.put_members(a.cluster, members);
                inner.current.insert(row);
            }
        }
    }

    /// The URL of a page in the output.
    fn url_of(inner: &Inner, page: &PageId) -> String {
        inner.current.get(page).map(|row| row.url.to_string()).unwrap_or_default()
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
        let mut inner = self.inner.lock().expect("live lock");
        let (pages, duplicates) = page_counts(&inner.sizes);
        let largest = inner.sizes.keys().next_back().copied().unwrap_or(0);
        let ratio = if pages > 0 { duplicates as f64 / pages as f64 } else { 0.0 };
        let r = &self.registry;
        r.set(CLUSTERS, "", inner.cluster_count() as i64);
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

    /// Clusters by size, largest first, then by id: (cluster, size, first URLs). The clusters
    /// of more than one page come from their index; one-page clusters, listed only when fewer
    /// than `limit` clusters hold more, are found by a pass over the clusters.
    fn largest(inner: &Inner, limit: usize) -> Vec<Value> {
        let mut clusters: Vec<&PageId> = inner.multi.iter().take(limit).map(|(_, id)| id).collect();
        if clusters.len() < limit {
            let wanted = limit - clusters.len();
            // The `wanted` smallest ids of the one-page clusters (a max-heap of them).
            let mut singles: BinaryHeap<&PageId> =
                BinaryHeap::with_capacity(wanted.min(inner.cluster_count()) + 1);
            for (id, m) in inner.clusters() {
                if m.len() == 1
                    && (singles.len() < wanted || singles.peek().is_some_and(|top| id < *top))
                {
                    singles.push(id);
                    if singles.len() > wanted {
                        singles.pop();
                    }
                }
            }
            clusters.extend(singles.into_sorted_vec());
        }
        clusters
            .into_iter()
            .filter_map(|id| inner.cluster(id).map(|m| (id, m)))
            .map(|(id, m)| {
                json!({
                    "cluster": id.to_string(),
                    "size": m.len(),
                    "cluster_url": Self::url_of(inner, id),
                    "sample_urls": m.urls().take(5).cloned().collect::<Vec<_>>(),
                })
            })
            .collect()
    }

    /// `/api/summary`: everything the dashboard shows.
    pub fn summary(&self) -> Value {
        let r = &self.registry;
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
        let mut hosts: Vec<(&String, &(usize, usize))> = inner.hosts.iter().collect();
        hosts.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(b.1 .0.cmp(&a.1 .0)).then(a.0.cmp(b.0)));
        // Mean milliseconds of each stage; none (null) before its first measurement.
        let stages: BTreeMap<&str, Option<f64>> = ["decode", "strip", "split", "verify"]
            .into_iter()
            .map(|s| {
                let (count, sum) = r.histogram(super::STAGE_SECONDS, s);
                (s, (count > 0).then(|| sum / count as f64 * 1000.0))
            })
            .collect();
        let largest = Self::largest(&inner, 20);
        let alarms: Vec<&Value> = largest
            .iter()
            .filter(|c| c["size"].as_u64().unwrap_or(0) as usize > self.alarm_pages)
            .collect();
        let (page_count, duplicates) = page_counts(&inner.sizes);
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
            "clusters": inner.cluster_count(),
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
        let inner = self.inner.lock().expect("live lock");
        json!({ "clusters": Self::largest(&inner, limit) })
    }

    /// `/api/clusters/ID`: the members of one cluster.
    pub fn cluster(&self, id: &str) -> Option<Value> {
        let inner = self.inner.lock().expect("live lock");
        let (cluster, members) = inner.clusters().find(|(c, _)| c.to_string() == id)?;
        let list: Vec<Value> = members
            .members()
            .map(|(url, _, ppm, leader)| {
                json!({"url": url, "similarity": ppm as f64 / 1e6, "leader_url": Self::url_of(&inner, &leader)})
            })
            .collect();
        Some(json!({
            "cluster": cluster.to_string(),
            "cluster_url": Self::url_of(&inner, cluster),
            "size": list.len(),
            "members": list,
        }))
    }

    /// `/api/find?url=Q`: the pages whose URL is `query` or holds it, the exact one first, then
    /// by URL, at most `limit`: each with its cluster (id, size, anchor URL) and how it joined
    /// (the page it was verified against, the similarity). A pass over the pages held.
    pub fn find(&self, query: &str, limit: usize) -> Value {
        let inner = self.inner.lock().expect("live lock");
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
                    "cluster_url": Self::url_of(&inner, cluster),
                    "similarity": r.assignment.similarity_ppm as f64 / 1e6,
                    "leader_url": Self::url_of(&inner, &r.assignment.leader),
                })
            })
            .collect();
        json!({ "query": query, "total": found.len(), "matches": matches })
    }

    /// The clusters of the pages at `urls` with all their members (what `explain` needs to
    /// name the clusters and search a path between the pages).
    pub fn membership(&self, urls: &[&str]) -> crate::explain::Membership {
        let inner = self.inner.lock().expect("live lock");
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

    /// The rows of every update applied, each once, sorted: a settled page's row, and the rows
    /// of an unsettled page whose count is not zero. The sink's clusters and checkpoints are
    /// written from these (the sink keeps no rows of its own).
    pub fn rows(&self) -> Vec<ClusterRow> {
        self.with_rows(|rows| rows.into_iter().cloned().collect())
    }

    /// `f` of the rows `rows` gives, borrowed (under the live view's lock): a checkpoint writes
    /// the clusters from them without a copy of every row.
    pub fn with_rows<R>(&self, f: impl FnOnce(Vec<&ClusterRow>) -> R) -> R {
        let inner = self.inner.lock().expect("live lock");
        let settled = inner.current.iter().filter(|row| !inner.rows_of.contains_key(&row.page));
        let unsettled =
            inner.rows_of.values().flatten().filter(|(_, count)| *count != 0).map(|(row, _)| row);
        let mut rows: Vec<&ClusterRow> = settled.chain(unsettled).collect();
        rows.sort_unstable();
        f(rows)
    }

    /// The bytes the live view holds, walked: its maps' tables; each page's row with its URL
    /// and record id (an `Arc<str>` each, which the page's member entry shares); the clusters
    /// of several pages (a vector each, or past `FEW_MEMBERS` a B-tree: about a node of eleven
    /// entries for every eight members, an estimate); the hosts' counts. It grows with
    /// every page held, on the process that writes the clusters. A pass over every page: for
    /// the run's summary, not for the dashboard's second-by-second figures.
    pub fn bytes(&self) -> usize {
        use dupflow_operators::runtime::footprint::{array, hash_table, ARC_COUNTS};
        use std::mem::size_of;
        let inner = self.inner.lock().expect("live lock");
        let text = |row: &ClusterRow| 2 * ARC_COUNTS + row.url.len() + row.record_id.len();
        let current = inner.current.bytes() + inner.current.iter().map(text).sum::<usize>();
        let unsettled =
            hash_table(inner.rows_of.capacity(), size_of::<(PageId, Vec<(ClusterRow, isize)>)>())
                + inner
                    .rows_of
                    .values()
                    .map(|rows| array::<(ClusterRow, isize)>(rows.capacity()))
                    .sum::<usize>();
        let node = |entry: usize| 11 * entry + 2 * size_of::<usize>();
        let btree = |len: usize, entry: usize| len.div_ceil(8) * node(entry);
        let members = hash_table(inner.members.capacity(), size_of::<(PageId, Members)>())
            + inner
                .members
                .values()
                .map(|m| match m {
                    Members::One(..) => 0,
                    Members::Few(m) => array::<(MemberKey, MemberValue)>(m.capacity()),
                    Members::Many(m) => btree(m.len(), size_of::<(MemberKey, MemberValue)>()),
                })
                .sum::<usize>();
        let multi = btree(inner.multi.len(), size_of::<(Reverse<usize>, PageId)>());
        let hosts = hash_table(inner.hosts.capacity(), size_of::<(String, (usize, usize))>())
            + inner.hosts.keys().map(String::capacity).sum::<usize>();
        current + unsettled + members + multi + hosts
    }

    /// All clusters as (cluster, size) for tests and summaries.
    pub fn sizes(&self) -> BTreeSet<(String, usize)> {
        let inner = self.inner.lock().expect("live lock");
        inner.clusters().map(|(c, m)| (c.to_string(), m.len())).collect()
    }
}

mod current;

use current::Current;

#[cfg(test)]
mod tests;
