import PeerlogEngine
import PeerlogModel

/// A write stored here: its receipt, and whether a sequencer has ordered it yet.
public struct PeerlogWrite: Sendable, Hashable {
    /// The receipt's content id.
    public let cid: CID
    /// `entity.put`, `group.member_added`, …
    public let type: String
    /// Its seq when it was committed at once (this device sequences the group); nil while it
    /// waits for the group's sequencer.
    public let seq: UInt64?

    /// True while no sequencer has ordered it.
    public var isTentative: Bool { seq == nil }

    init(_ result: AppendResult) {
        cid = result.receipt.cid
        type = result.receipt.type
        seq = result.seq
    }
}

/// One operation of a raw batch (`Peerlog.putBatch(_:in:)`).
public enum PeerlogOperation: Sendable, Hashable {
    /// Sets `key` to a raw value.
    case put(key: String, value: CBOR)
    /// Deletes `key`.
    case delete(key: String)
    /// A transaction: its conditions and operations, one receipt, all or none at its committed
    /// position (docs/PROTOCOL.md §9.7).
    case transaction(PeerlogTransaction)

    /// The key the operation writes (a transaction's first).
    public var key: String {
        switch self {
        case .put(let key, _), .delete(let key): key
        case .transaction(let t): t.write.changes.first?.key ?? ""
        }
    }
}

extension Peerlog {
    /// Most bytes of one receipt's payload, the value included (64 KiB): split larger data over
    /// several keys, or store it elsewhere and put a reference to it.
    public static let maxPayloadBytes = Receipt.maxPayloadBytes
    /// Most operations in one batch.
    public static let maxBatchOperations = ReplicaLimits().maxBatchOperations
    /// Most members (pending invitations included) of a group created without saying.
    public static let defaultMaxMembers = GroupLimits.defaultMaxMembers
    /// Most voters of an elected sequencer.
    public static let maxVoters = GroupLimits.maxVoters
}
