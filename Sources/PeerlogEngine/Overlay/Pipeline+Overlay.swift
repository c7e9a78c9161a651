import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// The maintained tentative view (docs/PROTOCOL.md §11.1). The pipeline notes what a
/// transaction stores and commits; at the end of `settle` each group's view is repaired from
/// those notes alone:
///
/// - a receipt at the end of the order (every local write) or an entity write anywhere is
///   checked against the state before its position (the last checkpoint): O(log n);
/// - committing the head of the order moves nothing else: the rest was folded over exactly
///   the state the commit produces;
/// - a group operation inserted in the middle, committed out of order, or committed without
///   having been in the view changes the state under later receipts: those are re-checked from
///   that position until a checkpoint comes out unchanged (`refoldOverlay`);
/// - an order that is not the (HLC, CID) order, a flagged author, an equivocation twin stepping
///   aside, or a view changed by another binary: rebuilt from scratch (`rebuildOverlay`).
extension Pipeline {
    mutating func noteOverlayStored(_ r: Receipt) { overlay.stored[r.group, default: []].append(r) }

    mutating func noteOverlayCommitted(_ r: Receipt, changedBase: Bool) {
        overlay.committed[r.group, default: []].append((r, changedBase))
    }

    mutating func noteOverlayRebuild(_ group: GroupID) { overlay.rebuild.insert(group) }

    /// Call before the first change to a group's receipts, flags or tombstone in a transaction:
    /// remembers whether the view was maintained up to here (the triggers count this
    /// transaction's changes too, so the stamp cannot be compared at the end).
    mutating func overlayBaseline(_ group: GroupID) throws {
        guard overlay.freshAtStart[group] == nil else { return }
        overlay.freshAtStart[group] = try db.overlayGroup(group).map { $0.fresh && $0.regular } ?? false
    }

    /// Repairs the view of every group this transaction changed.
    mutating func maintainOverlays() throws {
        let groups = Set(overlay.stored.keys).union(overlay.committed.keys).union(overlay.rebuild)
        for group in groups.sorted() { try maintainOverlay(group) }
    }

    private mutating func maintainOverlay(_ group: GroupID) throws {
        let stored = overlay.stored.removeValue(forKey: group) ?? []
        let committed = overlay.committed.removeValue(forKey: group) ?? []
        let rebuild = overlay.rebuild.remove(group) != nil
        if try isTombstoned(group) {
            overlay.hasEntities[group] = nil
            return try db.deleteOverlay(group)
        }
        let freshAtStart = overlay.freshAtStart.removeValue(forKey: group) ?? false
        guard !rebuild, freshAtStart, try db.overlayGroup(group) != nil else { return try rebuildOverlay(group) }
        // An `entity.write` joining the view, or one waiting in it, needs the write-aware repair;
        // one stored and committed here (a device that sequences) never enters the view.
        let committedHere = Set(committed.map(\.receipt.cid))
        let joiningWrite = stored.contains { $0.type == EntityWrite.receiptType && !committedHere.contains($0.cid) }
        let waitingWrites = try db.hasOverlayMergeSteps(group)
        if joiningWrite || waitingWrites {
            return try maintainOverlayWithWrites(
                group, stored: stored, committed: committed, waitingWrites: waitingWrites)
        }

        var repair = OverlayRepair()
        let storedNow = Set(stored.map(\.cid))
        for (c, changedBase) in committed {
            let p = OverlayPosition(c)
            guard !storedNow.contains(c.cid), let step = try db.overlayStep(group, p) else {
                // Never in the view: only the committed state under it moved.
                if changedBase { repair.refold(from: nil) }
                continue
            }
            let wasHead = try db.firstOverlayStep(group) == p
            try db.deleteOverlayStep(group, p)
            repair.changed(at: p)
            if let key = step.key { repair.keys.insert(key) }
            // The head's step was folded over the committed state, so its commit gives the state
            // every later step already assumed. Elsewhere, a state change moves under later steps.
            if wasHead { continue }
            if changedBase { repair.refold(from: nil) } else if step.state != nil { repair.refold(from: p) }
        }

        let flagged = stored.isEmpty ? [:] : try db.flaggedAuthors(group: group)
        let joining = stored.filter { r in
            !committedHere.contains(r.cid) && flagged[r.author].map { r.counter < $0 } ?? true
        }
        let batch = OverlayBatch(joining)
        var inserts = [(r: Receipt, p: OverlayPosition, op: GroupOperation?)]()
        // Keys are read only when a sealed receipt joins: nothing per write in a plaintext group.
        let keys = joining.contains { GroupOperation.looksSealed($0.body) } ? try epochKeys(group) : [:]
        for r in joining {
            guard try keepsOrderRegular(r, flagged: flagged, batch: batch) else { return try rebuildOverlay(group) }
            let p = OverlayPosition(r)
            let op = try openedOperation(r)
            repair.changed(at: p)
            if op?.changesGroupState == true { repair.refold(from: p) }
            inserts.append((r, p, op))
        }
        // Before the first checkpoint (the usual case: no group operation waiting) the state is
        // the committed one, decoded once for the batch. After one (a member added offline, a
        // group whose creation is not committed yet), the checkpoint's state is decoded once
        // for the receipts that follow it, not once each: this loop adds no checkpoint.
        let firstCheckpoint = inserts.isEmpty ? nil : try db.firstOverlayCheckpoint(group)
        var lastCheckpoint: (at: OverlayPosition, state: GroupState?)?
        for (r, p, op) in inserts {
            guard op?.changesGroupState != true, !repair.refoldCovers(p) else {
                // Checked by the refold: stored as rejected without a checkpoint until then.
                try db.insertOverlayStep(group, p, key: op?.entityKey, rejected: true, state: nil)
                continue
            }
            let before =
                try firstCheckpoint.map { p < $0 } ?? true
                ? committedState(group) : checkpointState(group, before: p, last: &lastCheckpoint)
            let outcome = Fold.step(r, group: group, state: before, keys: { keys[$0] })
            try db.insertOverlayStep(group, p, key: op?.entityKey, rejected: outcome.rejected != nil, state: nil)
            if outcome.rejected == nil, let key = op?.entityKey { repair.keys.insert(key) }
        }
        var finalState: GroupState??
        if let start = repair.refoldStart { finalState = try refoldOverlay(group, from: start, repair: &repair) }
        for key in repair.keys.sorted() { try refreshOverlayEntity(group, key: key) }
        if let finalState {
            try db.saveOverlayGroup(group, state: finalState?.storedBytes, regular: true)
        } else {
            try db.markOverlayMaintained(group)
        }
    }

