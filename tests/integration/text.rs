//! Text corpora end to end: JSONL (plain, gzip, zstd) and Parquet rows in, clusters out, and
//! `dedup` writing the rows again in the input's format, marked or only the kept ones.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{dupflow, temp_dir};
use serde_json::{json, Value};

/// A line of pseudo-words, distinct for each seed.
fn line(seed: u64) -> String {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let words: Vec<String> = (0..16)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let n = (x >> 33) as usize;
            (0..3 + n % 6).map(|i| (b'a' + ((n >> (i * 3)) % 26) as u8) as char).collect()
        })
        .collect();
    format!("{}.", words.join(" "))
}

fn text(doc: u64, changed_line: Option<usize>) -> String {
    (0..10)
        .map(|l| {
            if Some(l) == changed_line {
                line(1_000_000 + doc * 10 + l as u64)
            } else {
                line(doc * 10 + l as u64)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rows: 30 distinct documents; four identical copies of d0; near copies of d1..d5 (one line of
/// ten changed); an empty text; and two rows that are not documents.
fn corpus() -> (Vec<String>, BTreeMap<String, Option<String>>) {
    let mut lines = Vec::new();
    let mut truth = BTreeMap::new();
    for d in 0..30u64 {
        lines.push(
            json!({"id": format!("d{d}"), "text": text(d, None), "url": format!("https://site{}.example/d{d}", d % 3), "lang": "xx"})
                .to_string(),
        );
        truth.insert(format!("d{d}"), None);
    }
    for c in 0..4 {
        lines.push(
            json!({"id": format!("copy{c}"), "text": text(0, None), "extra": [c]}).to_string(),
        );
        truth.insert(format!("copy{c}"), Some("d0".to_string()));
    }
    for d in 1..=5u64 {
        lines.push(json!({"id": d * 1000, "text": text(d, Some(4))}).to_string());
        truth.insert(format!("{}", d * 1000), Some(format!("d{d}")));
    }
    lines.push(json!({"id": "empty", "text": ""}).to_string());
    truth.insert("empty".into(), None);
    lines.push("this row is not JSON".into());
    lines.push(json!({"id": "no-text"}).to_string());
    (lines, truth)
}

fn write_corpus(dir: &Path, name: &str) -> std::path::PathBuf {
    let (lines, _) = corpus();
    let path = dir.join(name);
    let body = lines.join("\n") + "\n";
    let bytes = if name.ends_with(".zst") {
        zstd::stream::encode_all(body.as_bytes(), 3).unwrap()
    } else if name.ends_with(".gz") {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, body.as_bytes()).unwrap();
        gz.finish().unwrap()
    } else {
        body.into_bytes()
    };
    std::fs::write(&path, bytes).unwrap();
    path
}

fn run_ok(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The rows of a (possibly compressed) JSONL file: JSON objects, or the raw line.
fn read_rows(path: &Path) -> Vec<Result<Value, String>> {
    let raw = std::fs::read(path).unwrap();
    let body = if raw.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        zstd::stream::decode_all(&raw[..]).unwrap()
    } else if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&raw[..]), &mut out)
            .unwrap();
        out
    } else {
        raw
    };
    String::from_utf8(body)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|_| l.to_string()))
        .collect()
}

