import GRDB

/// A receipt's writer stored as two small numbers (docs/PROTOCOL.md §10): every receipt row held
/// its author's 32-byte device key, its identity's 32-byte key and its certificate's 36-byte CID,
/// and the `(group_id, author, author_counter)` index the device key again: about 130 of the
/// 1,227 bytes a small committed write took. The certificate names both keys (a receipt is
/// refused unless its author and identity are its certificate's), so a row now keeps the
/// certificate's row id and its author's number in `authors`, the index keeps the number, and
/// reads take the keys from the joined certificate. `certificates` is rebuilt with a row id.
enum Migration0021 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE authors (id INTEGER PRIMARY KEY, device BLOB NOT NULL UNIQUE);
                INSERT INTO authors (device) SELECT DISTINCT author FROM receipts ORDER BY author;
                CREATE TABLE certificates_numbered (
                    id INTEGER PRIMARY KEY,
                    cid BLOB NOT NULL UNIQUE,
                    identity BLOB NOT NULL,
                    device BLOB NOT NULL,
                    noise_key BLOB NOT NULL,
                    name TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    encoded BLOB NOT NULL
                );
                INSERT INTO certificates_numbered (cid, identity, device, noise_key, name, created_at, encoded)
                    SELECT cid, identity, device, noise_key, name, created_at, encoded FROM certificates
                    ORDER BY created_at, cid;
                CREATE TABLE receipts_numbered (
                    id INTEGER PRIMARY KEY,
                    cid BLOB NOT NULL UNIQUE,
                    group_id BLOB NOT NULL,
                    author INTEGER NOT NULL REFERENCES authors(id),
                    author_counter INTEGER NOT NULL,
                    type TEXT NOT NULL,
                    hlc INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    signature BLOB NOT NULL,
                    certificate INTEGER NOT NULL REFERENCES certificates(id),
                    received_at INTEGER NOT NULL,
                    seq INTEGER,
                    UNIQUE(group_id, author, author_counter)
                );
                INSERT INTO receipts_numbered
                    SELECT r.id, r.cid, r.group_id, a.id, r.author_counter, r.type, r.hlc, r.payload, r.signature,
                           c.id, r.received_at, r.seq
                    FROM receipts r JOIN authors a ON a.device = r.author
                    JOIN certificates_numbered c ON c.cid = r.certificate_cid;
                DROP TABLE receipts;
                DROP TABLE certificates;
                ALTER TABLE certificates_numbered RENAME TO certificates;
                ALTER TABLE receipts_numbered RENAME TO receipts;

                CREATE INDEX receipts_tentative ON receipts(group_id, hlc, cid) WHERE seq IS NULL;
                CREATE INDEX receipts_created ON receipts(group_id) WHERE type = 'group.created';
                CREATE INDEX receipts_group_operations ON receipts(id, seq) WHERE type LIKE 'group.%';
                CREATE INDEX receipts_sequencer_changes ON receipts(group_id, seq)
                    WHERE type = 'group.sequencer_changed' AND seq IS NOT NULL;
                CREATE INDEX receipts_waiting ON receipts(group_id, author, received_at) WHERE seq IS NULL;

                CREATE TRIGGER overlay_receipt_stored AFTER INSERT ON receipts
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
                CREATE TRIGGER overlay_receipt_committed AFTER UPDATE OF seq ON receipts
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
                CREATE TRIGGER overlay_receipt_removed AFTER DELETE ON receipts
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = OLD.group_id; END;

                CREATE TRIGGER waiting_receipt_stored AFTER INSERT ON receipts WHEN NEW.seq IS NULL
                    BEGIN
                        INSERT INTO waiting_counts (group_id, author, count)
                            VALUES (NEW.group_id, (SELECT device FROM authors WHERE id = NEW.author), 1)
                            ON CONFLICT (group_id, author) DO UPDATE SET count = count + 1;
                    END;
                CREATE TRIGGER waiting_receipt_committed AFTER UPDATE OF seq ON receipts
                    WHEN OLD.seq IS NULL AND NEW.seq IS NOT NULL
                    BEGIN
                        UPDATE waiting_counts SET count = count - 1
                            WHERE group_id = OLD.group_id AND author = (SELECT device FROM authors WHERE id = OLD.author);
                    END;
                CREATE TRIGGER waiting_receipt_uncommitted AFTER UPDATE OF seq ON receipts
                    WHEN OLD.seq IS NOT NULL AND NEW.seq IS NULL
                    BEGIN
                        INSERT INTO waiting_counts (group_id, author, count)
                            VALUES (NEW.group_id, (SELECT device FROM authors WHERE id = NEW.author), 1)
                            ON CONFLICT (group_id, author) DO UPDATE SET count = count + 1;
                    END;
                CREATE TRIGGER waiting_receipt_removed AFTER DELETE ON receipts WHEN OLD.seq IS NULL
                    BEGIN
                        UPDATE waiting_counts SET count = count - 1
                            WHERE group_id = OLD.group_id AND author = (SELECT device FROM authors WHERE id = OLD.author);
                    END;

                CREATE TRIGGER group_operation_stored AFTER INSERT ON receipts WHEN NEW.type LIKE 'group.%'
                    BEGIN UPDATE group_operation_events SET count = count + 1 WHERE id = 1; END;
                CREATE TRIGGER group_operation_sequenced AFTER UPDATE OF seq ON receipts
                    WHEN NEW.type LIKE 'group.%' AND OLD.seq IS NOT NEW.seq
                    BEGIN UPDATE group_operation_events SET count = count + 1 WHERE id = 1; END;
                CREATE TRIGGER group_operation_removed AFTER DELETE ON receipts WHEN OLD.type LIKE 'group.%'
                    BEGIN UPDATE group_operation_events SET count = count + 1 WHERE id = 1; END;
                """)
    }
}
