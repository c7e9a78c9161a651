import Testing

@testable import PeerlogSequencer

@Suite("Configuration, persisted state and restarts", .serialized)
struct PersistenceTests {
    @Test func configNormalizesAndValidates() throws {
        #expect(try SequencerConfig(voters: [3, 1, 2], base: 0).voters == [1, 2, 3])
        #expect(try SequencerConfig(voters: Array(1...5), base: 0).quorum == 3)
        #expect(try SequencerConfig(voters: Array(1...4), base: 0).quorum == 3)
        // Untyped: closures inside #expect do not infer typed throws.
        func code(_ make: () throws -> SequencerConfig<Int>) -> SequencerError.Code? {
            do {
                _ = try make()
                return nil
            } catch { return (error as? SequencerError)?.code }
        }
        #expect(code { try SequencerConfig(voters: [], base: 0) } == .invalidConfig)
        #expect(code { try SequencerConfig(voters: Array(1...10), base: 0) } == .invalidConfig)
        #expect(code { try SequencerConfig(voters: Array(1...9), base: 0) } == nil)
        #expect(code { try SequencerConfig(voters: [1, 2, 1], base: 0) } == .invalidConfig)
        #expect(code { try SequencerConfig(voters: [1], base: 0, heartbeatTicks: 0) } == .invalidConfig)
        #expect(
            code { try SequencerConfig(voters: [1], base: 0, electionTimeoutTicks: 2...5, heartbeatTicks: 2) }
                == .invalidConfig)
        #expect(
            code { try SequencerConfig(voters: [1], base: 0, electionTimeoutTicks: 3...5, heartbeatTicks: 2) } == nil)
        #expect(code { try SequencerConfig(voters: [1], base: 0, maxEntriesPerAppend: 0) } == .invalidConfig)
    }

    @Test func initRejectsInconsistentPersistedState() throws {
        let config = try makeConfig(3, base: 10)
        func code(_ state: Disk, me: Int = 1, committedThrough: UInt64 = 0) -> SequencerError.Code? {
            do {
                _ = try Seq(me: me, config: config, persisted: state, committedThrough: committedThrough, seed: 0)
                return nil
            } catch { return error.code }
        }
        #expect(code(Disk(), me: 4) == .notAVoter)
        #expect(code(Disk(currentTerm: 2, entries: makeLog([1, 2], base: 10))) == nil)
        // Entries before base, a term above currentTerm, decreasing terms, a vote for a non-voter.
        #expect(code(Disk(currentTerm: 2, entries: makeLog([1]))) == .invalidPersistedState)
        #expect(code(Disk(currentTerm: 1, entries: makeLog([1, 2], base: 10))) == .invalidPersistedState)
        #expect(code(Disk(currentTerm: 2, entries: makeLog([2, 1], base: 10))) == .invalidPersistedState)
        #expect(code(Disk(currentTerm: 1, votedFor: 9)) == .invalidPersistedState)
        let dup = [Ent(seq: 11, item: "a", term: 1), Ent(seq: 12, item: "a", term: 1)]
        #expect(code(Disk(currentTerm: 1, entries: dup)) == .invalidPersistedState)
        #expect(
            code(Disk(currentTerm: 1, entries: makeLog([1], base: 10)), committedThrough: 12) == .invalidPersistedState)
        #expect(code(Disk(currentTerm: 1, entries: makeLog([1], base: 10)), committedThrough: 11) == nil)
    }

    @Test func applyingPersistEffectsReproducesTheState() throws {
        var voter = try makeVoter(2, of: 3, base: 5)
        var disk = Disk()
        let script: [(Msg, Int)] = [
            (.requestVote(term: 1, lastSeq: 5, lastTerm: 0), 1),
            (
                .append(
                    term: 1, prevSeq: 5, prevTerm: 0,
                    entries: [Ent(seq: 6, item: "a", term: 1), Ent(seq: 7, item: "b", term: 1)], commitSeq: 6), 1
            ),
            (.requestVote(term: 2, lastSeq: 6, lastTerm: 1), 3),  // denied: shorter log
            (
                .append(
                    term: 3, prevSeq: 6, prevTerm: 1,
                    entries: [Ent(seq: 7, item: "c", term: 3), Ent(seq: 8, item: "b", term: 3)], commitSeq: 6), 3
            ),
        ]
        for (message, sender) in script {
            let effects = voter.receive(message, from: sender)
            #expect(effects.persists.count <= 1 && effects.persistPrecedesSends)
            for change in effects.persists { disk.apply(change) }
            #expect(disk == voter.persistentState)
        }
        #expect(disk.entries.map(\.item) == ["a", "c", "b"])
        #expect(disk.currentTerm == 3 && disk.votedFor == nil)

        var restarted = try Seq(me: 2, config: voter.config, persisted: disk, seed: 3)
        #expect(restarted.commitSeq == 5 && restarted.role == .follower && restarted.leader == nil)
        #expect(restarted.persistentState == disk)
        // Commit is re-learned from the leader and reported again.
        let effects = restarted.receive(.append(term: 3, prevSeq: 8, prevTerm: 3, entries: [], commitSeq: 8), from: 3)
        #expect(effects.committed.map(\.item) == ["a", "c", "b"])
    }

    @Test func sameSeedSameTimeouts() throws {
        var a = try makeVoter(1, seed: 42)
        var b = try makeVoter(1, seed: 42)
        var c = try makeVoter(2, seed: 42)  // another voter with the same seed still draws differently
        var draws: [[Int]] = [[], [], []]
        for _ in 0..<8 {
            for (i, voter) in [a, b, c].enumerated() { draws[i].append(voter.electionTimeout) }
            a.resetElectionTimer()
            b.resetElectionTimer()
            c.resetElectionTimer()
        }
        #expect(draws[0] == draws[1] && draws[0] != draws[2])
    }
}
