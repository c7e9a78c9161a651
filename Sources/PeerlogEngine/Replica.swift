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

    /// Verifies, stores and applies receipts and envelopes from anywhere (peers, imports,
    /// captures). Work goes in batches of `limits.ingestBatchSize` receipts, each with the
    /// envelopes that name them (so commits keep pace with arrivals); signatures of the next
    /// batch are checked on the other cores while the current batch is written.
    /// `peer`: the device that sent them (recorded with any that fail verification).
    public func ingest(
        receipts: [Receipt], envelopes: [Envelope] = [], from peer: DeviceID? = nil
    ) throws -> IngestReport {
        let batches = Self.batches(receipts: receipts, envelopes: envelopes, size: limits.ingestBatchSize)
        var report = IngestReport()
        guard !batches.isEmpty else { return report }
        var prepared = try prepare(batches[0])
        for i in batches.indices {
            let current = prepared
            let next = i + 1 < batches.count ? batches[i + 1] : nil
            // Write this batch while the next one's signatures are checked: a fork and a join
            // on two threads, both done when this returns.
            let written = Mutex<Result<IngestReport, any Error>?>(nil)
            let checked = Mutex<Result<PreparedBatch, any Error>?>(nil)
            DispatchQueue.concurrentPerform(iterations: next == nil ? 1 : 2) { branch in
                if branch == 1, let next {
                    let r = Result { try self.prepare(next) }
                    checked.withLock { $0 = r }
                    return
                }
                let r = Result { try self.write(current, from: peer) }
                written.withLock { $0 = r }
            }
            report.merge(try written.withLock { $0! }.get())
            if let r = checked.withLock({ $0 }) { prepared = try r.get() }
        }
        hlc.withLock { clock in
            for r in receipts { clock.observe(r.hlc, wallMillis: self.clock()) }
        }
        return report
    }

    /// Stores and applies one prepared batch in one transaction.
    private func write(_ batch: PreparedBatch, from peer: DeviceID?) throws -> IngestReport {
        try write { p in
            p.report.duplicates += batch.duplicates
            p.source = peer
            for (r, problem) in zip(batch.receipts, batch.receiptChecks) {
                if let problem {
                    try p.recordInvalid(r, reason: problem)
                } else {
                    try p.ingest(receipt: r, verified: true)
                }
            }
            for (e, problem) in zip(batch.envelopes, batch.envelopeChecks) {
                if let problem {
                    p.report.rejected.append((e.receipt, problem))
                } else {
                    try p.ingest(envelope: e, verified: true)
                }
            }
        }
    }

    /// A batch with its duplicates removed and its signatures checked (nil: valid).
    struct PreparedBatch: Sendable {
        var receipts: [Receipt]
        var receiptChecks: [String?]
        var envelopes: [Envelope]
        var envelopeChecks: [String?]
        var duplicates: Int
    }

    /// Splits input into batches of receipts, each followed by the envelopes naming them (in
    /// seq order); envelopes for receipts not in the input come last.
    static func batches(
        receipts: [Receipt], envelopes: [Envelope], size: Int
    ) -> [(receipts: [Receipt], envelopes: [Envelope])] {
        var byCID = [CID: [Envelope]]()
        for e in envelopes { byCID[e.receipt, default: []].append(e) }
        var out = [(receipts: [Receipt], envelopes: [Envelope])]()
        for start in stride(from: 0, to: receipts.count, by: size) {
            let chunk = Array(receipts[start..<min(start + size, receipts.count)])
            var attached = [Envelope]()
            for r in chunk { if let es = byCID.removeValue(forKey: r.cid) { attached += es } }
            out.append((chunk, attached.sorted { $0.seq < $1.seq }))
        }
        let rest = byCID.values.flatMap { $0 }.sorted { $0.group != $1.group ? $0.group < $1.group : $0.seq < $1.seq }
        for start in stride(from: 0, to: rest.count, by: size) {
            out.append(([], Array(rest[start..<min(start + size, rest.count)])))
        }
        return out
    }

    /// Drops known CIDs (before paying for signature checks) and verifies the rest in parallel.
    func prepare(_ batch: (receipts: [Receipt], envelopes: [Envelope])) throws -> PreparedBatch {
        let (known, verifiedCertificates) = try store.read { db in
            (
                try batch.receipts.filter {
                    try db.receiptExists($0.cid) || db.pendingReceiptExists($0.cid)
                        || db.processedOutcome($0.cid).map({ $0 != .invalid }) == true
                },
                try db.knownCertificates(Set(batch.receipts.map(\.certificate.cid)))
            )
        }
        let knownSet = Set(known.map(\.cid))
        var seen = Set<CID>()
        let fresh = batch.receipts.filter { !knownSet.contains($0.cid) && seen.insert($0.cid).inserted }
        let envelopeChecks = Self.checkEnvelopes(batch.envelopes)
        return PreparedBatch(
            receipts: fresh, receiptChecks: Self.verifyInParallel(fresh, verifiedCertificates: verifiedCertificates),
            envelopes: batch.envelopes, envelopeChecks: envelopeChecks, duplicates: batch.receipts.count - fresh.count)
    }

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
        let now = clock()
        var fromPeer = false
        var report = try store.write { db in
            var p = try Pipeline(db: db, local: local, limits: limits, now: now, gated: sequenceGate != nil)
            try body(&p)
            try p.settle()
            if !p.report.invalid.isEmpty {
                try db.trimInvalid(peer: p.source, perPeer: limits.maxEvidencePerPeer, total: limits.maxEvidence)
            }
            fromPeer = p.source != nil
            return p.report
        }
        deliver(report.events, fromPeer: fromPeer)
        gateBacklog.add(report.gated)
        for group in report.rotations.sorted() { try? rotateEpochIfDue(group) }
        for share in report.keyShares {
            // Best effort: the device asks again at its next accept or connection otherwise.
            try? shareEpochKeys(share.group, with: share.certificate)
        }
        if !report.snapshotsDue.isEmpty {
            let due = report.snapshotsDue
            report.snapshotsDue = []
            snapshotAndCompact(due, into: &report)
        }
        return report
    }

    /// Receipt signatures and certificate chains, checked on all cores. Certificates already
    /// in the store were verified when stored; each other distinct one is verified once.
    static func verifyInParallel(_ receipts: [Receipt], verifiedCertificates: Set<CID> = []) -> [String?] {
        var certificates = [CID: VerificationResult]()
        for cid in verifiedCertificates { certificates[cid] = .valid }
        for r in receipts where certificates[r.certificate.cid] == nil {
            certificates[r.certificate.cid] = r.certificate.verify()
        }
        let certOK = certificates
        return inParallel(receipts) { r in
            if case .invalid(let why) = certOK[r.certificate.cid]! { return why }
            if case .invalid(let why) = r.verify(certificateVerified: true) { return why }
            return nil
        }
    }

    /// Applies `check` to every element on all cores, keeping the order of results.
    static func inParallel<T: Sendable>(_ items: [T], _ check: @Sendable (T) -> String?) -> [String?] {
        let results = Mutex([String?](repeating: nil, count: items.count))
        let chunks = max(1, min(items.count / 64, 32))
        DispatchQueue.concurrentPerform(iterations: chunks) { c in
            var local = [(Int, String)]()
            for i in stride(from: c, to: items.count, by: chunks) {
                if let why = check(items[i]) { local.append((i, why)) }
            }
            results.withLock { for (i, why) in local { $0[i] = why } }
        }
        return results.withLock { $0 }
    }
}

