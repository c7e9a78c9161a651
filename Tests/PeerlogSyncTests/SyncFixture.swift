import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogSync
import PeerlogTestSupport

/// Sessions between peers over in-memory queues, pumped until quiet. Like a node, it fans
/// an ingest on one session out to the owner's other sessions as `localChanged`.
final class Mesh {
    struct End {
        let owner: Int
        let session: SyncSession
        var inbox: [[UInt8]] = []
        var events: [SyncEvent] = []
        var closed: String?
    }

    let peers: [TestReplica]
    var ends: [End] = []
    var partner: [Int] = []
    /// Return false to drop a message on its way from end `from` (counts as sent).
    var deliver: (_ from: Int, _ message: SyncMessage) -> Bool = { _, _ in true }
    /// Changes a message on its way (a tampering network).
    var rewrite: (SyncMessage) -> SyncMessage = { $0 }

    init(_ peers: [TestReplica]) { self.peers = peers }

    /// Opens a pair of sessions between peers `i` and `j`; returns their end indices.
    @discardableResult
    /// `commits: false` makes both sessions leave the `commits` capability out of their hello,
    /// so committed chunks travel as `receipts` + `envelopes` pairs.
    /// `preVote: false` makes peer `i`'s session leave `prevote` out, like a peer from before it.
    /// `envelopeRuns: false` makes peer `j`'s session leave `envelope_runs` out, like a peer from before batched envelopes.
    /// `snapshots: false` makes peer `j`'s session leave `snapshots` out, like a peer from before snapshots.
    /// `encryptedGroups: false` makes peer `j`'s session leave `encrypted_groups` out, like a peer from before §22.
    /// `keepalive: false` makes peer `j`'s session leave `keepalive` out, like a peer from before §15.2.12.
    /// `trusted: false`: neither node trusts the other to start a group from its snapshot (as
    /// when neither names the other in `allow`); by default both do.
    func connect(
        _ i: Int, _ j: Int, limits: SyncLimits = .init(), peerLimits: SyncLimits? = nil, commits: Bool = true,
        preVote: Bool = true,
        envelopeRuns: Bool = true, snapshots: Bool = true, trusted: Bool = true, encryptedGroups: Bool = true,
        keepalive: Bool = true
    ) -> (Int, Int) {
        let a = ends.count
        let b = a + 1
        ends.append(
            End(
                owner: i,
                session: SyncSession(
                    local: peers[i].device, peer: peers[j].device.certificate, store: peers[i].replica, limits: limits))
        )
        ends.append(
            End(
                owner: j,
                session: SyncSession(
                    local: peers[j].device, peer: peers[i].device.certificate, store: peers[j].replica,
                    limits: peerLimits ?? limits)))
        ends[a].session.options.offersCommits = commits
        ends[b].session.options.offersCommits = commits
        ends[a].session.options.offersPreVote = preVote
        ends[b].session.options.offersEnvelopeRuns = envelopeRuns
        ends[b].session.options.offersSnapshots = snapshots
        ends[b].session.options.offersEncryptedGroups = encryptedGroups
        ends[b].session.options.offersKeepalive = keepalive
        ends[a].session.options.trustsPeerForBootstrap = trusted
        ends[b].session.options.trustsPeerForBootstrap = trusted
        partner += [b, a]
        route(ends[a].session.start(), from: a)
        route(ends[b].session.start(), from: b)
        return (a, b)
    }

    /// Performs the session's writes on its owner's replica (as the node does), then delivers.
    func route(_ actions: [SyncAction], from e: Int) {
        routeSettled(ends[e].session.settle(actions, with: peers[ends[e].owner].replica), from: e)
    }

    /// Delivers what a session's writes left: messages, closes and events.
    func routeSettled(_ settled: [SyncAction], from e: Int) {
        for action in settled {
            switch action {
            case .send(let bytes):
                let m = try! SyncMessage.decode(bytes, limits: .init())
                let changed = rewrite(m)
                if deliver(e, m) { ends[partner[e]].inbox.append(changed == m ? bytes : changed.encoded()) }
            case .close(let reason): ends[e].closed = reason
            case .event(let ev):
                ends[e].events.append(ev)
                if case .ingested(let g, _) = ev { changed(ends[e].owner, g, except: e) }
            case .ingest, .recordPeerVector: preconditionFailure("settled above")
            }
        }
    }

