//! Deduplicated WARC output (`dupflow dedup`): the input's records copied byte for byte, each
//! record its own gzip member, without the near-duplicates of each cluster's kept page: their
//! response record and the request and metadata records concurrent with it. Or, annotating,
//! every record kept and a `metadata` record after each near-duplicate naming the page kept in
//! its place (`WARC-Refers-To-Target-URI`, `WARC-Refers-To-Date`), the way archives record
//! duplicates. Records that are not clustered pages (warcinfo, non-HTML responses, resources,
//! revisits) are copied unchanged.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use thiserror::Error;

use crate::source::framing::Framer;
use crate::source::urls::UrlIdentity;
use crate::source::{Input, RawRecord, SourceError};
use crate::types::ClusterRow;

/// Which page of a cluster is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Keep {
    /// The earliest capture (by crawl date, then id).
    #[default]
    Earliest,
    /// The longest response (HTTP block bytes), then the earliest.
    Longest,
    /// The shortest URL (then the lexically first, then the earliest): the canonical-looking one.
    ShortestUrl,
    /// The member the cluster's members name canonical (`<link rel="canonical">` or a `Link`
    /// header; the most named, then the earliest), else the earliest.
    Canonical,
}

impl FromStr for Keep {
    type Err = String;
    fn from_str(s: &str) -> Result<Keep, String> {
        match s {
            "earliest" => Ok(Keep::Earliest),
            "longest" => Ok(Keep::Longest),
            "shortest-url" => Ok(Keep::ShortestUrl),
            "canonical" => Ok(Keep::Canonical),
            _ => Err(format!(
                "unknown keep policy {s:?} (earliest, longest, shortest-url, canonical)"
            )),
        }
    }
}

#[derive(Debug, Error)]
pub enum DedupError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{input}: an ARC file; dedup copies WARC records only")]
    Arc { input: String },
    #[error("cannot write {path}: {error}")]
    Write { path: PathBuf, error: io::Error },
}

/// What a first pass learns about the records of the inputs.
#[derive(Debug, Default)]
pub struct Census {
    /// Record id → WARC-Date.
    pub dates: HashMap<String, String>,
    /// Record id → block bytes.
    pub lengths: HashMap<String, u64>,
    /// Record id → the ids it names in WARC-Concurrent-To.
    pub concurrent: HashMap<String, Vec<String>>,
    /// Record id → the canonical URL its page names (`add_page`; normalized).
    pub canonical: HashMap<String, String>,
    /// Record id → its page's URL, for every record that is a page (`add_page`).
    pub pages: HashMap<String, String>,
}

impl Census {
    pub fn add(&mut self, record: &RawRecord) {
        let Some(id) = record.header("WARC-Record-ID") else { return };
        if let Some(date) = record.header("WARC-Date") {
            self.dates.insert(id.to_string(), date.to_string());
        }
        self.lengths.insert(id.to_string(), record.block.len() as u64);
        let concurrent = concurrent_to(record);
        if !concurrent.is_empty() {
            self.concurrent.insert(id.to_string(), concurrent);
        }
    }

    /// A record that is a page: its URL, and with `canonical` the canonical URL it names.
    pub fn add_page(&mut self, record: &RawRecord, max_page_bytes: usize, canonical: bool) {
        let Ok((crate::source::http::Outcome::Page(doc), _)) =
            crate::source::http::interpret(record, max_page_bytes)
        else {
            return;
        };
        if canonical {
            if let Some(url) =
                super::canonical::canonical_of(&doc.url, doc.link.as_deref(), &doc.html)
            {
                self.canonical.insert(doc.record_id.clone(), url);
            }
        }
        self.pages.insert(doc.record_id, doc.url);
    }
}

fn concurrent_to(record: &RawRecord) -> Vec<String> {
    record
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("WARC-Concurrent-To"))
        .map(|(_, v)| v.clone())
        .collect()
}

/// A page left out (a line of `removed.jsonl`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Removed {
    pub url: String,
    pub record_id: String,
    /// The page kept in its place (its cluster's kept page).
    pub kept_url: String,
    pub kept_record_id: String,
    /// Resemblance to `leader_url`, the page it was verified against (1 for a page identical
    /// to its family's representative; for the kept page itself as leader, the resemblance to it).
    pub similarity: f64,
    pub leader_url: String,
    /// Left out before any comparison: its URL is, normalized, the kept page's (`[urls]`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub url_alias: bool,
    /// Left out because the index holds this very record (`dedup --against`): it is its own
    /// kept page and leader.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already_indexed: bool,
    #[serde(skip)]
    pub kept_date: String,
}

