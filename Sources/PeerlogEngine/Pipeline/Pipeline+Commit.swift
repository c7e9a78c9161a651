import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

extension Pipeline {
    /// Applies `r` at position `e.seq`. Authorization is decided from the committed prefix only
    /// (`committedState`), so every replica reaches the same outcome; an unauthorized receipt
    /// is recorded as rejected with its reason and has no effect.
    mutating func commit(_ e: Envelope, receipt r: Receipt) throws {
        // Taken out while `commit` runs (it mutates self), so the table is not copied.
        var runs = caches.envelopeRuns
        caches.envelopeRuns = EnvelopeRunRows()
        defer { caches.envelopeRuns = runs }
        try commit(seq: e.seq, receipt: r) { db, outcome, reason in
            try db.insertEnvelope(e, outcome: outcome, reason: reason, runs: &runs)
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
        if caches.earliestOlderTentative[r.group] == .some(r.cid) { caches.earliestOlderTentative[r.group] = nil }
        try overlayBaseline(r.group)
        let state = try committedState(r.group)
        var rejected: String?
        var changedBase = false
        // The rules, and in an encrypted group the sealed body opened with this device's keys.
        let keys = state?.encryption != nil ? try epochKeys(r.group) : [:]
        let outcome = Fold.step(r, group: r.group, state: state, keys: { keys[$0] })
        if let reason = outcome.rejected {
            rejected = reason
        } else if let op = outcome.op, let next = outcome.state {
            rejected = try applyEffects(op, receipt: r, seq: seq, before: state, after: next)
            changedBase = op.changesGroupState
        }
        noteOverlayCommitted(r, changedBase: changedBase)
        try record(db, rejected == nil ? .applied : .rejected, rejected)
        try db.setReceiptSeq(r.cid, seq: seq)
        caches.committedSeqs[r.group] = seq
        seqDirty.insert(r.group)  // settle also clears the seq requests this answered
        report.committed += 1
        report.events.append(.committed(group: r.group, seq: seq, cid: r.cid, type: r.type, rejected: rejected))
    }

    /// The earliest (HLC, CID) tentative receipt that was already held before this
    /// transaction: what views showed next. Receipts arriving and committing in the same
    /// transaction were never shown, so they cannot have been reordered.
    mutating func earliestOlderTentative(_ group: GroupID) throws -> CID? {
        try caches.earliestOlderTentative.value(group) { [db, firstNewReceiptID] in
            try db.firstTentative(group: $0, before: firstNewReceiptID)
        }
    }

    /// Returns why an `entity.write` is rejected at this position (its conditions and operations
    /// against the committed entities, §9.7), or nil when everything applied.
    private mutating func applyEffects(
        _ op: GroupOperation, receipt r: Receipt, seq: UInt64, before: GroupState?, after: GroupState
    ) throws -> String? {
        switch op {
        case .entityPut(let key, let value):
            try commitEntity(r, seq: seq, key: key, value: value)
        case .entityDelete(let key):
            try commitEntity(r, seq: seq, key: key, value: nil)
        case .entityWrite(let write):
            let outcome = try write.apply { [db] in try db.committedHeld(r.group, key: $0) }
            switch outcome {
            case .failure(let rejection): return rejection.reason
            case .success(let changed):
                for (key, value) in changed { try commitEntity(r, seq: seq, key: key, value: value) }
            }
        case .application:
            report.events.append(.application(group: r.group, seq: seq, receipt: r))
        case .sealed(_, let body):
            if after.encryption == nil {
                // A plaintext group's application receipt whose body has the sealed shape.
                report.events.append(.application(group: r.group, seq: seq, receipt: r))
            } else if !after.isRelay(local.device) {
                // Opened later, when the key arrives (`rematerialize`). The group's relay, never
                // a member, never gets keys: it keeps no note.
                try db.insertSealedWaiting(group: r.group, seq: seq, keyID: body.keyID)
            }
        default:
            try saveState(after, seq: seq)
            if case .inviteAccepted = op, after.encryption != nil { noteKeyShare(r, state: after) }
            if after.encryption?.validKeys.isEmpty == true, before?.encryption?.validKeys.isEmpty == false {
                noteRotation(r, state: after)
            }
            if case .deleted = op {
                // A tombstone never expires; the log stays as evidence, materialized data goes.
                try db.insertTombstone(group: r.group, cid: r.cid, seq: seq, at: now)
                try db.deleteAllEntities(group: r.group)
                caches.tombstones[r.group] = true
            }
        }
        return nil
    }

    /// Writes (or with nil deletes) the committed row of `key`, written by `r` at `seq`.
    private mutating func commitEntity(_ r: Receipt, seq: UInt64, key: String, value: CBOR?) throws {
        try noteViewChange(r.group, key: key)
        let encoded = value.map { CBOREncoder.encode($0) }
        if let encoded {
            try db.putEntity(group: r.group, key: key, value: encoded, cid: r.cid, seq: seq)
        } else {
            try db.deleteEntity(group: r.group, key: key)
        }
        caches.committedHere[ViewKey(group: r.group, key: key)] = CommittedValue(bytes: encoded)
    }

    mutating func saveState(_ state: GroupState, seq: UInt64) throws {
        let members = state.members.values.sorted { $0.identity < $1.identity }.map {
            (identity: $0.identity.bytes, role: $0.role.rawValue, status: $0.status.rawValue)
        }
        try db.saveGroupState(group: state.group, blob: state.storedBytes, members: members, seq: seq, at: now)
        caches.state[state.group] = .some(state)
    }

    /// A member's device just accepted an invitation to an encrypted group: this device hands it
    /// the keys it holds after the transaction (`Replica.shareEpochKeys`, which checks this
    /// device's membership in its tentative view: an invitee whose own acceptance is not
    /// committed yet shares too, so two members joining at once read each other) and, in a group a
    /// device sequences alone, only when it is that device (one sharer, not every member).
    private mutating func noteKeyShare(_ r: Receipt, state: GroupState) {
        guard r.author != local.device, state.member(local.identity) != nil else { return }
        if case .solo(let sequencer) = state.authority, sequencer != local.device { return }
        report.keyShares.append((r.group, r.certificate))
    }

    /// A departure this device did not write emptied an encrypted group's keys (a member left,
    /// or another device's removal or revocation arrived without its rotation yet): this device
    /// starts a new epoch after the transaction (`Replica.rotateEpochIfDue`), under the same
    /// one-sharer rule as `noteKeyShare`. Concurrent rotations are harmless (§22.5).
    private mutating func noteRotation(_ r: Receipt, state: GroupState) {
        guard r.author != local.device, state.activeRole(of: local.identity) != nil else { return }
        if case .solo(let sequencer) = state.authority, sequencer != local.device { return }
        report.rotations.insert(r.group)
    }
}

extension GroupState {
    /// Whether `device` is the relay that sequences the group.
    func isRelay(_ device: DeviceID) -> Bool {
        if case .relay(let key, _) = authority { return key == device }
        return false
    }
}
