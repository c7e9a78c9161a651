"""Independent CBOR reference (cbor2, canonical mode).

Modes (stdin/stdout JSON):
  reencode  list of hex items -> list of hex: cbor2.loads then cbor2.dumps(canonical=True)
  generate  {"seed": n, "count": n} -> list of hex of random values encoded by cbor2 canonically,
            restricted to map keys where RFC 7049 length-first order equals RFC 8949 bytewise order
  order     list of hex items (maps) -> list of hex: how cbor2 canonical orders the same keys
"""
import json, random, sys
import cbor2

def gen(rng, depth):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0: return rng.choice([0, 1, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1, rng.randrange(2**64)])
    if kind == 1: return -1 - rng.choice([0, 23, 24, 255, 256, 2**32, 2**64 - 1, rng.randrange(2**64)])
    if kind == 2: return bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 23, 24, 300])))
    if kind == 3: return "".join(rng.choice("aé€𝄞z\"\\\n") for _ in range(rng.choice([0, 1, 5, 30])))
    if kind == 4: return rng.choice([True, False, None])
    if kind == 5: return rng.choice([0.0, -0.0, 1.5, 1.1, 65504.0, 100000.0, 3.4028234663852886e38, 1e300, float("inf"), -4.0, 5.960464477539063e-8])
    if kind == 6: return [gen(rng, depth + 1) for _ in range(rng.randrange(5))]
    if kind == 7: return cbor2.CBORTag(rng.choice([0, 1, 42, 1000]), gen(rng, depth + 1))
    # Keys whose two canonical orders agree: small integers and text strings.
    keys = set()
    for _ in range(rng.randrange(5)):
        keys.add(rng.randrange(-24, 24) if rng.random() < 0.4 else "".join(rng.choice("abcxyz") for _ in range(rng.randrange(30))))
    return {k: gen(rng, depth + 1) for k in keys}

mode = sys.argv[1]
data = json.load(sys.stdin)
if mode == "reencode":
    print(json.dumps([cbor2.dumps(cbor2.loads(bytes.fromhex(h)), canonical=True).hex() for h in data]))
elif mode == "generate":
    rng = random.Random(data["seed"])
    print(json.dumps([cbor2.dumps(gen(rng, 0), canonical=True).hex() for _ in range(data["count"])]))
elif mode == "order":
    print(json.dumps([cbor2.dumps(cbor2.loads(bytes.fromhex(h)), canonical=True).hex() for h in data]))
else:
    raise SystemExit("unknown mode " + mode)
