//! The reference: the whole method computed from scratch, sequentially, the plain way.
//!
//! It is the oracle of the incremental dataflow (Materialize keeps such a module beside every
//! clever operator): per-host template counts by brute force, fingerprints, groups in a map,
//! union-find with path halving, and exact LCS by dynamic programming. Given the same pages it
//! must give exactly the dataflow's clusters.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::candidates::exact::content_key;
use crate::candidates::fingerprint::page_fingerprints;
use crate::candidates::minhash::band_keys;
use crate::candidates::simhash::{block_keys, hamming, simhash};
use crate::candidates::star_edges;
use crate::ingest::page::{Content, Page, PageId};
use crate::method::{Fingerprinting, MethodConfig};
use crate::template::Filtered;
pub use crate::template::{filter_templates, filter_templates_as_of};
use crate::verify::edges::group_edges;
use crate::verify::lcs::{self, Verdict};
use crate::verify::member::{siblings, Edge, Member};
use crate::verify::{cluster_set, Assignment, Clustering, VerifyMethod, VerifyStats};

/// Sentence shares, from scratch: each key's earliest holder by a scan of all pages.
pub fn shares(
    filtered: &BTreeMap<PageId, Filtered>,
) -> BTreeMap<PageId, crate::cluster::share::Shared> {
    let mut first: HashMap<u64, PageId> = HashMap::new();
    for (id, f) in filtered {
        for &(key, _) in &f.own_sentences() {
            let holder = first.entry(key).or_insert(*id);
            *holder = (*holder).min(*id);
        }
    }
    filtered
        .iter()
        .filter_map(|(id, f)| {
            let earlier = |key: u64| first.get(&key).copied().filter(|p| p != id);
            let own = f.own_sentences();
            own.iter()
                .any(|&(k, _)| earlier(k).is_some())
                .then(|| (*id, crate::cluster::share::shared(&own, earlier)))
        })
        .collect()
}

fn find(parent: &mut BTreeMap<PageId, PageId>, mut x: PageId) -> PageId {
    while parent[&x] != x {
        let grand = parent[&parent[&x]];
        parent.insert(x, grand);
        x = grand;
    }
    x
}

/// Joins the sets of `a` and `b`; each set's root is its anchor (`PageId::anchor_key`).
fn union(parent: &mut BTreeMap<PageId, PageId>, a: PageId, b: PageId) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        let (root, child) = if ra.anchor_key() < rb.anchor_key() { (ra, rb) } else { (rb, ra) };
        parent.insert(child, root);
    }
}

/// The fingerprint groups of the configured fingerprints (`None` for SimHash, which has edges).
fn fingerprint_groups(
    pages: &[Page],
    filtered: &BTreeMap<PageId, Filtered>,
    config: &MethodConfig,
) -> Option<BTreeMap<u64, BTreeSet<PageId>>> {
    let mut groups: BTreeMap<u64, BTreeSet<PageId>> = BTreeMap::new();
    match &config.fingerprint {
        Fingerprinting::Sentence(f) => {
            for (&id, page) in filtered {
                for fp in page_fingerprints(&page.content, f, config.short_prefix_ppm()) {
                    groups.entry(fp).or_default().insert(id);
                }
            }
        }
        Fingerprinting::Minhash(m) => {
            for page in pages {
                for key in band_keys(&page.shingles, m) {
                    groups.entry(key).or_default().insert(page.id);
                }
            }
        }
        Fingerprinting::Simhash(_) => return None,
    }
    Some(groups)
}

