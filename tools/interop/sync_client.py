"""A Python peer of the Peerlog sync protocol (docs/PROTOCOL.md §14-§15), written from the docs
with noiseprotocol (through peerlog_channel.py), cbor2 and PyNaCl, used by the test suite
against a real `peerlog daemon`.

  identity --seed HEX
      print {"identity", "device"} of the deterministic device the fetch command uses
  fetch HOST PORT --seed HEX --group GROUP_ID --from A --to B [--network ID] [--runs]
      handshake, hello, credit; accept the offered group with an empty vector (full catch-up)
      and send a `request` for seqs A..B; collect batches until both `caught_up` and `done`;
      verify every receipt (certificate, author binding, signature, CID of the envelope) and
      envelope (signature; for a batched run item, its Merkle path too); print a JSON summary.
      Exit 1 on any verification failure. --runs lists `envelope_runs` in the hello, so the
      daemon may send batched envelopes (§3.5); without it, only single ones. This peer lists no
      `encrypted_groups`: for an encrypted group it prints {"unshared": REASON, "receipts"}.
  forge HOST PORT --seed HEX --group GROUP_ID --victim IDENTITY
      as the (invited) deterministic device, accept the group and send one `receipts` batch of
      three forgeries: a payload altered after signing, a self-signed certificate claiming the
      victim's identity, and a certificate signed by the wrong identity key; wait until the
      daemon has ingested it (its credit comes back) and print {"cids", "authors"}.
  flood HOST PORT --seed HEX --group GROUP_ID [--batch N] [--max N]
      as the (invited) deterministic device, accept the group and send `receipts` batches of N
      receipts with random signatures (distinct counters, so distinct CIDs) until the daemon
      ends the session or --max were sent; then dial once more at once. Prints {"sent",
      "error", "reconnect"}: the daemon's error code, and "refused" or "accepted" for the
      second dial.
  silent HOST PORT --seed HEX [--hello none|plain|keepalive] [--timeout S]
      handshake as the deterministic device, then send nothing (`none`), or only a hello and
      credit (`plain`: no capabilities; `keepalive`: listing `keepalive`), and read until the
      daemon ends the connection or --timeout passes. Prints {"closed_after" (seconds, or null),
      "error" (the daemon's error code), "pings"} (§15.2.12).
"""
import argparse, hashlib, json, select, sys, time
import cbor2
from nacl.signing import VerifyKey
from nacl.exceptions import BadSignatureError
from multiformats import CID, multihash

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from peerlog_channel import Device, connect, dumps, key_id  # noqa: E402

CTX_CERT = b"peerlog/certificate/v1\x00"
CTX_RECEIPT = b"peerlog/receipt/v1\x00"
CTX_ENVELOPE = b"peerlog/envelope/v1\x00"


def cid_bytes(payload):
    return bytes(CID("base32", 1, "dag-cbor", multihash.digest(payload, "sha2-256")))


def verify_receipt(item):
    c = cbor2.loads(item)
    payload, cert = c["receipt"], c["certificate"]
    fields, cert_fields = cbor2.loads(payload), cbor2.loads(cert["certificate"])
    VerifyKey(cert_fields["identity"]).verify(CTX_CERT + cert["certificate"], cert["sig"])
    if cert_fields["device"] != fields["author"] or cert_fields["identity"] != fields["identity"]:
        raise ValueError("certificate does not bind the author")
    VerifyKey(fields["author"]).verify(CTX_RECEIPT + payload, c["sig"])
    if dumps(fields) != payload:
        raise ValueError("receipt payload is not deterministic CBOR")
    return cid_bytes(payload), fields


CTX_ENVELOPE_RUN = b"peerlog/envelope-run/v1\x00"


