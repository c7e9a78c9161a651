import GRDB

/// Elected sequencing (docs/PROTOCOL.md §18): the assignment log of a voter, and the base
/// (the seq of the change that started the current elected authority) its state belongs to;
/// an index that makes "did a group operation change?" cheap for the node's poll.
enum Migration0002 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE sequencer_state ADD COLUMN base INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE sequencer_log (
                    group_id BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    cid BLOB NOT NULL,
                    term INTEGER NOT NULL,
                    PRIMARY KEY (group_id, seq)
                ) WITHOUT ROWID;
                CREATE INDEX receipts_group_operations ON receipts(id, seq) WHERE type LIKE 'group.%';
                """)
    }
}
