import PeerlogEngine
import PeerlogModel

/// A snapshot of a group's committed state held here (docs/PROTOCOL.md §23.1).
public struct PeerlogSnapshot: Sendable, Hashable {
    /// Its content id.
    public let cid: CID
    /// The committed seq it is at.
    public let seq: UInt64
    /// The committed state hash at that seq, in hex.
    public let stateHash: String
    /// Its encoded size in bytes.
    public let bytes: Int
    /// When this replica made or installed it (ms since 1970).
    public let madeAt: UInt64
    /// The group's floor rests on it: no complete log is held below its seq.
    public let isFloor: Bool

    init(_ s: SnapshotInfo) {
        cid = s.cid
        seq = s.seq
        stateHash = s.stateHash.map { String(format: "%02x", $0) }.joined()
        bytes = s.bytes
        madeAt = s.madeAt
        isFloor = s.isFloor
    }
}

/// What a compaction pruned (docs/PROTOCOL.md §23.4).
public struct PeerlogCompaction: Sendable, Hashable {
    /// The group's floor after it.
    public let floor: UInt64
    /// The snapshot the floor rests on.
    public let snapshot: CID
    /// Receipts pruned, with their envelopes.
    public let pruned: Int
}

extension Peerlog {
    /// Makes a snapshot of `group`'s committed state now (one is also made every
    /// ``snapshotInterval(of:)`` commits). Throws `snapshotUnavailable` with the reason when none can be made.
    @discardableResult
    public func makeSnapshot(of group: GroupID) async throws -> PeerlogSnapshot {
        try await call { [self] in
            try requireHeld(group)
            return PeerlogSnapshot(try replica.makeSnapshot(of: group))
        }
    }

    /// The snapshots of `group` held here, newest first.
    public func snapshots(of group: GroupID) async throws -> [PeerlogSnapshot] {
        try await call { [self] in try replica.snapshots(of: group).map(PeerlogSnapshot.init) }
    }

    /// The seq below which no complete log of `group` is held here (it started from a snapshot,
    /// or pruned): 0 when the whole log is held.
    public func floor(of group: GroupID) async throws -> UInt64 {
        try await call { [self] in try replica.floor(of: group)?.seq ?? 0 }
    }

    /// Whether superseded receipts of `group` are pruned (§23.4), and the age after which a
    /// snapshot is pruned below even when a peer has not acknowledged it. Nil: off (the default).
    public func retention(of group: GroupID) async throws -> Duration? {
        try await call { [self] in try replica.retention(of: group).map { .milliseconds(Int64($0)) } }
    }

    /// Turns pruning of superseded receipts of `group` on (below the newest snapshot every peer
    /// has acknowledged, or that is `minimumAge` old) or off (nil). Membership, role, key and
    /// tombstone receipts and every current value's writer are kept.
    public func setRetention(of group: GroupID, minimumAge: Duration?) async throws {
        try await call { [self] in
            try requireHeld(group)
            let ms = minimumAge.map { UInt64(max(0, $0.components.seconds)) * 1_000 }
            try replica.setRetention(of: group, minAgeMillis: ms)
        }
    }

    /// Prunes `group` now below its watermark, whether or not retention is on. Nil when no
    /// snapshot above the floor qualifies (make one, or wait until peers have acknowledged it).
    public func compact(_ group: GroupID) async throws -> PeerlogCompaction? {
        try await call { [self] in
            try requireHeld(group)
            return try replica.compact(group).map {
                PeerlogCompaction(floor: $0.floor, snapshot: $0.snapshot, pruned: $0.pruned)
            }
        }
    }

    /// Commits between automatic snapshots of `group` (0: none automatically).
    public func snapshotInterval(of group: GroupID) async throws -> UInt64 {
        try await call { [self] in try replica.snapshotInterval(of: group) }
    }

    /// Sets how many commits pass between automatic snapshots of `group` on this replica (0: none;
    /// nil: the default, 10,000).
    public func setSnapshotInterval(of group: GroupID, _ interval: UInt64?) async throws {
        try await call { [self] in
            try requireHeld(group)
            try replica.setSnapshotInterval(of: group, interval)
        }
    }
}
