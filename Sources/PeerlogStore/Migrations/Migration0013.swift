import GRDB

/// Blobs (docs/PROTOCOL.md §24): what this device holds of each blob (its chunk hashes once
/// verified, a bitmap of the chunks written), the groups it may serve each one to, and an index
/// of the current values that reference one, kept by triggers so a write pays nothing in Swift.
enum Migration0013 {
    /// `a1 6c "peerlog.blob"`: how every blob reference value (a one-key map) begins. Its inner
    /// map's first key is `"id"` (the shortest), so the id's 32 bytes start at byte 21 (1-based:
    /// 14 prefix bytes, the inner map's head, `62 69 64`, `58 20`).
    static let referencePrefix = "X'A16C706565726C6F672E626C6F62'"

    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE blobs (
                    id BLOB PRIMARY KEY,
                    size INTEGER NOT NULL,
                    chunk_bytes INTEGER NOT NULL,
                    sealed INTEGER NOT NULL,
                    hashes BLOB,
                    have BLOB NOT NULL,
                    held INTEGER NOT NULL DEFAULT 0,
                    complete INTEGER NOT NULL DEFAULT 0,
                    pinned INTEGER NOT NULL DEFAULT 0,
                    added_at INTEGER NOT NULL
                ) WITHOUT ROWID;

                CREATE TABLE blob_groups (
                    blob BLOB NOT NULL,
                    group_id BLOB NOT NULL,
                    PRIMARY KEY(blob, group_id)
                ) WITHOUT ROWID;

                CREATE TABLE blob_refs (
                    group_id BLOB NOT NULL,
                    key TEXT NOT NULL,
                    blob BLOB NOT NULL,
                    value BLOB NOT NULL,
                    PRIMARY KEY(group_id, key)
                ) WITHOUT ROWID;
                CREATE INDEX blob_refs_blob ON blob_refs(blob);

                CREATE TRIGGER entities_blob_ref AFTER INSERT ON entities
                    WHEN substr(NEW.value, 1, 14) = \(referencePrefix)
                BEGIN
                    INSERT OR REPLACE INTO blob_refs (group_id, key, blob, value)
                        VALUES (NEW.group_id, NEW.key, substr(NEW.value, 21, 32), NEW.value);
                END;
                CREATE TRIGGER entities_no_blob_ref AFTER INSERT ON entities
                    WHEN substr(NEW.value, 1, 14) <> \(referencePrefix)
                BEGIN
                    DELETE FROM blob_refs WHERE group_id = NEW.group_id AND key = NEW.key;
                END;
                CREATE TRIGGER entities_blob_ref_gone AFTER DELETE ON entities
                BEGIN
                    DELETE FROM blob_refs WHERE group_id = OLD.group_id AND key = OLD.key;
                END;
                """)
    }
}
