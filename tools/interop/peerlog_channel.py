"""An independent implementation of the Peerlog secure channel (docs/PROTOCOL.md §14),
initiator side, with noiseprotocol (Noise XX), cbor2 and PyNaCl.

  --emit-certificate [--seed HEX] [--name N] [--created MS]
        print {"certificate": hex, "identity": id, "device": id} for a (fresh or seeded) device
  connect HOST PORT [--network ID] [--seed HEX] [--send TEXT]... [--expect N] [--close REASON]
        handshake as initiator, send each TEXT, print N received messages (hex) and the peer, close

Seeded keys match LocalDevice.deterministic(seed:name:createdAt:) in Swift.
"""
import argparse, base64, hashlib, json, socket, struct, sys, time
import cbor2
from nacl.signing import SigningKey, VerifyKey
from nacl.public import PrivateKey
from noise.connection import NoiseConnection, Keypair

PROTOCOL = b"Noise_XX_25519_ChaChaPoly_BLAKE2b"
CTX_CERT = b"peerlog/certificate/v1\x00"
CTX_DEVICE_NOISE = b"peerlog/device-noise/v1\x00"
MAX_FRAME = 65535
TAG = 16
MAX_RECORD_DATA = MAX_FRAME - TAG - 1  # 65518
MESSAGE, FRAGMENT, LAST_FRAGMENT, CLOSE = 0, 1, 2, 3
MAX_CERTIFICATE = 512
MAX_HANDSHAKE_PAYLOAD = 593  # §14.3: {"cert": bstr(≤ 512), "proof": bstr(64)}


def key_id(public_key: bytes) -> str:
    """Text form of an identity or device id: "b" + lowercase RFC 4648 base32, no padding."""
    return "b" + base64.b32encode(public_key).decode().lower().rstrip("=")


def key_bytes(text: str) -> bytes:
    """The bytes of an id's text form ("b" + lowercase base32, no padding): keys, groups."""
    body = text[1:].upper()
    return base64.b32decode(body + "=" * (-len(body) % 8))


def dumps(value):
    # Peerlog maps have text keys only; for those cbor2's canonical order is Peerlog's deterministic order.
    return cbor2.dumps(value, canonical=True)


class Device:
    """Identity key, device signing key, X25519 Noise static key and the certificate binding them."""

    def __init__(self, identity: SigningKey, device: SigningKey, noise: PrivateKey, name="python-peer", created=None,
                 claimed_device: bytes = None):
        """`claimed_device`: a hostile peer's certificate names that device id instead of its own
        (its identity signs it; its proof can only be signed with its own device key, §14.3)."""
        self.identity, self.device, self.noise = identity, device, noise
        created = int(time.time() * 1000) if created is None else created
        named = claimed_device if claimed_device is not None else bytes(device.verify_key)
        payload = dumps({"v": 1, "identity": bytes(identity.verify_key), "device": named,
                         "noise": bytes(noise.public_key), "name": name, "created": created})
        self.certificate = dumps({"certificate": payload, "sig": identity.sign(CTX_CERT + payload).signature})
        # §14.3: the device key's proof over the identity and the Noise key, beside the certificate.
        proof = device.sign(CTX_DEVICE_NOISE + bytes(identity.verify_key) + bytes(noise.public_key)).signature
        self.handshake_payload = dumps({"cert": self.certificate, "proof": proof})

    @classmethod
    def generate(cls, name="python-peer", created=None):
        return cls(SigningKey.generate(), SigningKey.generate(), PrivateKey.generate(), name, created)

    @classmethod
    def deterministic(cls, seed: bytes, name: str, created: int, claimed_device: bytes = None):
        def derive(label):
            return hashlib.blake2b(b"peerlog-test-key/" + label.encode() + b"/" + seed, digest_size=32).digest()
        return cls(SigningKey(derive("identity")), SigningKey(derive("device")), PrivateKey(derive("noise")), name, created,
                   claimed_device)

    @property
    def identity_id(self):
        return key_id(bytes(self.identity.verify_key))

    @property
    def device_id(self):
        return key_id(bytes(self.device.verify_key))


class ChannelError(Exception):
    pass


