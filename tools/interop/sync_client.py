"""A Python peer of the Peerlog sync protocol (docs/PROTOCOL.md §14-§15), written from the docs
with noiseprotocol (through peerlog_channel.py), cbor2 and PyNaCl, used by the test suite
against a real `peerlog daemon`.

  identity --seed HEX
      print {"identity", "device"} of the deterministic device the fetch command uses
  fetch HOST PORT --seed HEX --group GROUP_ID --from A --to B [--network ID] [--runs] [--state-hash]
      handshake, hello, credit; accept the offered group with an empty vector (full catch-up)
      and send a `request` for seqs A..B; collect batches until both `caught_up` and `done`;
      verify every receipt (certificate, author binding, signature, CID of the envelope) and
      envelope (signature; for a batched run item, its Merkle path too); print a JSON summary.
      Exit 1 on any verification failure. --runs lists `envelope_runs` in the hello, so the
      daemon may send batched envelopes (§3.5); without it, only single ones. This peer lists no
      `encrypted_groups`: for an encrypted group it prints {"unshared": REASON, "receipts"}.
      --state-hash folds the committed log received (seq 1 up to the highest envelope) with
      state_fold.py (§9 rules, §9.7 writes; written from the docs too) and adds to the summary
      "state_hash" (hex of the committed state hash, §12), "state_seq" (the last seq folded)
      and "state_rejected" ([[seq, reason], ...]: committed receipts the rules refused; reasons
      are informative). When the log is not whole (a gap, a fork, an envelope without its
      receipt, e.g. a daemon that pruned below a floor, §23) or the fold does not support the
      group (encrypted, §22), "state_hash" is null, "state_error" says why, and the exit
      status is 1.
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
  blobfetch HOST PORT --seed HEX --group GROUP_ID --key KEY --out FILE [--timeout S] [--network ID]
      blobs (§24), as the deterministic device: hello listing `commits` and `blobs` (plaintext
      groups only), credit; accept the offered group with an empty vector and collect the
      batches until `caught_up`, verifying them as `fetch` does; take the newest committed
      `entity.put` of KEY (highest seq) whose value is a plaintext blob reference; ask for its
      chunk hashes (`blob_get`, count 0) and check them against the blob id with the reference's
      layout, then ask for the chunks (at most 16 per `blob_get`, a new id each), check each
      one's length and hash, and write FILE (atomically). Prints {"blob", "size", "chunks",
      "verified": true, "sha256", "seq" (of the put), "retries"}; any mismatch, `blob_missing`,
      error or timeout (--timeout, 60 s by default, bounds the whole run) is printed to stderr
      with exit status 1. Only the first request (the hashes) is asked again, up to 5 times,
      when it goes unanswered for 20 s or gets `blob_missing` (daemons before a fix dropped or
      refused a `blob_get` sent right after `caught_up`); each retry is reported on stderr and
      counted in "retries", which must be 0 with a current daemon.
  blobserve-corrupt HOST PORT --seed HEX --group GROUP_ID [--seconds S] [--network ID]
      a hostile member (§24.4): as the deterministic device, hello listing `commits` and
      `blobs` (not `keepalive`, so the daemon neither pings it nor times it out), credit, accept
      the group with an empty vector, then for S seconds (30 by default) answer every
      `blob_get`: count 0 with random hashes (as many as the blob's layout has chunks when a
      reference to it came in the catch-up, else 2), count N with N `blob_chunk`s of 1,048,576
      random bytes. Prints {"gets", "hashes_sent", "chunks_sent", "closed" (the daemon ended the
      connection), "error" (its error code, or null), "blobs" (the ids asked for)}.
  blobprobe HOST PORT --seed HEX --group GROUP_ID --key KEY [--timeout S] [--network ID]
      edge cases of `blob_get` (§24.3) against a daemon that holds the blob: as the deterministic
      device, the session and catch-up of `blobfetch` (plaintext or sealed reference), then on
      the one connection, one request after the other (ids 1, 2, ...), each answer awaited 5 s:
        1. count 0 (the hashes)                      expected blob_hashes, hashing to the id
        2. from 2^64-1, count 2 (from+count overflows)     expected blob_missing
        3. from = the chunk count, count 1 (past the end)  expected blob_missing
        4. from = chunk count - 1, count 2 (runs past it)  expected blob_missing
        5. a random 32-byte blob id, count 0               expected blob_missing
        6. the blob under a random 16-byte group, count 1  expected blob_missing (not synced)
        7. from 0, count 1                           expected one blob_chunk, index 0, of the
                                                     layout's length, matching hash 0 of case 1
      Case 1 is asked again (up to 5 times, 2 s apart, reported on stderr, counted in its
      "retries") when unanswered or answered blob_missing, as in `blobfetch`. A case expecting
      blob_missing passes only when that is the whole answer (no chunk before it, nothing
      after: answers arriving later for a case are listed in its "late" and fail it). Prints
      {"answers": [{"case", "type" (the answer's type; "closed" when the connection ended
      instead, with "error": the daemon's error code or null; null when nothing came or the
      request was not sent), "reason" (blob_missing's reason, "no answer within 5 s", the error
      message or close reason, or "not sent: the connection had closed"), "expected", "ok"}, ...],
      "alive" (case 7 answered correctly), "blob", "size", "chunks", "seq", and when the
      connection closed, "closed" ({"error", "reason"}) and "daemon_up" (a fresh handshake
      within 5 s got the daemon's hello: false after a crash)}; a failure before the cases
      (handshake, catch-up, no reference, --timeout, 60 s by default, for the whole run) adds
      "error". Exit status 0 when every case got its expected answer, else 1 (JSON printed
      either way).
"""
import argparse, hashlib, json, select, sys, time
import cbor2
from nacl.signing import VerifyKey
from nacl.exceptions import BadSignatureError
from multiformats import CID, multihash

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from peerlog_channel import Device, connect, dumps, key_bytes, key_id  # noqa: E402
from state_fold import Fold, Unsupported, receipt_from_fields  # noqa: E402

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


