import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

extension Pipeline {
    /// One envelope from anywhere. Queued first; `drainEnvelopes` commits strictly in seq order.
    mutating func ingest(envelope e: Envelope, verified: Bool) throws {
        if !verified, case .invalid(let why) = e.verify() {
            report.rejected.append((e.receipt, why))
            return
        }
        if let deletedAt = try tombstoneSeq(e.group), e.seq > deletedAt {
            report.ignored += 1
            return
        }
        let hwm = try committedSeqCached(e.group)
        if e.seq <= hwm {
            let existing = try db.envelopeCID(group: e.group, seq: e.seq)
            // No row at a committed seq: below the group's floor, pruned or never held (§23).
            if existing == e.receipt || existing == nil {
                report.duplicates += 1
            } else {
                report.rejected.append(
                    (
                        e.receipt,
                        "conflicting envelope: seq \(e.seq) of the group is already committed as \(existing.map(\.string) ?? "?")"
                    ))
            }
            return
        }
        // The common case on catch-up: next in line with its receipt at hand. Commit now.
        if e.seq == hwm + 1, try db.pendingEnvelopeCount(group: e.group) == 0,
            let receipt = try receiptForCommit(e.receipt),
            try authorityProblem(e, receipt: receipt) == nil
        {
            try commit(e, receipt: receipt)
            touch(e.group)
            return
        }
        guard try pendingEnvelopeCount(e.group) < limits.maxPendingEnvelopesPerGroup else {
            report.rejected.append(
                (e.receipt, "pending envelope queue of the group is full (\(limits.maxPendingEnvelopesPerGroup))"))
            return
        }
        try db.insertPendingEnvelope(e, reason: "waiting for seq \(hwm + 1)", at: now)
        caches.queuedHere[EnvelopeKey(group: e.group, seq: e.seq, cid: e.receipt)] = e
        caches.pendingEnvelopeCounts[e.group] = nil  // INSERT OR IGNORE: recount when next needed
        touch(e.group)
    }

    /// The committed high-water mark; within one ingest batch, envelopes queue and commit only
    /// at the end (in `settle`), so the value read once stays right until then.
    mutating func committedSeqCached(_ group: GroupID) throws -> UInt64 {
        try caches.committedSeqs.value(group) { [db] in try db.committedSeq(group: $0) }
    }

    private func tombstoneSeq(_ group: GroupID) throws -> UInt64? {
        guard try db.isTombstoned(group: group) else { return nil }
        return try db.committedSeq(group: group)
    }

    /// Commits queued envelopes while the next seq is available, and asks for what is missing.
    /// The queue is read once per call and indexed by seq; commits then walk it in memory.
    mutating func drainEnvelopes(_ group: GroupID) throws {
        let queued = try db.pendingEnvelopes(group: group)
        guard !queued.isEmpty else { return }
        var bySeq = [UInt64: [QueuedItem]]()
        for item in queued { bySeq[item.seqOrCounter, default: []].append(item) }
        var hwm = try db.committedSeq(group: group)
        // Anything at or below the high-water mark is settled: drop it.
        for (seq, items) in bySeq where seq <= hwm {
            for stale in items { try db.deletePendingEnvelope(group: group, seq: seq, cid: stale.cid) }
            bySeq[seq] = nil
        }
        caches.pendingEnvelopeCounts[group] = nil
        while let next = bySeq[hwm + 1] {
            var committedOne = false
            var waiting = [QueuedItem]()
            for item in next {
                let e =
                    try caches.queuedHere[EnvelopeKey(group: group, seq: item.seqOrCounter, cid: item.cid)]
                    ?? Envelope(encoded: item.encoded)
                guard let receipt = try receiptForCommit(e.receipt) else {
                    try db.updatePendingEnvelopeReason(
                        group: group, seq: e.seq, cid: e.receipt, reason: "waiting for receipt \(e.receipt)")
                    try request(.requestReceipts(group: group, cids: [e.receipt]))
                    waiting.append(item)
                    continue
                }
                try db.deletePendingEnvelope(group: group, seq: e.seq, cid: e.receipt)
                if let why = try authorityProblem(e, receipt: receipt) {
                    // The authority for seq N is fixed once N-1 is committed, so this is final.
                    try db.insertDeadLetter(item, reason: why, at: now)
                    report.rejected.append((e.receipt, why))
                    report.events.append(.deadLettered(kind: .envelope, cid: e.receipt, reason: why))
                    continue
                }
                try commit(e, receipt: receipt)
                committedOne = true
                break
            }
            if committedOne {
                // Other candidates for the same seq lose: the committed one is final.
                for other in next where try db.envelopeCID(group: group, seq: hwm + 1) != other.cid {
                    try db.deletePendingEnvelope(group: group, seq: hwm + 1, cid: other.cid)
                }
                bySeq[hwm + 1] = nil
                hwm += 1
            } else {
                bySeq[hwm + 1] = waiting.isEmpty ? nil : waiting
                break
            }
        }
        let later = bySeq.keys.filter { $0 > hwm }
        if bySeq[hwm + 1] == nil, !later.isEmpty { try requestGaps(group: group, hwm: hwm, pendingSeqs: later) }
    }

