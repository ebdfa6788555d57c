//! Follow mode end to end through the binary: a real crawler (GNU wget) writing into a followed
//! directory while dupflow runs, and a run killed with SIGKILL mid-feed that resumes from its
//! checkpoint with the same outputs as an uninterrupted run.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::feed::manifest_epoch;
use common::synth::{warc_response, Corpus, Rng};
use common::temp_dir;

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn spawn(args: &[&str], dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dupflow"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::create(dir.join(format!(
                "stderr-{}",
                NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            )))
            .unwrap(),
        )
        .spawn()
        .unwrap()
}

fn terminate(mut child: Child) {
    unsafe_kill(child.id(), "TERM");
    let status = wait_exit(&mut child, Duration::from_secs(60));
    assert!(status.success(), "dupflow exited with {status} after SIGTERM");
}

fn unsafe_kill(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{signal} {pid}");
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < limit, "dupflow did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (up to a minute) for `ready`.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < Duration::from_secs(60), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The clusters as changes.jsonl says they are now: url → cluster.
fn clusters_from_changes(out: &Path) -> BTreeMap<String, String> {
    common::feed::net_of_changes(out).0
}

fn write_config(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, body).unwrap();
    path
}

// ---- a real crawler ----

type Site = Arc<Mutex<HashMap<String, String>>>;

fn serve(site: Site) -> String {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let address = server.server_addr().to_ip().unwrap().to_string();
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let page = site.lock().unwrap().get(request.url()).cloned();
            let response = match page {
                Some(html) => tiny_http::Response::from_string(html).with_header(
                    "Content-Type: text/html; charset=utf-8".parse::<tiny_http::Header>().unwrap(),
                ),
                None => tiny_http::Response::from_string("not found").with_status_code(404),
            };
            let _ = request.respond(response);
        }
    });
    address
}

fn crawl(address: &str, warc: &Path, scratch: &Path) {
    let status = Command::new("wget")
        .args(["--quiet", "--recursive", "--level=1", "--delete-after", "--no-host-directories"])
        .arg(format!("--directory-prefix={}", scratch.display()))
        .arg(format!("--warc-file={}", warc.display()))
        .arg(format!("http://{address}/index.html"))
        .status();
    match status {
        Ok(s) => assert!(s.code() == Some(0) || s.code() == Some(8), "wget failed: {s}"),
        Err(e) => panic!("GNU wget is needed for this test (`.ci/run` installs it): {e}"),
    }
}