    /// `stateBefore(group, p)`, decoding the checkpoint's state only when it is not `last`'s
    /// (which it then becomes): its position is read from the index first.
    private mutating func checkpointState(
        _ group: GroupID, before p: OverlayPosition, last: inout (at: OverlayPosition, state: GroupState?)?
    ) throws -> GroupState? {
        guard let at = try db.overlayCheckpointPosition(group, before: p) else { return try committedState(group) }
        if let last, last.at == at { return last.state }
        let state = try stateBefore(group, p)
        last = (at, state)
        return state
    }

    /// The group state just before position `p`: the last checkpoint, or the committed state.
    mutating func stateBefore(_ group: GroupID, _ p: OverlayPosition?) throws -> GroupState? {
        if let p, let bytes = try db.overlayCheckpoint(group, before: p) { return try GroupState(storedBytes: bytes) }
        return try committedState(group)
    }

    /// Whether `r` joins the view without breaking "tentative order = position order": every
    /// tentative predecessor (parent, previous counter) sits before it and every tentative
    /// successor after it. Edges to committed receipts and to flagged ones do not count (§11).
    /// Edges inside `batch` (this transaction's receipts joining the view) are checked in memory.
    func keepsOrderRegular(_ r: Receipt, flagged: [DeviceID: UInt64], batch: OverlayBatch) throws -> Bool {
        let p = OverlayPosition(r)
        guard p.storable else { return false }
        func inView(_ author: DeviceID, _ counter: UInt64) -> Bool { flagged[author].map { counter < $0 } ?? true }
        func before(_ held: (position: OverlayPosition, author: DeviceID, counter: UInt64, committed: Bool)?) -> Bool {
            guard let held, !held.committed, inView(held.author, held.counter) else { return true }
            return held.position < p
        }
        for parent in r.parents {
            if let q = batch.byCID[parent] {
                if OverlayPosition(q) > p { return false }
            } else if !before(try db.receiptPosition(parent)) {
                return false
            }
        }
        if r.counter > 1 {
            if let q = batch.byCounter[OverlayBatch.Key(author: r.author, counter: r.counter - 1)] {
                if OverlayPosition(q) > p { return false }
            } else if !before(try db.receiptPosition(group: r.group, author: r.author, counter: r.counter - 1)) {
                return false
            }
        }
        // Counters are stored contiguously, so a next counter can only be in this batch.
        if let q = batch.byCounter[OverlayBatch.Key(author: r.author, counter: r.counter + 1)], OverlayPosition(q) < p {
            return false
        }
        for child in try db.tentativeChildren(of: r.cid) where inView(child.author, child.counter) && child.position < p
        { return false }
        return true
    }
}