// MARK: - Reads

extension Replica {
    /// Groups this replica knows, by id.
    public func groupIDs() throws -> [GroupID] { try store.read { try $0.knownGroups().sorted() } }

    /// Whether `groupIDs()` holds `group` (one lookup: what a write checks first).
    public func knowsGroup(_ group: GroupID) throws -> Bool { try store.read { try $0.knowsGroup(group) } }

    /// Finds a group by id text or by (unique) name.
    public func resolveGroup(_ text: String) throws -> GroupID {
        if let id = try? GroupID(string: text) { return id }
        var matches = [GroupID]()
        for id in try groupIDs() where try state(of: id, view: .tentative)?.name == text { matches.append(id) }
        guard let first = matches.first else {
            throw ReplicaError(.groupNotFound, "no group named or with id \"\(text)\"")
        }
        guard matches.count == 1 else {
            throw ReplicaError(.ambiguousGroupName, "several groups are named \"\(text)\"; use the group id")
        }
        return first
    }

    /// The group's state in `view`, or nil when no `group.created` took effect in that view.
    public func state(of group: GroupID, view: View) throws -> GroupState? {
        try store.read { try fold(group: group, view: view, db: $0, entities: .none).state }
    }

    /// Members with where each one's standing comes from.
    public func members(of group: GroupID, view: View) throws -> [MemberView] {
        try store.read { db in
            let committed = try db.groupStateBlob(group: group).map { try GroupState(storedBytes: $0) }
            let current = try fold(group: group, view: view, db: db, entities: .none).state
            let rows = try db.members(group: group)
            return (current?.sortedMembers ?? []).map { m in
                let same = committed?.members[m.identity] == m
                let since = rows.first { $0.identity == m.identity.bytes }?.sinceSeq ?? 0
                return MemberView(member: m, status: same ? .committed(seq: since) : .tentative)
            }
        }
    }

