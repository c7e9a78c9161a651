import Dispatch
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import Synchronization

/// Decodes the receipts of batch messages as they arrive, and checks their signatures, on a
/// thread of its own while the hub's queue writes what came before (`Replica.checkAhead`);
/// the hub's sessions then take the decoded receipts (`receipt(_:)`) and its ingest skips the
/// checks. Without it a catch-up's writer thread decoded and checked every receipt itself and
/// was the whole bound (busy nine tenths of the time, the other core mostly idle).
/// At most `maxWaiting` messages wait here, and `maxDecoded` receipts are kept: past either
/// the hub does the work itself, as before, so this never falls far behind the hub or holds
/// more than a few batches. A message shorter than `minMessageBytes` is left to the hub too.
final class CheckAhead: Sendable {
    static let maxWaiting = 16
    static let maxDecoded = 4_096
    /// A few receipts cost less to check where they are written than to hand to this thread
    /// and decode twice: with 1,000 groups of 10 receipts (`peerlog-bench groups 1000`) the
    /// two receiving daemons used 16% more CPU in all, and on 2 cores for 3 daemons that was
    /// time lost. 16 KiB is about 25 receipts; a catch-up's batches are up to 512.
    static let minMessageBytes = 16 << 10
    private let queue = DispatchQueue(label: "peerlog.hub.check-ahead", qos: .utility)
    private let waiting = Atomic<Int>(0)
    private let decoded = Mutex<[Item: Receipt]>([:])
    private let replica: Replica
    private let limits: SyncLimits
    private let minBytes: Int

    init(replica: Replica, limits: SyncLimits, minMessageBytes: Int = CheckAhead.minMessageBytes) {
        self.replica = replica
        self.limits = limits
        minBytes = minMessageBytes
    }

    /// A message as read from a connection: if it is a batch, its receipts are decoded and
    /// checked soon.
    func received(_ message: [UInt8]) {
        guard message.count >= minBytes, Self.mayBeBatch(message) else { return }
        guard waiting.add(1, ordering: .relaxed).newValue <= Self.maxWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            return
        }
        queue.async { [self] in
            defer { waiting.subtract(1, ordering: .relaxed) }
            let items: [[UInt8]]
            switch try? SyncMessage.decode(message, limits: limits) {
            case .receipts(_, let i)?, .commits(_, let i, _)?: items = i
            default: return
            }
            let receipts = items.compactMap { item in (try? Receipt(encoded: item)).map { (Item(item), $0) } }
            replica.checkAhead(receipts.map(\.1))
            decoded.withLock { kept in
                if kept.count + receipts.count > Self.maxDecoded { kept.removeAll(keepingCapacity: true) }
                for (item, receipt) in receipts.prefix(Self.maxDecoded) { kept[item] = receipt }
            }
        }
    }

    /// The receipt `item` decodes to: the one decoded ahead (and forgotten), or decoded now.
    func receipt(_ item: [UInt8]) throws -> Receipt {
        if let kept = decoded.withLock({ $0.removeValue(forKey: Item(item)) }) { return kept }
        return try Receipt(encoded: item)
    }

    /// Whether `message` starts as a "receipts" or "commits" message does, without decoding
    /// it (a blob chunk is a megabyte of CBOR): deterministic CBOR puts the shortest key first,
    /// and a batch's only one-letter key is its type, "t" (§15.1).
    static func mayBeBatch(_ message: [UInt8]) -> Bool {
        guard message.count > 12, (0xa1...0xb7).contains(message[0]), message[1] == 0x61, message[2] == 0x74 else {
            return false
        }
        let type = message[3...]
        return type.starts(with: Self.receiptsType) || type.starts(with: Self.commitsType)
    }
    private static let receiptsType: [UInt8] = [0x68] + Array("receipts".utf8)
    private static let commitsType: [UInt8] = [0x67] + Array("commits".utf8)

    /// Returns once every message handed in so far was handled (tests).
    func waitUntilIdle() { queue.sync {} }

    /// Receipts decoded ahead and not yet taken.
    var decodedCount: Int { decoded.withLock { $0.count } }

    /// An item's bytes as a key. Only the length and the first `hashedPrefix` bytes are hashed
    /// (equality still compares them all): a receipt's or an envelope's container starts with its
    /// 64-byte signature (`"sig"` sorts first, §3.2), which tells items apart, and hashing whole
    /// containers of up to 64 KiB was a per cent of a catch-up's CPU.
    private struct Item: Hashable {
        static let hashedPrefix = 128
        let bytes: [UInt8]
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        func hash(into hasher: inout Hasher) {
            hasher.combine(bytes.count)
            bytes.prefix(Self.hashedPrefix).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}
