import Testing

@testable import PeerlogSequencer

@Suite("Pre-vote", .serialized)
struct PreVoteTests {
    @Test func timeoutAsksForPreVotesWithoutRaisingTheTerm() throws {
        var voter = try makeVoter(1, term: 3, terms: [2, 3], preVote: true)
        let effects = tickUntilElection(&voter)
        #expect(voter.role == .preCandidate && voter.term == 3 && voter.votedFor == nil)
        #expect(effects.persists.isEmpty, "a pre-vote binds no one, so nothing is durable")
        #expect(effects.sends.map(\.to) == [2, 3])
        #expect(effects.sends.allSatisfy { $0.message == .preVoteRequest(term: 4, lastSeq: 2, lastTerm: 3) })
    }

    @Test func aMajorityOfPreVotesStartsTheRealElection() throws {
        var voter = try makeVoter(3, of: 5, term: 1, preVote: true)
        _ = tickUntilElection(&voter)
        _ = voter.receive(.preVote(term: 2, granted: true), from: 1)
        _ = voter.receive(.preVote(term: 2, granted: true), from: 1)  // a duplicate counts once
        _ = voter.receive(.preVote(term: 9, granted: true), from: 2)  // not for this round
        #expect(voter.role == .preCandidate && voter.term == 1)
        let effects = voter.receive(.preVote(term: 2, granted: true), from: 5)
        #expect(voter.role == .candidate && voter.term == 2 && voter.votedFor == 3)
        #expect(effects.first == .persist(Change(currentTerm: 2, votedFor: 3)))
        #expect(effects.sends.allSatisfy { $0.message == .requestVote(term: 2, lastSeq: 0, lastTerm: 0) })
        #expect(effects.sends.count == 4)
    }

    @Test func grantingAPreVoteChangesNothing() throws {
        var voter = try makeVoter(2, term: 1, terms: [1], preVote: true)
        let effects = voter.receive(.preVoteRequest(term: 2, lastSeq: 1, lastTerm: 1), from: 1)
        #expect(effects.preVotes.map(\.granted) == [true] && effects.preVotes.map(\.term) == [2])
        #expect(effects.persists.isEmpty && effects.roleChanges.isEmpty)
        #expect(voter.term == 1 && voter.votedFor == nil)
        // Several candidates may hold a pre-vote at once: it is not a vote.
        #expect(
            voter.receive(.preVoteRequest(term: 2, lastSeq: 1, lastTerm: 1), from: 3).preVotes.map(\.granted) == [true])
    }

    @Test(arguments: [
        // (proposed term, candidate lastSeq, candidate lastTerm, granted) against a voter of
        // term 2 whose log has terms [1, 2]
        (UInt64(3), UInt64(2), UInt64(2), true),
        (3, 1, 2, false),  // shorter log, same last term
        (3, 5, 1, false),  // older last term
        (2, 2, 2, false),  // not above the voter's term
    ])
    func preVoteNeedsAHigherTermAndAnUpToDateLog(term: UInt64, lastSeq: UInt64, lastTerm: UInt64, granted: Bool) throws
    {
        var voter = try makeVoter(1, term: 2, terms: [1, 2], preVote: true)
        let effects = voter.receive(.preVoteRequest(term: term, lastSeq: lastSeq, lastTerm: lastTerm), from: 2)
        #expect(effects.preVotes.map(\.granted) == [granted])
        // A denial names the voter's own term.
        #expect(effects.preVotes.map(\.term) == [granted ? term : 2])
        #expect(voter.term == 2)
    }

    @Test func aFollowerThatHeardItsLeaderRecentlyDenies() throws {
        var voter = try makeVoter(2, term: 1, preVote: true, seed: 3)
        _ = voter.receive(.append(term: 1, prevSeq: 0, prevTerm: 0, entries: [], commitSeq: 0), from: 1)
        let request = Msg.preVoteRequest(term: 2, lastSeq: 0, lastTerm: 0)
        #expect(voter.config.preVoteLeaseTicks == 5)
        for _ in 0..<4 { _ = voter.tick() }
        #expect(voter.receive(request, from: 3).preVotes.map(\.granted) == [false])
        // Silence for the shortest election timeout (6 ticks) less a tick of clock skew:
        // the leader may be gone.
        _ = voter.tick()
        #expect(voter.receive(request, from: 3).preVotes.map(\.granted) == [true])
        #expect(voter.term == 1 && voter.role == .follower)
    }

    @Test func theLeaseStaysAboveTheHeartbeatInterval() throws {
        let tight = try SequencerConfig(voters: [1, 2, 3], base: 0, electionTimeoutTicks: 3...6, heartbeatTicks: 2)
        #expect(tight.preVoteLeaseTicks == 3)
    }

    @Test func aLeaderDeniesAndKeepsItsTermWhateverThePreVoteProposes() throws {
        var leader = try makeVoter(1, preVote: true)
        makeLeader(&leader)
        let term = leader.term
        let effects = leader.receive(.preVoteRequest(term: term + 40, lastSeq: 9, lastTerm: term + 39), from: 3)
        #expect(leader.role == .leader && leader.term == term)
        #expect(effects.preVotes.map(\.granted) == [false] && effects.persists.isEmpty)
    }

    @Test func aDenialFromAHigherTermCatchesThePreCandidateUp() throws {
        var voter = try makeVoter(1, preVote: true)
        _ = tickUntilElection(&voter)
        let effects = voter.receive(.preVote(term: 7, granted: false), from: 2)
        #expect(voter.role == .follower && voter.term == 7)
        #expect(effects.first == .persist(Change(currentTerm: 7, votedFor: nil)))
    }

    @Test func aPreCandidateFollowsALeaderItHears() throws {
        var voter = try makeVoter(1, term: 2, preVote: true)
        _ = tickUntilElection(&voter)
        _ = voter.receive(.append(term: 2, prevSeq: 0, prevTerm: 0, entries: [], commitSeq: 0), from: 3)
        #expect(voter.role == .follower && voter.leader == 3 && voter.term == 2)
        // Late grants of the abandoned round change nothing.
        _ = voter.receive(.preVote(term: 3, granted: true), from: 2)
        #expect(voter.role == .follower && voter.term == 2)
    }

    @Test func aLoneVoterSkipsPreVote() throws {
        var voter = try makeVoter(1, of: 1, preVote: true)
        _ = voter.tick()
        #expect(voter.role == .leader && voter.term == 1)
    }
}
