import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// A stored snapshot (docs/PROTOCOL.md §23.1) with its anchor: the envelope and receipt
/// containers at its seq.
package struct StoredSnapshot: Sendable {
    package let seq: UInt64
    package let cid: CID
    package let stateHash: [UInt8]
    package let encoded: [UInt8]
    package let anchorEnvelope: [UInt8]
    package let anchorReceipt: [UInt8]
    package let madeAt: UInt64

    package init(
        seq: UInt64, cid: CID, stateHash: [UInt8], encoded: [UInt8], anchorEnvelope: [UInt8], anchorReceipt: [UInt8],
        madeAt: UInt64
    ) {
        self.seq = seq
        self.cid = cid
        self.stateHash = stateHash
        self.encoded = encoded
        self.anchorEnvelope = anchorEnvelope
        self.anchorReceipt = anchorReceipt
        self.madeAt = madeAt
    }
}

extension StoreDB {
    package func insertSnapshot(group: GroupID, _ s: StoredSnapshot) throws {
        try execute(
            """
            INSERT OR IGNORE INTO snapshots (group_id, seq, cid, state_hash, encoded, anchor_envelope, anchor_receipt, made_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                group.bytes.blob, s.seq.sql, s.cid.bytes.blob, s.stateHash.blob, s.encoded.blob, s.anchorEnvelope.blob,
                s.anchorReceipt.blob, s.madeAt.sql,
            ])
    }

    /// The group's snapshots, newest first.
    package func snapshots(group: GroupID, limit: Int = .max) throws -> [StoredSnapshot] {
        try rows(
            "SELECT * FROM snapshots WHERE group_id = ? ORDER BY seq DESC LIMIT ?", [group.bytes.blob, limit]
        ).map(Self.storedSnapshot)
    }

    /// The group's snapshots without their bytes, newest first: what listing and choosing one
    /// need, so a compaction does not read every stored snapshot whole (each up to 4 MiB).
    package func snapshotSummaries(
        group: GroupID
    ) throws -> [(
        seq: UInt64, cid: CID, stateHash: [UInt8], bytes: Int, madeAt: UInt64
    )] {
        try rows(
            """
            SELECT seq, cid, state_hash, length(encoded) AS bytes, made_at FROM snapshots
            WHERE group_id = ? ORDER BY seq DESC
            """, [group.bytes.blob]
        ).map {
            (
                UInt64(sql: $0["seq"]), try CID(bytes: ($0["cid"] as Data).bytes), ($0["state_hash"] as Data).bytes,
                $0["bytes"], UInt64(sql: $0["made_at"])
            )
        }
    }

    package func snapshot(group: GroupID, seq: UInt64) throws -> StoredSnapshot? {
        try row("SELECT * FROM snapshots WHERE group_id = ? AND seq = ?", [group.bytes.blob, seq.sql])
            .map(Self.storedSnapshot)
    }

    /// Drops the group's snapshots below `seq` (the floor's stays: it is at `seq`).
    package func deleteSnapshots(group: GroupID, below seq: UInt64) throws {
        try execute("DELETE FROM snapshots WHERE group_id = ? AND seq < ?", [group.bytes.blob, seq.sql])
    }

    package func deleteSnapshot(group: GroupID, seq: UInt64) throws {
        try execute("DELETE FROM snapshots WHERE group_id = ? AND seq = ?", [group.bytes.blob, seq.sql])
    }

    /// The committed mark as the `groups` row holds it (written once per transaction in `settle`).
    package func storedCommittedSeq(group: GroupID) throws -> UInt64 {
        UInt64(sql: try int("SELECT committed_seq FROM groups WHERE group_id = ?", [group.bytes.blob]) ?? 0)
    }

    /// The seq of the group's newest snapshot (0: none).
    package func latestSnapshotSeq(group: GroupID) throws -> UInt64 {
        UInt64(sql: try int("SELECT MAX(seq) FROM snapshots WHERE group_id = ?", [group.bytes.blob]) ?? 0)
    }

    static func storedSnapshot(_ row: Row) throws -> StoredSnapshot {
        StoredSnapshot(
            seq: UInt64(sql: row["seq"]), cid: try CID(bytes: (row["cid"] as Data).bytes),
            stateHash: (row["state_hash"] as Data).bytes, encoded: (row["encoded"] as Data).bytes,
            anchorEnvelope: (row["anchor_envelope"] as Data).bytes,
            anchorReceipt: (row["anchor_receipt"] as Data).bytes,
            madeAt: UInt64(sql: row["made_at"]))
    }

    // MARK: Floors

    /// The seq below which this replica holds no complete log, and the snapshot it rests on.
    package func floor(group: GroupID) throws -> (seq: UInt64, snapshot: CID)? {
        try runRow("SELECT seq, snapshot_cid FROM group_floors WHERE group_id = ?", .group(group)) {
            ($0.uint(0), try CID(bytes: $0.bytes(1)))
        }
    }

    /// Raises the floor to `seq` with the author counters held below it (a counter never drops).
    package func setFloor(group: GroupID, seq: UInt64, snapshot: CID, authors: [(DeviceID, UInt64)]) throws {
        try execute(
            "INSERT OR REPLACE INTO group_floors (group_id, seq, snapshot_cid) VALUES (?, ?, ?)",
            [group.bytes.blob, seq.sql, snapshot.bytes.blob])
        for (author, counter) in authors {
            try execute(
                """
                INSERT INTO floor_authors (group_id, author, counter) VALUES (?, ?, ?)
                ON CONFLICT(group_id, author) DO UPDATE SET counter = MAX(counter, excluded.counter)
                """, [group.bytes.blob, author.bytes.blob, counter.sql])
        }
    }

    // MARK: Retention

    /// The group's retention setting: nil when off, else the age (ms) after which a snapshot is
    /// a watermark even if a peer has not acknowledged it.
    package func retention(group: GroupID) throws -> UInt64? {
        try int("SELECT retention_min_age_ms FROM group_log_settings WHERE group_id = ?", [group.bytes.blob])
            .map(UInt64.init(sql:))
    }

    package func setRetention(group: GroupID, minAgeMillis: UInt64?) throws {
        try execute(
            """
            INSERT INTO group_log_settings (group_id, retention_min_age_ms) VALUES (?, ?)
            ON CONFLICT(group_id) DO UPDATE SET retention_min_age_ms = excluded.retention_min_age_ms
            """, [group.bytes.blob, minAgeMillis?.sql])
    }

    /// The group's own snapshot interval (nil: the replica's default).
    package func snapshotInterval(group: GroupID) throws -> UInt64? {
        try int("SELECT snapshot_interval FROM group_log_settings WHERE group_id = ?", [group.bytes.blob])
            .map(UInt64.init(sql:))
    }

    package func setSnapshotInterval(group: GroupID, _ interval: UInt64?) throws {
        try execute(
            """
            INSERT INTO group_log_settings (group_id, snapshot_interval) VALUES (?, ?)
            ON CONFLICT(group_id) DO UPDATE SET snapshot_interval = excluded.snapshot_interval
            """, [group.bytes.blob, interval?.sql])
    }

    /// The lowest committed mark any peer last reported for the group (nil: no peer has).
    package func lowestPeerCommitted(group: GroupID) throws -> UInt64? {
        try int(
            "SELECT MIN(counter) FROM peer_vectors WHERE group_id = ? AND author = x''", [group.bytes.blob]
        ).map(UInt64.init(sql:))
    }

    /// Per author, the highest counter among the group's receipts committed at seqs `from...to`
    /// (by the envelopes' seq index: the cost follows the range, not the log).
    package func committedAuthorCounters(group: GroupID, from: UInt64, to: UInt64) throws -> [(DeviceID, UInt64)] {
        try rows(
            """
            SELECT a.device AS author, c FROM (
                SELECT r.author AS number, MAX(r.author_counter) AS c FROM envelopes e JOIN receipts r ON r.id = e.receipt_id
                WHERE e.group_id = ? AND e.seq BETWEEN ? AND ? GROUP BY r.author
            ) JOIN authors a ON a.id = number
            """, [group.bytes.blob, from.sql, to.sql]
        ).map { (try DeviceID(bytes: ($0["author"] as Data).bytes), UInt64(sql: $0["c"])) }
    }

    /// The author counters held below the floor (`floor_authors`).
    package func floorAuthors(group: GroupID) throws -> [(DeviceID, UInt64)] {
        try rows("SELECT author, counter FROM floor_authors WHERE group_id = ?", [group.bytes.blob]).map {
            (try DeviceID(bytes: ($0["author"] as Data).bytes), UInt64(sql: $0["counter"]))
        }
    }

    /// Deletes the group's committed receipts below seq `below` that no view needs: entity
    /// operations (any type but `group.*`) that are not the writer of a current entity, not a
    /// head, and not waiting for an epoch key; with their envelopes and parent links.
    /// Returns how many receipts went.
    package func pruneSuperseded(group: GroupID, below: UInt64) throws -> Int {
        try execute("CREATE TEMP TABLE IF NOT EXISTS prune_ids (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL)")
        try execute("DELETE FROM prune_ids")
        try execute(
            """
            INSERT INTO prune_ids (id, seq)
            SELECT r.id, e.seq FROM envelopes e JOIN receipts r ON r.id = e.receipt_id
            WHERE e.group_id = ?1 AND e.seq < ?2 AND r.type NOT LIKE 'group.%'
              AND r.cid NOT IN (SELECT cid FROM entities WHERE group_id = ?1)
              AND NOT EXISTS (SELECT 1 FROM heads h WHERE h.group_id = ?1 AND h.receipt_id = r.id)
              AND NOT EXISTS (SELECT 1 FROM sealed_waiting w WHERE w.group_id = ?1 AND w.seq = e.seq)
            """, [group.bytes.blob, below.sql])
        let n = Int(try int("SELECT COUNT(*) FROM prune_ids") ?? 0)
        guard n > 0 else { return 0 }
        try deleteParentLinks(where: "r.id IN (SELECT id FROM prune_ids)")
        try execute(
            "DELETE FROM envelopes WHERE group_id = ? AND seq IN (SELECT seq FROM prune_ids)", [group.bytes.blob])
        // A run with no row left goes too; one with some keeps its leaves for them (§10).
        try execute(
            """
            DELETE FROM envelope_runs WHERE group_id = ?1 AND first_seq < ?2 AND NOT EXISTS (
                SELECT 1 FROM envelopes e WHERE e.group_id = ?1 AND e.run_id = envelope_runs.id
                  AND e.seq BETWEEN envelope_runs.first_seq AND envelope_runs.first_seq + envelope_runs.count - 1)
            """, [group.bytes.blob, below.sql])
        try execute("DELETE FROM receipts WHERE id IN (SELECT id FROM prune_ids)")
        try execute("DELETE FROM prune_ids")
        return n
    }

    /// What `pruneSuperseded(group:below:)` would delete now: how many receipts, and about how
    /// many bytes of pages (payload, signature, envelope and row overhead) it would change.
    package func pruneEstimate(group: GroupID, below: UInt64) throws -> (count: Int, bytes: Int) {
        let row = try self.row(
            """
            SELECT COUNT(*) AS n, COALESCE(SUM(length(r.payload) + length(r.signature) + 400), 0) AS bytes
            FROM envelopes e JOIN receipts r ON r.id = e.receipt_id
            WHERE e.group_id = ?1 AND e.seq < ?2 AND r.type NOT LIKE 'group.%'
              AND r.cid NOT IN (SELECT cid FROM entities WHERE group_id = ?1)
            """, [group.bytes.blob, below.sql])
        return (Int(row?["n"] as Int64? ?? 0), Int(row?["bytes"] as Int64? ?? 0))
    }

    /// Receipts of `type` committed at or below `seq`, with their envelope containers, in seq order.
    package func committedReceipts(
        group: GroupID, type: String, through seq: UInt64
    ) throws -> [(receipt: Receipt, envelope: [UInt8], seq: UInt64)] {
        var rebuilt = EnvelopeRows()
        return try rows(
            """
            SELECT \(StoreDB.receiptColumns), r.payload, r.signature, c.encoded AS certificate, \(EnvelopeRows.columns(cid: "r.cid"))
            FROM receipts r JOIN envelopes e ON e.receipt_id = r.id JOIN certificates c ON c.id = r.certificate
            \(EnvelopeRows.join)
            WHERE r.type LIKE 'group.%' AND r.group_id = ? AND r.type = ? AND r.seq IS NOT NULL AND r.seq <= ?
            ORDER BY r.seq
            """, [group.bytes.blob, type, seq.sql]
        ).map { row in
            (try StoreDB.receipt(row), try rebuilt.envelope(row).encoded, UInt64(sql: row["e_seq"]))
        }
    }

    /// Deletes the group's tentative receipts of `author` with counters at or below `counter`:
    /// a snapshot says they were committed below its seq (their effect is in it).
    package func deleteTentativeReceipts(group: GroupID, author: DeviceID, through counter: UInt64) throws -> Int {
        let ids = try rows(
            """
            SELECT id FROM receipts
            WHERE group_id = ? AND author = (SELECT id FROM authors WHERE device = ?) AND author_counter <= ? AND seq IS NULL
            """,
            [group.bytes.blob, author.bytes.blob, counter.sql]
        ).map { $0["id"] as Int64 }
        for id in ids {
            try execute("DELETE FROM heads WHERE receipt_id = ?", [id])
            try deleteParentLinks(where: "r.id = ?", [id])
            try execute("DELETE FROM receipts WHERE id = ?", [id])
        }
        return ids.count
    }
}
