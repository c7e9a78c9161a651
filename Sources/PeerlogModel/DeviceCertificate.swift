import PeerlogCrypto
import PeerlogEncoding

/// A device certificate: the identity's signature binding a device's Ed25519 signing key
/// and X25519 Noise static key, with a device name and creation time.
///
/// Wire form (docs/PROTOCOL.md §Certificate): `{"certificate": bstr(payload), "sig": bstr(64)}`
/// where payload is `{"v": 1, "identity", "device", "noise", "name", "created"}`.
public struct DeviceCertificate: Hashable, Sendable {
    /// Longest device name in UTF-8 bytes; names are 1...64 bytes (docs/PROTOCOL.md §3.1).
    public static let maxNameBytes = 64
    /// Largest encoded certificate container accepted.
    public static let maxEncodedBytes = 512

    /// The identity that signed this certificate (payload `identity`).
    public let identity: IdentityID
    /// The device id: the device's signing key (payload `device`).
    public let device: DeviceID
    /// The device's Noise static key (payload `noise`); the channel checks it against the
    /// handshake's remote static key (docs/PROTOCOL.md §14.3).
    public let noiseKey: X25519.PublicKey
    /// The device name shown to people, 1...`maxNameBytes` bytes of UTF-8 (payload `name`).
    public let name: String
    /// Milliseconds since the Unix epoch.
    public let createdAt: UInt64
    /// The exact signed payload bytes.
    public let payload: [UInt8]
    /// The identity's 64-byte Ed25519 signature over `peerlog/certificate/v1` ‖ 0x00 ‖ `payload`;
    /// checked by `verify()`.
    public let signature: [UInt8]
    /// CID of the payload, hashed once when parsed: the ingest keys its certificate checks and
    /// its signatures checked ahead by it, several times per receipt.
    public let cid: CID

    /// Issues a certificate for a device, signed by the identity key.
    public static func issue(
        identityKey: Ed25519.PrivateKey, device: DeviceID, noiseKey: X25519.PublicKey, name: String, createdAt: UInt64
    ) throws -> DeviceCertificate {
        guard !name.isEmpty, name.utf8.count <= maxNameBytes else {
            throw ModelError(.fieldOutOfRange, "device name must be 1...\(maxNameBytes) bytes of UTF-8")
        }
        let payload = CBOREncoder.encode(
            .textMap([
                "v": 1,
                "identity": .bytes(identityKey.publicKey.rawRepresentation),
                "device": .bytes(device.bytes),
                "noise": .bytes(noiseKey.rawRepresentation),
                "name": .text(name),
                "created": .unsigned(createdAt),
            ]))
        let sig = identityKey.signature(for: SignatureContext.certificate.message(for: payload))
        return try DeviceCertificate(payload: payload, signature: sig)
    }

    /// Parses a signed payload (does not verify the signature: see `verify()`).
    public init(payload: [UInt8], signature: [UInt8]) throws {
        let what = "certificate"
        let map = try Fields.decode(payload, what: what, decoder: Fields.payloadDecoder(maxBytes: Self.maxEncodedBytes))
        try Fields.requireKeys(map, ["v", "identity", "device", "noise", "name", "created"], what: what)
        try Fields.version(map, what: what)
        identity = try IdentityID(bytes: try Fields.bytes(map, "identity", what: what, count: 32))
        device = try DeviceID(bytes: try Fields.bytes(map, "device", what: what, count: 32))
        noiseKey = try X25519.PublicKey(try Fields.bytes(map, "noise", what: what, count: 32))
        name = try Fields.text(map, "name", what: what, maxBytes: Self.maxNameBytes)
        createdAt = try Fields.uint(map, "created", what: what)
        try Fields.requireSignatureLength(signature, of: "certificate")
        self.payload = payload
        self.signature = signature
        cid = CID(hashing: payload)
    }

    /// Parses the container form.
    public init(encoded: [UInt8]) throws {
        let c = try Fields.container(encoded, payloadKey: "certificate", maxBytes: Self.maxEncodedBytes)
        try self.init(payload: c.payload, signature: c.signature)
    }

    /// The container `{"certificate": bstr(payload), "sig": bstr(64)}` as a CBOR value, as a
    /// receipt container embeds it (docs/PROTOCOL.md §3.2).
    public var containerValue: CBOR { .textMap(["certificate": .bytes(payload), "sig": .bytes(signature)]) }
    /// The container's deterministic bytes: the `device.cert` file and the handshake payload
    /// (docs/PROTOCOL.md §3.1, §14.3).
    public var encoded: [UInt8] { CBOREncoder.encode(containerValue) }
    /// Checks the identity's signature.
    public func verify() -> VerificationResult {
        identity.publicKey.isValidSignature(signature, for: SignatureContext.certificate.message(for: payload))
            ? .valid : .invalid("certificate signature does not verify against identity \(identity.short)")
    }

    /// Decoded payload, for display.
    public var payloadValue: CBOR { (try? CBORDecoder.decodeStrict(payload)) ?? .null }
}
