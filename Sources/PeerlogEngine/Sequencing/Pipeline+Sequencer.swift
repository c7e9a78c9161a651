import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// What a sequencer pass would do in one group, in tentative order: refuse a receipt or give it
/// the next seq. `Pipeline.planSequencing` computes it from the committed state without writing;
/// a device on its own store applies it at once, a relay with a `SequenceGate` reserves its
/// assignments first (`Replica+SequenceGate.swift`, docs/PROTOCOL.md §19.3).
struct SequencingPlan: Sendable {
    enum Step: Sendable {
        case assign(seq: UInt64, receipt: Receipt)
        case refuse(Receipt, reason: String)
    }

    let group: GroupID
    var steps: [Step] = []
    /// Parents of candidates that this store does not hold (to be requested).
    var missingParents: [CID] = []
    /// The pass met a committed state this device does not sequence (or a group no longer active).
    var stopped = false
    /// The pass ended at its limit of assignments: more may follow once these are committed.
    var full = false
    var assignments = 0
    /// The pass read a window of the tentative receipts, and more lie beyond it.
    var windowFilled = false

    /// The steps before the first assignment: decided on the committed state alone.
    var leadingRefusals: [(receipt: Receipt, reason: String)] {
        var out = [(receipt: Receipt, reason: String)]()
        for step in steps {
            guard case .refuse(let r, let reason) = step else { break }
            out.append((r, reason))
        }
        return out
    }
}

extension Pipeline {
    /// When this device is the group's solo sequencer or its relay (or created the group and
    /// nothing is committed yet), assigns the next seqs to tentative receipts in tentative order and
    /// commits them. Receipts that the committed state does not authorize are refused, not
    /// sequenced; receipts whose parents are not held yet wait. With a `SequenceGate` nothing is
    /// assigned here: refusals before the first assignment are recorded, and the group is left
    /// to the gate's driver (`report.gated`), which reserves the assignments and then commits them.
    mutating func sequenceIfAuthority(_ group: GroupID) throws {
        // Gated, only the refusals before the first assignment are needed here: a plan that
        // stops at its second assignment reads a window of the backlog, not all of it.
        guard let plan = try planSequencing(group, maxAssignments: gated ? 1 : .max) else { return }
        if gated {
            report.sequencedHere.insert(group)
            for (r, reason) in plan.leadingRefusals { try refuse(r, reason: reason, group: group) }
            if plan.assignments > 0, !reservedHere.contains(group) { report.gated.insert(group) }
        } else {
            try applyUngated(plan)
        }
        if !plan.stopped, !plan.missingParents.isEmpty {
            try request(.requestReceipts(group: group, cids: Array(Set(plan.missingParents)).sorted()))
        }
    }

    /// The pass over `group` without writing anything, or nil where this device does not
    /// sequence. The committed state advances in memory through each assignment (as `commit`
    /// would advance it), so later receipts are judged as they will be at their seq. At most
    /// `maxAssignments` assignments (`full` then says the pass stopped there).
    ///
    /// A bounded pass reads only the earliest tentative receipts by (HLC, CID) not refused
    /// already, a window of `planWindow(for:)`, so a pass costs the same however long the
    /// backlog behind it (as the elected leader's `assignableReceipts`). With honest clocks (an
    /// HLC after its parents' and its author's previous one) the window's order is the start
    /// of the whole set's. When the window holds more than it assigned, the plan says `full`
    /// and the caller passes again; a window that yields no step at all (receipts whose parents
    /// lie beyond it, which only clocks that run backwards produce) is planned again over the
    /// whole set, so such receipts cannot stall the group.
    mutating func planSequencing(_ group: GroupID, maxAssignments: Int = .max) throws -> SequencingPlan? {
        let window = planWindow(for: maxAssignments)
        guard var plan = try planSequencing(group, maxAssignments: maxAssignments, window: window) else { return nil }
        if plan.windowFilled, !plan.stopped, !plan.full {
            if plan.steps.isEmpty {
                plan = try planSequencing(group, maxAssignments: maxAssignments, window: nil) ?? plan
            } else {
                plan.full = true
            }
        }
        return plan
    }

    /// How many of the earliest tentative receipts a pass of at most `maxAssignments` reads
    /// (nil: all of them).
    func planWindow(for maxAssignments: Int) -> Int? {
        maxAssignments == .max ? nil : max(limits.sequencingWindow, 2 * maxAssignments)
    }

