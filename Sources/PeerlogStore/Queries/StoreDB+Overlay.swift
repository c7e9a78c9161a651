import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// A place in a group's tentative order: (HLC, CID). In a regular overlay (every parent and
/// previous-counter edge goes from a smaller to a larger position) the tentative order of
/// docs/PROTOCOL.md §11 is exactly the order of positions.
package struct OverlayPosition: Hashable, Comparable, Sendable {
    package let hlc: UInt64
    package let cid: CID

    package init(hlc: UInt64, cid: CID) {
        self.hlc = hlc
        self.cid = cid
    }

    package init(_ r: Receipt) { self.init(hlc: r.hlc.packed, cid: r.cid) }

    package static func < (l: OverlayPosition, r: OverlayPosition) -> Bool {
        l.hlc != r.hlc ? l.hlc < r.hlc : l.cid < r.cid
    }

    /// SQLite compares the stored (signed) bit pattern, which agrees with `<` below 2^63; a
    /// receipt at or above it makes its group irregular, so stored positions never need more.
    package var storable: Bool { hlc < 1 << 63 }

    var arguments: StatementArguments { [hlc.sql, cid.bytes.blob] }
}

/// A group's maintained tentative view, as stored.
package struct OverlayGroupRow: Sendable {
    /// The group state after the whole tentative order (stored bytes), nil when there is none.
    package let state: [UInt8]?
    /// Steps are kept (the order is the order of positions); otherwise only state and entities.
    package let regular: Bool
    /// Nothing changed the group since the engine last repaired it.
    package let fresh: Bool
}

/// One receipt of the tentative order with its outcome.
package struct OverlayStep: Sendable {
    package let position: OverlayPosition
    /// The entity key it writes (put or delete), nil for other operations.
    package let key: String?
    package let rejected: Bool
    /// The group state after it, for an accepted group operation (a checkpoint).
    package let state: [UInt8]?
    /// The receipt itself, when the query loads it.
    package let receipt: Receipt?
}

extension StoreDB {
    // MARK: Groups

    package func overlayGroup(_ group: GroupID) throws -> OverlayGroupRow? {
        try runRow(
            "SELECT state, regular, changes = maintained AS fresh FROM overlay_groups WHERE group_id = ?", .group(group)
        ) { OverlayGroupRow(state: $0.optionalBytes(0), regular: $0.int(1) != 0, fresh: $0.int(2) != 0) }
    }

    /// Writes the tentative state and marks the group repaired (`maintained = changes`).
    package func saveOverlayGroup(_ group: GroupID, state: [UInt8]?, regular: Bool) throws {
        try run(
            """
            INSERT INTO overlay_groups (group_id, state, regular) VALUES (?, ?, ?)
            ON CONFLICT(group_id) DO UPDATE SET state = excluded.state, regular = excluded.regular, maintained = changes
            """, .group(group), .bytesOrNull(state), .bool(regular))
    }

    /// Marks the group repaired without changing its state.
    package func markOverlayMaintained(_ group: GroupID) throws {
        try run("UPDATE overlay_groups SET maintained = changes WHERE group_id = ?", .group(group))
    }

    /// Drops everything maintained for a group (kept row-less until rebuilt).
    package func deleteOverlay(_ group: GroupID) throws {
        try clearOverlay(group)
        try execute("DELETE FROM overlay_groups WHERE group_id = ?", [group.bytes.blob])
    }

    /// Drops a group's steps and entity rows (before a rebuild).
    package func clearOverlay(_ group: GroupID) throws {
        try execute("DELETE FROM overlay_steps WHERE group_id = ?", [group.bytes.blob])
        try execute("DELETE FROM overlay_entities WHERE group_id = ?", [group.bytes.blob])
    }

    /// Groups with an overlay that something else changed since (an older binary).
    package func staleOverlayGroups() throws -> [GroupID] {
        try rows("SELECT group_id FROM overlay_groups WHERE changes != maintained").map {
            try GroupID(bytes: ($0["group_id"] as Data).bytes)
        }
    }

    // MARK: Steps

    /// `merge`: the step is an `entity.write` (it may change several keys; no `key`).
    package func insertOverlayStep(
        _ group: GroupID, _ p: OverlayPosition, key: String?, rejected: Bool, state: [UInt8]?, merge: Bool = false
    ) throws {
        try run(
            "INSERT OR REPLACE INTO overlay_steps (group_id, hlc, cid, key, rejected, state, merge) VALUES (?, ?, ?, ?, ?, ?, ?)",
            .group(group), .int(p.hlc.sql), .bytes(p.cid.bytes), .textOrNull(key), .bool(rejected), .bytesOrNull(state),
            .bool(merge))
    }

    /// Whether the group's view holds an `entity.write` step. `INDEXED BY`: the planner would
    /// otherwise walk the primary key, filtering every step of the group (per write: O(backlog)).
    package func hasOverlayMergeSteps(_ group: GroupID) throws -> Bool {
        try runInt(
            "SELECT 1 FROM overlay_steps INDEXED BY overlay_steps_merges WHERE group_id = ? AND merge = 1 LIMIT 1",
            .group(group)) != nil
    }

