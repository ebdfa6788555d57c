//! The method's graph: its stages on a collection of pages, pages in, assignments (and
//! sentence shares) out. Nothing here reads, writes or steps: the streaming system feeds
//! `pages` and hosts the graph; what the method counts as it runs goes to an `Observer`.

use std::sync::Arc;

use differential_dataflow::trace::implementations::{ValBuilder, ValSpine};
use differential_dataflow::VecCollection;

use crate::candidates::exact::{expand_families, ExactFamilies};
use crate::candidates::fingerprint::Fingerprint;
use crate::candidates::minhash::MinhashBands;
use crate::candidates::simhash::{simhash, SimhashEdges};
use crate::candidates::CandidateSets;
use crate::cluster::assign::{assignments, AssignUpdate};
use crate::cluster::components::components;
use crate::cluster::rows::join_by_page;
use crate::cluster::share::{SentenceShare, Shared};
use crate::ingest::page::{Content, Page, PageId};
use crate::method::{Candidates, Grouping, MethodConfig, Plan};
use crate::runtime::footprint;
use crate::template::{Filtered, RemoveTemplates};
use crate::verify::edges::{Edges, VerifyEdges};
use crate::verify::member::Member;
use crate::verify::{
    Assignment, Clustering, VerifyClusters, VerifyConfig, VerifyMethod, VerifyStats,
};

/// What the method counts as it runs, each call a batch's worth: the streaming system's
/// metrics implement it.
pub trait Observer {
    /// Pages in from the template stage: a page once, and once more each time it is filtered
    /// again (a sentence of it became, or stopped being, its host's template).
    fn filtered(&self, pages: i64);
    /// The change in the number of template sentences of `host` (its hash).
    fn template_sentences(&self, host: u64, change: i64);
    /// The change in the number of pages identical to another (family members).
    fn exact_duplicates(&self, change: i64);
    /// The change in the number of fingerprints held by more pages than their cap.
    fn oversized_fingerprints(&self, change: i64);
    /// One time's verification, by fingerprint group or candidate set.
    fn verification(&self, stats: &[VerifyStats]);
}

/// Each page's cluster assignment, as a collection.
pub type Assignments<'scope> = VecCollection<'scope, u64, (PageId, Assignment), isize>;

/// Each page's sentence share, as a collection.
pub type Shares<'scope> = VecCollection<'scope, u64, (PageId, Shared), isize>;

/// The method's stages on a collection of pages: templates, exact families, fingerprints,
/// candidate sets and verification. Returns each page's cluster assignment. What it counts goes to `observer`.
pub fn clusters<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    method: &MethodConfig,
    observer: Arc<dyn Observer>,
) -> Assignments<'scope> {
    clusters_and_shares(pages, method, observer, false).0
}

