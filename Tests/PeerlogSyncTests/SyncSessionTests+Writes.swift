import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// The session writes nothing: a batch comes out as `.ingest` for the driver, a peer's vector
/// as `.recordPeerVector`, and the driver's outcome goes back in through `ingested(_:)`.
extension SyncSessionTests {
    /// A session of bob's with alice after hello, and alice's vector for `g` delivered.
    func openSession(_ peers: [TestReplica], _ g: GroupID) -> SyncSession {
        let s = SyncSession(local: peers[1].device, peer: peers[0].device.certificate, store: peers[1].replica)
        _ = s.start()
        _ = s.receive(SyncMessage.hello(versions: [1], capabilities: ["commits"], groups: [g]).encoded())
        return s
    }

    @Test func aBatchIsHandedToTheDriverAndNothingIsWrittenUntilItIngests() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        try peers[0].put(g, "k", 1)
        let rows = try peers[0].replica.syncCommitted(
            group: g, fromSeq: try peers[1].replica.vector(of: g).committed + 1, limit: 10)
        #expect(rows.count == 1)
        let s = openSession(peers, g)
        let before = try peers[1].replica.vector(of: g)
        let out = s.receive(
            SyncMessage.commits(group: g, receipts: rows.map(\.receipt.encoded), envelopes: rows.map(\.envelope))
                .encoded())
        guard case .ingest(let batch)? = out.last else {
            Issue.record("expected .ingest last, got \(out)")
            return
        }
        #expect(batch.group == g && batch.from == peers[0].device.device)
        #expect(batch.receipts.map(\.encoded) == rows.map(\.receipt.encoded) && batch.envelopes.count == 1)
        #expect(!out.contains { if case .send = $0 { true } else { false } }, "the credit waits for the outcome")
        #expect(try peers[1].replica.vector(of: g) == before, "the session wrote nothing")

        let report = try peers[1].replica.ingest(receipts: batch.receipts, envelopes: batch.envelopes, from: batch.from)
        let after = s.ingested(.success(report))
        #expect(after.contains { if case .event(.ingested(g, _)) = $0 { true } else { false } })
        #expect(
            after.contains { action in
                guard case .send(let bytes) = action else { return false }
                return (try? SyncMessage.decode(bytes, limits: .init())) == .credit(1)
            }, "the batch's credit is returned once it is ingested")
        #expect(try peers[1].replica.vector(of: g).committed == before.committed + 1)
        #expect(s.status().groups.first { $0.group == g }?.received.items == 2)
    }

    @Test func aFailedIngestEndsTheSessionAsAStoreFailure() throws {
        struct DiskFull: Error {}
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        try peers[0].put(g, "k", 1)
        let rows = try peers[0].replica.syncCommitted(
            group: g, fromSeq: try peers[1].replica.vector(of: g).committed + 1, limit: 10)
        let s = openSession(peers, g)
        let out = s.receive(
            SyncMessage.commits(group: g, receipts: rows.map(\.receipt.encoded), envelopes: rows.map(\.envelope))
                .encoded())
        #expect(out.contains { if case .ingest = $0 { true } else { false } })
        let after = s.ingested(.failure(DiskFull()))
        #expect(
            after.contains { if case .close(let why) = $0 { why.hasPrefix("internal: local store") } else { false } })
        #expect(s.status().closed)
    }

    @Test func aPeersVectorIsRecordedAndReplacedByItsNextOne() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        for i in 0..<3 { try peers[1].put(g, "b\(i)", Int64(i)) }
        let bobVector = try peers[1].replica.vector(of: g)
        let mesh = Mesh(peers)
        mesh.connect(0, 1)
        mesh.pump()
        #expect(try peers[1].replica.vector(of: g) != bobVector, "alice committed bob's writes")
        // What each side sent at hello, as the other recorded it (items exchanged later do not move it).
        let bobSaid = try peers[0].replica.peerVector(peer: peers[1].device.device, group: g)
        #expect(bobSaid.committed == bobVector.committed && bobSaid.committed > 0)
        #expect(bobSaid.authors[peers[1].device.device] == 3 + 1, "bob's three writes after his acceptance")
        #expect(bobSaid.authors.count == bobVector.authors.count)
        #expect(try peers[1].replica.peerVector(peer: peers[0].device.device, group: g).committed > 0)

        // A later vector replaces the rows: an author it no longer lists is gone.
        let s = openSession(peers, g)
        let out = s.receive(
            SyncMessage.vector(
                group: g, committed: 2, authors: [AuthorCounter(author: peers[0].device.device, counter: 1)]
            ).encoded())
        #expect(
            out.contains {
                if case .recordPeerVector(let v) = $0 {
                    v.peer == peers[0].device.device && v.group == g && v.committed == 2
                } else {
                    false
                }
            })
        _ = s.settle(out, with: peers[1].replica)
        let aliceSaid = try peers[1].replica.peerVector(peer: peers[0].device.device, group: g)
        #expect(aliceSaid.committed == 2 && aliceSaid.authors == [peers[0].device.device: 1])
        // Other groups and peers are untouched.
        #expect(try peers[1].replica.peerVector(peer: peers[1].device.device, group: g).authors.isEmpty)
    }
}
