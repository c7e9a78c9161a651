import Foundation
import GRDB
import PeerlogModel

/// Reads for a streaming export (docs/PROTOCOL.md §13): counts first, for the header, then
/// rows one at a time through SQLite cursors, so memory does not grow with the group.
extension StoreDB {
    /// Receipts held of `group` (evidence of equivocation not included).
    package func receiptCount(group: GroupID) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM receipts WHERE group_id = ?", [group.bytes.blob]) ?? 0)
    }

    /// Receipts held as evidence of equivocation for `group`.
    package func equivocationCount(group: GroupID) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM equivocations WHERE group_id = ?", [group.bytes.blob]) ?? 0)
    }

    /// Calls `body` with every receipt of `group` in (author device, counter) order, one row at a
    /// time: the authors in the order of their device keys (`authors`' unique index), each one's
    /// receipts by the `UNIQUE(group_id, author, author_counter)` index, so nothing is sorted.
    package func forEachReceipt(group: GroupID, _ body: (Receipt) throws -> Void) throws {
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT \(StoreDB.receiptColumns), r.id, r.cid, r.payload, r.signature, r.seq, c.encoded AS certificate
                    FROM authors a CROSS JOIN receipts r JOIN certificates c ON c.id = r.certificate
                    WHERE r.group_id = ? AND r.author = a.id ORDER BY a.device, r.author_counter
                    """),
            arguments: [group.bytes.blob])
        while let row = try rows.next() { try body(try Self.storedReceipt(row).receipt) }
    }

    /// Calls `body` with every equivocation evidence receipt of `group`, in (author, counter,
    /// CID) order, one row at a time.
    package func forEachEquivocation(group: GroupID, _ body: (Receipt) throws -> Void) throws {
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: "SELECT encoded FROM equivocations WHERE group_id = ? ORDER BY author, author_counter, cid"),
            arguments: [group.bytes.blob])
        while let row = try rows.next() { try body(try Receipt(encoded: (row["encoded"] as Data).bytes)) }
    }

    /// Calls `body` with the committed envelopes of `group` in seq order, one row at a time.
    package func forEachEnvelope(group: GroupID, _ body: (Envelope) throws -> Void) throws {
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT \(EnvelopeRows.columns) FROM envelopes e \(EnvelopeRows.join)
                    WHERE e.group_id = ? ORDER BY e.seq
                    """),
            arguments: [group.bytes.blob])
        var rebuilt = EnvelopeRows()
        while let row = try rows.next() { try body(try rebuilt.envelope(row)) }
    }
}

extension StoreDB {
    /// Committed envelopes held of `group`.
    package func envelopeCount(group: GroupID) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM envelopes WHERE group_id = ?", [group.bytes.blob]) ?? 0)
    }
}