/// `clusters`, and with `share` the sentence share of every page with duplicated sentences.
/// Template refreshes fall on the multiples of `template.refresh_epochs`.
pub fn clusters_and_shares<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    method: &MethodConfig,
    observer: Arc<dyn Observer>,
    share: bool,
) -> (Assignments<'scope>, Option<Shares<'scope>>) {
    let template = method.template;
    let (filtered, templates) = pages
        .clone()
        .remove_templates_refreshed(template, move |&time| template.refresh_time(time));
    let shares = share.then(|| filtered.clone().sentence_share());
    // Pages in from the template stage: a page once, and once more each time it is filtered
    // again (a sentence of it became, or stopped being, its host's template).
    let filtered_observer = observer.clone();
    filtered.clone().inspect_batch(move |_, updates| {
        let added: isize = updates.iter().map(|(_, _, diff)| (*diff).max(0)).sum();
        if added > 0 {
            filtered_observer.filtered(added as i64)
        }
    });
    let template_observer = observer.clone();
    templates.inspect_batch(move |_, updates| {
        let mut by_host = std::collections::BTreeMap::<u64, isize>::new();
        for ((host, _), _, diff) in updates {
            *by_host.entry(*host).or_default() += diff;
        }
        for (host, diff) in by_host.into_iter().filter(|&(_, diff)| diff != 0) {
            template_observer.template_sentences(host, diff as i64)
        }
    });
    // Identical pages: one representative each goes on; members take its assignment below.
    let families = pages.clone().exact_families();
    let representatives =
        families.clone().filter(|(id, representative)| id == representative).map(|(id, _)| id);
    let family_observer = observer.clone();
    families.clone().filter(|(id, representative)| id != representative).inspect_batch(
        move |_, updates| {
            family_observer.exact_duplicates(updates.iter().map(|u| u.2 as i64).sum())
        },
    );
    // Term weights from every page (a family's members count in document frequencies).
    let weighted = |filtered: VecCollection<'scope, u64, (PageId, Filtered), isize>, contents| {
        if method.verify.method == VerifyMethod::Cosine {
            with_idf_weights(filtered, contents)
        } else {
            contents
        }
    };
    // Connected clusters are verified along fingerprint groups, work per page bounded; the
    // paper's leader rule (and SimHash's edges) cluster whole candidate sets.
    match method.plan() {
        Plan::Bounded(grouping) => {
            // Only the representatives' contents go into the groups, each with its
            // fingerprints (computed from it).
            let contents =
                weighted(filtered.clone(), filtered.map(|(id, page)| (id, page.content)));
            let clusters =
                bounded_clusters(representatives, families, contents, &grouping, observer, method);
            (clusters, shares)
        }
        Plan::Sets(candidates) => {
            // Downstream of here a page is read for its id and shingles only. The
            // representatives are arranged once for both semijoins.
            let representatives = representatives.arrange_by_self_named("Arrange: representatives");
            let pages = pages
                .map(|(id, mut page)| {
                    page.sentences = Default::default();
                    page.words = Default::default();
                    (id, page)
                })
                .join_core(representatives.clone(), |&id, page, ()| Some((id, page.clone())));
            let unique = filtered
                .clone()
                .join_core(representatives, |&id, page, ()| Some((id, page.clone())));
            let contents = weighted(filtered, unique.clone().map(|(id, page)| (id, page.content)));
            let sets = sets_of(pages, unique, &candidates, method, observer.clone());
            let assignments = sets.verify_clusters(
                contents,
                method.verify.clone(),
                method.candidates.max_set_pages,
                verification(&observer),
            );
            (expand_families(families, assignments), shares)
        }
    }
}

/// The cosine verifier's weights: document frequencies of the pages' terms and the number of
/// pages, maintained under insertions and retractions, give each term its IDF weight
/// (`cosine::idf_weight`, quantized), joined back into each page's content.
fn with_idf_weights<'scope>(
    filtered: VecCollection<'scope, u64, (PageId, Filtered), isize>,
    contents: VecCollection<'scope, u64, (PageId, Content), isize>,
) -> VecCollection<'scope, u64, (PageId, Content), isize> {
    let documents = filtered.clone().map(|_| ()).count();
    // Each collection arranged once: document frequencies are reduced from the terms'
    // arrangement and the weights joined back to it; the pages' weights and contents are each
    // read by two joins.
    let terms = filtered
        .flat_map(|(id, f)| f.content.shingles.into_iter().map(move |t| (t, id)))
        .arrange_by_key_named("Arrange: terms");
    let weights = terms
        .clone()
        .reduce_abelian::<_, ValBuilder<_, _, _, _>, ValSpine<u64, isize, u64, isize>, _, _>(
            "Document frequencies",
            |_term, pages, output| output.push((pages.iter().map(|(_, n)| n).sum::<isize>(), 1)),
            push_keyed,
        )
        .as_collection(|&t, &df| ((), (t, df)))
        .join_map(documents, |_, &(t, df), &n| {
            (t, crate::verify::cosine::idf_weight(n as u64, df as u64))
        })
        .arrange_by_key_named("Arrange: term weights");
    let by_page = terms
        .join_core(weights, |&t, &id, &w| Some((id, (t, w))))
        .arrange_by_key_named("Arrange: page terms")
        .reduce_abelian::<_, ValBuilder<_, _, _, _>, ValSpine<PageId, Vec<(u64, u32)>, u64, isize>, _, _>(
            "Page term weights",
            |_id, tw, output| {
                output.push((tw.iter().map(|(&(t, w), _)| (t, w)).collect(), 1isize));
            },
            push_keyed,
        );
    let contents = contents.arrange_by_key_named("Arrange: contents");
    let weighted = contents.clone().join_core(by_page.clone(), |&id, content, tw| {
        let mut content = content.clone();
        content.term_weights = tw.iter().map(|&(_, w)| w).collect();
        Some((id, content))
    });
    let with_terms =
        contents.clone().join_core(by_page, |&id, content, _| Some((id, content.clone())));
    // Pages without terms keep empty weights (their cosine with anything is 0).
    let all = contents.as_collection(|&id, content| (id, content.clone()));
    weighted.concat(all).concat(with_terms.negate())
}

