use super::super::{strip_reference, strip_scanned};

proptest::proptest! {
    /// The word-at-a-time search finds a `&`, a CR or a NUL where a byte-by-byte one does,
    /// in texts of every length around a word's and `SHORT_TEXT`.
    #[test]
    fn short_texts_are_searched_as_byte_by_byte(
        text in proptest::collection::vec(proptest::sample::select(vec![b'a', b' ', b'&', b'\r', 0, b'\n', 0x26 ^ 0x80, 0x0d | 0x80, 0xff, 1]), 0..80),
        plain in 0usize..80,
    ) {
        // Mostly plain text, so that the answer is often no.
        let text: Vec<u8> = text.iter().enumerate().map(|(i, &b)| if i < plain { b'x' } else { b }).collect();
        proptest::prop_assert_eq!(super::lexical::holds_reference_cr_or_nul(&text), text.iter().any(|&b| matches!(b, b'&' | b'\r' | 0)));
    }
}

proptest::proptest! {
    /// The next `<` from any point is where `memchr` finds it, whether in the first 16 bytes
    /// (either word, first or later in it) or after.
    #[test]
    fn the_next_lt_is_memchrs(
        text in proptest::collection::vec(proptest::sample::select(vec![b'a', b'<', b'<' ^ 0x80, b'<' - 1, b'<' + 1, 0, 0xff]), 0..60),
        plain in 0usize..60,
        from in 0usize..60,
    ) {
        let text: Vec<u8> = text.iter().enumerate().map(|(i, &b)| if i < plain { b'x' } else { b }).collect();
        let from = from.min(text.len());
        proptest::prop_assert_eq!(super::next_lt(&text, from), memchr::memchr(b'<', &text[from..]).map(|found| from + found));
    }
}

/// Pieces for the scanner's rules beside the parser tests' (`html::tests::PIECES`):
/// implied end tags, table parts, formatting elements opened and closed out of order,
/// character references, templates, the head.
const EXTRA: &[&str] = &[
    "<div role=main>",
    "<a href=x>",
    "<a class=header href=#h>",
    "<span>",
    "</span>",
    "<abbr>",
    "<b>",
    "</b>",
    "<td>",
    "<tbody>",
    "</tbody>",
    "<thead>",
    "</thead>",
    "<tr>",
    "</tr>",
    "<th>",
    "</th>",
    "<caption>",
    "</li>",
    "<ol>",
    "</ol>",
    "<dl>",
    "<dt>",
    "</dl>",
    "<h1>",
    "<h2>",
    "</h2>",
    "<pre>",
    "\r\n",
    "\u{a0}",
    "more words",
    "&lt;",
    "&copy;",
    "&copy",
    "&notin;",
    "&#160;",
    "&#x41",
    "&#128;",
    "&#0;",
    "&#xD800;",
    "&#99999999;",
    "&T",
    "& ",
    "<!---->",
    "<!-->",
    "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Strict//EN\">",
    "<?xml version=\"1.0\"?>",
    "<html lang=en>",
    "<html>",
    "</html>",
    "<title>T &amp; t</title>",
    "<meta charset=utf-8>",
    "<link rel=x>",
    "<body role=main>",
    "</body>",
    "<section>",
    "</section>",
    "<template><span>t</span></template>",
    "<template><title>x</title></template>",
    "<br>",
    "</br>",
    "<hr>",
    "<input>",
    "<button>",
    "</button>",
    "<form>",
    "<iframe>f</iframe>",
    "<noscript><p>n</p></noscript>",
    "<font>",
    "<custom-el>",
    "</custom-el>",
    "<P ROLE=banner>",
    "<DIV>",
    "</DIV>",
    "<p a=\"&amp;\">",
    "<div role=\"x&amp;\">",
    // A role is looked for only where an attribute's name begins with `r` (`Attributes::role`).
    "<nav rel=x rOlE=main>",
    "<div =role=main>",
    "<div a=\"x\"role=navigation>",
    "<section data-role=main class=role>",
    "<div/role=main>",
    "<td role=banner>",
    "</listing>",
    "<center>",
    "<blockquote>",
    "</blockquote>",
    "\u{0}",
];

/// The parser tests' pieces and the scanner's.
fn all() -> Vec<&'static str> {
    super::super::tests::PIECES.iter().chain(EXTRA).copied().collect()
}

/// A piece's index in `all()`: the scanner's own pieces three times as often as the
/// parser tests' (those mostly make pages the scanner leaves to the parser).
fn piece() -> impl proptest::strategy::Strategy<Value = usize> {
    use proptest::strategy::Strategy;
    let parser = super::super::tests::PIECES.len();
    proptest::prop_oneof![1 => 0..parser, 3 => (0..EXTRA.len()).prop_map(move |i| parser + i)]
}

fn markup(pieces: &[usize]) -> String {
    let all = all();
    pieces.iter().map(|&i| all[i]).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
    /// Whatever page the scanner reads, it reads as the parser does.
    #[test]
    fn a_scanned_page_strips_as_the_parser_reads_it(pieces in proptest::collection::vec(piece(), 0..40)) {
        let html = markup(&pieces);
        if let Some(scanned) = strip_scanned(&html) {
            proptest::prop_assert_eq!(scanned, strip_reference(&html), "{}", html);
        }
    }
}

