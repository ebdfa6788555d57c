#!/usr/bin/env bash
# Quality and speed on corpora this repository does not hold, from HTML generators other than
# mdBook: each corpus is a real GNU wget crawl (WARC) of a site served on loopback, its truth
# from the generator's main content (benches/quality/truth.py: lxml, not dupflow); dupflow
# (2 workers) and the speed peer (../shared/tools/fast_minhash_peer.py, 1 core) run on it in the
# same run; both are scored by ../shared/bench/score.py (page-averaged and pairwise, per section).
#
#   bash benches/quality.sh [CORPUS...] [-- dupflow run arguments]
#
# Corpora (built once into target/quality/, then reused). TUNING corpora may be studied when the
# method changes; HELD OUT corpora are measured, never studied or tuned on.
#   synthetic  failure patterns planted in this machine's prose (benches/quality/synthetic.py):
#              template-generated families, siblings sharing generated member lists, a stub
#              family, two versions of prose pages, unique pages.                 TUNING
#   rustdoc    cargo doc of tokio, serde_json, itertools and chrono, two versions of each side
#              by side (/old/, /new/): rustdoc, heavy navigation and trait lists.  TUNING
#   doxygen    libstdc++ 11 and 12 API documentation and manual (Debian's libstdc++-1{1,2}-doc):
#              doxygen + DocBook, two versions side by side.                       TUNING
#   sphinx     CMake's reference (Sphinx, Debian's cmake-doc) on one host and git's manual
#              pages (asciidoc, Debian's git-doc) on another.                      TUNING
#   javadoc    Apache Commons Lang 2.6 and 3.12 API documentation (javadoc, Debian's
#              libcommons-lang-java-doc, libcommons-lang3-java-doc) side by side.  TUNING
#   sphinxdoc  the documentation of Sphinx (3.4, 5.3), Flask (1.1, 2.2) and Django (2.2, 3.2),
#              each version on its own path (Sphinx, three themes).                TUNING
#   gtkdoc     GLib, GIO and GObject 2.66 and 2.74 reference manuals (gtk-doc; Debian bullseye's
#              and bookworm's libglib2.0-doc) side by side.                        HELD OUT
#   haddock    eight GHC libraries (base, containers, bytestring, text, mtl, transformers,
#              parsec, stm) of GHC 8.8 and 9.0 (haddock; bullseye's and bookworm's ghc-doc),
#              source views left out.                                             HELD OUT
#   vimdoc     Vim 8.2 and 9.0 help files (vim2html; bullseye's and bookworm's vim-doc).
#                                                                                  HELD OUT
#   texinfo    GNU Octave 6.2 and 7.3 manuals (makeinfo; bullseye's and bookworm's octave-doc),
#              one page a node.                                                    HELD OUT
#   erlang     Erlang/OTP 23 and 25 reference manuals of stdlib, kernel, erts and wx
#              (erl_docgen; bullseye's and bookworm's erlang-doc).                 TUNING
#   hugo       three blogs (hugo, Debian's package; a magazine theme of quality/blogs.py), each
#              also recrawled under v2/ with new posts on top (every listing shifts): tag,
#              category and author pages, paginated summaries (whole posts on one host), print
#              copies, posts syndicated between the hosts verbatim, edited or half rewritten.
#                                                                                  TUNING
#   hexo       the same kinds of blog from Hexo 7 (npm) and its landscape theme: year and
#              month archives, teasers on half of the posts (whole posts elsewhere). TUNING
#   nikola     the same from Nikola 8.3 (PyPI), bootblog4: title lists or whole posts on tag
#              pages, teaser or whole-post indexes.                               HELD OUT
#   jekyll     the same from Jekyll 4.3 (Debian) with minima and jekyll-archives: year, month,
#              tag and category archives of excerpts.                             HELD OUT
#   news       three news sites (hugo, a news theme of quality/blogs.py): section fronts and
#              tag pages of headlines and teasers, a related-stories box in every article and
#              a most-read list beside it (landmarks: <main>, <aside>), mobile copies of the
#              articles, wire stories on several hosts, a recrawl whose fronts shift. TUNING
# PostgreSQL, Python and JDK documentation and Pelican sites are reserved for checks outside
# this repository: no corpus here is built from them.
# Needs: wget, the Debian packages above (doxygen's, sphinx's and javadoc's installed when
# missing; the others, a bullseye and a bookworm release each, fetched from deb.debian.org's
# pool and unpacked, not installed), a venv made here with
# fastwarc, resiliparse, rensa, rapidfuzz and lxml (pinned), network to crates.io for cargo doc.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=../shared/bench
peer=../shared/tools/fast_minhash_peer.py
for f in "$bench/score.py" "$peer"; do
  [ -f "$f" ] || { echo "$f is absent: the quality benchmark needs shared/ beside the checkout" >&2; exit 1; }
