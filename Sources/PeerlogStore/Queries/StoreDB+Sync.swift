import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// A stored receipt in the raw parts a sync message needs (no payload parsing).
package struct RawReceiptRow: Sendable {
    package let author: [UInt8]
    package let counter: UInt64
    package let seq: UInt64?
    package let payload: [UInt8]
    package let signature: [UInt8]
    /// The certificate container bytes.
    package let certificate: [UInt8]
}

/// A committed envelope with its receipt, raw, for committed catch-up.
package struct RawCommittedRow: Sendable {
    package let seq: UInt64
    package let envelopePayload: [UInt8]
    package let envelopeSignature: [UInt8]
    package let receipt: RawReceiptRow
}

/// Queries for the sync protocol. They read existing indexes only: envelopes by
/// (group_id, seq), receipts by UNIQUE(group_id, author, author_counter) and by cid.
extension StoreDB {
    /// Whether the store knows anything of the group (a receipt or a tombstone).
    package func holdsGroup(_ group: GroupID) throws -> Bool {
        try int("SELECT 1 FROM receipts WHERE group_id = ? LIMIT 1", [group.bytes.blob]) != nil
            || isTombstoned(group: group)
    }

    /// Committed envelopes with seq >= `fromSeq` joined to their receipts, in seq order.
    package func rawCommitted(group: GroupID, fromSeq: UInt64, limit: Int) throws -> [RawCommittedRow] {
        var rebuilt = EnvelopeRows()
        // By position: receiptColumns 0 to 5, the envelope's columns from 6, then 16 to 18.
        return try runRows(
            """
            SELECT \(StoreDB.receiptColumns), \(EnvelopeRows.columns(cid: "r.cid")), r.payload, r.signature, c.encoded AS certificate
            FROM envelopes e JOIN receipts r ON r.id = e.receipt_id JOIN certificates c ON c.id = r.certificate
            \(EnvelopeRows.join)
            WHERE e.group_id = ? AND e.seq >= ? ORDER BY e.seq LIMIT ?
            """, .group(group), .int(fromSeq.sql), .int(Int64(limit))
        ) { row in
            let seq = row.uint(6)
            let envelope = try rebuilt.parts(row, at: 6)
            return RawCommittedRow(
                seq: seq, envelopePayload: envelope.payload, envelopeSignature: envelope.signature,
                receipt: try Self.rawReceipt(row, seq: seq, payloadAt: 16))
        }
    }

    /// Committed envelopes alone (the receipts are known to be held), seq in `from...to`.
    package func rawEnvelopes(
        group: GroupID, from: UInt64, to: UInt64, limit: Int
    ) throws -> [(seq: UInt64, payload: [UInt8], signature: [UInt8])] {
        var rebuilt = EnvelopeRows()
        return try rows(
            """
            SELECT \(EnvelopeRows.columns) FROM envelopes e \(EnvelopeRows.join)
            WHERE e.group_id = ? AND e.seq BETWEEN ? AND ? ORDER BY e.seq LIMIT ?
            """,
            [group.bytes.blob, from.sql, to.sql, limit]
        ).map {
            let envelope = try rebuilt.parts($0)
            return (UInt64(sql: $0["e_seq"]), envelope.payload, envelope.signature)
        }
    }

    /// One author's receipts with counters in `from...to`, in counter order.
    package func rawReceipts(
        group: GroupID, author: DeviceID, from: UInt64, to: UInt64, limit: Int
    ) throws -> [RawReceiptRow] {
        try runRows(
            """
            SELECT \(StoreDB.receiptColumns), r.seq, r.payload, r.signature, c.encoded AS certificate
            FROM receipts r JOIN certificates c ON c.id = r.certificate
            WHERE r.group_id = ? AND r.author = (SELECT id FROM authors WHERE device = ?) AND r.author_counter BETWEEN ? AND ?
            ORDER BY r.author_counter LIMIT ?
            """, .group(group), .bytes(author.bytes), .int(from.sql), .int(to.sql), .int(Int64(limit))
        ) { try Self.rawReceipt($0, seq: $0.optionalInt(6).map(UInt64.init(sql:)), payloadAt: 7) }
    }

    /// Receipts of a group by CID (those held; others are skipped).
    package func rawReceipts(group: GroupID, cids: [CID]) throws -> [RawReceiptRow] {
        try cids.compactMap { cid in
            try runRow(
                """
                SELECT \(StoreDB.receiptColumns), r.seq, r.payload, r.signature, c.encoded AS certificate
                FROM receipts r JOIN certificates c ON c.id = r.certificate WHERE r.cid = ? AND r.group_id = ?
                """, .bytes(cid.bytes), .group(group)
            ) { try Self.rawReceipt($0, seq: $0.optionalInt(6).map(UInt64.init(sql:)), payloadAt: 7) }
        }
    }

    /// A row read by position that selects `receiptColumns` first (0 to 5: its author and counter
    /// are among them), then the payload, signature and certificate from column `payloadAt` on.
    static func rawReceipt(_ row: SteppedRow, seq: UInt64?, payloadAt p: Int32) throws -> RawReceiptRow {
        let columns = try storedColumns(row)
        return RawReceiptRow(
            author: columns.author, counter: columns.counter, seq: seq,
            payload: try Receipt.payload(stored: row.bytes(p), columns: columns), signature: row.bytes(p + 1),
            certificate: row.bytes(p + 2))
    }
}