/// A reduce's output updates for `key`, as the builder of its arrangement takes them.
fn push_keyed<K: Clone, V>(
    input: &mut Vec<((K, V), u64, isize)>,
    key: &K,
    updates: &mut Vec<(V, u64, isize)>,
) {
    input.clear();
    input.extend(updates.drain(..).map(|(v, t, r)| ((key.clone(), v), t, r)));
}

/// The verification statistics of each time, to `observer`.
fn verification(observer: &Arc<dyn Observer>) -> impl FnMut(&[VerifyStats]) + 'static {
    let observer = observer.clone();
    move |stats| observer.verification(stats)
}

/// Bounded verification (`edges`) of the pages `page_ids` (the representatives; `contents` may
/// hold other pages, left out here): each page compared with its neighbours in
/// length order in the fingerprint groups it is in; clusters are the connected components of the verified
/// pairs (an incremental union-find), named by their anchor. A page's leader is the
/// shortest page it verified against (itself when none). With `clustering = "star"`, each
/// component is cut by the leader rule (`verify_clusters`). Every other member of a family
/// (`families`: `(page, representative)`) takes its representative's cluster.
fn bounded_clusters<'scope>(
    page_ids: VecCollection<'scope, u64, PageId, isize>,
    families: VecCollection<'scope, u64, (PageId, PageId), isize>,
    contents: VecCollection<'scope, u64, (PageId, Content), isize>,
    grouping: &Grouping,
    observer: Arc<dyn Observer>,
    method: &MethodConfig,
) -> Assignments<'scope> {
    let verify = method.verify.method;
    // Members are shared: the groups hold a pointer to each, not a copy (8 bytes an entry, not 48).
    // The representatives' only: a hash-map entry a page (`join_by_page`), where a `semijoin`
    // arranged both sides.
    let runtime = crate::run::Runtime::of(&contents.scope());
    let kept = runtime.clone();
    let members = contents.clone().map(move |(id, content)| {
        (id, Member::kept_in(Arc::new(Member::new(verify, id, content)), &kept))
    });
    let members = join_by_page(
        members,
        page_ids.clone().map(|id| (id, ())),
        "Representatives' members",
        |id, member, ()| (id, member.clone()),
    );
    // The members' bytes, from their changes: one member a page, however many groups hold it.
    let mut tally = footprint::Tally::new(footprint::Structure::Members, &runtime.footprint);
    let members = members.inspect_batch(move |_, updates| {
        for ((_, member), _, diff) in updates {
            tally.add(member.bytes(), *diff);
        }
        tally.report();
    });
    let Edges { edges, oversized_fingerprints } = members.verified_edges(
        content_fingerprints(grouping),
        method.verify.clone(),
        method.sentence_groups_over(),
        method.candidates.neighbors,
        method.candidates.max_fingerprint_pages,
        verification(&observer),
    );
    let oversized = observer.clone();
    oversized_fingerprints.inspect_batch(move |_, updates| {
        oversized.oversized_fingerprints(updates.iter().map(|u| u.2 as i64).sum())
    });
    let components = components(edges.clone().map(|e| (e.shorter, e.longer)), page_ids);
    if method.verify.clustering == Clustering::Star {
        // Each component cut by the leader rule: every member within τ of its leader.
        let leader = VerifyConfig { clustering: Clustering::Leader, ..method.verify.clone() };
        let assignments = components.verify_clusters(
            contents,
            leader,
            method.candidates.max_set_pages,
            verification(&observer),
        );
        return expand_families(families, assignments);
    }
    // A page's cluster, its leader (its smallest partner as the longer page of an edge) and
    // its family's other members, met in one operator.
    let partners = edges
        .map(|e| AssignUpdate::Partner(e.longer, (e.shorter_length, e.shorter, e.similarity_ppm)));
    let labels = components.map(|(id, cluster)| AssignUpdate::Label(id, cluster));
    let members = families
        .filter(|(id, representative)| id != representative)
        .map(|(id, representative)| AssignUpdate::Member(representative, id));
    assignments(labels.concat(partners).concat(members))
}

