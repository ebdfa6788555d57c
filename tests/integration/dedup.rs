//! `dupflow dedup`: one capture per cluster, every record byte for byte the input's, request
//! records leave with their response, `removed.jsonl` names the page kept in each one's place;
//! `--annotate` keeps everything and adds a metadata record per near-duplicate. The output is
//! read back by dupflow's own framer, by `dupflow run`, and by warcio (Python) when present.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use dupflow::source::framing::Framer;
use dupflow::source::Input;

use common::{dupflow, temp_dir};

/// Every record of a WARC: id → (type, target URI, concurrent-to ids, bytes as framed).
type Records = Vec<Record>;
/// One record: id, type, target URI, concurrent-to ids, bytes as framed.
type Record = (String, String, String, Vec<String>, Vec<u8>);

fn records(input: &Input) -> Records {
    let mut framer = Framer::new(input.open().unwrap(), 1 << 30).with_raw_headers();
    let mut out = Vec::new();
    while let Some(item) = framer.next_record() {
        let r = item.expect("no damaged record");
        let header = |n: &str| r.header(n).unwrap_or("").to_string();
        let concurrent = r
            .headers
            .iter()
            .filter(|(n, _)| n == "WARC-Concurrent-To")
            .map(|(_, v)| v.clone())
            .collect();
        let mut bytes = r.raw_header.clone().unwrap();
        bytes.extend_from_slice(&r.block);
        // Some tools write the URI in angle brackets; the clusters name it without.
        let uri =
            header("WARC-Target-URI").trim_start_matches('<').trim_end_matches('>').to_string();
        out.push((header("WARC-Record-ID"), header("WARC-Type"), uri, concurrent, bytes));
    }
    out
}

