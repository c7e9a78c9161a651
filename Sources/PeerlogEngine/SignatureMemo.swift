import PeerlogEncoding
import PeerlogModel
import Synchronization

/// Receipts whose signatures were checked ahead of their ingest (`Replica.checkAhead`), on a
/// thread other than the writer's, so the writer does not check them again. Keyed by all a
/// signature check reads: the payload (by its CID), the signature and the certificate (by
/// its CID); a forgery reusing a genuine payload differs in its signature, so it is checked.
/// Each entry is used once. Bounded: emptied when it reaches `capacity` (what was dropped is
/// checked by the writer, as without the memo).
package final class SignatureMemo: Sendable {
    struct Key: Hashable {
        let cid: CID
        let signature: [UInt8]
        let certificate: CID

        init(_ r: Receipt) {
            cid = r.cid
            signature = r.signature
            certificate = r.certificate.cid
        }
    }

    let capacity: Int
    private let keys = Mutex<Set<Key>>([])

    init(capacity: Int) { self.capacity = capacity }

    package var count: Int { keys.withLock { $0.count } }

    func insert(_ checked: [Key]) {
        guard !checked.isEmpty else { return }
        keys.withLock {
            if $0.count + checked.count > capacity { $0.removeAll(keepingCapacity: true) }
            $0.formUnion(checked.prefix(capacity))
        }
    }

    /// Whether each receipt's signature was checked ahead (and forgets it), under one lock.
    func take(_ receipts: [Receipt]) -> [Bool] {
        let wanted = receipts.map(Key.init)
        return keys.withLock { keys in wanted.map { keys.remove($0) != nil } }
    }
}
