//! The summary `dupflow run` prints at its end (docs/outputs.md, "The summary").

use dupflow::dataflow::{ClusterRow, RunOutput};
use dupflow::metrics::live::Live;
use dupflow::metrics::{self, Registry};
use dupflow::sink::{self, ClusterSummary as Summary};
use dupflow_operators::runtime::footprint::Structure;

/// The summary printed at the end of a run: what was read and clustered, what the state and
/// the stores hold, the updates and their latency, the caps hit.
pub(super) fn print(rows: &[ClusterRow], output: &RunOutput, metrics: &Registry, live: &Live) {
    let summary = sink::summarize(rows);
    counts(&summary, output, metrics);
    memory(&summary, output, metrics, live);
    disk(&summary, output);
    updates(&summary, output, metrics, live);
}

/// `name value, …` of a labelled metric.
fn label(metrics: &Registry, metric: metrics::Metric) -> String {
    metrics.by_label(metric).iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

/// Records, pages, clusters and damage.
fn counts(summary: &Summary, output: &RunOutput, metrics: &Registry) {
    let secs = output.elapsed.as_secs_f64();
    let pages = metrics.get(metrics::PAGES, "");
    let label = |m| label(metrics, m);
    println!("records:   {} ({})", metrics.total(metrics::RECORDS), label(metrics::RECORDS));
    println!(
        "pages:     {pages} in {secs:.2} s ({:.0} pages/s), {} revisits",
        pages as f64 / secs.max(1e-9),
        metrics.get(metrics::REVISITS, "")
    );
    let connecting = output.connecting.as_secs_f64();
    if connecting >= 0.1 {
        println!(
            "           of which {connecting:.2} s connecting the cluster; {:.0} pages/s after it",
            pages as f64 / (secs - connecting).max(1e-9)
        );
    }
    println!(
        "clusters:  {} ({} with more than one page, holding {} pages; largest {})",
        summary.clusters,
        summary.multi_page_clusters,
        summary.pages_in_multi_page_clusters,
        summary.largest_cluster
    );
    let errors = metrics.total(metrics::RECORD_ERRORS) + metrics.total(metrics::DOCUMENT_ERRORS);
    if errors > 0 {
        println!(
            "skipped as damaged: {errors} ({}; {})",
            label(metrics::RECORD_ERRORS),
            label(metrics::DOCUMENT_ERRORS)
        );
    }
}

/// What memory holds at the end: the held pages, the clusters' rows, the method's state by
/// structure.
fn memory(summary: &Summary, output: &RunOutput, metrics: &Registry, live: &Live) {
    let held = metrics.get(metrics::HELD_BYTES, "");
    if summary.pages > 0 {
        println!(
            "held:      {:.1} MB of compact pages to retract or checkpoint ({} bytes a page)",
            held as f64 / 1e6,
            held / summary.pages as i64
        );
    }
    let rows = live.bytes();
    if let Some(per_page) = rows.checked_div(summary.pages) {
        println!(
            "rows:      {:.1} MB of the clusters' rows on this process ({per_page} bytes a \
            page): URLs, record ids, members",
            rows as f64 / 1e6,
        );
    }
    let structures: Vec<(&str, i64)> =
        Structure::ALL.iter().map(|&s| (s.name(), output.footprint.at_end(s))).collect();
    let state: i64 = structures.iter().map(|s| s.1).sum();
    if summary.pages > 0 && state > 0 {
        let pages = summary.pages as i64;
        println!(
            "state:     {:.1} MB at the end ({} bytes a page): {}",
            state as f64 / 1e6,
            state / pages,
            structures
                .iter()
                .map(|(name, bytes)| format!(
                    "{name} {:.1} MB ({})",
                    *bytes as f64 / 1e6,
                    bytes / pages
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// What the stores and the spill wrote to disk.
fn disk(summary: &Summary, output: &RunOutput) {
    if let Some(store) = output.word_store.filter(|s| s.pages > 0) {
        let reads = store.hits + store.misses;
        println!(
            "words:     {:.1} MB on disk for {} pages ({} bytes a page, LZ4 of {}); cache {:.1} \
            MB, {:.1}% of {reads} reads",
            store.bytes_written as f64 / 1e6,
            store.pages,
            store.bytes_written / store.pages,
            store.bytes_in / store.pages,
            store.cached_bytes as f64 / 1e6,
            100.0 * store.hits as f64 / reads.max(1) as f64,
        );
    }
    if let Some(store) = output.page_store.filter(|s| s.pages > 0 && summary.pages > 0) {
        let reads = store.hits + store.misses;
        println!(
            "stored:    {:.1} MB on disk of held pages and members' contents ({} bytes a \
            page); cache {:.1} MB, {:.1}% of {reads} reads",
            store.bytes_written as f64 / 1e6,
            store.bytes_written / summary.pages as u64,
            store.cached_bytes as f64 / 1e6,
            100.0 * store.hits as f64 / reads.max(1) as f64,
        );
    }
    if let Some(spilled) = output.spilled.filter(|s| s.runs > 0 && summary.pages > 0) {
        println!(
            "spilled:   {:.1} MB on disk at most of the indexes' entries of one page ({} \
            bytes a page); {:.1} MB written in {} runs, {} blocks read",
            spilled.peak_on_disk as f64 / 1e6,
            spilled.peak_on_disk / summary.pages as u64,
            spilled.written as f64 / 1e6,
            spilled.runs,
            spilled.block_reads,
        );
    }
}

/// The arrangements' updates, the page updates, URL aliases, latency and the caps hit.
fn updates(summary: &Summary, output: &RunOutput, metrics: &Registry, live: &Live) {
    let arranged = metrics.total(metrics::ARRANGED_UPDATES);
    if summary.pages > 0 && arranged > 0 {
        let largest = metrics::arrangements::largest(metrics, 5)
            .into_iter()
            .map(|(name, n)| format!("{name} {:.1}", n as f64 / summary.pages as f64))
            .collect::<Vec<_>>()
            .join(", ");
        println!(
            "arranged:  {arranged} updates in the arrangements ({:.1} a page; largest, a page: \
                {largest})",
            arranged as f64 / summary.pages as f64
        );
    }
    let label = |m| label(metrics, m);
    let updates = label(metrics::PAGE_UPDATES);
    if !updates.is_empty() {
        println!("updates:   {updates}");
    }
    let aliases = metrics.get(metrics::URL_ALIASES, "");
    if aliases > 0 {
        println!(
            "urls:      {aliases} captures at an alias of a held page's URL ([urls] \
            normalize: one page, the newer capture)"
        );
    }
    {
        let mut latencies = live.latencies.lock().expect("latencies").clone();
        if !latencies.is_empty() {
            latencies.sort_by(f32::total_cmp);
            let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
            println!(
                "latency:   record read → change written p50 {:.3} s, p99 {:.3} s over {} \
                epochs{}",
                at(0.5),
                at(0.99),
                output.epochs,
                output.resumed_from.map(|e| format!(" (resumed at epoch {e})")).unwrap_or_default()
            );
        }
    }
    let caps = label(metrics::CAPS);
    if !caps.is_empty() {
        println!("caps hit:  {caps}");
    }
}
