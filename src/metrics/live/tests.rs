use std::cmp::Reverse;
use std::sync::RwLockReadGuard;

use super::clusters::{BySize, ClusterState, MemberKey, MemberValue, Members, FEW_MEMBERS};
use super::*;
use dupflow_operators::verify::Assignment;

/// A live view showing a sink's clusters, and the sink's hand on them.
struct Shown {
    live: Live,
    clusters: Clusters,
    view: ClusterView,
}

impl std::ops::Deref for Shown {
    type Target = Live;
    fn deref(&self) -> &Live {
        &self.live
    }
}

impl Shown {
    /// The sink applies `updates`.
    fn apply(&self, updates: &[(ClusterRow, u64, isize)]) {
        self.clusters.apply(updates);
    }

    fn rows(&self) -> Vec<ClusterRow> {
        self.clusters.rows()
    }

    /// The clusters as the live view reads them.
    fn state(&self) -> RwLockReadGuard<'_, ClusterState> {
        self.view.read()
    }
}

fn shown(alarm_pages: usize) -> Shown {
    let live = Live::new(Arc::new(Registry::default()), alarm_pages);
    let clusters = Clusters::default();
    live.show_clusters(clusters.view());
    let view = live.clusters_shown();
    Shown { live, clusters, view }
}

pub(super) fn row(page: u64, cluster: u64, leader: u64) -> ClusterRow {
    let id = |n| PageId { date: n, hash: n };
    ClusterRow {
        page: id(page),
        url: format!("http://h/{page}").into(),
        record_id: page.to_string().into(),
        assignment: Assignment {
            cluster: id(cluster),
            leader: id(leader),
            similarity_ppm: 1_000_000,
        },
    }
}

#[test]
fn a_new_row_before_the_old_ones_retraction_keeps_the_page() {
    let live = shown(10);
    live.apply(&[(row(1, 1, 1), 0, 1), (row(2, 1, 1), 0, 1)]);
    // Page 2 changes leader within cluster 1: the insertion arrives first.
    live.apply(&[(row(2, 1, 2), 1, 1)]);
    live.apply(&[(row(2, 1, 1), 1, -1)]);
    // Page 2 moves to its own cluster, retraction first this time.
    live.apply(&[(row(2, 1, 2), 2, -1)]);
    live.apply(&[(row(2, 2, 2), 2, 1)]);
    let sizes: Vec<usize> = live.sizes().into_iter().map(|(_, n)| n).collect();
    assert_eq!(sizes, vec![1, 1]);
    live.sample();
    assert_eq!(live.registry.get(super::super::PAGES_HELD, ""), 2);
    // Settled pages are not tallied apart: their current row is all the view holds.
    assert!(live.state().rows_of.is_empty());
}

/// Clusters by size, the multi-page clusters by size, per host (pages, duplicate pages).
type Kept = (BTreeMap<usize, usize>, BySize, BTreeMap<String, (usize, usize)>);

/// What the kept indexes must hold, counted from the clusters themselves.
fn from_scratch(inner: &ClusterState) -> Kept {
    let mut sizes = BTreeMap::new();
    let mut multi = BTreeSet::new();
    let mut hosts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (id, m) in inner.clusters() {
        *sizes.entry(m.len()).or_default() += 1;
        if m.len() > 1 {
            multi.insert((Reverse(m.len()), *id));
        }
        for url in m.urls() {
            let h = hosts.entry(crate::source::http::host_of(url)).or_default();
            h.0 += 1;
            h.1 += usize::from(m.len() > 1);
        }
    }
    (sizes, multi, hosts)
}

#[test]
fn the_kept_sizes_multi_page_clusters_hosts_and_rows_equal_a_count_from_scratch() {
    // Small clusters (vectors), and clusters that grow past `FEW_MEMBERS` (B-trees) and back.
    for (pages, clusters) in [(40, 12), (60, 3), (100, 2)] {
        kept_indexes_follow_the_clusters(pages, clusters);
    }
}

