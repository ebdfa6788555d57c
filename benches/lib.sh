# Shared by the benchmark scripts: work from the checkout, find the dev file, build, make a
# scratch folder ($dir) and score a clusters.jsonl with `dupflow eval` (score_line FILE prints
# "P R F1").
set -euo pipefail
cd "$(dirname "$0")/.."
bench=../shared/bench
if [ ! -f "$bench/docs-dev.warc.gz" ]; then
  echo "$bench/docs-dev.warc.gz is absent: the dev benchmark needs shared/ beside the checkout" >&2
  exit 1
fi
cargo build --release --locked -q
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
score_line() {
  ./target/release/dupflow eval --truth "$bench/docs-dev.truth.json" "$1" | sed -n 1p \
    | sed 's/.*precision \([0-9.]*\) recall \([0-9.]*\) f1 \([0-9.]*\).*/\1 \2 \3/'
}