    private mutating func planSequencing(
        _ group: GroupID, maxAssignments: Int, window: Int?
    ) throws -> SequencingPlan? {
        guard try !isTombstoned(group) else { return nil }
        var state = try committedState(group)
        if let state {
            guard sequencesHere(state) else { return nil }
        } else if try !db.hasTentativeCreation(group: group, by: local.device) {
            return nil  // not created yet, and not by us: someone else sequences seq 1
        }
        var plan = SequencingPlan(group: group)
        let refused = try db.refusals(group: group)
        let flagged = try db.flaggedAuthors(group: group)
        let tentative =
            try window.map {
                try db.earliestUnrefusedTentativeReceipts(group: group, limit: $0, known: caches.storedHere)
            } ?? db.tentativeReceipts(group: group, known: caches.storedHere)
        plan.windowFilled = window.map { tentative.count >= $0 } ?? false
        let candidates = tentative.map(\.receipt).filter { r in
            refused[r.cid] == nil && (flagged[r.author].map { r.counter < $0 } ?? true)
        }
        guard !candidates.isEmpty else { return plan }
        var placed = Set<CID>()
        var seq = try db.committedSeq(group: group)
        // Below a floor (§23.4) pruned receipts are not held: a parent this replica holds in no
        // form counts as committed there (group operations, never pruned, are held or queued).
        let hasFloor = try db.floor(group: group) != nil
        for r in TentativeOrder.order(candidates) {
            if let state {
                guard sequencesHere(state), state.status == .active else {
                    plan.stopped = true
                    break
                }
            } else if !(r.type == "group.created" && r.author == local.device) {
                continue  // only the creating device may commit seq 1
            }
            // Causal completeness: every parent is committed, refused, or placed earlier in this pass.
            var missing = [CID]()
            for p in r.parents where !placed.contains(p) && refused[p] == nil {
                if try db.committedSeq(of: p) == nil { missing.append(p) }
            }
            if hasFloor {
                missing = try missing.filter {
                    try db.receiptExists($0) || db.pendingReceiptExists($0) || db.processedOutcome($0) != nil
                }
            }
            if !missing.isEmpty {
                plan.missingParents += try missing.filter { try !db.receiptExists($0) }
                continue
            }
            switch Self.stateAfter(r, state: state) {
            case .failure(let problem):
                plan.steps.append(.refuse(r, reason: problem.reason))
            case .success(let next):
                guard plan.assignments < maxAssignments else {
                    plan.full = true
                    return plan
                }
                seq += 1
                plan.steps.append(.assign(seq: seq, receipt: r))
                plan.assignments += 1
                state = next
            }
            placed.insert(r.cid)
        }
        return plan
    }

    /// A device on its own store: commits the plan's assignments now, with batched runs of
    /// envelopes signed together at the end (one signature per run).
    private mutating func applyUngated(_ plan: SequencingPlan) throws {
        var run = [CID]()
        var runStart: UInt64 = 0
        for step in plan.steps {
            switch step {
            case .refuse(let r, let reason):
                try refuse(r, reason: reason, group: plan.group)
            case .assign(let seq, let r):
                try commit(seq: seq, receipt: r) { db, outcome, reason in
                    try db.insertUnsignedEnvelope(
                        group: r.group, seq: seq, cid: r.cid, term: 0, outcome: outcome, reason: reason)
                }
                if run.isEmpty { runStart = seq }
                run.append(r.cid)
            }
        }
        try signRun(group: plan.group, firstSeq: runStart, receipts: run)
    }

    /// A relay with a shared store: commits a plan whose assignments the store admitted, each
    /// with the signed envelope it holds. Checks first that nothing the plan relied on moved:
    /// each seq is the next one here and its receipt is held and not committed (a seq already
    /// committed with the same receipt was committed by an earlier pass, and is skipped). False
    /// at the first that does not hold: the group is marked contended, and the rest is left to
    /// the catch-up from the store, which holds the reserved rows.
    mutating func commitReserved(_ plan: SequencingPlan, envelopes: [UInt64: Envelope]) throws -> Bool {
        reservedHere.insert(plan.group)
        try db.keepWholeRuns(envelopes.values.map { ($0, nil) }, runs: &caches.envelopeRuns)
        var next = try db.committedSeq(group: plan.group) + 1
        for step in plan.steps {
            switch step {
            case .refuse(let r, let reason):
                guard try db.loadReceipt(r.cid)?.seq == nil, try db.refusals(group: plan.group)[r.cid] == nil else {
                    continue
                }
                try refuse(r, reason: reason, group: plan.group)
            case .assign(let seq, let r):
                let stored = try db.loadReceipt(r.cid)
                if let committed = stored?.seq, committed == seq { continue }
                guard let envelope = envelopes[seq], envelope.receipt == r.cid, seq == next, stored != nil,
                    stored?.seq == nil
                else {
                    report.contended.insert(plan.group)
                    return false
                }
                try commit(envelope, receipt: r)
                next += 1
            }
        }
        return true
    }

    /// Records that this sequencer does not sequence `r` (§19.1), with the rule it breaks.
    private mutating func refuse(_ r: Receipt, reason: String, group: GroupID) throws {
        try db.insertRefusal(r.cid, group: group, reason: reason, at: now)
        report.events.append(.refused(group: group, cid: r.cid, reason: reason))
    }

    /// Signs the seqs committed in one pass (a single envelope for one seq, batched runs of
    /// up to `EnvelopeRun.maxLength` otherwise) into their envelope rows.
    mutating func signRun(group: GroupID, firstSeq: UInt64, receipts: [CID]) throws {
        guard !receipts.isEmpty else { return }
        // Each run's items go in as one run row with its leaves (§10); a single envelope whole.
        for items in try EnvelopeRun.signEachRun(
            group: group, firstSeq: firstSeq, receipts: receipts, term: 0, receivedAt: now, key: local.signingKey)
        {
            if items[0].run == nil { try db.setEnvelopeForm(items[0]) } else { try db.setRunForm(items) }
        }
    }

    /// Whether this device sequences the group: its solo device or its relay.
    func sequencesHere(_ state: GroupState) -> Bool {
        switch state.authority {
        case .solo(let device): device == local.device
        case .relay(let key, _): key == local.device
        case .elected: false
        }
    }

    /// The committed state after `r` at the next seq (unchanged by an entity or application
    /// write, as `commit` leaves it), or why the committed state rejects `r`.
    static func stateAfter(_ r: Receipt, state: GroupState?) -> Result<GroupState?, RuleViolation> {
        do {
            let op = try GroupOperation(receiptType: r.type, body: r.body)
            return GroupRules.apply(op, sender: r.identity, device: r.author, group: r.group, to: state)
                .map { next in op.changesGroupState ? next : state }
        } catch {
            return .failure(error)
        }
    }
}
