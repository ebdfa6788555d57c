#!/usr/bin/env python3
"""The heap at its peak, by the structure that holds it: a heaptrack profile grouped by the
innermost of dupflow's own frames in each allocation's stack (else differential's), in bytes a
page.

    cargo build --profile profiling --features system-allocator   # heaptrack hooks malloc
    heaptrack -o target/heap target/profiling/dupflow run target/scale/s100k.warc.gz --workers 2 --quiet
    python3 benches/heap_peak.py target/heap.zst --pages 100001 [--detail groups.rs]

`--detail FILE` splits the allocations made under that file's innermost frame by the frames
around it (which vector, which map). Needs heaptrack_print and c++filt (Debian: heaptrack,
binutils).
"""

import argparse
import collections
import pathlib
import re
import subprocess
import sys
import tempfile

# differential-dataflow's trace and batcher files: its arrangements.
DIFFERENTIAL = {
    "spine_fueled.rs", "merge_batcher.rs", "ord_neu.rs", "chunker.rs", "rhh.rs", "arrange.rs",
    "agent.rs", "reduce.rs", "join.rs", "threshold.rs", "count.rs", "upsert.rs",
}
# dupflow's source files (operators/src, src), by name: an allocation is charged to the
# innermost frame in one of them (the function's name tells files of one name apart).
# Files named as the standard library's and hashbrown's (`mod.rs`, `lib.rs`) count only for a
# function defined in one of ours whose name is not a common one; names that differential's
# files have are differential's.
ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [p for d in ("src", "operators/src") for p in (ROOT / d).rglob("*.rs") if p.name != "tests.rs"]
SHARED_NAMES = {"mod.rs", "lib.rs", "main.rs"}
OURS = {p.name for p in SOURCES} - SHARED_NAMES - DIFFERENTIAL
COMMON = {"new", "with_capacity", "clone", "extend", "from_iter", "default", "fmt", "drop", "next", "len",
          "get", "insert", "push", "apply", "run", "build", "from", "into", "send", "finish", "take", "put"}
OURS_IN_SHARED = {
    name for p in SOURCES if p.name in SHARED_NAMES
    for name in re.findall(r"\bfn (\w+)", p.read_text()) if name not in COMMON
}
FILE = re.compile(r"\(([^()]*\.rs)\)\s*$")
LOCATION = re.compile(r"\s*\([^()]*\)\s*$")
HASH = re.compile(r"\[[0-9a-f]{16}\]")


def frames_of(folded):
    """(frames, bytes) of each folded stack, demangled."""
    demangled = subprocess.run(["c++filt"], input=folded, capture_output=True, text=True, check=True).stdout
    for line in demangled.splitlines():
        stack, _, n = HASH.sub("", line).rstrip().rpartition(" ")
        if n.isdigit():
            yield stack.split(";"), int(n)


def file_of(frame):
    m = FILE.search(frame)
    return m.group(1) if m else None


def name(frame):
    return LOCATION.sub("", frame)[:60]


def ours(frame):
    file = file_of(frame)
    if file in SHARED_NAMES:
        return re.match(r"[\w]+", name(frame) or "") is not None and re.match(r"\w+", name(frame)).group(0) in OURS_IN_SHARED
    return file in OURS


def charge(frames):
    for frame in reversed(frames):
        if ours(frame):
            return f"dupflow {file_of(frame)}: {name(frame)}"
    for frame in reversed(frames):
        if file_of(frame) in DIFFERENTIAL:
            return f"differential {file_of(frame)}: {name(frame)}"
    return "other"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", help="heaptrack's output (.zst)")
    parser.add_argument("--pages", type=int, required=True, help="pages in the run (for bytes a page)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--detail", help="a source file: its allocations by the frames around it")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile(suffix=".folded") as out:
        subprocess.run(
            ["heaptrack_print", "-f", args.profile, "--print-flamegraph", out.name, "--flamegraph-cost-type", "peak"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
        )
        folded = open(out.name).read()
    totals = collections.Counter()
    for frames, n in frames_of(folded):
        if args.detail:
            at = [i for i, f in enumerate(frames) if file_of(f) == args.detail]
            if not at:
                continue
            i = at[-1]
            totals[" < ".join(f"{name(f)} ({file_of(f)})" for f in frames[i - 2:i + 4])] += n
        else:
            totals[charge(frames)] += n
    total = sum(totals.values())
    print(f"{'all' if not args.detail else args.detail}: {total / 1e6:,.1f} MB, {total / args.pages:,.0f} bytes a page")
    for key, n in totals.most_common(args.top):
        print(f"{n / 1e6:9.1f} MB {n / args.pages:7,.0f} B/page  {key}")


if __name__ == "__main__":
    sys.exit(main())
