//! Many processes on 127.0.0.1. Every input is read by one process (the processes'
//! `dupflow_input_read_bytes_total`, scraped from each one's own endpoint, sum to the inputs'
//! size), records reach their owners through timely's exchange, each process writes its shard,
//! and the shards merged (`dupflow merge`) equal a one-process run line for line.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::feed::{manifest_epoch, net_of_changes};
use common::serve::{get, serve, Served};
use common::synth::{warc_response, Corpus};
use common::{dupflow, temp_dir};

use crate::common;

/// Six WARC files of uneven sizes. Near-duplicate families are spread over the files (so a
/// family's pages are read by different processes), a URL is crawled again in a later file
/// (the re-crawl must replace its page wherever it was read), and the files differ in size.
/// With `big`, a seventh file, per-record gzip, holding most of the bytes: it is cut into
/// record ranges that several processes read.
fn write_inputs(dir: &Path, bases: usize, big: usize) -> Vec<PathBuf> {
    let corpus = Corpus::new(14, bases);
    let mut files = vec![Vec::new(); 6];
    let mut record = 0u64;
    for base in 0..bases {
        for variant in 0..(1 + base % 4) {
            let file = (base * 7 + variant * 3) % 6;
            let url = format!("http://h{}.example/doc/{base}/{variant}", base % 3);
            files[file].extend(warc_response(&url, record, record, &corpus.html(base, variant)));
            record += 1;
        }
    }
    // Re-crawls: the same URL again later, in another file, with other text.
    for base in 0..6 {
        let url = format!("http://h{}.example/doc/{base}/0", base % 3);
        files[5 - base % 6].extend(warc_response(
            &url,
            10_000 + record,
            record,
            &corpus.html((base + 20) % bases, 1),
        ));
        record += 1;
    }
    std::fs::create_dir_all(dir).unwrap();
    let mut paths: Vec<PathBuf> = files
        .into_iter()
        .enumerate()
        .map(|(i, bytes)| {
            let path = dir.join(format!("part-{i}.warc"));
            std::fs::write(&path, bytes).unwrap();
            path
        })
        .collect();
    if big > 0 {
        use std::io::Write as _;
        let corpus = Corpus::new(15, big);
        let mut gz = Vec::new();
        for i in 0..big * 2 {
            // Two captures of every base, the second with one sentence changed: near-duplicate
            // pairs whose pages sit in different ranges of the file.
            let (base, variant) = if i < big { (i, 0) } else { (i - big, 1) };
            let url = format!("http://big.example/{base}/{variant}");
            let mut member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            member
                .write_all(&warc_response(&url, record, record, &corpus.html(base, variant)))
                .unwrap();
            gz.extend(member.finish().unwrap());
            record += 1;
        }
        let path = dir.join("big.warc.gz");
        std::fs::write(&path, gz).unwrap();
        paths.push(path);
    }
    paths
}

/// One epoch for the whole run, so that the change streams are comparable line for line;
/// `threads` reader threads per process.
fn config(dir: &Path, threads: usize) -> PathBuf {
    let path = dir.join(format!("one-epoch-{threads}.toml"));
    let body = format!(
        "[run]\nepoch_records = 1000000\nepoch_ms = 600000\n[source]\nreader_threads = {threads}\n"
    );
    std::fs::write(&path, body).unwrap();
    path
}

fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<_> =
        (0..n).map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    listeners.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// The value of an unlabelled counter in a Prometheus scrape.
fn counter(scrape: &str, name: &str) -> f64 {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{name} is not in the scrape"))
        .trim()
        .parse()
        .unwrap()
}

