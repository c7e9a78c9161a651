import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// Batched envelopes over sync (PROTOCOL.md §15.2.4): only peers listing `envelope_runs` get
/// run items; others get single envelopes the sequencer signs again, or tentative receipts.
struct EnvelopeRunSyncTests {
    func envelopes(_ p: TestReplica, _ g: GroupID) throws -> [Envelope] {
        try p.replica.syncCommitted(group: g, fromSeq: 1, limit: 1_000).map { try Envelope(encoded: $0.envelope) }
    }

    @Test func aPeerWithoutTheCapabilityGetsSingleEnvelopesFromTheSequencer() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob"), try TestReplica("carol")]
        let g = try sharedGroup(peers)
        let before = try peers[0].replica.vector(of: g).committed
        try peers[0].replica.appendBatch((0..<30).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: g)
        #expect(try envelopes(peers[0], g).suffix(30).allSatisfy { $0.run != nil })

        let mesh = Mesh(peers)
        mesh.connect(0, 1)
        mesh.connect(0, 2, envelopeRuns: false)
        mesh.pump()
        let alice = try peers[0].replica.vector(of: g).committed
        #expect(alice == before + 30)
        // Bob reads runs: he stores the sequencer's items. Carol gets single envelopes of the same statements.
        #expect(try envelopes(peers[1], g).map(\.encoded) == envelopes(peers[0], g).map(\.encoded))
        let carol = try envelopes(peers[2], g)
        #expect(carol.count == Int(alice) && carol.allSatisfy { $0.run == nil && $0.verify() == .valid })
        #expect(carol.map(\.receipt) == (try envelopes(peers[0], g).map(\.receipt)))
        #expect(try peers[2].hashes(g) == peers[0].hashes(g))
    }

    @Test func aPeerWithoutTheCapabilityGetsTentativeReceiptsFromANonSequencer() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob"), try TestReplica("carol")]
        let g = try sharedGroup(peers)
        let before = try peers[0].replica.vector(of: g).committed
        try peers[0].replica.appendBatch((0..<30).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: g)
        let first = Mesh(peers)
        first.connect(0, 1)
        first.pump()
        // Bob holds run items signed by Alice: he cannot give Carol single envelopes for them.
        let second = Mesh(peers)
        second.connect(1, 2, envelopeRuns: false)
        second.pump()
        #expect(try peers[2].replica.vector(of: g).committed == before)
        #expect(try peers[2].replica.tentativeCount(of: g) == 30)
        #expect(
            try peers[2].hashes(g).tentative == peers[0].hashes(g).tentative,
            "the tentative view already shows the writes")
        // From the sequencer itself she gets the commits.
        let third = Mesh(peers)
        third.connect(0, 2, envelopeRuns: false)
        third.pump()
        #expect(try peers[2].hashes(g) == peers[0].hashes(g))
        #expect(try envelopes(peers[2], g).allSatisfy { $0.run == nil })
    }
}
