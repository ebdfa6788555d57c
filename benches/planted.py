#!/usr/bin/env python3
"""Planted failure patterns, as WARC, clustered by dupflow: how many clusters each gives.

  python3 benches/planted.py [--config pipeline.toml]

- siblings: 500 API pages of one host sharing a module sidebar (all) and a generated member list
  (groups of 50), each with 2 sentences of its own (~10% of the page). Truth: 500 clusters.
- stubs: 20,000 identical "no longer distributed" stubs of one host and 300 near-copies (a
  notice line above the stub), beside 40 distinct essays. Truth: 1 cluster of 20,300 pages, and
  the 40 essays alone (41 clusters).
Deterministic (fixed seeds); nothing but the standard library and target/release/dupflow.
"""
import json, os, random, subprocess, sys, tempfile, time

WORDS = ("alpha beta gamma delta epsilon zeta theta iota kappa lambda sigma omega vector buffer "
         "stream socket parser cursor token index bucket frame packet window").split()


def sentence(r):
    return " ".join(r.choice(WORDS) for _ in range(r.randint(8, 12))).capitalize() + "."


def record(n, url, html):
    body = html.encode()
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
            f"WARC-Date: 2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z\r\n"
            f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{n:012d}>\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n").encode()
    return head + http + b"\r\n\r\n"


def siblings(path):
    r = random.Random(1)
    sidebar = [f"Module item {i}: " + sentence(r) for i in range(12)]
    groups = [[f"Implements trait {g}-{j}: " + sentence(r) for j in range(15)] for g in range(10)]
    with open(path, "wb") as out:
        for n in range(500):
            own = [f"Struct number {n} " + sentence(random.Random(n * 7 + k)) for k in range(2)]
            html = ("<html><head><title>Struct %d</title></head><body><nav><ul>" % n
                    + "".join(f"<li>{s}</li>" for s in sidebar) + "</ul></nav><main>"
                    + "".join(f"<p>{s}</p>" for s in own) + "<section>"
                    + "".join(f"<p>{s}</p>" for s in groups[n // 50]) + "</section></main></body></html>")
            out.write(record(n, f"http://api.example/struct.S{n}.html", html))
    return 500


def stubs(path):
    nav = "".join(f"<li>{s}</li>" for s in ["Home of the archive project.", "Browse the editions by year and by title.",
                                            "Contact the editors about missing volumes."])
    text = ["This edition is no longer distributed by the archive.",
            "Please consult the current edition of the series for the complete text.",
            "Older printings remain available to registered libraries on request.",
            "Corrections printed in the later editions are listed in the errata of the series.",
            "Scans of the first printing were never made public for copyright reasons.",
            "Questions about the series go to the editors through the contact form of the archive."]
    r = random.Random(2)
    with open(path, "wb") as out:
        n = 0
        for i in range(20_300):
            notice = f"<p>Notice {i}: withdrawn at the publisher's request.</p>" if i >= 20_000 else ""
            html = (f"<html><head><title>Edition unavailable</title></head><body><nav><ul>{nav}</ul></nav><main>{notice}"
                    + "".join(f"<p>{s}</p>" for s in text) + "</main></body></html>")
            n += 1
            out.write(record(n, f"http://archive.example/edition/{i}", html))
        for e in range(40):
            html = "<html><body>" + "".join(f"<p>{sentence(r)}</p>" for _ in range(12)) + "</body></html>"
            n += 1
            out.write(record(n, f"http://archive.example/essay/{e}", html))
    return n


def clusters(warc, extra, scratch):
    out = os.path.join(scratch, os.path.basename(warc) + ".out")
    started = time.time()
    subprocess.run(["./target/release/dupflow", "run", warc, "--quiet", "--workers", "2", "--out", out] + extra,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.time() - started
    sizes = {}
    with open(os.path.join(out, "clusters.jsonl")) as f:
        for line in f:
            c = json.loads(line)["cluster"]
            sizes[c] = sizes.get(c, 0) + 1
    return len(sizes), max(sizes.values()), seconds


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    subprocess.run(["cargo", "build", "--release", "--locked", "-q"], check=True)
    extra = sys.argv[1:]
    with tempfile.TemporaryDirectory() as scratch:
        for name, make, truth in [("siblings", siblings, "500 clusters"), ("stubs", stubs, "41 clusters, largest 20300")]:
            path = os.path.join(scratch, name + ".warc")
            pages = make(path)
            count, largest, seconds = clusters(path, extra, scratch)
            print(f"{name:9} {pages:6} pages: {count:5} clusters, largest {largest:6} ({seconds:.1f} s)   truth: {truth}")


if __name__ == "__main__":
    main()