    /// The receipt an envelope names, if held. If it is held only as equivocation evidence and
    /// its twin is still tentative, the twin steps aside: the sequencer's choice is final.
    mutating func receiptForCommit(_ cid: CID) throws -> Receipt? {
        if let here = caches.storedHere[cid] { return here }
        if let stored = try db.loadReceipt(cid) { return stored.receipt }
        guard let evidence = try db.equivocation(cid),
            let twin = try db.receiptCID(group: evidence.group, author: evidence.author, counter: evidence.counter),
            let twinStored = try db.loadReceipt(twin), twinStored.seq == nil
        else { return nil }
        try overlayBaseline(evidence.group)
        try db.deleteReceipt(twin)
        caches.storedHere[twin] = nil
        noteOverlayRebuild(evidence.group)
        try db.insertEquivocation(twinStored.receipt, at: now)
        try db.markProcessed(
            twin, group: evidence.group, outcome: .equivocation, reason: "same author counter as \(cid)", at: now)
        try db.deleteEquivocation(cid)
        try db.insertReceipt(evidence, receivedAt: now)
        return evidence
    }

    /// Why `e` is not from the group's sequencer authority for its seq, or nil if it is.
    mutating func authorityProblem(_ e: Envelope, receipt: Receipt) throws -> String? {
        guard receipt.group == e.group else { return "envelope names a receipt of another group" }
        if e.seq == 1 {
            guard receipt.type == "group.created" else { return "seq 1 must be the group's group.created receipt" }
            return e.sequencer == receipt.author
                ? nil : "seq 1 must be sequenced by the creating device \(receipt.author)"
        }
        guard let state = try committedState(e.group) else { return "group has no committed state" }
        switch state.authority {
        case .solo(let device):
            return e.sequencer == device
                ? nil : "envelope signed by \(e.sequencer), but the group's sequencer is the device \(device)"
        case .elected(let voters):
            guard voters.contains(e.sequencer) else {
                return "envelope signed by \(e.sequencer), who is not a voter of the group"
            }
            let floor = ElectedTerms.floor(base: try db.authorityChange(group: e.group)?.seq ?? 0)
            return e.term >= floor
                ? nil
                : "envelope term \(e.term) is below \(floor), the first term of the group's current elected authority"
        case .relay(let key, _):
            return e.sequencer == key
                ? nil : "envelope signed by \(e.sequencer), but the group's sequencer is the relay \(key)"
        }
    }

    /// Emits one request per missing seq range between the high-water mark and queued envelopes.
    mutating func requestGaps(group: GroupID, hwm: UInt64, pendingSeqs: [UInt64]) throws {
        var expected = hwm + 1
        for seq in Set(pendingSeqs).sorted() {
            if seq > expected { try request(.requestSeqRange(group: group, from: expected, to: seq - 1)) }
            expected = seq + 1
        }
    }
}
