//! The dashboard in a real browser (Debian's chromium, headless) against a running replay: it
//! loads with no console errors, shows the run's numbers and clusters, and raises the alarm for a
//! planted oversized cluster (the alarm threshold is set below the river family's 3 pages). It
//! saves a screenshot to target/dashboard.png. The cluster view, opened by a link to a page,
//! finds it, lists its cluster and shows it beside the page it joined through.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's chromium, or `None` (said through `common::skip`) without it.
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        common::skip(
            "the dashboard in a browser",
            "no chromium at /usr/bin/chromium (.ci/run installs Debian's chromium)",
        );
    }
    found
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

/// The page at `url` as the browser has it once its scripts ran; no console errors on the way.
fn dump_dom(browser: &Path, profile: &Path, url: &str) -> String {
    let output = headless(browser, profile)
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(url)
        .output()
        .expect("chromium runs");
    let log = String::from_utf8_lossy(&output.stderr);
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("Uncaught") || (l.contains("CONSOLE") && l.to_lowercase().contains("error"))
        })
        .collect();
    assert!(console_errors.is_empty(), "console errors: {console_errors:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn dashboard_shows_the_run_and_the_alarm() {
    let Some(browser) = chromium() else { return };
    let dir = common::temp_dir("dashboard");
    let config = dir.join("alarm.toml");
    std::fs::write(&config, "[metrics]\ncluster_alarm_pages = 2\n").unwrap();
    let served = common::serve::serve(&["--config", config.to_str().unwrap()], &dir.join("out"));
    let url = format!("http://{}/", served.address);

    let dom = dump_dom(&browser, &dir.join("profile-dom"), &url);
    assert!(dom.contains(">finished<"), "the page loaded the run's state");
    assert!(dom.contains("Alarm: cluster"), "the alarm is shown");
    assert!(dom.contains("holds 3 pages (over 2)"), "the alarm names the oversized cluster");
    assert!(dom.contains("class=\"cluster\""), "the cluster table has rows");
    assert!(dom.contains("gazette.example/archive/2026/river"), "sample URLs from the run");
    assert!(
        dom.contains("<span class=\"muted\">pages</span><b>8</b>"),
        "the pages tile shows the run's 8 pages"
    );
    // The method's state as the run ended, its structures (largest first) in the tile's title.
    let tile =
        dom.split("<div class=\"tile\"").find(|t| t.contains("state MB")).unwrap_or_else(|| {
            panic!("a state tile: {dom}");
        });
    for structure in ["groups", "members", "verdicts", "holders", "filtered", "components", "joins"]
    {
        assert!(tile.contains(&format!("{structure} ")), "{structure} in the state tile: {tile}");
    }

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

#[test]
fn cluster_view_finds_a_page_and_shows_it_beside_the_page_it_joined_through() {
    let Some(browser) = chromium() else { return };
    let dir = common::temp_dir("cluster-view");
    let served = common::serve::serve(&[], &dir.join("out"));
    let url = format!("http://{}/#url=http://gazette.example/archive/2026/river", served.address);
    let dom = dump_dom(&browser, &dir.join("profile"), &url);
    // Found, its cluster listed with how each member joined, the page itself marked.
    assert!(dom.contains(r#"<tr class="found" data-id="2efe969fac37e37b""#), "the page is found");
    assert_eq!(dom.matches(r#"<tr class="member"><td"#).count(), 2, "the cluster's other members");
    assert!(dom.contains(
        r#"<tr class="member focus"><td class="url">http://gazette.example/archive/2026/river<"#
    ));
    assert!(dom.contains(r#"<span class="muted">itself</span>"#), "the leader joined through none");
    // Beside its leader: the verdict, the path, the shared sentences highlighted on both sides.
    assert!(dom.contains("similar: the compared sentences resemble at 0.898, at least τ 0.6"));
    assert!(dom.contains(
        "path: http://gazette.example/archive/2026/river → http://gazette.example/news/river-rises"
    ));
    let side = |id: &str| {
        let start = dom.find(&format!(r#"<div id="{id}">"#)).expect("both sides are shown");
        dom[start..].split("</ol>").next().unwrap().to_string()
    };
    let (a, b) = (side("side-a"), side("side-b"));
    assert!(a.contains("<h3>http://gazette.example/archive/2026/river</h3>"));
    assert!(b.contains("<h3>http://gazette.example/news/river-rises</h3>"));
    let shared = r#"<li class="shared">the mayor said the new flood wall held everywhere"#;
    assert!(
        a.contains(shared) && b.contains(shared),
        "a shared sentence is highlighted on both sides"
    );
    assert_eq!(
        a.matches(r#"<li class="shared">"#).count(),
        b.matches(r#"<li class="shared">"#).count()
    );
    assert!(
        a.contains(r#"<li class="own">insurance advisers will hold a meeting"#),
        "the copy's own sentence is marked"
    );
}

/// At 1,400 px the page does not scroll sideways, whatever the length of the URLs it shows,
/// and the stage table shows a verification's microseconds, not 0. The page is measured from
/// a frame of another page (the browser's same-origin rule lifted for the test).
#[test]
fn the_dashboard_fits_a_1400_pixel_window_with_long_urls() {
    let Some(browser) = chromium() else { return };
    let dir = common::temp_dir("dashboard-width");
    // Two copies of each page at URLs of 150 characters without a place to break.
    let corpus = common::synth::Corpus::new(5, 6);
    let mut warc = Vec::new();
    for n in 0..12u64 {
        let url = format!("http://long.example/{}{n}", "a".repeat(130));
        let html = corpus.html(n as usize % 6, 0);
        warc.extend(common::synth::warc_response(&url, n, n + 1, &html));
    }
    let input = dir.join("long.warc");
    std::fs::write(&input, warc).unwrap();
    let served = common::serve::serve(&[input.to_str().unwrap()], &dir.join("out"));
    let frame = format!(
        "<!DOCTYPE html><html><body style=\"margin:0\">\
         <iframe id=\"f\" src=\"http://{}/\" style=\"width:1400px;height:900px;border:0\"></iframe>\
         <pre id=\"out\">pending</pre><script>\
         setTimeout(function () {{ var out = document.getElementById('out'); try {{\
         var d = document.getElementById('f').contentDocument;\
         var e = d.documentElement;\
         out.textContent = 'overflow=' + (e.scrollWidth - e.clientWidth) + ' verify=' +\
         d.querySelector('#stages').textContent;\
         }} catch (err) {{ out.textContent = 'error ' + err; }} }}, 3000);\
         </script></body></html>",
        served.address
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let frame_address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut request);
            let reply = format!(
                "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{frame}",
                frame.len()
            );
            let _ = std::io::Write::write_all(&mut stream, reply.as_bytes());
        }
    });
    let output = headless(&browser, &dir.join("profile"))
        .args([
            "--disable-web-security",
            "--disable-site-isolation-trials",
            "--disable-features=IsolateOrigins,site-per-process",
            "--dump-dom",
        ])
        .arg(format!("http://{frame_address}/"))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&output.stdout);
    let measured = dom.split("<pre id=\"out\">").nth(1).and_then(|r| r.split("</pre>").next());
    let measured = measured.unwrap_or_else(|| panic!("no measurement: {dom}"));
    assert!(measured.starts_with("overflow=0 "), "the page scrolls sideways: {measured}");
    let verify = measured.split("verify").last().unwrap_or("");
    assert!(!verify.is_empty() && verify != "0", "verify's latency: {measured}");
}
