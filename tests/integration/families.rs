//! Families of any size: 20,000 identical stub pages of one site (the soft-404 or "no longer
//! distributed" page a crawler meets by the thousand) and a few hundred near-copies of it are
//! one cluster, though the family is far beyond `max_fingerprint_pages` and `max_set_pages`
//! (1,000 each) and its sentences are the site's most frequent. Unrelated pages stay apart.
//! And the other side: 500 sibling API pages, 90% of each generated blocks shared with some of
//! its siblings, with text of their own that differs, stay 500 clusters.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::synth::{warc_response, Corpus};
use dupflow::config::PipelineConfig;
use dupflow::dataflow::{self, Feed, RunOptions};
use dupflow::source::Input;

const STUBS: usize = 20_000;
const NEAR: usize = 300;
const OTHERS: usize = 40;

fn nav() -> String {
    [
        "Home of the archive project.",
        "Browse the editions by year and by title.",
        "Contact the editors about missing volumes.",
    ]
    .iter()
    .map(|s| format!("<li>{s}</li>"))
    .collect()
}

/// The stub; a near-copy carries a notice line above the stub's text (its main content is the
/// stub's plus one short line: word-level resemblance about 0.9).
fn stub(notice: Option<usize>) -> String {
    let notice = notice.map_or(String::new(), |n| {
        format!("<p>Notice {n}: withdrawn at the publisher's request.</p>")
    });
    format!(
        "<html><head><title>Edition unavailable</title></head><body><nav><ul>{}</ul></nav><main>{notice}\
         <p>This edition is no longer distributed by the archive.</p>\
         <p>Please consult the current edition of the series for the complete text.</p>\
         <p>Older printings remain available to registered libraries on request.</p>\
         <p>Corrections printed in the later editions are listed in the errata of the series.</p>\
         <p>Scans of the first printing were never made public for copyright reasons.</p>\
         <p>Questions about the series go to the editors through the contact form of the archive.</p>\
         </main></body></html>",
        nav()
    )
}

#[test]
fn twenty_thousand_identical_pages_and_their_near_copies_are_one_cluster() {
    let corpus = Corpus::new(11, OTHERS);
    let mut warc = Vec::new();
    let mut record = 0;
    let mut family = BTreeSet::new();
    for i in 0..STUBS + NEAR {
        record += 1;
        let url = format!("http://archive.example/edition/{i}");
        let html = stub((i >= STUBS).then_some(i));
        warc.extend(warc_response(&url, i as u64 % 86_400, record, &html));
        family.insert(url);
    }
    for b in 0..OTHERS {
        record += 1;
        let html = corpus.html(b, 0);
        warc.extend(warc_response(
            &format!("http://archive.example/essay/{b}"),
            b as u64,
            record,
            &html,
        ));
    }
    let path =
        std::env::temp_dir().join(format!("dupflow-test-{}-families.warc", std::process::id()));
    std::fs::write(&path, warc).unwrap();
    let feed = Feed::Inputs(vec![Input::File(path.clone())]);
    let output = dataflow::run(RunOptions::new(feed, PipelineConfig::default(), 2))
        .expect("the run completes");
    let _ = std::fs::remove_file(&path);

    assert_eq!(output.rows.len(), STUBS + NEAR + OTHERS, "every page has a row");
    let mut clusters: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for row in &output.rows {
        clusters.entry(row.assignment.cluster.to_string()).or_default().insert(&*row.url);
    }
    let holding: BTreeSet<&String> = clusters
        .iter()
        .filter(|(_, urls)| urls.iter().any(|u| family.contains(*u)))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(holding.len(), 1, "the family is split into {} clusters", holding.len());
    let cluster = &clusters[*holding.iter().next().unwrap()];
    assert_eq!(cluster.len(), STUBS + NEAR, "the family's cluster holds exactly the family");
    // The essays are distinct texts: each alone.
    assert_eq!(clusters.len(), 1 + OTHERS);
}

