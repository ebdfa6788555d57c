#!/usr/bin/env bash
# Parameter sweep on the dev benchmark: page-averaged P/R/F1 for each setting.
#   bash benches/sweep.sh            (prints a Markdown table)
source "$(dirname "$0")/lib.sh"
echo "| clustering | tau | template.min_pages | template.page_fraction | fingerprint m×k | P | R | F1 | pages/s |"
echo "|---|---|---|---|---|---|---|---|---|"
run() {  # clustering tau min_pages page_fraction buckets k
  printf '[verify]\nclustering = "%s"\nthreshold = %s\n[template]\nmin_pages = %s\npage_fraction = %s\n[fingerprint]\ntype = "sentence"\nbuckets = %s\nhashes_per_bucket = %s\n' "$@" > "$dir/p.toml"
  speed=$(./target/release/dupflow run "$bench/docs-dev.warc.gz" --workers 2 --config "$dir/p.toml" --out "$dir/out" 2>/dev/null | sed -n 's/.*(\([0-9]*\) pages\/s).*/\1/p')
  read -r p r f <<< "$(score_line "$dir/out/clusters.jsonl")"
  echo "| $1 | $2 | $3 | $4 | $5×$6 | $p | $r | $f | $speed |"
}
for c in connected leader; do for t in 0.3 0.4 0.45 0.5 0.6 0.8; do run "$c" "$t" 4 0.02 8 3; done; done
for mp in 2 8 16 32; do run connected 0.45 "$mp" 0.02 8 3; done
for pf in 0.005 0.01 0.05; do run connected 0.45 4 "$pf" 8 3; done
for mk in "4 2" "8 2" "16 3" "8 4"; do run connected 0.45 4 0.02 $mk; done
