//! HTML strip: a page's visible text as an ordered list of blocks, plus its title.
//!
//! Only visible text is kept (no `script`, `style`, `noscript`, `template`, `svg`, `head`, …).
//! Block-level elements end a text block, so text of adjacent blocks never runs together; in
//! `pre`, every line is a block (code lines are the "sentences" of code). Entities are decoded
//! by the HTML parser; white space is collapsed. Block order is document order: later stages
//! rely on it (site templates sit at the head and tail of pages).
//!
//! Where the markup says which part of the page is its main content, the rest is left out:
//! HTML's landmarks and their ARIA roles. With a `<main>` (or `role="main"`), only what is inside
//! it; never navigation (`<nav>`, `role="navigation"` or `"search"`), the page's banner and
//! footer (`role="banner"`, `"contentinfo"`, and `<header>`, `<footer>`, `<aside>` or
//! `role="complementary"` outside an article, a section or the main content, where they would
//! be that part's own). A page whose text is all chrome keeps it. Pages without landmarks keep
//! everything, and the template stage tells their chrome by how often it repeats.
//!
//! Most pages are read by a byte scanner that replays the tree builder's stack (`scan`); the
//! others, where the tree builder moves or clones nodes, by html5ever (scraper). Both feed the
//! same extraction (`Extraction`) and give the same text.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use ego_tree::iter::Edge;
use scraper::{Html, Node};
use timely::progress::Timestamp;

use crate::ingest::page::PageMeta;

mod names;
mod scan;

use names::Flags;

/// The visible text of a page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrippedPage {
    pub title: String,
    pub blocks: Vec<String>,
    /// The `lang` attribute of the `<html>` element, if any.
    pub lang: Option<String>,
    /// The markup marked the page's main content (`<main>`, `role="main"`) and `blocks` are
    /// it: no navigation, banner or footer is left at their edges.
    pub main_marked: bool,
}

/// Where a block lies among the page's landmarks (see [`Landmarks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Region {
    /// Inside the main content (`<main>`, `role="main"`).
    main: bool,
    /// Inside the page's chrome: navigation, its banner, its footer, a complementary sidebar.
    chrome: bool,
}

/// The landmarks open at a point of the document (HTML's sectioning elements and ARIA roles):
/// each open element's effect, undone when it closes.
#[derive(Default)]
struct Landmarks {
    main: usize,
    chrome: usize,
    /// `article`, `section`, `aside`, `nav`: a `header` or `footer` inside one belongs to it,
    /// not to the page.
    sectioning: usize,
    /// What each open visible element added: bit 0 main, bit 1 chrome, bit 2 sectioning.
    open: Vec<u8>,
}

impl Landmarks {
    /// An element opens, with its name's `flags` (`names::flags`) and its `role`.
    fn enter(&mut self, flags: Flags, role: Option<&str>) {
        let role =
            role.and_then(|r| r.split_ascii_whitespace().next()).map(str::to_ascii_lowercase);
        let role = role.as_deref();
        let scoped = self.main > 0 || self.sectioning > 0;
        let main = flags & names::MAIN != 0 || role == Some("main");
        let chrome = matches!(role, Some("navigation" | "search" | "banner" | "contentinfo"))
            || flags & names::NAV != 0
            || (!scoped && (flags & names::PAGE_CHROME != 0 || role == Some("complementary")));
        let sectioning = flags & names::SECTIONING != 0;
        let bits = u8::from(main) | u8::from(chrome) << 1 | u8::from(sectioning) << 2;
        self.main += usize::from(main);
        self.chrome += usize::from(chrome);
        self.sectioning += usize::from(sectioning);
        self.open.push(bits);
    }

    fn leave(&mut self) {
        let bits = self.open.pop().unwrap_or(0);
        self.main -= usize::from(bits & 1 != 0);
        self.chrome -= usize::from(bits & 2 != 0);
        self.sectioning -= usize::from(bits & 4 != 0);
    }

    fn region(&self) -> Region {
        Region { main: self.main > 0, chrome: self.chrome > 0 }
    }
}

