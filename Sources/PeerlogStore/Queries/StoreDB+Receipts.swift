import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// A receipt as the store holds it.
package struct StoredReceipt: Sendable {
    package let id: Int64
    package let receipt: Receipt
    package let seq: UInt64?
}

extension StoreDB {
    // MARK: Certificates (verified ones only: a row here means its signature was checked)

    package func certificateKnown(_ cid: CID) throws -> Bool {
        try int("SELECT 1 FROM certificates WHERE cid = ?", [cid.bytes.blob]) != nil
    }

    package func insertCertificate(_ c: DeviceCertificate) throws {
        try execute(
            "INSERT OR IGNORE INTO certificates (cid, identity, device, noise_key, name, created_at, encoded) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                c.cid.bytes.blob, c.identity.bytes.blob, c.device.bytes.blob, c.noiseKey.rawRepresentation.blob, c.name,
                c.createdAt.sql, c.encoded.blob,
            ])
    }

    /// Certificates of one device (a device may be re-certified with a new name).
    package func certificates(device: DeviceID) throws -> [DeviceCertificate] {
        try rows("SELECT encoded FROM certificates WHERE device = ? ORDER BY created_at", [device.bytes.blob]).map {
            try DeviceCertificate(encoded: ($0["encoded"] as Data).bytes)
        }
    }

    // MARK: Processed (replay protection)

    /// Whether the pipeline has nothing left to do for `cid`: the receipt is held, waits in the
    /// pending queue, or was finished with an outcome other than `invalid` (a CID remembered as
    /// invalid is checked again: the CID hashes the payload only, so a forgery that reuses a
    /// genuine payload must not lock out the genuine receipt). One statement (a second only for a
    /// processed CID, to read its outcome): ingest asks it once per receipt received, where three
    /// lookups cost three statement round trips.
    package func isKnownReceipt(_ cid: CID) throws -> Bool {
        // 2: stored or pending; 1: only processed, whose outcome decides (rare); 0: unknown.
        let known = try runInt(
            """
            SELECT 2 * (EXISTS(SELECT 1 FROM receipts WHERE cid = ?1) OR EXISTS(SELECT 1 FROM pending_receipts WHERE cid = ?1))
                + EXISTS(SELECT 1 FROM processed_receipts WHERE cid = ?1)
            """, .bytes(cid.bytes))
        switch known {
        case 2?, 3?: return true
        case 1?: return try processedOutcome(cid) != .invalid
        default: return false
        }
    }

    /// The outcome recorded for a CID the pipeline already finished with, if any.
    package func processedOutcome(_ cid: CID) throws -> ProcessedOutcome? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT outcome FROM processed_receipts WHERE cid = ?"), arguments: [cid.bytes.blob]
        )
        .map(Self.processedOutcome(stored:))
    }

    /// A `processed_receipts.outcome` as stored; one this version does not know is an error.
    private static func processedOutcome(stored text: String) throws -> ProcessedOutcome {
        guard let outcome = ProcessedOutcome(rawValue: text) else {
            throw StoreError(.unknownStoredValue, "a processed receipt with unknown outcome \"\(text)\"")
        }
        return outcome
    }

    /// The highest receipt row id (0 in an empty store): rows stored later have higher ids.
    package func lastReceiptRowID() throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT COALESCE(MAX(id), 0) FROM receipts")) ?? 0
    }

    package func markProcessed(
        _ cid: CID, group: GroupID, outcome: ProcessedOutcome, reason: String?, at now: UInt64
    ) throws {
        try execute(
            "INSERT OR REPLACE INTO processed_receipts (cid, group_id, outcome, reason, processed_at) VALUES (?, ?, ?, ?, ?)",
            [cid.bytes.blob, group.bytes.blob, outcome.rawValue, reason, now.sql])
    }

    /// A receipt whose signature or certificate does not verify: remembered, as evidence, with
    /// the author and identity it claims and the peer that sent it. The same CID arriving again
    /// is verified again (a genuine receipt may share a forgery's payload, hence its CID).
    package func markInvalid(
        _ cid: CID, group: GroupID, author: DeviceID, identity: IdentityID, peer: DeviceID?, reason: String,
        at now: UInt64
    ) throws {
        try execute(
            """
            INSERT OR REPLACE INTO processed_receipts (cid, group_id, outcome, reason, processed_at, author, identity, peer)
            VALUES (?, ?, 'invalid', ?, ?, ?, ?, ?)
            """,
            [
                cid.bytes.blob, group.bytes.blob, reason, now.sql, author.bytes.blob, identity.bytes.blob,
                peer?.bytes.blob,
            ])
    }

    /// Keeps the newest `perPeer` invalid receipts of `peer` (nil: those no peer sent, such as an
    /// import's) and the newest `total` of all; drops the rest. Returns how many went.
    @discardableResult
    package func trimInvalid(peer: DeviceID?, perPeer: Int, total: Int) throws -> Int {
        let peerClause = peer == nil ? "peer IS NULL" : "peer = ?1"
        let args: StatementArguments = peer.map { [$0.bytes.blob] } ?? []
        // Ordered by (processed_at, cid): one write stamps a whole batch with the same time.
        try execute(
            """
            DELETE FROM processed_receipts WHERE outcome = 'invalid' AND \(peerClause) AND (processed_at, cid) <= (
                SELECT processed_at, cid FROM processed_receipts WHERE outcome = 'invalid' AND \(peerClause)
                ORDER BY processed_at DESC, cid DESC LIMIT 1 OFFSET \(perPeer))
            """, args)
        var dropped = db.changesCount
        try execute(
            """
            DELETE FROM processed_receipts WHERE outcome = 'invalid' AND (processed_at, cid) <= (
                SELECT processed_at, cid FROM processed_receipts WHERE outcome = 'invalid'
                ORDER BY processed_at DESC, cid DESC LIMIT 1 OFFSET \(total))
            """)
        dropped += db.changesCount
        return dropped
    }

    /// The newest `limit` invalid receipts, newest first.
    package func invalidReceipts(limit: Int) throws -> [InvalidReceipt] {
        try rows(
            "SELECT * FROM processed_receipts WHERE outcome = 'invalid' ORDER BY processed_at DESC LIMIT ?", [limit]
        ).map { row in
            func id<T>(_ column: String, _ make: ([UInt8]) throws -> T) -> T? {
                (row[column] as Data?).flatMap { try? make($0.bytes) }
            }
            return InvalidReceipt(
                cid: try CID(bytes: (row["cid"] as Data).bytes),
                group: try GroupID(bytes: (row["group_id"] as Data).bytes),
                author: id("author", DeviceID.init(bytes:)), identity: id("identity", IdentityID.init(bytes:)),
                peer: id("peer", DeviceID.init(bytes:)), reason: row["reason"] ?? "",
                at: UInt64(sql: row["processed_at"]))
        }
    }

    // MARK: Receipts

    package func receiptExists(_ cid: CID) throws -> Bool {
        try int("SELECT 1 FROM receipts WHERE cid = ?", [cid.bytes.blob]) != nil
    }

    /// Highest author counter held for (group, author); counters are stored contiguously (above
    /// the group's floor, whose counters count as held: §23), so this is also the contiguous
    /// high-water mark. 0 when none.
    package func heldCounter(group: GroupID, author: DeviceID) throws -> UInt64 {
        UInt64(
            sql: try int(
                """
                SELECT MAX(c) FROM (SELECT MAX(author_counter) AS c FROM receipts
                                    WHERE group_id = ?1 AND author = (SELECT id FROM authors WHERE device = ?2)
                                    UNION ALL SELECT counter FROM floor_authors WHERE group_id = ?1 AND author = ?2)
                """, [group.bytes.blob, author.bytes.blob]) ?? 0)
    }

    /// The CID held at (group, author, counter).
    package func receiptCID(group: GroupID, author: DeviceID, counter: UInt64) throws -> CID? {
        guard
            let row = try row(
                """
                SELECT cid FROM receipts
                WHERE group_id = ? AND author = (SELECT id FROM authors WHERE device = ?) AND author_counter = ?
                """,
                [group.bytes.blob, author.bytes.blob, counter.sql])
        else { return nil }
        return try CID(bytes: (row["cid"] as Data).bytes)
    }

    /// Stores a verified receipt (its certificate must be stored first), its parent links, and
    /// maintains the group's heads. Returns the row id. The row names its author by number
    /// (`authors`, numbered here on first use) and its certificate by row id (§10).
    @discardableResult
    package func insertReceipt(_ r: Receipt, receivedAt: UInt64) throws -> Int64 {
        let group = Bound.group(r.group)
        let certificate = try certificateNumber(r.certificate.cid, of: r)
        try run(
            """
            INSERT INTO receipts (cid, group_id, author, author_counter, type, hlc, payload, signature, certificate, received_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            .bytes(r.cid.bytes), group, .int(try authorNumber(r.author)), .int(r.counter.sql), .text(r.type),
            .int(r.hlc.packed.sql), .bytes(r.storedPayload ?? r.payload), .bytes(r.signature), .int(certificate),
            .int(received(receivedAt)))
        let id = db.lastInsertedRowID
        for parent in r.parents {
            if let parentID = try runInt("SELECT id FROM receipts WHERE cid = ?", .bytes(parent.bytes)) {
                try run(
                    "INSERT OR IGNORE INTO receipt_parents (parent, receipt_id) VALUES (?, ?)", .int(parentID), .int(id)
                )
                try run("DELETE FROM heads WHERE group_id = ? AND receipt_id = ?", group, .int(parentID))
            } else {
                try run(
                    "INSERT OR IGNORE INTO receipt_parents_unstored (parent, receipt_id) VALUES (?, ?)",
                    .bytes(parent.bytes), .int(id))
            }
        }
        // A child that arrived first already names this receipt: its links now name this row, and
        // this receipt is not a head.
        if try runInt("SELECT 1 FROM receipt_parents_unstored WHERE parent = ? LIMIT 1", .bytes(r.cid.bytes)) != nil {
            try run(
                """
                INSERT OR IGNORE INTO receipt_parents (parent, receipt_id)
                SELECT ?, receipt_id FROM receipt_parents_unstored WHERE parent = ?
                """, .int(id), .bytes(r.cid.bytes))
            try run("DELETE FROM receipt_parents_unstored WHERE parent = ?", .bytes(r.cid.bytes))
        } else {
            try run("INSERT INTO heads (group_id, receipt_id) VALUES (?, ?)", group, .int(id))
        }
        return id
    }

    private func received(_ t: UInt64) -> Int64 { t.sql }

    /// The number `receipts` rows name `device` by, given on its first receipt and kept.
    private func authorNumber(_ device: DeviceID) throws -> Int64 {
        if let known = numbers.authors[device] { return known }
        let id: Int64
        if let found = try runInt("SELECT id FROM authors WHERE device = ?", .bytes(device.bytes)) {
            id = found
        } else {
            try run("INSERT INTO authors (device) VALUES (?)", .bytes(device.bytes))
            id = db.lastInsertedRowID
        }
        numbers.authors[device] = id
        return id
    }

    /// The row id of a stored certificate, which `r` names.
    private func certificateNumber(_ cid: CID, of r: Receipt) throws -> Int64 {
        if let known = numbers.certificates[cid] { return known }
        guard let id = try runInt("SELECT id FROM certificates WHERE cid = ?", .bytes(cid.bytes)) else {
            throw StoreError(.unknownStoredValue, "receipt \(r.cid) was stored before its certificate \(cid)")
        }
        numbers.certificates[cid] = id
        return id
    }

    /// The most recent heads of a group (by HLC, then CID), at most `limit`.
    package func heads(group: GroupID, limit: Int) throws -> [CID] {
        try rows(
            """
            SELECT r.cid FROM heads h JOIN receipts r ON r.id = h.receipt_id
            WHERE h.group_id = ? ORDER BY r.hlc DESC, r.cid DESC LIMIT ?
            """, [group.bytes.blob, limit]
        ).map { try CID(bytes: ($0["cid"] as Data).bytes) }
    }

    package func loadReceipt(_ cid: CID) throws -> StoredReceipt? {
        try runRow(Self.receiptSelect + " WHERE r.cid = ?", .bytes(cid.bytes)) {
            try Self.storedReceipt($0, known: [:])
        }
    }

    /// Receipts without an envelope, in (HLC, CID) order; the engine refines the order by parents.
    /// A receipt in `known` (by CID: one this transaction stored and still holds) is taken from
    /// there instead of being decoded again from its row.
    package func tentativeReceipts(group: GroupID, known: [CID: Receipt] = [:]) throws -> [StoredReceipt] {
        try runRows(
            Self.receiptSelect + " WHERE r.group_id = ? AND r.seq IS NULL ORDER BY r.hlc, r.cid", .group(group)
        ) { try Self.storedReceipt($0, known: known) }
    }

    /// The `limit` earliest tentative receipts by (HLC, CID) (an HLC is after its parents') that
    /// the local sequencer has not refused (`sequencer_refusals`): refused ones stay tentative,
    /// and however many gather at the front of the order, a sequencer's window still holds
    /// receipts it may assign.
    package func earliestUnrefusedTentativeReceipts(
        group: GroupID, limit: Int, known: [CID: Receipt] = [:]
    ) throws -> [StoredReceipt] {
        try runRows(
            Self.receiptSelect + """
                 WHERE r.group_id = ? AND r.seq IS NULL
                 AND NOT EXISTS (SELECT 1 FROM sequencer_refusals s WHERE s.cid = r.cid)
                 ORDER BY r.hlc, r.cid LIMIT ?
                """,
            .group(group), .int(Int64(limit))
        ) { try Self.storedReceipt($0, known: known) }
    }

    package func tentativeCount(group: GroupID) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM receipts WHERE group_id = ? AND seq IS NULL", [group.bytes.blob]) ?? 0)
    }

    /// Receipts of one author in counter order, from `fromCounter`, at most `limit`.
    package func receipts(group: GroupID, author: DeviceID, fromCounter: UInt64, limit: Int) throws -> [StoredReceipt] {
        try runRows(
            Self.receiptSelect
                + """
                 WHERE r.group_id = ? AND r.author = (SELECT id FROM authors WHERE device = ?) AND r.author_counter >= ?
                 ORDER BY r.author_counter LIMIT ?
                """,
            .group(group), .bytes(author.bytes), .int(fromCounter.sql), .int(Int64(limit))
        ) { try Self.storedReceipt($0, known: [:]) }
    }

    /// Every receipt of a group: committed ones in seq order, then tentative ones.
    package func allReceipts(group: GroupID) throws -> [StoredReceipt] {
        try runRows(
            Self.receiptSelect + " WHERE r.group_id = ? ORDER BY r.seq IS NULL, r.seq, c.device, r.author_counter",
            .group(group)
        ) { try Self.storedReceipt($0, known: [:]) }
    }

    /// Per-author contiguous counters held for a group.
    package func authorCounters(group: GroupID) throws -> [(DeviceID, UInt64)] {
        // One index seek per author, not a scan of the group's receipts: the recursive part
        // steps from each author to the next (SQLite does no skip-scan for GROUP BY), so a
        // vector costs O(authors · log n), however long the log (sync asks for it per message).
        try rows(
            """
            WITH RECURSIVE walk(author) AS (
                SELECT MIN(author) FROM receipts WHERE group_id = ?1
                UNION ALL
                SELECT (SELECT MIN(author) FROM receipts WHERE group_id = ?1 AND author > walk.author)
                FROM walk WHERE walk.author IS NOT NULL)
            SELECT author, MAX(c) AS c FROM (
                SELECT (SELECT device FROM authors a WHERE a.id = walk.author) AS author,
                       (SELECT MAX(author_counter) FROM receipts r WHERE r.group_id = ?1 AND r.author = walk.author) AS c
                FROM walk WHERE author IS NOT NULL
                UNION ALL SELECT author, counter FROM floor_authors WHERE group_id = ?1)
            GROUP BY author ORDER BY author
            """,
            [group.bytes.blob]
        ).map {
            (try DeviceID(bytes: ($0["author"] as Data).bytes), UInt64(sql: $0["c"]))
        }
    }

    package func setReceiptSeq(_ cid: CID, seq: UInt64) throws {
        try run("UPDATE receipts SET seq = ? WHERE cid = ?", .int(seq.sql), .bytes(cid.bytes))
    }

    /// Removes a receipt (used when an envelope commits the other half of an equivocation).
    package func deleteReceipt(_ cid: CID) throws {
        try execute("DELETE FROM heads WHERE receipt_id = (SELECT id FROM receipts WHERE cid = ?)", [cid.bytes.blob])
        try deleteParentLinks(where: "r.cid = ?", [cid.bytes.blob])
        try execute("DELETE FROM receipts WHERE cid = ?", [cid.bytes.blob])
    }

    /// Deletes the parent links of the receipts `condition` selects (on `receipts r`), before the
    /// receipts themselves go. Links are keyed by parent (migration 0019), so a receipt's own
    /// links are found from the parents its payload names. Links that name it as a parent stay
    /// with their children, by its CID: a receipt arriving again must not count as a head.
    /// A cursor, not an array: a compaction may select a large part of the log.
    func deleteParentLinks(where condition: String, _ arguments: StatementArguments = []) throws {
        let rows = try Row.fetchCursor(
            db, sql: "SELECT r.id, r.cid, r.payload FROM receipts r WHERE " + condition, arguments: arguments)
        while let row = try rows.next() {
            let id: Int64 = row["id"]
            let cid: Data = row["cid"]
            for parent in try Receipt.parents(stored: (row["payload"] as Data).bytes) {
                try execute(
                    "DELETE FROM receipt_parents WHERE parent = (SELECT id FROM receipts WHERE cid = ?) AND receipt_id = ?",
                    [parent.bytes.blob, id])
                try execute(
                    "DELETE FROM receipt_parents_unstored WHERE parent = ? AND receipt_id = ?", [parent.bytes.blob, id])
            }
            try execute(
                "INSERT OR IGNORE INTO receipt_parents_unstored (parent, receipt_id) SELECT ?, receipt_id FROM receipt_parents WHERE parent = ?",
                [cid, id])
            try execute("DELETE FROM receipt_parents WHERE parent = ?", [id])
        }
    }

    /// How far `receipt_parents` and `receipt_parents_unstored` are from exactly the links the
    /// stored receipts' payloads name: links missing, and stored links no payload names. Reads
    /// every receipt once with a cursor and looks each named link up by its key, so memory stays
    /// flat however large the store (`peerlog check`).
    package func parentLinkDifferences() throws -> (missing: Int, extra: Int) {
        var named = 0
        var found = 0
        let receipts = try Row.fetchCursor(db, sql: "SELECT id, payload FROM receipts")
        while let row = try receipts.next() {
            let id: Int64 = row["id"]
            for parent in try Receipt.parents(stored: (row["payload"] as Data).bytes) {
                named += 1
                let held = try int(
                    """
                    SELECT EXISTS (SELECT 1 FROM receipt_parents WHERE parent = (SELECT id FROM receipts WHERE cid = ?1) AND receipt_id = ?2)
                        OR EXISTS (SELECT 1 FROM receipt_parents_unstored WHERE parent = ?1 AND receipt_id = ?2)
                    """, [parent.bytes.blob, id])
                if held == 1 { found += 1 }
            }
        }
        let stored =
            try count(rawSQL: "SELECT COUNT(*) FROM receipt_parents")
            + count(rawSQL: "SELECT COUNT(*) FROM receipt_parents_unstored")
        return (named - found, stored - found)
    }

    /// Rows whose numbers name the wrong row (`peerlog check`, migrations 0021 and 0022):
    /// receipts whose author number is not their certificate's device (or whose certificate is
    /// gone), and envelopes whose receipt row is missing or holds another group or seq. Scans
    /// both tables once.
    package func rowReferenceDifferences() throws -> (receipts: Int, envelopes: Int) {
        (
            try count(
                rawSQL: """
                    SELECT COUNT(*) FROM receipts r LEFT JOIN certificates c ON c.id = r.certificate
                    LEFT JOIN authors a ON a.id = r.author WHERE c.id IS NULL OR a.device IS NOT c.device
                    """),
            try count(
                rawSQL: """
                    SELECT COUNT(*) FROM envelopes e LEFT JOIN receipts r ON r.id = e.receipt_id
                    WHERE r.id IS NULL OR r.group_id != e.group_id OR r.seq IS NOT e.seq
                    """)
        )
    }

    /// Group ids this store knows: created ones, and any with receipts.
    /// Whether `group` is among `knownGroups()`: three index probes, not a list of every group.
    package func knowsGroup(_ group: GroupID) throws -> Bool {
        try int(
            """
            SELECT EXISTS(SELECT 1 FROM groups WHERE group_id = ?1)
                OR EXISTS(SELECT 1 FROM receipts WHERE group_id = ?1 AND type = 'group.created')
                OR EXISTS(SELECT 1 FROM tombstones WHERE group_id = ?1)
            """, [group.bytes.blob]) == 1
    }

    package func knownGroups() throws -> [GroupID] {
        try rows(
            "SELECT group_id FROM groups UNION SELECT group_id FROM receipts WHERE type = 'group.created' UNION SELECT group_id FROM tombstones"
        ).map {
            try GroupID(bytes: ($0["group_id"] as Data).bytes)
        }
    }

    static let receiptSelect = """
        SELECT \(StoreDB.receiptColumns), r.id, r.cid, r.payload, r.signature, r.seq, c.encoded AS certificate FROM receipts r
        JOIN certificates c ON c.id = r.certificate
        """

    static func storedReceipt(_ row: Row) throws -> StoredReceipt {
        try storedReceipt(row, known: [:])
    }

    /// The row's receipt, from `known` when it holds the row's CID (the row's bytes are the
    /// receipt's payload, whose hash is its CID), else decoded.
    static func storedReceipt(_ row: Row, known: [CID: Receipt]) throws -> StoredReceipt {
        let receipt: Receipt
        if !known.isEmpty, let cid = try? CID(bytes: (row["cid"] as Data).bytes), let held = known[cid] {
            receipt = held
        } else {
            receipt = try StoreDB.receipt(row)
        }
        let seq: Int64? = row["seq"]
        return StoredReceipt(id: row["id"], receipt: receipt, seq: seq.map(UInt64.init(sql:)))
    }

    /// The same for a row of `receiptSelect` read by position: `receiptColumns` (0 to 5), then
    /// id, cid, payload, signature, seq and certificate (6 to 11).
    static func storedReceipt(_ row: SteppedRow, known: [CID: Receipt]) throws -> StoredReceipt {
        let receipt: Receipt
        if !known.isEmpty, let cid = try? CID(bytes: row.bytes(7)), let held = known[cid] {
            receipt = held
        } else {
            let payload = try Receipt.payload(stored: row.bytes(8), columns: try storedColumns(row))
            let signature = row.bytes(9)
            let certificate = try Decoded.certificates.value(row.bytes(11))
            if let cid = try? CID(bytes: row.bytes(7)),
                let held = DecodedReceipts.shared.receipt(
                    cid, payload: payload, signature: signature, certificate: certificate)
            {
                receipt = held
            } else {
                receipt = try Receipt(payload: payload, signature: signature, certificate: certificate)
                DecodedReceipts.shared.keep(receipt)
            }
        }
        return StoredReceipt(id: row.int(6), receipt: receipt, seq: row.optionalInt(10).map(UInt64.init(sql:)))
    }
}

extension StoreDB {
    /// The earliest tentative receipt of a group by (HLC, CID) among rows with id below `before`.
    package func firstTentative(group: GroupID, before: Int64) throws -> CID? {
        try runRow(
            "SELECT cid FROM receipts WHERE group_id = ? AND seq IS NULL AND id < ? ORDER BY hlc, cid LIMIT 1",
            .group(group), .int(before)
        ) { try CID(bytes: $0.bytes(0)) }
    }
}

extension StoreDB {
    /// The highest HLC among a group's heads (what a new receipt must follow).
    package func latestHeadHLC(group: GroupID) throws -> UInt64? {
        try int(
            "SELECT MAX(r.hlc) FROM heads h JOIN receipts r ON r.id = h.receipt_id WHERE h.group_id = ?",
            [group.bytes.blob]
        ).map(UInt64.init(sql:))
    }

    /// Committed receipts of a group in seq order, with each envelope's recorded outcome.
    package func committedLog(
        group: GroupID, fromSeq: UInt64 = 1, limit: Int = .max
    ) throws -> [(receipt: Receipt, seq: UInt64, rejected: String?)] {
        try rows(
            """
            SELECT \(StoreDB.receiptColumns), r.payload, r.signature, c.encoded AS certificate, e.seq, e.outcome, e.reason FROM envelopes e
            JOIN receipts r ON r.id = e.receipt_id JOIN certificates c ON c.id = r.certificate
            WHERE e.group_id = ? AND e.seq >= ? ORDER BY e.seq LIMIT ?
            """, [group.bytes.blob, fromSeq.sql, limit]
        ).map { row in
            let receipt = try StoreDB.receipt(row)
            let outcome: String = row["outcome"]
            return (
                receipt, UInt64(sql: row["seq"]), outcome == "applied" ? nil : (row["reason"] as String?) ?? "rejected"
            )
        }
    }
}

extension StoreDB {
    /// Whether `device` authored a tentative group.created for the group.
    package func hasTentativeCreation(group: GroupID, by device: DeviceID) throws -> Bool {
        try int(
            """
            SELECT 1 FROM receipts WHERE group_id = ? AND type = 'group.created'
            AND author = (SELECT id FROM authors WHERE device = ?) AND seq IS NULL LIMIT 1
            """,
            [group.bytes.blob, device.bytes.blob]) != nil
    }

    /// Which of these certificate CIDs are stored (and so already verified).
    package func knownCertificates(_ cids: Set<CID>) throws -> Set<CID> {
        var out = Set<CID>()
        for cid in cids where try certificateKnown(cid) { out.insert(cid) }
        return out
    }
}

/// A receipt refused because its signature or certificate does not verify (a forgery, or
/// corruption), as recorded: what it claims and who sent it.
public struct InvalidReceipt: Sendable, Equatable {
    /// The refused receipt's content id.
    public let cid: CID
    /// The group the receipt claims.
    public let group: GroupID
    /// The author device and identity the receipt claims (nil in rows older than migration 0003).
    public let author: DeviceID?
    /// The claimed author's identity (nil in rows older than migration 0003).
    public let identity: IdentityID?
    /// The peer that sent it (nil: imported from a file, or recorded before migration 0003).
    public let peer: DeviceID?
    /// Why verification failed: one sentence for people.
    public let reason: String
    /// When it was recorded: the replica's clock, in milliseconds (Unix time unless a clock was injected).
    public let at: UInt64
}
