/// Log replication and the commit rule (Raft §5.3, §5.4.2).
extension ElectedSequencer {
    mutating func broadcastAppend() {
        for index in config.voters.indices where index != myIndex { sendAppend(to: index) }
    }

    /// Sends entries from the follower's `nextSeq` (possibly none: a heartbeat).
    mutating func sendAppend(to index: Int) {
        let prevSeq = nextSeq[index] - 1
        guard let prevTerm = log.term(at: prevSeq) else {
            preconditionFailure("nextSeq \(nextSeq[index]) outside the leader's log")
        }
        let last = prevSeq + UInt64(config.maxEntriesPerAppend)
        let entries = Array(log.entries(from: prevSeq + 1, through: last))
        send(
            .append(term: term, prevSeq: prevSeq, prevTerm: prevTerm, entries: entries, commitSeq: commitSeq), to: index
        )
    }

    mutating func handleAppend(
        term leaderTerm: UInt64, prevSeq: UInt64, prevTerm: UInt64, entries: [Entry],
        leaderCommit: UInt64, from index: Int
    ) {
        // "Reply false if term < currentTerm" (Fig. 2): the reply's term deposes the sender.
        guard leaderTerm == term else {
            return send(.appendReply(term: term, success: false, matchSeq: 0), to: index)
        }
        guard role != .leader else {
            return reject(
                .conflictingLeader, "\(config.voters[index]) sent append in term \(term) which this voter leads")
        }
        guard isWellFormed(prevSeq: prevSeq, prevTerm: prevTerm, entries: entries) else {
            return reject(.malformedMessage, "append from \(config.voters[index]) is not contiguous after \(prevSeq)")
        }
        // A valid append from the current leader: follow it and restart the election timer.
        role = .follower
        leader = config.voters[index]
        resetElectionTimer()

        // "Reply false if log doesn't contain an entry at prevLogIndex whose term matches
        // prevLogTerm" (Fig. 2).
        guard let localPrevTerm = log.term(at: prevSeq) else {
            return send(.appendReply(term: term, success: false, matchSeq: log.lastSeq), to: index)
        }
        guard localPrevTerm == prevTerm else {
            guard prevSeq > commitSeq else {
                return reject(
                    .wouldTruncateCommitted,
                    "prev \(prevSeq) term \(prevTerm) conflicts at or below commit \(commitSeq)")
            }
            return send(
                .appendReply(term: term, success: false, matchSeq: conflictHint(before: prevSeq, term: localPrevTerm)),
                to: index)
        }

        // "If an existing entry conflicts with a new one (same index but different terms),
        // delete the existing entry and all that follow it. Append any new entries not
        // already in the log" (Fig. 2). Matching entries are kept, so a stale, shorter
        // append never shortens the log.
        let firstNew = entries.firstIndex { log.term(at: $0.seq) != $0.term } ?? entries.endIndex
        if firstNew < entries.endIndex {
            let seq = entries[firstNew].seq
            if seq <= log.lastSeq {
                guard seq > commitSeq else {
                    return reject(.wouldTruncateCommitted, "entry \(seq) conflicts at or below commit \(commitSeq)")
                }
                truncateLog(after: seq - 1)
            }
            for entry in entries[firstNew...] {
                if let existing = log.seq(of: entry.item) {
                    reject(.duplicateItem, "item at seq \(entry.seq) already at seq \(existing)")
                }
                appendToLog(entry)
            }
        }

        // Only the prefix through the last entry of this message is known to match the
        // leader; the local log may hold a stale suffix beyond it.
        let lastNew = prevSeq + UInt64(entries.count)
        // "If leaderCommit > commitIndex, set commitIndex = min(leaderCommit, index of last
        // new entry)" (Fig. 2).
        commit(through: min(leaderCommit, lastNew))
        send(.appendReply(term: term, success: true, matchSeq: lastNew), to: index)
    }

    /// Consecutive seqs after `prevSeq`, never before base, terms non-decreasing and not
    /// above the sender's term.
    func isWellFormed(prevSeq: UInt64, prevTerm: UInt64, entries: [Entry]) -> Bool {
        guard prevSeq >= config.base, prevTerm <= term else { return false }
        // The base is the snapshot: term 0 there, real terms (>= 1) after it.
        guard prevSeq == config.base ? prevTerm == 0 : prevTerm >= 1 else { return false }
        var expectedSeq = prevSeq + 1
        var minTerm = max(prevTerm, 1)
        for entry in entries {
            guard entry.seq == expectedSeq, entry.term >= minTerm, entry.term <= term else { return false }
            expectedSeq += 1
            minTerm = entry.term
        }
        return true
    }

    /// On a term mismatch at `seq`, suggest skipping the whole run of that term, so the
    /// leader backs off one term per round trip instead of one entry (Raft §5.3 note).
    /// Never below commitSeq: those entries are known to match.
    func conflictHint(before seq: UInt64, term conflicting: UInt64) -> UInt64 {
        var hint = seq - 1
        while hint > commitSeq, log.term(at: hint) == conflicting { hint -= 1 }
        return hint
    }

    mutating func handleAppendReply(term replyTerm: UInt64, success: Bool, matchSeq match: UInt64, from index: Int) {
        guard replyTerm == term, role == .leader else { return }
        if success {
            guard match <= log.lastSeq else {
                return reject(.malformedMessage, "\(config.voters[index]) claims match \(match) beyond \(log.lastSeq)")
            }
            // Replies may arrive reordered or twice: progress only moves forward.
            matchSeq[index] = max(matchSeq[index], match)
            nextSeq[index] = max(nextSeq[index], match + 1)
            advanceCommit()
        } else {
            // "If AppendEntries fails because of log inconsistency: decrement nextIndex and
            // retry" (Fig. 2), jumping to the follower's hint, never below a known match.
            let hinted = match < nextSeq[index] - 1 ? match + 1 : nextSeq[index] - 1
            nextSeq[index] = max(matchSeq[index] + 1, hinted)
        }
        if !success || nextSeq[index] <= log.lastSeq { sendAppend(to: index) }
    }

    /// Commits the highest seq a quorum holds, if it is from the current term (Raft §5.4.2:
    /// "Raft never commits log entries from previous terms by counting replicas").
    mutating func advanceCommit() {
        var held = matchSeq
        held[myIndex] = log.lastSeq  // the leader persisted its own log before sending it
        held.sort(by: >)
        let candidate = held[config.quorum - 1]
        // Terms never decrease along the log, so an older term here means no current-term
        // entry below it has a quorum either.
        guard candidate > commitSeq, log.term(at: candidate) == term else { return }
        commit(through: candidate)
    }
}
