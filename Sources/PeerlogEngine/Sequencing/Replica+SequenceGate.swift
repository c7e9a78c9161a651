import Dispatch
import PeerlogEncoding
import PeerlogModel
import PeerlogStore
import Synchronization

/// The driver of a relay whose assignments a shared store admits first (`SequenceGate`,
/// docs/PROTOCOL.md §19.3). A write on such a replica assigns nothing: it notes the groups with
/// receipts to assign. The driver then, per group: plans the pass in a read transaction (the
/// pipeline's `planSequencing`, at most `limits.maxReservationBatch` assignments), signs its
/// consecutive seqs as envelope runs, reserves them all in one call to the gate (no SQLite
/// transaction is open meanwhile), and commits them in a write transaction of their own
/// (`commitReserved`). A batch the gate refuses commits nothing and marks the group contended.
/// Where the gate lends the group to another process (`mayAssign` false: a lease, §19.3), the
/// driver assigns nothing and hands the receipts it would assign over to the gate instead.
extension Replica {
    /// Plans, reserves and commits the passes of every group a write left for the gate, until
    /// each is done or contended. Returns what the commits did (`contended`: groups where the
    /// gate refused a batch; catch up from the shared store, then call this again). One caller
    /// at a time (`runSequenceGate` is the usual one). Does nothing without a gate. After a
    /// failure of the gate the groups not done stay noted for the next call.
    @discardableResult
    public func sequenceThroughGate() async throws -> IngestReport {
        guard let gate = sequenceGate else { return IngestReport() }
        var report = IngestReport()
        var groups = gateBacklog.take().sorted()
        while let group = groups.first {
            do {
                report.merge(try await passThroughGate(group, gate: gate))
            } catch {
                gateBacklog.add(Set(groups))
                throw error
            }
            groups.removeFirst()
        }
        return report
    }

    /// Runs `sequenceThroughGate` whenever a write leaves work for the gate, until cancelled.
    /// A failing gate is reported to `onError` and tried again after a pause (50 ms, doubling
    /// up to 5 s).
    public func runSequenceGate(onError: @escaping @Sendable (any Error) -> Void = { _ in }) async {
        var pause = Duration.milliseconds(50)
        while !Task.isCancelled {
            await gateBacklog.wait()
            guard !Task.isCancelled else { return }
            do {
                try await sequenceThroughGate()
                pause = .milliseconds(50)
            } catch {
                onError(error)
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    /// One group: plan, reserve, commit, while the passes fill their batch.
    private func passThroughGate(_ group: GroupID, gate: any SequenceGate) async throws -> IngestReport {
        var report = IngestReport()
        while true {
            guard try await gate.mayAssign(in: group) else {
                try await handOver(group, gate: gate)
                return report
            }
            // A holder plans from the store and drops what it kept: should it lose the lease,
            // its first hand-over pass plans.
            gateBacklog.forgetPlan(group)
            _ = gateBacklog.takeFresh(group)
            let now = clock()
            let plan = try await offPool { [self] in
                try store.read { db in
                    var p = try Pipeline(db: db, local: local, limits: limits, now: now, gated: true)
                    return try p.planSequencing(group, maxAssignments: limits.maxReservationBatch)
                }
            }
            guard let plan, !plan.steps.isEmpty else { return report }
            // The pass's seqs are consecutive: signed as runs (§3.5), one signature per
            // `EnvelopeRun.maxLength` seqs, which each member and every other relay process
            // then verifies once per run rather than once per seq.
            var assigned = [(seq: UInt64, receipt: Receipt)]()
            for case .assign(let seq, let r) in plan.steps { assigned.append((seq, r)) }
            let signed =
                try assigned.first.map { first in
                    try EnvelopeRun.signRuns(
                        group: group, firstSeq: first.seq, receipts: assigned.map(\.receipt.cid), term: 0,
                        receivedAt: now, key: local.signingKey)
                } ?? []
            precondition(zip(signed, assigned).allSatisfy { $0.seq == $1.seq }, "a pass assigns consecutive seqs")
            let batch = zip(signed, assigned).map { (envelope: $0, receipt: $1.receipt) }
            let envelopes = Dictionary(uniqueKeysWithValues: signed.map { ($0.seq, $0) })
            if !batch.isEmpty, try await gate.reserve(batch) == .taken {
                report.contended.insert(group)
                return report
            }
            let (committed, written) = try await offPool { [self] in
                var committed = false
                let written = try write { p in committed = try p.commitReserved(plan, envelopes: envelopes) }
                return (committed, written)
            }
            report.merge(written)
            guard committed, plan.full else { return report }
        }
    }

    /// A group the gate lends to another process: passes the receipts that writes stored since
    /// the last pass (kept in the order stored) to the gate, only those not handed over before.
    /// Where the kept receipts may not be all (the first pass since start, since this process
    /// held the lease, since they overflowed, or since a hand-over failed), the pass first plans
    /// as if assigning, at most `maxReservationBatch` as a holder's pass does, and passes what
    /// it would assign; it plans again at the next pass while such plans fill.
    private func handOver(_ group: GroupID, gate: any SequenceGate) async throws {
        let fresh = gateBacklog.takeFresh(group)
        do {
            try await handOver(group, fresh: fresh, gate: gate)
        } catch {
            gateBacklog.forgetPlan(group)  // what it took is in the store: the next pass plans
            throw error
        }
    }

    private func handOver(_ group: GroupID, fresh: [Receipt], gate: any SequenceGate) async throws {
        var receipts = [Receipt]()
        if gateBacklog.needsPlan(group) {
            let now = clock()
            let plan = try await offPool { [self] in
                try store.read { db in
                    var p = try Pipeline(db: db, local: local, limits: limits, now: now, gated: true)
                    return try p.planSequencing(group, maxAssignments: limits.maxReservationBatch)
                }
            }
            for case .assign(_, let r) in plan?.steps ?? [] { receipts.append(r) }
            if !(plan?.full ?? false) { gateBacklog.planned(group) }
        }
        receipts += fresh
        let unhanded = gateBacklog.notHandedOver(receipts)
        guard !unhanded.isEmpty else { return }
        try await gate.handOver(unhanded, of: group)
        gateBacklog.handedOver(unhanded)
    }

    /// Runs blocking store work on the driver's queue, not on the cooperative pool.
    private func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            gateBacklog.queue.async { c.resume(with: Result { try body() }) }
        }
    }
}

/// The groups waiting for the gate's driver, the driver's wake-up, and the receipts it handed
/// over to another process (so each is passed once, not at every pass until it commits).
final class GateBacklog: Sendable {
    private let groups = Mutex(Set<GroupID>())
    private let handed = Mutex(Set<CID>())
    private let fresh = Mutex<(receipts: [GroupID: [Receipt]], count: Int)>(([:], 0))
    /// Groups whose tentative receipts are all handed over or kept in `fresh`: a hand-over pass
    /// in any other group plans first.
    private let complete = Mutex(Set<GroupID>())
    /// Stored receipts kept for a hand-over at most (beyond it a receipt waits for a planned
    /// hand-over pass, which reads the earliest tentative receipts from the store).
    static let maxFresh = 16_384
    /// Handed-over receipts remembered at most: past it the memory starts again, and a receipt
    /// still waiting is handed over once more (the store takes it once).
    static let maxHandedOver = 65_536
    private let added = AsyncSignal()
    /// Where the driver's transactions run.
    let queue = DispatchQueue(label: "peerlog.sequence-gate")