done
corpora=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do corpora+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#corpora[@]} -gt 0 ] || corpora=(synthetic rustdoc doxygen javadoc erlang sphinxdoc sphinx gtkdoc haddock vimdoc texinfo hugo hexo nikola jekyll news)
work=$PWD/target/quality
mkdir -p "$work"
cargo build --release --locked -q
dupflow=$PWD/target/release/dupflow

venv=$work/venv
if ! [ -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import fastwarc, resiliparse, rensa, rapidfuzz, lxml" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "fastwarc==2.0.1" "resiliparse==2.0.1" "rensa==0.5.0" "rapidfuzz==3.14.6" "lxml==6.1.3"
fi
py=$venv/bin/python

need_packages() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# crawl ROOT ADDRESS OUT.warc.gz (benches/quality/crawl.sh).
source benches/quality/crawl.sh

rustdoc_versions() {
  local name=$1; shift
  local d=$work/rustdoc-src/$name
  mkdir -p "$d/src"
  # An empty [workspace]: target/quality is under this repository's workspace root.
  printf '[package]\nname = "quality-%s"\nversion = "0.0.0"\nedition = "2021"\n[workspace]\n[lib]\npath = "src/lib.rs"\n[dependencies]\n' "$name" > "$d/Cargo.toml"
  printf '%s\n' "$@" >> "$d/Cargo.toml"
  touch "$d/src/lib.rs"
  [ -d "$d/target/doc/tokio" ] && return
  (cd "$d" && CARGO_TARGET_DIR="$d/target" cargo doc -q --no-deps -p tokio -p serde_json -p itertools -p chrono)
}

# debian_package SUITE PACKAGE: unpacks the suite's current PACKAGE (an architecture-independent
# documentation package) into $work/debian/SUITE-PACKAGE, checked against the suite's index,
# and prints that folder.
debian_package() {
  local suite=$1 package=$2 dir=$work/debian/$1-$2
  if ! [ -d "$dir/usr" ]; then
    mkdir -p "$work/debian"
    local index=$work/debian/Packages-$suite
    [ -s "$index" ] || curl -fsS "http://deb.debian.org/debian/dists/$suite/main/binary-all/Packages.xz" | xz -d > "$index"
    local file sha
    read -r file sha < <(awk -v p="$package" '$0 == "Package: " p {f = 1} f && /^Filename:/ {n = $2} f && /^SHA256:/ {s = $2} f && /^$/ {print n, s; exit}' "$index")
    [ -n "$file" ] || { echo "$package is not in Debian $suite" >&2; exit 1; }
    curl -fsS -o "$work/debian/package.deb" "http://deb.debian.org/debian/$file"
    echo "$sha  $work/debian/package.deb" | sha256sum -c --quiet
    dpkg-deb -x "$work/debian/package.deb" "$dir"; rm "$work/debian/package.deb"
    echo "$suite: $(basename "$file")" >&2
  fi
  echo "$dir"
}

# both_releases PACKAGE PATH OLD NEW: PATH of bullseye's PACKAGE as $root/OLD, of bookworm's as
# $root/NEW (two versions side by side).
both_releases() {
  ln -s "$(debian_package bullseye "$1")/$2" "$root/$3"
  ln -s "$(debian_package bookworm "$1")/$2" "$root/$4"
}

# blog_tools GENERATOR: the generator, pinned, into $work/blog-tools (hugo from Debian).
blog_tools() {
  local tools=$work/blog-tools
  mkdir -p "$tools"
  case $1 in
    hugo|news) need_packages hugo ;;
    jekyll) need_packages jekyll jekyll-theme-minima ruby-jekyll-archives ;;
    hexo)
      if ! [ -x "$tools/hexo-tools/node_modules/.bin/hexo" ]; then
        mkdir -p "$tools/hexo-tools"
        (cd "$tools/hexo-tools" && npm init -y >/dev/null && npm install --silent hexo@7.3.0 hexo-theme-landscape@1.1.0 \
          hexo-generator-index@4.0.0 hexo-generator-tag@2.0.0 hexo-generator-category@2.0.0 hexo-generator-archive@2.0.0 \
          hexo-renderer-marked@7.0.1 hexo-renderer-ejs@2.0.0 hexo-renderer-stylus@3.0.1)
      fi ;;
    nikola)
      [ -x "$tools/nikola-venv/bin/nikola" ] || { python3 -m venv "$tools/nikola-venv"; "$tools/nikola-venv/bin/pip" install --quiet "nikola==8.3.1"; } ;;
  esac
}

