//! Why two pages are (or are not) near-duplicates: each page's text as the method compares it
//! (its own sentences, the template kept inside it, the template left out), the shared
//! sentences aligned (a longest common subsequence by weight), the verdict and what made it,
//! and, given a run's clusters, the verified path between the two pages inside their cluster.
//!
//! The pages are made and filtered as a run makes them (`source::ingest`, the per-host
//! template rule over every page of the inputs, `template::filter_templates`) and the verdict
//! is the pipeline's (`verify::compare`: sentences, then words). The sibling rule is left out:
//! it depends on the fingerprint groups a run holds, not on the two pages alone.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use dupflow_operators::template::filter_templates;
use dupflow_operators::template::Filtered;
use dupflow_operators::verify::lcs::{self, Verdict};
use dupflow_operators::MethodConfig;
use dupflow_operators::{Page, PageId};
use serde::Serialize;

/// What `explain` could not do.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("{0} is not a page of the inputs (an HTML response of status 2xx)")]
    NotFound(String),
    #[error("reading {path}")]
    Clusters {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}, line {line}: not a clusters.jsonl row ({message})")]
    Row { path: String, line: usize, message: String },
}

/// What a sentence is to the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The page's own text.
    Own,
    /// Template of the host, compared as part of the text (inside it, or a template-dominated
    /// page's shared text).
    TemplateKept,
    /// Template of the host, left out of the comparison.
    Template,
}

/// One sentence of a page, normalized as compared.
#[derive(Clone, Debug, Serialize)]
pub struct Line {
    pub text: String,
    /// Its weight in word-sized units.
    pub units: u16,
    pub role: Role,
    /// In the longest common subsequence with the other page.
    pub shared: bool,
}

/// One of the two pages.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub url: String,
    pub sentences: Vec<Line>,
    /// Left with almost no text of its own: compared on its text after its leading template.
    pub template_dominated: bool,
    /// Units compared, of the page's units.
    pub compared_units: u64,
    pub total_units: u64,
}

/// The verdict on the pair and its figures.
#[derive(Clone, Debug, Serialize)]
pub struct PairFigures {
    pub similar: bool,
    /// 2·LCS / (|A| + |B|) over the compared sentences, each weighing its units.
    pub sentence_resemblance: f64,
    /// The same over the compared words.
    pub word_resemblance: f64,
    pub threshold: f64,
    pub word_threshold: f64,
    /// What decided it, in a sentence.
    pub reason: String,
}

/// A verified pair on the path between the two pages.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub from: String,
    pub to: String,
    pub similarity: f64,
}

/// The two pages in a run's clusters.
#[derive(Clone, Debug, Serialize)]
pub struct Clusters {
    pub cluster_a: String,
    pub size_a: usize,
    pub cluster_b: String,
    pub size_b: usize,
    pub same: bool,
    /// Verified pairs from A to B through the cluster's members (fewest steps), when found.
    pub path: Option<Vec<Step>>,
    /// Why there is no path, when there is none.
    pub no_path: Option<String>,
}

/// The whole answer.
#[derive(Clone, Debug, Serialize)]
pub struct Explained {
    pub a: Side,
    pub b: Side,
    pub verdict: PairFigures,
    pub clusters: Option<Clusters>,
}

/// A cluster larger than this is not searched for a path (its pairs are compared on demand).
pub const MAX_PATH_SEARCH_PAGES: usize = 2_000;

/// Which cluster each page of a run is in: read from a run's clusters.jsonl
/// (`Membership::read`) or given by a live run (the dashboard). It needs to hold the two pages
/// explained and the members of their clusters.
#[derive(Clone, Debug, Default)]
pub struct Membership {
    /// Where the clusters come from, for messages.
    pub source: String,
    /// URL → cluster id.
    pub cluster_of: HashMap<String, String>,
    /// Cluster id → member URLs.
    pub members: HashMap<String, Vec<String>>,
}

impl Membership {
    /// Adds a page of `cluster`.
    pub fn insert(&mut self, url: String, cluster: String) {
        self.members.entry(cluster.clone()).or_default().push(url.clone());
        self.cluster_of.insert(url, cluster);
    }

    /// The clusters of a run's --out folder or its clusters.jsonl.
    pub fn read(path: &Path) -> Result<Membership, ExplainError> {
        let file = if path.is_dir() { path.join("clusters.jsonl") } else { path.to_path_buf() };
        let name = file.display().to_string();
        let text = std::fs::read_to_string(&file)
            .map_err(|source| ExplainError::Clusters { path: name.clone(), source })?;
        let mut membership = Membership { source: name.clone(), ..Membership::default() };
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let row: Row = serde_json::from_str(line).map_err(|e| ExplainError::Row {
                path: name.clone(),
                line: n + 1,
                message: e.to_string(),
            })?;
            membership.insert(row.url, row.cluster);
        }
        Ok(membership)
    }
}

