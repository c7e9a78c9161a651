import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

@testable import PeerlogNode

/// `CheckAhead`: a batch's receipts are decoded and their signatures checked as the message
/// arrives; a session then takes each decoded receipt once, and the ingest skips its check.
struct CheckAheadTests {
    @Test func aBatchIsDecodedAndCheckedAheadAndEachReceiptTakenOnce() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        for i in 0..<3 { try alice.replica.append(.entityPut(key: "k\(i)", value: .int(Int64(i))), to: group) }
        let held = try alice.holdings(group)
        let items = held.receipts.map(\.encoded)
        let bob = try TestReplica("bob")
        let ahead = CheckAhead(replica: bob.replica, limits: SyncLimits(), minMessageBytes: 0)

        let group2 = GroupID.random()
        #expect(CheckAhead.mayBeBatch(SyncMessage.receipts(group: group2, items: items).encoded()))
        #expect(CheckAhead.mayBeBatch(SyncMessage.commits(group: group2, receipts: items, envelopes: []).encoded()))
        #expect(!CheckAhead.mayBeBatch(SyncMessage.envelopes(group: group2, items: []).encoded()))
        #expect(!CheckAhead.mayBeBatch(SyncMessage.credit(1).encoded()))
        #expect(!CheckAhead.mayBeBatch([]))

        // Not a batch: nothing kept.
        ahead.received(SyncMessage.credit(1).encoded())
        ahead.waitUntilIdle()
        #expect(ahead.decodedCount == 0 && bob.replica.signaturesCheckedAhead.count == 0)

        ahead.received(
            SyncMessage.commits(group: group, receipts: items, envelopes: held.envelopes.map(\.encoded)).encoded())
        ahead.waitUntilIdle()
        #expect(ahead.decodedCount == items.count)
        #expect(bob.replica.signaturesCheckedAhead.count == items.count)
        for (item, receipt) in zip(items, held.receipts) {
            #expect(try ahead.receipt(item) == receipt)
        }
        #expect(ahead.decodedCount == 0, "each decoded receipt is taken once")
        #expect(try ahead.receipt(items[0]) == held.receipts[0], "and decoded again when not kept")
        #expect(throws: (any Error).self) { try ahead.receipt([0x01, 0x02]) }

        // The ingest uses the checks made ahead, once.
        let report = try bob.replica.ingest(receipts: held.receipts, envelopes: held.envelopes)
        #expect(report.committed == held.receipts.count)
        #expect(bob.replica.signaturesCheckedAhead.count == 0)
    }

    /// A batch shorter than `minMessageBytes` is left to the hub: nothing decoded or checked.
    @Test func aSmallBatchIsLeftToTheHub() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        for i in 0..<3 { try alice.replica.append(.entityPut(key: "k\(i)", value: .int(Int64(i))), to: group) }
        let message = SyncMessage.receipts(group: group, items: try alice.holdings(group).receipts.map(\.encoded))
            .encoded()
        let bob = try TestReplica("bob")
        let ahead = CheckAhead(replica: bob.replica, limits: SyncLimits(), minMessageBytes: message.count + 1)
        ahead.received(message)
        ahead.waitUntilIdle()
        #expect(ahead.decodedCount == 0 && bob.replica.signaturesCheckedAhead.count == 0)
        let atItsSize = CheckAhead(replica: bob.replica, limits: SyncLimits(), minMessageBytes: message.count)
        atItsSize.received(message)
        atItsSize.waitUntilIdle()
        #expect(atItsSize.decodedCount == 4 && bob.replica.signaturesCheckedAhead.count == 4)
    }
}