/// The pages to leave out under `keep`: every member of a cluster but its kept page.
pub fn plan(rows: &[ClusterRow], keep: Keep, census: &Census) -> Vec<Removed> {
    plan_against(rows, keep, census, |_| false)
}

/// `plan` when some pages come from an index (`indexed`: an earlier crawl's, not written
/// again): a cluster holding one keeps its earliest indexed page, and every page of the new
/// inputs in it is left out; a cluster of new pages alone keeps its page under `keep`.
pub fn plan_against(
    rows: &[ClusterRow],
    keep: Keep,
    census: &Census,
    indexed: impl Fn(&ClusterRow) -> bool,
) -> Vec<Removed> {
    let url_of: HashMap<_, _> = rows.iter().map(|r| (r.page, &*r.url)).collect();
    let mut clusters: BTreeMap<_, Vec<&ClusterRow>> = BTreeMap::new();
    for row in rows {
        clusters.entry(row.assignment.cluster).or_default().push(row);
    }
    let mut removed = Vec::new();
    for members in clusters.values().filter(|m| m.len() > 1) {
        let length = |r: &ClusterRow| census.lengths.get(&*r.record_id).copied().unwrap_or(0);
        // A cluster holding an index page keeps the earliest of those; any other, by `keep`.
        let old = members.iter().filter(|r| indexed(r)).min_by_key(|r| r.page);
        let kept = old
            .or_else(|| match keep {
                Keep::Earliest => members.iter().min_by_key(|r| r.page),
                Keep::Longest => {
                    members.iter().min_by_key(|r| (std::cmp::Reverse(length(r)), r.page))
                }
                Keep::ShortestUrl => members.iter().min_by_key(|r| (r.url.len(), &*r.url, r.page)),
                Keep::Canonical => {
                    // Each member's canonical link is a vote for the member at that URL.
                    let mut votes: HashMap<String, usize> = HashMap::new();
                    for member in members.iter() {
                        if let Some(url) = census.canonical.get(&*member.record_id) {
                            *votes.entry(url.clone()).or_default() += 1;
                        }
                    }
                    let votes_for = |r: &ClusterRow| {
                        votes.get(&super::canonical::normalize(&r.url)).copied().unwrap_or(0)
                    };
                    members.iter().min_by_key(|r| (std::cmp::Reverse(votes_for(r)), r.page))
                }
            })
            .expect("a cluster has members");
        for row in members.iter().filter(|r| r.page != kept.page && !indexed(r)) {
            let (leader, similarity_ppm) = verified_neighbour(row, kept, members);
            removed.push(Removed {
                url: row.url.to_string(),
                record_id: row.record_id.to_string(),
                kept_url: kept.url.to_string(),
                kept_record_id: kept.record_id.to_string(),
                similarity: similarity_ppm as f64 / 1e6,
                leader_url: url_of.get(&leader).map_or_else(String::new, |u| u.to_string()),
                url_alias: false,
                already_indexed: false,
                kept_date: kept_date(census, kept),
            });
        }
    }
    removed.sort_by(|a, b| (&a.url, &a.record_id).cmp(&(&b.url, &b.record_id)));
    removed
}

/// The pages of the inputs that are records an index holds (`indexed`; the census reads the
/// inputs): each is already archived, so it is left out, pointing at itself.
pub fn already_indexed(
    rows: &[ClusterRow],
    census: &Census,
    indexed: impl Fn(&ClusterRow) -> bool,
) -> Vec<Removed> {
    rows.iter()
        .filter(|r| indexed(r) && census.lengths.contains_key(&*r.record_id))
        .map(|row| Removed {
            url: row.url.to_string(),
            record_id: row.record_id.to_string(),
            kept_url: row.url.to_string(),
            kept_record_id: row.record_id.to_string(),
            similarity: 1.0,
            leader_url: row.url.to_string(),
            url_alias: false,
            already_indexed: true,
            kept_date: kept_date(census, row),
        })
        .collect()
}

