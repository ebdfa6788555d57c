//! From a WARC record to an HTML document: HTTP status and headers, chunking, content
//! encoding, the HTML check and the charset.
//!
//! Only 2xx HTML responses (and `resource` records with an HTML type) become documents;
//! `revisit` records are reported as such; everything else is skipped with a reason. Broken
//! chunking falls back to the raw body (counted as a quirk); an undecodable content encoding
//! skips the record with an error. The charset comes from the HTTP header, then `<meta>`, then a
//! BOM, then UTF-8 with replacement characters.

use std::borrow::Cow;
use std::io::Read;

use encoding_rs::Encoding;
use thiserror::Error;

use super::RawRecord;

/// A decoded HTML document, ready for HTML strip. Its HTML borrows the record's block where
/// the body is UTF-8 as stored (most pages): no copy of the page is made to decode it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document<'r> {
    pub url: String,
    /// Lowercased host name without port.
    pub host: String,
    /// WARC-Date as written.
    pub date: String,
    /// WARC-Date in seconds since the Unix epoch (0 if missing or unreadable).
    pub date_secs: u64,
    pub record_id: String,
    pub html: Cow<'r, str>,
    /// The charset the text was decoded with.
    pub charset: &'static str,
    /// The HTTP `Link` headers, joined by `, ` (where a page may name its canonical URL).
    pub link: Option<String>,
}

impl<'r> Document<'r> {
    /// The page's identity (id, URL, host hash, record id) and its HTML, as the pipeline takes it.
    pub fn into_parts(self) -> (dupflow_operators::PageMeta, Cow<'r, str>) {
        let meta = dupflow_operators::PageMeta {
            id: dupflow_operators::PageId::new(self.date_secs, &self.url, &self.record_id),
            host: dupflow_operators::ingest::sentence::stable_hash(&self.host),
            url: self.url.into(),
            record_id: self.record_id.into(),
        };
        (meta, self.html)
    }
}

/// A revisit record: "same content as an earlier capture".
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Revisit {
    pub url: String,
    pub date: String,
    pub refers_to_uri: Option<String>,
    pub refers_to_date: Option<String>,
}

/// What a record turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<'r> {
    Page(Document<'r>),
    Revisit(Revisit),
    /// Not a page, by design (a request, an image, a 404, …); the reason is the metric label.
    Skipped(&'static str),
}

/// Non-fatal oddities met while decoding (counted, the record goes on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quirks {
    pub broken_chunking: bool,
    pub missing_date: bool,
    pub page_truncated: bool,
    pub content_encoding_mismatch: bool,
}

/// Why a record that should have been a page was skipped.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum DocumentError {
    #[error("invalid_http: {0}")]
    InvalidHttp(String),
    #[error("invalid_content_encoding: {0}")]
    InvalidContentEncoding(String),
}

impl DocumentError {
    pub fn code(&self) -> &'static str {
        match self {
            DocumentError::InvalidHttp(_) => "invalid_http",
            DocumentError::InvalidContentEncoding(_) => "invalid_content_encoding",
        }
    }
}

struct HttpResponse<'a> {
    status: u16,
    headers: Vec<(String, String)>,
    body: &'a [u8],
}

fn parse_http(block: &[u8]) -> Result<HttpResponse<'_>, DocumentError> {
    let head_end = super::decode::find(block, b"\r\n\r\n")
        .map(|i| (i, i + 4))
        .into_iter()
        .chain(super::decode::find(block, b"\n\n").map(|i| (i, i + 2)))
        .min_by_key(|&(i, _)| i);
    let (head, body) = match head_end {
        Some((i, j)) => (&block[..i], &block[j..]),
        None => (block, &block[block.len()..]),
    };
    let head = String::from_utf8_lossy(head);
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.split_whitespace();
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/") {
        return Err(DocumentError::InvalidHttp(format!(
            "status line {:?}",
            status_line.chars().take(60).collect::<String>()
        )));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| DocumentError::InvalidHttp(format!("no status code in {status_line:?}")))?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(HttpResponse { status, headers, body })
}

