//! The fault table: each fault a run can meet is injected into the real binary, and one row per
//! fault is printed (`cargo test --test integration faults:: -- --nocapture`): exit code,
//! seconds to exit, files left behind, pages lost on the following resume. Every row must show a clear one-line
//! error and a non-zero exit within 2 s of the fault (0 for a clean SIGTERM stop, with complete
//! outputs), no temporary file left, and no page lost after resume.
//!
//! The disk-full rows mount a small tmpfs (root only); the rows over the dev file read it from
//! ../shared. Where either is not available the row says so and is skipped.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{dupflow, shared_dir, temp_dir};

/// The limit on a failing run's exit, counted from the fault.
const EXIT_LIMIT: Duration = Duration::from_secs(2);

/// One row of the table.
struct Row {
    fault: &'static str,
    exit: Option<i32>,
    seconds: f64,
    left: Vec<String>,
    lost: Option<usize>,
    line: String,
}

impl Row {
    fn print(&self) {
        let lost = self.lost.map_or("-".to_string(), |n| n.to_string());
        let left = if self.left.is_empty() { "none".to_string() } else { self.left.join(" ") };
        let exit = self.exit.map_or("signal".to_string(), |c| c.to_string());
        eprintln!(
            "| {:<28} | {:>4} | {:>6.2} | {:<12} | {:>4} | {}",
            self.fault, exit, self.seconds, left, lost, self.line
        );
    }
}

fn header() {
    eprintln!(
        "| {:<28} | {:>4} | {:>6} | {:<12} | {:>4} | stderr's error line",
        "fault", "exit", "s", "left behind", "lost"
    );
}

/// Runs dupflow to its end: the output, and the seconds it took.
fn run(args: &[&str], env: &[(&str, &str)]) -> (Output, f64) {
    let started = Instant::now();
    let mut command = dupflow();
    command.args(args).env("DUPFLOW_LOG", "warn").stdout(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    let output = command.output().unwrap();
    (output, started.elapsed().as_secs_f64())
}

/// The `error:` lines of stderr (a failure has exactly one).
fn error_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.starts_with("error:"))
        .map(str::to_string)
        .collect()
}

/// Temporary files anywhere under `dirs`.
fn leftovers(dirs: &[&Path]) -> Vec<String> {
    let mut left = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.contains(".tmp")
                || name.starts_with(".dedup-rounds")
                || name.starts_with(".dupflow-probe")
            {
                left.push(name);
            } else if entry.path().is_dir() {
                left.extend(leftovers(&[&entry.path()]));
            }
        }
    }
    left
}

