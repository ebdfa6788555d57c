use super::word_filters::{shared_bigrams, unshared_bigrams, word_intersection};
use super::*;
use proptest::prelude::*;

fn content(keys: &[u64]) -> Content {
    Content {
        sentences: keys.iter().map(|&k| (k, (k % 3 + 1) as u16)).collect(),
        shingles: Vec::new(),
        term_weights: Vec::new(),
        words: Default::default(),
        word_counts: Vec::new(),
        template_keys: Vec::new(),
        dominated: false,
    }
}

fn plain_lcs<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in 0..a.len() {
        for j in 0..b.len() {
            t[i + 1][j + 1] = if a[i] == b[j] { t[i][j] + 1 } else { t[i][j + 1].max(t[i + 1][j]) };
        }
    }
    t[a.len()][b.len()]
}

#[test]
fn myers_on_the_paper_example() {
    // Myers 1986: ABCABBA vs CBABAC has D = 5.
    assert_eq!(myers_distance(b"ABCABBA", b"CBABAC", 10), Some(5));
    assert_eq!(myers_distance(b"ABCABBA", b"CBABAC", 4), None);
    assert_eq!(myers_distance::<u8>(b"", b"", 0), Some(0));
}

#[test]
fn identical_pages_are_fully_similar() {
    let a = content(&[1, 2, 3]);
    assert_eq!(compare(&a, &a, ppm(0.8), 1000), Verdict::Similar(1.0));
}

#[test]
fn threshold_is_inclusive() {
    // 4 unit sentences vs 4 with 1 different: LCS 3, resemblance 6/8 = 0.75.
    let unit = |keys: &[u64]| Content {
        sentences: keys.iter().map(|&k| (k, 1)).collect(),
        shingles: Vec::new(),
        term_weights: Vec::new(),
        words: Default::default(),
        word_counts: Vec::new(),
        template_keys: Vec::new(),
        dominated: false,
    };
    let (a, b) = (unit(&[1, 2, 3, 4]), unit(&[1, 2, 3, 5]));
    assert_eq!(compare(&a, &b, ppm(0.75), 1000), Verdict::Similar(0.75));
    assert_eq!(compare(&a, &b, ppm(0.76), 1000), Verdict::Dissimilar);
}

#[test]
fn cost_cap_is_reported() {
    let a = Content {
        sentences: (0..50).map(|k| (k, 1)).collect(),
        shingles: Vec::new(),
        term_weights: Vec::new(),
        words: Default::default(),
        word_counts: Vec::new(),
        template_keys: Vec::new(),
        dominated: false,
    };
    let b = Content {
        sentences: (0..50).rev().map(|k| (k, 1)).collect(),
        shingles: Vec::new(),
        term_weights: Vec::new(),
        words: Default::default(),
        word_counts: Vec::new(),
        template_keys: Vec::new(),
        dominated: false,
    };
    assert_eq!(compare(&a, &b, ppm(0.1), 3), Verdict::CostCapped);
}

#[test]
fn a_key_of_two_weights_leaves_the_sparse_count_to_the_tokens() {
    assert_eq!(heaviest_common_subsequence(&[(1, 2), (2, 3)], &[(2, 3), (1, 2)], 100), Some(3));
    assert_eq!(heaviest_common_subsequence(&[(1, 2)], &[(1, 3)], 100), None);
    assert_eq!(
        heaviest_common_subsequence(&[(1, 2), (1, 2)], &[(1, 2), (1, 2)], 3),
        None,
        "4 matches"
    );
}

#[test]
fn central_part_strips_shared_head_and_tail_within_the_share() {
    let unit = |keys: &[u64]| Content {
        sentences: keys.iter().map(|&k| (k, 1)).collect(),
        shingles: Vec::new(),
        term_weights: Vec::new(),
        words: Default::default(),
        word_counts: Vec::new(),
        template_keys: Vec::new(),
        dominated: false,
    };
    let (a, b) = (unit(&[1, 2, 3, 4, 5, 6, 7, 8]), unit(&[1, 2, 30, 40, 50, 60, 7, 8]));
    let (ca, cb) = central(&a, &b, 0.25);
    assert_eq!(ca.sentences.len(), 4, "two shared sentences off each end (25% of 8)");
    assert_eq!(cb.sentences.iter().map(|s| s.key).collect::<Vec<_>>(), vec![30, 40, 50, 60]);
    let (ca, _) = central(&a, &b, 0.1);
    assert_eq!(ca.sentences.len(), 8, "nothing may be stripped at 10% (less than one sentence)");
    let (ca, cb) = central(&a, &a, 0.5);
    assert!(ca.sentences.is_empty() && cb.sentences.is_empty());
}

