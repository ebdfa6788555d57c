//! The fault table's rows where a run could lose or mix data, each through the real binary: a
//! follower stopped inside a record, a Content-Length far past its record, a resume with other
//! settings, a checkpointed input that grew or changed, a change stream cut before a resume, two
//! runs on one checkpoint directory, the output directory removed under a follower, a damaged
//! Parquet file among good inputs, a removed manifest. Each ends with the clusters of an
//! uninterrupted run, or with a refusal that names the cause (exit 2, one `error:` line).
//! `cargo test --test integration resumes:: -- --nocapture` prints the rows.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::faults::{partition, signal, wait_for};
use common::{dupflow, temp_dir};

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn fixture() -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz"))
        .unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
}

/// Small epochs, a checkpoint at each and a template refresh at each: a follower checkpoints
/// what it has read while it waits.
const CONFIG: &str =
    "[run]\nepoch_records = 3\nepoch_ms = 100\ncheckpoint_epochs = 1\n[template]\nrefresh_epochs = 1\n";

fn run(args: &[&str]) -> Output {
    dupflow().args(args).env("DUPFLOW_LOG", "warn").stdout(Stdio::null()).output().unwrap()
}

/// `dupflow run INPUT --config CONFIG --checkpoint STATE --out OUT --quiet`, to its end: a
/// checkpointed run, or its resume.
fn checkpointed(input: &Path, config: &Path, state: &Path, out: &Path) -> Output {
    let args = ["run", s(input), "--config", s(config), "--checkpoint", s(state), "--out", s(out)];
    run(&[&args[..], &["--quiet"]].concat())
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// A refused run: exit 2 and one `error:` line that contains each of `names`.
fn assert_refused(output: &Output, names: &[&str], what: &str) -> String {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{what}: exit code; stderr: {text}");
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{what}: one error line: {text}");
    for name in names {
        assert!(errors[0].contains(name), "{what}: the error names {name}: {}", errors[0]);
    }
    errors[0].to_string()
}

fn row(fault: &str, outcome: &str) {
    eprintln!("| {fault:<40} | {outcome}");
}

/// The clusters of an uninterrupted batch run over `input`.
fn batch(input: &Path, config: &Path, out: &Path) -> BTreeSet<BTreeSet<String>> {
    let output = run(&["run", s(input), "--config", s(config), "--out", s(out), "--quiet"]);
    assert!(output.status.success(), "batch run: {}", stderr(&output));
    partition(out)
}

/// The records a reader frames whole from `bytes`, and the errors it counts.
fn framed(bytes: &[u8]) -> (usize, BTreeMap<&'static str, usize>) {
    let decoder =
        dupflow::source::Decoder::new(Box::new(std::io::Cursor::new(bytes.to_vec()))).unwrap();
    let mut framer = dupflow::source::Framer::new(decoder, 1 << 20);
    let (mut records, mut errors) = (0, BTreeMap::new());
    while let Some(item) = framer.next_record() {
        match item {
            Ok(_) => records += 1,
            Err(e) => *errors.entry(e.kind.code()).or_insert(0) += 1,
        }
    }
    (records, errors)
}

/// Items the committed checkpoint in `state` has read of its first input.
fn checkpointed_items(state: &Path) -> u64 {
    std::fs::read(state.join("checkpoint.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["reader"]["inputs"][0]["items"].as_u64())
        .unwrap_or(0)
}

fn spawn(args: &[&str]) -> Child {
    dupflow()
        .args(args)
        .env("DUPFLOW_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_exit(mut child: Child, limit: Duration) -> Output {
    assert!(
        wait_for(limit, || child.try_wait().unwrap().is_some()),
        "the run did not end within {limit:?}"
    );
    child.wait_with_output().unwrap()
}

/// A follower stopped (SIGTERM) while its file ends inside a record resumes that record once the
/// file is whole: the clusters of an uninterrupted run, for a per-record gzip file and an
/// uncompressed one, whichever run reads the rest (a batch run, as the fault was found, or a
/// follower again).
#[test]
fn a_follower_stopped_inside_a_record_loses_nothing() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-stop");
    let config = dir.join("p.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let gz = fixture();
    let plain = gunzip(&gz);
    for (name, whole) in [("crawl.warc.gz", gz), ("crawl.warc", plain)] {
        let case = dir.join(name.replace('.', "-"));
        std::fs::create_dir_all(&case).unwrap();
        let full = case.join("full").join(name);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, &whole).unwrap();
        let want = batch(&full, &config, &case.join("want"));
        // Cut inside a record: the reader frames the records before it and meets the end inside.
        let cut = whole.len() * 3 / 5;
        let (before, errors) = framed(&whole[..cut]);
        assert!(
            errors.contains_key("truncated_gzip") || errors.contains_key("truncated_record"),
            "{name}: the cut falls inside a record: {errors:?}"
        );
        for resumed_by in ["batch", "follow"] {
            let (input, state, out) = (
                case.join(format!("in-{resumed_by}")).join(name),
                case.join(format!("state-{resumed_by}")),
                case.join(format!("out-{resumed_by}")),
            );
            std::fs::create_dir_all(input.parent().unwrap()).unwrap();
            std::fs::write(&input, &whole[..cut]).unwrap();
            let follow = [
                "run",
                "--follow",
                s(&input),
                "--config",
                s(&config),
                "--checkpoint",
                s(&state),
                "--out",
                s(&out),
                "--quiet",
            ];
            let child = spawn(&follow);
            assert!(
                wait_for(Duration::from_secs(60), || checkpointed_items(&state) >= before as u64),
                "{name}: the follower checkpoints the {before} whole records"
            );
            signal(&child, "TERM");
            let output = wait_exit(child, Duration::from_secs(30));
            assert!(output.status.success(), "{name}: a clean stop: {}", stderr(&output));
            assert!(
                !stderr(&output).contains("truncated"),
                "{name}: the unfinished record is no damage at a stop: {}",
                stderr(&output)
            );
            // The writer finishes the file; the run resumes.
            std::fs::write(&input, &whole).unwrap();
            let output = if resumed_by == "batch" {
                checkpointed(&input, &config, &state, &out)
            } else {
                let child = spawn(&follow);
                let whole_records = framed(&whole).0 as u64;
                assert!(
                    wait_for(Duration::from_secs(60), || checkpointed_items(&state)
                        >= whole_records),
                    "{name}: the follower reads on"
                );
                signal(&child, "TERM");
                wait_exit(child, Duration::from_secs(30))
            };
            assert!(output.status.success(), "{name}: resume: {}", stderr(&output));
            let got = partition(&out);
            assert_eq!(got, want, "{name}, resumed by a {resumed_by} run: the clusters");
            row(&format!("follower stopped inside a record ({name}, {resumed_by})"), "none lost");
        }
    }
}

/// One record's Content-Length far past its gzip member and the file: that record is skipped as
/// `bad_content_length` and every record after it is read.
#[test]
fn a_content_length_past_the_end_skips_one_record() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-length");
    let config = dir.join("p.toml");
    std::fs::write(&config, "").unwrap();
    let whole = fixture();
    // The fixture's records, one gzip member each; the fifth one's length is made absurd.
    let mut members = Vec::new();
    let mut rest = &whole[..];
    while !rest.is_empty() {
        let mut decoder = flate2::bufread::GzDecoder::new(rest);
        let mut record = Vec::new();
        decoder.read_to_end(&mut record).unwrap();
        let left = decoder.into_inner().len();
        members.push(record);
        rest = &rest[rest.len() - left..];
    }
    let mut target = None;
    for (i, record) in members.iter_mut().enumerate().skip(4) {
        let text = String::from_utf8_lossy(record).to_string();
        if text.contains("WARC-Type: response") && text.contains("text/html") {
            let at = text.find("Content-Length: ").unwrap() + "Content-Length: ".len();
            let end = at + text[at..].find('\r').unwrap();
            record.splice(at..end, b"999999999999".iter().copied());
            target = Some(i);
            break;
        }
    }
    let target = target.expect("an HTML response after the fourth record");
    let mut damaged = Vec::new();
    for record in &members {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut encoder, record).unwrap();
        damaged.extend(encoder.finish().unwrap());
    }
    let input = dir.join("damaged.warc.gz");
    std::fs::write(&input, &damaged).unwrap();
    let (records, errors) = framed(&damaged);
    assert_eq!(records, members.len() - 1, "every other record is framed: {errors:?}");
    assert_eq!(errors, BTreeMap::from([("bad_content_length", 1)]));
    let out = dir.join("out");
    let output = run(&["run", s(&input), "--config", s(&config), "--out", s(&out)]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("bad_content_length"), "{}", stderr(&output));
    let pages: usize = partition(&out).iter().map(BTreeSet::len).sum();
    let undamaged = dir.join("whole.warc.gz");
    std::fs::write(&undamaged, &whole).unwrap();
    let want: usize =
        batch(&undamaged, &config, &dir.join("whole")).iter().map(BTreeSet::len).sum();
    assert_eq!(pages, want - 1, "one page lost (record {target}), the others read");
    row("Content-Length 999999999999", "that record skipped, the rest read");
}

/// A resume with another value of a setting that shapes pages or verdicts is refused with the
/// setting named; the checkpoint's own settings resume.
#[test]
fn a_resume_with_other_settings_is_refused_naming_them() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-settings");
    let input = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let config = dir.join("p.toml");
    std::fs::write(&config, "").unwrap();
    let (state, out) = (dir.join("state"), dir.join("out"));
    let resume = |config: &Path| checkpointed(&input, config, &state, &out);
    let output = resume(&config);
    assert!(output.status.success(), "{}", stderr(&output));
    for (setting, toml) in [
        ("sentence.min_sentence_units", "[sentence]\nmin_sentence_units = 60\n"),
        ("sentence.landmarks", "[sentence]\nlandmarks = false\n"),
        ("sentence.punctuation", "[sentence]\npunctuation = \"remove\"\n"),
        ("source.max_page_bytes", "[source]\nmax_page_bytes = 20000\n"),
        ("verify.threshold", "[verify]\nthreshold = 0.7\n"),
    ] {
        let other = dir.join("other.toml");
        std::fs::write(&other, toml).unwrap();
        let line = assert_refused(&resume(&other), &[setting, "state"], setting);
        row(&format!("resume with another {setting}"), &line);
    }
    let output = resume(&config);
    assert!(output.status.success(), "the checkpoint's settings resume: {}", stderr(&output));
}

