"""Independent reference for the crypto tests: hashlib/hmac (OpenSSL) and the `cryptography`
package compute what Peerlog's libsodium wrapper computed. Reads a JSON list of cases on stdin,
writes a JSON list of hex results."""
import hashlib, hmac, json, sys
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

def run(case):
    h = bytes.fromhex
    op = case["op"]
    if op == "sha256":
        return hashlib.sha256(h(case["data"])).hexdigest()
    if op == "sha512":
        return hashlib.sha512(h(case["data"])).hexdigest()
    if op == "blake2b":
        return hashlib.blake2b(h(case["data"]), digest_size=case["length"], key=h(case.get("key", ""))).hexdigest()
    if op.startswith("hmac-"):
        digest = {"hmac-sha256": hashlib.sha256, "hmac-sha512": hashlib.sha512, "hmac-blake2b": hashlib.blake2b}[op]
        return hmac.new(h(case["key"]), h(case["data"]), digest).hexdigest()
    if op == "chachapoly":
        return ChaCha20Poly1305(h(case["key"])).encrypt(h(case["nonce"]), h(case["data"]), h(case["ad"])).hex()
    raise SystemExit("unknown op " + op)

print(json.dumps([run(c) for c in json.load(sys.stdin)]))