def ingest_batch(m, group, receipts, envelopes, batched, runs):
    """Verifies and records the items of a `receipts`, `envelopes` or `commits` batch (§15.1) of
    `group`: receipts by CID, envelopes' CIDs by seq, batched run items and their runs."""
    if m["group"] != group:
        raise ValueError("a batch for another group")
    if m["t"] == "commits":
        parts = [("receipts", m["receipts"]), ("envelopes", m["envelopes"])]
    else:
        parts = [(m["t"], m["items"])]
    for kind, items in parts:
        for item in items:
            if kind == "receipts":
                cid, fields = verify_receipt(item)
                if fields["group"] != group:
                    raise ValueError("a receipt of another group in a batch of this one")
                receipts[cid] = fields
            else:
                seq, cid, fields = verify_envelope(item)
                if fields["group"] != group:
                    raise ValueError("an envelope of another group in a batch of this one")
                envelopes.setdefault(seq, set()).add(cid)
                if fields.get("batched"):
                    batched.add(seq)
                    runs.add((fields["first_seq"], fields["count"], fields["root"]))


def group_bytes(text):
    """A group id as `peerlog` prints it: "b" + RFC 4648 base32, lower case, no padding."""
    return key_bytes(text)


def committed_state(group, receipts, envelopes):
    """fetch --state-hash: the summary's state fields, from the committed log received
    (receipts by CID, envelopes' CIDs by seq) folded from seq 1 in seq order (§9, §12). The
    fold needs every seq from 1: it has no snapshot to start from (this peer does not list
    `snapshots`, §23.3)."""
    top = max(envelopes, default=0)
    broken = [s for s in range(1, top + 1)
              if len(envelopes.get(s, ())) != 1 or next(iter(envelopes[s])) not in receipts]
    if broken:
        return {"state_hash": None, "state_error": "the committed log is not whole from seq 1: seqs %s%s"
                % (broken[:16], " ..." if len(broken) > 16 else "")}
    fold, rejected = Fold(group), []
    try:
        for seq in range(1, top + 1):
            cid = next(iter(envelopes[seq]))
            applied, reason = fold.apply(receipt_from_fields(receipts[cid], cid))
            if not applied:
                rejected.append([seq, reason])
    except Unsupported as e:
        return {"state_hash": None, "state_error": str(e)}
    return {"state_hash": fold.state_hash().hex(), "state_seq": top, "state_rejected": rejected}


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
            ingest_batch(m, group, receipts, envelopes, batched, runs)
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
    if args.state_hash:
        out.update(committed_state(group, receipts, envelopes))
    print(json.dumps(out))
    if forks or missing or not out["range_present"] or (args.state_hash and out["state_hash"] is None):
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


