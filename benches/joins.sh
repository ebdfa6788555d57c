#!/usr/bin/env bash
# Similarity-join benchmark on the dev benchmark file's sentences (`dupflow sentences`):
# every algorithm at Jaccard 0.8/0.9, cosine 0.8 and edit distance τ = 1..3, q = 3..5, on the
# exact-deduplicated sentences (and with ALL=1 on all 340,936 of them, set measures and τ = 1..3 at
# q = 3 only: three quarters of those lines are exact repeats, so the output is ~74 million pairs a
# join), at 1 and 2 threads, beside the single-threaded C++ baseline of benches/cpp (built here
# with g++ -O3; its output is checked to be identical). Prints a markdown table.
#   bash benches/joins.sh [threads...]      (default: 1 2)
source "$(dirname "$0")/lib.sh"
threads=("${@:-1 2}")
all="$dir/sentences.txt"; uniq="$dir/unique.txt"
./target/release/dupflow sentences "$bench/docs-dev.warc.gz" > "$all"
./target/release/dupflow exact-dedup "$all" "$uniq" 2>/dev/null
cpp=1
if command -v g++ >/dev/null 2>&1; then
  g++ -O3 -std=c++17 -o "$dir/setjoin" benches/cpp/setjoin.cc
  g++ -O3 -std=c++17 -o "$dir/edjoin" benches/cpp/edjoin.cc
else
  echo "g++ is absent: the C++ baseline column is left empty" >&2; cpp=0
fi
# "<algo> ...: records R, candidates C, verifications V, results N, tokenize P s, join J s"
stat='s/^([^:]*): records ([0-9]+), candidates ([0-9]+), verifications ([0-9]+), results ([0-9]+), tokenize ([0-9.]+) s, join ([0-9.]+) s/'
row() { # file label cpp-command dupflow-args...
    local file=$1 label=$2 base=$3; shift 3
    local cells="" first=""
    for t in ${threads[@]}; do
        local line
        line=$(./target/release/dupflow join "$@" --threads "$t" "$file" -o "$dir/ours.txt" 2>&1 >/dev/null | tail -1)
        [ -z "$first" ] && first=$(echo "$line" | sed -E "$stat| \1 | \2 | \3 | \4 | \5 | \6 |/")
        cells="$cells $(echo "$line" | sed -E "${stat}\7 |/")"
    done
    local theirs="–"
    if [ "$cpp" = 1 ]; then
        local cline
        cline=$($base "$file" 2>&1 >"$dir/theirs.txt" | tail -1)
        cmp -s "$dir/ours.txt" "$dir/theirs.txt" || { echo "C++ baseline and dupflow differ on: $label $*" >&2; exit 1; }
        theirs="$(echo "$cline" | sed -E "${stat}\6 | \7/")"
    fi
    echo "| $label $first$cells $theirs |"
}
header="| input | join | records | candidates | verifications | results | tokenize s |"; rule="|---|---|---:|---:|---:|---:|---:|"
for t in ${threads[@]}; do header="$header join s, $t thread(s) |"; rule="$rule---:|"; done
echo "$header C++ tokenize s | C++ join s, 1 thread |"
echo "$rule---:|---:|"
files=("$uniq"); qs=(3 4 5)
if [ "${ALL:-0}" = 1 ]; then files=("$all"); qs=(3); fi
for file in "${files[@]}"; do
    name=$(basename "$file" .txt)
    for m in "jaccard 0.8" "jaccard 0.9" "cosine 0.8"; do
        set -- $m
        for a in allpairs ppjoin ppjoinplus; do row "$file" "$name" "$dir/setjoin $1 $2 $a" --measure "$1" --threshold "$2" --algorithm "$a"; done
    done
    for tau in 1 2 3; do
        for q in "${qs[@]}"; do
            for a in allpairs-ed edjoin-l edjoin; do row "$file" "$name" "$dir/edjoin $tau $q $a" --edit-distance "$tau" --q "$q" --algorithm "$a"; done
        done
    done
done
