import GRDB

extension StoreDB {
    /// Grows whenever a receipt or envelope is stored, by any process: lets a daemon notice
    /// writes made by the CLI (another SQLite connection) without a notification channel.
    public func changeStamp() throws -> [Int64] {
        let receipts = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(rowid), 0) FROM receipts") ?? 0
        let envelopes = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(rowid), 0) FROM envelopes") ?? 0
        return [receipts, envelopes]
    }
}