/// Asserts a failing row: one error line naming `names`, exit 2 within the limit, nothing left.
fn failed(fault: &'static str, output: &Output, seconds: f64, dirs: &[&Path], names: &str) -> Row {
    let lines = error_lines(output);
    let row = Row {
        fault,
        exit: output.status.code(),
        seconds,
        left: leftovers(dirs),
        lost: None,
        line: lines.join(" / "),
    };
    row.print();
    assert_eq!(
        row.exit,
        Some(2),
        "{fault}: exit code; stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        lines.len(),
        1,
        "{fault}: one error line; stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(row.line.contains(names), "{fault}: the error names {names:?}: {}", row.line);
    assert!(row.left.is_empty(), "{fault}: temporary files left: {:?}", row.left);
    let os_errors = row.line.matches("(os error").count();
    assert!(os_errors <= 1, "{fault}: the OS error is named once: {}", row.line);
    row
}

fn dev_file() -> Option<PathBuf> {
    Some(shared_dir()?.join("bench/docs-dev.warc.gz"))
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A small tmpfs at `dir` with `free` bytes left, unmounted on drop; None (said) where mounting
/// is not allowed.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size_kib: u64, free_kib: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_kib}k"), "tmpfs", s(dir)])
            .stderr(Stdio::null())
            .status();
        if !mounted.is_ok_and(|s| s.success()) {
            common::skip(
                "the disk-full rows",
                &format!("cannot mount a tmpfs at {} (they need root)", dir.display()),
            );
            return None;
        }
        let fill = vec![0u8; ((size_kib - free_kib) * 1024) as usize];
        std::fs::write(dir.join("fill"), fill).unwrap();
        Some(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// url → cluster of a clusters.jsonl, as the partition of URLs into clusters.
pub(crate) fn partition(out: &Path) -> BTreeSet<BTreeSet<String>> {
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(out.join("clusters.jsonl")).unwrap_or_default().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        groups
            .entry(v["cluster"].as_str().unwrap().into())
            .or_default()
            .insert(v["url"].as_str().unwrap().into());
    }
    groups.into_values().collect()
}

fn pages(partition: &BTreeSet<BTreeSet<String>>) -> usize {
    partition.iter().map(BTreeSet::len).sum()
}

/// Small epochs and a checkpoint at each: a run over the dev file lasts long enough to be
/// interrupted, and keeps a previous checkpoint to fall back to.
const SLOW: &str = "[run]\nepoch_records = 300\nepochs_in_flight = 1\ncheckpoint_epochs = 1\n";

/// Waits up to `limit` for `ready`; whether it came.
pub(crate) fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while !ready() {
        if started.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Sends signal `name` (`TERM`, `KILL`, …) to `child`.
pub(crate) fn signal(child: &Child, name: &str) {
    assert!(Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap()
        .success());
}

fn wait_exit(child: &mut Child, limit: Duration) -> (Option<std::process::ExitStatus>, f64) {
    let started = Instant::now();
    let exited = wait_for(limit, || child.try_wait().unwrap().is_some());
    (exited.then(|| child.try_wait().unwrap().unwrap()), started.elapsed().as_secs_f64())
}

fn manifest_epoch(dir: &Path) -> Option<u64> {
    let bytes = std::fs::read(dir.join("checkpoint.json")).ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes).ok()?["epoch"].as_u64()
}

#[test]
fn every_fault_stops_the_run_at_once_with_one_line_and_nothing_left() {
    let _alone = common::timing_lock();
    let dir = temp_dir("faults");
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let input = dev_file().filter(|p| p.exists()).unwrap_or(sample.clone());
    header();
    let mut rows = Vec::new();

    // The output directory is a file, or lies under one: refused before any input is read.
    let file = dir.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let (output, secs) = run(&["run", s(&input), "--out", s(&file), "--quiet"], &[]);
    rows.push(failed(
        "--out is a file",
        &output,
        secs,
        &[&dir],
        "a file of that name is in the way",
    ));
    let (output, secs) = run(&["run", s(&input), "--out", s(&file.join("sub")), "--quiet"], &[]);
    rows.push(failed("--out under a file", &output, secs, &[&dir], "--out"));
    let (output, secs) = run(
        &["run", s(&input), "--out", s(&dir.join("out")), "--checkpoint", s(&file), "--quiet"],
        &[],
    );
    rows.push(failed("--checkpoint is a file", &output, secs, &[&dir], "--checkpoint"));

    // The output disk fills while the run writes its change stream; then the checkpoint disk.
    // (The word store, which the output directory holds by default, is kept apart: its own
    // disk filling is a row below.)
    if let Some(full) = Tmpfs::mount(&dir.join("full-out"), 64, 4) {
        let config = dir.join("words-apart.toml");
        // Epochs of 500 records: the disk fills at the first epoch's changes, early in the run,
        // and the seconds are those from near the fault to the exit.
        std::fs::write(
            &config,
            format!("[run]\nword_store_dir = \"{}\"\nepoch_records = 500\n", dir.display()),
        )
        .unwrap();
        let (output, secs) =
            run(&["run", s(&input), "--config", s(&config), "--out", s(&full.0), "--quiet"], &[]);
        rows.push(failed("output disk full", &output, secs, &[&full.0], "No space left"));
        assert!(secs < 2.0 + 1.0, "the run stops at once: {secs} s");
        // The change stream holds whole lines: an epoch's lines the disk cut are rolled back.
        let changes = std::fs::read(full.0.join("changes.jsonl")).unwrap_or_default();
        assert!(changes.is_empty() || changes.ends_with(b"\n"), "changes.jsonl cut mid-line");
    }
    if let Some(full) = Tmpfs::mount(&dir.join("full-checkpoint"), 256, 32) {
        // A checkpoint every epoch of 500 records: the disk fills at an early one.
        let config = dir.join("checkpoints.toml");
        std::fs::write(&config, "[run]\nepoch_records = 500\ncheckpoint_epochs = 1\n").unwrap();
        let (output, secs) = run(
            &[
                "run",
                s(&input),
                "--config",
                s(&config),
                "--out",
                s(&dir.join("out-c")),
                "--checkpoint",
                s(&full.0.join("state")),
                "--quiet",
            ],
            &[],
        );
        rows.push(failed(
            "checkpoint disk full",
            &output,
            secs,
            &[&full.0, &dir.join("out-c")],
            "No space left",
        ));
        // No file of a checkpoint begun and not committed is left.
        let state = full.0.join("state");
        let committed = manifest_epoch(&state);
        let uncommitted: Vec<String> = std::fs::read_dir(&state)
            .map(|d| {
                d.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .filter(|name| {
                let epoch = ["part-", "revisits-", "sums-", "reader-"]
                    .iter()
                    .find_map(|p| name.strip_prefix(p))
                    .and_then(|rest| rest.split(['-', '.']).next()?.parse::<u64>().ok());
                epoch.is_some_and(|e| committed.is_none_or(|c| e > c))
            })
            .collect();
        assert!(uncommitted.is_empty(), "uncommitted checkpoint files left: {uncommitted:?}");
    }

    // The word store's disk fills (`run.word_store_dir`): the worker that cannot write a
    // page's words stops the run.
    if let Some(full) = Tmpfs::mount(&dir.join("full-words"), 64, 4) {
        let config = dir.join("words.toml");
        std::fs::write(&config, format!("[run]\nword_store_dir = \"{}\"\n", full.0.display()))
            .unwrap();
        let out = dir.join("out-w");
        let (output, secs) =
            run(&["run", s(&input), "--config", s(&config), "--out", s(&out), "--quiet"], &[]);
        let row = failed("word store disk full", &output, secs, &[&full.0, &out], "No space left");
        assert!(
            !row.line.contains("panicked") && row.line.contains(s(&full.0)),
            "the store's file and its error are named, not a panic: {}",
            row.line
        );
        rows.push(row);
    }

    // The run's resident memory passes run.memory_limit_mb: it stops at once, with one line,
    // not killed by the kernel.
    let config = dir.join("memory.toml");
    std::fs::write(&config, "[run]\nmemory_limit_mb = 40\n").unwrap();
    let out = dir.join("out-m");
    let (output, secs) =
        run(&["run", s(&input), "--config", s(&config), "--out", s(&out), "--quiet"], &[]);
    rows.push(failed("memory limit passed", &output, secs, &[&out], "run.memory_limit_mb"));

    // An input that cannot be read (an I/O error, not a damaged record).
    let (output, secs) =
        run(&["run", "/proc/self/mem", "--out", s(&dir.join("out-io")), "--quiet"], &[]);
    rows.push(failed("reader I/O error", &output, secs, &[&dir.join("out-io")], "/proc/self/mem"));

    // A worker panics mid-run: the others and the reader leave, the error has the panic's place.
    // Pages are captured as their epoch is applied: epochs of 100 records put the fault early in
    // the run, and the seconds are those from near it to the exit.
    let config = dir.join("small-epochs.toml");
    std::fs::write(&config, "[run]\nepoch_records = 100\n").unwrap();
    let (output, secs) = run(
        &["run", s(&input), "--config", s(&config), "--out", s(&dir.join("out-p")), "--quiet"],
        &[("DUPFLOW_FAULT", "panic-after-pages:3")],
    );
    rows.push(failed("worker panic", &output, secs, &[&dir.join("out-p")], "panicked"));
    assert!(secs < EXIT_LIMIT.as_secs_f64(), "the run stops at once: {secs} s");

    // The metrics port is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let (output, secs) = run(&["run", s(&sample), "--metrics-address", &address, "--quiet"], &[]);
    rows.push(failed("metrics port in use", &output, secs, &[], &address));

    // dedup into a full disk: its rounds' scratch folder goes too.
    // The default fixture (9 KB) into 4 KiB left: the disk fills at dedup's first writes, so the
    // seconds are those from near the fault to the exit, not a whole clustering's.
    if let Some(full) = Tmpfs::mount(&dir.join("full-dedup"), 64, 4) {
        let (output, secs) = run(&["dedup", s(&sample), "--out", s(&full.0)], &[]);
        rows.push(failed("dedup disk full", &output, secs, &[&full.0], "No space left"));
    }
    assert!(rows.iter().all(|r| r.seconds < EXIT_LIMIT.as_secs_f64() + 1.0));
}

/// SIGTERM mid-run ends it cleanly (exit 0, complete outputs); SIGKILL while a checkpoint is
/// being written loses nothing: each run resumed to its end has the uninterrupted run's clusters.
#[test]
fn a_stopped_or_killed_run_resumes_without_losing_a_page() {
    let Some(input) = dev_file() else { return };
    let dir = temp_dir("signals");
    let config = dir.join("slow.toml");
    std::fs::write(&config, SLOW).unwrap();
    let base = ["run", s(&input), "--config", s(&config), "--quiet"];
    let (output, _) = run(&[&base[..], &["--out", s(&dir.join("whole"))]].concat(), &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let want = partition(&dir.join("whole"));
    header();

    for (fault, name) in [("SIGTERM mid-run", "TERM"), ("SIGKILL mid-checkpoint", "KILL")] {
        let (out, state) = (dir.join(format!("out-{name}")), dir.join(format!("state-{name}")));
        let args = [&base[..], &["--out", s(&out), "--checkpoint", s(&state)]].concat();
        let mut child = dupflow()
            .args(&args)
            .env("DUPFLOW_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Mid-run: after the first checkpoint; for SIGKILL, while the next one is being written
        // (its parts on disk, its manifest not yet).
        assert!(
            wait_for(Duration::from_secs(60), || manifest_epoch(&state).is_some()),
            "{fault}: no checkpoint"
        );
        if name == "KILL" {
            let committed = manifest_epoch(&state).unwrap();
            wait_for(Duration::from_secs(10), || {
                std::fs::read_dir(&state).unwrap().flatten().any(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.strip_prefix("part-")
                        .and_then(|r| r.split('-').next()?.parse::<u64>().ok())
                        .is_some_and(|ep| ep > committed)
                })
            });
        }
        assert!(child.try_wait().unwrap().is_none(), "{fault}: the run ended before the signal");
        signal(&child, name);
        let (status, seconds) = wait_exit(&mut child, Duration::from_secs(30));
        let status = status.expect("the process ends after the signal");
        let stderr = child.wait_with_output().unwrap().stderr;
        let line = String::from_utf8_lossy(&stderr)
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("")
            .to_string();
        if name == "TERM" {
            assert!(
                status.success(),
                "{fault}: a clean stop exits 0: {}",
                String::from_utf8_lossy(&stderr)
            );
            assert!(seconds < EXIT_LIMIT.as_secs_f64(), "{fault}: {seconds} s to stop");
            // Complete outputs: the clusters file agrees with the change stream's net.
            let (net, doubled) = common::feed::net_of_changes(&out);
            let clusters: BTreeMap<String, String> =
                std::fs::read_to_string(out.join("clusters.jsonl"))
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                    .map(|v| {
                        (
                            v["url"].as_str().unwrap().to_string(),
                            v["cluster"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect();
            assert!(!doubled && net == clusters, "{fault}: clusters.jsonl and changes.jsonl agree");
        }
        let left = leftovers(&[&out, &state]);
        // Resumed to its end: the same clusters as the uninterrupted run.
        let (output, _) = run(&args, &[]);
        assert!(
            output.status.success(),
            "{fault}: resume: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let got = partition(&out);
        let row = Row {
            fault,
            exit: status.code(),
            seconds,
            left: left.clone(),
            lost: Some(pages(&want).saturating_sub(pages(&got))),
            line: match (line.is_empty(), name) {
                (false, _) => line,
                (true, "TERM") => "(none: a clean stop)".into(),
                (true, _) => "(none: killed)".into(),
            },
        };
        row.print();
        if name == "TERM" {
            assert!(left.is_empty(), "{fault}: temporary files left: {left:?}");
        }
        assert_eq!(row.lost, Some(0), "{fault}: pages lost");
        assert_eq!(got, want, "{fault}: the resumed run's clusters");
    }
}

/// Damaged or missing checkpoint files are never resumed from silently: the resume refuses
/// (naming the file), or says it falls back to the previous checkpoint; a run that resumes
/// without a word has exactly the uninterrupted run's clusters (the damaged file was not one it
/// needed). 20 random byte changes in each kind of file, and every file removed in turn.
#[test]
fn damaged_checkpoints_are_refused_or_fall_back_never_resumed_silently() {
    let dir = temp_dir("flips");
    let input = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let config = dir.join("small.toml");
    std::fs::write(&config, "[run]\nepoch_records = 2\ncheckpoint_epochs = 1\n").unwrap();
    let (state, whole) = (dir.join("state"), dir.join("whole"));
    let base = ["run", s(&input), "--config", s(&config), "--quiet"];
    let (output, _) =
        run(&[&base[..], &["--out", s(&whole), "--checkpoint", s(&state)]].concat(), &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let want = std::fs::read(whole.join("clusters.jsonl")).unwrap();
    let files: Vec<String> = {
        let mut names: Vec<String> = std::fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into())
            .collect();
        names.sort();
        names
    };
    assert!(
        files.contains(&"checkpoint.previous.json".to_string()),
        "a previous checkpoint is kept: {files:?}"
    );
    let kind = |name: &str| name.split(['-', '.']).next().unwrap().to_string();
    let kinds: BTreeSet<String> = files.iter().map(|f| kind(f)).collect();
    let mut rng = common::synth::Rng(7);
    let (mut refused, mut fell_back, mut unused) = (0, 0, 0);
    let mut trial = 0;
    // Each damage is tried with the previous checkpoint there (a fallback is possible) and
    // without it (only a refusal is).
    let mut check = |damage: &dyn Fn(&Path), what: String| {
        for keep_previous in [true, false] {
            trial += 1;
            let copy = dir.join(format!("trial-{trial}"));
            let _ = std::fs::remove_dir_all(&copy);
            std::fs::create_dir_all(&copy).unwrap();
            for f in &files {
                std::fs::copy(state.join(f), copy.join(f)).unwrap();
            }
            damage(&copy);
            if !keep_previous {
                let _ = std::fs::remove_file(copy.join("checkpoint.previous.json"));
            }
            // The checkpoint's outputs go with it: a resume continues its change stream.
            let out = dir.join(format!("out-{trial}"));
            std::fs::create_dir_all(&out).unwrap();
            std::fs::copy(whole.join("changes.jsonl"), out.join("changes.jsonl")).unwrap();
            let (output, _) =
                run(&[&base[..], &["--out", s(&out), "--checkpoint", s(&copy)]].concat(), &[]);
            let stderr = String::from_utf8_lossy(&output.stderr).to_string();
            if !output.status.success() {
                assert_eq!(output.status.code(), Some(2), "{what}: {stderr}");
                assert!(
                    stderr.contains("checkpoint"),
                    "{what}: the refusal names the checkpoint: {stderr}"
                );
                refused += 1;
            } else if stderr.contains("resuming from the previous checkpoint") {
                assert_eq!(
                    std::fs::read(out.join("clusters.jsonl")).unwrap(),
                    want,
                    "{what}: after the fallback"
                );
                fell_back += 1;
            } else {
                assert_eq!(
                    std::fs::read(out.join("clusters.jsonl")).unwrap(),
                    want,
                    "{what}: resumed without a word"
                );
                unused += 1;
            }
            let _ = std::fs::remove_dir_all(&copy);
            let _ = std::fs::remove_dir_all(&out);
        }
    };
    for k in &kinds {
        let of_kind: Vec<&String> = files.iter().filter(|f| &kind(f) == k).collect();
        for _ in 0..20 {
            let name = of_kind[rng.below(of_kind.len() as u64) as usize].clone();
            let len = std::fs::metadata(state.join(&name)).unwrap().len();
            let at = rng.below(len.max(1));
            let xor = 1 + rng.below(255) as u8;
            check(
                &|copy: &Path| {
                    let mut bytes = std::fs::read(copy.join(&name)).unwrap();
                    if let Some(b) = bytes.get_mut(at as usize) {
                        *b ^= xor;
                    }
                    std::fs::write(copy.join(&name), bytes).unwrap();
                },
                format!("{name}: byte {at} ^ {xor:#04x}"),
            );
        }
    }
    for name in &files {
        check(
            &|copy: &Path| std::fs::remove_file(copy.join(name)).unwrap(),
            format!("{name} removed"),
        );
    }
    eprintln!("{} trials over {kinds:?}: refused {refused}, fell back {fell_back}, resumed without needing the file {unused}", trial);
    assert!(refused > 0 && fell_back > 0, "both the refusal and the fallback are exercised");
}
