//! Quality evaluation: what ../shared/bench/score.py computes, in the tool.
//!
//! Truth formats: the dev benchmark's JSON (`urls`, `sims` "i j" → resemblance, `dup`, `non`),
//! or a pair file with one judged pair per line, `url_a url_b label` (label `1`/`dup`/`true` for
//! near-duplicates, `0`/`non`/`false` for not). Scores: page-averaged precision and recall (every
//! page weighs the same; ambiguous pairs are not judged), pairwise P/R/F1 overall or by section,
//! and pairwise precision split into same-host and cross-host pairs.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EvalError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: {message}")]
    Format { path: String, message: String },
}

/// Judged truth: scored URLs and the similarity of the pairs that have one.
pub struct Truth {
    pub urls: Vec<String>,
    pub sims: HashMap<(usize, usize), f64>,
    pub dup: f64,
    pub non: f64,
    /// Pairs absent from `sims` are unjudged (a pair file), not "not duplicates" (the JSON).
    pub judged_only: bool,
}

fn read(path: &Path) -> Result<String, EvalError> {
    std::fs::read_to_string(path)
        .map_err(|error| EvalError::Read { path: path.display().to_string(), error })
}

impl Truth {
    /// Loads the JSON truth or, if the file is not JSON, a pair file.
    pub fn load(path: &Path) -> Result<Truth, EvalError> {
        let text = read(path)?;
        let name = path.display().to_string();
        let format = |message: String| EvalError::Format { path: name.clone(), message };
        if text.trim_start().starts_with('{') {
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| format(e.to_string()))?;
            let urls: Vec<String> = v["urls"]
                .as_array()
                .ok_or_else(|| format("no `urls` array".into()))?
                .iter()
                .map(|u| u.as_str().unwrap_or("").to_string())
                .collect();
            let mut sims = HashMap::new();
            for (k, s) in v["sims"].as_object().ok_or_else(|| format("no `sims` object".into()))? {
                let mut it = k.split_whitespace().map(|x| x.parse::<usize>());
                let (Some(Ok(a)), Some(Ok(b))) = (it.next(), it.next()) else {
                    return Err(format(format!("bad pair key {k:?}")));
                };
                sims.insert((a, b), s.as_f64().unwrap_or(0.0));
            }
            let dup = v["dup"].as_f64().unwrap_or(0.8);
            let non = v["non"].as_f64().unwrap_or(0.5);
            return Ok(Truth { urls, sims, dup, non, judged_only: false });
        }
        // Pair file.
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        let mut urls = Vec::new();
        let mut sims = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() != 3 {
                return Err(format(format!("line {}: expected `url_a url_b label`", n + 1)));
            }
            let label = match fields[2].to_ascii_lowercase().as_str() {
                "1" | "dup" | "true" | "yes" => 1.0,
                "0" | "non" | "false" | "no" => 0.0,
                other => return Err(format(format!("line {}: unknown label {other:?}", n + 1))),
            };
            let mut id = |u: &str| {
                *index.entry(u.to_string()).or_insert_with(|| {
                    urls.push(u.to_string());
                    urls.len() - 1
                })
            };
            let (a, b) = (id(fields[0]), id(fields[1]));
            sims.insert((a.min(b), a.max(b)), label);
        }
        Ok(Truth { urls, sims, dup: 1.0, non: 0.5, judged_only: true })
    }
}

/// `url → cluster` from a clusters.jsonl.
pub fn load_clusters(path: &Path) -> Result<HashMap<String, String>, EvalError> {
    let text = read(path)?;
    let mut out = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| EvalError::Format {
            path: path.display().to_string(),
            message: format!("line {}: {e}", n + 1),
        })?;
        let cluster = match &v["cluster"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.insert(v["url"].as_str().unwrap_or("").to_string(), cluster);
    }
    Ok(out)
}

fn host(url: &str) -> &str {
    url.split("://").nth(1).unwrap_or(url).split('/').next().unwrap_or("")
}

/// Python's `f"{x:.4f}"` for the values we print (round half to even on the binary value).
fn f4(x: f64) -> String {
    format!("{x:.4}")
}

