//! The strip's fast path: a byte scanner that replays html5ever's tree builder on the pages it
//! can follow exactly, and gives up on the others (`None`), which the parser then reads.
//!
//! The extraction reads a document as a sequence of element openings, texts and closings in
//! tree order. Where the tree builder only pushes and pops its stack of open elements (the
//! elements of a well-formed page, and the end tags it implies: an open `p` closed by a block,
//! an `li` by the next, a cell by the next row, the `html`, `head`, `body` and `tbody` it
//! inserts), tree order is the order the scanner meets the tags in, and the scanner feeds the
//! extraction directly, with no tokenizer state machine run a character at a time and no tree.
//! It gives up wherever the tree builder would move, clone or reparent a node, or where its
//! rules are more than a stack's:
//!
//! - a formatting element (`a`, `b`, `code`, …) closed other than by its own end tag as the
//!   current node (the adoption agency and the reconstruction of formatting elements clone
//!   it), an `a` opened inside another with a special or formatting element between them
//!   (with only ordinary elements between, the outer one and they are closed, as the adoption
//!   agency does), a `nobr` inside another;
//! - text or elements that are not table parts directly in a table (foster parenting), and
//!   captions and column groups;
//! - a second `html` or `body` tag (their attributes merge), head elements after the head,
//!   a `template` holding raw text, comments, foreign content or another template (one
//!   without is skipped whole: its content is a hidden fragment), `frameset`, `select` and its
//!   options, ruby, `math`, `svg`, `plaintext`,
//!   `textarea`, `xmp`, `noembed`, `applet`, `marquee`, `object`, `image`, a nested `button`, a
//!   `form` closed out of order, a `title` in the body;
//! - a `table` opened inside a `p` when the document's quirks mode is not known (only quirks
//!   mode leaves the `p` open);
//! - character references other than `&name;` in the entity table and numeric ones, a NUL, a
//!   bogus comment or CDATA section (a processing instruction is read: `<?xml ...?>`), a
//!   comment or tag cut by the end of input;
//! - a `role` or `lang` attribute whose value holds a character reference;
//! - a stack deeper than `MAX_DEPTH`.
//!
//! Tested against the parser's result (`strip_reference`) on random markup built to stress
//! those rules, every page of the WARC samples and every fifth of the dev file
//! (`tests/warc_samples.rs`), and whole corpora (`dupflow sentences`, byte for byte).

use std::borrow::Cow;

use super::names::{self, Flags};
use super::{
    comment_end, is_tag_space, mentions, tag_end, tag_end_and_names, Extraction, StrippedPage,
};

/// The page's visible text as [`super::strip_with`] gives it, or `None` where the scanner does
/// not follow the tree builder (the parser then reads the page).
pub(super) fn strip(html: &str, landmarks: bool) -> Option<StrippedPage> {
    let mut scanner = Scanner { bytes: html.as_bytes(), html, at: 0, ..Scanner::default() };
    if html.starts_with('\u{feff}') {
        scanner.at = 3;
    }
    scanner.run()?;
    let lang = scanner.lang.take();
    Some(scanner.extraction.finish(lang, landmarks))
}

/// The deepest stack of open elements the scanner follows.
const MAX_DEPTH: usize = 256;

/// Where the document is, as far as the tree builder's insertion modes before the body go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Before the `html` element (the "initial" and "before html" modes).
    #[default]
    Initial,
    BeforeHead,
    InHead,
    AfterHead,
    /// In the body (the "in body" mode and, from the stack, the table modes).
    Body,
}

/// The table element that is the current node, in a table's modes.
#[derive(Clone, Copy)]
enum TablePart {
    Table,
    /// `tbody`, `thead` or `tfoot`.
    Section,
    Row,
}

/// A token, as the HTML tokenizer gives it.
enum Token<'a> {
    /// Text, undecoded.
    Text(&'a str),
    Start {
        name: Cow<'a, str>,
        attributes: Attributes<'a>,
    },
    End {
        name: Cow<'a, str>,
    },
    Comment,
    Doctype(&'a [u8]),
    Eof,
}

/// A start tag's attribute bytes, and whether the name of one of its attributes begins with `r`
/// (`tag_end_and_names`).
#[derive(Clone, Copy)]
struct Attributes<'a> {
    bytes: &'a [u8],
    named_r: bool,
}

impl<'a> Attributes<'a> {
    /// None, for the `html` element the scanner inserts.
    const NONE: Attributes<'static> = Attributes { bytes: b"", named_r: false };

    /// The `role` attribute's value, as [`attribute`] reads it; not looked for where no
    /// attribute's name begins with `r` (a start tag in the body asks, and most have none).
    fn role(self) -> Result<Option<&'a str>, ()> {
        if !self.named_r {
            // `attribute` may give up (`Err`) on a tag with no `role` where a name begins with
            // `=`; the tokenizer reads no `role` there either.
            debug_assert!(
                !matches!(attribute(self.bytes, b"role"), Ok(Some(_))),
                "a role with no name beginning with r"
            );
            return Ok(None);
        }
        attribute(self.bytes, b"role")
    }
}

