//! /metrics during a replay, parsed by a real Prometheus text-format parser, agrees with the run:
//! records read equal the records in the input, errors the planted bad records, clusters the
//! output file.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use prometheus_parse::{Scrape, Value};

fn value(scrape: &Scrape, name: &str, label: Option<(&str, &str)>) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
        .map(|s| match s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            _ => 0.0,
        })
        .sum()
}

#[test]
fn metrics_agree_with_the_run() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/malformed");
    let bad = fixtures.join("bad-content-length.warc");
    let garbage = fixtures.join("garbage-between.warc");
    let out = common::temp_dir("metrics");
    let served = common::serve::serve(&[bad.to_str().unwrap(), garbage.to_str().unwrap()], &out);
    let text = common::serve::get(&served.address, "/metrics");
    let scrape =
        Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("valid exposition format");

    // 3 good records in each file; 2 bad lengths and 2 stretches of garbage planted.
    assert_eq!(value(&scrape, "dupflow_records_total", None), 6.0);
    assert_eq!(value(&scrape, "dupflow_records_total", Some(("type", "response"))), 6.0);
    assert_eq!(
        value(&scrape, "dupflow_record_errors_total", Some(("kind", "bad_content_length"))),
        2.0
    );
    assert_eq!(
        value(&scrape, "dupflow_record_errors_total", Some(("kind", "garbage_between_records"))),
        2.0
    );
    assert_eq!(value(&scrape, "dupflow_pages_total", None), 6.0);
    assert!(value(&scrape, "dupflow_input_read_bytes_total", None) > 2000.0);

    let lines = std::fs::read_to_string(out.join("clusters.jsonl")).unwrap();
    let clusters: BTreeSet<String> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["cluster"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(value(&scrape, "dupflow_clusters", None), clusters.len() as f64);
    assert_eq!(value(&scrape, "dupflow_pages_held", None), lines.lines().count() as f64);
    // Histograms and help text are there.
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "dupflow_stage_seconds" && matches!(s.value, Value::Histogram(_))));
    let docs: HashMap<&String, &String> = scrape.docs.iter().collect();
    assert!(docs.keys().any(|k| k.as_str() == "dupflow_records_total"));
}

#[test]
fn api_lists_clusters_and_members() {
    let out = common::temp_dir("api");
    let served = common::serve::serve(&[], &out);
    let clusters: serde_json::Value =
        serde_json::from_str(&common::serve::get(&served.address, "/api/clusters?limit=3"))
            .unwrap();
    let largest = &clusters["clusters"][0];
    assert_eq!(largest["size"], 3, "{clusters}");
    let id = largest["cluster"].as_str().unwrap();
    let members: serde_json::Value =
        serde_json::from_str(&common::serve::get(&served.address, &format!("/api/clusters/{id}")))
            .unwrap();
    assert_eq!(members["members"].as_array().unwrap().len(), 3);
    assert!(common::serve::get(&served.address, "/").contains("<title>dupflow</title>"));
}

#[test]
fn post_api_check_answers_against_the_pages_the_run_holds() {
    let out = common::temp_dir("check");
    let served = common::serve::serve(&[], &out);
    let body = "The Saturday market returns to the square next month with forty stalls and a new bakery.\n\
                A grant from the county pays for two more librarians and longer evening hours.\n\
                Something entirely new that nobody wrote before in this small town newspaper archive.\n";
    let answer: serde_json::Value = serde_json::from_str(&common::serve::post(
        &served.address,
        "/api/check?threshold=0.9",
        body,
    ))
    .unwrap();
    assert_eq!(answer["corpus_pages"], 8, "{answer}");
    assert_eq!(answer["sentences"], 3);
    assert_eq!(answer["duplicate_sentences"], 2);
    assert_eq!(answer["verdict"], "new");
    assert_eq!(answer["patchwork"], true);
    assert_eq!(answer["cover"].as_array().unwrap().len(), 2);
}
