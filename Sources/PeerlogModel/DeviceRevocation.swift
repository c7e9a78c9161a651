import PeerlogCrypto
import PeerlogEncoding

/// A device revocation: the identity's signature saying one of its devices is no longer it
/// (a lost or stolen laptop). Peers that hold it refuse the device at the handshake and its
/// later receipts (docs/PROTOCOL.md §3.6).
///
/// Wire form: `{"revocation": bstr(payload), "sig": bstr(64)}` where payload is
/// `{"v": 1, "identity": bstr(32), "device": bstr(32), "created": uint}`, signed by the
/// identity key over `peerlog/revocation/v1` ‖ 0x00 ‖ payload.
public struct DeviceRevocation: Hashable, Sendable {
    /// Largest encoded revocation container accepted.
    public static let maxEncodedBytes = 256

    /// The identity that revoked its device (payload `identity`).
    public let identity: IdentityID
    /// The revoked device (payload `device`).
    public let device: DeviceID
    /// When it was revoked, milliseconds since the Unix epoch (payload `created`).
    public let createdAt: UInt64
    /// The exact signed payload bytes.
    public let payload: [UInt8]
    /// The identity's 64-byte Ed25519 signature; checked by `verify()`.
    public let signature: [UInt8]

    /// Signs a revocation of `device` with the identity key.
    public static func issue(
        identityKey: Ed25519.PrivateKey, device: DeviceID, createdAt: UInt64
    ) throws
        -> DeviceRevocation
    {
        let payload = CBOREncoder.encode(
            .textMap([
                "v": 1,
                "identity": .bytes(identityKey.publicKey.rawRepresentation),
                "device": .bytes(device.bytes),
                "created": .unsigned(createdAt),
            ]))
        let sig = identityKey.signature(for: SignatureContext.revocation.message(for: payload))
        return try DeviceRevocation(payload: payload, signature: sig)
    }

    /// Parses a signed payload (does not verify the signature: see `verify()`).
    public init(payload: [UInt8], signature: [UInt8]) throws {
        let what = "revocation"
        let map = try Fields.decode(payload, what: what, decoder: Fields.payloadDecoder(maxBytes: Self.maxEncodedBytes))
        try Fields.requireKeys(map, ["v", "identity", "device", "created"], what: what)
        try Fields.version(map, what: what)
        identity = try IdentityID(bytes: try Fields.bytes(map, "identity", what: what, count: 32))
        device = try DeviceID(bytes: try Fields.bytes(map, "device", what: what, count: 32))
        createdAt = try Fields.uint(map, "created", what: what)
        try Fields.requireSignatureLength(signature, of: "revocation")
        self.payload = payload
        self.signature = signature
    }

    /// Parses the container form (does not verify: see `verify()`).
    public init(encoded: [UInt8]) throws {
        let c = try Fields.container(encoded, payloadKey: "revocation", maxBytes: Self.maxEncodedBytes)
        try self.init(payload: c.payload, signature: c.signature)
    }

    /// The container's deterministic bytes, as stored and sent.
    public var encoded: [UInt8] {
        CBOREncoder.encode(.textMap(["revocation": .bytes(payload), "sig": .bytes(signature)]))
    }

    /// CID of the payload (names the revocation in tools; it never travels).
    public var cid: CID { CID(hashing: payload) }
    /// Decoded payload, for display.
    public var payloadValue: CBOR { (try? CBORDecoder.decodeStrict(payload)) ?? .null }

    /// Checks the identity's signature.
    public func verify() -> VerificationResult {
        identity.publicKey.isValidSignature(signature, for: SignatureContext.revocation.message(for: payload))
            ? .valid : .invalid("revocation signature does not verify against identity \(identity.short)")
    }

    /// The reason peers give for refusing the device (handshake, receipts, closed connections):
    /// `device <id> was revoked by identity <id> at <ISO 8601 time>`.
    public var reason: String {
        "device \(device) was revoked by identity \(identity) at \(WallClock.iso8601(millis: createdAt))"
    }
}
