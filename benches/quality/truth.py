#!/usr/bin/env python3
"""Truth for a crawl, in the dev benchmark's format, from each page's main content.

Usage: truth.py CRAWL.warc.gz OUT   (writes OUT.truth.json and OUT.tokens.pickle)

The main content is what the page's generator marks as such, found with lxml (dupflow uses
neither the markup nor lxml): rustdoc's section#main-content without its implementation lists
(trait, auto-trait and blanket implementations are generated member lists), doxygen's
div.contents without member summary tables, javadoc's <main> without its summary section (member
and class summary tables), Sphinx's div[role=main] (Django's theme: div#yui-main), asciidoc's, haddock's and erl_docgen's
div#content (haddock's without its synopsis and contents list), gtk-doc's page below its
navigation bar without its summary tables and generated type lists, vim2html's <pre>,
makeinfo's page without its navigation headers, the blog themes' article or listing area
(quality/blogs.py: hugo's div.blog-main, Hexo's section#main, Nikola's div[role=main]), <main> elsewhere; scripts, styles and footers removed. Its words (\\w+, lowercased) are the page's tokens.
As in ../shared/bench/README.md: pages with fewer than 50 words are not scored; every pair of
scored pages sharing a run of 5 words (a run on more than 2,000 distinct contents is ignored
as boilerplate) gets its resemblance 2*LCS/(|A|+|B|) over word sequences (rapidfuzz Indel),
kept when >= 0.5; dup = 0.8, non = 0.5. The tokens pickle lets score.py (--tokens) judge
predicted pairs outside those candidates exactly. Needs fastwarc, lxml and rapidfuzz.
"""
import collections
import json
import pickle
import re
import sys

from fastwarc.warc import ArchiveIterator, WarcRecordType
from lxml import html as lxml_html
from rapidfuzz.distance import Indel

RUN = 5
MAX_RUN_PAGES = 2000
MIN_WORDS = 50
DUP, NON = 0.8, 0.5
DROP = (
    "//script | //style | //noscript"
    " | //*[@id='trait-implementations-list'] | //*[@id='synthetic-implementations-list']"
    " | //*[@id='blanket-implementations-list'] | //*[@id='trait-implementations']"
    " | //*[@id='synthetic-implementations'] | //*[@id='blanket-implementations']"
    " | //table[contains(@class, 'memberdecls')]"
    " | //section[@class='summary']"
    # haddock: the synopsis (every exported signature again) and the contents list
    " | //div[@id='synopsis'] | //div[@id='table-of-contents']"
    # gtk-doc: the navigation bars; gtk-doc and erl_docgen: the footer
    " | //table[@class='navigation'] | //div[@class='footer']"
    # news (quality/blogs.py): the related stories' headlines and teasers inside an article
    " | //aside[@class='related']"
)
# gtk-doc's generated summaries: a reference page's sections named <page>.functions, .other
# (types and values), .properties, .signals (summary tables of what the page details below),
# and its generated type lists (object hierarchy, interfaces, implementations).
GTKDOC_SUMMARIES = ("functions", "other", "properties", "signals", "object-hierarchy",
                    "implemented-interfaces", "prerequisites", "derived-interfaces", "implementations")
MAIN = ["//section[@id='main-content']",
        # doxygen's div.contents, not docutils' local table of contents (div.contents.topic)
        "//div[contains(concat(' ', @class, ' '), ' contents ') and not(contains(concat(' ', @class, ' '), ' topic '))]",
        "//div[@role='main']", "//div[@id='content']", "//main",
        # blogs: the magazine theme of quality/blogs.py (hugo), Hexo's landscape
        "//div[@class='blog-main']", "//section[@id='main']",
        # Django's documentation theme
        "//div[@id='yui-main']",
        # gtk-doc: the page below its navigation bar (dropped above)
        "/html[head/meta[@name='generator'][starts-with(@content, 'GTK-Doc')]]/body",
        # vim2html: the help file, one preformatted block
        "/html/body/pre",
        # makeinfo (texinfo): the page below its navigation header
        "/html[head/meta[@name='Generator' or @name='generator'][@content='makeinfo']]/body"]
# makeinfo's navigation (Next, Previous, Up), at the head and foot of every node.
TEXINFO_NAVIGATION = "//div[@class='header'] | //div[@class='nav-panel']"


def main_words(body):
    try:
        tree = lxml_html.fromstring(body)
    except Exception:
        return None
    for node in tree.xpath(DROP):
        node.drop_tree()
    if tree.xpath("/html/head/meta[@name='Generator' or @name='generator'][@content='makeinfo']"):
        for node in tree.xpath(TEXINFO_NAVIGATION):
            node.drop_tree()
    for node in tree.xpath("//div[@class='refsect1'][a[@name]]"):
        if node.xpath("string(a[@name][1]/@name)").rsplit(".", 1)[-1] in GTKDOC_SUMMARIES:
            node.drop_tree()
    for selector in MAIN:
        found = tree.xpath(selector)
        if found:
            text = " ".join(node.text_content() for node in found)
            return re.findall(r"\w+", text.lower())
    return None


def pages(path):
    with open(path, "rb") as f:
        for record in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            content_type = record.http_headers.get("Content-Type", "") if record.http_headers else ""
            if "html" not in content_type or record.http_headers.status_code != 200:
                continue
            words = main_words(record.reader.read())
            if words is not None:
                yield record.headers["WARC-Target-URI"].strip("<>"), words


def main():
    crawl, out = sys.argv[1], sys.argv[2]
    tokens = dict(pages(crawl))
    urls = sorted(u for u, w in tokens.items() if len(w) >= MIN_WORDS)
    excluded = sorted(u for u, w in tokens.items() if len(w) < MIN_WORDS)
    # Identical contents are compared once.
    contents = {}
    for i, u in enumerate(urls):
        contents.setdefault(tuple(tokens[u]), []).append(i)
    distinct = list(contents)
    postings = collections.defaultdict(list)
    for c, words in enumerate(distinct):
        for run in {hash(tuple(words[i:i + RUN])) for i in range(len(words) - RUN + 1)}:
            postings[run].append(c)
    shared = collections.Counter()
    for members in postings.values():
        if 1 < len(members) <= MAX_RUN_PAGES:
            for a in range(len(members)):
                for b in range(a + 1, len(members)):
                    shared[members[a], members[b]] += 1
    sims = {}

    def add(group_a, group_b, s):
        for a in group_a:
            for b in group_b:
                if a != b:
                    sims[f"{min(a, b)} {max(a, b)}"] = round(s, 4)

    for members in contents.values():
        add(members, members, 1.0)
    for (a, b) in shared:
        la, lb = len(distinct[a]), len(distinct[b])
        if 2 * min(la, lb) < NON * (la + lb):
            continue
        s = Indel.normalized_similarity(distinct[a], distinct[b])
        if s >= NON:
            add(contents[distinct[a]], contents[distinct[b]], s)
    truth = {"dup": DUP, "non": NON, "urls": urls, "excluded": excluded, "sims": sims,
             "lengths": [len(tokens[u]) for u in urls]}
    with open(out + ".truth.json", "w") as f:
        json.dump(truth, f)
    with open(out + ".tokens.pickle", "wb") as f:
        pickle.dump({u: tokens[u] for u in urls}, f)
    dups = sum(1 for s in sims.values() if s >= DUP)
    print(f"{len(tokens)} html pages, {len(urls)} scored, {len(distinct)} distinct contents, "
          f"{len(shared)} candidate pairs, {dups} duplicate pairs", file=sys.stderr)


if __name__ == "__main__":
    main()
