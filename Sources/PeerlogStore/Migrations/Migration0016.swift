import GRDB

/// Overlay steps of `entity.write` receipts (docs/PROTOCOL.md §11.1): such a step changes
/// several keys and its outcome depends on their values, so a group holding one repairs its
/// view incrementally only for writes joining at the end, and rebuilds it otherwise.
enum Migration0016 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE overlay_steps ADD COLUMN merge INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX overlay_steps_merges ON overlay_steps(group_id) WHERE merge = 1;
                """)
    }
}
