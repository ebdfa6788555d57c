//! HTML strip: a page's visible text as an ordered list of blocks, plus its title.
//!
//! Only visible text is kept (no `script`, `style`, `noscript`, `template`, `svg`, `head`, …).
//! Block-level elements end a text block, so text of adjacent blocks never runs together; in
//! `pre`, every line is a block (code lines are the "sentences" of code). Entities are decoded
//! by the HTML parser; white space is collapsed. Block order is document order: later stages
//! rely on it (site templates sit at the head and tail of pages).

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use ego_tree::iter::Edge;
use scraper::{Html, Node};
use timely::progress::Timestamp;

use crate::page::PageMeta;

/// The visible text of a page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrippedPage {
    pub title: String,
    pub blocks: Vec<String>,
    /// The `lang` attribute of the `<html>` element, if any.
    pub lang: Option<String>,
}

fn is_hidden(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "svg"
            | "math"
            | "head"
            | "iframe"
            | "object"
            | "canvas"
            | "select"
            | "datalist"
            | "button"
    )
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "li"
            | "ul"
            | "ol"
            | "dl"
            | "dt"
            | "dd"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "td"
            | "th"
            | "tr"
            | "table"
            | "thead"
            | "tbody"
            | "tfoot"
            | "caption"
            | "br"
            | "hr"
            | "pre"
            | "blockquote"
            | "section"
            | "article"
            | "aside"
            | "header"
            | "footer"
            | "nav"
            | "main"
            | "figure"
            | "figcaption"
            | "form"
            | "fieldset"
            | "legend"
            | "address"
            | "details"
            | "summary"
            | "body"
            | "html"
            | "center"
            | "menu"
            | "option"
            | "textarea"
            | "label"
            | "input"
            | "img"
            | "video"
            | "audio"
    )
}

struct BlockBuilder {
    blocks: Vec<String>,
    current: String,
    pending_space: bool,
}

impl BlockBuilder {
    fn push_text(&mut self, text: &str) {
        for c in text.chars() {
            if c.is_whitespace() {
                self.pending_space = !self.current.is_empty();
            } else {
                if self.pending_space {
                    self.current.push(' ');
                    self.pending_space = false;
                }
                self.current.push(c);
            }
        }
    }
    fn end_block(&mut self) {
        if !self.current.is_empty() {
            self.blocks.push(std::mem::take(&mut self.current));
        }
        self.pending_space = false;
    }
}

/// Elements whose content is raw text that is never visible: cut out before parsing, since
/// they are half the bytes of a typical page and the tokenizer walks them char by char.
const RAW_TEXT_ELEMENTS: [&[u8]; 3] = [b"script", b"style", b"svg"];

/// Removes `<script>`, `<style>` and `<svg>` elements (start tag to end tag) from the raw
/// HTML. An element without an end tag is left for the parser.
pub fn drop_raw_text_elements(html: &str) -> std::borrow::Cow<'_, str> {
    let bytes = html.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'<', &bytes[at..]) {
        let open = at + found;
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
        if end <= bytes.len() && bytes[open + 1] == b'/' && bytes[open + 2..end].eq_ignore_ascii_case(name) {
            return memchr::memchr(b'>', &bytes[end..]).map(|gt| end + gt + 1);
        }
        at = open + 1;
    }
    None
}

