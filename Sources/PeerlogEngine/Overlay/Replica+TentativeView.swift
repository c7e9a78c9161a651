import PeerlogModel
import PeerlogStore

/// How a group's maintained tentative view compares with a fold from scratch.
public enum OverlayCheck: Sendable, Equatable {
    /// Maintained and equal to the fold (state, entities with their writers, state hash).
    case matches
    /// Not maintained (never written since the migration, or changed by an older binary):
    /// reads fold from scratch until the next write to the group rebuilds it.
    case notMaintained
    /// Maintained but different: what differs.
    case mismatch(String)
}

extension Replica {
    /// Compares the maintained tentative view of `group` with `Fold` over `TentativeOrder` from
    /// the committed tables (`peerlog check`; the property tests).
    public func checkTentativeOverlay(of group: GroupID) throws -> OverlayCheck {
        try store.read { db in
            guard try db.isTombstoned(group: group) || db.overlayGroup(group)?.fresh == true else {
                return .notMaintained
            }
            let maintained = try fold(group: group, view: .tentative, db: db)
            let replayed = try foldFromScratch(group: group, view: .tentative, db: db)
            if maintained.state?.storedBytes != replayed.state?.storedBytes {
                return .mismatch(
                    "group state: maintained \(maintained.state.map { "\($0.name), \($0.members.count) members" } ?? "none"), replayed \(replayed.state.map { "\($0.name), \($0.members.count) members" } ?? "none")"
                )
            }
            if maintained.entities != replayed.entities {
                let keys = Set(maintained.entities.keys).union(replayed.entities.keys).filter {
                    maintained.entities[$0] != replayed.entities[$0]
                }.sorted()
                return .mismatch("entities differ: \(keys.prefix(5).joined(separator: ", "))")
            }
            return maintained.stateHash == replayed.stateHash ? .matches : .mismatch("state hash")
        }
    }
}

extension Replica {
    /// Builds the maintained tentative view of every group that has receipts waiting but no
    /// current view (a store migrated from before it, or written by an older binary since), so
    /// reads stop folding from scratch before the group's next write. The daemon calls it at
    /// start; it costs one fold per such group and nothing for the others. Returns their number.
    @discardableResult
    public func buildMissingTentativeViews() throws -> Int {
        let groups = try store.read { db in
            try db.knownGroups().filter { group in
                try !db.isTombstoned(group: group) && db.overlayGroup(group)?.fresh != true
                    && db.hasTentativeReceipts(group: group)
            }
        }
        guard !groups.isEmpty else { return 0 }
        _ = try write { p in for group in groups { p.noteOverlayRebuild(group) } }
        return groups.count
    }
}
