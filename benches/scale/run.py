#!/usr/bin/env python3
"""Runs dupflow on the scale corpora and prints cost per size (benches/scale.sh calls it).

Usage: run.py DUPFLOW WORKDIR SIZE... [--workers 2] [--limit-gib 20] [--repeat 5] [--peer PYTHON]
              [--stream] [-- dupflow run args]

For each SIZE (10k, 100k, 1M, 10M or a number), writes WORKDIR/sSIZE.warc.gz with corpus.py if it is
absent (with --stream, or when the disk cannot hold it beside the run's own files, ~6.6 KB a
page together, it is not written: corpus.py writes it to dupflow's stdin as dupflow reads it,
on a core of its own, and the pages/s is then at most the generator's; the peer is not run), runs `DUPFLOW run` on it (2 workers, outputs in WORKDIR/sSIZE-out) and prints pages/s,
peak RSS, RSS per page, record-to-change latency (p50/p99, from the run's summary) and the
planted-truth score (score.py), the CPU (user + system) a page, and the run's own `held:`,
`rows:`, `state:`, `words:`, `stored:` and `spilled:` lines (bytes a page in memory by structure, and on disk). Peak RSS is sampled from
/proc every 0.1 s (its course, every 0.5 s, in WORKDIR/sSIZE-out/rss.txt: seconds, MB); a run
over --limit-gib is stopped and reported as such, so a 1M run never takes the machine down. The
last lines give the ratios the issue asks for: pages/s at the largest size over the smallest,
and the RSS slope (bytes per added page) between consecutive sizes. Beside the wall-time
ratio, the same ratio in pages per CPU second: on a shared machine a run can get less than its
cores (another tenant, throttling), which the wall time counts and the CPU time does not; when
the two ratios differ much, the machine, not the code, moved between the runs.

With --peer PYTHON (a Python with fastwarc, resiliparse and rensa), each size is also run once
through the fast peer (../shared/tools/fast_minhash_peer.py, one core) right after dupflow: its
wall time, pages/s, peak RSS and planted-truth score, and dupflow's pages/s per core over the
peer's (dupflow's CPU seconds, not its workers, are the cores counted). A peer still running
after 10 times dupflow's wall time (its LSH query is quadratic in a bucket's pages: a large
family of identical pages) is stopped and reported as not finished.

A run that passes its memory limit (`run.memory_limit_mb`, by default 90% of the machine's
memory) stops with its one line; it is reported as stopped, with the pages it had read.

A size under 100,000 pages runs --repeat times (default 5) and counts at its median wall time
(its peak RSS: the median too): such a run lasts seconds, and a machine's speed can move by
more than the ratio sought within minutes. Each run's wall time is printed, and the ratio with
the range the small size's runs give.
"""
import os
import re
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Bytes a page of a corpus.py crawl (gzip WARC), and of a run's files on it (words, contents,
# spilled index entries, outputs).
CORPUS_BYTES_A_PAGE = 2_900
RUN_BYTES_A_PAGE = 3_700


