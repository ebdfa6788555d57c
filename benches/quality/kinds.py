#!/usr/bin/env python3
"""Score a clustering of a blog crawl by page kind, and say how far apart its clusters reach.

Usage: kinds.py TRUTH.json CLUSTERS.jsonl TOKENS.pickle [--explain DUPFLOW WARC RUN [--config F]]

The figures of ../shared/bench/score.py (page-averaged precision, recall and F1, where every
page weighs the same; pairwise precision), overall and for each kind of page, told by its URL:
- article: a post (hugo's and Nikola's /posts/NAME/, Hexo's /YYYY/MM/DD/NAME/) or its print or
  mobile copy;
- listing: what lists posts: the index and its pages, tag, category, author and date archives;
- other: the rest (about pages, galleries).
A page's precision and recall count its predicted and true mates of every kind.

Then the clusters' reach: for each cluster of scored pages, its smallest pairwise resemblance
(main contents, rapidfuzz Indel over words; up to 200 members sampled); the clusters whose
smallest is below the truth's `non` (0.5) mix unrelated pages, and the largest cluster's is
printed. With --explain, every pair below `non` in a cluster (of its up to 200 sampled members)
is looked up with `DUPFLOW explain --run RUN` (the run's --out folder, read from WARC): the
verified path joining the two, and how many edges it takes (a direct edge is 1; the chains
that join unrelated pages are the longer ones). Needs rapidfuzz.
"""
import collections
import itertools
import json
import pickle
import random
import re
import subprocess
import sys

from rapidfuzz.distance import Indel

ARTICLE = re.compile(r"/(posts|print/posts|amp/posts)/[^/]+/(index\.html)?$|/\d{4}/\d{2}/\d{2}/[^/]+/(index\.html)?$")
LISTING = re.compile(r"/(tags?|categor(y|ies)|authors?|archives?|page|posts)(/|\.html|$)|/index(-\d+)?\.html$|/\d{4}/(\d{2}/)?(index\.html)?$|^https?://[^/]+/(v2/)?$")


def kind(url):
    if ARTICLE.search(url):
        return "article"
    if LISTING.search(url):
        return "listing"
    return "other"


def main():
    truth_path, clusters_path, tokens_path = sys.argv[1:4]
    explain = None
    if "--explain" in sys.argv:
        at = sys.argv.index("--explain")
        explain = sys.argv[at + 1 : at + 4]
        rest = sys.argv[at + 4 :]
        if "--config" in rest:
            explain += ["--config", rest[rest.index("--config") + 1]]
    truth = json.load(open(truth_path))
    tokens = pickle.load(open(tokens_path, "rb"))
    urls = truth["urls"]
    idx = {u: i for i, u in enumerate(urls)}
    dup, non = truth["dup"], truth["non"]
    sims = {tuple(map(int, k.split())): s for k, s in truth["sims"].items()}

    def resemblance(a, b):
        a, b = min(a, b), max(a, b)
        s = sims.get((a, b))
        if s is None:
            s = Indel.normalized_similarity(tokens[urls[a]], tokens[urls[b]])
            sims[(a, b)] = s
        return s

    label = {}
    for line in open(clusters_path):
        if line.strip():
            o = json.loads(line)
            if o["url"] in idx:
                label[idx[o["url"]]] = str(o["cluster"])
    groups = collections.defaultdict(list)
    for i, c in label.items():
        groups[c].append(i)
    mates = collections.defaultdict(set)
    tp = fp = 0
    for members in groups.values():
        for a, b in itertools.combinations(members, 2):
            mates[a].add(b)
            mates[b].add(a)
            if len(members) <= 400:
                s = resemblance(a, b)
                tp += s >= dup
                fp += s < non
    true_mates, ambiguous = collections.defaultdict(set), collections.defaultdict(set)
    for (a, b), s in list(sims.items()):
        if s >= non:
            (true_mates if s >= dup else ambiguous)[a].add(b)
            (true_mates if s >= dup else ambiguous)[b].add(a)
    per_kind = collections.defaultdict(lambda: ([], []))
    pages = collections.Counter()
    for i, u in enumerate(urls):
        k = kind(u)
        pages[k] += 1
        judged = mates[i] - ambiguous[i]
        for name in ("all", k):
            if judged:
                per_kind[name][0].append(len(judged & true_mates[i]) / len(judged))
            if true_mates[i]:
                per_kind[name][1].append(len(mates[i] & true_mates[i]) / len(true_mates[i]))
    pages["all"] = len(urls)
    for name in ("all", "article", "listing", "other"):
        ps, rs = per_kind[name]
        if not pages[name]:
            continue
        p = sum(ps) / len(ps) if ps else 1.0
        r = sum(rs) / len(rs) if rs else 1.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        print(f"{name:8} {pages[name]:5} pages: page-averaged precision {p:.4f} recall {r:.4f} f1 {f:.4f}")
    print(f"pairwise precision {tp / (tp + fp) if tp + fp else 1.0:.4f} (true {tp}, false {fp}; clusters over 400 pages not judged pairwise)")
    rng = random.Random(0)
    spread = []
    for c, members in groups.items():
        if len(members) < 2:
            continue
        sample = members if len(members) <= 200 else rng.sample(members, 200)
        pairs = [(resemblance(a, b), (a, b)) for a, b in itertools.combinations(sample, 2)]
        low = min(s for s, _ in pairs)
        spread.append((len(members), low, c, [pair for s, pair in pairs if s < non]))
    spread.sort(reverse=True)
    mixed = [s for s in spread if s[1] < non]
    if spread:
        size, low, c, _ = spread[0]
        print(f"largest cluster {size} pages, smallest pairwise resemblance {low:.3f}; "
              f"{len(mixed)} of {len(spread)} clusters hold a pair below {non} "
              f"({sum(s[0] for s in mixed)} pages)")
    for size, low, c, _ in mixed[:5]:
        kinds = collections.Counter(kind(urls[i]) for i in groups[c])
        print(f"  cluster {c}: {size} pages {dict(kinds)}, smallest {low:.3f}, e.g. {urls[groups[c][0]]}")
    if explain and mixed:
        edges = collections.Counter()
        binary, warc, run, *config = explain
        for size, low, c, unlike in mixed:
            for a, b in unlike:
                answer = subprocess.run(
                    [binary, "explain", "--json", "--run", run, *config, urls[a], urls[b], warc],
                    capture_output=True, text=True, check=True)
                path = json.loads(answer.stdout)["clusters"].get("path") or []
                edges[len(path)] += 1
        print(f"pairs below {non} in a cluster: {sum(edges.values())}, joined by "
              f"{', '.join(f'{n} verified edges: {k}' for n, k in sorted(edges.items()))}; "
              f"longest {max(edges)}")


if __name__ == "__main__":
    main()
