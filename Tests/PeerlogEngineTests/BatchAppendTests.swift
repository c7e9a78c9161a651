import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// `Replica.appendBatch`: one transaction, each operation its own receipt, all or nothing.
struct BatchAppendTests {
    static func puts(_ n: Int, prefix: String = "k") -> [GroupOperation] {
        (0..<n).map { .entityPut(key: "\(prefix)\($0)", value: .int(Int64($0))) }
    }

    @Test func batchWritesOneReceiptEachInOrderAsConsecutiveAppends() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        let ops: [GroupOperation] = [
            .entityPut(key: "a", value: 1), .entityPut(key: "b", value: "two"), .entityDelete(key: "a"),
            .renamed(name: "h"),
        ]
        let results = try alice.replica.appendBatch(ops, to: group)
        #expect(results.map(\.receipt.type) == ops.map(\.receiptType))
        #expect(results.map(\.receipt.counter) == [2, 3, 4, 5])
        #expect(results.map(\.seq) == [2, 3, 4, 5], "the solo sequencer commits them in batch order")
        for (previous, next) in zip(results, results.dropFirst()) {
            #expect(next.receipt.parents == [previous.receipt.cid], "each receipt is the parent of the next")
            #expect(previous.receipt.hlc < next.receipt.hlc)
        }
        #expect(try alice.get("a", group) == nil && alice.get("b", group) == "two")
        #expect(try alice.replica.state(of: group, view: .committed)?.name == "h")
        #expect(try alice.replica.replayedStateHash(of: group) == alice.replica.stateHash(of: group, view: .committed))
        let committed = try alice.replica.changes(after: 0, group: group).filter { $0.kind == "committed" }
        #expect(committed.last.map { [$0.firstSeq, $0.lastSeq] } == [2, 5], "one settle commits the whole batch")
        // A peer takes them like any receipts.
        let bob = try TestReplica("bob")
        try alice.send(group, to: bob)
        #expect(try bob.hashes(group) == alice.hashes(group))
    }

    @Test func aBatchCanCreateItsGroup() throws {
        let alice = try TestReplica("alice")
        let group = GroupID.random()
        let results = try alice.replica.appendBatch(
            [.created(name: "new", maxMembers: 3), .entityPut(key: "a", value: 1)], to: group)
        #expect(results.map(\.seq) == [1, 2])
        #expect(
            try alice.replica.state(of: group, view: .committed)?.name == "new"
                && alice.get("a", group, .committed) == 1)
        #expect { try alice.replica.appendBatch([.created(name: "again", maxMembers: 3)], to: group) } throws: {
            ($0 as? BatchError)?.index == 0
        }
    }

    @Test func batchIsOneTransactionSeenWholeAfterReopeningAndAFailureLeavesNothing() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let device = try LocalDevice.generate(name: "w", createdAt: 1)
        let path = dir + "/r.sqlite"
        var group = GroupID.random()
        do {
            let replica = try Replica(path: path, device: device)
            group = try replica.createGroup(name: "g")
            #expect(try replica.appendBatch(Self.puts(300), to: group).count == 300)
        }
        let reopened = try Replica(path: path, device: device)
        #expect(try reopened.log(of: group, view: .committed).count == 301)
        let before = try reopened.stateHash(of: group, view: .tentative)
        let vector = try reopened.vector(of: group)
        let logged = try reopened.changeLogBounds().last

        // The last operation is over the payload limit: found before anything is signed.
        let big = CBOR.text(String(repeating: "x", count: Receipt.maxPayloadBytes))
        #expect {
            try reopened.appendBatch(Self.puts(299, prefix: "n") + [.entityPut(key: "big", value: big)], to: group)
        } throws: {
            ($0 as? BatchError)?.index == 299 && ($0 as? BatchError)?.code == .payloadTooLarge
                && "\($0)".contains("over the limit")
        }
        let again = try Replica(path: path, device: device)
        #expect(try again.log(of: group, view: .tentative).count == 301)
        #expect(try again.stateHash(of: group, view: .tentative) == before)
        #expect(try again.vector(of: group) == vector)
        #expect(try again.changeLogBounds().last == logged)
        // The counter and the HLC go on from what was committed.
        #expect(try again.append(.entityPut(key: "after", value: 1), to: group).receipt.counter == 302)
    }

    @Test func aFailureAfterHalfTheBatchWasStoredAndCommittedLeavesNothing() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let device = try LocalDevice.generate(name: "w", createdAt: 1)
        let path = dir + "/r.sqlite"
        let failing = try Replica(path: path, device: device)
        let group = try failing.createGroup(name: "g")
        // Fails the transaction once seq 152 is being committed: 300 receipts stored and 150
        // of them committed by then (a trigger on the writer's connection only).
        try failing.store.write { db in
            try db.execute(
                rawSQL: """
                    CREATE TEMP TRIGGER fail_at_152 BEFORE UPDATE OF seq ON receipts WHEN NEW.seq = 152
                    BEGIN SELECT RAISE(ABORT, 'injected failure at seq 152'); END
                    """)
        }
        #expect { try failing.appendBatch(Self.puts(300), to: group) } throws: {
            "\($0)".contains("injected failure at seq 152")
        }
        let reopened = try Replica(path: path, device: device)
        #expect(try reopened.log(of: group, view: .tentative).count == 1)
        #expect(try reopened.vector(of: group).committed == 1)
        #expect(try reopened.entities(in: group, view: .tentative).isEmpty)
        #expect(try reopened.changes(after: 0, group: group).filter { $0.kind == "committed" }.map(\.lastSeq) == [1])
        #expect(try reopened.appendBatch(Self.puts(300), to: group).last?.seq == 301)
        #expect(try reopened.replayedStateHash(of: group) == reopened.stateHash(of: group, view: .committed))
    }

    @Test func everyOperationSeesTheRulesAsTheEarlierOnesLeftThem() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        let log = try bob.replica.log(of: group, view: .tentative)
        // Bob leaves at index 1: his next put is refused, so the whole batch is.
        #expect {
            try bob.replica.appendBatch(
                [.entityPut(key: "a", value: 1), .memberLeft, .entityPut(key: "b", value: 2)], to: group)
        } throws: { ($0 as? BatchError)?.index == 2 && ($0 as? BatchError)?.code == .notAMember }
        #expect(try bob.replica.log(of: group, view: .tentative) == log)
        // A body every replica would refuse is refused here too.
        #expect {
            try alice.replica.appendBatch(
                [.entityPut(key: "a", value: 1), .application(type: "entity.other", body: .null)], to: group)
        } throws: { ($0 as? BatchError)?.index == 1 }
        #expect(try alice.get("a", group) == nil)
    }

    @Test func batchOfAMemberWhoIsNotTheSequencerStaysTentativeThenCommitsInOrder() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        let results = try bob.replica.appendBatch(Self.puts(20), to: group)
        #expect(results.allSatisfy { $0.seq == nil })
        #expect(try bob.replica.tentativeCount(of: group) == 20)
        try bob.send(group, to: alice)
        let committed = try alice.replica.log(of: group, view: .committed).suffix(20)
        #expect(committed.map(\.receipt.cid) == results.map(\.receipt.cid))
        #expect(committed.allSatisfy { $0.rejected == nil })
        try alice.send(group, to: bob)
        #expect(try bob.hashes(group) == alice.hashes(group))
    }

    @Test func withMoreHeadsThanOneReceiptNamesEachNextReceiptTakesTheRestAsAppendWould() throws {
        // Two same replicas; 40 devices of their identity each write on the creation: 40 heads.
        let id = try GroupID(bytes: [UInt8](repeating: 4, count: 16))
        let (batched, single) = (try TestReplica("a"), try TestReplica("a"))
        let (group, sameGroup) = (
            try batched.replica.createGroup(name: "g", id: id), try single.replica.createGroup(name: "g", id: id)
        )
        let created = try batched.replica.log(of: group, view: .committed)[0].receipt.cid
        let writers = try (0..<40).map { try batched.device.additionalDevice(name: "d\($0)", createdAt: 1) }
        let heads = try writers.enumerated().map { i, d in
            try handmade(
                d, group: group, counter: 1, op: .entityPut(key: "d\(i)", value: 1), hlc: 1_700_000_000_000,
                parents: [created])
        }
        #expect(try batched.replica.ingest(receipts: heads).committed == 40)
        #expect(try single.replica.ingest(receipts: heads).committed == 40)
        let ops = Self.puts(3)
        let fromBatch = try batched.replica.appendBatch(ops, to: group).map(\.receipt)
        let fromAppends = try ops.map { try single.replica.append($0, to: sameGroup).receipt }
        #expect(
            fromBatch[0].parents.count == 32 && fromBatch[1].parents.count == 9
                && fromBatch[2].parents == [fromBatch[1].cid])
        for i in 0..<3 {
            let others = { (r: Receipt, previous: Receipt?) in Set(r.parents.filter { $0 != previous?.cid }) }
            #expect(
                others(fromBatch[i], i > 0 ? fromBatch[i - 1] : nil)
                    == others(fromAppends[i], i > 0 ? fromAppends[i - 1] : nil), "receipt \(i)")
        }
        #expect(try batched.hashes(group).committed == single.hashes(sameGroup).committed)
    }

    @Test func limitsAtTheirBoundary() throws {
        var limits = ReplicaLimits()
        #expect(limits.maxBatchOperations == 10_000 && limits.maxBatchPayloadBytes == 32 * 1_048_576)
        limits.maxBatchOperations = 5
        let small = try TestReplica("small", limits: limits)
        let group = try small.replica.createGroup(name: "g")
        #expect(try small.replica.appendBatch(Self.puts(5), to: group).count == 5)
        #expect { try small.replica.appendBatch(Self.puts(6), to: group) } throws: {
            ($0 as? ReplicaError)?.code == .batchTooLarge && "\($0)".contains("at most 5 operations")
                && "\($0)".contains("split")
        }
        #expect(try small.replica.appendBatch([], to: group).isEmpty)

        // The payload limit: the sizes of a batch's receipts, then that sum as the limit, and one less.
        let probe = try TestReplica("probe")
        let probeGroup = try probe.replica.createGroup(name: "g")
        let total = try probe.replica.appendBatch(Self.puts(10), to: probeGroup).reduce(0) {
            $0 + $1.receipt.payload.count
        }
        limits = ReplicaLimits()
        limits.maxBatchPayloadBytes = total
        let exact = try TestReplica("exact", limits: limits)
        #expect(try exact.replica.appendBatch(Self.puts(10), to: exact.replica.createGroup(name: "g")).count == 10)
        limits.maxBatchPayloadBytes = total - 1
        let under = try TestReplica("under", limits: limits)
        let underGroup = try under.replica.createGroup(name: "g")
        #expect { try under.replica.appendBatch(Self.puts(10), to: underGroup) } throws: {
            ($0 as? BatchError)?.index == 9 && ($0 as? BatchError)?.code == .payloadTooLarge
                && "\($0)".contains("maxBatchPayloadBytes")
        }
        #expect(try under.replica.log(of: underGroup, view: .tentative).count == 1)
    }
}