def merkle_root_from_path(leaf, index, size, path):
    """RFC 9162 section 2.1.3.2: the tree head that `path` proves `leaf` at `index` under, or None."""
    node = lambda l, r: hashlib.sha256(b"\x01" + l + r).digest()
    if index >= size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def verify_envelope(item):
    """A single envelope (PROTOCOL.md section 3.4) or an item of a batched run (section 3.5)."""
    c = cbor2.loads(item)
    assert set(c) == {"envelope", "sig"}, "envelope container keys"
    fields = cbor2.loads(c["envelope"])
    if dumps(fields) != c["envelope"]:
        raise ValueError("envelope payload is not deterministic CBOR")
    cid = bytes(fields["cid"].value)[1:]  # tag 42: 0x00 then the binary CID
    if "run" not in fields:
        assert set(fields) == {"v", "group", "seq", "cid", "term", "sequencer", "received_at"}, "envelope keys"
        VerifyKey(fields["sequencer"]).verify(CTX_ENVELOPE + c["envelope"], c["sig"])
        return fields["seq"], cid, fields
    assert set(fields) == {"v", "run", "seq", "cid", "path"}, "envelope item keys"
    run = cbor2.loads(fields["run"])
    assert set(run) == {"v", "group", "first_seq", "count", "root", "term", "sequencer", "received_at"}, "run header keys"
    seq, first, count = fields["seq"], run["first_seq"], run["count"]
    if not (2 <= count <= 256 and first <= seq < first + count and len(fields["path"]) <= 8):
        raise ValueError("envelope item outside its run")
    leaf = hashlib.sha256(b"\x00" + seq.to_bytes(8, "big") + cid).digest()
    if merkle_root_from_path(leaf, seq - first, count, fields["path"]) != run["root"]:
        raise ValueError("envelope item for seq %d is not under its run's root" % seq)
    VerifyKey(run["sequencer"]).verify(CTX_ENVELOPE_RUN + fields["run"], c["sig"])
    return seq, cid, dict(run, seq=seq, batched=True)


def group_bytes(text):
    """A group id as `peerlog` prints it: "b" + RFC 4648 base32, lower case, no padding."""
    import base64
    body = text[1:].upper()
    return base64.b32decode(body + "=" * (-len(body) % 8))


def fetch(args):
    device = Device.deterministic(bytes.fromhex(args.seed), "python-peer", 1_800_000_000_000)
    group = group_bytes(args.group)
    channel = connect(args.host, args.port, args.network, device)
    send = lambda m: channel.send(dumps(m))
    send({"t": "hello", "versions": [1], "capabilities": ["envelope_runs"] if args.runs else [], "groups": []})
    send({"t": "credit", "n": 8})
    receipts, envelopes, seen_types = {}, {}, []
    batched, runs = set(), set()
    caught_up = done = False
    accepted = False
    deadline = time.time() + args.timeout
    while not (caught_up and done):
        if time.time() > deadline:
            raise SystemExit("timed out: caught_up=%s done=%s" % (caught_up, done))
        m = cbor2.loads(channel.recv())
        t = m["t"]
        seen_types.append(t)
        if t == "hello":
            if group not in m["groups"]:
                raise SystemExit("the daemon did not offer the group: %s" % [g.hex() for g in m["groups"]])
            if 1 not in m["versions"]:
                raise SystemExit("no common version")
            # Accept the offered group (we hold nothing: empty vector), then ask for a range.
            send({"t": "vector", "group": group, "committed": 0, "authors": []})
            send({"t": "request", "group": group, "id": 1, "from": args.seq_from, "to": args.seq_to})
            accepted = True
        elif t in ("receipts", "envelopes"):
            if not accepted or m["group"] != group:
                raise SystemExit("batch before acceptance or for another group")
            for item in m["items"]:
                if t == "receipts":
                    cid, fields = verify_receipt(item)
                    receipts[cid] = fields
                else:
                    seq, cid, fields = verify_envelope(item)
                    envelopes.setdefault(seq, set()).add(cid)
                    if fields.get("batched"):
                        batched.add(seq)
                        runs.add((fields["first_seq"], fields["count"], fields["root"]))
            send({"t": "credit", "n": 1})
        elif t == "caught_up":
            caught_up = True
        elif t == "done":
            done = m["id"] == 1 or done
        elif t == "error":
            raise SystemExit("daemon sent error: %s %s" % (m["code"], m["message"]))
        elif t == "unshared" and m["group"] == group:
            # The daemon will not sync this group with us (a peer without a capability it needs).
            channel.close("done")
            print(json.dumps({"unshared": m["reason"], "receipts": len(receipts)}))
            return
    channel.close("done")
    forks = [s for s, cids in envelopes.items() if len(cids) != 1]
    missing = [s for s, cids in envelopes.items() if next(iter(cids)) not in receipts]
    out = {
        "peer_device": key_id(channel.peer["device"]),
        "receipts": len(receipts),
        "envelopes": len(envelopes),
        "batched_envelopes": len(batched),
        "runs": len(runs),
        "seqs": sorted(envelopes),
        "range_present": all(s in envelopes for s in range(args.seq_from, args.seq_to + 1)),
        "forks": forks,
        "envelopes_without_receipt": missing,
        "types": sorted({f["type"] for f in receipts.values()}),
        "messages": {t: seen_types.count(t) for t in sorted(set(seen_types))},
    }
    print(json.dumps(out))
    if forks or missing or not out["range_present"]:
        sys.exit(1)


