"""Misbehaving peers for the rejection tests: each mode does one bad thing to a running
`peerlog daemon` and prints JSON {"mode", "outcome", "detail"}. Bounded in bytes and time.

  python hostile_peer.py MODE HOST PORT [--seed HEX]
  modes: unauthorized, key-mismatch, garbage, zero-length, oversized-handshake, truncated,
         bad-transport-frame, flood
"""
import argparse, json, os, socket, struct, sys, time
from nacl.public import PrivateKey

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from peerlog_channel import ChannelClosed, ChannelError, Device, connect, dumps  # noqa: E402


def raw(host, port):
    s = socket.create_connection((host, port), timeout=10)
    s.settimeout(10)
    return s


def read_until_closed(s, limit=1 << 20):
    """Reads until the daemon closes (returns bytes read) or the timeout passes (None)."""
    got = 0
    try:
        while got < limit:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += len(chunk)
    except (socket.timeout, TimeoutError):
        return None
    except ConnectionResetError:
        return got
    return got


def run(mode, host, port, seed):
    if mode == "unauthorized":
        try:
            ch = connect(host, port, "", Device.generate("stranger"))
            ch.recv()
            return "not closed", "daemon delivered a message to a stranger"
        except ChannelClosed as e:
            return "closed", e.reason
        except (ChannelError, OSError) as e:
            return "closed", str(e)
    if mode == "key-mismatch":
        d = Device.generate("liar")
        d.noise = PrivateKey.generate()  # the certificate still binds the old key
        try:
            ch = connect(host, port, "", d)
            ch.recv()
            return "not closed", "accepted"
        except ChannelClosed as e:
            return "closed", e.reason
        except (ChannelError, OSError) as e:
            return "closed", str(e)
    if mode == "bad-transport-frame":
        # A genuine session, then a frame that does not decrypt.
        ch = connect(host, port, "", Device.deterministic(bytes.fromhex(seed), "python-peer", 1_800_000_000_000))
        ch.sock.sendall(struct.pack(">H", 40) + os.urandom(40))
        got = read_until_closed(ch.sock)
        return ("closed" if got is not None else "not closed"), "bytes after bad frame: %s" % got
    if mode == "flood":
        # An authorized peer sends 64 MiB of well-formed messages of an unknown type as fast as
        # the socket takes them: the daemon must ignore them without buffering them.
        ch = connect(host, port, "", Device.deterministic(bytes.fromhex(seed), "python-peer", 1_800_000_000_000))
        ch.send(dumps({"t": "hello", "versions": [1], "capabilities": [], "groups": []}))
        pad = dumps({"t": "x-flood", "pad": os.urandom(60000)})
        sent, deadline = 0, time.time() + 30
        while sent < 64 << 20 and time.time() < deadline:
            ch.send(pad)
            sent += len(pad)
        ch.close("flood over")
        return "sent", "%d bytes" % sent
    # The raw modes: bytes that are no handshake at all.
    s = raw(host, port)
    if mode == "garbage":
        s.sendall(os.urandom(5000))
    elif mode == "zero-length":
        s.sendall(b"\x00\x00")
    elif mode == "oversized-handshake":
        s.sendall(b"\xff\xff" + b"\x00" * 1000)
    elif mode == "truncated":
        s.sendall(b"\x00\x20" + b"\x01" * 10)
        s.shutdown(socket.SHUT_WR)
    got = read_until_closed(s)
    return ("closed" if got is not None else "not closed"), "read %s bytes before close" % got


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("mode")
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--seed", default="0d")
    a = p.parse_args(argv)
    outcome, detail = run(a.mode, a.host, a.port, a.seed)
    print(json.dumps({"mode": a.mode, "outcome": outcome, "detail": detail}))


if __name__ == "__main__":
    main(sys.argv[1:])
