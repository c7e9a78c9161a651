import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// Snapshots, bootstrap and compaction (docs/PROTOCOL.md §23) on in-memory replicas.
@Suite struct SnapshotTests {
    func limits(interval: UInt64) -> ReplicaLimits {
        var l = ReplicaLimits()
        l.snapshotInterval = interval
        return l
    }

    /// Alice's group with Bob a member, then `writes` puts over `keys` keys by Alice.
    func writtenGroup(
        alice: TestReplica, bob: TestReplica, writes: Int, keys: Int, encrypted: Bool = false
    ) throws -> GroupID {
        let group = try alice.replica.createGroup(
            name: "g", encryption: encrypted ? GroupEncryptionSettings(history: false) : nil)
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.send(group, to: bob)
        try bob.replica.append(.inviteAccepted, to: group)
        try bob.send(group, to: alice)
        for i in 0..<writes {
            alice.clock.advance(1)
            try alice.put(group, "k\(i % keys)", Int64(i))
        }
        return group
    }

    func check(_ r: TestReplica, _ group: GroupID) throws {
        #expect(try r.replica.replayedStateHash(of: group) == r.replica.stateHash(of: group, view: .committed))
        #expect(try r.replica.checkTentativeOverlay(of: group) == .matches)
    }

    @Test(arguments: [false, true]) func aDeviceStartedFromASnapshotMatchesAFullReplay(encrypted: Bool) throws {
        let alice = try TestReplica("alice", limits: limits(interval: 40))
        let bob = try TestReplica("bob")
        let group = try writtenGroup(alice: alice, bob: bob, writes: 100, keys: 7, encrypted: encrypted)
        let carol = try TestReplica("carol")
        try alice.replica.append(.memberAdded(identity: carol.identity, role: .member), to: group)
        let snapshot = try alice.replica.makeSnapshot(of: group)
        #expect(snapshot.seq == (try alice.replica.committedSeq(of: group)))
        for i in 0..<5 { try alice.put(group, "tail\(i)", Int64(i)) }

        // Carol holds nothing: she starts from the newest snapshot, then takes the tail.
        let bundle = try #require(
            try alice.replica.bootstrapBundle(of: group, for: carol.identity, peerCommitted: 0, peerHoldsNothing: true))
        try carol.replica.installSnapshot(bundle, from: alice.identity, trustedForBootstrap: true)
        #expect(try carol.replica.floor(of: group)?.seq == snapshot.seq)
        try alice.send(group, to: carol)
        try carol.replica.append(.inviteAccepted, to: group)
        try carol.send(group, to: alice)
        try alice.send(group, to: carol)
        try alice.put(group, "after", 1)
        try alice.send(group, to: carol)
        #expect(try carol.hashes(group) == alice.hashes(group))
        #expect(try carol.get("after", group, .committed) == .int(1))
        try check(carol, group)
        // She holds the tail, the anchor and key history, not the log below the snapshot.
        #expect(try carol.holdings(group).receipts.count < alice.holdings(group).receipts.count / 2)
        // Bob, who holds the whole log, agrees too.
        try alice.send(group, to: bob)
        #expect(try bob.hashes(group) == alice.hashes(group))
    }

    @Test func aTamperedSnapshotIsRefusedAndNothingIsWritten() throws {
        let alice = try TestReplica("alice", limits: limits(interval: 0))
        let bob = try TestReplica("bob")
        let group = try writtenGroup(alice: alice, bob: bob, writes: 20, keys: 3)
        try alice.replica.makeSnapshot(of: group)
        let bundle = try #require(
            try alice.replica.bootstrapBundle(of: group, for: bob.identity, peerCommitted: 0, peerHoldsNothing: true))
        let carol = try TestReplica("carol")
        // Carol is no member: she gets no snapshot (nor would a relay: it would hold every value).
        #expect(
            try alice.replica.bootstrapBundle(of: group, for: carol.identity, peerCommitted: 0, peerHoldsNothing: true)
                == nil)

        // A value changed inside the snapshot: it no longer hashes to its state hash.
        var bytes = bundle.snapshot
        let at = try #require(bytes.lastIndex(of: 0x13))  // the int 19 of the last write, k1 = 19
        bytes[at] = 0x14
        let tampered = SnapshotBundle(
            snapshot: bytes, anchorEnvelope: bundle.anchorEnvelope, anchorReceipt: bundle.anchorReceipt,
            keyHistory: bundle.keyHistory)
        #expect(throws: ReplicaError(.snapshotRefused, "")) {
            try carol.replica.installSnapshot(tampered, from: alice.identity, trustedForBootstrap: true)
        }
        // An anchor from another seq, and a sender who is not a member.
        let other = try alice.holdings(group).envelopes[3]
        let wrongAnchor = SnapshotBundle(
            snapshot: bundle.snapshot, anchorEnvelope: other.encoded, anchorReceipt: bundle.anchorReceipt,
            keyHistory: [])
        #expect(throws: ReplicaError(.snapshotRefused, "")) {
            try carol.replica.installSnapshot(wrongAnchor, from: alice.identity, trustedForBootstrap: true)
        }
        #expect(throws: ReplicaError(.snapshotRefused, "")) {
            try carol.replica.installSnapshot(bundle, from: carol.identity)
        }
        #expect(try !carol.replica.knowsGroup(group))
        // The log still works: a full replay gives Alice's state.
        try alice.send(group, to: carol)
        #expect(try carol.hashes(group) == alice.hashes(group))
    }

    @Test func compactionPrunesSupersededReceiptsAndKeepsEveryView() throws {
        let alice = try TestReplica("alice", limits: limits(interval: 50))
        let control = try TestReplica("alice", limits: limits(interval: 50))
        let bob = try TestReplica("bob")
        let bobControl = try TestReplica("bob")
        let group = GroupID(bytes16: 7)
        for (a, b) in [(alice, bob), (control, bobControl)] {
            _ = try a.replica.createGroup(name: "g", id: group)
            try a.replica.append(.memberAdded(identity: b.identity, role: .member), to: group)
        }
        try alice.replica.setRetention(of: group, minAgeMillis: 86_400_000)
        for i in 0..<1_000 {
            for r in [alice, control] {
                r.clock.advance(1)
                try r.put(group, "k\(i % 10)", Int64(i))
            }
        }
        #expect(try alice.hashes(group) == control.hashes(group))
        try check(alice, group)
        let floor = try #require(try alice.replica.floor(of: group))
        #expect(floor.seq >= 950)
        let kept = try alice.holdings(group).receipts.count
        let all = try control.holdings(group).receipts.count
        #expect(kept < all / 10, "kept \(kept) of \(all)")
        // Membership receipts and current writers stay; a tentative write on top still folds.
        #expect(try alice.replica.members(of: group, view: .committed).count == 2)
        #expect(try alice.get("k3", group, .committed) == .int(993))
        let writersGone = try alice.replica.store.read {
            try $0.count(
                rawSQL:
                    "SELECT COUNT(*) FROM entities n WHERE NOT EXISTS (SELECT 1 FROM receipts r WHERE r.cid = n.cid)")
        }
        #expect(writersGone == 0, "every current value's writer is kept")
    }

    /// Pruning a log of batched runs (migration 0018): a run with no seq left is deleted, one
    /// with some kept keeps its leaves, and every kept item is served whole and verifies.
    @Test func compactionDeletesEmptiedRunsAndServesWhatIsKept() throws {
        let alice = try TestReplica("alice", limits: limits(interval: 100))
        let group = try alice.replica.createGroup(name: "g")
        // Rounds 0–3 write ten keys that round 4 writes again, but for one key of round 3 only.
        func key(_ round: Int, _ i: Int) -> String {
            round == 3 && i == 99 ? "only3" : "k\(i % (round == 4 ? 100 : 10))"
        }
        for round in 0..<5 {
            alice.clock.advance(1)
            try alice.replica.appendBatch(
                (0..<100).map { .entityPut(key: key(round, $0), value: .int(Int64(round))) }, to: group)
        }
        let runs = { try alice.replica.store.read { try $0.count(rawSQL: "SELECT COUNT(*) FROM envelope_runs") } }
        #expect(try runs() == 5)
        _ = try alice.replica.makeSnapshot(of: group)
        let result = try #require(try alice.replica.compact(group))
        #expect(result.pruned == 399, "\(result)")
        // Runs 0–2 are gone; run 3 keeps its leaves for its one item left.
        #expect(try runs() == 2)
        let served = try alice.holdings(group).envelopes
        #expect(served.filter { $0.run != nil }.count == 101)
        #expect(served.allSatisfy { $0.verify() == .valid })
        try check(alice, group)
        #expect(try alice.get("k55", group, .committed) == .int(4))
        #expect(try alice.get("only3", group, .committed) == .int(3))
    }

    @Test func aPeerBelowTheFloorCatchesUpFromTheSnapshot() throws {
        let alice = try TestReplica("alice", limits: limits(interval: 100))
        let bob = try TestReplica("bob")
        let group = try writtenGroup(alice: alice, bob: bob, writes: 30, keys: 4)
        try alice.send(group, to: bob)
        // Bob goes away with a tentative write of his own; Alice writes on and compacts.
        try bob.put(group, "bob", 1)
        try alice.replica.setRetention(of: group, minAgeMillis: 0)
        for i in 0..<400 {
            alice.clock.advance(1)
            try alice.put(group, "k\(i % 4)", Int64(i))
        }
        let floor = try #require(try alice.replica.floor(of: group)?.seq)
        #expect(try floor > alice.replica.vector(of: group).committed - 100)
        #expect(
            try alice.replica.bootstrapBundle(of: group, for: bob.identity, peerCommitted: 33, peerHoldsNothing: false)
                != nil)
        let bundle = try #require(
            try alice.replica.bootstrapBundle(of: group, for: bob.identity, peerCommitted: 33, peerHoldsNothing: false))
        try bob.replica.installSnapshot(bundle, from: alice.identity, device: alice.device.device)
        #expect(try bob.get("bob", group, .tentative) == .int(1))
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        #expect(try bob.hashes(group) == alice.hashes(group))
        #expect(try alice.get("bob", group, .committed) == .int(1))
        try check(bob, group)
        try check(alice, group)
    }
}

extension GroupID {
    /// A fixed id for tests: 16 bytes of `n`.
    init(bytes16 n: UInt8) { self = try! GroupID(bytes: [UInt8](repeating: n, count: 16)) }
}
