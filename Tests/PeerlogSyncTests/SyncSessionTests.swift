import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

struct SyncSessionTests {
    func converged(_ peers: [TestReplica], _ g: GroupID) throws {
        let first = try peers[0].hashes(g)
        let vector = try peers[0].replica.vector(of: g)
        for p in peers.dropFirst() {
            #expect(try p.hashes(g) == first, "\(p.device.certificate.name) state hashes")
            #expect(try p.replica.vector(of: g) == vector, "\(p.device.certificate.name) vector")
        }
    }

    @Test func invitationReachesTheInviteeAndWritesApartConverge() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        #expect(try peers[1].replica.state(of: g, view: .committed)?.members[peers[1].identity]?.status == .active)
        // Apart: both write; alice (the sequencer) commits hers, bob's stay tentative.
        for i in 0..<20 { try peers[0].put(g, "a\(i % 5)", Int64(i)) }
        for i in 0..<15 { try peers[1].put(g, "b\(i % 5)", Int64(i)) }
        let mesh = Mesh(peers)
        let (a, b) = mesh.connect(0, 1)
        mesh.pump()
        try converged(peers, g)
        #expect(try peers[1].replica.tentativeCount(of: g) == 0, "alice committed bob's writes and sent the envelopes")
        #expect(mesh.ends[a].events.contains { if case .caughtUp = $0 { true } else { false } })
        #expect(mesh.ends[a].closed == nil && mesh.ends[b].closed == nil)
        // Only the difference went each way: 20 receipts + 35 envelopes from alice, 15 receipts from bob.
        #expect(mesh.status(a, g)?.sent.items == 20 + 35)
        #expect(mesh.status(b, g)?.sent.items == 15)
        // A second sync after convergence sends nothing.
        let again = Mesh(peers)
        let (a2, b2) = again.connect(0, 1)
        again.pump()
        #expect(again.sentItems(a2) == 0 && again.sentItems(b2) == 0)
        #expect(again.status(a2, g)?.caughtUpReceived == true && again.status(b2, g)?.caughtUpReceived == true)
    }

    @Test func partialOverlapSendsExactlyTheDifference() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        for i in 0..<7 { try peers[0].put(g, "k\(i)", Int64(i)) }
        let mesh = Mesh(peers)
        let (a, b) = mesh.connect(0, 1)
        mesh.pump()
        #expect(mesh.status(a, g)?.sent.items == 14, "7 receipts and 7 envelopes")
        #expect(mesh.sentItems(b) == 0)
        try converged(peers, g)
    }

    @Test func onlySharedGroupsAreSentAndNonMembersGetNothing() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob"), try TestReplica("carol")]
        let shared = try sharedGroup(Array(peers.prefix(2)))
        let private_ = try peers[0].replica.createGroup(name: "alice only")
        try peers[0].put(private_, "secret", 1)
        let mesh = Mesh(peers)
        let (ab, _) = mesh.connect(0, 1)
        let (ac, ca) = mesh.connect(0, 2)
        mesh.pump()
        #expect(try peers[1].replica.groupIDs() == [shared])
        #expect(try peers[2].replica.groupIDs().isEmpty, "carol is a member of nothing")
        #expect(mesh.ends[ab].session.status().groups.map(\.group) == [shared])
        #expect(mesh.sentItems(ac) == 0 && mesh.sentItems(ca) == 0)
        // Carol asking for the group by vector gets nothing either.
        let ask = SyncMessage.vector(group: private_, committed: 0, authors: []).encoded()
        let out = mesh.ends[ac].session.receive(ask)
        #expect(!out.contains { if case .send = $0 { true } else { false } })
        #expect(out.contains { if case .event(.ignoredVector) = $0 { true } else { false } })
    }

    @Test func livePushAfterInitialSyncAndThreeWayFanOut() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob"), try TestReplica("carol")]
        let g = try sharedGroup(peers)
        let mesh = Mesh(peers)
        mesh.connect(0, 1)
        mesh.connect(0, 2)
        mesh.connect(1, 2)
        mesh.pump()
        try converged(peers, g)
        for round in 0..<5 {
            for (i, p) in peers.enumerated() {
                try p.put(g, "\(i)-\(round)", Int64(round))
                mesh.changed(i, g)
            }
            mesh.pump()
        }
        try converged(peers, g)
        #expect(try peers[2].replica.tentativeCount(of: g) == 0)
        #expect(try peers[2].replica.entities(in: g, view: .committed).count == 15)
        for e in mesh.ends.indices { #expect(mesh.ends[e].closed == nil) }
    }

    @Test func droppedEnvelopesBecomeRequestsAndFillTheGap() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        var limits = SyncLimits()
        limits.maxBatchItems = 4
        for i in 0..<20 { try peers[0].put(g, "k\(i)", Int64(i)) }
        let mesh = Mesh(peers)
        var dropped = 0
        mesh.deliver = { from, m in
            // Drop alice's second envelope batch: later ones arrive and leave a seq gap.
            guard from == 0, case .envelopes = m else { return true }
            dropped += 1
            return dropped != 2
        }
        let (a, b) = mesh.connect(0, 1, limits: limits, commits: false)
        mesh.pump()
        #expect(dropped > 2)
        try converged(peers, g)
        #expect(mesh.ends[b].session.status().requestsInFlight == 0, "the answer ended with done")
        #expect(mesh.ends[a].closed == nil)
    }

    @Test func senderStallsAtInitialCreditAndUncreditedBatchesClose() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        var limits = SyncLimits()
        limits.maxBatchItems = 2
        for i in 0..<40 { try peers[0].put(g, "k\(i)", Int64(i)) }
        let mesh = Mesh(peers)
        var batches = 0
        mesh.deliver = { from, m in
            if from == 0, case .receipts = m { batches += 1 }
            if from == 0, case .envelopes = m { batches += 1 }
            if from == 0, case .commits = m { batches += 1 }
            return true
        }
        let (a, b) = mesh.connect(0, 1, limits: limits)
        mesh.ends[b].session.options.autoGrant = false  // bob never returns credit
        mesh.pump()
        #expect(batches == Int(limits.initialCredit))
        #expect(mesh.ends[a].session.status().creditAvailable == 0)
        #expect(mesh.ends[a].session.status().queuedBatches <= 1)
        #expect(mesh.ends[b].session.status().creditGranted == 0)
        // Granting more resumes the sender; a batch beyond the grant closes the connection.
        mesh.route(mesh.ends[b].session.grant(1), from: b)
        mesh.pump()
        #expect(batches == Int(limits.initialCredit) + 1)
        let out = mesh.ends[b].session.receive(SyncMessage.envelopes(group: g, items: []).encoded())
        #expect(out.contains { if case .close(let r) = $0 { r.hasPrefix("credit") } else { false } })
        #expect(mesh.ends[b].session.status().closed)
    }

    @Test(arguments: [true, false])
    func catchUpOfThousandsRespectsBatchLimits(commits: Bool) throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        for i in 0..<5_000 { try peers[0].put(g, "k\(i % 300)", Int64(i)) }
        var limits = SyncLimits()
        limits.maxBatchBytes = 200_000
        let mesh = Mesh(peers)
        var largest = 0
        var mostItems = 0
        var kinds = Set<String>()
        mesh.deliver = { from, m in
            guard from == 0 else { return true }
            switch m {
            case .receipts(_, let items), .envelopes(_, let items):
                largest = max(largest, items.reduce(0) { $0 + $1.count })
                mostItems = max(mostItems, items.count)
            case .commits(_, let receipts, let envelopes):
                largest = max(largest, (receipts + envelopes).reduce(0) { $0 + $1.count })
                mostItems = max(mostItems, receipts.count, envelopes.count)
            default: return true
            }
            kinds.insert(m.type)
            return true
        }
        let (a, _) = mesh.connect(0, 1, limits: limits, commits: commits)
        mesh.pump()
        try converged(peers, g)
        #expect(kinds == (commits ? ["commits"] : ["receipts", "envelopes"]))
        #expect(mostItems > 0 && largest <= limits.maxBatchBytes && mostItems <= limits.maxBatchItems)
        #expect(mostItems < limits.maxBatchItems, "the byte limit cut batches first")
        #expect(mesh.status(a, g)?.sent.items == 10_000)
    }

    @Test func queueOverflowFallsBackToResync() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let g = try sharedGroup(peers)
        var limits = SyncLimits()
        limits.maxBatchItems = 3
        limits.maxQueuedBatches = 0
        limits.initialCredit = 1
        for i in 0..<12 { try peers[0].put(g, "k\(i)", Int64(i)) }
        let mesh = Mesh(peers)
        let (a, _) = mesh.connect(0, 1, limits: limits, commits: false)
        mesh.pump()
        try converged(peers, g)
        #expect(mesh.ends[a].events.contains { if case .resync = $0 { true } else { false } })
    }

    @Test func noCommonVersionAndUnknownMessages() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let s = SyncSession(local: peers[0].device, peer: peers[1].device.certificate, store: peers[0].replica)
        _ = s.start()
        let unknown = s.receive(CBOREncoder.encode(.textMap(["t": "gossip"])))
        #expect(unknown.contains { if case .event(.ignoredUnknownMessage("gossip")) = $0 { true } else { false } })
        #expect(s.status().ignoredMessages == 1 && !s.status().closed)
        let out = s.receive(SyncMessage.hello(versions: [2, 3], capabilities: [], groups: []).encoded())
        guard case .send(let bytes)? = out.first,
            case .error(let code, _) = try SyncMessage.decode(bytes, limits: .init())
        else {
            Issue.record("no error sent")
            return
        }
        #expect(code == "version")
        #expect(out.contains { if case .close = $0 { true } else { false } })
        #expect(s.receive(SyncMessage.credit(1).encoded()).isEmpty, "closed sessions ignore input")
    }

    @Test func itemsForUnsyncedGroupsAndMalformedInputClose() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        func fresh() -> SyncSession {
            let s = SyncSession(local: peers[0].device, peer: peers[1].device.certificate, store: peers[0].replica)
            _ = s.start()
            _ = s.receive(SyncMessage.hello(versions: [1], capabilities: [], groups: []).encoded())
            return s
        }
        func closes(_ s: SyncSession, _ bytes: [UInt8], _ code: String) {
            let out = s.receive(bytes)
            #expect(out.contains { if case .close(let r) = $0 { r.hasPrefix(code) } else { false } }, "\(code)")
        }
        closes(fresh(), SyncMessage.receipts(group: .random(), items: []).encoded(), "protocol")
        closes(fresh(), [0xff], "malformed")
        closes(fresh(), CBOREncoder.encode(.textMap(["t": "vector", "group": .bytes(Array(0..<16))])), "malformed")
        closes(fresh(), SyncMessage.hello(versions: [1], capabilities: [], groups: []).encoded(), "protocol")
        var tiny = SyncLimits()
        tiny.maxMessageBytes = 8
        let s = SyncSession(
            local: peers[0].device, peer: peers[1].device.certificate, store: peers[0].replica, limits: tiny)
        closes(s, SyncMessage.hello(versions: [1], capabilities: [], groups: []).encoded(), "limit")
    }

    @Test func splicedContainersMatchTheModel() throws {
        let p = try TestReplica("alice")
        let g = try p.replica.createGroup(name: "g")
        try p.put(g, "k", 1)
        let log = try p.replica.log(of: g, view: .committed)
        let items = try p.replica.syncCommitted(group: g, fromSeq: 1, limit: 10)
        #expect(items.map(\.receipt.encoded) == log.map(\.receipt.encoded))
        #expect(try items.map { try Envelope(encoded: $0.envelope).seq } == [1, 2])
    }
}