#[derive(Default)]
struct BlockBuilder {
    blocks: Vec<String>,
    /// Each block's region, parallel to `blocks`.
    regions: Vec<Region>,
    current: String,
    /// The region of the current block's first text.
    region: Region,
    pending_space: bool,
}

/// `char::is_whitespace` of each ASCII byte: tab, line feed, vertical tab, form feed,
/// carriage return and space.
const ASCII_WHITE: [bool; 128] = {
    let mut white = [false; 128];
    let mut b = 0;
    while b < 128 {
        white[b] = matches!(b as u8, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ');
        b += 1;
    }
    white
};

impl BlockBuilder {
    fn push_text(&mut self, text: &str, region: Region) {
        let bytes = text.as_bytes();
        // Printable ASCII whose only white space is single spaces between words (a short
        // text between two tags, mostly) is copied whole: the walk below would copy the same.
        if let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) {
            let mut space = false;
            if first != b' '
                && last != b' '
                && bytes.iter().all(|&b| {
                    let simple = (0x20..0x80).contains(&b) && !(space && b == b' ');
                    space = b == b' ';
                    simple
                })
            {
                self.push_run(text, region);
                return;
            }
        }
        // Runs of text between white space characters (`char::is_whitespace`), each copied
        // whole; an ASCII byte is told without decoding a character.
        let white = |at: usize| -> (bool, usize) {
            match bytes[at] {
                b if b < 0x80 => (ASCII_WHITE[b as usize], 1),
                _ => {
                    let c = text[at..].chars().next().expect("a character starts here");
                    (c.is_whitespace(), c.len_utf8())
                }
            }
        };
        let mut at = 0;
        while at < bytes.len() {
            let run = at;
            while at < bytes.len() {
                let (is_white, len) = white(at);
                if is_white {
                    break;
                }
                at += len;
            }
            if at > run {
                self.push_run(&text[run..at], region);
            }
            let space = at;
            while at < bytes.len() {
                let (is_white, len) = white(at);
                if !is_white {
                    break;
                }
                at += len;
            }
            if at > space {
                self.pending_space = !self.current.is_empty();
            }
        }
    }

    /// Appends a run of text without white space (not empty) to the block, after the space a
    /// white space before it left pending; the block's region is its first run's.
    fn push_run(&mut self, run: &str, region: Region) {
        if self.current.is_empty() {
            self.region = region;
        }
        if self.pending_space {
            self.current.push(' ');
            self.pending_space = false;
        }
        self.current.push_str(run);
    }

    /// `push_text` as it was written first, by `str::split`: what the tests hold it to.
    #[cfg(test)]
    fn push_text_by_split(&mut self, text: &str, region: Region) {
        for (i, run) in text.split(char::is_whitespace).enumerate() {
            if i > 0 {
                self.pending_space = !self.current.is_empty();
            }
            if !run.is_empty() {
                self.push_run(run, region);
            }
        }
    }

    fn end_block(&mut self) {
        if !self.current.is_empty() {
            // A copy of its exact size: `current` keeps its capacity for the next block,
            // instead of growing again from nothing.
            self.blocks.push(self.current.clone());
            self.current.clear();
            self.regions.push(self.region);
        }
        self.pending_space = false;
    }

    /// The page's main content: the blocks inside its main landmark when it has one, and never
    /// its chrome; every block when that leaves nothing (a page that is all navigation). True
    /// with them when a main landmark gave them.
    fn main_content(self) -> (Vec<String>, bool) {
        let has_main = self.regions.iter().any(|r| r.main);
        let content = |r: &Region| !r.chrome && (r.main || !has_main);
        if !self.regions.iter().any(content) {
            return (self.blocks, false);
        }
        (
            self.blocks
                .into_iter()
                .zip(&self.regions)
                .filter(|(_, r)| content(r))
                .map(|(b, _)| b)
                .collect(),
            has_main,
        )
    }
}

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
static RAW_TEXT_STARTS: std::sync::LazyLock<Option<aho_corasick::packed::Searcher>> =
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
fn drop_raw_text_elements_with<'h>(
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
const MAX_NAME_LOOKED_FOR: usize = 9;

