use super::scan::{identity, ppm_of, SideScan, OPEN};
use super::*;
use crate::ingest::page::Content;
use crate::verify::edges::group_edges;
use crate::verify::VerifyMethod;
use std::collections::BTreeMap;

fn id(n: u64) -> PageId {
    PageId { date: n, hash: n }
}

fn member(n: u64, keys: &[u64]) -> Arc<Member> {
    let content =
        Content { sentences: keys.iter().map(|&k| (k, 1)).collect(), ..Default::default() };
    Arc::new(Member::new(VerifyMethod::Lcs, id(n), content))
}

type Updates = Vec<(GroupOutput, u64, isize)>;

/// One time's pages: `(member, fingerprints, diff)`.
type PageStep = Vec<(Arc<Member>, Vec<u64>, isize)>;

/// The groups operator's output, consolidated, for `steps` (the `(member, fingerprints,
/// diff)` updates of each time), on `workers` workers at `pace`.
fn operator_output(steps: &[PageStep], workers: usize, pace: Pace) -> Updates {
    spilled_output(steps, workers, pace, None)
}

/// `operator_output`, each worker's fingerprints of one page spilling into `spill`.
fn spilled_output(
    steps: &[PageStep],
    workers: usize,
    pace: Pace,
    spill: Option<Arc<crate::runtime::spill::Spill>>,
) -> Updates {
    type Step = Vec<((Arc<Member>, Vec<u64>), isize)>;
    let steps: Vec<Step> = steps
        .iter()
        .map(|step| {
            step.iter().map(|(member, fps, diff)| ((member.clone(), fps.clone()), *diff)).collect()
        })
        .collect();
    crate::testing::run_steps(&steps, workers, move |pages| {
        let runtime = crate::run::Runtime { spill: spill.clone(), ..Default::default() };
        verify_groups(pages, settings(2, 12, 3), pace, |_| {}, &Arc::new(runtime))
    })
}

