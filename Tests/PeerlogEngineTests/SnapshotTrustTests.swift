import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Whom a snapshot is taken from (docs/PROTOCOL.md §23.3, docs/SECURITY.md "Snapshots"): a
/// member's forged snapshot, whose every signature verifies, changes no replica that holds the
/// group; a genuine one still installs, also across a change of sequencer.
@Suite struct SnapshotTrustTests {
    /// Alice (owner, solo sequencer) with Bob and Carol members and `writes` puts; Carol, then
    /// Bob, are brought up to date; Alice then writes `more`, which neither has.
    func group(
        encrypted: Bool, writes: Int = 20, more: Int = 5
    ) throws
        -> (alice: TestReplica, bob: TestReplica, carol: TestReplica, group: GroupID)
    {
        var limits = ReplicaLimits()
        limits.snapshotInterval = 0
        let alice = try TestReplica("alice", limits: limits)
        let bob = try TestReplica("bob", limits: limits)
        let carol = try TestReplica("carol", limits: limits)
        let group = try alice.replica.createGroup(
            name: "g", encryption: encrypted ? GroupEncryptionSettings(history: false) : nil)
        for m in [bob, carol] {
            try alice.replica.append(.memberAdded(identity: m.identity, role: .member), to: group)
            try alice.send(group, to: m)
            try m.replica.append(.inviteAccepted, to: group)
            try m.send(group, to: alice)
        }
        for i in 0..<writes {
            alice.clock.advance(1)
            try alice.put(group, "k\(i % 3)", Int64(i))
        }
        try alice.send(group, to: carol)
        try alice.send(group, to: bob)
        for i in 0..<more { try alice.put(group, "more\(i)", Int64(i)) }
        return (alice, bob, carol, group)
    }

