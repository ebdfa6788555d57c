#!/usr/bin/env python3
"""A live feed held for a long time, with retention on (the 30-minute check).

Usage: live_soak.py DUPFLOW [--minutes 30] [--share 0.8 | --rate R [--rating-probe MS]]
                    [--rating batch|live] [--over windows|pass] [--guess 1000] [--window 200000]
                    [--epoch-ms 250] [--refresh-epochs 8]
                    [--work target/live-soak] [--source target/scale/s1M.warc.gz]

1. The feed: the 1M-page scale crawl (benches/scale.sh writes it), then the same records again
   and again, each pass dated after the one before (WARC-Date one second a record throughout,
   fresh record ids), as a crawler that keeps re-crawling a web of a million pages. Written
   once into WORK/feed.warc.gz (one gzip member a record) with its member offsets and URLs.
2. The rated speed, unless --rate is given: the steady rate with the same retention window.
   `DUPFLOW run -` on the feed's first 2 and 4 windows of records, as fast as it goes; the
   records between them over the time between them (the first window, filling the state
   without retractions, is cheaper). The feed then runs at --share (0.8) of it.
   With --rating live, the rate is instead the steady rate in the epochs the feed itself forms
   (a feed at rate r closes an epoch every --epoch-ms: r * epoch_ms / 1000 records, where a
   replay runs in epochs of up to 100,000): one replay of the first 3 windows in fixed epochs
   of share * guess * epoch_ms / 1000 records (guess: --guess, 1,000 pages/s by default), its
   pages sampled from /metrics each second, the rate from 1.5 windows on; measured once more,
   in the epochs that rate forms, when they differ by over 25%. A record costs up to 2.6 times
   as much CPU in epochs of 1,000 records as in epochs of 100,000.
   With --over pass, that replay is of the first window and one whole pass of the source after
   it, and the rate from the first window on: every record of the source's content once, with
   the window full (1.5 to 3 windows of the 1M crawl are 30% of it), and the rate by tenths of
   the pass beside it.
3. The feed: `DUPFLOW run --follow WORK/live/feed.warc.gz` with `run.retention_secs` = --window
   (the window holds that many records: one second a record), `run.epoch_ms` = --epoch-ms; this
   script appends the feed's records to the followed file at the rate for --minutes, samples the
   process's RSS every second, and tails `changes.jsonl`: a record's latency runs from the moment
   its bytes were appended to the moment its page's row (`"diff":1`) is in `changes.jsonl`, so
   it includes any backlog at the reader, which dupflow's own read-to-written figure cannot see.

4. The machine, throughout: a fixed piece of CPU work timed every half second (`Probe`). Its
   median during the rating is the machine the rate was taken on; beside each 5 minutes of the
   feed and each latency episode (records over 2 s), the machine's speed against it (0.80: the
   same work took 1.25 times as long). A feed at 80% of a rating taken on a machine that then
   runs at 0.8 of that speed is a feed at 100% of what the machine gives. Beside it, the cores
   the hypervisor took (steal time, /proc/stat), which the probe cannot see.

Prints the rate held, end-to-end latency p50/p99/max over the whole run and per 5 minutes,
the episodes, dupflow's own summary lines, RSS per minute and the spread of RSS over the last
10 minutes ((max - min) / min). Writes WORK/live-out/{rss.csv,latency.csv,probe.csv}.
"""
import argparse
import array
import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scale"))
from run import rss_kib  # noqa: E402  (benches/scale/run.py: peak RSS the same way)

BASE = 1_767_225_600  # 2026-01-01T00:00:00Z, the scale corpus's first date
DATE = re.compile(rb"WARC-Date: [^\r\n]*")
RID = re.compile(rb"WARC-Record-ID: <urn:uuid:[^>]*>")
URI = re.compile(rb"WARC-Target-URI: ([^\r\n]*)")