/// A page's fingerprints from its content (`content_fingerprints`).
type ContentFingerprints = Box<dyn Fn(&Content) -> Vec<u64>>;

/// A page's fingerprints (sorted, distinct) from its template-filtered content, by
/// `grouping`: sentence and word fingerprints, or MinHash bands of its shingles (the page's,
/// distinct). For the groups, which compute them again when the page leaves.
fn content_fingerprints(grouping: &Grouping) -> ContentFingerprints {
    match grouping.clone() {
        Grouping::Sentence(config, prefix_ppm) => Box::new(move |content| {
            crate::candidates::fingerprint::page_fingerprints(content, &config, prefix_ppm)
        }),
        Grouping::Minhash(config) => Box::new(move |content| {
            crate::candidates::minhash::band_keys(&content.shingles, &config)
        }),
    }
}

/// `(fingerprint, page)` for every page by `grouping`'s fingerprints.
pub fn fingerprint_groups<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    filtered: VecCollection<'scope, u64, (PageId, Filtered), isize>,
    grouping: &Grouping,
) -> VecCollection<'scope, u64, (u64, PageId), isize> {
    match grouping.clone() {
        Grouping::Sentence(config, prefix_ppm) => filtered
            .fingerprints(config, prefix_ppm)
            .flat_map(|(id, fps)| fps.into_iter().map(move |fp| (fp, id))),
        Grouping::Minhash(config) => {
            pages.map(|(id, page)| (id, page.shingles)).minhash_bands(config)
        }
    }
}

/// Candidate sets by the configured fingerprints (`MethodConfig::candidates`), whatever the
/// clustering: `(page, set label)` for every page.
pub fn candidate_sets<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    filtered: VecCollection<'scope, u64, (PageId, Filtered), isize>,
    method: &MethodConfig,
    observer: Arc<dyn Observer>,
) -> VecCollection<'scope, u64, (PageId, PageId), isize> {
    sets_of(pages, filtered, &method.candidates(), method, observer)
}

/// Candidate sets from `candidates`: the connected components of groups' stars, or of
/// SimHash's edges.
fn sets_of<'scope>(
    pages: VecCollection<'scope, u64, (PageId, Page), isize>,
    filtered: VecCollection<'scope, u64, (PageId, Filtered), isize>,
    candidates: &Candidates,
    method: &MethodConfig,
    observer: Arc<dyn Observer>,
) -> VecCollection<'scope, u64, (PageId, PageId), isize> {
    let page_ids = pages.clone().map(|(id, _)| id);
    let grouping = match candidates {
        Candidates::Groups(grouping) => grouping,
        Candidates::Simhash(config) => {
            // Edges straight from the block tables: only pairs within the Hamming distance.
            let edges = pages
                .map(|(id, page)| (id, simhash(&page.shingles)))
                .simhash_edges(config.max_distance, method.candidates.max_fingerprint_pages);
            return components(edges, page_ids);
        }
    };
    let fingerprints = fingerprint_groups(pages, filtered, grouping);
    let candidates = fingerprints.candidate_sets(page_ids, method.candidates.clone());
    candidates.oversized_fingerprints.inspect_batch(move |_, updates| {
        observer.oversized_fingerprints(updates.iter().map(|u| u.2 as i64).sum())
    });
    candidates.sets
}
