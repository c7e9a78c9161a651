import Synchronization

/// Values kept by key, at most `capacity`, emptied when full: the decoded caches (certificates
/// here, receipts in the store). Only for values that are a function of what a caller checks
/// against them, so a stale entry can only cost a decode.
package final class BoundedMemo<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    package let capacity: Int
    private let held = Mutex<[Key: Value]>([:])

    package init(capacity: Int) { self.capacity = capacity }

    package var count: Int { held.withLock { $0.count } }

    package subscript(key: Key) -> Value? { held.withLock { $0[key] } }

    package func keep(_ value: Value, for key: Key) {
        held.withLock {
            if $0.count >= capacity { $0.removeAll(keepingCapacity: true) }
            $0[key] = value
        }
    }
}

/// Certificates decoded from their container bytes, kept by those bytes. A store holds a few
/// certificates (one per device) and every receipt read joins one, and every receipt container
/// from the wire embeds its author's: decoding it again for each receipt was a tenth of the cost
/// of reading one back, and a third of parsing one from a peer. Decoding depends on the bytes
/// alone, so a hit is what decoding would return. Emptied when it reaches `capacity`.
package final class DecodedCertificates: Sendable {
    package static let shared = DecodedCertificates(capacity: 1_024)
    private let decoded: BoundedMemo<Bytes, DeviceCertificate>

    /// A certificate's bytes as a key, hashed in one call (an array feeds the hasher a byte at
    /// a time: a few hundred calls a lookup, once per receipt read or received).
    private struct Bytes: Hashable, Sendable {
        let bytes: [UInt8]
        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    package init(capacity: Int) { decoded = BoundedMemo(capacity: capacity) }

    /// Certificates held now.
    package var count: Int { decoded.count }

    package func certificate(_ bytes: [UInt8]) throws -> DeviceCertificate {
        let key = Bytes(bytes: bytes)
        if let hit = decoded[key] { return hit }
        let certificate = try DeviceCertificate(encoded: bytes)
        decoded.keep(certificate, for: key)
        return certificate
    }
}
