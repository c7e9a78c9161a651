import Foundation
import GRDB
import PeerlogModel
import Synchronization

extension StoreDB {
    /// The receipt of a row that selects `payload`, `signature` and its certificate's bytes as
    /// `certificate` (joined from `certificates`).
    static func receipt(_ row: Row) throws -> Receipt {
        try Receipt(
            payload: (row["payload"] as Data).bytes, signature: (row["signature"] as Data).bytes,
            certificate: DecodedCertificates.shared.certificate(row["certificate"]))
    }
}

/// Certificates decoded from their stored bytes, kept by those bytes. A store holds a few
/// certificates (one per device) and every receipt read joins one: decoding it again for each
/// receipt was a tenth of the cost of reading one back. Decoding depends on the bytes alone,
/// so a hit is what decoding would return. Emptied when it reaches `capacity`.
package final class DecodedCertificates: Sendable {
    static let shared = DecodedCertificates(capacity: 1_024)
    let capacity: Int
    private let decoded = Mutex<[Data: DeviceCertificate]>([:])

    package init(capacity: Int) { self.capacity = capacity }

    /// Certificates held now.
    package var count: Int { decoded.withLock { $0.count } }

    package func certificate(_ bytes: Data) throws -> DeviceCertificate {
        if let hit = decoded.withLock({ $0[bytes] }) { return hit }
        let certificate = try DeviceCertificate(encoded: bytes.bytes)
        decoded.withLock {
            if $0.count >= capacity { $0.removeAll(keepingCapacity: true) }
            $0[bytes] = certificate
        }
        return certificate
    }
}
