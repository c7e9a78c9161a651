import PeerlogEncoding
import PeerlogModel
import PeerlogSequencer
import PeerlogSync
import PeerlogTestSupport
import Testing

/// Pre-vote across versions (PROTOCOL.md §18.3): pre-vote kinds go only to peers whose hello
/// lists `prevote`; for an older peer the session answers with that peer's grant itself.
extension SyncSessionTests {
    @Test func preVoteGoesOnlyToPeersThatListTheCapability() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob"), try TestReplica("carol")]
        let g = try sharedGroup(peers)
        let mesh = Mesh(peers)
        // Bob's session with alice acts as a peer from before pre-vote; carol's is current.
        let (_, aliceToOldBob) = mesh.connect(1, 0, preVote: false)
        let (aliceToCarol, _) = mesh.connect(0, 2)
        mesh.pump()
        let request = SequencerMessage<CID>.preVoteRequest(term: 5, lastSeq: 3, lastTerm: 4)

        let toOld = mesh.ends[aliceToOldBob].session.sendElection(group: g, request)
        #expect(!toOld.contains { if case .send = $0 { true } else { false } }, "nothing an old peer cannot parse")
        let answered = toOld.compactMap { action -> (GroupID, DeviceID, SequencerMessage<CID>)? in
            if case .event(.election(let group, let from, let m)) = action { (group, from, m) } else { nil }
        }
        #expect(answered.count == 1)
        #expect(answered.first?.0 == g && answered.first?.1 == peers[1].device.device)
        #expect(answered.first?.2 == .preVote(term: 5, granted: true))
        // A pre-vote reply to an old peer (it never asked) is dropped; plain Raft still flows.
        #expect(mesh.ends[aliceToOldBob].session.sendElection(group: g, .preVote(term: 5, granted: false)).isEmpty)
        #expect(mesh.ends[aliceToOldBob].session.sendElection(group: g, .vote(term: 5, granted: false)).count == 1)

        let toCurrent = mesh.ends[aliceToCarol].session.sendElection(group: g, request)
        guard case .send(let bytes)? = toCurrent.first, toCurrent.count == 1 else {
            Issue.record("expected one send, got \(toCurrent)")
            return
        }
        #expect(try SyncMessage.decode(bytes, limits: .init()) == .election(group: g, request))
    }

    @Test func unknownElectionKindFromAPeerIsIgnoredAndTheSessionStaysOpen() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        let mesh = Mesh(peers)
        let (a, _) = mesh.connect(0, 1)
        mesh.pump()
        let future = CBOREncoder.encode(
            .textMap(["t": "election", "group": .bytes(g.bytes), "kind": "lease_transfer", "term": 9]))
        let out = mesh.ends[a].session.receive(future)
        #expect(!out.contains { if case .close = $0 { true } else { false } })
        #expect(
            out.contains {
                if case .event(.ignoredUnknownMessage("election/lease_transfer")) = $0 { true } else { false }
            })
        #expect(mesh.ends[a].session.status().closed == false)
    }
}
