import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// A committed envelope with the outcome of applying its receipt at that position.
package struct StoredEnvelope: Sendable {
    package let envelope: Envelope
    /// "applied" or "rejected".
    package let outcome: String
    package let reason: String?
}

extension StoreDB {
    /// The committed high-water mark: the highest seq with an envelope (contiguous from 1, or
    /// from the group's floor, §23), or the floor itself when no envelope is above it.
    package func committedSeq(group: GroupID) throws -> UInt64 {
        UInt64(
            sql: try int(
                """
                SELECT MAX(s) FROM (SELECT MAX(seq) AS s FROM envelopes WHERE group_id = ?1
                                    UNION ALL SELECT seq FROM group_floors WHERE group_id = ?1)
                """, [group.bytes.blob]) ?? 0)
    }

    package func envelopeCID(group: GroupID, seq: UInt64) throws -> CID? {
        guard
            let row = try row(
                "SELECT r.cid FROM envelopes e JOIN receipts r ON r.id = e.receipt_id WHERE e.group_id = ? AND e.seq = ?",
                [group.bytes.blob, seq.sql])
        else { return nil }
        return try CID(bytes: (row["cid"] as Data).bytes)
    }

    /// The seq at which a CID is committed, if it is.
    package func committedSeq(of cid: CID) throws -> UInt64? {
        try int(
            "SELECT seq FROM envelopes WHERE receipt_id = (SELECT id FROM receipts WHERE cid = ?)", [cid.bytes.blob]
        ).map(UInt64.init(sql:))
    }

    /// An envelope row whose signed form (payload and signature) comes later in the same
    /// transaction, from `setEnvelopeForm` or `setRunForm`: a sequencer commits a pass seq by
    /// seq, then signs it once.
    package func insertUnsignedEnvelope(
        group: GroupID, seq: UInt64, cid: CID, term: UInt64, outcome: CommitOutcome, reason: String?
    ) throws {
        try run(
            """
            INSERT INTO envelopes (group_id, seq, receipt_id, term, payload, signature, outcome, reason)
            VALUES (?, ?, (SELECT id FROM receipts WHERE cid = ?), ?, x'', x'', ?, ?)
            """,
            .group(group), .int(seq.sql), .bytes(cid.bytes), .int(term.sql), .text(outcome.rawValue),
            .textOrNull(reason))
    }

    /// Fills in a single envelope's signed form in a row written by `insertUnsignedEnvelope`.
    package func setEnvelopeForm(_ e: Envelope) throws {
        try run(
            """
            UPDATE envelopes SET payload = ?, signature = ?
            WHERE group_id = ? AND seq = ? AND receipt_id = (SELECT id FROM receipts WHERE cid = ?)
            """,
            .bytes(e.storedSingle ?? e.payload), .bytes(e.signature), .group(e.group), .int(e.seq.sql),
            .bytes(e.receipt.bytes))
    }

    /// Committed envelopes with seq in `from...to`, in seq order.
    package func envelopes(group: GroupID, from: UInt64, to: UInt64) throws -> [StoredEnvelope] {
        var rebuilt = EnvelopeRows()
        return try rows(
            """
            SELECT \(EnvelopeRows.columns), e.outcome, e.reason FROM envelopes e \(EnvelopeRows.join)
            WHERE e.group_id = ? AND e.seq BETWEEN ? AND ? ORDER BY e.seq
            """,
            [group.bytes.blob, from.sql, to.sql]
        ).map { StoredEnvelope(envelope: try rebuilt.envelope($0), outcome: $0["outcome"], reason: $0["reason"]) }
    }
}

// MARK: - Committed state: groups, members, entities, tombstones

extension StoreDB {
    /// The committed group state blob (deterministic CBOR), if the group was created.
    package func groupStateBlob(group: GroupID) throws -> [UInt8]? {
        try runRow("SELECT state FROM groups WHERE group_id = ?", .group(group)) { $0.bytes(0) }
    }

