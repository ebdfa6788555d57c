//! Sinks: the cluster snapshot and the change stream, written atomically.
//!
//! `clusters.jsonl` has one object per page (singletons included), sorted by cluster then URL;
//! `changes.jsonl` every membership change `{epoch, url, cluster, diff}` in epoch order;
//! `revisits.jsonl` the revisit records seen. Each file is written to a temporary name in the
//! same directory and renamed into place, so a reader never sees a half-written file.

pub mod canonical;
pub mod dedup;
pub mod shards;
pub mod stream;
pub mod text;

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use dupflow_operators::PageId;

use crate::types::{ClusterRow, RunOutput};

/// One line of clusters.jsonl, made from a row and the rows it names (`cluster_lines`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ClusterLine<'a> {
    pub url: &'a str,
    pub record_id: &'a str,
    /// Stable cluster id: the hash part of the anchor's id (the member with the smallest hash of
    /// URL and record id; see `PageId::anchor_key`).
    pub cluster: String,
    /// URL of the anchor (the member the id is taken from).
    pub cluster_url: &'a str,
    pub size: usize,
    /// Resemblance to the page it was verified against (its leader); 1 for a leader.
    pub similarity: f64,
    pub leader_url: &'a str,
}

/// One line of changes.jsonl.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ChangeLine {
    pub epoch: u64,
    pub url: String,
    pub cluster: String,
    pub diff: isize,
}

/// Counts over the final clusters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterSummary {
    pub pages: usize,
    pub clusters: usize,
    pub multi_page_clusters: usize,
    pub pages_in_multi_page_clusters: usize,
    pub largest_cluster: usize,
}

/// The lines of clusters.jsonl for `rows`: a line a page, sorted by cluster id then URL, the
/// order `dupflow merge` restores from shards. Each line is made as it is taken: beside the
/// rows, the lines hold the rows' order and a map of URLs and of cluster sizes (~60 bytes a
/// page), not the file's text.
pub fn cluster_lines<'a>(rows: &[&'a ClusterRow]) -> impl Iterator<Item = ClusterLine<'a>> {
    let url_of: HashMap<PageId, &'a str> = rows.iter().map(|r| (r.page, &*r.url)).collect();
    let mut sizes: HashMap<PageId, usize> = HashMap::new();
    for row in rows {
        *sizes.entry(row.assignment.cluster).or_default() += 1;
    }
    // The id as written is the hash in fixed-width hex, so its order is the hash's; a stable
    // sort keeps the rows' own order between equal keys.
    let mut order: Vec<&'a ClusterRow> = rows.to_vec();
    order.sort_by(|a, b| {
        (a.assignment.cluster.hash, &a.url).cmp(&(b.assignment.cluster.hash, &b.url))
    });
    order.into_iter().map(move |row| {
        let a = row.assignment;
        let url = |id: &PageId| url_of.get(id).copied().unwrap_or("");
        ClusterLine {
            url: &row.url,
            record_id: &row.record_id,
            cluster: a.cluster.to_string(),
            cluster_url: url(&a.cluster),
            size: sizes[&a.cluster],
            similarity: (a.similarity_ppm as f64 / 1e6 * 1e4).round() / 1e4,
            leader_url: url(&a.leader),
        }
    })
}

/// Writes `rows` to `path` as clusters.jsonl (atomically), a line at a time (`cluster_lines`).
pub fn write_clusters(path: &Path, rows: &[&ClusterRow]) -> io::Result<()> {
    let lines = cluster_lines(rows);
    crate::files::write_with(path, |file| {
        for line in lines {
            serde_json::to_writer(&mut *file, &line)?;
            file.write_all(b"\n")?;
        }
        Ok(())
    })
}

