//! The HTTP endpoint: `/metrics` (Prometheus text format), `/` (the dashboard, all assets
//! embedded), the JSON behind it (`/api/summary`, `/api/clusters`, `/api/clusters/ID`,
//! `/api/find?url=Q`), `/api/compare?a=URL&b=URL` (two pages side by side, as `dupflow
//! explain` shows them), and `POST /api/check` (the sentence-share gate against the pages the
//! run holds).
//!
//! Served by hyper (HTTP/1.1) on a small tokio runtime of its own (two threads), so that no
//! client can stop the others: every connection has a deadline for reading its request and
//! writing its response, at most `max_connections` are served at once, a body over
//! `max_body_bytes` is refused (413) before it is read, and checks run on blocking threads
//! behind a bounded queue (503 with `Retry-After` when full) with a time limit (504); so do
//! comparisons, which read the two pages' hosts from the inputs again. Scrapes and the
//! dashboard are answered from the async threads and never wait for a check; a request's head
//! must come within 2 s, and a few connections past `max_connections` are kept for scrapes, so
//! idle sockets cannot stop them.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use thiserror::Error;
use tokio::sync::Semaphore;

use super::live::Live;
use crate::config::MetricsConfig;

const DASHBOARD: &str = include_str!("dashboard.html");
const JSON: &str = "application/json";
/// What `POST /api/check` answers when the run keeps no sentence index.
const CHECK_OFF: &str = "this run keeps no sentence index: POST /api/check needs [metrics] check = true in its configuration";

#[derive(Debug, Error)]
#[error("cannot serve metrics on {address}: {message}")]
pub struct ServeError {
    pub address: String,
    pub message: String,
}

/// The endpoint's limits (from `[metrics]`).
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_body_bytes: u64,
    pub max_connections: usize,
    pub request_timeout: Duration,
    pub check_queue: usize,
    pub check_timeout: Duration,
    /// Bearer token for writes (`POST /api/check`); None: no token asked.
    pub token: Option<String>,
    /// `POST /api/check` served (`metrics.check`: the workers keep its sentence index).
    pub check: bool,
}

impl Limits {
    /// The limits of `config`; the token from `DUPFLOW_TOKEN` when the file sets none.
    pub fn from_config(config: &MetricsConfig) -> Limits {
        let token = Some(config.token.clone())
            .filter(|t| !t.is_empty())
            .or_else(|| std::env::var("DUPFLOW_TOKEN").ok().filter(|t| !t.is_empty()));
        Limits {
            max_body_bytes: config.max_body_bytes,
            max_connections: config.max_connections,
            request_timeout: Duration::from_millis(config.request_timeout_ms),
            check_queue: config.check_queue,
            check_timeout: Duration::from_millis(config.check_timeout_ms),
            token,
            check: config.check,
        }
    }
}

/// Compares two pages of the run by URL (`/api/compare`): the JSON of `dupflow explain`, or
/// why not, with the status to answer.
pub type Explainer =
    Arc<dyn Fn(&str, &str) -> Result<serde_json::Value, (StatusCode, String)> + Send + Sync>;

struct State {
    live: Arc<Live>,
    explainer: Option<Explainer>,
    limits: Limits,
    checks: Arc<Semaphore>,
}

