import GRDB

/// The maintained tentative view (docs/PROTOCOL.md §10, §11.1): per group the tentative state,
/// one step per receipt of the tentative order with its outcome (and, for an accepted group
/// operation, the state after it), and the entity rows the tentative receipts shadow.
///
/// Triggers count every change to what the view depends on (receipts stored, committed or
/// removed, authors flagged, tombstones) in `overlay_groups.changes`, whichever binary makes it.
/// The engine sets `maintained = changes` after it repairs a group; a row where they differ was
/// changed by a binary that does not maintain the view (an older one), so it is not used until
/// it is rebuilt. Nothing is built here: a store migrated with receipts waiting gets each group's
/// view built by its first write or when the daemon starts; until then reads fold from scratch.
enum Migration0004 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE overlay_groups (
                    group_id BLOB PRIMARY KEY,
                    state BLOB,
                    regular INTEGER NOT NULL,
                    changes INTEGER NOT NULL DEFAULT 0,
                    maintained INTEGER NOT NULL DEFAULT 0
                ) WITHOUT ROWID;
                CREATE INDEX overlay_groups_stale ON overlay_groups(group_id) WHERE changes != maintained;

                CREATE TABLE overlay_steps (
                    group_id BLOB NOT NULL,
                    hlc INTEGER NOT NULL,
                    cid BLOB NOT NULL,
                    key TEXT,
                    rejected INTEGER NOT NULL,
                    state BLOB,
                    PRIMARY KEY (group_id, hlc, cid)
                ) WITHOUT ROWID;
                CREATE INDEX overlay_steps_writers ON overlay_steps(group_id, key, hlc, cid) WHERE key IS NOT NULL AND rejected = 0;
                CREATE INDEX overlay_steps_checkpoints ON overlay_steps(group_id, hlc, cid) WHERE state IS NOT NULL;

                CREATE TABLE overlay_entities (
                    group_id BLOB NOT NULL,
                    key TEXT NOT NULL,
                    value BLOB,
                    cid BLOB NOT NULL,
                    PRIMARY KEY (group_id, key)
                ) WITHOUT ROWID;

                CREATE TRIGGER overlay_receipt_stored AFTER INSERT ON receipts
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
                CREATE TRIGGER overlay_receipt_committed AFTER UPDATE OF seq ON receipts
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
                CREATE TRIGGER overlay_receipt_removed AFTER DELETE ON receipts
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = OLD.group_id; END;
                CREATE TRIGGER overlay_author_flagged AFTER INSERT ON flagged_authors
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
                CREATE TRIGGER overlay_author_reflagged AFTER UPDATE ON flagged_authors
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
                CREATE TRIGGER overlay_group_tombstoned AFTER INSERT ON tombstones
                    BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
                """)
    }
}
