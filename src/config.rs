//! pipeline.toml: the run's configuration, with unknown keys rejected.
//!
//! Sections mirror the stages (`source`, `sentence`, `template`, `fingerprint`, `candidates`,
//! `verify`) plus `run`. Every key has a default, so an empty file is valid; `dupflow validate`
//! loads a file and checks the values, naming the key that is wrong.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use dupflow_operators::candidates::CandidateConfig;
use dupflow_operators::ingest::sentence::SentenceConfig;
use dupflow_operators::template::TemplateConfig;
use dupflow_operators::verify::VerifyConfig;
use dupflow_operators::{Fingerprinting, MethodConfig};

/// Settings of the WARC source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SourceConfig {
    /// Records with a longer block are skipped (`record_too_large`).
    pub max_record_bytes: u64,
    /// Decoded HTML beyond this is cut off (counted as `page_truncated`).
    pub max_page_bytes: u64,
    /// Records buffered between a reader thread and each worker.
    pub channel_capacity: usize,
    /// Reader threads per process: each reads its own share of the inputs (whole files, or
    /// record ranges of a large one), decompresses and frames them.
    pub reader_threads: usize,
    /// A re-crawl of a URL: `replace` (the newest capture is the page) or `keep` (every capture
    /// is a page).
    pub recrawls: crate::source::current::Recrawls,
}

impl Default for SourceConfig {
    fn default() -> Self {
        SourceConfig {
            max_record_bytes: 64 << 20,
            max_page_bytes: 2 << 20,
            channel_capacity: 256,
            reader_threads: 1,
            recrawls: crate::source::current::Recrawls::Replace,
        }
    }
}

/// Settings of the run itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Worker threads per process (`--workers` overrides).
    pub workers: usize,
    /// An epoch closes after this many records…
    pub epoch_records: u64,
    /// …or once this many milliseconds have passed since its first record and the epochs
    /// before it are complete (while the dataflow is behind, an epoch grows instead, and
    /// under a lasting backlog in the input to twice the age of the one before; not when the
    /// reader waited for its input during the epoch: a live feed).
    pub epoch_ms: u64,
    /// Epochs read and not yet complete, the open one included, at most: the reader waits
    /// for the dataflow before it reads past them (1: no epoch is read while another is in
    /// the dataflow).
    pub epochs_in_flight: u64,
    /// Retention window in seconds of crawl date (0: keep everything): pages crawled this long
    /// before the newest record seen are retracted, as if deleted.
    pub retention_secs: u64,
    /// With `--checkpoint DIR`, save a checkpoint every this many epochs (and at the end).
    pub checkpoint_epochs: u64,
    /// After SIGINT or SIGTERM the run closes its last epoch and writes its outputs; if it has
    /// not ended this many seconds after the signal (or a second signal comes), the process
    /// ends at once with exit code 2.
    pub stop_timeout_secs: u64,
    /// Resident memory at which the run stops, in MiB; 0: 90% of the machine's memory (or of
    /// its control group's limit).
    pub memory_limit_mb: u64,
    /// Where the pages' words are kept (`runtime::store`).
    pub words: KeptIn,
    /// The word store's cache, in MiB.
    pub word_cache_mb: u64,
    /// Where the held pages and the group members' contents are kept (`runtime::store`).
    pub pages: KeptIn,
    /// The cache of the page and content stores, in MiB.
    pub page_cache_mb: u64,
    /// With `pages = "disk"`, the entries of one page of each index (sentences, fingerprints)
    /// a worker keeps in memory before it writes them to disk (`runtime::spill`).
    pub spill_after: u64,
    /// The directory of the stores' files; empty: the output directory (`--out`), else the
    /// system's temporary directory.
    pub word_store_dir: String,
}