class ChannelClosed(ChannelError):
    """The peer sent a close record; `reason` is its text."""

    def __init__(self, reason):
        super().__init__("closed by peer: " + reason)
        self.reason = reason


def verify_handshake_payload(payload: bytes, remote_static: bytes) -> dict:
    """§14.3: decodes {"cert", "proof"}, checks the certificate, then the device key's proof."""
    if len(payload) > MAX_HANDSHAKE_PAYLOAD:
        raise ChannelError("handshake payload too large")
    outer = cbor2.loads(payload)
    if not isinstance(outer, dict) or set(outer) != {"cert", "proof"}:
        raise ChannelError("malformed handshake payload (a version before the device key's proof?)")
    fields = verify_certificate(outer["cert"], remote_static)
    try:
        VerifyKey(fields["device"]).verify(CTX_DEVICE_NOISE + fields["identity"] + fields["noise"], outer["proof"])
    except Exception:
        raise ChannelError("device %s: the device key's proof does not verify" % key_id(fields["device"]))
    return fields


def verify_certificate(container: bytes, remote_static: bytes) -> dict:
    """Decodes and checks a certificate container; returns its payload fields."""
    if len(container) > MAX_CERTIFICATE:
        raise ChannelError("certificate too large")
    outer = cbor2.loads(container)
    if not isinstance(outer, dict) or set(outer) != {"certificate", "sig"}:
        raise ChannelError("malformed certificate container")
    fields = cbor2.loads(outer["certificate"])
    if set(fields) != {"v", "identity", "device", "noise", "name", "created"} or fields["v"] != 1:
        raise ChannelError("malformed certificate payload")
    who = "device " + key_id(fields["device"])
    try:
        VerifyKey(fields["identity"]).verify(CTX_CERT + outer["certificate"], outer["sig"])
    except Exception:
        raise ChannelError(who + ": certificate signature does not verify")
    if fields["noise"] != remote_static:
        raise ChannelError(who + ": static key does not match its certificate")
    return fields


class Channel:
    """A connected, established channel (initiator side)."""

    def __init__(self, sock, noise, peer, max_message=4_194_304, rekey_interval=4096):
        self.sock, self.noise, self.peer = sock, noise, peer
        self.max_message, self.rekey_interval = max_message, rekey_interval
        self.frames_out = self.frames_in = 0
        self.closed = False

    # Framing: 2-byte big-endian length (1...65535), then the body.
    @staticmethod
    def _write_frame(sock, body):
        assert 1 <= len(body) <= MAX_FRAME
        sock.sendall(struct.pack(">H", len(body)) + bytes(body))

    @staticmethod
    def _read_exact(sock, n):
        out = bytearray()
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ChannelError("truncated: connection ended without a close record")
            out += chunk
        return bytes(out)

    @classmethod
    def _read_frame(cls, sock, limit=MAX_FRAME):
        (length,) = struct.unpack(">H", cls._read_exact(sock, 2))
        if length == 0 or length > limit:
            raise ChannelError("invalid frame length %d" % length)
        return cls._read_exact(sock, length)

    def _seal(self, record_type, data):
        body = self.noise.encrypt(bytes([record_type]) + bytes(data))
        self.frames_out += 1
        if self.rekey_interval and self.frames_out % self.rekey_interval == 0:
            self.noise.rekey_outbound_cipher()
        return body

    def send(self, message: bytes):
        if not message or len(message) > self.max_message:
            raise ChannelError("message must be 1...%d bytes" % self.max_message)
        if len(message) <= MAX_RECORD_DATA:
            self._write_frame(self.sock, self._seal(MESSAGE, message))
            return
        for start in range(0, len(message), MAX_RECORD_DATA):
            end = min(start + MAX_RECORD_DATA, len(message))
            self._write_frame(self.sock, self._seal(LAST_FRAGMENT if end == len(message) else FRAGMENT, message[start:end]))

    def recv(self) -> bytes:
        """The next application message; raises ChannelClosed on the peer's close record."""
        parts = bytearray()
        while True:
            body = self._read_frame(self.sock)
            if len(body) <= TAG:
                raise ChannelError("transport frame too short")
            plaintext = self.noise.decrypt(body)
            self.frames_in += 1
            if self.rekey_interval and self.frames_in % self.rekey_interval == 0:
                self.noise.rekey_inbound_cipher()
            kind, data = plaintext[0], plaintext[1:]
            if kind == CLOSE:
                self.closed = True
                raise ChannelClosed(data.decode("utf-8", "replace"))
            if kind == MESSAGE and not parts and data:
                return data
            if kind in (FRAGMENT, LAST_FRAGMENT) and data and (parts or kind == FRAGMENT):
                parts += data
                if len(parts) > self.max_message:
                    raise ChannelError("message exceeds %d bytes" % self.max_message)
                if kind == LAST_FRAGMENT:
                    return bytes(parts)
                continue
            raise ChannelError("invalid record type 0x%02x here" % kind)

    def close(self, reason=""):
        if not self.closed:
            self.closed = True
            try:
                self._write_frame(self.sock, self._seal(CLOSE, reason.encode()[:MAX_RECORD_DATA]))
            except OSError:
                pass
        self.sock.close()


