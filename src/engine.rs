//! An in-process engine: documents added and removed one call at a time, the clusters' changes
//! read back after each commit. It runs the same graph as `dupflow run` (`dupflow_operators::graph::clusters`)
//! on one timely worker owned by the caller's thread, fed directly instead of by the reader
//! thread. The Python package is built on it.
//!
//! Documents are keyed by their id (text) or URL (HTML); adding a key again replaces its
//! document. Each document gets the next ordinal as its date. A cluster's id is the key of its
//! anchor, the member with the smallest hash of its key (`PageId::anchor_key`), as in a text
//! corpus run: it does not depend on the order documents were added in, and a document joining
//! or leaving a cluster of n renames it with probability ~1/n.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use differential_dataflow::input::{Input as _, InputSession};
use timely::communication::allocator::thread::Thread;
use timely::communication::Allocator;
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::{Inspect, Probe};
use timely::worker::Worker;
use timely::WorkerConfig;

use dupflow_operators::verify::Assignment;
use dupflow_operators::{Page, PageId, PageMeta};

use crate::check::{self, ShareIndex};
use crate::config::PipelineConfig;
use crate::metrics::Registry;
use crate::source::text::TextDoc;

/// A document's move between clusters at a commit. Cluster ids are the keys of the clusters'
/// anchors; `None` before means the document is new, `None` after that it left.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClusterChange {
    pub key: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

type Captured = Rc<RefCell<Vec<((PageId, Assignment), u64, isize)>>>;

/// The incremental engine. Not `Send`: it lives on the thread that made it.
pub struct Engine {
    worker: Worker,
    input: InputSession<u64, (PageId, Page), isize>,
    probe: Handle<u64>,
    captured: Captured,
    time: u64,
    ordinal: u64,
    config: PipelineConfig,
    /// How a page is made from a text or HTML, as in a run.
    ingest: crate::source::ingest::Ingest,
    /// The current page of each key, and the key of each page.
    pages: HashMap<String, Page>,
    keys: HashMap<PageId, String>,
    /// Each page's current assignment, as of the last commit.
    assignments: HashMap<PageId, Assignment>,
    /// Clusters as of the last commit, by key: the cluster's key.
    clusters: BTreeMap<String, String>,
    gate: ShareIndex,
    /// Keys added or removed since the last commit, and the pages they retired.
    dirty: BTreeSet<String>,
    retired: Vec<PageId>,
}

