/// Sequence assignment by the leader.
extension ElectedSequencer {
    /// Assigns the next seqs to `items`, skipping any item already in this log (committed or
    /// not) or repeated in `items`, so no item is ever assigned twice in one log.
    ///
    /// Leader only: returns `[]` otherwise (ask ``isLeader`` first; forward items to
    /// ``leader``). The result holds a `persist` of the new entries followed by `append`
    /// sends to the followers that had acknowledged everything before; the others get the
    /// new entries when their outstanding append is answered (or at the next heartbeat),
    /// so a stream of proposals does not resend the same entries once per proposal.
    /// A lone voter commits the entries at once.
    public mutating func propose(_ items: [Item]) -> [Effect] {
        guard role == .leader else { return [] }
        beginCall()
        let previousLast = log.lastSeq
        for item in items where log.seq(of: item) == nil {
            appendToLog(Entry(seq: log.lastSeq + 1, item: item, term: term))
        }
        if !outbox.appended.isEmpty {
            if config.quorum == 1 { advanceCommit() }
            for index in config.voters.indices where index != myIndex && nextSeq[index] > previousLast {
                sendAppend(to: index)
            }
        }
        return endCall()
    }
}
