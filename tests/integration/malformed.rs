//! Data-driven: every fixtures/malformed/NAME has NAME.expected.json listing the pages that must
//! come through (the good records before and after the damage) and the errors to count.
//! Add a fixture (fixtures/make_fixtures.py) and its expectation, and it is tested.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use dupflow::source::Input;
use serde_json::Value;

#[test]
fn good_records_around_each_kind_of_damage_come_through() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/malformed");
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".expected.json") {
            continue;
        }
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let max = expected["max_record_bytes"].as_u64().unwrap();
        let result = common::read_all(&Input::File(path.clone()), max);
        let pages: Vec<String> = expected["pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(result.page_urls, pages, "{name}: pages");
        let errors: BTreeMap<&str, usize> = expected["errors"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_u64().unwrap() as usize))
            .collect();
        let got: BTreeMap<&str, usize> = result.errors.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(got, errors, "{name}: errors");
        cases += 1;
    }
    assert!(cases >= 10, "expected the malformed fixtures, found {cases}");
}

#[test]
fn arbitrary_bytes_never_panic_the_reader() {
    // A cheap stand-in for the fuzz target, run on every test run.
    let mut state = 0x1234_5678_u64;
    let sample =
        std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz"))
            .unwrap();
    let plain = {
        let mut out = Vec::new();
        use std::io::Read;
        flate2::read::MultiGzDecoder::new(&sample[..]).read_to_end(&mut out).unwrap();
        out
    };
    for round in 0..300 {
        let base = if round % 2 == 0 { &sample } else { &plain };
        let mut bytes = base.clone();
        for _ in 0..(round % 7 + 1) {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let at = (state >> 33) as usize % bytes.len();
            match state % 3 {
                0 => bytes[at] ^= (state >> 8) as u8,
                1 => bytes.truncate(at.max(1)),
                _ => bytes.insert(at, (state >> 16) as u8),
            }
        }
        let decoder = dupflow::source::Decoder::new(Box::new(std::io::Cursor::new(bytes))).unwrap();
        let mut framer = dupflow::source::Framer::new(decoder, 1 << 20);
        while let Some(item) = framer.next_record() {
            if let Ok(record) = item {
                let _ = dupflow::source::http::interpret(&record, 1 << 16);
            }
        }
    }
}

/// Markup nested 20,000 elements deep (html5ever's tree builder walks its whole stack of open
/// elements at most tags): read with the nesting capped at 512, as browsers read it, the cap
/// counted, the page's text kept.
#[test]
fn deeply_nested_markup_is_read_with_its_nesting_capped() {
    let dir = common::temp_dir("deep-markup");
    let html = format!(
        "<html><body>{}The deepest paragraph of a page nested far too deep for any reader.</body></html>",
        "<div><span>".repeat(20_000)
    );
    let http = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n{html}");
    let record = format!(
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://deep.example/\r\nWARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:deep>\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n{http}\r\n\r\n",
        http.len()
    );
    let input = dir.join("deep.warc");
    std::fs::write(&input, record).unwrap();
    let output = common::dupflow().args(["sentences", input.to_str().unwrap()]).output().unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "the deepest paragraph of a page nested far too deep for any reader"
    );
    let output = common::dupflow()
        .args(["run", input.to_str().unwrap(), "--out", dir.join("out").to_str().unwrap()])
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(summary.contains("max_nesting_depth 1"), "the cap is counted: {summary}");
}
