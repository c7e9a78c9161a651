import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// An item waiting in a queue (pending receipt or envelope) or dead.
public struct QueuedItem: Sendable {
    /// A receipt (waiting for its author's missing counters) or an envelope (waiting for a seq gap).
    public let kind: QueuedKind
    /// The receipt's content id (for an envelope: the receipt it commits).
    public let cid: CID
    /// The group it belongs to.
    public let group: GroupID
    /// The author counter of a receipt or the seq of an envelope; 0 for a dead letter.
    public let seqOrCounter: UInt64
    /// The author of a pending receipt; nil for envelopes and dead letters.
    public let author: DeviceID?
    /// The container bytes (§3.2 receipt or §3.4 envelope), as received.
    public let encoded: [UInt8]
    /// Why it waits (or, for a dead letter, why it gave up): one sentence for people.
    public let reason: String
    /// How many times it was retried and still could not proceed.
    public let retryCount: Int
    /// When it was first queued: the replica's clock, in milliseconds (Unix time unless a clock was injected).
    public let firstSeenAt: UInt64
    /// When it was last retried (for a dead letter: when it gave up), on the same clock.
    public let lastAttemptAt: UInt64
}

extension StoreDB {
    // MARK: Pending receipts (author counter gaps)

    package func insertPendingReceipt(_ r: Receipt, reason: String, at now: UInt64) throws {
        try execute(
            """
            INSERT OR IGNORE INTO pending_receipts (cid, group_id, author, author_counter, encoded, reason, first_seen_at, last_attempt_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                r.cid.bytes.blob, r.group.bytes.blob, r.author.bytes.blob, r.counter.sql, r.encoded.blob, reason,
                now.sql, now.sql,
            ])
    }

    package func pendingReceiptExists(_ cid: CID) throws -> Bool {
        try int("SELECT 1 FROM pending_receipts WHERE cid = ?", [cid.bytes.blob]) != nil
    }

    package func pendingReceiptCount(group: GroupID) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM pending_receipts WHERE group_id = ?", [group.bytes.blob]) ?? 0)
    }

    /// Pending receipts of one author with counters up to `counter`, lowest first, at most
    /// `limit`: one range of the `pending_receipts_author` index, however many wait beyond it.
    package func pendingReceipts(
        group: GroupID, author: DeviceID, upToCounter counter: UInt64, limit: Int
    ) throws -> [QueuedItem] {
        try rows(
            """
            SELECT * FROM pending_receipts WHERE group_id = ? AND author = ? AND author_counter <= ?
            ORDER BY author_counter, cid LIMIT ?
            """,
            [group.bytes.blob, author.bytes.blob, counter.sql, limit]
        ).map(pendingReceipt)
    }

    package func allPendingReceipts() throws -> [QueuedItem] {
        try rows("SELECT * FROM pending_receipts ORDER BY group_id, author, author_counter, cid").map(pendingReceipt)
    }

    /// (group, author) pairs with something pending.
    package func pendingAuthors() throws -> [(GroupID, DeviceID)] {
        try rows("SELECT DISTINCT group_id, author FROM pending_receipts ORDER BY group_id, author").map {
            (try GroupID(bytes: ($0["group_id"] as Data).bytes), try DeviceID(bytes: ($0["author"] as Data).bytes))
        }
    }

    package func deletePendingReceipt(_ cid: CID) throws {
        try execute("DELETE FROM pending_receipts WHERE cid = ?", [cid.bytes.blob])
    }

    package func notePendingReceiptAttempt(_ cid: CID, reason: String, at now: UInt64) throws {
        try execute(
            "UPDATE pending_receipts SET retry_count = retry_count + 1, last_attempt_at = ?, reason = ? WHERE cid = ?",
            [now.sql, reason, cid.bytes.blob])
    }

    private func pendingReceipt(_ row: Row) throws -> QueuedItem {
        QueuedItem(
            kind: .receipt, cid: try CID(bytes: (row["cid"] as Data).bytes),
            group: try GroupID(bytes: (row["group_id"] as Data).bytes),
            seqOrCounter: UInt64(sql: row["author_counter"]),
            author: try DeviceID(bytes: (row["author"] as Data).bytes),
            encoded: (row["encoded"] as Data).bytes, reason: row["reason"], retryCount: row["retry_count"],
            firstSeenAt: UInt64(sql: row["first_seen_at"]), lastAttemptAt: UInt64(sql: row["last_attempt_at"]))
    }

    // MARK: Pending envelopes (seq gaps, or waiting for their receipt)

    package func insertPendingEnvelope(_ e: Envelope, reason: String, at now: UInt64) throws {
        try execute(
            """
            INSERT OR IGNORE INTO pending_envelopes (group_id, seq, cid, encoded, reason, first_seen_at, last_attempt_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [e.group.bytes.blob, e.seq.sql, e.receipt.bytes.blob, e.encoded.blob, reason, now.sql, now.sql])
    }

    package func pendingEnvelopes(group: GroupID) throws -> [QueuedItem] {
        try rows("SELECT * FROM pending_envelopes WHERE group_id = ? ORDER BY seq, cid", [group.bytes.blob]).map(
            pendingEnvelope)
    }

    package func pendingEnvelopeCount(group: GroupID) throws -> Int {
        Int(try runInt("SELECT COUNT(*) FROM pending_envelopes WHERE group_id = ?", .bytes(group.bytes)) ?? 0)
    }

    package func allPendingEnvelopes() throws -> [QueuedItem] {
        try rows("SELECT * FROM pending_envelopes ORDER BY group_id, seq, cid").map(pendingEnvelope)
    }

    package func groupsWithPendingEnvelopes() throws -> [GroupID] {
        try rows("SELECT DISTINCT group_id FROM pending_envelopes ORDER BY group_id").map {
            try GroupID(bytes: ($0["group_id"] as Data).bytes)
        }
    }

    package func deletePendingEnvelope(group: GroupID, seq: UInt64, cid: CID) throws {
        try execute(
            "DELETE FROM pending_envelopes WHERE group_id = ? AND seq = ? AND cid = ?",
            [group.bytes.blob, seq.sql, cid.bytes.blob])
    }

    /// Records why an envelope still waits, without counting a retry (drains are not retries).
    package func updatePendingEnvelopeReason(group: GroupID, seq: UInt64, cid: CID, reason: String) throws {
        try execute(
            "UPDATE pending_envelopes SET reason = ? WHERE group_id = ? AND seq = ? AND cid = ?",
            [reason, group.bytes.blob, seq.sql, cid.bytes.blob])
    }

    /// Counts one retry pass for a waiting envelope.
    package func notePendingEnvelopeAttempt(
        group: GroupID, seq: UInt64, cid: CID, reason: String, at now: UInt64
    ) throws {
        try execute(
            "UPDATE pending_envelopes SET retry_count = retry_count + 1, last_attempt_at = ?, reason = ? WHERE group_id = ? AND seq = ? AND cid = ?",
            [now.sql, reason, group.bytes.blob, seq.sql, cid.bytes.blob])
    }

    private func pendingEnvelope(_ row: Row) throws -> QueuedItem {
        QueuedItem(
            kind: .envelope, cid: try CID(bytes: (row["cid"] as Data).bytes),
            group: try GroupID(bytes: (row["group_id"] as Data).bytes),
            seqOrCounter: UInt64(sql: row["seq"]), author: nil, encoded: (row["encoded"] as Data).bytes,
            reason: row["reason"],
            retryCount: row["retry_count"], firstSeenAt: UInt64(sql: row["first_seen_at"]),
            lastAttemptAt: UInt64(sql: row["last_attempt_at"]))
    }

    // MARK: Dead letters

    package func insertDeadLetter(_ item: QueuedItem, reason: String, at now: UInt64) throws {
        try execute(
            """
            INSERT INTO dead_letters (kind, cid, group_id, encoded, reason, retry_count, first_seen_at, died_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                item.kind.rawValue, item.cid.bytes.blob, item.group.bytes.blob, item.encoded.blob, reason,
                item.retryCount, item.firstSeenAt.sql, now.sql,
            ])
    }

    package func deadLetters() throws -> [QueuedItem] {
        try rows("SELECT * FROM dead_letters ORDER BY id").map { row in
            let text: String = row["kind"]
            guard let kind = QueuedKind(rawValue: text) else {
                throw StoreError(.unknownStoredValue, "a dead letter of unknown kind \"\(text)\"")
            }
            return QueuedItem(
                kind: kind, cid: try CID(bytes: (row["cid"] as Data).bytes),
                group: try GroupID(bytes: (row["group_id"] as Data).bytes),
                seqOrCounter: 0, author: nil, encoded: (row["encoded"] as Data).bytes, reason: row["reason"],
                retryCount: row["retry_count"],
                firstSeenAt: UInt64(sql: row["first_seen_at"]), lastAttemptAt: UInt64(sql: row["died_at"]))
        }
    }

    // MARK: Backfill guard

    /// When a request for (group, kind, subject, from) was last made, if ever.
    package func backfillRequestedAt(
        group: GroupID, kind: BackfillKind, subject: [UInt8], from: UInt64
    ) throws -> UInt64? {
        try int(
            "SELECT requested_at FROM backfill_requests WHERE group_id = ? AND kind = ? AND subject = ? AND range_from = ?",
            [group.bytes.blob, kind.rawValue, subject.blob, from.sql]
        ).map(UInt64.init(sql:))
    }

    package func noteBackfillRequest(
        group: GroupID, kind: BackfillKind, subject: [UInt8], from: UInt64, to: UInt64, at now: UInt64
    ) throws {
        try execute(
            "INSERT OR REPLACE INTO backfill_requests (group_id, kind, subject, range_from, range_to, requested_at) VALUES (?, ?, ?, ?, ?, ?)",
            [group.bytes.blob, kind.rawValue, subject.blob, from.sql, to.sql, now.sql])
    }

    /// Forgets requests whose ranges are now satisfied (called after progress).
    package func clearBackfillRequests(group: GroupID, kind: BackfillKind, subject: [UInt8], upTo: UInt64) throws {
        try execute(
            "DELETE FROM backfill_requests WHERE group_id = ? AND kind = ? AND subject = ? AND range_to <= ?",
            [group.bytes.blob, kind.rawValue, subject.blob, upTo.sql])
    }
}
