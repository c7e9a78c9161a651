import GRDB

/// A blob's format (docs/PROTOCOL.md §24.1): how its chunks are hashed and its id made. Blobs
/// stored before it have the first format (1, BLAKE2b); this version writes 2 (SHA-256).
enum Migration0015 {
    static func migrate(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE blobs ADD COLUMN format INTEGER NOT NULL DEFAULT 1")
    }
}
