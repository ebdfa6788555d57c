use super::*;

fn id(n: u64) -> PageId {
    PageId { date: n, hash: 0 }
}
fn unit(keys: &[u64]) -> Content {
    Content {
        sentences: keys.iter().map(|&k| (k, 1)).collect(),
        shingles: Vec::new(),
        term_weights: Vec::new(),
        words: Default::default(),
        word_counts: Vec::new(),
        template_keys: Vec::new(),
        dominated: false,
    }
}

fn run(members: &[(PageId, &Content)], tau: f64, max: usize) -> Vec<(PageId, Assignment)> {
    let tau_ppm = lcs::ppm(tau);
    cluster_set(
        members,
        max,
        tau_ppm,
        VerifyMethod::Lcs,
        Clustering::Leader,
        &mut VerifyStats::default(),
        |a, b| lcs::compare(a, b, tau_ppm, 1_000),
    )
}

#[test]
fn chain_semantics_follow_the_leader() {
    // A≈B (0.8), B≈C (0.8), A≉C (0.6); all length 5, so order is by id.
    let a = unit(&[1, 2, 3, 4, 5]);
    let b = unit(&[1, 2, 3, 4, 6]);
    let c = unit(&[1, 2, 3, 7, 6]);
    let out = run(&[(id(1), &a), (id(2), &b), (id(3), &c)], 0.8, 100);
    assert_eq!(out[0].1.cluster, id(1));
    assert_eq!(out[1].1, Assignment { cluster: id(1), leader: id(1), similarity_ppm: 800_000 });
    assert_eq!(out[2].1.cluster, id(3), "C is not within τ of A, the leader");
}

#[test]
fn chain_semantics_when_connected() {
    let a = unit(&[1, 2, 3, 4, 5]);
    let b = unit(&[1, 2, 3, 4, 6]);
    let c = unit(&[1, 2, 3, 7, 6]);
    let tau_ppm = lcs::ppm(0.8);
    let out = cluster_set(
        &[(id(1), &a), (id(2), &b), (id(3), &c)],
        100,
        tau_ppm,
        VerifyMethod::Lcs,
        Clustering::Connected,
        &mut VerifyStats::default(),
        |x, y| lcs::compare(x, y, tau_ppm, 1_000),
    );
    assert!(out.iter().all(|(_, a)| a.cluster == id(1)), "A≈B, B≈C: one cluster {{A, B, C}}");
    assert_eq!(out[2].1.leader, id(2), "C names the page it was verified against");
    assert_eq!(out[2].1.similarity_ppm, 800_000);
}

#[test]
fn cluster_id_is_the_anchor_member_not_the_leader_nor_the_earliest() {
    // Three pages, one cluster: the shortest leads, the earliest is crawled first, and the
    // id is the anchor, the member with the smallest id hash.
    let earliest = PageId { date: 1, hash: 9 };
    let anchor = PageId { date: 2, hash: 3 };
    let shortest = PageId { date: 3, hash: 5 };
    let long = unit(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    let short = unit(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let out = run(&[(earliest, &long), (anchor, &long), (shortest, &short)], 0.8, 100);
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|(_, a)| a.cluster == anchor), "{out:?}");
    assert!(out.iter().all(|(_, a)| a.leader == shortest), "{out:?}");
}

/// A page of sentences given as word lists (sentence key: a hash of its words).
pub(crate) fn of_words(sentences: &[Vec<u16>]) -> Content {
    let key = |w: &[u16]| w.iter().fold(7u64, |h, &x| crate::runtime::hashing::mix64(h ^ x as u64));
    Content {
        sentences: sentences.iter().map(|w| (key(w), w.len() as u16)).collect(),
        words: sentences.concat().into(),
        word_counts: sentences.iter().map(|w| w.len() as u16).collect(),
        ..Default::default()
    }
}

/// Twelve words of their own for each seed.
pub(crate) fn sentence(seed: u16) -> Vec<u16> {
    (0..12).map(|i| seed * 16 + i).collect()
}