/// A member of `row`'s cluster that a verification joined it to, never `row` itself, and their
/// resemblance (parts per million): the kept page when the two were compared directly (either
/// joined the cluster through the other), else the page `row` joined through, else (a page
/// others joined through) the most similar of those.
fn verified_neighbour(
    row: &ClusterRow,
    kept: &ClusterRow,
    members: &[&ClusterRow],
) -> (dupflow_operators::PageId, u32) {
    let own = &row.assignment;
    if own.leader == kept.page {
        return (kept.page, own.similarity_ppm);
    }
    if kept.assignment.leader == row.page {
        return (kept.page, kept.assignment.similarity_ppm);
    }
    if own.leader != row.page {
        return (own.leader, own.similarity_ppm);
    }
    members
        .iter()
        .filter(|m| m.assignment.leader == row.page && m.page != row.page)
        .max_by_key(|m| (m.assignment.similarity_ppm, std::cmp::Reverse(m.page)))
        .map_or((kept.page, 0), |m| (m.page, m.assignment.similarity_ppm))
}

/// The crawl date of a kept page: its record's (the census reads the inputs), else its page
/// id's (a page of an index).
fn kept_date(census: &Census, kept: &ClusterRow) -> String {
    census.dates.get(&*kept.record_id).cloned().unwrap_or_else(|| {
        if kept.page.date > 0 {
            crate::source::http::format_warc_date(kept.page.date)
        } else {
            String::new()
        }
    })
}

/// The pages left out as aliases: a capture the run did not hold because a page at another
/// URL of the same identity (`[urls]`: `https` for `http`, a tracking parameter, …) replaced
/// it. It points at that page (and, through `resolve`, at the page kept in its place).
/// Captures of one URL are re-crawls, not aliases: they stay, as they do without
/// normalization. Sorted.
pub fn aliases(rows: &[ClusterRow], census: &Census, identity: &UrlIdentity) -> Vec<Removed> {
    let held: HashSet<&str> = rows.iter().map(|r| &*r.record_id).collect();
    let by_key: HashMap<u64, &ClusterRow> =
        rows.iter().map(|r| (identity.key(&r.url), r)).collect();
    let mut removed: Vec<Removed> = census
        .pages
        .iter()
        .filter(|(id, _)| !held.contains(id.as_str()))
        .filter_map(|(id, url)| {
            let page = by_key.get(&identity.key(url))?;
            (&*page.url != url).then(|| Removed {
                url: url.clone(),
                record_id: id.clone(),
                kept_url: page.url.to_string(),
                kept_record_id: page.record_id.to_string(),
                similarity: 1.0,
                leader_url: page.url.to_string(),
                url_alias: true,
                already_indexed: false,
                kept_date: census.dates.get(&*page.record_id).cloned().unwrap_or_default(),
            })
        })
        .collect();
    removed.sort_by(|a, b| (&a.url, &a.record_id).cmp(&(&b.url, &b.record_id)));
    removed
}

/// Pages left out over several rounds, each pointing at the page finally kept in its place
/// (a page kept in one round and left out in a later one passes its place on), sorted.
pub fn resolve(removed: Vec<Removed>) -> Vec<Removed> {
    let by_record: HashMap<String, Removed> =
        removed.iter().map(|r| (r.record_id.clone(), r.clone())).collect();
    let mut out: Vec<Removed> = removed
        .into_iter()
        .map(|mut r| {
            let mut hops = 0;
            // A page kept as itself (an indexed record) ends the chain.
            while let Some(next) =
                by_record.get(&r.kept_record_id).filter(|n| n.kept_record_id != n.record_id)
            {
                r.kept_url.clone_from(&next.kept_url);
                r.kept_record_id.clone_from(&next.kept_record_id);
                r.kept_date.clone_from(&next.kept_date);
                hops += 1;
                if hops > by_record.len() {
                    break;
                }
            }
            r
        })
        .collect();
    out.sort_by(|a, b| (&a.url, &a.record_id).cmp(&(&b.url, &b.record_id)));
    out
}

/// Counts of one written file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    pub records_in: u64,
    /// Records written: the input's kept records and the metadata records added (`annotations`).
    pub records_out: u64,
    /// Responses left out, and the request/metadata records concurrent with them.
    pub pages_dropped: u64,
    pub concurrent_dropped: u64,
    pub annotations: u64,
    /// Damaged records skipped (they cannot be copied), by kind.
    pub damaged: BTreeMap<&'static str, u64>,
}

