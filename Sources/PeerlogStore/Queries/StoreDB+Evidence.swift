import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

extension StoreDB {
    // MARK: Equivocation evidence

    package func insertEquivocation(_ r: Receipt, at now: UInt64) throws {
        try execute(
            "INSERT OR IGNORE INTO equivocations (cid, group_id, author, author_counter, encoded, detected_at) VALUES (?, ?, ?, ?, ?, ?)",
            [r.cid.bytes.blob, r.group.bytes.blob, r.author.bytes.blob, r.counter.sql, r.encoded.blob, now.sql])
    }

    package func equivocation(_ cid: CID) throws -> Receipt? {
        try row("SELECT encoded FROM equivocations WHERE cid = ?", [cid.bytes.blob]).map {
            try Receipt(encoded: ($0["encoded"] as Data).bytes)
        }
    }

    package func deleteEquivocation(_ cid: CID) throws {
        try execute("DELETE FROM equivocations WHERE cid = ?", [cid.bytes.blob])
    }

    package func equivocations(group: GroupID) throws -> [Receipt] {
        try rows(
            "SELECT encoded FROM equivocations WHERE group_id = ? ORDER BY author, author_counter, cid",
            [group.bytes.blob]
        ).map { try Receipt(encoded: ($0["encoded"] as Data).bytes) }
    }

    /// Flags an author from `counter` on (keeps the lowest counter if already flagged).
    package func flagAuthor(group: GroupID, author: DeviceID, fromCounter counter: UInt64, at now: UInt64) throws {
        try execute(
            """
            INSERT INTO flagged_authors (group_id, author, from_counter, detected_at) VALUES (?, ?, ?, ?)
            ON CONFLICT(group_id, author) DO UPDATE SET from_counter = MIN(from_counter, excluded.from_counter)
            """, [group.bytes.blob, author.bytes.blob, counter.sql, now.sql])
    }

    /// Flagged authors of a group and the counter from which they equivocated.
    package func flaggedAuthors(group: GroupID) throws -> [DeviceID: UInt64] {
        var out = [DeviceID: UInt64]()
        for row in try rows("SELECT author, from_counter FROM flagged_authors WHERE group_id = ?", [group.bytes.blob]) {
            out[try DeviceID(bytes: (row["author"] as Data).bytes)] = UInt64(sql: row["from_counter"])
        }
        return out
    }

    // MARK: Sequencer refusals

    package func insertRefusal(_ cid: CID, group: GroupID, reason: String, at now: UInt64) throws {
        try execute(
            "INSERT OR IGNORE INTO sequencer_refusals (cid, group_id, reason, refused_at) VALUES (?, ?, ?, ?)",
            [cid.bytes.blob, group.bytes.blob, reason, now.sql])
    }

    package func refusals(group: GroupID) throws -> [CID: String] {
        var out = [CID: String]()
        for row in try rows("SELECT cid, reason FROM sequencer_refusals WHERE group_id = ?", [group.bytes.blob]) {
            out[try CID(bytes: (row["cid"] as Data).bytes)] = row["reason"]
        }
        return out
    }

    // MARK: Per-peer sequence vectors (what a peer said it holds)

    /// Records a peer's vector entry; `author` nil means the committed high-water mark.
    package func setPeerVector(
        peer: DeviceID, group: GroupID, author: DeviceID?, counter: UInt64, at now: UInt64
    ) throws {
        try execute(
            "INSERT OR REPLACE INTO peer_vectors (peer, group_id, author, counter, updated_at) VALUES (?, ?, ?, ?, ?)",
            [peer.bytes.blob, group.bytes.blob, (author?.bytes ?? []).blob, counter.sql, now.sql])
    }

    package func peerVector(peer: DeviceID, group: GroupID) throws -> (committed: UInt64, authors: [DeviceID: UInt64]) {
        var committed: UInt64 = 0
        var authors = [DeviceID: UInt64]()
        for row in try rows(
            "SELECT author, counter FROM peer_vectors WHERE peer = ? AND group_id = ?",
            [peer.bytes.blob, group.bytes.blob])
        {
            let author = (row["author"] as Data).bytes
            if author.isEmpty {
                committed = UInt64(sql: row["counter"])
            } else {
                authors[try DeviceID(bytes: author)] = UInt64(sql: row["counter"])
            }
        }
        return (committed, authors)
    }

    /// Replaces everything recorded for `peer` in `group` with the vector it just sent: its
    /// committed mark and one row per author it listed. One statement per author, so the cost
    /// follows the vector, not the log.
    package func replacePeerVector(
        peer: DeviceID, group: GroupID, committed: UInt64, authors: [DeviceID: UInt64], at now: UInt64
    ) throws {
        try execute("DELETE FROM peer_vectors WHERE peer = ? AND group_id = ?", [peer.bytes.blob, group.bytes.blob])
        try setPeerVector(peer: peer, group: group, author: nil, counter: committed, at: now)
        for (author, counter) in authors {
            try setPeerVector(peer: peer, group: group, author: author, counter: counter, at: now)
        }
    }
}
