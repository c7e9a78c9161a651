"""An independent implementation of Peerlog's group encryption formats (docs/PROTOCOL.md §22),
written from the spec with cbor2 (canonical), hashlib's BLAKE2b and PyNaCl (libsodium's X25519
and XChaCha20-Poly1305). Reads a JSON list of cases on stdin, writes a JSON list of results.

Each case has "op":
  open_body   {key, group, type, author, counter, body}        -> {plaintext} (hex CBOR) or {error}
  seal_body   {key, group, type, author, counter, plaintext}   -> {body} (hex CBOR of {k, n, c})
  open_sealed {secret, group, key_id, sealed}                  -> {key} (hex) or {error}
  seal_key    {key, group, device, noise}                      -> {sealed} (hex CBOR of {device, epk, box})
  key_id      {key}                                            -> {key_id}
All byte values are hex; `body`, `sealed` and `plaintext` are hex of their CBOR encodings.
"""
import hashlib, json, os, sys
import cbor2
import nacl.bindings as sodium


def dumps(value):
    # Text keys only: cbor2's canonical (RFC 7049) order is RFC 8949's deterministic order for them.
    return cbor2.dumps(value, canonical=True)


def key_id(key):
    return hashlib.blake2b(b"peerlog/epoch-key-id/v1", digest_size=16, key=key).digest()


def body_ad(c, kid):
    return dumps(["peerlog/body/v1", bytes.fromhex(c["group"]), c["type"], bytes.fromhex(c["author"]),
                  c["counter"], kid])


def open_body(c):
    key = bytes.fromhex(c["key"])
    body = cbor2.loads(bytes.fromhex(c["body"]))
    assert sorted(body) == ["c", "k", "n"], "not an encrypted body"
    assert body["k"] == key_id(key), "sealed under another epoch key"
    plain = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(body["c"], body_ad(c, body["k"]), body["n"], key)
    return {"plaintext": plain.hex()}


def seal_body(c):
    key = bytes.fromhex(c["key"])
    kid, nonce = key_id(key), os.urandom(24)
    ct = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(bytes.fromhex(c["plaintext"]), body_ad(c, kid), nonce, key)
    return {"body": dumps({"k": kid, "n": nonce, "c": ct}).hex()}


def wrap_key(shared, epk, recipient):
    return hashlib.blake2b(b"peerlog/seal-epoch-key/v1" + epk + recipient, digest_size=32, key=shared).digest()


def sealed_ad(group, kid, device):
    return dumps(["peerlog/epoch-key/v1", group, kid, device])


def open_sealed(c):
    secret = bytes.fromhex(c["secret"])
    group, kid = bytes.fromhex(c["group"]), bytes.fromhex(c["key_id"])
    sealed = cbor2.loads(bytes.fromhex(c["sealed"]))
    assert sorted(sealed) == ["box", "device", "epk"], "not a sealed epoch key"
    shared = sodium.crypto_scalarmult(secret, sealed["epk"])
    assert shared != bytes(32), "low-order ephemeral key"
    wrap = wrap_key(shared, sealed["epk"], sodium.crypto_scalarmult_base(secret))
    key = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
        sealed["box"], sealed_ad(group, kid, sealed["device"]), bytes(24), wrap)
    assert key_id(key) == kid, "opens to another key than its id names"
    return {"key": key.hex()}


def seal_key(c):
    key, group = bytes.fromhex(c["key"]), bytes.fromhex(c["group"])
    device, noise = bytes.fromhex(c["device"]), bytes.fromhex(c["noise"])
    e = os.urandom(32)
    epk = sodium.crypto_scalarmult_base(e)
    wrap = wrap_key(sodium.crypto_scalarmult(e, noise), epk, noise)
    box = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(key, sealed_ad(group, key_id(key), device), bytes(24), wrap)
    return {"sealed": dumps({"device": device, "epk": epk, "box": box}).hex()}


OPS = {"open_body": open_body, "seal_body": seal_body, "open_sealed": open_sealed, "seal_key": seal_key,
       "key_id": lambda c: {"key_id": key_id(bytes.fromhex(c["key"])).hex()}}


def run(case):
    try:
        return OPS[case["op"]](case)
    except Exception as e:  # a refusal is a result the caller checks, not a crash
        return {"error": "%s: %s" % (type(e).__name__, e)}


if __name__ == "__main__":
    print(json.dumps([run(c) for c in json.load(sys.stdin)]))