#[test]
fn a_time_applied_in_slices_and_passes_gives_what_one_pass_and_a_rebuild_give() {
    // Four families of near-copies over eleven fingerprints (a page in three of them; the
    // groups of fingerprints 9 and 10 cross max_pages and drop back), pages that arrive,
    // leave, and come back changed (into another family) in later times. The fingerprints
    // are spread over the range of u64, so that passes split them.
    let page = |n: u64, version: u64| {
        let family = (n + version) % 4;
        member(
            n + 1000 * version,
            &[10 * family + 1, 10 * family + 2, 10 * family + 3, 10 * family + 4, 500 + n],
        )
    };
    // Each page also has two fingerprints of its own (its own sentences: a group of one).
    let fps = |n: u64| {
        let mut fps = [n % 6, 6 + n % 3, 9 + n % 2, 100 + n, 200 + n]
            .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .to_vec();
        fps.sort_unstable();
        fps
    };
    let of = |pages: &[(u64, u64)], diff: isize| -> PageStep {
        pages.iter().map(|&(n, v)| (page(n, v), fps(n), diff)).collect()
    };
    let first: Vec<(u64, u64)> = (0..30).map(|n| (n, 0)).collect();
    let leaving: Vec<(u64, u64)> = (0..10).map(|n| (n, 0)).collect();
    let arriving: Vec<(u64, u64)> = (30..34).map(|n| (n, 0)).collect();
    let changed: Vec<(u64, u64)> = (12..18).map(|n| (n, 1)).collect();
    let steps = vec![
        of(&first, 1),
        [of(&leaving, -1), of(&arriving, 1)].concat(),
        [of(&changed.iter().map(|&(n, _)| (n, 0)).collect::<Vec<_>>(), -1), of(&changed, 1)]
            .concat(),
    ];
    let hour = std::time::Duration::from_secs(3600);
    let whole = operator_output(&steps, 1, Pace { slice: hour, pass_updates: usize::MAX });
    assert!(whole.iter().any(|(o, _, _)| matches!(o, GroupOutput::Verdict(..))), "{whole:?}");
    assert!(whole.iter().any(|(o, _, _)| matches!(o, GroupOutput::Blocks(..))));
    assert!(
        whole.iter().any(|(o, _, d)| matches!(o, GroupOutput::Oversized(..)) && *d < 0),
        "a group drops back"
    );
    // The same updates with a page's fingerprints one a record.
    let one_each: Vec<PageStep> = steps
        .iter()
        .map(|step| {
            step.iter()
                .flat_map(|(m, fps, d)| fps.iter().map(|&fp| (m.clone(), vec![fp], *d)))
                .collect()
        })
        .collect();
    for workers in [1, 2, 4] {
        for pace in [
            Pace { slice: std::time::Duration::ZERO, pass_updates: usize::MAX },
            Pace { slice: hour, pass_updates: usize::MAX },
            Pace { slice: hour, pass_updates: 1 },
            Pace { slice: std::time::Duration::ZERO, pass_updates: 7 },
        ] {
            assert_eq!(
                operator_output(&steps, workers, pace),
                whole,
                "{pace:?}, {workers} workers"
            );
        }
        assert_eq!(
            operator_output(&one_each, workers, PACE),
            whole,
            "a fingerprint a record, {workers} workers"
        );
        // The fingerprints of one page on disk past two (or five) a worker: runs written and
        // merged at every time, groups taken back from them as pages arrive and leave.
        for recent in [2, 5] {
            let spill = Arc::new(crate::runtime::spill::Spill::new(&std::env::temp_dir(), recent));
            assert_eq!(
                spilled_output(&steps, workers, PACE, Some(spill.clone())),
                whole,
                "spilling past {recent}, {workers} workers"
            );
            let stats = spill.stats();
            assert!(stats.runs > 2 && stats.block_reads > 0, "it spilled: {stats:?}");
            assert_eq!(stats.on_disk, 0, "the runs went with the operator");
        }
    }
    // From scratch: the final pages in one time give what the three times add up to.
    let mut last: Vec<(u64, u64)> =
        (10..34).map(|n| (n, if (12..18).contains(&n) { 1 } else { 0 })).collect();
    last.sort();
    let rebuilt = operator_output(
        &[of(&last, 1)],
        2,
        Pace { slice: std::time::Duration::ZERO, pass_updates: 5 },
    );
    let mut total: Updates = whole.iter().map(|(o, _, d)| (o.clone(), 0, *d)).collect();
    differential_dataflow::consolidation::consolidate_updates(&mut total);
    assert_eq!(total, rebuilt);
}

fn settings(neighbors: usize, max_pages: usize, min_pages: u32) -> GroupSettings {
    GroupSettings {
        config: VerifyConfig { threshold: 0.8, word_threshold: 0.0, ..Default::default() },
        neighbors,
        max_pages,
        min_pages,
        sentence_groups_over: usize::MAX,
    }
}

/// A page of sentences made of the given words (a sentence's key is a hash of its words,
/// its weight their count), for the word-level second chance.
fn worded(n: u64, sentences: &[Vec<u16>]) -> Arc<Member> {
    let key = |w: &[u16]| {
        w.iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
    };
    let content = Content {
        sentences: sentences.iter().map(|s| (key(s), s.len() as u16)).collect(),
        words: sentences.iter().flatten().copied().collect(),
        word_counts: sentences.iter().map(|s| s.len() as u16).collect(),
        ..Default::default()
    };
    Arc::new(Member::new(VerifyMethod::Lcs, id(n), content))
}

