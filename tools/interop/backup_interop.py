"""An independent implementation of Peerlog's identity backup file (docs/PROTOCOL.md §21),
written from the spec with cbor2 (canonical) and PyNaCl.

  make OUT PASSPHRASE   seal a fresh identity key (3 passes over 128 MiB) into OUT; print JSON {identity}
  open FILE PASSPHRASE  open FILE; print JSON {identity, seed_identity, ops, mem} (hex public keys)
"""
import json, os, sys, time
import cbor2
import nacl.bindings as sodium
from nacl import pwhash
from nacl.signing import SigningKey

KIND = "peerlog-identity-backup"

def dumps(value):
    # Text keys only: cbor2's canonical (RFC 7049) order is RFC 8949's deterministic order for them.
    return cbor2.dumps(value, canonical=True)

def derive(passphrase, kdf):
    return pwhash.argon2id.kdf(32, passphrase.encode(), kdf["salt"], opslimit=kdf["ops"], memlimit=kdf["mem"])

def make(out, passphrase):
    key = SigningKey.generate()
    header = {"v": 1, "kind": KIND, "identity": bytes(key.verify_key), "created": int(time.time() * 1000),
              "kdf": {"alg": "argon2id13", "ops": 3, "mem": 128 << 20, "salt": os.urandom(16)},
              "aead": "xchacha20poly1305-ietf", "nonce": os.urandom(24)}
    ct = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(
        bytes(key), dumps(header), header["nonce"], derive(passphrase, header["kdf"]))
    with open(out, "xb") as f:
        f.write(dumps(dict(header, ct=ct)))
    os.chmod(out, 0o600)
    return {"identity": bytes(key.verify_key).hex()}

def open_backup(path, passphrase):
    data = open(path, "rb").read()
    assert len(data) <= 1024, "over 1,024 bytes"
    value = cbor2.loads(data)
    assert dumps(value) == data, "not deterministic CBOR"
    assert value["kind"] == KIND and value["v"] == 1
    kdf = value["kdf"]
    assert kdf["alg"] == "argon2id13" and value["aead"] == "xchacha20poly1305-ietf"
    assert 1 <= kdf["ops"] <= 10 and 8192 <= kdf["mem"] <= 1 << 30 and kdf["mem"] % 1024 == 0
    header = {k: v for k, v in value.items() if k != "ct"}
    seed = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
        value["ct"], dumps(header), value["nonce"], derive(passphrase, kdf))
    return {"identity": value["identity"].hex(), "seed_identity": bytes(SigningKey(seed).verify_key).hex(),
            "ops": kdf["ops"], "mem": kdf["mem"]}

if __name__ == "__main__":
    command, path, passphrase = sys.argv[1], sys.argv[2], sys.argv[3]
    print(json.dumps(make(path, passphrase) if command == "make" else open_backup(path, passphrase)))
