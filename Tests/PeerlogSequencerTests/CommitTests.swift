import Testing

@testable import PeerlogSequencer

@Suite("Commit rule and proposals", .serialized)
struct CommitTests {
    @Test func leaderCommitsOnceAMajorityIncludingItselfHoldsTheEntry() throws {
        var leader = try makeVoter(1, of: 5)
        makeLeader(&leader)
        let proposed = leader.propose(["a", "b"])
        #expect(
            proposed.first
                == .persist(
                    Change(
                        currentTerm: 1, votedFor: 1,
                        appended: [
                            Ent(seq: 1, item: "a", term: 1), Ent(seq: 2, item: "b", term: 1),
                        ])))
        #expect(proposed.persistPrecedesSends && proposed.committed.isEmpty)
        #expect(proposed.appends.map(\.to) == [2, 3, 4, 5])
        #expect(leader.receive(.appendReply(term: 1, success: true, matchSeq: 2), from: 4).committed.isEmpty)
        let effects = leader.receive(.appendReply(term: 1, success: true, matchSeq: 1), from: 2)
        #expect(effects.committed.map(\.item) == ["a"] && effects.committedAsLeader == [true])
        #expect(
            leader.receive(.appendReply(term: 1, success: true, matchSeq: 2), from: 5).committed.map(\.item) == ["b"])
        #expect(leader.commitSeq == 2)
        // The next heartbeat carries the commit to followers.
        #expect(leader.tick().sends.isEmpty)
        #expect(leader.tick().appends.allSatisfy { $0.commitSeq == 2 })
    }

    /// Raft Figure 8: an earlier-term entry on a majority is not yet safe, because a voter
    /// holding a later-term entry at the same seq can still be elected and overwrite it.
    @Test func earlierTermEntriesAreNotCommittedByCountingReplicas() throws {
        var s1 = try makeVoter(1, of: 5, term: 3, terms: [1, 2])
        var s2 = try makeVoter(2, of: 5, term: 3, terms: [1, 2])
        var s3 = try makeVoter(3, of: 5, term: 3, terms: [1])
        var s5 = try makeVoter(5, of: 5, term: 4, terms: [1, 3])
        makeLeader(&s1)  // term 4
        let catchUp = Msg.append(
            term: 4, prevSeq: 1, prevTerm: 1, entries: [Ent(seq: 2, item: "x2", term: 2)], commitSeq: 0)
        #expect(s2.receive(catchUp, from: 1).appendReplies.map(\.matchSeq) == [2])
        #expect(s3.receive(catchUp, from: 1).appendReplies.map(\.matchSeq) == [2])
        #expect(s1.receive(.appendReply(term: 4, success: true, matchSeq: 2), from: 2).committed.isEmpty)
        #expect(s1.receive(.appendReply(term: 4, success: true, matchSeq: 2), from: 3).committed.isEmpty)
        #expect(s1.commitSeq == 0)

        // S5 (last term 3) can still win S2 and S3, and would replace seq 2.
        let request = tickUntilElection(&s5).sends.first!.message
        #expect(s2.receive(request, from: 5).votes == [true])
        #expect(s3.receive(request, from: 5).votes == [true])
        let overwrite = s3.receive(
            .append(term: 5, prevSeq: 1, prevTerm: 1, entries: [Ent(seq: 2, item: "other", term: 3)], commitSeq: 0),
            from: 5)
        #expect(overwrite.violations.isEmpty && s3.entry(at: 2)?.item == "other")

        // Had S1 stayed leader, a term-4 entry on a majority commits everything before it.
        _ = s1.propose(["c"])
        #expect(s1.receive(.appendReply(term: 4, success: true, matchSeq: 3), from: 2).committed.isEmpty)
        let commit = s1.receive(.appendReply(term: 4, success: true, matchSeq: 3), from: 4)
        #expect(commit.committed.map(\.item) == ["x1", "x2", "c"])
    }

    @Test func proposeSkipsItemsAlreadyInTheLogOrRepeated() throws {
        var leader = try makeVoter(1)
        makeLeader(&leader)
        _ = leader.propose(["a", "a", "b"])
        #expect(leader.persistentState.entries.map(\.item) == ["a", "b"])
        let second = leader.propose(["b", "c"])
        #expect(second.persists.map(\.appended) == [[Ent(seq: 3, item: "c", term: 1)]])
        _ = leader.receive(.appendReply(term: 1, success: true, matchSeq: 3), from: 2)
        #expect(leader.commitSeq == 3)
        #expect(leader.propose(["a", "c"]).isEmpty)  // committed items are skipped too
        #expect(leader.uncommittedItems.isEmpty)
    }

    @Test func proposalsWhileAnAppendIsOutstandingRideOnTheReply() throws {
        var leader = try makeVoter(1)
        makeLeader(&leader)
        #expect(leader.propose(["a"]).appends.map(\.to) == [2, 3])
        _ = leader.receive(.appendReply(term: 1, success: true, matchSeq: 1), from: 2)
        // Voter 2 acknowledged everything and gets "b" now; voter 3 still owes a reply for "a".
        let second = leader.propose(["b"])
        #expect(second.appends.map(\.to) == [2])
        #expect(second.appends.first?.entries.map(\.item) == ["b"])
        let reply = leader.receive(.appendReply(term: 1, success: true, matchSeq: 1), from: 3)
        #expect(reply.appends.map(\.to) == [3] && reply.appends.first?.entries.map(\.item) == ["b"])
    }

    @Test func proposeIsANoOpUnlessLeader() throws {
        var follower = try makeVoter(2)
        #expect(follower.propose(["a"]).isEmpty)
        _ = tickUntilElection(&follower)
        #expect(follower.propose(["a"]).isEmpty && follower.lastSeq == 0)
    }

    @Test func loneVoterElectsItselfOnFirstTickAndCommitsOnPropose() throws {
        var voter = try Seq(me: 7, config: SequencerConfig(voters: [7], base: 40), seed: 0)
        let elected = voter.tick()
        #expect(voter.role == .leader && voter.term == 1 && voter.leader == 7)
        #expect(elected == [.persist(Change(currentTerm: 1, votedFor: 7)), .roleChanged(.leader, term: 1, leader: 7)])
        let effects = voter.propose(["a", "b"])
        let entries = [Ent(seq: 41, item: "a", term: 1), Ent(seq: 42, item: "b", term: 1)]
        #expect(
            effects == [
                .persist(Change(currentTerm: 1, votedFor: 7, appended: entries)), .committed(entries, asLeader: true),
            ])
        #expect(voter.commitSeq == 42 && voter.tick().isEmpty)
    }

    @Test func loneVoterCommitsInheritedEntriesWithItsFirstNewOne() throws {
        var voter = try Seq(
            me: 1, config: makeConfig(1), persisted: Disk(currentTerm: 1, votedFor: 1, entries: makeLog([1])), seed: 0)
        _ = voter.tick()
        #expect(voter.term == 2 && voter.commitSeq == 0)
        #expect(voter.propose(["b"]).committed.map(\.item) == ["x1", "b"])
    }

    @Test func restoredCommitIsNotReportedAgain() throws {
        var voter = try Seq(
            me: 2, config: makeConfig(3), persisted: Disk(currentTerm: 1, entries: makeLog([1, 1, 1])),
            committedThrough: 2, seed: 0)
        #expect(voter.commitSeq == 2)
        let effects = voter.receive(.append(term: 1, prevSeq: 3, prevTerm: 1, entries: [], commitSeq: 3), from: 1)
        #expect(effects.committed == [Ent(seq: 3, item: "x3", term: 1)])
        // A stale heartbeat never lowers the commit point.
        _ = voter.receive(.append(term: 1, prevSeq: 1, prevTerm: 1, entries: [], commitSeq: 1), from: 1)
        #expect(voter.commitSeq == 3)
    }
}
