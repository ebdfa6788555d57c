//! What is cut from a page before it is parsed: raw-text elements (`drop_raw_text_elements`)
//! and, for the parser, the markup the extraction never reads (`slim_tags`).

use std::borrow::Cow;
use std::ops::Range;

use super::tags::{comment_end, is_tag_space, mentions, tag_end, verbatim_end};

/// Elements whose content is raw text that is never visible: cut out before parsing, since
/// they are half the bytes of a typical page and the tokenizer walks them char by char.
const RAW_TEXT_ELEMENTS: [&[u8]; 3] = [b"script", b"style", b"svg"];
const _: () = {
    // `drop_raw_text_elements` passes over a tag whose name does not begin with `s`.
    let mut i = 0;
    while i < RAW_TEXT_ELEMENTS.len() {
        assert!(RAW_TEXT_ELEMENTS[i][0] == b's');
        i += 1;
    }
};

/// Where a raw-text element's start tag may begin: `<` and the first two letters of one of
/// [`RAW_TEXT_ELEMENTS`] in either case (`<sc`, `<St`, `<sV`, …), found together by a SIMD
/// multi-pattern search (Teddy). Generated documentation has a tag every few tens of bytes,
/// most of them `<span>` and `<a>`, so a search for `<` alone stops at every one of them.
/// `None` where the CPU has no packed search: each `<` is then looked at.
pub(super) static RAW_TEXT_STARTS: std::sync::LazyLock<Option<aho_corasick::packed::Searcher>> =
    std::sync::LazyLock::new(|| {
        let mut prefixes: Vec<[u8; 3]> = Vec::new();
        for name in RAW_TEXT_ELEMENTS {
            for first in [name[0], name[0].to_ascii_uppercase()] {
                for second in [name[1], name[1].to_ascii_uppercase()] {
                    if !prefixes.contains(&[b'<', first, second]) {
                        prefixes.push([b'<', first, second]);
                    }
                }
            }
        }
        aho_corasick::packed::Searcher::new(prefixes)
    });

/// The next `<` at or after `at` that may open a raw-text element (see [`RAW_TEXT_STARTS`]);
/// every `<` when the packed search is not there (`packed` `None`).
fn next_raw_text_start(
    bytes: &[u8],
    at: usize,
    packed: Option<&aho_corasick::packed::Searcher>,
) -> Option<usize> {
    match packed {
        Some(searcher) => searcher
            .find_in(bytes, aho_corasick::Span::from(at..bytes.len()))
            .map(|found| found.start()),
        None => memchr::memchr(b'<', &bytes[at..]).map(|found| at + found),
    }
}

/// Removes `<script>`, `<style>` and `<svg>` elements (start tag to end tag) from the raw
/// HTML. An element without an end tag is left for the parser.
pub fn drop_raw_text_elements(html: &str) -> std::borrow::Cow<'_, str> {
    drop_raw_text_elements_with(html, RAW_TEXT_STARTS.as_ref())
}

/// [`drop_raw_text_elements`] with the packed search given (`None`: every `<` looked at), so
/// that the tests hold both ways to the same result.
pub(super) fn drop_raw_text_elements_with<'h>(
    html: &'h str,
    packed: Option<&aho_corasick::packed::Searcher>,
) -> std::borrow::Cow<'h, str> {
    let bytes = html.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(open) = next_raw_text_start(bytes, at, packed) {
        // Each of them begins with `s`: where every `<` is looked at (no packed search), most
        // tags are passed over on one byte.
        if bytes.get(open + 1).is_none_or(|&b| (b | 0x20) != b's') {
            at = open + 1;
            continue;
        }
        let name = RAW_TEXT_ELEMENTS.iter().find(|name| {
            let end = open + 1 + name.len();
            end < bytes.len()
                && bytes[open + 1..end].eq_ignore_ascii_case(name)
                && matches!(bytes[end], b' ' | b'>' | b'/' | b'\t' | b'\n' | b'\r' | b'\x0c')
        });
        let Some(name) = name else {
            at = open + 1;
            continue;
        };
        let Some(close) = find_end_tag(bytes, open + 1 + name.len(), name) else { break };
        if out.is_empty() {
            out.reserve(html.len() - (close - open));
        }
        out.push_str(&html[copied..open]);
        copied = close;
        at = close;
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(html);
    }
    out.push_str(&html[copied..]);
    std::borrow::Cow::Owned(out)
}

