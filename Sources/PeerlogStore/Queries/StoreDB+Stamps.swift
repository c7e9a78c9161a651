import Foundation
import GRDB
import PeerlogModel

extension StoreDB {
    /// Grows whenever a receipt or envelope is stored, by any process: lets a daemon notice
    /// writes made by the CLI (another SQLite connection) without a notification channel.
    package func changeStamp() throws -> [Int64] {
        let receipts = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(rowid), 0) FROM receipts") ?? 0
        let envelopes = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(rowid), 0) FROM envelopes") ?? 0
        return [receipts, envelopes]
    }

    /// Changes when a group operation (`group.*` receipt) is stored, removed or gets or loses a
    /// seq: the only events that change who is a member or who sequences. One row, kept by
    /// triggers (migration 0017): the read costs the same with ten or ten thousand groups.
    package func groupOperationStamp() throws -> [Int64] {
        [try Int64.fetchOne(db, sql: "SELECT count FROM group_operation_events WHERE id = 1") ?? 0]
    }
}

extension StoreDB {
    /// The groups changed between `stamp` and `now` (two `changeStamp()`s, `now` read in this
    /// transaction): receipts and envelopes have rowids that only grow while nothing is
    /// deleted, so this reads only the rows added since, whatever the size of the store. Nil
    /// when the stamp went back (the newest rows were deleted, and rowids may be reused): the
    /// caller must assume every group changed.
    package func changes(since stamp: [Int64], now: [Int64]) throws -> GroupChanges? {
        guard stamp.count == 2, now.count == 2, now[0] >= stamp[0], now[1] >= stamp[1] else { return nil }
        func groups(_ sql: String) throws -> Set<GroupID> {
            Set(
                try Data.fetchAll(db, sql: sql, arguments: [stamp[0], stamp[1]]).compactMap {
                    try? GroupID(bytes: $0.bytes)
                })
        }
        return GroupChanges(
            groups: try groups(
                """
                SELECT group_id FROM receipts WHERE id > ?1
                UNION SELECT group_id FROM envelopes WHERE rowid > ?2
                """),
            groupOperations: try groups(
                """
                SELECT group_id FROM receipts WHERE id > ?1 AND type LIKE 'group.%'
                UNION SELECT r.group_id FROM envelopes e JOIN receipts r ON r.id = e.receipt_id
                WHERE e.rowid > ?2 AND r.type LIKE 'group.%'
                """))
    }
}
