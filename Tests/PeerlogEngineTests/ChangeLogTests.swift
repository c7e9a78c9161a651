import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// The change log an app's change stream reads (docs/PROTOCOL.md §10.4).
@Suite struct ChangeLogTests {
    func rows(_ node: TestReplica, after cursor: Int64 = 0, kind: ChangeLogKind? = nil) throws -> [ChangeLogRow] {
        try node.replica.changes(after: cursor, limit: 10_000).filter { kind == nil || $0.kind == kind!.rawValue }
    }

    @Test func aLocalWriteInASoloGroupIsOneCommittedEntityChange() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        let start = try alice.replica.changeLogBounds().last
        try alice.replica.append(.entityPut(key: "k", value: "v1"), to: group)
        try alice.replica.append(.entityPut(key: "k", value: "v2"), to: group)
        try alice.replica.append(.entityDelete(key: "k"), to: group)
        let entity = try rows(alice, after: start, kind: .entity)
        #expect(entity.map(\.key) == ["k", "k", "k"])
        #expect(
            entity.map { $0.newValue.map { try! CBORDecoder.decodeStrict($0) } } == [.text("v1"), .text("v2"), nil])
        #expect(
            entity.map { $0.oldValue.map { try! CBORDecoder.decodeStrict($0) } } == [nil, .text("v1"), .text("v2")])
        #expect(
            entity.allSatisfy { $0.flags & ChangeLogFlags.newTentative == 0 },
            "the solo sequencer commits in the same transaction")
        let committed = try rows(alice, after: start, kind: .committed)
        #expect(committed.map(\.firstSeq) == [2, 3, 4] && committed.map(\.lastSeq) == [2, 3, 4])
        let ids = try rows(alice).map(\.id)
        #expect(ids == ids.sorted() && Set(ids).count == ids.count)
    }

    @Test func aMembersWriteIsTentativeThenTurnsCommittedWithTheSameValue() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        let start = try bob.replica.changeLogBounds().last
        let w = try bob.replica.append(.entityPut(key: "k", value: "b"), to: group)
        var entity = try rows(bob, after: start, kind: .entity)
        #expect(entity.count == 1)
        #expect(entity[0].flags == ChangeLogFlags.newPresent | ChangeLogFlags.newTentative)
        _ = try alice.replica.ingest(receipts: [w.receipt])
        let mid = try bob.replica.changeLogBounds().last
        try alice.send(group, to: bob)
        entity = try rows(bob, after: mid, kind: .entity)
        #expect(entity.count == 1, "the commit makes the value committed")
        #expect(entity[0].flags == ChangeLogFlags.oldPresent | ChangeLogFlags.oldTentative | ChangeLogFlags.newPresent)
        #expect(entity[0].oldValue == entity[0].newValue)
        #expect(try rows(bob, after: mid, kind: .reordered).isEmpty)
        #expect(try rows(bob, after: mid, kind: .committed).count == 1)
    }

    @Test func aCommittedOrderOtherThanTheGuessNamesTheKeysItMoved() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try groupWith(owner: alice, members: [bob, carol])
        try alice.send(group, to: carol)
        try bob.send(group, to: carol)
        let bobs = try bob.replica.append(.entityPut(key: "k", value: "bob"), to: group)
        carol.clock.advance(60_000)
        let carols = try carol.replica.append(.entityPut(key: "k", value: "carol"), to: group)
        _ = try carol.replica.ingest(receipts: [bobs.receipt])
        #expect(try carol.get("k", group) == "carol")
        _ = try alice.replica.ingest(receipts: [carols.receipt])
        _ = try alice.replica.ingest(receipts: [bobs.receipt])
        let mid = try carol.replica.changeLogBounds().last
        try alice.send(group, to: carol)
        let entity = try rows(carol, after: mid, kind: .entity)
        #expect(entity.count == 1)
        #expect(entity[0].flags & ChangeLogFlags.reordered != 0)
        #expect(entity[0].newValue.map { try! CBORDecoder.decodeStrict($0) } == .text("bob"))
        let reordered = try rows(carol, after: mid, kind: .reordered)
        #expect(reordered.count == 1)
        #expect(reordered[0].newValue.map { try! CBORDecoder.decodeStrict($0) } == .array([.text("k")]))
    }

    @Test func anInvitationAMembershipChangeAndADeletionAreLogged() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.send(group, to: bob)
        #expect(try rows(bob, kind: .invited).count == 1)
        #expect(try rows(bob, kind: .members).map(\.group) == [group])
        #expect(try rows(alice, kind: .invited).isEmpty, "the inviter is not invited")
        let mid = try alice.replica.changeLogBounds().last
        try alice.replica.append(.entityPut(key: "k", value: "v"), to: group)
        try alice.replica.append(.deleted, to: group)
        #expect(try rows(alice, after: mid, kind: .deleted).map(\.group) == [group])
    }

    @Test func rejectedReceiptsAreLoggedWithTheirReason() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        // Bob's write is valid in his view; alice removes him before it arrives.
        let w = try bob.replica.append(.entityPut(key: "k", value: "late"), to: group)
        try alice.replica.append(.memberRemoved(identity: bob.identity), to: group)
        _ = try alice.replica.ingest(receipts: [w.receipt])
        let rejected = try rows(alice, kind: .rejected)
        #expect(rejected.map(\.cid) == [w.receipt.cid])
        #expect(rejected.first?.reason?.isEmpty == false)
    }

    @Test func retentionKeepsTheNewestRows() throws {
        var limits = ReplicaLimits()
        limits.changeLogRetention = 1_500
        let alice = try TestReplica("alice", limits: limits)
        let group = try alice.replica.createGroup(name: "g")
        _ = try alice.replica.appendBatch(
            (0..<1_200).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        _ = try alice.replica.appendBatch(
            (0..<1_200).map { .entityPut(key: "j\($0)", value: .int(Int64($0))) }, to: group)
        let (first, last) = try alice.replica.changeLogBounds()
        #expect(last >= 2_400)
        #expect(
            first.map { $0 > 1 && last - $0 + 1 <= 1_500 + 1_024 } == true,
            "pruned to the window, at most one pruning interval over")
    }
}
