"""Independent reference for the pairing key schedule (docs/PROTOCOL.md §20.3 CI, §20.4 commit,
§20.5 keys): hashlib/hmac (OpenSSL) and the `cryptography` package compute, from ISK and the
messages, what PeerlogPairing computed. Reads a JSON list of cases on stdin, writes a JSON list of
results (hex strings, and the confirmation text)."""
import hashlib, hmac, json, sys
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305


def prepend_len(data):
    n, out = len(data), bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out) + data


def lv_cat(*parts):
    return b"".join(prepend_len(p) for p in parts)


def run(case):
    h = bytes.fromhex
    isk = h(case["isk"])
    th = hashlib.sha256(
        lv_cat(b"peerlog-pair/v1 transcript", h(case["open"]), h(case["start"]), h(case["yb"]))).digest()

    def key(label):
        return hmac.new(isk, label.encode(), hashlib.sha512).digest()[:32]

    def tag(label):
        return hmac.new(key(label), th, hashlib.sha256).digest()

    digits = int.from_bytes(tag("confirmation")[:8], "big") % 1_000_000
    text = "%06d" % digits
    nonce = bytes(12)
    payload = h(case["payload"])
    return {
        "ci": lv_cat(b"peerlog-pair/v1", case["purpose"].encode(), str(case["nameplate"]).encode()).hex(),
        "commit": hashlib.sha256(h(case["yb"])).hexdigest(),
        "th": th.hex(),
        "host_confirm": tag("host confirm").hex(),
        "guest_confirm": tag("guest confirm").hex(),
        "guest_box": ChaCha20Poly1305(key("guest box")).encrypt(nonce, payload, th).hex(),
        "host_box": ChaCha20Poly1305(key("host box")).encrypt(nonce, payload, th).hex(),
        "confirmation": text[:3] + " " + text[3:],
    }


print(json.dumps([run(c) for c in json.load(sys.stdin)]))