/// Where a run keeps what it holds of its pages: their words (`run.words`), and the held pages
/// and members' contents (`run.pages`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum KeptIn {
    /// In a file (LZ4), read back through a cache (`run.word_cache_mb`, `run.page_cache_mb`).
    #[default]
    Disk,
    /// In memory.
    Memory,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            workers: 2,
            epoch_records: 100_000,
            epoch_ms: 1_000,
            epochs_in_flight: 2,
            retention_secs: 0,
            checkpoint_epochs: 10,
            stop_timeout_secs: 60,
            memory_limit_mb: 0,
            words: KeptIn::Disk,
            word_cache_mb: 256,
            pages: KeptIn::Disk,
            page_cache_mb: 128,
            spill_after: 1 << 20,
            word_store_dir: String::new(),
        }
    }
}

/// Settings of the metrics endpoint and dashboard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Address of `/metrics`, `/` and `/api/...` (`--metrics-address` overrides); empty: off.
    pub address: String,
    /// The dashboard raises an alarm for a cluster with more pages than this.
    pub cluster_alarm_pages: usize,
    /// A request body larger than this is refused with 413, unread (`POST /api/check`).
    pub max_body_bytes: u64,
    /// Connections served at once; one more is closed at once (counted).
    pub max_connections: usize,
    /// Deadline for reading a request's body and for writing its response (its head: at most
    /// 2 s).
    pub request_timeout_ms: u64,
    /// Checks waiting or running at once beyond which `POST /api/check` answers 503.
    pub check_queue: usize,
    /// A check that takes longer answers 504 (its work is dropped when it ends).
    pub check_timeout_ms: u64,
    /// Bearer token that `POST /api/check` must carry; empty: none (`DUPFLOW_TOKEN` sets it too).
    pub token: String,
    /// Serve `POST /api/check`: the workers keep a sentence index of every page they hold
    /// (off by default: on the 100k scale crawl it costs ~4.8 KB a page and a quarter more time).
    pub check: bool,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            address: String::new(),
            cluster_alarm_pages: 1_000,
            max_body_bytes: 4 << 20,
            max_connections: 64,
            request_timeout_ms: 10_000,
            check_queue: 4,
            check_timeout_ms: 10_000,
            token: String::new(),
            check: false,
        }
    }
}

/// The sentence share in the stream (`spans.jsonl`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ShareConfig {
    /// Keep, per page, the share of its sentences already on an earlier page and the spans
    /// (off by default: it costs about a third more time and memory on the dev benchmark).
    pub enabled: bool,
}

/// The whole of pipeline.toml.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineConfig {
    pub run: RunConfig,
    pub metrics: MetricsConfig,
    pub source: SourceConfig,
    pub sentence: SentenceConfig,
    pub template: TemplateConfig,
    pub fingerprint: Fingerprinting,
    pub candidates: CandidateConfig,
    pub verify: VerifyConfig,
    pub share: ShareConfig,
    pub text: crate::source::text::TextConfig,
    pub urls: crate::source::urls::UrlConfig,
}

/// A configuration that could not be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    /// Every problem of the file: unknown keys, a value of the wrong type, invalid values.
    #[error("{path}: {}", Problems(problems))]
    Invalid { path: String, problems: Vec<Problem> },
}

/// One problem of a configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A key (or a whole section) that no setting has.
    Unknown(String),
    /// A value that does not parse as its setting's type (the parser's message).
    Type(String),
    /// A value of the right type that makes no sense.
    Invalid { key: &'static str, message: String },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Unknown(key) => write!(f, "unknown key `{key}`"),
            Problem::Type(message) => write!(f, "{message}"),
            Problem::Invalid { key, message } => write!(f, "invalid value for `{key}`: {message}"),
        }
    }
}

/// One problem on the line, several as a count and a list (one a line).
struct Problems<'a>(&'a [Problem]);

impl std::fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            [one] => write!(f, "{one}"),
            many => {
                write!(f, "{} problems:", many.len())?;
                for problem in many {
                    write!(f, "\n  - {}", problem.to_string().replace('\n', " "))?;
                }
                Ok(())
            }
        }
    }
}