/// Candidate-set label (the set's anchor, `PageId::anchor_key`) of every page, from scratch.
pub fn candidate_sets(
    pages: &[Page],
    filtered: &BTreeMap<PageId, Filtered>,
    config: &MethodConfig,
) -> BTreeMap<PageId, PageId> {
    let mut edges: Vec<(PageId, PageId)> = Vec::new();
    let max = config.candidates.max_fingerprint_pages;
    match fingerprint_groups(pages, filtered, config) {
        Some(groups) => {
            for members in groups.values() {
                let members: Vec<PageId> = members.iter().copied().collect();
                edges.extend(star_edges(&members, max));
            }
        }
        None => {
            let Fingerprinting::Simhash(s) = &config.fingerprint else {
                unreachable!("only SimHash has no groups")
            };
            let mut blocks: BTreeMap<u64, Vec<(PageId, u64)>> = BTreeMap::new();
            for page in pages {
                let hash = simhash(&page.shingles);
                for key in block_keys(hash, s.max_distance) {
                    blocks.entry(key).or_default().push((page.id, hash));
                }
            }
            for group in blocks.values().filter(|g| g.len() <= max as usize) {
                for (i, &(a, ha)) in group.iter().enumerate() {
                    for &(b, hb) in &group[i + 1..] {
                        if hamming(ha, hb) <= s.max_distance {
                            edges.push((a, b));
                        }
                    }
                }
            }
        }
    }
    let mut parent: BTreeMap<PageId, PageId> = filtered.keys().map(|&id| (id, id)).collect();
    for (a, b) in edges {
        union(&mut parent, a, b);
    }
    filtered.keys().map(|&id| (id, find(&mut parent, id))).collect()
}

/// A pair's verdict by plain dynamic programming (LCS) or the configured measure, before the
/// sibling rule.
fn verdict(config: &MethodConfig, a: &Content, b: &Content) -> Verdict {
    let tau_ppm = lcs::ppm(config.verify.threshold);
    match config.verify.method {
        // Plain dynamic programming instead of Myers and its filters.
        VerifyMethod::Lcs => {
            let (a, b) = if config.verify.central_trim_share > 0.0 {
                lcs::central(a, b, config.verify.central_trim_share)
            } else {
                (a.clone(), b.clone())
            };
            let at_least = |s: f64, tau_ppm: u64| {
                if s * 1_000_000.0 >= tau_ppm as f64 - 1e-6 {
                    Verdict::Similar(s)
                } else {
                    Verdict::Dissimilar
                }
            };
            let verdict = at_least(lcs::dp_resemblance(&a, &b), tau_ppm);
            let verdict = crate::verify::covering(&config.verify, &a, &b, verdict);
            crate::verify::or_by_words(&config.verify, &a, &b, verdict, |a, b, tau| {
                at_least(lcs::dp_word_resemblance(a, b), tau)
            })
        }
        _ => crate::verify::compare(&config.verify, a, b, tau_ppm),
    }
}

/// Bounded verification from scratch: every group's neighbour pairs (`edges::group_edges`),
/// decided by `verdict`; clusters are the components of the verified pairs, named by their
/// anchor; a page's leader is the shortest page it verified against.
fn bounded_clusters(
    groups: &BTreeMap<u64, BTreeSet<PageId>>,
    filtered: &BTreeMap<PageId, Filtered>,
    config: &MethodConfig,
) -> BTreeMap<PageId, Assignment> {
    let max = config.candidates.max_fingerprint_pages as usize;
    // Each page's repeated keys: its sentences on at least sibling_min_pages pages of a group.
    let mut repeated: BTreeMap<PageId, Vec<u64>> = BTreeMap::new();
    for ids in groups.values().filter(|ids| ids.len() <= max) {
        let members: Vec<Member> = ids
            .iter()
            .map(|&id| Member::new(config.verify.method, id, filtered[&id].content.clone()))
            .collect();
        let refs: Vec<&Member> = members.iter().collect();
        if let (Some(common), _) =
            crate::verify::member::group_blocks(&refs, config.verify.sibling_min_pages)
        {
            for m in &members {
                repeated
                    .entry(m.id)
                    .or_default()
                    .extend(crate::runtime::sorted::intersect(&m.keys, &common));
            }
        }
    }
    for keys in repeated.values_mut() {
        keys.sort_unstable();
        keys.dedup();
    }
    let mut edges: BTreeSet<Edge> = BTreeSet::new();
    for (&fp, ids) in groups {
        if ids.len() < 2 || ids.len() > max {
            continue;
        }
        let mut members: Vec<Member> = ids
            .iter()
            .map(|&id| Member::new(config.verify.method, id, filtered[&id].content.clone()))
            .collect();
        members.sort();
        let members: Vec<&Member> = members.iter().collect();
        let verdicts = group_edges(
            fp,
            &members,
            &config.verify,
            config.sentence_groups_over(),
            config.candidates.neighbors as usize,
            &mut VerifyStats::default(),
            |a, b| {
                let v = verdict(config, &a.content(), &b.content());
                let differ = matches!(v, Verdict::Similar(_))
                    && crate::verify::own_texts_are_different_texts(
                        &config.verify,
                        &a.content(),
                        &b.content(),
                    );
                (v, differ)
            },
        );
        edges.extend(verdicts.edges);
        // Sibling candidates: edges unless what they share is repeated for both.
        let none = Vec::new();
        let keys = |id: &PageId| repeated.get(id).unwrap_or(&none);
        let content = |id: &PageId| &filtered[id].content;
        edges.extend(verdicts.candidates.into_iter().filter(|e| {
            !siblings(content(&e.shorter), keys(&e.shorter), content(&e.longer), keys(&e.longer))
        }));
    }
    let mut parent: BTreeMap<PageId, PageId> = filtered.keys().map(|&id| (id, id)).collect();
    let mut leader: BTreeMap<PageId, (u64, PageId, u32)> = BTreeMap::new();
    for e in &edges {
        union(&mut parent, e.shorter, e.longer);
        let candidate = (e.shorter_length, e.shorter, e.similarity_ppm);
        let best = leader.entry(e.longer).or_insert(candidate);
        *best = (*best).min(candidate);
    }
    filtered
        .keys()
        .map(|&id| {
            let cluster = find(&mut parent, id);
            let (leader, similarity_ppm) =
                leader.get(&id).map_or((id, 1_000_000), |&(_, l, s)| (l, s));
            (id, Assignment { cluster, leader, similarity_ppm })
        })
        .collect()
}

