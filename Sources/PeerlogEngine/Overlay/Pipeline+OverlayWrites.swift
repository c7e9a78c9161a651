import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// The view of a group holding `entity.write` steps (docs/PROTOCOL.md §11.1). Such a step may
/// change several keys, and counters, sets and conditions depend on the values before it, so
/// the per-key repair of `maintainOverlay` does not hold. Receipts joining at the end of the
/// order (every local write, and arrivals in order while offline) are applied to the stored
/// rows in order: O(keys) each. Anything else (a commit, an arrival in the middle, a group
/// operation) rebuilds the group's view from scratch.
extension Pipeline {
    /// `waitingWrites`: the view held an `entity.write` step before this transaction.
    mutating func maintainOverlayWithWrites(
        _ group: GroupID, stored: [Receipt], committed: [(receipt: Receipt, changedBase: Bool)], waitingWrites: Bool
    ) throws {
        // A commit moves the committed values that waiting writes were applied to, except one
        // stored here that was never in the view, under a view of puts and deletes only (they
        // override what is under them), that leaves the group state as it was.
        let storedHere = Set(stored.map(\.cid))
        let committedHere = Set(committed.map(\.receipt.cid))
        let harmless =
            committed.isEmpty
            || !waitingWrites && committed.allSatisfy { storedHere.contains($0.receipt.cid) && !$0.changedBase }
        guard harmless else { return try rebuildOverlay(group) }
        let flagged = stored.isEmpty ? [:] : try db.flaggedAuthors(group: group)
        let joining = stored.filter { r in
            !committedHere.contains(r.cid) && flagged[r.author].map { r.counter < $0 } ?? true
        }.sorted { OverlayPosition($0) < OverlayPosition($1) }
        guard let first = joining.first else { return try db.markOverlayMaintained(group) }
        if let last = try db.lastOverlayStep(group), !(last < OverlayPosition(first)) {
            return try rebuildOverlay(group)
        }
        let batch = OverlayBatch(joining)
        var ops = [GroupOperation?]()
        for r in joining {
            guard try keepsOrderRegular(r, flagged: flagged, batch: batch) else { return try rebuildOverlay(group) }
            let op = try openedOperation(r)
            if op?.changesGroupState == true { return try rebuildOverlay(group) }
            ops.append(op)
        }
        // No group operation joins: the state at the end holds for every joining receipt.
        let state = try stateBefore(group, OverlayPosition(first))
        let keys = joining.contains { GroupOperation.looksSealed($0.body) } ? try epochKeys(group) : [:]
        for (r, op) in zip(joining, ops) {
            var rejected = Fold.step(r, group: group, state: state, keys: { keys[$0] }).rejected != nil
            if !rejected {
                switch op {
                case .entityPut(let key, let value)?: try setOverlayEntity(group, key: key, value: value, cid: r.cid)
                case .entityDelete(let key)?: try setOverlayEntity(group, key: key, value: nil, cid: r.cid)
                case .entityWrite(let write)?:
                    switch try write.apply(held: { try tentativeHeld(group, key: $0) }) {
                    case .failure: rejected = true
                    case .success(let changed):
                        for (key, value) in changed { try setOverlayEntity(group, key: key, value: value, cid: r.cid) }
                    }
                default: break
                }
            }
            let merge = if case .entityWrite? = op { true } else { false }
            try db.insertOverlayStep(
                group, OverlayPosition(r), key: op?.entityKey, rejected: rejected, state: nil, merge: merge)
        }
        try db.markOverlayMaintained(group)
    }

    /// A key's value in the tentative view as stored: its overlay row, else its committed row.
    mutating func tentativeHeld(_ group: GroupID, key: String) throws -> EntityWrite.Held? {
        if try overlayMayHoldEntities(group), let row = try db.overlayEntity(group, key: key) {
            return try row.value.map { EntityWrite.Held(value: try CBORDecoder.decodeStrict($0), cid: row.cid) }
        }
        return try db.committedHeld(group, key: key)
    }

    /// Writes the tentative row of `key` (nil: tentatively absent), noting the change first.
    mutating func setOverlayEntity(_ group: GroupID, key: String, value: CBOR?, cid: CID) throws {
        try noteViewChange(group, key: key)
        try db.putOverlayEntity(group, key: key, value: value.map { CBOREncoder.encode($0) }, cid: cid)
        overlay.hasEntities[group] = true
    }
}

extension StoreDB {
    /// A key's committed value and version, as `EntityWrite.apply` reads it.
    func committedHeld(_ group: GroupID, key: String) throws -> EntityWrite.Held? {
        try entity(group: group, key: key).map {
            EntityWrite.Held(value: try CBORDecoder.decodeStrict($0.value), cid: $0.cid)
        }
    }
}
