//! The run summary's `state:` and `rows:` lines: what each structure that grows with the pages
//! holds at the end of the run, walked by its operator (and the clusters' rows, by the live
//! view), on a real crawl at 1 and 2 workers.

use std::path::Path;

use crate::common::{dupflow, temp_dir};

/// `(name, MB, bytes a page)` of each structure on the `state:` line, and its total.
fn state_line(summary: &str) -> (Vec<(String, f64, u64)>, f64) {
    let line = summary
        .lines()
        .find(|l| l.starts_with("state:"))
        .unwrap_or_else(|| panic!("the summary has a state line: {summary}"));
    let (head, parts) = line.split_once(": ").and_then(|(_, rest)| rest.split_once(": ")).unwrap();
    let total: f64 = head.split_whitespace().next().unwrap().parse().unwrap();
    let parts = parts
        .split(", ")
        .map(|part| {
            // "groups 7.0 MB (703)"
            let words: Vec<&str> = part.split_whitespace().collect();
            let per_page = words[3].trim_matches(|c| c == '(' || c == ')').parse().unwrap();
            (words[0].to_string(), words[1].parse().unwrap(), per_page)
        })
        .collect();
    (parts, total)
}

#[test]
fn the_summary_states_the_bytes_of_each_structure_at_the_end() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/blog/hugo.warc.gz");
    let dir = temp_dir("footprint");
    for workers in ["1", "2"] {
        let output = dupflow()
            .args(["run", "--workers", workers, "--out"])
            .arg(dir.join(workers))
            .arg(&fixture)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let summary = String::from_utf8(output.stdout).unwrap();
        let (parts, total) = state_line(&summary);
        let names: Vec<&str> = parts.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "groups",
                "members",
                "verdicts",
                "holders",
                "filtered",
                "edges",
                "siblings",
                "components",
                "families",
                "assignments",
                "joins"
            ],
            "{summary}"
        );
        for (name, _, per_page) in &parts {
            // Every structure holds something for a crawl of near-copies, and none more than a
            // few KB a page of it.
            assert!(*per_page > 0 && *per_page < 8_000, "{workers}: {name}: {summary}");
        }
        let sum: f64 = parts.iter().map(|p| p.1).sum();
        assert!(
            (sum - total).abs() <= 0.1 * parts.len() as f64,
            "{workers}: the parts add up: {summary}"
        );
        // The clusters' rows the process writes from: a URL and a record id a page at least,
        // and the members of its clusters.
        let rows = summary
            .lines()
            .find(|l| l.starts_with("rows:"))
            .unwrap_or_else(|| panic!("the summary has a rows line: {summary}"));
        let per_page: u64 = rows
            .split_once(" (")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("bytes a page on the rows line: {rows}"));
        assert!((100..2_000).contains(&per_page), "{workers}: {rows}");
    }
}
