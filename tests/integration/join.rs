//! The similarity joins against brute force: every algorithm, measure and threshold returns
//! exactly the pairs an all-pairs comparison returns, at one thread and at several.

use dupflow::join::edit::{self, EdAlgorithm, EdParams, Strings};
use dupflow::join::set::{self, Algorithm, Measure, Records, Threshold};
use dupflow::join::{brute, with_threads, Pair};
use proptest::prelude::*;

fn keys(pairs: &[Pair]) -> Vec<(u32, u32, String)> {
    pairs.iter().map(|p| (p.x, p.y, format!("{:.3}", p.value))).collect()
}

fn word_lines() -> impl Strategy<Value = Vec<String>> {
    // Few distinct words, so that pairs near every threshold occur; empty lines, one-word lines
    // and repeated lines come up often.
    prop::collection::vec(
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", "e", "f", "g"]), 0..9),
        0..28,
    )
    .prop_map(|lines| lines.into_iter().map(|w| w.join(" ")).collect())
}

const ALGORITHMS: [Algorithm; 5] = [
    Algorithm::AllPairs,
    Algorithm::PpJoin,
    Algorithm::PpJoinPlus { max_depth: 0 },
    Algorithm::PpJoinPlus { max_depth: 2 },
    Algorithm::PpJoinPlus { max_depth: 5 },
];