def handshake(sock, device: Device, network_id="", authorize=None, **options) -> Channel:
    """Runs the XX handshake as initiator over a connected socket."""
    noise = NoiseConnection.from_name(PROTOCOL)
    noise.set_as_initiator()
    noise.set_keypair_from_private_bytes(Keypair.STATIC, bytes(device.noise))
    noise.set_prologue(b"peerlog/1\x00" + network_id.encode())
    noise.start_handshake()
    Channel._write_frame(sock, noise.write_message(b""))
    try:
        payload = bytes(noise.read_message(Channel._read_frame(sock)))
    except ChannelError:
        raise
    except Exception as e:
        raise ChannelError("handshake failed: decrypt failed (wrong network id or corrupted message): %s" % e)
    remote_static = noise.noise_protocol.handshake_state.rs.public_bytes
    peer = verify_handshake_payload(payload, remote_static)
    if authorize is not None and not authorize(peer):
        sock.close()  # no msg3: the responder never learns who we are
        raise ChannelError("device %s: identity not authorized" % key_id(peer["device"]))
    Channel._write_frame(sock, noise.write_message(device.handshake_payload))
    return Channel(sock, noise, peer, **options)


def connect(host, port, network_id="", device=None, authorize=None, timeout=10, **options) -> Channel:
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        return handshake(sock, device or Device.generate(), network_id, authorize, **options)
    except BaseException:
        sock.close()
        raise


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--emit-certificate", action="store_true")
    parser.add_argument("--seed", help="hex seed, as LocalDevice.deterministic")
    parser.add_argument("--name", default="python-peer")
    parser.add_argument("--created", type=int, default=1_800_000_000_000)
    parser.add_argument("--network", default="")
    parser.add_argument("--send", action="append", default=[])
    parser.add_argument("--expect", type=int, default=0)
    parser.add_argument("--close", default="bye")
    parser.add_argument("--claim-device", help="a device id (b…) for the certificate to name instead of ours: a forgery")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args(argv)
    claimed = key_bytes(args.claim_device) if args.claim_device else None
    if args.seed:
        device = Device.deterministic(bytes.fromhex(args.seed), args.name, args.created, claimed)
    else:
        device = Device(SigningKey.generate(), SigningKey.generate(), PrivateKey.generate(), args.name, args.created,
                        claimed)
    if args.emit_certificate:
        print(json.dumps({"certificate": device.certificate.hex(), "identity": device.identity_id, "device": device.device_id}))
        return
    if len(args.command) == 3 and args.command[0] == "connect":
        channel = connect(args.command[1], int(args.command[2]), args.network, device)
        print(json.dumps({"peer_identity": key_id(channel.peer["identity"]), "peer_device": key_id(channel.peer["device"]),
                          "identity": device.identity_id}), flush=True)
        for text in args.send:
            channel.send(text.encode())
        for _ in range(args.expect):
            print(json.dumps({"message": channel.recv().hex()}), flush=True)
        channel.close(args.close)
        return
    parser.error("use --emit-certificate or: connect HOST PORT")


if __name__ == "__main__":
    main(sys.argv[1:])
