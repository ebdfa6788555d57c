#!/usr/bin/env python3
"""What a record costs by the size of its epoch, with retention on (issue 18's live check).

Usage: epoch_cost.py DUPFLOW [--epochs 100000,10000,2000] [--window 200000] [--work target/live-soak]

The feed is live_soak.py's (WORK/feed.warc.gz and its member offsets; that script writes it).
For each epoch size E, `DUPFLOW run -` on the feed's first one and two windows of records,
the window as `run.retention_secs`, 2 workers, epochs of E records (`run.epoch_records`, with
`run.epoch_ms` out of the way). The steady cost a record is the CPU (user + system) of the
two-window run less the one-window run's, over the window's records: the first window fills
the state without retractions, the second also retires a page for each it takes in. Prints it
for each E and as a ratio to the first E's, measured in the same run of this script.

A replay's reader does not wait for the dataflow between epochs of a fixed size, so many
epochs are in flight at once, where a live feed has one or two: the smaller E, the more. Read
a small E's figure as an upper bound on what the epoch's size alone costs.
"""
import argparse
import array
import os
import resource
import subprocess
import sys

from live_soak import send  # the same feed, sent the same way


def replay(dupflow, feed, offsets, records, cfg, out):
    """CPU seconds (user + system) of `DUPFLOW run -` on the feed's first `records` records."""
    os.makedirs(out, exist_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([dupflow, "run", "-", "--config", cfg, "--out", out, "--quiet"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        send(proc, feed, offsets, records)
    except BrokenPipeError:
        pass  # dupflow stopped reading: its exit status says why
    if proc.wait() != 0:
        sys.exit(f"dupflow exited with {proc.returncode} on {records} records")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dupflow")
    ap.add_argument("--epochs", default="100000,10000,2000", help="epoch sizes in records, comma-separated")
    ap.add_argument("--window", type=int, default=200_000)
    ap.add_argument("--work", default="target/live-soak")
    args = ap.parse_args()
    feed, idx = os.path.join(args.work, "feed.warc.gz"), os.path.join(args.work, "feed.idx")
    offsets = array.array("Q")
    if os.path.exists(idx):
        with open(idx, "rb") as f:
            offsets.frombytes(f.read())
    if len(offsets) < 2 * args.window or not os.path.exists(feed):
        sys.exit(f"{feed} is absent or shorter than two windows: write it with benches/live_soak.py")
    first = None
    for e in (int(x) for x in args.epochs.split(",")):
        cfg = os.path.join(args.work, f"epochs-{e}.toml")
        with open(cfg, "w") as f:
            f.write(f"[run]\nworkers = 2\nepoch_ms = 600000\nepoch_records = {e}\nretention_secs = {args.window}\n")
        out = os.path.join(args.work, f"epochs-{e}-out")
        fill = replay(args.dupflow, feed, offsets, args.window, cfg, out)
        both = replay(args.dupflow, feed, offsets, 2 * args.window, cfg, out)
        steady = (both - fill) / args.window * 1e6
        first = first or steady
        print(f"epochs of {e} records: CPU {fill:.1f} s for {args.window} records, {both:.1f} s for {2 * args.window}; "
              f"steady {steady:.0f} µs a record ({steady / first:.2f}x the first)", flush=True)


if __name__ == "__main__":
    main()
