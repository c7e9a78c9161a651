import Dispatch
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import Synchronization

/// Decodes the receipts and envelopes of batch messages as they arrive, and checks the
/// receipts' signatures, on a thread of its own while the hub's queue writes what came before
/// (`Replica.checkAhead`); the hub's sessions then take what was decoded (`receipt(_:)`,
/// `envelope(_:)`) and its ingest skips the checks. Without it a catch-up's writer thread decoded and checked every receipt itself and
/// was the whole bound (busy nine tenths of the time, the other core mostly idle); decoding a
/// catch-up's envelopes was still a twentieth of that thread's time, with this one idle a quarter.
/// At most `maxWaiting` messages wait here, and `maxDecoded` receipts and as many envelopes are kept: past either
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
    private let decoded = Mutex<Kept>(Kept())
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
            guard let batch = try? SyncMessage.decode(message, limits: limits) else { return }
            let (items, envelopeItems): ([[UInt8]], [[UInt8]])
            switch batch {
            case .receipts(_, let i): (items, envelopeItems) = (i, [])
            case .commits(_, let i, let e): (items, envelopeItems) = (i, e)
            case .envelopes(_, let e): (items, envelopeItems) = ([], e)
            default: return
            }
            let receipts = items.compactMap { item in (try? Receipt(encoded: item)).map { (Item(item), $0) } }
            replica.checkAhead(receipts.map(\.1))
            let envelopes = envelopeItems.compactMap { item in
                (try? Envelope(encoded: item)).map { (Item(item), $0) }
            }
            decoded.withLock { kept in
                Self.keep(receipts, in: &kept.receipts)
                Self.keep(envelopes, in: &kept.envelopes)
                if kept.messages.count >= Self.maxWaiting { kept.messages.removeAll(keepingCapacity: true) }
                kept.messages[Item(message)] = batch
            }
        }
    }

    private static func keep<Value>(_ new: [(Item, Value)], in kept: inout [Item: Value]) {
        if kept.count + new.count > maxDecoded { kept.removeAll(keepingCapacity: true) }
        for (item, value) in new.prefix(maxDecoded) { kept[item] = value }
    }

    /// The message `bytes` decodes to under `limits` (the hub's, as here): the one decoded
    /// ahead (and forgotten), or decoded now. Decoding a catch-up's batch messages a second
    /// time was a thirtieth of the hub's thread.
    func message(_ bytes: [UInt8], limits: SyncLimits) throws -> SyncMessage {
        if bytes.count >= minBytes, Self.mayBeBatch(bytes),
            let kept = decoded.withLock({ $0.messages.removeValue(forKey: Item(bytes)) })
        {
            return kept
        }
        return try SyncMessage.decode(bytes, limits: limits)
    }

    /// The receipt `item` decodes to: the one decoded ahead (and forgotten), or decoded now.
    func receipt(_ item: [UInt8]) throws -> Receipt {
        if let kept = decoded.withLock({ $0.receipts.removeValue(forKey: Item(item)) }) { return kept }
        return try Receipt(encoded: item)
    }

    /// The envelope `item` decodes to: the one decoded ahead (and forgotten), or decoded now.
    func envelope(_ item: [UInt8]) throws -> Envelope {
        if let kept = decoded.withLock({ $0.envelopes.removeValue(forKey: Item(item)) }) { return kept }
        return try Envelope(encoded: item)
    }

    /// Whether `message` starts as a "receipts", "commits" or "envelopes" message does, without decoding
    /// it (a blob chunk is a megabyte of CBOR): deterministic CBOR puts the shortest key first,
    /// and a batch's only one-letter key is its type, "t" (§15.1).
    static func mayBeBatch(_ message: [UInt8]) -> Bool {
        guard message.count > 12, (0xa1...0xb7).contains(message[0]), message[1] == 0x61, message[2] == 0x74 else {
            return false
        }
        let type = message[3...]
        return type.starts(with: Self.receiptsType) || type.starts(with: Self.commitsType)
            || type.starts(with: Self.envelopesType)
    }
    private static let receiptsType: [UInt8] = [0x68] + Array("receipts".utf8)
    private static let commitsType: [UInt8] = [0x67] + Array("commits".utf8)
    private static let envelopesType: [UInt8] = [0x69] + Array("envelopes".utf8)

    /// Returns once every message handed in so far was handled (tests).
    func waitUntilIdle() { queue.sync {} }

    /// Receipts decoded ahead and not yet taken.
    var decodedCount: Int { decoded.withLock { $0.receipts.count } }
    /// Envelopes decoded ahead and not yet taken.
    var decodedEnvelopeCount: Int { decoded.withLock { $0.envelopes.count } }
    /// Batch messages decoded ahead and not yet taken.
    var decodedMessageCount: Int { decoded.withLock { $0.messages.count } }

    /// What was decoded ahead, by the item's bytes.
    private struct Kept {
        var receipts: [Item: Receipt] = [:]
        var envelopes: [Item: Envelope] = [:]
        var messages: [Item: SyncMessage] = [:]
    }

    /// An item's (or a message's) bytes as a key. Only the length and the first `hashedPrefix` bytes are hashed
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
