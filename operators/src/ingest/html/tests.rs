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
    assert_eq!(
        strip("<html lang=\"ru-RU\"><body><p>Привет</p></body></html>").lang.as_deref(),
        Some("ru-RU")
    );
    assert_eq!(page.blocks, vec!["Head", "One & two", "three", "four", "a", "b"]);
}

#[test]
fn landmarks_keep_the_main_content() {
    // A main landmark: its blocks alone, without the navigation or the asides inside it (a
    // box of related stories, a pull quote). A footer inside it is the article's.
    let page = strip(
        "<body><header><p>Site</p></header><nav><li>Home</li></nav><main><h1>T</h1><p>Text.</p>\
         <nav>toc</nav><aside>related</aside><footer>end of article</footer></main><footer><p>(c)</p></footer></body>",
    );
    assert_eq!(page.blocks, ["T", "Text.", "end of article"]);
    let page = strip("<main><article><p>Text.</p><aside><h3>More</h3><p>Another story.</p></aside></article></main>");
    assert_eq!(page.blocks, ["Text."]);
    assert!(page.main_marked);
    // ARIA roles on divs, as Sphinx writes them.
    let page =
        strip("<div role=navigation><p>Prev</p></div><div class=body role=\"main\"><p>Text.</p></div><div role=contentinfo>(c)</div>");
    assert_eq!(page.blocks, ["Text."]);
    // No main landmark: the chrome out, the rest in; a header inside an article is its own.
    let page = strip("<nav>menu</nav><div><p>Text.</p></div><article><header>Title</header><p>Body.</p></article><aside>ad</aside><footer>(c)</footer>");
    assert_eq!(page.blocks, ["Text.", "Title", "Body."]);
    assert!(!page.main_marked, "chrome left out, but no main landmark said where the content is");
    // A page that is all chrome keeps it.
    assert_eq!(strip("<nav><li>a</li><li>b</li></nav>").blocks, ["a", "b"]);
    // Landmarks not read: every block.
    let page = strip_with("<nav>menu</nav><main><p>Text.</p></main>", false);
    assert_eq!(
        (page.blocks, page.main_marked),
        (vec!["menu".to_string(), "Text.".to_string()], false)
    );
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
    assert_eq!(
        drop_raw_text_elements(html),
        "<p>a</p><p>b</p><p>c<scripts>d</scripts></p><script>never closed"
    );
    assert_eq!(strip(html).blocks, vec!["a", "b", "cd"]);
    assert!(matches!(drop_raw_text_elements("<p>plain</p>"), std::borrow::Cow::Borrowed(_)));
    assert_eq!(drop_raw_text_elements_with(html, None), drop_raw_text_elements(html));
}

#[test]
#[cfg(target_arch = "x86_64")]
fn the_packed_search_for_raw_text_starts_is_there_on_x86_64() {
    // Otherwise the proptest below would hold the memchr path to itself.
    assert!(RAW_TEXT_STARTS.is_some());
}

proptest::proptest! {
    /// The packed search for raw-text elements' starts cuts what a look at every `<` cuts,
    /// on markup made of their start and end tags in any case, their near misses and the
    /// other tags that begin with `s`, short pages and long.
    #[test]
    fn the_packed_search_cuts_what_every_lt_looked_at_cuts(
        pieces in proptest::collection::vec(proptest::sample::select(vec![
            "<script>", "<SCRIPT type=x>", "<sCrIpT/>", "</script>", "</SCRIPT >", "</scrip>", "<style>", "<STYLE\n>",
            "</style>", "</StYlE>", "<svg viewBox='0'>", "<SVG\t>", "</svg>", "</SVG>", "<scripts>", "<sv", "<sc", "<st",
            "<s", "<S", "<", ">", "<span class=s>", "<strong>", "<sub>", "<Sup>", "<small>", "<section>", "<p>", "</p>",
            "text ", "x", "\u{e9}", "<!-- <script> -->", "<a href='<style>'>",
        ]), 0..60),
    ) {
        let html: String = pieces.concat();
        proptest::prop_assert_eq!(drop_raw_text_elements_with(&html, RAW_TEXT_STARTS.as_ref()), drop_raw_text_elements_with(&html, None), "{}", html);
    }
}

