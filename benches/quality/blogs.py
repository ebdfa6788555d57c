#!/usr/bin/env python3
"""Blog and news sites from real static site generators, with the copies a blog crawl holds.

Usage: blogs.py GENERATOR OUTDIR [--seed 1] [--tools DIR] [--hosts NAME,...] [--posts N]

GENERATOR: hugo (Debian's hugo, a magazine theme written here, with print copies of posts),
hexo (Hexo 7 from npm with its landscape theme), nikola (Nikola 8.3 from PyPI, bootblog4),
jekyll (Debian's jekyll 4.3 with its minima theme and jekyll-archives), news (Debian's hugo,
a news site's theme written here: section fronts of headlines and teasers, related stories in
each article, a most-read list, mobile copies of articles).
Three hosts, each its own site; OUTDIR/<host>/ holds the built site at its root and a later
build of it under v2/ (a recrawl: new posts on top, so every paginated listing shifts). The
posts are this machine's prose (/usr/share/doc, as benches/text_corpus.py reads it), with:

- tags drawn from a long tail (many tags hold one post: its tag page shows that post alone),
  categories, authors, paginated indexes and date archives, whatever the generator makes of them;
- half of the posts with a teaser break (listings show their first paragraph), half without
  (listings show them whole, as a one-post tag page does);
- syndicated copies: a post published again on another host, verbatim with a line naming
  where it first appeared, with a few words edited, or with half of it rewritten (a distinct
  pair: its truth is its text, not its planting);
- print copies of posts (hugo).

Truth is not planted: quality/truth.py reads each page's main content (the generator's article
or listing area) and compares it. Deterministic for a seed. --tools names the folder where
hexo's npm packages and nikola's venv are (target/blogs). --hosts builds some of the hosts
only, --posts writes N posts a host (90), as the repository's small blog fixture does
(fixtures/blog/make.sh).
"""
import argparse
import datetime
import html
import json
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from text_corpus import source_lines  # noqa: E402

HOSTS = ["north", "harbor", "meadow"]
POSTS_PER_HOST = 90
NEW_POSTS = 4  # on top of each host in the recrawl


def sentences(seed):
    seen, out = set(), []
    for line in source_lines():
        words = line.split()
        if 8 <= len(words) <= 30 and line[0].isupper() and line[-1] in ".!?" and line.lower() not in seen:
            seen.add(line.lower())
            out.append(line)
    random.Random(seed).shuffle(out)
    return out


