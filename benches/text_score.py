#!/usr/bin/env python3
"""Scores clusters of a planted text corpus (benches/text.sh).

Usage: text_score.py TRUTH.json CLUSTERS (a dupflow clusters.jsonl, or a {id: cluster} JSON)

Prints: planted pairs found / all planted pairs (recall), planted documents whose family is
one cluster exactly, and pairs outside the planted families (unlabelled: the source text
repeats itself, so some are true duplicates).
"""

import json
import sys
from itertools import combinations


def load(path):
    with open(path) as f:
        head = f.read(1)
        f.seek(0)
        if head == "{" and path.endswith(".jsonl"):
            return {r["url"]: r["cluster"] for r in map(json.loads, f)}
        return json.load(f)


def main():
    truth = json.load(open(sys.argv[1]))
    clusters = load(sys.argv[2])
    truth_pairs = set()
    for members in truth.values():
        truth_pairs.update(combinations(sorted(members), 2))
    by_cluster = {}
    for id, c in clusters.items():
        by_cluster.setdefault(c, []).append(id)
    found = extra = 0
    for members in by_cluster.values():
        for pair in combinations(sorted(members), 2):
            if pair in truth_pairs:
                found += 1
            else:
                extra += 1
    whole = sum(1 for m in truth.values() if len({clusters.get(i) for i in m}) == 1 and len(by_cluster.get(clusters.get(m[0]), [])) == len(m))
    print(f"recall {found / len(truth_pairs):.4f} ({found}/{len(truth_pairs)} planted pairs); families exact {whole}/{len(truth)}; unlabelled pairs {extra}")


if __name__ == "__main__":
    main()
