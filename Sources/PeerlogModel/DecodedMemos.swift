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

/// Values decoded from bytes, kept by those bytes, at most `capacity` (emptied when full).
/// Only for a `decode` that depends on the bytes alone, so a hit is what decoding would return.
package final class DecodedByBytes<Value: Sendable>: Sendable {
    private let decoded: BoundedMemo<HashedBytes, Value>
    private let decode: @Sendable ([UInt8]) throws -> Value

    package init(capacity: Int, decode: @escaping @Sendable ([UInt8]) throws -> Value) {
        decoded = BoundedMemo(capacity: capacity)
        self.decode = decode
    }

    /// Values held now.
    package var count: Int { decoded.count }

    /// The value of `bytes`: kept, or decoded and kept. Bytes that do not decode throw and are
    /// not kept.
    package func value(_ bytes: [UInt8]) throws -> Value {
        let key = HashedBytes(bytes)
        if let hit = decoded[key] { return hit }
        let value = try decode(bytes)
        decoded.keep(value, for: key)
        return value
    }
}

/// The process's decoded caches.
package enum Decoded {
    /// Certificates by their container bytes. A store holds a few (one per device) and every
    /// receipt read joins one, and every receipt container from the wire embeds its author's:
    /// decoding it again for each receipt was a tenth of the cost of reading one back, and a
    /// third of parsing one from a peer.
    package static let certificates = DecodedByBytes(capacity: 1_024, decode: DeviceCertificate.init(encoded:))
    /// Run headers by their signed bytes: each of a run's items (up to 256) carries its run's
    /// header, and decoding it again per item was a tenth of parsing a catch-up's envelopes.
    package static let runHeaders = DecodedByBytes(capacity: 256, decode: EnvelopeRun.Header.init(payload:))
}

/// Bytes as a memo's key, hashed in one call: an array feeds the hasher a byte at a time, a few
/// hundred calls a lookup for a certificate or a run header.
package struct HashedBytes: Hashable, Sendable {
    package let bytes: [UInt8]
    package init(_ bytes: [UInt8]) { self.bytes = bytes }
    package func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
}
