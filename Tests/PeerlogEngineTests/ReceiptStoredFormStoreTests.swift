import PeerlogCrypto
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// docs/PROTOCOL.md §10: a receipt's row keeps its payload without the fields its columns hold
/// (its parents, then its body), and every read serves the payload byte for byte as signed.
struct ReceiptStoredFormStoreTests {
    /// Rows holding the stored form (a CBOR array first), and all the receipts' payload bytes.
    private func stored(_ r: TestReplica) throws -> (storedForm: Int, rows: Int, bytes: Int) {
        try r.replica.store.read { db in
            (
                try db.count(
                    rawSQL: "SELECT COUNT(*) FROM receipts WHERE substr(payload, 1, 1) BETWEEN x'80' AND x'9f'"),
                try db.count(rawSQL: "SELECT COUNT(*) FROM receipts"),
                try db.count(rawSQL: "SELECT SUM(length(payload)) FROM receipts")
            )
        }
    }

    @Test func payloadsAreStoredWithoutTheirColumnsAndServedAsSigned() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try groupWith(owner: owner, members: [reader])
        try owner.replica.appendBatch((0..<50).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        let h = try owner.holdings(group)
        try owner.send(group, to: reader)
        let signed = h.receipts.reduce(0) { $0 + $1.payload.count }
        for r in [owner, reader] {
            let s = try stored(r)
            // Every row, group operations included, and each at least 100 bytes smaller.
            #expect(s.storedForm == s.rows && s.rows == h.receipts.count)
            #expect(s.bytes < signed - 100 * s.rows)
            #expect(try r.holdings(group).receipts.map(\.encoded) == h.receipts.map(\.encoded))
        }
        #expect(try reader.hashes(group) == owner.hashes(group))
        #expect(
            try reader.replica.log(of: group, view: .committed).map(\.receipt.payload)
                == owner.replica.log(of: group, view: .committed).map(\.receipt.payload))
    }

    /// A store written before the stored form holds each payload whole: it reads and serves
    /// those rows as before, beside rows in the stored form.
    @Test func payloadsStoredWholeAreServedAsBefore() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try groupWith(owner: owner, members: [reader])
        try owner.replica.appendBatch((0..<20).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        let h = try owner.holdings(group)
        try owner.replica.store.write { db in
            for r in h.receipts {
                try db.execute(
                    rawSQL:
                        "UPDATE receipts SET payload = x'\(hexString(r.payload))' WHERE cid = x'\(hexString(r.cid.bytes))'"
                )
            }
        }
        #expect(try stored(owner).storedForm == 0)
        try owner.replica.appendBatch([.entityPut(key: "after", value: .int(1))], to: group)
        #expect(try stored(owner).storedForm == 1)
        let all = try owner.holdings(group)
        #expect(all.receipts.prefix(h.receipts.count).map(\.encoded) == h.receipts.map(\.encoded))
        try owner.send(group, to: reader)
        #expect(try reader.holdings(group).receipts.map(\.encoded) == all.receipts.map(\.encoded))
        #expect(try reader.hashes(group) == owner.hashes(group))
    }
}

/// docs/PROTOCOL.md §10: a single envelope's row keeps `[sequencer, received_at]`, not its
/// payload, and every read serves the payload byte for byte as signed.
struct EnvelopeStoredFormStoreTests {
    /// Single envelopes' rows in the stored form, and all their payload bytes.
    private func stored(_ r: TestReplica) throws -> (storedForm: Int, single: Int, bytes: Int) {
        try r.replica.store.read { db in
            (
                try db.count(
                    rawSQL:
                        "SELECT COUNT(*) FROM envelopes WHERE run_id IS NULL AND substr(payload, 1, 1) = x'82'"),
                try db.count(rawSQL: "SELECT COUNT(*) FROM envelopes WHERE run_id IS NULL"),
                try db.count(rawSQL: "SELECT IFNULL(SUM(length(payload)), 0) FROM envelopes WHERE run_id IS NULL")
            )
        }
    }

    @Test func singleEnvelopesAreStoredShortAndServedAsSigned() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try groupWith(owner: owner, members: [reader])
        for i in 0..<10 { try owner.put(group, "k\(i)", Int64(i)) }
        let h = try owner.holdings(group)
        try owner.send(group, to: reader)
        for r in [owner, reader] {
            let s = try stored(r)
            #expect(s.single >= 10 && s.storedForm == s.single)
            #expect(s.bytes <= 44 * s.single, "about 42 bytes a row, not a 150-byte payload")
            #expect(try r.holdings(group).envelopes.map(\.encoded) == h.envelopes.map(\.encoded))
        }
        #expect(try reader.hashes(group) == owner.hashes(group))
    }

    /// A store written before the stored form holds each payload whole: it reads and serves
    /// those rows as before, beside rows in the stored form.
    @Test func payloadsStoredWholeAreServedAsBefore() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try groupWith(owner: owner, members: [reader])
        for i in 0..<5 { try owner.put(group, "k\(i)", Int64(i)) }
        let h = try owner.holdings(group)
        try owner.replica.store.write { db in
            for e in h.envelopes where e.run == nil {
                try db.execute(
                    rawSQL: "UPDATE envelopes SET payload = x'\(hexString(e.payload))' WHERE seq = \(e.seq)")
            }
        }
        #expect(try stored(owner).storedForm == 0)
        try owner.put(group, "after", 1)
        #expect(try stored(owner).storedForm == 1)
        let all = try owner.holdings(group)
        #expect(all.envelopes.prefix(h.envelopes.count).map(\.encoded) == h.envelopes.map(\.encoded))
        try owner.send(group, to: reader)
        #expect(try reader.holdings(group).envelopes.map(\.encoded) == all.envelopes.map(\.encoded))
        #expect(try reader.hashes(group) == owner.hashes(group))
    }
}