/// Removes chunked transfer encoding; `None` if the chunking is broken.
pub fn dechunk(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut rest = body;
    loop {
        let line_end = rest.iter().position(|&b| b == b'\n')?;
        let line = std::str::from_utf8(&rest[..line_end]).ok()?.trim();
        let size_text = line.split(';').next()?.trim();
        let size = usize::from_str_radix(size_text, 16).ok()?;
        rest = &rest[line_end + 1..];
        if size == 0 {
            return Some(out);
        }
        if rest.len() < size {
            // Truncated last chunk: keep what is there.
            out.extend_from_slice(rest);
            return Some(out);
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size..];
        // CRLF after the chunk data.
        while rest.first().is_some_and(|&b| b == b'\r' || b == b'\n') {
            rest = &rest[1..];
        }
        if rest.is_empty() {
            return Some(out);
        }
    }
}

fn decode_content(body: &[u8], encoding: &str, limit: u64) -> Result<Vec<u8>, DocumentError> {
    let mut out = Vec::new();
    let result = match encoding.trim().to_ascii_lowercase().as_str() {
        "" | "identity" | "none" => return Ok(body.to_vec()),
        "gzip" | "x-gzip" => {
            flate2::read::MultiGzDecoder::new(body).take(limit).read_to_end(&mut out)
        }
        "deflate" => {
            let zlib = flate2::read::ZlibDecoder::new(body).take(limit).read_to_end(&mut out);
            if zlib.is_err() {
                out.clear();
                flate2::read::DeflateDecoder::new(body).take(limit).read_to_end(&mut out)
            } else {
                zlib
            }
        }
        "br" => {
            brotli_decompressor::Decompressor::new(body, 4096).take(limit).read_to_end(&mut out)
        }
        other => {
            return Err(DocumentError::InvalidContentEncoding(format!(
                "unknown encoding {other:?}"
            )))
        }
    };
    match result {
        Ok(_) => Ok(out),
        // A body cut short still gives its decoded prefix; a body that gives nothing is an error.
        Err(_) if !out.is_empty() => Ok(out),
        Err(e) => Err(DocumentError::InvalidContentEncoding(format!("{encoding}: {e}"))),
    }
}

fn mime_of(content_type: Option<&str>) -> String {
    content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

fn charset_param(content_type: Option<&str>) -> Option<String> {
    let ct = content_type?;
    ct.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(['"', '\'']).to_string())
    })
}

/// Whether the start of a body looks like HTML.
pub fn sniff_html(body: &[u8]) -> bool {
    let head = &body[..body.len().min(1024)];
    let lower = head.to_ascii_lowercase();
    super::decode::find(&lower, b"<html").is_some()
        || super::decode::find(&lower, b"<!doctype html").is_some()
}

/// The charset declared in `<meta charset>` or `<meta http-equiv content="…charset=…">`.
pub fn meta_charset(body: &[u8]) -> Option<String> {
    let head = &body[..body.len().min(4096)];
    let lower = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = super::decode::find(&lower[from..], b"<meta") {
        let tag_start = from + at;
        let tag_end = lower[tag_start..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(lower.len(), |e| tag_start + e);
        let tag = &lower[tag_start..tag_end];
        if let Some(c) = super::decode::find(tag, b"charset") {
            let rest = &tag[c + 7..];
            let rest = rest.iter().skip_while(|b| {
                b.is_ascii_whitespace() || **b == b'=' || **b == b'"' || **b == b'\''
            });
            let value: Vec<u8> = rest
                .take_while(|b| {
                    !(b.is_ascii_whitespace() || matches!(**b, b'"' | b'\'' | b';' | b'/' | b'>'))
                })
                .copied()
                .collect();
            if !value.is_empty() {
                return Some(String::from_utf8_lossy(&value).to_string());
            }
        }
        from = tag_end.max(tag_start + 5);
    }
    None
}

/// Decodes a body to text: header charset, then `<meta>`, then BOM, then UTF-8. The text
/// borrows the body when the body is UTF-8 (after a BOM, if any) without a malformed sequence.
pub fn decode_text<'b>(
    body: &'b [u8],
    header_charset: Option<&str>,
) -> (Cow<'b, str>, &'static str) {
    let declared = header_charset
        .and_then(|c| Encoding::for_label(c.as_bytes()))
        .or_else(|| meta_charset(body).and_then(|c| Encoding::for_label(c.as_bytes())));
    let encoding = match declared {
        Some(e) => e,
        None => Encoding::for_bom(body).map_or(encoding_rs::UTF_8, |(e, _)| e),
    };
    // A meta tag in a UTF-16 page cannot be right; `decode_with_bom_removal` handles the BOM.
    let (text, _) = encoding.decode_with_bom_removal(body);
    (text, encoding.name())
}

