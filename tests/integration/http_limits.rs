//! The HTTP endpoint under slow and hostile clients: stalled uploads do not stop
//! scrapes, bodies over the limit get 413, a full check queue 503, a missing or wrong token 401,
//! a malformed query 400, an unknown method 405; and a replay with all of that going on gives
//! the clusters of a quiet one.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;

use common::temp_dir;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Run {
    child: Child,
    address: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `dupflow run INPUT` with the endpoint on 127.0.0.1:0 and `config`; returns once it is bound.
fn start(input: &Path, config: &str, dir: &Path, env: &[(&str, &str)]) -> Run {
    let config_path = dir.join("pipeline.toml");
    std::fs::write(&config_path, config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dupflow"))
        .arg("run")
        .arg(input)
        .arg("--config")
        .arg(&config_path)
        .args(["--metrics-address", "127.0.0.1:0", "--linger", "120", "--quiet", "--out"])
        .arg(dir.join("out"))
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dupflow starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = loop {
        let line = lines.next().expect("dupflow printed its address").unwrap();
        if let Some(rest) = line.split("metrics on http://").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Run { child, address }
}

/// One request over HTTP/1.1; returns (status, body, elapsed).
fn request(address: &str, head: &str, body: &[u8]) -> (u16, String, Duration) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = stream
        .write_all(format!("{head}\r\nHost: {address}\r\nConnection: close\r\n\r\n").as_bytes());
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (
        status,
        text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default(),
        started.elapsed(),
    )
}

fn post_check(address: &str, extra: &str, body: &str) -> (u16, String, Duration) {
    request(
        address,
        &format!("POST /api/check HTTP/1.1\r\nContent-Length: {}{extra}", body.len()),
        body.as_bytes(),
    )
}

/// Opens `n` connections that announce a large body, send a few bytes, and stall.
fn stall(address: &str, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(address).unwrap();
            write!(
                s,
                "POST /api/check HTTP/1.1\r\nHost: {address}\r\nContent-Length: 1000000\r\n\r\nabc"
            )
            .unwrap();
            s
        })
        .collect()
}

fn finished(address: &str) -> bool {
    request(address, "GET /api/summary HTTP/1.1", b"").1.contains("\"finished\":true")
}

