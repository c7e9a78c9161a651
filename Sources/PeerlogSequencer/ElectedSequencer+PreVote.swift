/// Pre-vote (Raft thesis §9.6): a voter whose election timer fires first asks the others
/// whether they would vote for it in the next term, and starts a real election (raising
/// its durable term) only once a majority, itself included, says yes. A voter cut off from
/// the others keeps asking in vain at its old term, so when it rejoins, its term deposes
/// nobody. Nothing here is persisted: a pre-vote binds no one.
extension ElectedSequencer {
    mutating func startPreVote() {
        role = .preCandidate
        leader = nil
        resetElectionTimer()
        votesGranted = votesGranted.indices.map { $0 == myIndex }
        let request = Message.preVoteRequest(term: term + 1, lastSeq: log.lastSeq, lastTerm: log.lastTerm)
        for index in config.voters.indices where index != myIndex { send(request, to: index) }
    }

    /// Grants iff the proposed term is above this voter's, its log is at least as up to date,
    /// and this voter has not heard from a leader within ``SequencerConfig/preVoteLeaseTicks``
    /// (a leader always has). The grant changes no state, so it may be given to several.
    mutating func handlePreVoteRequest(term proposed: UInt64, lastSeq: UInt64, lastTerm: UInt64, from index: Int) {
        let hearsLeader = role == .leader || (leader != nil && electionElapsed < config.preVoteLeaseTicks)
        let granted = proposed > term && !hearsLeader && isAtLeastAsUpToDate(lastSeq: lastSeq, lastTerm: lastTerm)
        // A denial carries this voter's term, so a pre-candidate that is behind catches up.
        send(.preVote(term: granted ? proposed : term, granted: granted), to: index)
    }

    mutating func handlePreVote(term voteTerm: UInt64, granted: Bool, from index: Int) {
        guard role == .preCandidate, granted, voteTerm == term + 1 else { return }
        votesGranted[index] = true
        if votesGranted.count(where: { $0 }) >= config.quorum { startElection() }
    }
}