#[test]
fn a_name_in_every_sentence_is_found_by_words() {
    let page = |name: u16| {
        of_words(
            &(0..10)
                .map(|s| {
                    let mut w = sentence(s);
                    w[3] = name;
                    w
                })
                .collect::<Vec<_>>(),
        )
    };
    let (a, b) = (page(60_001), page(60_002));
    let config = VerifyConfig::default();
    assert_eq!(
        lcs::compare(&a, &b, lcs::ppm(config.threshold), 1000),
        Verdict::Dissimilar,
        "no sentence in common"
    );
    match compare(&config, &a, &b, lcs::ppm(config.threshold)) {
        Verdict::Similar(s) => {
            assert!((s - 11.0 / 12.0).abs() < 1e-9, "one word in twelve differs: {s}")
        }
        other => panic!("{other:?}"),
    }
    let off = VerifyConfig { word_threshold: 0.0, ..config };
    assert_eq!(compare(&off, &a, &b, lcs::ppm(off.threshold)), Verdict::Dissimilar);
}

#[test]
fn siblings_sharing_a_generated_block_are_not_near_duplicates() {
    // A member list of 30 sentences on every sibling, 3 sentences of each page's own.
    let block: Vec<Vec<u16>> = (0..30).map(sentence).collect();
    let sibling = |n: u16| {
        of_words(&[block.clone(), (0..3).map(|s| sentence(1000 + 10 * n + s)).collect()].concat())
    };
    let (a, b, c) = (sibling(1), sibling(2), sibling(3));
    let config = VerifyConfig::default();
    let members = [(id(1), &a), (id(2), &b), (id(3), &c)];
    let common = set_common_keys(&members, 3);
    assert_eq!(common.len(), 30);
    assert!(
        matches!(compare(&config, &a, &b, lcs::ppm(config.threshold)), Verdict::Similar(_)),
        "90% shared"
    );
    assert!(own_texts_differ(&config, &a, &b, &common));
    assert_eq!(
        unless_siblings(&config, &a, &b, &common, Verdict::Similar(0.9)),
        Verdict::Dissimilar
    );
    // The block on fewer pages of the set than sibling_min_pages: no rule.
    assert!(set_common_keys(&members, 4).is_empty());
    assert!(!own_texts_differ(&config, &a, &b, &[]));
}

#[test]
fn siblings_sharing_host_template_are_not_near_duplicates() {
    // Boilerplate of the host kept inside each page's own text (30 sentences), 3 sentences
    // of each page's own: no candidate set repeats it, the template names it.
    let block: Vec<Vec<u16>> = (0..30).map(sentence).collect();
    let sibling = |n: u16| {
        let mut c = of_words(
            &[block.clone(), (0..3).map(|s| sentence(1000 + 10 * n + s)).collect()].concat(),
        );
        c.template_keys = distinct_sentence_keys(&of_words(&block));
        c
    };
    let (a, b) = (sibling(1), sibling(2));
    let config = VerifyConfig::default();
    assert!(
        matches!(compare(&config, &a, &b, lcs::ppm(config.threshold)), Verdict::Similar(_)),
        "90% shared"
    );
    assert!(own_texts_differ(&config, &a, &b, &[]));
    assert_eq!(unless_siblings(&config, &a, &b, &[], Verdict::Similar(0.9)), Verdict::Dissimilar);
    // The same pages without the template named: the rule has nothing to go by.
    let (plain_a, plain_b) =
        (Content { template_keys: Vec::new(), ..a }, Content { template_keys: Vec::new(), ..b });
    assert!(!own_texts_differ(&config, &plain_a, &plain_b, &[]));
}

#[test]
fn a_family_of_edited_copies_stays_together() {
    // Copies of one text, each with a word changed in four sentences (edits of one text).
    let base: Vec<Vec<u16>> = (0..33).map(sentence).collect();
    let copy = |n: u16| {
        let mut s = base.clone();
        for k in 0..4 {
            s[(n as usize * 7 + k * 5) % 33][5] = 61_000 + n;
        }
        of_words(&s)
    };
    let pages: Vec<Content> = (0..6u16).map(copy).collect();
    let members: Vec<(PageId, &Content)> =
        pages.iter().enumerate().map(|(i, c)| (id(i as u64), c)).collect();
    let common = set_common_keys(&members, 3);
    let config = VerifyConfig { sibling_own_units: 20, ..Default::default() };
    for a in &pages {
        for b in &pages {
            assert!(
                !own_texts_differ(&config, a, b, &common),
                "edits of one text are not own texts"
            );
        }
    }
}