/// Index just past `</name ...>` at or after `from`, case-insensitively.
fn find_end_tag(bytes: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut at = from;
    while let Some(found) = memchr::memchr(b'<', &bytes[at..]) {
        let open = at + found;
        let end = open + 2 + name.len();
        if end <= bytes.len()
            && bytes[open + 1] == b'/'
            && bytes[open + 2..end].eq_ignore_ascii_case(name)
        {
            return memchr::memchr(b'>', &bytes[end..]).map(|gt| end + gt + 1);
        }
        at = open + 1;
    }
    None
}

/// The longest tag name [`slim_tags`] compares a tag's name with (`plaintext`; tested).
pub(super) const MAX_NAME_LOOKED_FOR: usize = 9;

/// Elements whose content the tokenizer reads as text up to their end tag (RCDATA, RAWTEXT;
/// `script` and `style` when [`drop_raw_text_elements`] left them, unterminated). The slimming
/// pass copies their content verbatim.
pub(super) const VERBATIM_ELEMENTS: [&[u8]; 9] = [
    b"script",
    b"style",
    b"title",
    b"textarea",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
    b"noscript",
];

/// Start tags whose attributes are kept: `html` (its `lang` is read) and those whose attributes
/// the tree builder reads (`<input type=hidden>` stays in a table, others are moved before it;
/// `isindex` prompts; declarative shadow roots).
pub(super) const KEEP_ATTRIBUTES: [&[u8]; 4] = [b"html", b"input", b"isindex", b"template"];

/// Phrasing elements the extraction reads nothing from (not blocks, not hidden, no landmark
/// unless a `role` says so): inside the body, [`slim_tags`] drops their tags whole. They are
/// most of the tags of generated documentation (links and highlighted code: 60% of doxygen's
/// tags are `span` and `a`), and each cost the tokenizer a tag and the tree builder a node.
/// None of them changes the tree builder's mode or the frameset flag; the formatting elements
/// among them (`a`, `b`, `code`, …) are moved and cloned by the tree builder, never their text.
pub(super) const PHRASING: [&[u8]; 31] = [
    b"span", b"a", b"b", b"i", b"em", b"strong", b"code", b"tt", b"small", b"big", b"u", b"s",
    b"strike", b"font", b"nobr", b"abbr", b"cite", b"dfn", b"kbd", b"samp", b"var", b"mark", b"q",
    b"sub", b"sup", b"time", b"data", b"bdi", b"bdo", b"ins", b"del",
];

/// A phrasing start tag written to the slimmed page, dropped with its end tag if only text and
/// such pairs come between them.
struct OpenPhrasing {
    /// Its name, in the page.
    name: std::ops::Range<usize>,
    /// Where its `<name>` starts in the slimmed page.
    start: usize,
    /// Whether the text before it may join the text after it.
    safe: bool,
    a_like: bool,
}

/// The phrasing start tags [`slim_tags`] may still drop, innermost last.
#[derive(Default)]
struct PhrasingPairs {
    open: Vec<OpenPhrasing>,
    /// An `a` or `nobr` start tag stays on the page: a later one would make the tree builder
    /// close it (the adoption agency), which it does not without that tag, so none is dropped.
    a_kept: bool,
}

impl PhrasingPairs {
    /// Something other than text or a phrasing tag: the open start tags stay.
    fn keep_open(&mut self) {
        self.a_kept |= self.open.iter().any(|o| o.a_like);
        self.open.clear();
    }
}

/// Whether a tag may be dropped after `kept` (what the slimmed page holds before it): not when
/// the two texts it separates would read as one thing the tokenizer treats differently, a
/// character reference (`&am` and `p;`), a tag (`<` and `p>`), or a CR LF pair.
fn joins_safely(kept: &[u8], copied: &str) -> bool {
    let mut before = copied.as_bytes().iter().rev().chain(kept.iter().rev()).copied();
    // A run of name characters (a reference's, at most 64 are looked at: the tag stays after
    // a longer run), and what comes before it.
    let mut run = 0;
    let first = loop {
        match before.next() {
            Some(_) if run == 64 => return false,
            Some(b) if b.is_ascii_alphanumeric() || b == b'#' => run += 1,
            other => break other,
        }
    };
    match first {
        Some(b'&' | b'<') => false,
        Some(b'\r') => run > 0,
        _ => true,
    }
}

