import GRDB

/// Logs with a floor (docs/PROTOCOL.md §23): `snapshots` holds a group's committed state at a
/// seq (content-addressed) with its anchor (the envelope and receipt at that seq); `group_floors` the seq below which this replica holds no complete
/// log (it started from a snapshot there, or pruned below it), with `floor_authors` the author
/// counters that count as held below it; `group_log_settings` per group the snapshot interval
/// (NULL: the replica's default) and whether superseded receipts are pruned (NULL: not). `entities_cid` lets compaction ask "is this receipt a current writer?" by index.
enum Migration0010 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE snapshots (
                    group_id BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    cid BLOB NOT NULL UNIQUE,
                    state_hash BLOB NOT NULL,
                    encoded BLOB NOT NULL,
                    anchor_envelope BLOB NOT NULL,
                    anchor_receipt BLOB NOT NULL,
                    made_at INTEGER NOT NULL,
                    PRIMARY KEY (group_id, seq)
                ) WITHOUT ROWID;
                CREATE TABLE group_floors (
                    group_id BLOB PRIMARY KEY,
                    seq INTEGER NOT NULL,
                    snapshot_cid BLOB NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE floor_authors (
                    group_id BLOB NOT NULL,
                    author BLOB NOT NULL,
                    counter INTEGER NOT NULL,
                    PRIMARY KEY (group_id, author)
                ) WITHOUT ROWID;
                CREATE TABLE group_log_settings (
                    group_id BLOB PRIMARY KEY,
                    snapshot_interval INTEGER,
                    retention_min_age_ms INTEGER
                ) WITHOUT ROWID;
                CREATE INDEX entities_cid ON entities (cid);
                """)
    }
}
