import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore

/// The apply pipeline for one write transaction: receipts and envelopes in; state changes,
/// actions and events out. Deterministic given the store, the inputs and `now`; no I/O
/// beyond the transaction, no clock reads.
struct Pipeline {
    let db: StoreDB
    let local: LocalDevice
    let limits: ReplicaLimits
    let now: UInt64
    /// A shared relay store must admit each assignment first (`SequenceGate`): the pipeline
    /// then plans its assignments and leaves them to the gate's driver.
    let gated: Bool
    var report = IngestReport()
    /// The peer whose receipts are being ingested (nil: local, an import, a retry).
    var source: DeviceID?

    /// Groups whose envelopes or sequencing must be revisited at the end of the batch.
    var touched: [GroupID] = []
    /// Groups whose reserved assignments this transaction commits (not planned again here).
    var reservedHere: Set<GroupID> = []
    private var touchedSet: Set<GroupID> = []
    /// Groups whose committed seq changed in this transaction (written once, in `settle`).
    var seqDirty: Set<GroupID> = []
    /// What this transaction already read or wrote, so it does not query it again.
    var caches = TransactionCaches()
    /// What this transaction did to each group's tentative view, repaired at the end of `settle`.
    var overlay = OverlayNotes()
    /// What the change log needs to write its rows at the end of `settle`.
    var changeLog = ChangeLogNotes()
    /// The epoch keys this transaction opened or received.
    var keys = EpochKeyNotes()

    /// Per-transaction caches of what the pipeline would otherwise query per item.
    struct TransactionCaches {
        /// Committed group state (nil entries: group not created).
        var state = Memo<GroupID, GroupState?>()
        var tombstones = Memo<GroupID, Bool>()
        var knownCertificates: Set<CID> = []
        var pendingReceiptCounts = Memo<GroupID, Int>()
        var pendingEnvelopeCounts = Memo<GroupID, Int>()
        var heldCounters = Memo<AuthorKey, UInt64>()
        var committedSeqs = Memo<GroupID, UInt64>()
        var earliestOlderTentative = Memo<GroupID, CID?>()
        /// Receipts stored and envelopes queued by this transaction, so commits need not reload them.
        var storedHere: [CID: Receipt] = [:]
        /// Receipts stored since the last `settle`, in order.
        var storedSinceSettle: [Receipt] = []
        var queuedHere: [EnvelopeKey: Envelope] = [:]
        /// The committed value this transaction last wrote to each key (saves reading it back).
        var committedHere: [ViewKey: CommittedValue] = [:]
        /// Batched runs' rows looked up or made by this transaction.
        var envelopeRuns = EnvelopeRunRows()
    }

    /// What this transaction did to each group's tentative view (`Pipeline+Overlay`).
    struct OverlayNotes {
        var stored: [GroupID: [Receipt]] = [:]
        var committed: [GroupID: [(receipt: Receipt, changedBase: Bool)]] = [:]
        var rebuild: Set<GroupID> = []
        /// Per group, whether its view was maintained when this transaction first changed the
        /// group (before the triggers counted this transaction's own changes).
        var freshAtStart: [GroupID: Bool] = [:]
        /// Per group, whether its view may hold tentative entity rows (nil: not looked yet).
        var hasEntities: [GroupID: Bool] = [:]
    }

    /// The change log's notes (`Pipeline+ChangeLog`).
    struct ChangeLogNotes {
        /// Each key's visible state before this transaction first changed it.
        var viewBefore: [ViewKey: VisibleEntity] = [:]
        /// How many of `report.events` the change log has seen.
        var eventsLogged = 0
    }

    /// Epoch keys (§22.6, `Pipeline+EpochKeys`).
    struct EpochKeyNotes {
        /// The keys this device holds, per group, opened for the transaction.
        var held = Memo<GroupID, [EpochKeyID: EpochKey]>()
        /// Groups where a key arrived that committed receipts were waiting for: rebuilt in `settle`.
        var arrived: Set<GroupID> = []
    }

    struct EnvelopeKey: Hashable {
        let group: GroupID
        let seq: UInt64
        let cid: CID
    }

    struct AuthorKey: Hashable {
        let group: GroupID
        let author: DeviceID
    }
    /// Receipt row ids at or above this were stored by this transaction.
    let firstNewReceiptID: Int64

    init(db: StoreDB, local: LocalDevice, limits: ReplicaLimits, now: UInt64, gated: Bool = false) throws {
        self.db = db
        self.local = local
        self.limits = limits
        self.now = now
        self.gated = gated
        firstNewReceiptID = try db.lastReceiptRowID() + 1
    }

