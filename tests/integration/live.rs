//! The live feed: any sequence of captures, re-crawls (newer, same-second and late older ones), deletions
//! (with late stale copies after them) and a retention window, cut into random epochs, ends with the clusters of one batch run on
//! the pages that survive, at 1, 2 and 4 workers.

use crate::common;

use std::collections::BTreeMap;

use common::synth::{warc_response, Corpus, Rng};
use dupflow::config::PipelineConfig;
use dupflow::dataflow::{self, ClusterRow, Feed, RunOptions, ScriptItem};

#[derive(Clone, Debug)]
struct Capture {
    url: usize,
    secs: u64,
    record: u64,
    base: usize,
    variant: usize,
}

fn url(u: usize) -> String {
    format!("http://site{}.example/page/{u}", u % 2)
}

fn record(c: &Capture, corpus: &Corpus) -> Vec<u8> {
    warc_response(&url(c.url), c.secs, c.record, &corpus.html(c.base, c.variant))
}

struct Scenario {
    script: Vec<ScriptItem>,
    survivors: Vec<Capture>,
    retention: u64,
}

/// A random feed and, by the documented rules, the pages that survive it.
fn scenario(seed: u64, corpus: &Corpus) -> Scenario {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let retention = if rng.below(3) == 0 { 400 + rng.below(400) } else { 0 };
    let mut held: BTreeMap<usize, Capture> = BTreeMap::new();
    // URL → the date its deletion stands for: the newest date read so far, or the deleted
    // capture's if newer. Captures dated at or before it are stale copies.
    let mut tombstones: BTreeMap<usize, u64> = BTreeMap::new();
    let mut script = Vec::new();
    let mut max_secs = 0;
    let mut read_any = false;
    for step in 0..60u64 {
        match rng.below(10) {
            0 => {
                let u = rng.below(14) as usize;
                let deleted = held.remove(&u).map(|c| c.secs);
                let as_of = read_any.then_some(max_secs);
                if let Some(date) = as_of.max(deleted) {
                    let t = tombstones.entry(u).or_insert(date);
                    *t = (*t).max(date);
                }
                script.push(ScriptItem::Delete(url(u)));
            }
            1 | 2 => script.push(ScriptItem::CloseEpoch),
            _ => {
                // Mostly newer captures; now and then a late one from the past.
                let secs =
                    (step * 30).saturating_sub(if rng.below(5) == 0 { rng.below(600) } else { 0 });
                let c = Capture {
                    url: rng.below(14) as usize,
                    secs,
                    record: step,
                    base: rng.below(4) as usize,
                    variant: rng.below(4) as usize,
                };
                max_secs = max_secs.max(secs);
                read_any = true;
                script.push(ScriptItem::Warc(record(&c, corpus)));
                let newer = held.get(&c.url).is_none_or(|h| h.secs <= c.secs);
                let after_deletion = tombstones.get(&c.url).is_none_or(|&t| c.secs > t);
                if newer && after_deletion {
                    tombstones.remove(&c.url);
                    held.insert(c.url, c);
                }
            }
        }
    }
    let cutoff = if retention > 0 { max_secs.saturating_sub(retention) } else { 0 };
    let survivors = held.into_values().filter(|c| c.secs >= cutoff).collect();
    Scenario { script, survivors, retention }
}

fn run(feed: Feed, workers: usize, retention: u64) -> Vec<ClusterRow> {
    let mut config = PipelineConfig::default();
    config.run.epoch_records = u64::MAX;
    config.run.epoch_ms = 3_600_000;
    config.run.retention_secs = retention;
    dataflow::run(RunOptions::new(feed, config, workers)).unwrap().rows
}

#[test]
fn any_feed_ends_with_the_batch_clusters_of_its_survivors() {
    let corpus = Corpus::new(7, 4);
    for seed in 1..=32u64 {
        let scenario = scenario(seed, &corpus);
        let batch: Vec<u8> = scenario.survivors.iter().flat_map(|c| record(c, &corpus)).collect();
        let expected = run(Feed::Script(vec![ScriptItem::Warc(batch)]), 1, 0);
        assert_eq!(
            expected.len(),
            scenario.survivors.len(),
            "seed {seed}: every survivor is a page"
        );
        assert!(
            expected.iter().any(|r| r.assignment.cluster != r.page),
            "seed {seed}: some pages cluster"
        );
        for workers in [1, 2, 4] {
            let live = run(Feed::Script(scenario.script.clone()), workers, scenario.retention);
            assert_eq!(
                live, expected,
                "seed {seed}, {workers} workers, retention {}",
                scenario.retention
            );
        }
    }
}

#[test]
fn a_recrawl_that_no_longer_matches_splits_its_cluster() {
    let corpus = Corpus::new(11, 2);
    let a = Capture { url: 0, secs: 10, record: 1, base: 0, variant: 0 };
    let b = Capture { url: 1, secs: 20, record: 2, base: 0, variant: 1 };
    let b_changed = Capture { url: 1, secs: 30, record: 3, base: 1, variant: 0 };
    let script = vec![
        ScriptItem::Warc([record(&a, &corpus), record(&b, &corpus)].concat()),
        ScriptItem::CloseEpoch,
        ScriptItem::Warc(record(&b_changed, &corpus)),
    ];
    let rows = run(Feed::Script(script.clone()), 2, 0);
    assert_eq!(rows.len(), 2);
    assert_ne!(
        rows[0].assignment.cluster, rows[1].assignment.cluster,
        "split after the re-crawl: {rows:?}"
    );
    // Before the re-crawl they were one cluster.
    let rows = run(Feed::Script(script[..1].to_vec()), 2, 0);
    assert_eq!(rows[0].assignment.cluster, rows[1].assignment.cluster);
}

/// The reader hands each record to any worker with room, so two captures of one URL in one
/// epoch are parsed by different workers; their owner still applies them in the order read:
/// of two captures in the same second, the later one read is the page.
#[test]
fn same_second_recaptures_in_one_epoch_keep_the_one_read_last_whichever_worker_parsed_them() {
    let corpus = Corpus::new(13, 7);
    let mut feed = Vec::new();
    let mut last = BTreeMap::new();
    for u in 0..40usize {
        for k in 0..3u64 {
            let c = Capture {
                url: u,
                secs: 50,
                record: 100 * u as u64 + k,
                base: (u + k as usize) % 7,
                variant: k as usize,
            };
            feed.extend(record(&c, &corpus));
            last.insert(url(u), format!("<urn:uuid:00000000-0000-0000-0000-{:012}>", c.record));
        }
    }
    for workers in [1, 2, 4] {
        let rows = run(Feed::Script(vec![ScriptItem::Warc(feed.clone())]), workers, 0);
        assert_eq!(rows.len(), 40, "{workers} workers: one page a URL");
        for row in &rows {
            assert_eq!(
                Some(&*row.record_id),
                last.get(&*row.url).map(String::as_str),
                "{workers} workers: {} keeps the capture read last",
                row.url
            );
        }
    }
}
