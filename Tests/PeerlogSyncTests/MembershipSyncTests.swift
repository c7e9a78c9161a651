import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// Sharing follows membership in every live session (§15.2.3, §15.2.10): an invitee whose copy
/// stops before its own invitation still finishes its catch-up, and a removed member is sent
/// nothing more over a session that was up when it was removed.
struct MembershipSyncTests {
    /// Alice's group of `writes` committed puts with Bob invited last (the worst case for an
    /// interrupted catch-up: every chunk but the last predates his invitation).
    func invitedLast(writes: Int) throws -> (TestReplica, TestReplica, GroupID) {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let g = try alice.replica.createGroup(name: "long")
        for i in 0..<writes { try alice.put(g, "k\(i)", Int64(i)) }
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: g)
        return (alice, bob, g)
    }

    @Test(arguments: [1, 2])
    func anInterruptedInviteeFinishesItsCatchUpInANewSession(chunks: Int) throws {
        let (alice, bob, g) = try invitedLast(writes: 1_500)
        let total = try alice.replica.committedSeq(of: g)
        // The first session ends after `chunks` committed chunks reached Bob (a tie-break, a
        // dropped Wi-Fi, a killed daemon).
        let first = Mesh([alice, bob])
        var delivered = 0
        first.deliver = { from, m in
            guard from == 0, case .commits = m else { return true }
            delivered += 1
            return delivered <= chunks
        }
        first.connect(0, 1)
        first.pump()
        let partial = try bob.replica.committedSeq(of: g)
        #expect(partial > 0 && partial < total, "bob holds part of the log (\(partial) of \(total))")
        #expect(try !bob.replica.syncOffers(g, to: alice.device.certificate), "his copy predates his invitation")

        let second = Mesh([alice, bob])
        let (ab, ba) = second.connect(0, 1)
        second.pump()
        #expect(try bob.replica.committedSeq(of: g) == total, "the catch-up resumes and completes")
        #expect(try bob.hashes(g) == alice.hashes(g))
        #expect(
            try bob.replica.members(of: g, view: .tentative).contains {
                $0.member.identity == bob.identity && $0.member.status == .pending
            })
        #expect(second.ends[ab].closed == nil && second.ends[ba].closed == nil)
    }

    @Test func aMemberWithoutAnyCopyOfTheOfferedPeerStillOnlyReceives() throws {
        // Bob's partial copy does not name Carol (added after it ends), who offers the group:
        // Bob accepts it to receive, but sends her nothing, as she is no member in his view.
        let (alice, bob, g) = try invitedLast(writes: 1_200)
        let carol = try TestReplica("carol")
        try alice.replica.append(.memberAdded(identity: carol.identity, role: .member), to: g)
        let m = Mesh([alice, bob])
        var delivered = 0
        m.deliver = { from, msg in
            guard from == 0, case .commits = msg else { return true }
            delivered += 1
            return delivered <= 1
        }
        m.connect(0, 1)
        m.pump()
        let toCarol = Mesh([alice, carol])
        toCarol.connect(0, 1)
        toCarol.pump()
        #expect(try carol.hashes(g) == alice.hashes(g))

        let mesh = Mesh([bob, carol])
        let (bc, cb) = mesh.connect(0, 1)
        mesh.pump()
        #expect(try bob.hashes(g) == carol.hashes(g), "bob finished his catch-up from carol")
        #expect(mesh.status(bc, g) != nil && mesh.ends[cb].closed == nil)
    }

    @Test func aRemovedMemberIsSentNothingMoreAndToldWhy() throws {
        let peers = [try TestReplica("alice"), try TestReplica("bob")]
        let (alice, bob) = (peers[0], peers[1])
        let g = try sharedGroup(peers)
        let mesh = Mesh(peers)
        let (ab, ba) = mesh.connect(0, 1)
        mesh.pump()
        try alice.put(g, "before", 1)
        mesh.changed(0, g)
        mesh.pump()
        #expect(try bob.replica.entity("before", in: g, view: .committed) != nil)

        try alice.replica.append(.memberRemoved(identity: bob.identity), to: g)
        mesh.route(mesh.ends[ab].session.membershipChanged(), from: ab)
        // Bob writes before Alice's "unshared" reaches him: his batch arrives for a group Alice
        // no longer syncs with him and is dropped without closing the session.
        try bob.put(g, "late", 2)
        mesh.changed(1, g)
        let bobCounter = try alice.replica.vector(of: g).authors.first { $0.0 == bob.device.device }?.1 ?? 0
        mesh.pump()
        #expect(mesh.ends[ab].events.contains { if case .withdrew(g, _) = $0 { true } else { false } })
        let told = mesh.ends[ba].events.compactMap { e -> String? in
            if case .unsharedByPeer(g, let why) = e { why } else { nil }
        }
        #expect(told.count == 1 && told[0].contains("not a member"), "bob is told why: \(told)")
        // Before the "unshared", the signed removal itself: Bob's own committed view says so.
        let me = try bob.replica.members(of: g, view: .committed).first { $0.member.identity == bob.identity }
        #expect(me?.member.status == .removed, "bob's view of himself: \(String(describing: me))")
        #expect(
            try (alice.replica.vector(of: g).authors.first { $0.0 == bob.device.device }?.1 ?? 0) == bobCounter,
            "alice took nothing from bob after removing him")

        try alice.put(g, "after", 3)
        mesh.changed(0, g)
        mesh.pump()
        #expect(
            try bob.replica.entity("after", in: g, view: .tentative) == nil,
            "nothing written after the removal reaches bob")
        #expect(mesh.ends[ab].closed == nil && mesh.ends[ba].closed == nil)
        #expect(mesh.ends[ab].session.status().groups.isEmpty && mesh.ends[ba].session.status().groups.isEmpty)

        // A request for the withdrawn group is ignored, not served.
        let ask = SyncMessage.request(group: g, id: 99, what: .after(0)).encoded()
        let out = mesh.ends[ab].session.receive(ask)
        #expect(!out.contains { if case .send = $0 { true } else { false } })

        // Invited again: the group is offered anew in the same session.
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: g)
        mesh.route(mesh.ends[ab].session.membershipChanged(), from: ab)
        mesh.pump()
        #expect(try bob.replica.entity("after", in: g, view: .tentative) != nil, "re-invited, bob catches up")
    }
}