# §24.1: a blob's format fixes its chunk hash and id: 1 (no "format" field) BLAKE2b-256 with
# "peerlog/blob/v1", 2 SHA-256 with "peerlog/blob/v2".
BLOB_ID_CONTEXTS = {1: b"peerlog/blob/v1", 2: b"peerlog/blob/v2"}
BLOB_CHUNK_RANGE = (16_384, 2_097_152)
BLOB_MAX_SIZE = 64 << 30
BLOB_MAX_CHUNKS = 65_600
BLOB_CHUNKS_PER_GET = 16  # maxBlobChunksPerGet (§24.3)
HASH_ATTEMPTS = 5
# Seconds a hashes request waits for its answer before it is asked again (§24.3: it is answered
# at once by a current daemon; a loaded one may take seconds).
HASH_WAIT = 20


def chunk_hash(data, fmt):
    """§24.1: the hash of a stored chunk in format `fmt`."""
    return hashlib.sha256(data).digest() if fmt == 2 else hashlib.blake2b(data, digest_size=32).digest()


def blob_format(ref):
    return ref.get("format", 1)


def blob_reference(value):
    """The inner map of a blob reference (§24.2), or None for a value of any other shape."""
    if not isinstance(value, dict) or set(value) != {"peerlog.blob"}:
        return None
    ref = value["peerlog.blob"]
    if not isinstance(ref, dict) or set(ref) - {"key", "format"} != {"id", "size", "chunk"}:
        return None
    if "format" in ref and ref["format"] != 2:  # absent: the first format; 1 is never written
        return None
    if not (isinstance(ref["id"], bytes) and len(ref["id"]) == 32):
        return None
    if any(not isinstance(ref[k], int) or isinstance(ref[k], bool) or ref[k] < 0 for k in ("size", "chunk")):
        return None
    if "key" in ref and not (isinstance(ref["key"], bytes) and len(ref["key"]) == 32):
        return None
    return ref


def blob_chunk_count(size, chunk):
    return (size + chunk - 1) // chunk


def blob_id(size, chunk, sealed, hashes, fmt):
    """§24.1: the format's hash of its context ‖ size (u64 BE) ‖ chunk (u32 BE) ‖ sealed ‖ hashes."""
    return chunk_hash(BLOB_ID_CONTEXTS[fmt] + size.to_bytes(8, "big") + chunk.to_bytes(4, "big")
                      + bytes([1 if sealed else 0]) + hashes, fmt)


class BlobFailure(Exception):
    pass


class WaitExpired(Exception):
    """No message began before a wait's own bound (the run's deadline not yet passed)."""


class Deadline:
    """One bound for a whole run: every receive waits at most until it, and an interval timer
    interrupts a receive that a trickling peer would otherwise stretch."""

    def __init__(self, seconds):
        import signal
        self.at = time.time() + seconds

        def expired(signum, frame):
            raise BlobFailure("timed out after %g s" % seconds)
        signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, seconds + 1)

    def recv(self, channel, until=None):
        """The next message; WaitExpired when none begins before `until` (earlier than the
        deadline). A message begun is read whole, within the deadline."""
        import socket
        wait = min(self.at, until or self.at) - time.time()
        if not select.select([channel.sock], [], [], max(0, wait))[0]:
            if until is not None and until < self.at:
                raise WaitExpired()
            raise BlobFailure("timed out")
        channel.sock.settimeout(max(0.1, self.at - time.time()))
        try:
            return cbor2.loads(channel.recv())
        except socket.timeout:
            raise BlobFailure("timed out")