impl Engine {
    pub fn new(config: PipelineConfig) -> Engine {
        let mut worker = Worker::new(
            WorkerConfig::default(),
            Allocator::Thread(Thread::default()),
            Some(Instant::now()),
        );
        let mut method = config.method();
        // A commit gives the clusters of the documents so far: the template in effect is
        // theirs, refreshed at every commit (`template.refresh_epochs` is for feeds).
        method.template.refresh_epochs = 1;
        let captured: Captured = Rc::default();
        let sink = captured.clone();
        let (input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, pages) = scope.new_collection::<(PageId, Page), isize>();
            let (probe, _) =
                dupflow_operators::graph::clusters(pages, &method, Arc::new(Registry::default()))
                    .consolidate()
                    .inner
                    .inspect(move |update| sink.borrow_mut().push(*update))
                    .probe();
            (input, probe)
        });
        Engine {
            worker,
            input,
            probe,
            captured,
            time: 0,
            ordinal: 0,
            ingest: crate::source::ingest::Ingest {
                sentence: config.sentence.clone(),
                shingling: method.shingling(),
                max_page_bytes: config.source.max_page_bytes as usize,
            },
            gate: ShareIndex::empty(&config.template),
            config,
            pages: HashMap::new(),
            keys: HashMap::new(),
            assignments: HashMap::new(),
            clusters: BTreeMap::new(),
            dirty: BTreeSet::new(),
            retired: Vec::new(),
        }
    }

    /// Adds (or replaces) a plain-text document, split line by line. `url`, if given, groups
    /// documents by host for template statistics.
    pub fn add_text(&mut self, id: &str, text: &str, url: Option<&str>) {
        self.ordinal += 1;
        let doc = TextDoc {
            id: id.to_string(),
            text: text.to_string(),
            url: url.map(str::to_string),
            ordinal: self.ordinal,
        };
        let (page, _, _) = self.ingest.text(&doc);
        self.put(page);
    }

    /// Adds (or replaces) an HTML page, stripped as WARC responses are.
    pub fn add_html(&mut self, url: &str, html: &str) {
        self.ordinal += 1;
        let host = TextDoc {
            id: String::new(),
            text: String::new(),
            url: Some(url.to_string()),
            ordinal: 0,
        }
        .host();
        let meta = PageMeta {
            id: PageId::new(self.ordinal, url, url),
            url: url.into(),
            host: dupflow_operators::ingest::sentence::stable_hash(&host),
            record_id: url.into(),
        };
        let page = self.ingest.html(meta, html, None).page;
        self.put(page);
    }

    fn put(&mut self, page: Page) {
        self.remove(&page.url);
        self.dirty.insert(page.url.to_string());
        self.gate.insert(&page);
        self.keys.insert(page.id, page.url.to_string());
        self.input.insert((page.id, page.clone()));
        self.pages.insert(page.url.to_string(), page);
    }

    /// Removes a document; false if there was none with this key.
    pub fn remove(&mut self, key: &str) -> bool {
        let Some(page) = self.pages.remove(key) else { return false };
        self.dirty.insert(key.to_string());
        self.retired.push(page.id);
        self.gate.remove(&page);
        self.input.remove((page.id, page));
        true
    }

    /// Runs the dataflow over everything added or removed since the last commit and returns
    /// the documents whose cluster changed, by key.
    pub fn commit(&mut self) -> Vec<ClusterChange> {
        self.time += 1;
        self.input.advance_to(self.time);
        self.input.flush();
        while self.probe.less_than(&self.time) {
            self.worker.step();
        }
        // A page's old assignment and its new one come in either order.
        let mut touched = std::mem::take(&mut self.dirty);
        for ((page, assignment), _, diff) in std::mem::take(&mut *self.captured.borrow_mut()) {
            if diff > 0 {
                self.assignments.insert(page, assignment);
            } else if self.assignments.get(&page) == Some(&assignment) {
                self.assignments.remove(&page);
            }
            if let Some(key) = self.keys.get(&page) {
                touched.insert(key.clone());
            }
        }
        let mut changes = Vec::new();
        for key in touched {
            let after = self
                .pages
                .get(&key)
                .and_then(|p| self.assignments.get(&p.id))
                .and_then(|a| self.keys.get(&a.cluster))
                .cloned();
            let before = match &after {
                Some(cluster) => self.clusters.insert(key.clone(), cluster.clone()),
                None => self.clusters.remove(&key),
            };
            if before != after {
                changes.push(ClusterChange { key, before, after });
            }
        }
        // Pages replaced or removed are out of every assignment now.
        for page in std::mem::take(&mut self.retired) {
            self.keys.remove(&page);
        }
        changes
    }

    /// Each current document's cluster (the key of its anchor), as of the last commit.
    pub fn clusters(&self) -> &BTreeMap<String, String> {
        &self.clusters
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The sentence-share gate against the current documents: how much of `document` (HTML or
    /// text) they already hold, the spans, and the pages that cover them.
    pub fn check(&self, document: &str, threshold: f64) -> serde_json::Value {
        let sentences = check::document_sentences(document, &self.config.sentence);
        let report = self.gate.report(&sentences, None, None);
        check::answer("(document)", &report, threshold, "fixed", self.gate.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(seed: u64, changed: Option<usize>) -> String {
        (0..8)
            .map(|l| {
                let s = if Some(l) == changed {
                    10_000 + seed * 8 + l as u64
                } else {
                    seed * 8 + l as u64
                };
                format!(
                    "Line {s} says {} and then {} before it ends with {}.",
                    s * 7 % 101,
                    s * 13 % 97,
                    s * 31 % 89
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The hash a text document's key is anchored by.
    fn key_hash(key: &str) -> u64 {
        PageId::new(0, key, key).hash
    }

    #[test]
    fn adds_removes_and_replacements_change_clusters_as_a_batch_run_would() {
        // The near-copy is added first, but its key hashes above d2's and d4's: each pair it is
        // in is named by the d-document (its anchor), not by the earliest-added member.
        let near = (0..)
            .map(|i| format!("near{i}"))
            .find(|n| key_hash(n) > key_hash("d2") && key_hash(n) > key_hash("d4"))
            .unwrap();
        let near = near.as_str();
        let mut engine = Engine::new(PipelineConfig::default());
        engine.add_text(near, &doc(2, Some(3)), None);
        for d in 0..5 {
            engine.add_text(&format!("d{d}"), &doc(d, None), None);
        }
        let changes = engine.commit();
        assert_eq!(changes.len(), 6, "every new document: {changes:?}");
        assert_eq!(
            engine.clusters()[near],
            "d2",
            "named by its anchor, not by the earliest-added member"
        );
        assert_eq!(engine.clusters()["d2"], "d2");

        // The anchor leaves: the cluster is named by the other member.
        assert!(engine.remove("d2"));
        let changes = engine.commit();
        assert_eq!(
            changes,
            vec![
                ClusterChange { key: "d2".into(), before: Some("d2".into()), after: None },
                ClusterChange {
                    key: near.into(),
                    before: Some("d2".into()),
                    after: Some(near.into())
                },
            ]
        );
        // A replacement that is no longer similar moves out; one that is joins.
        engine.add_text(near, &doc(4, None), None);
        let changes = engine.commit();
        assert_eq!(
            changes,
            vec![ClusterChange {
                key: near.into(),
                before: Some(near.into()),
                after: Some("d4".into())
            }]
        );
        assert!(engine.commit().is_empty(), "nothing changed, nothing reported");
        assert!(!engine.remove("absent"));
        assert_eq!(engine.len(), 5);

        // The gate sees the current documents.
        let answer = engine.check(&doc(1, None), 0.5);
        assert_eq!(answer["verdict"], "duplicate", "{answer}");
        let answer = engine.check(&doc(2, None), 0.5);
        assert_eq!(answer["verdict"], "new", "d2 was removed: {answer}");
    }

    /// The documents as a partition (sets of keys), whatever the clusters are named.
    fn partition(engine: &Engine) -> BTreeSet<BTreeSet<String>> {
        let mut by_cluster: BTreeMap<&String, BTreeSet<String>> = BTreeMap::new();
        for (key, cluster) in engine.clusters() {
            by_cluster.entry(cluster).or_default().insert(key.clone());
        }
        by_cluster.into_values().collect()
    }

    #[test]
    fn after_any_sequence_of_changes_the_clusters_are_those_of_a_fresh_run() {
        fresh_after_every_commit(PipelineConfig::default());
    }

    /// Template refreshes are for feeds: a commit still gives the clusters of the documents
    /// so far (with them, rounds 7 and on differed from a fresh run).
    #[test]
    fn template_refreshes_do_not_make_a_commit_stale() {
        let mut config = PipelineConfig::default();
        config.template.refresh_epochs = 8;
        fresh_after_every_commit(config);
    }

    fn fresh_after_every_commit(config: PipelineConfig) {
        let mut engine = Engine::new(config.clone());
        // (key → (ordinal, text)): the documents now, in the order they were last added.
        let mut current: BTreeMap<String, (u64, String)> = BTreeMap::new();
        let mut x = 12345u64;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x >> 33
        };
        for round in 0..12 {
            for _ in 0..15 {
                let key = format!("k{}", next() % 25);
                if next() % 4 == 0 {
                    engine.remove(&key);
                    current.remove(&key);
                } else {
                    // Six families of near-copies, and a few singletons.
                    let family = next() % 8;
                    let text = doc(family, (next() % 3 == 0).then(|| (next() % 8) as usize));
                    engine.add_text(&key, &text, None);
                    current.insert(key, (engine.ordinal, text));
                }
            }
            engine.commit();
            let mut fresh = Engine::new(config.clone());
            let mut order: Vec<_> = current.iter().collect();
            order.sort_by_key(|(_, (ordinal, _))| *ordinal);
            for (key, (_, text)) in order {
                fresh.add_text(key, text, None);
            }
            fresh.commit();
            assert_eq!(partition(&engine), partition(&fresh), "round {round}");
            assert_eq!(engine.clusters().len(), current.len());
            assert!(
                partition(&engine).iter().any(|c| c.len() > 1),
                "round {round}: families are clustered"
            );
            // Named alike too: by the anchors (the same order of addition).
            assert_eq!(engine.clusters(), fresh.clusters(), "round {round}");
        }
    }
}
