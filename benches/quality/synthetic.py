#!/usr/bin/env python3
"""A documentation site with known failure patterns planted in real prose, as HTML files.

Usage: synthetic.py OUTDIR [--seed 1]

Source text: the prose documentation of this machine (/usr/share/doc, as benches/text_corpus.py
reads it). Every page carries one site template (navigation, footer); its own text is in
<main>, what quality/truth.py takes as the page's content. Sections (the first path segment,
what score.py --by-section groups by):

- family/: pages written from one pattern, one page per member of a family (commands,
  objects): the member's name is substituted into every sentence, so no two members share a
  sentence, yet their words agree at 0.8-0.9. 40 patterns of 3-10 members.
- siblings/: 480 API-like pages in groups of 40; each group shares a generated member list
  (<aside>, about 3/4 of the page's words: not main content), each page has 5 sentences of
  its own. Truth: all distinct.
- stubs/: 1,500 identical "no longer distributed" stubs and 100 near-copies with a notice
  line above the stub text. Truth: one family.
- versions/: 300 prose pages in two versions, the second with 2-6% of its words replaced (or,
  for one in ten, rewritten from other text: a distinct pair).
- unique/: 400 distinct prose pages.

Writes OUTDIR/<section>/*.html and OUTDIR/index.html linking every page. Deterministic.
"""
import argparse
import html
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from text_corpus import source_lines  # noqa: E402


def sentences_from(lines):
    """Lines of real prose, 8-30 words, ending as sentences."""
    for line in lines:
        words = line.split()
        if 8 <= len(words) <= 30 and line[-1] not in ":;,":
            yield line if line[-1] in ".!?" else line + "."


NAV = ("<nav><ul><li><a href='../index.html'>Home</a></li><li>Guide: getting started, installation and "
       "configuration of every component</li><li>Reference manual for commands and options</li>"
       "<li>Release notes and the list of known issues</li><li>Community, mailing lists and support</li></ul></nav>")
FOOTER = ("<footer><p>Copyright the project authors. This documentation is licensed under the terms of "
          "the GNU Free Documentation License, version 1.3 or any later version published by the Free "
          "Software Foundation.</p><p>Report a documentation bug through the issue tracker of the project.</p></footer>")


def page(title, main, aside=""):
    body = "".join(f"<p>{html.escape(s)}</p>" for s in main)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
            f"<body>{NAV}{aside}<main><h1>{html.escape(title)}</h1>{body}</main>{FOOTER}</body></html>")


def member_name(r, words):
    return "-".join(r.sample(words, 2)).lower()


def replace_words(sentences, share, r, vocabulary):
    out = []
    for s in sentences:
        words = s.split()
        for i in range(len(words)):
            if r.random() < share:
                words[i] = r.choice(vocabulary)
        out.append(" ".join(words))
    return out


def build(outdir, seed):
    r = random.Random(seed)
    pool = list(sentences_from(source_lines()))
    r.shuffle(pool)
    vocabulary = sorted({w for s in pool[:20000] for w in s.split() if w.isalpha() and len(w) > 3})
    name_words = [w.lower() for w in vocabulary if w.islower()][:3000]
    take = iter(pool)

    def prose(n):
        return [next(take) for _ in range(n)]

    pages = {}
    # family/: one pattern per family, the member's name in every sentence.
    for f in range(40):
        pattern = prose(r.randint(8, 14))
        slots = [r.randrange(len(s.split())) for s in pattern]
        for m in range(r.randint(3, 10)):
            name = member_name(r, name_words)
            text = []
            for s, slot in zip(pattern, slots):
                words = s.split()
                words[slot] = name
                text.append(" ".join(words))
            pages[f"family/f{f:02d}-{name}.html"] = page(f"The {name} command", text)
    # siblings/: generated member lists shared by a group, three sentences of their own.
    for g in range(12):
        members = [f"{member_name(r, name_words)}: " + s for s in prose(24)]
        aside = "<aside class='members'><h2>Methods</h2><ul>" + "".join(f"<li>{html.escape(m)}</li>" for m in members) + "</ul></aside>"
        for k in range(40):
            name = member_name(r, name_words)
            pages[f"siblings/g{g:02d}-{name}.html"] = page(f"Struct {name}", prose(5), aside)
    # stubs/: one family, identical pages and near-copies with a notice above.
    stub = ["This edition of the book is no longer distributed with the project and its contents have moved.",
            "The pages of the older edition are kept here only so that links from other sites keep working.",
            "You can find the current version of this chapter in the latest edition of the book.",
            "If you were looking for a specific section, use the search box or the table of contents."]
    stub += prose(2)
    for i in range(1500):
        pages[f"stubs/s{i:04d}.html"] = page("No longer distributed", stub)
    for i in range(100):
        pages[f"stubs/n{i:04d}.html"] = page("No longer distributed", [f"Notice: chapter {i} was renamed in this edition."] + stub)
    # versions/: two versions of prose pages.
    for i in range(300):
        text = prose(r.randint(6, 16))
        pages[f"versions/v1-{i:03d}.html"] = page(f"Chapter {i}", text)
        if i % 10 == 9:
            second = prose(len(text))
        else:
            second = replace_words(text, r.uniform(0.02, 0.06), r, vocabulary)
        pages[f"versions/v2-{i:03d}.html"] = page(f"Chapter {i}", second)
    # unique/: distinct prose.
    for i in range(400):
        pages[f"unique/u{i:03d}.html"] = page(f"Article {i}", prose(r.randint(5, 15)))

    for path, text in pages.items():
        full = os.path.join(outdir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as out:
            out.write(text)
    links = "".join(f"<li><a href='{p}'>{p}</a></li>" for p in sorted(pages))
    with open(os.path.join(outdir, "index.html"), "w") as out:
        out.write(f"<!DOCTYPE html><html><body><ul>{links}</ul></body></html>")
    print(f"{len(pages)} pages in {outdir}", file=sys.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    build(args.outdir, args.seed)
