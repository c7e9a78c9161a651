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
    private let decoded: BoundedMemo<HashedBytes, DeviceCertificate>

    package init(capacity: Int) { decoded = BoundedMemo(capacity: capacity) }

    /// Certificates held now.
    package var count: Int { decoded.count }

    package func certificate(_ bytes: [UInt8]) throws -> DeviceCertificate {
        let key = HashedBytes(bytes)
        if let hit = decoded[key] { return hit }
        let certificate = try DeviceCertificate(encoded: bytes)
        decoded.keep(certificate, for: key)
        return certificate
    }
}

/// Bytes as a memo's key, hashed in one call: an array feeds the hasher a byte at a time, a few
/// hundred calls a lookup for a certificate or a run header.
package struct HashedBytes: Hashable, Sendable {
    package let bytes: [UInt8]
    package init(_ bytes: [UInt8]) { self.bytes = bytes }
    package func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
}

/// Run headers decoded from their signed bytes, kept by those bytes: each of a run's items (up
/// to 256) carries its run's header, and decoding it again per item was a tenth of parsing a
/// catch-up's envelopes. Decoding depends on the bytes alone, so a hit is what decoding would
/// return. Emptied when it reaches `capacity`.
package final class DecodedRunHeaders: Sendable {
    package static let shared = DecodedRunHeaders(capacity: 256)
    private let decoded: BoundedMemo<HashedBytes, EnvelopeRun.Header>

    package init(capacity: Int) { decoded = BoundedMemo(capacity: capacity) }

    /// Headers held now.
    package var count: Int { decoded.count }

    package func header(_ payload: [UInt8]) throws -> EnvelopeRun.Header {
        let key = HashedBytes(payload)
        if let hit = decoded[key] { return hit }
        let header = try EnvelopeRun.Header(payload: payload)
        decoded.keep(header, for: key)
        return header
    }
}
