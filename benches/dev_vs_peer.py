#!/usr/bin/env python3
"""The dev benchmark against the speed peer, in interleaved rounds, and its table rewritten.

Each round runs the peer (../shared/tools/fast_minhash_peer.py: FastWARC + Resiliparse + rensa
MinHash-LSH, one core) and `dupflow run` (2 workers) on the same crawl, in alternating order;
speed per core is pages / (wall seconds x cores), and dupflow's figure is stated as a ratio to
the peer's in the same round (median over rounds, the range beside it). Both outputs are scored
by ../shared/bench/score.py. With --write, the table between the markers
`<!-- dev-vs-peer -->` and `<!-- /dev-vs-peer -->` in docs/benchmarks.md is replaced by this
run's, with the command, date, commit and machine.

    python3 benches/dev_vs_peer.py [--rounds 5] [--warc FILE --truth FILE] [--write]

Needs a release build (target/release/dupflow) and a Python with fastwarc, resiliparse and rensa
(--peer-python, default target/peer-venv/bin/python:
`python3 -m venv target/peer-venv && target/peer-venv/bin/pip install fastwarc resiliparse rensa`).
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")


def timed(cmd):
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def score(truth, clusters):
    out = subprocess.run([sys.executable, os.path.join(SHARED, "bench", "score.py"), truth, clusters],
                         check=True, capture_output=True, text=True).stdout
    p, r, f = (float(x) for x in re.search(r"precision ([0-9.]+)\s+recall ([0-9.]+)\s+f1 ([0-9.]+)", out, re.S).groups())
    return p, r, f


def pages_of(clusters):
    with open(clusters) as f:
        return sum(1 for line in f if line.strip())


def machine():
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = int(open("/proc/meminfo").readline().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        mem = 0
    return f"{model}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warc", default=os.path.join(SHARED, "bench", "docs-dev.warc.gz"))
    ap.add_argument("--truth", default=os.path.join(SHARED, "bench", "docs-dev.truth.json"))
    ap.add_argument("--dupflow", default=os.path.join(ROOT, "target", "release", "dupflow"))
    ap.add_argument("--peer-python", default=os.path.join(ROOT, "target", "peer-venv", "bin", "python"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="rewrite the table in docs/benchmarks.md")
    a = ap.parse_args()
    for path, what in [(a.warc, "the crawl"), (a.truth, "its truth"), (a.dupflow, "a release build"), (a.peer_python, "the peer's Python")]:
        if not os.path.exists(path):
            sys.exit(f"{path} is absent: {what} is needed (see this script's docstring)")
    peer = os.path.join(SHARED, "tools", "fast_minhash_peer.py")
    work = tempfile.mkdtemp(prefix="dev-vs-peer-")
    peer_out, dup_out = os.path.join(work, "peer.jsonl"), os.path.join(work, "dupflow")
    rounds = []
    for r in range(a.rounds):
        runs = {
            "peer": [a.peer_python, peer, a.warc, peer_out],
            "dupflow": [a.dupflow, "run", a.warc, "--workers", str(a.workers), "--quiet", "--out", dup_out],
        }
        order = ["peer", "dupflow"] if r % 2 == 0 else ["dupflow", "peer"]
        secs = {name: timed(runs[name]) for name in order}
        rounds.append(secs)
        print(f"round {r + 1}: peer {secs['peer']:.2f} s, dupflow {secs['dupflow']:.2f} s", file=sys.stderr)
    pages = pages_of(os.path.join(dup_out, "clusters.jsonl"))
    peer_pages = pages_of(peer_out)
    per_core = lambda p, s, cores: p / (s * cores)
    ratios = [per_core(pages, x["dupflow"], a.workers) / per_core(peer_pages, x["peer"], 1) for x in rounds]
    dup_speed = [per_core(pages, x["dupflow"], a.workers) for x in rounds]
    peer_speed = [per_core(peer_pages, x["peer"], 1) for x in rounds]
    dp, dr, df = score(a.truth, os.path.join(dup_out, "clusters.jsonl"))
    pp, pr, pf = score(a.truth, peer_out)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
    commit += " (with uncommitted changes)" if dirty else ""
    fmt = lambda xs: f"{min(xs):,.0f}–{max(xs):,.0f} (median {statistics.median(xs):,.0f})"
    walls = lambda name: " / ".join(f"{x[name]:.2f}" for x in rounds)
    table = "\n".join([
        "<!-- dev-vs-peer -->",
        f"`python3 benches/dev_vs_peer.py --rounds {a.rounds} --write`; {datetime.date.today()}, commit {commit}; {machine()}.",
        f"{pages:,} pages; dupflow on {a.workers} workers, the peer on 1 core; {a.rounds} interleaved rounds.",
        "",
        "| system | page-avg P / R / F1 | wall per round (s) | pages/s per core | per core against the peer |",
        "|---|---|---|---|---|",
        f"| dupflow | {dp:.4f} / {dr:.4f} / **{df:.4f}** | {walls('dupflow')} | {fmt(dup_speed)} | **{statistics.median(ratios):.2f}×** ({min(ratios):.2f}–{max(ratios):.2f}) |",
        f"| the peer (FastWARC + Resiliparse + rensa MinHash-LSH 0.8) | {pp:.4f} / {pr:.4f} / {pf:.4f} | {walls('peer')} | {fmt(peer_speed)} | 1 |",
        "<!-- /dev-vs-peer -->",
    ])
    print(table)
    if a.write:
        path = os.path.join(ROOT, "docs", "benchmarks.md")
        text = open(path).read()
        new, n = re.subn(r"<!-- dev-vs-peer -->.*?<!-- /dev-vs-peer -->", lambda _: table, text, flags=re.S)
        if n != 1:
            sys.exit(f"{path}: no dev-vs-peer markers to replace")
        open(path, "w").write(new)
        print(f"rewrote the table in {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
