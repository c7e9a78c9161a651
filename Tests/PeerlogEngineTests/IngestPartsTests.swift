import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Synchronization
import Testing

/// `Replica.ingest(parts:)`: several peers' batches in one transaction, each reported as its own
/// `ingest(receipts:envelopes:from:)` would be.
struct IngestPartsTests {
    /// Alice's two groups, two writes each, and a forgery of one of her receipts.
    static func fixture() throws -> (alice: TestReplica, groups: [GroupID], forged: Receipt) {
        let alice = try TestReplica("alice")
        var groups = [GroupID]()
        for name in ["one", "two"] {
            let g = try alice.replica.createGroup(name: name)
            for i in 0..<2 { try alice.replica.append(.entityPut(key: "k\(i)", value: .int(Int64(i))), to: g) }
            groups.append(g)
        }
        let genuine = try alice.holdings(groups[1]).receipts[1]
        var signature = genuine.signature
        signature[3] ^= 1
        return (
            alice, groups, try Receipt(payload: genuine.payload, signature: signature, certificate: genuine.certificate)
        )
    }

    @Test func partsInOneTransactionReportAndStoreAsSeparateIngestsWould() throws {
        let (alice, groups, forged) = try Self.fixture()
        let one = try alice.holdings(groups[0])
        let two = try alice.holdings(groups[1])
        let peer = try TestReplica("peer").device.device
        // Group one; the forgery, then group two, whose genuine receipt of that payload must not
        // pass for its duplicate; group one again (all duplicates).
        let parts = [
            IngestPart(receipts: one.receipts, envelopes: one.envelopes, from: peer),
            IngestPart(receipts: [forged] + two.receipts, envelopes: two.envelopes, from: peer),
            IngestPart(receipts: one.receipts, envelopes: one.envelopes, from: peer),
        ]
        let together = try TestReplica("together")
        let apart = try TestReplica("apart")
        let events = Mutex(0)
        together.replica.subscribe { _ in events.withLock { $0 += 1 } }
        let reports = try together.replica.ingest(parts: parts)
        let separate = try parts.map {
            try apart.replica.ingest(receipts: $0.receipts, envelopes: $0.envelopes, from: $0.from)
        }
        #expect(reports == separate)
        #expect(reports.map(\.stored) == [3, 3, 0] && reports[2].duplicates == 6, "3 receipts, 3 envelopes")
        #expect(reports.map(\.committed) == [3, 3, 0])
        #expect(reports.map(\.invalid) == [[], [forged.cid], []], "the forgery is reported with its own part")
        #expect(events.withLock { $0 } == separate.map(\.events.count).reduce(0, +), "every event delivered once")
        for g in groups {
            #expect(try together.hashes(g) == alice.hashes(g))
            #expect(
                try together.replica.changes(after: 0, group: g).count
                    == apart.replica.changes(after: 0, group: g).count)
        }
        #expect(try together.replica.invalidReceipts().map(\.cid) == [forged.cid])
    }

    @Test func aPartThatCannotBeWrittenWritesNone() throws {
        let (alice, groups, _) = try Self.fixture()
        let bob = try TestReplica("bob")
        let one = try alice.holdings(groups[0])
        let two = try alice.holdings(groups[1])
        // The store refuses the second part's first receipt: the first part is not kept either.
        try bob.replica.store.write {
            try $0.execute(
                rawSQL: """
                    CREATE TEMP TRIGGER refuse BEFORE INSERT ON receipts WHEN (SELECT count(*) FROM receipts) >= 3
                    BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
                    """)
        }
        let parts = [
            IngestPart(receipts: one.receipts, envelopes: one.envelopes),
            IngestPart(receipts: two.receipts, envelopes: two.envelopes),
        ]
        #expect(throws: (any Error).self) { try bob.replica.ingest(parts: parts) }
        #expect(try bob.replica.vector(of: groups[0]).committed == 0)
        try bob.replica.store.write { try $0.execute(rawSQL: "DROP TRIGGER refuse") }
        #expect(try bob.replica.ingest(parts: parts).map(\.committed) == [3, 3])
        #expect(try bob.replica.ingest(parts: []).isEmpty)
    }

    /// Signatures checked as they arrived (`checkAhead`) are not checked again, and only the
    /// exact receipts found valid are: a forgery of a checked payload is still refused, and a
    /// forgery checked ahead is not remembered.
    @Test func aCheckAheadCoversExactlyTheReceiptsItFoundValid() throws {
        let (alice, groups, forged) = try Self.fixture()
        let two = try alice.holdings(groups[1])
        let bob = try TestReplica("bob")
        bob.replica.checkAhead([forged])
        #expect(bob.replica.signaturesCheckedAhead.count == 0, "an invalid receipt is not remembered")
        bob.replica.checkAhead(two.receipts)
        #expect(bob.replica.signaturesCheckedAhead.count == two.receipts.count)
        // The forgery has the CID of a receipt checked ahead, not its signature: refused.
        let reports = try bob.replica.ingest(
            parts: [IngestPart(receipts: [forged] + two.receipts, envelopes: two.envelopes)])
        #expect(reports.map(\.invalid) == [[forged.cid]])
        #expect(reports.map(\.committed) == [two.receipts.count])
        #expect(bob.replica.signaturesCheckedAhead.count == 0, "each entry is used once")
        #expect(try bob.hashes(groups[1]) == alice.hashes(groups[1]))
    }
}
