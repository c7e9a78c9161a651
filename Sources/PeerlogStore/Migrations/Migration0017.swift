import GRDB

/// The group-operation stamp kept, not counted (docs/PROTOCOL.md §10): a node reads it every
/// 250 ms to learn whether membership or an authority may have changed, and counting the
/// `group.*` receipts made that read grow with the groups held (a relay of 10,000 groups spent
/// two thirds of its idle time on it). `group_operation_events` has one row whose `count` the
/// triggers raise whenever a `group.*` receipt is stored, gets or loses a seq, or is removed,
/// whichever binary makes the change.
enum Migration0017 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE group_operation_events (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    count INTEGER NOT NULL
                );
                INSERT INTO group_operation_events (id, count) VALUES (1, 0);

                CREATE TRIGGER group_operation_stored AFTER INSERT ON receipts WHEN NEW.type LIKE 'group.%'
                    BEGIN
                        UPDATE group_operation_events SET count = count + 1 WHERE id = 1;
                    END;
                CREATE TRIGGER group_operation_sequenced AFTER UPDATE OF seq ON receipts
                    WHEN NEW.type LIKE 'group.%' AND OLD.seq IS NOT NEW.seq
                    BEGIN
                        UPDATE group_operation_events SET count = count + 1 WHERE id = 1;
                    END;
                CREATE TRIGGER group_operation_removed AFTER DELETE ON receipts WHEN OLD.type LIKE 'group.%'
                    BEGIN
                        UPDATE group_operation_events SET count = count + 1 WHERE id = 1;
                    END;
                """)
    }
}