    /// The last step of the order.
    package func lastOverlayStep(_ group: GroupID) throws -> OverlayPosition? {
        try runRow(
            "SELECT hlc, cid FROM overlay_steps WHERE group_id = ? ORDER BY hlc DESC, cid DESC LIMIT 1", .group(group),
            read: Self.position)
    }

    package func updateOverlayStep(_ group: GroupID, _ p: OverlayPosition, rejected: Bool, state: [UInt8]?) throws {
        try run(
            "UPDATE overlay_steps SET rejected = ?, state = ? WHERE group_id = ? AND hlc = ? AND cid = ?",
            .bool(rejected), .bytesOrNull(state), .group(group), .int(p.hlc.sql), .bytes(p.cid.bytes))
    }

    package func deleteOverlayStep(_ group: GroupID, _ p: OverlayPosition) throws {
        try run(
            "DELETE FROM overlay_steps WHERE group_id = ? AND hlc = ? AND cid = ?", .group(group), .int(p.hlc.sql),
            .bytes(p.cid.bytes))
    }

    package func overlayStep(_ group: GroupID, _ p: OverlayPosition) throws -> OverlayStep? {
        try runRow(
            "SELECT hlc, cid, key, rejected, state FROM overlay_steps WHERE group_id = ? AND hlc = ? AND cid = ?",
            .group(group), .int(p.hlc.sql), .bytes(p.cid.bytes)
        ) {
            OverlayStep(
                position: try Self.position($0), key: $0.optionalText(2), rejected: $0.int(3) != 0,
                state: $0.optionalBytes(4), receipt: nil)
        }
    }

    /// The first step of the order (the head a sequencer is expected to commit next).
    package func firstOverlayStep(_ group: GroupID) throws -> OverlayPosition? {
        try runRow(
            "SELECT hlc, cid FROM overlay_steps WHERE group_id = ? ORDER BY hlc, cid LIMIT 1", .group(group),
            read: Self.position)
    }

    /// The state after the last accepted group operation before `p`, if there is one.
    package func overlayCheckpoint(_ group: GroupID, before p: OverlayPosition) throws -> [UInt8]? {
        try runRow(
            """
            SELECT state FROM overlay_steps INDEXED BY overlay_steps_checkpoints WHERE group_id = ? AND state IS NOT NULL AND (hlc, cid) < (?, ?)
            ORDER BY hlc DESC, cid DESC LIMIT 1
            """, .group(group), .int(p.hlc.sql), .bytes(p.cid.bytes)
        ) { $0.bytes(0) }
    }

    /// The position of the last checkpoint before `p`, if there is one (the index alone answers:
    /// no state is read).
    package func overlayCheckpointPosition(_ group: GroupID, before p: OverlayPosition) throws -> OverlayPosition? {
        try runRow(
            """
            SELECT hlc, cid FROM overlay_steps INDEXED BY overlay_steps_checkpoints WHERE group_id = ? AND state IS NOT NULL AND (hlc, cid) < (?, ?)
            ORDER BY hlc DESC, cid DESC LIMIT 1
            """, .group(group), .int(p.hlc.sql), .bytes(p.cid.bytes), read: Self.position)
    }

    /// The position of the first checkpoint (accepted group operation) of the order. `INDEXED BY`
    /// here and below: the planner would otherwise walk the primary key, which is in the same
    /// order, filtering every step of the group.
    package func firstOverlayCheckpoint(_ group: GroupID) throws -> OverlayPosition? {
        try runRow(
            "SELECT hlc, cid FROM overlay_steps INDEXED BY overlay_steps_checkpoints WHERE group_id = ? AND state IS NOT NULL ORDER BY hlc, cid LIMIT 1",
            .group(group), read: Self.position)
    }

    /// Up to `limit` steps at or after `p` in order, each with its receipt.
    package func overlaySteps(
        _ group: GroupID, from p: OverlayPosition?, after: Bool = false, limit: Int
    ) throws -> [OverlayStep] {
        let start = p ?? OverlayPosition(hlc: 0, cid: CID(digest: [UInt8](repeating: 0, count: 32)))
        return try rows(
            """
            SELECT \(StoreDB.receiptColumns), s.hlc, s.cid, s.key, s.rejected, s.state, r.payload, r.signature, c.encoded AS certificate FROM overlay_steps s
            JOIN receipts r ON r.cid = s.cid JOIN certificates c ON c.id = r.certificate
            WHERE s.group_id = ? AND (s.hlc, s.cid) \(after ? ">" : ">=") (?, ?) ORDER BY s.hlc, s.cid LIMIT ?
            """, StatementArguments([group.bytes.blob]) + start.arguments + [limit]
        ).map { row in
            let receipt = try StoreDB.receipt(row)
            return try Self.overlayStep(row, receipt: receipt)
        }
    }

    /// The last accepted step that writes `key`, if any.
    package func lastOverlayWriter(_ group: GroupID, key: String) throws -> OverlayPosition? {
        try runRow(
            "SELECT hlc, cid FROM overlay_steps INDEXED BY overlay_steps_writers WHERE group_id = ? AND key = ? AND rejected = 0 ORDER BY hlc DESC, cid DESC LIMIT 1",
            .group(group), .text(key), read: Self.position)
    }