/// The property above is not vacuous: of random pages from the same pieces (a fixed
/// sequence), the scanner reads a good share, and gives up on some.
#[test]
fn the_scanner_reads_most_random_pages_and_leaves_some() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let (mut scanned, mut left) = (0, 0);
    for _ in 0..3000 {
        let len = next(12);
        let parser = super::super::tests::PIECES.len();
        let pieces: Vec<usize> = (0..len)
            .map(|_| if next(4) == 0 { next(parser) } else { parser + next(EXTRA.len()) })
            .collect();
        let html = markup(&pieces);
        match strip_scanned(&html) {
            Some(page) => {
                assert_eq!(page, strip_reference(&html), "{html}");
                scanned += 1;
            }
            None => left += 1,
        }
    }
    assert!(scanned > 1000 && left > 300, "scanned {scanned}, left to the parser {left}");
}

/// A byte order mark is dropped, as the tokenizer drops it; a page nested past `MAX_DEPTH`
/// is left to the parser.
#[test]
fn a_byte_order_mark_is_dropped_and_deep_nesting_is_parsed() {
    let html = "\u{feff}<p>a</p>";
    assert_eq!(strip_scanned(html), Some(strip_reference(html)));
    let deep = format!("<p>a</p>{}b", "<div>".repeat(super::MAX_DEPTH + 10));
    assert_eq!(strip_scanned(&deep), None);
    assert_eq!(super::super::strip(&deep), strip_reference(&deep));
}

/// Pages the way generators write them are scanned, and give the parser's text.
#[test]
fn well_formed_pages_are_scanned() {
    let pages = [
        // Doxygen: an XML declaration, an XHTML doctype, tables without tbody, entities.
        "<?xml version='1.0' encoding='UTF-8' standalone='no'?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Transitional//EN\" \
         \"https://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\
         <head><meta http-equiv=\"Content-Type\" content=\"text/xhtml;charset=UTF-8\"/><title>libstdc++: vector</title>\
         <link href=\"doxygen.css\" rel=\"stylesheet\" type=\"text/css\"/></head><body><div id=\"top\"><table cellspacing=\"0\">\
         <tr style=\"height: 56px;\"><td id=\"projectalign\"><div id=\"projectname\">libstdc++</div></td></tr></table></div>\
         <div class=\"contents\"><p>A standard container&#160;which offers <a class=\"el\" href=\"a.html\">fixed</a> time \
         access &amp; more.</p><pre class=\"fragment\">\nvector&lt;int&gt; v;\r\nv.push_back(1);</pre><ul><li>one<li>two</ul>\
         </div><hr class=\"footer\"/><address class=\"footer\"><small>Generated by <img src=\"doxygen.svg\" alt=\"doxygen\"/> \
         1.9.4</small></address></body></html>",
        // mdBook: landmarks, templates in the body, a role, unclosed paragraphs.
        "<!DOCTYPE HTML>\n<html lang=\"en\" class=\"light\" dir=\"ltr\"><head><meta charset=\"UTF-8\"><title>Intro - Book</title>\
         </head><body class=\"sidebar-visible no-js\"><nav id=\"sidebar\" class=\"sidebar\" aria-label=\"Table of contents\">\
         <ol class=\"chapter\"><li class=\"chapter-item\"><a href=\"a.html\">1. A</a></li></ol></nav><div id=\"page-wrapper\">\
         <template id=fa-eye><span class=fa-svg><svg><path d=\"M1\"/></svg></span></template>\
         <div class=\"page\"><main><h1 id=\"intro\"><a class=\"header\" href=\"#intro\">Intro</a></h1><p>Text one.<p>Text \
         two, <code>code</code> &mdash; end.</p><h2 id=\"doc\"><a class=\"header\" href=\"#doc\">Doc comments, parsed into \
         <a href=\"../meta/doc.html\">documentation</a>:</a></h2><p><a href=x>one <span>s<a href=y>two</a></span></a></p><table><thead><tr><th>A</th></tr></thead><tbody><tr><td>1</td></tr></tbody>\
         </table></main><nav class=\"nav-wrapper\" aria-label=\"Page navigation\"><a rel=\"next\" href=\"b.html\">Next</a></nav>\
         </div></div><div role=\"contentinfo\">footer</div></body></html>",
    ];
    for html in pages {
        let scanned = strip_scanned(html).unwrap_or_else(|| panic!("not scanned: {html}"));
        assert_eq!(scanned, strip_reference(html));
        assert!(!scanned.blocks.is_empty() && !scanned.title.is_empty());
    }
}

/// Where the tree builder moves, clones or reparents nodes, the scanner leaves the page to
/// the parser.
#[test]
fn the_scanner_gives_up_where_the_tree_is_not_a_stack() {
    for html in [
        "<p><b>bold<p>next</b>after",
        "<b>a<div>b</b>c</div>",
        "<a href=x>one<b>bold<a href=y>two</a>",
        "<a href=x>one<div>block<a href=y>two</a>",
        "<table>text<tr><td>c</td></tr></table>",
        "<table><div>d</div></table>",
        "<table><caption>c</caption></table>",
        "<select><option>o</select>",
        "<p>a</p><html lang=de>",
        "<body><p>x</p><body role=main>",
        "<p>a &T b</p>",
        "<p>\u{0}</p>",
        "<p>a<svg><p>b",
        "<p>a<math><mi>b</mi></math>",
        "<div role=\"a&amp;b\">x</div>",
        "<p><![CDATA[x]]></p>",
        "<!DOCTYPE html PUBLIC \"x\"><p>a<table><tr><td>c</table>",
    ] {
        assert_eq!(strip_scanned(html), None, "{html}");
    }
}
