import Testing

@testable import PeerlogSequencer

typealias Seq = ElectedSequencer<Int, String>
typealias Msg = SequencerMessage<String>
typealias Eff = SequencerEffect<Int, String>
typealias Ent = SequencerEntry<String>
typealias Disk = SequencerPersistentState<Int, String>
typealias Change = SequencerPersistentChange<Int, String>

/// Voters `1...n`. Pre-vote and check-quorum are off unless asked for, so the unit tests of
/// plain Raft see one step per rule; PreVoteTests, CheckQuorumTests and the simulator turn
/// them on.
func makeConfig(
    _ n: Int, base: UInt64 = 0, maxEntries: Int = 256, preVote: Bool = false, checkQuorum: Bool = false
) throws -> SequencerConfig<Int> {
    try SequencerConfig(
        voters: Array(1...n), base: base, maxEntriesPerAppend: maxEntries, preVote: preVote, checkQuorum: checkQuorum)
}

/// Entries after `base` with the given terms; item of seq s is "x<s>".
func makeLog(_ terms: [UInt64], base: UInt64 = 0) -> [Ent] {
    terms.enumerated().map { offset, term in
        let seq = base + UInt64(offset) + 1
        return Ent(seq: seq, item: "x\(seq)", term: term)
    }
}

/// A voter restored from the given persistent state.
func makeVoter(
    _ me: Int, of n: Int = 3, base: UInt64 = 0, term: UInt64 = 0, votedFor: Int? = nil,
    terms: [UInt64] = [], maxEntries: Int = 256, preVote: Bool = false, checkQuorum: Bool = false, seed: UInt64 = 1
) throws -> Seq {
    let state = Disk(currentTerm: term, votedFor: votedFor, entries: makeLog(terms, base: base))
    let config = try makeConfig(n, base: base, maxEntries: maxEntries, preVote: preVote, checkQuorum: checkQuorum)
    return try Seq(me: me, config: config, persisted: state, seed: seed)
}

/// Ticks until the voter starts an election; returns that call's effects.
func tickUntilElection(_ voter: inout Seq) -> [Eff] {
    for _ in 0..<100 {
        let effects = voter.tick()
        if voter.role != .follower { return effects }
    }
    Issue.record("no election within 100 ticks")
    return []
}

/// Makes `me` leader of the next term with (pre-)votes from the lowest other voters.
func makeLeader(_ voter: inout Seq) {
    _ = tickUntilElection(&voter)
    for other in voter.config.voters where other != voter.me && voter.role == .preCandidate {
        _ = voter.receive(.preVote(term: voter.term + 1, granted: true), from: other)
    }
    for other in voter.config.voters where other != voter.me && voter.role != .leader {
        _ = voter.receive(.vote(term: voter.term, granted: true), from: other)
    }
    #expect(voter.role == .leader)
}

extension Array where Element == Eff {
    var sends: [(to: Int, message: Msg)] {
        compactMap { if case .send(let to, let message) = $0 { (to, message) } else { nil } }
    }
    var persists: [Change] {
        compactMap { if case .persist(let change) = $0 { change } else { nil } }
    }
    var committed: [Ent] {
        flatMap { effect -> [Ent] in if case .committed(let entries, _) = effect { entries } else { [] } }
    }
    var committedAsLeader: [Bool] {
        compactMap { if case .committed(_, let asLeader) = $0 { asLeader } else { nil } }
    }
    var roleChanges: [(role: SequencerRole, term: UInt64, leader: Int?)] {
        compactMap { if case .roleChanged(let role, let term, let leader) = $0 { (role, term, leader) } else { nil } }
    }
    var violations: [SequencerError.Code] {
        compactMap { if case .violation(let error) = $0 { error.code } else { nil } }
    }
    /// Replies sent, for single-reply assertions.
    var votes: [Bool] {
        sends.compactMap { if case .vote(_, let granted) = $0.message { granted } else { nil } }
    }
    var preVotes: [(term: UInt64, granted: Bool)] {
        sends.compactMap { if case .preVote(let term, let granted) = $0.message { (term, granted) } else { nil } }
    }
    var appendReplies: [(success: Bool, matchSeq: UInt64)] {
        sends.compactMap {
            if case .appendReply(_, let success, let match) = $0.message { (success, match) } else { nil }
        }
    }
    var appends: [(to: Int, prevSeq: UInt64, prevTerm: UInt64, entries: [Ent], commitSeq: UInt64)] {
        sends.compactMap {
            if case .append(_, let prevSeq, let prevTerm, let entries, let commit) = $0.message {
                ($0.to, prevSeq, prevTerm, entries, commit)
            } else {
                nil
            }
        }
    }
    /// True when no `persist` appears after a `send` (the driver contract).
    var persistPrecedesSends: Bool {
        guard let firstSend = firstIndex(where: { if case .send = $0 { true } else { false } }) else { return true }
        return self[firstSend...].allSatisfy { if case .persist = $0 { false } else { true } }
    }
}