/// Explains `url_a` against `url_b` among `pages` (the pages of the inputs, those of the two
/// pages' hosts at least: the template rule counts them per host). `texts` gives the normalized
/// text of sentence keys (those of the two pages at least); `clusters`, a run's clusters, adds
/// the clusters and the path.
pub fn explain(
    pages: &[Page],
    texts: &HashMap<u64, String>,
    url_a: &str,
    url_b: &str,
    method: &MethodConfig,
    clusters: Option<&Membership>,
) -> Result<Explained, ExplainError> {
    let find = |url: &str| {
        pages.iter().find(|p| &*p.url == url).ok_or_else(|| ExplainError::NotFound(url.into()))
    };
    let (page_a, page_b) = (find(url_a)?, find(url_b)?);
    let filtered = filter_templates(pages, &method.template);
    let (fa, fb) = (&filtered[&page_a.id], &filtered[&page_b.id]);
    let (shared_a, shared_b) = aligned(fa, fb);
    let a = side(page_a, fa, &shared_a, texts);
    let b = side(page_b, fb, &shared_b, texts);
    let verdict = pair_verdict(fa, fb, method);
    let clusters = clusters.map(|c| in_clusters(c, pages, &filtered, page_a, page_b, method));
    Ok(Explained { a, b, verdict, clusters })
}

