//! Incremental equals from-scratch: every stage of the method (and the sentence share),
//! maintained by the dataflow over
//! rounds of random insertions, re-crawls and retractions, equals `reference` (computed from
//! scratch on the pages alive in that round), at 1, 2 and 4 workers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use differential_dataflow::input::Input;
use dupflow::metrics::Registry;
use dupflow_operators::candidates::fingerprint::FingerprintConfig;
use dupflow_operators::candidates::minhash::MinhashConfig;
use dupflow_operators::candidates::simhash::SimhashConfig;
use dupflow_operators::candidates::CandidateConfig;
use dupflow_operators::cluster::share::{SentenceShare, Shared};
use dupflow_operators::reference;
use dupflow_operators::template::{Filtered, RemoveTemplates, TemplateConfig};
use dupflow_operators::verify::{Assignment, Clustering, VerifyConfig, VerifyMethod};
use dupflow_operators::{Fingerprinting, MethodConfig};
use dupflow_operators::{Page, PageId, Sentence};
use timely::dataflow::operators::{Inspect, Probe};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Small settings so that every cap and corner is reached: templates at 3 pages, fingerprints
/// on more than 6 pages dropped, candidate sets cut at 5 pages.
#[derive(Clone, Copy, Debug)]
enum Variant {
    SentenceLeader,
    SentenceCentral,
    SentenceConnected,
    SentenceStar,
    MinhashJaccard,
    SimhashNone,
    SentenceCosine,
}

fn config(variant: Variant) -> MethodConfig {
    let (fingerprint, method, clustering) = match variant {
        Variant::SentenceLeader | Variant::SentenceCentral => {
            (sentence(), VerifyMethod::Lcs, Clustering::Leader)
        }
        Variant::SentenceConnected => (sentence(), VerifyMethod::Lcs, Clustering::Connected),
        Variant::SentenceStar => (sentence(), VerifyMethod::Lcs, Clustering::Star),
        Variant::MinhashJaccard => (
            Fingerprinting::Minhash(MinhashConfig { shingle_words: 2, bands: 6, rows: 2 }),
            VerifyMethod::Jaccard,
            Clustering::Connected,
        ),
        Variant::SentenceCosine => (sentence(), VerifyMethod::Cosine, Clustering::Connected),
        Variant::SimhashNone => (
            Fingerprinting::Simhash(SimhashConfig { shingle_words: 2, max_distance: 6 }),
            VerifyMethod::None,
            Clustering::Connected,
        ),
    };
    MethodConfig {
        template: TemplateConfig {
            min_pages: 3,
            page_fraction: 0.3,
            min_content_share: 0.25,
            min_content_units: 8,
            interior_run_units: 6,
            interior_run_share: 1.0,
            furniture_classes: 1,
            refresh_epochs: 1,
        },
        fingerprint,
        candidates: CandidateConfig {
            max_fingerprint_pages: 6,
            max_set_pages: 5,
            neighbors: 2,
            common_sentence_pages: 2,
        },
        verify: VerifyConfig {
            method,
            threshold: 0.6,
            max_diff_distance: 10_000,
            clustering,
            central_trim_share: if matches!(variant, Variant::SentenceCentral) { 0.3 } else { 0.0 },
            word_threshold: 0.8,
            sibling_min_pages: 3,
            sibling_own_units: 6,
            min_longer_share: 0.55,
        },
    }
}

fn sentence() -> Fingerprinting {
    Fingerprinting::Sentence(FingerprintConfig {
        buckets: 4,
        hashes_per_bucket: 2,
        word_bands: 4,
        word_rows: 2,
        word_shingle_words: 2,
    })
}

/// Rounds of updates: `(round, page, diff)`.
fn workload(seed: u64) -> Vec<(u64, Page, isize)> {
    workload_with(seed, false)
}

