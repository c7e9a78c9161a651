import PeerlogModel
import PeerlogStore

/// Cheap values a node polls to notice writes of other processes, and the committed high-water mark.
extension Replica {
    /// Changes whenever receipts or envelopes were stored (by this or another process).
    package func changeStamp() throws -> [Int64] { try store.read { try $0.changeStamp() } }

    /// Changes when membership or sequencer authority may have changed (a `group.*` receipt
    /// was stored, removed or committed).
    package func groupOperationStamp() throws -> [Int64] { try store.read { try $0.groupOperationStamp() } }

    /// Both stamps and what changed since `stamp` (an earlier `changeStamp()`), read together:
    /// nil changes when they cannot be told apart (rows were deleted), so every group counts.
    package func observeChanges(
        since stamp: [Int64]
    ) throws -> (
        stamp: [Int64], groupOperations: [Int64], changes: GroupChanges?
    ) {
        try store.read { db in
            let now = try db.changeStamp()
            return (now, try db.groupOperationStamp(), try db.changes(since: stamp, now: now))
        }
    }

    /// The group's committed high-water mark alone (cheaper than `vector(of:)`).
    public func committedSeq(of group: GroupID) throws -> UInt64 {
        try store.read { try $0.committedSeq(group: group) }
    }
}