/// Runs `processes` processes of one worker each, every one with its endpoint on, to the end.
fn run_cluster(
    processes: usize,
    inputs: &Path,
    config: &Path,
    deletions: &Path,
    out: &Path,
) -> Vec<Served> {
    let hostfile = out.with_extension("hosts");
    let hosts: String = free_ports(processes).iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
    std::fs::write(&hostfile, hosts).unwrap();
    let threads: Vec<_> = (0..processes)
        .map(|i| {
            let args: Vec<String> = vec![
                inputs.display().to_string(),
                "--config".into(),
                config.display().to_string(),
                "--workers".into(),
                "1".into(),
                "--processes".into(),
                processes.to_string(),
                "--process".into(),
                i.to_string(),
                "--hostfile".into(),
                hostfile.display().to_string(),
                "--deletions".into(),
                deletions.display().to_string(),
            ];
            let out = out.to_path_buf();
            std::thread::spawn(move || {
                serve(&args.iter().map(String::as_str).collect::<Vec<_>>(), &out)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().expect("a process of the cluster finished")).collect()
}

fn merge(out: &Path) {
    let status = dupflow().arg("merge").arg(out).stdout(Stdio::null()).status().unwrap();
    assert!(status.success(), "dupflow merge failed");
}

/// `dupflow run INPUTS --quiet --out OUT ARGS…` in one process, to its end.
fn run_once(inputs: &Path, out: &Path, args: &[&str]) {
    let status = dupflow()
        .arg("run")
        .arg(inputs)
        .args(["--quiet", "--out"])
        .arg(out)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "dupflow run {} failed", inputs.display());
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn processes_read_their_share_and_their_shards_merge_into_the_one_process_outputs() {
    let dir = temp_dir("cluster-share");
    let inputs = dir.join("in");
    let files = write_inputs(&inputs, 40, 1500);
    let input_bytes: u64 = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).sum();
    let config_of = |threads| config(&dir, threads);
    let config = config_of(1);
    // Deletions, read by reader 0 and sent to the URLs' owners (pages of the small files, read
    // by other readers too).
    let deletions = dir.join("deleted.txt");
    std::fs::write(
        &deletions,
        "http://h1.example/doc/7/1\nhttp://h2.example/doc/11/2\nhttp://h0.example/doc/9/0\n",
    )
    .unwrap();
    let single = dir.join("single");
    run_once(
        &inputs,
        &single,
        &[
            "--workers",
            "2",
            "--config",
            config.to_str().unwrap(),
            "--deletions",
            deletions.to_str().unwrap(),
        ],
    );
    let clusters = read(&single.join("clusters.jsonl"));
    let page_count = clusters.lines().count();
    assert_eq!(page_count, 100 + 3000 - 3, "every page of the corpus but the three deleted");
    for url in
        ["http://h1.example/doc/7/1", "http://h2.example/doc/11/2", "http://h0.example/doc/9/0"]
    {
        assert!(!clusters.contains(&format!("\"url\":\"{url}\"")), "{url} was deleted");
    }
    let big = std::fs::metadata(inputs.join("big.warc.gz")).unwrap().len();
    assert!(
        big * 10 > input_bytes * 7,
        "the gzip file holds most of the bytes ({big} of {input_bytes})"
    );

    // 2 processes of one reader thread, 3 of two (6 readers).
    for (processes, threads) in [(2, 1), (3, 2)] {
        let out = dir.join(format!("cluster-{processes}"));
        let served = run_cluster(processes, &inputs, &config_of(threads), &deletions, &out);
        let read_bytes: Vec<f64> = served
            .iter()
            .map(|s| counter(&get(&s.address, "/metrics"), "dupflow_input_read_bytes_total"))
            .collect();
        assert_eq!(
            read_bytes.iter().sum::<f64>() as u64,
            input_bytes,
            "{processes} processes read every byte once: {read_bytes:?}"
        );
        assert!(read_bytes.iter().all(|b| *b > 0.0), "every process reads a share: {read_bytes:?}");
        // The large file is read in record ranges: no process reads it whole.
        let most = read_bytes.iter().cloned().fold(0.0, f64::max) as u64;
        assert!(
            most < big,
            "the large file is shared between processes: {read_bytes:?}, it has {big} bytes"
        );
        // Each process's dashboard summary shows its own share.
        let pages: Vec<u64> = served
            .iter()
            .map(|s| {
                serde_json::from_str::<serde_json::Value>(&get(&s.address, "/api/summary")).unwrap()
                    ["pages"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert!(pages.iter().all(|p| *p > 0), "every process owns pages: {pages:?}");
        // Process 0 also shows the whole cluster's totals.
        let totals =
            serde_json::from_str::<serde_json::Value>(&get(&served[0].address, "/api/summary"))
                .unwrap()["cluster_totals"]
                .clone();
        let ids: std::collections::BTreeSet<&str> = clusters
            .lines()
            .map(|l| l.split("\"cluster\":\"").nth(1).unwrap().split('"').next().unwrap())
            .collect();
        assert_eq!(totals["pages"], page_count, "{totals}");
        assert_eq!(totals["clusters"], ids.len(), "{totals}");
        assert!(
            served[1..]
                .iter()
                .all(|s| get(&s.address, "/api/summary").contains("\"cluster_totals\":null")),
            "only process 0 has totals"
        );
        drop(served);
        for i in 0..processes {
            assert!(
                out.join(format!("clusters-{i:05}-of-{processes:05}.jsonl")).exists(),
                "shard {i} of {processes}"
            );
        }
        assert!(!out.join("clusters.jsonl").exists(), "no process writes the whole result");
        merge(&out);
        assert_eq!(
            read(&out.join("clusters.jsonl")),
            clusters,
            "{processes} processes: merged clusters equal one process's"
        );
        assert_eq!(
            read(&out.join("changes.jsonl")),
            read(&single.join("changes.jsonl")),
            "{processes} processes: merged changes equal one process's"
        );
    }
}

/// The dev crawl, its pages crossing between two processes, gives the clusters and changes of
/// one process byte for byte. Its pages hold short sentences that are not fingerprinted: a
/// content that crossed to another process once came back with every sentence unfingerprinted
/// and other fingerprints (the synthetic corpus above has none, so it did not show).
#[test]
fn the_dev_crawl_over_two_processes_equals_one_process() {
    let Some(shared) = common::shared_dir() else { return };
    let dev = shared.join("bench/docs-dev.warc.gz");
    let dir = temp_dir("cluster-dev");
    let config = config(&dir, 1);
    let deletions = dir.join("deleted.txt");
    std::fs::write(&deletions, "").unwrap();
    let single = dir.join("single");
    run_once(&dev, &single, &["--workers", "2", "--config", config.to_str().unwrap()]);
    let out = dir.join("cluster-2");
    drop(run_cluster(2, &dev, &config, &deletions, &out));
    merge(&out);
    let clusters = read(&single.join("clusters.jsonl"));
    assert_eq!(clusters.lines().count(), 3545, "every page of the dev crawl");
    assert!(
        read(&out.join("clusters.jsonl")) == clusters,
        "2 processes: merged clusters differ from one process's"
    );
    assert!(
        read(&out.join("changes.jsonl")) == read(&single.join("changes.jsonl")),
        "2 processes: merged changes differ from one process's"
    );
}

#[test]
fn merge_names_a_missing_shard() {
    let dir = temp_dir("cluster-merge");
    std::fs::write(dir.join("clusters-00000-of-00003.jsonl"), "").unwrap();
    std::fs::write(dir.join("clusters-00002-of-00003.jsonl"), "").unwrap();
    let output = dupflow().arg("merge").arg(&dir).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("shards [1] of 3 are missing"), "{stderr}");
}

/// `dupflow run` as process `process` of `processes`, with a checkpoint directory they share.
fn spawn_process(
    process: usize,
    processes: usize,
    hostfile: &Path,
    args: &[&str],
) -> std::process::Child {
    dupflow()
        .arg("run")
        .args(args)
        .args([
            "--workers",
            "1",
            "--processes",
            &processes.to_string(),
            "--process",
            &process.to_string(),
            "--quiet",
        ])
        .arg("--hostfile")
        .arg(hostfile)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_cluster_killed_mid_run_resumes_from_its_common_checkpoint_and_loses_nothing() {
    let dir = temp_dir("cluster-kill");
    let inputs = dir.join("in");
    write_inputs(&inputs, 600, 0);
    // Many small epochs, a checkpoint at each: a kill always finds one committed and more due.
    let config = dir.join("small-epochs.toml");
    std::fs::write(&config, "[run]\nepoch_records = 40\nepoch_ms = 600000\ncheckpoint_epochs = 1\n[source]\nreader_threads = 2\n").unwrap();
    let single = dir.join("single");
    run_once(&inputs, &single, &["--workers", "2", "--config", config.to_str().unwrap()]);

    let (out, state) = (dir.join("out"), dir.join("state"));
    let args = [
        inputs.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--checkpoint",
        state.to_str().unwrap(),
    ];
    let hostfile = dir.join("hosts");
    std::fs::write(
        &hostfile,
        free_ports(3).iter().map(|p| format!("127.0.0.1:{p}\n")).collect::<String>(),
    )
    .unwrap();
    let mut children: Vec<_> = (0..3).map(|i| spawn_process(i, 3, &hostfile, &args)).collect();
    // Wait for a committed checkpoint, then SIGKILL process 1 mid-run, and the rest after it
    // (a cluster that lost a process is restarted whole).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while manifest_epoch(&state) < 2 {
        assert!(std::time::Instant::now() < deadline, "no checkpoint was committed");
        assert!(
            children.iter_mut().all(|c| c.try_wait().unwrap().is_none()),
            "the run ended before a kill: make the input larger"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    children[1].kill().unwrap();
    children[1].wait().unwrap();
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    let killed_at = manifest_epoch(&state);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(state.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["readers"].as_array().map(Vec::len),
        Some(6),
        "3 processes × 2 reader threads: 6 readers' positions"
    );
    assert_eq!(
        manifest["shards"].as_array().map(Vec::len),
        Some(3),
        "3 shards of the change stream"
    );

    // All restarted, with new ports: they resume from the checkpoint and run to the end.
    std::fs::write(
        &hostfile,
        free_ports(3).iter().map(|p| format!("127.0.0.1:{p}\n")).collect::<String>(),
    )
    .unwrap();
    let children: Vec<_> = (0..3).map(|i| spawn_process(i, 3, &hostfile, &args)).collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "a restarted process failed: {stderr}");
        assert!(
            stderr.contains(&format!("resuming from the checkpoint of epoch {killed_at}")),
            "every process resumed: {stderr}"
        );
    }
    assert!(manifest_epoch(&state) > killed_at, "the restarted cluster checkpointed on");
    merge(&out);
    assert_eq!(
        read(&out.join("clusters.jsonl")),
        read(&single.join("clusters.jsonl")),
        "final clusters equal an uninterrupted run"
    );
    let (net, doubled) = net_of_changes(&out);
    assert!(!doubled, "no change counted twice across the restart");
    let (uninterrupted, _) = net_of_changes(&single);
    assert_eq!(net, uninterrupted, "the change stream nets to the uninterrupted run's clusters");
}

/// Pages in the net of the change-stream shards in `out` (url → cluster).
fn net_of_shards(out: &Path, processes: usize) -> std::collections::BTreeMap<String, String> {
    let mut rows: std::collections::BTreeMap<(String, String), i64> = Default::default();
    for i in 0..processes {
        let path = out.join(format!("changes-{i:05}-of-{processes:05}.jsonl"));
        for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            *rows
                .entry((v["url"].as_str().unwrap().into(), v["cluster"].as_str().unwrap().into()))
                .or_default() += v["diff"].as_i64().unwrap();
        }
    }
    rows.into_iter().filter(|(_, n)| *n > 0).map(|((url, cluster), _)| (url, cluster)).collect()
}

#[test]
fn followed_directories_are_shared_out_by_file_and_epochs_advance_in_step() {
    let dir = temp_dir("cluster-follow");
    let source = dir.join("source");
    let files = write_inputs(&source, 40, 0);
    let config = dir.join("fast-epochs.toml");
    std::fs::write(&config, "[run]\nepoch_ms = 100\n").unwrap();
    let feed = dir.join("feed");
    std::fs::create_dir_all(&feed).unwrap();
    let out = dir.join("out");
    let hostfile = dir.join("hosts");
    std::fs::write(
        &hostfile,
        free_ports(2).iter().map(|p| format!("127.0.0.1:{p}\n")).collect::<String>(),
    )
    .unwrap();
    let args = [
        "--follow",
        feed.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let children: Vec<_> = (0..2).map(|i| spawn_process(i, 2, &hostfile, &args)).collect();
    // Files appear one by one (renamed into place), as a crawler finishes them. A process
    // whose files are all read (or that has none) must not hold back the other's epochs.
    for file in &files {
        let tmp = feed.join(".incoming");
        std::fs::copy(file, &tmp).unwrap();
        std::fs::rename(&tmp, feed.join(file.file_name().unwrap())).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while net_of_shards(&out, 2).len() < 100 {
        assert!(
            std::time::Instant::now() < deadline,
            "the followed pages did not all reach the change streams"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for child in &children {
        let ok = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "a follower failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    merge(&out);
    let batch = dir.join("batch");
    run_once(&source, &batch, &[]);
    assert_eq!(
        read(&out.join("clusters.jsonl")),
        read(&batch.join("clusters.jsonl")),
        "followed in a cluster = one batch run"
    );
}

#[test]
fn reader_threads_in_one_process_share_the_inputs_and_checkpoint_together() {
    let dir = temp_dir("reader-threads");
    let inputs = dir.join("in");
    write_inputs(&inputs, 40, 1500);
    let one = dir.join("one");
    run_once(&inputs, &one, &[]);
    let config = dir.join("three-readers.toml");
    std::fs::write(&config, "[source]\nreader_threads = 3\n[run]\ncheckpoint_epochs = 1\n")
        .unwrap();
    let (out, state) = (dir.join("out"), dir.join("state"));
    let run = || {
        let args = [
            "run",
            inputs.to_str().unwrap(),
            "--quiet",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--checkpoint",
            state.to_str().unwrap(),
        ];
        let output = dupflow().args(args).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stderr).to_string()
    };
    run();
    assert_eq!(
        read(&out.join("clusters.jsonl")),
        read(&one.join("clusters.jsonl")),
        "3 reader threads = 1"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(state.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["readers"].as_array().map(Vec::len),
        Some(3),
        "each reader's positions are in the checkpoint"
    );
    // Run again: every reader resumes at the end of its share; nothing is read twice.
    let again = run();
    assert!(again.contains("resuming from the checkpoint"), "{again}");
    assert_eq!(read(&out.join("clusters.jsonl")), read(&one.join("clusters.jsonl")));
    let (net, doubled) = net_of_changes(&out);
    assert!(!doubled, "nothing counted twice");
    assert_eq!(net.len(), 3100);
}