/// Exact families, from scratch: each page's representative (the anchor of the pages with the
/// same content key; itself without sentences).
pub fn families(pages: &[Page]) -> BTreeMap<PageId, PageId> {
    let mut anchors: HashMap<u64, PageId> = HashMap::new();
    for page in pages {
        if let Some(key) = content_key(page) {
            let e = anchors.entry(key).or_insert(page.id);
            *e = crate::ingest::page::anchor([*e, page.id]).expect("two ids");
        }
    }
    pages.iter().map(|p| (p.id, content_key(p).map_or(p.id, |key| anchors[&key]))).collect()
}

/// The paper's clustering of whole candidate sets (`clustering = "leader"`, SimHash), from
/// scratch.
fn set_clusters(
    unique: &[Page],
    filtered: &BTreeMap<PageId, Filtered>,
    config: &MethodConfig,
) -> BTreeMap<PageId, Assignment> {
    let mut sets: BTreeMap<PageId, Vec<PageId>> = BTreeMap::new();
    for (id, label) in candidate_sets(unique, filtered, config) {
        sets.entry(label).or_default().push(id);
    }
    leader_rule(&sets, filtered, config, config.verify.clustering)
}

/// `clustering = "star"`: the connected clusters (`bounded_clusters`), each cut by the leader
/// rule, from scratch.
fn star_clusters(
    connected: &BTreeMap<PageId, Assignment>,
    filtered: &BTreeMap<PageId, Filtered>,
    config: &MethodConfig,
) -> BTreeMap<PageId, Assignment> {
    let mut components: BTreeMap<PageId, Vec<PageId>> = BTreeMap::new();
    for (id, assignment) in connected {
        components.entry(assignment.cluster).or_default().push(*id);
    }
    leader_rule(&components, filtered, config, Clustering::Leader)
}

/// Each set of `sets` (label → its pages) clustered whole by `cluster_set`.
fn leader_rule(
    sets: &BTreeMap<PageId, Vec<PageId>>,
    filtered: &BTreeMap<PageId, Filtered>,
    config: &MethodConfig,
    clustering: Clustering,
) -> BTreeMap<PageId, Assignment> {
    let tau_ppm = lcs::ppm(config.verify.threshold);
    let mut out = BTreeMap::new();
    for members in sets.values() {
        let members: Vec<_> = members.iter().map(|id| (*id, &filtered[id].content)).collect();
        let common = crate::verify::set_common_keys(&members, config.verify.sibling_min_pages);
        let assignments = cluster_set(
            &members,
            config.candidates.max_set_pages as usize,
            tau_ppm,
            config.verify.method,
            clustering,
            &mut VerifyStats::default(),
            |a, b| {
                crate::verify::unless_siblings(&config.verify, a, b, &common, verdict(config, a, b))
            },
        );
        out.extend(assignments);
    }
    out
}

