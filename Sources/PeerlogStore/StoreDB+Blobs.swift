import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// What this device holds of one blob (docs/PROTOCOL.md §24.4).
package struct StoredBlob: Sendable, Hashable {
    package let id: BlobID
    package let layout: BlobLayout
    /// The chunk hashes (32 bytes each), once fetched and checked against the id.
    package let hashes: [UInt8]?
    /// Bit `i` (byte `i / 8`, bit `i % 8`) is set when chunk `i` is written and verified.
    package let have: [UInt8]
    /// Chunks held.
    package let held: Int
    /// Every chunk held: the file is renamed to its final name.
    package let complete: Bool
    package let pinned: Bool

    package func holds(chunk index: Int) -> Bool {
        complete || (index / 8 < have.count && have[index / 8] & (1 << (index % 8)) != 0)
    }
    /// Plaintext bytes held (the last chunk may be shorter).
    package var heldBytes: UInt64 {
        complete ? layout.size : min(layout.size, UInt64(held) * UInt64(layout.chunkBytes))
    }
}

/// A current value that references a blob: its group, key and reference.
package struct BlobUse: Sendable, Hashable {
    package let group: GroupID
    package let key: String
    package let reference: BlobReference
}

extension StoreDB {
    package func blob(_ id: BlobID) throws -> StoredBlob? {
        try row("SELECT * FROM blobs WHERE id = ?", [id.bytes.blob]).map(Self.storedBlob)
    }

    package func blobs() throws -> [StoredBlob] {
        try rows("SELECT * FROM blobs ORDER BY added_at, id").map(Self.storedBlob)
    }

    static func storedBlob(_ r: Row) throws -> StoredBlob {
        let layout = try BlobLayout(
            size: UInt64(sql: r["size"]), chunkBytes: UInt32(r["chunk_bytes"] as Int64),
            sealed: r["sealed"] as Int64 != 0)
        return StoredBlob(
            id: try BlobID(bytes: (r["id"] as Data).bytes), layout: layout, hashes: (r["hashes"] as Data?)?.bytes,
            have: (r["have"] as Data).bytes, held: Int(r["held"] as Int64), complete: r["complete"] as Int64 != 0,
            pinned: r["pinned"] as Int64 != 0)
    }