/// Binds `address` and serves on background threads; returns the bound address. Without an
/// `explainer`, `/api/compare` answers 404.
pub fn serve(
    address: &str,
    live: Arc<Live>,
    limits: Limits,
    explainer: Option<Explainer>,
) -> Result<SocketAddr, ServeError> {
    let fail = |message: String| ServeError { address: address.to_string(), message };
    let listener = std::net::TcpListener::bind(address).map_err(|e| fail(e.to_string()))?;
    listener.set_nonblocking(true).map_err(|e| fail(e.to_string()))?;
    let bound = listener.local_addr().map_err(|e| fail(e.to_string()))?;
    if !bound.ip().is_loopback() && limits.token.is_none() {
        tracing::warn!(
            "the endpoint on {bound} is reachable from other machines and POST /api/check needs no token: \
             set [metrics] token or DUPFLOW_TOKEN"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(limits.check_queue.max(1))
        .thread_name("dupflow-http")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let checks = Arc::new(Semaphore::new(limits.check_queue));
    let state = Arc::new(State { checks, live, explainer, limits });
    let listener = {
        let _entered = runtime.enter();
        tokio::net::TcpListener::from_std(listener).map_err(|e| fail(e.to_string()))?
    };
    std::thread::Builder::new()
        .name("dupflow-http".into())
        .spawn(move || runtime.block_on(accept_loop(listener, state)))
        .map_err(|e| fail(e.to_string()))?;
    Ok(bound)
}

/// Connections kept for scrapes (`GET /metrics`) past `max_connections`: a client that fills
/// the others (idle sockets, stalled uploads) does not stop the run's monitoring.
const SCRAPE_CONNECTIONS: usize = 4;

/// The deadline for a request's head (its request line and headers), at most: a client sends
/// them at once, and a socket that sends nothing gives its place back within it.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);

async fn accept_loop(listener: tokio::net::TcpListener, state: Arc<State>) {
    let connections = Arc::new(Semaphore::new(state.limits.max_connections));
    let scrapes = Arc::new(Semaphore::new(SCRAPE_CONNECTIONS));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors and the like: wait a little rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let (permit, scrape_only) = match connections.clone().try_acquire_owned() {
            Ok(permit) => (permit, false),
            Err(_) => match scrapes.clone().try_acquire_owned() {
                Ok(permit) => (permit, true),
                Err(_) => {
                    state.live.registry.inc(super::HTTP_REFUSED, "connections");
                    drop(stream);
                    continue;
                }
            },
        };
        let state = state.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let (timeout, check_timeout) =
                (state.limits.request_timeout, state.limits.check_timeout);
            let refused = state.live.registry.clone();
            let service = hyper::service::service_fn(move |request| {
                let state = state.clone();
                async move {
                    if scrape_only && request.uri().path() != "/metrics" {
                        state.live.registry.inc(super::HTTP_REFUSED, "connections");
                        let mut busy =
                            error(StatusCode::SERVICE_UNAVAILABLE, "too many connections");
                        busy.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
                        return Ok::<_, Infallible>(busy);
                    }
                    Ok::<_, Infallible>(respond(request, &state).await)
                }
            });
            // One request a connection (no keep-alive): the connection's whole life is then
            // bounded by the head deadline, the body deadline, the check's limit and the write.
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(timeout.min(HEAD_TIMEOUT))
                .keep_alive(false)
                .serve_connection(io, service);
            let lifetime = timeout * 3 + check_timeout;
            if tokio::time::timeout(lifetime, connection).await.is_err() {
                refused.inc(super::HTTP_REFUSED, "deadline");
            }
            drop(permit);
        });
    }
}

fn reply(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    reply(status, JSON, serde_json::json!({ "error": message }).to_string())
}

async fn respond(request: Request<Incoming>, state: &State) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or("").to_string();
    let (allowed, post) = match path.as_str() {
        "/api/check" => ("POST", true),
        _ => ("GET, HEAD", false),
    };
    let method_ok = if post {
        request.method() == Method::POST
    } else {
        matches!(*request.method(), Method::GET | Method::HEAD)
    };
    if !method_ok {
        let mut response = error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
        response.headers_mut().insert(ALLOW, HeaderValue::from_static(allowed));
        return response;
    }
    let outcome = if post {
        check(request, &query, state).await
    } else if path == "/api/compare" {
        compare(&query, state).await
    } else {
        route(&path, &query, &state.live)
    };
    let status = outcome.status().as_u16().to_string();
    state.live.registry.inc(super::HTTP_RESPONSES, &status);
    outcome
}

