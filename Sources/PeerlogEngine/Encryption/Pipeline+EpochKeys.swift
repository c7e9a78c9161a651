import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

extension Pipeline {
    /// The epoch keys of `group` this device holds (docs/PROTOCOL.md §22.6).
    mutating func epochKeys(_ group: GroupID) throws -> [EpochKeyID: EpochKey] {
        try keys.held.value(group) { [db, local] in try KeyringStorage.keys(group: $0, db: db, local: local) }
    }

    /// The receipt's operation as its effect on entities reads it: a sealed one opened with the
    /// keys held (still `.sealed` when the key is missing or it does not open); nil when the
    /// body does not parse.
    mutating func openedOperation(_ r: Receipt) throws -> GroupOperation? {
        guard let op = try? GroupOperation(receiptType: r.type, body: r.body) else { return nil }
        guard case .sealed = op else { return op }
        let keys = try epochKeys(r.group)
        if case .opened(let inner) = op.opening(r, keys: { keys[$0] }) { return inner }
        return op
    }

    /// Opens the box a stored `group.key` receipt holds for this device, if any, and keeps the key
    /// (sealed at rest). A key committed receipts waited for makes `settle` rebuild the group's
    /// materialized state; the tentative view is rebuilt too (its sealed receipts may open now).
    mutating func takeEpochKey(from r: Receipt) throws {
        guard case .key(let share)? = try? GroupOperation(receiptType: r.type, body: r.body),
            let box = share.box(for: local.device),
            let key = try? box.open(group: r.group, keyID: share.keyID, with: local.noiseKey)
        else { return }
        try addEpochKey(key, group: r.group)
    }

    /// Keeps `key` of `group` (sealed at rest); true when it is new here.
    @discardableResult
    mutating func addEpochKey(_ key: EpochKey, group: GroupID) throws -> Bool {
        var held = try epochKeys(group)
        guard held[key.id] == nil else { return false }
        let sealed = try KeyringStorage.seal(key, group: group, with: KeyringStorage.storageKey(local))
        try db.insertEpochKey(group: group, keyID: key.id, sealed: sealed, at: now)
        held[key.id] = key
        keys.held[group] = held
        if try db.hasSealedWaiting(group: group, keyID: key.id) { keys.arrived.insert(group) }
        noteOverlayRebuild(group)
        return true
    }

    /// Replays the group's committed log with the keys held now and writes the entities that
    /// changed, each noted for the change log. Runs once per key arrival that committed receipts
    /// waited for (rare: a late joiner, a key that came after the data), so its cost in the log's
    /// length is paid then, never per write.
    mutating func rematerialize(_ group: GroupID) throws {
        var (fold, from) = try Replica.replayBase(group: group, db: db)
        fold.keys = try epochKeys(group)
        for item in try db.committedLog(group: group, fromSeq: from) {
            _ = fold.apply(item.receipt, status: .committed(seq: item.seq))
        }
        let stored = try db.entities(group: group)
        var before: [String: (value: [UInt8], cid: CID)] = [:]
        for e in stored { before[e.key] = (e.value, e.cid) }
        for (key, e) in fold.entities where before[key]?.cid != e.cid {
            guard case .committed(let seq) = e.status else { continue }
            try noteViewChange(group, key: key)
            let encoded = CBOREncoder.encode(e.value)
            try db.putEntity(group: group, key: key, value: encoded, cid: e.cid, seq: seq)
            caches.committedHere[ViewKey(group: group, key: key)] = CommittedValue(bytes: encoded)
        }
        for key in before.keys where fold.entities[key] == nil {
            try noteViewChange(group, key: key)
            try db.deleteEntity(group: group, key: key)
            caches.committedHere[ViewKey(group: group, key: key)] = CommittedValue(bytes: nil)
        }
        try db.clearSealedWaiting(group: group)
        for w in fold.waiting { try db.insertSealedWaiting(group: group, seq: w.seq, keyID: w.keyID) }
        noteOverlayRebuild(group)
    }
}
