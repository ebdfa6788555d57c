//! What a checkpoint says of how its pages and clusters were made: the method's key and every
//! setting that shapes a page or a verdict. A resume made another way is refused, naming what
//! differs.

use std::collections::BTreeMap;

use serde::Serialize;

/// The version of the method's rules, raised whenever a release forms other clusters from the
/// same pages and settings (CHANGELOG.md says what each version changed).
pub const METHOD_VERSION: u64 = 5;

/// A stable key of what decides the clusters: `METHOD_VERSION`, the method's settings
/// (`[template]`, `[fingerprint]`, `[candidates]`, `[verify]`) and which URLs name one page
/// (`[urls]`: the held pages are keyed by it). A checkpoint's change stream can only
/// be continued by a dataflow that forms the same clusters from the pages it restores.
/// `template.refresh_epochs` is not part of it: a checkpoint falls just after a refresh, where
/// the clusters are those of its pages whatever the refreshes (`template::checkpoint_epoch`).
pub fn method_key(
    method: &dupflow_operators::MethodConfig,
    urls: &crate::source::urls::UrlConfig,
) -> u64 {
    let mut method = method.clone();
    method.template.refresh_epochs = 1;
    let settings = serde_json::to_string(&method).expect("the method's settings serialize");
    let urls = serde_json::to_string(urls).expect("the URL settings serialize");
    dupflow_operators::runtime::hashing::stable_hash(&format!("{METHOD_VERSION} {settings} {urls}"))
}