/// Pages whose markup tests where the tokenizer ends tags, comments and raw text.
const TRICKY: &[&str] = &[
    "<p title=\"a > b\" data-x='c > d' e=f>x</p><p>y</p>",
    "<p =x a=b'c d= \"e>f\" g h = 'i'>t</p >u",
    "<p>a<br/>b<br / >c<img src=x />d<br\n>e</p class=z>f",
    "<div>a<!---->b<!-->c<!--->d<!-- a -- b -->e<!--x--!>f<!--y-- >z-->g</div>",
    "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0//EN\" \"x\"><?xml a=\"b\"?><p class=q>a</p>",
    "<p>a</p><math><mi class=x>m</mi><![CDATA[ <p a=\">\"> ]]></math><p>b</p>",
    "<html lang=de class=x><head><title class=t>a <b c=\"d\">x</b></title></head><body><p>t</p></body></html>",
    "<p>a</p><textarea rows=3><p class=\"x\">t</p></textarea><p>b</p><noscript><p c=d>n</p></noscript>",
    "<p>a</p><title>x</titlex> <p q=r>still</title>title</title><p>b</p>",
    "<p a=b>a</p><plaintext x=y><p a=b>rest</p>",
    "<p>a</ x>b</>c< p>d <p>e</ x=\">\">f</p>",
    "<P CLASS=X>Up</P><DIV ID=Y>per</DIV><PRE CLASS=Z>\nline one\nline two</PRE>",
    "<table class=t><!--c--> x<tr><td a=b>y</td></tr></table><p>z</p>",
    "<p>a</p><p>b<span class=\"x",
    "<p>a<scriptx a=b>b</scriptx></p><iframe src=x><p class=y>i</p></iframe><xmp a=b><i c=d>x</i></xmp>",
    "<p>a<!-- unterminated <p class=x>b",
    "<p>a<<!-- c -->b &am<!---->p; c</p>",
    "<p>a</p><select name=s><option value=1>o</option></select><p>b &amp; c&lt;d</p>",
    "<ul class=a><li class=b>one<li class=c>two</ul><dl><dt x=y>t<dd z=w>d</dl>",
    "<p>a<![CDATA[ b > c ]]>d</p>",
    "<p>a<style a=b>p { x: '</style>'; }</style>b</p><template x=y><p>h</p></template>",
    "<body><p>a<span>b</span> <a href=x>c</a><b>d<p>e</b>f</p><table><em>g</em><tr><td><i>h</i></table>",
    "<body><p>&am<span>p; &<b>amp;</b> &#<i>38;</i> a<<em>p>b</p><pre><code>\nx\r<b>\ny</b></code></pre>",
    "<head><span></span><noscript><p>n</p></noscript></head><body><p><a role=navigation>x</a>y</p>",
    "<head><template><body></template><span></span><noscript><p>n</p></noscript><body><p>m",
];

/// `slim_tags` lowercases a tag's name into `MAX_NAME_LOOKED_FOR` bytes: every name it
/// looks for fits, and a name looked for in any case is found.
#[test]
fn every_name_slimming_looks_for_fits_its_buffer() {
    let literal: [&[u8]; 12] = [
        b"a",
        b"body",
        b"frameset",
        b"input",
        b"keygen",
        b"math",
        b"nobr",
        b"plaintext",
        b"select",
        b"svg",
        b"template",
        b"textarea",
    ];
    let names = VERBATIM_ELEMENTS.iter().chain(&KEEP_ATTRIBUTES).chain(&PHRASING).chain(&literal);
    assert!(names.clone().all(|name| !name.is_empty() && name.len() <= MAX_NAME_LOOKED_FOR));
    assert_eq!(names.map(|name| name.len()).max(), Some(MAX_NAME_LOOKED_FOR));
    // Upper and mixed case: the attributes go, the text and the title stay.
    let html = "<HTML><HEAD><TITLE class=x>T</TITLE></HEAD><BODY><P CLASS=a>one <SPAN class=b>two</SPAN></P><PlainText class=c>three";
    assert_eq!(
        slim_tags(html),
        "<HTML><HEAD><TITLE>T</TITLE></HEAD><BODY><P>one two</P><PlainText class=c>three"
    );
    assert_eq!(strip(html), strip_reference(html));
}

#[test]
fn slimmed_markup_parses_to_the_same_text() {
    for html in TRICKY {
        assert_eq!(strip(html), strip_reference(html), "{html}");
    }
}

#[test]
fn slimming_drops_attributes_and_comments_and_keeps_the_rest() {
    assert_eq!(
        slim_tags("<html lang=de><p class=\"a>b\">x<!-- <p c=d> --><br/><img src=y /></p x>"),
        "<html lang=de><p>x<!-- <p c=d> --><br/><img/></p>"
    );
    assert_eq!(slim_tags("<title a=b><i c=d></title><p e=f>"), "<title><i c=d></title><p>");
    assert_eq!(slim_tags("<p>a<!-- open <p x=y>"), "<p>a<!-- open <p x=y>");
    assert_eq!(slim_tags("<!DOCTYPE html><p>plain</p>"), "<!DOCTYPE html><p>plain</p>");
    // In the body, a phrasing element around text alone goes (not in the head, not after a
    // character reference's start or a `<`, not with a role, not around other tags).
    assert_eq!(
        slim_tags("<span>h</span><body class=b><p>a <span class=k>b<em></em></span><A HREF=x>c</A>&am<b>p;</b>d<<i>e"),
        "<span>h</span><body><p>a bc&am<b>p;</b>d<<i>e"
    );
    assert_eq!(
        slim_tags("<body><a role=main href=x>m</a><a>n</a>"),
        "<body><a role=main href=x>m</a><a>n</a>"
    );
    assert_eq!(
        slim_tags("<body><b>x<p>y</b></p><code>z<br></code>"),
        "<body><b>x<p>y</b></p><code>z<br></code>"
    );
    // A tag that may carry a landmark role keeps its attributes.
    assert_eq!(
        slim_tags("<div class=a ROLE=main>x</div><p class=b>y"),
        "<div class=a ROLE=main>x</div><p>y"
    );
    assert!(matches!(slim_tags("<!DOCTYPE html><p>plain</p>"), std::borrow::Cow::Borrowed(_)));
}