fn check_set(
    lines: &[String],
    measure: Measure,
    threshold: &str,
    threads: usize,
) -> Result<(), TestCaseError> {
    let records = Records::from_lines(lines.iter().map(String::as_str));
    let t = Threshold::parse(measure, threshold).unwrap();
    let expected = keys(&brute::set_join(&records, t));
    for algorithm in ALGORITHMS {
        let (pairs, stats) = with_threads(threads, || set::join(&records, t, algorithm)).unwrap();
        prop_assert_eq!(
            &keys(&pairs),
            &expected,
            "{:?} {:?} {} threads {}",
            algorithm,
            measure,
            threshold,
            threads
        );
        prop_assert_eq!(stats.results as usize, expected.len());
        prop_assert!(stats.candidates >= stats.results);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn set_joins_equal_brute_force(
        lines in word_lines(),
        t in prop::sample::select(vec!["0.1", "0.25", "0.5", "0.6", "0.666", "0.75", "0.8", "0.85", "0.9", "1"]),
        threads in prop::sample::select(vec![1usize, 3]),
    ) {
        for measure in [Measure::Jaccard, Measure::Cosine, Measure::Dice] {
            check_set(&lines, measure, t, threads)?;
        }
    }

    #[test]
    fn overlap_joins_equal_brute_force(lines in word_lines(), t in 1u32..5, threads in prop::sample::select(vec![1usize, 3])) {
        check_set(&lines, Measure::Overlap, &t.to_string(), threads)?;
    }

    #[test]
    fn edit_joins_equal_brute_force(
        lines in prop::collection::vec("[abc]{0,12}|[abcdefghij]{6,16}", 0..30),
        tau in 0usize..4,
        q in 1usize..5,
        min_length in prop::option::of(0usize..8),
        threads in prop::sample::select(vec![1usize, 3]),
    ) {
        for algorithm in [EdAlgorithm::AllPairsEd, EdAlgorithm::EdJoinL, EdAlgorithm::EdJoin] {
            let params = EdParams::new(tau, q, min_length, algorithm).unwrap();
            let expected = keys(&brute::edit_join(lines.iter().map(String::as_str), &params));
            let strings = Strings::from_lines(lines.iter().map(String::as_str), &params);
            let (pairs, stats) = with_threads(threads, || edit::join(&strings, &params)).unwrap();
            prop_assert_eq!(&keys(&pairs), &expected, "{:?} tau {} q {} min {:?}", algorithm, tau, q, min_length);
            prop_assert_eq!(stats.results as usize, expected.len());
        }
    }
}

#[test]
fn boundary_cases() {
    // Similarity exactly at the threshold is in; empty lines join nothing; duplicates join at 1.
    let lines = ["a b c d", "", "a b c e", "x", "x", "a b c d", ""];
    let records = Records::from_lines(lines);
    let jaccard = |t| Threshold::parse(Measure::Jaccard, t).unwrap();
    let (pairs, _) = set::join(&records, jaccard("0.6"), Algorithm::PpJoinPlus { max_depth: 2 });
    // (1,3): 3/5 = 0.6 exactly; (1,6) and (4,5) identical.
    assert_eq!(
        keys(&pairs),
        vec![
            (3, 1, "0.600".into()),
            (5, 4, "1.000".into()),
            (6, 1, "1.000".into()),
            (6, 3, "0.600".into())
        ]
    );
    let (pairs, _) = set::join(&records, jaccard("0.61"), Algorithm::PpJoin);
    assert_eq!(keys(&pairs), vec![(5, 4, "1.000".into()), (6, 1, "1.000".into())]);
    // One-token records at cosine 1.
    let (pairs, _) =
        set::join(&records, Threshold::parse(Measure::Cosine, "1").unwrap(), Algorithm::AllPairs);
    assert_eq!(keys(&pairs), vec![(5, 4, "1.000".into()), (6, 1, "1.000".into())]);
}

#[test]
fn edit_join_skips_short_strings_unless_asked() {
    let lines = ["abcdefgh", "abcdefgx", "ab", "ax", "abcdefg"];
    let p = EdParams::new(1, 3, None, EdAlgorithm::EdJoin).unwrap(); // min length 6
    let (pairs, _) = edit::join(&Strings::from_lines(lines, &p), &p);
    assert_eq!(
        keys(&pairs),
        vec![(2, 1, "1.000".into()), (5, 1, "1.000".into()), (5, 2, "1.000".into())]
    );
    let p = EdParams::new(1, 3, Some(0), EdAlgorithm::EdJoin).unwrap();
    let (pairs, _) = edit::join(&Strings::from_lines(lines, &p), &p);
    assert!(keys(&pairs).contains(&(4, 3, "1.000".into())));
}

// ---- the subcommands, through the binary ----

fn dupflow(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dupflow"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const RECORDS: &str = "The quick brown fox, jumps!\nthe quick brown fox jumps over\n\nA lazy dog\nthe quick brown fox jumps\na lazy dog\n";

#[test]
fn normalize_then_dedup_then_join() {
    let (ok, normalized, _) = dupflow(&["normalize", "-", "-"], Some(RECORDS));
    assert!(ok);
    assert_eq!(
        normalized,
        "the quick brown fox_ jumps_\nthe quick brown fox jumps over\n\na lazy dog\nthe quick brown fox jumps\na lazy dog\n"
    );
    let (ok, upper, _) = dupflow(&["normalize", "--case", "upper", "-", "-"], Some("Grüße, Welt"));
    assert!(ok);
    assert_eq!(upper, "GRÜSSE_ WELT\n");
    let (ok, unique, stderr) = dupflow(&["exact-dedup", "-", "-"], Some(&normalized));
    assert!(ok);
    assert_eq!(unique.lines().count(), 5, "{unique}");
    assert!(stderr.contains("dropped 1"), "{stderr}");

    // Lines 2 and 5: 5 of 6 words shared: Jaccard 0.833, cosine 0.913; 4 and 6 identical.
    let (ok, pairs, stderr) =
        dupflow(&["join", "--measure", "jaccard", "--threshold", "0.8", "-"], Some(&normalized));
    assert!(ok, "{stderr}");
    assert_eq!(pairs, "5 2 0.833\n6 4 1.000\n");
    assert!(stderr.contains("candidates") && stderr.contains("results 2"), "{stderr}");
    for algorithm in ["allpairs", "ppjoin", "ppjoinplus"] {
        let (_, cosine, _) = dupflow(
            &["join", "--measure", "cosine", "--threshold", "0.9", "--algorithm", algorithm, "-"],
            Some(&normalized),
        );
        assert_eq!(cosine, "5 2 0.913\n6 4 1.000\n");
    }
    let (_, overlap, _) =
        dupflow(&["join", "--measure", "overlap", "--threshold", "3", "-"], Some(&normalized));
    assert_eq!(overlap, "2 1 3.000\n5 1 3.000\n5 2 5.000\n6 4 3.000\n");
    // Edit distance: "the quick brown fox jumps" vs "... jumps over" is 5 edits; vs "fox_ jumps_" 2.
    let (_, edit, _) =
        dupflow(&["join", "--edit-distance", "2", "--q", "2", "-"], Some(&normalized));
    assert_eq!(edit, "5 1 2\n6 4 0\n");
}

#[test]
fn join_arguments_are_checked() {
    let (ok, _, stderr) =
        dupflow(&["join", "--measure", "jaccard", "--threshold", "1.5", "-"], Some("a\n"));
    assert!(!ok);
    assert!(stderr.contains("out of range for jaccard"), "{stderr}");
    let (ok, _, stderr) =
        dupflow(&["join", "--threshold", "0.8", "--algorithm", "edjoin", "-"], Some("a\n"));
    assert!(!ok);
    assert!(stderr.contains("expected one of: allpairs, ppjoin, ppjoinplus"), "{stderr}");
    let (ok, _, stderr) =
        dupflow(&["join", "--measure", "overlap", "--threshold", "0.5", "-"], Some("a\n"));
    assert!(!ok);
    assert!(stderr.contains("whole number"), "{stderr}");
}
