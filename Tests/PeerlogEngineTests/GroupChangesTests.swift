import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// `Replica.observeChanges(since:)`: which groups changed between two change stamps, read from
/// the rows added since (what a node offers and re-checks after a write by another process).
struct GroupChangesTests {
    @Test func namesTheGroupsWrittenAndThoseWithAGroupOperation() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let (g1, g2, g3) = try (
            alice.replica.createGroup(name: "one"), alice.replica.createGroup(name: "two"),
            alice.replica.createGroup(name: "three")
        )
        let start = try alice.replica.changeStamp()
        #expect(try alice.replica.observeChanges(since: start).changes == GroupChanges(groups: [], groupOperations: []))

        _ = try alice.replica.append(.entityPut(key: "k", value: 1), to: g2)
        let afterPut = try alice.replica.observeChanges(since: start)
        #expect(afterPut.changes == GroupChanges(groups: [g2], groupOperations: []))
        let operations = try alice.replica.groupOperationStamp()
        #expect(afterPut.stamp != start && afterPut.groupOperations == operations)

        _ = try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: g3)
        #expect(
            try alice.replica.observeChanges(since: start).changes
                == GroupChanges(groups: [g2, g3], groupOperations: [g3]))
        #expect(
            try alice.replica.observeChanges(since: afterPut.stamp).changes
                == GroupChanges(groups: [g3], groupOperations: [g3]))

        // Received receipts and envelopes count like local ones: bob holds g3 from nothing.
        let bobStart = try bob.replica.changeStamp()
        try alice.send(g3, to: bob)
        #expect(
            try bob.replica.observeChanges(since: bobStart).changes == GroupChanges(groups: [g3], groupOperations: [g3])
        )
        _ = g1

        // A stamp ahead of the store (its newest rows deleted, rowids reusable): unknown.
        #expect(try alice.replica.observeChanges(since: [Int64.max, 0]).changes == nil)
        #expect(try alice.replica.observeChanges(since: [0]).changes == nil)
    }

    /// A commit of a tentative group operation counts it as changed: bob's invitation, held by
    /// carol tentatively, is committed when alice's envelope arrives.
    @Test func aCommittedGroupOperationCountsThroughItsEnvelope() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        _ = try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        let (receipts, envelopes) = try alice.holdings(group)
        _ = try bob.replica.ingest(receipts: receipts, envelopes: [])
        let before = try bob.replica.changeStamp()
        _ = try bob.replica.ingest(receipts: [], envelopes: envelopes)
        #expect(
            try bob.replica.observeChanges(since: before).changes
                == GroupChanges(groups: [group], groupOperations: [group]))
    }

    /// The group-operation stamp (migration 0017's kept count) moves when a group operation is
    /// stored and when it is committed, and stays put for any other write.
    @Test func theGroupOperationStampMovesOnlyForGroupOperations() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        let created = try alice.replica.groupOperationStamp()
        _ = try alice.replica.append(.entityPut(key: "k", value: 1), to: group)
        #expect(try alice.replica.groupOperationStamp() == created)
        _ = try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        let added = try alice.replica.groupOperationStamp()
        #expect(added != created)

        // Bob holds the operations tentatively first, then their envelopes commit them.
        let (receipts, envelopes) = try alice.holdings(group)
        let empty = try bob.replica.groupOperationStamp()
        _ = try bob.replica.ingest(receipts: receipts, envelopes: [])
        let stored = try bob.replica.groupOperationStamp()
        #expect(stored != empty)
        _ = try bob.replica.ingest(receipts: [], envelopes: envelopes)
        #expect(try bob.replica.groupOperationStamp() != stored)
    }
}
