"""A recorded pairing transcript replayed against a live host (docs/PROTOCOL.md §20.7), as a
party in the middle would: it relays a real guest's exchange, keeps the guest's `pair_start`
and `pair_confirm` (the latter not forwarded, as if the lid closed), then opens a connection of
its own to the host and sends the recorded messages again. Prints JSON: the guest's exit status
and stderr, the types and error code the host answered the replay with.

  python pair_replay.py HOST:PORT -- GUEST-COMMAND…   ("{proxy}" in the command is replaced
                                                         by this relay's HOST:PORT)
Bounded: one guest connection, at most 20 replay connections, 30 s per read.
"""
import json, socket, struct, subprocess, sys, time
import cbor2

LIMIT = 16384
PREAMBLE = 10  # "PLPAIR", version 00 01, nameplate (2 bytes): §20.9


def read_frame(s):
    head = recv_exact(s, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n > LIMIT:
        raise ValueError("frame of %d bytes" % n)
    return recv_exact(s, n)


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def send_frame(s, message):
    s.sendall(struct.pack(">I", len(message)) + message)


def kind(message):
    return cbor2.loads(message)["t"] if message is not None else None


def main():
    upstream, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    host, port = upstream.rsplit(":", 1)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(30)
    proxy = "127.0.0.1:%d" % listener.getsockname()[1]
    guest = subprocess.Popen([a.replace("{proxy}", proxy) for a in command],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    # Relay the real exchange up to the guest's confirmation, which is kept, not forwarded.
    down, _ = listener.accept()
    up = socket.create_connection((host, int(port)), timeout=30)
    for s in (down, up):
        s.settimeout(30)
    preamble = recv_exact(down, PREAMBLE)
    up.sendall(preamble)
    opening = read_frame(up)
    send_frame(down, opening)
    start = read_frame(down)
    send_frame(up, start)
    reply = read_frame(up)
    send_frame(down, reply)
    confirm = read_frame(down)
    down.close()
    up.close()
    try:
        guest_out, guest_err = guest.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        guest.kill()
        guest_out, guest_err = guest.communicate()

    # The replay: a new exchange (fresh sid and Yb) fed the recorded guest messages.
    # Until the host has seen the first connection close, it refuses the share ("another
    # device is pairing"), at no cost: try again, at most 20 times.
    for _ in range(20):
        s = socket.create_connection((host, int(port)), timeout=30)
        s.settimeout(30)
        s.sendall(preamble)
        fresh_open = read_frame(s)
        send_frame(s, start)
        fresh_reply = read_frame(s)
        if kind(fresh_reply) != "pair_error":
            break
        s.close()
        time.sleep(0.25)
    answer = None
    if kind(fresh_reply) == "pair_reply":
        send_frame(s, confirm)
        answer = read_frame(s)
    s.close()
    decoded = cbor2.loads(answer) if answer is not None else {}
    print(json.dumps({
        "relayed": [kind(opening), kind(start), kind(reply), kind(confirm)],
        "guest_status": guest.returncode,
        "guest_stderr": guest_err,
        "replay_open_is_fresh": fresh_open != opening,
        "replay_reply": kind(fresh_reply),
        "replay_answer": decoded.get("t"),
        "replay_code": decoded.get("code"),
    }))


if __name__ == "__main__":
    main()
