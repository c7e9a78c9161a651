import Testing

@testable import PeerlogSequencer

@Suite("Append consistency, truncation and back-off", .serialized)
struct ReplicationTests {
    @Test func rejectsWhenPrevIsMissingAndHintsItsLastSeq() throws {
        var voter = try makeVoter(2, term: 1, terms: [1, 1])
        let effects = voter.receive(
            .append(term: 1, prevSeq: 5, prevTerm: 1, entries: makeLog([1], base: 5), commitSeq: 0), from: 1)
        #expect(effects.appendReplies.map(\.success) == [false])
        #expect(effects.appendReplies.map(\.matchSeq) == [2])
        #expect(voter.lastSeq == 2 && voter.leader == 1)
    }

    @Test func rejectsOnPrevTermMismatchAndHintsBeforeTheConflictingTerm() throws {
        var voter = try makeVoter(2, term: 3, terms: [1, 2, 2, 2])
        let effects = voter.receive(.append(term: 3, prevSeq: 4, prevTerm: 3, entries: [], commitSeq: 0), from: 1)
        // Every term-2 entry is skipped in one round trip: the leader should retry at prev 1.
        #expect(effects.appendReplies.map(\.success) == [false])
        #expect(effects.appendReplies.map(\.matchSeq) == [1])
        #expect(effects.persists.isEmpty)  // nothing is truncated on a failed check
    }

    @Test func truncatesAConflictingSuffixAndAppends() throws {
        var voter = try makeVoter(2, term: 2, terms: [1, 1, 2, 2])
        let new = Ent(seq: 3, item: "new", term: 3)
        let effects = voter.receive(.append(term: 3, prevSeq: 2, prevTerm: 1, entries: [new], commitSeq: 0), from: 1)
        #expect(effects.first == .persist(Change(currentTerm: 3, votedFor: nil, truncatedAfter: 2, appended: [new])))
        #expect(effects.persistPrecedesSends)
        #expect(voter.persistentState.entries == makeLog([1, 1]) + [new])
        #expect(!voter.contains("x3") && !voter.contains("x4") && voter.seq(of: "new") == 3)
        #expect(effects.appendReplies.map(\.matchSeq) == [3])
    }

    @Test func staleShorterAppendNeverShortensTheLog() throws {
        var voter = try makeVoter(2, term: 1, terms: [1, 1, 1])
        let effects = voter.receive(
            .append(term: 1, prevSeq: 0, prevTerm: 0, entries: makeLog([1]), commitSeq: 0), from: 1)
        #expect(voter.lastSeq == 3 && effects.persists.isEmpty)
        // Only the prefix covered by the message is vouched for.
        #expect(effects.appendReplies.map(\.matchSeq) == [1])
    }

    @Test func followerCommitIsCappedAtTheLastEntryOfTheMessage() throws {
        // Seqs 3 and 4 (term 1) may be a stale suffix that the term-2 leader lacks.
        var voter = try makeVoter(2, term: 1, terms: [1, 1, 1, 1])
        let effects = voter.receive(
            .append(term: 2, prevSeq: 1, prevTerm: 1, entries: Array(makeLog([1, 1]).suffix(1)), commitSeq: 9), from: 1)
        #expect(voter.commitSeq == 2)
        #expect(effects.committed == makeLog([1, 1]))
        #expect(effects.committedAsLeader == [false])
    }

    @Test func committedEntriesAreNeverTruncated() throws {
        var voter = try makeVoter(2, term: 1, terms: [1, 1, 1])
        _ = voter.receive(.append(term: 1, prevSeq: 3, prevTerm: 1, entries: [], commitSeq: 2), from: 1)
        #expect(voter.commitSeq == 2)
        let before = voter.persistentState.entries
        // A (faulty) later leader claiming a different entry at committed seq 2.
        let bad = Ent(seq: 2, item: "evil", term: 2)
        let viaEntries = voter.receive(.append(term: 2, prevSeq: 1, prevTerm: 1, entries: [bad], commitSeq: 2), from: 3)
        #expect(viaEntries.violations == [.wouldTruncateCommitted])
        let viaPrev = voter.receive(.append(term: 2, prevSeq: 2, prevTerm: 2, entries: [], commitSeq: 2), from: 3)
        #expect(viaPrev.violations == [.wouldTruncateCommitted])
        #expect(voter.persistentState.entries == before && voter.commitSeq == 2)
        // Seq 3 is not committed, so replacing it is ordinary Raft.
        let fine = voter.receive(
            .append(term: 2, prevSeq: 2, prevTerm: 1, entries: [Ent(seq: 3, item: "y", term: 2)], commitSeq: 2), from: 3
        )
        #expect(fine.violations.isEmpty && voter.entry(at: 3)?.item == "y")
    }

