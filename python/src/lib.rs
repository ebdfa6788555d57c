//! `dupflow._native`: the Rust side of the Python package. The Python module `dupflow` wraps it
//! (docstrings, typed signatures, iterables); see `dupflow/__init__.py`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use dupflow::config::PipelineConfig;
use dupflow::dataflow::{self, Feed, RunOptions};
use dupflow::engine::Engine;

fn config_of(config: Option<PathBuf>) -> PyResult<PipelineConfig> {
    match config {
        None => Ok(PipelineConfig::default()),
        Some(path) => PipelineConfig::load(&path).map_err(|e| PyValueError::new_err(e.to_string())),
    }
}

/// Parses pipeline.toml text (for `config_text=`).
fn config_from_text(text: &str) -> PyResult<PipelineConfig> {
    PipelineConfig::parse(text, "(config_text)").map_err(|e| PyValueError::new_err(e.to_string()))
}

fn config_either(config: Option<PathBuf>, config_text: Option<&str>) -> PyResult<PipelineConfig> {
    match (config, config_text) {
        (Some(_), Some(_)) => Err(PyValueError::new_err("give config or config_text, not both")),
        (None, Some(text)) => config_from_text(text),
        (path, None) => config_of(path),
    }
}

/// The incremental engine: documents in, cluster changes out.
#[pyclass(unsendable, module = "dupflow._native")]
struct Index {
    engine: Engine,
}

#[pymethods]
impl Index {
    #[new]
    #[pyo3(signature = (config=None, config_text=None))]
    fn new(config: Option<PathBuf>, config_text: Option<&str>) -> PyResult<Self> {
        Ok(Index { engine: Engine::new(config_either(config, config_text)?) })
    }

    #[pyo3(signature = (key, text, url=None))]
    fn add(&mut self, key: &str, text: &str, url: Option<&str>) {
        self.engine.add_text(key, text, url);
    }

    fn add_html(&mut self, url: &str, html: &str) {
        self.engine.add_html(url, html);
    }

    fn remove(&mut self, key: &str) -> bool {
        self.engine.remove(key)
    }

    /// Commits and returns (key, cluster before, cluster after) for every moved document.
    fn changes(&mut self) -> Vec<(String, Option<String>, Option<String>)> {
        self.engine.commit().into_iter().map(|c| (c.key, c.before, c.after)).collect()
    }

    /// Every document's cluster, by key (a dict in key order).
    fn clusters(&self) -> BTreeMap<String, String> {
        self.engine.clusters().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The sentence-share report as JSON text.
    fn check(&self, text: &str, threshold: f64) -> String {
        self.engine.check(text, threshold).to_string()
    }

    fn __len__(&self) -> usize {
        self.engine.len()
    }
}

/// One clusters.jsonl row: (url, record id, cluster id, anchor URL, size, similarity,
/// leader URL).
type Row = (String, String, String, String, usize, f64, String);

/// The rows of a `cluster_files` run, yielded one at a time. The run goes on a thread of its
/// own; `__next__` waits for it without holding the GIL, and raises its error if it failed.
#[pyclass(module = "dupflow._native")]
struct Rows {
    receiver: std::sync::Mutex<std::sync::mpsc::Receiver<Result<Row, String>>>,
}

#[pymethods]
impl Rows {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Row>> {
        let mut guard =
            self.receiver.lock().map_err(|_| PyRuntimeError::new_err("rows poisoned"))?;
        // A `&mut` of a `Send` receiver is `Send`: the wait leaves the GIL.
        let receiver: &mut std::sync::mpsc::Receiver<_> = &mut guard;
        match py.detach(move || receiver.recv()) {
            Ok(Ok(row)) => Ok(Some(row)),
            Ok(Err(message)) => Err(PyRuntimeError::new_err(message)),
            Err(_) => Ok(None),
        }
    }
}

/// Runs the pipeline over files (WARC, JSONL; none: the WARC compiled in) on `workers` threads;
/// returns an iterator of the rows of clusters.jsonl, in its order.
#[pyfunction]
#[pyo3(signature = (paths=None, config=None, config_text=None, workers=2))]
fn cluster_files(
    paths: Option<Vec<String>>,
    config: Option<PathBuf>,
    config_text: Option<&str>,
    workers: usize,
) -> PyResult<Rows> {
    let config = config_either(config, config_text)?;
    let inputs = match paths {
        None => vec![dupflow::DEFAULT_INPUT],
        Some(paths) => {
            dupflow::source::expand(&paths).map_err(|e| PyOSError::new_err(e.to_string()))?
        }
    };
    // A bounded channel: rows are made as they are taken, not all at once.
    let (sender, receiver) = std::sync::mpsc::sync_channel(1024);
    std::thread::Builder::new()
        .name("dupflow-cluster-files".into())
        .spawn(move || {
            let options = RunOptions::new(Feed::Inputs(inputs), config, workers.max(1));
            match dataflow::run(options) {
                Err(e) => {
                    let _ = sender.send(Err(e.to_string()));
                }
                Ok(output) => {
                    let rows: Vec<_> = output.rows.iter().collect();
                    for l in dupflow::sink::cluster_lines(&rows) {
                        let row = (
                            l.url.to_string(),
                            l.record_id.to_string(),
                            l.cluster,
                            l.cluster_url.to_string(),
                            l.size,
                            l.similarity,
                            l.leader_url.to_string(),
                        );
                        // The iterator was dropped: nobody wants the rest.
                        if sender.send(Ok(row)).is_err() {
                            break;
                        }
                    }
                }
            }
        })
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
    Ok(Rows { receiver: std::sync::Mutex::new(receiver) })
}

#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Index>()?;
    m.add_class::<Rows>()?;
    m.add_function(wrap_pyfunction!(cluster_files, m)?)?;
    Ok(())
}
