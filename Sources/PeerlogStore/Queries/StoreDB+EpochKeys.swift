import Foundation
import GRDB
import PeerlogModel

extension StoreDB {
    /// Stores an epoch key sealed at rest (the caller seals it); false when the group already
    /// held a key with this id.
    @discardableResult
    package func insertEpochKey(group: GroupID, keyID: EpochKeyID, sealed: [UInt8], at now: UInt64) throws -> Bool {
        try execute(
            "INSERT OR IGNORE INTO epoch_keys (group_id, key_id, sealed, added) VALUES (?, ?, ?, ?)",
            [group.bytes.blob, keyID.bytes.blob, sealed.blob, now.sql])
        return changes > 0
    }

    /// Every epoch key of `group` this device holds, sealed at rest, in the order they were added.
    package func epochKeys(group: GroupID) throws -> [(keyID: EpochKeyID, sealed: [UInt8])] {
        try rows("SELECT key_id, sealed FROM epoch_keys WHERE group_id = ? ORDER BY added, key_id", [group.bytes.blob])
            .map { (try EpochKeyID(bytes: ($0["key_id"] as Data).bytes), ($0["sealed"] as Data).bytes) }
    }

    /// Notes that the committed receipt at `seq` is sealed under a key this device lacks.
    package func insertSealedWaiting(group: GroupID, seq: UInt64, keyID: EpochKeyID) throws {
        try execute(
            "INSERT OR REPLACE INTO sealed_waiting (group_id, seq, key_id) VALUES (?, ?, ?)",
            [group.bytes.blob, seq.sql, keyID.bytes.blob])
    }

    /// How many committed receipts of `group` wait for a key.
    package func sealedWaitingCount(group: GroupID) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM sealed_waiting WHERE group_id = ?", [group.bytes.blob]) ?? 0)
    }

    /// Whether any committed receipt of `group` waits for `keyID`.
    package func hasSealedWaiting(group: GroupID, keyID: EpochKeyID) throws -> Bool {
        try row(
            "SELECT 1 FROM sealed_waiting WHERE group_id = ? AND key_id = ? LIMIT 1",
            [group.bytes.blob, keyID.bytes.blob])
            != nil
    }

    /// Forgets every waiting note of `group` (its materialized state is being rebuilt).
    package func clearSealedWaiting(group: GroupID) throws {
        try execute("DELETE FROM sealed_waiting WHERE group_id = ?", [group.bytes.blob])
    }
}