    func refuse(_ r: TestReplica, _ b: SnapshotBundle, from sender: TestReplica, trusted: Bool = true) {
        #expect(throws: ReplicaError(.snapshotRefused, "")) {
            try r.replica.installSnapshot(
                b, from: sender.identity, device: sender.device.device, trustedForBootstrap: trusted)
        }
    }

    @Test(arguments: [false, true]) func aMembersForgedSnapshotChangesNoReplicaThatHoldsTheGroup(
        encrypted: Bool
    )
        throws
    {
        let (alice, bob, carol, g) = try group(encrypted: encrypted)
        try bob.replica.makeSnapshot(of: g)
        let genuine = try #require(
            try bob.replica.bootstrapBundle(of: g, for: alice.identity, peerCommitted: 0, peerHoldsNothing: true))
        let forged = try SnapshotForgery.forge(genuine, by: bob.device, key: "k1", value: .int(1_000_000))
        let before = try [alice, carol].map { try $0.hashes(g) }

        // The owner sequences the group: it never replaces its own committed state.
        refuse(alice, forged, from: bob)
        // Carol is behind Alice but holds the group: the anchor is not her authority's. Evidence.
        refuse(carol, forged, from: bob)
        #expect(try [alice, carol].map { try $0.hashes(g) } == before)
        #expect(try carol.replica.state(of: g, view: .committed)?.authority == .solo(alice.device.device))
        let evidence = try carol.replica.invalidReceipts()
        #expect(evidence.contains { $0.cid == CID(hashing: forged.snapshot) && $0.peer == bob.device.device })
        // Nothing was written to Alice for it (her refusal is no evidence: she is not fooled by any).
        #expect(try alice.replica.floor(of: g) == nil)

        // A device that holds nothing takes no snapshot from an identity it does not trust.
        let dave = try TestReplica("dave")
        try alice.replica.append(.memberAdded(identity: dave.identity, role: .member), to: g)
        try alice.send(g, to: bob)
        refuse(dave, genuine, from: bob, trusted: false)
        #expect(try !dave.replica.knowsGroup(g))

        // Dave is a member now, but not in Carol's committed state: she takes nothing from him.
        try alice.send(g, to: dave)
        try dave.replica.append(.inviteAccepted, to: g)
        try dave.send(g, to: alice)
        try alice.send(g, to: dave)
        try dave.replica.makeSnapshot(of: g)
        let fromDave = try #require(
            try dave.replica.bootstrapBundle(of: g, for: carol.identity, peerCommitted: 0, peerHoldsNothing: true))
        refuse(carol, fromDave, from: dave)
        #expect(try carol.replica.floor(of: g) == nil)

        // Not even a genuine snapshot of Bob's, ahead of Carol: the state at a seq is the
        // sequencer's to vouch for, and Bob is a member, not the sequencer. No evidence either.
        try bob.replica.makeSnapshot(of: g)
        let ahead = try #require(
            try bob.replica.bootstrapBundle(of: g, for: carol.identity, peerCommitted: 0, peerHoldsNothing: true))
        #expect(try GroupSnapshot(encoded: ahead.snapshot).seq > carol.replica.committedSeq(of: g))
        refuse(carol, ahead, from: bob)
        #expect(try !carol.replica.invalidReceipts().contains { $0.cid == CID(hashing: ahead.snapshot) })
        // From Alice, the sequencer, a snapshot installs on Carol, and she then agrees with Alice.
        try alice.replica.makeSnapshot(of: g)
        let fromAlice = try #require(
            try alice.replica.bootstrapBundle(of: g, for: carol.identity, peerCommitted: 0, peerHoldsNothing: true))
        try carol.replica.installSnapshot(fromAlice, from: alice.identity, device: alice.device.device)
        #expect(try carol.replica.floor(of: g) != nil)
        try alice.send(g, to: carol)
        #expect(try carol.hashes(g) == alice.hashes(g))
    }

    @Test func aSnapshotAcrossAChangeOfSequencerInstallsThroughTheCommittedChange() throws {
        let (alice, bob, carol, g) = try group(encrypted: false, more: 0)
        // Carol goes away; Alice hands the group to Bob's device, which commits on from there.
        let change = try alice.replica.append(.sequencerChanged(.solo(bob.device.device)), to: g)
        #expect(change.seq != nil)
        try alice.send(g, to: bob)
        for i in 0..<10 { try bob.put(g, "bob\(i)", Int64(i)) }
        try bob.replica.makeSnapshot(of: g)
        let bundle = try #require(
            try bob.replica.bootstrapBundle(of: g, for: carol.identity, peerCommitted: 0, peerHoldsNothing: true))
        #expect(bundle.authorityHistory.count == 1)
        // Carol's committed authority is Alice's device; the bundle walks her to Bob's.
        try carol.replica.installSnapshot(bundle, from: bob.identity, device: bob.device.device)
        #expect(try carol.replica.state(of: g, view: .committed)?.authority == .solo(bob.device.device))
        #expect(try carol.hashes(g).committed == bob.hashes(g).committed)
    }

    @Test func withoutTheCommittedChangeAnAnchorOfTheNewSequencerIsRefused() throws {
        let (alice, bob, carol, g) = try group(encrypted: false, more: 0)
        try alice.replica.append(.sequencerChanged(.solo(bob.device.device)), to: g)
        try alice.send(g, to: bob)
        for i in 0..<10 { try bob.put(g, "bob\(i)", Int64(i)) }
        try bob.replica.makeSnapshot(of: g)
        let full = try #require(
            try bob.replica.bootstrapBundle(of: g, for: carol.identity, peerCommitted: 0, peerHoldsNothing: true))
        // As a sender from before authority histories sends it: Carol cannot tie the anchor to
        // the authority she has committed, so she refuses it and takes the log instead.
        let bare = SnapshotBundle(
            snapshot: full.snapshot, anchorEnvelope: full.anchorEnvelope, anchorReceipt: full.anchorReceipt,
            keyHistory: full.keyHistory)
        refuse(carol, bare, from: bob)
        #expect(try carol.replica.floor(of: g) == nil)
        try bob.send(g, to: carol)
        #expect(try carol.hashes(g).committed == bob.hashes(g).committed)
    }
}
