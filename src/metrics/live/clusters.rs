//! A shard's current clusters: each page's row, each cluster's members, and the counts the
//! dashboard reads (clusters by size, the largest, each host's pages). The sink owns them
//! (`Clusters`): it applies each complete epoch's updates and writes its checkpoints' and the
//! run's clusters from them. The live view reads them (`ClusterView`) and never changes them.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use serde_json::{json, Value};

use dupflow_operators::PageId;

use super::current::Current;
use crate::types::ClusterRow;

/// The current clusters, as the sink that owns them holds them: it alone applies updates.
#[derive(Clone, Default)]
pub struct Clusters(Arc<RwLock<ClusterState>>);

/// The current clusters, read-only: what the live view holds of them.
#[derive(Clone, Default)]
pub struct ClusterView(Arc<RwLock<ClusterState>>);

impl Clusters {
    /// Applies output updates from the dataflow. Updates of one page may arrive in any order
    /// (the new row before the old one's retraction), so membership follows each page's row
    /// with a positive count, not the order of arrival.
    pub fn apply(&self, updates: &[(ClusterRow, u64, isize)]) {
        self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner).apply(updates);
    }

    /// The rows of every update applied, each once, sorted: a settled page's row, and the rows
    /// of an unsettled page whose count is not zero.
    pub fn rows(&self) -> Vec<ClusterRow> {
        self.with_rows(|rows| rows.into_iter().cloned().collect())
    }

    /// `f` of the rows `rows` gives, borrowed: a checkpoint writes the clusters from them
    /// without a copy of every row.
    pub fn with_rows<R>(&self, f: impl FnOnce(Vec<&ClusterRow>) -> R) -> R {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).with_rows(f)
    }

    /// What the live view may read of them.
    pub fn view(&self) -> ClusterView {
        ClusterView(self.0.clone())
    }
}

impl ClusterView {
    pub(super) fn read(&self) -> RwLockReadGuard<'_, ClusterState> {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The bytes the clusters hold (a pass over every page: for the run's summary).
    pub fn bytes(&self) -> usize {
        self.read().bytes()
    }

    /// The rows, as `Clusters::rows` gives them.
    pub fn rows(&self) -> Vec<ClusterRow> {
        self.read().with_rows(|rows| rows.into_iter().cloned().collect())
    }

    /// All clusters as (cluster, size), for tests and summaries.
    pub fn sizes(&self) -> BTreeSet<(String, usize)> {
        self.read().all_sizes()
    }
}

/// The clusters of more than one page, largest first, then by id.
pub(super) type BySize = BTreeSet<(Reverse<usize>, PageId)>;

