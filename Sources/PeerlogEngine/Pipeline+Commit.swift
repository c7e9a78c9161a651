import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

extension Pipeline {
    /// Applies `r` at position `e.seq`. Authorization is decided from the committed prefix only
    /// (`committedState`), so every replica reaches the same outcome; an unauthorized receipt
    /// is recorded as rejected with its reason and has no effect.
    mutating func commit(_ e: Envelope, receipt r: Receipt) throws {
        try commit(seq: e.seq, receipt: r) { db, outcome, reason in
            try db.insertEnvelope(e, outcome: outcome, reason: reason)
        }
    }

    /// `record` writes the envelope row; a sequencer signing a batched run writes a row to be
    /// signed at the end of its pass (`Pipeline+Sequencer.swift`).
    mutating func commit(
        seq: UInt64, receipt r: Receipt, record: (StoreDB, CommitOutcome, String?) throws -> Void
    ) throws {
        if let expected = try earliestOlderTentative(r.group), expected != r.cid {
            report.events.append(.reordered(group: r.group, seq: seq, expected: expected, committed: r.cid))
        }
        if earliestOlderTentativeCache[r.group] == .some(r.cid) { earliestOlderTentativeCache[r.group] = nil }
        try overlayBaseline(r.group)
        let state = try committedState(r.group)
        var rejected: String?
        var changedBase = false
        do {
            let op = try GroupOperation(receiptType: r.type, body: r.body)
            switch GroupRules.apply(op, sender: r.identity, device: r.author, group: r.group, to: state) {
            case .failure(let violation): rejected = violation.reason
            case .success(let next):
                try applyEffects(op, receipt: r, seq: seq, before: state, after: next)
                changedBase = op.changesGroupState
            }
        } catch let violation as RuleViolation {
            rejected = violation.reason
        }
        noteOverlayCommitted(r, changedBase: changedBase)
        try record(db, rejected == nil ? .applied : .rejected, rejected)
        try db.setReceiptSeq(r.cid, seq: seq)
        committedSeqs[r.group] = seq
        seqDirty.insert(r.group)
        try db.clearBackfillRequests(group: r.group, kind: .seq, subject: [], upTo: seq)
        report.committed += 1
        report.events.append(.committed(group: r.group, seq: seq, cid: r.cid, type: r.type, rejected: rejected))
    }

    /// The earliest (HLC, CID) tentative receipt that was already held before this
    /// transaction: what views showed next. Receipts arriving and committing in the same
    /// transaction were never shown, so they cannot have been reordered.
    mutating func earliestOlderTentative(_ group: GroupID) throws -> CID? {
        try earliestOlderTentativeCache.value(group) { [db, firstNewReceiptID] in
            try db.firstTentative(group: $0, before: firstNewReceiptID)
        }
    }

    private mutating func applyEffects(
        _ op: GroupOperation, receipt r: Receipt, seq: UInt64, before: GroupState?, after: GroupState
    ) throws {
        switch op {
        case .entityPut(let key, let value):
            try noteViewChange(r.group, key: key)
            let encoded = CBOREncoder.encode(value)
            try db.putEntity(group: r.group, key: key, value: encoded, cid: r.cid, seq: seq)
            committedHere[ViewKey(group: r.group, key: key)] = CommittedValue(bytes: encoded)
        case .entityDelete(let key):
            try noteViewChange(r.group, key: key)
            try db.deleteEntity(group: r.group, key: key)
            committedHere[ViewKey(group: r.group, key: key)] = CommittedValue(bytes: nil)
        case .application:
            report.events.append(.application(group: r.group, seq: seq, receipt: r))
        default:
            try saveState(after, seq: seq)
            if case .deleted = op {
                // A tombstone never expires; the log stays as evidence, materialized data goes.
                try db.insertTombstone(group: r.group, cid: r.cid, seq: seq, at: now)
                try db.deleteAllEntities(group: r.group)
                tombstoneCache[r.group] = true
            }
        }
    }

    mutating func saveState(_ state: GroupState, seq: UInt64) throws {
        let members = state.members.values.sorted { $0.identity < $1.identity }.map {
            (identity: $0.identity.bytes, role: $0.role.rawValue, status: $0.status.rawValue)
        }
        try db.saveGroupState(group: state.group, blob: state.storedBytes, members: members, seq: seq, at: now)
        stateCache[state.group] = .some(state)
    }
}
