import Testing

@testable import PeerlogSequencer

@Suite("Elections and votes", .serialized)
struct ElectionTests {
    @Test func followerStartsElectionWithinTimeoutRange() throws {
        for seed in 0..<20 as Range<UInt64> {
            var voter = try makeVoter(1, seed: seed)
            var ticks = 0
            var effects: [Eff] = []
            while voter.role == .follower {
                effects = voter.tick()
                ticks += 1
            }
            #expect((6...12).contains(ticks))
            #expect(voter.role == .candidate && voter.term == 1 && voter.votedFor == 1)
            // The self-vote is durable before any request leaves.
            #expect(effects.first == .persist(Change(currentTerm: 1, votedFor: 1)))
            #expect(effects.persistPrecedesSends)
            #expect(effects.sends.map(\.to) == [2, 3])
            #expect(effects.sends.allSatisfy { $0.message == .requestVote(term: 1, lastSeq: 0, lastTerm: 0) })
        }
    }

    @Test func candidateNeedsMajorityIncludingItself() throws {
        var five = try makeVoter(3, of: 5)
        _ = tickUntilElection(&five)
        _ = five.receive(.vote(term: 1, granted: true), from: 1)
        _ = five.receive(.vote(term: 1, granted: true), from: 1)  // a duplicate counts once
        _ = five.receive(.vote(term: 1, granted: false), from: 2)
        #expect(five.role == .candidate)
        let effects = five.receive(.vote(term: 1, granted: true), from: 5)
        #expect(five.role == .leader && five.leader == 3)
        #expect(effects.roleChanges.map(\.role) == [.leader])
        // Leadership is announced at once with heartbeats to every other voter.
        #expect(effects.appends.map(\.to) == [1, 2, 4, 5])
    }

    @Test func votesFromAnOlderTermAreIgnored() throws {
        var voter = try makeVoter(1, term: 4)
        _ = tickUntilElection(&voter)
        _ = voter.receive(.vote(term: 4, granted: true), from: 2)
        #expect(voter.role == .candidate)
    }

    @Test func grantsOneVotePerTermAndPersistsItFirst() throws {
        var voter = try makeVoter(1)
        let first = voter.receive(.requestVote(term: 1, lastSeq: 0, lastTerm: 0), from: 2)
        #expect(first.first == .persist(Change(currentTerm: 1, votedFor: 2)))
        #expect(first.persistPrecedesSends)
        #expect(first.votes == [true])
        #expect(voter.receive(.requestVote(term: 1, lastSeq: 0, lastTerm: 0), from: 3).votes == [false])
        // A retried request from the same candidate is granted again, with nothing new to persist.
        let again = voter.receive(.requestVote(term: 1, lastSeq: 0, lastTerm: 0), from: 2)
        #expect(again.votes == [true] && again.persists.isEmpty)
    }

    @Test func voteSurvivesRestart() throws {
        var voter = try makeVoter(1)
        var disk = Disk()
        for change in voter.receive(.requestVote(term: 1, lastSeq: 0, lastTerm: 0), from: 2).persists {
            disk.apply(change)
        }
        var restarted = try Seq(me: 1, config: makeConfig(3), persisted: disk, seed: 9)
        #expect(restarted.receive(.requestVote(term: 1, lastSeq: 0, lastTerm: 0), from: 3).votes == [false])
    }

    @Test(arguments: [
        // (candidate lastTerm, candidate lastSeq, granted) against a voter log with terms [1, 1, 2]
        (UInt64(1), UInt64(5), false),  // longer but older last term
        (2, 2, false),  // same last term, shorter
        (2, 3, true),  // identical
        (2, 9, true),  // same last term, longer
        (3, 1, true),  // later last term wins even if shorter
    ])
    func upToDateCheck(lastTerm: UInt64, lastSeq: UInt64, granted: Bool) throws {
        var voter = try makeVoter(1, term: 2, terms: [1, 1, 2])
        let effects = voter.receive(.requestVote(term: 3, lastSeq: lastSeq, lastTerm: lastTerm), from: 2)
        #expect(effects.votes == [granted])
        #expect(voter.term == 3)
        #expect(voter.votedFor == (granted ? 2 : nil))
    }