/// The group's whole output from scratch, as a bag: `group_contributions`, the oversized
/// mark and the blocks.
fn from_scratch(
    fp: u64,
    members: &[Arc<Member>],
    s: &GroupSettings,
) -> BTreeMap<GroupOutput, isize> {
    let mut sorted: Vec<Arc<Member>> = members.to_vec();
    sorted.sort();
    let mut out = BTreeMap::new();
    if sorted.len() > s.max_pages {
        out.insert(GroupOutput::Oversized(fp, sorted.len() as isize), 1);
        return out;
    }
    let bag = group_contributions(fp, &sorted, s, &mut VerifyStats::default(), |a, b| {
        pair_verdict(&s.config, a, b)
    });
    for (e, c) in bag {
        *out.entry(GroupOutput::Verdict(e, c)).or_default() += 1;
    }
    let refs: Vec<&Member> = sorted.iter().map(|m| m.as_ref()).collect();
    if let (Some(common), _) = group_blocks(&refs, s.min_pages) {
        let common = Arc::new(common);
        out.extend(sorted.iter().map(|m| (GroupOutput::Blocks(m.id, common.clone()), 1)));
    }
    // The reference's view (`edges::group_edges`): the same pairs, each once.
    let refs: Vec<&Member> = sorted.iter().map(|m| m.as_ref()).collect();
    let v = group_edges(
        fp,
        &refs,
        &s.config,
        s.sentence_groups_over,
        s.neighbors,
        &mut VerifyStats::default(),
        |a, b| pair_verdict(&s.config, a, b),
    );
    let mut pairs: Vec<(Edge, bool)> = v
        .edges
        .into_iter()
        .map(|e| (e, false))
        .chain(v.candidates.into_iter().map(|e| (e, true)))
        .collect();
    pairs.sort();
    let from_bag: Vec<(Edge, bool)> = out
        .keys()
        .filter_map(|o| if let GroupOutput::Verdict(e, c) = o { Some((*e, *c)) } else { None })
        .collect();
    assert_eq!(pairs, from_bag);
    out
}