def cpu_secs(pid):
    """User + system CPU seconds of process pid so far, all threads (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Probe:
    """The machine's speed, timed beside dupflow in the same run: every half second, one fixed
    piece of work (MD5 of 16 KiB, 100 times: ~4 ms, in the first-level cache) and the CPU time
    this thread took for it (`time.thread_time`: the time it waited for a core is not in it).
    On this shared machine the same work takes up to twice as long in one hour as in another;
    a rating and a feed made an hour apart are two
    machines, and this says by how much. Its duty is under 1% of a core. The work fits the core's
    own cache and lasts about one time slice, so dupflow's threads on the same cores disturb it
    little; a median over many samples is what is read, not one sample.

    Beside it, the machine's steal time (`/proc/stat`): the time the hypervisor ran something
    else on this machine's cores while they had work. That the probe cannot see (its CPU time
    does not count it), and it takes cores from dupflow outright."""

    BLOCK = bytes(range(256)) * 64

    def __init__(self):
        self.samples = []  # (wall time, CPU seconds of the work, steal seconds so far, all cores)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopped.is_set():
            t = time.thread_time()
            for _ in range(100):
                hashlib.md5(Probe.BLOCK).digest()
            self.samples.append((time.time(), time.thread_time() - t, steal_secs()))
            self.stopped.wait(0.5)

    def stop(self):
        self.stopped.set()
        self.thread.join()

    def median(self, t0=float("-inf"), t1=float("inf")):
        """The median CPU seconds of the work between wall times t0 and t1 (None: no sample)."""
        part = sorted(s for t, s, _ in self.samples if t0 <= t < t1)
        return part[len(part) // 2] if part else None

    def steal(self, t0, t1):
        """Cores stolen on average between wall times t0 and t1 (None: too few samples)."""
        part = [(t, s) for t, _, s in self.samples if t0 <= t < t1 and s is not None]
        if len(part) < 2 or part[-1][0] <= part[0][0]:
            return None
        return (part[-1][1] - part[0][1]) / (part[-1][0] - part[0][0])


def steal_secs():
    """The machine's steal time so far, all cores, in seconds (None where /proc/stat lacks it)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def members(path):
    """(raw record bytes, compressed end offset) of each gzip member of path."""
    with open(path, "rb") as f:
        d, parts, consumed = zlib.decompressobj(31), [], 0
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return
            data = chunk
            while data:
                parts.append(d.decompress(data))
                if d.eof:
                    used = len(data) - len(d.unused_data)
                    consumed += used
                    yield b"".join(parts), consumed
                    data, d, parts = d.unused_data, zlib.decompressobj(31), []
                else:
                    consumed += len(data)
                    data = b""


def stamp(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds)).encode()


def build(source, work, need):
    """Extends WORK/feed.warc.gz to at least `need` records, a pass of the source at a time."""
    feed, idx_path, urls_path = (os.path.join(work, n) for n in ("feed.warc.gz", "feed.idx", "feed.urls"))
    offsets = array.array("Q")
    if os.path.exists(idx_path) and os.path.exists(feed):
        with open(idx_path, "rb") as f:
            offsets.frombytes(f.read())
        if offsets and offsets[-1] != os.path.getsize(feed):
            offsets = array.array("Q")  # an interrupted build: start again
    if not offsets:
        for p in (feed, urls_path):
            if os.path.exists(p):
                os.remove(p)
    count_path = os.path.join(work, "source.records")
    while len(offsets) < need:
        # Each pass continues the dates of the one before: one second a record throughout.
        per_pass = int(open(count_path).read()) if offsets else 0
        k = len(offsets) // per_pass if offsets else 0
        started, r = time.time(), -1
        with open(feed, "ab") as out, open(urls_path, "ab") as urls:
            pos = offsets[-1] if offsets else 0
            for r, (raw, _) in enumerate(members(source)):
                m = URI.search(raw)
                url = m.group(1) if m else b"-"
                raw = DATE.sub(b"WARC-Date: " + stamp(BASE + k * per_pass + r), raw, count=1)
                raw = RID.sub(b"WARC-Record-ID: <urn:uuid:" + str(uuid.UUID(int=(k << 64) | r)).encode() + b">", raw, count=1)
                c = zlib.compressobj(1, zlib.DEFLATED, 31)
                member = c.compress(raw) + c.flush()
                out.write(member)
                urls.write(url + b"\n")
                pos += len(member)
                offsets.append(pos)
        if k == 0:
            with open(count_path, "w") as f:
                f.write(str(r + 1))
        with open(idx_path, "wb") as f:
            offsets.tofile(f)
        print(f"(feed: pass {k} of the source written, {len(offsets)} records, {time.time() - started:.0f} s)", flush=True)
    return feed, offsets


def config(path, window, epoch_ms, refresh_epochs, epoch_records=None):
    """The run's pipeline.toml; with `epoch_records`, epochs of that many records at most."""
    with open(path, "w") as f:
        f.write(f"[run]\nworkers = 2\nepoch_ms = {epoch_ms}\nretention_secs = {window}\n")
        if epoch_records:
            f.write(f"epoch_records = {epoch_records}\n")
        f.write(f"[template]\nrefresh_epochs = {refresh_epochs}\n")