/// The keys `value` (a pipeline.toml) has that no setting has, as `section.key`. A section's
/// settings are those its defaults serialize to; `[fingerprint]`'s depend on its `type`.
fn unknown_keys(value: &toml::Value) -> Vec<String> {
    let Ok(toml::Value::Table(defaults)) = toml::Value::try_from(PipelineConfig::default()) else {
        return Vec::new();
    };
    let Some(table) = value.as_table() else { return Vec::new() };
    let mut unknown = Vec::new();
    for (section, body) in table {
        let known = match (section.as_str(), body.get("type")) {
            // A tagged section: the defaults of the variant its `type` names.
            ("fingerprint", Some(kind)) => {
                let tag = toml::Table::from_iter([("type".to_string(), kind.clone())]);
                match tag
                    .try_into::<Fingerprinting>()
                    .ok()
                    .and_then(|f| toml::Value::try_from(f).ok())
                {
                    Some(variant) => Some(variant),
                    // An unknown type: the typed read names it.
                    None => continue,
                }
            }
            _ => defaults.get(section).cloned(),
        };
        let Some(known) = known else {
            unknown.push(format!("[{section}]"));
            continue;
        };
        // Not a table: the typed read names it.
        let Some(body) = body.as_table() else { continue };
        for key in body.keys().filter(|k| known.get(k.as_str()).is_none()) {
            unknown.push(format!("{section}.{key}"));
        }
    }
    unknown
}

/// The values of `value` (a pipeline.toml without unknown keys) that do not parse as their
/// setting's type, each read alone on top of the defaults and named by the parser's message;
/// each is removed from `value`. A section that is not a table is one such value.
/// `[fingerprint]`'s keys are read with its `type`.
fn type_errors(value: &mut toml::Value) -> Vec<String> {
    let Some(table) = value.as_table_mut() else { return Vec::new() };
    // The parser's message names the key at its end (`in `run.workers``): the line names it first.
    let message = |e: toml::de::Error| {
        let text = e.to_string().trim().replace('\n', " ");
        let text = match text.rfind(" in `") {
            Some(at) if text.ends_with('`') => &text[..at],
            _ => &text,
        };
        text.strip_prefix("invalid value: ").unwrap_or(text).to_string()
    };
    let mut dropped = Vec::new();
    let mut errors = Vec::new();
    for (section, body) in table.iter_mut() {
        let alone = |body: toml::Value| {
            toml::Value::Table(toml::Table::from_iter([(section.clone(), body)]))
                .try_into::<PipelineConfig>()
        };
        let Some(keys) = body.as_table_mut() else {
            if let Err(e) = alone(body.clone()) {
                errors.push(format!("invalid value for `[{section}]`: {}", message(e)));
                *body = toml::Value::Table(toml::Table::new());
            }
            continue;
        };
        let tag = keys.get("type").cloned().filter(|_| section == "fingerprint");
        if let Some(tag) = &tag {
            let typed = toml::Table::from_iter([("type".to_string(), tag.clone())]);
            if let Err(e) = alone(toml::Value::Table(typed)) {
                errors.push(format!("invalid value for `{section}.type`: {}", message(e)));
                dropped.push(section.clone());
                continue;
            }
        }
        let bad: Vec<(String, String)> = keys
            .iter()
            .filter_map(|(key, v)| {
                let mut one = toml::Table::from_iter([(key.clone(), v.clone())]);
                if let Some(tag) = &tag {
                    one.insert("type".to_string(), tag.clone());
                }
                alone(toml::Value::Table(one)).err().map(|e| (key.clone(), message(e)))
            })
            .collect();
        for (key, error) in bad {
            keys.remove(&key);
            errors.push(format!("invalid value for `{section}.{key}`: {error}"));
        }
    }
    for section in dropped {
        table.remove(&section);
    }
    errors
}

