#!/usr/bin/env bash
# The template-heavy case: rustdoc API pages (large pages, navigation and trait lists shared by
# many pages of a crate) at two sizes, with the fast peer beside dupflow.
#
# The corpus is `cargo doc` of this workspace's dependency tree (Cargo.lock pins it), crawled
# with GNU wget on loopback (benches/quality/crawl.sh), built once into target/bench-rustdoc.
# Three crates of generated one-item pages (libc, typenum, digest: 24k pages of constants and
# type-level numbers) and the source views are left out: ~13,000 pages of ~200 crates. Every
# eighth page also makes the small crawl (~1,650 pages). Each round runs dupflow (2 workers) on
# the small and the large crawl and the peer (../shared/tools/fast_minhash_peer.py, one core)
# on the large; the medians of ROUNDS interleaved rounds (default 3) give
#   - the RSS slope: (peak RSS large - peak RSS small) / (pages large - pages small);
#   - dupflow per core against the peer on the large crawl: peer wall / (2 x dupflow wall).
# Needs GNU wget, and a python with fastwarc, resiliparse and rensa (DUPFLOW_BENCH_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${DUPFLOW_BENCH_PYTHON:-python3}
rounds=${ROUNDS:-3}
peer=../shared/tools/fast_minhash_peer.py
[ -f "$peer" ] || { echo "$peer is absent: the bench needs shared/ beside the checkout" >&2; exit 1; }
"$python" -c 'import fastwarc, resiliparse, rensa' 2>/dev/null \
  || { echo "$python lacks fastwarc, resiliparse or rensa: set DUPFLOW_BENCH_PYTHON" >&2; exit 1; }
cargo build --release --locked -q
dir=target/bench-rustdoc
mkdir -p "$dir"
large=$dir/large.warc.gz small=$dir/small.warc.gz
if [ ! -f "$large" ]; then
  command -v wget > /dev/null || { echo "GNU wget is needed to crawl the corpus (Debian: wget)" >&2; exit 1; }
  CARGO_TARGET_DIR="$PWD/$dir/target" cargo doc -q --workspace --locked
  rm -rf "$dir/root" && mkdir -p "$dir/root"
  for crate in "$dir/target/doc"/*; do
    case "${crate##*/}" in libc | typenum | digest | src) ;; *) ln -s "$PWD/$crate" "$dir/root/" ;; esac
  done
  # shellcheck source=benches/quality/crawl.sh
  source benches/quality/crawl.sh
  crawl "$dir/root" 127.0.0.1 "$large"
fi
[ -f "$small" ] || python3 benches/split_warc.py "$large" "$dir/rest.warc.gz" "$small" "$dir/small-urls.txt" 8
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
timed() { # OUT command...: wall seconds and peak RSS in KB into OUT (its summary in $dir/stdout)
  local out=$1; shift
  /usr/bin/time -f "%e %M" -o "$out" "$@" > "$dir/stdout" 2> "$dir/stderr" || { cat "$dir/stderr" >&2; exit 1; }
}
pages_of() { sed -n 's/^pages: *\([0-9]*\) in.*/\1/p' "$dir/summary-$1"; }
: > "$dir/rounds"
for round in $(seq "$rounds"); do
  for size in small large; do
    timed "$dir/time" ./target/release/dupflow run "$dir/$size.warc.gz" --workers 2 --quiet --out "$dir/out-$size"
    cp "$dir/stdout" "$dir/summary-$size"
    echo "dupflow-$size $(cat "$dir/time")" >> "$dir/rounds"
  done
  timed "$dir/time" "$python" "$peer" "$large" "$dir/peer.jsonl"
  echo "peer-large $(cat "$dir/time")" >> "$dir/rounds"
  echo "round $round: $(tail -3 "$dir/rounds" | tr '\n' ' ')" >&2
done
wall() { awk -v k="$1" '$1 == k {print $2}' "$dir/rounds" | median; }
rss() { awk -v k="$1" '$1 == k {print $3}' "$dir/rounds" | median; }
small_pages=$(pages_of small) large_pages=$(pages_of large)
echo "commit $(git rev-parse --short HEAD); $(date -u +%Y-%m-%d); $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $rounds interleaved rounds, medians"
echo
echo "| crawl | pages | dupflow wall (2 workers) | dupflow peak RSS | the peer wall (1 core) | the peer peak RSS |"
echo "|---|---|---|---|---|---|"
printf '| small | %s | %s s | %d MB | – | – |\n' "$small_pages" "$(wall dupflow-small)" "$(($(rss dupflow-small) / 1024))"
printf '| large | %s | %s s | %d MB | %s s | %d MB |\n' "$large_pages" "$(wall dupflow-large)" \
  "$(($(rss dupflow-large) / 1024))" "$(wall peer-large)" "$(($(rss peer-large) / 1024))"
echo
awk -v rs="$(rss dupflow-small)" -v rl="$(rss dupflow-large)" -v ps="$small_pages" -v pl="$large_pages" \
  -v dw="$(wall dupflow-large)" -v pw="$(wall peer-large)" 'BEGIN {
    printf "RSS slope: %.1f KB per added page; dupflow per core against the peer: %.2fx\n",
      (rl - rs) / (pl - ps), pw / (2 * dw) }'
awk '{printf "%s%s %s s %d MB", (NR > 1 ? "; " : "rounds: "), $1, $2, $3 / 1024} END {print ""}' "$dir/rounds"