    // MARK: Entities

    /// The tentative row of `key`: `value` nil means deleted in the tentative view.
    package func overlayEntity(_ group: GroupID, key: String) throws -> (value: [UInt8]?, cid: CID)? {
        try runRow("SELECT value, cid FROM overlay_entities WHERE group_id = ? AND key = ?", .group(group), .text(key))
        {
            ($0.optionalBytes(0), try CID(bytes: $0.bytes(1)))
        }
    }

    /// Whether the group's view holds any tentative entity row (one index probe).
    package func hasOverlayEntities(_ group: GroupID) throws -> Bool {
        try runInt("SELECT 1 FROM overlay_entities WHERE group_id = ? LIMIT 1", .group(group)) != nil
    }

    package func overlayEntities(_ group: GroupID) throws -> [(key: String, value: [UInt8]?, cid: CID)] {
        try rows("SELECT key, value, cid FROM overlay_entities WHERE group_id = ?", [group.bytes.blob]).map {
            ($0["key"], ($0["value"] as Data?)?.bytes, try CID(bytes: ($0["cid"] as Data).bytes))
        }
    }

    package func putOverlayEntity(_ group: GroupID, key: String, value: [UInt8]?, cid: CID) throws {
        try run(
            "INSERT OR REPLACE INTO overlay_entities (group_id, key, value, cid) VALUES (?, ?, ?, ?)", .group(group),
            .text(key), .bytesOrNull(value), .bytes(cid.bytes))
    }

    package func deleteOverlayEntity(_ group: GroupID, key: String) throws {
        try run("DELETE FROM overlay_entities WHERE group_id = ? AND key = ?", .group(group), .text(key))
    }

    // MARK: Order edges

    /// Whether any receipt of the group waits for a seq (one index probe, unlike a count).
    package func hasTentativeReceipts(group: GroupID) throws -> Bool {
        try runInt("SELECT 1 FROM receipts WHERE group_id = ? AND seq IS NULL LIMIT 1", .group(group)) != nil
    }

    /// The position and seq of a held receipt (nil when not held).
    package func receiptPosition(
        _ cid: CID
    ) throws -> (position: OverlayPosition, author: DeviceID, counter: UInt64, committed: Bool)? {
        try runRow(
            """
            SELECT r.hlc, a.device AS author, r.author_counter, r.seq FROM receipts r JOIN authors a ON a.id = r.author
            WHERE r.cid = ?
            """, .bytes(cid.bytes)
        ) { (OverlayPosition(hlc: $0.uint(0), cid: cid), try DeviceID(bytes: $0.bytes(1)), $0.uint(2), !$0.isNull(3)) }
    }

    /// The same for the receipt at (group, author, counter).
    package func receiptPosition(
        group: GroupID, author: DeviceID, counter: UInt64
    ) throws -> (position: OverlayPosition, author: DeviceID, counter: UInt64, committed: Bool)? {
        try runRow(
            """
            SELECT hlc, cid, seq FROM receipts
            WHERE group_id = ? AND author = (SELECT id FROM authors WHERE device = ?) AND author_counter = ?
            """, .group(group), .bytes(author.bytes), .int(counter.sql)
        ) { (try Self.position($0), author, counter, !$0.isNull(2)) }
    }

    /// Tentative receipts that name `cid` as a parent: (position, author, counter).
    package func tentativeChildren(
        of cid: CID
    ) throws -> [(position: OverlayPosition, author: DeviceID, counter: UInt64)] {
        try runRows(
            """
            SELECT r.hlc, r.cid, a.device AS author, r.author_counter
            FROM receipt_parents p JOIN receipts r ON r.id = p.receipt_id JOIN authors a ON a.id = r.author
            WHERE p.parent = (SELECT id FROM receipts WHERE cid = ?1) AND r.seq IS NULL
            UNION ALL
            SELECT r.hlc, r.cid, a.device AS author, r.author_counter
            FROM receipt_parents_unstored u JOIN receipts r ON r.id = u.receipt_id JOIN authors a ON a.id = r.author
            WHERE u.parent = ?1 AND r.seq IS NULL
            """, .bytes(cid.bytes)
        ) { (try Self.position($0), try DeviceID(bytes: $0.bytes(2)), $0.uint(3)) }
    }

    static func position(_ row: Row) throws -> OverlayPosition {
        OverlayPosition(hlc: UInt64(sql: row["hlc"]), cid: try CID(bytes: (row["cid"] as Data).bytes))
    }

    /// The position of a row that selects `hlc`, `cid` first.
    static func position(_ row: SteppedRow) throws -> OverlayPosition {
        OverlayPosition(hlc: row.uint(0), cid: try CID(bytes: row.bytes(1)))
    }

    static func overlayStep(_ row: Row, receipt: Receipt? = nil) throws -> OverlayStep {
        OverlayStep(
            position: try position(row), key: row["key"], rejected: row["rejected"] as Bool,
            state: (row["state"] as Data?)?.bytes, receipt: receipt)
    }
}
