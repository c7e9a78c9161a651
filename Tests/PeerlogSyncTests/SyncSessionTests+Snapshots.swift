import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// Bootstrap from a snapshot over the sync protocol (docs/PROTOCOL.md §23.3).
@Suite struct SyncSnapshotTests {
    /// Alice (sequencer, snapshots every `interval` commits) writes `writes` puts over `keys`
    /// keys with Bob a member; Carol is invited and holds nothing yet.
    func setUp(interval: UInt64, writes: Int, keys: Int, retention: Bool = false) throws -> ([TestReplica], GroupID) {
        var limits = ReplicaLimits()
        limits.snapshotInterval = interval
        let peers = [try TestReplica("alice", limits: limits), try TestReplica("bob"), try TestReplica("carol")]
        let g = try sharedGroup(Array(peers.prefix(2)))
        if retention { try peers[0].replica.setRetention(of: g, minAgeMillis: 0) }
        for i in 0..<writes {
            peers[0].clock.advance(1)
            try peers[0].put(g, "k\(i % keys)", Int64(i))
        }
        try peers[0].replica.append(.memberAdded(identity: peers[2].identity, role: .member), to: g)
        return (peers, g)
    }

    /// The snapshot was refused at `end` with a reason containing `why`, the receiver (peer 2)
    /// took the log instead (no floor, the sender's committed state), and the session stayed open.
    func expectLogInstead(
        _ mesh: Mesh, end: Int, _ peers: [TestReplica], _ g: GroupID, refusedFor why: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let refused = mesh.ends[end].events.contains { e in
            if case .ingested(_, let report) = e { return report.rejected.contains { $0.reason.contains(why) } }
            return false
        }
        #expect(refused, sourceLocation: sourceLocation)
        #expect(try peers[2].replica.floor(of: g) == nil, sourceLocation: sourceLocation)
        #expect(
            try peers[2].hashes(g).committed == peers[0].hashes(g).committed, sourceLocation: sourceLocation)
        #expect(mesh.ends[end].closed == nil, sourceLocation: sourceLocation)
    }

    func snapshotsSent(_ mesh: Mesh, _ end: Int) -> Int {
        mesh.ends[end].events.count { e in
            if case .ingested(_, let report) = e { return !report.snapshotsInstalled.isEmpty }
            return false
        }
    }

    @Test func aNewMemberStartsFromTheSnapshotAndTakesOnlyTheTail() throws {
        let (peers, g) = try setUp(interval: 500, writes: 2_000, keys: 10)
        let mesh = Mesh(peers)
        let (a, c) = mesh.connect(0, 2)
        mesh.pump()
        try peers[2].replica.append(.inviteAccepted, to: g)
        mesh.changed(2, g)
        mesh.pump()
        #expect(try peers[2].hashes(g) == peers[0].hashes(g))
        #expect(snapshotsSent(mesh, c) == 1)
        #expect(try peers[2].replica.floor(of: g)?.seq == 2_000)
        // The tail after the snapshot at 2,000 (of 2,000 + setup commits), not the whole log.
        #expect(mesh.sentItems(a) < 100, "sent \(mesh.sentItems(a)) items")
        #expect(try peers[2].replica.replayedStateHash(of: g) == peers[2].replica.stateHash(of: g, view: .committed))
        // Carol writes on top of what she started from; Alice commits it and both agree.
        try peers[2].put(g, "carol", 7)
        mesh.changed(2, g)
        mesh.pump()
        #expect(try peers[0].get("carol", g, .committed) == .int(7))
        #expect(try peers[2].hashes(g) == peers[0].hashes(g))
    }

    @Test func aPeerWithoutTheCapabilityGetsTheLog() throws {
        let (peers, g) = try setUp(interval: 500, writes: 600, keys: 10)
        let mesh = Mesh(peers)
        let (_, c) = mesh.connect(0, 2, snapshots: false)
        mesh.pump()
        #expect(snapshotsSent(mesh, c) == 0)
        #expect(try peers[2].replica.floor(of: g) == nil)
        #expect(try peers[2].hashes(g).committed == peers[0].hashes(g).committed)
    }

    /// A state over `GroupSnapshot.maxInlineBytes`: the snapshot goes as a blob reference
    /// (`snapshot_blob`), never as bytes; a driver that fetches no blobs (this mesh) refuses it
    /// and the receiver takes the log. The node's fetch is tested with real daemons
    /// (SnapshotBlobTests).
    @Test func aSnapshotOver4MiBGoesAsABlobReference() throws {
        var limits = ReplicaLimits()
        limits.snapshotInterval = 0
        let peers = [try TestReplica("alice", limits: limits), try TestReplica("bob"), try TestReplica("carol")]
        // The snapshot's blob goes to the in-memory stores' blob directory: removed after.
        defer { for p in peers { try? FileManager.default.removeItem(atPath: p.replica.blobFiles.directory) } }
        let g = try sharedGroup(Array(peers.prefix(2)))
        for i in 0..<72 {
            peers[0].clock.advance(1)
            try peers[0].replica.append(
                .entityPut(key: "photo/\(i)", value: .text(String(repeating: "x", count: 60_000))), to: g)
        }
        try peers[0].replica.append(.memberAdded(identity: peers[2].identity, role: .member), to: g)
        let made = try peers[0].replica.makeSnapshot(of: g)
        #expect(made.bytes > GroupSnapshot.maxInlineBytes)
        let mesh = Mesh(peers)
        var sent: [SyncMessage] = []
        mesh.rewrite = { m in
            if case .snapshot = m { sent.append(m) }
            return m
        }
        let (_, c) = mesh.connect(0, 2)
        mesh.pump()
        guard case .snapshot(_, let bundle)? = sent.first else {
            Issue.record("no snapshot message was sent")
            return
        }
        #expect(bundle.snapshot.isEmpty && bundle.blob != nil)
        #expect(bundle.blob.map { $0.layout.size == UInt64(made.bytes) } == true)
        // On the wire: decodes to the same; with both fields it is malformed.
        let wire = sent[0].encoded()
        #expect(wire.count < 100_000)
        #expect(try SyncMessage.decode(wire, limits: .init()) == sent[0])
        guard case .map(var fields) = try CBORDecoder.decodeStrict(wire) else { return }
        fields[.text("snapshot")] = .bytes([1, 2, 3])
        #expect(throws: SyncCodecError.self) {
            try SyncMessage.decode(CBOREncoder.encode(.map(fields)), limits: .init())
        }
        try expectLogInstead(mesh, end: c, peers, g, refusedFor: "snapshot refused")
    }

    @Test func aRefusedSnapshotFallsBackToTheLog() throws {
        let (peers, g) = try setUp(interval: 500, writes: 600, keys: 10)
        let mesh = Mesh(peers)
        // Tamper with the snapshot on the wire: its content no longer hashes to its state hash.
        mesh.rewrite = { m in
            guard case .snapshot(let g, let b) = m else { return m }
            var bytes = b.snapshot
            bytes[bytes.count / 2] ^= 0x01
            return .snapshot(
                group: g,
                SnapshotBundle(
                    snapshot: bytes, anchorEnvelope: b.anchorEnvelope, anchorReceipt: b.anchorReceipt,
                    keyHistory: b.keyHistory))
        }
        let (_, c) = mesh.connect(0, 2)
        mesh.pump()
        try expectLogInstead(mesh, end: c, peers, g, refusedFor: "snapshot refused")
    }

    @Test func aPeerBelowACompactedFloorCatchesUpFromTheSnapshot() throws {
        let (peers, g) = try setUp(interval: 200, writes: 100, keys: 5, retention: true)
        // Bob syncs, goes away; Alice writes on and prunes below her newest snapshot.
        let mesh = Mesh(peers)
        mesh.connect(0, 1)
        mesh.pump()
        let bobWas = try peers[1].replica.vector(of: g).committed
        for i in 0..<1_000 {
            peers[0].clock.advance(1)
            try peers[0].put(g, "k\(i % 5)", Int64(i))
        }
        let floor = try #require(try peers[0].replica.floor(of: g)?.seq)
        #expect(floor > bobWas)
        let mesh2 = Mesh(peers)
        let (_, b) = mesh2.connect(0, 1)
        mesh2.pump()
        #expect(snapshotsSent(mesh2, b) == 1)
        #expect(try peers[1].hashes(g) == peers[0].hashes(g))
        #expect(try peers[1].replica.replayedStateHash(of: g) == peers[1].replica.stateHash(of: g, view: .committed))
    }

    @Test func aDeviceThatHoldsNothingTakesTheLogFromAPeerItDoesNotTrust() throws {
        let (peers, g) = try setUp(interval: 500, writes: 600, keys: 10)
        let mesh = Mesh(peers)
        // Carol names no one in `allow`: Alice is let in as a member, but not trusted to start her.
        let (_, c) = mesh.connect(0, 2, trusted: false)
        mesh.pump()
        #expect(snapshotsSent(mesh, c) == 0)
        try expectLogInstead(mesh, end: c, peers, g, refusedFor: "starts a group only from")
    }
}