build_corpus() {
  local name=$1 root=$work/$1-site
  rm -rf "$root"; mkdir -p "$root"
  case $name in
    synthetic)
      python3 benches/quality/synthetic.py "$root/synthetic"
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    rustdoc)
      rustdoc_versions old 'tokio = { version = "=1.38.0", features = ["full"] }' 'serde_json = "=1.0.100"' 'itertools = "=0.11.0"' 'chrono = "=0.4.31"'
      rustdoc_versions new 'tokio = { version = "=1.54.1", features = ["full"] }' 'serde_json = "=1.0.154"' 'itertools = "=0.14.0"' 'chrono = "=0.4.42"'
      ln -s "$work/rustdoc-src/old/target/doc" "$root/old"
      ln -s "$work/rustdoc-src/new/target/doc" "$root/new"
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    doxygen)
      need_packages libstdc++-12-doc
      # 11 and 12 conflict as packages: 11 is unpacked, not installed.
      if ! [ -d "$work/libstdc++-11/usr" ]; then
        (cd "$work" && apt-get download libstdc++-11-doc 2>/dev/null && dpkg-deb -x libstdc++-11-doc_*.deb libstdc++-11 && rm libstdc++-11-doc_*.deb)
      fi
      ln -s "$work/libstdc++-11/usr/share/doc/gcc-11-base/libstdc++" "$root/11"
      ln -s /usr/share/doc/gcc-12-base/libstdc++ "$root/12"
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    sphinx)
      need_packages cmake-doc git-doc
      mkdir -p "$root/a" "$root/b/git"
      ln -s /usr/share/doc/cmake-data/html "$root/a/cmake"
      ln -s /usr/share/doc/git-doc "$root/b/git/docs"
      crawl "$root/a" 127.0.0.1 "$work/a.warc.gz"
      crawl "$root/b" 127.0.0.2 "$work/b.warc.gz"
      cat "$work/a.warc.gz" "$work/b.warc.gz" > "$work/$name.warc.gz"; rm "$work/a.warc.gz" "$work/b.warc.gz" ;;
    javadoc)
      need_packages libcommons-lang-java-doc libcommons-lang3-java-doc
      ln -s /usr/share/doc/libcommons-lang-java/api "$root/lang-2.6"
      ln -s /usr/share/doc/libcommons-lang3-java/api "$root/lang-3.12"
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    gtkdoc)
      both_releases libglib2.0-doc usr/share/gtk-doc/html 2.66 2.74
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    haddock)
      local version suite lib
      for version in 8.8:bullseye 9.0:bookworm; do
        suite=${version#*:}; version=${version%:*}
        mkdir -p "$root/$version"
        for lib in base containers bytestring text mtl transformers parsec stm; do
          ln -s "$(ls -d "$(debian_package "$suite" ghc-doc)/usr/share/doc/ghc-doc/html/libraries/$lib"-[0-9]*)" "$root/$version/$lib"
        done
      done
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    sphinxdoc)
      local project package
      for project in sphinx:sphinx-doc flask:python-flask-doc django:python-django-doc; do
        package=${project#*:}; project=${project%%:*}
        mkdir -p "$root/$project"
        both_releases "$package" "usr/share/doc/$package/html" "$project/bullseye" "$project/bookworm"
      done
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    vimdoc)
      mkdir -p "$root/vim"
      both_releases vim-doc usr/share/doc/vim/html vim/8.2 vim/9.0
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    texinfo)
      both_releases octave-doc usr/share/doc/octave 6.2 7.3
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    erlang)
      local release suite app
      for release in 23:bullseye 25:bookworm; do
        suite=${release#*:}; release=${release%:*}
        mkdir -p "$root/$release"
        for app in erts stdlib kernel wx; do
          ln -s "$(ls -d "$(debian_package "$suite" erlang-doc)/usr/share/doc/erlang-doc/"{,lib/}"$app"-[0-9]*/doc/html 2>/dev/null)" "$root/$release/$app"
        done
      done
      crawl "$root" 127.0.0.1 "$work/$name.warc.gz" ;;
    hugo|hexo|nikola|jekyll|news)
      blog_tools "$name"
      python3 benches/quality/blogs.py "$name" "$root" --tools "$work/blog-tools"
      local host n=0 parts=()
      for host in "$root"/*/; do
        n=$((n + 1))
        crawl "$host" "127.0.0.$n" "$work/$name-$n.warc.gz"
        parts+=("$work/$name-$n.warc.gz")
      done
      cat "${parts[@]}" > "$work/$name.warc.gz"; rm "${parts[@]}" ;;
    *) echo "unknown corpus $name (synthetic, rustdoc, doxygen, javadoc, erlang, sphinxdoc, sphinx, gtkdoc, haddock, vimdoc, texinfo, hugo, hexo, nikola, jekyll, news)" >&2; exit 2 ;;
  esac
  "$py" benches/quality/truth.py "$work/$name.warc.gz" "$work/$name"
}

measure() { # measure LABEL OUTDIR COMMAND...: wall seconds and peak RSS into $work/LABEL.time
  /usr/bin/time -f "%e %M" -o "$work/$1.time" "${@:3}" >/dev/null 2>"$work/$1.err" || { cat "$work/$1.err" >&2; exit 1; }
}

for name in "${corpora[@]}"; do
  [ -f "$work/$name.truth.json" ] || build_corpus "$name"
  out=$work/$name-out
  rm -rf "$out"; mkdir -p "$out"
  pages=$("$py" -c "import json,sys; t=json.load(open(sys.argv[1])); print(len(t['urls']) + len(t['excluded']))" "$work/$name.truth.json")
  measure "$name-dupflow" "$out" "$dupflow" run "$work/$name.warc.gz" --workers 2 --quiet --out "$out" "$@"
  measure "$name-peer" "$out" "$py" "$peer" "$work/$name.warc.gz" "$out/peer.jsonl"
  read -r dw dr < "$work/$name-dupflow.time"
  read -r pw pr < "$work/$name-peer.time"
  echo "== $name: $pages html pages"
  echo "dupflow, 2 workers: wall ${dw} s, peak RSS $((dr / 1024)) MB; per core $(awk -v p="$pages" -v w="$dw" 'BEGIN{printf "%.0f", p/w/2}') pages/s"
  echo "peer, 1 core:       wall ${pw} s, peak RSS $((pr / 1024)) MB; per core $(awk -v p="$pages" -v w="$pw" 'BEGIN{printf "%.0f", p/w}') pages/s"
  echo "per core, dupflow / peer: $(awk -v d="$dw" -v p="$pw" 'BEGIN{printf "%.2f", p/(2*d)}')"
  for system in dupflow:clusters peer:peer; do
    echo "-- ${system%%:*}"
    case $name in
      hugo|hexo|nikola|jekyll|news) # by page kind, and how far apart the clusters reach
        explain=()
        [ "$system" = dupflow:clusters ] && explain=(--explain "$dupflow" "$work/$name.warc.gz" "$out" "$@")
        "$py" benches/quality/kinds.py "$work/$name.truth.json" "$out/${system#*:}.jsonl" "$work/$name.tokens.pickle" "${explain[@]}" ;;
      *) "$py" "$bench/score.py" "$work/$name.truth.json" "$out/${system#*:}.jsonl" --tokens "$work/$name.tokens.pickle" --by-section
         if [ "$system" = dupflow:clusters ]; then # how far apart the clusters reach
           "$py" benches/quality/kinds.py "$work/$name.truth.json" "$out/clusters.jsonl" "$work/$name.tokens.pickle" \
             --explain "$dupflow" "$work/$name.warc.gz" "$out" "$@" | grep -E '^(largest|pairs below)'
         fi ;;
    esac
  done
done