/// Writes `input` deduplicated to `path` (atomically: a temporary file, then a rename).
pub fn write_warc(
    input: &Input,
    path: &Path,
    removed: &[Removed],
    census: &Census,
    annotate: bool,
    max_record_bytes: u64,
    reading: &dyn Fn(crate::source::decode::ByteCounter),
) -> Result<Written, DedupError> {
    let by_id: HashMap<&str, &Removed> =
        removed.iter().map(|r| (r.record_id.as_str(), r)).collect();
    // A removed response takes the records it names as concurrent (wget's request) with it,
    // and the records naming it (metadata written after it) are found as they come.
    let kept: HashSet<&str> = removed.iter().map(|r| r.kept_record_id.as_str()).collect();
    let mut gone: HashSet<&str> = by_id.keys().copied().collect();
    if !annotate {
        for id in by_id.keys() {
            for other in census.concurrent.get(*id).into_iter().flatten() {
                gone.insert(other.as_str());
            }
        }
        // A kept capture stays, even if a left-out one names it as concurrent.
        for id in &kept {
            gone.remove(id);
        }
    }
    let tmp = crate::files::Scratch::new(path.with_extension("tmp"));
    let fail = |error| DedupError::Write { path: path.to_path_buf(), error };
    let mut out = BufWriter::new(File::create(tmp.path()).map_err(fail)?);
    let mut written = Written::default();
    let decoder = input.open()?;
    reading(decoder.counter());
    let mut framer = Framer::new(decoder, max_record_bytes).with_raw_headers();
    while let Some(item) = framer.next_record() {
        let record = match item {
            Ok(record) => record,
            Err(error) => {
                *written.damaged.entry(error.kind.code()).or_default() += 1;
                continue;
            }
        };
        written.records_in += 1;
        let Some(header) = &record.raw_header else {
            return Err(DedupError::Arc { input: input.name() });
        };
        let id = record.header("WARC-Record-ID").unwrap_or("");
        let page = by_id.get(id);
        if !annotate {
            if page.is_some() {
                written.pages_dropped += 1;
                continue;
            }
            if gone.contains(id)
                || (concurrent_to(&record).iter().any(|c| by_id.contains_key(c.as_str()))
                    && !kept.contains(id))
            {
                written.concurrent_dropped += 1;
                continue;
            }
        }
        member(&mut out, &[header, &record.block, b"\r\n\r\n"]).map_err(fail)?;
        written.records_out += 1;
        if let (true, Some(removed)) = (annotate, page) {
            member(&mut out, &[&annotation(&record, removed)]).map_err(fail)?;
            written.records_out += 1;
            written.annotations += 1;
        }
    }
    let file = out.into_inner().map_err(|e| fail(e.into_error()))?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(tmp.path(), path).map_err(fail)?;
    tmp.keep();
    Ok(written)
}

/// One gzip member holding `parts` (a record).
fn member(out: &mut impl Write, parts: &[&[u8]]) -> io::Result<()> {
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    for part in parts {
        gz.write_all(part)?;
    }
    gz.finish().map(|_| ())
}

/// The metadata record that marks `record` as a near-duplicate of the page kept in its place.
fn annotation(record: &RawRecord, removed: &Removed) -> Vec<u8> {
    let body = serde_json::json!({
        "near_duplicate_of": removed.kept_url,
        "similarity": removed.similarity,
        "leader_url": removed.leader_url,
    })
    .to_string();
    let date = record.header("WARC-Date").unwrap_or("");
    // A fixed id per annotated record: the same input gives the same output.
    let seed = crate::source::current::url_key(&removed.record_id);
    let id = format!(
        "<urn:uuid:{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}>",
        seed >> 32,
        (seed >> 16) & 0xffff,
        seed & 0xfff,
        (seed >> 12) & 0xfff,
        seed & 0xffff_ffff_ffff
    );
    let mut head = format!(
        "WARC/1.0\r\nWARC-Type: metadata\r\nWARC-Record-ID: {id}\r\nWARC-Date: {date}\r\nWARC-Target-URI: {}\r\n\
         WARC-Concurrent-To: {}\r\nWARC-Refers-To: {}\r\nWARC-Refers-To-Target-URI: {}\r\n",
        removed.url, removed.record_id, removed.kept_record_id, removed.kept_url
    );
    if !removed.kept_date.is_empty() {
        head.push_str(&format!("WARC-Refers-To-Date: {}\r\n", removed.kept_date));
    }
    head.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes.extend_from_slice(b"\r\n\r\n");
    bytes
}