    @Test func refusesMalformedAppends() throws {
        var voter = try makeVoter(2, term: 2, terms: [1])
        let gap = [Ent(seq: 3, item: "a", term: 2)]
        #expect(
            voter.receive(.append(term: 2, prevSeq: 1, prevTerm: 1, entries: gap, commitSeq: 0), from: 1).violations
                == [.malformedMessage])
        let future = [Ent(seq: 2, item: "a", term: 5)]
        #expect(
            voter.receive(.append(term: 2, prevSeq: 1, prevTerm: 1, entries: future, commitSeq: 0), from: 1).violations
                == [.malformedMessage])
        #expect(
            voter.receive(.append(term: 2, prevSeq: 0, prevTerm: 1, entries: [], commitSeq: 0), from: 1).violations == [
                .malformedMessage
            ])
        #expect(voter.lastSeq == 1)
    }

    @Test func aSecondLeaderInTheSameTermIsReported() throws {
        var voter = try makeVoter(1)
        makeLeader(&voter)
        let effects = voter.receive(
            .append(term: voter.term, prevSeq: 0, prevTerm: 0, entries: [], commitSeq: 0), from: 2)
        #expect(effects.violations == [.conflictingLeader] && voter.role == .leader)
    }

    @Test func duplicateItemFromLeaderIsReported() throws {
        var voter = try makeVoter(2, term: 1, terms: [1])
        let dup = Ent(seq: 2, item: "x1", term: 1)
        let effects = voter.receive(.append(term: 1, prevSeq: 1, prevTerm: 1, entries: [dup], commitSeq: 0), from: 1)
        #expect(effects.violations == [.duplicateItem])
    }

    @Test func leaderBacksOffUsingTheHintAndNeverBelowAKnownMatch() throws {
        var voter = try makeVoter(1, term: 3, terms: [1, 2, 2, 3, 3, 3])
        makeLeader(&voter)  // term 4, nextSeq = 7 for everyone
        var effects = voter.receive(.appendReply(term: 4, success: false, matchSeq: 1), from: 2)
        #expect(effects.appends.map(\.prevSeq) == [1])
        #expect(effects.appends.first?.entries == Array(voter.persistentState.entries.dropFirst()))
        // Success up to 3, then a reordered stale failure must not move nextSeq back below 4.
        _ = voter.receive(.appendReply(term: 4, success: true, matchSeq: 3), from: 2)
        effects = voter.receive(.appendReply(term: 4, success: false, matchSeq: 0), from: 2)
        #expect(effects.appends.map(\.prevSeq) == [3])
    }

    @Test func appendsAreBatchedAndCatchUpContinuesAfterEachSuccess() throws {
        var voter = try makeVoter(1, term: 1, terms: Array(repeating: 1, count: 10), maxEntries: 4)
        makeLeader(&voter)
        var effects = voter.receive(.appendReply(term: 2, success: false, matchSeq: 0), from: 2)
        #expect(effects.appends.first?.entries.map(\.seq) == [1, 2, 3, 4])
        effects = voter.receive(.appendReply(term: 2, success: true, matchSeq: 4), from: 2)
        #expect(effects.appends.first?.entries.map(\.seq) == [5, 6, 7, 8])
        effects = voter.receive(.appendReply(term: 2, success: true, matchSeq: 10), from: 2)
        #expect(effects.appends.isEmpty)  // caught up: wait for the next heartbeat
    }

    @Test func heartbeatsRetransmitUnacknowledgedEntries() throws {
        var voter = try makeVoter(1)
        makeLeader(&voter)
        _ = voter.propose(["a"])
        _ = voter.tick()
        let heartbeat = voter.tick()
        #expect(heartbeat.appends.map(\.entries.count) == [1, 1])
    }
}
