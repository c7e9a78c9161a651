import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// Envelopes under an elected authority (docs/PROTOCOL.md §18.2): any voter may sign, but only
/// with a term of the current authority; voter sets change one voter at a time.
@Suite struct ElectedAuthorityTests {
    @Test func votersSignWithTermsOfTheCurrentAuthorityOnly() throws {
        let ann = try TestReplica("ann")
        let ben = try TestReplica("ben")
        let eve = try TestReplica("eve")
        let group = try ann.replica.createGroup(name: "team")
        let voters = [ann.device.device, ben.device.device].sorted()
        let change = try ann.replica.append(.sequencerChanged(.elected(voters: voters)), to: group)
        let base = try #require(change.seq)
        let authority = try #require(try ann.replica.electedAuthority(of: group))
        #expect(authority.voters == voters && authority.base == base)
        #expect(authority.termFloor == base << 20)

        // Ann's write stays tentative: no one assigns seqs until an election.
        let w1 = try ann.replica.append(.entityPut(key: "k", value: "1"), to: group)
        #expect(w1.seq == nil)

        // A voter signing with a term below the authority's floor is refused, finally.
        let stale = try Envelope.sign(
            group: group, seq: base + 1, receipt: w1.receipt.cid, term: authority.termFloor - 1, receivedAt: 1,
            key: ben.device.signingKey)
        let r1 = try ann.replica.ingest(receipts: [], envelopes: [stale])
        #expect(r1.rejected.first?.reason.contains("below") == true, "\(r1.rejected)")
        // A non-voter is refused whatever the term.
        let outsider = try Envelope.sign(
            group: group, seq: base + 1, receipt: w1.receipt.cid, term: authority.termFloor + 1, receivedAt: 1,
            key: eve.device.signingKey)
        #expect(
            try ann.replica.ingest(receipts: [], envelopes: [outsider]).rejected.first?.reason.contains("not a voter")
                == true)
        // The elected leader (Ben, in a term of this authority) commits it.
        let good = try Envelope.sign(
            group: group, seq: base + 1, receipt: w1.receipt.cid, term: authority.termFloor + 3, receivedAt: 1,
            key: ben.device.signingKey)
        #expect(try ann.replica.ingest(receipts: [], envelopes: [good]).committed == 1)
        #expect(try ann.replica.committedSeq(of: group) == base + 1)
        // commitElected signs with the local key (Ann is a voter too).
        let w2 = try ann.replica.append(.entityPut(key: "k", value: "2"), to: group)
        try ann.replica.commitElected(
            group: group, assignments: [(base + 2, w2.receipt.cid)], term: authority.termFloor + 4)
        #expect(try ann.replica.committedSeq(of: group) == base + 2)
        #expect(try ann.replica.assignableReceipts(of: group).isEmpty)
    }

    @Test func voterSetsChangeOneVoterAtATime() throws {
        let owner = try TestReplica("owner")
        let group = try owner.replica.createGroup(name: "team")
        let d = try (1...4).map { try TestReplica("v\($0)").device.device }
        let start = [owner.device.device, d[0], d[1]].sorted()
        #expect(try owner.replica.append(.sequencerChanged(.elected(voters: start)), to: group).seq != nil)
        // Two voters at once: refused by the committed rules (no seq assigned, a rule violation).
        #expect(throws: ReplicaError.self) {
            try owner.replica.append(
                .sequencerChanged(.elected(voters: [owner.device.device, d[2], d[3]].sorted())), to: group)
        }
        // One added, then one removed: fine (the local write stays tentative until a leader assigns it).
        let added = try owner.replica.append(.sequencerChanged(.elected(voters: (start + [d[2]]).sorted())), to: group)
        #expect(added.seq == nil)
    }

    @Test func sequencerStateRoundTripsAndResets() throws {
        let node = try TestReplica("ann")
        let group = try node.replica.createGroup(name: "team")
        #expect(try node.replica.sequencerState(of: group) == nil)
        try node.replica.resetSequencer(group: group, base: 5, term: 5 << 20)
        let cids = (1...3).map { CID(hashing: [UInt8($0)]) }
        try node.replica.saveSequencer(
            group: group, term: (5 << 20) + 2, votedFor: node.device.device, truncatedAfter: nil,
            appended: [(6, cids[0], (5 << 20) + 1), (7, cids[1], (5 << 20) + 2)])
        try node.replica.saveSequencer(
            group: group, term: (5 << 20) + 3, votedFor: nil, truncatedAfter: 6, appended: [(7, cids[2], (5 << 20) + 3)]
        )
        let s = try #require(try node.replica.sequencerState(of: group))
        #expect(s.base == 5 && s.term == (5 << 20) + 3 && s.votedFor == nil)
        #expect(s.entries.map(\.seq) == [6, 7] && s.entries.map(\.cid) == [cids[0], cids[2]])
        // A new authority: log emptied, term never lowered.
        try node.replica.resetSequencer(group: group, base: 9, term: 1)
        let r = try #require(try node.replica.sequencerState(of: group))
        #expect(r.base == 9 && r.entries.isEmpty && r.term == (5 << 20) + 3)
    }
}
