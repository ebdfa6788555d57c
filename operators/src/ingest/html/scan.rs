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
//! (`tests/integration/warc_samples.rs`), and whole corpora (`dupflow sentences`, byte for byte).

use std::borrow::Cow;

use super::names::{self, Flags};
use super::{comment_end, is_tag_space, tag_end, tag_end_and_names, Extraction, StrippedPage};

mod body;
mod lexical;
mod stack;

use lexical::{attribute, decode, next_lt};

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

impl<'a> Scanner<'a> {
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

    /// A token, by the tree builder's insertion mode.
    fn process(&mut self, token: Token<'a>) -> Option<()> {
        let ignore_lf = std::mem::take(&mut self.ignore_lf);
        match self.phase {
            Phase::Initial => self.initial(token),
            Phase::BeforeHead => self.before_head(token),
            Phase::InHead => self.in_head(token),
            Phase::AfterHead => self.after_head(token),
            Phase::Body => self.in_body(token, ignore_lf),
        }
    }

    /// The "initial" and "before html" modes: the doctype, then the `html` element.
    fn initial(&mut self, token: Token<'a>) -> Option<()> {
        match token {
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
        }
    }

    /// The "before head" mode.
    fn before_head(&mut self, token: Token<'a>) -> Option<()> {
        match token {
            Token::Comment | Token::Doctype(_) => Some(()),
            Token::Text(text) if text.chars().all(is_ascii_space) => Some(()),
            Token::Start { name, .. } if name == "head" => {
                self.push("head", None);
                self.phase = Phase::InHead;
                Some(())
            }
            Token::Start { name, .. } if name == "html" => None,
            Token::End { name } if !matches!(&*name, "head" | "body" | "html" | "br") => Some(()),
            token => {
                self.push("head", None);
                self.phase = Phase::InHead;
                self.process(token)
            }
        }
    }

    /// The "in head" mode.
    fn in_head(&mut self, token: Token<'a>) -> Option<()> {
        match token {
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
            Token::Start { name, attributes } if name == "template" => self.template(attributes),
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
        }
    }

    /// The "after head" mode.
    fn after_head(&mut self, token: Token<'a>) -> Option<()> {
        match token {
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
}

#[cfg(test)]
mod tests;