/// An open element, and the answers to three questions the scanner asks of its stack (at every
/// token, at a block's start, at a link's): walking the stack from this element down would
/// find them, and they depend only on the elements below it, which stay as they are while it
/// is open.
struct Open {
    /// Its name, in `Scanner::names` from here to the next element's start.
    start: usize,
    /// Its name's flags (`names::flags`).
    flags: Flags,
    id: u32,
    /// The innermost table element (`names::TABLE_ELEMENT`) at or below it, by index plus one;
    /// 0 for none (`Scanner::table_context`).
    table: u32,
    /// Whether a `p` is in button scope from it (`Scanner::p_in_button_scope`).
    p_in_button_scope: bool,
    /// The innermost `a` at or below it, by index plus one; 0 for none (`Scanner::open_a`).
    a: u32,
}

#[derive(Default)]
struct Scanner<'a> {
    bytes: &'a [u8],
    html: &'a str,
    at: usize,
    phase: Phase,
    /// The stack of open elements, `html` first.
    stack: Vec<Open>,
    /// Their names, one after the other.
    names: String,
    next_id: u32,
    /// The form element pointer: the `form` opened last and not closed by its end tag.
    form: Option<u32>,
    /// The next text's first line feed is dropped (right after `<pre>` or `<listing>`).
    ignore_lf: bool,
    /// The document's quirks mode, where its doctype says it surely.
    quirks: Option<bool>,
    /// Whether a doctype came first.
    doctype_seen: bool,
    lang: Option<String>,
    extraction: Extraction,
    /// Decoded text.
    text: String,
}

// What the rules ask of a name: one lookup in `names`' table, each list a flag.

fn is_formatting(name: &str) -> bool {
    names::flags(name) & names::FORMATTING != 0
}

fn is_heading(name: &str) -> bool {
    names::flags(name) & names::HEADING != 0
}

fn is_ascii_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

/// The first value of attribute `want` among a tag's attribute bytes, as the tokenizer reads
/// them; `Err` where it holds a character reference or a NUL (the scanner gives up).
fn attribute<'a>(attributes: &'a [u8], want: &[u8]) -> Result<Option<&'a str>, ()> {
    if !mentions(attributes, want) {
        return Ok(None);
    }
    let len = attributes.len();
    let mut at = 0;
    loop {
        while at < len && (is_tag_space(attributes[at]) || attributes[at] == b'/') {
            at += 1;
        }
        if at >= len {
            return Ok(None);
        }
        if attributes[at] == b'=' {
            return Err(());
        }
        let name_start = at;
        while at < len && !is_tag_space(attributes[at]) && !matches!(attributes[at], b'/' | b'=') {
            at += 1;
        }
        let name = &attributes[name_start..at];
        while at < len && is_tag_space(attributes[at]) {
            at += 1;
        }
        let mut value: &[u8] = b"";
        if at < len && attributes[at] == b'=' {
            at += 1;
            while at < len && is_tag_space(attributes[at]) {
                at += 1;
            }
            if at < len && matches!(attributes[at], b'"' | b'\'') {
                let quote = attributes[at];
                let end = at + 1 + memchr::memchr(quote, &attributes[at + 1..]).ok_or(())?;
                value = &attributes[at + 1..end];
                at = end + 1;
            } else {
                let start = at;
                while at < len && !is_tag_space(attributes[at]) {
                    at += 1;
                }
                value = &attributes[start..at];
            }
        }
        if name.eq_ignore_ascii_case(want) {
            if value.contains(&b'&') || value.contains(&0) || value.contains(&b'\r') {
                return Err(());
            }
            return std::str::from_utf8(value).map(Some).map_err(|_| ());
        }
    }
}

/// A numeric character reference's character, as html5ever maps its value.
fn numeric_reference(value: u32, too_big: bool) -> char {
    match value {
        _ if too_big || value > 0x10FFFF => '\u{fffd}',
        0 | 0xD800..=0xDFFF => '\u{fffd}',
        0x80..=0x9F => markup5ever::data::C1_REPLACEMENTS[(value - 0x80) as usize]
            .unwrap_or_else(|| char::from_u32(value).unwrap_or('\u{fffd}')),
        _ => char::from_u32(value).unwrap_or('\u{fffd}'),
    }
}

/// A word with 1 in each of its bytes.
const ONES: u64 = u64::from_le_bytes([1; 8]);

/// The top bit of each byte of a word marked where the byte is zero: the lowest mark is the
/// first zero byte, a mark above it may be wrong, and there is a mark if and only if a byte is
/// zero. (A byte equal to `b` is a zero byte of the word XOR `ONES * b`.)
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & (ONES << 7)
}

/// Whether `bytes` hold a `&`, a CR or a NUL. Most texts between two tags are short, where
/// `memchr3`'s setup costs more than the search: up to [`SHORT_TEXT`] bytes, eight at a time in
/// a word ([`zero_bytes`]).
fn holds_reference_cr_or_nul(bytes: &[u8]) -> bool {
    let zero_byte = |word: u64| zero_bytes(word) != 0;
    if bytes.len() > SHORT_TEXT {
        return memchr::memchr3(b'&', b'\r', 0, bytes).is_some();
    }
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        if zero_byte(word)
            || zero_byte(word ^ (ONES * u64::from(b'&')))
            || zero_byte(word ^ (ONES * u64::from(b'\r')))
        {
            return true;
        }
    }
    words.remainder().iter().any(|&b| matches!(b, b'&' | b'\r' | 0))
}

/// The longest text [`holds_reference_cr_or_nul`] reads a word at a time.
const SHORT_TEXT: usize = 64;

