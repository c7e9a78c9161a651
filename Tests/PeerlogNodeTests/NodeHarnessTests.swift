import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import Testing

@testable import PeerlogNode

/// Whole nodes (hub, machine, sessions, replicas) pumped into each other without sockets.
struct NodeHarnessTests {
    /// A group `names[0]` owns with every other node invited (not yet accepted).
    static func invitedGroup(_ harness: NodeHarness) throws -> GroupID {
        let owner = harness.nodes[0].replica
        let g = try owner.createGroup(name: "g")
        for node in harness.nodes.dropFirst() {
            try owner.append(.memberAdded(identity: node.device.identity, role: .member), to: g)
        }
        return g
    }

    /// a – b – c in a line: c hears of a's group and writes only through b's fan-out, and a
    /// hears of c's through it the other way. Writes are made as by another process (straight
    /// to the replica), so the nodes notice them by the change-stamp poll of their ticks.
    @Test func threeNodesInALineConvergeThroughTheMiddlesFanOut() throws {
        let harness = try NodeHarness(["a", "b", "c"])
        let g = try Self.invitedGroup(harness)
        harness.connect(0, 1)
        harness.connect(1, 2)
        harness.pump()
        #expect(
            try harness.nodes[2].replica.state(of: g, view: .tentative) != nil, "c never received the group through b")

        for i in 1...2 { try harness.nodes[i].replica.append(.inviteAccepted, to: g) }
        harness.advance(300)
        for (i, node) in harness.nodes.enumerated() {
            try node.replica.append(.entityPut(key: "k\(i)", value: .int(Int64(i))), to: g)
        }
        harness.advance(300)

        let hashes = try harness.hashes(g)
        #expect(hashes[0] == hashes[1] && hashes[1] == hashes[2], "not converged")
        for node in harness.nodes {
            for i in 0..<3 {
                #expect(
                    try node.replica.entity("k\(i)", in: g, view: .tentative)?.value == .int(Int64(i)),
                    "\(node.device.certificate.name) lacks k\(i)")
            }
        }
        // c and a never met: a is not connected to c, and nothing was closed.
        #expect(!harness.nodes[0].hub.isConnected(device: harness.nodes[2].device.device))
        #expect(harness.links.indices.allSatisfy(harness.isLive))
    }

    /// Both nodes dial each other at once: both close the same connection (the one the device
    /// with the higher id dialed) with the tie-break's reason, and sync goes on over the other.
    @Test(arguments: [false, true])
    func duplicateConnectionsAreTieBrokenTheSameWayOnBothSides(lowDialsFirst: Bool) throws {
        let harness = try NodeHarness(["a", "b"])
        let (a, b) = (harness.nodes[0].device.device, harness.nodes[1].device.device)
        let low = a.bytes.lexicographicallyPrecedes(b.bytes) ? 0 : 1
        let high = 1 - low
        let g = try Self.invitedGroup(harness)

        let first = lowDialsFirst ? harness.connect(low, high) : harness.connect(high, low)
        let second = lowDialsFirst ? harness.connect(high, low) : harness.connect(low, high)
        harness.pump()
        let lowsDial = lowDialsFirst ? first : second
        let highsDial = lowDialsFirst ? second : first
        #expect(harness.isLive(lowsDial))
        #expect(!harness.isLive(highsDial))
        let reasons = harness.links[highsDial].reasons
        #expect(reasons.0.map(NodeCloseReason.isDuplicateConnection) == true, "\(String(describing: reasons.0))")
        #expect(reasons.1.map(NodeCloseReason.isDuplicateConnection) == true, "\(String(describing: reasons.1))")
        for node in harness.nodes {
            #expect(node.hub.machine.liveConnections.count == 1)
            #expect(node.hub.recentCloses().count == 1)
        }

        try harness.nodes[1].replica.append(.inviteAccepted, to: g)
        try harness.nodes[1].replica.append(.entityPut(key: "from-b", value: .int(2)), to: g)
        harness.advance(300)
        let hashes = try harness.hashes(g)
        #expect(hashes[0] == hashes[1])
        #expect(try harness.nodes[0].replica.entity("from-b", in: g, view: .tentative)?.value == .int(2))
    }

    /// `status` counts a peer's items since the daemon started: a reconnection (a closed lid,
    /// a tie-break) adds the new connection's items to what the ended ones moved.
    @Test func aPeersItemCountsSurviveAReconnection() throws {
        let harness = try NodeHarness(["a", "b"])
        let g = try Self.invitedGroup(harness)
        let link = harness.connect(0, 1)
        harness.pump()
        try harness.nodes[1].replica.append(.inviteAccepted, to: g)
        for i in 0..<5 { try harness.nodes[1].replica.append(.entityPut(key: "k\(i)", value: .int(1)), to: g) }
        harness.advance(300)
        func fromB() -> Int {
            let status = harness.nodes[0].hub.buildStatus()
            let group = status.groups.first { $0.id == g.string }
            return group?.peers.first { $0.device == harness.nodes[1].device.device.string }?.itemsReceivedTotal ?? -1
        }
        let first = fromB()
        #expect(first >= 6, "a received \(first) items from b in the first connection")

        harness.disconnect(link)
        harness.connect(0, 1)
        for i in 5..<8 { try harness.nodes[1].replica.append(.entityPut(key: "k\(i)", value: .int(1)), to: g) }
        harness.advance(300)
        #expect(try harness.hashes(g)[0] == harness.hashes(g)[1])
        let total = fromB()
        #expect(total >= first + 3, "after the reconnection a counted \(total), the first connection alone \(first)")
    }

    /// `status` keeps each group's folded name and authority between builds, and drops a
    /// group's when a group operation of it lands: a rename shows in the next status, even one
    /// built before the poll saw it.
    @Test func aStatusShowsARenameMadeSinceTheLastOne() throws {
        let harness = try NodeHarness(["a"])
        let replica = harness.nodes[0].replica
        let (g, other) = try (replica.createGroup(name: "before"), replica.createGroup(name: "other"))
        harness.advance(300)
        func names() -> [String: String] {
            Dictionary(uniqueKeysWithValues: harness.nodes[0].hub.buildStatus().groups.map { ($0.id, $0.name) })
        }
        #expect(names() == [g.string: "before", other.string: "other"])
        #expect(harness.nodes[0].hub.statusFolds.count == 2)

        try replica.append(.renamed(name: "after"), to: g)
        #expect(names() == [g.string: "after", other.string: "other"])
        harness.advance(300)
        try replica.append(.renamed(name: "after again"), to: g)
        harness.advance(300)
        #expect(names() == [g.string: "after again", other.string: "other"])
    }
}
