//! The canonical URL a page names for itself: an HTTP `Link: <URL>; rel="canonical"` header, or
//! else the first `<link rel="canonical" href="URL">` in its HTML, resolved against the page's
//! URL. `dedup --keep canonical` keeps, in each cluster, the member its members name.

use url::Url;

/// How far into a page's HTML a `<link rel="canonical">` is looked for (it belongs in `<head>`).
const HEAD_BYTES: usize = 256 * 1024;

/// The page's canonical URL, normalized (`normalize`), if it names one.
pub fn canonical_of(page_url: &str, link_header: Option<&str>, html: &str) -> Option<String> {
    let target = link_header.and_then(from_link_header).or_else(|| from_html(html))?;
    let base = Url::parse(page_url).ok()?;
    let resolved = base.join(target.trim()).ok()?;
    Some(normalize_url(&resolved))
}

/// A URL as pages are compared by: scheme and host lowercased, default port and fragment
/// dropped (the `url` crate's serialization, without the fragment). Unparsable: as given.
pub fn normalize(url: &str) -> String {
    Url::parse(url.trim()).map(|u| normalize_url(&u)).unwrap_or_else(|_| url.trim().to_string())
}

fn normalize_url(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.to_string()
}

/// The target of the first `rel="canonical"` link of a `Link` header value (RFC 8288: links
/// separated by commas, each `<target>` with `;`-separated parameters).
fn from_link_header(value: &str) -> Option<&str> {
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let close = open + rest[open..].find('>')?;
        let target = &rest[open + 1..close];
        let params_end = rest[close..].find('<').map_or(rest.len(), |n| close + n);
        let params = &rest[close + 1..params_end];
        let canonical = params.split(';').any(|p| {
            let Some((name, value)) = p.split_once('=') else { return false };
            name.trim().eq_ignore_ascii_case("rel")
                && value
                    .trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case("canonical"))
        });
        if canonical {
            return Some(target);
        }
        rest = &rest[params_end..];
    }
    None
}

/// The `href` of the first `<link>` element whose `rel` holds `canonical`, in the page's head.
fn from_html(html: &str) -> Option<&str> {
    let mut end = html.len().min(HEAD_BYTES);
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    let head = &html[..end];
    let lower = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("<link") {
        let start = from + at;
        let close = start + lower[start..].find('>')?;
        let tag = &head[start..close];
        let rel = attribute(tag, "rel");
        if rel.is_some_and(|r| {
            r.split_ascii_whitespace().any(|r| r.eq_ignore_ascii_case("canonical"))
        }) {
            if let Some(href) = attribute(tag, "href").filter(|h| !h.trim().is_empty()) {
                return Some(href);
            }
        }
        from = close;
    }
    None
}

/// An attribute's value in a tag's text (quoted with `"` or `'`, or bare), by name.
fn attribute<'t>(tag: &'t str, name: &str) -> Option<&'t str> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(name) {
        let start = from + at;
        from = start + name.len();
        // A whole attribute name: preceded by white space, followed by `=`.
        let before = lower[..start].chars().next_back();
        if !before.is_some_and(|c| c.is_ascii_whitespace()) {
            continue;
        }
        let after = lower[from..].trim_start();
        let Some(value) = after.strip_prefix('=') else { continue };
        let offset = tag.len() - value.len();
        let value = &tag[offset..].trim_start();
        return Some(match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or(""),
            // A bare value ends at white space; at the tag's end, a self-closing `/` is not its.
            _ => match value.split_ascii_whitespace().next().unwrap_or("") {
                last if value.trim_end() == last => last.strip_suffix('/').unwrap_or(last),
                token => token,
            },
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_header_names_the_canonical_url() {
        let header = r#"<https://cdn.example/style.css>; rel="preload", <https://example.org/a>; rel="canonical""#;
        assert_eq!(
            canonical_of("https://example.org/a?ref=x", Some(header), "").as_deref(),
            Some("https://example.org/a")
        );
        // Not a canonical link: the HTML is asked.
        let html = r#"<html><head><LINK REL="Canonical" href="/b#top"></head>"#;
        assert_eq!(
            canonical_of(
                "https://example.org/x/y",
                Some("<https://e.org/s>; rel=stylesheet"),
                html
            )
            .as_deref(),
            Some("https://example.org/b")
        );
    }

    #[test]
    fn a_link_tag_names_it_resolved_against_the_page() {
        let page = "http://Example.org:80/docs/page.html";
        let at = |html: &str| canonical_of(page, None, html);
        assert_eq!(
            at(r#"<link rel="canonical" href="other.html">"#).as_deref(),
            Some("http://example.org/docs/other.html")
        );
        assert_eq!(
            at(r#"<link href='//example.org/c' rel='alternate canonical'/>"#).as_deref(),
            Some("http://example.org/c")
        );
        assert_eq!(
            at(r#"<link rel=canonical href=https://example.org/d>"#).as_deref(),
            Some("https://example.org/d")
        );
        assert_eq!(
            at(r#"<link rel="stylesheet" href="s.css"><link data-rel="canonical" href="no">"#),
            None
        );
        assert_eq!(at(r#"<p>no links</p>"#), None);
        assert_eq!(normalize("HTTPS://Example.ORG:443/a#frag"), "https://example.org/a");
    }
}