proptest::proptest! {
    /// Random markup from pieces that stress the tokenizer's states: slimmed or not, the
    /// same text, title and language.
    #[test]
    fn slimming_never_changes_the_text(pieces in proptest::collection::vec(0usize..PIECES.len(), 0..40)) {
        let html: String = pieces.iter().map(|&i| PIECES[i]).collect();
        proptest::prop_assert_eq!(strip(&html), strip_reference(&html), "{}", html);
    }
}

proptest::proptest! {
    /// Text pushed a piece at a time gives the blocks `str::split` on white space gave.
    #[test]
    fn text_runs_are_told_as_str_split_tells_them(
        texts in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec![
            "a", "Zz", " ", "\t", "\n", "\r", "\u{b}", "\u{c}", "\u{1c}", "\u{85}", "\u{a0}", "\u{2003}", "\u{3000}", "\u{200b}",
            "é", "日本", "🦀", "x\u{301}",
        ]), 0..12), 0..6),
        ends in proptest::collection::vec(proptest::bool::ANY, 6),
    ) {
        let (mut fast, mut split) = (BlockBuilder::default(), BlockBuilder::default());
        for (i, pieces) in texts.iter().enumerate() {
            let text: String = pieces.concat();
            let region = Region { main: i % 2 == 0, chrome: false };
            fast.push_text(&text, region);
            split.push_text_by_split(&text, region);
            if ends[i] {
                fast.end_block();
                split.end_block();
            }
            proptest::prop_assert_eq!((&fast.current, fast.pending_space, fast.region), (&split.current, split.pending_space, split.region));
        }
        fast.end_block();
        split.end_block();
        proptest::prop_assert_eq!((fast.blocks, fast.regions), (split.blocks, split.regions));
    }
}

pub(super) const PIECES: &[&str] = &[
    "<p>",
    "</p>",
    "<p class=\"a\">",
    "<div id='d'>",
    "</div>",
    "<span a=b>",
    "</span>",
    "<a href=\"x>y\">",
    "</a>",
    "<b>",
    "</b>",
    "<table>",
    "<tr c=d>",
    "<td>",
    "</td>",
    "</table>",
    "<pre x=y>",
    "</pre>",
    "\n",
    " ",
    "text",
    "<!--",
    "-->",
    "--!>",
    "<!-- c -->",
    "<title t=u>",
    "</title>",
    "<textarea>",
    "</textarea>",
    "<script>",
    "</script>",
    "<style>",
    "</style>",
    "<noscript n=o>",
    "</noscript>",
    "<svg>",
    "</svg>",
    "<math>",
    "</math>",
    "<![CDATA[",
    "]]>",
    "<!DOCTYPE html>",
    "<?x?>",
    "</ x>",
    "</>",
    "<",
    ">",
    "\"",
    "'",
    "=",
    "/",
    "<br/>",
    "<br / >",
    "<img src=i>",
    "<html lang=fr>",
    "<head>",
    "</head>",
    "<body b=c>",
    "<li>",
    "<ul>",
    "</ul>",
    "<select>",
    "<option>",
    "</select>",
    "<template>",
    "</template>",
    "&amp;",
    "<plaintext>",
    "<xmp>",
    "</xmp>",
    "<iframe>",
    "</iframe>",
    "<h1 x>",
    "</h1>",
    "<input type=hidden>",
    "<form f=g>",
    "</form>",
    "<label>",
    "</label>",
    "<p a='>'",
    "<p a=\"",
    "<P CLASS=X>",
    "</P>",
    "<main>",
    "</main>",
    "<nav>",
    "</nav>",
    "<header>",
    "</header>",
    "<footer>",
    "</footer>",
    "<aside>",
    "</aside>",
    "<article>",
    "</article>",
    "<div role=navigation>",
    "<div class=b role='main'>",
    "<p ROLE=\"banner\">",
    "<span title='role=main'>",
    "<span>",
    "<em>",
    "</em>",
    "<code>",
    "</code>",
    "<i>",
    "</i>",
    "<nobr>",
    "<font f=g>",
    "</font>",
    "<a>",
    "<sup>",
    "&am",
    "p;",
    "&#",
    "\r",
    "<",
    "<body>",
    "<listing>",
    "<dd>",
];

#[test]
fn garbage_does_not_panic() {
    for input in ["", "<", "<<<>>>", "</p></div>", "<p", "\u{0}\u{feff}<html>", "<!-- unterminated"]
    {
        let _ = strip(input);
    }
}
