//! The dashboard in a real browser (Debian's chromium, headless) against a running replay: it
//! loads with no console errors, shows the run's numbers and clusters, and raises the alarm for a
//! planted oversized cluster (the alarm threshold is set below the river family's 3 pages). It
//! saves a screenshot to target/dashboard.png.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn headless(browser: &Path, profile: &Path) -> Command {
    let mut command = Command::new(browser);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--virtual-time-budget=5000",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

#[test]
fn dashboard_shows_the_run_and_the_alarm() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED: no chromium at /usr/bin/chromium (.ci/run installs Debian's chromium)");
        return;
    };
    let dir = common::temp_dir("dashboard");
    let config = dir.join("alarm.toml");
    std::fs::write(&config, "[metrics]\ncluster_alarm_pages = 2\n").unwrap();
    let served = common::serve::serve(&["--config", config.to_str().unwrap()], &dir.join("out"));
    let url = format!("http://{}/", served.address);

    let output = headless(&browser, &dir.join("profile-dom"))
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(&url)
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&output.stdout);
    let log = String::from_utf8_lossy(&output.stderr);
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("Uncaught") || (l.contains("CONSOLE") && l.to_lowercase().contains("error"))
        })
        .collect();
    assert!(console_errors.is_empty(), "console errors: {console_errors:?}");
    assert!(dom.contains(">finished<"), "the page loaded the run's state");
    assert!(dom.contains("Alarm: cluster"), "the alarm is shown");
    assert!(dom.contains("holds 3 pages (over 2)"), "the alarm names the oversized cluster");
    assert!(dom.contains("class=\"cluster\""), "the cluster table has rows");
    assert!(dom.contains("gazette.example/archive/2026/river"), "sample URLs from the run");
    assert!(
        dom.contains("<span class=\"muted\">pages</span><b>8</b>"),
        "the pages tile shows the run's 8 pages"
    );

    let screenshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dashboard.png");
    let status = headless(&browser, &dir.join("profile-shot"))
        .args(["--window-size=1300,1100"])
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url)
        .output()
        .expect("chromium runs")
        .status;
    assert!(status.success());
    assert!(
        std::fs::metadata(&screenshot).map(|m| m.len() > 10_000).unwrap_or(false),
        "screenshot saved"
    );
}
