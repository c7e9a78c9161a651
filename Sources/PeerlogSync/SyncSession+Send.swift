import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// Sending: batches are generated from the store only when credit allows one to leave, so a
/// catch-up of any size costs one batch of memory; live changes only mark a group dirty.
extension SyncSession {
    func pump(into out: inout [SyncAction]) throws {
        while phase == .open {
            flush(into: &out)
            guard queue.isEmpty, credit > 0, let g = nextGroupWithWork() else { return }
            try generate(g)
            // Checked after sending what credit allows: batches left over mean credit is spent.
            flush(into: &out)
            if queue.count(where: \.isBatch) > limits.maxQueuedBatches { dropQueue(into: &out) }
        }
    }

    /// Sends queued messages in order while credit lasts (control messages need none).
    func flush(into out: inout [SyncAction]) {
        var sentCount = 0
        var withdrawals = [(GroupID, String)]()
        for m in queue {
            if m.isBatch {
                guard credit > 0 else { break }
                credit -= 1
            }
            sentCount += 1
            var s = groups[m.group]!
            for h in m.held { s.sent.hold(h.author, h.counter) }
            if let r = m.committed { s.sent.commit(from: r.lowerBound, to: r.upperBound) }
            if m.isBatch {
                s.sentTraffic.items += m.items
                s.sentTraffic.messages += 1
                s.sentTraffic.bytes += m.bytes.count
            }
            if m.caughtUp { s.caughtUpSent = true }
            groups[m.group] = s
            out.append(.send(m.bytes))
            if let why = m.withdraws { withdrawals.append((m.group, why)) }
        }
        queue.removeFirst(sentCount)
        for (g, why) in withdrawals {
            forget(g)
            withdrew(g, reason: why, into: &out)
        }
    }

    /// Over `maxQueuedBatches`: drop unsent live batches and resume from what actually left
    /// (the peer's vector plus everything sent and received). Answers to requests are kept.
    func dropQueue(into out: inout [SyncAction]) {
        // A departure's "unshared" goes now, without the batches before it.
        let closing = queue.compactMap { m in m.withdraws.map { (m.group, $0) } }
        for (g, why) in closing { withdraw(g, reason: why, into: &out) }
        for m in queue where !m.answer {
            groups[m.group]!.dirty = true
            if m.caughtUp { groups[m.group]!.owesCaughtUp = true }
        }
        queue.removeAll { !$0.answer }
        for g in order {
            groups[g]!.planned = groups[g]!.sent
            // A snapshot may have been among what was dropped: go on without waiting for its answer.
            groups[g]!.awaitingVector = false
        }
        out.append(.event(.resync))
    }

    func nextGroupWithWork() -> GroupID? { groups.nextWithWork() }

    func enqueue(
        _ m: SyncMessage, group: GroupID, answer: Bool = false, items: Int = 0, held: [AuthorCounter] = [],
        committed: ClosedRange<UInt64>? = nil, caughtUp: Bool = false
    ) {
        queue.append(
            Outgoing(
                bytes: m.encoded(), group: group, isBatch: m.isBatch, answer: answer, items: items, held: held,
                committed: committed, caughtUp: caughtUp))
    }

    func newBatch() -> Batch { Batch(maxItems: limits.maxBatchItems, maxBytes: limits.maxBatchBytes) }

    /// One step for a group: part of an answer, a committed chunk, a tentative batch, or
    /// (when nothing is left) the owed "caught_up".
    func generate(_ g: GroupID) throws {
        var s = groups[g]!
        defer { groups[g] = s }
        if !s.answers.isEmpty { return try answer(g, &s) }
        if s.dirty, peerReadsSnapshots, !s.snapshotSent,
            let bundle = try store.syncBootstrap(
                group: g, for: peer.identity, peerCommitted: s.planned.committed,
                peerHoldsNothing: s.planned.committed == 0 && s.planned.authors.isEmpty, blobs: peerReadsSnapshotBlobs)
        {
            let message = SyncMessage.snapshot(group: g, bundle)
            s.snapshotSent = true
            if message.encoded().count <= limits.maxMessageBytes,
                bundle.keyHistory.count <= limits.maxSnapshotKeyHistory,
                bundle.authorityHistory.count <= limits.maxSnapshotKeyHistory
            {
                s.awaitingVector = true
                enqueue(message, group: g, items: 1)
                return
            }
        }
        if s.dirty {
            if let last = try committedChunk(
                g, from: s.planned.committed + 1, through: .max, knowledge: &s.planned, answer: false)
            {
                s.localCommitted = max(s.localCommitted, last)
                return
            }
            if try tentativeBatch(g, &s) { return }
            s.dirty = false
        }
        if s.owesCaughtUp {
            s.owesCaughtUp = false
            enqueue(.caughtUp(group: g), group: g, caughtUp: true)
        }
    }

