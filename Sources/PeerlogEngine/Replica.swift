import Dispatch
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore
import Synchronization

/// The local replica: a store plus the apply pipeline, for one device. This is what the
/// daemon, the CLI and embedding apps use. Every write is one SQLite transaction; events go
/// to subscribers after it commits.
public final class Replica: Sendable {
    /// The SQLite store (package access: SQL stays inside the package).
    package let store: Store
    /// This device: its key, certificate and identity, which sign every local write.
    public let local: LocalDevice
    /// The limits the replica enforces (queues, retries, batches, change-log retention).
    public let limits: ReplicaLimits
    /// The injected clock (milliseconds): the module reads time through it only.
    let clock: @Sendable () -> UInt64
    /// Set on a relay that shares its store of record with other relay processes: its
    /// assignments are then committed by `runSequenceGate` (or `sequenceThroughGate`), after
    /// the gate admits them, not by the write that stored their receipts.
    public let sequenceGate: (any SequenceGate)?
    /// Groups with assignments waiting for the gate's driver (Replica+SequenceGate.swift).
    let gateBacklog = GateBacklog()
    /// Receipts a node checked as they arrived (`checkAhead`), which its ingest then skips.
    package let signaturesCheckedAhead = SignatureMemo(capacity: 16_384)
    /// Internal for the local write path (Replica+LocalWrite.swift).
    let hlc = Mutex(HybridLogicalClock())
    private let subscribers = Mutex<[Int: @Sendable (ReplicaEvent) -> Void]>([:])
    /// Automatic snapshots and compactions that failed, by group, until one succeeds.
    let maintenanceFailures = Mutex<[GroupID: MaintenanceSkipped]>([:])
    private let nextSubscriber = Atomic<Int>(0)
    /// Called once per delivery, after the subscribers (`afterEachDelivery`).
    private let deliveryHandlers = Mutex<[@Sendable (_ fromPeer: Bool) -> Void]>([])

    /// Opens (or creates) the replica database at `path`. Cheap: nothing is scanned at open.
    /// `access: .readOnly` for a home that cannot be written: reads work, writes throw.
    public convenience init(
        path: String, device: LocalDevice, access: StoreAccess = .readWrite, limits: ReplicaLimits = ReplicaLimits(),
        clock: @escaping @Sendable () -> UInt64 = WallClock.nowMillis,
        sequenceGate: (any SequenceGate)? = nil
    ) throws {
        try self.init(
            store: Store(path: path, access: access), device: device, limits: limits, clock: clock,
            sequenceGate: sequenceGate)
        if access == .readWrite,
            try store.read({ try $0.identityDevices(of: device.identity) }).allSatisfy({
                $0.certificate != device.certificate
            })
        {
            let now = clock()
            _ = try store.write { try $0.insertIdentityDevice(device.certificate, at: now) }
        }
    }

    /// An empty replica in memory with this device recorded: what a reading command sees of a
    /// home whose store was never created, without creating it.
    package static func empty(device: LocalDevice) throws -> Replica {
        let replica = Replica(store: try Store(inMemory: ()), device: device)
        let now = replica.clock()
        _ = try replica.store.write { try $0.insertIdentityDevice(device.certificate, at: now) }
        return replica
    }

    package init(
        store: Store, device: LocalDevice, limits: ReplicaLimits = ReplicaLimits(),
        clock: @escaping @Sendable () -> UInt64 = WallClock.nowMillis,
        sequenceGate: (any SequenceGate)? = nil
    ) {
        self.store = store
        local = device
        self.limits = limits
        self.clock = clock
        self.sequenceGate = sequenceGate
    }

    // MARK: Subscriptions

    /// Calls `handler` with every event, in order, after each transaction commits.
    @discardableResult
    public func subscribe(_ handler: @escaping @Sendable (ReplicaEvent) -> Void) -> Int {
        let id = nextSubscriber.add(1, ordering: .relaxed).newValue
        subscribers.withLock { $0[id] = handler }
        return id
    }

    /// Stops calling the handler `subscribe` returned `id` for; an unknown `id` is ignored.
    public func unsubscribe(_ id: Int) { _ = subscribers.withLock { $0.removeValue(forKey: id) } }