/// The pages held, and those in clusters of more than one page, from the clusters by size.
pub(super) fn page_counts(sizes: &BTreeMap<usize, usize>) -> (usize, usize) {
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

/// A member of a cluster, (url, page), and how it joined: (similarity ppm, leader).
pub(super) type MemberKey = (Arc<str>, PageId);
pub(super) type MemberValue = (u32, PageId);

/// Members a cluster holds in a sorted vector (`Members::Few`) at most; a larger one is a
/// `BTreeMap`, and back to a vector at half of this.
pub(super) const FEW_MEMBERS: usize = 32;

/// A cluster's members, in (url, page) order. Most clusters are one page (a page with no
/// duplicate), named by its own id: such a cluster has no members' entry at all (its page's
/// row is it, `Cluster::Alone`); one page in a cluster another page names is held inline. A
/// small cluster is a sorted vector of exactly its members (56 bytes each), not a `BTreeMap`,
/// whose first leaf holds room for eleven (~630 bytes for a cluster of two); a large one is a
/// `BTreeMap`, whose insertions stay logarithmic.
#[derive(Debug)]
pub(super) enum Members {
    One(MemberKey, MemberValue),
    Few(Vec<(MemberKey, MemberValue)>),
    Many(BTreeMap<MemberKey, MemberValue>),
}

impl Members {
    pub(super) fn len(&self) -> usize {
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
/// whole cluster and names it (`ClusterState::members` holds no entry for such a cluster).
pub(super) enum Cluster<'a> {
    Held(&'a Members),
    Alone(&'a ClusterRow),
}

impl Cluster<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Cluster::Held(members) => members.len(),
            Cluster::Alone(_) => 1,
        }
    }

    /// Its members in (url, page) order: (url, page, similarity ppm, leader).
    pub(super) fn members(
        &self,
    ) -> Box<dyn Iterator<Item = (&Arc<str>, PageId, u32, PageId)> + '_> {
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

    pub(super) fn urls(&self) -> impl Iterator<Item = &Arc<str>> {
        self.members().map(|(url, ..)| url)
    }
}

/// The current clusters of a process's shard (see the module's documentation).
#[derive(Default)]
pub struct ClusterState {
    /// The rows of each page whose rows are unsettled (a change in flight: a retraction before
    /// its insertion, or two rows at once), with their accumulated counts; a settled page's row
    /// is `current`.
    pub(super) rows_of: HashMap<PageId, Vec<(ClusterRow, isize)>>,
    /// The row each page is shown with.
    pub(super) current: Current,
    /// cluster → members (url, page, similarity ppm, leader), but for the clusters that are
    /// one page named by its own id (most pages: a page with no duplicate), which `current`
    /// alone holds (`Cluster::Alone`): an entry for each would take ~150 bytes a page.
    pub(super) members: HashMap<PageId, Members>,
    /// What the gauges and the dashboard read, kept as members come and go: a sample or a
    /// summary costs the clusters it shows, not a pass over every cluster and URL held (at a
    /// million pages such a pass took the live lock, which the sink waits on, every second).
    /// Clusters by size: size → clusters.
    pub(super) sizes: BTreeMap<usize, usize>,
    /// The clusters of more than one page, largest first, then by id.
    pub(super) multi: BySize,
    /// Per host: (pages, pages in a cluster of more than one page).
    pub(super) hosts: HashMap<String, (usize, usize)>,
}

impl ClusterState {
    /// The cluster named `id`, if any.
    pub(super) fn cluster(&self, id: &PageId) -> Option<Cluster<'_>> {
        if let Some(members) = self.members.get(id) {
            return Some(Cluster::Held(members));
        }
        self.current.get(id).filter(|row| row.assignment.cluster == *id).map(Cluster::Alone)
    }

    /// Every cluster, in no order.
    pub(super) fn clusters(&self) -> impl Iterator<Item = (&PageId, Cluster<'_>)> {
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
    pub(super) fn cluster_count(&self) -> usize {
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

    /// Applies output updates from the dataflow. Updates of one page may arrive in any order
    /// (the new row before the old one's retraction), so membership follows each page's row with
    /// a positive count, not the order of arrival. A page's rows are tallied apart only while
    /// they are unsettled (anything but its current row once): most pages cost their current
    /// row alone.
    fn apply(&mut self, updates: &[(ClusterRow, u64, isize)]) {
        let inner = self;
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
    pub(super) fn url_of(&self, page: &PageId) -> String {
        self.current.get(page).map(|row| row.url.to_string()).unwrap_or_default()
    }

    /// Clusters by size, largest first, then by id: (cluster, size, first URLs). The clusters
    /// of more than one page come from their index; one-page clusters, listed only when fewer
    /// than `limit` clusters hold more, are found by a pass over the clusters.
    pub(super) fn largest(&self, limit: usize) -> Vec<Value> {
        let inner = self;
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
                    "cluster_url": inner.url_of(id),
                    "sample_urls": m.urls().take(5).cloned().collect::<Vec<_>>(),
                })
            })
            .collect()
    }

    /// `f` of the rows of every update applied, each once, sorted, borrowed: a settled page's
    /// row, and the rows of an unsettled page whose count is not zero.
    fn with_rows<R>(&self, f: impl FnOnce(Vec<&ClusterRow>) -> R) -> R {
        let inner = self;
        let settled = inner.current.iter().filter(|row| !inner.rows_of.contains_key(&row.page));
        let unsettled =
            inner.rows_of.values().flatten().filter(|(_, count)| *count != 0).map(|(row, _)| row);
        let mut rows: Vec<&ClusterRow> = settled.chain(unsettled).collect();
        rows.sort_unstable();
        f(rows)
    }

    /// The bytes the clusters hold, walked: its maps' tables; each page's row with its URL
    /// and record id (an `Arc<str>` each, which the page's member entry shares); the clusters
    /// of several pages (a vector each, or past `FEW_MEMBERS` a B-tree: about a node of eleven
    /// entries for every eight members, an estimate); the hosts' counts. It grows with
    /// every page held, on the process that writes the clusters. A pass over every page: for
    /// the run's summary, not for the dashboard's second-by-second figures.
    fn bytes(&self) -> usize {
        use dupflow_operators::runtime::footprint::{array, hash_table, ARC_COUNTS};
        use std::mem::size_of;
        let inner = self;
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
    pub(super) fn all_sizes(&self) -> BTreeSet<(String, usize)> {
        self.clusters().map(|(c, m)| (c.to_string(), m.len())).collect()
    }
}
