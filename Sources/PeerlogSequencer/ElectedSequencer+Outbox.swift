/// Collects one call's effects and coalesces its persistence into a single leading
/// `persist`, so "persist before send" holds by construction.
extension ElectedSequencer {
    struct Outbox: Sendable {
        var startRole: SequencerRole = .follower
        var startTerm: UInt64 = 0
        var startLeader: Voter?
        var hardStateChanged = false
        var truncatedAfter: UInt64?
        var appended: [Entry] = []
        var effects: [Effect] = []
    }

    mutating func beginCall() {
        outbox = Outbox(startRole: role, startTerm: term, startLeader: leader)
    }

    /// Returns `[persist?, roleChanged?] + effects in the order they arose`.
    mutating func endCall() -> [Effect] {
        var result: [Effect] = []
        if outbox.hardStateChanged || outbox.truncatedAfter != nil || !outbox.appended.isEmpty {
            result.append(
                .persist(
                    PersistentChange(
                        currentTerm: term, votedFor: votedFor,
                        truncatedAfter: outbox.truncatedAfter, appended: outbox.appended)))
        }
        if role != outbox.startRole || term != outbox.startTerm || leader != outbox.startLeader {
            result.append(.roleChanged(role, term: term, leader: leader))
        }
        result.append(contentsOf: outbox.effects)
        outbox = Outbox()
        return result
    }

    mutating func send(_ message: Message, to index: Int) {
        outbox.effects.append(.send(to: config.voters[index], message))
    }

    mutating func reject(_ code: SequencerError.Code, _ detail: String, line: Int = #line) {
        outbox.effects.append(.violation(SequencerError(code, detail, line: line)))
    }

    /// Sets term and vote; the caller guarantees terms never decrease.
    mutating func setHardState(term newTerm: UInt64, votedFor vote: Voter?) {
        precondition(newTerm >= term, "terms are monotonic")
        if newTerm != term || vote != votedFor { outbox.hardStateChanged = true }
        term = newTerm
        votedFor = vote
    }

    mutating func appendToLog(_ entry: Entry) {
        log.append(entry)
        outbox.appended.append(entry)
    }

    mutating func truncateLog(after seq: UInt64) {
        precondition(seq >= commitSeq, "committed entries are never truncated")
        log.truncate(after: seq)
        if let first = outbox.appended.first, first.seq <= seq {
            // Cut inside this call's own appends; earlier truncation (if any) still holds.
            outbox.appended.removeAll { $0.seq > seq }
        } else {
            outbox.appended.removeAll()
            outbox.truncatedAfter = min(outbox.truncatedAfter ?? seq, seq)
        }
    }

    /// Marks `commitSeq + 1 ... seq` committed and reports them.
    mutating func commit(through seq: UInt64) {
        guard seq > commitSeq else { return }
        let newly = Array(log.entries(from: commitSeq + 1, through: seq))
        commitSeq = seq
        outbox.effects.append(.committed(newly, asLeader: role == .leader))
    }
}