/// With `copies`, half the insertions are exact copies (same host, same sentences) of one of
/// the three earliest pages still alive: families larger than every cap, whose members (their
/// anchors among them) are retracted now and then.
fn workload_with(seed: u64, copies: bool) -> Vec<(u64, Page, isize)> {
    let mut rng = Rng(seed);
    // Renamings draw from their own generator: the rest of the workload is as it was.
    let mut renames = Rng(seed ^ 0x005e_ed0f_5eed);
    let templates: Vec<Vec<u64>> = (0..3).map(|_| (0..6).map(|_| rng.next()).collect()).collect();
    let mut bases: Vec<Vec<u64>> = Vec::new();
    // A sentence's words: 4-8 words made from its key, unless a renaming gave it others.
    let mut words_of: BTreeMap<u64, Vec<u16>> = BTreeMap::new();
    let words = |words_of: &BTreeMap<u64, Vec<u16>>, key: u64| -> Vec<u16> {
        words_of.get(&key).cloned().unwrap_or_else(|| {
            (0..key % 5 + 4).map(|i| (key.rotate_left(8 * i as u32) >> 48) as u16).collect()
        })
    };
    let mut alive: Vec<Page> = Vec::new();
    let mut updates = Vec::new();
    let mut counter = 0u64;
    for round in 0..6u64 {
        let inserts = if round == 0 { 24 } else { 6 };
        for _ in 0..inserts {
            if copies && !alive.is_empty() && rng.below(2) == 0 {
                let mut copy = alive[rng.below(alive.len().min(3) as u64) as usize].clone();
                counter += 1;
                copy.id = PageId { date: rng.below(4), hash: counter };
                copy.url = format!("http://h{}/{counter}", copy.host).into();
                copy.record_id = counter.to_string().into();
                alive.push(copy.clone());
                updates.push((round, copy, 1));
                continue;
            }
            let host = rng.below(3);
            let content: Vec<u64> = if !bases.is_empty() && rng.below(3) > 0 {
                // A variant of an earlier page: replace, drop or add a few sentences; or the
                // same page written for another name (one word of every sentence replaced: new
                // sentences, mostly the same words).
                let mut c = bases[rng.below(bases.len() as u64) as usize].clone();
                if renames.below(8) == 0 {
                    let name = renames.next() as u16;
                    for key in c.iter_mut() {
                        let mut renamed = words(&words_of, *key);
                        renamed[0] = name;
                        *key = renames.next();
                        words_of.insert(*key, renamed);
                    }
                }
                for _ in 0..rng.below(4) {
                    let at = rng.below(c.len() as u64) as usize;
                    match rng.below(3) {
                        0 => c[at] = rng.next(),
                        1 if c.len() > 1 => {
                            c.remove(at);
                        }
                        _ => c.insert(at, rng.next()),
                    }
                }
                c
            } else {
                let len = [2, 4, 8, 14, 24][rng.below(5) as usize];
                let c: Vec<u64> = (0..len).map(|_| rng.next()).collect();
                bases.push(c.clone());
                c
            };
            let mut keys: Vec<u64> = templates[host as usize][..3].to_vec();
            keys.extend(content);
            keys.extend(&templates[host as usize][3..]);
            counter += 1;
            let page = Page {
                id: PageId { date: rng.below(4), hash: counter },
                url: format!("http://h{host}/{counter}").into(),
                host,
                record_id: counter.to_string().into(),
                sentences: keys
                    .iter()
                    .map(|&key| {
                        Sentence::new(
                            key,
                            (key % 5 + 1) as u16,
                            key % 5 != 0,
                            words(&words_of, key).len() as u16,
                        )
                    })
                    .collect(),
                shingles: Vec::new(),
                words: keys.iter().flat_map(|&key| words(&words_of, key)).collect(),
                // Every third page as if its markup marked its main content.
                main_marked: counter.is_multiple_of(3),
            };
            // Shingles as the sentence stage would make them: word pairs across sentences.
            let mut page = page;
            page.shingles = keys.windows(2).map(|w| w[0].rotate_left(7) ^ w[1]).collect();
            alive.push(page.clone());
            updates.push((round, page, 1));
        }
        if round > 0 {
            for _ in 0..4 {
                let at = rng.below(alive.len() as u64) as usize;
                let page = alive.remove(at);
                updates.push((round, page, -1));
            }
        }
    }
    updates
}

fn alive_at(updates: &[(u64, Page, isize)], round: u64) -> Vec<Page> {
    let mut count: BTreeMap<&Page, isize> = BTreeMap::new();
    for (t, page, diff) in updates {
        if *t <= round {
            *count.entry(page).or_default() += diff;
        }
    }
    count.into_iter().filter(|(_, c)| *c > 0).map(|(p, _)| p.clone()).collect()
}

