#!/usr/bin/env python3
"""Writes a copy of a record-per-member WARC.gz whose HTML responses carry their bodies gzip-encoded
(`Content-Encoding: gzip`), as a crawler that stores what the server sent over the wire leaves
them (Heritrix, wget without --compression=none against a server that compresses). Other records
are copied as they are. Digests are dropped from the changed records (dupflow does not read them).
    encode_warc.py IN.warc.gz OUT.warc.gz"""
import gzip, re, sys, zlib

src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
pos, encoded, records = 0, 0, 0
with open(out, "wb") as f:
    while pos < len(data):
        d = zlib.decompressobj(31)
        record = d.decompress(data[pos:])
        end = len(data) - len(d.unused_data)
        pos = end
        records += 1
        head, _, rest = record.partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^Content-Length: *(\d+)", head)
        block = rest[: int(length.group(1))] if length else b""
        is_html = re.search(rb"(?im)^WARC-Type: response\r?$", head) and b"\r\n\r\n" in block
        if is_html:
            http, _, body = block.partition(b"\r\n\r\n")
            lines = http.split(b"\r\n")
            is_html = any(re.match(rb"(?i)content-type:.*html", l) for l in lines) and not any(
                re.match(rb"(?i)(content|transfer)-encoding:", l) for l in lines
            )
        if not is_html:
            f.write(gzip.compress(record, 6))
            continue
        packed = gzip.compress(body, 6)
        lines = [l for l in lines if not re.match(rb"(?i)content-length:", l)]
        lines += [b"Content-Encoding: gzip", b"Content-Length: %d" % len(packed)]
        new_block = b"\r\n".join(lines) + b"\r\n\r\n" + packed
        warc = [
            l
            for l in head.split(b"\r\n")
            if not re.match(rb"(?i)(content-length|warc-block-digest|warc-payload-digest):", l)
        ]
        warc.append(b"Content-Length: %d" % len(new_block))
        f.write(gzip.compress(b"\r\n".join(warc) + b"\r\n\r\n" + new_block + b"\r\n\r\n", 6))
        encoded += 1
print(f"{records} records, {encoded} HTML bodies gzip-encoded -> {out}")