pub fn summarize(rows: &[ClusterRow]) -> ClusterSummary {
    let mut sizes: HashMap<PageId, usize> = HashMap::new();
    for row in rows {
        *sizes.entry(row.assignment.cluster).or_default() += 1;
    }
    let multi: Vec<usize> = sizes.values().copied().filter(|&s| s > 1).collect();
    ClusterSummary {
        pages: rows.len(),
        clusters: sizes.len(),
        multi_page_clusters: multi.len(),
        pages_in_multi_page_clusters: multi.iter().sum(),
        largest_cluster: sizes.values().copied().max().unwrap_or(0),
    }
}

/// The share of the outputs one process writes. One process writes `clusters.jsonl`; process 1
/// of 4 writes `clusters-00001-of-00004.jsonl`, the rows of the clusters whose id's hash is 1
/// modulo 4 (so a cluster is whole in one shard), and likewise for `changes` and `revisits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// The file name of output `stem` (`clusters`, `changes`, ...) for this shard.
    pub fn file(&self, stem: &str) -> String {
        if self.count <= 1 {
            format!("{stem}.jsonl")
        } else {
            format!("{stem}-{:05}-of-{:05}.jsonl", self.index, self.count)
        }
    }
}

/// Writes `lines` as JSON lines to `path` atomically (no temporary file is left on error).
pub fn write_jsonl<T: Serialize>(path: &Path, lines: &[T]) -> io::Result<()> {
    crate::files::write_with(path, |file| {
        for line in lines {
            serde_json::to_writer(&mut *file, line)?;
            file.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// One line of spans.jsonl: a page with sentences already on an earlier page.
#[derive(Debug, Serialize)]
pub struct SpanLine {
    pub url: String,
    /// Weight of its duplicated sentences over its weight (template sentences left out).
    pub share: f64,
    pub spans: Vec<SpanOut>,
}

#[derive(Debug, Serialize)]
pub struct SpanOut {
    /// Offsets `[from, to)` in the page's sentences (template sentences left out).
    pub from: u32,
    pub to: u32,
    /// The earliest page holding these sentences.
    pub first_url: String,
}

/// spans.jsonl lines, by URL.
pub fn span_lines(
    rows: &[&ClusterRow],
    shares: &[(PageId, dupflow_operators::cluster::share::Shared)],
) -> Vec<SpanLine> {
    let urls: HashMap<PageId, &str> = rows.iter().map(|r| (r.page, &*r.url)).collect();
    let url_of = |id: &PageId| urls.get(id).copied().unwrap_or("").to_string();
    let mut lines: Vec<SpanLine> = shares
        .iter()
        .map(|(id, shared)| SpanLine {
            url: url_of(id),
            share: shared.share_ppm as f64 / 1e6,
            spans: shared
                .spans
                .iter()
                .map(|s| SpanOut { from: s.from, to: s.to, first_url: url_of(&s.first) })
                .collect(),
        })
        .collect();
    lines.sort_by(|a, b| a.url.cmp(&b.url));
    lines
}

/// Writes this shard's clusters.jsonl (from `rows`, the final state), spans.jsonl (one process
/// only) and revisits.jsonl into `dir` (changes.jsonl is written by the run, epoch by epoch).
pub fn write_outputs(
    dir: &Path,
    output: &RunOutput,
    rows: &[ClusterRow],
    shard: Shard,
) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let rows: Vec<&ClusterRow> = rows.iter().collect();
    write_clusters(&dir.join(shard.file("clusters")), &rows)?;
    if shard.count <= 1 {
        write_jsonl(&dir.join("spans.jsonl"), &span_lines(&rows, &output.shares))?;
    }
    #[derive(Serialize)]
    struct RevisitLine<'a> {
        url: &'a str,
        date: &'a str,
        refers_to_uri: Option<&'a str>,
        refers_to_date: Option<&'a str>,
    }
    let revisits: Vec<RevisitLine> = output
        .revisits
        .iter()
        .map(|r| RevisitLine {
            url: &r.url,
            date: &r.date,
            refers_to_uri: r.refers_to_uri.as_deref(),
            refers_to_date: r.refers_to_date.as_deref(),
        })
        .collect();
    write_jsonl(&dir.join(shard.file("revisits")), &revisits)
}
