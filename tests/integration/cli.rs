//! End to end through the `dupflow` binary: the default input's clusters (golden), determinism
//! over worker counts and input order, 2 processes equal 1, `validate`, and clear errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{dupflow, temp_dir};

use crate::common;

/// url → (cluster id, size) from clusters.jsonl.
fn clusters(dir: &Path) -> BTreeMap<String, (String, u64)> {
    std::fs::read_to_string(dir.join("clusters.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["url"].as_str().unwrap().to_string(),
                (v["cluster"].as_str().unwrap().to_string(), v["size"].as_u64().unwrap()),
            )
        })
        .collect()
}

fn run(args: &[&str], out: &Path) -> String {
    let output = dupflow().arg("run").args(args).arg("--out").arg(out).output().unwrap();
    assert!(output.status.success(), "dupflow failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn default_input_gives_the_documented_clusters() {
    let out = temp_dir("default");
    // `--out DIR/`: the files are named as joined to it.
    let slashed = format!("{}/", out.display());
    let output = dupflow().args(["run", "--out", &slashed]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("pages:     8"), "{stdout}");
    assert!(stdout.contains(&format!("wrote {}clusters.jsonl, ", slashed)), "{stdout}");
    // The input is named when its reading starts, in the log, not in the summary.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("reading 1 input: (embedded)"), "{stderr}");
    let got = clusters(&out);
    let expected: BTreeMap<String, Vec<String>> = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.expected.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // Same grouping (ids are anchors, chosen by hash: the grouping is what is documented).
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (url, (cluster, _)) in &got {
        groups.entry(cluster.clone()).or_default().push(url.clone());
    }
    let mut got_groups: Vec<Vec<String>> = groups.into_values().collect();
    got_groups.sort();
    let mut expected_groups: Vec<Vec<String>> = expected.into_values().collect();
    expected_groups.iter_mut().for_each(|g| g.sort());
    expected_groups.sort();
    assert_eq!(got_groups, expected_groups);
    // No temporary files are left behind; revisits are written.
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    assert_eq!(std::fs::read_to_string(out.join("revisits.jsonl")).unwrap().lines().count(), 1);
    let changes = std::fs::read_to_string(out.join("changes.jsonl")).unwrap();
    assert_eq!(changes.lines().count(), 8, "one insertion per page");
}

#[test]
fn clusters_do_not_depend_on_workers_or_input_order() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/malformed");
    let a = fixtures.join("bad-content-length.warc.gz");
    let b = fixtures.join("garbage-between.warc");
    let default_out = temp_dir("order-0");
    run(&[], &default_out);
    let baseline = clusters(&default_out);
    for workers in ["1", "2", "4"] {
        let out = temp_dir(&format!("workers-{workers}"));
        run(&["--workers", workers], &out);
        assert_eq!(clusters(&out), baseline, "{workers} workers");
    }
    let forward = temp_dir("order-1");
    run(&[a.to_str().unwrap(), b.to_str().unwrap(), "--workers", "2"], &forward);
    let backward = temp_dir("order-2");
    run(&[b.to_str().unwrap(), a.to_str().unwrap(), "--workers", "3"], &backward);
    assert_eq!(clusters(&forward), clusters(&backward));
}

#[test]
fn two_processes_give_the_same_clusters_as_one() {
    let single = temp_dir("single");
    run(&["--workers", "1"], &single);
    let dir = temp_dir("cluster");
    // Free ports: bind, read the port, release.
    let ports: Vec<u16> = (0..2)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port())
        .collect();
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1])).unwrap();
    let out = dir.join("out");
    let children: Vec<_> = (0..2)
        .map(|i| {
            dupflow()
                .args(["run", "--workers", "1", "--processes", "2", "--process", &i.to_string()])
                .arg("--hostfile")
                .arg(&hostfile)
                .arg("--out")
                .arg(&out)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "process failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // Each process wrote its shard; merged, they are the one-process file line for line.
    assert!(!out.join("clusters.jsonl").exists());
    let merged = dupflow().arg("merge").arg(&out).output().unwrap();
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    assert_eq!(clusters(&out), clusters(&single));
    assert_eq!(
        std::fs::read(out.join("clusters.jsonl")).unwrap(),
        std::fs::read(single.join("clusters.jsonl")).unwrap()
    );
}

#[test]
fn validate_names_the_wrong_key() {
    let dir = temp_dir("validate");
    let ok = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline.toml");
    let output = dupflow().arg("validate").arg(&ok).output().unwrap();
    assert!(output.status.success());
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[verify]\nthreshold = 0.5\ncolour = 3\n").unwrap();
    let output = dupflow().arg("validate").arg(&bad).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("colour"), "{stderr}");
}