/// The collection's contents at `round`, from its captured updates (must be a function).
fn state_at<K: Ord + Clone + std::fmt::Debug, V: Ord + Clone + std::fmt::Debug>(
    captured: &[((K, V), u64, isize)],
    round: u64,
) -> BTreeMap<K, V> {
    let mut count: BTreeMap<(K, V), isize> = BTreeMap::new();
    for ((k, v), t, d) in captured {
        if *t <= round {
            *count.entry((k.clone(), v.clone())).or_default() += d;
        }
    }
    let mut out = BTreeMap::new();
    for ((k, v), c) in count {
        assert!(c == 0 || c == 1, "multiplicity {c} for {k:?} -> {v:?}");
        if c == 1 {
            assert!(out.insert(k.clone(), v).is_none(), "two values for {k:?}");
        }
    }
    out
}

type Captured<T> = Arc<Mutex<Vec<(T, u64, isize)>>>;

type Outputs = (
    Vec<((PageId, Filtered), u64, isize)>,
    Vec<((PageId, PageId), u64, isize)>,
    Vec<((PageId, Assignment), u64, isize)>,
    Vec<((PageId, Shared), u64, isize)>,
);

fn run(updates: Vec<(u64, Page, isize)>, workers: usize, config: MethodConfig) -> Outputs {
    let shares: Captured<(PageId, Shared)> = Arc::default();
    let sh = shares.clone();
    let filtered: Captured<(PageId, Filtered)> = Arc::default();
    let sets: Captured<(PageId, PageId)> = Arc::default();
    let clusters: Captured<(PageId, Assignment)> = Arc::default();
    let (f, s, c) = (filtered.clone(), sets.clone(), clusters.clone());
    let rounds = updates.iter().map(|u| u.0).max().unwrap() + 1;
    timely::execute(timely::Config::process(workers), move |worker| {
        let (f, s, c, sh) = (f.clone(), s.clone(), c.clone(), sh.clone());
        let config = config.clone();
        let template = config.template;
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, pages) = scope.new_collection::<(PageId, Page), isize>();
            let (stage_filtered, _) = pages
                .clone()
                .remove_templates_refreshed(template, move |&time| template.refresh_time(time));
            stage_filtered
                .clone()
                .consolidate()
                .inner
                .inspect(move |x| f.lock().unwrap().push(x.clone()));
            stage_filtered
                .clone()
                .sentence_share()
                .consolidate()
                .inner
                .inspect(move |x| sh.lock().unwrap().push(x.clone()));
            let sets = dupflow_operators::graph::candidate_sets(
                pages.clone(),
                stage_filtered,
                &config,
                Arc::new(Registry::default()),
            );
            sets.consolidate().inner.inspect(move |x| s.lock().unwrap().push(*x));
            let (probe, _) =
                dupflow_operators::graph::clusters(pages, &config, Arc::new(Registry::default()))
                    .consolidate()
                    .inner
                    .inspect(move |x| c.lock().unwrap().push(*x))
                    .probe();
            (input, probe)
        });
        for round in 0..rounds {
            if worker.index() == 0 {
                for (t, page, diff) in &updates {
                    if *t == round {
                        input.update((page.id, page.clone()), *diff);
                    }
                }
            }
            input.advance_to(round + 1);
            input.flush();
            while probe.less_than(&(round + 1)) {
                worker.step();
            }
        }
    })
    .expect("timely runs");
    fn take<T>(captured: Captured<T>) -> Vec<(T, u64, isize)> {
        std::mem::take(&mut *captured.lock().unwrap())
    }
    (take(filtered), take(sets), take(clusters), take(shares))
}

fn check(seed: u64, workers: usize) {
    for variant in [
        Variant::SentenceLeader,
        Variant::SentenceCentral,
        Variant::SentenceConnected,
        Variant::SentenceStar,
        Variant::MinhashJaccard,
        Variant::SimhashNone,
        Variant::SentenceCosine,
    ] {
        check_with(seed, workers, variant);
    }
}

fn check_with(seed: u64, workers: usize, variant: Variant) {
    check_refreshed(seed, workers, config(variant));
}

