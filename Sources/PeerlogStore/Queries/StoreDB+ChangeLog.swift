import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

/// One row of the change log (Migration0005, docs/PROTOCOL.md §10.4), as stored.
public struct ChangeLogRow: Sendable, Equatable {
    /// The row's cursor: strictly increasing, never reused; 0 in a row not read back from the store.
    public var id: Int64 = 0
    /// The group the change is in.
    public var group: GroupID
    /// What changed: `invited`, `members`, `entity`, `reordered`, `committed`, `rejected` or
    /// `deleted` (the table of §10.4 says when each is written and which columns it fills).
    public var kind: String
    /// The entity key of an `entity` row; nil otherwise.
    public var key: String?
    /// An `entity` row's value before the change: deterministic CBOR, nil when absent.
    public var oldValue: [UInt8]?
    /// An `entity` row's value after the change (nil when absent); for `reordered`, the CBOR array
    /// of the keys.
    public var newValue: [UInt8]?
    /// Bits of an `entity` row: 1 old present, 2 old tentative, 4 new present, 8 new tentative,
    /// 16 reordered; 0 for other kinds.
    public var flags: Int64 = 0
    /// The lowest seq a `committed` row covers.
    public var firstSeq: UInt64?
    /// The highest seq a `committed` row covers.
    public var lastSeq: UInt64?
    /// The receipt an `invited` or `rejected` row names.
    public var cid: CID?
    /// Why a `rejected` row's receipt had no effect.
    public var reason: String?
    /// The writing transaction's clock, in milliseconds.
    public var at: UInt64

    /// A row to append; nothing is checked here, and `id` is assigned by the store.
    public init(
        group: GroupID, kind: String, key: String? = nil, oldValue: [UInt8]? = nil, newValue: [UInt8]? = nil,
        flags: Int64 = 0,
        firstSeq: UInt64? = nil, lastSeq: UInt64? = nil, cid: CID? = nil, reason: String? = nil, at: UInt64
    ) {
        self.group = group
        self.kind = kind
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.flags = flags
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.cid = cid
        self.reason = reason
        self.at = at
    }
}

extension StoreDB {
    /// Appends a row and returns its id (the cursor after it).
    @discardableResult
    package func appendChange(_ c: ChangeLogRow) throws -> Int64 {
        try run(
            """
            INSERT INTO change_log (group_id, kind, key, old_value, new_value, flags, first_seq, last_seq, cid, reason, at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            .bytes(c.group.bytes), .text(c.kind), c.key.map(Bound.text) ?? .null, c.oldValue.map(Bound.bytes) ?? .null,
            c.newValue.map(Bound.bytes) ?? .null, .int(c.flags), c.firstSeq.map { .int($0.sql) } ?? .null,
            c.lastSeq.map { .int($0.sql) } ?? .null, c.cid.map { .bytes($0.bytes) } ?? .null,
            c.reason.map(Bound.text) ?? .null, .int(c.at.sql))
        return db.lastInsertedRowID
    }

    /// Up to `limit` rows after `cursor`, oldest first; `group` restricts them to one group.
    package func changes(after cursor: Int64, group: GroupID? = nil, limit: Int) throws -> [ChangeLogRow] {
        let columns = "id, group_id, kind, key, old_value, new_value, flags, first_seq, last_seq, cid, reason, at"
        let found: [Row]
        if let group {
            found = try rows(
                "SELECT \(columns) FROM change_log WHERE id > ? AND group_id = ? ORDER BY id LIMIT ?",
                [cursor, group.bytes.blob, limit])
        } else {
            found = try rows("SELECT \(columns) FROM change_log WHERE id > ? ORDER BY id LIMIT ?", [cursor, limit])
        }
        return try found.map { row in
            var c = ChangeLogRow(
                group: try GroupID(bytes: (row["group_id"] as Data).bytes), kind: row["kind"], key: row["key"],
                oldValue: (row["old_value"] as Data?)?.bytes, newValue: (row["new_value"] as Data?)?.bytes,
                flags: row["flags"],
                firstSeq: (row["first_seq"] as Int64?).map(UInt64.init(sql:)),
                lastSeq: (row["last_seq"] as Int64?).map(UInt64.init(sql:)),
                cid: try (row["cid"] as Data?).map { try CID(bytes: $0.bytes) }, reason: row["reason"],
                at: UInt64(sql: row["at"]))
            c.id = row["id"]
            return c
        }
    }

    /// The id of the newest row (0: none yet). One index probe.
    package func lastChangeID() throws -> Int64 { try int("SELECT IFNULL(MAX(id), 0) FROM change_log") ?? 0 }

    /// The id of the oldest row still held (nil: the log is empty).
    package func firstChangeID() throws -> Int64? { try int("SELECT MIN(id) FROM change_log") }

    /// Drops rows more than `keep` behind the newest.
    package func pruneChanges(keep: Int) throws {
        let last = try lastChangeID()
        guard last > Int64(keep) else { return }
        try execute("DELETE FROM change_log WHERE id <= ?", [last - Int64(keep)])
    }
}