#[test]
fn the_verdict_cache_keeps_pairs_in_use_across_a_rotation() {
    let mut cache: VerdictCache<u32> = VerdictCache::new(2);
    let mut computed = 0;
    let mut get = |cache: &mut VerdictCache<u32>, k: u64| {
        cache.get_or_insert_with((k, k), || {
            computed += 1;
            k as u32
        })
    };
    assert_eq!((get(&mut cache, 1), get(&mut cache, 2), get(&mut cache, 1)), (1, 2, 1));
    assert!(cache.rotate_if_full(), "two entries: full");
    assert!(!cache.rotate_if_full(), "a new generation is empty");
    assert_eq!(get(&mut cache, 1), 1, "found in the old generation, moved forward");
    get(&mut cache, 3);
    assert!(cache.rotate_if_full());
    assert_eq!(cache.len(), 2, "2 was not used for a generation: dropped");
    assert_eq!((get(&mut cache, 1), get(&mut cache, 3)), (1, 3));
    assert_eq!(computed, 3, "1, 2 and 3 once each");
}

#[test]
fn oversized_sets_are_cut_and_counted() {
    let a = unit(&[1, 2, 3]);
    let members: Vec<(PageId, &Content)> = (0..5).map(|i| (id(i), &a)).collect();
    let mut stats = VerifyStats::default();
    let out = cluster_set(
        &members,
        2,
        lcs::ppm(0.8),
        VerifyMethod::Lcs,
        Clustering::Leader,
        &mut stats,
        |x, y| lcs::compare(x, y, 800_000, 100),
    );
    assert_eq!(stats.set_cuts, 1);
    let clusters: std::collections::BTreeSet<PageId> = out.iter().map(|(_, a)| a.cluster).collect();
    assert_eq!(clusters.len(), 3, "chunks of 2, 2, 1");
}

/// Whether two pages' own texts are different texts, from scratch: every sentence searched
/// for in the other page's keys.
fn own_texts_differ_from_scratch(config: &VerifyConfig, a: &Content, b: &Content) -> bool {
    let own = |c: &Content, other: &Content| -> (u64, Vec<u16>) {
        let keys = distinct_sentence_keys(other);
        let (mut weight, mut words, mut offset) = (0u64, Vec::new(), 0usize);
        let all = c.words.load();
        for ((k, w), &n) in c.sentences.compared().zip(&c.word_counts) {
            let end = offset + n as usize;
            if !keys.contains(&k) {
                weight += w as u64;
                words.extend_from_slice(&all[offset..end]);
            }
            offset = end;
        }
        (weight, words)
    };
    let ((wa, own_a), (wb, own_b)) = (own(a, b), own(b, a));
    let units = (config.sibling_own_units as u64).max(1);
    wa >= units
        && wb >= units
        && !matches!(
            lcs::compare_words(&own_a, &own_b, OWN_TEXT_SAME_PPM, config.max_diff_distance),
            Verdict::Similar(_)
        )
}

