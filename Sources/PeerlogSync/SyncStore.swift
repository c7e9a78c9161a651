import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// What a sync session reads from the local replica (it writes nothing: see ``SyncWriter``).
/// `Replica` conforms; tests may wrap it. Every method may be called from the session's
/// serial queue; reads are cheap, bounded by `limit`, so a catch-up is produced batch by batch
/// and never held in memory whole.
public protocol SyncStore: AnyObject, Sendable {
    /// Groups to offer `peer` (held, not deleted, both identities pending or active members,
    /// or one side a member and the other the group's relay).
    func syncOfferedGroups(to peer: DeviceCertificate) throws -> [GroupID]
    /// How `group` is shared with `peer` now: offered, accepted, served (§15.2.2–3).
    func syncSharing(_ group: GroupID, with peer: DeviceCertificate) throws -> SyncSharing
    /// The committed seq at which `identity` stopped being a member of `group` (removed or
    /// left), nil while it is one or was never one.
    func syncDepartureSeq(_ group: GroupID, of identity: IdentityID) throws -> UInt64?
    /// Committed high-water mark and per-author contiguous counters.
    func vector(of group: GroupID) throws -> SequenceVector
    /// Committed positions from `fromSeq` on, in seq order, with their receipts.
    func syncCommitted(group: GroupID, fromSeq: UInt64, limit: Int) throws -> [SyncCommittedItem]
    /// One author's receipts with counters `from...to`, in counter order.
    func syncReceipts(
        group: GroupID, author: DeviceID, from: UInt64, to: UInt64, limit: Int
    ) throws -> [SyncReceiptItem]
    /// Receipts by CID (held ones only).
    func syncReceipts(group: GroupID, cids: [CID]) throws -> [SyncReceiptItem]
    /// `encoded` as a single envelope (§3.4) for a peer that reads no batched ones: itself if
    /// single; a run item re-signed alone when this device is its sequencer; otherwise nil.
    func syncSingleEnvelope(_ encoded: [UInt8]) throws -> [UInt8]?
    /// The revocation containers to send `peer` after hello (docs/PROTOCOL.md §3.6, §15.1).
    func syncRevocations(for peer: DeviceCertificate) throws -> [[UInt8]]
    /// A snapshot to start the peer (of identity `peer`) from (§23.3): when it holds nothing of
    /// the group, or less than this replica's floor, and is a member. Nil: send the log.
    func syncBootstrap(
        group: GroupID, for peer: IdentityID, peerCommitted: UInt64, peerHoldsNothing: Bool, blobs: Bool
    ) throws -> SnapshotBundle?
}

extension SyncStore {
    /// None: a store without snapshots sends the log.
    public func syncBootstrap(
        group: GroupID, for peer: IdentityID, peerCommitted: UInt64, peerHoldsNothing: Bool, blobs: Bool
    ) throws -> SnapshotBundle? { nil }

    /// None: a store that keeps no revocations sends none.
    public func syncRevocations(for peer: DeviceCertificate) throws -> [[UInt8]] { [] }

    /// Without a signing key: single envelopes pass, run items cannot be served singly.
    public func syncSingleEnvelope(_ encoded: [UInt8]) throws -> [UInt8]? {
        try Envelope(encoded: encoded).run == nil ? encoded : nil
    }
}
