//! The HTTP endpoint: `/metrics` (Prometheus text format), `/` (the dashboard, all assets
//! embedded), the JSON behind it (`/api/summary`, `/api/clusters`, `/api/clusters/ID`), and
//! `POST /api/check` (the sentence-share gate against the pages the run holds).

use std::net::SocketAddr;
use std::sync::Arc;

use thiserror::Error;
use tiny_http::{Header, Response, Server};

use super::live::Live;

const DASHBOARD: &str = include_str!("dashboard.html");

#[derive(Debug, Error)]
#[error("cannot serve metrics on {address}: {message}")]
pub struct ServeError {
    pub address: String,
    pub message: String,
}

/// Binds `address` and serves on a background thread; returns the bound address.
pub fn serve(address: &str, live: Arc<Live>) -> Result<SocketAddr, ServeError> {
    let server = Server::http(address).map_err(|e| ServeError { address: address.to_string(), message: e.to_string() })?;
    let bound =
        server.server_addr().to_ip().ok_or_else(|| ServeError { address: address.to_string(), message: "not an IP address".into() })?;
    std::thread::Builder::new()
        .name("dupflow-http".into())
        .spawn(move || {
            for mut request in server.incoming_requests() {
                let url = request.url().to_string();
                let (path, query) = url.split_once('?').unwrap_or((&url, ""));
                let (status, content_type, body) = if request.method() == &tiny_http::Method::Post && path == "/api/check" {
                    let mut text = String::new();
                    let read = std::io::Read::read_to_string(&mut std::io::Read::take(request.as_reader(), 4 << 20), &mut text);
                    match read {
                        Ok(_) => check(query, &text, &live),
                        Err(e) => (400, "application/json", serde_json::json!({"error": e.to_string()}).to_string()),
                    }
                } else {
                    route(path, query, &live)
                };
                let header = Header::from_bytes("Content-Type", content_type).expect("static header");
                let _ = request.respond(Response::from_string(body).with_status_code(status).with_header(header));
            }
        })
        .map_err(|e| ServeError { address: address.to_string(), message: e.to_string() })?;
    Ok(bound)
}

/// `POST /api/check[?threshold=T]` with an HTML or text body: the share of the body's sentences
/// already on the pages the run holds, the verdict, spans and cover (as `dupflow check`).
fn check(query: &str, body: &str, live: &Live) -> (u16, &'static str, String) {
    let threshold = query.split('&').find_map(|kv| kv.strip_prefix("threshold=")).and_then(|v| v.parse().ok()).unwrap_or(0.5f64);
    match live.gate.lock().expect("gate").as_ref() {
        Some(gate) => (200, "application/json", gate.check(body, threshold).to_string()),
        None => (503, "application/json", "{\"error\":\"no sentence index in this process\"}".to_string()),
    }
}

fn route(path: &str, query: &str, live: &Live) -> (u16, &'static str, String) {
    const JSON: &str = "application/json";
    match path {
        "/" | "/index.html" => (200, "text/html; charset=utf-8", DASHBOARD.to_string()),
        "/metrics" => (200, "text/plain; version=0.0.4; charset=utf-8", live.registry.render()),
        "/api/summary" => (200, JSON, live.summary().to_string()),
        "/api/clusters" => {
            let limit =
                query.split('&').find_map(|kv| kv.strip_prefix("limit=")).and_then(|v| v.parse().ok()).unwrap_or(20usize).min(10_000);
            (200, JSON, live.clusters(limit).to_string())
        }
        p if p.starts_with("/api/clusters/") => match live.cluster(&p["/api/clusters/".len()..]) {
            Some(v) => (200, JSON, v.to_string()),
            None => (404, JSON, "{\"error\":\"no such cluster\"}".to_string()),
        },
        "/favicon.ico" => (204, "text/plain", String::new()),
        _ => (404, "text/plain", "not found\n".to_string()),
    }
}
