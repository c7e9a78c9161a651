/// Check-quorum (Raft thesis §6.2): a leader that has not heard from a majority, itself
/// included, for the longest election timeout steps down. By then the majority side has
/// timed out and may have elected another leader; without it, the cut-off leader would
/// keep accepting proposals that can never commit, and drivers would keep sending them.
extension ElectedSequencer {
    /// Called for every message of the current term while leading.
    mutating func noteHeard(from index: Int) {
        heardAgo[index] = 0
    }

    /// Ages every follower by one tick and steps down if fewer than a majority, the leader
    /// included, were heard within the window.
    mutating func checkQuorumOnTick() {
        let window = config.electionTimeoutTicks.upperBound
        var recent = 1  // the leader itself
        for index in heardAgo.indices where index != myIndex {
            heardAgo[index] = min(heardAgo[index] + 1, window)
            if heardAgo[index] < window { recent += 1 }
        }
        guard recent < config.quorum else { return }
        // Keeps term and vote (nothing to persist): a follower of no known leader, which
        // leads again only by winning an election.
        role = .follower
        leader = nil
        resetElectionTimer()
    }
}