/// The first `<` at or after `at`. In generated documentation the next tag is most often a few
/// bytes away (`</a></span>`, `<td><a`), so the first 16 bytes are read two words at a time
/// before `memchr` takes the rest.
fn next_lt(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    if rest.len() >= 16 {
        for half in [0, 8] {
            let word = u64::from_le_bytes(rest[half..half + 8].try_into().expect("8 bytes"));
            let marks = zero_bytes(word ^ (ONES * u64::from(b'<')));
            if marks != 0 {
                return Some(at + half + marks.trailing_zeros() as usize / 8);
            }
        }
        return memchr::memchr(b'<', &rest[16..]).map(|found| at + 16 + found);
    }
    memchr::memchr(b'<', rest).map(|found| at + found)
}

/// Text as the tokenizer gives it: character references decoded, CR LF and CR read as LF.
/// `None` where it holds a NUL or a reference the scanner does not decode exactly.
fn decode<'s>(raw: &'s str, out: &'s mut String) -> Option<&'s str> {
    let bytes = raw.as_bytes();
    if !holds_reference_cr_or_nul(bytes) {
        return Some(raw);
    }
    out.clear();
    let mut copied = 0;
    let mut at = 0;
    while let Some(found) = memchr::memchr3(b'&', b'\r', 0, &bytes[at..]) {
        let here = at + found;
        out.push_str(&raw[copied..here]);
        match bytes[here] {
            0 => return None,
            b'\r' => {
                out.push('\n');
                at = if bytes.get(here + 1) == Some(&b'\n') { here + 2 } else { here + 1 };
            }
            _ => match bytes.get(here + 1) {
                Some(b) if b.is_ascii_alphanumeric() => {
                    let mut end = here + 1;
                    while end < bytes.len() && bytes[end].is_ascii_alphanumeric() {
                        end += 1;
                    }
                    if bytes.get(end) != Some(&b';') {
                        return None;
                    }
                    let &(first, second) =
                        markup5ever::data::NAMED_ENTITIES.get(&raw[here + 1..=end])?;
                    if first == 0 {
                        return None;
                    }
                    out.push(char::from_u32(first)?);
                    if second != 0 {
                        out.push(char::from_u32(second)?);
                    }
                    at = end + 1;
                }
                Some(b'#') => {
                    let hex = matches!(bytes.get(here + 2), Some(b'x' | b'X'));
                    let start = here + 2 + usize::from(hex);
                    let mut end = start;
                    let (mut value, mut too_big) = (0u32, false);
                    while let Some(digit) = bytes
                        .get(end)
                        .and_then(|&b| (b as char).to_digit(if hex { 16 } else { 10 }))
                    {
                        match value
                            .checked_mul(if hex { 16 } else { 10 })
                            .and_then(|v| v.checked_add(digit))
                        {
                            Some(v) if v <= 0x10FFFF => value = v,
                            _ => too_big = true,
                        }
                        end += 1;
                    }
                    if end == start {
                        return None;
                    }
                    out.push(numeric_reference(value, too_big));
                    at = if bytes.get(end) == Some(&b';') { end + 1 } else { end };
                }
                _ => {
                    out.push('&');
                    at = here + 1;
                }
            },
        }
        copied = at;
    }
    out.push_str(&raw[copied..]);
    Some(out.as_str())
}

impl<'a> Scanner<'a> {
    fn name_at(&self, index: usize) -> &str {
        let start = self.stack[index].start;
        let end = self.stack.get(index + 1).map_or(self.names.len(), |next| next.start);
        &self.names[start..end]
    }

    fn current(&self) -> &str {
        if self.stack.is_empty() {
            ""
        } else {
            self.name_at(self.stack.len() - 1)
        }
    }

    fn push(&mut self, name: &str, role: Option<&str>) -> u32 {
        self.push_flagged(name, names::flags(name), role)
    }

    /// [`Scanner::push`] with the name's `flags` (`names::flags`), for a caller that has them.
    fn push_flagged(&mut self, name: &str, flags: Flags, role: Option<&str>) -> u32 {
        debug_assert_eq!(flags, names::flags(name), "flags of another name");
        self.extraction.open_flagged(flags, role);
        let id = self.next_id;
        self.next_id += 1;
        let below = self.stack.last();
        let table = if flags & names::TABLE_ELEMENT != 0 {
            self.stack.len() as u32 + 1
        } else {
            below.map_or(0, |open| open.table)
        };
        // `in_scope("p", BOUNDS_BUTTON)` from here: this element is the `p`, or bounds the
        // scope, or leaves the answer to the elements below.
        let p_in_button_scope = name == "p"
            || (flags & names::BOUNDS_BUTTON == 0
                && below.is_some_and(|open| open.p_in_button_scope));
        let a =
            if name == "a" { self.stack.len() as u32 + 1 } else { below.map_or(0, |open| open.a) };
        self.stack.push(Open { start: self.names.len(), flags, id, table, p_in_button_scope, a });
        self.names.push_str(name);
        id
    }

    /// Pops the current node; `None` when it is a formatting element (its end tag alone closes
    /// one here: the tree builder would reconstruct it later).
    fn pop_implied(&mut self) -> Option<()> {
        if self.current_flags() & names::FORMATTING != 0 {
            return None;
        }
        self.pop();
        Some(())
    }

