import PeerlogCrypto
import PeerlogEncoding

/// The body of an entity or application receipt in an encrypted group (docs/PROTOCOL.md §22.3):
/// the plaintext body, deterministically encoded, sealed under an epoch key. The receipt's
/// signature covers this ciphertext, so anyone can verify and order the receipt without the key.
///
/// Encoded `{"k": bstr(16), "n": bstr(24), "c": bstr}`: the epoch key id, a random nonce, and
/// XChaCha20-Poly1305 ciphertext ‖ tag. The associated data is CBOR `["peerlog/body/v1", group,
/// type, author, counter, key id]`, so a body cannot be moved to another receipt.
public struct EncryptedBody: Hashable, Sendable {
    static let adLabel = "peerlog/body/v1"

    /// The epoch key it was sealed under (field `k`).
    public let keyID: EpochKeyID
    /// The random 24-byte nonce (field `n`).
    public let nonce: [UInt8]
    /// Ciphertext and 16-byte tag (field `c`).
    public let ciphertext: [UInt8]

    /// Where a body sits: the receipt fields the associated data binds.
    public struct Binding: Hashable, Sendable {
        /// The receipt's group.
        public var group: GroupID
        /// The receipt's type.
        public var type: String
        /// The author device.
        public var author: DeviceID
        /// The author's counter in the group.
        public var counter: UInt64

        /// The fields of a receipt about to be signed, or of one received.
        public init(group: GroupID, type: String, author: DeviceID, counter: UInt64) {
            self.group = group
            self.type = type
            self.author = author
            self.counter = counter
        }

        /// The binding of a received receipt.
        public init(_ r: Receipt) { self.init(group: r.group, type: r.type, author: r.author, counter: r.counter) }
    }

    /// Seals `body` (its deterministic encoding) under `key` at `binding`. Throws a `ModelError`
    /// when `body` is over a limit a receiver checks once it has opened it (its depth, the same
    /// as a plaintext body's): refused here, before anything is signed.
    public static func seal(_ body: CBOR, key: EpochKey, binding: Binding) throws -> EncryptedBody {
        try Receipt.checkBodyDepth(body)
        let nonce = SecureRandom.bytes(XChaChaPoly.nonceLength)
        let c = try XChaChaPoly.seal(
            CBOREncoder.encode(body), key: key.secret, nonce: nonce,
            authenticating: associatedData(binding, keyID: key.id))
        return try EncryptedBody(keyID: key.id, nonce: nonce, ciphertext: c)
    }

    /// The plaintext body. Throws a `ModelError`: `wrongShape` when `key` is not the body's key
    /// or the ciphertext does not authenticate at `binding` (tampered, or moved from another
    /// receipt), `malformedEncoding` when the plaintext is not strict CBOR within the body limits.
    public func open(with key: EpochKey, binding: Binding) throws -> CBOR {
        guard key.id == keyID else {
            throw ModelError(.wrongShape, "body is sealed under epoch key \(keyID), not \(key.id)")
        }
        let plain: [UInt8]
        do {
            plain = try XChaChaPoly.open(
                ciphertext, key: key.secret, nonce: nonce, authenticating: Self.associatedData(binding, keyID: keyID))
        } catch {
            throw ModelError(.wrongShape, "body does not decrypt with epoch key \(keyID): tampered or moved")
        }
        do {
            return try Fields.payloadDecoder(maxBytes: Receipt.maxPayloadBytes).decode(plain)
        } catch {
            throw ModelError(.malformedEncoding, "decrypted body: \(error)")
        }
    }

    /// Wraps decoded fields; throws a `ModelError` when the nonce is not 24 bytes or the
    /// ciphertext is shorter than the tag.
    public init(keyID: EpochKeyID, nonce: [UInt8], ciphertext: [UInt8]) throws {
        guard nonce.count == XChaChaPoly.nonceLength, ciphertext.count >= XChaChaPoly.tagLength else {
            throw ModelError(
                .fieldOutOfRange,
                "encrypted body: n must be \(XChaChaPoly.nonceLength) bytes and c at least \(XChaChaPoly.tagLength)")
        }
        self.keyID = keyID
        self.nonce = nonce
        self.ciphertext = ciphertext
    }

    /// Parses a receipt body of the form `{"k", "n", "c"}`; throws a `ModelError` for any other.
    public init(cbor: CBOR) throws {
        let what = "encrypted body"
        let map = try Fields.exactMap(cbor, ["k", "n", "c"], what: what)
        try self.init(
            keyID: EpochKeyID(bytes: Fields.bytes(map, "k", what: what)), nonce: Fields.bytes(map, "n", what: what),
            ciphertext: Fields.bytes(map, "c", what: what))
    }

    /// The receipt body.
    public var cbor: CBOR { .textMap(["k": .bytes(keyID.bytes), "n": .bytes(nonce), "c": .bytes(ciphertext)]) }

    static func associatedData(_ b: Binding, keyID: EpochKeyID) -> [UInt8] {
        CBOREncoder.encode(
            .array([
                .text(adLabel), .bytes(b.group.bytes), .text(b.type), .bytes(b.author.bytes), .unsigned(b.counter),
                .bytes(keyID.bytes),
            ]))
    }
}
