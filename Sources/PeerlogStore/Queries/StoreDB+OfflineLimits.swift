import Foundation
import GRDB
import PeerlogModel

/// One author's receipts without a seq in one group (docs/PROTOCOL.md §10.5).
package struct WaitingReceipts: Sendable, Equatable {
    /// How many there are (kept by triggers: one row read, whatever the count).
    package var count: Int
    /// When this replica stored the oldest of them (ms); nil when none waits.
    package var oldestStoredAt: UInt64?
}

/// This replica's own overrides of one group's offline limits; nil: the replica's default.
package struct StoredOfflineLimits: Sendable, Equatable {
    package var maxWaiting: Int?
    package var maxAgeMillis: UInt64?

    package init(maxWaiting: Int?, maxAgeMillis: UInt64?) {
        self.maxWaiting = maxWaiting
        self.maxAgeMillis = maxAgeMillis
    }
}

extension StoreDB {
    /// `author`'s receipts in `group` that have no seq: two index probes, not a count.
    package func waitingReceipts(group: GroupID, author: DeviceID) throws -> WaitingReceipts {
        let key: StatementArguments = [group.bytes.blob, author.bytes.blob]
        let count = try int("SELECT count FROM waiting_counts WHERE group_id = ? AND author = ?", key) ?? 0
        guard count > 0 else { return WaitingReceipts(count: 0, oldestStoredAt: nil) }
        let oldest = try int(
            """
            SELECT received_at FROM receipts INDEXED BY receipts_waiting
            WHERE group_id = ? AND author = (SELECT id FROM authors WHERE device = ?) AND seq IS NULL
            ORDER BY received_at LIMIT 1
            """, key)
        return WaitingReceipts(count: Int(count), oldestStoredAt: oldest.map(UInt64.init(sql:)))
    }

    /// The same by counting the receipts (every one read): for `check` and tests to compare.
    package func countedWaitingReceipts(group: GroupID, author: DeviceID) throws -> Int {
        Int(
            try int(
                """
                SELECT COUNT(*) FROM receipts
                WHERE group_id = ? AND author = (SELECT id FROM authors WHERE device = ?) AND seq IS NULL
                """,
                [group.bytes.blob, author.bytes.blob]) ?? 0)
    }

    /// Authors of `group` whose kept count of waiting receipts differs from a count over the
    /// receipts (`peerlog check`): (author bytes, kept, counted). Empty in a consistent store.
    package func waitingCountMismatches(group: GroupID) throws -> [(author: [UInt8], kept: Int, counted: Int)] {
        try rows(
            """
            SELECT author, kept, counted FROM (
                SELECT w.author AS author, w.count AS kept,
                    (SELECT COUNT(*) FROM receipts r
                        WHERE r.group_id = w.group_id AND r.author = (SELECT id FROM authors WHERE device = w.author)
                        AND r.seq IS NULL) AS counted
                FROM waiting_counts w WHERE w.group_id = ?
                UNION ALL
                SELECT a.device, 0, COUNT(*) FROM receipts r JOIN authors a ON a.id = r.author
                WHERE r.group_id = ? AND r.seq IS NULL AND NOT EXISTS (
                    SELECT 1 FROM waiting_counts w WHERE w.group_id = r.group_id AND w.author = a.device)
                GROUP BY a.device
            ) WHERE kept != counted ORDER BY author
            """, [group.bytes.blob, group.bytes.blob]
        ).map { (($0["author"] as Data).bytes, $0["kept"], $0["counted"]) }
    }

    /// This replica's overrides of `group`'s offline limits (both nil when it has none).
    package func offlineLimits(group: GroupID) throws -> StoredOfflineLimits {
        guard
            let row = try row("SELECT max_waiting, max_age FROM offline_limits WHERE group_id = ?", [group.bytes.blob])
        else { return StoredOfflineLimits(maxWaiting: nil, maxAgeMillis: nil) }
        let age: Int64? = row["max_age"]
        return StoredOfflineLimits(maxWaiting: row["max_waiting"], maxAgeMillis: age.map(UInt64.init(sql:)))
    }

    /// Replaces `group`'s overrides; both nil removes the row (the defaults apply again).
    package func setOfflineLimits(_ limits: StoredOfflineLimits, group: GroupID) throws {
        guard limits.maxWaiting != nil || limits.maxAgeMillis != nil else {
            try execute("DELETE FROM offline_limits WHERE group_id = ?", [group.bytes.blob])
            return
        }
        try execute(
            "INSERT OR REPLACE INTO offline_limits (group_id, max_waiting, max_age) VALUES (?, ?, ?)",
            [group.bytes.blob, limits.maxWaiting, limits.maxAgeMillis?.sql])
    }
}
