import PeerlogModel
import PeerlogStore

extension Replica {
    /// How far this device is from `group`'s offline limits now (docs/PROTOCOL.md §10.5): two
    /// index probes and one row, whatever the size of the backlog.
    public func offlineHeadroom(of group: GroupID) throws -> OfflineHeadroom {
        let now = clock()
        return try store.read { try offlineHeadroom(of: group, db: $0, now: now) }
    }

    /// Sets this replica's own offline limits for `group` (local policy: never sent, other
    /// devices keep theirs); nil keeps the replica's default for that limit, and two nils
    /// remove the override. `maxWaiting` 0 lets no write wait (only group operations, within
    /// the reserve). Refuses a negative count and a group not held here.
    public func setOfflineLimits(maxWaiting: Int?, maxAgeMillis: UInt64?, of group: GroupID) throws {
        if let maxWaiting, maxWaiting < 0 {
            throw ReplicaError(
                .invalidOperation, "the offline limit on waiting writes must be 0 or more, not \(maxWaiting)")
        }
        _ = try store.write { db in
            guard try db.knowsGroup(group) else {
                throw ReplicaError(.groupNotFound, "this replica holds no group \(group)")
            }
            try db.setOfflineLimits(
                StoredOfflineLimits(maxWaiting: maxWaiting, maxAgeMillis: maxAgeMillis), group: group)
        }
    }

    /// Compares the kept counts of waiting receipts of `group` (every author's, migration 0011's
    /// triggers) with a count over the receipts (`peerlog check`): nil when they agree, else
    /// what differs.
    public func checkWaitingCounts(of group: GroupID) throws -> String? {
        let mismatches = try store.read { try $0.waitingCountMismatches(group: group) }
        guard !mismatches.isEmpty else { return nil }
        return mismatches.map { m in
            let author = (try? DeviceID(bytes: m.author).string) ?? "an author"
            return "\(author): kept \(m.kept) waiting, counted \(m.counted)"
        }.joined(separator: "; ")
    }

    func offlineHeadroom(of group: GroupID, db: StoreDB, now: UInt64) throws -> OfflineHeadroom {
        let waiting = try db.waitingReceipts(group: group, author: local.device)
        let stored = try db.offlineLimits(group: group)
        let limits = OfflineLimits(
            maxWaiting: stored.maxWaiting ?? self.limits.maxWaitingLocalWrites,
            maxAgeMillis: stored.maxAgeMillis ?? self.limits.maxWaitingLocalAgeMillis,
            groupOperationReserve: self.limits.offlineGroupOperationReserve)
        return OfflineHeadroom(
            waiting: waiting.count, oldestStoredAt: waiting.oldestStoredAt, now: now, limits: limits,
            overridesMaxWaiting: stored.maxWaiting != nil, overridesMaxAge: stored.maxAgeMillis != nil)
    }

    /// Throws `offlineLimitReached` when writing `ops` here would pass an offline limit of
    /// `group`. Runs inside the write's transaction, so no other process's write slips between.
    /// Where the write commits in its own transaction (this device sequences the group, or is
    /// creating it), nothing of it will wait, so there is nothing to check.
    func checkOfflineLimits(writing ops: [GroupOperation], to group: GroupID, pipeline p: inout Pipeline) throws {
        let creating = ops.contains { if case .created = $0 { true } else { false } }
        if try p.commitsLocalWritesAtOnce(group, creating: creating) { return }
        let headroom = try offlineHeadroom(of: group, db: p.db, now: p.now)
        let onlyGroupOperations = ops.allSatisfy { $0.receiptType.hasPrefix("group.") }
        if let refusal = headroom.refusal(adding: ops.count, onlyGroupOperations: onlyGroupOperations, group: group) {
            throw refusal
        }
    }
}

extension Pipeline {
    /// Whether a local write to `group` commits in its own transaction: this device is the
    /// group's solo sequencer or its relay (without a gate), or is creating the group. The
    /// committed state is the one the write's sequencing pass reads anyway (memoized).
    mutating func commitsLocalWritesAtOnce(_ group: GroupID, creating: Bool) throws -> Bool {
        if gated { return false }
        if let state = try committedState(group) { return sequencesHere(state) }
        return try creating || db.hasTentativeCreation(group: group, by: local.device)
    }
}
