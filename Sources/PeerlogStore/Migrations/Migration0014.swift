import GRDB

/// The blob cache (docs/PROTOCOL.md §24.6): whether a blob was put here (kept until it is
/// collected; never evicted) or fetched (evicted least recently used first when the home's blobs
/// outgrow the cache), when it was last used, since when no value references it (collected after
/// a grace period), whether it was evicted (not fetched again until a reader asks), and whether
/// it holds a snapshot sent as a blob (§23.3: never announced to a relay).
enum Migration0014 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE blobs ADD COLUMN local INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE blobs ADD COLUMN used_at INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE blobs ADD COLUMN unreferenced_since INTEGER;
                ALTER TABLE blobs ADD COLUMN evicted INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE blobs ADD COLUMN snapshot INTEGER NOT NULL DEFAULT 0;
                UPDATE blobs SET used_at = added_at, local = complete;
                """)
    }
}