#[test]
fn a_wget_crawl_into_a_followed_directory_updates_the_clusters() {
    let dir = temp_dir("wget");
    let (warcs, out, scratch) = (dir.join("warcs"), dir.join("out"), dir.join("scratch"));
    std::fs::create_dir_all(&warcs).unwrap();
    let corpus = Corpus::new(3, 3);
    let page = |base, variant| corpus.html(base, variant);
    let site: Site = Arc::new(Mutex::new(HashMap::new()));
    {
        let mut s = site.lock().unwrap();
        let links: String =
            (1..=6).map(|i| format!("<a href=\"/p{i}.html\">page {i}</a> ")).collect();
        s.insert(
            "/index.html".into(),
            format!("<html><body><p>Index of the site.</p>{links}</body></html>"),
        );
        // p1, p2, p3: one document in three versions; p4, p5: another; p6 on its own.
        for (path, base, variant) in [
            ("/p1.html", 0, 0),
            ("/p2.html", 0, 1),
            ("/p3.html", 0, 2),
            ("/p4.html", 1, 0),
            ("/p5.html", 1, 1),
            ("/p6.html", 2, 0),
        ] {
            s.insert(path.into(), page(base, variant));
        }
    }
    let address = serve(site.clone());
    let config = write_config(&dir, "[run]\nepoch_ms = 200\n");
    let deletions = dir.join("deleted.txt");
    let child = spawn(
        &[
            "run",
            "--follow",
            warcs.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--deletions",
            deletions.to_str().unwrap(),
            "--quiet",
        ],
        &dir,
    );
    let url = |p: &str| format!("http://{address}/{p}.html");

    crawl(&address, &warcs.join("crawl-1"), &scratch);
    wait_for("the first crawl's clusters", || clusters_from_changes(&out).len() == 7);
    let first = clusters_from_changes(&out);
    assert_eq!(first[&url("p1")], first[&url("p2")]);
    assert_eq!(first[&url("p1")], first[&url("p3")]);
    assert_eq!(first[&url("p4")], first[&url("p5")]);
    assert_ne!(first[&url("p1")], first[&url("p4")]);
    assert_ne!(first[&url("p6")], first[&url("p4")]);

    // The site changes: p2 is rewritten (leaves its cluster), p6 becomes a copy of p4.
    std::thread::sleep(Duration::from_millis(1100)); // a later WARC-Date
    {
        let mut s = site.lock().unwrap();
        s.insert("/p2.html".into(), page(2, 3));
        s.insert("/p6.html".into(), page(1, 2));
    }
    crawl(&address, &warcs.join("crawl-2"), &scratch);
    wait_for("the re-crawl's changes", || {
        let now = clusters_from_changes(&out);
        now.len() == 7 && now[&url("p6")] == now[&url("p4")] && now[&url("p2")] != now[&url("p1")]
    });
    let second = clusters_from_changes(&out);
    assert_eq!(second[&url("p1")], second[&url("p3")], "p1 and p3 stay together");
    assert_eq!(second[&url("p4")], second[&url("p5")]);

    // A deletion: p5's URL appended to the deletions file takes it out.
    std::fs::write(&deletions, format!("# removed from the index\n{}\n", url("p5"))).unwrap();
    wait_for("the deletion", || !clusters_from_changes(&out).contains_key(&url("p5")));
    let after = clusters_from_changes(&out);
    assert_eq!(after.len(), 6);
    // Pages outside p5's cluster are untouched (its cluster may renumber or split without it).
    for (u, cluster) in &second {
        if *cluster != second[&url("p5")] && u != &url("p5") {
            assert_eq!(&after[u], cluster, "{u} is untouched by the deletion");
        }
    }
    let second = after;
    terminate(child);
    // The final clusters.jsonl agrees with the change stream.
    let lines = std::fs::read_to_string(out.join("clusters.jsonl")).unwrap();
    let finals: BTreeMap<String, String> = lines
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["url"].as_str().unwrap().to_string(), v["cluster"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(finals, second);
}

// ---- SIGKILL and resume ----

/// Six WARC files of 40 records: near-duplicate pages, and re-crawls of earlier URLs.
fn feed_files() -> Vec<Vec<u8>> {
    let corpus = Corpus::new(5, 6);
    let mut rng = Rng(99);
    (0..6u64)
        .map(|f| {
            (0..40u64)
                .flat_map(|i| {
                    let n = f * 40 + i;
                    let url = format!("http://site.example/p{}", rng.below(150));
                    warc_response(
                        &url,
                        n * 10,
                        n,
                        &corpus.html(rng.below(6) as usize, rng.below(4) as usize),
                    )
                })
                .collect()
        })
        .collect()
}

/// Six WARC files of 40 records, each page its own text (6 sentences) and a block of 12
/// sentences shared by the 5 pages of its group: two or three pages of a group are duplicates
/// by their block until it is on enough pages to be template (the fourth or fifth), and then
/// they are not. Template changes in nearly every epoch of 10 records.
fn template_feed_files() -> Vec<Vec<u8>> {
    let (own, blocks) = (Corpus::new(41, 240), Corpus::new(43, 48));
    (0..6u64)
        .map(|f| {
            (0..40u64)
                .flat_map(|i| {
                    let n = f * 40 + i;
                    let text: Vec<String> = own
                        .text(n as usize, 0)
                        .into_iter()
                        .take(6)
                        .chain(blocks.text(n as usize / 5, 0))
                        .collect();
                    let body: String = text.iter().map(|s| format!("<p>{s}</p>")).collect();
                    let html = format!(
                        "<html><head><title>page {n}</title></head><body>{body}</body></html>"
                    );
                    warc_response(&format!("http://site.example/p{n}"), n * 10, n, &html)
                })
                .collect()
        })
        .collect()
}

/// Writes a file in three pieces, as a crawler would.
fn write_slowly(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::File::create(path).unwrap();
    for chunk in bytes.chunks(bytes.len() / 3 + 1) {
        file.write_all(chunk).unwrap();
        file.flush().unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
}

#[test]
fn a_run_killed_mid_feed_resumes_with_the_outputs_of_an_uninterrupted_run() {
    killed_mid_feed_and_resumed("kill", 1, feed_files());
}

/// Template refreshes every 3 epochs, checkpoints due every 2, on a feed whose template changes
/// in nearly every epoch: a checkpoint is taken just after a refresh (at 4, 7, 10, …), where
/// the clusters are those of its pages, so the resumed run's change stream is still the
/// uninterrupted run's, line for line.
#[test]
fn a_run_with_template_refreshes_killed_mid_feed_resumes_with_the_outputs_of_an_uninterrupted_run()
{
    killed_mid_feed_and_resumed("kill-refresh", 3, template_feed_files());
}

fn killed_mid_feed_and_resumed(name: &str, refresh_epochs: u32, files: Vec<Vec<u8>>) {
    let dir = temp_dir(name);
    // Epochs by record count only, so that both runs cut the same epochs.
    let config = write_config(
        &dir,
        &format!("[run]\nworkers = 2\nepoch_records = 10\nepoch_ms = 3600000\ncheckpoint_epochs = 2\n[template]\nrefresh_epochs = {refresh_epochs}\n"),
    );
    let config = config.to_str().unwrap();

    // Uninterrupted: the finished files, read once.
    let reference = dir.join("reference");
    common::feed::batch_run(&files, &dir, config, &reference);

    // Followed, killed after the checkpoint of epoch 6 or later, restarted with the same command.
    // Two files are 80 records: epochs 0-7 close, and the checkpoint is the last due at or
    // before 8 (with refreshes every 3: at 7; due at 8, at 8 it would end on epoch 7, whose
    // template changes take effect at the refresh at 9).
    let (feed, out, checkpoint) = (dir.join("feed"), dir.join("out"), dir.join("checkpoint"));
    std::fs::create_dir_all(&feed).unwrap();
    let args = [
        "run",
        "--follow",
        feed.to_str().unwrap(),
        "--config",
        config,
        "--out",
        out.to_str().unwrap(),
        "--checkpoint",
        checkpoint.to_str().unwrap(),
        "--quiet",
    ];
    let mut child = spawn(&args, &dir);
    for (i, bytes) in files.iter().enumerate().take(2) {
        write_slowly(&feed.join(format!("feed-{i}.warc")), bytes);
    }
    wait_for("a checkpoint", || manifest_epoch(&checkpoint) >= 6);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let resumed_at = manifest_epoch(&checkpoint);
    assert!(
        resumed_at.saturating_sub(1).is_multiple_of(refresh_epochs as u64),
        "checkpoint {resumed_at} is not just after a refresh"
    );
    let child = spawn(&args, &dir);
    for (i, bytes) in files.iter().enumerate().skip(2) {
        write_slowly(&feed.join(format!("feed-{i}.warc")), bytes);
    }
    // 240 records, 10 an epoch: epochs 0-23. Once their changes are out, the stop closes the
    // last epoch (and the refresh after it).
    let read_through = |out: &Path| {
        let text = std::fs::read_to_string(out.join("changes.jsonl")).unwrap_or_default();
        text.lines()
            .filter(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .is_ok_and(|v| v["epoch"].as_u64().is_some_and(|e| e < 24))
            })
            .count()
    };
    let expected_through = read_through(&reference);
    // (Not an error if they never come: the comparison below says what differs.)
    let started = Instant::now();
    while read_through(&out) < expected_through && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    terminate(child);
    // The stop's own checkpoint is committed: past the last epoch with records (23), just
    // after a refresh.
    let stopped_at = manifest_epoch(&checkpoint);
    assert!(
        stopped_at > 24 && (stopped_at - 1).is_multiple_of(refresh_epochs as u64),
        "the stop's checkpoint: {stopped_at}"
    );

    for name in ["changes.jsonl", "clusters.jsonl"] {
        let expected = std::fs::read_to_string(reference.join(name)).unwrap();
        let got = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(expected.lines().count() > 100, "{name} is substantial");
        assert!(got == expected, "{name} differs from the uninterrupted run's");
    }
}

/// Template refreshes every 8 epochs (`template.refresh_epochs`): a follower whose input
/// pauses advances its epochs to the refresh after its last records on its own, so the change
/// stream ends on the batch run's clusters without another record or a stop.
#[test]
fn a_paused_feed_reaches_its_template_refresh_and_the_batch_clusters() {
    let dir = temp_dir("refresh");
    let files = feed_files();
    let config = write_config(
        &dir,
        "[run]\nworkers = 2\nepoch_records = 10\nepoch_ms = 100\n[template]\nrefresh_epochs = 8\n",
    );
    let config = config.to_str().unwrap();
    let reference = dir.join("reference");
    common::feed::batch_run(&files, &dir, config, &reference);
    let want = clusters_from_changes(&reference);
    assert!(want.len() > 50, "the batch run clustered the pages");

    let (feed, out) = (dir.join("feed"), dir.join("out"));
    std::fs::create_dir_all(&feed).unwrap();
    let child = spawn(
        &[
            "run",
            "--follow",
            feed.to_str().unwrap(),
            "--config",
            config,
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
        &dir,
    );
    for (i, bytes) in files.iter().enumerate() {
        write_slowly(&feed.join(format!("feed-{i}.warc")), bytes);
    }
    wait_for("the batch clusters, with no record after the last", || {
        clusters_from_changes(&out) == want
    });
    // 240 records, at most 10 an epoch (fewer when one closes by age while the file is being
    // written): the last changes are a refresh's, at a multiple of 8.
    let changes = std::fs::read_to_string(out.join("changes.jsonl")).unwrap();
    let epochs: Vec<u64> = changes
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["epoch"].as_u64().unwrap())
        .collect();
    terminate(child);
    let last = *epochs.iter().max().unwrap();
    assert!(
        last >= 24 && last.is_multiple_of(8),
        "the last changes at epoch {last}, not at a refresh"
    );
}

#[test]
fn stdin_is_read_as_it_comes() {
    let dir = temp_dir("stdin");
    let out = dir.join("out");
    let config = write_config(&dir, "[run]\nepoch_ms = 100\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dupflow"))
        .args([
            "run",
            "-",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let corpus = Corpus::new(9, 2);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&warc_response("http://a.example/1", 0, 1, &corpus.html(0, 0))).unwrap();
    stdin.write_all(&warc_response("http://a.example/2", 1, 2, &corpus.html(0, 1))).unwrap();
    stdin.flush().unwrap();
    // The pipe stays open: the records' changes must come anyway.
    wait_for("changes before the end of stdin", || clusters_from_changes(&out).len() == 2);
    drop(stdin);
    let status = wait_exit(&mut child, Duration::from_secs(60));
    assert!(status.success());
}
