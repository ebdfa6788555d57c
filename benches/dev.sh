#!/usr/bin/env bash
# The dev benchmark: the whole pipeline on ../shared/bench/docs-dev.warc.gz (2 workers),
# timed, with peak RSS, and scored by ../shared/bench/score.py. Extra arguments go to
# `dupflow run` (e.g. --config my.toml).   bash benches/dev.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bench=../shared/bench
if [ ! -f "$bench/docs-dev.warc.gz" ]; then
  echo "$bench/docs-dev.warc.gz is absent: the dev benchmark needs shared/ beside the checkout" >&2
  exit 1
fi
cargo build --release --locked -q
out=$(mktemp -d)
/usr/bin/time -f "wall %e s, peak RSS %M KB" ./target/release/dupflow run "$bench/docs-dev.warc.gz" --workers 2 --out "$out" "$@"
python3 "$bench/score.py" "$bench/docs-dev.truth.json" "$out/clusters.jsonl" --by-section
rm -rf "$out"
