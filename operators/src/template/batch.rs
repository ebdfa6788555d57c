//! The template rule over a whole set of pages at once: what `dupflow explain` shows and the
//! oracle checks the template stage against.

use std::collections::{BTreeMap, HashMap};

use super::rule::{apply, distinct_keys, Filtered, TemplateConfig};
use crate::ingest::page::{Page, PageId};

/// Template-filtered pages, the template counted over `pages` themselves.
pub fn filter_templates(pages: &[Page], config: &TemplateConfig) -> BTreeMap<PageId, Filtered> {
    filter_templates_as_of(pages, pages, config)
}

/// `pages` filtered with the template sentences of `template_pages` (the pages as of the last
/// template refresh), computed from scratch.
pub fn filter_templates_as_of(
    pages: &[Page],
    template_pages: &[Page],
    config: &TemplateConfig,
) -> BTreeMap<PageId, Filtered> {
    let mut host_pages: HashMap<u64, u64> = HashMap::new();
    let mut df: HashMap<(u64, u64), u64> = HashMap::new();
    for page in template_pages {
        *host_pages.entry(page.host).or_default() += 1;
        for key in distinct_keys(page) {
            *df.entry((page.host, key)).or_default() += 1;
        }
    }
    let mut templates: HashMap<u64, Vec<(u64, u8)>> = HashMap::new();
    for (&(host, key), &count) in &df {
        if count >= config.threshold(host_pages[&host]) {
            let class = TemplateConfig::class(count, host_pages[&host]);
            templates.entry(host).or_default().push((key, class));
        }
    }
    for keys in templates.values_mut() {
        keys.sort_unstable();
    }
    pages
        .iter()
        .map(|page| {
            (page.id, apply(page, templates.get(&page.host).map_or(&[][..], |v| v), config))
        })
        .collect()
}
