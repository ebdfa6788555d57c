#!/usr/bin/env python3
"""A JSONL text corpus with planted near-duplicates, from the text documentation on this machine.

Usage: text_corpus.py OUT.jsonl [--docs 100000] [--seed 1]

Source text: every prose file under /usr/share/doc and /usr/share/common-licenses (changelogs,
copyright files, READMEs; gzip or plain; not PDF, PostScript, images or markup), identical files
once, lines of at least three words and mostly letters. Base documents are
consecutive, non-overlapping windows of 6-25 lines of that text, so they read like real
prose and carry its boilerplate ("* New upstream release.", license paragraphs). Planted, each
from a base document:

- exact copies (10% of the documents),
- near copies (10%): 3-8% of the words replaced, one line dropped or a line added.

Writes OUT.jsonl (`{"id", "text", "url"}`) and OUT.truth.json: the planted families, as
{family id: [document ids]}. Pairs inside a family are the truth; other pairs are unlabelled
(the source text repeats itself: many packages ship the same changelog entries).
"""

import argparse
import gzip
import hashlib
import json
import os
import random


def prose_file(name):
    """Text written by people: not PDF/PostScript/images/markup (their operators are not prose)."""
    name = name.lower().removesuffix(".gz")
    return not name.endswith((".pdf", ".ps", ".eps", ".svg", ".png", ".jpg", ".gif", ".html", ".htm", ".xml", ".css", ".js", ".json"))


def source_lines():
    seen = set()
    for root in ["/usr/share/doc", "/usr/share/common-licenses"]:
        for dirpath, _, names in sorted(os.walk(root)):
            for name in sorted(names):
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or not os.path.isfile(path) or not prose_file(name):
                    continue
                try:
                    raw = gzip.open(path).read() if name.endswith(".gz") else open(path, "rb").read()
                except OSError:
                    continue
                digest = hashlib.md5(raw).digest()
                if digest in seen or b"\0" in raw[:4096]:
                    continue
                seen.add(digest)
                for line in raw.decode("utf-8", "replace").splitlines():
                    line = " ".join(line.split())
                    if len(line.split()) >= 3 and sum(c.isalpha() for c in line) >= 0.6 * len(line):
                        yield line


def near_copy(text, rng):
    lines = text.split("\n")
    words = [line.split(" ") for line in lines]
    total = sum(len(w) for w in words)
    for _ in range(max(1, int(total * rng.uniform(0.03, 0.08)))):
        line = rng.randrange(len(words))
        if words[line]:
            words[line][rng.randrange(len(words[line]))] = rng.choice(["edited", "changed", "revised", "updated", "new"])
    lines = [" ".join(w) for w in words]
    if rng.random() < 0.5 and len(lines) > 8:
        del lines[rng.randrange(len(lines))]
    else:
        lines.insert(rng.randrange(len(lines) + 1), "This line was added to a copy of the document.")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base_count = int(args.docs * 0.8)
    bases = []
    window = []
    want = rng.randint(6, 25)
    for line in source_lines():
        window.append(line)
        if len(window) == want:
            bases.append("\n".join(window))
            window = []
            want = rng.randint(6, 25)
            if len(bases) == base_count:
                break
    docs = [(f"doc{i:06d}", text, i) for i, text in enumerate(bases)]
    families = {}
    for n in range(args.docs - len(bases)):
        base = rng.randrange(len(bases))
        text = bases[base] if n % 2 == 0 else near_copy(bases[base], rng)
        docs.append((f"{'copy' if n % 2 == 0 else 'near'}{n:06d}", text, base))
        families.setdefault(f"doc{base:06d}", [f"doc{base:06d}"]).append(docs[-1][0])
    rng.shuffle(docs)
    with open(args.out, "w") as f:
        for id, text, base in docs:
            f.write(json.dumps({"id": id, "text": text, "url": f"https://docs{base % 500}.example/{id}"}) + "\n")
    with open(args.out.removesuffix(".jsonl") + ".truth.json", "w") as f:
        json.dump(families, f)
    print(f"{len(docs)} documents ({len(bases)} base, {len(docs) - len(bases)} planted in {len(families)} families)")


if __name__ == "__main__":
    main()
