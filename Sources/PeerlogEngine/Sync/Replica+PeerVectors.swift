import PeerlogModel
import PeerlogStore

/// What each peer said it holds (its latest sync `vector` per group, docs/PROTOCOL.md §10).
extension Replica {
    /// Replaces what `peer` last said it holds of `group`: one write transaction, its size
    /// that of the vector (one row per author plus the committed mark), not of the log.
    public func recordPeerVector(peer: DeviceID, group: GroupID, committed: UInt64, authors: [DeviceID: UInt64]) throws
    {
        let now = clock()
        try store.write {
            try $0.replacePeerVector(peer: peer, group: group, committed: committed, authors: authors, at: now)
        }
    }

    /// What `peer` last said it holds of `group` (zero and none when it never said).
    public func peerVector(peer: DeviceID, group: GroupID) throws -> (committed: UInt64, authors: [DeviceID: UInt64]) {
        try store.read { try $0.peerVector(peer: peer, group: group) }
    }
}
