import PeerlogCrypto
import PeerlogEncoding

/// A sequencer envelope: the sequencer's signed statement that receipt `cid` is number `seq`
/// in `group`'s committed order.
///
/// Payload (docs/PROTOCOL.md §Envelope): `{"v": 1, "group", "seq", "cid", "term", "sequencer",
/// "received_at"}`. Wire form: `{"envelope": bstr(payload), "sig": bstr(64)}`.
public struct Envelope: Hashable, Sendable {
    public static let maxEncodedBytes = 512

    public let group: GroupID
    /// 1, 2, 3 … per group, contiguous.
    public let seq: UInt64
    public let receipt: CID
    /// Election term (0 for solo and relay sequencers).
    public let term: UInt64
    /// The Ed25519 key of the sequencer (a device or a relay).
    public let sequencer: DeviceID
    /// Milliseconds since the Unix epoch when the sequencer took the receipt.
    public let receivedAt: UInt64
    public let payload: [UInt8]
    public let signature: [UInt8]

    public static func sign(group: GroupID, seq: UInt64, receipt: CID, term: UInt64, receivedAt: UInt64, key: Ed25519.PrivateKey) throws -> Envelope {
        let payload = CBOREncoder.encode(.textMap([
            "v": 1,
            "group": .bytes(group.bytes),
            "seq": .unsigned(seq),
            "cid": receipt.cborLink,
            "term": .unsigned(term),
            "sequencer": .bytes(key.publicKey.rawRepresentation),
            "received_at": .unsigned(receivedAt),
        ]))
        return try Envelope(payload: payload, signature: key.signature(for: SignatureContext.envelope.message(for: payload)))
    }

    public init(payload: [UInt8], signature: [UInt8]) throws {
        let what = "envelope"
        let map = try Fields.decode(payload, what: what, decoder: Fields.payloadDecoder(maxBytes: Self.maxEncodedBytes))
        try Fields.requireKeys(map, ["v", "group", "seq", "cid", "term", "sequencer", "received_at"], what: what)
        try Fields.version(map, what: what)
        group = try GroupID(bytes: try Fields.bytes(map, "group", what: what, count: GroupID.length))
        seq = try Fields.uint(map, "seq", what: what)
        guard seq >= 1 else { throw ModelError(.fieldOutOfRange, "envelope.seq must be at least 1") }
        do { receipt = try CID(cborLink: map["cid"]!) } catch { throw ModelError(.wrongShape, "envelope.cid: \(error)") }
        term = try Fields.uint(map, "term", what: what)
        sequencer = try DeviceID(bytes: try Fields.bytes(map, "sequencer", what: what, count: 32))
        receivedAt = try Fields.uint(map, "received_at", what: what)
        guard signature.count == Ed25519.signatureLength else { throw ModelError(.wrongShape, "envelope signature must be 64 bytes") }
        self.payload = payload
        self.signature = signature
    }

    public init(encoded: [UInt8]) throws {
        let c = try Fields.container(encoded, payloadKey: "envelope", maxBytes: Self.maxEncodedBytes)
        try self.init(payload: c.payload, signature: c.signature)
    }

    public var containerValue: CBOR { .textMap(["envelope": .bytes(payload), "sig": .bytes(signature)]) }
    public var encoded: [UInt8] { CBOREncoder.encode(containerValue) }

    /// Checks the sequencer's signature. Whether that sequencer is the group's authority is the replica's question.
    public func verify() -> VerificationResult {
        sequencer.publicKey.isValidSignature(signature, for: SignatureContext.envelope.message(for: payload))
            ? .valid : .invalid("envelope signature does not verify against sequencer \(sequencer.short)")
    }

    public var payloadValue: CBOR { (try? CBORDecoder.decodeStrict(payload)) ?? .null }
}