/// Rewrites markup the text extraction never reads, keeping the token stream the tree builder
/// sees: attributes are dropped from every tag but those in `KEEP_ATTRIBUTES`. The HTML
/// tokenizer walks attributes character by character, and they are half the bytes of
/// generated documentation (class names, links, titles). In the body, a
/// `PHRASING` element with only text (and such elements) inside loses its two tags: links
/// and highlighted code, most of the tags of generated documentation. Text, tag names, their
/// order and self-closing flags are unchanged, and so is the content of raw-text elements
/// (`title`, `textarea`, unterminated `script`, …), copied verbatim, as are comments, doctypes
/// and processing instructions. Where the tokenizer's state depends on the tree (foreign content,
/// framesets, raw-text elements inside a `select`, CDATA sections), the rest of the page is
/// left as it is.
pub fn slim_tags(html: &str) -> Cow<'_, str> {
    let mut slim = Slimmer {
        html,
        bytes: html.as_bytes(),
        out: String::new(),
        copied: 0,
        at: 0,
        in_select: false,
        in_body: false,
        templates: 0,
        pairs: PhrasingPairs::default(),
    };
    while slim.step().is_some() {}
    if slim.copied == 0 {
        return Cow::Borrowed(html);
    }
    slim.out.push_str(&html[slim.copied..]);
    Cow::Owned(slim.out)
}

/// The slimming pass over one page.
struct Slimmer<'h> {
    html: &'h str,
    bytes: &'h [u8],
    /// The slimmed page up to `copied`, the position in `html` copied to.
    out: String,
    copied: usize,
    /// Where the pass reads next.
    at: usize,
    /// Inside a `select` (as far as its start and end tags tell), where most elements are
    /// ignored.
    in_select: bool,
    /// Past the body's start tag: phrasing tags are dropped from there on (in the head, one
    /// would start the body early).
    in_body: bool,
    /// Open `template`s (a `body` tag inside one is ignored by the tree builder).
    templates: usize,
    pairs: PhrasingPairs,
}