/// A sentence of 10 to 13 words from the synthetic vocabulary, drawn by `rng`.
fn words(rng: &mut common::synth::Rng) -> String {
    const W: &[&str] = &[
        "alpha", "beta", "gamma", "delta", "epsilon", "theta", "kappa", "lambda", "sigma", "omega",
        "vector", "buffer", "stream", "socket", "parser", "cursor", "token", "index", "bucket",
        "frame", "packet", "window",
    ];
    let n = 10 + rng.below(4);
    (0..n).map(|_| W[rng.below(W.len() as u64) as usize]).collect::<Vec<_>>().join(" ") + "."
}

#[test]
fn five_hundred_siblings_sharing_generated_blocks_stay_apart() {
    let mut rng = common::synth::Rng(0x5eed);
    let sidebar: String =
        (0..12).map(|i| format!("<li>Module item {i}: {}</li>", words(&mut rng))).collect();
    let lists: Vec<String> = (0..10)
        .map(|g| {
            (0..15)
                .map(|j| format!("<p>Implements trait {g}-{j}: {}</p>", words(&mut rng)))
                .collect()
        })
        .collect();
    let mut warc = Vec::new();
    let mut own_share = 0.0;
    for n in 0..500usize {
        let own: String =
            (0..2).map(|_| format!("<p>Struct {n}: {}</p>", words(&mut rng))).collect();
        own_share +=
            own.len() as f64 / (own.len() + lists[n / 50].len() + sidebar.len()) as f64 / 500.0;
        let html = format!(
            "<html><head><title>Struct {n}</title></head><body><nav><ul>{sidebar}</ul></nav><main>{own}<section>{}</section></main></body></html>",
            lists[n / 50]
        );
        warc.extend(warc_response(
            &format!("http://api.example/struct.S{n}.html"),
            n as u64,
            n as u64 + 1,
            &html,
        ));
    }
    assert!(own_share < 0.12, "own text is {own_share:.2} of the page");
    assert_eq!(
        clusters_of(warc, "siblings", 500),
        500,
        "siblings were merged on their generated blocks"
    );
}

/// The number of clusters a default run (2 workers) makes of `warc`, which holds `pages` pages.
fn clusters_of(warc: Vec<u8>, name: &str, pages: usize) -> usize {
    let path =
        std::env::temp_dir().join(format!("dupflow-test-{}-{name}.warc", std::process::id()));
    std::fs::write(&path, warc).unwrap();
    let output = dataflow::run(RunOptions::new(
        Feed::Inputs(vec![Input::File(path.clone())]),
        PipelineConfig::default(),
        2,
    ))
    .unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(output.rows.len(), pages);
    output.rows.iter().map(|r| r.assignment.cluster).collect::<BTreeSet<_>>().len()
}

#[test]
fn five_hundred_siblings_sharing_boilerplate_inside_their_text_stay_apart() {
    // The generator's boilerplate sits between each page's own sentences in two short runs
    // (three sentences, ~40 units: under `interior_run_units`), so it stays in what is
    // compared, two thirds of every page: two siblings' sentences are within τ. The sibling
    // rule must still keep pages whose own texts differ apart.
    let mut rng = common::synth::Rng(0xb011);
    let runs: Vec<String> = (0..2)
        .map(|r| (0..3).map(|j| format!("<p>Note {r}-{j}: {}</p>", words(&mut rng))).collect())
        .collect();
    let mut warc = Vec::new();
    for n in 0..500usize {
        let own: Vec<String> =
            (0..3).map(|_| format!("<p>Struct {n}: {}</p>", words(&mut rng))).collect();
        let html = format!(
            "<html><head><title>Struct {n}</title></head><body><main>{}{}{}{}{}</main></body></html>",
            own[0], runs[0], own[1], runs[1], own[2]
        );
        warc.extend(warc_response(
            &format!("http://api.example/struct.S{n}.html"),
            n as u64,
            n as u64 + 1,
            &html,
        ));
    }
    assert_eq!(
        clusters_of(warc, "boilerplate", 500),
        500,
        "siblings were merged on the boilerplate inside their text"
    );
}
