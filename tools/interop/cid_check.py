"""Independent CID reference (multiformats): for each hex payload, the CIDv1 dag-cbor sha2-256
in base32; also base32 (RFC 4648, lower-case, unpadded) via the standard library."""
import base64, json, sys
from multiformats import CID, multihash

out = []
for h in json.load(sys.stdin):
    data = bytes.fromhex(h)
    cid = CID("base32", 1, "dag-cbor", multihash.digest(data, "sha2-256"))
    out.append({"cid": str(cid), "base32": base64.b32encode(data).decode().lower().rstrip("=")})
print(json.dumps(out))
