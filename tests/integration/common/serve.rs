//! A `dupflow run` with its endpoint on, for the metrics and dashboard tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Served {
    pub child: Child,
    pub address: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `dupflow run ARGS --metrics-address 127.0.0.1:0 --linger 60` (`[metrics] check = true` unless ARGS give a `--config`) and waits for the run to
/// finish (its `/api/summary` says so).
pub fn serve(args: &[&str], out: &Path) -> Served {
    // POST /api/check served too, unless the caller brings its configuration.
    let config = out.with_extension("check.toml");
    std::fs::write(&config, "[metrics]\ncheck = true\n").unwrap();
    let own_config = args.contains(&"--config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dupflow"))
        .arg("run")
        .args(args)
        .args(if own_config { vec![] } else { vec!["--config".as_ref(), config.as_os_str()] })
        .args(["--metrics-address", "127.0.0.1:0", "--linger", "60", "--quiet", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dupflow starts");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let address = loop {
        let line = lines.next().expect("dupflow printed its address").unwrap();
        if let Some(rest) = line.split("metrics on http://").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let served = Served { child, address };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !get(&served.address, "/api/summary").contains("\"finished\":true") {
        assert!(Instant::now() < deadline, "the run did not finish");
        std::thread::sleep(Duration::from_millis(100));
    }
    served
}

/// GET a path over plain HTTP/1.0; returns the body.
pub fn get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("connect");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
}

/// POST a body over plain HTTP/1.0; returns the body of the answer.
pub fn post(address: &str, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("connect");
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {address}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
}
