"""Probes a host's pairing port as a port scanner or a hostile neighbour would, without ever
sending a share (docs/PROTOCOL.md §20.7, §20.9): 10 connections that close at once, 10 that
send garbage, 10 that send a preamble for NAMEPLATE and close after `pair_open`, and 10 that
send half a preamble and close. None of them may cost the code an attempt. Prints JSON: how
many connections opened and what the preamble ones were answered with.

  python pair_probe.py HOST:PORT NAMEPLATE
Bounded: 40 connections, 10 s per read.
"""
import json, socket, struct, sys
import cbor2

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from pair_replay import read_frame  # noqa: E402  (the one frame reader of these tools)


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    nameplate = int(sys.argv[2])
    preamble = b"PLPAIR\x00\x01" + struct.pack(">H", nameplate)
    opened, answers = 0, []
    for kind in ("close", "garbage", "preamble", "half"):
        for _ in range(10):
            s = socket.create_connection((host, int(port)), timeout=10)
            opened += 1
            if kind == "garbage":
                s.sendall(b"PGET / HTTP/1.0\r\n\r\n")
            elif kind == "preamble":
                s.sendall(preamble)
                frame = read_frame(s)
                answers.append(cbor2.loads(frame)["t"] if frame else None)
            elif kind == "half":
                s.sendall(preamble[:5])
            s.close()
    print(json.dumps({"opened": opened, "preamble_answers": sorted(set(map(str, answers)))}))


if __name__ == "__main__":
    main()
