//! Helpers shared by the integration tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dupflow::source::{self, http, Input};

pub mod serve;
pub mod synth;

/// `../shared` beside the checkout, or a clear message why a test cannot run (`skip`).
pub fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(
            "the shared corpora",
            &format!(
                "{} is absent (CI places it beside the checkout; clone the project next to its \
                 shared/ folder to run this)",
                dir.display()
            ),
        );
        None
    }
}

/// Where `skip` lists the checks that did not run (`.ci/test` prints it at its end).
pub const SKIPPED_LIST: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/skipped.txt");

/// A check the test cannot make here (`what`: the check; `why`: what is missing). Where
/// everything the tests need is installed (`DUPFLOW_TEST_NO_SKIP=1`, which `.ci/run` sets) the
/// test fails; elsewhere the line is written to the terminal, past the test harness's capture,
/// and listed in `SKIPPED_LIST`, so that a skip never passes for work done.
pub fn skip(what: &str, why: &str) {
    use std::io::Write;
    let line = format!("SKIPPED {what}: {why}");
    if std::env::var_os("DUPFLOW_TEST_NO_SKIP").is_some() {
        panic!("{line} (DUPFLOW_TEST_NO_SKIP is set: every check must run)");
    }
    // `eprintln!` would be captured with a passing test's output, and never shown.
    let _ = writeln!(std::io::stderr().lock(), "\n{line}");
    let list = std::fs::OpenOptions::new().create(true).append(true).open(SKIPPED_LIST);
    if let Ok(mut list) = list {
        let _ = writeln!(list, "{line}");
    }
}

/// Held by a test that times the binary (the fault table's seconds) and by tests that run many
/// processes at once, so that the latter do not run beside the former and load the machine
/// its seconds are read on.
pub fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The `dupflow` binary of this build.
pub fn dupflow() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_dupflow"))
}

/// A fresh directory for one test of this process (emptied if it exists), removed when the
/// test is done with it; kept when the test fails, to look at.
pub fn temp_dir(name: &str) -> TestDir {
    let path = std::env::temp_dir().join(format!("dupflow-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    TestDir(path)
}

/// A test's directory: a path, removed on drop unless the test is panicking.
#[derive(Debug)]
pub struct TestDir(PathBuf);

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TestDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// What reading one input gave: record types, pages (by URL), revisits and errors by code.
#[derive(Debug, Default)]
pub struct ReadResult {
    pub types: BTreeMap<String, usize>,
    pub page_urls: Vec<String>,
    pub revisits: usize,
    pub errors: BTreeMap<&'static str, usize>,
    pub document_errors: BTreeMap<&'static str, usize>,
}

pub fn read_all(input: &Input, max_record_bytes: u64) -> ReadResult {
    let mut result = ReadResult::default();
    source::read_records(input, max_record_bytes, |item| match item {
        Ok(record) => {
            *result.types.entry(record.type_name()).or_default() += 1;
            match http::interpret(&record, 2 << 20) {
                Ok((http::Outcome::Page(doc), _)) => result.page_urls.push(doc.url),
                Ok((http::Outcome::Revisit(_), _)) => result.revisits += 1,
                Ok((http::Outcome::Skipped(_), _)) => {}
                Err(e) => *result.document_errors.entry(e.code()).or_default() += 1,
            }
        }
        Err(e) => *result.errors.entry(e.kind.code()).or_default() += 1,
    })
    .expect("input opens");
    result
}

/// Follow-mode helpers shared by the follow and crash-soak tests.
pub mod feed {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::process::{Command, Stdio};

    /// The epoch of the committed checkpoint in `checkpoint` (0 when there is none).
    pub fn manifest_epoch(checkpoint: &Path) -> u64 {
        std::fs::read(checkpoint.join("checkpoint.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["epoch"].as_u64())
            .unwrap_or(0)
    }

    /// The clusters as changes.jsonl says they are now (url → cluster), and whether any row
    /// was counted more than once.
    pub fn net_of_changes(out: &Path) -> (BTreeMap<String, String>, bool) {
        let mut rows: BTreeMap<(String, String), i64> = BTreeMap::new();
        for line in std::fs::read_to_string(out.join("changes.jsonl")).unwrap_or_default().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            *rows
                .entry((v["url"].as_str().unwrap().into(), v["cluster"].as_str().unwrap().into()))
                .or_default() += v["diff"].as_i64().unwrap();
        }
        let doubled = rows.values().any(|n| *n > 1 || *n < 0);
        (
            rows.into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|((url, cluster), _)| (url, cluster))
                .collect(),
            doubled,
        )
    }

    /// Writes `files` into `dir/all` and runs them once, uninterrupted, into `out`.
    pub fn batch_run(files: &[Vec<u8>], dir: &Path, config: &str, out: &Path) {
        let all = dir.join("all");
        std::fs::create_dir_all(&all).unwrap();
        for (i, bytes) in files.iter().enumerate() {
            std::fs::write(all.join(format!("feed-{i}.warc")), bytes).unwrap();
        }
        let status = Command::new(env!("CARGO_BIN_EXE_dupflow"))
            .args([
                "run",
                all.to_str().unwrap(),
                "--config",
                config,
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "the batch run failed");
    }
}
