import PeerlogModel
import PeerlogStore

extension Pipeline {
    /// One retry pass over the queues: items past the retry or age limit go to dead letters
    /// (with the reason they were waiting); the rest count a retry and re-ask for what they need.
    mutating func retryPending() throws {
        for item in try db.allPendingReceipts() {
            if let why = giveUp(item) {
                try db.deletePendingReceipt(item.cid)
                try bury(item, why)
            } else {
                try db.notePendingReceiptAttempt(item.cid, reason: item.reason, at: now)
                if let author = item.author {
                    let held = try db.heldCounter(group: item.group, author: author)
                    if item.seqOrCounter > held + 1 {
                        try request(
                            .requestAuthorCounters(
                                group: item.group, author: author, from: held + 1, to: item.seqOrCounter - 1))
                    }
                }
            }
        }
        for item in try db.allPendingEnvelopes() {
            if let why = giveUp(item) {
                try db.deletePendingEnvelope(group: item.group, seq: item.seqOrCounter, cid: item.cid)
                try bury(item, why)
            } else {
                try db.notePendingEnvelopeAttempt(
                    group: item.group, seq: item.seqOrCounter, cid: item.cid, reason: item.reason, at: now)
                touch(item.group)
            }
        }
    }

    private func giveUp(_ item: QueuedItem) -> String? {
        if item.retryCount + 1 >= limits.maxPendingRetries {
            return "\(item.reason); gave up after \(limits.maxPendingRetries) retries"
        }
        if now >= item.firstSeenAt + limits.maxPendingAgeMillis {
            return "\(item.reason); gave up after waiting \(limits.maxPendingAgeMillis / 1000) s"
        }
        return nil
    }

    private mutating func bury(_ item: QueuedItem, _ why: String) throws {
        try db.insertDeadLetter(item, reason: why, at: now)
        report.events.append(.deadLettered(kind: item.kind, cid: item.cid, reason: why))
    }
}