class BlobPeer:
    """A blob session with the daemon as the deterministic device (used by `blobfetch` and
    `blobprobe`): handshake, hello listing `commits` and `blobs`, credit, the group accepted with
    an empty vector on the daemon's hello, the catch-up ingested and verified as `fetch` does."""

    def __init__(self, args, deadline):
        from peerlog_channel import ChannelError
        self.args, self.deadline = args, deadline
        self.device = Device.deterministic(bytes.fromhex(args.seed), "python-peer", 1_800_000_000_000)
        self.group = group_bytes(args.group)
        try:
            self.channel = connect(args.host, args.port, args.network, self.device,
                                   timeout=max(0.1, deadline.at - time.time()))
        except (ChannelError, OSError) as e:
            raise BlobFailure("handshake: %s" % e)
        self.receipts, self.envelopes, self.batched, self.runs = {}, {}, set(), set()
        self.hello, self.caught_up = None, False

    def send(self, m):
        self.channel.send(dumps(m))

    def next_message(self, until=None, passthrough=False):
        """The next blob message, or the first `caught_up` of the group; the rest is background
        traffic (batches are ingested and credited, pings, credit and vectors ignored, a
        `blob_get` of the daemon answered with `blob_missing`). An `error`, or an `unshared`
        of the group, fails the run, or with `passthrough` is returned."""
        group = self.group
        while True:
            m = self.deadline.recv(self.channel, until)
            t = m.get("t")
            if t == "hello":
                if self.hello is not None:
                    raise BlobFailure("a second hello")
                self.hello = m
                if 1 not in m["versions"]:
                    raise BlobFailure("no common version: %s" % m["versions"])
                if "blobs" not in m["capabilities"]:
                    raise BlobFailure("the daemon's hello does not list `blobs`: %s" % m["capabilities"])
                if group not in m["groups"]:
                    raise BlobFailure("the daemon did not offer the group: %s" % [g.hex() for g in m["groups"]])
                self.send({"t": "vector", "group": group, "committed": 0, "authors": []})
            elif t in ("receipts", "envelopes", "commits"):
                if self.hello is None:
                    raise BlobFailure("a batch before the daemon's hello")
                ingest_batch(m, group, self.receipts, self.envelopes, self.batched, self.runs)
                self.send({"t": "credit", "n": 1})
            elif t == "caught_up":
                if m["group"] == group and not self.caught_up:
                    self.caught_up = True
                    return m
            elif t == "blob_get":
                self.send({"t": "blob_missing", "blob": m["blob"], "id": m["id"], "reason": "this peer serves no blobs"})
            elif t == "error":
                if passthrough:
                    return m
                raise BlobFailure("the daemon sent error %s: %s" % (m["code"], m["message"]))
            elif t == "unshared" and m["group"] == group:
                if passthrough:
                    return m
                raise BlobFailure("the daemon stopped syncing the group: %s" % m["reason"])
            elif t in ("blob_hashes", "blob_chunk", "blob_missing"):
                return m
            # vector, credit, ping, revocations, done, unknown types: not needed here.

    def catch_up(self):
        """Hello and credit, then everything the daemon holds of the group, until its caught_up."""
        self.send({"t": "hello", "versions": [1], "capabilities": ["commits", "blobs"], "groups": []})
        self.send({"t": "credit", "n": 8})
        m = self.next_message()
        if m["t"] != "caught_up":
            raise BlobFailure("a %s before any blob_get" % m["t"])
        forks = sorted(s for s, cids in self.envelopes.items() if len(cids) != 1)
        if forks:
            raise BlobFailure("seqs with more than one envelope CID (forks): %s" % forks)

    def newest_reference(self, key):
        """(seq, reference) of the newest committed `entity.put` of `key` (highest seq) whose
        value is a blob reference."""
        newest = None
        for seq in sorted(self.envelopes):
            fields = self.receipts.get(next(iter(self.envelopes[seq])))
            if fields is None or fields["type"] != "entity.put" or not isinstance(fields["body"], dict):
                continue
            if fields["body"].get("key") == key and blob_reference(fields["body"].get("value")) is not None:
                newest = (seq, blob_reference(fields["body"]["value"]))
        if newest is None:
            raise BlobFailure("no committed entity.put of %r holds a blob reference (%d receipts, %d committed)"
                              % (key, len(self.receipts), len(self.envelopes)))
        return newest

    def close(self):
        try:
            self.channel.close("done")
        except Exception:
            pass


def checked_layout(ref):
    """The chunk count of a reference's layout, or BlobFailure when it is out of range (§24.1)."""
    size, chunk = ref["size"], ref["chunk"]
    if not (BLOB_CHUNK_RANGE[0] <= chunk <= BLOB_CHUNK_RANGE[1]) or size > BLOB_MAX_SIZE:
        raise BlobFailure("the reference's layout is out of range: size %d, chunk %d" % (size, chunk))
    count = blob_chunk_count(size, chunk)
    if count > BLOB_MAX_CHUNKS:
        raise BlobFailure("the reference's layout has %d chunks, more than %d" % (count, BLOB_MAX_CHUNKS))
    return count


