import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// Offline limits (docs/PROTOCOL.md §10.5): this device's own writes waiting for a seq, by count
/// and by the oldest one's age, at N-1, N and N+1; what is refused writes nothing; writes pass
/// again once the sequencer commits the backlog.
@Suite struct OfflineLimitsTests {
    static let maxWaiting = 5
    static let maxAge: UInt64 = 1_000
    static let reserve = 2

    static var limits: ReplicaLimits {
        var l = ReplicaLimits()
        l.maxWaitingLocalWrites = maxWaiting
        l.maxWaitingLocalAgeMillis = maxAge
        l.offlineGroupOperationReserve = reserve
        return l
    }

    /// Alice's group, sequenced by `relay` (out of Alice's reach until a test carries receipts
    /// over): every write of Alice waits for a seq.
    static func offlineGroup(alice: TestReplica, relay: TestReplica) throws -> GroupID {
        let group = try alice.replica.createGroup(name: "trip")
        try alice.replica.append(
            .sequencerChanged(.relay(key: relay.device.device, address: "127.0.0.1:9")), to: group)
        let (receipts, envelopes) = try alice.holdings(group)
        _ = try relay.replica.ingest(receipts: receipts, envelopes: envelopes)
        #expect(try alice.replica.offlineHeadroom(of: group).waiting == 0)
        return group
    }

    /// The relay commits what Alice holds, and Alice takes its envelopes.
    static func reconnect(_ alice: TestReplica, _ relay: TestReplica, _ group: GroupID) throws {
        try alice.send(group, to: relay)
        try relay.send(group, to: alice)
    }

    static func put(_ key: String) -> GroupOperation { .entityPut(key: key, value: .int(1)) }