fn run_ok(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(output.status.success(), "failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// url → cluster of a `dupflow run --out` directory.
fn clusters(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(dir.join("clusters.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["url"].as_str().unwrap().to_string(), v["cluster"].as_str().unwrap().to_string())
        })
        .collect()
}

fn removed(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("removed.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Checks a dedup of `input_args` (its records `input`) against a run of the same inputs:
/// returns the output's records.
fn check_dedup(name: &str, input_args: &[&str], input: &Records) -> Records {
    let run_dir = temp_dir(&format!("{name}-run"));
    run_ok(dupflow().arg("run").args(input_args).args(["--quiet", "--out"]).arg(&run_dir));
    let before = clusters(&run_dir);
    let out = temp_dir(&format!("{name}-dedup"));
    run_ok(dupflow().arg("dedup").args(input_args).args(["--keep", "earliest", "--out"]).arg(&out));
    let files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    assert_eq!(files.len(), 1, "one output per input");
    let output = records(&Input::File(files[0].clone()));

    // Every record is the input's, byte for byte (the framer keeps header and block as read).
    let by_id: HashMap<&str, &Vec<u8>> = input.iter().map(|r| (r.0.as_str(), &r.4)).collect();
    for r in &output {
        assert_eq!(Some(&&r.4), by_id.get(r.0.as_str()), "record {} differs from the input's", r.0);
    }
    // One response per cluster: every page is kept or names the page kept in its place (in the
    // output); the pages of a cluster share one kept page. Later rounds may merge clusters of
    // the first (pages that meet once their copies are gone), never split one.
    let responses: BTreeSet<&str> = output
        .iter()
        .filter(|r| r.1 == "response" && before.contains_key(&r.2))
        .map(|r| r.2.as_str())
        .collect();
    let removed = removed(&out);
    let kept_for: HashMap<&str, &str> = removed
        .iter()
        .map(|r| (r["url"].as_str().unwrap(), r["kept_url"].as_str().unwrap()))
        .collect();
    assert_eq!(removed.len() + responses.len(), before.len(), "every page kept or left out");
    // Each page left out names another page it was verified against, and their resemblance.
    for row in &removed {
        let (url, leader) = (row["url"].as_str().unwrap(), row["leader_url"].as_str().unwrap());
        assert!(leader != url && before.contains_key(leader), "{row}");
        let similarity = row["similarity"].as_f64().unwrap();
        assert!(similarity > 0.0 && similarity <= 1.0, "{row}");
    }
    for (url, kept) in &kept_for {
        assert!(
            responses.contains(kept),
            "{url} is left out for {kept}, which is not in the output"
        );
    }
    let mut per_cluster: HashMap<&String, BTreeSet<&str>> = HashMap::new();
    for url in before.keys() {
        per_cluster
            .entry(&before[url])
            .or_default()
            .insert(kept_for.get(url.as_str()).copied().unwrap_or(url.as_str()));
    }
    assert!(per_cluster.values().all(|kept| kept.len() == 1), "a cluster of the run was split");
    let kept_clusters: BTreeSet<&String> = responses.iter().map(|u| &before[*u]).collect();
    assert_eq!(kept_clusters.len(), responses.len(), "two pages of one cluster kept");
    // Run again on the output: nothing left to cluster.
    let again = temp_dir(&format!("{name}-again"));
    let files_out: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    run_ok(dupflow().arg("run").args(&files_out).args(["--quiet", "--out"]).arg(&again));
    let after = clusters(&again);
    assert_eq!(after.len(), responses.len());
    assert_eq!(
        after.values().collect::<BTreeSet<_>>().len(),
        after.len(),
        "dupflow run on the output finds a cluster of two pages"
    );
    let gone: BTreeSet<&str> = removed.iter().map(|r| r["record_id"].as_str().unwrap()).collect();
    let dropped_with: BTreeSet<&str> = input
        .iter()
        .filter(|r| gone.contains(r.0.as_str()))
        .flat_map(|r| r.3.iter().map(String::as_str))
        .collect();
    let expected: Vec<&str> = input
        .iter()
        .filter(|r| {
            !gone.contains(r.0.as_str())
                && !dropped_with.contains(r.0.as_str())
                && !r.3.iter().any(|c| gone.contains(c.as_str()))
        })
        .map(|r| r.0.as_str())
        .collect();
    assert_eq!(
        output.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        expected,
        "records kept, in input order"
    );
    warcio_reads(&files[0], output.len());
    output
}

/// warcio iterates the output (every record, gzip member by member) when it is importable
/// (`.ci/run` installs it into a venv and names its python in DUPFLOW_TEST_PYTHON).
fn warcio_reads(path: &Path, expected: usize) {
    let python = std::env::var("DUPFLOW_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import sys\nfrom warcio.archiveiterator import ArchiveIterator\n\
                  n = 0\nwith open(sys.argv[1], 'rb') as f:\n    for r in ArchiveIterator(f):\n        r.content_stream().read()\n        n += 1\nprint(n)";
    match Command::new(&python).args(["-c", script]).arg(path).output() {
        Ok(out) if out.status.success() => {
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                expected.to_string(),
                "warcio counts the records"
            )
        }
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("No module named 'warcio'") => {
            common::skip(
                "warcio read-back",
                &format!(
                    "{python} has no warcio (.ci/run installs it; or set DUPFLOW_TEST_PYTHON)"
                ),
            )
        }
        Ok(out) => panic!(
            "warcio could not read {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => common::skip("warcio read-back", &format!("{python} not runnable ({e})")),
    }
}

#[test]
fn the_default_input_deduplicated_keeps_one_capture_per_cluster() {
    let input = records(&dupflow::DEFAULT_INPUT);
    let output = check_dedup("default", &[], &input);
    assert!(output.len() < input.len());
}

#[test]
fn annotating_keeps_every_record_and_marks_each_near_duplicate() {
    let out = temp_dir("annotate");
    let summary = run_ok(dupflow().args(["dedup", "--annotate", "--out"]).arg(&out));
    let input = records(&dupflow::DEFAULT_INPUT);
    let output = records(&Input::File(out.join("default.warc.gz")));
    let removed = removed(&out);
    assert!(!removed.is_empty());
    assert_eq!(output.len(), input.len() + removed.len());
    // The summary counts the records written, the metadata records added among them.
    let counted = format!("records:   {} in, {} out", input.len(), output.len());
    assert!(summary.contains(&counted), "{counted}: {summary}");
    let originals: Vec<&Vec<u8>> = output
        .iter()
        .filter(|r| r.1 != "metadata" || input.iter().any(|i| i.0 == r.0))
        .map(|r| &r.4)
        .collect();
    assert_eq!(
        originals,
        input.iter().map(|r| &r.4).collect::<Vec<_>>(),
        "the input's records, in order, unchanged"
    );
    for r in &removed {
        let url = r["url"].as_str().unwrap();
        let note = output
            .iter()
            .find(|o| o.1 == "metadata" && o.2 == url && !input.iter().any(|i| i.0 == o.0))
            .unwrap_or_else(|| panic!("no annotation for {url}"));
        let text = String::from_utf8_lossy(&note.4);
        assert!(
            text.contains(&format!(
                "WARC-Refers-To-Target-URI: {}\r\n",
                r["kept_url"].as_str().unwrap()
            )),
            "{text}"
        );
        assert!(text.contains("WARC-Refers-To-Date: "), "{text}");
    }
    warcio_reads(&out.join("default.warc.gz"), output.len());
}

#[test]
fn the_dev_crawl_deduplicated_keeps_one_capture_per_cluster() {
    let Some(shared) = common::shared_dir() else { return };
    let path = shared.join("bench/docs-dev.warc.gz");
    let input = records(&Input::File(path.clone()));
    check_dedup("dev", &[path.to_str().unwrap()], &input);
}

/// `--keep canonical`: in a cluster, the member its members name canonical stays (by a
/// `<link rel="canonical">` or an HTTP `Link` header, relative or absolute), not the earliest; a
/// cluster whose pages name none keeps its earliest.
#[test]
fn keep_canonical_keeps_the_member_the_others_name() {
    let dir = temp_dir("dedup-canonical");
    let corpus = common::synth::Corpus::new(5, 2);
    let body = |base: usize, head: &str| {
        let text: String = corpus.text(base, 0).iter().map(|s| format!("<p>{s}</p>")).collect();
        format!("<html><head>{head}<title>t</title></head><body>{text}</body></html>")
    };
    let mut warc = Vec::new();
    // Cluster one: three copies; the earliest names /b, /b names itself, /c names it through a
    // Link header (the record's HTTP head carries it).
    warc.extend(common::synth::warc_response(
        "http://a.example/a",
        1,
        1,
        &body(0, r#"<link rel="canonical" href="/b">"#),
    ));
    warc.extend(common::synth::warc_response(
        "http://a.example/b",
        2,
        2,
        &body(0, r#"<link rel="canonical" href="http://a.example/b">"#),
    ));
    let linked = common::synth::warc_response("http://a.example/c", 3, 3, &body(0, ""));
    let linked = String::from_utf8(linked).unwrap().replacen(
        "Content-Type: text/html; charset=utf-8\r\n",
        "Content-Type: text/html; charset=utf-8\r\nLink: <http://a.example/b>; rel=\"canonical\"\r\n",
        1,
    );
    // The WARC block grew by the header: its Content-Length with it.
    let extra = "Link: <http://a.example/b>; rel=\"canonical\"\r\n".len();
    let length = linked.split("Content-Length: ").nth(1).unwrap().split("\r\n").next().unwrap();
    let linked = linked.replacen(
        &format!("Content-Length: {length}\r\n\r\nHTTP"),
        &format!("Content-Length: {}\r\n\r\nHTTP", length.parse::<usize>().unwrap() + extra),
        1,
    );
    warc.extend(linked.into_bytes());
    // Cluster two: two copies naming nothing.
    warc.extend(common::synth::warc_response("http://a.example/x", 4, 4, &body(1, "")));
    warc.extend(common::synth::warc_response("http://a.example/y", 5, 5, &body(1, "")));
    let input = dir.join("crawl.warc");
    std::fs::write(&input, &warc).unwrap();
    let out = dir.join("out");
    let output = dupflow()
        .args([
            "dedup",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--keep",
            "canonical",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let kept: BTreeMap<String, String> = removed(&out)
        .iter()
        .map(|r| {
            (r["url"].as_str().unwrap().to_string(), r["kept_url"].as_str().unwrap().to_string())
        })
        .collect();
    let want: BTreeMap<String, String> = [
        ("http://a.example/a", "http://a.example/b"),
        ("http://a.example/c", "http://a.example/b"),
        ("http://a.example/y", "http://a.example/x"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(kept, want);
    // Without the policy the earliest stays.
    let out = dir.join("earliest");
    let output = dupflow()
        .args(["dedup", input.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(removed(&out).iter().all(|r| r["kept_url"] != "http://a.example/b"));
}

/// The response records' ids of a WARC.
fn response_ids(path: &Path) -> BTreeSet<String> {
    records(&Input::File(path.to_path_buf()))
        .into_iter()
        .filter(|r| r.1 == "response")
        .map(|r| r.0)
        .collect()
}

/// `dedup --against`: a crawl split in two by record, the second half deduplicated against the
/// first's index (`dupflow index build`) keeps exactly the second half's pages that deduplicating the whole keeps (in
/// one round); the index is left as it was, and with --update-index it holds the second half
/// too, so that deduplicating it again keeps nothing that was clustered.
fn check_against(name: &str, path: &Path, exercised: bool) {
    let dir = temp_dir(name);
    let all = records(&Input::File(path.to_path_buf()));
    let mid = (all.len() / 2..all.len()).find(|&i| all[i].1 == "request").unwrap_or(all.len() / 2);
    let write = |file: &str, part: &[Record]| {
        let mut bytes = Vec::new();
        for record in part {
            bytes.extend_from_slice(&record.4);
            bytes.extend_from_slice(b"\r\n\r\n");
        }
        let p = dir.join(file);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let (first, second) = (write("first.warc", &all[..mid]), write("second.warc", &all[mid..]));
    let index = dir.join("index");
    // An index keeps every capture: a run resuming from it does too.
    let keep = dir.join("keep.toml");
    std::fs::write(&keep, "[source]\nrecrawls = \"keep\"\n").unwrap();
    // A run over `input` that resumes from (and checkpoints into) the index.
    let indexed_run = |input: &Path, out: &str| {
        run_ok(
            dupflow()
                .arg("run")
                .arg(input)
                .arg("--config")
                .arg(&keep)
                .arg("--checkpoint")
                .arg(&index)
                .arg("--out")
                .arg(dir.join(out)),
        )
    };
    // The second half deduplicated against the index.
    let against = |out: &str, update: bool| {
        let mut command = dupflow();
        command
            .arg("dedup")
            .arg(&second)
            .arg("--against")
            .arg(&index)
            .arg("--out")
            .arg(dir.join(out));
        if update {
            command.arg("--update-index");
        }
        run_ok(&mut command)
    };
    let built = run_ok(dupflow().args(["index", "build"]).arg(&first).arg("--index").arg(&index));
    assert!(built.contains("pages:"), "{built}");
    let manifest = std::fs::read(index.join("checkpoint.json")).unwrap();
    run_ok(
        dupflow().arg("dedup").arg(path).args(["--rounds", "1", "--out"]).arg(dir.join("whole")),
    );
    let stdout = against("against", false);
    assert!(stdout.contains("index:"), "{stdout}");
    let whole_name = path.file_name().unwrap().to_str().unwrap();
    let second_ids: BTreeSet<String> =
        all[mid..].iter().filter(|r| r.1 == "response").map(|r| r.0.clone()).collect();
    let kept_whole: BTreeSet<String> = response_ids(&dir.join("whole").join(whole_name))
        .intersection(&second_ids)
        .cloned()
        .collect();
    let kept_against = response_ids(&dir.join("against/second.warc.gz"));
    assert_eq!(kept_against, kept_whole, "{name}: the second half's kept pages");
    if exercised {
        assert!(kept_against.len() < second_ids.len(), "{name}: nothing was left out");
    }
    assert_eq!(
        std::fs::read(index.join("checkpoint.json")).unwrap(),
        manifest,
        "the index changed"
    );
    // Every page left out points at a page kept: the index's or the new crawl's.
    for row in removed(&dir.join("against")) {
        assert!(!row["kept_url"].as_str().unwrap().is_empty(), "{row}");
    }
    // Updated, the index holds both halves: resumed, it clusters every page of the whole.
    against("update", true);
    assert_ne!(std::fs::read(index.join("checkpoint.json")).unwrap(), manifest);
    indexed_run(&first, "resumed");
    run_ok(
        dupflow().arg("run").arg(path).arg("--config").arg(&keep).arg("--out").arg(dir.join("all")),
    );
    assert_eq!(
        clusters(&dir.join("resumed")),
        clusters(&dir.join("all")),
        "{name}: the updated index"
    );
}

#[test]
fn dedup_against_an_index_keeps_what_the_whole_keeps() {
    let default = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    // Its clusters may all fall in one half: the equality is checked, not that pages left.
    check_against("against-default", &default, false);
    let Some(shared) = common::shared_dir() else { return };
    check_against("against-dev", &shared.join("bench/docs-dev.warc.gz"), true);
}

/// `[urls] normalize`: captures at aliases of one URL (`https` for `http`, a trailing slash, a
/// fragment, a tracking parameter) are one page, the newest; `run` counts them and `dedup` leaves
/// the older out as aliases of the page kept. A copy at another URL (`?print=1`) is still a
/// near-duplicate, and a re-crawl of the very URL is not an alias. With normalization off every
/// capture is a page of its own.
#[test]
fn url_aliases_are_one_page_and_dedup_leaves_the_older_out() {
    let dir = temp_dir("dedup-aliases");
    let corpus = common::synth::Corpus::new(7, 2);
    let mut warc = Vec::new();
    let captures = [
        ("https://news.example/river", 1, 0),
        ("http://news.example/river/?utm_source=feed&utm_medium=rss", 2, 0),
        ("http://news.example/river#comments", 3, 0),
        ("http://news.example/river?print=1", 4, 0),
        ("http://news.example/other", 5, 1),
        ("http://news.example/other", 6, 1),
    ];
    for (n, (url, secs, base)) in captures.iter().enumerate() {
        warc.extend(common::synth::warc_response(url, *secs, n as u64 + 1, &corpus.html(*base, 0)));
    }
    let input = dir.join("crawl.warc");
    std::fs::write(&input, &warc).unwrap();

    let run = dir.join("run");
    let summary = run_ok(dupflow().args(["run", input.to_str().unwrap(), "--out"]).arg(&run));
    assert!(summary.contains("urls:      2 captures at an alias"), "{summary}");
    let held = clusters(&run);
    assert_eq!(
        held.keys().collect::<Vec<_>>(),
        [
            "http://news.example/other",
            "http://news.example/river#comments",
            "http://news.example/river?print=1"
        ],
        "the newest alias is the page, named by its record's URL"
    );
    assert_eq!(
        held["http://news.example/river#comments"],
        held["http://news.example/river?print=1"]
    );

    let out = dir.join("dedup");
    run_ok(dupflow().args(["dedup", input.to_str().unwrap(), "--out"]).arg(&out));
    let left: BTreeMap<String, (String, bool)> = removed(&out)
        .iter()
        .map(|r| {
            let alias = r["url_alias"].as_bool().unwrap_or(false);
            (
                r["url"].as_str().unwrap().to_string(),
                (r["kept_url"].as_str().unwrap().to_string(), alias),
            )
        })
        .collect();
    let kept = "http://news.example/river#comments".to_string();
    assert_eq!(
        left,
        BTreeMap::from([
            ("https://news.example/river".to_string(), (kept.clone(), true)),
            (
                "http://news.example/river/?utm_source=feed&utm_medium=rss".to_string(),
                (kept.clone(), true)
            ),
            ("http://news.example/river?print=1".to_string(), (kept.clone(), false)),
        ])
    );
    let written: Vec<String> = records(&Input::File(out.join("crawl.warc.gz")))
        .into_iter()
        .filter(|r| r.1 == "response")
        .map(|r| r.2)
        .collect();
    // The re-crawl of /other is no alias: both its captures stay, as without normalization.
    assert_eq!(
        written,
        [
            "http://news.example/river#comments",
            "http://news.example/other",
            "http://news.example/other"
        ]
    );

    // Off: five pages, the four copies of the river in one cluster, nothing counted.
    let config = dir.join("exact.toml");
    std::fs::write(&config, "[urls]\nnormalize = false\n").unwrap();
    let exact = dir.join("exact");
    let summary = run_ok(
        dupflow()
            .args(["run", input.to_str().unwrap(), "--config", config.to_str().unwrap(), "--out"])
            .arg(&exact),
    );
    assert!(!summary.contains("urls:"), "{summary}");
    let held = clusters(&exact);
    assert_eq!(held.len(), 5);
    assert_eq!(held.values().collect::<BTreeSet<_>>().len(), 2);
}

/// `dedup --against` the index of last month's crawl, with the default settings, where this
/// month's crawl captures the same URLs again: the index keeps its pages, a capture whose
/// content is unchanged (or a near-duplicate of it) is left out pointing at the indexed
/// capture, a changed one is kept, and a copy at another host is left out too.
#[test]
fn dedup_against_last_months_crawl_leaves_out_unchanged_recaptures() {
    let dir = temp_dir("dedup-recrawl");
    let corpus = common::synth::Corpus::new(11, 8);
    let url = |n: usize| format!("http://site.example/page/{n}");
    let write = |name: &str, captures: &[(String, u64, usize, usize)]| {
        let mut warc = Vec::new();
        for (url, secs, base, variant) in captures {
            let record = secs * 100 + *base as u64;
            let html = corpus.html(*base, *variant);
            warc.extend(common::synth::warc_response(url, *secs, record, &html));
        }
        let path = dir.join(name);
        std::fs::write(&path, warc).unwrap();
        path
    };
    // Last month: five pages.
    let first: Vec<_> = (0..5).map(|n| (url(n), 10 + n as u64, n, 0)).collect();
    let crawl_1 = write("crawl-1.warc", &first);
    // This month, days later: pages 0 and 1 unchanged, 2 with one sentence of twelve edited,
    // 3 and 4 rewritten; page 0's text copied onto a mirror.
    let day = 5 * 86_400;
    let second = vec![
        (url(0), day, 0, 0),
        (url(1), day + 1, 1, 0),
        (url(2), day + 2, 2, 1),
        (url(3), day + 3, 5, 0),
        (url(4), day + 4, 6, 0),
        ("http://mirror.example/copy-of-0".to_string(), day + 5, 0, 0),
    ];
    let crawl_2 = write("crawl-2.warc", &second);
    let index = dir.join("index");
    run_ok(dupflow().args(["index", "build"]).arg(&crawl_1).arg("--index").arg(&index));
    let out = dir.join("out");
    let stdout = run_ok(
        dupflow().arg("dedup").arg(&crawl_2).arg("--against").arg(&index).arg("--out").arg(&out),
    );
    assert!(stdout.contains("index:     5 pages of"), "{stdout}");
    assert!(stdout.contains("pages:     kept 2 of 6"), "{stdout}");
    let left: BTreeMap<String, String> = removed(&out)
        .iter()
        .map(|r| {
            (r["url"].as_str().unwrap().to_string(), r["kept_url"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(
        left,
        BTreeMap::from([
            (url(0), url(0)),
            (url(1), url(1)),
            (url(2), url(2)),
            ("http://mirror.example/copy-of-0".to_string(), url(0)),
        ]),
        "each unchanged capture points at its indexed capture"
    );
    let kept: Vec<String> = records(&Input::File(out.join("crawl-2.warc.gz")))
        .into_iter()
        .filter(|r| r.1 == "response")
        .map(|r| r.2)
        .collect();
    assert_eq!(kept, [url(3), url(4)], "the rewritten pages are kept");
    // The kept date is the indexed capture's: the left-out page is not its own replacement.
    for row in removed(&out) {
        assert_ne!(row["kept_record_id"], row["record_id"], "{row}");
    }
    // Last month's crawl against its own index: every record is one the index holds.
    let stdout = run_ok(
        dupflow()
            .arg("dedup")
            .arg(&crawl_1)
            .arg("--against")
            .arg(&index)
            .arg("--out")
            .arg(dir.join("again")),
    );
    assert!(stdout.contains("pages:     kept 0 of 5"), "{stdout}");
    assert!(stdout.contains("5 pages of the inputs are records the index holds"), "{stdout}");
    assert!(removed(&dir.join("again")).iter().all(|r| r["already_indexed"] == true));
    // Annotated: every record stays, each unchanged capture with a metadata record naming the
    // indexed capture and its date.
    let annotated = dir.join("annotated");
    run_ok(
        dupflow()
            .arg("dedup")
            .arg(&crawl_2)
            .args(["--annotate", "--against"])
            .arg(&index)
            .arg("--out")
            .arg(&annotated),
    );
    let notes: Vec<String> = records(&Input::File(annotated.join("crawl-2.warc.gz")))
        .into_iter()
        .filter(|r| r.1 == "metadata")
        .map(|r| String::from_utf8_lossy(&r.4).into_owned())
        .collect();
    assert_eq!(notes.len(), 4);
    assert!(
        notes.iter().any(|n| n.contains(&format!("WARC-Refers-To-Target-URI: {}", url(0)))
            && n.contains("WARC-Refers-To-Date: 2026-01-01T00:00:10Z")),
        "{notes:?}"
    );
    // Updated with this month's crawl, the index holds both months: the next month's
    // unchanged capture of page 3 points at this month's.
    run_ok(
        dupflow()
            .arg("dedup")
            .arg(&crawl_2)
            .arg("--against")
            .arg(&index)
            .arg("--update-index")
            .arg("--out")
            .arg(dir.join("update")),
    );
    let third = vec![(url(3), 2 * day, 5, 0), (url(4), 2 * day + 1, 7, 0)];
    let crawl_3 = write("crawl-3.warc", &third);
    let out = dir.join("out-3");
    let stdout = run_ok(
        dupflow().arg("dedup").arg(&crawl_3).arg("--against").arg(&index).arg("--out").arg(&out),
    );
    assert!(stdout.contains("index:     11 pages of"), "{stdout}");
    assert!(stdout.contains("pages:     kept 1 of 2"), "{stdout}");
    let left: Vec<String> =
        removed(&out).iter().map(|r| r["url"].as_str().unwrap().to_string()).collect();
    assert_eq!(left, [url(3)]);
}
