#!/usr/bin/env python3
"""A web crawl of N pages with the statistics of real crawls, as one WARC.

Usage: corpus.py OUT.warc.gz --pages N [--seed 1] [--source ../shared/bench/docs-dev.warc.gz]
       corpus.py - --truth TRUTH.json --pages N ...   (the WARC on stdout, as it is written)

Text comes from the dev benchmark's crawl (the visible text of its 3,545 pages): its sentences
are the pool real prose is drawn from, its words (with their frequencies) the vocabulary new
sentences are written from, so no two generated sentences are alike by accident. Per 100 pages,
in crawl order shuffled (families spread across the whole crawl, as a crawler meets them):

- 50 unique pages: 12-60 sentences, a quarter of them real sentences from the pool (quotes,
  boilerplate that recurs across unrelated pages), the rest written from the vocabulary;
- 25 in families of near-copies (sizes from a Pareto law, 2 to 2,000 pages): one text, each
  copy with 1-5% of its words replaced and a sentence dropped or added (mirrors, versions,
  syndicated articles), across hosts;
- 10 in families of identical stubs (Pareto sizes up to N/20 pages: soft 404s, login walls,
  parked domains), each family on one host;
- 15 template-heavy siblings, in groups of 20-200 pages of one host: a generated member list
  (70-85% of each page) shared by the group, 3-8 sentences of their own (API reference pages).

Hosts: N/400 of them (at least 8), sizes Zipf-like; every host has its own template (a
navigation block and a footer, 8-20 sentences) on all its pages. Records are HTTP 200
text/html responses, one gzip member each, dated in crawl order. Writes OUT.warc.gz and
OUT.truth.json ({"pages": N, "families": {kind: [sizes]}}). Deterministic for a seed.
"""

import argparse
import bisect
import datetime
import gzip
import html
import itertools
import json
import os
import random
import re
import sys
import uuid
import zlib

TAG = re.compile(r"<[^>]+>")
BLOCK = re.compile(r"<(?:p|li|h[1-6]|td|dd|dt)\b[^>]*>(.*?)</(?:p|li|h[1-6]|td|dd|dt)>", re.S | re.I)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def warc_records(path):
    """(headers, body) of each record of a (gzip) WARC, stdlib only."""
    with gzip.open(path, "rb") as f:
        while True:
            line = f.readline()
            if not line:
                return
            if not line.startswith(b"WARC/"):
                continue
            headers = {}
            while True:
                line = f.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                k, _, v = line.decode("utf-8", "replace").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = f.read(int(headers.get("content-length", "0")))
            yield headers, body


def source_text(path):
    """Sentences (6-40 words) of the source crawl's pages, and word frequencies."""
    sentences, counts = [], {}
    for headers, body in warc_records(path):
        if headers.get("warc-type") != "response":
            continue
        _, _, page = body.partition(b"\r\n\r\n")
        text = page.decode("utf-8", "replace")
        text = re.sub(r"<(script|style|pre|code)\b.*?</\1>", " ", text, flags=re.S | re.I)
        for block in BLOCK.findall(text):
            block = html.unescape(TAG.sub(" ", block))
            for s in SENTENCE_END.split(" ".join(block.split())):
                words = s.split()
                if 6 <= len(words) <= 40:
                    sentences.append(s)
                for w in words:
                    w = w.strip(".,;:!?()[]\"'`").lower()
                    if w.isalpha() and len(w) > 1:
                        counts[w] = counts.get(w, 0) + 1
    sentences = sorted(set(sentences))
    vocabulary = sorted(counts, key=lambda w: (-counts[w], w))
    cumulative = list(itertools.accumulate(counts[w] for w in vocabulary))
    return sentences, vocabulary, cumulative


class Writer:
    """Sentences and pages from the source text, drawn with a given Random."""

    def __init__(self, sentences, vocabulary, cumulative):
        self.sentences, self.vocabulary, self.cumulative = sentences, vocabulary, cumulative

    def words(self, r, n):
        total = self.cumulative[-1]
        return [self.vocabulary[bisect.bisect_left(self.cumulative, r.random() * total)] for _ in range(n)]

    def sentence(self, r):
        if r.random() < 0.25:
            return r.choice(self.sentences)
        words = self.words(r, r.randint(7, 22))
        return " ".join(words).capitalize() + "."

    def text(self, r, lo, hi):
        return [self.sentence(r) for _ in range(r.randint(lo, hi))]


def edit(r, sentences, share):
    """A near-copy: `share` of the words replaced (by other words of the text), a sentence
    dropped or repeated."""
    words = [s.split() for s in sentences]
    flat = [w for s in words for w in s]
    for s in words:
        for i in range(len(s)):
            if r.random() < share:
                s[i] = r.choice(flat)
    out = [" ".join(s) for s in words]
    if len(out) > 4:
        if r.random() < 0.5:
            del out[r.randrange(len(out))]
        else:
            out.insert(r.randrange(len(out)), out[r.randrange(len(out))])
    return out


def pareto_sizes(r, pages, lo, cap, alpha):
    """Family sizes summing to `pages`, Pareto(alpha) from `lo`, each at most `cap`."""
    sizes, left = [], pages
    while left >= lo:
        size = min(cap, left, int(lo / (1.0 - r.random()) ** (1.0 / alpha)))
        sizes.append(size)
        left -= size
    if left:
        sizes.append(left)
    return sizes


