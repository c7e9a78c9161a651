import PeerlogCrypto
import PeerlogEncoding

/// An Ed25519 public key used as a name. Text form: multibase base32 (`b` + 52 characters).
public protocol Ed25519KeyID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The key itself.
    var publicKey: Ed25519.PublicKey { get }
    /// Names `publicKey`.
    init(publicKey: Ed25519.PublicKey)
}

extension Ed25519KeyID {
    /// The 32 key bytes.
    public var bytes: [UInt8] { publicKey.rawRepresentation }
    /// Text form: `b` + lower-case base32 of the 32 bytes, 53 characters (docs/PROTOCOL.md §2).
    public var string: String { "b" + Base32.encode(bytes) }
    /// The text form (`string`).
    public var description: String { string }
    /// The first 8 base32 characters after the prefix: enough to tell devices apart in logs.
    public var short: String { String(string.dropFirst().prefix(8)) }

    /// Throws a `ModelError` unless `bytes` holds exactly 32 bytes.
    public init(bytes: [UInt8]) throws {
        do { self.init(publicKey: try Ed25519.PublicKey(bytes)) } catch {
            throw ModelError(.fieldOutOfRange, "key id must be 32 bytes, got \(bytes.count)")
        }
    }

    /// Parses the text form printed by `peerlog id`.
    public init(string: String) throws {
        guard string.first == "b" else {
            throw ModelError(.wrongShape, "key id must start with 'b' (multibase base32)")
        }
        let raw: [UInt8]
        do { raw = try Base32.decode(string.dropFirst()) } catch { throw ModelError(.wrongShape, "key id: \(error)") }
        try self.init(bytes: raw)
    }

    /// Bytewise order of the keys, the order PROTOCOL.md sorts keys in (e.g. §6, §9.2).
    public static func < (l: Self, r: Self) -> Bool { l.bytes.lexicographicallyPrecedes(r.bytes) }
}

/// A user identity: the Ed25519 public key that certifies the user's devices and names them in groups.
public struct IdentityID: Ed25519KeyID {
    /// The identity's Ed25519 public key.
    public let publicKey: Ed25519.PublicKey
    /// Names `publicKey` as an identity.
    public init(publicKey: Ed25519.PublicKey) { self.publicKey = publicKey }
}

/// A device: the Ed25519 public key the device signs receipts (and envelopes) with.
public struct DeviceID: Ed25519KeyID {
    /// The device's Ed25519 signing public key.
    public let publicKey: Ed25519.PublicKey
    /// Names `publicKey` as a device.
    public init(publicKey: Ed25519.PublicKey) { self.publicKey = publicKey }
}

/// A group: 16 random bytes chosen by its creator. Text form: multibase base32.
public struct GroupID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Length of a group id in bytes (16).
    public static let length = 16
    /// The 16 id bytes.
    public let bytes: [UInt8]

    /// Throws a `ModelError` unless `bytes` holds exactly 16 bytes.
    public init(bytes: [UInt8]) throws {
        self.bytes = try Fields.fixedLength(bytes, Self.length, what: "group id")
    }

    /// The 16 bytes in one call (not one byte at a time, as the synthesized conformance did).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// A fresh id from the system's secure random generator, as a group's creator chooses it
    /// (docs/PROTOCOL.md §2).
    public static func random() -> GroupID { try! GroupID(bytes: SecureRandom.bytes(length)) }

    /// Parses the text form (`string`). Throws a `ModelError` for a missing `b` prefix, invalid
    /// base32 or a length other than 16 bytes.
    public init(string: String) throws {
        guard string.first == "b" else {
            throw ModelError(.wrongShape, "group id must start with 'b' (multibase base32)")
        }
        do { try self.init(bytes: try Base32.decode(string.dropFirst())) } catch let e as ModelError { throw e } catch {
            throw ModelError(.wrongShape, "group id: \(error)")
        }
    }

    /// Text form: `b` + lower-case base32 of the 16 bytes, 27 characters (docs/PROTOCOL.md §2).
    public var string: String { "b" + Base32.encode(bytes) }
    /// The text form (`string`).
    public var description: String { string }
    /// Bytewise order of the id bytes.
    public static func < (l: GroupID, r: GroupID) -> Bool { l.bytes.lexicographicallyPrecedes(r.bytes) }
}
