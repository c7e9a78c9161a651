"""An independent implementation of Peerlog's receipt, certificate and envelope formats,
written from docs/PROTOCOL.md with cbor2 (canonical), PyNaCl and multiformats.

  golden            print the worked example of docs/PROTOCOL.md (fixed keys) as JSON
  golden-run        print the batched envelope example of PROTOCOL.md §3.5 as JSON
  make OUT [N]      write a receipt signed by fresh keys to OUT (N parents of random CIDs); print JSON
  verify FILE       check a receipt file; print JSON {cid, valid, reason, type, counter, body}
"""
import hashlib, json, os, sys
import cbor2
from nacl.signing import SigningKey, VerifyKey
from nacl.exceptions import BadSignatureError
from nacl.public import PrivateKey
from multiformats import CID, multihash

CTX_CERT = b"peerlog/certificate/v1\x00"
CTX_RECEIPT = b"peerlog/receipt/v1\x00"
CTX_ENVELOPE = b"peerlog/envelope/v1\x00"
CTX_ENVELOPE_RUN = b"peerlog/envelope-run/v1\x00"

def dumps(value):
    # Every Peerlog map has text keys only; for those, cbor2's canonical (RFC 7049) order is RFC 8949's.
    return cbor2.dumps(value, canonical=True)

def cid_of(payload):
    return CID("base32", 1, "dag-cbor", multihash.digest(payload, "sha2-256"))

def link(cid):
    return cbor2.CBORTag(42, b"\x00" + bytes(cid))

def certificate(identity, device, noise_public, name, created):
    payload = dumps({"v": 1, "identity": bytes(identity.verify_key), "device": bytes(device.verify_key),
                     "noise": noise_public, "name": name, "created": created})
    return {"certificate": payload, "sig": identity.sign(CTX_CERT + payload).signature}

def receipt(device, identity, cert, group, rtype, counter, parents, hlc, body):
    payload = dumps({"v": 1, "group": group, "type": rtype, "author": bytes(device.verify_key),
                     "identity": bytes(identity.verify_key), "counter": counter,
                     "parents": [link(p) for p in sorted(parents, key=bytes)], "hlc": hlc, "body": body})
    return payload, {"receipt": payload, "sig": device.sign(CTX_RECEIPT + payload).signature, "certificate": cert}

def golden():
    identity, device = SigningKey(b"\x01" * 32), SigningKey(b"\x02" * 32)
    noise = bytes(PrivateKey(b"\x03" * 32).public_key)
    cert = certificate(identity, device, noise, "golden-laptop", 1_700_000_000_000)
    hlc = 1_700_000_000_123 << 16
    payload, container = receipt(device, identity, cert, bytes(range(16)), "entity.put", 1, [], hlc, {"key": "color", "value": "blue"})
    cid = cid_of(payload)
    env = dumps({"v": 1, "group": bytes(range(16)), "seq": 1, "cid": link(cid), "term": 0,
                 "sequencer": bytes(device.verify_key), "received_at": 1_700_000_000_500})
    return {"certificate_payload": cert["certificate"].hex(), "certificate_sig": cert["sig"].hex(),
            "receipt_payload": payload.hex(), "receipt_sig": container["sig"].hex(), "receipt_cid": str(cid),
            "receipt_container": dumps(container).hex(), "envelope_payload": env.hex(),
            "envelope_sig": device.sign(CTX_ENVELOPE + env).signature.hex()}

def merkle(leaves):
    """RFC 9162 tree head of `leaves` and each leaf's inclusion path (siblings bottom-up)."""
    if len(leaves) == 1:
        return leaves[0], [[]]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    left, lp = merkle(leaves[:k])
    right, rp = merkle(leaves[k:])
    return hashlib.sha256(b"\x01" + left + right).digest(), [p + [right] for p in lp] + [p + [left] for p in rp]

def golden_run():
    device = SigningKey(b"\x02" * 32)
    golden_cid = cid_of(bytes.fromhex(golden()["receipt_payload"]))
    cids = [bytes(golden_cid), bytes(cid_of(b"")) [:4] + b"\xaa" * 32, bytes(cid_of(b""))[:4] + b"\xbb" * 32]
    first = 7
    leaves = [hashlib.sha256(b"\x00" + (first + i).to_bytes(8, "big") + c).digest() for i, c in enumerate(cids)]
    root, paths = merkle(leaves)
    header = dumps({"v": 1, "group": bytes(range(16)), "first_seq": first, "count": len(cids), "root": root, "term": 0,
                    "sequencer": bytes(device.verify_key), "received_at": 1_700_000_000_500})
    sig = device.sign(CTX_ENVELOPE_RUN + header).signature
    item = dumps({"v": 1, "run": header, "seq": 8, "cid": cbor2.CBORTag(42, b"\x00" + cids[1]), "path": paths[1]})
    return {"envelope_run_header": header.hex(), "envelope_run_sig": sig.hex(), "envelope_run_item_8": dumps({"envelope": item, "sig": sig}).hex()}

def make(out, nparents):
    identity, device = SigningKey.generate(), SigningKey.generate()
    cert = certificate(identity, device, bytes(PrivateKey.generate().public_key), "python-peer", 1_800_000_000_000)
    parents = [cid_of(os.urandom(8)) for _ in range(nparents)]
    body = {"text": "made in Python", "n": -7, "blob": b"\x00\xff", "list": [1, None, True], "ref": link(parents[0]) if parents else None}
    payload, container = receipt(device, identity, cert, os.urandom(16), "app.note", 3, parents, 1_800_000_000_001 << 16 | 2, body)
    with open(out, "wb") as f:
        f.write(dumps(container))
    return {"cid": str(cid_of(payload)), "identity": bytes(identity.verify_key).hex(), "device": bytes(device.verify_key).hex(),
            "parents": [str(p) for p in sorted(parents, key=bytes)]}

def verify(path):
    container = cbor2.loads(open(path, "rb").read())
    assert set(container) == {"receipt", "sig", "certificate"}, "container keys"
    payload, cert = container["receipt"], container["certificate"]
    assert dumps(cbor2.loads(payload)) == payload, "payload is not canonical"
    fields, cert_fields = cbor2.loads(payload), cbor2.loads(cert["certificate"])
    assert set(fields) == {"v", "group", "type", "author", "identity", "counter", "parents", "hlc", "body"}
    reason = None
    try:
        VerifyKey(cert_fields["identity"]).verify(CTX_CERT + cert["certificate"], cert["sig"])
        assert cert_fields["device"] == fields["author"] and cert_fields["identity"] == fields["identity"], "certificate mismatch"
        VerifyKey(fields["author"]).verify(CTX_RECEIPT + payload, container["sig"])
    except (BadSignatureError, AssertionError) as e:
        reason = str(e) or type(e).__name__
    body = fields["body"]
    return {"cid": str(cid_of(payload)), "valid": reason is None, "reason": reason, "type": fields["type"],
            "counter": fields["counter"], "body": body if isinstance(body, (dict, list, str, int, type(None))) and not isinstance(body, bytes) else repr(body)}

cmd = sys.argv[1]
if cmd == "golden":
    print(json.dumps(golden()))
elif cmd == "golden-run":
    print(json.dumps(golden_run()))
elif cmd == "make":
    print(json.dumps(make(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)))
elif cmd == "verify":
    print(json.dumps(verify(sys.argv[2]), default=repr))
else:
    raise SystemExit("unknown command " + cmd)