#[test]
fn limits_answer_with_their_status_codes() {
    let dir = temp_dir("limits");
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let config = "[metrics]\ncheck = true\nmax_body_bytes = 10000\ncheck_queue = 1\nrequest_timeout_ms = 2000\ntoken = \"s3cret\"\n";
    let run = start(&input, config, &dir, &[]);
    let a = run.address.as_str();
    let auth = "\r\nAuthorization: Bearer s3cret";
    // Over the limit: refused unread, whatever the token.
    assert_eq!(post_check(a, auth, &"x".repeat(20_000)).0, 413);
    // Token: missing or wrong → 401; right → 200.
    assert_eq!(post_check(a, "", "Some text to check against the pages held.").0, 401);
    assert_eq!(post_check(a, "\r\nAuthorization: Bearer nope", "Some text.").0, 401);
    let (status, body, _) = post_check(a, auth, "Some text to check against the pages held.");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("share"), "{body}");
    // Malformed queries and unknown methods.
    assert_eq!(
        request(
            a,
            &format!("POST /api/check?threshold=abc HTTP/1.1\r\nContent-Length: 2{auth}"),
            b"hi"
        )
        .0,
        400
    );
    assert_eq!(request(a, "GET /api/clusters?limit=many HTTP/1.1", b"").0, 400);
    assert_eq!(request(a, "DELETE /metrics HTTP/1.1", b"").0, 405);
    assert_eq!(request(a, "GET /api/check HTTP/1.1", b"").0, 405);
    // A stalled upload holds its connection, not a place in the queue: checks still answer.
    let mut held = TcpStream::connect(a).unwrap();
    write!(held, "POST /api/check HTTP/1.1\r\nHost: {a}{auth}\r\nContent-Length: 5000\r\n\r\nabc")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(post_check(a, auth, "Some text.").0, 200);
    // It is dropped at its deadline with 408.
    let mut answer = String::new();
    held.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = held.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    drop(run);

    // Queue full: one place, checks posted together → some answer 503 with Retry-After.
    let config = "[metrics]\ncheck = true\nmax_body_bytes = 3000000\ncheck_queue = 1\n";
    let run = start(&input, config, &dir, &[]);
    let a = run.address.clone();
    let body: String = (0..80_000)
        .map(|i| format!("Sentence number {i} of a long text to check. "))
        .collect::<String>()[..2_900_000]
        .to_string();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let posts: Vec<_> = (0..6)
            .map(|_| {
                let (a, body) = (a.clone(), body.clone());
                std::thread::spawn(move || {
                    let mut stream = TcpStream::connect(&a).unwrap();
                    write!(
                        stream,
                        "POST /api/check HTTP/1.1\r\nHost: {a}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .unwrap();
                    let mut response = String::new();
                    stream.read_to_string(&mut response).unwrap();
                    response
                })
            })
            .collect();
        statuses.extend(posts.into_iter().map(|t| t.join().unwrap()));
        if statuses.iter().any(|r| r.starts_with("HTTP/1.1 503")) {
            break;
        }
    }
    assert!(statuses
        .iter()
        .all(|r| r.starts_with("HTTP/1.1 200") || r.starts_with("HTTP/1.1 503")));
    assert!(statuses.iter().any(|r| r.starts_with("HTTP/1.1 200")));
    let full = statuses
        .iter()
        .find(|r| r.starts_with("HTTP/1.1 503"))
        .expect("a check found the queue full");
    assert!(full.to_ascii_lowercase().contains("retry-after: 1"), "{full}");
    let a = a.as_str();
    let metrics = request(a, "GET /metrics HTTP/1.1", b"").1;
    assert!(metrics.contains("dupflow_http_refused_total{reason=\"check_queue\"}"), "{metrics}");
    drop(run);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_the_check_setting_the_check_answers_404_and_says_how_to_turn_it_on() {
    let dir = temp_dir("check-off");
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let run = start(&input, "", &dir, &[]);
    let (status, body, _) =
        post_check(&run.address, "", "Some text to check against the pages held.");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("[metrics] check = true"), "{body}");
    // The rest of the endpoint is served as ever.
    assert_eq!(request(&run.address, "GET /metrics HTTP/1.1", b"").0, 200);
}

#[test]
fn the_token_can_come_from_the_environment() {
    let dir = temp_dir("env-token");
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let run = start(&input, "[metrics]\ncheck = true\n", &dir, &[("DUPFLOW_TOKEN", "from-env")]);
    assert_eq!(post_check(&run.address, "", "Some text.").0, 401);
    assert_eq!(post_check(&run.address, "\r\nAuthorization: Bearer from-env", "Some text.").0, 200);
}