    fn pop(&mut self) {
        let open = self.stack.pop().expect("an open element");
        self.extraction.close_flagged(open.flags);
        self.names.truncate(open.start);
    }

    fn void(&mut self, name: &str, role: Option<&str>) {
        self.void_flagged(names::flags(name), role);
    }

    /// [`Scanner::void`] with the name's `flags`.
    fn void_flagged(&mut self, flags: Flags, role: Option<&str>) {
        self.extraction.open_flagged(flags, role);
        self.extraction.close_flagged(flags);
    }

    /// The current node's flags (`names::flags`), 0 for none.
    fn current_flags(&self) -> Flags {
        self.stack.last().map_or(0, |open| open.flags)
    }

    /// Whether an element named `target` is in the scope `bounds` (a flag of `names`: the
    /// elements that bound it) draws.
    fn in_scope(&self, target: &str, bounds: Flags) -> bool {
        for index in (0..self.stack.len()).rev() {
            if self.name_at(index) == target {
                return true;
            }
            if self.stack[index].flags & bounds != 0 {
                return false;
            }
        }
        false
    }

    fn on_stack(&self, target: &str) -> bool {
        (0..self.stack.len()).any(|index| self.name_at(index) == target)
    }

    /// "Generate implied end tags", but for `except`.
    fn generate_implied(&mut self, except: &str) -> Option<()> {
        while self.current_flags() & names::IMPLIED_END != 0 && self.current() != except {
            self.pop_implied()?;
        }
        Some(())
    }

    /// Pops elements until one for which `is` holds is popped.
    fn pop_until(&mut self, is: impl Fn(&str) -> bool) -> Option<()> {
        while !self.stack.is_empty() {
            let done = is(self.current());
            self.pop_implied()?;
            if done {
                return Some(());
            }
        }
        Some(())
    }

    /// `in_scope("p", BOUNDS_BUTTON)`, kept with each open element (`Open`), not walked.
    fn p_in_button_scope(&self) -> bool {
        let kept = self.stack.last().is_some_and(|open| open.p_in_button_scope);
        debug_assert_eq!(kept, self.in_scope("p", names::BOUNDS_BUTTON), "the kept p scope");
        kept
    }

    fn close_p_in_button_scope(&mut self) -> Option<()> {
        if self.p_in_button_scope() {
            self.generate_implied("p")?;
            self.pop_until(|n| n == "p")?;
        }
        Some(())
    }

    /// The innermost `a` open below `above` (an index of the stack, or its length), by index.
    /// Kept with each open element (`Open::a`), not walked.
    fn open_a(&self, above: usize) -> Option<usize> {
        let kept =
            above.checked_sub(1).and_then(|below| (self.stack[below].a as usize).checked_sub(1));
        debug_assert_eq!(
            kept,
            (0..above).rposition(|index| self.name_at(index) == "a"),
            "the kept a"
        );
        kept
    }

    /// The innermost table element open (a cell, a row, a section or a table), by index. Kept
    /// with each open element (`Open::table`), not walked.
    fn table_context(&self) -> Option<usize> {
        let kept = self.stack.last().and_then(|open| (open.table as usize).checked_sub(1));
        debug_assert_eq!(
            kept,
            (0..self.stack.len())
                .rev()
                .find(|&index| names::flags(self.name_at(index)) & names::TABLE_ELEMENT != 0),
            "the kept table context"
        );
        kept
    }

    fn run(&mut self) -> Option<()> {
        loop {
            // Scope checks walk the stack: a page nested deeper is left to the parser, so that
            // a token costs the scanner a bounded walk.
            if self.stack.len() > MAX_DEPTH {
                return None;
            }
            let token = self.next_token()?;
            let eof = matches!(token, Token::Eof);
            self.process(token)?;
            if eof {
                while !self.stack.is_empty() {
                    self.pop();
                }
                return Some(());
            }
        }
    }

