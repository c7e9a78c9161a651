import GRDB

extension StoreDB {
    /// Grows whenever a receipt or envelope is stored, by any process: lets a daemon notice
    /// writes made by the CLI (another SQLite connection) without a notification channel.
    package func changeStamp() throws -> [Int64] {
        let receipts = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(rowid), 0) FROM receipts") ?? 0
        let envelopes = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(rowid), 0) FROM envelopes") ?? 0
        return [receipts, envelopes]
    }

    /// Changes when a group operation (`group.*` receipt) is stored, removed or committed:
    /// the only events that change who is a member or who sequences. Cheap (a partial index).
    package func groupOperationStamp() throws -> [Int64] {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT IFNULL(MAX(id), 0) AS last, COUNT(*) AS n, COUNT(seq) AS committed FROM receipts WHERE type LIKE 'group.%'
                    """)
        else { return [] }
        return [row["last"], row["n"], row["committed"]]
    }
}