    /// Calls `handler` once after the events of each committed write were delivered (however
    /// many receipts it held), saying whether a peer sent what was written: the facade tells a
    /// daemon of another process of its own writes here.
    package func afterEachDelivery(_ handler: @escaping @Sendable (_ fromPeer: Bool) -> Void) {
        deliveryHandlers.withLock { $0.append(handler) }
    }

    private func deliver(_ events: [ReplicaEvent], fromPeer: Bool) {
        guard !events.isEmpty else { return }
        let handlers = subscribers.withLock { $0.sorted { $0.key < $1.key }.map(\.value) }
        for event in events { for h in handlers { h(event) } }
        for h in deliveryHandlers.withLock({ $0 }) { h(fromPeer) }
    }

    // MARK: Writes

    /// Writes a local receipt: the receipt, its effect and its change-log rows commit in one
    /// transaction, and this returns only after that commit. Refused with a clear error when
    /// the group's rules (as this replica sees them, tentative receipts included) forbid it.
    /// A batch of one (`appendBatch`): one local-write path, so a single write and a batch
    /// are checked, sealed and followed by a new epoch alike.
    @discardableResult
    public func append(_ op: GroupOperation, to group: GroupID) throws -> AppendResult {
        do { return try appendBatch([op], to: group)[0] } catch let e as BatchError {
            throw ReplicaError(e.code, e.reason)
        }
    }

    /// Creates a group (this device becomes its owner and solo sequencer) and returns its id.
    /// `encryption`: an end-to-end encrypted group (docs/PROTOCOL.md §22): its first epoch key
    /// is sealed to this identity's devices in the same transaction.
    public func createGroup(
        name: String, maxMembers: Int = GroupLimits.defaultMaxMembers, id: GroupID = .random(),
        encryption: GroupEncryptionSettings? = nil
    ) throws -> GroupID {
        let group = id
        try append(.created(name: name, maxMembers: maxMembers, encryption: encryption), to: group)
        return group
    }

    /// Moves pending items that waited too long or too often to dead letters, and re-emits
    /// backfill requests for the rest (subject to the storm guard). Call it periodically.
    public func retryPending() throws -> IngestReport {
        var report = try write { p in try p.retryPending() }
        retryMaintenance(into: &report)
        return report
    }

    /// Runs a pipeline transaction, settles touched groups, and delivers events after commit.
    func write(_ body: (inout Pipeline) throws -> Void) throws -> IngestReport {
        try write(parts: 1) { p, _ in try body(&p) }[0]
    }

    /// Runs `count` bodies in one pipeline transaction, each settled before the next, and
    /// returns each one's report; after the commit, delivers their events and runs the work
    /// each left for after it (rotations, key shares, snapshots), as `count` writes would.
    func write(parts count: Int, _ body: (inout Pipeline, Int) throws -> Void) throws -> [IngestReport] {
        let now = clock()
        var fromPeer = false
        var reports = try store.write { db in
            var p = try Pipeline(db: db, local: local, limits: limits, now: now, gated: sequenceGate != nil)
            var reports = [IngestReport]()
            reports.reserveCapacity(count)
            for i in 0..<count {
                try body(&p, i)
                try p.settle()
                if !p.report.invalid.isEmpty {
                    try db.trimInvalid(peer: p.source, perPeer: limits.maxEvidencePerPeer, total: limits.maxEvidence)
                }
                fromPeer = fromPeer || p.source != nil
                reports.append(p.takeReport())
            }
            return reports
        }
        deliver(reports.flatMap(\.events), fromPeer: fromPeer)
        for report in reports {
            // Kept before the driver wakes, so that its pass finds them (`gated` lies within
            // `sequencedHere`).
            gateBacklog.stored(report.storedForGate, in: report.sequencedHere, events: report.events)
            gateBacklog.add(report.gated)
        }
        for group in Set(reports.flatMap(\.rotations)).sorted() { try? rotateEpochIfDue(group) }
        for share in reports.flatMap(\.keyShares) {
            // Best effort: the device asks again at its next accept or connection otherwise.
            try? shareEpochKeys(share.group, with: share.certificate)
        }
        for i in reports.indices where !reports[i].snapshotsDue.isEmpty {
            let due = reports[i].snapshotsDue
            reports[i].snapshotsDue = []
            snapshotAndCompact(due, into: &reports[i])
        }
        return reports
    }
}