class Corpus:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.pool = iter(sentences(seed))
        first = [next(self.pool) for _ in range(4000)]
        self.vocabulary = sorted({w for s in first for w in s.split() if w.isalpha() and w.islower() and len(w) > 3})
        self.hosts = {h: [] for h in HOSTS}
        self.tags = {h: [self.word() + ("-" + self.word() if i % 3 == 0 else "") for i in range(45)] for h in HOSTS}
        self.categories = {h: [self.word().capitalize() for _ in range(5)] for h in HOSTS}
        self.authors = {h: [f"{self.word().capitalize()} {self.word().capitalize()}" for _ in range(3)] for h in HOSTS}
        start = datetime.datetime(2024, 1, 3, 9, 0)
        for h in HOSTS:
            for i in range(POSTS_PER_HOST + NEW_POSTS):
                self.hosts[h].append(self.post(h, start + datetime.timedelta(days=2 * i, hours=HOSTS.index(h))))
        self.syndicate()

    def word(self):
        return self.r.choice(self.vocabulary)

    def paragraphs(self, n):
        return [" ".join(next(self.pool) for _ in range(self.r.randint(2, 4))) for _ in range(n)]

    def post(self, host, date):
        title = " ".join(self.word() for _ in range(self.r.randint(3, 6))).capitalize()
        weights = [1 / (k + 1) for k in range(len(self.tags[host]))]
        tags = sorted(set(self.r.choices(self.tags[host], weights, k=self.r.randint(1, 3))))
        return {
            "slug": "-".join(title.lower().split()[:4]) + f"-{date:%m%d}",
            "title": title,
            "date": date,
            "author": self.r.choice(self.authors[host]),
            "category": self.r.choice(self.categories[host]),
            "tags": tags,
            "paragraphs": self.paragraphs(self.r.randint(3, 12)),
            "teaser": self.r.random() < 0.5,
        }

    def syndicate(self):
        for h in HOSTS:
            for post in self.r.sample(self.hosts[h][:POSTS_PER_HOST], min(12, POSTS_PER_HOST // 4)):
                other = self.r.choice([o for o in HOSTS if o != h])
                copy = dict(post, date=post["date"] + datetime.timedelta(days=self.r.randint(1, 9), hours=1),
                            slug=post["slug"] + "-via-" + h, author=self.r.choice(self.authors[other]),
                            category=self.r.choice(self.categories[other]),
                            tags=sorted(set(self.r.sample(self.tags[other], 2))))
                kind = self.r.random()
                text = list(post["paragraphs"])
                if kind < 0.4:
                    text.append(f"This article first appeared on the {h.capitalize()} blog and is republished with permission.")
                elif kind < 0.8:
                    text = [self.edit(p) for p in text]
                else:
                    keep = max(1, len(text) // 2)
                    text = text[:keep] + self.paragraphs(len(text) - keep + 1)
                copy["paragraphs"] = text
                self.hosts[other].append(copy)
        for h in HOSTS:
            self.hosts[h].sort(key=lambda p: p["date"])

    def edit(self, paragraph):
        words = paragraph.split()
        for i in range(len(words)):
            if self.r.random() < 0.03:
                words[i] = self.word()
        return " ".join(words)

    def snapshot(self, host, later):
        """The host's posts as of the first crawl, or of the recrawl (NEW_POSTS more)."""
        posts = self.hosts[host]
        cut = sorted(p["date"] for p in posts)[-NEW_POSTS - 1]
        return [p for p in posts if later or p["date"] <= cut]


def body_html(post, more):
    parts = []
    for i, p in enumerate(post["paragraphs"]):
        parts.append(f"<p>{html.escape(p)}</p>")
        if i == 0 and post["teaser"]:
            parts.append(more)
    return "\n\n".join(parts)


# --- hugo: a magazine theme written here -------------------------------------------------------

HUGO_BASEOF = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ .Title }} | {{ .Site.Title }}</title>
<link rel="stylesheet" href="{{ "style.css" | relURL }}"></head>
<body>
<div class="masthead"><a href="{{ "/" | relURL }}">{{ .Site.Title }}</a>
<p class="tagline">{{ .Site.Params.tagline }}</p>
<ul class="menu">{{ range .Site.Taxonomies.categories }}<li><a href="{{ .Page.RelPermalink }}">{{ .Page.Title }}</a></li>{{ end }}</ul></div>
<div class="layout">
<div class="blog-main">{{ block "main" . }}{{ end }}</div>
<div class="sidebar">
<div class="widget"><h3>About</h3><p>{{ .Site.Params.about }}</p></div>
<div class="widget"><h3>Recent posts</h3><ul>{{ range first 5 .Site.RegularPages }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>{{ end }}</ul></div>
<div class="widget"><h3>Tags</h3><ul>{{ range $name, $pages := .Site.Taxonomies.tags }}<li><a href="{{ "/tags/" | relURL }}{{ $name | urlize }}/">{{ $name }}</a></li>{{ end }}</ul></div>
</div></div>
<div class="colophon"><p>{{ .Site.Params.footer }}</p><p>Subscribe to the newsletter to get every new story in your inbox, once a week, with no advertising.</p></div>
</body></html>
"""
HUGO_SINGLE = """{{ define "main" }}<article><h1>{{ .Title }}</h1>
<p class="byline">By {{ range .Params.authors }}{{ . }}{{ end }} on {{ .Date.Format "January 2, 2006" }} in {{ range .Params.categories }}{{ . }}{{ end }}</p>
{{ .Content }}
<p class="tags">Tagged: {{ range .Params.tags }}<a href="{{ "/tags/" | relURL }}{{ . | urlize }}/">{{ . }}</a> {{ end }}</p>
<p>{{ with .OutputFormats.Get "print" }}<a href="{{ .RelPermalink }}">Print this story</a>{{ end }}</p></article>{{ end }}
"""
HUGO_LIST = """{{ define "main" }}<h1>{{ .Title }}</h1>
{{ $paginator := .Paginate .Pages }}
{{ range $paginator.Pages }}<div class="entry"><h2><a href="{{ .RelPermalink }}">{{ .Title }}</a></h2>
<p class="byline">{{ .Date.Format "January 2, 2006" }}</p>
{{ if $.Site.Params.fullListings }}{{ .Content }}{{ else }}{{ .Summary }}{{ if .Truncated }}<p><a href="{{ .RelPermalink }}">Read more</a></p>{{ end }}{{ end }}</div>
{{ end }}
<div class="pager">{{ if $paginator.HasPrev }}<a href="{{ $paginator.Prev.URL }}">Newer</a>{{ end }} Page {{ $paginator.PageNumber }} of {{ $paginator.TotalPages }} {{ if $paginator.HasNext }}<a href="{{ $paginator.Next.URL }}">Older</a>{{ end }}</div>
{{ end }}
"""
HUGO_PRINT = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ .Title }} (print)</title></head>
<body><div class="blog-main"><h1>{{ .Title }}</h1><p>{{ .Date.Format "2006-01-02" }}</p>{{ .Content }}</div>
<p>Printed from {{ .Site.Title }}.</p></body></html>
"""


def hugo_site(corpus, host, dest, root, later, tools):
    full = HOSTS.index(host) == 1  # one host shows whole posts in its listings
    config = {
        "baseURL": root, "title": f"The {host.capitalize()} Gazette", "languageCode": "en",
        "paginate": 8, "summaryLength": 40, "disableKinds": ["RSS", "sitemap", "robotsTXT"],
        "taxonomies": {"tag": "tags", "category": "categories", "author": "authors"},
        "outputFormats": {"print": {"mediaType": "text/html", "path": "print", "baseName": "index", "isHTML": True, "permalinkable": False}},
        "outputs": {"page": ["html", "print"]},
        "params": {"tagline": f"Notes and stories from {host}, since 2019.", "fullListings": full,
                   "about": f"The {host.capitalize()} Gazette is written by a small group of volunteers who like long walks and short sentences.",
                   "footer": f"Copyright {host.capitalize()} Gazette contributors. Text available under a free licence."},
    }
    build_hugo(corpus, host, dest, later, config,
               [("baseof.html", HUGO_BASEOF), ("single.html", HUGO_SINGLE),
                ("list.html", HUGO_LIST), ("single.print.html", HUGO_PRINT)])


def build_hugo(corpus, host, dest, later, config, layouts):
    """Builds the host's posts (as of the first crawl, or of the recrawl) with hugo, the site's
    config and its layouts (name, text) into dest."""
    src = dest + ".src"
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(f"{src}/content/posts")
    with open(f"{src}/config.json", "w") as f:
        json.dump(config, f)
    os.makedirs(f"{src}/layouts/_default")
    for name, text in layouts:
        with open(f"{src}/layouts/_default/{name}", "w") as f:
            f.write(text)
    for post in corpus.snapshot(host, later):
        meta = {"title": post["title"], "date": post["date"].isoformat(), "tags": post["tags"],
                "categories": [post["category"]], "authors": [post["author"]]}
        with open(f"{src}/content/posts/{post['slug']}.html", "w") as f:
            f.write(json.dumps(meta) + "\n\n" + body_html(post, "<!--more-->") + "\n")
    subprocess.run(["hugo", "--quiet", "-s", src, "-d", dest], check=True)
    shutil.rmtree(src)


# --- news: a news site's theme written here, built by hugo -------------------------------------

NEWS_BASEOF = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ .Title }} | {{ .Site.Title }}</title></head>
<body>
<header class="site"><a href="{{ "/" | relURL }}">{{ .Site.Title }}</a>
<nav><ul>{{ range .Site.Taxonomies.categories }}<li><a href="{{ .Page.RelPermalink }}">{{ .Page.Title }}</a></li>{{ end }}</ul></nav></header>
<main>{{ block "main" . }}{{ end }}</main>
<aside class="most-read"><h3>Most read</h3><ol>{{ range first 6 (where .Site.RegularPages "Section" "posts") }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a><p>{{ .Summary | plainify | truncate 120 }}</p></li>{{ end }}</ol></aside>
<footer><p>{{ .Site.Params.footer }}</p><p>Corrections and tips: write to the newsroom. Our journalism is free to read.</p></footer>
</body></html>
"""
NEWS_SINGLE = """{{ define "main" }}<article><h1>{{ .Title }}</h1>
<p class="byline">By {{ range .Params.authors }}{{ . }}{{ end }}, {{ .Date.Format "January 2, 2006" }}</p>
{{ .Content }}
<aside class="related"><h3>More in {{ range .Params.categories }}{{ . }}{{ end }}</h3>
{{ $here := .Permalink }}{{ range first 5 (where (where .Site.RegularPages "Section" "posts") "Params.categories" "intersect" .Params.categories) }}{{ if ne .Permalink $here }}<div class="teaser"><h4><a href="{{ .RelPermalink }}">{{ .Title }}</a></h4><p>{{ .Summary | plainify }}</p></div>{{ end }}{{ end }}</aside>
<p>{{ with .OutputFormats.Get "amp" }}<a href="{{ .RelPermalink }}">Mobile version</a>{{ end }}</p></article>{{ end }}
"""
NEWS_LIST = """{{ define "main" }}<h1>{{ .Title }}</h1>
{{ $paginator := .Paginate .Pages }}
{{ range $paginator.Pages }}<div class="story"><h2><a href="{{ .RelPermalink }}">{{ .Title }}</a></h2>
<p class="teaser">{{ .Summary | plainify }}</p></div>
{{ end }}
<p class="pager">{{ if $paginator.HasPrev }}<a href="{{ $paginator.Prev.URL }}">Newer</a>{{ end }} Page {{ $paginator.PageNumber }} of {{ $paginator.TotalPages }} {{ if $paginator.HasNext }}<a href="{{ $paginator.Next.URL }}">Older</a>{{ end }}</p>
{{ end }}
"""
NEWS_AMP = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ .Title }}</title></head>
<body><main><article><h1>{{ .Title }}</h1><p>{{ .Date.Format "January 2, 2006" }}</p>{{ .Content }}</article></main>
<footer><p>{{ .Site.Title }}, mobile edition.</p></footer></body></html>
"""


def news_site(corpus, host, dest, root, later, tools):
    """A news site: section fronts and tag pages of headlines and teasers, a related-stories box
    inside each article and a most-read list beside it, mobile (AMP-like) copies of articles;
    wire stories are the syndicated posts. Landmarks mark the main content (<main>, <aside>)."""
    config = {
        "baseURL": root, "title": f"The {host.capitalize()} Courier", "languageCode": "en",
        "paginate": 10, "summaryLength": 30, "disableKinds": ["RSS", "sitemap", "robotsTXT"],
        "taxonomies": {"tag": "tags", "category": "categories"},
        "outputFormats": {"amp": {"mediaType": "text/html", "path": "amp", "baseName": "index", "isHTML": True, "permalinkable": False}},
        "outputs": {"page": ["html", "amp"]},
        "params": {"footer": f"The {host.capitalize()} Courier. All rights reserved."},
    }
    build_hugo(corpus, host, dest, later, config,
               [("baseof.html", NEWS_BASEOF), ("single.html", NEWS_SINGLE),
                ("list.html", NEWS_LIST), ("single.amp.html", NEWS_AMP)])


# --- hexo: landscape ---------------------------------------------------------------------------

def hexo_site(corpus, host, dest, root, later, tools):
    src = dest + ".src"
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(f"{src}/source/_posts")
    os.symlink(os.path.join(tools, "hexo-tools", "node_modules"), f"{src}/node_modules")
    shutil.copy(os.path.join(tools, "hexo-tools", "package.json"), f"{src}/package.json")
    with open(f"{src}/package.json") as f:
        package = json.load(f)
    package["hexo"] = {"version": "7.3.0"}
    with open(f"{src}/package.json", "w") as f:
        json.dump(package, f)
    with open(f"{src}/_config.yml", "w") as f:
        f.write(f"""title: {host.capitalize()} Notes
subtitle: A weblog about everything and nothing
author: {corpus.authors[host][0]}
language: en
url: http://{host}.example{root}
root: {root}
permalink: :year/:month/:day/:title/
theme: landscape
per_page: 6
pagination_dir: page
new_post_name: :title.md
index_generator:
  per_page: 6
archive_generator:
  per_page: 10
  yearly: true
  monthly: true
tag_generator:
  per_page: 6
category_generator:
  per_page: 6
""")
    for post in corpus.snapshot(host, later):
        tags = "".join(f"\n  - {t}" for t in post["tags"])
        with open(f"{src}/source/_posts/{post['slug']}.md", "w") as f:
            f.write(f"---\ntitle: \"{post['title']}\"\ndate: {post['date']:%Y-%m-%d %H:%M:%S}\n"
                    f"categories:\n  - {post['category']}\ntags:{tags}\nauthor: {post['author']}\n---\n\n"
                    + body_html(post, "<!-- more -->") + "\n")
    subprocess.run(["node_modules/.bin/hexo", "generate", "--silent"], cwd=src, check=True)
    shutil.copytree(f"{src}/public", dest)
    shutil.rmtree(src)


# --- nikola: bootblog4 -------------------------------------------------------------------------

def nikola_site(corpus, host, dest, root, later, tools):
    src = dest + ".src"
    shutil.rmtree(src, ignore_errors=True)
    nikola = os.path.join(tools, "nikola-venv", "bin", "nikola")
    subprocess.run([nikola, "init", "--quiet", src], check=True, stdout=subprocess.DEVNULL)
    with open(f"{src}/conf.py", "a") as f:
        f.write(f"""
BLOG_TITLE = "{host.capitalize()} Journal"
BLOG_AUTHOR = "{corpus.authors[host][0]}"
SITE_URL = "http://{host}.example{root}"
BLOG_DESCRIPTION = "Stories and notes from the {host} journal, written by its readers."
THEME = "bootblog4"
INDEX_DISPLAY_POST_COUNT = 6
INDEX_TEASERS = {HOSTS.index(host) != 2}
TAG_PAGES_ARE_INDEXES = {HOSTS.index(host) == 0}
CATEGORY_PAGES_ARE_INDEXES = True
CREATE_MONTHLY_ARCHIVE = True
ENABLE_AUTHOR_PAGES = True
GENERATE_RSS = False
GENERATE_ATOM = False
COPY_SOURCES = False
SHOW_SOURCELINK = False
POSTS = (("posts/*.html", "posts", "post.tmpl"),)
PAGES = ()
CONTENT_FOOTER = "Contents &copy; {{date}} {{author}} - Powered by Nikola. Shared under a free licence."
""")
    os.makedirs(f"{src}/posts", exist_ok=True)
    for post in corpus.snapshot(host, later):
        meta = (f"<!--\n.. title: {post['title']}\n.. slug: {post['slug']}\n"
                f".. date: {post['date']:%Y-%m-%d %H:%M:%S} UTC\n.. tags: {', '.join(post['tags'])}\n"
                f".. category: {post['category']}\n.. author: {post['author']}\n-->\n\n")
        with open(f"{src}/posts/{post['slug']}.html", "w") as f:
            f.write(meta + body_html(post, "<!-- TEASER_END -->") + "\n")
    subprocess.run([nikola, "build"], cwd=src, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.copytree(f"{src}/output", dest)
    shutil.rmtree(src)


# --- jekyll: minima, with jekyll-archives -------------------------------------------------------

JEKYLL_ARCHIVE = """---
layout: default
---
<h1>{{ page.title }}</h1>
{% for post in page.posts %}<article><h2><a href="{{ post.url | relative_url }}">{{ post.title }}</a></h2>
<p>{{ post.date | date: "%B %-d, %Y" }}</p>{{ post.excerpt }}</article>{% endfor %}
"""


def jekyll_site(corpus, host, dest, root, later, tools):
    src = dest + ".src"
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(f"{src}/_posts")
    os.makedirs(f"{src}/_layouts")
    with open(f"{src}/_config.yml", "w") as f:
        f.write(f"""title: {host.capitalize()} Weekly
description: Short essays and long notes from the {host} weekly, by its three editors.
baseurl: "{root.rstrip('/')}"
theme: minima
show_excerpts: {str(HOSTS.index(host) != 0).lower()}
permalink: /:year/:month/:day/:title/
plugins:
  - jekyll-archives
jekyll-archives:
  enabled: [year, month, tags, categories]
  layout: archive
  permalinks:
    year: '/:year/'
    month: '/:year/:month/'
    tag: '/tag/:name/'
    category: '/category/:name/'
""")
    with open(f"{src}/_layouts/archive.html", "w") as f:
        f.write(JEKYLL_ARCHIVE)
    with open(f"{src}/index.html", "w") as f:
        f.write("---\nlayout: home\n---\n")
    for post in corpus.snapshot(host, later):
        tags = ", ".join(post["tags"])
        with open(f"{src}/_posts/{post['date']:%Y-%m-%d}-{post['slug']}.html", "w") as f:
            f.write(f"---\nlayout: post\ntitle: \"{post['title']}\"\ndate: {post['date']:%Y-%m-%d %H:%M:%S}\n"
                    f"tags: [{tags}]\ncategories: [{post['category'].lower()}]\nauthor: {post['author']}\n---\n\n"
                    + body_html(post, "") + "\n")
    subprocess.run(["jekyll", "build", "--quiet", "-s", src, "-d", dest], check=True)
    shutil.rmtree(src)


SITES = {"hugo": hugo_site, "hexo": hexo_site, "nikola": nikola_site, "jekyll": jekyll_site, "news": news_site}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("generator", choices=sorted(SITES))
    parser.add_argument("outdir")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tools", default="target/blogs")
    parser.add_argument("--hosts", default=",".join(HOSTS))
    parser.add_argument("--posts", type=int, default=POSTS_PER_HOST)
    args = parser.parse_args()
    globals()["POSTS_PER_HOST"] = args.posts
    tools = os.path.abspath(args.tools)
    # Each generator's own posts (news after the four blogs: their corpora stay as they were).
    corpus = Corpus(args.seed + ["hexo", "hugo", "jekyll", "nikola", "news"].index(args.generator))
    for host in args.hosts.split(","):
        site = os.path.join(os.path.abspath(args.outdir), host)
        shutil.rmtree(site, ignore_errors=True)
        SITES[args.generator](corpus, host, site, "/", False, tools)
        SITES[args.generator](corpus, host, os.path.join(site, "v2"), "/v2/", True, tools)
    print(f"{args.generator}: {args.hosts} in {args.outdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