/// The dataflow against the reference round by round; with template refreshes every
/// `config.template.refresh_epochs` rounds, each round's reference uses the template sentences
/// of the pages alive at the last refresh.
fn check_refreshed(seed: u64, workers: usize, config: MethodConfig) {
    let variant = (
        &config.fingerprint,
        config.verify.method,
        config.verify.clustering,
        config.template.refresh_epochs,
    );
    let updates = workload(seed);
    let (filtered, sets, clusters, shares) = run(updates.clone(), workers, config.clone());
    for round in 0..6 {
        let pages = alive_at(&updates, round);
        let as_of = alive_at(&updates, config.template.in_effect_at(round));
        let expected_filtered = reference::filter_templates_as_of(&pages, &as_of, &config.template);
        assert_eq!(
            state_at(&filtered, round),
            expected_filtered,
            "templates, seed {seed}, round {round}, {workers} workers"
        );
        assert_eq!(
            state_at(&shares, round),
            reference::shares(&expected_filtered),
            "shares, seed {seed}, round {round}, {workers} workers"
        );
        assert_eq!(
            state_at(&sets, round),
            reference::candidate_sets(&pages, &expected_filtered, &config),
            "candidate sets ({variant:?}), seed {seed}, round {round}, {workers} workers"
        );
        assert_eq!(
            state_at(&clusters, round),
            reference::clusters_as_of(&pages, &as_of, &config),
            "clusters ({variant:?}), seed {seed}, round {round}, {workers} workers"
        );
    }
    // The workload really exercised the method: some multi-page clusters, some retractions.
    let last = reference::clusters(&alive_at(&updates, 5), &config);
    let ids: BTreeSet<PageId> = last.values().map(|a| a.cluster).collect();
    assert!(ids.len() < last.len(), "seed {seed} ({variant:?}): no duplicates at all");
    assert!(updates.iter().any(|u| u.2 < 0));
}

/// Template refreshes every 2 and 3 rounds: between refreshes the pages are filtered with the
/// template sentences of the last one, and the dataflow equals the reference that uses them.
#[test]
fn incremental_equals_reference_with_template_refreshes() {
    let mut stale_rounds = 0;
    for seed in 1..=4u64 {
        let seed = seed * 0x9e37_79b9;
        for refresh in [2u32, 3] {
            for variant in
                [Variant::SentenceConnected, Variant::SentenceStar, Variant::SentenceLeader]
            {
                let mut config = config(variant);
                config.template.refresh_epochs = refresh;
                for workers in [1, 2, 4] {
                    check_refreshed(seed, workers, config.clone());
                }
                // Rounds that really ran on stale template sentences.
                let updates = workload(seed);
                stale_rounds += (0..6)
                    .filter(|&round| {
                        let pages = alive_at(&updates, round);
                        let as_of = alive_at(&updates, config.template.in_effect_at(round));
                        reference::filter_templates_as_of(&pages, &as_of, &config.template)
                            != reference::filter_templates(&pages, &config.template)
                    })
                    .count();
            }
        }
    }
    assert!(
        stale_rounds > 0,
        "no round was filtered with stale template sentences: the refreshes went untested"
    );
    eprintln!("{stale_rounds} rounds on stale template sentences");
}

#[test]
fn incremental_equals_reference_1_worker() {
    for seed in [1, 2, 3] {
        check(seed * 0x9e37_79b9, 1);
    }
}

#[test]
fn incremental_equals_reference_2_workers() {
    for seed in [1, 2, 3] {
        check(seed * 0x9e37_79b9, 2);
    }
}

#[test]
fn incremental_equals_reference_4_workers() {
    for seed in [1, 2, 3] {
        check(seed * 0x9e37_79b9, 4);
    }
}

/// The workloads of the tests above reach the rules for listings and stubs: a
/// template-dominated page leaving out template classes above its text's (`furniture_classes`),
/// and a pair similar over sentences that shares less than `min_longer_share` of the longer.
#[test]
fn the_workloads_reach_the_furniture_and_longer_share_rules() {
    let config = config(Variant::SentenceConnected);
    let mut all_classes = config.clone();
    all_classes.template.furniture_classes = u8::MAX;
    let mut any_share = config.clone();
    any_share.verify.min_longer_share = 0.0;
    let (mut furniture, mut longer) = (0, 0);
    for seed in [1, 2, 3] {
        let updates = workload(seed * 0x9e37_79b9);
        for round in 0..6 {
            let pages = alive_at(&updates, round);
            furniture += usize::from(
                reference::filter_templates(&pages, &config.template)
                    != reference::filter_templates(&pages, &all_classes.template),
            );
            longer += usize::from(
                reference::clusters(&pages, &config) != reference::clusters(&pages, &any_share),
            );
        }
    }
    assert!(furniture > 0, "no page left template out by its class: the rule went untested");
    assert!(longer > 0, "no pair was cut by min_longer_share: the rule went untested");
    eprintln!("rounds the rules changed: furniture {furniture}, longer share {longer}");
}

