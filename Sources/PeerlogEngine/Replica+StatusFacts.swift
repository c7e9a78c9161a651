import PeerlogModel
import PeerlogStore

/// What `status` shows of one group that the store knows (the connected peers' part is the
/// node's).
public struct GroupStatusFacts: Sendable {
    /// The part of a group's facts that only a group operation changes: two folds of its log,
    /// most of what a group's facts cost. A caller may keep it and pass it back
    /// (`Replica.statusFacts(of:reusing:)`) until it observes a group operation of the group.
    public struct Folded: Sendable {
        /// The group's current name (its tentative state); nil when the state cannot be read.
        public let name: String?
        /// Whether the group is end-to-end encrypted (its tentative state).
        public let encrypted: Bool
        /// Who sequences it (its committed state); nil when the state cannot be read.
        public let authority: SequencerAuthority?
    }

    /// The group these facts are of.
    public let group: GroupID
    /// Its name, encryption and authority.
    public let folded: Folded
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
    ///
    /// A group found in `reusing` takes its folded part from there instead of folding its log
    /// twice; the caller vouches that no group operation of it was stored or committed since
    /// that part was read. The counts are always read afresh.
    public func statusFacts(
        of groups: [GroupID], reusing folded: [GroupID: GroupStatusFacts.Folded] = [:]
    ) throws -> [GroupStatusFacts] {
        let now = clock()
        return try store.read { db in groups.map { facts(of: $0, db: db, now: now, folded: folded[$0]) } }
    }

    private func facts(
        of group: GroupID, db: StoreDB, now: UInt64, folded: GroupStatusFacts.Folded?
    ) -> GroupStatusFacts {
        let folded = folded ?? fold(group, db: db)
        return GroupStatusFacts(
            group: group, folded: folded,
            committedSeq: (try? db.committedSeq(group: group)) ?? 0,
            tentativeCount: (try? db.tentativeCount(group: group)) ?? 0,
            offline: try? offlineHeadroom(of: group, db: db, now: now),
            sealedWaiting: folded.encrypted ? try? db.sealedWaitingCount(group: group) : nil)
    }

    private func fold(_ group: GroupID, db: StoreDB) -> GroupStatusFacts.Folded {
        let tentative = (try? fold(group: group, view: .tentative, db: db, entities: .none))?.state
        let committed = (try? fold(group: group, view: .committed, db: db, entities: .none))?.state
        return .init(name: tentative?.name, encrypted: tentative?.encryption != nil, authority: committed?.authority)
    }
}
