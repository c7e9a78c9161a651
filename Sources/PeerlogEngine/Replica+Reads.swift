import Dispatch
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore
import Synchronization

extension Replica {
    /// Groups this replica knows, by id.
    public func groupIDs() throws -> [GroupID] { try store.read { try $0.knownGroups().sorted() } }

    /// Whether `groupIDs()` holds `group` (one lookup: what a write checks first).
    public func knowsGroup(_ group: GroupID) throws -> Bool { try store.read { try $0.knowsGroup(group) } }

    /// Finds a group by id text or by (unique) name.
    public func resolveGroup(_ text: String) throws -> GroupID {
        if let id = try? GroupID(string: text) { return id }
        var matches = [GroupID]()
        for id in try groupIDs() where try state(of: id, view: .tentative)?.name == text { matches.append(id) }
        guard let first = matches.first else {
            throw ReplicaError(.groupNotFound, "no group named or with id \"\(text)\"")
        }
        guard matches.count == 1 else {
            throw ReplicaError(.ambiguousGroupName, "several groups are named \"\(text)\"; use the group id")
        }
        return first
    }

    /// The group's state in `view`, or nil when no `group.created` took effect in that view.
    public func state(of group: GroupID, view: View) throws -> GroupState? {
        try store.read { try fold(group: group, view: view, db: $0, entities: .none).state }
    }

    /// Members with where each one's standing comes from.
    public func members(of group: GroupID, view: View) throws -> [MemberView] {
        try store.read { db in
            let committed = try db.groupStateBlob(group: group).map { try GroupState(storedBytes: $0) }
            let current = try fold(group: group, view: view, db: db, entities: .none).state
            let rows = try db.members(group: group)
            return (current?.sortedMembers ?? []).map { m in
                let same = committed?.members[m.identity] == m
                let since = rows.first { $0.identity == m.identity.bytes }?.sinceSeq ?? 0
                return MemberView(member: m, status: same ? .committed(seq: since) : .tentative)
            }
        }
    }

    /// The current value of entity `key` in `view`, or nil when no receipt set it or it was deleted.
    public func entity(_ key: String, in group: GroupID, view: View) throws -> EntityValue? {
        try store.read { try fold(group: group, view: view, db: $0, entities: .key(key)).entities[key] }
    }

    /// Every entity of the group in `view`, sorted by key bytes (UTF-8).
    public func entities(in group: GroupID, view: View) throws -> [EntityValue] {
        try store.read {
            try fold(group: group, view: view, db: $0).entities.values.sorted {
                Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8))
            }
        }
    }

    /// The deterministic digest of the group's materialized state in a view (docs/PROTOCOL.md §12).
    public func stateHash(of group: GroupID, view: View) throws -> [UInt8] {
        try store.read { try fold(group: group, view: view, db: $0).stateHash }
    }

    /// Compares the stored parent links (`receipt_parents`, `receipt_parents_unstored`) with the
    /// parents every stored receipt names (`peerlog check`): nil when they are exactly those, else
    /// what differs. Reads every receipt.
    public func checkParentLinks() throws -> String? {
        let (missing, extra) = try store.read { try $0.parentLinkDifferences() }
        guard missing > 0 || extra > 0 else { return nil }
        return "\(missing) link(s) a receipt names are missing, \(extra) stored link(s) no receipt names"
    }

    /// Checks the row numbers stored rows name each other by (`peerlog check`): each receipt's
    /// author number against its certificate's device, each envelope's receipt row against its
    /// group and seq. nil when all agree, else what differs. Reads every receipt and envelope.
    public func checkRowReferences() throws -> String? {
        let (receipts, envelopes) = try store.read { try $0.rowReferenceDifferences() }
        guard receipts > 0 || envelopes > 0 else { return nil }
        return "\(receipts) receipt(s) whose author is not their certificate's device, "
            + "\(envelopes) envelope(s) whose receipt row is missing or at another group or seq"
    }

    /// The committed state hash recomputed by replaying the stored committed log from nothing (or
    /// from the group's floor snapshot, §23.2, whose content is checked against its hash),
    /// ignoring the materialized tables: equal to `stateHash(.committed)` in a consistent store.
    public func replayedStateHash(of group: GroupID) throws -> [UInt8] {
        try store.read { db in
            var (fold, from) = try Self.replayBase(group: group, db: db)
            fold.keys = try KeyringStorage.keys(group: group, db: db, local: local)
            for item in try db.committedLog(group: group, fromSeq: from) {
                _ = fold.apply(item.receipt, status: .committed(seq: item.seq))
            }
            return fold.stateHash
        }
    }

    /// The group's log: committed receipts in seq order, then (in the tentative view) the
    /// tentative ones in tentative order, each marked and with its outcome.
    public func log(of group: GroupID, view: View) throws -> [LogItem] {
        try store.read { db in
            var items = try db.committedLog(group: group).map {
                LogItem(receipt: $0.receipt, status: .committed(seq: $0.seq), rejected: $0.rejected)
            }
            guard view == .tentative else { return items }
            var fold = try committedFold(group: group, db: db)
            try openSealed(in: &fold, db: db)
            for r in try tentativeReceipts(group: group, db: db) {
                items.append(LogItem(receipt: r, status: .tentative, rejected: fold.apply(r, status: .tentative)))
            }
            return items
        }
    }

    /// Committed high-water mark, tentative count, and per-author contiguous counters.
    public func vector(of group: GroupID) throws -> SequenceVector {
        try store.read { db in
            SequenceVector(committed: try db.committedSeq(group: group), authors: try db.authorCounters(group: group))
        }
    }

    /// How many of the group's held receipts have no seq yet (tentative).
    public func tentativeCount(of group: GroupID) throws -> Int {
        try store.read { try $0.tentativeCount(group: group) }
    }

    /// Items that gave up (too many retries, too old: `ReplicaLimits`), in the order they gave up.
    public func deadLetters() throws -> [QueuedItem] { try store.read { try $0.deadLetters() } }

    /// Receipts refused because their signature or certificate failed, newest first: what they
    /// claim and which peer sent them (evidence of a forgery attempt or corruption).
    public func invalidReceipts(limit: Int = 1_000) throws -> [InvalidReceipt] {
        try store.read { try $0.invalidReceipts(limit: limit) }
    }

    /// What waits now: receipts for missing author counters, then envelopes for a seq gap,
    /// each sorted by group.
    public func pending() throws -> [QueuedItem] {
        try store.read { try $0.allPendingReceipts() + $0.allPendingEnvelopes() }
    }
}
