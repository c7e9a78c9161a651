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
    /// Put or imported here (never evicted), not fetched.
    package let local: Bool
    /// Evicted from the cache: fetched again only when a reader asks.
    package let evicted: Bool

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
        guard let format = UInt8(exactly: r["format"] as Int64).flatMap(BlobFormat.init(rawValue:)) else {
            throw StoreError(
                .unknownStoredValue, "blob format \(r["format"] as Int64) is not one this version reads (1, 2)")
        }
        let layout = try BlobLayout(
            size: UInt64(sql: r["size"]), chunkBytes: UInt32(r["chunk_bytes"] as Int64),
            sealed: r["sealed"] as Int64 != 0, format: format)
        return StoredBlob(
            id: try BlobID(bytes: (r["id"] as Data).bytes), layout: layout, hashes: (r["hashes"] as Data?)?.bytes,
            have: (r["have"] as Data).bytes, held: Int(r["held"] as Int64), complete: r["complete"] as Int64 != 0,
            pinned: r["pinned"] as Int64 != 0, local: r["local"] as Int64 != 0, evicted: r["evicted"] as Int64 != 0)
    }

    /// Records a blob this device starts to fetch (nothing when it is known already).
    package func addBlob(_ id: BlobID, layout: BlobLayout, now: UInt64) throws {
        try execute(
            """
            INSERT OR IGNORE INTO blobs (id, size, chunk_bytes, sealed, format, have, added_at, used_at)
                VALUES (?, ?, ?, ?, ?, X'', ?, ?)
            """,
            [
                id.bytes.blob, layout.size.sql, Int64(layout.chunkBytes), layout.sealed ? 1 : 0,
                Int64(layout.format.rawValue), now.sql, now.sql,
            ])
    }

    /// Records a blob put or imported here whole: this device's own (never evicted), used now;
    /// also when a fetch of it had started or it had been evicted.
    package func addLocalBlob(_ id: BlobID, layout: BlobLayout, hashes: [UInt8], now: UInt64) throws {
        try addBlob(id, layout: layout, now: now)
        try execute(
            """
            UPDATE blobs SET hashes = ?, complete = 1, have = X'', held = ?, local = 1, evicted = 0, used_at = ?
                WHERE id = ?
            """, [hashes.blob, Int64(layout.chunkCount), now.sql, id.bytes.blob])
    }

    /// The blob holds a snapshot sent or received as a blob (§23.3): never announced to a relay.
    package func markSnapshotBlob(_ id: BlobID) throws {
        try execute("UPDATE blobs SET snapshot = 1 WHERE id = ?", [id.bytes.blob])
    }

    /// A reader asked for the blob: fetched again if it was evicted.
    package func unevictBlob(_ id: BlobID) throws {
        try execute("UPDATE blobs SET evicted = 0 WHERE id = ? AND evicted = 1", [id.bytes.blob])
    }

    /// The blob was read, put or fetched now (the cache evicts the least recently used first).
    package func touchBlob(_ id: BlobID, now: UInt64) throws {
        try execute("UPDATE blobs SET used_at = ? WHERE id = ? AND used_at < ?", [now.sql, id.bytes.blob, now.sql])
    }

    /// Marks the blobs no value references, committed or tentative, as unreferenced since `now`
    /// (kept when marked before), and clears the mark of those referenced again.
    package func markUnreferencedBlobs(now: UInt64) throws {
        let tentative = """
            SELECT substr(value, 21, 32) FROM overlay_entities
                WHERE value IS NOT NULL AND substr(value, 1, 14) = \(Migration0013.referencePrefix)
            """
        try execute(
            """
            UPDATE blobs SET unreferenced_since = NULL WHERE unreferenced_since IS NOT NULL
                AND (EXISTS (SELECT 1 FROM blob_refs r WHERE r.blob = blobs.id) OR id IN (\(tentative)))
            """)
        try execute(
            """
            UPDATE blobs SET unreferenced_since = ? WHERE unreferenced_since IS NULL
                AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.blob = blobs.id) AND id NOT IN (\(tentative))
            """, [now.sql])
    }

    /// Whole blobs unpinned, unreferenced since `unreferencedBy` or earlier and not used since
    /// `usedBy`, each with the groups it was kept for.
    package func collectableBlobs(
        unreferencedBy: UInt64, usedBy: UInt64
    ) throws -> [(
        blob: StoredBlob, groups: [GroupID]
    )] {
        try withGroups(
            rows(
                """
                SELECT * FROM blobs WHERE pinned = 0 AND complete = 1 AND unreferenced_since <= ? AND used_at <= ?
                """, [unreferencedBy.sql, usedBy.sql]))
    }

    /// Bytes of the whole blobs held here.
    package func wholeBlobBytes() throws -> UInt64 {
        UInt64(sql: try int("SELECT IFNULL(SUM(size), 0) FROM blobs WHERE complete = 1") ?? 0)
    }

    /// Bytes of the whole blobs fetched here (the cache; blobs put here are not in it).
    package func cachedBlobBytes() throws -> UInt64 {
        UInt64(sql: try int("SELECT IFNULL(SUM(size), 0) FROM blobs WHERE complete = 1 AND local = 0") ?? 0)
    }

    /// Whole fetched blobs no pin keeps and not used since `usedBy`, least recently used first,
    /// each with its groups.
    package func evictionCandidates(usedBy: UInt64, limit: Int) throws -> [(blob: StoredBlob, groups: [GroupID])] {
        try withGroups(
            rows(
                """
                SELECT * FROM blobs WHERE complete = 1 AND local = 0 AND pinned = 0 AND used_at <= ?
                    ORDER BY used_at, id LIMIT ?
                """, [usedBy.sql, limit]))
    }

    /// The blob's file is gone from the cache: its row stays (so the values that reference it do
    /// not fetch it again) until a reader asks for it.
    package func evictBlob(_ id: BlobID) throws {
        try execute(
            """
            UPDATE blobs SET evicted = 1, complete = 0, held = 0, have = X'', unreferenced_since = NULL
                WHERE id = ?
            """, [id.bytes.blob])
    }

    private func withGroups(_ rows: [Row]) throws -> [(blob: StoredBlob, groups: [GroupID])] {
        try rows.map { r in
            let blob = try Self.storedBlob(r)
            return (blob, try blobGroups(blob.id))
        }
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

    /// The groups the blob was put or fetched for.
    package func blobGroups(_ id: BlobID) throws -> [GroupID] {
        try rows("SELECT group_id FROM blob_groups WHERE blob = ? ORDER BY group_id", [id.bytes.blob]).map {
            try GroupID(bytes: ($0["group_id"] as Data).bytes)
        }
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
                FROM blobs b WHERE b.complete = 0 AND b.evicted = 0 LIMIT ?
            """, [limit]
        ).compactMap { r in
            guard let group = (r["fetch_group"] as Data?).flatMap({ try? GroupID(bytes: $0.bytes) }) else { return nil }
            return (try Self.storedBlob(r), group)
        }
    }

    /// Whole blobs held for `group` (to tell its relay), snapshots sent as blobs left out.
    package func wholeBlobs(for group: GroupID) throws -> [StoredBlob] {
        try rows(
            """
            SELECT b.* FROM blob_groups g JOIN blobs b ON b.id = g.blob
                WHERE g.group_id = ? AND b.complete = 1 AND b.snapshot = 0
            """,
            [group.bytes.blob]
        ).map(Self.storedBlob)
    }

    /// Current values that reference `id`.
    package func blobUses(_ id: BlobID) throws -> [BlobUse] {
        try rows("SELECT group_id, key, value FROM blob_refs WHERE blob = ?", [id.bytes.blob]).compactMap(Self.blobUse)
    }

    /// Whole blobs held that no current value references and that are not pinned (one being
    /// fetched is never among them), with the groups each is kept for.
    static func blobUse(_ r: Row) throws -> BlobUse? {
        guard let value = try? CBORDecoder().decode((r["value"] as Data).bytes),
            let reference = BlobReference(value: value)
        else { return nil }
        return BlobUse(group: try GroupID(bytes: (r["group_id"] as Data).bytes), key: r["key"], reference: reference)
    }
}
