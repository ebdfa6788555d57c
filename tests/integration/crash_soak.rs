//! Crash soak: a follower of a directory is killed with SIGKILL at random moments
//! (several times inside one input, some while a checkpoint is being written, some just after
//! one) and started again with the same command, over several seeds. Its final clusters and the
//! net of its change stream must equal a batch run over the same files: no page lost, none
//! counted twice, however many times it resumed inside one input.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::feed::manifest_epoch;
use common::synth::{warc_response, Corpus, Rng};
use common::temp_dir;

const FILES: u64 = 4;
const RECORDS: u64 = 100;
const EPOCH_RECORDS: u64 = 16;
/// Template refreshes of the rounds: pipeline.toml's default, and every epoch (a checkpoint is
/// taken just after a refresh: the feed's 25 epochs end just after the refresh at 24).
const REFRESHES: [u32; 2] = [8, 1];
const _: () = assert!((FILES * RECORDS / EPOCH_RECORDS - 1).is_multiple_of(REFRESHES[0] as u64));

/// Files of near-duplicate pages with re-crawls of earlier URLs.
fn feed_files() -> Vec<Vec<u8>> {
    let corpus = Corpus::new(11, 8);
    let mut rng = Rng(2024);
    (0..FILES)
        .map(|f| {
            (0..RECORDS)
                .flat_map(|i| {
                    let n = f * RECORDS + i;
                    let url = format!("http://soak.example/p{}", rng.below(260));
                    warc_response(
                        &url,
                        n * 7,
                        n,
                        &corpus.html(rng.below(8) as usize, rng.below(5) as usize),
                    )
                })
                .collect()
        })
        .collect()
}

fn spawn(args: &[&str], log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dupflow"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap())
        .spawn()
        .unwrap()
}

/// The newest reader position file (`reader-E.json`): a checkpoint under way when E is past the
/// manifest's epoch.
fn newest_progress(checkpoint: &Path) -> u64 {
    std::fs::read_dir(checkpoint)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    name.strip_prefix("reader-")?.strip_suffix(".json")?.parse::<u64>().ok()
                })
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// url → cluster, from the net of changes.jsonl (no row counted twice).
fn net_of_changes(out: &Path) -> BTreeMap<String, String> {
    let (net, doubled) = common::feed::net_of_changes(out);
    assert!(!doubled, "a row counted twice in changes.jsonl");
    net
}

/// url → cluster, from clusters.jsonl.
fn clusters(out: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(out.join("clusters.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                v["url"].as_str().unwrap().to_string(),
                v["cluster"].to_string().trim_matches('"').to_string(),
            )
        })
        .collect()
}

/// Kills `child` (SIGKILL) by one of three plans, and says which.
fn kill(child: &mut Child, checkpoint: &Path, rng: &mut Rng) -> &'static str {
    let plan = match rng.below(3) {
        0 => {
            // While a checkpoint is written: the reader's position is saved, the manifest not yet.
            let committed = manifest_epoch(checkpoint);
            let caught = wait_until(Duration::from_secs(3), || {
                newest_progress(checkpoint) > manifest_epoch(checkpoint).max(committed)
            });
            if caught {
                "during a checkpoint"
            } else {
                "at random"
            }
        }
        1 => {
            // Just after a new checkpoint.
            let committed = manifest_epoch(checkpoint);
            wait_until(Duration::from_secs(3), || manifest_epoch(checkpoint) > committed);
            std::thread::sleep(Duration::from_millis(rng.below(40)));
            "after a checkpoint"
        }
        _ => {
            std::thread::sleep(Duration::from_millis(20 + rng.below(300)));
            "at random"
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    plan
}

#[test]
fn a_follower_killed_at_random_many_times_ends_with_the_batch_clusters() {
    let dir = temp_dir("main");
    let files = feed_files();
    let last_epoch = FILES * RECORDS / EPOCH_RECORDS;
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in 1..=5u64 {
        let refresh = REFRESHES[(seed as usize + 1) % 2];
        let config = dir.join(format!("pipeline-{refresh}.toml"));
        // Epochs by record count only, so that every run cuts the same epochs.
        std::fs::write(
            &config,
            format!("[run]\nworkers = 2\nepoch_records = {EPOCH_RECORDS}\nepoch_ms = 3600000\ncheckpoint_epochs = 1\n[template]\nrefresh_epochs = {refresh}\n"),
        )
        .unwrap();
        let config = config.to_str().unwrap();
        let reference = dir.join(format!("reference-{refresh}"));
        if !reference.exists() {
            common::feed::batch_run(&files, &dir, config, &reference);
        }
        let want = clusters(&reference);
        assert!(want.len() > 150, "the reference holds the pages");
        let want_changes = std::fs::read_to_string(reference.join("changes.jsonl")).unwrap();

        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let round = dir.join(format!("seed{seed}"));
        let (feed, out, checkpoint) =
            (round.join("feed"), round.join("out"), round.join("checkpoint"));
        std::fs::create_dir_all(&feed).unwrap();
        let log = round.join("stderr.txt");
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
        let mut child = spawn(&args, &log);
        for (i, bytes) in files.iter().enumerate() {
            // Written in pieces, as a crawler would; kills while it is read.
            let path = feed.join(format!("feed-{i}.warc"));
            let mut file = std::fs::File::create(&path).unwrap();
            for chunk in bytes.chunks(bytes.len() / 4 + 1) {
                file.write_all(chunk).unwrap();
                file.flush().unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
            for _ in 0..1 + rng.below(3) {
                let plan = kill(&mut child, &checkpoint, &mut rng);
                *tally.entry(plan).or_default() += 1;
                child = spawn(&args, &log);
            }
        }
        let reached =
            wait_until(Duration::from_secs(120), || manifest_epoch(&checkpoint) >= last_epoch);
        assert!(
            reached,
            "seed {seed}, refreshes every {refresh}: the follower reached the last epoch (see {})",
            log.display()
        );
        // One more crash and resume at the end, then a clean stop.
        child.kill().unwrap();
        child.wait().unwrap();
        let mut child = spawn(&args, &log);
        std::thread::sleep(Duration::from_millis(300));
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "dupflow did not stop");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "seed {seed}, refreshes every {refresh}: exit {status}");

        let got = clusters(&out);
        assert_eq!(
            got.len(),
            want.len(),
            "seed {seed}, refreshes every {refresh}: pages lost or doubled"
        );
        assert_eq!(
            got, want,
            "seed {seed}, refreshes every {refresh}: clusters differ from the batch run's"
        );
        assert_eq!(
            net_of_changes(&out),
            want,
            "seed {seed}, refreshes every {refresh}: the net of changes.jsonl differs from the batch clusters"
        );
        let changes = std::fs::read_to_string(out.join("changes.jsonl")).unwrap();
        assert!(changes == want_changes, "seed {seed}, refreshes every {refresh}: changes.jsonl differs from the uninterrupted run's");
        // The positions a checkpoint states never pass the records a file holds.
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(checkpoint.join("checkpoint.json")).unwrap())
                .unwrap();
        for input in manifest["reader"]["inputs"].as_array().unwrap() {
            assert!(
                input["items"].as_u64().unwrap() <= RECORDS,
                "seed {seed}, refreshes every {refresh}: position past the end: {input}"
            );
        }
    }
    eprintln!("kills survived: {tally:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
