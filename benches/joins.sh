#!/usr/bin/env bash
# Similarity-join benchmark on the dev benchmark file's sentences (`dupflow sentences`):
# every algorithm at Jaccard 0.8/0.9, cosine 0.8 and edit distance τ = 1..3, q = 3..5, on the
# exact-deduplicated sentences (and with ALL=1 on all 340,936 of them, set measures and τ = 1..3 at
# q = 3 only: three quarters of those lines are exact repeats, so the output is ~74 million pairs a
# join), at 1 and 2 threads. Prints a markdown table.
#   bash benches/joins.sh [threads...]      (default: 1 2)
source "$(dirname "$0")/lib.sh"
threads=("${@:-1 2}")
all="$dir/sentences.txt"; uniq="$dir/unique.txt"
./target/release/dupflow sentences "$bench/docs-dev.warc.gz" > "$all"
./target/release/dupflow exact-dedup "$all" "$uniq" 2>/dev/null
row() { # file label args...
    local file=$1 label=$2; shift 2
    for t in ${threads[@]}; do
        local line
        line=$(./target/release/dupflow join "$@" --threads "$t" "$file" -o /dev/null 2>&1 >/dev/null | tail -1)
        # "<algo> ...: records R, candidates C, verifications V, results N, tokenize P s, join J s"
        echo "$line" | sed -E "s/^([^:]*): records ([0-9]+), candidates ([0-9]+), verifications ([0-9]+), results ([0-9]+), tokenize ([0-9.]+) s, join ([0-9.]+) s/| $label | \1 | $t | \2 | \3 | \4 | \5 | \6 | \7 |/"
    done
}
echo "| input | join | threads | records | candidates | verifications | results | tokenize s | join s |"
echo "|---|---|---|---|---|---|---|---|---|"
files=("$uniq"); qs=(3 4 5)
if [ "${ALL:-0}" = 1 ]; then files=("$all"); qs=(3); fi
for file in "${files[@]}"; do
    name=$(basename "$file" .txt)
    for m in "jaccard 0.8" "jaccard 0.9" "cosine 0.8"; do
        set -- $m
        for a in allpairs ppjoin ppjoinplus; do row "$file" "$name" --measure "$1" --threshold "$2" --algorithm "$a"; done
    done
    for tau in 1 2 3; do
        for q in "${qs[@]}"; do
            for a in allpairs-ed edjoin-l edjoin; do row "$file" "$name" --edit-distance "$tau" --q "$q" --algorithm "$a"; done
        done
    done
done