/// The output file name for an input: its name as a `.warc.gz`, made unique among `taken`.
pub fn output_name(input: &Input, taken: &mut HashSet<String>) -> String {
    let name = input.name();
    let base = Path::new(name.trim_start_matches("(embedded) "))
        .file_name()
        .map_or("stdin".into(), |n| n.to_string_lossy().to_string());
    let mut stem = base.as_str();
    for suffix in [".wacz", ".gz", ".lz4", ".warc", ".arc"] {
        stem = stem.strip_suffix(suffix).unwrap_or(stem);
    }
    let stem = if stem.is_empty() || stem == "-" { "stdin" } else { stem };
    let mut candidate = format!("{stem}.warc.gz");
    let mut n = 1;
    while !taken.insert(candidate.clone()) {
        n += 1;
        candidate = format!("{stem}-{n}.warc.gz");
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: &str, id: &str, concurrent: Option<&str>, body: &str) -> Vec<u8> {
        let concurrent =
            concurrent.map_or(String::new(), |c| format!("WARC-Concurrent-To: {c}\r\n"));
        format!(
            "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: {id}\r\nWARC-Date: 2026-01-01T00:00:00Z\r\n{concurrent}Content-Length: {}\r\n\r\n{body}\r\n\r\n",
            body.len()
        )
        .into_bytes()
    }

    fn ids(path: &Path) -> Vec<String> {
        let mut framer = Framer::new(Input::File(path.to_path_buf()).open().unwrap(), 1 << 20);
        std::iter::from_fn(|| framer.next_record())
            .map(|r| r.unwrap().header("WARC-Record-ID").unwrap().to_string())
            .collect()
    }

    #[test]
    fn a_left_out_page_takes_its_request_and_metadata_but_never_a_kept_capture() {
        let dir = std::env::temp_dir().join(format!("dupflow-dedup-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.warc");
        let mut warc = record("warcinfo", "<i>", None, "software: test");
        warc.extend(record("response", "<k>", None, "HTTP/1.1 200 OK\r\n\r\nkept"));
        warc.extend(record("request", "<q>", None, "GET / HTTP/1.1\r\n\r\n"));
        // The left-out response names its request and (oddly) the kept capture as concurrent.
        warc.extend(record("response", "<r>", Some("<q>"), "HTTP/1.1 200 OK\r\n\r\ncopy"));
        warc.extend(record("metadata", "<m>", Some("<r>"), "outlinks"));
        warc.extend(record("metadata", "<n>", Some("<k>"), "outlinks"));
        std::fs::write(&input, &warc).unwrap();
        let input = Input::File(input);
        let mut census = Census::default();
        crate::source::read_records(&input, 1 << 20, |r| census.add(&r.unwrap())).unwrap();
        census.concurrent.get_mut("<r>").unwrap().push("<k>".into());
        let removed = vec![Removed {
            url: "http://h/r".into(),
            record_id: "<r>".into(),
            kept_url: "http://h/k".into(),
            kept_record_id: "<k>".into(),
            similarity: 1.0,
            leader_url: "http://h/k".into(),
            url_alias: false,
            already_indexed: false,
            kept_date: "2026-01-01T00:00:00Z".into(),
        }];
        let out = dir.join("out.warc.gz");
        let written = write_warc(&input, &out, &removed, &census, false, 1 << 20, &|_| {}).unwrap();
        assert_eq!(ids(&out), ["<i>", "<k>", "<n>"]);
        assert_eq!((written.pages_dropped, written.concurrent_dropped), (1, 2));
        let annotated = dir.join("annotated.warc.gz");
        write_warc(&input, &annotated, &removed, &census, true, 1 << 20, &|_| {}).unwrap();
        let all = ids(&annotated);
        assert_eq!(all.len(), 7);
        assert_eq!(
            &all[..4],
            ["<i>", "<k>", "<q>", "<r>"],
            "every record kept, the annotation after <r>"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