/// `POST /api/check[?threshold=T]` with an HTML or text body: the share of the body's sentences
/// already on the pages the run holds, the verdict, spans and cover (as `dupflow check`).
async fn check(request: Request<Incoming>, query: &str, state: &State) -> Response<Full<Bytes>> {
    if let Some(token) = &state.limits.token {
        let given = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| constant_time_eq(g.trim().as_bytes(), token.as_bytes())) {
            let mut response = error(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
            response.headers_mut().insert("WWW-Authenticate", HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    // From the configuration, not the index's lock: a running check holds that, and this
    // runtime serves the scrapes.
    if !state.limits.check {
        return error(StatusCode::NOT_FOUND, CHECK_OFF);
    }
    let threshold = match param(query, "threshold") {
        None => 0.5,
        Some(v) => match v.parse::<f64>() {
            Ok(t) if (0.0..=1.0).contains(&t) => t,
            _ => return error(StatusCode::BAD_REQUEST, "threshold must be a number in [0, 1]"),
        },
    };
    let limit = state.limits.max_body_bytes;
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return too_large(limit);
    }
    // The body first, under the connection's deadline: a slow upload holds its connection,
    // never a place in the check queue.
    let body = Limited::new(request.into_body(), limit as usize).collect();
    let body = match tokio::time::timeout(state.limits.request_timeout, body).await {
        Err(_) => return error(StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time"),
        Ok(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            return too_large(limit);
        }
        Ok(Err(e)) => return error(StatusCode::BAD_REQUEST, &e.to_string()),
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    let Ok(permit) = state.checks.clone().try_acquire_owned() else {
        return queue_full(state);
    };
    let Ok(text) = String::from_utf8(Vec::from(body)) else {
        return error(StatusCode::BAD_REQUEST, "the body is not UTF-8");
    };
    let live = state.live.clone();
    let job = tokio::task::spawn_blocking(move || {
        let _permit = permit; // the place in the queue is held until the check ends
        live.gate
            .lock()
            .expect("gate")
            .as_ref()
            .map(|gate| gate.check(&text, threshold).to_string())
    });
    match tokio::time::timeout(state.limits.check_timeout, job).await {
        Err(_) => error(StatusCode::GATEWAY_TIMEOUT, "the check took longer than check_timeout_ms"),
        Ok(Err(_)) => error(StatusCode::INTERNAL_SERVER_ERROR, "the check failed"),
        Ok(Ok(None)) => error(StatusCode::NOT_FOUND, CHECK_OFF),
        Ok(Ok(Some(json))) => reply(StatusCode::OK, JSON, json),
    }
}

/// `GET /api/compare?a=URL&b=URL`: the two pages side by side (`dupflow explain --json`), on a
/// blocking thread behind the check queue and its time limit.
async fn compare(query: &str, state: &State) -> Response<Full<Bytes>> {
    let Some(explainer) = state.explainer.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            "this run cannot compare pages: it reads standard input",
        );
    };
    let (Some(a), Some(b)) = (decoded(query, "a"), decoded(query, "b")) else {
        return error(StatusCode::BAD_REQUEST, "give the two pages' URLs as a= and b=");
    };
    let Ok(permit) = state.checks.clone().try_acquire_owned() else {
        return queue_full(state);
    };
    let job = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        explainer(&a, &b)
    });
    match tokio::time::timeout(state.limits.check_timeout, job).await {
        Err(_) => error(
            StatusCode::GATEWAY_TIMEOUT,
            "the comparison took longer than check_timeout_ms: use dupflow explain",
        ),
        Ok(Err(_)) => error(StatusCode::INTERNAL_SERVER_ERROR, "the comparison failed"),
        Ok(Ok(Err((status, message)))) => error(status, &message),
        Ok(Ok(Ok(json))) => reply(StatusCode::OK, JSON, json.to_string()),
    }
}

/// A query parameter, percent-decoded.
fn decoded(query: &str, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

/// The answer when the check queue (checks and comparisons share it) is full.
fn queue_full(state: &State) -> Response<Full<Bytes>> {
    state.live.registry.inc(super::HTTP_REFUSED, "check_queue");
    let mut response =
        error(StatusCode::SERVICE_UNAVAILABLE, "too many checks under way; try again");
    response.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn too_large(limit: u64) -> Response<Full<Bytes>> {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("the body is larger than max_body_bytes ({limit})"),
    )
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

fn route(path: &str, query: &str, live: &Live) -> Response<Full<Bytes>> {
    match path {
        "/" | "/index.html" => reply(StatusCode::OK, "text/html; charset=utf-8", DASHBOARD),
        "/metrics" => reply(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            live.registry.render(),
        ),
        "/api/summary" => reply(StatusCode::OK, JSON, live.summary().to_string()),
        "/api/clusters" => {
            let limit = match param(query, "limit") {
                None => 20,
                Some(v) => match v.parse::<usize>() {
                    Ok(n) => n.min(10_000),
                    Err(_) => {
                        return error(StatusCode::BAD_REQUEST, "limit must be a whole number")
                    }
                },
            };
            reply(StatusCode::OK, JSON, live.clusters(limit).to_string())
        }
        "/api/find" => match decoded(query, "url") {
            None => error(StatusCode::BAD_REQUEST, "give a URL or part of one as url="),
            Some(q) => reply(StatusCode::OK, JSON, live.find(&q, 20).to_string()),
        },
        p if p.starts_with("/api/clusters/") => match live.cluster(&p["/api/clusters/".len()..]) {
            Some(v) => reply(StatusCode::OK, JSON, v.to_string()),
            None => error(StatusCode::NOT_FOUND, "no such cluster"),
        },
        "/favicon.ico" => reply(StatusCode::NO_CONTENT, "text/plain", ""),
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found\n"),
    }
}