    /// A local write on peer `i`: every one of its sessions hears about it.
    func changed(_ i: Int, _ g: GroupID, except: Int = -1) {
        for e in ends.indices where ends[e].owner == i && e != except && ends[e].closed == nil {
            route(ends[e].session.localChanged(group: g), from: e)
        }
    }

    /// Delivers messages one at a time, round robin over ends, until every inbox is empty.
    func pump(limit: Int = 1_000_000) {
        var steps = 0
        while steps < limit {
            var progressed = false
            for e in ends.indices where !ends[e].inbox.isEmpty {
                let m = ends[e].inbox.removeFirst()
                progressed = true
                steps += 1
                if ends[e].closed != nil || ends[partner[e]].closed != nil { continue }
                route(ends[e].session.receive(m), from: e)
            }
            if !progressed { return }
        }
    }

    /// Like `pump`, but as a node takes what arrived while it was busy: each round, each
    /// owner's waiting messages, on all its ends, go through `SyncSession.receive(_:writingWith:)`
    /// together, then are settled and routed in order. `partsPerWrite` records each write.
    func pumpTogether(limit: Int = 1_000_000) {
        var steps = 0
        while steps < limit {
            var progressed = false
            for owner in peers.indices {
                var taken = [(end: Int, bytes: [UInt8])]()
                for e in ends.indices where ends[e].owner == owner {
                    while !ends[e].inbox.isEmpty {
                        let m = ends[e].inbox.removeFirst()
                        progressed = true
                        steps += 1
                        if ends[e].closed == nil && ends[partner[e]].closed == nil { taken.append((e, m)) }
                    }
                }
                guard !taken.isEmpty else { continue }
                let writer = CountingWriter(peers[owner].replica)
                let received = SyncSession.receive(taken.map { (ends[$0.end].session, $0.bytes) }, writingWith: writer)
                let settled = zip(taken, received).map { m, r in
                    (m.end, ends[m.end].session.settle(r.actions, with: r.writer))
                }
                partsPerWrite += writer.partsPerWrite
                for (e, actions) in settled { routeSettled(actions, from: e) }
            }
            if !progressed { return }
        }
    }

    /// The parts of each `ingest(parts:)` `pumpTogether` made.
    var partsPerWrite = [Int]()

    func status(_ e: Int, _ g: GroupID) -> SyncGroupStatus? { ends[e].session.status().groups.first { $0.group == g } }
    func sentItems(_ e: Int) -> Int { ends[e].session.status().groups.reduce(0) { $0 + $1.sent.items } }
}

/// A group owned by peers[0] with the others invited and accepted, spread by syncing.
func sharedGroup(_ peers: [TestReplica], name: String = "g") throws -> GroupID {
    let owner = peers[0]
    let g = try owner.replica.createGroup(name: name)
    for p in peers.dropFirst() { try owner.replica.append(.memberAdded(identity: p.identity, role: .member), to: g) }
    let mesh = Mesh(peers)
    for i in peers.indices.dropFirst() { mesh.connect(0, i) }
    mesh.pump()
    for i in peers.indices.dropFirst() {
        try peers[i].replica.append(.inviteAccepted, to: g)
        mesh.changed(i, g)
    }
    mesh.pump()
    return g
}

/// A replica's writer that counts the parts of each multi-part write.
final class CountingWriter: SyncWriter {
    let replica: Replica
    var partsPerWrite = [Int]()
    init(_ replica: Replica) { self.replica = replica }

    func ingest(receipts: [Receipt], envelopes: [Envelope], from peer: DeviceID?) throws -> IngestReport {
        try replica.ingest(receipts: receipts, envelopes: envelopes, from: peer)
    }

    func ingest(parts: [IngestPart]) throws -> [IngestReport] {
        partsPerWrite.append(parts.count)
        return try replica.ingest(parts: parts)
    }

    func installSnapshot(
        _ bundle: SnapshotBundle, from sender: IdentityID, device: DeviceID?, trustedForBootstrap: Bool
    ) throws -> IngestReport {
        try replica.installSnapshot(bundle, from: sender, device: device, trustedForBootstrap: trustedForBootstrap)
    }

    func recordPeerVector(peer: DeviceID, group: GroupID, committed: UInt64, authors: [DeviceID: UInt64]) throws {
        try replica.recordPeerVector(peer: peer, group: group, committed: committed, authors: authors)
    }
}
