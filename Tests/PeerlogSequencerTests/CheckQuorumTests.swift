import Testing

@testable import PeerlogSequencer

@Suite("Check-quorum", .serialized)
struct CheckQuorumTests {
    /// Ticks a leader until it is no longer leader, at most `limit` ticks; nil if it never stops.
    func ticksUntilStepDown(_ leader: inout Seq, limit: Int = 100, each: (inout Seq) -> Void = { _ in }) -> Int? {
        for tick in 1...limit {
            let effects = leader.tick()
            if leader.role != .leader {
                #expect(effects.roleChanges.map(\.role) == [.follower])
                #expect(effects.persists.isEmpty, "term and vote are kept")
                return tick
            }
            each(&leader)
        }
        return nil
    }

    @Test func aLeaderThatHearsNoOneStepsDownAfterTheLongestElectionTimeout() throws {
        var leader = try makeVoter(1, checkQuorum: true)
        makeLeader(&leader)
        let term = leader.term
        #expect(ticksUntilStepDown(&leader) == 12)
        #expect(leader.role == .follower && leader.term == term && leader.votedFor == 1 && leader.leader == nil)
        #expect(leader.propose(["late"]).isEmpty, "no longer takes proposals")
    }

    @Test func oneFollowerOfTwoIsAMajority() throws {
        var leader = try makeVoter(1, checkQuorum: true)
        makeLeader(&leader)
        let term = leader.term
        // Voter 2 answers each heartbeat; voter 3 is silent.
        let steppedDown = ticksUntilStepDown(&leader) { leader in
            _ = leader.receive(.appendReply(term: term, success: true, matchSeq: 0), from: 2)
        }
        #expect(steppedDown == nil)
        #expect(leader.role == .leader)
    }

    @Test func repliesOfAnOlderTermDoNotCount() throws {
        var leader = try makeVoter(1, term: 4, checkQuorum: true)
        makeLeader(&leader)
        let steppedDown = ticksUntilStepDown(&leader) { leader in
            _ = leader.receive(.appendReply(term: 3, success: false, matchSeq: 0), from: 2)
        }
        #expect(steppedDown == 12)
    }

    @Test func preVoteRequestsDoNotCountAsFollowing() throws {
        var leader = try makeVoter(1, term: 4, preVote: true, checkQuorum: true)
        makeLeader(&leader)
        let term = leader.term
        // Voter 2 is a term behind and keeps asking for pre-votes for the leader's term.
        let steppedDown = ticksUntilStepDown(&leader) { leader in
            _ = leader.receive(.preVoteRequest(term: term, lastSeq: 0, lastTerm: 0), from: 2)
        }
        #expect(steppedDown == 12)
    }

    @Test func withoutCheckQuorumALeaderNeverStepsDownByItself() throws {
        var leader = try makeVoter(1, checkQuorum: false)
        makeLeader(&leader)
        #expect(ticksUntilStepDown(&leader, limit: 200) == nil)
    }
}