def send(proc, feed, offsets, records):
    """Writes the feed's first `records` records to `proc`'s stdin, and closes it. A process that
    stops reading ends the writing: its exit status, which the caller checks, says why."""
    left = offsets[records - 1]
    try:
        with open(feed, "rb") as f:
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                proc.stdin.write(chunk)
                left -= len(chunk)
        proc.stdin.close()
    except BrokenPipeError:
        pass


def replay(dupflow, feed, offsets, records, cfg, out):
    """`DUPFLOW run -` on the feed's first `records` records: (seconds, peak RSS KiB) from its summary."""
    os.makedirs(out, exist_ok=True)
    proc = subprocess.Popen([dupflow, "run", "-", "--config", cfg, "--out", out, "--quiet"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    peak = [0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], rss_kib(proc.pid))
            time.sleep(0.5)

    threading.Thread(target=sample, daemon=True).start()
    send(proc, feed, offsets, records)
    summary = proc.stdout.read().decode()
    proc.wait()
    m = re.search(r"pages:\s+(\d+) in ([\d.]+) s \((\d+) pages/s\)", summary)
    if not m:
        sys.exit(f"no pages line in the replay's summary:\n{summary}")
    print(f"replay of the feed's first {records} records: {m.group(0)}, peak RSS {peak[0] // 1024} MB")
    return float(m.group(2)), peak[0]


def rated(dupflow, feed, offsets, window, cfg, out):
    """The steady rate with retention on: replays of 2 and 4 windows of records, the records
    between them over the time between them (the first window fills the state: cheaper).
    Returns the rate and the wall times of the two replays."""
    began = time.time()
    short, _ = replay(dupflow, feed, offsets, 2 * window, cfg, out)
    long, _ = replay(dupflow, feed, offsets, 4 * window, cfg, out)
    rate = 2 * window / max(long - short, 1e-9)
    print(f"rated (steady, retention on): {rate:.0f} pages/s ({2 * window} more records in {long - short:.1f} s more)")
    return rate, (began, time.time())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pages_sent(port):
    """`dupflow_pages_total` from the run's /metrics (None while it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("dupflow_pages_total "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def steady_in_epochs(dupflow, feed, offsets, window, epoch_records, refresh_epochs, out, span=None):
    """The steady rate in fixed epochs of `epoch_records`, retention on: one replay of the feed's
    first 3 windows of records (`run.epochs_in_flight` keeps the reader within 2 epochs of the
    dataflow), its pages sent sampled from /metrics every second; the rate from the first sample
    past 1.5 windows (the window full and turning over) to the last. With `span` (records), the
    replay is of the first window and `span` records after it, and the rate from the first
    sample past the window on: `span` = one pass of the source rates every record of the
    source's content once, with the window full. Returns the rate and the wall times it was
    taken over (for the machine's speed then: `Probe`)."""
    os.makedirs(out, exist_ok=True)
    cfg = os.path.join(out, "rating.toml")
    # epoch_ms long: the epochs close by their record count alone, as a feed at the rate forms them.
    config(cfg, window, 3_600_000, refresh_epochs, epoch_records)
    port = free_port()
    proc = subprocess.Popen([dupflow, "run", "-", "--config", cfg, "--out", out, "--quiet",
                             "--metrics-address", f"127.0.0.1:{port}"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = []

    def sample():
        while proc.poll() is None:
            n = pages_sent(port)
            if n is not None:
                samples.append((time.time(), n))
            time.sleep(1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start, records = (1.5 * window, 3 * window) if span is None else (window, window + span)
    send(proc, feed, offsets, records)
    if proc.wait() != 0:
        sys.exit(f"the rating replay stopped with status {proc.returncode}")
    sampler.join()
    steady = [(t, n) for t, n in samples if n >= start]
    if len(steady) < 3:
        sys.exit(f"the rating replay gave {len(samples)} samples of /metrics, too few past record {start:.0f}")
    (t0, n0), (tm, nm), (t1, n1) = steady[0], steady[len(steady) // 2], steady[-1]
    rate = (n1 - n0) / (t1 - t0)
    # Its two halves: a rate that fell from one to the next would be a cost growing with time.
    halves = f"{(nm - n0) / (tm - t0):.0f} then {(n1 - nm) / (t1 - tm):.0f}"
    print(f"steady in epochs of {epoch_records} records: {rate:.0f} pages/s ({n1 - n0:.0f} records in {t1 - t0:.1f} s, "
          f"from record {n0:.0f} on; halves {halves} pages/s)")
    if span is not None:
        # Over a pass, where the content is dearer or cheaper: the rate by stretches of records.
        step, parts, (ta, na) = max(1, span // 10), [], steady[0]
        for t, n in steady[1:]:
            if n - na >= step or (t, n) == steady[-1]:
                parts.append(f"{na / 1000:.0f}k-{n / 1000:.0f}k {(n - na) / (t - ta):.0f}")
                ta, na = t, n
        print("  by stretch (records, pages/s): " + ", ".join(parts))
    return rate, (t0, t1)


def rated_live(dupflow, feed, offsets, args, out, span=None):
    """The live rating: the steady rate in the epochs the feed forms at `share` of it (a feed at
    rate r closes an epoch every `epoch_ms`: r · epoch_ms / 1000 records). From a first guess
    (--guess, 1,000 pages/s), measured again once if the epochs that rate forms differ by over 25%.
    `span`: see `steady_in_epochs`. Returns the rate and the wall times it was taken over."""
    guess = args.guess or 1000.0
    for _ in range(2):
        epoch_records = max(1, round(args.share * guess * args.epoch_ms / 1000))
        rate, taken = steady_in_epochs(dupflow, feed, offsets, args.window, epoch_records, args.refresh_epochs, out, span)
        formed = args.share * rate * args.epoch_ms / 1000
        if abs(formed - epoch_records) <= 0.25 * epoch_records:
            break
        guess = rate
    print(f"rated (live: epochs of {epoch_records} records, retention on): {rate:.0f} pages/s; "
          f"the feed at {args.share:g} of it forms epochs of ~{formed:.0f} records")
    return rate, taken


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def feed_arguments(ap):
    """The arguments of the feed and its window (epoch_cost.py takes them too)."""
    ap.add_argument("--window", type=int, default=200_000)
    ap.add_argument("--refresh-epochs", type=int, default=8, help="template.refresh_epochs (pipeline.toml's default)")
    ap.add_argument("--work", default="target/live-soak")
    ap.add_argument("--source", default="target/scale/s1M.warc.gz")


def feed_ready(args):
    """Stops with a clear message when the feed's source is absent; makes the work directory."""
    if not os.path.exists(args.source):
        sys.exit(f"{args.source} is absent: write it with `bash benches/scale.sh 1M` (the feed is built from it)")
    os.makedirs(args.work, exist_ok=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dupflow")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--share", type=float, default=0.8)
    ap.add_argument("--rate", type=float)
    ap.add_argument("--rating", choices=("batch", "live"), default="batch",
                    help="rate as fast as a replay goes (batch: epochs of up to run.epoch_records), or in the epochs the feed forms (live)")
    ap.add_argument("--over", choices=("windows", "pass"), default="windows",
                    help="the live rating's records: 1.5 to 3 windows (windows), or one whole pass of the source after the first window (pass)")
    ap.add_argument("--epoch-ms", type=int, default=250)
    ap.add_argument("--rating-probe", type=float,
                    help="with --rate: the machine probe's median (ms) while that rate was rated, printed by the run that rated it")
    ap.add_argument("--guess", type=float,
                    help="the live rating's first guess of the rate (pages/s; default 1,000): its first replay's epochs are share * guess * epoch_ms / 1000 records")
    feed_arguments(ap)
    args = ap.parse_args()
    if args.over == "pass" and (args.rating != "live" or args.rate is not None):
        ap.error("--over pass is the live rating's span: give it with --rating live, without --rate")
    if args.guess is not None and (args.rating != "live" or args.rate is not None):
        ap.error("--guess is the live rating's first guess: give it with --rating live, without --rate")
    if args.guess is not None and args.guess <= 0:
        ap.error("--guess is a rate in pages/s: give a positive one")
    if args.rating_probe is not None and (args.rate is None or args.rating_probe <= 0):
        ap.error("--rating-probe is the machine of an earlier rating: give a positive one, with --rate")
    feed_ready(args)
    cfg = os.path.join(args.work, "live.toml")
    config(cfg, args.window, args.epoch_ms, args.refresh_epochs)
    probe = Probe()

    rate, rated_over = args.rate, None
    if rate is None:
        feed, offsets = build(args.source, args.work, 4 * args.window)
        if args.rating == "live":
            span = None
            if args.over == "pass":
                with open(os.path.join(args.work, "source.records")) as f:
                    span = int(f.read())
                feed, offsets = build(args.source, args.work, args.window + span)
            rate, rated_over = rated_live(args.dupflow, feed, offsets, args, os.path.join(args.work, "rated-live-out"), span)
        else:
            rate, rated_over = rated(args.dupflow, feed, offsets, args.window, cfg, os.path.join(args.work, "rated-out"))
        rate *= args.share
    # The machine's speed while the rating was taken: the feed's is read against it.
    at_rating = probe.median(*rated_over) if rated_over else (args.rating_probe / 1000 if args.rating_probe else None)
    if at_rating:
        print(f"machine probe during the rating: {at_rating * 1000:.2f} ms of CPU a piece of work (median)")
    need = int(rate * args.minutes * 60) + 1
    feed, offsets = build(args.source, args.work, need)
    with open(os.path.join(args.work, "feed.urls"), "rb") as f:
        urls = [next(f).rstrip(b"\n") for _ in range(need)]

    live, out = os.path.join(args.work, "live"), os.path.join(args.work, "live-out")
    os.makedirs(live, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    followed = os.path.join(live, "feed.warc.gz")
    for p in (followed, os.path.join(out, "changes.jsonl")):
        if os.path.exists(p):
            os.remove(p)
    open(followed, "wb").close()
    summary_path = os.path.join(out, "summary")
    proc = subprocess.Popen([args.dupflow, "run", "--follow", followed, "--config", cfg, "--out", out, "--quiet"],
                            stdout=open(summary_path, "w"), stderr=open(os.path.join(out, "log"), "w"))
    pending, latencies, lock = {}, [], threading.Lock()  # url -> append time; (append time, latency)
    # A URL appended again before its row is out is timed once, from the later append (the 1M
    # feed never does this: a URL comes back a pass, a million records, later).
    overtaken = [0]
    done = threading.Event()
    rss = []

    def tail():
        path = os.path.join(out, "changes.jsonl")
        while not os.path.exists(path) and not done.is_set():
            time.sleep(0.05)
        with open(path, "rb") as f:
            rest = b""
            while True:
                data = f.read(1 << 20)
                if not data:
                    if done.is_set():
                        return
                    time.sleep(0.05)
                    continue
                now = time.time()
                lines = (rest + data).split(b"\n")
                rest = lines.pop()
                with lock:
                    for line in lines:
                        if not line.endswith(b'"diff":1}'):
                            continue
                        a = line.find(b'"url":"') + 7
                        url = line[a:line.find(b'"', a)]
                        t = pending.pop(url, None)
                        if t is not None:
                            latencies.append((t, now - t))

    def sample():
        while proc.poll() is None and not done.is_set():
            rss.append((time.time(), rss_kib(proc.pid), cpu_secs(proc.pid)))
            time.sleep(1)

    tailer = threading.Thread(target=tail, daemon=True)
    tailer.start()
    threading.Thread(target=sample, daemon=True).start()
    time.sleep(1)
    started = time.time()
    n = 0
    with open(feed, "rb") as src, open(followed, "ab") as dst:
        while n < need:
            due = min(need, int((time.time() - started) * rate) + 1)
            if due > n:
                start = offsets[n - 1] if n else 0
                src.seek(start)
                data = src.read(offsets[due - 1] - start)
                now = time.time()
                with lock:
                    for j in range(n, due):
                        if urls[j] in pending:
                            overtaken[0] += 1
                        pending[urls[j]] = now
                dst.write(data)
                dst.flush()
                n = due
            time.sleep(0.01)
            if proc.poll() is not None:
                sys.exit(f"dupflow stopped during the feed; see {out}/log")
    fed = time.time() - started
    # Let the last records through, then stop it cleanly.
    deadline = time.time() + 30
    while time.time() < deadline:
        with lock:
            if not pending:
                break
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    proc.wait()
    done.set()
    tailer.join()
    probe.stop()

    print(f"fed {n} records in {fed:.0f} s ({n / fed:.0f} records/s, target {rate:.0f}), "
          f"window {args.window} records, epoch_ms {args.epoch_ms}, refresh_epochs {args.refresh_epochs}")
    with open(os.path.join(out, "latency.csv"), "w") as f:
        f.write("appended_s,latency_s\n")
        for t, l in latencies:
            f.write(f"{t - started:.3f},{l:.4f}\n")
    lat = sorted(l for _, l in latencies)
    print(f"end-to-end latency (appended -> row in changes.jsonl), {len(lat)} records: "
          f"p50 {percentile(lat, 0.5):.3f} s, p99 {percentile(lat, 0.99):.3f} s, max {lat[-1] if lat else float('nan'):.3f} s; "
          f"{len(pending)} records without their row, {overtaken[0]} appended again before their row (timed once)")
    span = 300

    def machine(t0, t1):
        """The machine's speed between wall times t0 and t1: against the rating's when there was
        one (1.00: as fast as then; 0.80: the same work took 1.25 times as long), else the
        probe's median in ms."""
        m, stolen = probe.median(t0, t1), probe.steal(t0, t1)
        stolen = "" if stolen is None else f", {stolen:.2f} cores stolen"
        if m is None:
            return "machine ?" + stolen
        return (f"machine {at_rating / m:.2f}" if at_rating else f"probe {m * 1000:.2f} ms") + stolen

    for w0 in range(0, int(fed), span):
        part = sorted(l for t, l in latencies if w0 <= t - started < w0 + span)
        if part:
            print(f"  minutes {w0 // 60:>2}-{(w0 + span) // 60:<2}: p50 {percentile(part, 0.5):.3f} s, p99 {percentile(part, 0.99):.3f} s, "
                  f"max {part[-1]:.3f} s; {machine(started + w0, started + w0 + span)}")
    # Episodes: records over 2 s appended within 5 s of one another. Each with the machine's
    # speed in the minute before it began and during it (a backlog starts before it shows).
    slow = sorted((t, l) for t, l in latencies if l > 2.0)
    episodes = []  # [first append, last append, records, worst latency]
    for t, l in slow:
        if episodes and t - episodes[-1][1] <= 5:
            e = episodes[-1]
            e[1], e[2], e[3] = t, e[2] + 1, max(e[3], l)
        else:
            episodes.append([t, t, 1, l])
    print(f"  {len(slow)} records over 2 s, in {len(episodes)} episodes" + (":" if episodes else ""))
    for a, b, count, worst in episodes:
        print(f"    at {(a - started) / 60:5.1f} min, {b - a:4.0f} s, {count} records, max {worst:.2f} s; "
              f"{machine(a - 60, a)} in the minute before, {machine(a, b + 1)} during")
    print(f"  {machine(started, started + fed)} over the whole feed")
    with open(os.path.join(out, "probe.csv"), "w") as f:
        f.write("t_s,probe_ms,steal_s\n")
        for t, m, st in probe.samples:
            f.write(f"{t - started:.1f},{m * 1000:.3f},{st}\n")
    for line in open(summary_path):
        if re.match(r"(pages|clusters|held|arranged|updates|latency|caps hit):", line):
            print("  dupflow " + line.rstrip())
    with open(os.path.join(out, "rss.csv"), "w") as f:
        f.write("t_s,rss_kib,cpu_s\n")
        for t, k, c in rss:
            f.write(f"{t - started:.1f},{k},{c}\n")
    # CPU time over the feed (user + system, all threads): at a fixed rate, the cost of the
    # records, steadier from run to run than latency near the pipeline's limit.
    during = [(t, c) for t, _, c in rss if c is not None and started <= t <= started + fed]
    if len(during) >= 2:
        (t0, c0), (t1, c1) = during[0], during[-1]
        print(f"CPU over the feed: {c1 - c0:.1f} s in {t1 - t0:.0f} s ({(c1 - c0) / (t1 - t0):.2f} cores, "
              f"{(c1 - c0) / max(1, n) * 1e6 * (t1 - t0) / fed:.0f} µs a record)")
    rss = [(t, k) for t, k, _ in rss]
    per_minute = {}
    for t, k in rss:
        if k and t >= started:
            per_minute.setdefault(int((t - started) // 60), []).append(k)
    print("RSS per minute (MB, mean): " + " ".join(f"{sum(v) / len(v) / 1024:.0f}" for _, v in sorted(per_minute.items())))
    # The flatness check needs 10 minutes after the start: a shorter feed's window would hold
    # the process starting up (tens of MB), which says nothing of flatness.
    last = [k for t, k in rss if k and started + fed - 600 <= t <= started + fed]
    if fed < 600:
        print(f"RSS over the last 10 minutes of the feed: not measured, the feed lasted {fed:.0f} s")
    elif last:
        print(f"RSS over the last 10 minutes of the feed: min {min(last) // 1024} MB, max {max(last) // 1024} MB, "
              f"spread {(max(last) - min(last)) / min(last) * 100:.1f}%")


if __name__ == "__main__":
    main()