/// The page-averaged precision and recall of the `predicted` pairs: over the pages with a
/// judged predicted mate, and over the pages with a true mate.
fn page_averaged(truth: &Truth, predicted: &BTreeSet<(usize, usize)>) -> (f64, f64) {
    let mut mates: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    for &(a, b) in predicted {
        mates.entry(a).or_default().insert(b);
        mates.entry(b).or_default().insert(a);
    }
    let mut true_mates: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    let mut ambiguous: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    for (&(a, b), &s) in &truth.sims {
        let target = if s >= truth.dup { &mut true_mates } else { &mut ambiguous };
        target.entry(a).or_default().insert(b);
        target.entry(b).or_default().insert(a);
    }
    let empty = BTreeSet::new();
    let (mut ps, mut rs) = (Vec::new(), Vec::new());
    for i in 0..truth.urls.len() {
        let m = mates.get(&i).unwrap_or(&empty);
        let t = true_mates.get(&i).unwrap_or(&empty);
        let amb = ambiguous.get(&i).unwrap_or(&empty);
        let mut judged: BTreeSet<usize> = m.difference(amb).copied().collect();
        if truth.judged_only {
            judged.retain(|j| truth.sims.contains_key(&(i.min(*j), i.max(*j))));
        }
        if !judged.is_empty() {
            ps.push(judged.intersection(t).count() as f64 / judged.len() as f64);
        }
        if !t.is_empty() {
            rs.push(m.intersection(t).count() as f64 / t.len() as f64);
        }
    }
    let mean = |v: &[f64]| if v.is_empty() { 1.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    (mean(&ps), mean(&rs))
}

/// Scores `clusters` against `truth`; the text is score.py's, plus a same-/cross-host line.
pub fn score(truth: &Truth, clusters: &HashMap<String, String>, by_section: bool) -> String {
    let idx: HashMap<&str, usize> =
        truth.urls.iter().enumerate().map(|(i, u)| (u.as_str(), i)).collect();
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (url, cluster) in clusters {
        if let Some(&i) = idx.get(url.as_str()) {
            groups.entry(cluster.as_str()).or_default().push(i);
        }
    }
    let section = |i: usize| -> String {
        if by_section {
            truth.urls[i].split('/').nth(4).unwrap_or("").to_string()
        } else {
            "all".to_string()
        }
    };
    let (mut tp, mut fp, mut fn_): (
        BTreeMap<String, u64>,
        BTreeMap<String, u64>,
        BTreeMap<String, u64>,
    ) = Default::default();
    let mut predicted: BTreeSet<(usize, usize)> = BTreeSet::new();
    let (mut same, mut cross) = ([0u64; 2], [0u64; 2]); // [tp, fp]
    for members in groups.values_mut() {
        members.sort_unstable();
        for x in 0..members.len() {
            for y in x + 1..members.len() {
                let (a, b) = (members[x], members[y]);
                predicted.insert((a, b));
                let s = match truth.sims.get(&(a, b)) {
                    Some(&s) => s,
                    None if truth.judged_only => continue,
                    None => 0.0,
                };
                let counter = if host(&truth.urls[a]) == host(&truth.urls[b]) {
                    &mut same
                } else {
                    &mut cross
                };
                if s >= truth.dup {
                    *tp.entry(section(a)).or_default() += 1;
                    counter[0] += 1;
                } else if s < truth.non {
                    *fp.entry(section(a)).or_default() += 1;
                    counter[1] += 1;
                }
            }
        }
    }
    for (&(a, b), &s) in &truth.sims {
        if s >= truth.dup && !predicted.contains(&(a, b)) {
            *fn_.entry(section(a)).or_default() += 1;
        }
    }
    let (pp, pr) = page_averaged(truth, &predicted);
    let pf = if pp + pr > 0.0 { 2.0 * pp * pr / (pp + pr) } else { 0.0 };
    let mut out = String::new();
    let _ = writeln!(out, "page-averaged: precision {} recall {} f1 {}", f4(pp), f4(pr), f4(pf));
    let keys: BTreeSet<&String> = tp.keys().chain(fp.keys()).chain(fn_.keys()).collect();
    for k in keys {
        let (t, f, n) = (
            tp.get(k).copied().unwrap_or(0),
            fp.get(k).copied().unwrap_or(0),
            fn_.get(k).copied().unwrap_or(0),
        );
        let p = if t + f > 0 { t as f64 / (t + f) as f64 } else { 1.0 };
        let r = if t + n > 0 { t as f64 / (t + n) as f64 } else { 1.0 };
        let f1 = if p + r > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 };
        let _ = writeln!(
            out,
            "{k}: precision {} recall {} f1 {} (tp {t} fp {f} fn {n})",
            f4(p),
            f4(r),
            f4(f1)
        );
    }
    let precision =
        |c: [u64; 2]| if c[0] + c[1] > 0 { c[0] as f64 / (c[0] + c[1]) as f64 } else { 1.0 };
    let _ = writeln!(
        out,
        "pairwise precision by host: same-host {} (tp {} fp {}), cross-host {} (tp {} fp {})",
        f4(precision(same)),
        same[0],
        same[1],
        f4(precision(cross)),
        cross[0],
        cross[1]
    );
    out
}