/// Elements whose content the tokenizer reads as text up to their end tag (RCDATA, RAWTEXT;
/// `script` and `style` when [`drop_raw_text_elements`] left them, unterminated). The slimming
/// pass copies their content verbatim.
const VERBATIM_ELEMENTS: [&[u8]; 9] = [
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
const KEEP_ATTRIBUTES: [&[u8]; 4] = [b"html", b"input", b"isindex", b"template"];

/// Phrasing elements the extraction reads nothing from (not blocks, not hidden, no landmark
/// unless a `role` says so): inside the body, [`slim_tags`] drops their tags whole. They are
/// most of the tags of generated documentation (links and highlighted code: 60% of doxygen's
/// tags are `span` and `a`), and each cost the tokenizer a tag and the tree builder a node.
/// None of them changes the tree builder's mode or the frameset flag; the formatting elements
/// among them (`a`, `b`, `code`, …) are moved and cloned by the tree builder, never their text.
const PHRASING: [&[u8]; 31] = [
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

/// Whether a tag's attribute bytes hold `name` (lowercase ASCII), in any case: `role` (a
/// landmark may be among them), `lang`.
fn mentions(attributes: &[u8], name: &[u8]) -> bool {
    let (lower, upper) = (name[0], name[0].to_ascii_uppercase());
    memchr::memchr2_iter(lower, upper, attributes)
        .any(|at| attributes.get(at..at + name.len()).is_some_and(|w| w.eq_ignore_ascii_case(name)))
}

fn is_tag_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// Where a tag's attributes end, following the tokenizer's attribute states from `at` (just past
/// the tag name): the index of its closing `>` and whether a `/` came right before it, or `None`
/// at the end of input (the tokenizer then drops the tag).
fn tag_end(bytes: &[u8], at: usize) -> Option<(usize, bool)> {
    tag_end_and_names(bytes, at).map(|(gt, self_closing, _)| (gt, self_closing))
}

/// [`tag_end`], and whether the name of an attribute begins with `r` or `R` (the tokenizer's
/// names, as its states tell them from values): without one the tag has no `role`, and the
/// byte scanner does not look for it (`scan::role`).
fn tag_end_and_names(bytes: &[u8], mut at: usize) -> Option<(usize, bool, bool)> {
    // The attribute states of the HTML tokenizer that matter for where a tag ends.
    #[derive(Clone, Copy)]
    enum State {
        BeforeName,
        Name,
        AfterName,
        BeforeValue,
        Quoted(u8),
        AfterQuoted,
        Unquoted,
        SelfClosing,
    }
    let mut state = State::BeforeName;
    let mut named_r = false;
    while at < bytes.len() {
        let b = bytes[at];
        state = match (state, b) {
            (State::BeforeName | State::AfterName | State::AfterQuoted, b'/') => State::SelfClosing,
            (State::Name, b'/') => State::SelfClosing,
            (State::SelfClosing, b'>') => return Some((at, true, named_r)),
            (State::SelfClosing, _) => {
                state = State::BeforeName;
                continue;
            }
            (
                State::BeforeName
                | State::Name
                | State::AfterName
                | State::BeforeValue
                | State::AfterQuoted
                | State::Unquoted,
                b'>',
            ) => return Some((at, false, named_r)),
            (State::BeforeName | State::AfterQuoted | State::Unquoted, b) if is_tag_space(b) => {
                State::BeforeName
            }
            (State::Name | State::AfterName, b) if is_tag_space(b) => State::AfterName,
            (State::BeforeValue, b) if is_tag_space(b) => State::BeforeValue,
            (State::Name | State::AfterName, b'=') => State::BeforeValue,
            (State::BeforeName | State::AfterName, _) => {
                // The only way into a name: its first byte.
                named_r |= b | 0x20 == b'r';
                State::Name
            }
            (State::AfterQuoted, _) => {
                state = State::BeforeName;
                continue;
            }
            (State::Name, _) => State::Name,
            (State::BeforeValue, b'"' | b'\'') => State::Quoted(b),
            (State::BeforeValue | State::Unquoted, _) => State::Unquoted,
            (State::Quoted(q), _) => {
                // A quoted value runs to its closing quote, whatever it holds.
                at += memchr::memchr(q, &bytes[at..])?;
                State::AfterQuoted
            }
        };
        at += 1;
    }
    None
}

/// Index just past the first `-->` or `--!>` at or after `from`: where a comment ends.
fn comment_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(found) = memchr::memmem::find(&bytes[at..], b"--") {
        let dashes = at + found;
        match bytes.get(dashes + 2..) {
            Some([b'>', ..]) => return Some(dashes + 3),
            Some([b'!', b'>', ..]) => return Some(dashes + 4),
            _ => at = dashes + 1,
        }
    }
    None
}

/// Index just past the appropriate end tag `</name` (followed by white space, `/` or `>`) at or
/// after `from`, through its `>`, as the tokenizer finds it in raw text.
fn verbatim_end(bytes: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut at = from;
    while let Some(found) = memchr::memchr(b'<', &bytes[at..]) {
        let open = at + found;
        let end = open + 2 + name.len();
        if end < bytes.len()
            && bytes[open + 1] == b'/'
            && bytes[open + 2..end].eq_ignore_ascii_case(name)
            && (is_tag_space(bytes[end]) || matches!(bytes[end], b'/' | b'>'))
        {
            return tag_end(bytes, end).map(|(gt, _)| gt + 1);
        }
        at = open + 1;
    }
    None
}

/// Rewrites markup the text extraction never reads, keeping the token stream the tree builder
/// sees: attributes are dropped from every tag but those in `KEEP_ATTRIBUTES`. The HTML tokenizer walks attributes character by character, and they are half
/// the bytes of generated documentation (class names, links, titles). In the body, a
/// `PHRASING` element with only text (and such elements) inside loses its two tags: links
/// and highlighted code, most of the tags of generated documentation. Text, tag names, their
/// order and self-closing flags are unchanged, and so is the content of raw-text elements
/// (`title`, `textarea`, unterminated `script`, …), copied verbatim, as are comments, doctypes
/// and processing instructions. Where the tokenizer's state depends on the tree (foreign content,
/// framesets, raw-text elements inside a `select`, CDATA sections), the rest of the page is
/// left as it is.
pub fn slim_tags(html: &str) -> std::borrow::Cow<'_, str> {
    let bytes = html.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    // Inside a `select` (as far as its start and end tags tell), where most elements are ignored.
    let mut in_select = false;
    // Past the body's start tag: phrasing tags are dropped from there on (in the head, one
    // would start the body early).
    let mut in_body = false;
    // Open `template`s (a `body` tag inside one is ignored by the tree builder).
    let mut templates = 0usize;
    let mut pairs = PhrasingPairs::default();
    while let Some(found) = memchr::memchr(b'<', &bytes[at..]) {
        let open = at + found;
        let next = bytes.get(open + 1).copied().unwrap_or(0);
        if next == b'!'
            || next == b'?'
            || next == b'/' && !bytes.get(open + 2).is_some_and(u8::is_ascii_alphabetic)
        {
            pairs.keep_open();
        }
        if next == b'!' {
            if bytes[open..].starts_with(b"<!--") {
                let body = open + 4;
                let end = if bytes[body..].starts_with(b">") {
                    Some(body + 1)
                } else if bytes[body..].starts_with(b"->") {
                    Some(body + 2)
                } else {
                    comment_end(bytes, body)
                };
                // Comments stay: dropping one could join what is around it (`<` and `p>`, `&am`
                // and `p;`). An unterminated comment runs to the end.
                let Some(end) = end else { break };
                at = end;
            } else if bytes[open..].starts_with(b"<![CDATA[") {
                // A CDATA section in foreign content, a comment to the first `>` elsewhere.
                break;
            } else {
                let Some(gt) = memchr::memchr(b'>', &bytes[open..]) else { break };
                at = open + gt + 1;
            }
            continue;
        }
        if next == b'?' {
            let Some(gt) = memchr::memchr(b'>', &bytes[open..]) else { break };
            at = open + gt + 1;
            continue;
        }
        let closing = next == b'/';
        let name_at = open + 1 + usize::from(closing);
        if !bytes.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            if closing {
                // `</>` is dropped by the tokenizer and `</ …>` is a comment up to the first `>`.
                let Some(gt) = memchr::memchr(b'>', &bytes[open..]) else { break };
                at = open + gt + 1;
            } else {
                at = open + 1;
            }
            continue;
        }
        let name_end = name_at
            + bytes[name_at..]
                .iter()
                .position(|&b| is_tag_space(b) || b == b'/' || b == b'>')
                .unwrap_or(bytes.len() - name_at);
        let name = &bytes[name_at..name_end];
        let Some((gt, self_closing)) = tag_end(bytes, name_end) else { break };
        // The name lowercased once: every name the pass looks for is at most this long, so a
        // longer name is none of them (empty here, and no name looked for is empty).
        let mut lower = [0u8; MAX_NAME_LOOKED_FOR];
        let lower = match lower.get_mut(..name.len()) {
            Some(lower) => {
                lower.copy_from_slice(name);
                lower.make_ascii_lowercase();
                &*lower
            }
            None => &[],
        };
        let is = |other: &[u8]| lower == other;
        let raw = if closing { None } else { VERBATIM_ELEMENTS.iter().find(|raw| is(raw)) };
        if !closing {
            // Where the tree builder, not the tokenizer, decides what follows: foreign content
            // (`svg` left unterminated, `math`), framesets, `plaintext`, and raw-text elements
            // that a select ignores (all but `script` and `textarea`, which closes it). The
            // rest of the page is left as it is.
            let ignored_in_select =
                in_select && raw.is_some_and(|raw| !matches!(*raw, b"script" | b"textarea"));
            if is(b"svg") || is(b"math") || is(b"frameset") || is(b"plaintext") || ignored_in_select
            {
                break;
            }
            if is(b"select") {
                // A select inside a select closes it.
                in_select = !in_select;
            } else if is(b"textarea") || is(b"input") || is(b"keygen") {
                in_select = false;
            }
        } else if is(b"select") {
            in_select = false;
        }
        if is(b"template") {
            templates = if closing { templates.saturating_sub(1) } else { templates + 1 };
        }
        if !closing && is(b"body") && templates == 0 {
            in_body = true;
        }
        // Phrasing tags in the body: a start tag and its end tag with only text (and such
        // pairs) between them are dropped together, as if the element were not there.
        let a_like = is(b"a") || is(b"nobr");
        if in_body && PHRASING.iter().any(|phrasing| is(phrasing)) && !(a_like && pairs.a_kept) {
            if !closing && !mentions(&bytes[name_end..gt], b"role") {
                out.push_str(&html[copied..open]);
                let start = out.len();
                let safe = joins_safely(out.as_bytes(), "");
                out.push_str(&html[open..name_end]);
                out.push('>');
                copied = gt + 1;
                at = gt + 1;
                pairs.open.push(OpenPhrasing { name: name_at..name_end, start, safe, a_like });
                continue;
            }
            if closing {
                if let Some(top) = pairs.open.pop() {
                    let same = bytes[top.name.clone()].eq_ignore_ascii_case(name);
                    if same && top.safe && joins_safely(out.as_bytes(), &html[copied..open]) {
                        out.push_str(&html[copied..open]);
                        let end = top.start + 1 + top.name.len() + 1;
                        out.replace_range(top.start..end, "");
                        copied = gt + 1;
                        at = gt + 1;
                        continue;
                    }
                    pairs.open.push(top);
                }
            }
        }
        pairs.keep_open();
        if a_like && !closing {
            pairs.a_kept = true;
        }
        let minimal = gt == name_end || (self_closing && gt == name_end + 1);
        // A tag that may carry an ARIA `role` (a landmark: `role="main"`, `"navigation"`, …)
        // keeps its attributes as they are: the extraction reads it.
        let keep = !closing
            && (KEEP_ATTRIBUTES.iter().any(|keep| is(keep))
                || mentions(&bytes[name_end..gt], b"role"));
        if !minimal && !keep {
            if out.is_empty() {
                out.reserve(html.len() / 2);
            }
            out.push_str(&html[copied..name_end]);
            out.push_str(if self_closing { "/>" } else { ">" });
            copied = gt + 1;
        }
        at = gt + 1;
        if let Some(raw) = raw {
            let Some(end) = verbatim_end(bytes, at, raw) else { break };
            at = end;
        }
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(html);
    }
    out.push_str(&html[copied..]);
    std::borrow::Cow::Owned(out)
}

