//! `dupflow._native`: the Rust side of the Python package. The Python module `dupflow` wraps it
//! (docstrings, typed signatures, iterables); see `dupflow/__init__.py`.

use std::collections::HashMap;
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

    #[pyo3(signature = (id, text, url=None))]
    fn add(&mut self, id: &str, text: &str, url: Option<&str>) {
        self.engine.add_text(id, text, url);
    }

    fn add_html(&mut self, url: &str, html: &str) {
        self.engine.add_html(url, html);
    }

    fn remove(&mut self, id: &str) -> bool {
        self.engine.remove(id)
    }

    /// Commits and returns (key, cluster before, cluster after) for every moved document.
    fn changes(&mut self) -> Vec<(String, Option<String>, Option<String>)> {
        self.engine.commit().into_iter().map(|c| (c.key, c.before, c.after)).collect()
    }

    fn clusters(&self) -> HashMap<String, String> {
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

/// Runs the pipeline over files (WARC, JSONL) on `workers` threads; returns, per page,
/// (url or id, record id, cluster key, leader key, similarity).
#[pyfunction]
#[pyo3(signature = (paths, config=None, config_text=None, workers=2))]
fn cluster_files(
    py: Python<'_>,
    paths: Vec<String>,
    config: Option<PathBuf>,
    config_text: Option<&str>,
    workers: usize,
) -> PyResult<Vec<(String, String, String, String, f64)>> {
    let config = config_either(config, config_text)?;
    let inputs = dupflow::source::expand(&paths).map_err(|e| PyOSError::new_err(e.to_string()))?;
    let output = py
        .detach(|| dataflow::run(RunOptions::new(Feed::Inputs(inputs), config, workers.max(1))))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let url_of: HashMap<_, _> = output.rows.iter().map(|r| (r.page, r.url.to_string())).collect();
    Ok(output
        .rows
        .iter()
        .map(|r| {
            let name = |id| url_of.get(id).cloned().unwrap_or_default();
            (
                r.url.to_string(),
                r.record_id.to_string(),
                name(&r.assignment.cluster),
                name(&r.assignment.leader),
                r.assignment.similarity_ppm as f64 / 1e6,
            )
        })
        .collect())
}

#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Index>()?;
    m.add_function(wrap_pyfunction!(cluster_files, m)?)?;
    Ok(())
}