    /// The current value of entity `key` in `view`, or nil when no receipt set it or it was deleted.
    public func entity(_ key: String, in group: GroupID, view: View) throws -> EntityValue? {
        try store.read { try fold(group: group, view: view, db: $0, entities: .key(key)).entities[key] }
    }

    /// Every entity of the group in `view`, sorted by key bytes (UTF-8).
    public func entities(in group: GroupID, view: View) throws -> [EntityValue] {
        try store.read {
            try fold(group: group, view: view, db: $0).entities.values.sorted {
                Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8))
            }
        }
    }

    /// The deterministic digest of the group's materialized state in a view (docs/PROTOCOL.md §12).
    public func stateHash(of group: GroupID, view: View) throws -> [UInt8] {
        try store.read { try fold(group: group, view: view, db: $0).stateHash }
    }

    /// The committed state hash recomputed by replaying the stored committed log from nothing (or
    /// from the group's floor snapshot, §23.2, whose content is checked against its hash),
    /// ignoring the materialized tables: equal to `stateHash(.committed)` in a consistent store.
    public func replayedStateHash(of group: GroupID) throws -> [UInt8] {
        try store.read { db in
            var (fold, from) = try Self.replayBase(group: group, db: db)
            fold.keys = try KeyringStorage.keys(group: group, db: db, local: local)
            for item in try db.committedLog(group: group, fromSeq: from) {
                _ = fold.apply(item.receipt, status: .committed(seq: item.seq))
            }
            return fold.stateHash
        }
    }

    /// The group's log: committed receipts in seq order, then (in the tentative view) the
    /// tentative ones in tentative order, each marked and with its outcome.
    public func log(of group: GroupID, view: View) throws -> [LogItem] {
        try store.read { db in
            var items = try db.committedLog(group: group).map {
                LogItem(receipt: $0.receipt, status: .committed(seq: $0.seq), rejected: $0.rejected)
            }
            guard view == .tentative else { return items }
            var fold = try committedFold(group: group, db: db)
            try openSealed(in: &fold, db: db)
            for r in try tentativeReceipts(group: group, db: db) {
                items.append(LogItem(receipt: r, status: .tentative, rejected: fold.apply(r, status: .tentative)))
            }
            return items
        }
    }

    /// Committed high-water mark, tentative count, and per-author contiguous counters.
    public func vector(of group: GroupID) throws -> SequenceVector {
        try store.read { db in
            SequenceVector(committed: try db.committedSeq(group: group), authors: try db.authorCounters(group: group))
        }
    }

    /// How many of the group's held receipts have no seq yet (tentative).
    public func tentativeCount(of group: GroupID) throws -> Int {
        try store.read { try $0.tentativeCount(group: group) }
    }

    /// Items that gave up (too many retries, too old: `ReplicaLimits`), in the order they gave up.
    public func deadLetters() throws -> [QueuedItem] { try store.read { try $0.deadLetters() } }

    /// Receipts refused because their signature or certificate failed, newest first: what they
    /// claim and which peer sent them (evidence of a forgery attempt or corruption).
    public func invalidReceipts(limit: Int = 1_000) throws -> [InvalidReceipt] {
        try store.read { try $0.invalidReceipts(limit: limit) }
    }

    /// What waits now: receipts for missing author counters, then envelopes for a seq gap,
    /// each sorted by group.
    public func pending() throws -> [QueuedItem] {
        try store.read { try $0.allPendingReceipts() + $0.allPendingEnvelopes() }
    }

    // MARK: View construction

    /// Which entities a fold materializes: reads of one key or of membership stay cheap on big groups.
    enum EntityScope: Equatable {
        case none
        case key(String)
        case all
    }

    /// `state: false` leaves the group state out (the caller sets it).
    func committedFold(
        group: GroupID, db: StoreDB, entities scope: EntityScope = .all, state withState: Bool = true
    ) throws -> Fold {
        let state = withState ? try db.groupStateBlob(group: group).map { try GroupState(storedBytes: $0) } : nil
        var entities = [String: EntityValue]()
        func add(_ e: (key: String, value: [UInt8], cid: CID, seq: UInt64)) throws {
            entities[e.key] = EntityValue(
                key: e.key, value: try CBORDecoder.decodeStrict(e.value), cid: e.cid, status: .committed(seq: e.seq))
        }
        switch scope {
        case .none: break
        case .key(let key): if let e = try db.entity(group: group, key: key) { try add((key, e.value, e.cid, e.seq)) }
        case .all: for e in try db.entities(group: group) { try add(e) }
        }
        var fold = Fold(group: group, state: state, entities: entities)
        fold.scope = scope
        return fold
    }

    /// Gives a fold of an encrypted group the keys this device holds, so the tentative sealed
    /// receipts folded on top open (§22.5); read only where receipts are folded, not per read.
    func openSealed(in fold: inout Fold, db: StoreDB) throws {
        if fold.state?.encryption != nil {
            fold.keys = try KeyringStorage.keys(group: fold.group, db: db, local: local)
        }
    }

    /// Tentative receipts in tentative order, without those of authors flagged for equivocation.
    func tentativeReceipts(group: GroupID, db: StoreDB) throws -> [Receipt] {
        let flagged = try db.flaggedAuthors(group: group)
        let held = try db.tentativeReceipts(group: group).map(\.receipt).filter { r in
            flagged[r.author].map { r.counter < $0 } ?? true
        }
        return TentativeOrder.order(held)
    }

    /// The group in a view: the committed tables, and for the tentative view the maintained
    /// overlay on top (docs/PROTOCOL.md §11.1), or a fold from scratch where it is not maintained.
    func fold(group: GroupID, view: View, db: StoreDB, entities scope: EntityScope = .all) throws -> Fold {
        guard view == .tentative, try !db.isTombstoned(group: group), let overlay = try db.overlayGroup(group),
            overlay.fresh
        else {
            return try foldFromScratch(group: group, view: view, db: db, entities: scope)
        }
        var fold = try committedFold(group: group, db: db, entities: scope, state: false)
        fold.state = try overlay.state.map { try GroupState(storedBytes: $0) }
        if fold.state?.status == .deleted {
            fold.entities = [:]  // a tentative deletion drops every entity (§10.1)
            return fold
        }
        func shadow(_ key: String, _ value: [UInt8]?, _ cid: CID) throws {
            fold.entities[key] = try value.map {
                EntityValue(key: key, value: try CBORDecoder.decodeStrict($0), cid: cid, status: .tentative)
            }
        }
        switch scope {
        case .none: break
        case .key(let key): if let row = try db.overlayEntity(group, key: key) { try shadow(key, row.value, row.cid) }
        case .all: for row in try db.overlayEntities(group) { try shadow(row.key, row.value, row.cid) }
        }
        return fold
    }

    /// The oracle: the committed tables plus every tentative receipt folded in tentative order.
    func foldFromScratch(group: GroupID, view: View, db: StoreDB, entities scope: EntityScope = .all) throws -> Fold {
        var fold = try committedFold(group: group, db: db, entities: scope)
        if view == .tentative, try !db.isTombstoned(group: group) {
            try openSealed(in: &fold, db: db)
            for r in try tentativeReceipts(group: group, db: db) { _ = fold.apply(r, status: .tentative) }
        }
        return fold
    }
}

/// What a replica holds of a group: the basis of anti-entropy.
public struct SequenceVector: Hashable, Sendable {
    /// Highest committed seq (contiguous from 1).
    public let committed: UInt64
    /// Per author device, the highest contiguous author counter held, by device id.
    public let authors: [(DeviceID, UInt64)]

    /// Equal when `committed` and every (device, counter) pair, in order, are equal.
    public static func == (l: SequenceVector, r: SequenceVector) -> Bool {
        l.committed == r.committed && l.authors.map(\.0) == r.authors.map(\.0)
            && l.authors.map(\.1) == r.authors.map(\.1)
    }

    /// Hashes `committed` and the pairs in order, consistent with `==`.
    public func hash(into h: inout Hasher) {
        h.combine(committed)
        for (d, c) in authors {
            h.combine(d)
            h.combine(c)
        }
    }
}
