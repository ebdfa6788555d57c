//! Every file of ../shared/corpora/warc-samples is read without a panic (its WACZ as the WARC
//! inside it), and the record counts per type agree with warcio's inventory (inventory.json)
//! wherever warcio could read the file.
//! Deliberate differences are listed in `EXPECTED_DIFFERENCES`, each with its reason.

use crate::common;

use std::collections::BTreeMap;

use dupflow::source::Input;
use serde_json::Value;

/// Files where dupflow's counts differ from warcio's on purpose: (file, record total we read
/// instead, reason). `None` means "skip the comparison" (the reason says what we do instead).
const EXPECTED_DIFFERENCES: &[(&str, Option<usize>, &str)] = &[
    // warcio reads ARC length fields `-1` and `abc` as records; there is no length to take a
    // payload by, so we skip those lines as invalid_header.
    ("pywb/bad.arc", Some(1), "ARC lines with lengths -1 and abc are skipped as invalid_header"),
    ("warcio/bad.arc", Some(1), "ARC lines with lengths -1 and abc are skipped as invalid_header"),
    // Whole-file gzip: warcio gives up after the first record; fastwarc reads 6, as we do.
    ("pywb/example-bad.warc.gz.bad", Some(6), "whole-file gzip read to the end (fastwarc: 6)"),
    ("warcio/example-bad.warc.gz.bad", Some(6), "whole-file gzip read to the end (fastwarc: 6)"),
    (
        "warcio/example-bad-non-chunked.warc.gz",
        Some(6),
        "whole-file gzip read to the end (fastwarc: 6)",
    ),
    // Broken chunking and gzip members across record boundaries: warcio stops, fastwarc reads 2.
    ("warcio/example-wrong-chunks.warc.gz", Some(2), "read past the broken chunking (fastwarc: 2)"),
    // warcio fails on the uncompressed ARC; we read its 8 responses (the .arc.gz copy has 8).
    (
        "webarchive-discovery/IAH-20080430204825-00000-blackbook-truncated.arc",
        Some(9),
        "uncompressed ARC read like its .gz twin",
    ),
    // The stream ends inside the last record: warcio returns the partial record, we skip it as
    // truncated_gzip / truncated_record (a cut page is not the page).
    (
        "resiliparse/clipped.warc.gz",
        Some(0),
        "the only record is cut short: skipped, counted as truncated_gzip",
    ),
    (
        "warcio/example-space-in-url.arc",
        Some(1),
        "the last record is cut short: skipped, counted as truncated_record",
    ),
];

#[test]
fn every_sample_is_read_and_counts_match_warcio() {
    let Some(shared) = common::shared_dir() else { return };
    let dir = shared.join("corpora/warc-samples");
    let inventory: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("inventory.json")).expect("inventory.json"),
    )
    .expect("json");
    let by_file: BTreeMap<String, &Value> =
        inventory.iter().map(|e| (e["file"].as_str().unwrap().to_string(), e)).collect();
    let inputs = dupflow::source::expand(&[dir.display().to_string()]).expect("expand");
    let mut files = 0;
    let mut mismatches = Vec::new();
    let mut compared = 0;
    let mut archives = 0;
    for input in &inputs {
        let (Input::File(path) | Input::Wacz(path)) = input else { unreachable!() };
        let mut rel = path.strip_prefix(&dir).unwrap().display().to_string();
        files += 1;
        let result = common::read_all(input, 64 << 20);
        if matches!(input, Input::Wacz(_)) {
            // The WACZ of replayweb.page holds the WARC its folder also has unpacked: warcio's
            // counts of that one are the archive's.
            assert_eq!(rel, "replayweb.page/example.wacz", "a WACZ the test does not know");
            rel = "replayweb.page/example-wacz-data.warc.gz".into();
            archives += 1;
        }
        let Some(entry) = by_file.get(&rel) else { continue };
        let Some(types) = entry["types"].as_object() else { continue };
        if let Some((_, total, reason)) = EXPECTED_DIFFERENCES.iter().find(|(f, _, _)| *f == rel) {
            let ours: usize = result.types.values().sum();
            if let Some(total) = total {
                if ours != *total {
                    mismatches
                        .push(format!("{rel}: expected {total} records ({reason}), read {ours}"));
                }
            }
            continue;
        }
        if types.is_empty() {
            continue;
        }
        compared += 1;
        for kind in ["response", "revisit", "resource", "request"] {
            let theirs = types.get(kind).and_then(Value::as_u64).unwrap_or(0) as usize;
            let ours = result.types.get(kind).copied().unwrap_or(0);
            if theirs != ours {
                mismatches.push(format!(
                    "{rel}: {kind}: warcio {theirs}, dupflow {ours} (errors {:?})",
                    result.errors
                ));
            }
        }
    }
    assert!(files >= 60, "expected the 60+ WARC/ARC samples, found {files}");
    assert_eq!(archives, 1, "the WACZ sample is read as one");
    assert!(compared >= 45, "compared only {compared} files");
    assert!(mismatches.is_empty(), "counts differ from warcio:\n{}", mismatches.join("\n"));
}

