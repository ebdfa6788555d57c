#!/usr/bin/env python3
"""The baselines for benches/text.sh: MinHash-LSH over a JSONL corpus, one core.

Usage: text_minhash.py CORPUS.jsonl OUT.json [--engine datasketch|rensa] [--threshold 0.8] [--perm 128]

Whole-document 5-word shingles of the lowercased text, MinHash with `perm` permutations, LSH at
`threshold`; each document is queried, then inserted, and joined (union-find) to every earlier
document the index returns (the usual dedup loop). `datasketch` is the library most pipelines
use; `rensa` (a Rust core) with 16 bands and seed 42 is the speed peer's MinHash
(../shared/tools/fast_minhash_peer.py). Writes {id: cluster id} and prints the time.
"""

import argparse
import json
import time



def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("out")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--perm", type=int, default=128)
    parser.add_argument("--engine", choices=["datasketch", "rensa"], default="datasketch")
    args = parser.parse_args()
    if args.engine == "rensa":
        from rensa import RMinHash, RMinHashLSH

        lsh = RMinHashLSH(threshold=args.threshold, num_perm=args.perm, num_bands=16)

        def signature(shingles):
            m = RMinHash(num_perm=args.perm, seed=42)
            m.update(list(shingles))
            return m
    else:
        from datasketch import MinHash, MinHashLSH

        lsh = MinHashLSH(threshold=args.threshold, num_perm=args.perm)

        def signature(shingles):
            m = MinHash(num_perm=args.perm)
            m.update_batch(s.encode() for s in shingles)
            return m

    start = time.perf_counter()
    keys = {}
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
            m = signature(shingles)
            id = row["id"]
            parent[id] = id
            # rensa keys documents by integer: the n-th document is n.
            keys[n] = id
            key = n if args.engine == "rensa" else id
            for other in lsh.query(m):
                other = keys[other] if args.engine == "rensa" else other
                a, b = find(id), find(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            lsh.insert(key, m)
            n += 1
    clusters = {id: find(id) for id in parent}
    elapsed = time.perf_counter() - start
    with open(args.out, "w") as f:
        json.dump(clusters, f)
    print(f"{n} {elapsed:.2f}")


if __name__ == "__main__":
    main()
