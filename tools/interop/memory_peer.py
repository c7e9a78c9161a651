"""Peers that try to make a `peerlog daemon` hold memory or descriptors, for the limit tests
(docs/PROTOCOL.md §14.7). Loopback only; bounded in connections, bytes and time.

  python memory_peer.py partial HOST PORT [--seed HEX] [--connections N] [--fragments F] [--hold S]
      N devices of the one identity of SEED (each its own device and Noise key) each connect
      and send F fragments (0x01 records of 65518 bytes) of a message they never finish.
      Prints one JSON line {"connected", "open", "reasons"} (reasons: close reasons received,
      with counts), then holds the connections until a line arrives on stdin or S seconds
      pass, closes them all and prints {"closed": N}.
  python memory_peer.py burst HOST PORT [--seed HEX] [--count N]
      Opens N TCP connections that never handshake, then times a real handshake of the SEED
      device (which the daemon must let in). Prints {"burst", "handshake_seconds", "peer"}.
"""
import argparse, collections, hashlib, json, select, socket, sys, time
from nacl.public import PrivateKey
from nacl.signing import SigningKey

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from peerlog_channel import FRAGMENT, MAX_RECORD_DATA, ChannelClosed, ChannelError, Channel, Device, connect, key_id  # noqa: E402

CREATED = 1_800_000_000_000


def sibling_device(seed: bytes, index: int) -> Device:
    """Device `index` of the identity `Device.deterministic(seed, ...)` has (index 0 is that device)."""
    if index == 0:
        return Device.deterministic(seed, "python-peer", CREATED)
    base = Device.deterministic(seed, "python-peer", CREATED)

    def derive(label):
        return hashlib.blake2b(b"peerlog-test-device/%d/" % index + label + b"/" + seed, digest_size=32).digest()
    return Device(base.identity, SigningKey(derive(b"device")), PrivateKey(derive(b"noise")), "laptop-%d" % index, CREATED)


def pending_close(ch: Channel, wait: float = 0) -> str:
    """Reads what the daemon sent (its sync hello and the like) while more arrives within
    `wait` seconds; returns its close reason if it closed, else ""."""
    try:
        while select.select([ch.sock], [], [], wait)[0]:
            ch.sock.settimeout(2)
            ch.recv()
    except ChannelClosed as e:
        return e.reason
    except (ChannelError, OSError) as e:
        return "connection ended: %s" % e
    return ""


def partial(host, port, seed, connections, fragments, hold):
    chunk = bytes(MAX_RECORD_DATA)
    opened, reasons = [], collections.Counter()
    deadline = time.time() + 120
    # All connect first, so that they are open at once (the per-identity connection cap)...
    for i in range(connections):
        if time.time() > deadline:
            break
        try:
            opened.append(connect(host, port, "", sibling_device(seed, i), timeout=10))
        except (ChannelError, OSError) as e:
            reasons["connect failed: %s" % e] += 1
    time.sleep(0.5)
    # ...then each sends its fragments (the reassembly budget).
    held = []
    for ch in opened:
        reason = pending_close(ch)
        try:
            for _ in range(fragments):
                if reason or time.time() > deadline:
                    break
                Channel._write_frame(ch.sock, ch._seal(FRAGMENT, chunk))
                reason = pending_close(ch)
        except OSError:
            reason = pending_close(ch, 1) or "connection ended while sending"
        if reason:
            reasons[reason] += 1
            ch.sock.close()
        else:
            held.append(ch)
    time.sleep(0.3)
    still_open = []
    for ch in held:
        reason = pending_close(ch)
        if reason:
            reasons[reason] += 1
            ch.sock.close()
        else:
            still_open.append(ch)
    print(json.dumps({"connected": len(opened), "open": len(still_open), "reasons": dict(reasons)}), flush=True)
    select.select([sys.stdin], [], [], hold)
    for ch in still_open:
        ch.close("done")
    print(json.dumps({"closed": len(still_open)}), flush=True)


def burst(host, port, seed, count):
    held = []
    for _ in range(count):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((host, port))  # completes in the kernel's backlog, accepted or not
        held.append(s)
    time.sleep(0.5)  # let the daemon see (and accept what it can of) the burst
    device = Device.deterministic(seed, "python-peer", CREATED)
    start = time.time()
    try:
        ch = connect(host, port, "", device, timeout=15)
        peer = key_id(ch.peer["device"])
        elapsed = time.time() - start
        ch.close("bye")
    except (ChannelError, OSError) as e:
        peer, elapsed = "failed: %s" % e, time.time() - start
    for s in held:
        s.close()
    print(json.dumps({"burst": count, "handshake_seconds": round(elapsed, 3), "peer": peer}), flush=True)


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["partial", "burst", "identity"])
    p.add_argument("host", nargs="?", default="127.0.0.1")
    p.add_argument("port", type=int, nargs="?", default=0)
    p.add_argument("--seed", default="0e")
    p.add_argument("--connections", type=int, default=100)
    p.add_argument("--fragments", type=int, default=63)
    p.add_argument("--hold", type=float, default=30)
    p.add_argument("--count", type=int, default=300)
    a = p.parse_args(argv)
    assert a.host == "127.0.0.1", "loopback only"
    seed = bytes.fromhex(a.seed)
    if a.mode == "identity":
        print(json.dumps({"identity": sibling_device(seed, 0).identity_id}))
    elif a.mode == "partial":
        partial(a.host, a.port, seed, min(a.connections, 200), min(a.fragments, 63), min(a.hold, 60))
    else:
        burst(a.host, a.port, seed, min(a.count, 1000))


if __name__ == "__main__":
    main(sys.argv[1:])
