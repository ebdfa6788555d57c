#!/usr/bin/env bash
# Incremental cost on the dev benchmark file: load 99% of its pages in follow mode, then add
# the held-out 1% (a new WARC file in the followed directory), then delete 1% (their URLs
# appended to the deletions file), and compare each epoch's cost with a full batch replay.
# Then a steady feed (records appended to a followed file at RATE records/s, default 200) for
# the read-to-written latency, p50/p99.      bash benches/live.sh
source "$(dirname "$0")/lib.sh"
rate=${RATE:-200}
python3 benches/split_warc.py "$bench/docs-dev.warc.gz" "$dir/base.warc.gz" "$dir/extra.warc.gz" "$dir/extra-urls.txt" 100
echo "full batch replay of the 99%:"
/usr/bin/time -f "  wall %e s" ./target/release/dupflow run "$dir/base.warc.gz" --workers 2 --quiet | sed 's/^/  /'
mkdir -p "$dir/warcs"
touch "$dir/deletions.txt"
printf '[run]\nworkers = 2\nepoch_ms = 100\n' > "$dir/live.toml"
DUPFLOW_LOG=dupflow=debug ./target/release/dupflow run --follow "$dir/warcs" --deletions "$dir/deletions.txt" \
  --config "$dir/live.toml" --out "$dir/out" --quiet >"$dir/summary" 2>"$dir/log" &
pid=$!
settle() { # wait until changes.jsonl has not grown for 1.5 s
  local last=-1 now
  while true; do
    sleep 1.5
    now=$(wc -c <"$dir/out/changes.jsonl" 2>/dev/null || echo 0)
    [ "$now" = "$last" ] && [ "$now" != 0 ] && return
    last=$now
  done
}
cp "$dir/base.warc.gz" "$dir/warcs/a-base.warc.gz"
settle
loaded=$(grep -c "changes written" "$dir/log")
cp "$dir/extra.warc.gz" "$dir/warcs/b-extra.warc.gz"
settle
added=$(grep -c "changes written" "$dir/log")
cat "$dir/extra-urls.txt" >>"$dir/deletions.txt"
settle
kill -TERM $pid
wait $pid
echo "follow mode (epoch_ms 100): loading the 99%:"
sed -n "1,${loaded}p" "$dir/log" | grep -o "epoch [0-9]*:.*" | sed 's/^/  /'
echo "adding the 1% (one new WARC file):"
sed -n "$((loaded + 1)),${added}p" <(grep "changes written\|first record read" "$dir/log") | grep -o "epoch [0-9]*:.*" | sed 's/^/  /'
grep "changes written\|first record read" "$dir/log" | sed -n "$((added * 2 - loaded + 1)),\$p" >/dev/null
echo "deleting the 1% (URLs appended to the deletions file):"
grep "changes written" "$dir/log" | sed -n "$((added + 1)),\$p" | grep -o "epoch [0-9]*:.*" | sed 's/^/  /'
grep "updates:" "$dir/summary" | sed 's/^/  /'

echo "steady feed: $rate records/s appended to a followed file"
mkdir -p "$dir/steady"
printf '[run]\nworkers = 2\nepoch_ms = 100\n' > "$dir/steady.toml"
./target/release/dupflow run --follow "$dir/steady/feed.warc.gz" --config "$dir/steady.toml" --out "$dir/steady-out" --quiet >"$dir/steady-summary" 2>/dev/null &
pid=$!
sleep 0.5
python3 - "$dir/base.warc.gz" "$dir/steady/feed.warc.gz" "$rate" <<'PY'
import sys, time, zlib
data = open(sys.argv[1], "rb").read()
out = open(sys.argv[2], "ab")
rate = float(sys.argv[3])
pos, n, start = 0, 0, time.time()
while pos < len(data) and n < rate * 20:
    d = zlib.decompressobj(31)
    d.decompress(data[pos:])
    end = len(data) - len(d.unused_data)
    out.write(data[pos:end]); out.flush()
    pos, n = end, n + 1
    delay = start + n / rate - time.time()
    if delay > 0:
        time.sleep(delay)
print(f"  {n} records in {time.time() - start:.1f} s")
PY
sleep 1
kill -TERM $pid
wait $pid
grep -E "pages:|latency:" "$dir/steady-summary" | sed 's/^/  /'