    /// Records a blob this device starts to hold (nothing when it is known already).
    package func addBlob(_ id: BlobID, layout: BlobLayout, hashes: [UInt8]?, complete: Bool, now: UInt64) throws {
        try execute(
            """
            INSERT OR IGNORE INTO blobs (id, size, chunk_bytes, sealed, hashes, have, held, complete, added_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                id.bytes.blob, layout.size.sql, Int64(layout.chunkBytes), layout.sealed ? 1 : 0, hashes?.blob,
                Data(), complete ? layout.chunkCount : 0, complete ? 1 : 0, now.sql,
            ])
    }

    package func setBlobHashes(_ id: BlobID, _ hashes: [UInt8]) throws {
        try execute("UPDATE blobs SET hashes = ? WHERE id = ? AND hashes IS NULL", [hashes.blob, id.bytes.blob])
    }

    /// Marks chunk `index` written and verified; returns the chunks held now.
    @discardableResult
    package func markBlobChunk(_ id: BlobID, _ index: Int) throws -> Int {
        guard let b = try blob(id), !b.holds(chunk: index) else { return try blob(id)?.held ?? 0 }
        var have = b.have
        if have.count <= index / 8 { have += [UInt8](repeating: 0, count: index / 8 + 1 - have.count) }
        have[index / 8] |= 1 << (index % 8)
        try execute("UPDATE blobs SET have = ?, held = held + 1 WHERE id = ?", [have.blob, id.bytes.blob])
        return b.held + 1
    }

    package func completeBlob(_ id: BlobID) throws {
        try execute(
            "UPDATE blobs SET complete = 1, have = X'', held = ? WHERE id = ?",
            [
                Int64(try blob(id)?.layout.chunkCount ?? 0), id.bytes.blob,
            ])
    }

    package func setBlobPinned(_ id: BlobID, _ pinned: Bool) throws -> Bool {
        try execute("UPDATE blobs SET pinned = ? WHERE id = ?", [pinned ? 1 : 0, id.bytes.blob])
        return changes > 0
    }

    package func deleteBlob(_ id: BlobID) throws {
        try execute("DELETE FROM blobs WHERE id = ?", [id.bytes.blob])
        try execute("DELETE FROM blob_groups WHERE blob = ?", [id.bytes.blob])
    }

    /// The blob may be served to members of `group` (it was put or fetched for it).
    package func addBlobGroup(_ id: BlobID, _ group: GroupID) throws {
        try execute(
            "INSERT OR IGNORE INTO blob_groups (blob, group_id) VALUES (?, ?)", [id.bytes.blob, group.bytes.blob])
    }

    package func blobServes(_ id: BlobID, in group: GroupID) throws -> Bool {
        try int("SELECT 1 FROM blob_groups WHERE blob = ? AND group_id = ?", [id.bytes.blob, group.bytes.blob]) != nil
    }

    /// Current values that reference a blob this device holds nothing of, at most `limit`.
    package func blobsWanted(limit: Int) throws -> [BlobUse] {
        try rows(
            """
            SELECT r.group_id, r.key, r.value FROM blob_refs r LEFT JOIN blobs b ON b.id = r.blob
                WHERE b.id IS NULL LIMIT ?
            """, [limit]
        ).compactMap(Self.blobUse)
    }

    /// Blobs not held whole, with a group each is fetched for (put, asked for, announced).
    package func incompleteBlobs(limit: Int) throws -> [(blob: StoredBlob, group: GroupID)] {
        try rows(
            """
            SELECT b.*, (SELECT g.group_id FROM blob_groups g WHERE g.blob = b.id LIMIT 1) AS fetch_group
                FROM blobs b WHERE b.complete = 0 LIMIT ?
            """, [limit]
        ).compactMap { r in
            guard let group = (r["fetch_group"] as Data?).flatMap({ try? GroupID(bytes: $0.bytes) }) else { return nil }
            return (try Self.storedBlob(r), group)
        }
    }

    /// Whole blobs held for `group`.
    package func wholeBlobs(for group: GroupID) throws -> [StoredBlob] {
        try rows(
            "SELECT b.* FROM blob_groups g JOIN blobs b ON b.id = g.blob WHERE g.group_id = ? AND b.complete = 1",
            [group.bytes.blob]
        ).map(Self.storedBlob)
    }

    /// Current values that reference `id`.
    package func blobUses(_ id: BlobID) throws -> [BlobUse] {
        try rows("SELECT group_id, key, value FROM blob_refs WHERE blob = ?", [id.bytes.blob]).compactMap(Self.blobUse)
    }

    /// Whole blobs held that no current value references and that are not pinned (one being
    /// fetched is never among them), with the groups each is kept for.
    package func unreferencedBlobs() throws -> [(blob: StoredBlob, groups: [GroupID])] {
        try rows(
            """
            SELECT * FROM blobs b WHERE pinned = 0 AND complete = 1
                AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.blob = b.id)
            """
        ).map { r in
            let blob = try Self.storedBlob(r)
            let groups = try rows("SELECT group_id FROM blob_groups WHERE blob = ?", [blob.id.bytes.blob]).map {
                try GroupID(bytes: ($0["group_id"] as Data).bytes)
            }
            return (blob, groups)
        }
    }

    static func blobUse(_ r: Row) throws -> BlobUse? {
        guard let value = try? CBORDecoder().decode((r["value"] as Data).bytes),
            let reference = BlobReference(value: value)
        else { return nil }
        return BlobUse(group: try GroupID(bytes: (r["group_id"] as Data).bytes), key: r["key"], reference: reference)
    }
}
