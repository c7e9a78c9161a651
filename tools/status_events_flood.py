"""Opens N connections to a status server's /events at once, as N open pages would, and reads
each one's answer (at most --wait seconds for all); then asks /api/status 3 times. Prints JSON:
{"answers": {"200": n, "503": n, "none": n}, "api_status": [HTTP status, ...]}.

  python status_events_flood.py HOST PORT N [--wait S]
Bounded: N connections, --wait (default 15) s for their answers, 30 s per /api/status.
"""
import argparse, json, select, socket, time, urllib.request


def main():
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("n", type=int)
    p.add_argument("--wait", type=float, default=15)
    args = p.parse_args()
    socks = []
    for _ in range(args.n):
        s = socket.create_connection((args.host, args.port), timeout=10)
        s.sendall(b"GET /events HTTP/1.1\r\nHost: peerlog\r\nAccept: text/event-stream\r\n\r\n")
        socks.append(s)
    answers, pending = {}, set(socks)
    deadline = time.time() + args.wait
    while pending and time.time() < deadline:
        ready, _, _ = select.select(list(pending), [], [], 0.5)
        for s in ready:
            data = s.recv(64)
            code = data.split(b" ")[1].decode() if data.startswith(b"HTTP/1.1 ") else "closed"
            answers[code] = answers.get(code, 0) + 1
            pending.discard(s)
    if pending:
        answers["none"] = len(pending)
    api = []
    for _ in range(3):
        with urllib.request.urlopen("http://%s:%d/api/status" % (args.host, args.port), timeout=30) as r:
            api.append(r.status)
    for s in socks:
        s.close()
    print(json.dumps({"answers": answers, "api_status": api}))


if __name__ == "__main__":
    main()
