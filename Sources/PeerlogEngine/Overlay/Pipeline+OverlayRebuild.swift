import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// The slow paths of the overlay: re-checking a suffix of the order, rebuilding a
/// group from scratch, and rewriting a key's tentative row.
extension Pipeline {
    /// Re-checks steps from `start` (nil: the first) in order, writing changed outcomes and
    /// checkpoints, until past every change of this transaction a checkpoint comes out as it was
    /// (then everything after it is unchanged too). Returns the state after the last step when
    /// the walk reached the end (nil: the stored final state still holds).
    mutating func refoldOverlay(
        _ group: GroupID, from start: OverlayPosition?, repair: inout OverlayRepair
    ) throws -> GroupState?? {
        var state = try stateBefore(group, start)
        let keys = try epochKeys(group)
        var cursor = start
        var inclusive = true
        let page = 512
        while true {
            let steps = try db.overlaySteps(group, from: cursor, after: !inclusive, limit: page)
            for s in steps {
                let outcome = Fold.step(s.receipt!, group: group, state: state, keys: { keys[$0] })
                let rejected = outcome.rejected != nil
                let checkpoint = !rejected && outcome.op?.changesGroupState == true ? outcome.state?.storedBytes : nil
                if rejected != s.rejected || checkpoint != s.state {
                    try db.updateOverlayStep(group, s.position, rejected: rejected, state: checkpoint)
                    if let key = s.key { repair.keys.insert(key) }
                } else if checkpoint != nil, repair.lastChange.map({ s.position > $0 }) ?? true {
                    return .none
                }
                if !rejected { state = outcome.state }
            }
            guard steps.count == page, let last = steps.last else { return .some(state) }
            cursor = last.position
            inclusive = false
        }
    }

    /// Writes the tentative row of `key` from its last accepted writer, or drops it (the
    /// committed row shows through).
    mutating func refreshOverlayEntity(_ group: GroupID, key: String) throws {
        try noteViewChange(group, key: key)
        // Usually the writer was stored by this transaction (a local write): no reload then.
        guard let writer = try db.lastOverlayWriter(group, key: key),
            let r = try caches.storedHere[writer.cid] ?? db.loadReceipt(writer.cid)?.receipt,
            let op = try openedOperation(r)
        else {
            return try db.deleteOverlayEntity(group, key: key)
        }
        switch op {
        case .entityPut(_, let value):
            try db.putOverlayEntity(group, key: key, value: CBOREncoder.encode(value), cid: r.cid)
        default: try db.putOverlayEntity(group, key: key, value: nil, cid: r.cid)
        }
        overlay.hasEntities[group] = true
    }

    /// Builds a group's view from scratch with the oracle (`TentativeOrder`, `Fold.step`). Steps
    /// are kept only when the order is the position order; otherwise the next change rebuilds again.
    mutating func rebuildOverlay(_ group: GroupID) throws {
        for row in try db.overlayEntities(group) { try noteViewChange(group, key: row.key) }
        try db.clearOverlay(group)
        overlay.hasEntities[group] = nil
        let flagged = try db.flaggedAuthors(group: group)
        let held = try db.tentativeReceipts(group: group, known: caches.storedHere).map(\.receipt).filter { r in
            flagged[r.author].map { r.counter < $0 } ?? true
        }
        let order = TentativeOrder.order(held)
        let positions = order.map(OverlayPosition.init)
        let regular = positions.allSatisfy(\.storable) && zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }
        var state = try committedState(group)
        var writers = [String: (cid: CID, value: CBOR?)]()
        let keys = try epochKeys(group)
        for (r, p) in zip(order, positions) {
            let outcome = Fold.step(r, group: group, state: state, keys: { keys[$0] })
            var rejected = outcome.rejected != nil
            if !rejected {
                switch outcome.op {
                case .entityPut(let key, let value): writers[key] = (r.cid, value)
                case .entityDelete(let key): writers[key] = (r.cid, nil)
                case .entityWrite(let write):
                    let result = try write.apply { [db] key in
                        if let w = writers[key] { return w.value.map { EntityWrite.Held(value: $0, cid: w.cid) } }
                        return try db.committedHeld(group, key: key)
                    }
                    switch result {
                    case .failure: rejected = true
                    case .success(let changed): for (key, value) in changed { writers[key] = (r.cid, value) }
                    }
                default: break
                }
                if !rejected { state = outcome.state }
            }
            if regular {
                let checkpoint = !rejected && outcome.op?.changesGroupState == true ? outcome.state?.storedBytes : nil
                let merge = if case .entityWrite? = outcome.op { true } else { false }
                try db.insertOverlayStep(
                    group, p, key: outcome.op?.entityKey, rejected: rejected, state: checkpoint, merge: merge)
            }
        }
        for (key, w) in writers {
            try noteViewChange(group, key: key)
            try db.putOverlayEntity(group, key: key, value: w.value.map { CBOREncoder.encode($0) }, cid: w.cid)
            overlay.hasEntities[group] = true
        }
        try db.saveOverlayGroup(group, state: state?.storedBytes, regular: regular)
    }
}