    func add(_ groups: Set<GroupID>) {
        guard !groups.isEmpty else { return }
        self.groups.withLock { $0.formUnion(groups) }
        added.fire()
    }

    /// Keeps the receipts a write stored in the groups it left for the driver, except those it
    /// also committed, for the driver's next pass in their group.
    func stored(_ receipts: [Receipt], in groups: Set<GroupID>, events: [ReplicaEvent]) {
        guard !receipts.isEmpty, !groups.isEmpty else { return }
        var committed = Set<CID>()
        for case .committed(_, _, let cid, _, _) in events { committed.insert(cid) }
        fresh.withLock { f in
            for r in receipts where groups.contains(r.group) && !committed.contains(r.cid) {
                guard f.count < Self.maxFresh else {
                    forgetPlan(r.group)
                    continue
                }
                f.receipts[r.group, default: []].append(r)
                f.count += 1
            }
        }
    }

    /// Whether a hand-over pass in `group` must plan first (see `complete`).
    func needsPlan(_ group: GroupID) -> Bool { !complete.withLock { $0.contains(group) } }

    /// A planned hand-over pass covered every tentative receipt of `group`.
    func planned(_ group: GroupID) { _ = complete.withLock { $0.insert(group) } }

    /// The kept receipts of `group` may not be all: its next hand-over pass plans.
    func forgetPlan(_ group: GroupID) { _ = complete.withLock { $0.remove(group) } }

    /// The receipts kept for `group` since its last pass, in the order stored (and forgets them).
    func takeFresh(_ group: GroupID) -> [Receipt] {
        fresh.withLock { f in
            guard let taken = f.receipts.removeValue(forKey: group) else { return [] }
            f.count -= taken.count
            return taken
        }
    }

    /// The receipts not handed over before, each once, in the order given.
    func notHandedOver(_ receipts: [Receipt]) -> [Receipt] {
        var seen = Set<CID>()
        return handed.withLock { h in receipts.filter { !h.contains($0.cid) && seen.insert($0.cid).inserted } }
    }

    func handedOver(_ receipts: [Receipt]) {
        handed.withLock { h in
            if h.count + receipts.count > Self.maxHandedOver { h = [] }
            h.formUnion(receipts.map(\.cid))
        }
    }

    func take() -> Set<GroupID> {
        groups.withLock { g in
            defer { g = [] }
            return g
        }
    }

    /// Returns once a group is waiting, or the task is cancelled.
    func wait() async {
        let seen = added.generation
        guard groups.withLock({ $0.isEmpty }) else { return }
        await added.wait(after: seen)
    }
}