    /// Expects `body` to fail with `offlineLimitReached` naming `limit`, and nothing written.
    static func expectRefused(
        _ alice: TestReplica, _ group: GroupID, naming limit: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) throws {
        let before = try alice.replica.log(of: group, view: .tentative).map(\.receipt.cid)
        let vector = try alice.replica.vector(of: group)
        #expect(sourceLocation: sourceLocation) { try body() } throws: { error in
            guard let e = error as? ReplicaError else { return false }
            return e.code == .offlineLimitReached && e.description.contains(limit)
                && e.description.contains("nothing was written") && !e.description.contains("\n")
        }
        #expect(
            try alice.replica.log(of: group, view: .tentative).map(\.receipt.cid) == before,
            "nothing written", sourceLocation: sourceLocation)
        #expect(try alice.replica.vector(of: group) == vector, sourceLocation: sourceLocation)
    }

    @Test func theCountLimitAtItsBoundaryForPutsAndDeletes() throws {
        let alice = try TestReplica("alice", limits: Self.limits)
        let relay = try TestReplica("relay")
        let group = try Self.offlineGroup(alice: alice, relay: relay)
        for i in 0..<(Self.maxWaiting - 1) {
            #expect(try alice.replica.append(Self.put("k\(i)"), to: group).seq == nil)
        }
        // N-1 waiting: one more is allowed and makes N.
        #expect(try alice.replica.offlineHeadroom(of: group).waiting == Self.maxWaiting - 1)
        #expect(try alice.replica.offlineHeadroom(of: group).remaining == 1)
        try alice.replica.append(.entityDelete(key: "k0"), to: group)
        let full = try alice.replica.offlineHeadroom(of: group)
        #expect(full.waiting == Self.maxWaiting && full.remaining == 0)
        // N waiting: the next (N+1) is refused, a put and a delete alike.
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalWrites") {
            try alice.replica.append(Self.put("over"), to: group)
        }
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalWrites") {
            try alice.replica.append(.entityDelete(key: "k1"), to: group)
        }
        // An application receipt type counts as any write.
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalWrites") {
            try alice.replica.append(.application(type: "chat.message", body: .text("hi")), to: group)
        }
        #expect(try alice.replica.offlineHeadroom(of: group).waiting == Self.maxWaiting)

        // Once the sequencer commits them, writes pass again.
        try Self.reconnect(alice, relay, group)
        #expect(try alice.replica.offlineHeadroom(of: group).waiting == 0)
        try alice.replica.append(Self.put("after"), to: group)
        #expect(try alice.replica.offlineHeadroom(of: group).waiting == 1)
    }

    @Test func groupOperationsHaveAReserveAndThenStop() throws {
        let alice = try TestReplica("alice", limits: Self.limits)
        let relay = try TestReplica("relay")
        let group = try Self.offlineGroup(alice: alice, relay: relay)
        try alice.replica.appendBatch((0..<Self.maxWaiting).map { Self.put("k\($0)") }, to: group)
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalWrites") {
            try alice.replica.append(Self.put("over"), to: group)
        }
        // At the count limit, group operations go on up to the reserve (N + reserve waiting)…
        for i in 0..<Self.reserve { try alice.replica.append(.renamed(name: "trip \(i)"), to: group) }
        #expect(try alice.replica.offlineHeadroom(of: group).waiting == Self.maxWaiting + Self.reserve)
        // …and the next one is refused, naming the reserve.
        try Self.expectRefused(alice, group, naming: "offlineGroupOperationReserve") {
            try alice.replica.append(.renamed(name: "one too many"), to: group)
        }
        try Self.expectRefused(alice, group, naming: "offlineGroupOperationReserve") {
            try alice.replica.appendBatch([.renamed(name: "batched")], to: group)
        }
    }

    @Test func aBatchThatWouldCrossTheLimitIsRefusedWhole() throws {
        let alice = try TestReplica("alice", limits: Self.limits)
        let relay = try TestReplica("relay")
        let group = try Self.offlineGroup(alice: alice, relay: relay)
        try alice.replica.appendBatch([Self.put("a"), Self.put("b")], to: group)
        // 2 waiting: a batch of 4 would make N+1 = 6, refused whole (not a `BatchError`: no one
        // operation is at fault)…
        let four = (0..<4).map { Self.put("four\($0)") }
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalWrites") {
            try alice.replica.appendBatch(four, to: group)
        }
        // …a group operation in it does not make it a group-operation batch…
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalWrites") {
            try alice.replica.appendBatch(Array(four.prefix(3)) + [.renamed(name: "x")], to: group)
        }
        // …a batch of 3 makes exactly N, and then a batch of 1 is N+1.
        #expect(try alice.replica.appendBatch(Array(four.prefix(3)), to: group).count == 3)
        #expect(try alice.replica.offlineHeadroom(of: group).waiting == Self.maxWaiting)
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalWrites") {
            try alice.replica.appendBatch([Self.put("one")], to: group)
        }
    }

    @Test func theAgeLimitAtItsBoundary() throws {
        var limits = Self.limits
        limits.maxWaitingLocalWrites = 100
        let alice = try TestReplica("alice", limits: limits)
        let relay = try TestReplica("relay")
        let group = try Self.offlineGroup(alice: alice, relay: relay)
        let start = alice.clock.now()
        try alice.replica.append(Self.put("first"), to: group)
        // The age is the oldest waiting write's; later writes do not reset it.
        alice.clock.set(start + Self.maxAge - 1)
        try alice.replica.append(Self.put("at N-1"), to: group)
        alice.clock.set(start + Self.maxAge)
        #expect(try alice.replica.offlineHeadroom(of: group).oldestAgeMillis == Self.maxAge)
        try alice.replica.append(Self.put("at N"), to: group)
        alice.clock.set(start + Self.maxAge + 1)
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalAgeMillis") {
            try alice.replica.append(Self.put("at N+1"), to: group)
        }
        try Self.expectRefused(alice, group, naming: "maxWaitingLocalAgeMillis") {
            try alice.replica.appendBatch([Self.put("batched")], to: group)
        }
        // Group operations have no age limit: a member can still leave or repair the group.
        try alice.replica.append(.renamed(name: "still possible"), to: group)

        // Committed, the backlog's age is gone; the next write starts a new one.
        try Self.reconnect(alice, relay, group)
        let after = try alice.replica.offlineHeadroom(of: group)
        #expect(after.waiting == 0 && after.oldestAgeMillis == nil)
        try alice.replica.append(Self.put("again"), to: group)
        #expect(try alice.replica.offlineHeadroom(of: group).oldestAgeMillis == 0)
    }

    @Test func onTheGroupsSequencerNothingWaits() throws {
        var limits = Self.limits
        limits.maxWaitingLocalWrites = 1
        let alice = try TestReplica("alice", limits: limits)
        let group = try alice.replica.createGroup(name: "solo")
        for i in 0..<10 {
            #expect(try alice.replica.append(Self.put("k\(i)"), to: group).seq != nil)
            alice.clock.advance(Self.maxAge * 10)
        }
        #expect(try alice.replica.appendBatch((0..<5).map { Self.put("b\($0)") }, to: group).count == 5)
        let headroom = try alice.replica.offlineHeadroom(of: group)
        #expect(headroom.waiting == 0 && headroom.oldestAgeMillis == nil)
    }

    @Test func onlyThisDevicesOwnWritesCountAndTheKeptCountMatchesACount() throws {
        let alice = try TestReplica("alice", limits: Self.limits)
        let bob = try TestReplica("bob", limits: Self.limits)
        let relay = try TestReplica("relay")
        let group = try alice.replica.createGroup(name: "trip")
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.replica.append(
            .sequencerChanged(.relay(key: relay.device.device, address: "127.0.0.1:9")), to: group)
        try alice.send(group, to: relay)
        try relay.send(group, to: bob)
        try bob.replica.append(.inviteAccepted, to: group)
        try bob.replica.appendBatch((0..<4).map { Self.put("bob\($0)") }, to: group)
        try alice.replica.appendBatch((0..<3).map { Self.put("alice\($0)") }, to: group)
        // Bob's five waiting receipts reach Alice; they are not hers to count.
        try bob.send(group, to: alice)
        /// [kept by the triggers, counted over the receipts].
        func counts(_ r: TestReplica) throws -> [Int] {
            try r.replica.store.read { db in
                [
                    try db.waitingReceipts(group: group, author: r.device.device).count,
                    try db.countedWaitingReceipts(group: group, author: r.device.device),
                ]
            }
        }
        #expect(try alice.replica.tentativeCount(of: group) == 8)
        #expect(try counts(alice) == [3, 3] && alice.replica.offlineHeadroom(of: group).waiting == 3)
        #expect(try counts(bob) == [5, 5])
        // Alice's two more writes pass although eight receipts wait in the group.
        try alice.replica.appendBatch([Self.put("x"), Self.put("y")], to: group)
        // The relay commits Bob's backlog only: Alice's count stays, Bob's drops to 0.
        try bob.send(group, to: relay)
        try relay.send(group, to: bob)
        try relay.send(group, to: alice)
        #expect(try counts(alice) == [5, 5])
        #expect(try counts(bob) == [0, 0])
        try Self.reconnect(alice, relay, group)
        #expect(try counts(alice) == [0, 0])
        #expect(
            try alice.replica.checkWaitingCounts(of: group) == nil && bob.replica.checkWaitingCounts(of: group) == nil)

        // `check` notices a kept count that drifted from the receipts.
        try bob.replica.appendBatch([Self.put("late")], to: group)
        _ = try bob.replica.store.write { try $0.execute(rawSQL: "UPDATE waiting_counts SET count = count + 2") }
        let mismatch = try bob.replica.checkWaitingCounts(of: group)
        #expect(
            mismatch?.contains("\(bob.device.device.string): kept 3 waiting, counted 1") == true, "\(mismatch ?? "")")
    }

    @Test func aGroupsOwnOverrideReplacesTheDefaults() throws {
        let alice = try TestReplica("alice", limits: Self.limits)
        let relay = try TestReplica("relay")
        let group = try Self.offlineGroup(alice: alice, relay: relay)
        try alice.replica.setOfflineLimits(maxWaiting: 2, maxAgeMillis: nil, of: group)
        var headroom = try alice.replica.offlineHeadroom(of: group)
        #expect(headroom.limits.maxWaiting == 2 && headroom.limits.maxAgeMillis == Self.maxAge)
        #expect(headroom.overridesMaxWaiting && !headroom.overridesMaxAge)
        try alice.replica.appendBatch([Self.put("a"), Self.put("b")], to: group)
        try Self.expectRefused(alice, group, naming: "offline limit of 2") {
            try alice.replica.append(Self.put("c"), to: group)
        }
        // Raised, the same write passes; removed, the replica's default (5) applies.
        try alice.replica.setOfflineLimits(maxWaiting: 3, maxAgeMillis: 50, of: group)
        try alice.replica.append(Self.put("c"), to: group)
        try alice.replica.setOfflineLimits(maxWaiting: nil, maxAgeMillis: nil, of: group)
        headroom = try alice.replica.offlineHeadroom(of: group)
        #expect(headroom.limits.maxWaiting == Self.maxWaiting && !headroom.overridesMaxWaiting)
        #expect(!headroom.overridesMaxAge && headroom.limits.maxAgeMillis == Self.maxAge)
        // The largest limits are usable: a group operation's reserve on top does not overflow.
        try alice.replica.setOfflineLimits(maxWaiting: Int.max, maxAgeMillis: .max, of: group)
        try alice.replica.append(.renamed(name: "unbounded"), to: group)
        try alice.replica.append(Self.put("d"), to: group)
        try alice.replica.setOfflineLimits(maxWaiting: nil, maxAgeMillis: nil, of: group)
        // Bad settings are refused.
        #expect { try alice.replica.setOfflineLimits(maxWaiting: -1, maxAgeMillis: nil, of: group) } throws: {
            ($0 as? ReplicaError)?.code == .invalidOperation
        }
        #expect { try alice.replica.setOfflineLimits(maxWaiting: 3, maxAgeMillis: nil, of: .random()) } throws: {
            ($0 as? ReplicaError)?.code == .groupNotFound
        }
    }

    @Test func aStoreMigratedWithWritesWaitingCountsThem() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let laptop = try LocalDevice.generate(name: "laptop", createdAt: 1)
        let relay = try LocalDevice.generate(name: "relay", createdAt: 1)
        let path = dir + "/r.sqlite"
        var group = GroupID.random()
        do {
            let replica = try Replica(path: path, device: laptop, limits: Self.limits)
            group = try replica.createGroup(name: "g")
            try replica.append(.sequencerChanged(.relay(key: relay.device, address: "127.0.0.1:9")), to: group)
            try replica.appendBatch((0..<4).map { Self.put("k\($0)") }, to: group)
            // As a store from before migration 0011: its objects and its record gone.
            _ = try replica.store.write { db in
                for sql in [
                    "DROP TRIGGER waiting_receipt_stored", "DROP TRIGGER waiting_receipt_committed",
                    "DROP TRIGGER waiting_receipt_uncommitted", "DROP TRIGGER waiting_receipt_removed",
                    "DROP INDEX receipts_waiting", "DROP TABLE waiting_counts", "DROP TABLE offline_limits",
                    "DELETE FROM grdb_migrations WHERE identifier = '0011_offline_limits'",
                ] {
                    try db.execute(rawSQL: sql)
                }
            }
        }
        // And its receipts as they were stored then (migration 0021 came later).
        try Store.rewriteShape(path: path, sql: NumberedReferencesTests.shapeBefore0021(withOfflineLimits: false))
        // Reopened, the migration counts the four waiting writes: one more is N, then N+1 is refused.
        let reopened = try Replica(path: path, device: laptop, limits: Self.limits)
        #expect(try reopened.offlineHeadroom(of: group).waiting == 4)
        try reopened.append(Self.put("fifth"), to: group)
        #expect {
            try reopened.append(Self.put("sixth"), to: group)
        } throws: {
            ($0 as? ReplicaError)?.code == .offlineLimitReached
        }
    }

    @Test func durationsInRefusalsSayTheExactBoundary() {
        #expect(OfflineHeadroom.describe(30 * 86_400_000) == "30 d")
        #expect(OfflineHeadroom.describe(1_001) == "1 s (1001 ms)")
        #expect(OfflineHeadroom.describe(999) == "999 ms")
        #expect(OfflineHeadroom.describe(90 * 60_000) == "1 h (5400000 ms)")
    }
}
