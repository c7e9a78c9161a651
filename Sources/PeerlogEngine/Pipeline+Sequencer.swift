import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

extension Pipeline {
    /// When this device is the group's solo sequencer or its relay (or created the group and
    /// nothing is committed yet), assigns the next seqs to tentative receipts in tentative order and
    /// commits them. Receipts that the committed state does not authorize are refused, not
    /// sequenced; receipts whose parents are not held yet wait.
    mutating func sequenceIfAuthority(_ group: GroupID) throws {
        guard try !isTombstoned(group) else { return }
        if let state = try committedState(group) {
            guard sequencesHere(state) else { return }
        } else if try !db.hasTentativeCreation(group: group, by: local.device) {
            return  // not created yet, and not by us: someone else sequences seq 1
        }
        let refused = try db.refusals(group: group)
        let flagged = try db.flaggedAuthors(group: group)
        let candidates = try db.tentativeReceipts(group: group).map(\.receipt).filter { r in
            refused[r.cid] == nil && (flagged[r.author].map { r.counter < $0 } ?? true)
        }
        guard !candidates.isEmpty else { return }
        var placed = Set<CID>()
        var missingParents = [CID]()
        // Seqs committed in this pass, signed together at its end (one signature per run).
        var run = [CID](), runStart: UInt64 = 0
        // With a shared store, assignments not reserved yet (signed single envelopes, §19.3).
        var gated = GatedBatch()
        if gate != nil { try openGatedBatch(&gated) }
        var stopped = false
        for r in TentativeOrder.order(candidates) {
            let state = try committedState(group)
            if let state {
                guard sequencesHere(state), state.status == .active else { stopped = true; break }
            } else if !(r.type == "group.created" && r.author == local.device) {
                continue  // only the creating device may commit seq 1
            }
            // Causal completeness: every parent is committed, refused, or placed earlier in this pass.
            var missing = [CID]()
            for p in r.parents where !placed.contains(p) && refused[p] == nil {
                if try db.committedSeq(of: p) == nil { missing.append(p) }
            }
            if !missing.isEmpty {
                missingParents += try missing.filter { try !db.receiptExists($0) }
                continue
            }
            if let reason = try authorizationProblem(r, state: state) {
                try db.insertRefusal(r.cid, group: group, reason: reason, at: now)
                report.events.append(.refused(group: group, cid: r.cid, reason: reason))
                placed.insert(r.cid)
                continue
            }
            let seq = try db.committedSeq(group: group) + 1
            if gate != nil {
                // A shared store of record reserves each seq with its signed envelope: single form.
                let envelope = try Envelope.sign(group: group, seq: seq, receipt: r.cid, term: 0, receivedAt: now, key: local.signingKey)
                try commit(envelope, receipt: r)
                gated.entries.append((envelope, r))
            } else {
                let (device, at) = (local.device, now)
                try commit(seq: seq, receipt: r) { db, outcome, reason in
                    try db.insertUnsignedEnvelope(group: group, seq: seq, cid: r.cid, term: 0, sequencer: device, receivedAt: at, outcome: outcome, reason: reason)
                }
                if run.isEmpty { runStart = seq }
                run.append(r.cid)
            }
            placed.insert(r.cid)
            if let gate, gated.entries.count >= limits.maxReservationBatch {
                // Refused: another relay process took one of these seqs or receipts; catch up first.
                guard try closeGatedBatch(&gated, gate: gate, group: group) else { break }
                try openGatedBatch(&gated)
            }
        }
        if let gate { _ = try closeGatedBatch(&gated, gate: gate, group: group) }
        try signRun(group: group, firstSeq: runStart, receipts: run)
        if !stopped, !missingParents.isEmpty { try request(.requestReceipts(group: group, cids: Array(Set(missingParents)).sorted())) }
    }

    /// Signs the seqs committed in one pass (a single envelope for one seq, batched runs of
    /// up to `EnvelopeRun.maxLength` otherwise) into their envelope rows.
    mutating func signRun(group: GroupID, firstSeq: UInt64, receipts: [CID]) throws {
        guard !receipts.isEmpty else { return }
        for e in try EnvelopeRun.signRuns(group: group, firstSeq: firstSeq, receipts: receipts, term: 0, receivedAt: now, key: local.signingKey) {
            try db.setEnvelopeForm(e)
        }
    }

    /// Whether this device sequences the group: its solo device or its relay.
    func sequencesHere(_ state: GroupState) -> Bool {
        switch state.authority {
        case .solo(let device): device == local.device
        case .relay(let key, _): key == local.device
        case .elected: false
        }
    }

    /// Why the committed state would reject `r` at the next seq, or nil.
    func authorizationProblem(_ r: Receipt, state: GroupState?) throws -> String? {
        do {
            let op = try GroupOperation(receiptType: r.type, body: r.body)
            if case .failure(let v) = GroupRules.apply(op, sender: r.identity, device: r.author, group: r.group, to: state) { return v.reason }
            return nil
        } catch {
            return error.reason
        }
    }
}
