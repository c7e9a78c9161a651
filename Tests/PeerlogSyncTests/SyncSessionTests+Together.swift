import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// Batches handed out before the first is answered (`SyncSession.receive`), written together
/// (`SyncSession.receive(_:writingWith:)`), as a node that takes what arrived while it was busy.
extension SyncSessionTests {
    /// The `commits` message carrying alice's committed rows of `g` that bob lacks.
    func commitsBobLacks(_ peers: [TestReplica], _ g: GroupID) throws -> [UInt8] {
        let rows = try peers[0].replica.syncCommitted(
            group: g, fromSeq: try peers[1].replica.vector(of: g).committed + 1, limit: 10)
        return SyncMessage.commits(group: g, receipts: rows.map(\.receipt.encoded), envelopes: rows.map(\.envelope))
            .encoded()
    }

    /// Two groups shared by alice and bob, each with a write of alice's that bob lacks, and a
    /// session of bob's with alice after hello.
    func twoGroupsBobLacks() throws -> ([TestReplica], GroupID, GroupID, SyncSession) {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g1 = try sharedGroup(peers, name: "one")
        let g2 = try sharedGroup(peers, name: "two")
        try peers[0].put(g1, "k", 1)
        try peers[0].put(g2, "k", 2)
        let s = SyncSession(local: peers[1].device, peer: peers[0].device.certificate, store: peers[1].replica)
        _ = s.start()
        _ = s.receive(SyncMessage.hello(versions: [1], capabilities: ["commits"], groups: [g1, g2]).encoded())
        return (peers, g1, g2, s)
    }

    @Test func batchesComeOutBeforeTheFirstIsAnsweredAndOtherMessagesWaitForThem() throws {
        let (peers, g1, g2, s) = try twoGroupsBobLacks()
        let first = s.receive(try commitsBobLacks(peers, g1))
        let second = s.receive(try commitsBobLacks(peers, g2))
        // `caught_up` comes out at once; `unshared` must wait: the batch of g2 before it is not written.
        let caughtUp = s.receive(SyncMessage.caughtUp(group: g1).encoded())
        let unshared = s.receive(SyncMessage.unshared(group: g2, reason: "left").encoded())
        var batches = [SyncIngest]()
        for out in [first, second] {
            guard case .ingest(let batch)? = out.last else {
                Issue.record("expected .ingest last, got \(out)")
                return
            }
            batches.append(batch)
        }
        #expect(batches.map(\.group) == [g1, g2])
        #expect(caughtUp.contains { if case .event(.caughtUp(g1)) = $0 { true } else { false } })
        #expect(unshared.isEmpty, "held until the batches before it are ingested")
        let reports = try peers[1].replica.ingest(
            parts: batches.map { IngestPart(receipts: $0.receipts, envelopes: $0.envelopes, from: $0.from) })
        let afterFirst = s.ingested(.success(reports[0]))
        #expect(afterFirst.contains { if case .event(.ingested(g1, _)) = $0 { true } else { false } })
        #expect(!afterFirst.contains { if case .event(.unsharedByPeer) = $0 { true } else { false } })
        let afterSecond = s.ingested(.success(reports[1]))
        #expect(afterSecond.contains { if case .event(.unsharedByPeer(g2, _)) = $0 { true } else { false } })
        for g in [g1, g2] { #expect(try peers[1].replica.vector(of: g) == peers[0].replica.vector(of: g)) }
        #expect(s.status().groups.map(\.group) == [g1], "g2 is no longer synced")
    }

    @Test func pastTheLimitOfPendingBatchesMessagesWait() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        try peers[0].put(g, "k", 1)
        var limits = SyncLimits()
        limits.initialCredit = UInt64(SyncSession.maxPendingIngests + 1)
        let s = SyncSession(
            local: peers[1].device, peer: peers[0].device.certificate, store: peers[1].replica, limits: limits)
        _ = s.start()
        _ = s.receive(SyncMessage.hello(versions: [1], capabilities: ["commits"], groups: [g]).encoded())
        let batch = try commitsBobLacks(peers, g)
        let outs = (0...SyncSession.maxPendingIngests).map { _ in s.receive(batch) }
        let handedOut = outs.filter { $0.contains { if case .ingest = $0 { true } else { false } } }.count
        #expect(handedOut == SyncSession.maxPendingIngests && outs.last?.isEmpty == true)
        // Answering them hands out the one that waited.
        var next = [SyncAction]()
        for _ in 0..<handedOut {
            next = s.ingested(.success(try peers[1].replica.ingest(receipts: [])))
        }
        #expect(next.contains { if case .ingest = $0 { true } else { false } })
    }

    @Test func manyGroupsFromTwoPeersConvergeWrittenTogether() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob"), try TestReplica("carol")]
        var groups = [GroupID]()
        for i in 0..<12 {
            let g = try sharedGroup(peers, name: "g\(i)")
            for k in 0..<6 { try peers[0].put(g, "k\(k)", Int64(i * 10 + k)) }
            try peers[1].put(g, "bob", Int64(i))
            groups.append(g)
        }
        let mesh = Mesh(peers)
        mesh.connect(0, 1)
        mesh.connect(0, 2)
        mesh.connect(1, 2)
        mesh.pumpTogether()
        for g in groups { try converged(peers, g) }
        #expect(mesh.ends.allSatisfy { $0.closed == nil })
        #expect((mesh.partsPerWrite.max() ?? 0) > 1, "several batches in one write: \(mesh.partsPerWrite)")
    }

    @Test func aWriteOfSeveralBatchesThatFailsWritesEachAlone() throws {
        struct DiskFull: Error {}
        /// Refuses any write of more than one batch (as a disk with room for one would).
        final class OneAtATime: SyncWriter {
            let replica: Replica
            init(_ replica: Replica) { self.replica = replica }
            func ingest(receipts: [Receipt], envelopes: [Envelope], from peer: DeviceID?) throws -> IngestReport {
                try replica.ingest(receipts: receipts, envelopes: envelopes, from: peer)
            }
            func ingest(parts: [IngestPart]) throws -> [IngestReport] {
                guard parts.count == 1 else { throw DiskFull() }
                return try replica.ingest(parts: parts)
            }
            func installSnapshot(
                _ bundle: SnapshotBundle, from sender: IdentityID, device: DeviceID?, trustedForBootstrap: Bool
            ) throws -> IngestReport {
                try replica.installSnapshot(
                    bundle, from: sender, device: device, trustedForBootstrap: trustedForBootstrap)
            }
            func recordPeerVector(
                peer: DeviceID, group: GroupID, committed: UInt64, authors: [DeviceID: UInt64]
            )
                throws
            {}
        }
        let (peers, g1, g2, s) = try twoGroupsBobLacks()
        let messages = [try commitsBobLacks(peers, g1), try commitsBobLacks(peers, g2)]
        let received = SyncSession.receive(messages.map { (s, $0) }, writingWith: OneAtATime(peers[1].replica))
        for r in received { _ = s.settle(r.actions, with: r.writer) }
        #expect(!s.status().closed)
        for g in [g1, g2] { #expect(try peers[1].replica.vector(of: g) == peers[0].replica.vector(of: g)) }
    }
}
