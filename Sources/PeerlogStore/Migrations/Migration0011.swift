import GRDB

/// Offline limits (docs/PROTOCOL.md §10.5): what a local write checks must cost the same with
/// a thousand or a million receipts waiting, so it is kept, not counted.
///
/// `waiting_counts` holds, per (group, author), how many of its receipts have no seq; triggers on
/// `receipts` keep it (insert without a seq, a seq set or cleared, a delete without a seq),
/// whichever binary makes the change, and the migration fills it from the receipts already held.
/// `receipts_waiting` finds an author's oldest waiting receipt (by `received_at`) in one probe.
/// `offline_limits` holds this replica's own overrides of the limits for one group (local policy,
/// never sent; NULL: the replica's default).
enum Migration0011 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE waiting_counts (
                    group_id BLOB NOT NULL,
                    author BLOB NOT NULL,
                    count INTEGER NOT NULL,
                    PRIMARY KEY (group_id, author)
                ) WITHOUT ROWID;
                INSERT INTO waiting_counts (group_id, author, count)
                    SELECT group_id, author, COUNT(*) FROM receipts WHERE seq IS NULL GROUP BY group_id, author;
                CREATE INDEX receipts_waiting ON receipts(group_id, author, received_at) WHERE seq IS NULL;

                CREATE TRIGGER waiting_receipt_stored AFTER INSERT ON receipts WHEN NEW.seq IS NULL
                    BEGIN
                        INSERT INTO waiting_counts (group_id, author, count) VALUES (NEW.group_id, NEW.author, 1)
                            ON CONFLICT (group_id, author) DO UPDATE SET count = count + 1;
                    END;
                CREATE TRIGGER waiting_receipt_committed AFTER UPDATE OF seq ON receipts
                    WHEN OLD.seq IS NULL AND NEW.seq IS NOT NULL
                    BEGIN
                        UPDATE waiting_counts SET count = count - 1 WHERE group_id = OLD.group_id AND author = OLD.author;
                    END;
                CREATE TRIGGER waiting_receipt_uncommitted AFTER UPDATE OF seq ON receipts
                    WHEN OLD.seq IS NOT NULL AND NEW.seq IS NULL
                    BEGIN
                        INSERT INTO waiting_counts (group_id, author, count) VALUES (NEW.group_id, NEW.author, 1)
                            ON CONFLICT (group_id, author) DO UPDATE SET count = count + 1;
                    END;
                CREATE TRIGGER waiting_receipt_removed AFTER DELETE ON receipts WHEN OLD.seq IS NULL
                    BEGIN
                        UPDATE waiting_counts SET count = count - 1 WHERE group_id = OLD.group_id AND author = OLD.author;
                    END;

                CREATE TABLE offline_limits (
                    group_id BLOB PRIMARY KEY,
                    max_waiting INTEGER,
                    max_age INTEGER
                ) WITHOUT ROWID;
                """)
    }
}
