import PeerlogCrypto
import PeerlogEncoding

/// The name of an epoch key: 16 bytes derived from the key (docs/PROTOCOL.md §22.1), so a device
/// that opens a sealed key can check it is the key the name says, and names reveal nothing of keys.
public struct EpochKeyID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Length of an epoch key id in bytes (16).
    public static let length = 16
    /// The 16 id bytes.
    public let bytes: [UInt8]

    /// Throws a `ModelError` unless `bytes` holds exactly 16 bytes.
    public init(bytes: [UInt8]) throws {
        self.bytes = try Fields.fixedLength(bytes, Self.length, what: "epoch key id")
    }

    /// Byte-wise order.
    public static func < (l: EpochKeyID, r: EpochKeyID) -> Bool { l.bytes.lexicographicallyPrecedes(r.bytes) }

    /// Lower-case hex, 32 characters.
    public var description: String { hexString(bytes) }
}

/// A group's epoch key: the 32-byte XChaCha20-Poly1305 key that seals the bodies of entity and
/// application receipts in an encrypted group (docs/PROTOCOL.md §22). Held in `SecureBytes`
/// (zeroed when released); never printed.
public struct EpochKey: Sendable, Equatable, CustomStringConvertible {
    /// Length of an epoch key in bytes (32).
    public static let length = XChaChaPoly.keyLength
    /// The BLAKE2b personalisation of the id derivation: the key id is the 16-byte keyed BLAKE2b of
    /// this text, with the epoch key as the key.
    static let idLabel = Array("peerlog/epoch-key-id/v1".utf8)

    /// The key's secret bytes.
    public let secret: SecureBytes

    /// The secret blob keys of this epoch derive from (docs/PROTOCOL.md §24.1): BLAKE2b-256 of
    /// `"peerlog/blob-secret/v1"` keyed with the epoch key, so no blob key is the epoch key.
    public var blobSecret: SecureBytes {
        let h = try! BLAKE2b(length: 32, key: secret)
        h.update(Array("peerlog/blob-secret/v1".utf8))
        return SecureBytes(h.finalize())
    }
    /// The key's public name.
    public let id: EpochKeyID

    /// A fresh random key.
    public init() { try! self.init(secret: SecureBytes(randomCount: Self.length)) }

    /// Wraps 32 secret bytes; throws a `ModelError` for any other length.
    public init(secret: SecureBytes) throws {
        guard secret.count == Self.length else {
            throw ModelError(.fieldOutOfRange, "epoch key must be \(Self.length) bytes, got \(secret.count)")
        }
        self.secret = secret
        id = try EpochKeyID(bytes: try BLAKE2b.hash(Self.idLabel, length: EpochKeyID.length, key: secret))
    }

    /// Equal when the secrets are.
    public static func == (l: EpochKey, r: EpochKey) -> Bool { l.secret == r.secret }

    /// `EpochKey(<id>)`; the secret is never shown.
    public var description: String { "EpochKey(\(id))" }
}