#[test]
fn known_quirks_are_read_right() {
    let Some(shared) = common::shared_dir() else { return };
    let dir = shared.join("corpora/warc-samples");
    let read = |rel: &str| common::read_all(&Input::File(dir.join(rel)), 64 << 20);

    // LZ4 frames hold the same records as the gzip copy.
    let lz4 = read("resiliparse/warcfile.warc.lz4");
    let gz = read("resiliparse/warcfile.warc.gz");
    assert_eq!(lz4.types, gz.types);
    assert_eq!(lz4.page_urls, gz.page_urls);
    assert!(lz4.errors.is_empty(), "{:?}", lz4.errors);

    // Whole-file gzip (one member for all records) reads all six records.
    assert_eq!(read("warcio/example-bad.warc.gz.bad").types.values().sum::<usize>(), 6);

    // gzip behind a .warc name, with br and gzip Content-Encoding.
    let twitter = read("replayweb.page/netpreserve-twitter.warc");
    assert_eq!(twitter.types.values().sum::<usize>(), 304);
    assert!(twitter.document_errors.is_empty(), "{:?}", twitter.document_errors);
    let brotli = read("webarchive-discovery/transfer_compression_brotli.warc");
    assert_eq!(brotli.page_urls.len(), 1, "the br-encoded page decodes");

    // A clipped gzip stream: the cut record is counted, not passed on half.
    let clipped = read("resiliparse/clipped.warc.gz");
    assert_eq!(clipped.errors.get("truncated_gzip"), Some(&1));

    // A status line without a reason phrase, in a file whose lines end in CR CR LF.
    assert_eq!(read("pywb/missing-status-text.warc").types.get("response"), Some(&1));

    // Revisits are reported.
    assert_eq!(read("pywb/iana.warc.gz").revisits, 123);

    // ARC files are read.
    assert_eq!(read("warcio/example.arc.gz").types.get("response"), Some(&1));

    // WARC/0.17 and 0.18 are read leniently.
    assert_eq!(
        read("webarchive-discovery/IAH-20080430204825-00000-blackbook-truncated.warc")
            .types
            .get("response"),
        Some(&8)
    );
    let clueweb = read("resiliparse/clueweb-quirk.warc.gz");
    assert_eq!(clueweb.types.get("response"), Some(&29));
    assert_eq!(clueweb.page_urls.len(), 29, "euc-jp pages with gzip Content-Encoding decode");
}

/// The HTML strip reads most pages with its byte scanner (`html::scan`) and the others with the
/// parser, after cutting attributes (`html::slim_tags`): every page of the samples, and every
/// fifth page of the dev benchmark file, gives the same title, language and text blocks either
/// way as the page parsed as it is, and the scanner reads most of them.
#[test]
fn slimmed_pages_strip_to_the_same_text_as_the_pages_as_they_are() {
    let Some(shared) = common::shared_dir() else { return };
    let mut inputs =
        dupflow::source::expand(&[shared.join("corpora/warc-samples").display().to_string()])
            .expect("expand");
    let dev = shared.join("bench/docs-dev.warc.gz");
    let dev_at = inputs.len();
    if dev.is_file() {
        inputs.push(Input::File(dev));
    }
    let (mut pages, mut scanned, mut differ) = (0, 0, Vec::new());
    for (at, input) in inputs.iter().enumerate() {
        let mut seen = 0usize;
        let _ = dupflow::source::read_records(input, 64 << 20, |record| {
            let Ok(record) = record else { return };
            let Ok((dupflow::source::http::Outcome::Page(doc), _)) =
                dupflow::source::http::interpret(&record, 8 << 20)
            else {
                return;
            };
            seen += 1;
            if at == dev_at && !seen.is_multiple_of(5) {
                return;
            }
            pages += 1;
            let reference = dupflow_operators::ingest::html::strip_reference(&doc.html);
            let by_scanner = dupflow_operators::ingest::html::strip_scanned(&doc.html);
            scanned += usize::from(by_scanner.is_some());
            if dupflow_operators::ingest::html::strip(&doc.html) != reference
                || dupflow_operators::ingest::html::strip_parsed(&doc.html) != reference
                || by_scanner.is_some_and(|page| page != reference)
            {
                differ.push(doc.url.clone());
            }
        });
    }
    assert!(pages > 700, "only {pages} pages read");
    assert!(
        differ.is_empty(),
        "{} of {pages} pages strip differently when slimmed or scanned: {differ:?}",
        differ.len()
    );
    assert!(scanned * 2 > pages, "the scanner read only {scanned} of {pages} pages");
}
