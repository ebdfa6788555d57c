//! The nesting cap: markup nested deeper than `MAX_DEPTH` elements is read as browsers read it,
//! each element past the cap a sibling of the one at the cap rather than its child (Blink's
//! tree builder stops nesting at 512). html5ever has no such cap, and its tree builder walks the
//! stack of open elements for most tags it meets: 100,000 nested `<div>` took it 34 s. Past the
//! cap, each start tag is preceded by the end tag of the element it would have nested in, so the
//! parser's stack stays under the cap and a page's work is bounded by its size.
//!
//! The stack followed here is the tree builder's, approximately: void elements are not pushed,
//! the end tags an element implies are popped (an open `p` by a block, an `li` by the next, a
//! cell by the next cell or row, `dt`/`dd`, `option`), an end tag pops to its element, and the
//! content of elements read as text (`title`, `textarea`, …) is skipped. Where it errs, the page
//! is still under the cap in the parser (the pass only ever lowers the depth), and a page whose
//! stack stays under the cap is not changed at all.

use std::borrow::Cow;

use super::slim::{declaration_end, VERBATIM_ELEMENTS};
use super::tags::{is_tag_space, tag_end, verbatim_end};

/// The deepest stack of open elements the parser is given (Blink's
/// `kMaximumHTMLParserDOMTreeDepth`).
pub const MAX_DEPTH: usize = 512;

const VOID: [&[u8]; 15] = [
    b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta",
    b"source", b"track", b"wbr", b"param", b"keygen",
];

/// Start tags that close an open `p` (the blocks of HTML's "in body" insertion mode).
const CLOSES_P: [&[u8]; 34] = [
    b"address",
    b"article",
    b"aside",
    b"blockquote",
    b"center",
    b"details",
    b"dialog",
    b"dir",
    b"div",
    b"dl",
    b"fieldset",
    b"figcaption",
    b"figure",
    b"footer",
    b"header",
    b"hgroup",
    b"main",
    b"menu",
    b"nav",
    b"ol",
    b"p",
    b"search",
    b"section",
    b"summary",
    b"ul",
    b"h1",
    b"h2",
    b"h3",
    b"h4",
    b"h5",
    b"h6",
    b"pre",
    b"form",
    b"table",
];

/// The page with its nesting capped at `MAX_DEPTH`, and whether the cap was reached (the page
/// as it is when not).
pub fn cap_depth(html: &str) -> (Cow<'_, str>, bool) {
    let bytes = html.as_bytes();
    let mut stack: Vec<&[u8]> = Vec::new();
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'<', &bytes[at..]) {
        let open = at + found;
        let next = bytes.get(open + 1).copied().unwrap_or(0);
        if next == b'!' || next == b'?' {
            let Some(end) = declaration_end(bytes, open) else { break };
            at = end;
            continue;
        }
        let closing = next == b'/';
        let name_at = open + 1 + usize::from(closing);
        if !bytes.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            at = open + 1;
            continue;
        }
        let name_end = name_at
            + bytes[name_at..]
                .iter()
                .position(|&b| is_tag_space(b) || b == b'/' || b == b'>')
                .unwrap_or(bytes.len() - name_at);
        let Some((gt, _)) = tag_end(bytes, name_end) else { break };
        let name = &bytes[name_at..name_end];
        at = gt + 1;
        if closing {
            if let Some(index) = stack.iter().rposition(|open| open.eq_ignore_ascii_case(name)) {
                stack.truncate(index);
            }
            continue;
        }
        let is = |list: &[&[u8]]| list.iter().any(|n| n.eq_ignore_ascii_case(name));
        if let Some(raw) = VERBATIM_ELEMENTS.iter().find(|raw| raw.eq_ignore_ascii_case(name)) {
            match verbatim_end(bytes, at, raw) {
                Some(end) => at = end,
                None => break,
            }
            continue;
        }
        if is(&VOID) {
            continue;
        }
        implied_ends(&mut stack, name, is(&CLOSES_P));
        if stack.len() >= MAX_DEPTH {
            // A sibling of the element at the cap, not its child.
            let top = stack.pop().expect("a full stack");
            out.push_str(&html[copied..open]);
            out.push_str("</");
            out.push_str(std::str::from_utf8(top).expect("an ASCII name"));
            out.push('>');
            copied = open;
        }
        stack.push(name);
    }
    if out.is_empty() {
        return (Cow::Borrowed(html), false);
    }
    out.push_str(&html[copied..]);
    (Cow::Owned(out), true)
}