/// `a` with `edits` made in turn: at a position (modulo the length), kind 0 inserts the
/// token, 1 replaces the one there, 2 removes it.
fn edited<T: Clone>(a: &[T], edits: Vec<(usize, T, u8)>) -> Vec<T> {
    let mut b = a.to_vec();
    for (at, token, kind) in edits {
        let at = at % (b.len() + 1);
        match kind {
            0 => b.insert(at, token),
            1 if at < b.len() => b[at] = token,
            _ if at < b.len() => {
                b.remove(at);
            }
            _ => {}
        }
    }
    b
}

/// A verdict agrees with the exact resemblance: similar with the exact value at or above τ,
/// dissimilar below it, never capped (no cap in these tests).
fn agrees(verdict: Verdict, exact: f64, tau_ppm: u64) -> Result<(), TestCaseError> {
    match verdict {
        Verdict::Similar(s) => {
            prop_assert!((s - exact).abs() < 1e-9);
            prop_assert!(s * 1e6 >= tau_ppm as f64 - 1e-6);
        }
        Verdict::Dissimilar => prop_assert!(exact * 1e6 < tau_ppm as f64 + 1e-6),
        Verdict::CostCapped => prop_assert!(false, "no cap at 1e6"),
    }
    Ok(())
}

/// `compare` of the pages of keys `a` and `b` against the dynamic-programming oracle.
fn compare_agrees(a: &[u64], b: &[u64], tau: f64) -> Result<(), TestCaseError> {
    let (ca, cb) = (content(a), content(b));
    let tau_ppm = ppm(tau);
    agrees(compare(&ca, &cb, tau_ppm, 1_000_000), dp_resemblance(&ca, &cb), tau_ppm)
}

#[test]
fn sentences_may_reach_tau_when_they_share_enough() {
    let keys = |k: &[u64]| k.to_vec();
    let tau = ppm(0.6);
    let (a, b, c) =
        (content(&[1, 2, 3, 4, 5]), content(&[1, 2, 3, 4, 6]), content(&[1, 7, 8, 9, 10]));
    assert!(
        sentences_may_reach(&a, &keys(&[1, 2, 3, 4, 5]), &a, &keys(&[1, 2, 3, 4, 5]), tau),
        "a page and itself"
    );
    assert!(
        sentences_may_reach(&a, &keys(&[1, 2, 3, 4, 5]), &b, &keys(&[1, 2, 3, 4, 6]), tau),
        "one sentence apart"
    );
    assert!(
        !sentences_may_reach(&a, &keys(&[1, 2, 3, 4, 5]), &c, &keys(&[1, 7, 8, 9, 10]), tau),
        "one sentence shared"
    );
    assert!(
        !sentences_may_reach(&a, &keys(&[1, 2, 3, 4, 5]), &content(&[1]), &keys(&[1]), tau),
        "the length filter"
    );
    assert!(
        sentences_may_reach(&content(&[]), &[], &content(&[]), &[], tau),
        "two empty pages are alike"
    );
}