def forge(args):
    from nacl.signing import SigningKey
    device = Device.deterministic(bytes.fromhex(args.seed), "python-peer", 1_800_000_000_000)
    group, victim = group_bytes(args.group), group_bytes(args.victim)
    own_identity = bytes(device.identity.verify_key)

    def cert(identity_bytes, device_key, signer):
        payload = dumps({"v": 1, "identity": identity_bytes, "device": bytes(device_key.verify_key),
                         "noise": bytes(32), "name": "forger", "created": 1_800_000_000_000})
        return {"certificate": payload, "sig": signer.sign(CTX_CERT + payload).signature}

    def receipt(author, identity_bytes, certificate, body):
        fields = {"v": 1, "group": group, "type": "entity.put", "author": bytes(author.verify_key), "identity": identity_bytes,
                  "counter": 1, "parents": [], "hlc": 1_800_000_000_000 << 16, "body": body}
        payload = dumps(fields)
        return payload, author.sign(CTX_RECEIPT + payload).signature, certificate

    own_cert = cbor2.loads(device.certificate)
    items, authors = [], []
    # 1. Signed, then altered: the signature no longer covers the payload.
    payload, sig, c = receipt(device.device, own_identity, own_cert, {"key": "k", "value": "signed"})
    payload = dumps(dict(cbor2.loads(payload), body={"key": "k", "value": "altered"}))
    items.append((payload, sig, c)); authors.append(bytes(device.device.verify_key))
    # 2. A self-signed certificate claiming the victim's identity.
    fake = SigningKey.generate()
    items.append(receipt(fake, victim, cert(victim, fake, fake), {"key": "k", "value": "impostor"})); authors.append(bytes(fake.verify_key))
    # 3. A certificate for our identity signed by another identity key.
    other, rogue = SigningKey.generate(), SigningKey.generate()
    items.append(receipt(rogue, own_identity, cert(own_identity, rogue, other), {"key": "k", "value": "rogue"})); authors.append(bytes(rogue.verify_key))

    channel = connect(args.host, args.port, args.network, device)
    send = lambda m: channel.send(dumps(m))
    send({"t": "hello", "versions": [1], "capabilities": [], "groups": [group]})
    send({"t": "credit", "n": 8})
    deadline, sent = time.time() + args.timeout, False
    while True:
        if time.time() > deadline:
            raise SystemExit("timed out (sent=%s)" % sent)
        m = cbor2.loads(channel.recv())
        if m["t"] == "vector" and m["group"] == group and not sent:
            containers = [dumps({"receipt": p, "sig": g, "certificate": c}) for p, g, c in items]
            send({"t": "receipts", "group": group, "items": containers})
            sent = True
        elif m["t"] == "credit" and sent:
            break  # granted back after the daemon ingested the batch
        elif m["t"] == "error":
            raise SystemExit("daemon sent error: %s %s" % (m["code"], m["message"]))
    channel.close("done")
    print(json.dumps({"cids": [str(CID("base32", 1, "dag-cbor", multihash.digest(p, "sha2-256"))) for p, _, _ in items],
                      "authors": [key_id(a) for a in authors]}))