def size_of(label):
    label = label.lower()
    if label.endswith("m"):
        return int(float(label[:-1]) * 1_000_000)
    if label.endswith("k"):
        return int(float(label[:-1]) * 1_000)
    return int(label)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children_cpu():
    """User + system CPU seconds of the children this process has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(dupflow, corpus, out, workers, extra, limit_gib, generate=None):
    """One run: (wall seconds, peak RSS KiB, summary text, stopped at the RSS limit, CPU seconds).
    With `generate` (corpus.py's arguments), the corpus is written as dupflow reads it: the
    generator's stdout is dupflow's stdin, and `corpus` is not read."""
    os.makedirs(out, exist_ok=True)
    cpu_before = children_cpu()
    started = time.time()
    log_path = os.path.join(out, "run.log")
    with open(log_path, "w") as log:
        generator = None
        if generate:
            generator = subprocess.Popen([sys.executable, os.path.join(HERE, "corpus.py"), "-", *generate],
                                         stdout=subprocess.PIPE)
        proc = subprocess.Popen([dupflow, "run", "-" if generate else corpus, "--workers", workers, "--out", out, *extra],
                                stdin=generator.stdout if generator else None,
                                stdout=log, stderr=subprocess.STDOUT, text=True)
        if generator:
            generator.stdout.close()
        peak, stopped = 0, False
        # The summary is short: read it after the run; sample RSS meanwhile, and keep its
        # course (seconds since start, MB; every 0.5 s) in rss.txt beside the log.
        with open(os.path.join(out, "rss.txt"), "w") as trace:
            samples = 0
            while proc.poll() is None:
                rss = rss_kib(proc.pid)
                peak = max(peak, rss)
                if samples % 5 == 0:
                    trace.write(f"{time.time() - started:.1f} {rss // 1024}\n")
                samples += 1
                if peak > limit_gib * 1024 * 1024:
                    proc.kill()
                    stopped = True
                time.sleep(0.1)
        wall = time.time() - started
        if generator and generator.wait() != 0 and not stopped:
            sys.exit("the corpus generator failed")
    cpu = children_cpu() - cpu_before
    with open(log_path) as f:
        summary = f.read()
    if "passed the limit" in summary:
        stopped = True
    if not stopped and proc.returncode != 0:
        print(summary)
        sys.exit(f"dupflow failed on {corpus}")
    return wall, peak, summary, stopped, cpu


def run_peer(python, corpus, out, limit_s):
    """The fast peer once on `corpus`: (wall seconds, peak RSS KiB, pages, score text); pages
    and score None when it was stopped after `limit_s` seconds."""
    peer = os.path.join(HERE, "..", "..", "..", "shared", "tools", "fast_minhash_peer.py")
    if not os.path.exists(peer):
        sys.exit(f"{peer} is absent: --peer needs ../shared/tools beside the checkout")
    os.makedirs(out, exist_ok=True)
    clusters = os.path.join(out, "clusters.jsonl")
    started = time.time()
    with open(os.path.join(out, "run.log"), "w") as log:
        proc = subprocess.Popen([python, peer, corpus, clusters], stdout=log, stderr=subprocess.STDOUT)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, rss_kib(proc.pid))
            if time.time() - started > limit_s:
                proc.kill()
                proc.wait()
                return time.time() - started, peak, None, None
            time.sleep(0.1)
    wall = time.time() - started
    if proc.returncode != 0:
        sys.exit(f"the peer failed on {corpus}: see {out}/run.log")
    with open(clusters) as f:
        pages = sum(1 for _ in f)
    score = subprocess.run([sys.executable, os.path.join(HERE, "score.py"), clusters],
                           capture_output=True, text=True, check=True).stdout.strip()
    return wall, peak, pages, score


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if len(values) % 2 else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    workers, limit_gib, repeat, peer = "2", 20.0, 5, None
    if "--peer" in args:
        i = args.index("--peer")
        peer = args[i + 1]
        del args[i:i + 2]
    if "--workers" in args:
        i = args.index("--workers")
        workers = args[i + 1]
        del args[i:i + 2]
    if "--limit-gib" in args:
        i = args.index("--limit-gib")
        limit_gib = float(args[i + 1])
        del args[i:i + 2]
    stream = "--stream" in args
    if stream:
        args.remove("--stream")
    if "--repeat" in args:
        i = args.index("--repeat")
        repeat = max(1, int(args[i + 1]))
        del args[i:i + 2]
    dupflow, work, labels = args[0], args[1], args[2:]
    os.makedirs(work, exist_ok=True)
    results = []
    for label in labels:
        n = size_of(label)
        corpus = os.path.join(work, f"s{label}.warc.gz")
        generate = None
        if not os.path.exists(corpus) and (stream or shutil.disk_usage(work).free < (CORPUS_BYTES_A_PAGE + RUN_BYTES_A_PAGE) * n):
            # Too large to keep beside the run's own files: written as it is read.
            generate = ["--truth", os.path.join(work, f"s{label}.truth.json"), "--pages", str(n)]
            print(f"(s{label}: the corpus is written as dupflow reads it, by corpus.py on a core of its own:"
                  f" pages/s is at most the generator's, ~2,600)", flush=True)
        elif not os.path.exists(corpus):
            started = time.time()
            subprocess.run([sys.executable, os.path.join(HERE, "corpus.py"), corpus, "--pages", str(n)], check=True)
            print(f"(wrote {corpus} in {time.time() - started:.0f} s)", flush=True)
        out = os.path.join(work, f"s{label}-out")
        runs = []
        for _ in range(repeat if n < 100_000 else 1):
            wall, peak, summary, stopped, cpu = run_once(dupflow, corpus, out, workers, extra, limit_gib, generate)
            if stopped:
                progress = re.findall(r"(\d+) pages, (\d+) pages/s", summary)
                read = f", {progress[-1][0]} pages read" if progress else ""
                print(f"== {label}: stopped at {peak / 1024 / 1024:.1f} GiB of RSS (limit {limit_gib} GiB) after {wall:.0f} s{read}", flush=True)
                break
            runs.append((wall, peak, summary, cpu))
        if len(runs) == 0 or stopped:
            results.append((label, n, None, peak, None, None))
            continue
        walls = [r[0] for r in runs]
        wall, peak, cpu = median(walls), median([r[1] for r in runs]), median([r[3] for r in runs])
        summary = runs[-1][2]
        pages = re.search(r"pages:\s+(\d+) in ([\d.]+) s \((\d+) pages/s\)", summary)
        latency = re.search(r"p50 ([\d.]+) s, p99 ([\d.]+) s", summary)
        count = int(pages.group(1))
        rate = count / wall
        rates = (count / max(walls), count / min(walls))
        score = subprocess.run([sys.executable, os.path.join(HERE, "score.py"), os.path.join(out, "clusters.jsonl")],
                               capture_output=True, text=True, check=True).stdout.strip()
        of_runs = f" (median of {len(runs)} runs: {', '.join(f'{w:.2f}' for w in walls)} s)" if len(runs) > 1 else ""
        print(f"== {label}: {count} pages, wall {wall:.1f} s{of_runs}, {rate:.0f} pages/s ({float(pages.group(3)):.0f} in the pipeline), "
              f"CPU {cpu:.1f} s ({cpu * 1000 / count:.3f} ms a page, {cpu / wall:.2f} cores), "
              f"peak RSS {peak / 1024:.0f} MB ({peak * 1024 / n / 1024:.1f} KB a page), "
              f"latency p50 {latency.group(1)} s p99 {latency.group(2)} s", flush=True)
        print("   " + score.replace("\n", "\n   "), flush=True)
        # Bytes a page in memory by structure and on disk, as the run states them.
        for line in summary.splitlines():
            if line.startswith(("held:", "rows:", "state:", "words:", "stored:", "spilled:")):
                print("   " + line, flush=True)
        if peer and generate:
            print("   the peer: not run (it reads a corpus on disk)", flush=True)
        elif peer:
            p_wall, p_peak, p_pages, p_score = run_peer(peer, corpus, os.path.join(work, f"s{label}-peer"), 10 * wall)
            if p_pages is None:
                print(f"   the peer, 1 core: not finished, stopped after {p_wall:.0f} s (10x dupflow's wall), "
                      f"peak RSS {p_peak / 1024:.0f} MB", flush=True)
                results.append((label, n, rate, peak, rates, count / cpu))
                continue
            p_rate = p_pages / p_wall
            print(f"   the peer, 1 core: wall {p_wall:.1f} s, {p_rate:.0f} pages/s, peak RSS {p_peak / 1024:.0f} MB "
                  f"({p_peak * 1024 / n / 1024:.1f} KB a page); dupflow per core {count / cpu:.0f} pages/s, "
                  f"{count / cpu / p_rate:.2f}x the peer", flush=True)
            print("      " + p_score.replace("\n", "\n      "), flush=True)
        results.append((label, n, rate, peak, rates, count / cpu))
    done = [r for r in results if r[2] is not None]
    if len(done) >= 2:
        first, last = done[0], done[-1]
        spread = ""
        if first[4][0] != first[4][1] or last[4][0] != last[4][1]:
            spread = f" (from {last[4][0] / first[4][1]:.2f} to {last[4][1] / first[4][0]:.2f} over the runs)"
        print(f"pages/s at {last[0]} / at {first[0]}: {last[2] / first[2]:.2f}{spread}")
        print(f"pages per CPU second at {last[0]} / at {first[0]}: {last[5] / first[5]:.2f}")
        for a, b in zip(done, done[1:]):
            if b[1] == a[1]:
                continue
            slope = (b[3] - a[3]) * 1024 / (b[1] - a[1])
            print(f"RSS slope {a[0]} -> {b[0]}: {slope / 1024:.1f} KB per added page")


if __name__ == "__main__":
    main()