/// Parses an HTML document and returns its visible text blocks and title.
///
/// Raw-text elements are cut first ([`drop_raw_text_elements`]); then the byte scanner reads
/// the page, or, where it gives up, html5ever parses it after the markup the extraction never
/// reads is cut ([`slim_tags`]). [`strip_reference`] parses the page as it is, and gives the
/// same result.
pub fn strip(html: &str) -> StrippedPage {
    strip_with(html, true)
}

/// [`strip`], reading the main content where landmarks mark it (`landmarks`, the default) or
/// every block of the page.
pub fn strip_with(html: &str, landmarks: bool) -> StrippedPage {
    let html = drop_raw_text_elements(html);
    scan::strip(&html, landmarks).unwrap_or_else(|| parsed(&html, landmarks))
}

/// A page (its raw-text elements cut) parsed by html5ever, the markup the extraction never
/// reads cut first.
fn parsed(html: &str, landmarks: bool) -> StrippedPage {
    extract(&Html::parse_document(&slim_tags(html)), landmarks)
}

/// [`strip`] by the byte scanner alone (`scan`), `None` for a page it leaves to the parser:
/// what the tests compare with [`strip_reference`].
#[doc(hidden)]
pub fn strip_scanned(html: &str) -> Option<StrippedPage> {
    scan::strip(&drop_raw_text_elements(html), true)
}