    /// The next token, `None` where the scanner gives up.
    fn next_token(&mut self) -> Option<Token<'a>> {
        let bytes = self.bytes;
        let start = self.at;
        if start >= bytes.len() {
            return Some(Token::Eof);
        }
        // Text runs to the next `<` that opens markup.
        let mut at = start;
        loop {
            let Some(lt) = next_lt(bytes, at) else {
                self.at = bytes.len();
                return Some(Token::Text(&self.html[start..]));
            };
            match bytes.get(lt + 1) {
                Some(b) if b.is_ascii_alphabetic() || matches!(b, b'/' | b'!' | b'?') => {
                    if lt > start {
                        self.at = lt;
                        return Some(Token::Text(&self.html[start..lt]));
                    }
                    break;
                }
                _ => at = lt + 1,
            }
        }
        // Markup at `start`.
        match bytes[start + 1] {
            b'!' => {
                if bytes[start..].starts_with(b"<!--") {
                    let from = start + 4;
                    if bytes[from..].starts_with(b">") || bytes[from..].starts_with(b"->") {
                        return None;
                    }
                    self.at = comment_end(bytes, from)?;
                    Some(Token::Comment)
                } else if bytes.len() >= start + 9
                    && bytes[start + 2..start + 9].eq_ignore_ascii_case(b"doctype")
                {
                    let end = start + 9 + memchr::memchr(b'>', &bytes[start + 9..])?;
                    self.at = end + 1;
                    Some(Token::Doctype(&bytes[start + 9..end]))
                } else {
                    None
                }
            }
            b'?' => {
                // A processing instruction (`<?xml ...?>`) is a bogus comment to the next `>`.
                self.at = start + 2 + memchr::memchr(b'>', &bytes[start + 2..])? + 1;
                Some(Token::Comment)
            }
            b'/' => match bytes.get(start + 2) {
                Some(b'>') => {
                    self.at = start + 3;
                    Some(Token::Comment)
                }
                Some(b) if b.is_ascii_alphabetic() => {
                    let (name, name_end) = self.tag_name(start + 2)?;
                    let (gt, _) = tag_end(bytes, name_end)?;
                    self.at = gt + 1;
                    Some(Token::End { name })
                }
                _ => None,
            },
            _ => {
                let (name, name_end) = self.tag_name(start + 1)?;
                let (gt, _, named_r) = tag_end_and_names(bytes, name_end)?;
                self.at = gt + 1;
                Some(Token::Start {
                    name,
                    attributes: Attributes { bytes: &bytes[name_end..gt], named_r },
                })
            }
        }
    }

    /// A tag name from `from` (its first letter), lowercased, and where it ends.
    fn tag_name(&self, from: usize) -> Option<(Cow<'a, str>, usize)> {
        let bytes = self.bytes;
        let mut end = from;
        let mut upper = false;
        while end < bytes.len() && !is_tag_space(bytes[end]) && !matches!(bytes[end], b'/' | b'>') {
            match bytes[end] {
                0 => return None,
                b'A'..=b'Z' => upper = true,
                _ => {}
            }
            end += 1;
        }
        if end >= bytes.len() {
            return None;
        }
        let name = &self.html[from..end];
        Some((if upper { Cow::Owned(name.to_ascii_lowercase()) } else { Cow::Borrowed(name) }, end))
    }

    /// Skips a raw-text element's content after its start tag, through its end tag (to the end
    /// of input without one).
    fn skip_raw(&mut self, name: &str) {
        self.at =
            super::verbatim_end(self.bytes, self.at, name.as_bytes()).unwrap_or(self.bytes.len());
    }

    fn process(&mut self, token: Token<'a>) -> Option<()> {
        let ignore_lf = std::mem::take(&mut self.ignore_lf);
        match self.phase {
            Phase::Initial => match token {
                Token::Comment => Some(()),
                Token::Doctype(body) => {
                    if !self.doctype_seen && self.stack.is_empty() {
                        self.doctype_seen = true;
                        let body = String::from_utf8_lossy(body);
                        let words: Vec<&str> = body.split_ascii_whitespace().collect();
                        self.quirks = match words.as_slice() {
                            [html] if html.eq_ignore_ascii_case("html") => Some(false),
                            _ => None,
                        };
                    }
                    Some(())
                }
                Token::Text(text) if text.chars().all(is_ascii_space) => Some(()),
                Token::Start { name, attributes } if name == "html" => {
                    self.begin(attributes)?;
                    self.phase = Phase::BeforeHead;
                    Some(())
                }
                token => {
                    self.begin(Attributes::NONE)?;
                    self.phase = Phase::BeforeHead;
                    self.process(token)
                }
            },
            Phase::BeforeHead => match token {
                Token::Comment | Token::Doctype(_) => Some(()),
                Token::Text(text) if text.chars().all(is_ascii_space) => Some(()),
                Token::Start { name, .. } if name == "head" => {
                    self.push("head", None);
                    self.phase = Phase::InHead;
                    Some(())
                }
                Token::Start { name, .. } if name == "html" => None,
                Token::End { name } if !matches!(&*name, "head" | "body" | "html" | "br") => {
                    Some(())
                }
                token => {
                    self.push("head", None);
                    self.phase = Phase::InHead;
                    self.process(token)
                }
            },
            Phase::InHead => match token {
                Token::Comment | Token::Doctype(_) => Some(()),
                Token::Text(text) if text.chars().all(is_ascii_space) => Some(()),
                Token::Start { name, .. }
                    if matches!(&*name, "base" | "basefont" | "bgsound" | "link" | "meta") =>
                {
                    self.void(&name, None);
                    Some(())
                }
                Token::Start { name, .. } if name == "title" => self.title(),
                Token::Start { name, .. }
                    if matches!(&*name, "noframes" | "style" | "noscript" | "script") =>
                {
                    self.push(&name, None);
                    self.skip_raw(&name);
                    self.pop();
                    Some(())
                }
                Token::Start { name, attributes } if name == "template" => {
                    self.template(attributes)
                }
                Token::Start { name, .. } if name == "html" => None,
                Token::Start { name, .. } if name == "head" => Some(()),
                Token::End { name } if name == "head" => {
                    self.pop();
                    self.phase = Phase::AfterHead;
                    Some(())
                }
                Token::End { name } if name == "template" => None,
                Token::End { name } if !matches!(&*name, "body" | "html" | "br") => Some(()),
                token => {
                    self.pop();
                    self.phase = Phase::AfterHead;
                    self.process(token)
                }
            },
            Phase::AfterHead => match token {
                Token::Comment | Token::Doctype(_) => Some(()),
                Token::Text(text) if text.chars().all(is_ascii_space) => Some(()),
                Token::Start { name, attributes } if name == "body" => {
                    let role = attributes.role().ok()?;
                    self.push("body", role);
                    self.phase = Phase::Body;
                    Some(())
                }
                Token::Start { name, .. }
                    if matches!(
                        &*name,
                        "html"
                            | "frameset"
                            | "base"
                            | "basefont"
                            | "bgsound"
                            | "link"
                            | "meta"
                            | "noframes"
                            | "script"
                            | "style"
                            | "template"
                            | "title"
                    ) =>
                {
                    None
                }
                Token::Start { name, .. } if name == "head" => Some(()),
                Token::End { name } if name == "template" => None,
                Token::End { name } if !matches!(&*name, "body" | "html" | "br") => Some(()),
                token => {
                    self.push("body", None);
                    self.phase = Phase::Body;
                    self.process(token)
                }
            },
            Phase::Body => self.in_body(token, ignore_lf),
        }
    }

    /// The `html` element, with the `lang` and `role` of its start tag's `attributes`.
    fn begin(&mut self, attributes: Attributes<'_>) -> Option<()> {
        let lang = attribute(attributes.bytes, b"lang").ok()?;
        self.lang = lang.map(|l| l.trim().to_string()).filter(|l| !l.is_empty());
        let role = attributes.role().ok()?;
        self.push("html", role);
        Some(())
    }

    /// A `title` in the head: its text (RCDATA) to its end tag.
    fn title(&mut self) -> Option<()> {
        let bytes = self.bytes;
        let from = self.at;
        let mut at = from;
        let (text_end, end) = loop {
            let lt = at + memchr::memchr(b'<', &bytes[at..])?;
            let name_end = lt + 7;
            if name_end < bytes.len()
                && bytes[lt + 1] == b'/'
                && bytes[lt + 2..name_end].eq_ignore_ascii_case(b"title")
                && (is_tag_space(bytes[name_end]) || matches!(bytes[name_end], b'/' | b'>'))
            {
                let (gt, _) = tag_end(bytes, name_end)?;
                break (lt, gt + 1);
            }
            at = lt + 1;
        };
        self.push("title", None);
        let html = self.html;
        self.text(&html[from..text_end], false, false)?;
        self.pop();
        self.at = end;
        Some(())
    }

    /// A `template` whose content can hold no other template, raw text, comment or foreign
    /// content: skipped whole to its end tag. Its content is a fragment of its own (hidden,
    /// like the element), and closing it leaves the stack and the formatting elements as its
    /// start tag found them.
    fn template(&mut self, attributes: Attributes<'_>) -> Option<()> {
        if attribute(attributes.bytes, b"shadowrootmode").ok()?.is_some() {
            return None;
        }
        let bytes = self.bytes;
        let mut at = self.at;
        let end = loop {
            let lt = at + memchr::memchr(b'<', &bytes[at..])?;
            match bytes.get(lt + 1) {
                Some(b'!' | b'?') | None => return None,
                Some(b'/') => {
                    if !bytes.get(lt + 2).is_some_and(u8::is_ascii_alphabetic) {
                        return None;
                    }
                    let (name, name_end) = self.tag_name(lt + 2)?;
                    let (gt, _) = tag_end(bytes, name_end)?;
                    if name == "template" {
                        break gt + 1;
                    }
                    at = gt + 1;
                }
                Some(b) if b.is_ascii_alphabetic() => {
                    let (name, name_end) = self.tag_name(lt + 1)?;
                    if matches!(
                        &*name,
                        "template"
                            | "script"
                            | "style"
                            | "textarea"
                            | "title"
                            | "xmp"
                            | "iframe"
                            | "noembed"
                            | "noframes"
                            | "noscript"
                            | "plaintext"
                            | "svg"
                            | "math"
                    ) {
                        return None;
                    }
                    at = tag_end(bytes, name_end)?.0 + 1;
                }
                Some(_) => at = lt + 1,
            }
        };
        self.push("template", None);
        self.at = end;
        self.pop();
        Some(())
    }

    /// Text, decoded, to the extraction: without its first line feed (`drop_lf`), and `None`
    /// unless all white space (`space_only`: in a table, other text is foster-parented).
    fn text(&mut self, raw: &str, drop_lf: bool, space_only: bool) -> Option<()> {
        let mut buffer = std::mem::take(&mut self.text);
        let text = decode(raw, &mut buffer)?;
        let text = if drop_lf { text.strip_prefix('\n').unwrap_or(text) } else { text };
        if space_only && !text.chars().all(is_ascii_space) {
            return None;
        }
        if !text.is_empty() {
            self.extraction.text(text);
        }
        self.text = buffer;
        Some(())
    }

    fn in_body(&mut self, token: Token<'a>, ignore_lf: bool) -> Option<()> {
        // The table modes, from the innermost table element open: in a table, a section or a
        // row, the current node is that element (the scanner gives up where the tree builder
        // would foster-parent content); in a cell, the body's rules with the cell's own.
        let context = self.table_context();
        let in_cell = context.is_some_and(|index| matches!(self.name_at(index), "td" | "th"));
        if let Some(index) = context.filter(|_| !in_cell) {
            if index != self.stack.len() - 1 {
                return None;
            }
            return self.in_table(token);
        }
        match token {
            Token::Text(raw) => self.text(raw, ignore_lf, false),
            Token::Comment | Token::Doctype(_) => Some(()),
            Token::Eof => Some(()),
            Token::Start { name, attributes } => {
                if in_cell
                    && matches!(
                        &*name,
                        "caption"
                            | "col"
                            | "colgroup"
                            | "tbody"
                            | "td"
                            | "tfoot"
                            | "th"
                            | "thead"
                            | "tr"
                    )
                {
                    self.close_cell()?;
                    return self.in_body(Token::Start { name, attributes }, false);
                }
                let name = &*name;
                // Looked up once for the tag: the rules below and the push ask of it.
                let flags = names::flags(name);
                if flags & names::GIVES_UP_IN_BODY != 0 {
                    return None;
                }
                if matches!(name, "tbody" | "td" | "tfoot" | "th" | "thead" | "tr" | "head") {
                    // Outside a table, ignored.
                    return Some(());
                }
                let role = attributes.role().ok()?;
                match name {
                    "address" | "article" | "aside" | "blockquote" | "center" | "details"
                    | "dialog" | "dir" | "div" | "dl" | "fieldset" | "figcaption" | "figure"
                    | "footer" | "header" | "hgroup" | "main" | "nav" | "ol" | "p" | "search"
                    | "section" | "summary" | "ul" | "menu" => {
                        self.close_p_in_button_scope()?;
                        self.push_flagged(name, flags, role);
                    }
                    "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                        self.close_p_in_button_scope()?;
                        if self.current_flags() & names::HEADING != 0 {
                            self.pop();
                        }
                        self.push_flagged(name, flags, role);
                    }
                    "pre" | "listing" => {
                        self.close_p_in_button_scope()?;
                        self.push_flagged(name, flags, role);
                        self.ignore_lf = true;
                    }
                    "form" => {
                        if self.form.is_none() {
                            self.close_p_in_button_scope()?;
                            self.form = Some(self.push_flagged(name, flags, role));
                        }
                    }
                    "li" | "dd" | "dt" => {
                        let list = name == "li";
                        for index in (0..self.stack.len()).rev() {
                            let open = self.name_at(index);
                            if (list && open == "li") || (!list && matches!(open, "dd" | "dt")) {
                                let open = open.to_string();
                                self.generate_implied(&open)?;
                                self.pop_until(|n| n == open)?;
                                break;
                            }
                            if self.stack[index].flags & names::SPECIAL != 0
                                && !matches!(open, "address" | "div" | "p")
                            {
                                break;
                            }
                        }
                        self.close_p_in_button_scope()?;
                        self.push_flagged(name, flags, role);
                    }
                    "button" => {
                        if self.in_scope("button", names::BOUNDS_DEFAULT) {
                            return None;
                        }
                        self.push_flagged(name, flags, role);
                    }
                    "a" => {
                        if let Some(open) = self.open_a(self.stack.len()) {
                            // The adoption agency for the open `a` (mdBook links a heading's
                            // text, and a link inside that text nests one in the other). With
                            // nothing but ordinary elements opened inside it, there is no
                            // furthest block and nothing to reconstruct: the tree builder
                            // pops them and the `a`, as end tags would. A special element
                            // inside (a cell, a block), a formatting one, or a second `a`
                            // further down (perhaps before a cell's marker) is left to it.
                            let inside = open + 1..self.stack.len();
                            if inside.clone().any(|index| {
                                self.stack[index].flags & (names::SPECIAL | names::FORMATTING) != 0
                            }) || self.open_a(open).is_some()
                            {
                                return None;
                            }
                            while self.stack.len() > open {
                                self.pop();
                            }
                        }
                        self.push_flagged(name, flags, role);
                    }
                    "nobr" => {
                        if self.on_stack("nobr") {
                            return None;
                        }
                        self.push_flagged(name, flags, role);
                    }
                    "table" => {
                        if self.p_in_button_scope() {
                            match self.quirks {
                                Some(false) => self.close_p_in_button_scope()?,
                                _ if !self.doctype_seen => {}
                                _ => return None,
                            }
                        }
                        self.push_flagged(name, flags, role);
                    }
                    "hr" => {
                        self.close_p_in_button_scope()?;
                        self.void_flagged(flags, role);
                    }
                    "iframe" | "noscript" => {
                        self.push_flagged(name, flags, role);
                        self.skip_raw(name);
                        self.pop();
                    }
                    "template" => self.template(attributes)?,
                    _ if flags & names::VOID != 0 => self.void_flagged(flags, role),
                    _ => {
                        self.push_flagged(name, flags, role);
                    }
                }
                Some(())
            }
            Token::End { name } => {
                if in_cell && matches!(&*name, "table" | "tbody" | "tfoot" | "thead" | "tr") {
                    if self.in_scope(&name, names::BOUNDS_TABLE) {
                        self.close_cell()?;
                        return self.in_body(Token::End { name }, false);
                    }
                    return Some(());
                }
                let name = &*name;
                if in_cell {
                    match name {
                        "td" | "th" => {
                            if self.in_scope(name, names::BOUNDS_TABLE) {
                                self.generate_implied("")?;
                                self.pop_until(|n| n == name)?;
                            }
                            return Some(());
                        }
                        "caption" | "col" | "colgroup" => return None,
                        _ => {}
                    }
                }
                match name {
                    "body" | "html" => Some(()),
                    "address" | "article" | "aside" | "blockquote" | "button" | "center"
                    | "details" | "dialog" | "dir" | "div" | "dl" | "fieldset" | "figcaption"
                    | "figure" | "footer" | "header" | "hgroup" | "listing" | "main" | "menu"
                    | "nav" | "ol" | "pre" | "search" | "section" | "select" | "summary" | "ul" => {
                        if self.in_scope(name, names::BOUNDS_DEFAULT) {
                            self.generate_implied("")?;
                            self.pop_until(|n| n == name)?;
                        }
                        Some(())
                    }
                    "form" => {
                        let Some(form) = self.form.take() else { return Some(()) };
                        let mut in_scope = false;
                        for index in (0..self.stack.len()).rev() {
                            if self.stack[index].id == form {
                                in_scope = true;
                                break;
                            }
                            if self.stack[index].flags & names::BOUNDS_DEFAULT != 0 {
                                break;
                            }
                        }
                        if !in_scope {
                            return Some(());
                        }
                        self.generate_implied("")?;
                        if self.stack.last().map(|open| open.id) != Some(form) {
                            return None;
                        }
                        self.pop();
                        Some(())
                    }
                    "p" => {
                        if !self.p_in_button_scope() {
                            self.push("p", None);
                        }
                        self.generate_implied("p")?;
                        self.pop_until(|n| n == "p")
                    }
                    "li" | "dd" | "dt" => {
                        let bounds = if name == "li" {
                            names::BOUNDS_LIST_ITEM
                        } else {
                            names::BOUNDS_DEFAULT
                        };
                        if self.in_scope(name, bounds) {
                            self.generate_implied(name)?;
                            self.pop_until(|n| n == name)?;
                        }
                        Some(())
                    }
                    "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                        let in_scope = (0..self.stack.len())
                            .rev()
                            .map(|index| self.stack[index].flags)
                            .find(|&flags| flags & (names::HEADING | names::BOUNDS_DEFAULT) != 0)
                            .is_some_and(|flags| flags & names::HEADING != 0);
                        if in_scope {
                            self.generate_implied("")?;
                            self.pop_until(is_heading)?;
                        }
                        Some(())
                    }
                    "br" => {
                        self.void("br", None);
                        Some(())
                    }
                    "option" | "applet" | "marquee" | "object" | "template" | "caption" | "col"
                    | "colgroup" => None,
                    _ if is_formatting(name) => {
                        if self.current() == name {
                            self.pop();
                            Some(())
                        } else if self.on_stack(name) {
                            None
                        } else {
                            Some(())
                        }
                    }
                    _ => {
                        // Any other end tag: the nearest element of its name, unless a special
                        // element comes first.
                        for index in (0..self.stack.len()).rev() {
                            let open = self.name_at(index);
                            if open == name {
                                self.generate_implied(name)?;
                                while self.stack.len() > index {
                                    self.pop_implied()?;
                                }
                                return Some(());
                            }
                            if self.stack[index].flags & names::SPECIAL != 0 {
                                return Some(());
                            }
                        }
                        Some(())
                    }
                }
            }
        }
    }

    /// Closes the open cell (`td` or `th`).
    fn close_cell(&mut self) -> Option<()> {
        self.generate_implied("")?;
        self.pop_until(|n| matches!(n, "td" | "th"))
    }

    /// A token in a table, a table section or a row (the current node).
    fn in_table(&mut self, token: Token<'a>) -> Option<()> {
        use TablePart::{Row, Section, Table};
        let part = match self.current() {
            "table" => Table,
            "tr" => Row,
            _ => Section,
        };
        match token {
            Token::Text(raw) => self.text(raw, false, true),
            Token::Comment | Token::Doctype(_) | Token::Eof => Some(()),
            Token::Start { name, attributes } => {
                let role = attributes.role().ok()?;
                match (part, &*name) {
                    (Table, "tbody" | "thead" | "tfoot") => {
                        self.push(&name, role);
                        Some(())
                    }
                    (Table, "tr" | "td" | "th") => {
                        self.push("tbody", None);
                        self.in_table(Token::Start { name, attributes })
                    }
                    (Section, "tr") => {
                        self.push("tr", role);
                        Some(())
                    }
                    (Section, "td" | "th") => {
                        self.push("tr", None);
                        self.in_table(Token::Start { name, attributes })
                    }
                    (Section, "tbody" | "thead" | "tfoot") => {
                        self.pop();
                        self.in_table(Token::Start { name, attributes })
                    }
                    (Row, "td" | "th") => {
                        self.push(&name, role);
                        Some(())
                    }
                    (Row, "tr" | "tbody" | "thead" | "tfoot") => {
                        self.pop();
                        self.in_table(Token::Start { name, attributes })
                    }
                    _ => None,
                }
            }
            Token::End { name } => match (part, &*name) {
                (_, "table") => {
                    if self.in_scope("table", names::BOUNDS_TABLE) {
                        self.pop_until(|n| n == "table")?;
                    }
                    Some(())
                }
                (Section, section) if section == self.current() => {
                    self.pop();
                    Some(())
                }
                (Row, "tr") => {
                    self.pop();
                    Some(())
                }
                (Row, "tbody" | "thead" | "tfoot") => {
                    if self.in_scope(&name, names::BOUNDS_TABLE) {
                        self.pop();
                        return self.in_table(Token::End { name });
                    }
                    Some(())
                }
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests;
