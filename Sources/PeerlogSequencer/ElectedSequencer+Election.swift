/// Time, elections and votes (Raft §5.2, §5.4.1).
extension ElectedSequencer {
    /// Advances logical time by one tick: leaders heartbeat, others may start an election.
    /// A lone voter elects itself on its first tick.
    public mutating func tick() -> [Effect] {
        beginCall()
        switch role {
        case .leader:
            if config.checkQuorum { checkQuorumOnTick() }
            heartbeatElapsed += 1
            if role == .leader, heartbeatElapsed >= config.heartbeatTicks {
                heartbeatElapsed = 0
                broadcastAppend()
            }
        case .follower, .preCandidate, .candidate:
            electionElapsed += 1
            // "If election timeout elapses without receiving AppendEntries RPC from current
            // leader or granting vote to candidate: convert to candidate" (Fig. 2), after a
            // successful pre-vote when that is on.
            if electionElapsed >= electionTimeout || config.voters.count == 1 {
                if config.preVote && config.quorum > 1 { startPreVote() } else { startElection() }
            }
        }
        return endCall()
    }

    /// Handles one message from voter `sender`. Messages from non-voters or from itself
    /// are ignored (empty result).
    public mutating func receive(_ message: Message, from sender: Voter) -> [Effect] {
        guard sender != me, let index = config.index(of: sender) else { return [] }
        beginCall()
        guard message.isWithinLimits else {
            reject(.malformedMessage, "\(sender) sent a seq or term beyond \(Message.maxValue)")
            return endCall()
        }
        // "If RPC request or response contains term T > currentTerm: set currentTerm = T,
        // convert to follower" (Fig. 2).
        if message.term > term, message.carriesSenderTerm { stepDown(to: message.term) }
        // A pre-vote request naming this term comes from a voter a term behind: not a follower.
        if role == .leader, message.term == term, message.carriesSenderTerm { noteHeard(from: index) }
        switch message {
        case .requestVote(let candidateTerm, let lastSeq, let lastTerm):
            handleRequestVote(term: candidateTerm, lastSeq: lastSeq, lastTerm: lastTerm, from: index)
        case .vote(let voteTerm, let granted):
            handleVote(term: voteTerm, granted: granted, from: index)
        case .preVoteRequest(let proposedTerm, let lastSeq, let lastTerm):
            handlePreVoteRequest(term: proposedTerm, lastSeq: lastSeq, lastTerm: lastTerm, from: index)
        case .preVote(let voteTerm, let granted):
            handlePreVote(term: voteTerm, granted: granted, from: index)
        case .append(let leaderTerm, let prevSeq, let prevTerm, let entries, let leaderCommit):
            handleAppend(
                term: leaderTerm, prevSeq: prevSeq, prevTerm: prevTerm, entries: entries,
                leaderCommit: leaderCommit, from: index)
        case .appendReply(let replyTerm, let success, let match):
            handleAppendReply(term: replyTerm, success: success, matchSeq: match, from: index)
        }
        return endCall()
    }

    mutating func resetElectionTimer() {
        electionElapsed = 0
        electionTimeout = rng.int(in: config.electionTimeoutTicks)
    }

    /// Adopts a higher term as a follower with no vote and no known leader.
    mutating func stepDown(to newTerm: UInt64) {
        // A leader's election timer was idle; restart it rather than fire at once.
        if role == .leader { resetElectionTimer() }
        setHardState(term: newTerm, votedFor: nil)
        role = .follower
        leader = nil
    }

    mutating func startElection() {
        // "Increment currentTerm, vote for self, reset election timer, send RequestVote".
        setHardState(term: term + 1, votedFor: me)
        role = .candidate
        leader = nil
        resetElectionTimer()
        votesGranted = votesGranted.indices.map { $0 == myIndex }
        if config.quorum == 1 { return becomeLeader() }
        let request = Message.requestVote(term: term, lastSeq: log.lastSeq, lastTerm: log.lastTerm)
        for index in config.voters.indices where index != myIndex { send(request, to: index) }
    }

    mutating func handleRequestVote(term candidateTerm: UInt64, lastSeq: UInt64, lastTerm: UInt64, from index: Int) {
        // "Reply false if term < currentTerm" (Fig. 2); stepDown already handled term >.
        guard candidateTerm == term else { return send(.vote(term: term, granted: false), to: index) }
        let candidate = config.voters[index]
        let free = votedFor == nil || votedFor == candidate
        guard isAtLeastAsUpToDate(lastSeq: lastSeq, lastTerm: lastTerm), free else {
            return send(.vote(term: term, granted: false), to: index)
        }
        // The vote is persisted (the leading `persist` effect) before the reply goes out.
        setHardState(term: term, votedFor: candidate)
        resetElectionTimer()
        send(.vote(term: term, granted: true), to: index)
    }

    /// Raft §5.4.1: "If the logs have last entries with different terms, then the log with the
    /// later term is more up-to-date. If the logs end with the same term, then whichever
    /// log is longer is more up-to-date."
    func isAtLeastAsUpToDate(lastSeq: UInt64, lastTerm: UInt64) -> Bool {
        lastTerm > log.lastTerm || (lastTerm == log.lastTerm && lastSeq >= log.lastSeq)
    }

    mutating func handleVote(term voteTerm: UInt64, granted: Bool, from index: Int) {
        guard voteTerm == term, role == .candidate, granted else { return }
        votesGranted[index] = true
        if votesGranted.count(where: { $0 }) >= config.quorum { becomeLeader() }
    }

    mutating func becomeLeader() {
        role = .leader
        leader = me
        heartbeatElapsed = 0
        // Check-quorum counts from the election: the votes just heard were a majority.
        heardAgo = Array(repeating: 0, count: config.voters.count)
        // "Reinitialized after election": nextIndex = last log index + 1, matchIndex = 0
        // (here: base, which every voter holds).
        nextSeq = Array(repeating: log.lastSeq + 1, count: config.voters.count)
        matchSeq = Array(repeating: config.base, count: config.voters.count)
        // Announce leadership at once (Fig. 2: "Upon election: send initial empty
        // AppendEntries RPCs (heartbeat) to each server").
        broadcastAppend()
    }
}