impl PipelineConfig {
    /// Loads and validates a file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|error| ConfigError::Read { path: name.clone(), error })?;
        Self::parse(&text, &name)
    }

    /// Parses and validates TOML text (`origin` names it in errors). Every problem is named:
    /// each unknown key, a value of the wrong type, each invalid value.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let value: toml::Value = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: origin.to_string(),
            message: e.to_string().trim().to_string(),
        })?;
        let mut problems: Vec<Problem> =
            unknown_keys(&value).into_iter().map(Problem::Unknown).collect();
        // Without the unknown keys, the rest is read and its values checked.
        let mut known = value;
        if let Some(table) = known.as_table_mut() {
            for key in problems.iter().filter_map(|p| {
                if let Problem::Unknown(k) = p {
                    Some(k.clone())
                } else {
                    None
                }
            }) {
                match key.strip_prefix('[').and_then(|k| k.strip_suffix(']')) {
                    Some(section) => drop(table.remove(section)),
                    None => {
                        let (section, name) = key.split_once('.').expect("section.key");
                        if let Some(body) =
                            table.get_mut(section).and_then(toml::Value::as_table_mut)
                        {
                            body.remove(name);
                        }
                    }
                }
            }
        }
        // Each value that does not parse as its setting's type is named and left out, so that
        // the others are read and checked.
        problems.extend(type_errors(&mut known).into_iter().map(Problem::Type));
        match known.try_into::<PipelineConfig>() {
            Ok(config) => problems.extend(config.problems()),
            Err(e) => problems.push(Problem::Type(e.to_string().trim().to_string())),
        }
        if !problems.is_empty() {
            return Err(ConfigError::Invalid { path: origin.to_string(), problems });
        }
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: origin.to_string(),
            message: e.to_string().trim().to_string(),
        })
    }

    /// Checks values that parse but make no sense: each is named.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let problems = self.problems();
        match problems.is_empty() {
            true => Ok(()),
            false => Err(ConfigError::Invalid { path: origin.to_string(), problems }),
        }
    }

    /// Every value that parses but makes no sense.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        let mut invalid = |key: &'static str, message: &str| {
            problems.push(Problem::Invalid { key, message: message.to_string() })
        };
        let v = &self.verify;
        let m = &self.metrics;
        if m.max_connections == 0
            || m.check_queue == 0
            || m.request_timeout_ms == 0
            || m.check_timeout_ms == 0
            || m.max_body_bytes == 0
        {
            invalid("metrics", "max_body_bytes, max_connections, request_timeout_ms, check_queue and check_timeout_ms must be at least 1");
        }
        if !(v.threshold > 0.0 && v.threshold <= 1.0) {
            invalid("verify.threshold", "must be in (0, 1]");
        }
        if !(0.0..=1.0).contains(&v.min_longer_share) {
            invalid("verify.min_longer_share", "must be in [0, 1] (0: off)");
        }
        if !(0.0..=1.0).contains(&v.word_threshold) {
            invalid("verify.word_threshold", "must be in [0, 1] (0: off)");
        }
        for (key, message) in self.fingerprint_problems() {
            invalid(key, message);
        }
        if !["auto", "en", "ru", "de", "fr", "es", "none"]
            .contains(&self.sentence.language.as_str())
        {
            invalid("sentence.language", "must be auto, en, ru, de, fr, es or none");
        }
        if !self.sentence.synonyms.is_empty()
            && std::fs::read_to_string(&self.sentence.synonyms).is_err()
        {
            invalid("sentence.synonyms", "cannot read this file");
        }
        if self.candidates.max_set_pages < 2 {
            invalid("candidates.max_set_pages", "must be at least 2");
        }
        if self.candidates.neighbors == 0 {
            invalid("candidates.neighbors", "must be at least 1");
        }
        if self.candidates.max_fingerprint_pages < 2 {
            invalid("candidates.max_fingerprint_pages", "must be at least 2");
        }
        if !(self.template.interior_run_share >= 0.0
            && self.template.interior_run_share.is_finite())
        {
            invalid("template.interior_run_share", "must be a number, 0 or more (0: off)");
        }
        if !(0.0..=1.0).contains(&self.template.page_fraction) {
            invalid("template.page_fraction", "must be in [0, 1]");
        }
        if self.sentence.max_sentences_per_page == 0 {
            invalid("sentence.max_sentences_per_page", "must be at least 1");
        }
        if self.source.channel_capacity == 0 {
            invalid("source.channel_capacity", "must be at least 1");
        }
        if self.source.reader_threads == 0 {
            invalid("source.reader_threads", "must be at least 1");
        }
        if self.source.max_page_bytes == 0 || self.source.max_record_bytes == 0 {
            invalid("source.max_page_bytes", "caps must be positive");
        }
        let t = &self.text;
        if t.id_field.is_empty() || t.text_field.is_empty() || t.id_field == t.text_field {
            invalid("text.id_field", "id_field and text_field must be set and differ");
        }
        if self.run.workers == 0 {
            invalid("run.workers", "must be at least 1");
        }
        if self.run.epoch_records == 0 {
            invalid("run.epoch_records", "must be at least 1");
        }
        if self.run.stop_timeout_secs == 0 {
            invalid("run.stop_timeout_secs", "must be at least 1");
        }
        if self.run.spill_after == 0 {
            invalid("run.spill_after", "must be at least 1");
        }
        if self.run.epochs_in_flight == 0 {
            invalid("run.epochs_in_flight", "must be at least 1");
        }
        if !self.run.word_store_dir.is_empty()
            && !std::path::Path::new(&self.run.word_store_dir).is_dir()
        {
            invalid("run.word_store_dir", "is not a directory");
        }
        for message in self.urls.problems() {
            invalid("urls.tracking_parameters", &message);
        }
        problems
    }

    /// The method's settings, as the operators take them.
    pub fn method(&self) -> MethodConfig {
        MethodConfig {
            template: self.template,
            fingerprint: self.fingerprint.clone(),
            candidates: self.candidates.clone(),
            verify: self.verify.clone(),
        }
    }
}