/// [`strip`] by the parser alone, the scanner left out (the baseline the benchmarks time it
/// against).
#[doc(hidden)]
pub fn strip_parsed(html: &str) -> StrippedPage {
    parsed(&drop_raw_text_elements(html), true)
}

/// [`strip`] without [`slim_tags`]: the page parsed with its attributes and comments, the
/// reference the slimmed parse is tested against.
#[doc(hidden)]
pub fn strip_reference(html: &str) -> StrippedPage {
    extract(&Html::parse_document(&drop_raw_text_elements(html)), true)
}

fn extract(document: &Html, landmarks_read: bool) -> StrippedPage {
    let mut extraction = Extraction::default();
    let lang = document
        .root_element()
        .value()
        .attr("lang")
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty());
    for edge in document.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(element) => extraction.open(element.name(), element.attr("role")),
                Node::Text(text) => extraction.text(text),
                _ => {}
            },
            Edge::Close(node) => {
                if let Node::Element(element) = node.value() {
                    extraction.close(element.name());
                }
            }
        }
    }
    extraction.finish(lang, landmarks_read)
}

/// The text extraction, fed the document's elements and texts in tree order (an element's
/// opening, its content, its closing): from html5ever's tree ([`extract`]) or from the byte
/// scanner that replays the tree builder on pages it can follow exactly (`scan`).
#[derive(Default)]
struct Extraction {
    builder: BlockBuilder,
    landmarks: Landmarks,
    title: String,
    hidden_depth: usize,
    pre_depth: usize,
    title_depth: usize,
}