/// Exact families larger than every cap (fingerprints on more than 6 pages dropped, sets cut at
/// 5 pages) are one cluster each, and the dataflow equals the reference round by round while
/// their anchors (representatives) are retracted and new ones arrive, at 1, 2 and 4 workers.
#[test]
fn identical_families_beyond_every_cap_are_one_cluster() {
    let variants = [
        Variant::SentenceLeader,
        Variant::SentenceConnected,
        Variant::SentenceStar,
        Variant::MinhashJaccard,
        Variant::SimhashNone,
        Variant::SentenceCosine,
    ];
    for workers in [1, 2, 4] {
        for seed in [5, 6] {
            let seed = seed * 0x9e37_79b9;
            let updates = workload_with(seed, true);
            for variant in variants {
                let config = config(variant);
                let (_, _, clusters, _) = run(updates.clone(), workers, config.clone());
                let mut largest = 0;
                let mut anchor_before: BTreeMap<Vec<u64>, PageId> = BTreeMap::new();
                let mut representative_left = false;
                for round in 0..6 {
                    let pages = alive_at(&updates, round);
                    let got = state_at(&clusters, round);
                    assert_eq!(
                        got,
                        reference::clusters(&pages, &config),
                        "clusters ({variant:?}), seed {seed}, round {round}, {workers} workers"
                    );
                    let mut families: BTreeMap<(u64, Vec<u64>), BTreeSet<PageId>> = BTreeMap::new();
                    for page in &pages {
                        let keys = page.sentences.iter().map(|s| s.key).collect();
                        families
                            .entry((page.host, keys))
                            .or_default()
                            .insert(got[&page.id].cluster);
                    }
                    for (family, clusters) in &families {
                        assert_eq!(
                            clusters.len(),
                            1,
                            "a family split ({variant:?}), seed {seed}, round {round}: {family:?}"
                        );
                    }
                    let sizes =
                        pages.iter().fold(BTreeMap::<Vec<u64>, usize>::new(), |mut m, p| {
                            *m.entry(p.sentences.iter().map(|s| s.key).collect()).or_default() += 1;
                            m
                        });
                    largest = largest.max(sizes.values().copied().max().unwrap_or(0));
                    // A family whose anchor (its representative) left while the family stayed.
                    let anchors =
                        pages.iter().fold(BTreeMap::<Vec<u64>, PageId>::new(), |mut m, p| {
                            let e = m
                                .entry(p.sentences.iter().map(|s| s.key).collect())
                                .or_insert(p.id);
                            *e = dupflow_operators::ingest::page::anchor([*e, p.id]).unwrap();
                            m
                        });
                    representative_left |= anchor_before.iter().any(|(keys, id)| {
                        anchors.get(keys).is_some_and(|now| now != id)
                            && !pages.iter().any(|p| p.id == *id)
                    });
                    anchor_before = anchors;
                }
                assert!(largest > 6, "seed {seed}: no family beyond the caps (largest {largest})");
                assert!(representative_left, "seed {seed}: no family lost its anchor");
            }
        }
    }
}

/// A page of `texts` (each sentence's words; its key a hash of them, its weight their count)
/// on a host of its own (no sentence is template).
fn page_of_words(n: u64, texts: &[Vec<u16>]) -> Page {
    let key = |w: &[u16]| {
        w.iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
            | 1 << 40
    };
    Page {
        id: PageId { date: n, hash: n },
        url: format!("http://h{n}/{n}").into(),
        host: n,
        record_id: n.to_string().into(),
        sentences: texts
            .iter()
            .enumerate()
            // The quote's key is the smallest, so it is in every page's prefix.
            .map(|(i, w)| {
                Sentence::new(if i == 0 { 7 } else { key(w) }, w.len() as u16, true, w.len() as u16)
            })
            .collect(),
        shingles: Vec::new(),
        words: texts.iter().flatten().copied().collect(),
        main_marked: false,
    }
}

