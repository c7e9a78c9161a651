import GRDB

/// Group encryption (docs/PROTOCOL.md §22): `epoch_keys` holds the epoch keys this device opened,
/// each sealed at rest under a key derived from the device's X25519 key (never in the clear);
/// `sealed_waiting` the committed sealed receipts whose epoch key this device does not hold yet,
/// applied when the key arrives.
enum Migration0009 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE epoch_keys (
                    group_id BLOB NOT NULL,
                    key_id BLOB NOT NULL,
                    sealed BLOB NOT NULL,
                    added INTEGER NOT NULL,
                    PRIMARY KEY (group_id, key_id)
                ) WITHOUT ROWID;
                CREATE TABLE sealed_waiting (
                    group_id BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    key_id BLOB NOT NULL,
                    PRIMARY KEY (group_id, seq)
                ) WITHOUT ROWID;
                CREATE INDEX sealed_waiting_key ON sealed_waiting (group_id, key_id);
                """)
    }
}