impl PipelineConfig {
    /// Every value of the fingerprinting's settings that parses but makes no sense: its key
    /// and what is wrong.
    fn fingerprint_problems(&self) -> Vec<(&'static str, &'static str)> {
        let mut problems = Vec::new();
        match &self.fingerprint {
            Fingerprinting::Sentence(f) => {
                if f.buckets == 0 {
                    problems.push(("fingerprint.buckets", "must be at least 1"));
                }
                if f.hashes_per_bucket == 0 {
                    problems.push(("fingerprint.hashes_per_bucket", "must be at least 1"));
                }
                if f.word_bands > 0 && (f.word_rows == 0 || f.word_shingle_words == 0) {
                    problems.push((
                        "fingerprint.word_rows",
                        "word_rows and word_shingle_words must be at least 1 (word_bands 0: off)",
                    ));
                }
            }
            Fingerprinting::Minhash(m) => {
                if m.shingle_words == 0 {
                    problems.push(("fingerprint.shingle_words", "must be at least 1"));
                }
                if m.bands == 0 || m.rows == 0 {
                    problems.push(("fingerprint.bands", "bands and rows must be at least 1"));
                }
            }
            Fingerprinting::Simhash(h) => {
                if h.shingle_words == 0 {
                    problems.push(("fingerprint.shingle_words", "must be at least 1"));
                }
                if h.max_distance > 16 {
                    problems.push(("fingerprint.max_distance", "must be at most 16"));
                }
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_default() {
        assert_eq!(PipelineConfig::parse("", "t").unwrap(), PipelineConfig::default());
    }

    #[test]
    fn the_shipped_pipeline_toml_is_valid_and_is_the_default() {
        let shipped =
            PipelineConfig::load(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/pipeline.toml")))
                .unwrap();
        assert_eq!(shipped, PipelineConfig::default(), "pipeline.toml documents the defaults");
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = PipelineConfig::parse("[verify]\nthreshhold = 0.9\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("threshhold"), "{err}");
        let err = PipelineConfig::parse("[nope]\n", "p.toml").unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn invalid_values_name_their_key() {
        let err = PipelineConfig::parse("[verify]\nword_threshold = 2\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("verify.word_threshold"), "{err}");
        let err =
            PipelineConfig::parse("[fingerprint]\ntype = \"sentence\"\nword_rows = 0\n", "p.toml")
                .unwrap_err()
                .to_string();
        assert!(err.contains("fingerprint.word_rows"), "{err}");
        let err =
            PipelineConfig::parse("[verify]\nthreshold = 1.5\n", "p.toml").unwrap_err().to_string();
        assert!(err.contains("verify.threshold"), "{err}");
        let err =
            PipelineConfig::parse("[fingerprint]\ntype = \"sentence\"\nbuckets = 0\n", "p.toml")
                .unwrap_err()
                .to_string();
        assert!(err.contains("fingerprint.buckets"), "{err}");
    }

    #[test]
    fn every_problem_is_named_at_once() {
        let text = "[verify]\nthreshhold = 0.9\nthreshold = 1.5\nword_threshold = 2\n[run]\nworkers = 0\nepoch_msec = 5\n[nope]\nx = 1\n";
        let err = PipelineConfig::parse(text, "p.toml").unwrap_err().to_string();
        for named in [
            "`verify.threshhold`",
            "`run.epoch_msec`",
            "`[nope]`",
            "`verify.threshold`",
            "`verify.word_threshold`",
            "`run.workers`",
        ] {
            assert!(err.contains(named), "{named} in: {err}");
        }
        assert!(err.contains("6 problems") && err.matches("\n  - ").count() == 6, "{err}");
        // One problem stays on one line.
        let err = PipelineConfig::parse("[run]\nworkers = 0\n", "p.toml").unwrap_err().to_string();
        assert_eq!(err, "p.toml: invalid value for `run.workers`: must be at least 1");
        // A value of the wrong type is named beside the unknown keys.
        let err = PipelineConfig::parse("[run]\nworkers = \"two\"\nwrokers = 2\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("2 problems") && err.contains("`run.wrokers`") && err.contains("workers"),
            "{err}"
        );
        // A fingerprint type's keys are that type's.
        let err = PipelineConfig::parse(
            "[fingerprint]\ntype = \"simhash\"\nbands = 20\nbuckets = 3\n",
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`fingerprint.bands`") && err.contains("`fingerprint.buckets`"),
            "{err}"
        );
    }

    /// Values of the wrong type, bad variants and negative counts are named one by one, beside
    /// the unknown keys and the values out of range: one does not hide the others.
    #[test]
    fn values_of_the_wrong_type_do_not_hide_the_others() {
        let named = |text: &str, keys: &[&str]| {
            let err = PipelineConfig::parse(text, "p.toml").unwrap_err().to_string();
            for key in keys {
                assert!(err.contains(&format!("`{key}`")), "{key} in: {err}");
            }
            let count = format!("{} problems", keys.len());
            assert!(err.contains(&count) && err.matches("\n  - ").count() == keys.len(), "{err}");
        };
        named(
            "[run]\nworkers = \"two\"\nepoch_msec = 5\n[metrics]\ncluster_alarm_pages = -5\n[verify]\nthreshold = 1.7\nword_threshold = -1\n",
            &[
                "run.workers",
                "run.epoch_msec",
                "metrics.cluster_alarm_pages",
                "verify.threshold",
                "verify.word_threshold",
            ],
        );
        named(
            "[verify]\ntype = \"lcss\"\nclustering = \"stars\"\n[run]\nwords = \"ram\"\n",
            &["verify.type", "verify.clustering", "run.words"],
        );
        named(
            "source = 3\n[fingerprint]\ntype = \"simhashh\"\nbuckets = 3\n[candidates]\nneighbors = 0\n",
            &["[source]", "fingerprint.type", "candidates.neighbors"],
        );
    }

    #[test]
    fn fingerprint_types_take_their_own_keys() {
        let config =
            PipelineConfig::parse("[fingerprint]\ntype = \"minhash\"\nbands = 20\n", "p.toml")
                .unwrap();
        assert!(
            matches!(config.fingerprint, Fingerprinting::Minhash(ref m) if m.bands == 20 && m.rows == 8)
        );
        let err =
            PipelineConfig::parse("[fingerprint]\ntype = \"simhash\"\nbands = 20\n", "p.toml")
                .unwrap_err()
                .to_string();
        assert!(err.contains("bands"), "{err}");
        let err = PipelineConfig::parse("[fingerprint]\ntype = \"bloom\"\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bloom"), "{err}");
        let config = PipelineConfig::parse("[verify]\ntype = \"jaccard\"\n", "p.toml").unwrap();
        assert_eq!(config.verify.method, dupflow_operators::verify::VerifyMethod::Jaccard);
    }
}
