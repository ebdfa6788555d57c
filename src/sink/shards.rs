//! Sharded outputs of a cluster run, merged: `clusters-I-of-N.jsonl` (and `changes`,
//! `revisits`) of every process into the one file a single process writes, line for line.
//!
//! A cluster is whole in one shard, and every shard is sorted as the single file is
//! (`clusters` by cluster id then URL, `changes` by epoch then URL, `revisits` by URL then
//! date), so the merge is a sort of the shards' lines by the same key.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Shard;

/// What `merge` wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Merged {
    /// Processes whose shards were found (N of `-of-N`).
    pub shards: usize,
    /// (file written, lines) for each output merged.
    pub files: Vec<(PathBuf, usize)>,
}

/// The shard count N of the `clusters-*-of-N.jsonl` files in `dir`; an error when there are
/// none, when two counts are mixed, or when a shard is missing.
fn shard_count(dir: &Path) -> io::Result<usize> {
    let mut counts = std::collections::BTreeMap::<usize, Vec<usize>>::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix("clusters-").and_then(|r| r.strip_suffix(".jsonl"))
        else {
            continue;
        };
        let Some((index, count)) = rest.split_once("-of-") else { continue };
        if let (Ok(index), Ok(count)) = (index.parse::<usize>(), count.parse::<usize>()) {
            counts.entry(count).or_default().push(index);
        }
    }
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
    match counts.len() {
        0 => return Err(invalid(format!("{}: no clusters-I-of-N.jsonl shards", dir.display()))),
        1 => {}
        _ => {
            return Err(invalid(format!(
                "{}: shards of runs with different process counts: {:?}",
                dir.display(),
                counts.keys()
            )))
        }
    }
    let (count, mut found) = counts.into_iter().next().expect("one count");
    found.sort_unstable();
    let missing: Vec<usize> = (0..count).filter(|i| found.binary_search(i).is_err()).collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "{}: shards {missing:?} of {count} are missing",
            dir.display()
        )));
    }
    Ok(count)
}

/// The sort key of a line of output `stem`, as the single-process writer orders its lines.
fn key(stem: &str, line: &Value) -> (u64, String, String, String) {
    let text = |field: &str| line[field].as_str().unwrap_or("").to_string();
    match stem {
        "clusters" => (0, text("cluster"), text("url"), String::new()),
        "changes" => (
            line["epoch"].as_u64().unwrap_or(0),
            text("url"),
            line["diff"].to_string(),
            text("cluster"),
        ),
        _ => (0, text("url"), text("date"), String::new()),
    }
}

/// Merges the shards in `dir` into `clusters.jsonl`, `changes.jsonl` and `revisits.jsonl`
/// there (each written atomically); the shards stay.
pub fn merge(dir: &Path) -> io::Result<Merged> {
    let shards = shard_count(dir)?;
    let mut merged = Merged { shards, files: Vec::new() };
    for stem in ["clusters", "changes", "revisits"] {
        let mut lines: Vec<((u64, String, String, String), String)> = Vec::new();
        let mut present = false;
        for index in 0..shards {
            let path = dir.join(Shard { index, count: shards }.file(stem));
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == io::ErrorKind::NotFound && stem != "clusters" => continue,
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            };
            present = true;
            for (n, line) in text.lines().enumerate() {
                let value: Value = serde_json::from_str(line).map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}:{}: {e}", path.display(), n + 1),
                    )
                })?;
                lines.push((key(stem, &value), line.to_string()));
            }
        }
        if !present {
            continue;
        }
        // Stable: lines with equal keys keep their shard's order.
        lines.sort_by(|a, b| a.0.cmp(&b.0));
        let path = dir.join(Shard::WHOLE.file(stem));
        let raw: Vec<&serde_json::value::RawValue> =
            lines.iter().map(|(_, l)| serde_json::from_str(l).expect("parsed above")).collect();
        super::write_jsonl(&path, &raw)?;
        merged.files.push((path, lines.len()));
    }
    Ok(merged)
}
