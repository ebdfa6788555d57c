//! A real blog crawl (fixtures/blog, written by its make.sh: a hugo blog whose tag, category,
//! author and index pages show whole posts, with print copies of the posts and a recrawl under
//! v2/ whose listings shift; truth from each page's main content) clustered with the default
//! settings and scored against its truth, as ../shared/bench/score.py scores.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common::{dupflow, temp_dir};

struct Truth {
    urls: Vec<String>,
    sims: BTreeMap<(usize, usize), f64>,
    dup: f64,
    non: f64,
}

impl Truth {
    fn read(path: &Path) -> Truth {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let urls: Vec<String> = json["urls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u.as_str().unwrap().to_string())
            .collect();
        let sims = json["sims"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(pair, s)| {
                let (a, b) = pair.split_once(' ').unwrap();
                ((a.parse().unwrap(), b.parse().unwrap()), s.as_f64().unwrap())
            })
            .collect();
        Truth { urls, sims, dup: json["dup"].as_f64().unwrap(), non: json["non"].as_f64().unwrap() }
    }

    /// The resemblance of two scored pages' main contents (0 where the truth holds none).
    fn resemblance(&self, a: usize, b: usize) -> f64 {
        self.sims.get(&(a.min(b), a.max(b))).copied().unwrap_or(0.0)
    }
}

/// A post's own page or its print copy.
fn is_post(url: &str) -> bool {
    url.contains("/posts/") && !url.contains("/posts/page/") && !url.ends_with("/posts/")
}

#[test]
fn a_blogs_listings_and_sidebars_join_no_unrelated_posts() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/blog");
    let truth = Truth::read(&fixtures.join("hugo.truth.json"));
    let out = temp_dir("blogs");
    let status = dupflow()
        .args(["run", "--quiet", "--out"])
        .arg(&*out)
        .arg(fixtures.join("hugo.warc.gz"))
        .status()
        .unwrap();
    assert!(status.success());
    let index: BTreeMap<&str, usize> =
        truth.urls.iter().enumerate().map(|(i, u)| (u.as_str(), i)).collect();
    let mut members: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for line in std::fs::read_to_string(out.join("clusters.jsonl")).unwrap().lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(&i) = index.get(row["url"].as_str().unwrap()) {
            members.entry(row["cluster"].as_str().unwrap().to_string()).or_default().push(i);
        }
    }
    assert_eq!(members.values().map(Vec::len).sum::<usize>(), truth.urls.len());

    // No cluster holds two posts whose texts are unrelated: no listing, sidebar or footer
    // joins them.
    let mut unrelated = Vec::new();
    for pages in members.values() {
        for (x, &a) in pages.iter().enumerate() {
            for &b in &pages[x + 1..] {
                let (ua, ub) = (&truth.urls[a], &truth.urls[b]);
                if is_post(ua) && is_post(ub) && truth.resemblance(a, b) < truth.non {
                    unrelated.push((ua.clone(), ub.clone()));
                }
            }
        }
    }
    assert!(unrelated.is_empty(), "unrelated posts clustered together: {unrelated:?}");

    // Page-averaged precision and recall (every page weighs the same; pairs between `non`
    // and `dup` are not judged).
    let mut cluster_of = vec![""; truth.urls.len()];
    for (id, pages) in &members {
        for &i in pages {
            cluster_of[i] = id.as_str();
        }
    }
    let (mut precision, mut recall) = (Vec::new(), Vec::new());
    for a in 0..truth.urls.len() {
        let mates: BTreeSet<usize> =
            members[cluster_of[a]].iter().copied().filter(|&b| b != a).collect();
        let true_mates: BTreeSet<usize> = (0..truth.urls.len())
            .filter(|&b| b != a && truth.resemblance(a, b) >= truth.dup)
            .collect();
        let judged: Vec<usize> = mates
            .iter()
            .copied()
            .filter(|&b| {
                let s = truth.resemblance(a, b);
                s >= truth.dup || s < truth.non
            })
            .collect();
        if !judged.is_empty() {
            let right = judged.iter().filter(|b| true_mates.contains(b)).count();
            precision.push(right as f64 / judged.len() as f64);
        }
        if !true_mates.is_empty() {
            recall.push(mates.intersection(&true_mates).count() as f64 / true_mates.len() as f64);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (p, r) = (mean(&precision), mean(&recall));
    eprintln!("{} pages: page-averaged precision {p:.4} recall {r:.4}", truth.urls.len());
    assert!(p >= 0.95, "precision {p:.4}");
    assert!(r >= 0.9, "recall {r:.4}");
}

#[test]
fn explain_names_the_longer_share_when_it_decides() {
    // A tag page listing two posts whole, and one of them: resemblance over τ, but what they
    // share is under half the tag page.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/blog");
    let truth = Truth::read(&fixtures.join("hugo.truth.json"));
    let site = truth.urls[0].split('/').take(3).collect::<Vec<_>>().join("/");
    let output = dupflow()
        .args(["explain", "--json"])
        .arg(format!("{site}/tags/seeing/"))
        .arg(format!("{site}/posts/gpgconf-offered-considerations-track-0111/"))
        .arg(fixtures.join("hugo.warc.gz"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let verdict = &answer["verdict"];
    assert_eq!(verdict["similar"], false);
    assert!(verdict["sentence_resemblance"].as_f64().unwrap() >= 0.6, "{verdict}");
    let reason = verdict["reason"].as_str().unwrap();
    assert!(reason.contains("of the longer page, below min_longer_share 0.55"), "{reason}");
}
