import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// What an elected sequencer's driver needs from the replica (docs/PROTOCOL.md §18).
extension Replica {
    /// The group's elected authority in the committed state, or nil (solo, relay, unknown).
    package func electedAuthority(of group: GroupID) throws -> ElectedAuthority? {
        try store.read { db in
            guard case .elected(let voters)? = try committedFold(group: group, db: db, entities: .none).state?.authority
            else { return nil }
            return ElectedAuthority(group: group, voters: voters, base: try db.authorityChange(group: group)?.seq ?? 0)
        }
    }

    package func sequencerState(of group: GroupID) throws -> StoredSequencerState? {
        try store.read { try $0.sequencerState(group: group) }
    }

    /// Starts the voter's state over for an authority beginning after `base`.
    package func resetSequencer(group: GroupID, base: UInt64, term: UInt64) throws {
        let now = clock()
        try store.write { try $0.resetSequencer(group: group, base: base, term: term, at: now) }
    }

    /// Persists one change (durable when this returns: SQLite commits with fsync in WAL mode).
    package func saveSequencer(
        group: GroupID, term: UInt64, votedFor: DeviceID?, truncatedAfter: UInt64?,
        appended: [(seq: UInt64, cid: CID, term: UInt64)]
    ) throws {
        let now = clock()
        try store.write {
            try $0.saveSequencer(
                group: group, term: term, votedFor: votedFor, truncatedAfter: truncatedAfter, appended: appended,
                at: now)
        }
    }

    /// As the elected leader of `term`: signs an envelope for each committed assignment and
    /// applies them like any envelope (peers then receive them by sync).
    @discardableResult
    package func commitElected(
        group: GroupID, assignments: [(seq: UInt64, cid: CID)], term: UInt64
    ) throws -> IngestReport {
        let now = clock()
        // Consecutive seqs share one signature (batched runs, §3.5); a gap starts a new run.
        var envelopes = [Envelope]()
        var start = 0
        for i in assignments.indices
        where i + 1 == assignments.count || assignments[i + 1].seq != assignments[i].seq + 1 {
            envelopes += try EnvelopeRun.signRuns(
                group: group, firstSeq: assignments[start].seq, receipts: assignments[start...i].map(\.cid),
                term: term, receivedAt: now, key: local.signingKey)
            start = i + 1
        }
        return try ingest(receipts: [], envelopes: envelopes)
    }

    /// Tentative receipts a leader may assign next, in tentative order (§11): not refused, not
    /// from an author flagged for equivocation at or below their counter. Only the `limit`
    /// earliest by HLC are read, so a large backlog costs the same per step as a small one.
    package func assignableReceipts(of group: GroupID, limit: Int = 1024) throws -> [Receipt] {
        try store.read { db in
            let flagged = try db.flaggedAuthors(group: group)
            let earliest = try db.earliestUnrefusedTentativeReceipts(group: group, limit: limit)
            let candidates = earliest.map(\.receipt).filter { r in flagged[r.author].map { r.counter < $0 } ?? true }
            return TentativeOrder.order(candidates)
        }
    }

    /// Which of these receipts are committed (one read transaction).
    public func committedAmong(_ cids: Set<CID>) throws -> Set<CID> {
        try store.read { db in try Set(cids.filter { try db.committedSeq(of: $0) != nil }) }
    }

    /// Which of these receipts of `group` are settled here: committed, or refused by this
    /// device's sequencer (one read transaction).
    package func settledAmong(_ cids: Set<CID>, group: GroupID) throws -> Set<CID> {
        try store.read { db in
            let refused = try db.refusals(group: group)
            return try Set(cids.filter { try refused[$0] != nil || db.committedSeq(of: $0) != nil })
        }
    }

    /// Whether a receipt is committed (at any seq).
    public func isCommitted(_ cid: CID) throws -> Bool { try store.read { try $0.committedSeq(of: cid) != nil } }
}

extension Replica {
    /// Runs the local sequencer over `groups` again (e.g. after a relay caught up from the
    /// shared store following a contended assignment). Does nothing where we do not sequence.
    @discardableResult
    package func resequence(_ groups: [GroupID]) throws -> IngestReport {
        try write { p in for g in groups { p.touch(g) } }
    }
}
