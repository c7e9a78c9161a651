import PeerlogModel
import PeerlogStore

/// What `status` shows of one group that the store knows (the connected peers' part is the
/// node's).
public struct GroupStatusFacts: Sendable {
    /// The group these facts are of.
    public let group: GroupID
    /// The group's state with its tentative receipts applied (its current name, encryption).
    public let tentativeState: GroupState?
    /// The committed state (who sequences it).
    public let committedState: GroupState?
    /// The highest committed seq held (0: none).
    public let committedSeq: UInt64
    /// Held receipts without a seq yet.
    public let tentativeCount: Int
    /// This device's writes waiting for a seq, against its offline limits (nil: not readable).
    public let offline: OfflineHeadroom?
    /// Sealed receipts waiting for their epoch key; nil for a plaintext group.
    public let sealedWaiting: Int?
}

extension Replica {
    /// The store's part of `status` for each of `groups`, in that order, read in one transaction:
    /// a status of ten thousand groups costs one read, not eight per group. A part that cannot
    /// be read shows as empty (nil, 0), as each read on its own would.
    public func statusFacts(of groups: [GroupID]) throws -> [GroupStatusFacts] {
        let now = clock()
        return try store.read { db in groups.map { facts(of: $0, db: db, now: now) } }
    }

    private func facts(of group: GroupID, db: StoreDB, now: UInt64) -> GroupStatusFacts {
        let tentative = (try? fold(group: group, view: .tentative, db: db, entities: .none))?.state
        return GroupStatusFacts(
            group: group, tentativeState: tentative,
            committedState: (try? fold(group: group, view: .committed, db: db, entities: .none))?.state,
            committedSeq: (try? db.committedSeq(group: group)) ?? 0,
            tentativeCount: (try? db.tentativeCount(group: group)) ?? 0,
            offline: try? offlineHeadroom(of: group, db: db, now: now),
            sealedWaiting: tentative?.encryption == nil ? nil : try? db.sealedWaitingCount(group: group))
    }
}
