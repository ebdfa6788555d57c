#!/usr/bin/env python3
"""Split a record-per-member WARC.gz: every Nth response record (with its request) goes to the
second file, the rest to the first; the URLs moved are printed to a third file.
    split_warc.py IN.warc.gz BASE.warc.gz EXTRA.warc.gz EXTRA_URLS.txt N"""
import re, sys, zlib

src, base, extra, urls, every = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
data = open(src, "rb").read()
pos, members = 0, []
while pos < len(data):
    # A member at a time, fed in pieces: slicing the rest of the file for each member would
    # copy it once a member (quadratic in the file's size).
    d, fed, body = zlib.decompressobj(31), pos, b""
    while not d.eof and fed < len(data):
        piece = data[fed:fed + (1 << 16)]
        fed += len(piece)
        body += d.decompress(piece)
    end = fed - len(d.unused_data)
    members.append((data[pos:end], body))
    pos = end
responses = 0
out_base, out_extra, moved = bytearray(), bytearray(), []
for raw, body in members:
    head = body[:4096].decode("latin-1")
    kind = re.search(r"WARC-Type: (\S+)", head)
    uri = re.search(r"WARC-Target-URI: <?([^\r\n>]+)", head)
    to_extra = False
    if kind and uri and kind.group(1) in ("response", "request"):
        if kind.group(1) == "response":
            responses += 1
        to_extra = uri.group(1) in moved or (kind.group(1) == "response" and responses % every == 0)
        if to_extra and kind.group(1) == "response" and uri.group(1) not in moved:
            moved.append(uri.group(1))
    (out_extra if to_extra else out_base).extend(raw)
open(base, "wb").write(out_base)
open(extra, "wb").write(out_extra)
open(urls, "w").write("".join(u + "\n" for u in moved))
print(f"{len(moved)} of {responses} pages moved")
