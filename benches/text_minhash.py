#!/usr/bin/env python3
"""The baseline for benches/text.sh: datasketch MinHash-LSH over a JSONL corpus, one core.

Usage: text_minhash.py CORPUS.jsonl OUT.json [--threshold 0.8] [--perm 128]

Whole-document 5-word shingles, MinHash with `perm` permutations, MinHashLSH at `threshold`;
each document is queried, then inserted, and joined (union-find) to every earlier document the
index returns (the usual datasketch dedup loop). Writes {id: cluster id} and prints the time.
"""

import argparse
import json
import time

from datasketch import MinHash, MinHashLSH


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("out")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--perm", type=int, default=128)
    args = parser.parse_args()
    start = time.perf_counter()
    lsh = MinHashLSH(threshold=args.threshold, num_perm=args.perm)
    parent = {}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    n = 0
    with open(args.corpus) as f:
        for line in f:
            row = json.loads(line)
            words = row["text"].lower().split()
            shingles = {" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))}
            m = MinHash(num_perm=args.perm)
            m.update_batch(s.encode() for s in shingles)
            id = row["id"]
            parent[id] = id
            for other in lsh.query(m):
                a, b = find(id), find(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            lsh.insert(id, m)
            n += 1
    clusters = {id: find(id) for id in parent}
    elapsed = time.perf_counter() - start
    with open(args.out, "w") as f:
        json.dump(clusters, f)
    print(f"{n} {elapsed:.2f}")


if __name__ == "__main__":
    main()
