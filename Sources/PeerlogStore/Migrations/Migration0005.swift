import GRDB

/// The change log (docs/PROTOCOL.md §10.4): one row per change an app sees, written in the
/// transaction that makes the change, whichever process makes it. The row id is the cursor a
/// consumer resumes from; rows older than the retention window are pruned. Pruning never
/// deletes the newest row, so ids never repeat without AUTOINCREMENT's extra write per row.
enum Migration0005 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE change_log (
                    id INTEGER PRIMARY KEY,
                    group_id BLOB NOT NULL,
                    kind TEXT NOT NULL,
                    key TEXT,
                    old_value BLOB,
                    new_value BLOB,
                    flags INTEGER NOT NULL DEFAULT 0,
                    first_seq INTEGER,
                    last_seq INTEGER,
                    cid BLOB,
                    reason TEXT,
                    at INTEGER NOT NULL
                );
                """)
    }
}
