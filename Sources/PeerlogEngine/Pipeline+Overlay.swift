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
    mutating func noteOverlayStored(_ r: Receipt) { overlayStored[r.group, default: []].append(r) }

    mutating func noteOverlayCommitted(_ r: Receipt, changedBase: Bool) {
        overlayCommitted[r.group, default: []].append((r, changedBase))
    }

    mutating func noteOverlayRebuild(_ group: GroupID) { overlayRebuild.insert(group) }

    /// Call before the first change to a group's receipts, flags or tombstone in a transaction:
    /// remembers whether the view was maintained up to here (the triggers count this
    /// transaction's changes too, so the stamp cannot be compared at the end).
    mutating func overlayBaseline(_ group: GroupID) throws {
        guard overlayFreshAtStart[group] == nil else { return }
        overlayFreshAtStart[group] = try db.overlayGroup(group).map { $0.fresh && $0.regular } ?? false
    }

    /// Repairs the view of every group this transaction changed.
    mutating func maintainOverlays() throws {
        let groups = Set(overlayStored.keys).union(overlayCommitted.keys).union(overlayRebuild)
        for group in groups.sorted() { try maintainOverlay(group) }
    }

    private mutating func maintainOverlay(_ group: GroupID) throws {
        let stored = overlayStored.removeValue(forKey: group) ?? []
        let committed = overlayCommitted.removeValue(forKey: group) ?? []
        let rebuild = overlayRebuild.remove(group) != nil
        if try isTombstoned(group) { return try db.deleteOverlay(group) }
        let freshAtStart = overlayFreshAtStart.removeValue(forKey: group) ?? false
        guard !rebuild, freshAtStart, try db.overlayGroup(group) != nil else { return try rebuildOverlay(group) }

        var repair = OverlayRepair()
        let storedHere = Set(stored.map(\.cid)), committedHere = Set(committed.map(\.receipt.cid))
        for (c, changedBase) in committed {
            let p = OverlayPosition(c)
            guard !storedHere.contains(c.cid), let step = try db.overlayStep(group, p) else {
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
        let joining = stored.filter { r in !committedHere.contains(r.cid) && flagged[r.author].map { r.counter < $0 } ?? true }
        let batch = OverlayBatch(joining)
        var inserts = [(r: Receipt, p: OverlayPosition, op: GroupOperation?)]()
        for r in joining {
            guard try keepsOrderRegular(r, flagged: flagged, batch: batch) else { return try rebuildOverlay(group) }
            let p = OverlayPosition(r)
            let op = try? GroupOperation(receiptType: r.type, body: r.body)
            repair.changed(at: p)
            if op?.changesGroupState == true { repair.refold(from: p) }
            inserts.append((r, p, op))
        }
        // Before the first checkpoint (the usual case: no group operation waiting) the state is
        // the committed one, decoded once for the batch.
        let firstCheckpoint = inserts.isEmpty ? nil : try db.firstOverlayCheckpoint(group)
        for (r, p, op) in inserts {
            guard op?.changesGroupState != true, !repair.refoldCovers(p) else {
                // Checked by the refold: stored as rejected without a checkpoint until then.
                try db.insertOverlayStep(group, p, key: op?.entityKey, rejected: true, state: nil)
                continue
            }
            let before = try firstCheckpoint.map { p < $0 } ?? true ? committedState(group) : stateBefore(group, p)
            let outcome = Fold.step(r, group: group, state: before)
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

    /// The group state just before position `p`: the last checkpoint, or the committed state.
    mutating func stateBefore(_ group: GroupID, _ p: OverlayPosition?) throws -> GroupState? {
        if let p, let bytes = try db.overlayCheckpoint(group, before: p) { return try GroupState(storedBytes: bytes) }
        return try committedState(group)
    }

    /// Whether `r` joins the view without breaking "tentative order = position order": every
    /// tentative predecessor (parent, previous counter) sits before it and every tentative
    /// successor after it. Edges to committed receipts and to flagged ones do not count (§11).
    /// Edges inside `batch` (this transaction's receipts joining the view) are checked in memory.
    private func keepsOrderRegular(_ r: Receipt, flagged: [DeviceID: UInt64], batch: OverlayBatch) throws -> Bool {
        let p = OverlayPosition(r)
        guard p.storable else { return false }
        func inView(_ author: DeviceID, _ counter: UInt64) -> Bool { flagged[author].map { counter < $0 } ?? true }
        func before(_ held: (position: OverlayPosition, author: DeviceID, counter: UInt64, committed: Bool)?) -> Bool {
            guard let held, !held.committed, inView(held.author, held.counter) else { return true }
            return held.position < p
        }
        for parent in r.parents {
            if let q = batch.byCID[parent] { if OverlayPosition(q) > p { return false } } else if !before(try db.receiptPosition(parent)) { return false }
        }
        if r.counter > 1 {
            if let q = batch.byCounter[OverlayBatch.Key(author: r.author, counter: r.counter - 1)] {
                if OverlayPosition(q) > p { return false }
            } else if !before(try db.receiptPosition(group: r.group, author: r.author, counter: r.counter - 1)) {
                return false
            }
        }
        // Counters are stored contiguously, so a next counter can only be in this batch.
        if let q = batch.byCounter[OverlayBatch.Key(author: r.author, counter: r.counter + 1)], OverlayPosition(q) < p { return false }
        for child in try db.tentativeChildren(of: r.cid) where inView(child.author, child.counter) && child.position < p { return false }
        return true
    }

    /// Re-checks steps from `start` (nil: the first) in order, writing changed outcomes and
    /// checkpoints, until past every change of this transaction a checkpoint comes out as it was
    /// (then everything after it is unchanged too). Returns the state after the last step when
    /// the walk reached the end (nil: the stored final state still holds).
    private mutating func refoldOverlay(_ group: GroupID, from start: OverlayPosition?, repair: inout OverlayRepair) throws -> GroupState?? {
        var state = try stateBefore(group, start)
        var cursor = start
        var inclusive = true
        let page = 512
        while true {
            let steps = try db.overlaySteps(group, from: cursor, after: !inclusive, limit: page)
            for s in steps {
                let outcome = Fold.step(s.receipt!, group: group, state: state)
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
    private func refreshOverlayEntity(_ group: GroupID, key: String) throws {
        // Usually the writer was stored by this transaction (a local write): no reload then.
        guard let writer = try db.lastOverlayWriter(group, key: key), let r = try storedHere[writer.cid] ?? db.loadReceipt(writer.cid)?.receipt,
              let op = try? GroupOperation(receiptType: r.type, body: r.body) else {
            return try db.deleteOverlayEntity(group, key: key)
        }
        switch op {
        case .entityPut(_, let value): try db.putOverlayEntity(group, key: key, value: CBOREncoder.encode(value), cid: r.cid)
        default: try db.putOverlayEntity(group, key: key, value: nil, cid: r.cid)
        }
    }

    /// Builds a group's view from scratch with the oracle (`TentativeOrder`, `Fold.step`). Steps
    /// are kept only when the order is the position order; otherwise the next change rebuilds again.
    mutating func rebuildOverlay(_ group: GroupID) throws {
        try db.clearOverlay(group)
        let flagged = try db.flaggedAuthors(group: group)
        let held = try db.tentativeReceipts(group: group).map(\.receipt).filter { r in flagged[r.author].map { r.counter < $0 } ?? true }
        let order = TentativeOrder.order(held)
        let positions = order.map(OverlayPosition.init)
        let regular = positions.allSatisfy(\.storable) && zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }
        var state = try committedState(group)
        var writers = [String: (cid: CID, value: CBOR?)]()
        for (r, p) in zip(order, positions) {
            let outcome = Fold.step(r, group: group, state: state)
            let rejected = outcome.rejected != nil
            if !rejected {
                state = outcome.state
                switch outcome.op {
                case .entityPut(let key, let value): writers[key] = (r.cid, value)
                case .entityDelete(let key): writers[key] = (r.cid, nil)
                default: break
                }
            }
            if regular {
                let checkpoint = !rejected && outcome.op?.changesGroupState == true ? outcome.state?.storedBytes : nil
                try db.insertOverlayStep(group, p, key: outcome.op?.entityKey, rejected: rejected, state: checkpoint)
            }
        }
        for (key, w) in writers { try db.putOverlayEntity(group, key: key, value: w.value.map { CBOREncoder.encode($0) }, cid: w.cid) }
        try db.saveOverlayGroup(group, state: state?.storedBytes, regular: regular)
    }
}

/// The receipts a transaction adds to a group's view, by CID and by (author, counter).
struct OverlayBatch {
    struct Key: Hashable {
        let author: DeviceID
        let counter: UInt64
    }
    let byCID: [CID: Receipt]
    let byCounter: [Key: Receipt]

    init(_ receipts: [Receipt]) {
        var byCID = [CID: Receipt](), byCounter = [Key: Receipt]()
        for r in receipts {
            byCID[r.cid] = r
            byCounter[Key(author: r.author, counter: r.counter)] = r
        }
        self.byCID = byCID
        self.byCounter = byCounter
    }
}

/// What a transaction's changes require of one group's view.
struct OverlayRepair {
    /// Entity keys whose tentative row must be recomputed.
    var keys = Set<String>()
    /// The latest position this transaction inserted or removed.
    var lastChange: OverlayPosition?
    /// Where re-checking must start: `.some(nil)` from the first step.
    var refoldStart: OverlayPosition??

    mutating func changed(at p: OverlayPosition) { lastChange = max(lastChange ?? p, p) }

    mutating func refold(from p: OverlayPosition?) {
        switch refoldStart {
        case .none: refoldStart = .some(p)
        case .some(.none): break
        case .some(.some(let current)): refoldStart = .some(p.map { min($0, current) })
        }
    }

    /// Whether a step at `p` will be re-checked by the refold anyway.
    func refoldCovers(_ p: OverlayPosition) -> Bool {
        switch refoldStart {
        case .none: false
        case .some(.none): true
        case .some(.some(let start)): start <= p
        }
    }
}

extension GroupOperation {
    /// The entity key a put or delete writes.
    var entityKey: String? {
        switch self {
        case .entityPut(let key, _), .entityDelete(let key): key
        default: nil
        }
    }

    /// Whether it can change the group state (members, roles, settings, sequencer, status).
    var changesGroupState: Bool {
        switch self {
        case .entityPut, .entityDelete, .application: false
        default: true
        }
    }
}
