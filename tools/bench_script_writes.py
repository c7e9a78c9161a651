#!/usr/bin/env python3
"""Writes from scripts reaching a connected peer (issue 37, item 0).

Two daemons on loopback (A sequences a plaintext group, B is a member and dials A). For each
way a script can write N records on A, the time from the first write until B's store holds all
of them; then, for single lines streamed through one `put --stream` process, the time from
writing the line until B holds it (p50/p90/p99). B's store is read directly (SQLite, read-only,
polled every 0.5 ms), so no CLI start-up is counted on B's side.

Usage: tools/bench_script_writes.py [N] [LATENCY_SAMPLES]   (default 1000 200)
Build: PEERLOG_BIN (default .build/release/peerlog). Loopback only, discovery off; every wait
is bounded (120 s).
"""
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 200
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PL = os.environ.get("PEERLOG_BIN", os.path.join(ROOT, ".build/release/peerlog"))
LIMIT = 120.0
if not os.access(PL, os.X_OK):
    sys.exit("build it first: swift build -c release (peerlog and peerlog-full)")


def pl(*args, stdin=None):
    r = subprocess.run([PL, *args], input=stdin, capture_output=True, text=True, timeout=LIMIT)
    if r.returncode != 0:
        sys.exit(f"peerlog {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def until(what, cond, limit=LIMIT, step=0.0005):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return time.monotonic()
        time.sleep(step)
    sys.exit(f"gave up waiting for {what}")


d = tempfile.mkdtemp()
procs = []


def cleanup():
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(d, ignore_errors=True)


try:
    a, b = f"{d}/a", f"{d}/b"
    pl("init", "--home", a, "--name", "a")
    pl("init", "--home", b, "--name", "b")
    aid = json.loads(pl("id", "--home", a, "--json"))["identity"]
    bid = json.loads(pl("id", "--home", b, "--json"))["identity"]
    g = json.loads(pl("group", "create", "--home", a, "scripts", "--plaintext", "--json"))["id"]
    pl("group", "add", "--home", a, g, bid)
    port = 20000 + random.randrange(20000)
    for home, args in ((a, ["--listen", f"127.0.0.1:{port}", "--allow", bid]),
                       (b, ["--listen", f"127.0.0.1:{port + 1}", "--peer", f"127.0.0.1:{port}", "--allow", aid])):
        log = open(f"{home}.log", "w")
        procs.append(subprocess.Popen([PL, "daemon", "--home", home, "--no-discovery", *args],
                                      stdout=log, stderr=subprocess.STDOUT))
        time.sleep(0.3)
    until("b's invitation", lambda: subprocess.run([PL, "group", "accept", "--home", b, g],
                                                   capture_output=True).returncode == 0, step=0.2)
    db = sqlite3.connect(f"file:{b}/replica.sqlite?mode=ro", uri=True, isolation_level=None)

    def held():
        return db.execute("SELECT count(*) FROM receipts WHERE type = 'entity.put'").fetchone()[0]

    print(f"writes from scripts on A until connected B holds them ({pl('--version').strip()}, "
          f"{os.cpu_count()} cores)")

    def per_call(argv, n=100):  # process start to exit, output discarded
        s = time.monotonic()
        for _ in range(n):
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=LIMIT)
        return (time.monotonic() - s) / n

    true = shutil.which("true") or "/bin/true"
    start, baseline = per_call([PL, "--version"]), per_call([true])
    print(f"  `peerlog --version` {start * 1000:.1f} ms, `{true}` {baseline * 1000:.2f} ms: "
          f"ratio {start / baseline:.1f} (target <= 5)")
    rows = []

    # 1. One `peerlog put` process per record.
    base = held()
    s = time.monotonic()
    for i in range(N):
        pl("put", "--home", a, g, f"call-{i}", f"v{i}")
    w = time.monotonic()
    e = until("B to hold the puts", lambda: held() >= base + N)
    rows.append((f"{N} `peerlog put` calls, one after another", e - s, w - s))

    # 2. One `put --batch` of all of them.
    base = held()
    lines = "".join(json.dumps({"key": f"batch-{i}", "value": f"v{i}"}) + "\n" for i in range(N))
    s = time.monotonic()
    pl("put", "--home", a, g, "--batch", "-", stdin=lines)
    w = time.monotonic()
    e = until("B to hold the batch", lambda: held() >= base + N)
    rows.append((f"`put --batch` of {N}", e - s, w - s))

    # 3. One `put --stream` process, each line written and acknowledged before the next.
    stream = subprocess.Popen([PL, "put", "--home", a, g, "--batch", "-", "--stream", "--json"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    procs.append(stream)

    acked = [0]
    ack_cv = threading.Condition()

    def read_acks():  # the acknowledgements, counted as they come (the pipe never fills)
        for _ in stream.stdout:
            with ack_cv:
                acked[0] += 1
                ack_cv.notify_all()

    threading.Thread(target=read_acks, daemon=True).start()

    def wait_acks(count):
        with ack_cv:
            if not ack_cv.wait_for(lambda: acked[0] >= count, LIMIT):
                sys.exit("put --stream stopped acknowledging")

    def streamed(key):
        target = acked[0] + 1
        stream.stdin.write(json.dumps({"key": key, "value": 1}) + "\n")
        stream.stdin.flush()
        wait_acks(target)

    streamed("warm-up")
    until("B to hold the warm-up", lambda: held() >= base + N + 1)
    base = held()
    s = time.monotonic()
    for i in range(N):
        streamed(f"stream-{i}")
    w = time.monotonic()
    e = until("B to hold the stream", lambda: held() >= base + N)
    rows.append((f"{N} lines through one `put --stream`, one by one", e - s, w - s))

    # 3b. The same process, the producer writing each line (its own write call) without waiting.
    base = held()
    target = acked[0] + N
    s = time.monotonic()
    for i in range(N):
        stream.stdin.write(json.dumps({"key": f"nowait-{i}", "value": 1}) + "\n")
        stream.stdin.flush()
    w = time.monotonic()
    wait_acks(target)
    e = until("B to hold the unpaced stream", lambda: held() >= base + N)
    rows.append((f"{N} lines through one `put --stream`, not waiting", e - s, w - s))

    # 4. Latency of single streamed lines, the connection otherwise idle.
    lat = []
    for i in range(SAMPLES):
        base = held()
        s = time.monotonic()
        streamed(f"lat-{i}")
        lat.append(until("B to hold a line", lambda: held() > base) - s)
        time.sleep(0.005)
    stream.stdin.close()
    stream.wait(LIMIT)

    for label, total, write in rows:
        print(f"  {label:52} {total * 1000:8.0f} ms until B holds all (writing took {write * 1000:.0f} ms)")
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000

    print(f"  one streamed line until B holds it ({SAMPLES} lines): p50 {pct(0.5):.1f} ms, "
          f"p90 {pct(0.9):.1f} ms, p99 {pct(0.99):.1f} ms, max {lat[-1] * 1000:.1f} ms")
finally:
    cleanup()