impl Extraction {
    fn open(&mut self, name: &str, role: Option<&str>) {
        self.open_flagged(names::flags(name), role);
    }

    /// [`Extraction::open`] with the name's flags (`names::flags`), for a caller that has them.
    fn open_flagged(&mut self, flags: Flags, role: Option<&str>) {
        if flags & names::TITLE != 0 {
            self.title_depth += 1;
        }
        if self.hidden_depth > 0 || flags & names::HIDDEN != 0 {
            self.hidden_depth += 1;
        } else {
            self.landmarks.enter(flags, role);
            if flags & names::BLOCK != 0 {
                self.builder.end_block();
                if flags & names::PRE != 0 {
                    self.pre_depth += 1;
                }
            }
        }
    }

    fn text(&mut self, text: &str) {
        if self.title_depth > 0 {
            self.title.push_str(text);
        }
        if self.hidden_depth == 0 {
            let region = self.landmarks.region();
            if self.pre_depth > 0 {
                let mut lines = text.split('\n');
                if let Some(first) = lines.next() {
                    self.builder.push_text(first, region);
                }
                for line in lines {
                    self.builder.end_block();
                    self.builder.push_text(line, region);
                }
            } else {
                self.builder.push_text(text, region);
            }
        }
    }

    fn close(&mut self, name: &str) {
        self.close_flagged(names::flags(name));
    }

