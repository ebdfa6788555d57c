#!/usr/bin/env bash
# A 100,000-document JSONL corpus (benches/text_corpus.py: documentation text of this machine,
# 20% planted copies and near copies) clustered by dupflow (1 and 2 workers), by rensa
# MinHash-LSH 0.8 (the speed peer's MinHash, one core) and by datasketch MinHash-LSH (one core,
# thresholds 0.8 and 0.5), in the same run; docs/s, peak RSS and the planted pairs found.
# Needs python3 with datasketch and rensa (DUPFLOW_BENCH_PYTHON names one; the corpus is
# generated once into target/bench-text).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${DUPFLOW_BENCH_PYTHON:-python3}
docs=${DOCS:-100000}
cargo build --release --locked -q
dir=target/bench-text
mkdir -p "$dir"
corpus="$dir/corpus-$docs.jsonl"
[ -f "$corpus" ] || python3 benches/text_corpus.py "$corpus" --docs "$docs"
truth="${corpus%.jsonl}.truth.json"
echo "corpus: $corpus ($(du -m "$corpus" | cut -f1) MB)"
printf '%-30s %9s %9s %10s  %s\n' tool wall_s docs/s rss_MB quality
time_of() { # label, command...: runs it under /usr/bin/time, prints wall and RSS
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$dir/time" "$@" > "$dir/stdout" 2> "$dir/stderr"
  read -r wall rss < "$dir/time"
  echo "$wall $rss"
}
for workers in 1 2; do
  read -r wall rss < <(time_of dupflow ./target/release/dupflow run "$corpus" --workers "$workers" --quiet --out "$dir/dupflow-$workers")
  quality=$(python3 benches/text_score.py "$truth" "$dir/dupflow-$workers/clusters.jsonl")
  printf '%-30s %9.1f %9.0f %10.0f  %s\n' "dupflow, $workers worker(s)" "$wall" "$(echo "$docs / $wall" | bc -l)" "$((rss / 1024))" "$quality"
done
read -r wall rss < <(time_of rensa "$python" benches/text_minhash.py "$corpus" "$dir/rensa-0.8.json" --engine rensa --threshold 0.8)
quality=$(python3 benches/text_score.py "$truth" "$dir/rensa-0.8.json")
printf '%-30s %9.1f %9.0f %10.0f  %s\n' "rensa LSH 0.8, 1 core" "$wall" "$(echo "$docs / $wall" | bc -l)" "$((rss / 1024))" "$quality"
for threshold in 0.8 0.5; do
  read -r wall rss < <(time_of datasketch "$python" benches/text_minhash.py "$corpus" "$dir/minhash-$threshold.json" --threshold "$threshold")
  quality=$(python3 benches/text_score.py "$truth" "$dir/minhash-$threshold.json")
  printf '%-30s %9.1f %9.0f %10.0f  %s\n' "datasketch LSH $threshold, 1 core" "$wall" "$(echo "$docs / $wall" | bc -l)" "$((rss / 1024))" "$quality"
done