proptest::proptest! {
    /// The sibling check decides as from scratch on pages with a common head and tail. Their
    /// middles are drawn from few sentences, so that a middle also holds sentences of the
    /// ends, of the other middle or twice its own.
    #[test]
    fn own_texts_across_common_ends_are_decided_as_from_scratch(
        head in proptest::collection::vec(0u16..12, 0..6),
        middles in proptest::collection::vec(proptest::collection::vec(0u16..24, 0..8), 2),
        tail in proptest::collection::vec(0u16..12, 0..6),
        own_units in 1u32..30,
    ) {
        let page = |middle: &[u16]| -> Content {
            let seeds: Vec<u16> = head.iter().chain(middle).chain(&tail).copied().collect();
            of_words(&seeds.iter().map(|&seed| sentence(seed)).collect::<Vec<_>>())
        };
        let (a, b) = (page(&middles[0]), page(&middles[1]));
        let config = VerifyConfig { sibling_min_pages: 2, sibling_own_units: own_units, ..Default::default() };
        let expected = own_texts_differ_from_scratch(&config, &a, &b);
        proptest::prop_assert_eq!(own_texts_are_different_texts(&config, &a, &b), expected);
        proptest::prop_assert_eq!(own_texts_are_different_texts(&config, &b, &a), expected);
    }

    /// The sibling check given the words' LCS of a similar pair (`compare_keyed_words`)
    /// decides as the check that compares the own texts, and that LCS is the words' exact
    /// LCS. Near-copies of one text: sentences kept, edited (one word, or two), replaced by
    /// one of the page's own, dropped, repeated or with an own sentence before them, so that some pairs
    /// are similar by their sentences, some by their words only, with own texts of every size.
    #[test]
    fn own_texts_with_the_words_lcs_are_decided_as_without(
        base in proptest::collection::vec(0u16..200, 2..40),
        choices in proptest::collection::vec(proptest::collection::vec(0u8..12, 40), 2),
        at in proptest::collection::vec(0usize..12, 40),
        own_units in 1u32..40,
        trim in proptest::bool::ANY,
    ) {
        let content = |page: usize| -> Content {
            let mut sentences = Vec::new();
            for (i, &seed) in base.iter().enumerate() {
                let mut words = sentence(seed);
                match choices[page][i] {
                    0..=4 => words[at[i]] = 3000 + page as u16,
                    5 => {
                        words[at[i]] = 3000 + page as u16;
                        words[(at[i] + 5) % 12] = 3100 + page as u16;
                    }
                    6 | 7 => {}
                    8 => words = sentence(1000 + 200 * page as u16 + i as u16),
                    9 => continue,
                    10 => sentences.push(sentence(2000 + 200 * page as u16 + i as u16)),
                    _ => sentences.push(words.clone()),
                }
                sentences.push(words);
            }
            of_words(&sentences)
        };
        let (a, b) = (content(0), content(1));
        let config = VerifyConfig {
            sibling_min_pages: 2,
            sibling_own_units: own_units,
            central_trim_share: if trim { 0.3 } else { 0.0 },
            ..Default::default()
        };
        let (verdict, words_lcs) = compare_keyed_words(&config, &a, &b, None, lcs::ppm(config.threshold));
        proptest::prop_assert_eq!(verdict, compare(&config, &a, &b, lcs::ppm(config.threshold)));
        if let (Some(n), false) = (words_lcs, trim) {
            proptest::prop_assert_eq!(n, lcs::bit_parallel_lcs(&a.words.load(), &b.words.load()));
        }
        if matches!(verdict, Verdict::Similar(_)) {
            let (ka, kb) = (distinct_sentence_keys(&a), distinct_sentence_keys(&b));
            proptest::prop_assert_eq!(
                own_texts_are_different_texts_keyed(&config, &a, &b, &ka, &kb, words_lcs),
                own_texts_are_different_texts(&config, &a, &b)
            );
        }
    }
}

#[test]
fn a_page_that_contains_another_and_as_much_again_is_not_its_near_duplicate() {
    // A listing of two posts (1..=10 and 11..=20) and the first post alone: they resemble at
    // 2/3, over τ, but what they share is half the listing.
    let post = unit(&(1..=10).collect::<Vec<_>>());
    let other = unit(&(11..=20).collect::<Vec<_>>());
    let listing = unit(&(1..=20).collect::<Vec<_>>());
    let config = VerifyConfig::default();
    let tau = lcs::ppm(config.threshold);
    assert_eq!(lcs::compare(&post, &listing, tau, 1_000), Verdict::Similar(2.0 / 3.0));
    assert_eq!(compare(&config, &post, &listing, tau), Verdict::Dissimilar);
    assert_eq!(compare(&config, &other, &listing, tau), Verdict::Dissimilar);
    // Off, the listing is the post's near-duplicate, and the other post's: a chain.
    let off = VerifyConfig { min_longer_share: 0.0, ..VerifyConfig::default() };
    assert_eq!(compare(&off, &post, &listing, tau), Verdict::Similar(2.0 / 3.0));
    // A longer copy sharing 10 of its 16 sentences (0.625 of it) still is.
    let longer = unit(&(1..=16).collect::<Vec<_>>());
    assert_eq!(compare(&config, &post, &longer, tau), Verdict::Similar(20.0 / 26.0));
    // At the bound exactly: 11 of 20 (0.55) shared.
    let at = unit(&(1..=11).collect::<Vec<_>>());
    assert!(matches!(compare(&config, &at, &listing, tau), Verdict::Similar(_)));
}