impl Slimmer<'_> {
    /// The next markup from `at`: `None` at the end of the page, or where the rest of the page
    /// is left as it is.
    fn step(&mut self) -> Option<()> {
        let bytes = self.bytes;
        let open = self.at + memchr::memchr(b'<', &bytes[self.at..])?;
        let next = bytes.get(open + 1).copied().unwrap_or(0);
        if next == b'!'
            || next == b'?'
            || next == b'/' && !bytes.get(open + 2).is_some_and(u8::is_ascii_alphabetic)
        {
            self.pairs.keep_open();
        }
        if next == b'!' || next == b'?' {
            self.at = declaration_end(bytes, open)?;
            return Some(());
        }
        let closing = next == b'/';
        let name_at = open + 1 + usize::from(closing);
        if !bytes.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            // `</>` is dropped by the tokenizer and `</ …>` is a comment up to the first `>`.
            self.at =
                if closing { open + memchr::memchr(b'>', &bytes[open..])? + 1 } else { open + 1 };
            return Some(());
        }
        self.tag(open, name_at, closing)
    }

    /// A start or end tag at `open`, its name at `name_at`.
    fn tag(&mut self, open: usize, name_at: usize, closing: bool) -> Option<()> {
        let (bytes, html) = (self.bytes, self.html);
        let name_end = name_at
            + bytes[name_at..]
                .iter()
                .position(|&b| is_tag_space(b) || b == b'/' || b == b'>')
                .unwrap_or(bytes.len() - name_at);
        let (gt, self_closing) = tag_end(bytes, name_end)?;
        // The name lowercased once: every name the pass looks for is at most this long, so a
        // longer name is none of them (empty here, and no name looked for is empty).
        let mut lower = [0u8; MAX_NAME_LOOKED_FOR];
        let lower = match lower.get_mut(..name_end - name_at) {
            Some(lower) => {
                lower.copy_from_slice(&bytes[name_at..name_end]);
                lower.make_ascii_lowercase();
                &*lower
            }
            None => &[],
        };
        let is = |other: &[u8]| lower == other;
        let raw = if closing { None } else { VERBATIM_ELEMENTS.iter().find(|raw| is(raw)) };
        self.follow_tree(is, closing, raw.copied())?;
        // Phrasing tags in the body: a start tag and its end tag with only text (and such
        // pairs) between them are dropped together, as if the element were not there.
        let a_like = is(b"a") || is(b"nobr");
        if self.in_body
            && PHRASING.iter().any(|phrasing| is(phrasing))
            && !(a_like && self.pairs.a_kept)
            && self.drop_phrasing(open, name_at..name_end, gt, closing, a_like)
        {
            self.at = gt + 1;
            return Some(());
        }
        self.pairs.keep_open();
        if a_like && !closing {
            self.pairs.a_kept = true;
        }
        let minimal = gt == name_end || (self_closing && gt == name_end + 1);
        // A tag that may carry an ARIA `role` (a landmark: `role="main"`, `"navigation"`, …)
        // keeps its attributes as they are: the extraction reads it.
        let keep = !closing
            && (KEEP_ATTRIBUTES.iter().any(|keep| is(keep))
                || mentions(&bytes[name_end..gt], b"role"));
        if !minimal && !keep {
            if self.out.is_empty() {
                self.out.reserve(html.len() / 2);
            }
            self.out.push_str(&html[self.copied..name_end]);
            self.out.push_str(if self_closing { "/>" } else { ">" });
            self.copied = gt + 1;
        }
        self.at = gt + 1;
        if let Some(raw) = raw {
            self.at = verbatim_end(bytes, self.at, raw)?;
        }
        Some(())
    }

    /// What the tree builder's state asks of a tag: inside a `select`, inside a `template`,
    /// past the body's start tag. `None` where the tree builder, not the tokenizer, decides
    /// what follows: foreign content (`svg` left unterminated, `math`), framesets,
    /// `plaintext`, and raw-text elements that a select ignores (all but `script` and
    /// `textarea`, which closes it).
    fn follow_tree(
        &mut self,
        is: impl Fn(&[u8]) -> bool,
        closing: bool,
        raw: Option<&[u8]>,
    ) -> Option<()> {
        if !closing {
            let ignored_in_select =
                self.in_select && raw.is_some_and(|raw| !matches!(raw, b"script" | b"textarea"));
            if is(b"svg") || is(b"math") || is(b"frameset") || is(b"plaintext") || ignored_in_select
            {
                return None;
            }
            if is(b"select") {
                // A select inside a select closes it.
                self.in_select = !self.in_select;
            } else if is(b"textarea") || is(b"input") || is(b"keygen") {
                self.in_select = false;
            }
        } else if is(b"select") {
            self.in_select = false;
        }
        if is(b"template") {
            self.templates =
                if closing { self.templates.saturating_sub(1) } else { self.templates + 1 };
        }
        if !closing && is(b"body") && self.templates == 0 {
            self.in_body = true;
        }
        Some(())
    }

    /// A phrasing tag in the body: a start tag is written bare (its end tag may drop both),
    /// an end tag is dropped with its start tag when only text and such pairs came between
    /// them. Whether the tag was written or dropped here.
    fn drop_phrasing(
        &mut self,
        open: usize,
        name: Range<usize>,
        gt: usize,
        closing: bool,
        a_like: bool,
    ) -> bool {
        let (bytes, html) = (self.bytes, self.html);
        if !closing {
            if mentions(&bytes[name.end..gt], b"role") {
                return false;
            }
            self.out.push_str(&html[self.copied..open]);
            let start = self.out.len();
            let safe = joins_safely(self.out.as_bytes(), "");
            self.out.push_str(&html[open..name.end]);
            self.out.push('>');
            self.copied = gt + 1;
            self.pairs.open.push(OpenPhrasing { name, start, safe, a_like });
            return true;
        }
        let Some(top) = self.pairs.open.pop() else { return false };
        let same = bytes[top.name.clone()].eq_ignore_ascii_case(&bytes[name]);
        if same && top.safe && joins_safely(self.out.as_bytes(), &html[self.copied..open]) {
            self.out.push_str(&html[self.copied..open]);
            let end = top.start + 1 + top.name.len() + 1;
            self.out.replace_range(top.start..end, "");
            self.copied = gt + 1;
            return true;
        }
        self.pairs.open.push(top);
        false
    }
}

/// The end of a comment, doctype, processing instruction or bogus comment opening at `open`;
/// `None` for a CDATA section (in foreign content; a comment to the first `>` elsewhere) and
/// for one the input cuts (an unterminated comment runs to the end). Comments stay: dropping
/// one could join what is around it (`<` and `p>`, `&am` and `p;`).
pub(super) fn declaration_end(bytes: &[u8], open: usize) -> Option<usize> {
    if bytes[open..].starts_with(b"<!--") {
        let body = open + 4;
        return if bytes[body..].starts_with(b">") {
            Some(body + 1)
        } else if bytes[body..].starts_with(b"->") {
            Some(body + 2)
        } else {
            comment_end(bytes, body)
        };
    }
    if bytes[open..].starts_with(b"<![CDATA[") {
        return None;
    }
    memchr::memchr(b'>', &bytes[open..]).map(|gt| open + gt + 1)
}