def render(host_template, title, body, aside=None):
    nav, footer = host_template
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>", html.escape(title),
             "</title></head><body><nav><ul>"]
    parts += [f"<li>{html.escape(s)}</li>" for s in nav]
    parts.append("</ul></nav>")
    if aside:
        parts.append("<aside><ul>")
        parts += [f"<li>{html.escape(s)}</li>" for s in aside]
        parts.append("</ul></aside>")
    parts.append(f"<main><h1>{html.escape(title)}</h1>")
    parts += [f"<p>{html.escape(s)}</p>" for s in body]
    parts.append("</main><footer>")
    parts += [f"<p>{html.escape(s)}</p>" for s in footer]
    parts.append("</footer></body></html>")
    return "".join(parts)


def record(url, date, body_html, record_id):
    body = body_html.encode("utf-8")
    http = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\nWARC-Date: {date}\r\n"
            f"WARC-Record-ID: <urn:uuid:{record_id}>\r\nContent-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n").encode()
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    return c.compress(head + http + b"\r\n\r\n") + c.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--pages", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth", help="with OUT -: where the truth goes")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "../../../shared/bench/docs-dev.warc.gz"))
    args = ap.parse_args()
    if not os.path.exists(args.source):
        sys.exit(f"{args.source} is absent: the scale corpora are written from the dev benchmark's crawl (../shared/bench)")
    n = args.pages
    writer = Writer(*source_text(args.source))
    r = random.Random(args.seed)

    # Hosts with Zipf-like sizes; each with its template.
    hosts = max(8, n // 400)
    host_weights = list(itertools.accumulate(1.0 / (k + 1) ** 0.9 for k in range(hosts)))
    pick_host = lambda r: bisect.bisect_left(host_weights, r.random() * host_weights[-1])
    templates = {}

    def template(h):
        if h not in templates:
            t = random.Random(f"{args.seed}/host/{h}")
            templates[h] = (writer.text(t, 6, 14), writer.text(t, 2, 6))
        return templates[h]

    # Page descriptors: (kind, group, member, host); generated in one pass after the shuffle.
    descriptors, families = [], {"near_copies": [], "stubs": [], "siblings": []}
    for i in range(n * 50 // 100):
        descriptors.append(("unique", i, 0, pick_host(r)))
    for g, size in enumerate(pareto_sizes(r, n * 25 // 100, 2, 2_000, 1.1)):
        families["near_copies"].append(size)
        descriptors += [("near", g, m, pick_host(r)) for m in range(size)]
    for g, size in enumerate(pareto_sizes(r, n * 10 // 100, 2, max(2, n // 20), 0.9)):
        families["stubs"].append(size)
        h = pick_host(r)
        descriptors += [("stub", g, m, h) for m in range(size)]
    left = n - len(descriptors)
    g = 0
    while left > 0:
        size = min(left, r.randint(20, 200))
        families["siblings"].append(size)
        h = pick_host(r)
        descriptors += [("sibling", g, m, h) for m in range(size)]
        left -= size
        g += 1
    r.shuffle(descriptors)

    cache = {}

    def group_text(kind, g):
        key = (kind, g)
        if key not in cache:
            if len(cache) > 4096:
                cache.clear()
            t = random.Random(f"{args.seed}/{kind}/{g}")
            if kind == "near":
                cache[key] = (writer.text(t, 15, 60), None)
            elif kind == "stub":
                cache[key] = (writer.text(t, 1, 4), None)
            else:  # sibling: the group's generated member list
                cache[key] = (None, writer.text(t, 30, 80))
        return cache[key]

    streamed = args.out == "-"
    if streamed and not args.truth:
        sys.exit("corpus.py -: --truth PATH names where the truth goes")
    truth = args.truth or args.out.removesuffix(".warc.gz") + ".truth.json"
    with (open(sys.stdout.fileno(), "wb", closefd=False) if streamed else open(args.out + ".tmp", "wb")) as out:
        out.write(record(f"http://scale.example/warcinfo", "2026-01-01T00:00:00Z", "", uuid.UUID(int=0)))
        for i, (kind, g, m, h) in enumerate(descriptors):
            t = random.Random(f"{args.seed}/page/{i}")
            if kind == "unique":
                title, body, aside = f"Page {g}", writer.text(t, 12, 60), None
            elif kind == "near":
                text, _ = group_text(kind, g)
                title, body, aside = f"Article {g}", (text if m == 0 else edit(t, text, t.uniform(0.01, 0.05))), None
            elif kind == "stub":
                text, _ = group_text(kind, g)
                title, body, aside = "Not found", text, None
            else:
                _, members = group_text(kind, g)
                title, body, aside = f"Item {g}.{m}", writer.text(t, 3, 8), members
            url = f"http://host{h}.example/{kind}/{g}/{m}/{i}.html"
            date = datetime.datetime.fromtimestamp(1_767_225_600 + i, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            out.write(record(url, date, render(template(h), title, body, aside), uuid.UUID(int=r.getrandbits(128))))
    if not streamed:
        os.replace(args.out + ".tmp", args.out)
    with open(truth, "w") as f:
        json.dump({"pages": n, "families": families}, f)
    print(f"{n} pages on {hosts} hosts: {len(families['near_copies'])} near-copy families (largest "
          f"{max(families['near_copies'], default=0)}), {len(families['stubs'])} stub families (largest "
          f"{max(families['stubs'], default=0)}), {len(families['siblings'])} sibling groups -> {args.out}",
          file=sys.stderr if streamed else sys.stdout)


if __name__ == "__main__":
    main()
