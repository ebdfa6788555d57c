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
//! same extraction (`Extraction`) and give the same text. Markup nested deeper than 512
//! elements is read as browsers read it, the deeper elements siblings at the cap (`depth`): a
//! page's work is bounded by its size.

use ego_tree::iter::Edge;
use scraper::{Html, Node};

mod depth;
mod names;
mod scan;
mod slim;
mod tags;

pub use slim::{drop_raw_text_elements, slim_tags};
use tags::{comment_end, is_tag_space, mentions, tag_end, tag_end_and_names, verbatim_end};
#[cfg(test)]
use {
    slim::{drop_raw_text_elements_with, KEEP_ATTRIBUTES, MAX_NAME_LOOKED_FOR, PHRASING},
    slim::{RAW_TEXT_STARTS, VERBATIM_ELEMENTS},
};

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
    /// The markup nested deeper than `depth::MAX_DEPTH` elements: it was read with the deeper
    /// elements as siblings at the cap (as browsers read it).
    pub depth_capped: bool,
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
    let (html, depth_capped) = depth::cap_depth(html);
    let stripped = extract(&Html::parse_document(&slim_tags(&html)), landmarks);
    StrippedPage { depth_capped, ..stripped }
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
    let html = drop_raw_text_elements(html);
    let (html, depth_capped) = depth::cap_depth(&html);
    StrippedPage { depth_capped, ..extract(&Html::parse_document(&html), true) }
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
        StrippedPage { title, blocks, lang, main_marked, depth_capped: false }
    }
}

#[cfg(test)]
mod tests;