def blobfetch(args):
    from peerlog_channel import ChannelError
    if not (args.group and args.key and args.out):
        raise BlobFailure("blobfetch needs --group, --key and --out")
    deadline = Deadline(args.timeout or 60)
    peer = BlobPeer(args, deadline)
    group, send, next_message = peer.group, peer.send, peer.next_message
    try:
        # 1. Catch-up: everything the daemon holds of the group, until its caught_up.
        peer.catch_up()
        seq, ref = peer.newest_reference(args.key)
        bid, size, chunk = ref["id"], ref["size"], ref["chunk"]
        if "key" in ref:
            raise BlobFailure("the blob of %r is sealed (it has a key): this peer reads plaintext blobs only" % args.key)
        count = checked_layout(ref)

        request, abandoned = [0], set()

        def get(start, n):
            request[0] += 1
            send({"t": "blob_get", "group": group, "blob": bid, "id": request[0], "from": start, "count": n})
            return request[0]

        def answer(rid, until=None, missing_ok=False):
            """The next blob message answering request `rid` (late answers to abandoned requests
            are skipped); any other blob message, or `blob_missing` unless `missing_ok`, fails."""
            while True:
                m = next_message(until)
                if m["blob"] == bid and m["id"] in abandoned:
                    continue
                if m["blob"] != bid or m["id"] != rid:
                    raise BlobFailure("a %s for blob %s request %d while waiting for request %d"
                                      % (m["t"], key_id(m["blob"]), m["id"], rid))
                if m["t"] == "blob_missing" and not missing_ok:
                    raise BlobFailure("blob_missing for request %d: %s" % (rid, m["reason"]))
                return m

        # 2. The chunk hashes, checked against the id with the reference's layout. §24.3: a
        # request may be sent once the daemon has our vector, and is answered then. Daemons
        # before that fix could ignore a first `blob_get` right after `caught_up`, or answer
        # `blob_missing` ("not synced on this connection"); such a request is asked again (at
        # most HASH_ATTEMPTS times; each retry reported on stderr and counted in "retries", which
        # a test of a fixed daemon requires to be 0). The wait is long (HASH_WAIT) so that a
        # slow, loaded daemon is not mistaken for one that dropped the request.
        retries = 0
        while True:
            rid = get(0, 0)
            try:
                m = answer(rid, until=time.time() + HASH_WAIT, missing_ok=True)
                if m["t"] == "blob_hashes":
                    break
                if m["t"] != "blob_missing":
                    raise BlobFailure("a %s answered the hashes request" % m["t"])
                why = "blob_missing: %s" % m["reason"]
            except WaitExpired:
                why = "no answer within %d s" % HASH_WAIT
            if retries + 1 >= HASH_ATTEMPTS:
                raise BlobFailure("the hashes request (%d attempts), last: %s" % (HASH_ATTEMPTS, why))
            retries += 1
            abandoned.add(rid)
            print("blobfetch: hashes request %d: %s; asking again" % (rid, why), file=sys.stderr)
            try:
                answer(-1, until=time.time() + 0.5)  # let the daemon tick, ingesting what comes
            except WaitExpired:
                pass
        hashes = m["hashes"]
        if len(hashes) != 32 * count:
            raise BlobFailure("%d bytes of hashes, the layout (size %d, chunk %d) has %d chunks"
                              % (len(hashes), size, chunk, count))
        if blob_id(size, chunk, False, hashes, blob_format(ref)) != bid:
            raise BlobFailure("the chunk hashes do not hash to the blob id %s" % key_id(bid))

        # 3. The chunks, each checked for its length and its hash, written in order.
        import os
        part = args.out + ".part"
        digest = hashlib.sha256()
        try:
            with open(part, "wb") as f:
                for start in range(0, count, BLOB_CHUNKS_PER_GET):
                    n = min(BLOB_CHUNKS_PER_GET, count - start)
                    rid = get(start, n)
                    for index in range(start, start + n):
                        m = answer(rid)
                        if m["t"] != "blob_chunk" or m["index"] != index:
                            raise BlobFailure("expected chunk %d of request %d, got %s %s"
                                              % (index, rid, m["t"], m.get("index")))
                        data = m["data"]
                        expected = chunk if index < count - 1 else size - chunk * (count - 1)
                        if len(data) != expected:
                            raise BlobFailure("chunk %d has %d bytes, the layout says %d" % (index, len(data), expected))
                        if chunk_hash(data, blob_format(ref)) != hashes[32 * index:32 * index + 32]:
                            raise BlobFailure("chunk %d does not match its hash" % index)
                        f.write(data)
                        digest.update(data)
            os.replace(part, args.out)
        except BaseException:
            try:
                os.unlink(part)
            except OSError:
                pass
            raise
    except (ChannelError, OSError) as e:
        raise BlobFailure("connection: %s" % e)
    finally:
        import signal
        signal.setitimer(signal.ITIMER_REAL, 0)
        peer.close()
    print(json.dumps({"blob": key_id(bid), "size": size, "chunks": count, "verified": True,
                      "sha256": digest.hexdigest(), "seq": seq, "retries": retries}))