/// A batch run's checkpoint of a file that ended inside a record reads on when the file has
/// grown (the clusters of the whole file), and refuses a file whose read bytes changed.
#[test]
fn a_checkpointed_input_that_grew_is_read_on_and_one_that_changed_is_refused() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-grown");
    let config = dir.join("p.toml");
    std::fs::write(&config, "").unwrap();
    let whole = fixture();
    let full = dir.join("full.warc.gz");
    std::fs::write(&full, &whole).unwrap();
    let want = batch(&full, &config, &dir.join("want"));
    let input = dir.join("crawl.warc.gz");
    let (state, out) = (dir.join("state"), dir.join("out"));
    let resume = || checkpointed(&input, &config, &state, &out);
    std::fs::write(&input, &whole[..whole.len() / 2]).unwrap();
    let output = resume();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(partition(&out).iter().map(BTreeSet::len).sum::<usize>() < 20);
    std::fs::write(&input, &whole).unwrap();
    let output = resume();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(partition(&out), want, "the grown file read on: the whole file's clusters");
    row("batch checkpoint, input grown", "read on: the whole file's clusters");
    // Now the file read to its end is replaced by another of the same size.
    let mut other = whole.clone();
    let last = other.len() - 20;
    other[last] ^= 0x55;
    std::fs::write(&input, &other).unwrap();
    let line = assert_refused(&resume(), &["crawl.warc.gz", "differ"], "changed input");
    row("batch checkpoint, input changed", &line);
    std::fs::write(&input, &whole[..1000]).unwrap();
    let line = assert_refused(&resume(), &["crawl.warc.gz", "shorter"], "shortened input");
    row("batch checkpoint, input shortened", &line);
}

