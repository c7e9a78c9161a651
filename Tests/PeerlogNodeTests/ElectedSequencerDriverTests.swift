import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer
import PeerlogStore
import PeerlogTestSupport
import Testing

@testable import PeerlogNode

/// The elected sequencer's driver on real in-memory replicas, without sockets: its messages go
/// straight from one driver to another.
struct ElectedSequencerDriverTests {
    struct Voter {
        let device: LocalDevice
        let replica: Replica
        var driver: ElectedSequencerDriver

        init(_ name: String, seed: UInt64) throws {
            device = try LocalDevice.deterministic(seed: Array("driver/\(name)".utf8), name: name, createdAt: 1)
            replica = Replica(store: try Store(), device: device, clock: { Voter.now })
            driver = ElectedSequencerDriver(replica: replica, seed: seed)
        }

        var id: DeviceID { device.device }
        /// The replicas' injected clock: fixed, so what is stamped with it can be recognized.
        static let now: UInt64 = 1_234_567_890
    }

    /// A group of `owner`'s with `others` as active members, whose committed authority is then
    /// `elected(voters)`; every replica holds its whole committed log.
    func electedGroup(_ owner: Voter, voters: [DeviceID], copiedTo others: [Voter] = []) throws -> GroupID {
        func copy(from a: Replica, to b: Replica) throws {
            let rows = try a.syncCommitted(group: g, fromSeq: 1, limit: 1000)
            _ = try b.ingest(
                receipts: try rows.map { try Receipt(encoded: $0.receipt.encoded) },
                envelopes: try rows.map { try Envelope(encoded: $0.envelope) })
        }
        let g = try owner.replica.createGroup(name: "g")
        for o in others {
            _ = try owner.replica.append(.memberAdded(identity: o.device.identity, role: .member), to: g)
            try copy(from: owner.replica, to: o.replica)
            let accepted = try o.replica.append(.inviteAccepted, to: g)
            _ = try owner.replica.ingest(receipts: [accepted.receipt])
        }
        _ = try owner.replica.append(
            .sequencerChanged(.elected(voters: voters.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) })), to: g)
        for o in others { try copy(from: owner.replica, to: o.replica) }
        for v in [owner] + others { v.driver.refresh() }
        return g
    }

    /// Ticks `voters` (and delivers what they send, at once) until `done` or `limit` ticks.
    @discardableResult
    func run(
        _ voters: [Voter], limit: Int = 200, deliver: (ElectedSequencerDriver.Send) -> Bool = { _ in true },
        until done: () throws -> Bool
    ) rethrows -> Int {
        for tick in 1...limit {
            var pending = [(from: DeviceID, ElectedSequencerDriver.Send)]()
            for v in voters { pending += v.driver.tick().map { (v.id, $0) } }
            while !pending.isEmpty {
                let (from, send) = pending.removeFirst()
                guard deliver(send), let to = voters.first(where: { $0.id == send.to }) else { continue }
                pending += to.driver.receive(group: send.group, from: from, send.message).map { (to.id, $0) }
            }
            if try done() { return tick }
        }
        return limit + 1
    }

    @Test func aLoneVoterLeadsAndCommitsTentativeWritesInBatchesOfTheWireLimit() throws {
        let alice = try Voter("alice", seed: 1)
        let g = try electedGroup(alice, voters: [alice.id])
        #expect(alice.driver.view(of: g)?.role == .follower)
        let base = try alice.replica.committedSeq(of: g)
        run([alice]) { alice.driver.view(of: g)?.role == .leader }
        #expect(alice.driver.view(of: g)?.role == .leader)
        #expect(alice.driver.view(of: g)?.base == base)

        let extra = 44
        for i in 0..<(SequencerMessage<CID>.maxEntries + extra) {
            try alice.replica.append(.entityPut(key: "k\(i)", value: .int(Int64(i))), to: g)
        }
        _ = alice.driver.takeSigned()
        // One tick assigns at most one append's worth; the next assigns the rest.
        _ = alice.driver.tick()
        #expect(try alice.replica.committedSeq(of: g) == base + UInt64(SequencerMessage<CID>.maxEntries))
        #expect(alice.driver.takeSigned() == [g], "the node is told to push what was signed")
        _ = alice.driver.tick()
        #expect(try alice.replica.committedSeq(of: g) == base + UInt64(SequencerMessage<CID>.maxEntries + extra))
        #expect(try alice.replica.tentativeCount(of: g) == 0)
        #expect(alice.driver.takeProblems().isEmpty)
        // The envelopes are stamped by the replica's injected clock, not the wall clock.
        let signed = try alice.replica.syncCommitted(group: g, fromSeq: base + 1, limit: 10).map {
            try Envelope(encoded: $0.envelope)
        }
        #expect(!signed.isEmpty && signed.allSatisfy { $0.receivedAt == Voter.now })
    }

    @Test func theInjectedSeedDecidesWhenTheElectionStarts() throws {
        /// Ticks until one of three voters (hearing nothing) starts to campaign.
        func ticksToCampaign(seed: UInt64) throws -> Int {
            let voters = [try Voter("alice", seed: seed), try Voter("bob", seed: seed), try Voter("carol", seed: seed)]
            let g = try electedGroup(voters[0], voters: voters.map(\.id), copiedTo: Array(voters.dropFirst()))
            return run(
                [voters[0]], deliver: { _ in false }, until: { voters[0].driver.view(of: g)?.role != .follower })
        }
        let first = try (1...8).map { try ticksToCampaign(seed: $0) }
        #expect(try (1...8).map { try ticksToCampaign(seed: $0) } == first, "equal seeds, equal runs")
        #expect(Set(first).count > 1, "seeds spread the timeouts: \(first)")
        #expect(first.allSatisfy { (6...12).contains($0) }, "the election timeout is 6...12 ticks: \(first)")
    }

    /// A leader that inherited uncommitted assignments of an earlier term and has nothing new
    /// writes one term marker; its commit carries them (PROTOCOL.md §18.4).
    @Test func aNewLeaderCommitsInheritedAssignmentsWithATermMarker() throws {
        var voters = [try Voter("alice", seed: 3), try Voter("bob", seed: 4)]
        let g = try electedGroup(voters[0], voters: voters.map(\.id), copiedTo: [voters[1]])
        let base = try voters[0].replica.committedSeq(of: g)
        run(voters) { voters.contains { $0.driver.view(of: g)?.role == .leader } }
        let l = try #require(voters.firstIndex { $0.driver.view(of: g)?.role == .leader })
        let term = try #require(voters[l].driver.view(of: g)?.term)
        let leader = voters[l].replica
        // The follower hears nothing more: the leader's assignments stay uncommitted (no majority).
        for i in 0..<3 { try leader.append(.entityPut(key: "k\(i)", value: .int(Int64(i))), to: g) }
        run(voters, limit: 5, deliver: { _ in false }, until: { false })
        #expect(try leader.committedSeq(of: g) == base)
        #expect(try leader.tentativeCount(of: g) == 3)
        // It restarts from what it persisted, and the two talk again. Only it can win: the
        // other's log lacks its entries.
        voters[l].driver = ElectedSequencerDriver(replica: leader, seed: 5)
        voters[l].driver.refresh()
        try run(voters, limit: 400) { try leader.committedSeq(of: g) >= base + 4 }
        #expect(try leader.committedSeq(of: g) == base + 4, "three writes and one marker")
        #expect((voters[l].driver.view(of: g)?.term ?? 0) > term)
        let types = try leader.log(of: g, view: .committed).suffix(4).map(\.receipt.type)
        #expect(types.last == ElectedSequencerDriver.termMarkerType, "\(types)")
        #expect(try leader.tentativeCount(of: g) == 0)
        #expect(voters.allSatisfy { $0.driver.takeProblems().isEmpty })
    }

    @Test func electionErrorsCompareByCode() {
        #expect(ElectionError(.cannotPersist, "one") == ElectionError(.cannotPersist, "two"))
        #expect(ElectionError(.cannotPersist, "one") != ElectionError(.cannotSign, "one"))
        #expect(ElectionError(.peerViolation, "x").code.description == "peerViolation")
        #expect(ElectionError(.peerViolation, "election in group").description == "election in group")
        #expect(ElectionError(.peerViolation).description == "peerViolation", "no detail: the code's words")
    }
}
