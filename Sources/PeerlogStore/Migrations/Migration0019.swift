import GRDB

/// Parent links kept once (docs/PROTOCOL.md §10): `receipt_parents` was keyed by
/// `(receipt_id, parent)` with a second index by `parent`, so every link held the parent's
/// 36-byte CID twice (101 of the 1,366 bytes a small committed write took). Every lookup made per
/// receipt asks by parent (is this receipt named already; its tentative children), so the table
/// is now keyed `(parent, receipt_id)` with no other index; the rare deletes by child read the
/// child's parents from its payload.
enum Migration0019 {
    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE receipt_parents_by_parent (
                    parent BLOB NOT NULL,
                    receipt_id INTEGER NOT NULL REFERENCES receipts(id),
                    PRIMARY KEY(parent, receipt_id)
                ) WITHOUT ROWID;
                INSERT INTO receipt_parents_by_parent (parent, receipt_id) SELECT parent, receipt_id FROM receipt_parents;
                DROP TABLE receipt_parents;
                ALTER TABLE receipt_parents_by_parent RENAME TO receipt_parents;
                """)
    }
}