def flood(args):
    import os
    from peerlog_channel import ChannelError
    device = Device.deterministic(bytes.fromhex(args.seed), "python-peer", 1_800_000_000_000)
    group = group_bytes(args.group)
    own_identity = bytes(device.identity.verify_key)
    cert = cbor2.loads(device.certificate)
    counter = [0]

    def forged():
        counter[0] += 1
        fields = {"v": 1, "group": group, "type": "entity.put", "author": bytes(device.device.verify_key),
                  "identity": own_identity, "counter": counter[0], "parents": [], "hlc": 1_800_000_000_000 << 16,
                  "body": {"key": "k", "value": counter[0]}}
        return dumps({"receipt": dumps(fields), "sig": os.urandom(64), "certificate": cert})

    channel = connect(args.host, args.port, args.network, device)
    send = lambda m: channel.send(dumps(m))
    send({"t": "hello", "versions": [1], "capabilities": [], "groups": [group]})
    send({"t": "credit", "n": 8})
    deadline, sent, credit, accepted, error = time.time() + args.timeout, 0, 0, False, None
    try:
        while time.time() < deadline and sent < args.max:
            if accepted and credit > 0:
                send({"t": "receipts", "group": group, "items": [forged() for _ in range(args.batch)]})
                sent += args.batch
                credit -= 1
                continue
            m = cbor2.loads(channel.recv())
            if m["t"] == "vector" and m["group"] == group:
                accepted = True
            elif m["t"] == "credit":
                credit += m["n"]
            elif m["t"] == "error":
                error = m["code"]
                break
    except (ChannelError, OSError) as e:
        error = error or "closed: %s" % e
    try:
        channel.close("done")
    except Exception:
        pass
    try:
        again = connect(args.host, args.port, args.network, device)
        again.send(dumps({"t": "hello", "versions": [1], "capabilities": [], "groups": []}))
        cbor2.loads(again.recv())
        reconnect = "accepted"
        again.close("done")
    except (ChannelError, OSError):
        reconnect = "refused"
    print(json.dumps({"sent": sent, "error": error, "reconnect": reconnect}))


def silent(args):
    from peerlog_channel import ChannelError
    device = Device.deterministic(bytes.fromhex(args.seed), "python-peer", 1_800_000_000_000)
    channel = connect(args.host, args.port, args.network, device)
    start = time.time()
    if args.hello != "none":
        caps = ["keepalive"] if args.hello == "keepalive" else []
        channel.send(dumps({"t": "hello", "versions": [1], "capabilities": caps, "groups": []}))
        channel.send(dumps({"t": "credit", "n": 8}))
    closed_after, error, pings = None, None, 0
    channel.sock.settimeout(30)
    while time.time() < start + args.timeout:
        if not select.select([channel.sock], [], [], 1)[0]:
            continue
        try:
            m = cbor2.loads(channel.recv())
        except (ChannelError, OSError):
            closed_after = time.time() - start
            break
        if m["t"] == "ping":
            pings += 1
        elif m["t"] == "error":
            error = m["code"]
    try:
        channel.close("done")
    except Exception:
        pass
    print(json.dumps({"closed_after": closed_after, "error": error, "pings": pings}))


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["identity", "fetch", "forge", "flood", "silent"])
    p.add_argument("host", nargs="?")
    p.add_argument("port", nargs="?", type=int)
    p.add_argument("--seed", required=True)
    p.add_argument("--group")
    p.add_argument("--from", dest="seq_from", type=int, default=1)
    p.add_argument("--to", dest="seq_to", type=int, default=1)
    p.add_argument("--network", default="")
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--runs", action="store_true", help="fetch: list `envelope_runs` in the hello (batched envelopes)")
    p.add_argument("--victim", help="forge: the identity a forged certificate claims")
    p.add_argument("--batch", type=int, default=10, help="flood: receipts per batch")
    p.add_argument("--max", type=int, default=10_000, help="flood: most receipts sent")
    p.add_argument("--hello", choices=["none", "plain", "keepalive"], default="none", help="silent: what to send")
    args = p.parse_args(argv)
    if args.command == "identity":
        d = Device.deterministic(bytes.fromhex(args.seed), "python-peer", 1_800_000_000_000)
        print(json.dumps({"identity": d.identity_id, "device": d.device_id}))
        return
    if args.command == "forge":
        forge(args)
        return
    if args.command == "flood":
        flood(args)
        return
    if args.command == "silent":
        silent(args)
        return
    try:
        fetch(args)
    except (BadSignatureError, ValueError) as e:
        print(json.dumps({"error": "verification failed: %s" % e}))
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
