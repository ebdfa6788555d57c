#!/usr/bin/env bash
# Cost per page as the corpus grows: crawls of 10k, 100k and 1M pages with the
# statistics of real crawls (benches/scale/corpus.py: unique pages, near-copy families and
# identical stub families of many sizes, template-heavy siblings, many hosts; text from the
# dev benchmark's crawl), written once into target/scale/; dupflow (2 workers) on each, with
# pages/s, peak RSS, KB a page, record-to-change latency p50/p99 and the planted truth's score;
# then pages/s at the largest size over the smallest and the RSS slope per added page; with the
# peer's Python (DUPFLOW_BENCH_PYTHON, else target/peer-venv) the fast peer on each size beside.
#
#   bash benches/scale.sh [SIZE...] [-- dupflow run arguments]      (default: 10k 100k 1M)
#
# Writing the 1M corpus takes ~15 minutes and ~2.9 GB; a run is stopped at 20 GiB of RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f ../shared/bench/docs-dev.warc.gz ] || { echo "../shared/bench/docs-dev.warc.gz is absent: the scale corpora are written from the dev benchmark's crawl" >&2; exit 1; }
sizes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sizes+=("$1"); shift; done
[ ${#sizes[@]} -gt 0 ] || sizes=(10k 100k 1M)
cargo build --release --locked -q
# The fast peer beside dupflow on each size, when its Python is set up (benches/dev_vs_peer.py).
peer=()
python=${DUPFLOW_BENCH_PYTHON:-target/peer-venv/bin/python}
[ -x "$python" ] && [ -f ../shared/tools/fast_minhash_peer.py ] && peer=(--peer "$python")
exec python3 benches/scale/run.py target/release/dupflow target/scale "${sizes[@]}" "${peer[@]}" "$@"