    /// Committed positions from `from` (at most `through`): the receipts the peer lacks, then the
    /// envelopes. Returns the last seq covered, nil when there is none.
    func committedChunk(
        _ g: GroupID, from: UInt64, through: UInt64, knowledge k: inout Knowledge, answer: Bool
    ) throws -> UInt64? {
        guard from >= 1, from <= through else { return nil }
        let rows = try store.syncCommitted(group: g, fromSeq: from, limit: limits.maxBatchItems)
        var receipts = newBatch()
        var held = [AuthorCounter]()
        var envelopes = [[UInt8]]()
        var last: UInt64?
        for row in rows where row.seq <= through {
            guard row.seq == (last ?? from - 1) + 1 else { break }
            // A peer that reads no batched envelopes gets single ones, or (when we cannot sign
            // one) the committed chunk stops here and it gets the receipts as tentative.
            guard let envelope = peerReadsRuns ? row.envelope : try store.syncSingleEnvelope(row.envelope) else {
                break
            }
            let r = row.receipt
            let lacks = r.counter > k[r.author]
            // In a `commits` batch the envelopes count against the byte limit too.
            let size = (lacks ? r.encoded.count : 0) + (sendsCommits ? envelope.count : 0)
            guard receipts.fits(size) else { break }
            if lacks {
                receipts.add(r.encoded, bytes: size)
                k.hold(r.author, r.counter)
                held.append(AuthorCounter(author: r.author, counter: r.counter))
            } else if size > 0 {
                receipts.reserve(size)
            }
            envelopes.append(envelope)
            last = row.seq
        }
        guard let last else { return nil }
        k.commit(from: from, to: last)
        if sendsCommits {
            enqueue(
                .commits(group: g, receipts: receipts.items, envelopes: envelopes), group: g, answer: answer,
                items: receipts.items.count + envelopes.count, held: held, committed: from...last)
            return last
        }
        if !receipts.items.isEmpty {
            enqueue(
                .receipts(group: g, items: receipts.items), group: g, answer: answer, items: receipts.items.count,
                held: held)
        }
        enqueue(
            .envelopes(group: g, items: envelopes), group: g, answer: answer, items: envelopes.count,
            committed: from...last)
        return last
    }

    /// Receipts the peer lacks per author (tentative ones, mostly), in counter order.
    func tentativeBatch(_ g: GroupID, _ s: inout GroupSync) throws -> Bool {
        let v = try store.vector(of: g)
        s.localCommitted = v.committed
        var batch = newBatch()
        var held = [AuthorCounter]()
        authors: for (author, counter) in v.authors where counter > s.planned[author] {
            let rows = try store.syncReceipts(
                group: g, author: author, from: s.planned[author] + 1, to: counter,
                limit: limits.maxBatchItems - batch.items.count)
            for r in rows {
                guard batch.fits(r.encoded.count) else { break authors }
                batch.add(r.encoded)
                s.planned.hold(author, r.counter)
                held.append(AuthorCounter(author: author, counter: r.counter))
            }
            if batch.isFull { break }
        }
        guard !batch.items.isEmpty else { return false }
        enqueue(.receipts(group: g, items: batch.items), group: g, items: batch.items.count, held: held)
        return true
    }

    /// The next batch answering the oldest request of the group; "done" when it is answered.
    func answer(_ g: GroupID, _ s: inout GroupSync) throws {
        var a = s.answers[0]
        var finished = !s.serves  // not a member in our view: nothing is served, only "done"
        if !finished {
            switch a.what {
            case .after, .seqRange:
                let through: UInt64 = if case .seqRange(_, let to) = a.what { to } else { .max }
                // Envelopes always (the peer asked); receipts only those it lacks.
                if let last = try committedChunk(
                    g, from: a.cursor, through: through, knowledge: &s.planned, answer: true), last < through
                {
                    a.cursor = last + 1
                } else {
                    finished = true
                }
            case .authorCounters(let author, _, let to):
                let rows = try store.syncReceipts(
                    group: g, author: author, from: a.cursor, to: to, limit: limits.maxBatchItems)
                if let last = queueReceipts(rows, g, &s, answer: true), last < to {
                    a.cursor = last + 1
                } else {
                    finished = true
                }
            case .cids(let cids):
                // One CID at a time, so skipped (not held) ones and the byte limit stay simple.
                var batch = newBatch()
                while Int(a.cursor) < cids.count, !batch.isFull {
                    if let r = try store.syncReceipts(group: g, cids: [cids[Int(a.cursor)]]).first {
                        guard batch.fits(r.encoded.count) else { break }
                        batch.add(r.encoded)
                    }
                    a.cursor += 1
                }
                if !batch.items.isEmpty {
                    enqueue(.receipts(group: g, items: batch.items), group: g, answer: true, items: batch.items.count)
                }
                finished = Int(a.cursor) >= cids.count
            }
        }
        if finished {
            s.answers.removeFirst()
            outstandingAnswers -= 1
            enqueue(.done(group: g, id: a.id), group: g, answer: true)
        } else {
            s.answers[0] = a
        }
    }

    /// Queues receipts within one batch; returns the last counter queued (nil: none).
    func queueReceipts(_ rows: [SyncReceiptItem], _ g: GroupID, _ s: inout GroupSync, answer: Bool) -> UInt64? {
        var batch = newBatch()
        var held = [AuthorCounter]()
        for r in rows {
            guard batch.fits(r.encoded.count) else { break }
            batch.add(r.encoded)
            s.planned.hold(r.author, r.counter)
            held.append(AuthorCounter(author: r.author, counter: r.counter))
        }
        guard !batch.items.isEmpty else { return nil }
        enqueue(.receipts(group: g, items: batch.items), group: g, answer: answer, items: batch.items.count, held: held)
        return held.last?.counter
    }
}