extension SyncSessionTests {
    /// More shared groups than one hello lists (`maxGroupsPerHello`): the rest are offered by
    /// unasked vector once the hellos are exchanged, and every group converges in one session.
    @Test func groupsPastTheHelloLimitAreOfferedByVector() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        var limits = SyncLimits()
        limits.maxGroupsPerHello = 2
        var shared = [GroupID]()
        for i in 0..<5 {
            let g = try peers[0].replica.createGroup(name: "g\(i)")
            try peers[0].replica.append(.memberAdded(identity: peers[1].identity, role: .member), to: g)
            try peers[0].put(g, "k", Int64(i))
            shared.append(g)
        }
        let mesh = Mesh(peers)
        mesh.connect(0, 1, limits: limits)
        mesh.pump()
        for g in shared { try converged(peers, g) }
        #expect(try Set(peers[1].replica.groupIDs()) == Set(shared))
    }
}

extension SyncSessionTests {
    /// A hello built from `offerCandidates` (what a node passes from the members it keeps)
    /// lists the candidates shared with the peer and nothing else, and a shared group left out
    /// of the list is offered once the node says it changed (`localChanged`).
    @Test func helloOffersOnlySharedCandidates() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        var shared = [GroupID]()
        for i in 0..<3 {
            let g = try alice.replica.createGroup(name: "g\(i)")
            try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: g)
            shared.append(g)
        }
        let alone = try alice.replica.createGroup(name: "alone")
        let s = SyncSession(local: alice.device, peer: bob.device.certificate, store: alice.replica)
        s.options.offerCandidates = [shared[0], shared[2], alone]
        func offered(_ actions: [SyncAction]) throws -> [GroupID] {
            try actions.flatMap { action -> [GroupID] in
                guard case .send(let bytes) = action else { return [] }
                switch try SyncMessage.decode(bytes, limits: .init()) {
                case .hello(_, _, let groups): return groups
                case .vector(let g, _, _): return [g]
                default: return []
                }
            }
        }
        #expect(try Set(offered(s.start())) == [shared[0], shared[2]])
        _ = s.receive(SyncMessage.hello(versions: [1], capabilities: [], groups: []).encoded())
        #expect(try offered(s.localChanged(group: shared[1])) == [shared[1]])
        #expect(try offered(s.localChanged(group: alone)).isEmpty)
    }
}