PROBE_WAIT = 5  # seconds blobprobe waits for the answer to one request


def daemon_answers_handshake(args, seconds=5):
    """Whether the daemon at HOST PORT still completes a handshake and sends its hello (a fresh
    connection as the deterministic device), within `seconds`."""
    from peerlog_channel import ChannelError
    device = Device.deterministic(bytes.fromhex(args.seed), "python-peer", 1_800_000_000_000)
    try:
        channel = connect(args.host, args.port, args.network, device, timeout=seconds)
    except (ChannelError, OSError, ValueError):
        return False
    try:
        channel.sock.settimeout(seconds)
        return cbor2.loads(channel.recv()).get("t") == "hello"
    except Exception:
        return False
    finally:
        try:
            channel.close("done")
        except Exception:
            pass


def blobprobe(args):
    """Returns (the JSON summary, whether every case got its expected answer)."""
    import os, signal
    from peerlog_channel import ChannelClosed, ChannelError
    answers, out = [], {"answers": [], "alive": False}
    out["answers"] = answers
    if not (args.group and args.key):
        out["error"] = "blobprobe needs --group and --key"
        return out, False
    deadline = Deadline(args.timeout or 60)
    peer, closed = None, {}  # closed: {"error": code or None, "reason": text} once the connection ended
    by_id = {}  # request id -> its entry in answers, for answers that come late
    ignored = set()  # ids of case 1 attempts that were asked again
    state = {"rid": 0, "hashes": None}

    def ask(case, expected, group, blob, start, n, wait=PROBE_WAIT, keep=True):
        """Sends one blob_get and collects what answers it: the first message, then (after
        blob_chunks) the rest up to `n` chunks or a blob_missing. Returns the entry."""
        entry = {"case": case, "type": None, "reason": None, "expected": expected}
        if keep:
            answers.append(entry)
        if closed:
            entry["reason"], entry["ok"] = "not sent: the connection had closed", False
            return entry, []
        state["rid"] += 1
        rid = state["rid"]
        by_id[rid] = entry
        got, until = [], time.time() + wait
        try:
            peer.send({"t": "blob_get", "group": group, "blob": blob, "id": rid, "from": start, "count": n})
            while True:
                try:
                    m = peer.next_message(until, passthrough=True)
                except WaitExpired:
                    break
                t = m["t"]
                if t == "error":
                    closed.update(error=m["code"], reason=m["message"])
                    break
                if t == "unshared":
                    entry.setdefault("unshared", []).append(m["reason"])
                    continue
                if m["id"] != rid:
                    if m["id"] not in ignored and m["id"] in by_id:
                        late = by_id[m["id"]]
                        late.setdefault("late", []).append(t)
                        late["ok"] = False
                    continue
                got.append(m)
                if t != "blob_chunk" or len(got) >= n:
                    break
        except ChannelClosed as e:
            closed.update(error=None, reason="close record: %s" % e.reason)
        except (ChannelError, OSError) as e:
            closed.update(error=None, reason=str(e) or type(e).__name__)
        if got:
            entry["type"] = got[0]["t"]
            entry["reason"] = got[0].get("reason")
            if len(got) > 1:
                entry["then"] = [m["t"] for m in got[1:]]
        elif closed:
            entry["type"], entry["error"], entry["reason"] = "closed", closed["error"], closed["reason"]
        else:
            entry["reason"] = "no answer within %g s" % wait
        entry["ok"] = len(got) == 1 and got[0]["t"] == expected
        return entry, got

    try:
        peer = BlobPeer(args, deadline)
        try:
            peer.catch_up()
        except (ChannelError, OSError) as e:
            raise BlobFailure("connection: %s" % e)
        seq, ref = peer.newest_reference(args.key)
        bid, size, chunk, sealed = ref["id"], ref["size"], ref["chunk"], "key" in ref
        count = checked_layout(ref)
        if count == 0:
            raise BlobFailure("the blob of %r is empty (no chunks to probe)" % args.key)
        out.update(blob=key_id(bid), size=size, chunks=count, seq=seq)
        group = peer.group

        # 1. The hashes. The daemon learns that a session syncs the group on its tick, so (as in
        # blobfetch) an unanswered or blob_missing first request is asked again, up to
        # HASH_ATTEMPTS times; the last attempt waits PROBE_WAIT, earlier ones 2 s.
        for attempt in range(HASH_ATTEMPTS):
            last = attempt == HASH_ATTEMPTS - 1
            entry, got = ask(1, "blob_hashes", group, bid, 0, 0, wait=PROBE_WAIT if last else 2, keep=last)
            if entry["ok"] or closed or last or (got and got[0]["t"] not in ("blob_missing",)):
                break
            ignored.add(state["rid"])
            print("blobprobe: hashes request %d: %s; asking again"
                  % (state["rid"], "%s: %s" % (entry["type"], entry["reason"]) if entry["type"] else entry["reason"]),
                  file=sys.stderr)
        if entry not in answers:
            answers.append(entry)
        entry["retries"] = attempt
        if entry["ok"]:
            hashes = got[0]["hashes"]
            if len(hashes) != 32 * count or blob_id(size, chunk, sealed, hashes, blob_format(ref)) != bid:
                entry["ok"] = False
                entry["reason"] = "%d hashes that do not hash to the blob id" % (len(hashes) // 32)
            else:
                state["hashes"] = hashes

        ask(2, "blob_missing", group, bid, (1 << 64) - 1, 2)           # from + count overflows
        ask(3, "blob_missing", group, bid, count, 1)                   # just past the end
        ask(4, "blob_missing", group, bid, count - 1, 2)               # runs past the end
        ask(5, "blob_missing", group, os.urandom(32), 0, 0)            # an unknown blob
        ask(6, "blob_missing", os.urandom(16), bid, 0, 1)              # a group not synced
        entry, got = ask(7, "blob_chunk", group, bid, 0, 1)            # still serving?
        if entry["ok"]:
            data, index = got[0]["data"], got[0]["index"]
            expected = (chunk if count > 1 else size) + (16 if sealed else 0)
            entry.update(index=index, bytes=len(data))
            entry["hash_ok"] = (state["hashes"] is not None
                                and chunk_hash(data, blob_format(ref)) == state["hashes"][:32])
            if index != 0 or len(data) != expected or not entry["hash_ok"]:
                entry["ok"] = False
                entry["reason"] = ("chunk %d of %d bytes (expected 0, %d bytes), hash %s"
                                   % (index, len(data), expected, "matches" if entry["hash_ok"] else "does not match"))
        out["alive"] = entry["ok"]
        # Late or surplus answers (a blob_missing must come alone, §24.3): a short last look,
        # within the run's deadline.
        if not closed:
            until = min(time.time() + 1, deadline.at - 0.05)
            try:
                while time.time() < until:
                    m = peer.next_message(until, passthrough=True)
                    if m["t"] == "error":
                        closed.update(error=m["code"], reason=m["message"])
                        break
                    if m["t"] != "unshared" and m["id"] in by_id and m["id"] not in ignored:
                        by_id[m["id"]].setdefault("late", []).append(m["t"])
                        by_id[m["id"]]["ok"] = False
            except WaitExpired:
                pass
            except (ChannelError, OSError) as e:
                closed.update(error=None, reason=str(e))
    except BlobFailure as e:
        out["error"] = str(e)
    except (ChannelError, OSError) as e:
        out["error"] = "connection: %s" % e
    except (BadSignatureError, ValueError, KeyError, TypeError) as e:
        out["error"] = "verification failed: %r" % e
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if peer is not None:
            peer.close()
    if closed:
        out["closed"] = closed
        # A session closed on purpose leaves the daemon answering; a crash does not.
        out["daemon_up"] = daemon_answers_handshake(args)
    ok = "error" not in out and len(answers) == 7 and all(a["ok"] for a in answers) and out["alive"]
    return out, ok


def blobserve_corrupt(args):
    import os, socket
    from peerlog_channel import ChannelError
    device = Device.deterministic(bytes.fromhex(args.seed), "python-peer", 1_800_000_000_000)
    group = group_bytes(args.group)
    channel = connect(args.host, args.port, args.network, device)
    send = lambda m: channel.send(dumps(m))
    send({"t": "hello", "versions": [1], "capabilities": ["commits", "blobs"], "groups": [group]})
    send({"t": "credit", "n": 8})
    start = time.time()
    end = start + args.seconds
    accepted, closed, error = False, False, None
    gets = hashes_sent = chunks_sent = 0
    layouts, asked = {}, []  # blob id -> chunk count, from references seen in the catch-up

    def learn(items):
        for item in items:
            try:
                fields = cbor2.loads(cbor2.loads(item)["receipt"])
                body = fields["body"]
                ref = blob_reference(body.get("value")) if fields["type"] == "entity.put" else None
            except Exception:
                continue
            if ref is not None and ref["chunk"] > 0:
                layouts[ref["id"]] = blob_chunk_count(ref["size"], ref["chunk"])

    try:
        while time.time() < end:
            if not select.select([channel.sock], [], [], min(1, max(0, end - time.time())))[0]:
                continue
            channel.sock.settimeout(30)  # a message begun arrives whole, or the connection counts as gone
            m = cbor2.loads(channel.recv())
            t = m.get("t")
            if t == "hello" or (t == "vector" and m.get("group") == group):
                if not accepted:
                    send({"t": "vector", "group": group, "committed": 0, "authors": []})
                    accepted = True
            elif t in ("receipts", "envelopes", "commits"):
                learn(m.get("receipts", []) if t == "commits" else m["items"] if t == "receipts" else [])
                send({"t": "credit", "n": 1})
            elif t == "blob_get":
                gets += 1
                if key_id(m["blob"]) not in asked:
                    asked.append(key_id(m["blob"]))
                if m["count"] == 0:
                    n = max(layouts.get(m["blob"], 2), 1)
                    send({"t": "blob_hashes", "blob": m["blob"], "id": m["id"], "hashes": os.urandom(32 * n)})
                    hashes_sent += 1
                else:
                    for index in range(m["from"], m["from"] + m["count"]):
                        send({"t": "blob_chunk", "blob": m["blob"], "id": m["id"], "index": index,
                              "data": os.urandom(1_048_576)})
                        chunks_sent += 1
            elif t == "error":
                error = m["code"]
            # credit, ping, caught_up, revocations, done, blob answers: nothing to do.
    except (ChannelError, OSError, socket.timeout):
        closed = True
    try:
        channel.close("done")
    except Exception:
        pass
    print(json.dumps({"gets": gets, "hashes_sent": hashes_sent, "chunks_sent": chunks_sent,
                      "closed": closed, "error": error, "blobs": asked}))


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["identity", "fetch", "forge", "flood", "silent", "blobfetch", "blobserve-corrupt",
                                       "blobprobe"])
    p.add_argument("host", nargs="?")
    p.add_argument("port", nargs="?", type=int)
    p.add_argument("--seed", required=True)
    p.add_argument("--group")
    p.add_argument("--from", dest="seq_from", type=int, default=1)
    p.add_argument("--to", dest="seq_to", type=int, default=1)
    p.add_argument("--network", default="")
    p.add_argument("--timeout", type=float, default=None, help="seconds; 30 by default, 60 for blobfetch and blobprobe")
    p.add_argument("--runs", action="store_true", help="fetch: list `envelope_runs` in the hello (batched envelopes)")
    p.add_argument("--state-hash", action="store_true",
                   help="fetch: fold the committed log and print its state hash (state_fold.py, §12)")
    p.add_argument("--victim", help="forge: the identity a forged certificate claims")
    p.add_argument("--batch", type=int, default=10, help="flood: receipts per batch")
    p.add_argument("--max", type=int, default=10_000, help="flood: most receipts sent")
    p.add_argument("--hello", choices=["none", "plain", "keepalive"], default="none", help="silent: what to send")
    p.add_argument("--key", help="blobfetch, blobprobe: the entity key whose blob to fetch or probe")
    p.add_argument("--out", help="blobfetch: the file to write")
    p.add_argument("--seconds", type=float, default=30, help="blobserve-corrupt: how long to stay connected")
    args = p.parse_args(argv)
    if args.timeout is None:
        args.timeout = 60 if args.command in ("blobfetch", "blobprobe") else 30
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
    if args.command == "blobfetch":
        try:
            blobfetch(args)
        except (BlobFailure, BadSignatureError, ValueError, KeyError, TypeError) as e:
            print("blobfetch: %s" % (e if isinstance(e, BlobFailure) else "verification failed: %r" % e), file=sys.stderr)
            sys.exit(1)
        return
    if args.command == "blobprobe":
        out, ok = blobprobe(args)
        print(json.dumps(out))
        sys.exit(0 if ok else 1)
    if args.command == "blobserve-corrupt":
        blobserve_corrupt(args)
        return
    try:
        fetch(args)
    except (BadSignatureError, ValueError) as e:
        print(json.dumps({"error": "verification failed: %s" % e}))
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
