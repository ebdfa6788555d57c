# Sourced by benches/quality.sh and fixtures/blog/make.sh. Needs GNU wget and python3.
# crawl ROOT ADDRESS OUT.warc.gz: serve ROOT on ADDRESS, crawl every page from a sitemap of its
# *.html files (source views of rustdoc and javadoc left out) with GNU wget into OUT.
crawl() {
  local root=$1 address=$2 out=$3 port
  (cd "$root" && find -L . -name '*.html' -not -path '*/src/*' -not -path '*/src-html/*' | sort \
    | sed 's|^\./\(.*\)|<li><a href="\1">\1</a></li>|' | { echo '<html><body><ul>'; cat; echo '</ul></body></html>'; } > sitemap.html)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m http.server --bind "$address" --directory "$root" "$port" >/dev/null 2>&1 &
  local server=$!
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/$address/$port") 2>/dev/null && break; sleep 0.1; done
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && wget -q -r -l inf -np -nd --delete-after -e robots=off -A '*.html' --reject-regex '/src(-html)?/' \
    --warc-file=crawl --warc-cdx=off "http://$address:$port/sitemap.html" || true)
  kill "$server"; wait "$server" 2>/dev/null || true
  mv "$tmp/crawl.warc.gz" "$out"; rm -rf "$tmp"
}