#[test]
fn a_missing_input_is_a_clear_error() {
    let output = dupflow().args(["run", "/nonexistent/crawl.warc.gz"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no such input: /nonexistent/crawl.warc.gz"), "{stderr}");
}

#[test]
fn damaged_records_are_counted_and_the_rest_clustered() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/malformed/bad-content-length.warc");
    let out = temp_dir("damaged");
    let stdout = run(&[file.to_str().unwrap()], &out);
    assert!(stdout.contains("bad_content_length 2"), "{stdout}");
    assert_eq!(clusters(&out).len(), 3);
}

/// Each fingerprint type runs end to end on the default input, and finds the river family
/// (three edited copies of one article on one site).
#[test]
fn every_fingerprint_type_runs_end_to_end() {
    let river = [
        "http://gazette.example/news/river-rises",
        "http://gazette.example/news/river-rises?print=1",
        "http://gazette.example/archive/2026/river",
    ];
    for (name, toml) in [
        ("sentence", "[fingerprint]\ntype = \"sentence\"\n"),
        ("minhash", "[fingerprint]\ntype = \"minhash\"\nbands = 20\nrows = 2\n[verify]\ntype = \"jaccard\"\nthreshold = 0.5\n"),
        ("simhash", "[fingerprint]\ntype = \"simhash\"\nmax_distance = 12\n[verify]\ntype = \"lcs\"\n"),
        ("cosine", "[verify]\ntype = \"cosine\"\nthreshold = 0.6\n"),
        ("shingles", "[verify]\ntype = \"jaccard\"\nthreshold = 0.4\n"),
    ] {
        let dir = temp_dir(&format!("method-{name}"));
        let config = dir.join("p.toml");
        std::fs::write(&config, toml).unwrap();
        let out = dir.join("out");
        run(&["--config", config.to_str().unwrap()], &out);
        let got = clusters(&out);
        assert_eq!(got.len(), 8, "{name}");
        let ids: std::collections::BTreeSet<&String> = river.iter().map(|u| &got[*u].0).collect();
        assert_eq!(ids.len(), 1, "{name}: the river family is one cluster: {got:?}");
        assert_eq!(got["http://gazette.example/news/chess"].1, 1, "{name}: chess stays alone");
    }
}

/// `dupflow eval` prints exactly what ../shared/bench/score.py prints (its lines), on a truth
/// fixture made for it.
#[test]
fn eval_agrees_with_score_py() {
    let Some(score_py) = [Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/score.py")]
        .into_iter()
        .find(|p| p.exists())
    else {
        common::skip(
            "eval against score.py",
            "../shared/bench/score.py is absent (the shared folder is not beside the checkout)",
        );
        return;
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eval");
    for by_section in [false, true] {
        let mut args = vec![fixtures.join("truth.json"), fixtures.join("clusters.jsonl")];
        let mut ours = dupflow();
        ours.arg("eval").arg("--truth").arg(&args[0]).arg(&args[1]);
        if by_section {
            ours.arg("--by-section");
            args.push(PathBuf::from("--by-section"));
        }
        let ours = String::from_utf8(ours.output().unwrap().stdout).unwrap();
        let theirs = match Command::new("python3").arg(&score_py).args(&args).output() {
            Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap(),
            _ => {
                common::skip("eval against score.py", "python3 could not run score.py");
                return;
            }
        };
        let ours_common: Vec<&str> =
            ours.lines().filter(|l| !l.starts_with("pairwise precision by host")).collect();
        assert_eq!(ours_common, theirs.lines().collect::<Vec<_>>(), "by_section {by_section}");
        assert!(ours.contains("same-host"), "{ours}");
    }
}

#[test]
fn eval_reads_pair_files() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eval");
    let output = dupflow()
        .arg("eval")
        .arg("--truth")
        .arg(fixtures.join("pairs.txt"))
        .arg(fixtures.join("clusters.jsonl"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    // 3 judged duplicate pairs, 2 predicted; 1 judged non-duplicate pair, predicted together.
    assert!(text.contains("all: precision 0.6667 recall 0.6667"), "{text}");
}

#[test]
fn sentences_prints_normalized_sentences() {
    let output = dupflow()
        .args(["sentences", "fixtures/default.warc.gz"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.lines().any(|l| l == "the river rose three feet overnight after a week of steady rain in the northern hills"), "{text}");
    assert!(text.lines().all(|l| !l.is_empty() && l == l.to_lowercase()));
}

/// The HTML parser's warnings about a page's markup do not reach stderr: a table with stray
/// text in it (foster parenting) printed one line per node, thousands in a real crawl.
#[test]
fn markup_warnings_stay_off_stderr() {
    let dir = temp_dir("markup-warnings");
    let html = "<html><body><table>stray text<tr><td>a cell of the table</td></tr>more stray</table><p>after the table</p></body></html>";
    let warc = dir.join("tables.warc");
    std::fs::write(
        &warc,
        common::synth::warc_response("http://example.org/t", 1_400_000_000, 1, html),
    )
    .unwrap();
    let output = dupflow().arg("sentences").arg(&warc).env_remove("DUPFLOW_LOG").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    // The stray text is moved before the table, as a browser shows it (both pieces, one node).
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        ["stray textmore stray", "a cell of the table", "after the table"],
        "{text}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("foster parenting"), "{stderr}");
    // Asked for, they are there.
    let output = dupflow()
        .arg("sentences")
        .arg(&warc)
        .env("DUPFLOW_LOG", "info,html5ever=warn")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("foster parenting"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn check(args: &[&str], stdin: &str) -> serde_json::Value {
    use std::io::Write as _;
    let mut child = dupflow()
        .arg("check")
        .args(args)
        .args(["--corpus", "fixtures/default.warc.gz"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn check_reports_share_spans_and_the_pages_a_patchwork_comes_from() {
    // A corpus page against the others: the print version is the article's copy.
    let v = check(&["http://gazette.example/news/river-rises?print=1"], "");
    assert_eq!(v["verdict"], "duplicate");
    assert!(v["share"].as_f64().unwrap() > 0.8);
    assert_eq!(v["cover"][0]["url"], "http://gazette.example/news/river-rises");
    // A text stitched from two articles and one new sentence.
    let text = "The Saturday market returns to the square next month with forty stalls and a new bakery.\n\
                Farmers from the valley will sell cheese, apples, honey and bread baked the same morning.\n\
                A grant from the county pays for two more librarians and longer evening hours.\n\
                Children's story time moves to Sunday afternoons so that working parents can come.\n\
                Nothing like this sentence appears anywhere in the corpus at all, we are quite sure.\n";
    let v = check(&["-", "--threshold", "0.9"], text);
    assert_eq!(v["sentences"], 5);
    assert_eq!(v["duplicate_sentences"], 4);
    assert_eq!(v["verdict"], "new", "a share of about 0.8 is under 0.9");
    assert_eq!(v["patchwork"], true);
    let cover: Vec<&str> =
        v["cover"].as_array().unwrap().iter().map(|c| c["url"].as_str().unwrap()).collect();
    assert_eq!(cover.len(), 2, "{cover:?}");
    assert!(
        cover.iter().any(|u| u.contains("market")) && cover.iter().any(|u| u.contains("library")),
        "{cover:?}"
    );
    assert_eq!(v["spans"].as_array().unwrap().len(), 2);
    // The corpus's own distribution.
    let mut child =
        dupflow().args(["check", "--corpus", "fixtures/default.warc.gz"]).output().unwrap();
    assert!(child.status.success());
    let v: serde_json::Value = serde_json::from_slice(&std::mem::take(&mut child.stdout)).unwrap();
    assert_eq!(v["corpus_pages"], 8);
    assert!(v["pages_at_least_half_duplicated"].as_u64().unwrap() >= 4);
}

#[test]
fn similar_ranks_pages_by_cosine_to_a_reference() {
    let dir = temp_dir("similar");
    let reference = dir.join("reference.txt");
    // Reordered and partly reworded sentences of the market article.
    std::fs::write(
        &reference,
        "Farmers from the valley sell honey and cheese. The market returns to the square next month, with a new bakery and forty stalls.",
    )
    .unwrap();
    let out = dupflow()
        .args(["similar", "fixtures/default.warc.gz", "--reference"])
        .arg(&reference)
        .args(["--top", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<(f64, &str)> = text
        .lines()
        .map(|l| l.split_once(' ').map(|(s, u)| (s.parse().unwrap(), u)).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let top: Vec<&str> = lines[..2].iter().map(|(_, u)| *u).collect();
    assert!(
        top.contains(&"http://gazette.example/news/market-returns")
            && top.contains(&"http://aggregator.example/copy/market"),
        "{text}"
    );
    assert!(lines[0].0 > 0.4 && lines[2].0 < 0.1, "{text}");
}

#[test]
fn spans_name_the_page_that_had_the_sentences_first() {
    let out = temp_dir("spans");
    let config = out.join("share.toml");
    std::fs::write(&config, "[share]\nenabled = true\n").unwrap();
    run(&["--config", config.to_str().unwrap()], &out);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("spans.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_url: BTreeMap<&str, &serde_json::Value> =
        lines.iter().map(|v| (v["url"].as_str().unwrap(), v)).collect();
    // The copies, not the originals, have shares; their spans point at the originals.
    let copy = by_url["http://aggregator.example/copy/market"];
    assert!(copy["share"].as_f64().unwrap() > 0.9);
    assert_eq!(copy["spans"][0]["first_url"], "http://gazette.example/news/market-returns");
    assert!(!by_url.contains_key("http://gazette.example/news/market-returns"));
    assert!(!by_url.contains_key("http://gazette.example/news/river-rises"));
    assert_eq!(
        by_url["http://gazette.example/news/river-rises?print=1"]["spans"][0]["first_url"],
        "http://gazette.example/news/river-rises"
    );
}

/// Shell completions and man pages come from the command definitions: every subcommand is in
/// them, bash accepts the script, and `man --dir` writes one page per command.
#[test]
fn completions_and_man_pages_cover_every_command() {
    let commands = [
        "run",
        "validate",
        "sentences",
        "normalize",
        "exact-dedup",
        "join",
        "check",
        "similar",
        "eval",
        "dedup",
    ];
    let output = dupflow().args(["completions", "bash"]).output().unwrap();
    assert!(output.status.success());
    let script = String::from_utf8(output.stdout).unwrap();
    for command in commands {
        assert!(script.contains(command), "bash completion lacks {command}");
    }
    assert!(script.contains("--workers"), "bash completion lacks run's options");
    let dir = temp_dir("completions");
    std::fs::write(dir.join("dupflow.bash"), &script).unwrap();
    match Command::new("bash").arg("-n").arg(dir.join("dupflow.bash")).output() {
        Ok(check) => assert!(
            check.status.success(),
            "bash rejects the script: {}",
            String::from_utf8_lossy(&check.stderr)
        ),
        Err(e) => eprintln!("bash not runnable here ({e}): the script's syntax is not checked"),
    }
    for shell in ["zsh", "fish"] {
        let output = dupflow().args(["completions", shell]).output().unwrap();
        assert!(output.status.success() && !output.stdout.is_empty(), "no {shell} completion");
    }

    let output = dupflow().arg("man").output().unwrap();
    assert!(output.status.success());
    let page = String::from_utf8(output.stdout).unwrap();
    assert!(
        page.starts_with(".ie") || page.contains(".TH dupflow"),
        "not a roff man page: {}",
        &page[..page.len().min(200)]
    );
    for command in commands {
        // roff writes a hyphen as `\-`.
        assert!(
            page.contains(&format!("dupflow\\-{}(1)", command.replace('-', "\\-"))),
            "man page lacks {command}"
        );
    }
    let status = dupflow().arg("man").arg("--dir").arg(dir.join("man")).status().unwrap();
    assert!(status.success());
    for command in commands {
        let path = dir.join("man").join(format!("dupflow-{command}.1"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.contains(".TH"), "{} is not a man page", path.display());
    }
}

/// Inputs that yield nothing are warnings (exit 0, the outputs written); `--strict` makes them
/// exit 1. A glob under `--follow` is refused at once.
#[test]
fn inputs_that_yield_nothing_are_said_and_strict_fails_on_them() {
    let dir = temp_dir("nothing");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let noise = dir.join("noise.bin");
    std::fs::write(
        &noise,
        (0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<u8>>(),
    )
    .unwrap();
    let pattern = dir.join("none-*.warc.gz");
    let cases: [(&Path, &str); 3] = [
        (&empty, "a directory with no file in it"),
        (&pattern, "matches no file"),
        (&noise, "no record in it"),
    ];
    for (input, warning) in cases {
        let out = dir.join("out");
        let run = |strict: bool| {
            let mut command = dupflow();
            command.args([
                "run",
                input.to_str().unwrap(),
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ]);
            if strict {
                command.arg("--strict");
            }
            command.output().unwrap()
        };
        let output = run(false);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{}: {stderr}", input.display());
        assert!(stderr.contains(warning), "{}: warns {warning:?}: {stderr}", input.display());
        let _ = std::fs::remove_dir_all(&out);
        let output = run(true);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{} --strict: {stderr}", input.display());
        assert!(stderr.contains("error: --strict"), "{stderr}");
        assert!(out.join("clusters.jsonl").exists(), "the outputs are written first");
    }
    let output = dupflow().args(["run", "--follow", pattern.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("a glob is not followed"), "{stderr}");
}

fn explain(args: &[&str]) -> std::process::Output {
    dupflow().arg("explain").args(args).output().unwrap()
}

/// `explain` on a pair of one cluster names the cluster, the verified path and the shared
/// sentences; on a pair of two clusters it says there is no path and why the pair is apart.
#[test]
fn explain_gives_the_path_or_says_why_there_is_none() {
    let out = temp_dir("explain");
    run(&[], &out);
    let run_dir = out.to_str().unwrap();
    let (river, print) = (
        "http://gazette.example/news/river-rises",
        "http://gazette.example/news/river-rises?print=1",
    );
    let output = explain(&[river, print, "--run", run_dir, "--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let v: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(v["verdict"]["similar"], true, "{v}");
    assert!(v["verdict"]["sentence_resemblance"].as_f64().unwrap() >= 0.6);
    assert_eq!(v["clusters"]["same"], true);
    assert_eq!(v["clusters"]["size_a"], 3);
    let path = v["clusters"]["path"].as_array().unwrap();
    assert_eq!(path.first().unwrap()["from"], river);
    assert_eq!(path.last().unwrap()["to"], print);
    let shared = |side: &str| {
        v[side]["sentences"].as_array().unwrap().iter().filter(|l| l["shared"] == true).count()
    };
    assert!(shared("a") > 0 && shared("a") == shared("b"), "{v}");
    assert!(v["a"]["sentences"].as_array().unwrap().iter().all(|l| [
        "own",
        "template_kept",
        "template"
    ]
    .contains(&l["role"].as_str().unwrap())));

    let chess = "http://gazette.example/news/chess";
    let output = explain(&[river, chess, "--run", run_dir]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("verdict: dissimilar"), "{text}");
    assert!(text.contains("path: none: the pages are in different clusters"), "{text}");
    assert!(text.contains("A's sentences"), "{text}");
    assert!(text.contains("B in ") && text.contains(" (1 page)"), "the chess page alone: {text}");

    let output = explain(&[river, "http://gazette.example/none"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("http://gazette.example/none is not a page of the inputs"), "{stderr}");
}

/// On a terminal (script(1) makes one), `dedup` and `index build` draw their progress as `run`
/// does, and clear it before anything else is printed.
#[test]
fn dedup_and_index_build_show_progress_on_a_terminal() {
    let Some(shared) = common::shared_dir() else { return };
    if Command::new("script").arg("--version").output().is_err() {
        common::skip("progress on a terminal", "script(1) is not installed (Debian's bsdutils)");
        return;
    }
    let dev = shared.join("bench/docs-dev.warc.gz");
    let dir = temp_dir("progress-tty");
    let bin = env!("CARGO_BIN_EXE_dupflow");
    let commands = [
        format!("dedup '{}' --rounds 1 --out '{}'", dev.display(), dir.join("out").display()),
        format!("index build '{}' --index '{}'", dev.display(), dir.join("index").display()),
    ];
    for command in commands {
        let out = Command::new("script")
            .args(["-qec", &format!("'{bin}' {command}"), "/dev/null"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{command}: {text}");
        assert!(text.contains(" pages/s, ETA "), "{command}: no progress line: {text}");
        // Each drawn line is followed by the next drawing or by its clearing, never by text.
        for (at, _) in text.match_indices("\x1b[K") {
            let drawn = text[..at].rsplit('\r').next().unwrap_or("").contains("ETA");
            assert!(
                !drawn || text[at + 3..].starts_with('\r'),
                "{command}: text printed after a progress line: {:?}",
                text.get(at.saturating_sub(80)..(at + 80).min(text.len()))
            );
        }
    }
}