/// Host of a URL, lowercased, without user info or port.
pub fn host_of(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        host_port.split_inclusive(']').next().unwrap_or(host_port)
    } else {
        host_port.split(':').next().unwrap_or(host_port)
    };
    host.to_ascii_lowercase()
}

/// `2014-03-25T12:12:25Z` (or with fractions) to seconds since the epoch.
pub fn parse_warc_date(date: &str) -> Option<u64> {
    let b = date.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || (b[10] != b'T' && b[10] != b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| date.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

/// Seconds since the epoch as a WARC date, `2014-03-25T12:12:25Z` (`parse_warc_date`'s inverse).
pub fn format_warc_date(secs: u64) -> String {
    // Civil from days (Howard Hinnant's algorithm).
    let (days, rest) = ((secs / 86_400) as i64 + 719_468, secs % 86_400);
    let era = days.div_euclid(146_097);
    let doe = days - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (hh, mm, ss) = (rest / 3600, rest % 3600 / 60, rest % 60);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// The record's body decoded from its transfer and content encodings (`None`: as it is).
/// `max_page_bytes` bounds what a content encoding may expand to (eight times it, 1 MiB at
/// least).
fn decoded_payload<'h>(
    body: &[u8],
    header: &impl Fn(&str) -> Option<&'h str>,
    max_page_bytes: usize,
    quirks: &mut Quirks,
) -> Result<Option<Vec<u8>>, DocumentError> {
    let mut payload: Option<Vec<u8>> = None;
    if header("Transfer-Encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked")) {
        match dechunk(body) {
            Some(d) => payload = Some(d),
            None => quirks.broken_chunking = true,
        }
    }
    let limit = (max_page_bytes as u64).saturating_mul(8).max(1 << 20);
    if let Some(encoding) = header("Content-Encoding") {
        let current = payload.as_deref().unwrap_or(body);
        match decode_content(current, encoding, limit) {
            Ok(decoded) => payload = Some(decoded),
            // Some crawlers stored the decoded body and kept the header (ClueWeb09 did).
            Err(_) if sniff_html(current) => quirks.content_encoding_mismatch = true,
            Err(e) => return Err(e),
        }
    }
    Ok(payload)
}

/// The page's text: `payload` (or the record's `body`) decoded from its charset (`declared`,
/// or sniffed), cut to `max_page_bytes` at a character boundary.
fn page_text<'b>(
    body: &'b [u8],
    payload: Option<Vec<u8>>,
    declared: Option<&str>,
    max_page_bytes: usize,
    quirks: &mut Quirks,
) -> (Cow<'b, str>, &'static str) {
    let (mut html, charset) = match payload {
        Some(payload) => {
            let (text, charset) = decode_text(&payload, declared);
            // A decoded body that is UTF-8 from its first byte (no BOM) is the page as it is.
            let decoded = match text {
                Cow::Borrowed(text) if text.len() == payload.len() => None,
                text => Some(text.into_owned()),
            };
            let html = match decoded {
                Some(html) => html,
                None => String::from_utf8(payload)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            };
            (Cow::Owned(html), charset)
        }
        None => decode_text(body, declared),
    };
    if html.len() > max_page_bytes {
        let mut cut = max_page_bytes;
        while !html.is_char_boundary(cut) {
            cut -= 1;
        }
        match &mut html {
            Cow::Borrowed(text) => *text = &text[..cut],
            Cow::Owned(text) => text.truncate(cut),
        }
        quirks.page_truncated = true;
    }
    (html, charset)
}