    /// [`Extraction::close`] with the name's flags (`names::flags`).
    fn close_flagged(&mut self, flags: Flags) {
        if flags & names::TITLE != 0 {
            self.title_depth = self.title_depth.saturating_sub(1);
        }
        if self.hidden_depth > 0 {
            self.hidden_depth -= 1;
        } else {
            if flags & names::BLOCK != 0 {
                self.builder.end_block();
                if flags & names::PRE != 0 {
                    self.pre_depth = self.pre_depth.saturating_sub(1);
                }
            }
            self.landmarks.leave();
        }
    }

    fn finish(mut self, lang: Option<String>, landmarks_read: bool) -> StrippedPage {
        self.builder.end_block();
        let title = self.title.split_whitespace().collect::<Vec<_>>().join(" ");
        let (blocks, main_marked) =
            if landmarks_read { self.builder.main_content() } else { (self.builder.blocks, false) };
        StrippedPage { title, blocks, lang, main_marked }
    }
}

/// The HTML strip operator.
pub trait StripHtml<'scope, T: Timestamp + Lattice> {
    /// Replaces each document's HTML by its visible text blocks.
    ///
    /// # Examples
    /// ```
    /// use differential_dataflow::input::Input;
    /// use dupflow_operators::ingest::html::StripHtml;
    /// use dupflow_operators::{PageId, PageMeta};
    /// timely::example(|scope| {
    ///     let meta = PageMeta { id: PageId::default(), url: "u".into(), host: 0, record_id: "r".into() };
    ///     scope.new_collection_from(vec![(meta, "<p>a</p><p>b</p>".to_string())]).1
    ///          .strip_html()
    ///          .inspect(|x| assert_eq!((x.0).1, vec!["a".to_string(), "b".to_string()]));
    /// });
    /// ```
    fn strip_html(self) -> VecCollection<'scope, T, (PageMeta, Vec<String>), isize>;

    /// The same, calling `on_page` with the time each page took (for metrics).
    fn strip_html_timed<F: FnMut(std::time::Duration) + 'static>(
        self,
        on_page: F,
    ) -> VecCollection<'scope, T, (PageMeta, Vec<String>), isize>;
}

impl<'scope, T: Timestamp + Lattice> StripHtml<'scope, T>
    for VecCollection<'scope, T, (PageMeta, String), isize>
{
    fn strip_html(self) -> VecCollection<'scope, T, (PageMeta, Vec<String>), isize> {
        self.strip_html_timed(|_| {})
    }

    fn strip_html_timed<F: FnMut(std::time::Duration) + 'static>(
        self,
        mut on_page: F,
    ) -> VecCollection<'scope, T, (PageMeta, Vec<String>), isize> {
        self.map(move |(meta, html)| {
            let started = std::time::Instant::now();
            let blocks = strip(&html).blocks;
            on_page(started.elapsed());
            (meta, blocks)
        })
    }
}

#[cfg(test)]
mod tests;
