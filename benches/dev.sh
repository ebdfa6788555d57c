#!/usr/bin/env bash
# The dev benchmark: the whole pipeline on ../shared/bench/docs-dev.warc.gz (2 workers),
# timed, with peak RSS, and scored by ../shared/bench/score.py. Extra arguments go to
# `dupflow run` (e.g. --config my.toml).   bash benches/dev.sh
source "$(dirname "$0")/lib.sh"
/usr/bin/time -f "wall %e s, peak RSS %M KB" ./target/release/dupflow run "$bench/docs-dev.warc.gz" --workers 2 --quiet --out "$dir" "$@"
python3 "$bench/score.py" "$bench/docs-dev.truth.json" "$dir/clusters.jsonl" --by-section