/// changes.jsonl removed or cut before a resume: refused with the file named, never padded.
#[test]
fn a_change_stream_cut_before_a_resume_is_refused() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-changes");
    let input = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let config = dir.join("p.toml");
    std::fs::write(&config, "[run]\nepoch_records = 4\ncheckpoint_epochs = 1\n").unwrap();
    let (state, out) = (dir.join("state"), dir.join("out"));
    let resume = || checkpointed(&input, &config, &state, &out);
    let output = resume();
    assert!(output.status.success(), "{}", stderr(&output));
    let changes = out.join("changes.jsonl");
    let bytes = std::fs::read(&changes).unwrap();
    assert!(bytes.len() > 100);
    for (what, cut) in [("cut", bytes.len() / 2), ("removed", 0)] {
        if cut == 0 {
            std::fs::remove_file(&changes).unwrap();
        } else {
            std::fs::write(&changes, &bytes[..cut]).unwrap();
        }
        let line = assert_refused(&resume(), &["changes.jsonl", "shorter"], what);
        let now = std::fs::read(&changes).unwrap_or_default();
        assert!(!now.contains(&0), "{what}: no NUL bytes written");
        assert_eq!(now.len(), cut, "{what}: the file is left as it was");
        row(&format!("changes.jsonl {what} before a resume"), &line);
    }
}

