//! Which URLs name one page: the exact pre-pass before any similarity. With `[urls] normalize`
//! (the default), two captures whose URLs differ only in what does not change the resource
//! (the scheme `http`/`https`, the host's case, a default port, a fragment, a trailing slash,
//! tracking parameters in the query) are captures of one page: the newer replaces the older, as
//! a re-crawl does, and each such capture is counted (`dupflow_url_aliases_total`, the run's
//! `urls:` line). The URLs written in the outputs stay as the records give them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use url::Url;

use dupflow_operators::ingest::sentence::stable_hash;

/// `[urls]` of pipeline.toml.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UrlConfig {
    /// Captures whose normalized URLs are equal are captures of one page.
    pub normalize: bool,
    /// Query parameters left out of a normalized URL, by name (case-insensitive); a name ending
    /// in `*` matches every name it begins.
    pub tracking_parameters: Vec<String>,
}

impl Default for UrlConfig {
    fn default() -> Self {
        UrlConfig {
            normalize: true,
            tracking_parameters: [
                "utm_*", "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid",
                "mc_cid", "mc_eid", "_ga", "_gl", "igshid", "ref_src", "spm",
            ]
            .map(String::from)
            .to_vec(),
        }
    }
}

impl UrlConfig {
    /// What is wrong with the settings, each problem once.
    pub fn problems(&self) -> Vec<String> {
        self.tracking_parameters
            .iter()
            .filter(|p| p.trim_end_matches('*').is_empty())
            .map(|p| format!("tracking_parameters: {p:?} names no parameter"))
            .collect()
    }
}

/// The identity of pages by URL, as configured: the key a URL is routed and held by.
#[derive(Clone, Debug, Default)]
pub struct UrlIdentity {
    config: Option<Arc<UrlConfig>>,
}

impl UrlIdentity {
    pub fn new(config: &UrlConfig) -> Self {
        UrlIdentity { config: config.normalize.then(|| Arc::new(config.clone())) }
    }

    /// Every URL its own page (no normalization).
    pub fn exact() -> Self {
        UrlIdentity { config: None }
    }

    /// The key of a page's URL (or a text row's id): the hash of its normalized form, or of
    /// itself when it is not an http(s) URL or normalization is off.
    pub fn key(&self, url: &str) -> u64 {
        match self.normalized(url) {
            Some(normalized) => stable_hash(&normalized),
            None => stable_hash(url),
        }
    }

    /// The normalized form of an absolute http(s) URL: scheme `http`, host lowercased, default
    /// port, fragment and tracking parameters left out, no trailing slash on a path other
    /// than `/`, no empty query. `None` when normalization is off or `url` is no such URL.
    pub fn normalized(&self, url: &str) -> Option<String> {
        let config = self.config.as_ref()?;
        let mut parsed = Url::parse(url.trim()).ok()?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return None;
        }
        let port = parsed.port_or_known_default();
        if parsed.scheme() == "https" {
            parsed.set_scheme("http").ok()?;
            // https's default port is the page's default port: left out as http's is.
            if port == Some(443) {
                parsed.set_port(None).ok()?;
            }
        }
        parsed.set_fragment(None);
        if parsed.query().is_some() {
            let kept: Vec<(String, String)> = parsed
                .query_pairs()
                .filter(|(name, _)| !tracking(&config.tracking_parameters, name))
                .map(|(n, v)| (n.into_owned(), v.into_owned()))
                .collect();
            if kept.is_empty() {
                parsed.set_query(None);
            } else {
                parsed.query_pairs_mut().clear().extend_pairs(kept);
            }
        }
        let path = parsed.path();
        if path.len() > 1 && path.ends_with('/') {
            let trimmed = path.trim_end_matches('/').to_string();
            parsed.set_path(if trimmed.is_empty() { "/" } else { &trimmed });
        }
        Some(parsed.to_string())
    }
}

fn tracking(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => {
            name.len() >= prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix)
        }
        None => p.eq_ignore_ascii_case(name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on() -> UrlIdentity {
        UrlIdentity::new(&UrlConfig::default())
    }

    #[test]
    fn aliases_of_one_page_share_its_key() {
        let id = on();
        let page = "http://example.org/news/river";
        for alias in [
            "https://example.org/news/river",
            "HTTP://Example.ORG:80/news/river",
            "https://example.org:443/news/river/",
            "http://example.org/news/river#comments",
            "http://example.org/news/river?utm_source=feed&utm_medium=rss",
            "http://example.org/news/river?fbclid=abc",
        ] {
            assert_eq!(id.normalized(alias).as_deref(), Some(page), "{alias}");
            assert_eq!(id.key(alias), id.key(page), "{alias}");
        }
    }

    #[test]
    fn what_names_another_resource_stays_apart() {
        let id = on();
        let page = id.key("http://example.org/news/river");
        for other in [
            "http://example.org/news/river?print=1",
            "http://example.org/news/River",
            "http://example.org:8080/news/river",
            "http://www.example.org/news/river",
            "http://example.org/news/river/index.html",
        ] {
            assert_ne!(id.key(other), page, "{other}");
        }
        // Parameters other than tracking ones stay, in their order.
        assert_eq!(
            id.normalized("http://example.org/s?q=a&utm_campaign=x&page=2").as_deref(),
            Some("http://example.org/s?q=a&page=2")
        );
        assert_eq!(id.normalized("http://example.org/").as_deref(), Some("http://example.org/"));
    }

    #[test]
    fn ids_and_other_schemes_and_normalization_off_key_as_given() {
        let id = on();
        for given in ["d5", "urn:uuid:1234", "ftp://example.org/a/"] {
            assert_eq!(id.normalized(given), None);
            assert_eq!(id.key(given), stable_hash(given));
        }
        let off = UrlIdentity::new(&UrlConfig { normalize: false, ..UrlConfig::default() });
        assert_ne!(off.key("https://example.org/a"), off.key("http://example.org/a"));
        assert_eq!(UrlIdentity::exact().key("https://x/a"), stable_hash("https://x/a"));
    }

    #[test]
    fn a_pattern_naming_nothing_is_a_problem() {
        let config = UrlConfig {
            tracking_parameters: vec!["*".into(), "ok".into()],
            ..UrlConfig::default()
        };
        assert_eq!(config.problems().len(), 1);
    }
}
