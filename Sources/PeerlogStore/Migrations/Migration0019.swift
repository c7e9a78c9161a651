import GRDB

/// Parent links kept once, by row id (docs/PROTOCOL.md §10): `receipt_parents` was keyed by
/// `(receipt_id, parent)` with a second index by `parent`, so every link held the parent's
/// 36-byte CID twice (101 of the 1,366 bytes a small committed write took). Every lookup made per
/// receipt asks by parent (is this receipt named already; its tentative children), so links are
/// now keyed `(parent, receipt_id)` with no other index, and name a stored parent by its row id.
/// A link to a parent not stored (a child that arrived first, or a parent deleted since) names
/// its CID in `receipt_parents_unstored` until the parent is stored. `receipt_id` is no foreign
/// key: with no index by child, SQLite would scan the links for every receipt deleted (a
/// compaction deletes thousands); the store deletes a receipt's own links first
/// (`StoreDB.deleteParentLinks`). `parent` is one, checked through the key.
enum Migration0019 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE receipt_parents_by_parent (
                    parent INTEGER NOT NULL REFERENCES receipts(id),
                    receipt_id INTEGER NOT NULL,
                    PRIMARY KEY(parent, receipt_id)
                ) WITHOUT ROWID;
                CREATE TABLE receipt_parents_unstored (
                    parent BLOB NOT NULL,
                    receipt_id INTEGER NOT NULL,
                    PRIMARY KEY(parent, receipt_id)
                ) WITHOUT ROWID;
                INSERT INTO receipt_parents_by_parent (parent, receipt_id)
                    SELECT r.id, p.receipt_id FROM receipt_parents p JOIN receipts r ON r.cid = p.parent;
                INSERT INTO receipt_parents_unstored (parent, receipt_id)
                    SELECT p.parent, p.receipt_id FROM receipt_parents p
                    WHERE NOT EXISTS (SELECT 1 FROM receipts r WHERE r.cid = p.parent);
                DROP TABLE receipt_parents;
                ALTER TABLE receipt_parents_by_parent RENAME TO receipt_parents;
                """)
    }
}