/// Accumulates emitted changes into a bag (no multiplicity may go below 0).
fn accumulate(state: &mut BTreeMap<GroupOutput, isize>, out: Vec<(GroupOutput, isize)>) {
    for (o, d) in out {
        let e = state.entry(o.clone()).or_default();
        *e += d;
        assert!(*e >= 0, "{o:?} at multiplicity {e}");
        if *e == 0 {
            state.remove(&o);
        }
    }
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn a_cached_verdict_gives_the_same_edge() {
    for differ in [false, true] {
        assert_eq!(
            CachedVerdict::of((Verdict::Dissimilar, differ)).verdict(),
            (Verdict::Dissimilar, differ)
        );
        assert_eq!(
            CachedVerdict::of((Verdict::CostCapped, differ)).verdict(),
            (Verdict::CostCapped, differ)
        );
        for s in [0.8, 0.812_345_678_9, 0.999_999_5, 1.0, 0.5] {
            let (verdict, d) = CachedVerdict::of((Verdict::Similar(s), differ)).verdict();
            let Verdict::Similar(cached) = verdict else { panic!("{s}: {verdict:?}") };
            assert_eq!((ppm_of(cached), d), (ppm_of(s), differ), "{s}");
        }
    }
    // Every resemblance an edge can hold comes back as itself.
    assert!((0..=1_000_000u32).all(|ppm| ppm_of(ppm as f64 / 1_000_000.0) == ppm));
    assert_eq!(std::mem::size_of::<((u64, u64), CachedVerdict)>(), 24);
}

#[test]
fn many_members_in_and_out_at_once_keep_the_list_sorted() {
    // An oversized group (a stub family) and a small one gain and lose many members in one
    // change, in no order: the list is the alive members sorted, the output as from scratch.
    for max_pages in [1000, 50] {
        let s = settings(2, max_pages, 0);
        let mut rng = Rng(11);
        let mut group = Group::default();
        let mut state = BTreeMap::new();
        let mut alive: Vec<Arc<Member>> = Vec::new();
        for round in 0..4u64 {
            let mut changes: Vec<(Arc<Member>, isize)> = Vec::new();
            for n in 0..120 {
                let m = member(round * 1000 + n, &[1, 2, 3, 10_000 + rng.below(40)]);
                alive.push(m.clone());
                changes.push((m, 1));
            }
            for _ in 0..40 {
                let gone = alive.swap_remove(rng.below(alive.len() as u64) as usize);
                changes.retain(|(m, _)| *m != gone);
                if (gone.id.date / 1000) < round {
                    changes.push((gone, -1));
                }
            }
            // In no particular order.
            changes.sort_by_key(|(m, _)| m.hash.rotate_left(17) ^ m.id.date);
            let mut out = Vec::new();
            group.apply(
                3,
                changes,
                &s,
                &mut VerifyStats::default(),
                |a, b| pair_verdict(&s.config, a, b),
                &mut out,
            );
            accumulate(&mut state, out);
            let mut expected: Vec<Identity> = alive.iter().map(|m| identity(m)).collect();
            expected.sort_unstable();
            let held: Vec<Identity> = group.members.iter().map(|e| identity(&e.member)).collect();
            assert_eq!(held, expected, "max_pages {max_pages}, round {round}");
            assert_eq!(state, from_scratch(3, &alive, &s), "max_pages {max_pages}, round {round}");
        }
    }
}

#[test]
fn incremental_group_equals_the_group_from_scratch() {
    // Families of near-copies (shared sentences, a few of their own) and unrelated pages,
    // inserted and retracted in random batches; after each batch, the accumulated output
    // is the group's output from scratch. Small caps make the group cross max_pages.
    for (seed, neighbors, max_pages, min_pages) in [
        (1, 2, 1000, 4),
        (2, 8, 1000, 16),
        (3, 3, 12, 3),
        (4, 1, 1000, 0),
        (5, 4, 1000, 8),
        (6, 2, 30, 5),
        (7, 8, 1000, 0),
    ] {
        let s = settings(neighbors, max_pages, min_pages);
        let mut rng = Rng(seed);
        let page = |n: u64, rng: &mut Rng| {
            let family = rng.below(3);
            let mut keys: Vec<u64> =
                (0..12).map(|k| family * 1000 + k).filter(|_| rng.below(8) > 0).collect();
            keys.extend((0..1 + rng.below(3)).map(|k| 100_000 + n * 10 + k));
            member(n, &keys)
        };
        let mut group = Group::default();
        let mut alive: Vec<Arc<Member>> = Vec::new();
        let mut state = BTreeMap::new();
        let mut next = 0;
        let mut verdicts_seen = 0;
        for round in 0..60 {
            let mut changes = Vec::new();
            for _ in 0..1 + rng.below(4) {
                if !alive.is_empty() && rng.below(3) == 0 {
                    let gone = alive.remove(rng.below(alive.len() as u64) as usize);
                    changes.push((gone, -1));
                } else {
                    let m = page(next, &mut rng);
                    next += 1;
                    alive.push(m.clone());
                    changes.push((m, 1));
                }
            }
            // A member in and out in the same batch changes nothing.
            let transient = page(next + 10_000, &mut rng);
            changes.push((transient.clone(), 1));
            changes.push((transient, -1));
            let mut out = Vec::new();
            group.apply(
                7,
                changes,
                &s,
                &mut VerifyStats::default(),
                |a, b| pair_verdict(&s.config, a, b),
                &mut out,
            );
            // Held as the operator holds it: a page alone as a pointer.
            group = Group::from_slot(group.into_slot());
            accumulate(&mut state, out);
            let expected = from_scratch(7, &alive, &s);
            assert_eq!(state, expected, "seed {seed}, round {round}, {} members", alive.len());
            verdicts_seen += state
                .keys()
                .filter(|o| matches!(o, GroupOutput::Verdict(..) | GroupOutput::Oversized(..)))
                .count();
        }
        assert!(
            verdicts_seen > 50,
            "seed {seed}: the workload has similar pairs or crosses the cap ({verdicts_seen})"
        );
    }
}

#[test]
fn a_page_inserted_into_a_large_family_costs_a_bounded_number_of_comparisons() {
    let s = settings(8, 1000, 0);
    // 500 copies, each with its own last sentence and one more common sentence every 10.
    let copy = |n: u64| member(n, &(1..=20 + n / 10).chain([1000 + n]).collect::<Vec<u64>>());
    let mut group = Group::default();
    let mut state = BTreeMap::new();
    let mut out = Vec::new();
    group.apply(
        1,
        (0..500).map(|n| (copy(n), 1)).collect(),
        &s,
        &mut VerifyStats::default(),
        |a, b| pair_verdict(&s.config, a, b),
        &mut out,
    );
    accumulate(&mut state, out);
    // The page comes (1) or goes (-1): the comparisons it cost and the pairs with it that
    // came or went.
    let change = |group: &mut Group, state: &mut BTreeMap<GroupOutput, isize>, diff: isize| {
        let mut compared = 0;
        let mut out = Vec::new();
        group.apply(
            1,
            vec![(member(5000, &(1..=45).chain([9000]).collect::<Vec<u64>>()), diff)],
            &s,
            &mut VerifyStats::default(),
            |a, b| {
                compared += 1;
                pair_verdict(&s.config, a, b)
            },
            &mut out,
        );
        let with_it = out
            .iter()
            .filter(|(o, d)| matches!(o, GroupOutput::Verdict(e, _) if e.shorter.date == 5000 || e.longer.date == 5000) && *d == diff)
            .count();
        accumulate(state, out);
        (compared, with_it)
    };
    let (compared, gained) = change(&mut group, &mut state, 1);
    // The two pages beside it retract the edge their scan toward it ended on as they held
    // it (`SideScan`: no comparison) and scan again (2), and it scans its two sides (2):
    // four comparisons, whatever the group's size (six when a retraction scanned again).
    assert_eq!(compared, 4, "comparisons for one page in a group of 500");
    assert!(gained > 0 && gained <= 16, "the new page verified against its neighbours: {gained}");
    // It leaves: its edges and its two neighbours' go as they were held, and the neighbours
    // scan again, now toward each other (2); the group's output is the group's from
    // scratch.
    let (compared, lost) = change(&mut group, &mut state, -1);
    assert_eq!(compared, 2, "comparisons for one page leaving a group of 501");
    assert_eq!(lost, gained, "every pair it had gained goes");
    let alive: Vec<Arc<Member>> = (0..500).map(copy).collect();
    assert_eq!(
        state,
        from_scratch(1, &alive, &s),
        "the group after it left is the group from scratch"
    );
}

#[test]
fn a_side_scan_holds_its_reach_flags_and_edge_in_four_bytes() {
    assert_eq!(std::mem::size_of::<Entry>(), 16);
    for reach in [0, 1, 7, OPEN] {
        for (edge, found) in [(false, false), (false, true), (true, true)] {
            for ppm in [None, Some(0), Some(812_345), Some(1_000_000)] {
                let held = SideScan::made(reach, edge, found, ppm);
                assert_eq!((held.reach(), held.edge(), held.found()), (reach, edge, found));
                assert_eq!(
                    held.held_edge(),
                    ppm.filter(|_| edge),
                    "an edge is held only where the scan ended on one"
                );
            }
        }
    }
    assert_eq!(
        SideScan::made(3, true, true, Some(SideScan::PPM_MAX + 1)).held_edge(),
        None,
        "out of range: made again"
    );
}

#[test]
fn a_page_inserted_among_unrelated_pages_is_compared_with_its_neighbours_only() {
    // 500 unrelated pages of one length sharing a fingerprint (a site's template): every
    // scan runs its eight steps and finds nothing. An arriving page is compared with its
    // eight nearest on each side; each of those compares it once, as the one new page in
    // its scan; what they had compared before is known dissimilar.
    let s = settings(8, 1000, 0);
    let page = |n: u64| member(n, &(0..10).map(|k| n * 100 + k).collect::<Vec<u64>>());
    let mut group = Group::default();
    let mut out = Vec::new();
    group.apply(
        1,
        (0..500).map(|n| (page(2 * n), 1)).collect(),
        &s,
        &mut VerifyStats::default(),
        |a, b| pair_verdict(&s.config, a, b),
        &mut out,
    );
    let mut compared = std::collections::BTreeSet::new();
    let mut calls = 0;
    let mut out = Vec::new();
    group.apply(
        1,
        vec![(page(501), 1)],
        &s,
        &mut VerifyStats::default(),
        |a, b| {
            calls += 1;
            compared.insert((a.id.date, b.id.date));
            pair_verdict(&s.config, a, b)
        },
        &mut out,
    );
    assert!(out.is_empty());
    assert_eq!(compared.len(), 16, "the new page and its 16 nearest: {compared:?}");
    assert!(calls <= 32, "each pair at most twice (once from each end): {calls}");
}

#[test]
fn the_blocks_of_a_large_group_follow_its_sample() {
    // 400 pages (over BLOCK_SAMPLE): a block on every third page, another on every fifth,
    // and text of their own; pages come and go. After each change the blocks (counted on
    // the sample) and the verdicts are the group's from scratch.
    const { assert!(BLOCK_SAMPLE < 400) };
    let s = settings(2, 1000, 16);
    let page = |n: u64| {
        let mut keys: Vec<u64> = (0..6).map(|k| 100_000 + n * 10 + k).collect();
        if n.is_multiple_of(3) {
            keys.extend(1..=10);
        }
        if n.is_multiple_of(5) {
            keys.extend(20..=25);
        }
        member(n, &keys)
    };
    let mut rng = Rng(11);
    let mut alive: Vec<Arc<Member>> = (0..400).map(page).collect();
    let mut group = Group::default();
    let mut state = BTreeMap::new();
    let mut out = Vec::new();
    group.apply(
        3,
        alive.iter().map(|m| (m.clone(), 1)).collect(),
        &s,
        &mut VerifyStats::default(),
        |a, b| pair_verdict(&s.config, a, b),
        &mut out,
    );
    accumulate(&mut state, out);
    assert_eq!(state, from_scratch(3, &alive, &s));
    let mut next = 400;
    for round in 0..40 {
        let mut changes = Vec::new();
        for _ in 0..1 + rng.below(3) {
            if rng.below(2) == 0 {
                let gone = alive.remove(rng.below(alive.len() as u64) as usize);
                changes.push((gone, -1));
            } else {
                let m = page(next);
                next += 1;
                alive.push(m.clone());
                changes.push((m, 1));
            }
        }
        let mut out = Vec::new();
        group.apply(
            3,
            changes,
            &s,
            &mut VerifyStats::default(),
            |a, b| pair_verdict(&s.config, a, b),
            &mut out,
        );
        accumulate(&mut state, out);
        assert_eq!(state, from_scratch(3, &alive, &s), "round {round}");
    }
    assert!(state.keys().any(|o| matches!(o, GroupOutput::Blocks(..))), "the group repeats blocks");
}

#[test]
fn a_per_sentence_group_compares_only_pairs_whose_sentences_may_reach_tau() {
    // A quoted sentence on four pages: `b` is `a` with one word changed in each of its other
    // sentences (alike word by word, 0.91; by sentences only the quote), `c` another text
    // quoting it, `d` a copy of `a`. Where the fingerprint is a bucket's (or a word band's),
    // a–b is an edge by the word-level second chance; in the quote's per-sentence group, of
    // more pages than `sentence_groups_over` (3), only a–d is compared.
    let s = GroupSettings {
        config: VerifyConfig::default(),
        neighbors: 8,
        max_pages: 1000,
        min_pages: 0,
        sentence_groups_over: 3,
    };
    let quote: Vec<u16> = (500..510).collect();
    let text = |base: u16, changed: bool| -> Vec<Vec<u16>> {
        let mut t = vec![quote.clone()];
        t.extend((0..10u16).map(|i| {
            (0..10u16)
                .map(|w| if changed && w == i { 9000 + i } else { base + 10 * i + w })
                .collect()
        }));
        t
    };
    let (a, b, c, d) = (
        worded(1, &text(0, false)),
        worded(2, &text(0, true)),
        worded(3, &text(1000, false)),
        worded(4, &text(0, false)),
    );
    let pair = |e: &Edge| (e.shorter.date.min(e.longer.date), e.shorter.date.max(e.longer.date));
    // By length then id: a, b, c, d; a scan stops at its first edge.
    for (fp, expected) in [
        (5, vec![(1, 2), (2, 4)]),
        (5 | crate::candidates::fingerprint::PER_SENTENCE, vec![(1, 4)]),
    ] {
        let mut group = Group::default();
        let mut stats = VerifyStats::default();
        let mut out = Vec::new();
        let mut compared = std::collections::BTreeSet::new();
        let changes = [&a, &b, &c, &d].iter().map(|m| ((*m).clone(), 1)).collect();
        group.apply(
            fp,
            changes,
            &s,
            &mut stats,
            |x, y| {
                compared.insert((x.id.date.min(y.id.date), x.id.date.max(y.id.date)));
                pair_verdict(&s.config, x, y)
            },
            &mut out,
        );
        let mut edges: Vec<(u64, u64)> = out
            .iter()
            .filter_map(
                |(o, _)| if let GroupOutput::Verdict(e, _) = o { Some(pair(e)) } else { None },
            )
            .collect();
        edges.sort();
        edges.dedup();
        assert_eq!(edges, expected, "fingerprint {fp:#x}");
        let per_sentence = crate::candidates::fingerprint::is_per_sentence(fp);
        if per_sentence {
            assert_eq!(
                compared.iter().copied().collect::<Vec<_>>(),
                vec![(1, 4)],
                "only the pair whose sentences reach τ"
            );
            assert!(stats.pruned >= 5, "the other five pairs pruned: {}", stats.pruned);
        } else {
            assert_eq!(stats.pruned, 0);
        }
        // The same without the rule: every group compares as a bucket's does.
        let off = GroupSettings { sentence_groups_over: 4, ..s.clone() };
        let bag = group_contributions(
            fp,
            &[a.clone(), b.clone(), c.clone(), d.clone()],
            &off,
            &mut VerifyStats::default(),
            |x, y| pair_verdict(&s.config, x, y),
        );
        assert!(
            bag.iter().any(|(e, _)| pair(e) == (1, 2)),
            "fingerprint {fp:#x} without the rule: a–b by words"
        );
    }
}

#[test]
fn an_incremental_per_sentence_group_equals_the_group_from_scratch() {
    // Families whose copies change a word in some sentences (alike by words more than by
    // sentences), inserted and retracted in random batches, in a per-sentence group with
    // the rule on and in a bucket group: after each batch, the output is the group's from
    // scratch (the rule is a function of the pair: a scan treats a pruned pair as dissimilar,
    // before and after a change).
    // Pruning over 0 pages (always), over 6 and over 12 (the group grows across them).
    let per_sentence = 9 | crate::candidates::fingerprint::PER_SENTENCE;
    for (seed, fp, over) in
        [(1u64, per_sentence, 0), (2, per_sentence, 6), (4, per_sentence, 12), (3, 9, 0)]
    {
        let s = GroupSettings {
            config: VerifyConfig::default(),
            neighbors: 3,
            max_pages: 1000,
            min_pages: 0,
            sentence_groups_over: over,
        };
        let mut rng = Rng(seed);
        let page = |n: u64, rng: &mut Rng| {
            let family = rng.below(3) as u16;
            let sentences: Vec<Vec<u16>> = (0..8u16)
                .map(|i| {
                    let changed = rng.below(3) == 0;
                    (0..8u16)
                        .map(|w| {
                            if changed && w == i {
                                30_000 + rng.below(1000) as u16
                            } else {
                                family * 1000 + 10 * i + w
                            }
                        })
                        .collect()
                })
                .collect();
            worded(n, &sentences)
        };
        let mut group = Group::default();
        let mut alive: Vec<Arc<Member>> = Vec::new();
        let mut state = BTreeMap::new();
        let (mut next, mut pruned, mut edges_seen) = (0, 0, 0);
        for round in 0..50 {
            let mut changes = Vec::new();
            for _ in 0..1 + rng.below(4) {
                if !alive.is_empty() && rng.below(3) == 0 {
                    changes.push((alive.remove(rng.below(alive.len() as u64) as usize), -1));
                } else {
                    let m = page(next, &mut rng);
                    next += 1;
                    alive.push(m.clone());
                    changes.push((m, 1));
                }
            }
            let mut out = Vec::new();
            let mut stats = VerifyStats::default();
            group.apply(
                fp,
                changes,
                &s,
                &mut stats,
                |a, b| pair_verdict(&s.config, a, b),
                &mut out,
            );
            assert!(stats.pruned <= stats.rejected, "pruned pairs are rejected ones: {stats:?}");
            pruned += stats.pruned;
            group = Group::from_slot(group.into_slot());
            accumulate(&mut state, out);
            assert_eq!(state, from_scratch(fp, &alive, &s), "seed {seed}, round {round}");
            edges_seen += state.keys().filter(|o| matches!(o, GroupOutput::Verdict(..))).count();
        }
        assert!(edges_seen > 50, "seed {seed}: the workload has similar pairs ({edges_seen})");
        assert_eq!(
            pruned > 0,
            crate::candidates::fingerprint::is_per_sentence(fp),
            "seed {seed}: pairs pruned only in a per-sentence group"
        );
    }
}

#[test]
fn the_groups_bytes_are_their_tables_and_lists_not_their_members() {
    let big: Vec<u64> = (1..=1000).collect();
    let (small, large) = (member(2, &[1]), member(2, &big));
    assert!(large.bytes() >= small.bytes() + 999 * 8, "a member's keys count in its bytes");
    // The same groups of small members and of large ones.
    let slots = |a: &Arc<Member>, b: &Arc<Member>| {
        let mut slots = Slots::default();
        let empty = slots.bytes();
        slots.put(10, Slot::One(a.clone()));
        let mut group = Group::from_slot(Some(Slot::One(a.clone())));
        group.members.push(scan::Entry::new(b.clone()));
        slots.put(12, Slot::Many(Box::new(group)));
        (empty, slots.bytes())
    };
    let (empty, of_small) = slots(&small, &member(3, &[9]));
    let (_, of_large) = slots(&large, &member(3, &big));
    assert_eq!(of_small, of_large, "members are counted where they are made");
    assert!(
        of_small >= empty + std::mem::size_of::<Group>() + 2 * std::mem::size_of::<scan::Entry>()
    );
}

/// A page whose content changes under its id (a template refresh filters it again) is a new
/// member, and a time moves its groups from the old member to the new. With the fingerprints
/// of one page spilling in the middle of that time, a group must find the member it holds,
/// not the other version of the page: a page arriving later in the new version's group is
/// compared with the new version (identical to it), not the old (unlike it).
#[test]
fn a_page_changed_under_its_id_while_its_fingerprints_spill_finds_its_new_version() {
    let fp = |n: u64, k: u64| (1000 + 10 * n + k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let fps = |n: u64, ks: [u64; 2]| {
        let mut fps = ks.map(|k| fp(n, k)).to_vec();
        fps.sort_unstable();
        fps
    };
    // The old version, the new one (same id), and a copy of the new one (another page).
    let page = |n: u64, version: u8| match version {
        0 => (member(n, &[700 + 3 * n, 701 + 3 * n, 702 + 3 * n]), fps(n, [0, 1])),
        1 => (member(n, &[500 + 2 * n, 501 + 2 * n]), fps(n, [1, 2])),
        _ => (member(100 + n, &[500 + 2 * n, 501 + 2 * n]), fps(n, [2, 3])),
    };
    let step = |changes: &[(u8, isize)]| -> PageStep {
        (0..40u64)
            .flat_map(|n| changes.iter().map(move |&(v, d)| (page(n, v), d)))
            .map(|((m, fps), d)| (m, fps, d))
            .collect()
    };
    let steps =
        vec![step(&[(0, 1)]), step(&[(0, -1), (1, 1)]), step(&[(2, 1)]), step(&[(2, -1), (1, -1)])];
    let memory = operator_output(&steps, 1, PACE);
    let edges = |out: &Updates, time: u64| {
        out.iter()
            .filter(|(o, t, d)| matches!(o, GroupOutput::Verdict(..)) && *t == time && *d > 0)
            .count()
    };
    assert_eq!(edges(&memory, 2), 40, "each copy meets the new version: {memory:?}");
    for workers in [1, 2, 4] {
        for recent in [3, 7, 20] {
            let spill = Arc::new(crate::runtime::spill::Spill::new(&std::env::temp_dir(), recent));
            assert_eq!(
                spilled_output(&steps, workers, PACE, Some(spill.clone())),
                memory,
                "spilling past {recent}, {workers} workers"
            );
            assert!(spill.stats().runs > 2, "it spilled: {:?}", spill.stats());
        }
    }
}