/// Pages alike only word by word (one word of every sentence replaced) that share one quoted
/// sentence, with no word fingerprints: they meet only in the quote's per-sentence group. Up to
/// `common_sentence_pages` (2) pages there they are compared and an edge; beyond, the group
/// compares by sentences only and they are not. The dataflow equals the reference round by round
/// as the group crosses the bound both ways, at 1, 2 and 4 workers.
#[test]
fn a_common_sentence_group_compares_by_sentences_only() {
    let mut config = config(Variant::SentenceConnected);
    config.fingerprint = Fingerprinting::Sentence(FingerprintConfig {
        buckets: 4,
        hashes_per_bucket: 2,
        word_bands: 0,
        word_rows: 2,
        word_shingle_words: 2,
    });
    config.candidates.max_fingerprint_pages = 50;
    let quote: Vec<u16> = (100..106).collect();
    // Family f: five sentences of six words, and the same with one word of each replaced.
    let text = |f: u16, renamed: bool| -> Vec<Vec<u16>> {
        let mut t = vec![quote.clone()];
        t.extend((0..5u16).map(|i| {
            (0..6u16)
                .map(|w| {
                    if renamed && w == i {
                        9_000 + 10 * f + i
                    } else {
                        1_000 * (f + 1) + 10 * i + w
                    }
                })
                .collect()
        }));
        t
    };
    let pair = |f: u16| {
        [
            page_of_words(2 * f as u64, &text(f, false)),
            page_of_words(2 * f as u64 + 1, &text(f, true)),
        ]
    };
    // Round 0: one pair (its group of 2 compares word by word); 1: three more pairs (8 pages:
    // by sentences only); 2: all but the first pair retracted (2 again).
    let mut updates: Vec<(u64, Page, isize)> = pair(0).into_iter().map(|p| (0, p, 1)).collect();
    updates.extend((1..4).flat_map(|f| pair(f).into_iter().map(|p| (1, p, 1))));
    updates.extend((1..4).flat_map(|f| pair(f).into_iter().map(|p| (2, p, -1))));
    let multi = |clusters: &BTreeMap<PageId, Assignment>| {
        let ids: BTreeSet<PageId> = clusters.values().map(|a| a.cluster).collect();
        clusters.len() - ids.len()
    };
    let expected: Vec<_> =
        (0..3).map(|round| reference::clusters(&alive_at(&updates, round), &config)).collect();
    assert_eq!(
        expected.iter().map(multi).collect::<Vec<_>>(),
        vec![1, 0, 1],
        "an edge at 2 pages, none at 8, one again at 2"
    );
    let mut unpruned = config.clone();
    unpruned.candidates.common_sentence_pages = 1_000;
    assert_eq!(
        multi(&reference::clusters(&alive_at(&updates, 1), &unpruned)),
        4,
        "word by word, the four pairs are alike"
    );
    for workers in [1, 2, 4] {
        let (_, _, clusters, _) = run(updates.clone(), workers, config.clone());
        for (round, expected) in expected.iter().enumerate() {
            assert_eq!(
                &state_at(&clusters, round as u64),
                expected,
                "round {round}, {workers} workers"
            );
        }
    }
}

/// `clustering = "star"` really cuts chains in the workload: in some round a connected cluster
/// holds a page that is not within τ of its leader, and star splits it (the dataflow equals the
/// reference for both in the tests above).
#[test]
fn star_cuts_chains_that_connected_keeps() {
    let mut cut = 0;
    for seed in 1..=6u64 {
        let updates = workload(seed * 0x9e37_79b9);
        for round in 0..6 {
            let pages = alive_at(&updates, round);
            let connected = reference::clusters(&pages, &config(Variant::SentenceConnected));
            let star = reference::clusters(&pages, &config(Variant::SentenceStar));
            let count = |c: &BTreeMap<PageId, dupflow_operators::verify::Assignment>| {
                c.values().map(|a| a.cluster).collect::<BTreeSet<_>>().len()
            };
            assert!(count(&star) >= count(&connected), "star never merges what connected splits");
            cut += usize::from(count(&star) > count(&connected));
        }
    }
    assert!(cut > 0, "no round had a chain for star to cut: the rule went untested");
}