    @Test func staleRequestIsDeniedWithCurrentTerm() throws {
        var voter = try makeVoter(1, term: 5)
        let effects = voter.receive(.requestVote(term: 4, lastSeq: 9, lastTerm: 4), from: 2)
        #expect(effects.sends.map(\.message) == [.vote(term: 5, granted: false)])
        #expect(effects.persists.isEmpty && voter.term == 5)
    }

    @Test func leaderStepsDownOnHigherTerm() throws {
        var voter = try makeVoter(1)
        makeLeader(&voter)
        let effects = voter.receive(.appendReply(term: 7, success: false, matchSeq: 0), from: 3)
        #expect(voter.role == .follower && voter.term == 7 && voter.votedFor == nil && voter.leader == nil)
        #expect(effects.first == .persist(Change(currentTerm: 7, votedFor: nil)))
        #expect(effects.roleChanges.map(\.role) == [.follower])
        #expect(effects.sends.isEmpty)
    }

    @Test func higherTermRequestWithStaleLogDeposesButGetsNoVote() throws {
        var voter = try makeVoter(1, term: 1, terms: [1, 1])
        makeLeader(&voter)
        let effects = voter.receive(.requestVote(term: 9, lastSeq: 1, lastTerm: 1), from: 2)
        #expect(voter.role == .follower && voter.term == 9)
        #expect(effects.votes == [false])
    }

    @Test func candidateYieldsToLeaderOfSameTerm() throws {
        var voter = try makeVoter(1)
        _ = tickUntilElection(&voter)
        let effects = voter.receive(.append(term: 1, prevSeq: 0, prevTerm: 0, entries: [], commitSeq: 0), from: 2)
        #expect(voter.role == .follower && voter.leader == 2 && voter.term == 1)
        #expect(effects.roleChanges.map(\.leader) == [2])
        #expect(effects.appendReplies.map(\.success) == [true])
    }

    @Test func grantingAVoteOrHearingTheLeaderResetsTheElectionTimer() throws {
        var voter = try makeVoter(1)
        func tickToTheBrink() { for _ in 0..<(voter.electionTimeout - 1) { _ = voter.tick() } }
        tickToTheBrink()
        _ = voter.receive(.requestVote(term: 1, lastSeq: 0, lastTerm: 0), from: 2)
        tickToTheBrink()
        _ = voter.receive(.append(term: 1, prevSeq: 0, prevTerm: 0, entries: [], commitSeq: 0), from: 2)
        tickToTheBrink()
        #expect(voter.role == .follower)
        // A denied vote does not reset it.
        #expect(voter.receive(.requestVote(term: 1, lastSeq: 0, lastTerm: 0), from: 3).votes == [false])
        _ = voter.tick()
        #expect(voter.role == .candidate)
    }

    @Test func leaderHeartbeatsEveryHeartbeatInterval() throws {
        var voter = try makeVoter(1)
        makeLeader(&voter)
        #expect(voter.tick().sends.isEmpty)
        #expect(voter.tick().appends.map(\.to) == [2, 3])
        #expect(voter.tick().sends.isEmpty)
        #expect(voter.tick().appends.map(\.to) == [2, 3])
    }

    @Test func ignoresNonVotersSelfAndOutOfRangeValues() throws {
        var voter = try makeVoter(1)
        #expect(voter.receive(.requestVote(term: 3, lastSeq: 0, lastTerm: 0), from: 7).isEmpty)
        #expect(voter.receive(.requestVote(term: 3, lastSeq: 0, lastTerm: 0), from: 1).isEmpty)
        let huge = voter.receive(.requestVote(term: .max, lastSeq: 0, lastTerm: 0), from: 2)
        #expect(huge.violations == [.malformedMessage] && voter.term == 0)
    }
}
