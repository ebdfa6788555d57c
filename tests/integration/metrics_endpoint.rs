//! /metrics during a replay, parsed by a real Prometheus text-format parser, agrees with the run:
//! records read equal the records in the input, errors the planted bad records, clusters the
//! output file.

use crate::common;

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
    // The run has ended: each structure's bytes as it ended.
    for structure in ["groups", "members", "holders", "filtered", "components", "assignments"] {
        let bytes = value(&scrape, "dupflow_state_bytes", Some(("structure", structure)));
        assert!(bytes > 0.0, "{structure}: {bytes}");
    }

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
fn api_finds_a_page_and_compares_it_with_the_page_it_joined_through() {
    let out = common::temp_dir("find");
    let served = common::serve::serve(&[], &out);
    let get = |path: &str| -> serde_json::Value {
        serde_json::from_str(&common::serve::get(&served.address, path)).unwrap()
    };
    let found = get("/api/find?url=river");
    let matches = found["matches"].as_array().unwrap();
    assert_eq!(found["total"], 3, "{found}");
    let archive = "http://gazette.example/archive/2026/river";
    let leader = "http://gazette.example/news/river-rises";
    let row = matches.iter().find(|m| m["url"] == archive).expect("the archive copy is found");
    assert_eq!((row["size"].as_u64(), row["leader_url"].as_str()), (Some(3), Some(leader)));
    // The exact URL comes first, percent-encoded or not.
    let exact = get("/api/find?url=http%3A%2F%2Fgazette.example%2Fnews%2Friver-rises");
    assert_eq!(exact["matches"][0]["url"], leader, "{exact}");

    let pair = get(&format!("/api/compare?a={archive}&b={leader}"));
    assert_eq!(pair["verdict"]["similar"], true, "{pair}");
    assert!((pair["verdict"]["sentence_resemblance"].as_f64().unwrap() - 0.898).abs() < 0.001);
    assert_eq!(pair["clusters"]["same"], true);
    assert_eq!(pair["clusters"]["path"][0]["to"], leader);
    let shared = |side: &str| {
        pair[side]["sentences"].as_array().unwrap().iter().filter(|l| l["shared"] == true).count()
    };
    assert_eq!(shared("a"), shared("b"));
    assert!(shared("a") >= 7, "{pair}");

    // A page of another cluster: the verdict, and no path.
    let apart = get(&format!("/api/compare?a={archive}&b=http://gazette.example/news/chess"));
    assert_eq!(apart["verdict"]["similar"], false);
    assert_eq!(apart["clusters"]["same"], false);
    assert!(apart["clusters"]["no_path"].as_str().unwrap().contains("different clusters"));
    let missing = get("/api/compare?a=http://nowhere.example/&b=http://gazette.example/news/chess");
    assert!(missing["error"].as_str().unwrap().contains("is not a page of the inputs"));
    assert!(get("/api/compare?a=x")["error"].as_str().unwrap().contains("a= and b="));
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