/// Which compared sentences of each page lie in a heaviest common subsequence of the two
/// (dynamic programming over sentences, each weighing its units), by compared position.
fn aligned(a: &Filtered, b: &Filtered) -> (Vec<bool>, Vec<bool>) {
    let xs: Vec<(u64, u16)> = a.content.sentences.compared().collect();
    let ys: Vec<(u64, u16)> = b.content.sentences.compared().collect();
    let (n, m) = (xs.len(), ys.len());
    let mut shared = (vec![false; n], vec![false; m]);
    if n == 0 || m == 0 || n * m > 50_000_000 {
        return shared;
    }
    let mut table = vec![0u64; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in 1..=n {
        for j in 1..=m {
            table[at(i, j)] = if xs[i - 1].0 == ys[j - 1].0 {
                table[at(i - 1, j - 1)] + xs[i - 1].1 as u64
            } else {
                table[at(i - 1, j)].max(table[at(i, j - 1)])
            };
        }
    }
    let (mut i, mut j) = (n, m);
    while i > 0 && j > 0 {
        if xs[i - 1].0 == ys[j - 1].0 {
            shared.0[i - 1] = true;
            shared.1[j - 1] = true;
            i -= 1;
            j -= 1;
        } else if table[at(i - 1, j)] >= table[at(i, j - 1)] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    shared
}

/// A page's sentences with their roles: the compared ones are a subsequence of the page's.
fn side(page: &Page, filtered: &Filtered, shared: &[bool], texts: &HashMap<u64, String>) -> Side {
    let content = &filtered.content;
    let compared: Vec<(u64, u16)> = content.sentences.compared().collect();
    let mut next = 0;
    let sentences = page
        .sentences
        .iter()
        .map(|s| {
            let (key, weight) = (s.key, s.weight);
            let kept = compared.get(next).is_some_and(|&(k, _)| k == key);
            let role = match (kept, content.is_own(key)) {
                (true, true) => Role::Own,
                (true, false) => Role::TemplateKept,
                (false, _) => Role::Template,
            };
            let line = Line {
                text: texts.get(&key).cloned().unwrap_or_else(|| format!("#{key:016x}")),
                units: weight,
                role,
                shared: kept && shared[next],
            };
            next += usize::from(kept);
            line
        })
        .collect();
    Side {
        url: page.url.to_string(),
        sentences,
        template_dominated: content.dominated,
        compared_units: compared.iter().map(|&(_, w)| w as u64).sum(),
        total_units: page.sentences.iter().map(|s| s.weight as u64).sum(),
    }
}

fn pair_verdict(a: &Filtered, b: &Filtered, method: &MethodConfig) -> PairFigures {
    let config = &method.verify;
    let tau_ppm = lcs::ppm(config.threshold);
    let sentence_resemblance = lcs::dp_resemblance(&a.content, &b.content);
    let words = |f: &Filtered| f.content.words.to_vec();
    let word_resemblance = lcs::dp_word_resemblance(&words(a), &words(b));
    let verdict = dupflow_operators::verify::compare(config, &a.content, &b.content, tau_ppm);
    let (wa, wb) = (a.content.weight(), b.content.weight());
    let reason = match verdict {
        Verdict::Similar(_) if sentence_resemblance >= config.threshold => format!(
            "similar: the compared sentences resemble at {sentence_resemblance:.3}, at least τ {}",
            config.threshold
        ),
        Verdict::Similar(_) => format!(
            "similar by words: the sentences resemble at {sentence_resemblance:.3}, below τ {}, \
             and the words at {word_resemblance:.3}, at least the word threshold {}",
            config.threshold, config.word_threshold
        ),
        Verdict::CostCapped => format!(
            "dissimilar: the comparison reached max_diff_distance ({}) before deciding",
            config.max_diff_distance
        ),
        Verdict::Dissimilar if wa + wb > 0 && 2.0 * wa.min(wb) as f64 / ((wa + wb) as f64) < config.threshold => format!(
            "dissimilar by length alone: {wa} and {wb} compared units can resemble at {:.3} at most, below τ {}",
            2.0 * wa.min(wb) as f64 / (wa + wb) as f64,
            config.threshold
        ),
        Verdict::Dissimilar if sentence_resemblance >= config.threshold => format!(
            "dissimilar: the compared sentences resemble at {sentence_resemblance:.3}, at least τ \
             {}, but what they share is {:.3} of the longer page, below min_longer_share {} (the \
             longer holds the other and as much again), and the words resemble at \
             {word_resemblance:.3}, below the word threshold {}",
            config.threshold,
            sentence_resemblance * (wa + wb) as f64 / 2.0 / wa.max(wb) as f64,
            config.min_longer_share,
            config.word_threshold
        ),
        Verdict::Dissimilar => format!(
            "dissimilar: the sentences resemble at {sentence_resemblance:.3}, below τ {}, and the \
             words at {word_resemblance:.3}, below the word threshold {}",
            config.threshold, config.word_threshold
        ),
    };
    PairFigures {
        similar: matches!(verdict, Verdict::Similar(_)),
        sentence_resemblance,
        word_resemblance,
        threshold: config.threshold,
        word_threshold: config.word_threshold,
        reason,
    }
}

/// A row of clusters.jsonl, the fields read here.
#[derive(serde::Deserialize)]
struct Row {
    url: String,
    cluster: String,
}

fn in_clusters(
    membership: &Membership,
    pages: &[Page],
    filtered: &BTreeMap<PageId, Filtered>,
    a: &Page,
    b: &Page,
    method: &MethodConfig,
) -> Clusters {
    let Membership { source: name, cluster_of, members } = membership;
    let cluster = |url: &str| cluster_of.get(url).cloned().unwrap_or_default();
    let (cluster_a, cluster_b) = (cluster(&a.url), cluster(&b.url));
    let size = |c: &String| members.get(c).map_or(0, Vec::len);
    let (size_a, size_b) = (size(&cluster_a), size(&cluster_b));
    let same = !cluster_a.is_empty() && cluster_a == cluster_b;
    let (path, no_path) = if cluster_a.is_empty() || cluster_b.is_empty() {
        (None, Some(format!("{name} does not hold both pages")))
    } else if !same {
        (None, Some("the pages are in different clusters: no verified path joins them".into()))
    } else if size_a > MAX_PATH_SEARCH_PAGES {
        (
            None,
            Some(format!(
                "the cluster has {size_a} pages, more than {MAX_PATH_SEARCH_PAGES} searched"
            )),
        )
    } else {
        let by_url: HashMap<&str, &Page> = pages.iter().map(|p| (&*p.url, p)).collect();
        let nodes: Vec<&Page> =
            members[&cluster_a].iter().filter_map(|u| by_url.get(u.as_str()).copied()).collect();
        match shortest_path(&nodes, filtered, a, b, method) {
            Some(path) => (Some(path), None),
            None => (
                None,
                Some(
                    "no chain of pairs within τ joins them among the cluster's pages (the run \
                      joined them through the sibling rule's or an exact family's context)"
                        .into(),
                ),
            ),
        }
    };
    Clusters { cluster_a, size_a, cluster_b, size_b, same, path, no_path }
}

/// Breadth first from `a` over the pairs of `nodes` within τ, each compared when first met.
fn shortest_path(
    nodes: &[&Page],
    filtered: &BTreeMap<PageId, Filtered>,
    a: &Page,
    b: &Page,
    method: &MethodConfig,
) -> Option<Vec<Step>> {
    let tau_ppm = lcs::ppm(method.verify.threshold);
    let content = |p: &Page| &filtered[&p.id].content;
    let index = |p: &Page| nodes.iter().position(|n| n.id == p.id);
    let (start, goal) = (index(a)?, index(b)?);
    let mut came_from: Vec<Option<(usize, f64)>> = vec![None; nodes.len()];
    let mut seen = vec![false; nodes.len()];
    seen[start] = true;
    let mut queue = VecDeque::from([start]);
    while let Some(x) = queue.pop_front() {
        if x == goal {
            break;
        }
        for y in 0..nodes.len() {
            if seen[y] {
                continue;
            }
            let (cx, cy) = (content(nodes[x]), content(nodes[y]));
            // Identical pages (an exact family) are one step at resemblance 1.
            let verdict = if cx == cy {
                Verdict::Similar(1.0)
            } else {
                dupflow_operators::verify::compare(&method.verify, cx, cy, tau_ppm)
            };
            if let Verdict::Similar(s) = verdict {
                seen[y] = true;
                came_from[y] = Some((x, s));
                queue.push_back(y);
            }
        }
    }
    if !seen[goal] {
        return None;
    }
    let mut steps = Vec::new();
    let mut at = goal;
    while let Some((from, similarity)) = came_from[at] {
        steps.push(Step {
            from: nodes[from].url.to_string(),
            to: nodes[at].url.to_string(),
            similarity,
        });
        at = from;
    }
    steps.reverse();
    Some(steps)
}
