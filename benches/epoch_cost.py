#!/usr/bin/env python3
"""What a record costs by the size of its epoch, with retention on (the live check).

Usage: epoch_cost.py DUPFLOW [--epochs 100000,10000,2000] [--window 200000] [--refresh-epochs 8]
                     [--work target/live-soak] [--source target/scale/s1M.warc.gz]

The feed is live_soak.py's (WORK/feed.warc.gz, written from --source as that script does).
For each epoch size E, `DUPFLOW run -` on the feed's first one and two windows of records,
the window as `run.retention_secs`, 2 workers, epochs of E records (`run.epoch_records`, with
`run.epoch_ms` out of the way). The steady cost a record is the CPU (user + system) of the
two-window run less the one-window run's, over the window's records: the first window fills
the state without retractions, the second also retires a page for each it takes in. Prints it
for each E and as a ratio to the first E's, measured in the same run of this script.

The reader stays within `run.epochs_in_flight` (2) epochs of the dataflow in a replay too, as
in a live feed, so E is the epoch size a feed forms at E * 1000 / epoch_ms records/s.
"""
import argparse
import os
import subprocess
import sys

from live_soak import build, config, feed_arguments, feed_ready, send  # the same feed, configured and sent the same way

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scale"))
from run import children_cpu  # noqa: E402  (benches/scale/run.py: CPU the same way)


def replay(dupflow, feed, offsets, records, cfg, out):
    """CPU seconds (user + system) of `DUPFLOW run -` on the feed's first `records` records."""
    os.makedirs(out, exist_ok=True)
    before = children_cpu()
    proc = subprocess.Popen([dupflow, "run", "-", "--config", cfg, "--out", out, "--quiet"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    send(proc, feed, offsets, records)
    if proc.wait() != 0:
        sys.exit(f"dupflow exited with {proc.returncode} on {records} records")
    return children_cpu() - before


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dupflow")
    ap.add_argument("--epochs", default="100000,10000,2000", help="epoch sizes in records, comma-separated")
    feed_arguments(ap)
    args = ap.parse_args()
    feed_ready(args)
    feed, offsets = build(args.source, args.work, 2 * args.window)
    first = None
    for e in (int(x) for x in args.epochs.split(",")):
        cfg = os.path.join(args.work, f"epochs-{e}.toml")
        config(cfg, args.window, 600_000, args.refresh_epochs, e)
        out = os.path.join(args.work, f"epochs-{e}-out")
        fill = replay(args.dupflow, feed, offsets, args.window, cfg, out)
        both = replay(args.dupflow, feed, offsets, 2 * args.window, cfg, out)
        steady = (both - fill) / args.window * 1e6
        first = first or steady
        print(f"epochs of {e} records: CPU {fill:.1f} s for {args.window} records, {both:.1f} s for {2 * args.window}; "
              f"steady {steady:.0f} µs a record ({steady / first:.2f}x the first)", flush=True)


if __name__ == "__main__":
    main()
