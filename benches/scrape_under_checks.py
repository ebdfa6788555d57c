"""Scrape latency of /metrics during a replay with 10 concurrent checks.

Usage: scrape_under_checks.py DUPFLOW WARC  (the WARC is replayed six times, as re-crawls)
"""
import random, os, re, shutil, socket, subprocess, sys, tempfile, threading, time

dupflow, warc = sys.argv[1], os.path.abspath(sys.argv[2])
work = tempfile.mkdtemp(prefix="scrape-")
inputs = []
for i in range(6):
    p = os.path.join(work, f"in{i}.warc.gz")
    os.symlink(warc, p)
    inputs.append(p)
config = os.path.join(work, "check.toml")
with open(config, "w") as f:
    f.write("[metrics]\ncheck = true\n")  # POST /api/check served
proc = subprocess.Popen([dupflow, "run", *inputs, "--config", config, "--metrics-address", "127.0.0.1:0", "--linger", "30", "--quiet",
                         "--out", os.path.join(work, "out")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
addr=None
for line in proc.stderr:
    m=re.search(r"metrics on http://([^/]+)/",line)
    if m: addr=m.group(1); break
threading.Thread(target=lambda: [None for _ in proc.stderr],daemon=True).start()
host,port=addr.split(":"); port=int(port)
def req(head, body=b""):
    s=socket.create_connection((host,port)); s.sendall(head.encode()+body)
    data=b""
    while True:
        c=s.recv(65536)
        if not c: break
        data+=c
    s.close(); return data
def finished():
    return b'"finished":true' in req(f"GET /api/summary HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
# The checks' payload: generated prose, ~510 KB (sentences of words drawn from a fixed seed).
rng=random.Random(17); words=[''.join(rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(rng.randint(2, 9))) for _ in range(3000)]
text=('. '.join(' '.join(rng.choice(words) for _ in range(rng.randint(6, 20))).capitalize() for _ in range(6000)) + '.').encode()
stop=False; codes={}
def checker():
    while not stop:
        try:
            r=req(f"POST /api/check HTTP/1.1\r\nHost: x\r\nContent-Length: {len(text)}\r\nConnection: close\r\n\r\n",text)
        except OSError:
            continue
        c=r.split(b" ")[1].decode(); codes[c]=codes.get(c,0)+1
ths=[threading.Thread(target=checker) for _ in range(10)]
[t.start() for t in ths]
lat=[]; t0=time.time()
while not finished():
    a=time.time(); r=req("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); lat.append(time.time()-a)
    assert r.startswith(b"HTTP/1.1 200")
replay=time.time()-t0
stop=True; [t.join() for t in ths]; proc.kill()
lat.sort()
print(f"replay {replay:.1f}s, scrapes {len(lat)}, p50 {lat[len(lat)//2]*1e3:.2f} ms, p99 {lat[int(len(lat)*.99)]*1e3:.2f} ms, max {lat[-1]*1e3:.2f} ms, check answers {codes}, body {len(text)} bytes")
shutil.rmtree(work, ignore_errors=True)