/// The settings that shape what a page is or which pages are near-duplicates, by
/// `section.key` with their values as JSON: the whole of `[sentence]`, `[template]` (but
/// `refresh_epochs`, see `method_key`), `[fingerprint]`, `[candidates]`, `[verify]`, `[urls]`,
/// `[text]` and `[share]`, and `source.max_record_bytes`, `source.max_page_bytes`,
/// `source.recrawls` and `run.retention_secs`. A checkpoint's pages and change stream were made
/// with them: a run with others would continue it with pages and clusters of another kind.
pub fn shaping_settings(config: &crate::config::PipelineConfig) -> BTreeMap<String, String> {
    fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>) {
        match value {
            serde_json::Value::Object(fields) => {
                for (key, value) in fields {
                    flatten(&format!("{prefix}.{key}"), value, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    fn json<T: Serialize>(settings: &T) -> serde_json::Value {
        serde_json::to_value(settings).expect("settings serialize")
    }
    let mut template = config.template;
    template.refresh_epochs = 1;
    let mut out = BTreeMap::new();
    for (section, value) in [
        ("sentence", json(&config.sentence)),
        ("template", json(&template)),
        ("fingerprint", json(&config.fingerprint)),
        ("candidates", json(&config.candidates)),
        ("verify", json(&config.verify)),
        ("urls", json(&config.urls)),
        ("text", json(&config.text)),
        ("share", json(&config.share)),
    ] {
        flatten(section, &value, &mut out);
    }
    out.remove("template.refresh_epochs");
    let source = &config.source;
    let single = [
        ("source.max_record_bytes", serde_json::json!(source.max_record_bytes)),
        ("source.max_page_bytes", serde_json::json!(source.max_page_bytes)),
        ("source.recrawls", serde_json::json!(source.recrawls)),
        ("run.retention_secs", serde_json::json!(config.run.retention_secs)),
    ];
    for (key, value) in single {
        out.insert(key.to_string(), value.to_string());
    }
    out
}

/// A checkpoint's `settings` as an index command reads it (`dataflow::IndexRole`): an index
/// written with one capture a URL (`source.recrawls = "replace"`) is continued with every
/// capture a page, which the run's `config` then says. The captures it holds stay pages as
/// they are; no other setting may differ.
pub fn as_index(settings: &mut BTreeMap<String, String>, config: &crate::config::PipelineConfig) {
    let key = "source.recrawls";
    let replace = serde_json::json!(crate::source::current::Recrawls::Replace).to_string();
    let keep = crate::source::current::Recrawls::Keep;
    if config.source.recrawls == keep && settings.get(key) == Some(&replace) {
        settings.insert(key.to_string(), serde_json::json!(keep).to_string());
    }
}

/// How a run makes its pages and clusters, as every manifest it writes says it: the method key
/// and the shaping settings. A resume must make them the same way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    pub method: u64,
    pub settings: BTreeMap<String, String>,
}

impl Provenance {
    pub fn of(config: &crate::config::PipelineConfig) -> Provenance {
        Provenance {
            method: method_key(&config.method(), &config.urls),
            settings: shaping_settings(config),
        }
    }
}

/// The settings whose values differ between a checkpoint's (`written`) and a run's (`now`),
/// each as `key = written here, now there`.
pub fn settings_changed(
    written: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = written.keys().chain(now.keys()).collect();
    let shown = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(not set)".to_string());
    keys.into_iter()
        .filter(|k| written.get(*k) != now.get(*k))
        .map(|k| {
            format!(
                "{k} = {} in the checkpoint, {} in this run",
                shown(written.get(k)),
                shown(now.get(k))
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{CheckpointError, Manifest, CLUSTER_IDS};
    use super::*;
    use crate::types::RunError;

    #[test]
    fn a_checkpoint_of_another_method_is_refused_with_a_reason() {
        use dupflow_operators::MethodConfig;
        let path = Path::new("state");
        let method = MethodConfig::default();
        let urls = crate::source::urls::UrlConfig::default();
        let key = method_key(&method, &urls);
        assert_eq!(key, method_key(&MethodConfig::default(), &urls), "stable");
        let mut other = method.clone();
        other.template.interior_run_units = 0;
        assert_ne!(method_key(&other, &urls), key);
        // Template refreshes are not part of it: a checkpoint falls just after one.
        let mut refreshed = method.clone();
        refreshed.template.refresh_epochs = 8;
        assert_eq!(method_key(&refreshed, &urls), key);
        let exact = crate::source::urls::UrlConfig { normalize: false, ..urls.clone() };
        assert_ne!(method_key(&method, &exact), key, "the URLs' identity is part of it");
        let written =
            Manifest { parts: 2, cluster_ids: CLUSTER_IDS, method: key, ..Manifest::default() };
        let run = Provenance { method: key, ..Provenance::default() };
        assert!(written.check_shape(1, 1, &run, path).is_ok());
        let other_run = Provenance { method: method_key(&other, &urls), ..Provenance::default() };
        let err = written.check_shape(1, 1, &other_run, path).unwrap_err();
        assert!(matches!(err, RunError::Checkpoint(CheckpointError::OtherMethod { .. })), "{err}");
        assert!(err.to_string().contains("afresh"), "the advice: {err}");
        // A manifest without the key is refused too.
        let mut json: serde_json::Value = serde_json::to_value(&written).unwrap();
        json.as_object_mut().unwrap().remove("method");
        let old: Manifest = serde_json::from_value(json).unwrap();
        assert!(old.check_shape(1, 1, &run, path).is_err());
    }

    /// Every setting that shapes a page or a verdict is in the checkpoint's settings, and a
    /// resume with another value of any of them is refused with that setting named.
    #[test]
    fn a_checkpoint_with_other_settings_is_refused_naming_them() {
        use crate::config::PipelineConfig;
        let path = Path::new("state");
        let base = PipelineConfig::default();
        let written = Manifest {
            parts: 2,
            cluster_ids: CLUSTER_IDS,
            method: Provenance::of(&base).method,
            settings: Provenance::of(&base).settings,
            ..Manifest::default()
        };
        assert!(written.check_shape(1, 1, &Provenance::of(&base), path).is_ok());
        type Edit = fn(&mut PipelineConfig);
        let edits: Vec<(&str, Edit)> = vec![
            ("sentence.min_sentence_units", |c| c.sentence.min_sentence_units = 60),
            ("sentence.landmarks", |c| c.sentence.landmarks = false),
            ("source.max_page_bytes", |c| c.source.max_page_bytes = 20_000),
            ("source.max_record_bytes", |c| c.source.max_record_bytes = 1 << 20),
            ("run.retention_secs", |c| c.run.retention_secs = 3600),
            ("verify.threshold", |c| c.verify.threshold = 0.7),
            ("template.min_pages", |c| c.template.min_pages = 9),
            ("share.enabled", |c| c.share.enabled = true),
        ];
        for (key, edit) in edits {
            let mut config = base.clone();
            edit(&mut config);
            let err = written.check_shape(1, 1, &Provenance::of(&config), path).expect_err(key);
            let RunError::Checkpoint(CheckpointError::OtherSettings { changed, .. }) = &err else {
                panic!("{key}: {err}");
            };
            assert!(changed.len() == 1 && changed[0].starts_with(&format!("{key} = ")), "{err}");
        }
        // Settings that only say how the run is carried out are not among them.
        let mut config = base.clone();
        config.template.refresh_epochs = 3;
        config.run.workers = 7;
        config.run.epoch_records = 10;
        config.run.page_cache_mb = 1;
        assert!(written.check_shape(1, 1, &Provenance::of(&config), path).is_ok());
    }
}