#[test]
fn scrapes_answer_within_a_second_while_clients_stall_and_checks_run() {
    let Some(shared) = common::shared_dir() else { return };
    let dev = shared.join("bench/docs-dev.warc.gz");
    let dir = temp_dir("stall");
    let quiet = dir.join("quiet");
    let status = Command::new(env!("CARGO_BIN_EXE_dupflow"))
        .arg("run")
        .arg(&dev)
        .args(["--quiet", "--out"])
        .arg(&quiet)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());

    let busy = dir.join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    let run = start(&dev, "[metrics]\ncheck = true\nrequest_timeout_ms = 5000\n", &busy, &[]);
    let address = run.address.clone();
    // 20 uploads that stall, held open for the whole replay.
    let stalled = stall(&address, 20);
    std::thread::sleep(Duration::from_millis(200));
    // Large checks posted all along (each ~1 MB of text; answered 200, or 503 when the queue is full).
    // Generated prose: 2,000 distinct sentences, repeated to ~1 MB.
    let corpus = common::synth::Corpus::new(17, 170);
    let text: String = (0..170).flat_map(|b| corpus.text(b, 0)).collect::<Vec<_>>().join(" ");
    let large = text.repeat((1_000_000 / text.len()).max(1));
    let checkers: Vec<_> = (0..2)
        .map(|_| {
            let (a, body) = (address.clone(), large.clone());
            std::thread::spawn(move || {
                (0..5).map(|_| post_check(&a, "", &body).0).collect::<Vec<u16>>()
            })
        })
        .collect();
    // 200 scrapes, 10 at a time.
    let scrapers: Vec<_> = (0..10)
        .map(|_| {
            let a = address.clone();
            std::thread::spawn(move || {
                (0..20)
                    .map(|_| {
                        let (status, body, took) = request(&a, "GET /metrics HTTP/1.1", b"");
                        assert_eq!(status, 200);
                        assert!(body.contains("dupflow_records_total"));
                        std::thread::sleep(Duration::from_millis(20));
                        took
                    })
                    .collect::<Vec<Duration>>()
            })
        })
        .collect();
    let mut took: Vec<Duration> = scrapers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    took.sort();
    let worst = *took.last().unwrap();
    eprintln!(
        "scrapes: {} answered, p50 {:?}, p99 {:?}, worst {:?}",
        took.len(),
        took[took.len() / 2],
        took[took.len() * 99 / 100],
        worst
    );
    assert_eq!(took.len(), 200);
    assert!(worst < Duration::from_secs(1), "a scrape took {worst:?}");
    let statuses: Vec<u16> = checkers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    assert!(statuses.iter().all(|s| *s == 200 || *s == 503), "{statuses:?}");
    assert!(statuses.contains(&200), "some large check was judged: {statuses:?}");
    let deadline = Instant::now() + Duration::from_secs(300);
    while !finished(&address) {
        assert!(Instant::now() < deadline, "the replay did not finish");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(stalled);
    let want = std::fs::read_to_string(quiet.join("clusters.jsonl")).unwrap();
    let got = std::fs::read_to_string(busy.join("out/clusters.jsonl")).unwrap();
    assert!(got == want, "the busy replay's clusters differ from the quiet one's");
    drop(run);
    let _ = std::fs::remove_dir_all(&dir);
}

/// As many idle sockets as `max_connections` (connected, sending nothing): a scrape still
/// answers at once (a few connections are kept for scrapes), another request meets 503 until
/// the idle ones reach the 2 s head deadline and give their places back.
#[test]
fn idle_sockets_do_not_starve_scrapes() {
    let dir = temp_dir("idle");
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let run = start(&input, "", &dir, &[]);
    let a = run.address.as_str();
    let idle: Vec<TcpStream> = (0..64).map(|_| TcpStream::connect(a).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let (status, body, took) = request(a, "GET /metrics HTTP/1.1", b"");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("dupflow_records_total"));
    assert!(took < Duration::from_secs(1), "the scrape took {took:?}");
    let (status, _, _) = request(a, "GET /api/summary HTTP/1.1", b"");
    assert_eq!(status, 503, "past max_connections, only scrapes are served");
    std::thread::sleep(Duration::from_millis(2500));
    let (status, _, took) = request(a, "GET /api/summary HTTP/1.1", b"");
    assert_eq!(status, 200, "the idle sockets gave their places back");
    assert!(took < Duration::from_secs(1), "{took:?}");
    drop(idle);
}

#[test]
fn a_non_loopback_address_without_a_token_is_warned_about() {
    // Bound on every interface of this machine; nothing is sent to it.
    let dir = temp_dir("warn");
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dupflow"))
        .arg("run")
        .arg(&input)
        .args(["--metrics-address", "0.0.0.0:0", "--quiet", "--out"])
        .arg(dir.join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines: Vec<String> =
        BufReader::new(child.stderr.take().unwrap()).lines().map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success());
    assert!(lines.iter().any(|l| l.contains("needs no token")), "{lines:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGINT while a finished run lingers to serve its endpoint ends it at once with exit code 0:
/// its outputs are whole.
#[test]
fn a_signal_during_the_linger_ends_it_at_once() {
    let dir = temp_dir("linger");
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/default.warc.gz");
    let mut run = start(&input, "", &dir, &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !finished(&run.address) {
        assert!(Instant::now() < deadline, "the run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = Command::new("kill").args(["-INT", &run.child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let signalled = Instant::now();
    let status = loop {
        if let Some(status) = run.child.try_wait().unwrap() {
            break status;
        }
        assert!(signalled.elapsed() < Duration::from_secs(5), "still lingering after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit code 0: {status}");
    assert!(dir.join("out/clusters.jsonl").exists());
}