    /// Saves the committed group state and its members view.
    package func saveGroupState(
        group: GroupID, blob: [UInt8], members: [(identity: [UInt8], role: String, status: String)], seq: UInt64,
        at now: UInt64
    ) throws {
        try execute(
            "INSERT OR REPLACE INTO groups (group_id, state, committed_seq, updated_at) VALUES (?, ?, ?, ?)",
            [group.bytes.blob, blob.blob, seq.sql, now.sql])
        for m in members {
            try execute(
                """
                INSERT INTO members (group_id, identity, role, status, since_seq) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(group_id, identity) DO UPDATE SET
                  since_seq = CASE WHEN role = excluded.role AND status = excluded.status THEN since_seq ELSE excluded.since_seq END,
                  role = excluded.role, status = excluded.status
                """, [group.bytes.blob, m.identity.blob, m.role, m.status, seq.sql])
        }
    }

    package func setGroupCommittedSeq(group: GroupID, seq: UInt64) throws {
        try execute("UPDATE groups SET committed_seq = ? WHERE group_id = ?", [seq.sql, group.bytes.blob])
    }

    /// The members view: (identity, role, status, since_seq), by identity.
    package func members(group: GroupID) throws -> [(identity: [UInt8], role: String, status: String, sinceSeq: UInt64)]
    {
        try rows(
            "SELECT identity, role, status, since_seq FROM members WHERE group_id = ? ORDER BY identity",
            [group.bytes.blob]
        ).map {
            (($0["identity"] as Data).bytes, $0["role"], $0["status"], UInt64(sql: $0["since_seq"]))
        }
    }

    package func entity(group: GroupID, key: String) throws -> (value: [UInt8], cid: CID, seq: UInt64)? {
        try runRow("SELECT value, cid, seq FROM entities WHERE group_id = ? AND key = ?", .group(group), .text(key)) {
            ($0.bytes(0), try CID(bytes: $0.bytes(1)), $0.uint(2))
        }
    }

    package func entities(group: GroupID) throws -> [(key: String, value: [UInt8], cid: CID, seq: UInt64)] {
        try rows("SELECT key, value, cid, seq FROM entities WHERE group_id = ? ORDER BY key", [group.bytes.blob]).map {
            ($0["key"], ($0["value"] as Data).bytes, try CID(bytes: ($0["cid"] as Data).bytes), UInt64(sql: $0["seq"]))
        }
    }

    package func putEntity(group: GroupID, key: String, value: [UInt8], cid: CID, seq: UInt64) throws {
        try run(
            "INSERT OR REPLACE INTO entities (group_id, key, value, cid, seq) VALUES (?, ?, ?, ?, ?)",
            .bytes(group.bytes), .text(key), .bytes(value), .bytes(cid.bytes), .int(seq.sql))
    }

    package func deleteEntity(group: GroupID, key: String) throws {
        try execute("DELETE FROM entities WHERE group_id = ? AND key = ?", [group.bytes.blob, key])
    }

    package func deleteAllEntities(group: GroupID) throws {
        try execute("DELETE FROM entities WHERE group_id = ?", [group.bytes.blob])
    }

    package func isTombstoned(group: GroupID) throws -> Bool {
        try runInt("SELECT 1 FROM tombstones WHERE group_id = ?", .bytes(group.bytes)) != nil
    }

    package func insertTombstone(group: GroupID, cid: CID, seq: UInt64, at now: UInt64) throws {
        try execute(
            "INSERT OR IGNORE INTO tombstones (group_id, cid, seq, deleted_at) VALUES (?, ?, ?, ?)",
            [group.bytes.blob, cid.bytes.blob, seq.sql, now.sql])
    }
}

extension StoreDB {
    /// A held receipt's group and, once committed, its seq and outcome (`reason` when rejected).
    package func receiptOutcome(_ cid: CID) throws -> (group: GroupID, seq: UInt64?, rejected: String?)? {
        guard
            let row = try row(
                """
                SELECT r.group_id, e.seq, e.outcome, e.reason FROM receipts r LEFT JOIN envelopes e ON e.receipt_id = r.id
                WHERE r.cid = ?
                """, [cid.bytes.blob])
        else { return nil }
        let group = try GroupID(bytes: (row["group_id"] as Data).bytes)
        guard let seq = (row["seq"] as Int64?).map(UInt64.init(sql:)) else { return (group, nil, nil) }
        let outcome: String = row["outcome"]
        return (group, seq, outcome == CommitOutcome.applied.rawValue ? nil : (row["reason"] as String?) ?? "rejected")
    }
}