/// Clusters of `pages` (ids distinct), from scratch.
pub fn clusters(pages: &[Page], config: &MethodConfig) -> BTreeMap<PageId, Assignment> {
    clusters_as_of(pages, pages, config)
}

/// Clusters of `pages` with the template sentences of `template_pages` (the pages as of the
/// last template refresh), from scratch.
pub fn clusters_as_of(
    pages: &[Page],
    template_pages: &[Page],
    config: &MethodConfig,
) -> BTreeMap<PageId, Assignment> {
    let all_filtered = filter_templates_as_of(pages, template_pages, &config.template);
    // Identical pages: the representatives are compared, the members follow them.
    let families = families(pages);
    let unique: Vec<Page> = pages.iter().filter(|p| families[&p.id] == p.id).cloned().collect();
    let filtered: BTreeMap<PageId, Filtered> = all_filtered
        .iter()
        .filter(|(id, _)| families[id] == **id)
        .map(|(id, f)| (*id, f.clone()))
        .collect();
    let mut filtered = filtered;
    if config.verify.method == VerifyMethod::Cosine {
        // Document frequencies over every filtered page (members too), from scratch.
        let mut df: HashMap<u64, u64> = HashMap::new();
        for f in all_filtered.values() {
            for &t in &f.content.shingles {
                *df.entry(t).or_default() += 1;
            }
        }
        let n = all_filtered.len() as u64;
        for f in filtered.values_mut() {
            f.content.term_weights = f
                .content
                .shingles
                .iter()
                .map(|t| crate::verify::cosine::idf_weight(n, df[t]))
                .collect();
        }
    }
    let groups = match config.verify.clustering {
        Clustering::Connected | Clustering::Star => fingerprint_groups(&unique, &filtered, config),
        Clustering::Leader => None,
    };
    let mut out = match groups {
        Some(groups) => bounded_clusters(&groups, &filtered, config),
        None => set_clusters(&unique, &filtered, config),
    };
    if config.verify.clustering == Clustering::Star {
        out = star_clusters(&out, &filtered, config);
    }
    for (&id, &representative) in &families {
        if id != representative {
            let assignment =
                crate::candidates::exact::member_assignment(representative, &out[&representative]);
            out.insert(id, assignment);
        }
    }
    out
}

/// Checks the reference against itself on a trivially known case.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::page::Sentence;
    use crate::template::TemplateConfig;
    use crate::verify::VerifyConfig;

    fn page(n: u64, host: u64, keys: &[u64]) -> Page {
        Page {
            id: PageId { date: n, hash: n },
            url: format!("http://h{host}/{n}").into(),
            host,
            record_id: n.to_string().into(),
            sentences: keys.iter().map(|&key| Sentence::new(key, 3, true, 0)).collect(),
            shingles: Vec::new(),
            words: Default::default(),
            main_marked: false,
        }
    }

    #[test]
    fn near_duplicates_cluster_and_others_stay_alone() {
        let base: Vec<u64> = (100..130).collect();
        let mut near = base.clone();
        near[5] = 999;
        let other: Vec<u64> = (500..530).collect();
        let pages = vec![page(1, 1, &base), page(2, 2, &near), page(3, 3, &other)];
        let config = MethodConfig {
            verify: VerifyConfig { threshold: 0.8, ..Default::default() },
            ..Default::default()
        };
        let out = clusters(&pages, &config);
        assert_eq!(out[&pages[0].id].cluster, pages[0].id);
        assert_eq!(out[&pages[1].id].cluster, pages[0].id);
        assert_eq!(out[&pages[2].id].cluster, pages[2].id);
    }

    #[test]
    fn a_shared_site_template_does_not_make_pages_similar() {
        let template: Vec<u64> = (1..40).collect();
        let config = MethodConfig {
            template: TemplateConfig { min_pages: 3, page_fraction: 0.0, ..Default::default() },
            ..Default::default()
        };
        let pages: Vec<Page> = (0..4)
            .map(|i| {
                let mut keys = template.clone();
                keys.extend((0..20).map(|j| 1000 * (i + 1) + j));
                page(i, 7, &keys)
            })
            .collect();
        let out = clusters(&pages, &config);
        let distinct: BTreeSet<PageId> = out.values().map(|a| a.cluster).collect();
        assert_eq!(distinct.len(), 4, "template alone must not cluster pages");
    }
}