/// Parses an HTML document and returns its visible text blocks and title.
pub fn strip(html: &str) -> StrippedPage {
    let html = drop_raw_text_elements(html);
    let document = Html::parse_document(&html);
    let mut builder = BlockBuilder { blocks: Vec::new(), current: String::new(), pending_space: false };
    let mut title = String::new();
    let mut hidden_depth = 0usize;
    let mut pre_depth = 0usize;
    let mut title_depth = 0usize;
    let lang = document.root_element().value().attr("lang").map(|l| l.trim().to_string()).filter(|l| !l.is_empty());
    for edge in document.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(element) => {
                    let name = element.name();
                    if name == "title" {
                        title_depth += 1;
                    }
                    if hidden_depth > 0 || is_hidden(name) {
                        hidden_depth += 1;
                    } else if is_block(name) {
                        builder.end_block();
                        if name == "pre" {
                            pre_depth += 1;
                        }
                    }
                }
                Node::Text(text) => {
                    if title_depth > 0 {
                        title.push_str(text);
                    }
                    if hidden_depth == 0 {
                        if pre_depth > 0 {
                            let mut lines = text.split('\n');
                            if let Some(first) = lines.next() {
                                builder.push_text(first);
                            }
                            for line in lines {
                                builder.end_block();
                                builder.push_text(line);
                            }
                        } else {
                            builder.push_text(text);
                        }
                    }
                }
                _ => {}
            },
            Edge::Close(node) => {
                if let Node::Element(element) = node.value() {
                    let name = element.name();
                    if name == "title" {
                        title_depth = title_depth.saturating_sub(1);
                    }
                    if hidden_depth > 0 {
                        hidden_depth -= 1;
                    } else if is_block(name) {
                        builder.end_block();
                        if name == "pre" {
                            pre_depth = pre_depth.saturating_sub(1);
                        }
                    }
                }
            }
        }
    }
    builder.end_block();
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    StrippedPage { title, blocks: builder.blocks, lang }
}

/// The HTML strip operator.
pub trait StripHtml<'scope, T: Timestamp + Lattice> {
    /// Replaces each document's HTML by its visible text blocks.
    ///
    /// # Examples
    /// ```
    /// use differential_dataflow::input::Input;
    /// use dupflow_operators::html::StripHtml;
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

impl<'scope, T: Timestamp + Lattice> StripHtml<'scope, T> for VecCollection<'scope, T, (PageMeta, String), isize> {
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
mod tests {
    use super::*;

    #[test]
    fn keeps_visible_text_in_blocks() {
        let page = strip(
            "<html><head><title> My  Page </title><style>p{}</style></head><body>\
             <h1>Head</h1><p>One &amp; <b>two</b></p><div>three<br>four</div>\
             <script>var x = 1;</script><noscript>no</noscript><ul><li>a</li><li>b</li></ul>\
             </body></html>",
        );
        assert_eq!(page.title, "My Page");
        assert_eq!(page.lang, None);
        assert_eq!(strip("<html lang=\"ru-RU\"><body><p>Привет</p></body></html>").lang.as_deref(), Some("ru-RU"));
        assert_eq!(page.blocks, vec!["Head", "One & two", "three", "four", "a", "b"]);
    }

    #[test]
    fn adjacent_blocks_never_run_together() {
        let page = strip("<table><tr><td>left</td><td>right</td></tr></table><p>x</p><p>y</p>");
        assert_eq!(page.blocks, vec!["left", "right", "x", "y"]);
    }

    #[test]
    fn pre_lines_are_blocks() {
        let page = strip("<pre><code>fn main() {\n    println!(\"hi\");\n}\n</code></pre>");
        assert_eq!(page.blocks, vec!["fn main() {", "println!(\"hi\");", "}"]);
    }

    #[test]
    fn inline_elements_join_with_their_spacing() {
        let page = strip("<p>a<i>b</i> c <span> d</span></p>");
        assert_eq!(page.blocks, vec!["ab c d"]);
    }

    #[test]
    fn hidden_subtrees_are_dropped_even_with_blocks_inside() {
        let page = strip("<p>x</p><template><p>hidden</p></template><svg><text>s</text></svg><p>y</p>");
        assert_eq!(page.blocks, vec!["x", "y"]);
    }

    #[test]
    fn raw_text_elements_are_cut_before_parsing() {
        let html = "<p>a</p><SCRIPT type=x>if (a < b) { x = '</p>'; }</script ><p>b</p><style>p{}</style>\
                    <svg viewBox='0'><text>t</text></svg><p>c<scripts>d</scripts></p><script>never closed";
        assert_eq!(drop_raw_text_elements(html), "<p>a</p><p>b</p><p>c<scripts>d</scripts></p><script>never closed");
        assert_eq!(strip(html).blocks, vec!["a", "b", "cd"]);
        assert!(matches!(drop_raw_text_elements("<p>plain</p>"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn garbage_does_not_panic() {
        for input in ["", "<", "<<<>>>", "</p></div>", "<p", "\u{0}\u{feff}<html>", "<!-- unterminated"] {
            let _ = strip(input);
        }
    }
}