/// Two runs on one checkpoint directory: the second is refused at once, the holder's process id
/// named, and the holder goes on.
#[test]
fn a_second_run_on_a_checkpoint_directory_is_refused() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-lock");
    let input = dir.join("crawl.warc.gz");
    std::fs::write(&input, fixture()).unwrap();
    let state = dir.join("state");
    let first = spawn(&[
        "run",
        "--follow",
        s(&input),
        "--checkpoint",
        s(&state),
        "--out",
        s(&dir.join("out-1")),
        "--quiet",
    ]);
    assert!(wait_for(Duration::from_secs(30), || state.join("lock").exists()));
    let started = Instant::now();
    let output = run(&[
        "run",
        "--follow",
        s(&input),
        "--checkpoint",
        s(&state),
        "--out",
        s(&dir.join("out-2")),
        "--quiet",
    ]);
    let line = assert_refused(&output, &[&first.id().to_string(), "in use"], "second run");
    assert!(started.elapsed() < Duration::from_secs(5), "refused at once");
    signal(&first, "TERM");
    let output = wait_exit(first, Duration::from_secs(30));
    assert!(output.status.success(), "the holder goes on: {}", stderr(&output));
    row("a second run on one checkpoint directory", &line);
}

/// The output directory removed under a follower: the run stops at its next write with exit 2
/// and the file named; it does not write its outputs anew.
#[test]
fn the_output_directory_removed_under_a_follower_stops_it() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-out-gone");
    let config = dir.join("p.toml");
    std::fs::write(&config, "[run]\nepoch_ms = 100\n").unwrap();
    let input = dir.join("crawl.warc.gz");
    let whole = fixture();
    std::fs::write(&input, &whole).unwrap();
    let out = dir.join("out");
    let child =
        spawn(&["run", "--follow", s(&input), "--config", s(&config), "--out", s(&out), "--quiet"]);
    let changes = out.join("changes.jsonl");
    assert!(wait_for(Duration::from_secs(60), || std::fs::metadata(&changes)
        .is_ok_and(|m| m.len() > 0)));
    std::fs::remove_dir_all(&out).unwrap();
    signal(&child, "TERM");
    let output = wait_exit(child, Duration::from_secs(30));
    let line = assert_refused(&output, &["changes.jsonl", "removed"], "output removed");
    assert!(!stderr(&output).contains("wrote"), "{}", stderr(&output));
    row("output directory removed under a follower", &line);
}

/// A damaged Parquet file among the inputs is skipped, counted and named; the WARC's pages are
/// clustered as without it.
#[test]
fn a_damaged_parquet_file_does_not_stop_the_other_inputs() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-parquet");
    let config = dir.join("p.toml");
    std::fs::write(&config, "").unwrap();
    let input = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let want = batch(&input, &config, &dir.join("want"));
    let fake = dir.join("fake.parquet");
    std::fs::write(&fake, b"PAR1 this is not a parquet file at all PAR1").unwrap();
    let out = dir.join("out");
    let output = run(&["run", s(&input), s(&fake), "--config", s(&config), "--out", s(&out)]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("fake.parquet"), "named: {}", stderr(&output));
    assert_eq!(partition(&out), want);
    row("a damaged Parquet file among the inputs", "skipped and named (invalid_parquet)");
}

/// checkpoint.json removed while the previous generation is there: the resume says so and goes
/// on from the previous one, to the uninterrupted run's clusters.
#[test]
fn a_removed_manifest_falls_back_to_the_previous_one() {
    let _timing = common::timing_lock();
    let dir = temp_dir("resume-manifest");
    let input = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let config = dir.join("p.toml");
    std::fs::write(&config, "[run]\nepoch_records = 4\ncheckpoint_epochs = 1\n").unwrap();
    let want = batch(&input, &config, &dir.join("want"));
    let (state, out) = (dir.join("state"), dir.join("out"));
    let resume = || checkpointed(&input, &config, &state, &out);
    assert!(resume().status.success());
    assert!(state.join("checkpoint.previous.json").exists());
    std::fs::remove_file(state.join("checkpoint.json")).unwrap();
    let output = resume();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("resuming from the previous checkpoint"),
        "said: {}",
        stderr(&output)
    );
    assert_eq!(partition(&out), want);
    row("checkpoint.json removed", "resumed from the previous checkpoint, said");
}
