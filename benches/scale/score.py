#!/usr/bin/env python3
"""Scores a clusters.jsonl of a scale corpus (benches/scale/corpus.py) against its planted truth.

Usage: score.py CLUSTERS.jsonl

The truth is in the URLs: http://hostH.example/KIND/GROUP/MEMBER/I.html. Pages of one near-copy
family or one stub family (KIND near or stub, same GROUP) are duplicates; siblings and unique
pages are distinct from everything. Prints pairwise precision, recall and F1, and the number of
clusters each kind of family was split into.
"""
import collections
import json
import re
import sys

URL = re.compile(r"^http://host\d+\.example/(\w+)/(\d+)/(\d+)/(\d+)\.html$")


def main():
    clusters = collections.defaultdict(list)
    with open(sys.argv[1]) as f:
        for line in f:
            row = json.loads(line)
            m = URL.match(row["url"])
            if m:
                kind, group = m.group(1), int(m.group(2))
                clusters[row["cluster"]].append((kind, group) if kind in ("near", "stub") else (kind, row["url"]))
    pairs = lambda n: n * (n - 1) // 2
    tp = fp = 0
    family_size = collections.Counter()
    family_clusters = collections.defaultdict(set)
    for cid, members in clusters.items():
        count = collections.Counter(members)
        same = sum(pairs(c) for c in count.values())
        tp += same
        fp += pairs(len(members)) - same
        for fam, c in count.items():
            family_size[fam] += c
            family_clusters[fam].add(cid)
    true_pairs = sum(pairs(c) for c in family_size.values())
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / true_pairs if true_pairs else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    print(f"pairwise: precision {p:.4f} recall {r:.4f} f1 {f1:.4f} (tp {tp} fp {fp} fn {true_pairs - tp})")
    for kind in ("near", "stub"):
        fams = [f for f in family_size if f[0] == kind]
        whole = sum(1 for f in fams if len(family_clusters[f]) == 1)
        largest = max(fams, key=lambda f: family_size[f], default=None)
        if largest:
            print(f"{kind}: {whole} of {len(fams)} families whole; the largest ({family_size[largest]} pages) in {len(family_clusters[largest])} cluster(s)")


if __name__ == "__main__":
    main()
