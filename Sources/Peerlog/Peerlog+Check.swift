import PeerlogEngine
import PeerlogModel

/// What `Peerlog.check()` found.
public struct PeerlogCheckReport: Sendable, Hashable {
    /// SQLite's integrity check: "ok", or what it found.
    public let integrity: String
    /// Every group held here, in the store's order.
    public let groups: [Group]
    /// nil when the stored parent links are exactly those every stored receipt names (what heads
    /// and the tentative view's children are read from); else what differs.
    public let parentLinkMismatch: String?
    /// nil when every receipt's author number is its certificate's device and every envelope's
    /// receipt row is at its group and seq; else what differs.
    public let rowReferenceMismatch: String?

    /// True when the integrity check says "ok", the parent links and row references match and
    /// every group's views check out.
    public var isConsistent: Bool {
        integrity == "ok" && parentLinkMismatch == nil && rowReferenceMismatch == nil
            && groups.allSatisfy(\.isConsistent)
    }

    /// One group's check.
    public struct Group: Sendable, Hashable {
        /// The group.
        public let group: GroupID
        /// Its committed seq.
        public let committedSeq: UInt64
        /// The hash of the committed state as stored (materialized).
        public let materialized: [UInt8]
        /// The hash of a replay of the stored committed log from scratch.
        public let replayed: [UInt8]
        /// The maintained tentative view against a fold of the tentative receipts.
        public let tentative: TentativeCheck
        /// nil when the kept counts of receipts waiting for a seq (what the offline limits read)
        /// equal a count over the receipts; else what differs.
        public let waitingCountMismatch: String?

        /// The materialized committed state equals the replay.
        public var committedMatches: Bool { materialized == replayed }
        /// Both views check out.
        public var isConsistent: Bool {
            if case .mismatch = tentative { return false }
            return committedMatches && waitingCountMismatch == nil
        }
    }

    /// How the maintained tentative view compares with a fold from scratch.
    public enum TentativeCheck: Sendable, Hashable {
        /// Maintained and equal to the fold.
        case matches
        /// Not maintained: reads fold from scratch until the next write to the group rebuilds it.
        case notMaintained
        /// Maintained but different: what differs.
        case mismatch(String)
    }
}

extension Peerlog {
    /// Checks the store: SQLite integrity, the parent links against what the stored receipts
    /// name, the row numbers receipts and envelopes name each other by, and for every group that the materialized state equals a replay of the stored log,
    /// the maintained tentative view a fold of the tentative receipts, and the kept counts of
    /// waiting receipts a count. Reads only, so it works on a read-only home.
    public func check() async throws -> PeerlogCheckReport {
        try await call { [self] in
            let integrity = try replica.store.integrityCheck()
            var groups = [PeerlogCheckReport.Group]()
            for group in try replica.groupIDs() {
                let materialized = try replica.stateHash(of: group, view: .committed)
                let replayed = try replica.replayedStateHash(of: group)
                let tentative: PeerlogCheckReport.TentativeCheck =
                    switch try replica.checkTentativeOverlay(of: group) {
                    case .matches: .matches
                    case .notMaintained: .notMaintained
                    case .mismatch(let what): .mismatch(what)
                    }
                groups.append(
                    .init(
                        group: group, committedSeq: try replica.committedSeq(of: group), materialized: materialized,
                        replayed: replayed, tentative: tentative,
                        waitingCountMismatch: try replica.checkWaitingCounts(of: group)))
            }
            return PeerlogCheckReport(
                integrity: integrity, groups: groups, parentLinkMismatch: try replica.checkParentLinks(),
                rowReferenceMismatch: try replica.checkRowReferences())
        }
    }
}
