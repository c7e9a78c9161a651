import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel
import Synchronization

extension StoreDB {
    /// What a read of `receipts r` joined with its certificate (`certificates c ON c.id =
    /// r.certificate`) selects first, before the row's other columns, to put a stored payload back
    /// together (`Receipt.payload(stored:columns:)`, docs/PROTOCOL.md §10). The author and
    /// identity are the certificate's (a receipt is stored only if they are). First, so they are
    /// read by position: by name, each costs a search of the row's columns.
    static let receiptColumns = """
        r.hlc AS rp_hlc, r.type AS rp_type, r.group_id AS rp_group, c.device AS rp_author,
        r.author_counter AS rp_counter, c.identity AS rp_identity
        """

    /// The signed payload of a row that selects `receiptColumns` first, and `payload`.
    static func receiptPayload(_ row: Row) throws -> [UInt8] {
        try Receipt.payload(stored: (row["payload"] as Data).bytes, columns: try storedColumns(row))
    }

    /// The columns a row selected with `receiptColumns` first, read by position.
    static func storedColumns(_ row: Row) throws -> Receipt.StoredColumns {
        guard row.count > 6, row.columnNames.first == "rp_hlc" else {
            throw StoreError(.unknownStoredValue, "a stored receipt payload was read without its columns")
        }
        return Receipt.StoredColumns(
            hlc: UInt64(sql: row[0]), type: row[1], group: (row[2] as Data).bytes, author: (row[3] as Data).bytes,
            counter: UInt64(sql: row[4]), identity: (row[5] as Data).bytes)
    }

    /// The same, read by position from a row that selects `receiptColumns` first.
    static func storedColumns(_ row: SteppedRow) throws -> Receipt.StoredColumns {
        Receipt.StoredColumns(
            hlc: row.uint(0), type: row.text(1), group: row.bytes(2), author: row.bytes(3), counter: row.uint(4),
            identity: row.bytes(5))
    }

    /// The receipt of a row that selects `receiptColumns` first, then `payload`, `signature` and
    /// its certificate's bytes as `certificate` (joined from `certificates`).
    static func receipt(_ row: Row) throws -> Receipt {
        try Receipt(
            payload: receiptPayload(row), signature: (row["signature"] as Data).bytes,
            certificate: Decoded.certificates.value((row["certificate"] as Data).bytes))
    }
}

/// Receipts decoded from their rows or stored tentative (the pipeline keeps those at the end of
/// its settle), kept by CID for the reads of later transactions: a receipt stored tentative is
/// read back to be assigned a seq and again to be committed (on an elected sequencer's voters,
/// parsing its payload each time was about a tenth of their CPU). A read still puts the row's
/// payload together; it is handed the held receipt only when that payload, the row's signature
/// and its certificate are the receipt's own, so a hit is what parsing the row would return
/// (`Receipt(payload:signature:certificate:)` depends on those alone). Emptied when it reaches
/// `capacity`: a larger backlog is parsed again, as before.
package final class DecodedReceipts: Sendable {
    package static let shared = DecodedReceipts(capacity: 16_384)
    private let held: BoundedMemo<CID, Receipt>

    package init(capacity: Int) { held = BoundedMemo(capacity: capacity) }

    /// Receipts held now.
    package var count: Int { held.count }

    /// The receipt held under `cid`, if it is this payload, signature and certificate.
    package func receipt(
        _ cid: CID, payload: [UInt8], signature: [UInt8], certificate: DeviceCertificate
    ) -> Receipt? {
        guard let r = held[cid], r.payload == payload, r.signature == signature, r.certificate == certificate
        else { return nil }
        return r
    }

    /// Keeps `r` for later reads.
    package func keep(_ r: Receipt) { held.keep(r, for: r.cid) }
}