    /// Hands out what the transaction reported so far and starts a new report: the next part
    /// of a multi-part write (`Replica.write(parts:_:)`) reports only its own work.
    mutating func takeReport() -> IngestReport {
        defer {
            report = IngestReport()
            changeLog.eventsLogged = 0
        }
        return report
    }

    mutating func touch(_ group: GroupID) {
        if touchedSet.insert(group).inserted { touched.append(group) }
    }

    mutating func pendingReceiptCount(_ group: GroupID) throws -> Int {
        try caches.pendingReceiptCounts.value(group) { [db] in try db.pendingReceiptCount(group: $0) }
    }

    mutating func pendingEnvelopeCount(_ group: GroupID) throws -> Int {
        try caches.pendingEnvelopeCounts.value(group) { [db] in try db.pendingEnvelopeCount(group: $0) }
    }

    mutating func heldCounter(_ group: GroupID, _ author: DeviceID) throws -> UInt64 {
        try caches.heldCounters.value(AuthorKey(group: group, author: author)) { [db] in
            try db.heldCounter(group: $0.group, author: $0.author)
        }
    }

    mutating func isTombstoned(_ group: GroupID) throws -> Bool {
        try caches.tombstones.value(group) { [db] in try db.isTombstoned(group: $0) }
    }

    /// The committed state of a group (after its committed prefix), or nil if not created.
    mutating func committedState(_ group: GroupID) throws -> GroupState? {
        try caches.state.value(group) { [db] in try db.groupStateBlob(group: $0).map { try GroupState(storedBytes: $0) }
        }
    }

    /// Emits a backfill action unless the same request is still in flight (the storm guard).
    mutating func request(_ action: ReplicaAction) throws {
        let (group, kind, subject, from, to): (GroupID, BackfillKind, [UInt8], UInt64, UInt64)
        switch action {
        case .requestSeqRange(let g, let f, let t): (group, kind, subject, from, to) = (g, .seq, [], f, t)
        case .requestAuthorCounters(let g, let a, let f, let t):
            (group, kind, subject, from, to) = (g, .author, a.bytes, f, t)
        case .requestReceipts(let g, let cids):
            (group, kind, subject, from, to) = (g, .cid, cids.first?.bytes ?? [], 0, 0)
        }
        if let at = try db.backfillRequestedAt(group: group, kind: kind, subject: subject, from: from),
            now < at + limits.backfillGuardMillis
        {
            return
        }
        try db.noteBackfillRequest(group: group, kind: kind, subject: subject, from: from, to: to, at: now)
        report.actions.append(action)
    }

    /// Revisits every touched group: commit what can be committed, then sequence if we are the
    /// authority. Consumes them: a second `settle` in the same transaction (a local write settles
    /// inside its body, and `Replica.write` settles again) revisits only groups touched since.
    mutating func settle() throws {
        var i = 0
        while i < touched.count {
            let group = touched[i]
            try drainEnvelopes(group)
            try sequenceIfAuthority(group)
            i += 1
        }
        touched = []
        touchedSet = []
        var crossings = [GroupID]()
        for group in seqDirty.sorted() {
            // Only created groups have a row; `setGroupCommittedSeq` updates nothing otherwise.
            let before = try db.storedCommittedSeq(group: group)
            let after = try db.committedSeq(group: group)
            try db.setGroupCommittedSeq(group: group, seq: after)
            // Once per group and settle, not per commit: requests for seqs now held are answered.
            try db.clearBackfillRequests(group: group, kind: .seq, subject: [], upTo: after)
            let k = try db.snapshotInterval(group: group) ?? limits.snapshotInterval
            if k > 0, before / k < after / k { crossings.append(group) }
        }
        seqDirty = []
        for group in keys.arrived.sorted() { try rematerialize(group) }
        keys.arrived = []
        // Made after this transaction commits, in their own (`Replica.snapshotAndCompact`): a
        // snapshot or compaction that cannot be written (a full disk) never holds back a commit.
        report.snapshotsDue += crossings
        let storedKeys = try entityKeysStoredInGroupsWithReorders()
        try maintainOverlays()
        try logChanges(storedKeys: storedKeys)
        keepTentativeParsed()
    }

    /// Receipts stored since the last settle that stay tentative are read back by later
    /// transactions (to be assigned a seq, then committed): kept parsed (`DecodedReceipts`).
    /// Those committed here (a catch-up, a sequencer's own writes) are not read again.
    private mutating func keepTentativeParsed() {
        guard !caches.storedSinceSettle.isEmpty else { return }
        var committed = Set<CID>()
        for case .committed(_, _, let cid, _, _) in report.events { committed.insert(cid) }
        for r in caches.storedSinceSettle where !committed.contains(r.cid) { DecodedReceipts.shared.keep(r) }
        caches.storedSinceSettle = []
    }
}