/// Pops the elements a start tag `name` closes: an open `p` before a block, and the previous
/// item, term, cell, row, table section or option with what is open inside it (up to the list,
/// definition list, table or select that bounds it).
fn implied_ends(stack: &mut Vec<&[u8]>, name: &[u8], closes_p: bool) {
    let lower = name.to_ascii_lowercase();
    if closes_p || matches!(lower.as_slice(), b"li" | b"dt" | b"dd") {
        close_to(stack, &[b"p"], &[]);
    }
    let (closed, bounds): (&[&[u8]], &[&[u8]]) = match lower.as_slice() {
        b"li" => (&[b"li"], &[b"ul", b"ol", b"menu"]),
        b"dt" | b"dd" => (&[b"dt", b"dd"], &[b"dl"]),
        b"td" | b"th" => (&[b"td", b"th"], &[b"tr", b"table"]),
        b"tr" => (&[b"tr"], &[b"thead", b"tbody", b"tfoot", b"table"]),
        b"thead" | b"tbody" | b"tfoot" => (&[b"thead", b"tbody", b"tfoot"], &[b"table"]),
        b"option" => (&[b"option"], &[b"select", b"optgroup", b"datalist"]),
        b"optgroup" => (&[b"optgroup"], &[b"select"]),
        _ => return,
    };
    close_to(stack, closed, bounds);
}

/// Pops to (and including) the innermost open element named in `closed`, unless one named in
/// `bounds` (or the p-closing case's empty bounds: only the current node) is nearer.
fn close_to(stack: &mut Vec<&[u8]>, closed: &[&[u8]], bounds: &[&[u8]]) {
    let named = |open: &[u8], names: &[&[u8]]| names.iter().any(|n| n.eq_ignore_ascii_case(open));
    let reach = if bounds.is_empty() { 1 } else { stack.len() };
    for index in (stack.len().saturating_sub(reach)..stack.len()).rev() {
        if named(stack[index], closed) {
            stack.truncate(index);
            return;
        }
        if named(stack[index], bounds) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_under_the_cap_are_unchanged() {
        let page = "<html><body><div><p>one<p>two<ul><li>a<li>b</ul></div><table><tr><td>x<td>y<tr><td>z</table></body></html>";
        assert_eq!(cap_depth(page), (Cow::Borrowed(page), false));
        // Thousands of items, paragraphs and cells left unclosed are not nesting.
        let items: String = (0..5_000).map(|i| format!("<li>item {i}<p>para<b>bold</b>")).collect();
        let rows: String =
            (0..5_000).map(|i| format!("<tr><td>{i}<td><p>cell<dl><dt>a<dd>b</dl>")).collect();
        let page = format!("<body><ul>{items}</ul><table>{rows}</table></body>");
        assert!(!cap_depth(&page).1);
    }

    #[test]
    fn deep_nesting_is_capped_and_keeps_its_text() {
        let page = format!("<body>{}deep text</body>", "<div>".repeat(10_000));
        let (capped, hit) = cap_depth(&page);
        assert!(hit);
        assert!(capped.ends_with("</div><div>deep text</body>"));
        let stripped = super::super::strip(&page);
        assert_eq!(stripped.blocks, vec!["deep text".to_string()]);
    }

    #[test]
    fn text_of_elements_read_as_text_is_not_markup() {
        let page = format!("<title>{}</title><body>x</body>", "<div>".repeat(1_000));
        assert!(!cap_depth(&page).1);
    }
}
