import PeerlogCrypto
import PeerlogEncoding

/// An Ed25519 public key used as a name. Text form: multibase base32 (`b` + 52 characters).
public protocol Ed25519KeyID: Hashable, Comparable, Sendable, CustomStringConvertible {
    var publicKey: Ed25519.PublicKey { get }
    init(publicKey: Ed25519.PublicKey)
}

extension Ed25519KeyID {
    public var bytes: [UInt8] { publicKey.rawRepresentation }
    public var string: String { "b" + Base32.encode(bytes) }
    public var description: String { string }
    /// The first 8 base32 characters after the prefix: enough to tell devices apart in logs.
    public var short: String { String(string.dropFirst().prefix(8)) }

    public init(bytes: [UInt8]) throws {
        do { self.init(publicKey: try Ed25519.PublicKey(bytes)) } catch {
            throw ModelError(.fieldOutOfRange, "key id must be 32 bytes, got \(bytes.count)")
        }
    }

    /// Parses the text form printed by `peerlog id`.
    public init(string: String) throws {
        guard string.first == "b" else { throw ModelError(.wrongShape, "key id must start with 'b' (multibase base32)") }
        let raw: [UInt8]
        do { raw = try Base32.decode(string.dropFirst()) } catch { throw ModelError(.wrongShape, "key id: \(error)") }
        try self.init(bytes: raw)
    }

    public static func < (l: Self, r: Self) -> Bool { l.bytes.lexicographicallyPrecedes(r.bytes) }
}

/// A user identity: the Ed25519 public key that certifies the user's devices and names them in groups.
public struct IdentityID: Ed25519KeyID {
    public let publicKey: Ed25519.PublicKey
    public init(publicKey: Ed25519.PublicKey) { self.publicKey = publicKey }
}

/// A device: the Ed25519 public key the device signs receipts (and envelopes) with.
public struct DeviceID: Ed25519KeyID {
    public let publicKey: Ed25519.PublicKey
    public init(publicKey: Ed25519.PublicKey) { self.publicKey = publicKey }
}

/// A group: 16 random bytes chosen by its creator. Text form: multibase base32.
public struct GroupID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public static let length = 16
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws {
        guard bytes.count == Self.length else { throw ModelError(.fieldOutOfRange, "group id must be 16 bytes, got \(bytes.count)") }
        self.bytes = bytes
    }

    public static func random() -> GroupID { try! GroupID(bytes: SecureRandom.bytes(length)) }

    public init(string: String) throws {
        guard string.first == "b" else { throw ModelError(.wrongShape, "group id must start with 'b' (multibase base32)") }
        do { try self.init(bytes: try Base32.decode(string.dropFirst())) } catch let e as ModelError { throw e } catch {
            throw ModelError(.wrongShape, "group id: \(error)")
        }
    }

    public var string: String { "b" + Base32.encode(bytes) }
    public var description: String { string }
    public static func < (l: GroupID, r: GroupID) -> Bool { l.bytes.lexicographicallyPrecedes(r.bytes) }
}