/// Pages on three hosts move between clusters, come and go; each step's retractions and
/// insertions arrive in a scrambled order, sometimes split over two batches.
fn kept_indexes_follow_the_clusters(pages: u64, clusters: u64) {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut below = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let id = |n| PageId { date: n, hash: n };
    let row = |page: u64, cluster: u64| ClusterRow {
        page: id(page),
        url: format!("http://h{}.example/{page}", page % 3).into(),
        record_id: page.to_string().into(),
        assignment: Assignment {
            cluster: id(cluster),
            leader: id(cluster),
            similarity_ppm: 1_000_000,
        },
    };
    let live = shown(10);
    let mut now: BTreeMap<u64, u64> = BTreeMap::new();
    let mut tally: BTreeMap<ClusterRow, isize> = BTreeMap::new();
    for step in 0..400u64 {
        let mut updates = Vec::new();
        for _ in 0..1 + below(6) {
            let page = below(pages);
            let next = match below(4) {
                0 => None,
                _ => Some(below(clusters)),
            };
            if let Some(&cluster) = now.get(&page) {
                updates.push((row(page, cluster), step, -1));
            }
            if let Some(cluster) = next {
                updates.push((row(page, cluster), step, 1));
                now.insert(page, cluster);
            } else {
                now.remove(&page);
            }
        }
        for i in (1..updates.len()).rev() {
            updates.swap(i, below(i as u64 + 1) as usize);
        }
        let cut = below(updates.len() as u64 + 1) as usize;
        for batch in [&updates[..cut], &updates[cut..]] {
            live.apply(batch);
            // Its rows are every row applied with a count other than zero, as a tally of
            // them (the sink's own, before the sink read them from here) gives, even
            // between the two halves of a step.
            for (row, _, diff) in batch {
                *tally.entry(row.clone()).or_insert(0) += diff;
            }
            tally.retain(|_, count| *count != 0);
            assert_eq!(live.rows(), tally.keys().cloned().collect::<Vec<_>>(), "step {step}");
        }
        let inner = live.state();
        let (sizes, multi, hosts) = from_scratch(&inner);
        assert_eq!(inner.sizes, sizes, "step {step}");
        assert_eq!(inner.multi, multi, "step {step}");
        assert_eq!(
            inner.hosts.iter().map(|(h, c)| (h.clone(), *c)).collect::<BTreeMap<_, _>>(),
            hosts,
            "step {step}"
        );
        // And the view follows the assignments.
        let mut expected: BTreeMap<u64, usize> = BTreeMap::new();
        for cluster in now.values() {
            *expected.entry(*cluster).or_default() += 1;
        }
        let held: BTreeMap<u64, usize> = inner.clusters().map(|(c, m)| (c.hash, m.len())).collect();
        assert_eq!(held, expected, "step {step}");
        assert_eq!(inner.cluster_count(), expected.len(), "step {step}");
        // A cluster that is the page naming it has no entry of its own.
        assert!(
            inner.members.iter().all(|(c, m)| !matches!(m, Members::One((_, p), _) if p == c)),
            "step {step}"
        );
        drop(inner);
        // The largest clusters: by size, then id, as a sort of every cluster gives them.
        let mut all: Vec<(usize, u64)> = expected.iter().map(|(&c, &n)| (n, c)).collect();
        all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for limit in [1, 3, 20] {
            let listed: Vec<(usize, String)> = live.clusters(limit)["clusters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["size"].as_u64().unwrap() as usize,
                        c["cluster"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let wanted: Vec<(usize, String)> =
                all.iter().take(limit).map(|&(n, c)| (n, id(c).to_string())).collect();
            assert_eq!(listed, wanted, "step {step}, limit {limit}");
        }
    }
    live.sample();
    assert_eq!(live.registry.get(super::super::PAGES_HELD, ""), now.len() as i64);
}

#[test]
fn a_cluster_grows_from_one_page_and_shrinks_back() {
    let live = shown(10);
    let members = |live: &Live| -> Vec<String> {
        let doc = live.cluster(&PageId { date: 1, hash: 1 }.to_string()).unwrap_or_default();
        doc["members"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["url"].as_str().unwrap().to_string())
            .collect()
    };
    // A page alone in the cluster it names is its row: no entry of its own.
    let alone = |live: &Shown| {
        let inner = live.state();
        inner.members.is_empty()
            && matches!(inner.cluster(&PageId { date: 1, hash: 1 }), Some(Cluster::Alone(_)))
    };
    live.apply(&[(row(1, 1, 1), 0, 1)]);
    assert!(alone(&live), "one page, its row alone");
    assert_eq!(members(&live), ["http://h/1"]);
    live.apply(&[(row(3, 1, 1), 1, 1), (row(2, 1, 1), 1, 1)]);
    assert_eq!(members(&live), ["http://h/1", "http://h/2", "http://h/3"], "in URL order");
    // The same page again (a new leader): still three.
    live.apply(&[(row(3, 1, 1), 2, -1), (row(3, 1, 2), 2, 1)]);
    assert_eq!(live.cluster(&PageId { date: 1, hash: 1 }.to_string()).unwrap()["size"], 3);
    live.apply(&[(row(3, 1, 2), 3, -1), (row(2, 1, 1), 3, -1)]);
    assert_eq!(members(&live), ["http://h/1"]);
    assert!(alone(&live), "its row alone again");
    live.apply(&[(row(1, 1, 1), 4, -1)]);
    assert!(live.sizes().is_empty());
    assert!(members(&live).is_empty());
    // Past `FEW_MEMBERS` a B-tree, and a vector again at half of it, in URL order throughout.
    let kind = |live: &Shown| match live.state().members.values().next() {
        Some(Members::One(..)) => "one",
        Some(Members::Few(..)) => "few",
        Some(Members::Many(..)) => "many",
        None => "none",
    };
    let n = FEW_MEMBERS as u64 + 1;
    live.apply(&(1..=n).map(|p| (row(p, 1, 1), 5, 1)).collect::<Vec<_>>());
    assert_eq!(kind(&live), "many");
    let mut urls: Vec<String> = (1..=n).map(|p| format!("http://h/{p}")).collect();
    urls.sort();
    assert_eq!(members(&live), urls);
    live.apply(&(2..=n / 2 + 1).map(|p| (row(p, 1, 1), 6, -1)).collect::<Vec<_>>());
    assert_eq!(kind(&live), "many", "above half of FEW_MEMBERS");
    live.apply(&[(row(n / 2 + 2, 1, 1), 7, -1)]);
    assert_eq!(kind(&live), "few");
    let mut left: Vec<String> =
        [1].into_iter().chain(n / 2 + 3..=n).map(|p| format!("http://h/{p}")).collect();
    left.sort();
    assert_eq!(members(&live), left);
    assert_eq!(live.sizes().into_iter().map(|(_, n)| n).collect::<Vec<_>>(), [left.len()]);
}

#[test]
fn a_page_alone_in_a_cluster_named_by_another_page_keeps_an_entry() {
    let live = shown(10);
    // Page 2's row names cluster 1 before page 1's row arrives (rows come in any order).
    live.apply(&[(row(2, 1, 1), 0, 1)]);
    assert_eq!(live.state().members.len(), 1, "cluster 1 is not page 2's own");
    assert_eq!(live.sizes().into_iter().map(|(_, n)| n).collect::<Vec<_>>(), [1]);
    live.apply(&[(row(1, 1, 1), 0, 1)]);
    assert_eq!(live.sizes().into_iter().map(|(_, n)| n).collect::<Vec<_>>(), [2]);
    // Page 2 leaves: page 1 is alone in the cluster it names, its row alone.
    live.apply(&[(row(2, 1, 1), 1, -1)]);
    assert!(live.state().members.is_empty());
    assert_eq!(live.summary()["clusters"], 1);
}

#[test]
fn a_page_that_leaves_takes_its_row_and_url_along() {
    let live = shown(10);
    live.apply(&[(row(1, 1, 1), 0, 1), (row(2, 1, 1), 0, 1)]);
    // Page 1, the anchor, leaves (retention): page 2 is its cluster's anchor now, cluster 2.
    live.apply(&[(row(1, 1, 1), 1, -1), (row(2, 1, 1), 1, -1), (row(2, 2, 2), 1, 1)]);
    let inner = live.state();
    assert_eq!(inner.current.len(), 1);
    assert!(inner.rows_of.is_empty());
    assert_eq!(inner.url_of(&PageId { date: 1, hash: 1 }), "", "no URL kept for a page gone");
    assert_eq!(inner.url_of(&PageId { date: 2, hash: 2 }), "http://h/2");
    drop(inner);
    // An unsettled page (its retraction first) shows nothing until its row arrives.
    live.apply(&[(row(2, 2, 2), 2, -1)]);
    assert!(live.sizes().is_empty());
    live.apply(&[(row(2, 2, 2), 2, 1)]);
    assert_eq!(live.sizes().len(), 1);
    assert!(live.state().rows_of.is_empty());
}

#[test]
fn the_bytes_walked_count_every_row_and_the_clusters_of_several_pages() {
    let live = shown(10);
    assert_eq!(live.bytes(), 0, "nothing held");
    // 200 pages in clusters of two.
    live.apply(&(0..200).map(|p| (row(p, p / 2 * 2, p / 2 * 2), 0, 1)).collect::<Vec<_>>());
    let text: usize =
        (0..200u64).map(|p| format!("http://h/{p}").len() + p.to_string().len()).sum();
    let pair = 2 * std::mem::size_of::<(MemberKey, MemberValue)>();
    let bytes = live.bytes();
    assert!(bytes >= text + 100 * pair, "{bytes} bytes: the texts and the pairs at least");
    // With a B-tree node a pair (room for eleven members) it would be ~124 KB.
    assert!(bytes < 200 * 400, "{bytes} bytes: a pair is a vector of two, not a B-tree node");
    // The same pages alone hold no member vectors.
    live.apply(&(0..200).map(|p| (row(p, p / 2 * 2, p / 2 * 2), 1, -1)).collect::<Vec<_>>());
    live.apply(&(0..200).map(|p| (row(p, p, p), 1, 1)).collect::<Vec<_>>());
    assert!(live.bytes() < bytes, "{} bytes alone, {bytes} in pairs", live.bytes());
}
