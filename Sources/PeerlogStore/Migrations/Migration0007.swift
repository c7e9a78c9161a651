import GRDB

/// Drops `outbox` (Migration0001): nothing ever read it, so it only grew. A node learns of
/// writes from the change stamp (`StoreDB.changeStamp`) and an app from the change log
/// (docs/PROTOCOL.md §10.4), both kept in the same transaction as the write.
enum Migration0007 {
    static func migrate(_ db: Database) throws {
        try db.execute(sql: "DROP TABLE outbox;")
    }
}