proptest! {
    #[test]
    fn myers_matches_dynamic_programming(a in proptest::collection::vec(0u8..4, 0..40),
                                         b in proptest::collection::vec(0u8..4, 0..40)) {
        let d = myers_distance(&a, &b, 1000).unwrap();
        prop_assert_eq!(d as usize, a.len() + b.len() - 2 * plain_lcs(&a, &b));
    }

    #[test]
    fn bounded_distance_matches_dynamic_programming(a in proptest::collection::vec(0u16..6, 0..400),
                                                    b in proptest::collection::vec(0u16..6, 0..400),
                                                    share in 0.0f64..1.0,
                                                    with_lower in proptest::bool::ANY) {
        // Long enough that Myers stops early and the bit-parallel count decides; with and
        // without the filters' lower bound on D (the bag's and the bigrams', each checked).
        let d = (a.len() + b.len() - 2 * plain_lcs(&a, &b)) as u64;
        let budget = (share * (a.len() + b.len()) as f64) as u64;
        let bag = (a.len() + b.len()) as u64 - 2 * word_intersection(&a, &b);
        let bigrams = unshared_bigrams(&a, &b).div_ceil(2);
        prop_assert!(bag <= d && bigrams <= d);
        let lower = if with_lower { bag.max(bigrams) } else { 0 };
        prop_assert_eq!(bounded_distance(&a, &b, budget, lower), (d <= budget).then_some(d));
    }

    #[test]
    fn fragment_filter_never_removes_a_common_fragment(a in proptest::collection::vec(0u64..20, 0..30),
                                                       b in proptest::collection::vec(0u64..20, 0..30)) {
        let (ca, cb) = (content(&a), content(&b));
        let (kept, dropped) = fragment_filter(&ca.sentences, &cb.sentences);
        for (k, _) in ca.sentences.compared() {
            if b.contains(&k) { prop_assert!(kept.iter().any(|&(x, _)| x == k)); }
        }
        prop_assert_eq!(kept.iter().map(|&(_, w)| w as u64).sum::<u64>() + dropped, ca.weight());
        // and it never changes the LCS
        let filtered = Content { sentences: kept.into_iter().collect(), ..Default::default() };
        let lcs = |x: &Content, y: &Content| dp_resemblance(x, y) * (x.weight() + y.weight()) as f64;
        prop_assert!((lcs(&ca, &cb) - lcs(&filtered, &cb)).abs() < 1e-9);
    }

    #[test]
    fn compare_agrees_with_the_oracle(a in proptest::collection::vec(0u64..12, 0..25),
                                      b in proptest::collection::vec(0u64..12, 0..25),
                                      tau in 0.3f64..1.0) {
        compare_agrees(&a, &b, tau)?;
    }

    #[test]
    fn sentences_that_may_not_reach_tau_are_dissimilar(a in proptest::collection::vec(0u64..12, 0..25),
                                                        b in proptest::collection::vec(0u64..30, 0..25),
                                                        tau in 0.3f64..1.0) {
        // The groups' pruning (`sentences_may_reach`) is a bound of `compare_keyed`: where it
        // fails, the sentences are dissimilar.
        let (ca, cb) = (content(&a), content(&b));
        let keys = |c: &Content| {
            let mut k: Vec<u64> = c.sentences.compared().map(|(k, _)| k).collect();
            k.sort_unstable();
            k.dedup();
            k
        };
        let tau = ppm(tau);
        if !sentences_may_reach(&ca, &keys(&ca), &cb, &keys(&cb), tau) {
            prop_assert_eq!(compare_keyed(&ca, &cb, None, tau, 1_000_000), Verdict::Dissimilar);
        }
    }

    #[test]
    fn sentences_may_reach_is_the_weight_each_page_lacks_against_the_budget(
        a in proptest::collection::vec(0u64..2_000, 0..60),
        b in proptest::collection::vec(0u64..2_000, 0..60),
        shared in proptest::collection::vec(0u64..2_000, 0..60),
        tau in 0.3f64..1.0,
    ) {
        // Exact, not only a bound: the weight of the sentences each page lacks of the
        // other's, against the budget, counted with searches alone. Keys from a range of
        // 2,000 make many collide in the 256 bits that stand in for the searches.
        let (a, b): (Vec<u64>, Vec<u64>) = (a.into_iter().chain(shared.iter().copied()).collect(), shared.iter().copied().chain(b).collect());
        let (ca, cb) = (content(&a), content(&b));
        let keys = |c: &Content| {
            let mut k: Vec<u64> = c.sentences.compared().map(|(k, _)| k).collect();
            k.sort_unstable();
            k.dedup();
            k
        };
        let (ka, kb) = (keys(&ca), keys(&cb));
        let lacking = |c: &Content, other: &[u64]| c.sentences.compared().filter(|(k, _)| !other.contains(k)).map(|(_, w)| w as u64).sum::<u64>();
        let tau = ppm(tau);
        let total = ca.weight() + cb.weight();
        let expected = total == 0
            || (lengths_may_reach(ca.weight(), cb.weight(), tau) && lacking(&ca, &kb) + lacking(&cb, &ka) <= max_distance(total, tau));
        prop_assert_eq!(sentences_may_reach(&ca, &ka, &cb, &kb, tau), expected);
        for &k in ka.iter().chain(&kb) {
            prop_assert!(KeyBits::of(&ka).may_hold(k) || !ka.contains(&k));
            prop_assert!(KeyBits::of(&kb).may_hold(k) || !kb.contains(&k));
        }
    }

    #[test]
    fn heaviest_common_subsequence_is_the_lcs_of_the_expansions(a in proptest::collection::vec(0u64..12, 0..60),
                                                                 b in proptest::collection::vec(0u64..12, 0..60)) {
        let (ca, cb) = (content(&a), content(&b));
        let lcs = heaviest_common_subsequence(&ca.sentences, &cb.sentences, u64::MAX);
        prop_assert_eq!(lcs, Some(dp_lcs(&expand(&ca.sentences), &expand(&cb.sentences)) as u64));
    }

    #[test]
    fn compare_agrees_with_the_oracle_on_long_pages(a in proptest::collection::vec(0u64..400, 20..120),
                                                    edits in proptest::collection::vec((0usize..120, 0u64..400), 0..60),
                                                    tau in 0.3f64..1.0) {
        // Long pages of mostly distinct sentences, and an edited copy: the sparse path.
        let mut b = a.clone();
        for (at, key) in edits {
            match key % 3 {
                0 if !b.is_empty() => { b.remove(at % b.len()); }
                1 => b.insert(at % (b.len() + 1), key),
                _ if !b.is_empty() => { let n = b.len(); b[at % n] = key; }
                _ => {}
            }
        }
        compare_agrees(&a, &b, tau)?;
    }

    #[test]
    fn bit_parallel_lcs_matches_dynamic_programming(a in proptest::collection::vec(0u16..5, 0..200),
                                                      b in proptest::collection::vec(0u16..5, 0..200)) {
        prop_assert_eq!(bit_parallel_lcs(&a, &b), dp_lcs(&a, &b) as u64);
    }

    #[test]
    fn the_banded_count_is_exact_where_the_lcs_reaches_its_bound(
        base in proptest::collection::vec(prop_oneof![0u16..8, any::<u16>()], 60..400),
        edits in proptest::collection::vec((any::<usize>(), 0u8..3, any::<u16>()), 0..80),
        bunched in proptest::bool::ANY,
        slack in 1u64..6,
    ) {
        // Near-copies of one to seven blocks, edited all over or at their head (which moves
        // the alignment to one side of the diagonal): a bound at the LCS puts the band's edge
        // on the alignment, one below widens it, one above leaves no alignment in it.
        let mut b = base.clone();
        for (at, op, w) in edits {
            let at = if bunched { at % 8 } else { at };
            match op {
                0 if !b.is_empty() => { b.remove(at % b.len()); }
                1 => b.insert(at % (b.len() + 1), w),
                _ if !b.is_empty() => { let n = b.len(); b[at % n] = w; }
                _ => {}
            }
        }
        let exact = dp_lcs(&base, &b) as u64;
        for needed in [exact.saturating_sub(slack), exact, exact + 1] {
            for (x, y) in [(&base, &b), (&b, &base)] {
                let (words, generic) = (bit_parallel_lcs_words(x, y, needed), bit_parallel_lcs_at_least(x, y, needed));
                if exact >= needed {
                    prop_assert_eq!((words, generic), (exact, exact), "needed {}", needed);
                } else {
                    prop_assert!(words < needed && generic < needed, "{} {} below {}", words, generic, needed);
                }
            }
        }
    }

    #[test]
    fn word_table_kernels_match_sorting_and_dynamic_programming(a in proptest::collection::vec(prop_oneof![0u16..6, any::<u16>()], 0..300),
                                                                b in proptest::collection::vec(prop_oneof![0u16..6, any::<u16>()], 0..300)) {
        // The table kernels against the plain ones: the LCS, the bag of words, the bag of
        // bigrams (sorted and merged, as before the tables). Words from a small alphabet
        // (many repeats) and from all 65,536 (the table's edges).
        let exact = dp_lcs(&a, &b) as u64;
        prop_assert_eq!(bit_parallel_lcs_words(&a, &b, 0), exact);
        // With a bound: exact when the LCS reaches it, below it when not.
        for needed in [exact / 2, exact, exact + 1, exact + 40, (a.len().min(b.len()) as u64 * 3).div_ceil(4)] {
            let words = bit_parallel_lcs_words(&a, &b, needed);
            let generic = bit_parallel_lcs_at_least(&a, &b, needed);
            if exact >= needed {
                prop_assert_eq!((words, generic), (exact, exact));
            } else {
                prop_assert!(words < needed && generic < needed, "{} {} below {}", words, generic, needed);
            }
        }
        let sorted = |v: &[u16]| { let mut v = v.to_vec(); v.sort_unstable(); v };
        let common = crate::runtime::sorted::intersection(&sorted(&a), &sorted(&b)) as u64;
        prop_assert_eq!(word_intersection(&a, &b), common);
        // With a bound: the intersection when it reaches it (either order), None when not.
        for needed in [0, common / 2, common, common + 1, common + 70, (a.len().max(b.len()) as u64 * 4).div_ceil(5)] {
            let expected = (common >= needed).then_some(common);
            prop_assert_eq!(word_intersection_reaching(&a, &b, needed), expected);
            prop_assert_eq!(word_intersection_reaching(&b, &a, needed), expected);
        }
        let bigrams = |w: &[u16]| { let mut v: Vec<u32> = w.windows(2).map(|p| (p[0] as u32) << 16 | p[1] as u32).collect(); v.sort_unstable(); v };
        prop_assert_eq!(shared_bigrams(&a, &b), crate::runtime::sorted::intersection(&bigrams(&a), &bigrams(&b)) as u64);
        prop_assert_eq!(shared_bigrams(&b, &a), shared_bigrams(&a, &b));
        let shared = shared_bigrams(&a, &b);
        for needed in [0, shared / 2, shared, shared + 1, shared + 70, a.len().max(b.len()).saturating_sub(1) as u64] {
            let expected = (shared >= needed).then_some(shared);
            prop_assert_eq!(shared_bigrams_reaching(&a, &b, needed), expected);
            prop_assert_eq!(shared_bigrams_reaching(&b, &a, needed), expected);
        }
    }

    #[test]
    fn compare_words_agrees_with_the_oracle_on_long_sequences(a in proptest::collection::vec(0u16..8, 100..400),
                                                              edits in proptest::collection::vec((0usize..400, 0u16..8), 0..150),
                                                              tau in 0.3f64..1.0) {
        // The second sequence is the first with edits: from near copies to unrelated, so
        // both Myers and the bit-parallel count decide some pairs.
        let mut b = a.clone();
        for (at, w) in edits {
            let at = at % (b.len() + 1);
            if w % 2 == 0 { b.insert(at, w) } else if at < b.len() { b[at] = w }
        }
        let exact = dp_word_resemblance(&a, &b);
        let tau_ppm = ppm(tau);
        agrees(compare_words(&a, &b, tau_ppm, 1_000_000), exact, tau_ppm)?;
    }

    #[test]
    fn compare_gives_the_oracles_resemblance_across_shared_ends(
        head in proptest::collection::vec(0u64..300, 0..80),
        tail in proptest::collection::vec(0u64..300, 0..80),
        a in proptest::collection::vec(0u64..30, 0..60),
        edits in proptest::collection::vec((0usize..60, 0u64..30, 0u8..3), 0..30),
        tau in 0.3f64..1.0,
        cap in proptest::sample::select(vec![2u64, 20, 1_000_000]),
    ) {
        // Near-copies and unrelated middles between a common head and tail (taken off
        // before the fragment filter and the count; the middles' keys repeat, so the
        // sparse count and the token path both run); `cap` below the budget takes the
        // capped paths. The verdict is the oracle's, over the whole pages.
        let b = edited(&a, edits);
        let whole = |middle: &[u64]| content(&[head.as_slice(), middle, tail.as_slice()].concat());
        let (ca, cb) = (whole(&a), whole(&b));
        let total = ca.weight() + cb.weight();
        let d = total - dp_lcs(&expand(&ca.sentences), &expand(&cb.sentences)) as u64 * 2;
        let tau_ppm = ppm(tau);
        let budget = max_distance(total, tau_ppm);
        for (x, y) in [(&ca, &cb), (&cb, &ca)] {
            match compare(x, y, tau_ppm, cap) {
                Verdict::Similar(r) => {
                    prop_assert!(d <= budget, "similar with D {d}, budget {budget}");
                    prop_assert_eq!(r, (total - d) as f64 / total.max(1) as f64);
                }
                Verdict::Dissimilar => prop_assert!(d > budget, "dissimilar with D {d}, budget {budget}"),
                // What Myers has left after the filter is at most D; capped, it was past
                // the cap, and the budget was too.
                Verdict::CostCapped => prop_assert!(d > cap && budget > cap, "capped with D {d}, budget {budget}, cap {cap}"),
            }
        }
    }

    #[test]
    fn compare_words_gives_the_oracles_distance_across_shared_ends(
        head in proptest::collection::vec(0u16..50, 0..120),
        tail in proptest::collection::vec(0u16..50, 0..120),
        a in proptest::collection::vec(0u16..50, 0..150),
        edits in proptest::collection::vec((0usize..150, 0u16..50, 0u8..3), 0..60),
        tau in 0.3f64..1.0,
        cap in proptest::sample::select(vec![4u64, 40, 1_000_000]),
    ) {
        // Near-copies and unrelated middles between a common head and tail (trimmed before
        // the filters and the count), from pairs Myers decides to pairs only the count
        // does; `cap` below the budget takes the capped path. The verdict and, for a
        // similar pair, D are the oracle's.
        let b = edited(&a, edits);
        let whole = |middle: &[u16]| [head.as_slice(), middle, tail.as_slice()].concat();
        let (a, b) = (whole(&a), whole(&b));
        let total = (a.len() + b.len()) as u64;
        let lcs = dp_lcs(&a, &b) as u64;
        let d = total - 2 * lcs;
        let tau_ppm = ppm(tau);
        let budget = max_distance(total, tau_ppm);
        for (x, y) in [(&a, &b), (&b, &a)] {
            let (verdict, found) = compare_words_distance(x, y, tau_ppm, cap);
            if total == 0 || d <= budget.min(cap) {
                prop_assert_eq!(found, Some(d));
                prop_assert_eq!(verdict, Verdict::Similar((total - d) as f64 / total.max(1) as f64));
            } else if budget <= cap {
                prop_assert_eq!((verdict, found), (Verdict::Dissimilar, None));
            } else {
                // A budget past the cap and D past the cap: capped, or rejected by an exact
                // filter before Myers ran (never similar; rejected only past the budget).
                prop_assert!(found.is_none());
                prop_assert!(verdict == Verdict::CostCapped || verdict == Verdict::Dissimilar && d > budget, "{verdict:?} with D {d}, budget {budget}");
            }
        }
    }

    #[test]
    fn compare_words_agrees_with_the_oracle(a in proptest::collection::vec(0u16..6, 0..40),
                                            b in proptest::collection::vec(0u16..6, 0..40),
                                            tau in 0.3f64..1.0) {
        let exact = dp_word_resemblance(&a, &b);
        let tau_ppm = ppm(tau);
        agrees(compare_words(&a, &b, tau_ppm, 1_000_000), exact, tau_ppm)?;
    }

    #[test]
    fn resemblance_is_symmetric_and_bounded(a in proptest::collection::vec(0u64..12, 0..25),
                                             b in proptest::collection::vec(0u64..12, 0..25)) {
        let (ca, cb) = (content(&a), content(&b));
        let (x, y) = (dp_resemblance(&ca, &cb), dp_resemblance(&cb, &ca));
        prop_assert!((x - y).abs() < 1e-12);
        prop_assert!((0.0..=1.0).contains(&x));
        prop_assert_eq!(compare(&ca, &cb, ppm(0.0), 1_000_000), compare(&cb, &ca, ppm(0.0), 1_000_000));
    }
}