/// Interprets a record. `max_page_bytes` caps the decoded HTML (cut at a character boundary).
pub fn interpret(
    record: &RawRecord,
    max_page_bytes: usize,
) -> Result<(Outcome<'_>, Quirks), DocumentError> {
    use warc::RecordType;
    let mut quirks = Quirks::default();
    let url = record.header("WARC-Target-URI").unwrap_or("").trim_matches(['<', '>']).to_string();
    let date = record.header("WARC-Date").unwrap_or("").to_string();
    let (status, headers, body): (u16, Vec<(String, String)>, &[u8]) = match record.warc_type() {
        RecordType::Revisit => {
            return Ok((
                Outcome::Revisit(Revisit {
                    url,
                    date,
                    refers_to_uri: record.header("WARC-Refers-To-Target-URI").map(str::to_string),
                    refers_to_date: record.header("WARC-Refers-To-Date").map(str::to_string),
                }),
                quirks,
            ))
        }
        RecordType::Response if !record.block.starts_with(b"HTTP/") => {
            if !url.starts_with("http") {
                return Ok((Outcome::Skipped("not_http"), quirks)); // dns:, ftp:, …
            }
            return Err(DocumentError::InvalidHttp(
                "response block does not start with HTTP/".into(),
            ));
        }
        RecordType::Response => {
            let response = parse_http(&record.block)?;
            (response.status, response.headers, response.body)
        }
        RecordType::Resource => (
            200,
            vec![(
                "Content-Type".to_string(),
                record.header("Content-Type").unwrap_or("").to_string(),
            )],
            &record.block[..],
        ),
        _ => return Ok((Outcome::Skipped("not_a_capture"), quirks)),
    };
    if !(200..300).contains(&status) {
        return Ok((Outcome::Skipped("not_2xx"), quirks));
    }
    let header = |name: &str| {
        headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    };
    let content_type = header("Content-Type");
    let mime = mime_of(content_type);
    let html_mime = matches!(mime.as_str(), "text/html" | "application/xhtml+xml");
    let unknown_mime =
        matches!(mime.as_str(), "" | "application/octet-stream" | "unk" | "unknown" | "no-type");
    // Cheap check before any decoding: skip what is declared as something else.
    if !html_mime && !unknown_mime {
        return Ok((Outcome::Skipped("not_html"), quirks));
    }
    // A body decoded here (chunking, content encoding) is the page's own; otherwise the page
    // borrows the record's block.
    let payload = decoded_payload(body, &header, max_page_bytes, &mut quirks)?;
    if !html_mime && !sniff_html(payload.as_deref().unwrap_or(body)) {
        return Ok((Outcome::Skipped("not_html"), quirks));
    }
    let declared = charset_param(content_type);
    let (html, charset) =
        page_text(body, payload, declared.as_deref(), max_page_bytes, &mut quirks);
    let date_secs = match parse_warc_date(&date) {
        Some(s) => s,
        None => {
            quirks.missing_date = true;
            0
        }
    };
    let record_id = record.header("WARC-Record-ID").unwrap_or("").to_string();
    let host = host_of(&url);
    let links: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("Link"))
        .map(|(_, v)| v.as_str())
        .collect();
    let link = (!links.is_empty()).then(|| links.join(", "));
    let page = Document { url, host, date, date_secs, record_id, html, charset, link };
    Ok((Outcome::Page(page), quirks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunks_and_detects_broken_chunking() {
        assert_eq!(dechunk(b"4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n").unwrap(), b"Wikipedia");
        assert_eq!(dechunk(b"4;ext=1\r\nWiki\r\n0\r\n\r\n").unwrap(), b"Wiki");
        assert!(dechunk(b"<html>not chunked</html>").is_none());
    }

    #[test]
    fn finds_meta_charsets() {
        assert_eq!(meta_charset(b"<head><meta charset=\"euc-jp\">").as_deref(), Some("euc-jp"));
        assert_eq!(
            meta_charset(
                b"<META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=windows-1251\">"
            )
            .as_deref(),
            Some("windows-1251")
        );
        assert_eq!(meta_charset(b"<meta name=x>"), None);
    }

    #[test]
    fn decodes_by_header_meta_bom_then_utf8() {
        let latin1 = b"caf\xe9";
        assert_eq!(decode_text(latin1, Some("iso-8859-1")).0, "café");
        let meta = b"<meta charset=windows-1251>\xcf\xf0\xe8\xe2\xe5\xf2";
        assert!(decode_text(meta, None).0.ends_with("Привет"));
        let bom = b"\xef\xbb\xbfhi";
        let (text, charset) = decode_text(bom, None);
        assert_eq!((text.as_ref(), charset), ("hi", "UTF-8"));
        assert!(matches!(text, Cow::Borrowed(_)), "a UTF-8 body after its BOM is borrowed");
        assert_eq!(decode_text(b"a\xffb", None).0, "a\u{fffd}b");
        assert!(matches!(decode_text(b"<p>ok</p>", None).0, Cow::Borrowed("<p>ok</p>")));
        assert!(matches!(decode_text(latin1, Some("iso-8859-1")).0, Cow::Owned(_)));
    }

    fn response(headers: &str, body: &[u8]) -> RawRecord {
        let mut block = format!("HTTP/1.1 200 OK\r\n{headers}\r\n").into_bytes();
        block.extend_from_slice(body);
        RawRecord {
            version: "WARC/1.0".into(),
            headers: vec![
                ("WARC-Type".into(), "response".into()),
                ("WARC-Target-URI".into(), "http://example.com/a".into()),
                ("WARC-Date".into(), "2014-03-25T12:12:25Z".into()),
            ],
            block,
            offset: 0,
            lenient_length: false,
            raw_header: None,
        }
    }

    /// A UTF-8 page borrows the record's block (no copy), also when cut to the page cap; a
    /// dechunked or another charset's page is its own, cut the same way.
    #[test]
    fn pages_borrow_the_block_and_are_cut_at_characters() {
        let html = "<p>caf\u{e9} \u{e9}t\u{e9}</p>";
        let record = response("Content-Type: text/html\r\n", html.as_bytes());
        let (Outcome::Page(doc), quirks) = interpret(&record, 1 << 20).unwrap() else {
            panic!("a page")
        };
        assert!(matches!(doc.html, Cow::Borrowed(h) if h == html));
        assert!(!quirks.page_truncated);
        // A cap of 7 bytes ends inside the first `é` (bytes 6 and 7): the cut is before it.
        let (Outcome::Page(doc), quirks) = interpret(&record, 7).unwrap() else { panic!("a page") };
        assert!(matches!(doc.html, Cow::Borrowed("<p>caf")), "{:?}", doc.html);
        assert!(quirks.page_truncated);
        let chunked = response(
            "Content-Type: text/html\r\nTransfer-Encoding: chunked\r\n",
            b"5\r\n<p>ca\r\n4\r\nf</p\r\n1\r\n>\r\n0\r\n\r\n",
        );
        let (Outcome::Page(doc), _) = interpret(&chunked, 1 << 20).unwrap() else {
            panic!("a page")
        };
        assert!(matches!(doc.html, Cow::Owned(ref h) if h == "<p>caf</p>"), "{:?}", doc.html);
        let (Outcome::Page(doc), quirks) = interpret(&chunked, 5).unwrap() else {
            panic!("a page")
        };
        assert_eq!((doc.html.as_ref(), quirks.page_truncated), ("<p>ca", true));
        // A decoded body's BOM is left out of its page too.
        let bom = response(
            "Content-Type: text/html\r\nTransfer-Encoding: chunked\r\n",
            b"6\r\n\xef\xbb\xbf<p>\r\n4\r\nx</p\r\n1\r\n>\r\n0\r\n\r\n",
        );
        let (Outcome::Page(doc), _) = interpret(&bom, 1 << 20).unwrap() else { panic!("a page") };
        assert_eq!((doc.html.as_ref(), doc.charset), ("<p>x</p>", "UTF-8"));
        let latin1 = response("Content-Type: text/html; charset=iso-8859-1\r\n", b"<p>caf\xe9</p>");
        let (Outcome::Page(doc), _) = interpret(&latin1, 1 << 20).unwrap() else {
            panic!("a page")
        };
        assert!(matches!(doc.html, Cow::Owned(ref h) if h == "<p>caf\u{e9}</p>"));
    }

    #[test]
    fn parses_dates_and_hosts() {
        assert_eq!(parse_warc_date("1970-01-02T00:00:00Z"), Some(86_400));
        assert_eq!(parse_warc_date("2014-03-25T12:12:25Z"), Some(1_395_749_545));
        assert_eq!(parse_warc_date("2008-10-294T05:21:46-0700"), None);
        for date in ["1970-01-01T00:00:00Z", "2000-02-29T23:59:59Z", "2014-03-25T12:12:25Z"] {
            assert_eq!(format_warc_date(parse_warc_date(date).unwrap()), date);
        }
        assert_eq!(host_of("http://User@Example.COM:8080/a?b"), "example.com");
        assert_eq!(host_of("https://[::1]:80/"), "[::1]");
    }

    #[test]
    fn status_line_without_reason_phrase() {
        let r = parse_http(b"HTTP/1.1 200\r\nContent-Type: text/html\r\n\r\n<html>").unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"<html>");
    }
}
