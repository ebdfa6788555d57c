//! WACZ input: an archive built by py-wacz (PyPI `wacz`, the tool of the format's authors) gives
//! the clusters of the WARC inside it, byte for byte, in `run`; `dedup`, `index build` and
//! `dedup --against` take it as they take the WARC; a followed directory reads an archive
//! that appears in it; a deflated member is inflated; an archive that cannot be read is
//! skipped and counted (`invalid_archive`) while the other inputs are read.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{dupflow, temp_dir};

fn python() -> String {
    std::env::var("DUPFLOW_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// `warc` packed into `wacz` by py-wacz, or `None` (said through `common::skip`) without it.
fn py_wacz(warc: &Path, wacz: &Path) -> Option<()> {
    let python = python();
    let out =
        Command::new(&python).args(["-m", "wacz", "create", "-o"]).arg(wacz).arg(warc).output();
    match out {
        Ok(out) if out.status.success() => Some(()),
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("No module named wacz") => {
            common::skip(
                "WACZ built by py-wacz",
                &format!("{python} has no wacz (.ci/run installs it; or set DUPFLOW_TEST_PYTHON)"),
            );
            None
        }
        Ok(out) => panic!("py-wacz failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            common::skip("WACZ built by py-wacz", &format!("{python} not runnable ({e})"));
            None
        }
    }
}

fn run_ok(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(output.status.success(), "failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

fn clusters_of(input: &Path, out: &Path) -> Vec<u8> {
    run_ok(dupflow().arg("run").arg(input).arg("--quiet").arg("--out").arg(out));
    std::fs::read(out.join("clusters.jsonl")).unwrap()
}

/// The dev crawl packed by py-wacz clusters as the WARC does, byte for byte.
#[test]
fn a_wacz_of_the_dev_crawl_gives_the_clusters_of_its_warc() {
    let Some(shared) = common::shared_dir() else { return };
    let dev = shared.join("bench/docs-dev.warc.gz");
    let dir = temp_dir("wacz-dev");
    let wacz = dir.join("dev.wacz");
    let Some(()) = py_wacz(&dev, &wacz) else { return };
    let from_wacz = clusters_of(&wacz, &dir.join("wacz"));
    assert!(from_wacz == clusters_of(&dev, &dir.join("warc")), "clusters.jsonl differs");
}

/// `dedup`, `index build` and `dedup --against` read an archive as its WARC; a followed
/// directory reads an archive that appears in it.
#[test]
fn dedup_index_and_follow_read_a_wacz() {
    let dir = temp_dir("wacz-commands");
    let warc = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let wacz = dir.join("default.wacz");
    let Some(()) = py_wacz(&warc, &wacz) else { return };
    // dedup: the same records written, under the archive's name.
    run_ok(dupflow().arg("dedup").arg(&warc).arg("--out").arg(dir.join("d-warc")));
    run_ok(dupflow().arg("dedup").arg(&wacz).arg("--out").arg(dir.join("d-wacz")));
    let written = |d: &str| std::fs::read(dir.join(d).join("default.warc.gz")).unwrap();
    assert!(written("d-warc") == written("d-wacz"), "dedup wrote other records");
    let removed = |d: &str| std::fs::read_to_string(dir.join(d).join("removed.jsonl")).unwrap();
    assert_eq!(removed("d-warc"), removed("d-wacz"));
    // index build from the archive; a re-crawl (the same captures under new record ids)
    // against it: every page is an unchanged capture of an indexed one.
    let built =
        run_ok(dupflow().args(["index", "build"]).arg(&wacz).arg("--index").arg(dir.join("index")));
    assert!(built.contains("pages:     8 "), "{built}");
    let mut plain = Vec::new();
    let gz = std::fs::File::open(&warc).unwrap();
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(gz), &mut plain).unwrap();
    let recrawl = dir.join("recrawl.warc");
    let mut renamed = plain.clone();
    let mut ids = 0;
    for at in 0..renamed.len().saturating_sub(9) {
        if &renamed[at..at + 9] == b"urn:uuid:" {
            renamed[at + 7] = b'x';
            ids += 1;
        }
    }
    assert!(ids >= 20, "{ids} record ids");
    std::fs::write(&recrawl, renamed).unwrap();
    let stdout = run_ok(
        dupflow()
            .arg("dedup")
            .arg(&recrawl)
            .arg("--against")
            .arg(dir.join("index"))
            .arg("--out")
            .arg(dir.join("against")),
    );
    assert!(stdout.contains("index:     8 pages of"), "{stdout}");
    assert!(stdout.contains("pages:     kept 0 of 8"), "{stdout}");
    // follow: an archive that appears in the followed directory is read whole.
    let feed = dir.join("feed");
    std::fs::create_dir_all(&feed).unwrap();
    let out = dir.join("followed");
    let mut child = dupflow()
        .args(["run", "--follow"])
        .arg(&feed)
        .arg("--out")
        .arg(&out)
        .args(["--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::copy(&wacz, feed.join("default.wacz")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let pages_read = || {
        std::fs::read_to_string(out.join("changes.jsonl")).map(|t| t.lines().count()).unwrap_or(0)
    };
    while pages_read() < 8 {
        assert!(Instant::now() < deadline, "the followed archive was not read");
        std::thread::sleep(Duration::from_millis(200));
    }
    interrupt(&child);
    assert!(child.wait().unwrap().success());
    let batch = clusters_of(&warc, &dir.join("batch"));
    assert!(std::fs::read(out.join("clusters.jsonl")).unwrap() == batch, "follow's clusters");
}

/// SIGINT: a follower's clean stop.
fn interrupt(child: &std::process::Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// A member the ZIP deflated is inflated; an archive that cannot be read (cut short: no
/// directory) is skipped, counted `invalid_archive` and named, and the other inputs are read.
#[test]
fn a_deflated_member_is_read_and_a_broken_archive_skipped() {
    let dir = temp_dir("wacz-kinds");
    let warc = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let deflated = dir.join("deflated.wacz");
    let script = "import sys, zipfile\n\
                  with zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED) as z:\n\
                  \x20   z.writestr('datapackage.json', '{}')\n\
                  \x20   z.write(sys.argv[1], 'archive/data.warc.gz')";
    let made = Command::new(python()).args(["-c", script]).arg(&warc).arg(&deflated).output();
    match made {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("python could not write a ZIP: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            common::skip("a deflated WACZ member", &format!("{} not runnable ({e})", python()));
            return;
        }
    }
    assert!(clusters_of(&deflated, &dir.join("a")) == clusters_of(&warc, &dir.join("b")));
    // Cut before its directory: skipped and counted; the WARC beside it is read.
    let bytes = std::fs::read(&deflated).unwrap();
    let broken: PathBuf = dir.join("broken.wacz");
    std::fs::write(&broken, &bytes[..bytes.len() / 2]).unwrap();
    let output =
        dupflow().arg("run").arg(&broken).arg(&warc).arg("--out").arg(dir.join("c")).output();
    let output = output.unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("pages:     8"), "{stdout}");
    assert!(stdout.contains("invalid_archive 1"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("broken.wacz"), "{stderr}");
}
