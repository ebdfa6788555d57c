#!/usr/bin/env bash
# The method table: every fingerprint × verifier on the dev benchmark file, with page-averaged
# P/R/F1, pages/s (2 workers) and peak RSS.   bash benches/methods.sh
source "$(dirname "$0")/lib.sh"
echo "| fingerprint | verify | P | R | F1 | same-host P / cross-host P | pages/s | peak RSS |"
echo "|---|---|---|---|---|---|---|---|"
run() {  # label-fingerprint label-verify toml
  printf '%b' "$3" > "$dir/p.toml"
  /usr/bin/time -f "%M" -o "$dir/rss" ./target/release/dupflow run "$bench/docs-dev.warc.gz" --workers 2 --config "$dir/p.toml" --out "$dir/out" > "$dir/summary" 2>/dev/null
  speed=$(sed -n 's/.*(\([0-9]*\) pages\/s).*/\1/p' "$dir/summary")
  ./target/release/dupflow eval --truth "$bench/docs-dev.truth.json" "$dir/out/clusters.jsonl" > "$dir/eval"
  read -r p r f <<< "$(sed -n 1p "$dir/eval" | sed 's/.*precision \([0-9.]*\) recall \([0-9.]*\) f1 \([0-9.]*\).*/\1 \2 \3/')"
  hosts=$(sed -n 's/.*same-host \([0-9.]*\).*cross-host \([0-9.]*\).*/\1 \/ \2/p' "$dir/eval")
  echo "| $1 | $2 | $p | $r | $f | $hosts | $speed | $(( $(cat "$dir/rss") / 1024 )) MB |"
}
run "sentence 8×3 (default)" "lcs τ 0.45" ''
run "sentence 8×3" "none" '[verify]\ntype = "none"\n'
run "minhash 5-shingles 14×8" "none" '[fingerprint]\ntype = "minhash"\n[verify]\ntype = "none"\n'
run "minhash 5-shingles 14×8" "jaccard 0.8" '[fingerprint]\ntype = "minhash"\n[verify]\ntype = "jaccard"\nthreshold = 0.8\n'
run "minhash 5-shingles 14×8" "lcs τ 0.45" '[fingerprint]\ntype = "minhash"\n'
run "minhash 3-shingles 14×8" "none" '[fingerprint]\ntype = "minhash"\nshingle_words = 3\n[verify]\ntype = "none"\n'
run "minhash 7-shingles 14×8" "none" '[fingerprint]\ntype = "minhash"\nshingle_words = 7\n[verify]\ntype = "none"\n'
run "simhash 3-shingles k=3" "none" '[fingerprint]\ntype = "simhash"\n[verify]\ntype = "none"\n'
run "simhash 3-shingles k=3" "jaccard 0.8" '[fingerprint]\ntype = "simhash"\n[verify]\ntype = "jaccard"\nthreshold = 0.8\n'
run "simhash 3-shingles k=3" "lcs τ 0.45" '[fingerprint]\ntype = "simhash"\n'
run "simhash 3-shingles k=6" "none" '[fingerprint]\ntype = "simhash"\nmax_distance = 6\n[verify]\ntype = "none"\n'
run "sentence 8×3" "cosine τ 0.6" '[verify]\ntype = "cosine"\nthreshold = 0.6\n'
run "sentence 8×3" "cosine τ 0.7" '[verify]\ntype = "cosine"\nthreshold = 0.7\n'
run "sentence 8×3" "cosine τ 0.8" '[verify]\ntype = "cosine"\nthreshold = 0.8\n'
run "sentence 8×3" "5-shingle resemblance 0.5" '[verify]\ntype = "jaccard"\nthreshold = 0.5\n'
run "sentence 8×3" "5-shingle resemblance 0.7" '[verify]\ntype = "jaccard"\nthreshold = 0.7\n'
