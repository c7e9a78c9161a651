import PeerlogEngine
import PeerlogModel

/// The replica's sync queries live in PeerlogEngine (Replica+Sync.swift); this declares the
/// conformance and adds `syncBootstrap`, the snapshot a peer that holds little is sent.
extension Replica: SyncStore {}

extension Replica {
    /// The newest snapshot for a peer that holds nothing of the group or less than the floor.
    public func syncBootstrap(
        group: GroupID, for peer: IdentityID, peerCommitted: UInt64, peerHoldsNothing: Bool, blobs: Bool
    ) throws -> SnapshotBundle? {
        try bootstrapBundle(
            of: group, for: peer, peerCommitted: peerCommitted, peerHoldsNothing: peerHoldsNothing, blobs: blobs)
    }
}
