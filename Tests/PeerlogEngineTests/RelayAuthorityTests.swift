import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Synchronization
import Testing

/// Groups sequenced by a relay (docs/PROTOCOL.md §19): the relay's replica assigns seqs like a
/// solo device, members accept only its envelopes, the two sides offer the group to each
/// other, and a shared store (the gate) can stop an assignment another relay process made.
@Suite struct RelayAuthorityTests {
    /// Alice's group, named to `relay`, with Bob invited and Alice's history in the relay.
    static func relayedGroup(alice: TestReplica, bob: TestReplica, relay: TestReplica) throws -> GroupID {
        let group = try alice.replica.createGroup(name: "trip")
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        #expect(
            try alice.replica.append(
                .sequencerChanged(.relay(key: relay.device.device, address: "127.0.0.1:7350")), to: group
            ).seq != nil)
        let (receipts, envelopes) = try alice.holdings(group)
        _ = try relay.replica.ingest(receipts: receipts, envelopes: envelopes)
        #expect(try relay.replica.committedSeq(of: group) == alice.replica.committedSeq(of: group))
        return group
    }

    @Test func theRelaySequencesAndMembersAcceptOnlyItsEnvelopes() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let relay = try TestReplica("relay")
        let eve = try TestReplica("eve")
        let group = try Self.relayedGroup(alice: alice, bob: bob, relay: relay)
        let base = try alice.replica.committedSeq(of: group)

        // Alice's own write stays tentative: she no longer sequences.
        let w = try alice.replica.append(.entityPut(key: "k", value: "1"), to: group)
        #expect(w.seq == nil)
        // The relay commits it on arrival and signs with its key.
        let report = try relay.replica.ingest(receipts: [w.receipt])
        #expect(
            report.events.contains {
                if case .committed(_, let seq, let cid, _, nil) = $0 {
                    seq == base + 1 && cid == w.receipt.cid
                } else {
                    false
                }
            })
        let envelope = try #require(relay.holdings(group).envelopes.last)
        #expect(envelope.sequencer == relay.device.device && envelope.seq == base + 1)

        // An envelope signed by anyone else (Alice, the old solo sequencer) is refused.
        let forged = try Envelope.sign(
            group: group, seq: base + 1, receipt: w.receipt.cid, term: 0, receivedAt: 1, key: eve.device.signingKey)
        #expect(
            try alice.replica.ingest(receipts: [], envelopes: [forged]).rejected.first?.reason.contains(
                "the group's sequencer is the relay") == true)
        let byAlice = try Envelope.sign(
            group: group, seq: base + 1, receipt: w.receipt.cid, term: 0, receivedAt: 1, key: alice.device.signingKey)
        #expect(try alice.replica.ingest(receipts: [], envelopes: [byAlice]).rejected.count == 1)
        #expect(try alice.replica.ingest(receipts: [], envelopes: [envelope]).committed == 1)
        #expect(try alice.replica.committedSeq(of: group) == base + 1)
    }

    @Test func theRelayRefusesAReceiptOfARemovedMember() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let relay = try TestReplica("relay")
        let group = try Self.relayedGroup(alice: alice, bob: bob, relay: relay)
        // Bob joins through the relay.
        let (r0, e0) = try relay.holdings(group)
        _ = try bob.replica.ingest(receipts: r0, envelopes: e0)
        let accepted = try bob.replica.append(.inviteAccepted, to: group)
        _ = try relay.replica.ingest(receipts: [accepted.receipt])
        // Alice removes Bob; Bob, not knowing, writes.
        let removal = try alice.replica.append(.memberRemoved(identity: bob.identity), to: group)
        let write = try bob.replica.append(.entityPut(key: "k", value: "late"), to: group)
        let (r1, _) = try alice.holdings(group)
        _ = try relay.replica.ingest(receipts: r1.filter { $0.cid == removal.receipt.cid })
        let report = try relay.replica.ingest(receipts: [write.receipt])
        #expect(
            report.events.contains(
                .refused(group: group, cid: write.receipt.cid, reason: "sender is not an active member")),
            "\(report.events)")
        #expect(
            try relay.replica.log(of: group, view: .tentative).first { $0.receipt.cid == write.receipt.cid }?.rejected
                == "sender is not an active member")
    }

    @Test func relayAndMembersOfferTheGroupToEachOther() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let relay = try TestReplica("relay")
        let eve = try TestReplica("eve")
        let group = try Self.relayedGroup(alice: alice, bob: bob, relay: relay)
        #expect(try alice.replica.syncOffers(group, to: relay.device.certificate))
        #expect(try relay.replica.syncOffers(group, to: alice.device.certificate))
        #expect(try relay.replica.syncOffers(group, to: bob.device.certificate))  // invited (pending)
        #expect(try !relay.replica.syncOffers(group, to: eve.device.certificate))
        #expect(try !alice.replica.syncOffers(group, to: eve.device.certificate))
        #expect(
            try alice.replica.relayEndpoints() == [RelayEndpoint(key: relay.device.device, address: "127.0.0.1:7350")])
        #expect(try relay.replica.relayEndpoints().isEmpty)  // never dials itself
    }

    @Test func aTakenSeqStopsTheRelayUntilItCatchesUp() async throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        // The group names this relay process's key; a second replica with the same key and a gate plays another process.
        let probe = try TestReplica("relay")
        let group = try Self.relayedGroup(alice: alice, bob: bob, relay: probe)
        let base = try probe.replica.committedSeq(of: group)
        let relayDevice = probe.device
        let gate = TableGate()
        let relay = Replica(store: try Store(), device: relayDevice, sequenceGate: gate)
        let (receipts, envelopes) = try alice.holdings(group)
        _ = try relay.ingest(receipts: receipts, envelopes: envelopes)
        let writes = try (1...3).map {
            try alice.replica.append(.entityPut(key: "k\($0)", value: "v"), to: group).receipt
        }
        // Another process already holds base+1 (with the last write): the pass's batch is refused whole.
        let other = try Envelope.sign(
            group: group, seq: base + 1, receipt: writes[2].cid, term: 0, receivedAt: 1, key: relayDevice.signingKey)
        #expect(try await gate.reserve(other, receipt: writes[2]) == .reserved)
        _ = try relay.ingest(receipts: writes)
        let report = try await relay.sequenceThroughGate()
        #expect(try relay.committedSeq(of: group) == base)
        #expect(report.contended == [group] && report.committed == 0)
        #expect(gate.asked.withLock { $0 } == [[base + 1], [base + 1, base + 2, base + 3]])
        // Once another process's base+1 arrives, sequencing continues from base+2 in one batch.
        #expect(try relay.ingest(receipts: [], envelopes: [other]).committed == 1)
        let resumed = try await relay.sequenceThroughGate()
        #expect(resumed.committed == 2 && resumed.contended.isEmpty)
        #expect(gate.asked.withLock { $0 }.last == [base + 2, base + 3])
        #expect(try relay.committedSeq(of: group) == base + 3)
        #expect(
            try relay.log(of: group, view: .committed).suffix(3).map(\.receipt.cid) == [
                writes[2].cid, writes[0].cid, writes[1].cid,
            ])
    }
}