/// id → duplicate_of, over the marked rows of a file.
fn marks(rows: &[Result<Value, String>]) -> BTreeMap<String, Option<String>> {
    rows.iter()
        .filter_map(|r| r.as_ref().ok())
        .filter(|r| r.get("text").is_some())
        .map(|r| {
            let id = match &r["id"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (id, r["duplicate_of"].as_str().map(str::to_string))
        })
        .collect()
}

#[test]
fn jsonl_rows_are_marked_kept_or_left_out_in_every_compression() {
    let (_, truth) = corpus();
    for name in ["corpus.jsonl", "corpus.jsonl.gz", "corpus.jsonl.zst"] {
        let dir = temp_dir(&format!("text-{name}"));
        let input = write_corpus(&dir, name);
        // Marked: every row back, in order, each document with its cluster and kept row.
        let marked = dir.join("marked");
        run_ok(
            dupflow()
                .args(["dedup", "--annotate", "--workers", "2", "--out"])
                .arg(&marked)
                .arg(&input),
        );
        let rows = read_rows(&marked.join(name));
        let (lines, _) = corpus();
        assert_eq!(rows.len(), lines.len(), "{name}: every row written");
        assert_eq!(
            rows[lines.len() - 2],
            Err("this row is not JSON".to_string()),
            "{name}: a row that is not JSON is copied as it was"
        );
        assert_eq!(
            rows[lines.len() - 1],
            Ok(json!({"id": "no-text"})),
            "{name}: a row without text is copied as it was"
        );
        assert_eq!(marks(&rows), truth, "{name}: duplicate_of");
        let first = rows[0].as_ref().unwrap();
        assert_eq!(first["cluster"], "d0");
        assert_eq!(first["lang"], "xx", "{name}: other fields kept");
        let copy =
            rows.iter().filter_map(|r| r.as_ref().ok()).find(|r| r["id"] == "copy2").unwrap();
        assert_eq!((copy["cluster"].as_str(), copy["extra"].clone()), (Some("d0"), json!([2])));
        let near = rows.iter().filter_map(|r| r.as_ref().ok()).find(|r| r["id"] == 3000).unwrap();
        assert_eq!(
            near["cluster"], "d3",
            "an integer id: its cluster is named by the kept (earliest) row's id"
        );

        // Kept only: the duplicates are gone, the rest are the marked rows.
        let kept = dir.join("kept");
        let stdout = run_ok(dupflow().args(["dedup", "--out"]).arg(&kept).arg(&input));
        assert!(stdout.contains("9 near-duplicates left out"), "{stdout}");
        let kept_rows = read_rows(&kept.join(name));
        let expected: Vec<_> = rows
            .iter()
            .filter(|r| r.as_ref().map_or(true, |v| v["duplicate_of"].is_null()))
            .cloned()
            .collect();
        assert_eq!(kept_rows, expected, "{name}: only the kept rows");
        let removed: Vec<Value> = std::fs::read_to_string(kept.join("removed.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(removed.len(), 9);
        assert!(
            removed
                .iter()
                .all(|r| r["kept_id"].is_string() && r["similarity"].as_f64().unwrap() >= 0.6),
            "{removed:?}"
        );

        // The kept rows hold no near-duplicates any more.
        let again = dir.join("again");
        run_ok(dupflow().args(["run", "--quiet", "--out"]).arg(&again).arg(kept.join(name)));
        let clusters = std::fs::read_to_string(again.join("clusters.jsonl")).unwrap();
        assert!(
            clusters.lines().all(|l| serde_json::from_str::<Value>(l).unwrap()["size"] == 1),
            "{clusters}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn clusters_of_a_text_corpus_do_not_depend_on_the_worker_count() {
    let dir = temp_dir("text-workers");
    let input = write_corpus(&dir, "c.jsonl");
    let mut outputs = Vec::new();
    for workers in ["1", "2", "4"] {
        let out = dir.join(workers);
        let stdout =
            run_ok(dupflow().args(["run", "--workers", workers, "--out"]).arg(&out).arg(&input));
        assert!(
            stdout.contains("invalid_json 1") && stdout.contains("missing_field 1"),
            "bad rows are counted by kind: {stdout}"
        );
        outputs.push(std::fs::read_to_string(out.join("clusters.jsonl")).unwrap());
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]), "same clusters at 1, 2 and 4 workers");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sentence keeps at most 32,767 of its words (`page::Sentence::MAX_WORDS`); a longer one is
/// counted as the cap `sentence_words` in the summary, and its document is clustered with its
/// copy as any other.
#[test]
fn a_sentence_past_the_word_cap_is_counted_and_its_document_clustered() {
    let dir = temp_dir("text-sentence-words");
    let long: String = (0..40_000).map(|i| format!("w{} ", i % 997)).collect();
    let lines = [
        json!({"id": "long", "text": long}).to_string(),
        json!({"id": "long-copy", "text": long}).to_string(),
        json!({"id": "short", "text": text(1, None)}).to_string(),
    ];
    let input = dir.join("long.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out = dir.join("out");
    let stdout = run_ok(dupflow().args(["run", "--workers", "2", "--out"]).arg(&out).arg(&input));
    assert!(stdout.contains("sentence_words 2"), "each long sentence counted once: {stdout}");
    let clusters = std::fs::read_to_string(out.join("clusters.jsonl")).unwrap();
    let cluster_of = |id: &str| {
        clusters
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|row| row.to_string().contains(&format!("\"{id}\"")))
            .map(|row| row["cluster"].clone())
            .unwrap_or_else(|| panic!("{id} has a row: {clusters}"))
    };
    assert_eq!(cluster_of("long"), cluster_of("long-copy"), "{clusters}");
    assert_ne!(cluster_of("long"), cluster_of("short"), "{clusters}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// pyarrow writes a Parquet corpus; dupflow marks it; pyarrow reads the result back. Skipped,
/// with a message, where no Python with pyarrow is found (`.ci/run` installs one and names it
/// in DUPFLOW_TEST_PYTHON).
#[test]
fn parquet_written_by_pyarrow_is_marked_and_read_back_by_pyarrow() {
    let python = std::env::var("DUPFLOW_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let dir = temp_dir("text-parquet");
    let jsonl = write_corpus(&dir, "rows.jsonl");
    let parquet = dir.join("rows.parquet");
    let write = "import sys, json\nimport pyarrow as pa, pyarrow.parquet as pq\n\
                 rows = []\nfor l in open(sys.argv[1]):\n    try:\n        r = json.loads(l)\n    except ValueError:\n        continue\n    if 'text' in r: rows.append(r)\n\
                 t = pa.table({'id': [str(r['id']) for r in rows], 'text': [r['text'] for r in rows], 'n': list(range(len(rows)))})\n\
                 pq.write_table(t, sys.argv[2], compression='zstd', row_group_size=7)";
    match Command::new(&python).args(["-c", write]).arg(&jsonl).arg(&parquet).output() {
        Ok(out) if out.status.success() => {}
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("No module named 'pyarrow'") => {
            common::skip(
                "Parquet round trip",
                &format!(
                    "{python} has no pyarrow (.ci/run installs it; or set DUPFLOW_TEST_PYTHON)"
                ),
            );
            return;
        }
        Ok(out) => {
            panic!("pyarrow could not write the corpus: {}", String::from_utf8_lossy(&out.stderr))
        }
        Err(e) => {
            common::skip("Parquet round trip", &format!("{python} not runnable ({e})"));
            return;
        }
    }
    for (annotate, rows) in [(true, 40), (false, 31)] {
        let out = dir.join(format!("out-{annotate}"));
        let mut command = dupflow();
        command.args(["dedup", "--out"]).arg(&out).arg(&parquet);
        if annotate {
            command.arg("--annotate");
        }
        run_ok(&mut command);
        let read = "import sys, json\nimport pyarrow.parquet as pq\nt = pq.read_table(sys.argv[1])\n\
                    print(json.dumps({'columns': t.column_names, 'rows': t.num_rows, 'marks': dict(zip(t['id'].to_pylist(), t['duplicate_of'].to_pylist())), 'n': t['n'].to_pylist()[:3]}))";
        let out = Command::new(&python)
            .args(["-c", read])
            .arg(out.join("rows.parquet"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pyarrow reads dupflow's Parquet: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(got["columns"], json!(["id", "text", "n", "cluster", "duplicate_of"]));
        assert_eq!(got["rows"], rows, "annotate={annotate}");
        assert_eq!(got["n"], json!([0, 1, 2]), "the input's columns are kept");
        let marks: BTreeMap<String, Option<String>> =
            serde_json::from_value(got["marks"].clone()).unwrap();
        let (_, truth) = corpus();
        if annotate {
            assert_eq!(marks, truth);
        } else {
            assert!(marks.values().all(Option::is_none));
            assert_eq!(marks.len(), truth.values().filter(|d| d.is_none()).count());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
