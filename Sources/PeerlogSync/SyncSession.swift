import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer

/// The sync protocol with one peer (docs/PROTOCOL.md §15) as a state machine: bytes in,
/// actions out. It reads the local replica through ``SyncStore`` (what to offer, vectors, the
/// batches it sends, produced lazily from the store) but never writes to it: a batch the peer
/// sent comes out as ``SyncAction/ingest(_:)`` and its outcome goes back in through
/// ``ingested(_:)``; a peer's vector comes out as ``SyncAction/recordPeerVector(_:)``. No
/// clock, no other I/O. Not thread-safe: the node drives it from one serial queue.
public final class SyncSession {
    /// Protocol versions this implementation speaks.
    public static let versions: [UInt64] = [1]
    /// Hello capability: "send me committed chunks as `commits` batches" (receipts and their
    /// envelopes ingested in one step, which is much cheaper than tentative-then-commit).
    public static let commitsCapability = "commits"
    /// Hello capability: "I understand the election kinds `pre_vote_request` and `pre_vote`".
    public static let preVoteCapability = "prevote"
    /// Hello capability: "I read batched envelopes (run items, §3.5)". Peers without it get
    /// single envelopes (§15.2.4).
    public static let envelopeRunsCapability = "envelope_runs"
    /// Hello capability: "I start a group from a `snapshot` message" (§23.3). Peers without it
    /// get the log (and nothing below a compacted sender's floor).
    public static let snapshotsCapability = "snapshots"
    /// Hello capability: "I follow end-to-end encrypted groups" (§22: `group.created` with an
    /// `encryption` field, sealed bodies, `group.key`). A peer without it is sent no encrypted
    /// group: an offer of one it takes up is withdrawn with `unshared` (§15.2.4).
    public static let encryptedGroupsCapability = "encrypted_groups"
    /// Hello capability: "I send `ping` every `keepaliveIntervalMs`, and read yours" (§15.2.12).
    /// A peer that lists it and then sends nothing for `idleTimeoutMs` is gone: the session ends.
    public static let keepaliveCapability = "keepalive"
    /// Hello capability: "I answer and send blob messages" (§24.3). Blob requests go only to
    /// peers that list it.
    public static let blobsCapability = "blobs"
    /// Hello capability: "I take a `snapshot` whose bytes are a blob (`snapshot_blob`, §23.3)
    /// and fetch it". Offered with `snapshots` and `blobs`.
    public static let snapshotBlobsCapability = "snapshot_blobs"

    enum Phase { case idle, started, open, closed }

    let local: LocalDevice
    let peer: DeviceCertificate
    let store: any SyncStore
    let limits: SyncLimits
    var phase = Phase.idle
    var version: UInt64?
    var offered = Set<GroupID>()
    /// Groups we stopped syncing with this peer ("unshared" sent), with why; its late batches
    /// and requests for them are ignored, not protocol errors.
    var withdrawn = [GroupID: String]()
    /// Groups the peer stopped syncing with us: not offered again in this session unless the
    /// peer offers them anew.
    var unsharedByPeer = Set<GroupID>()
    var groups = GroupTable()
    /// The keys of `groups` (what `syncedGroups` returns without building a set per call).
    var synced = Set<GroupID>()
    /// Accepted groups in acceptance order, served round robin.
    var order = [GroupID]()
    /// Batch messages we may still send.
    var credit: UInt64 = 0
    /// Batch messages the peer may still send us.
    var granted: UInt64 = 0
    var queue = [Outgoing]()
    var inFlight = [RequestKey: InFlightRequest]()
    var inFlightByID = [UInt64: RequestKey]()
    /// The `now` of the last ``tick(now:)`` (milliseconds): requests sent since are stamped with it.
    var now: UInt64 = 0
    /// `tick(now:)` was called: before, `now` means nothing (requests wait from the first tick).
    var ticked = false
    /// The tick from which we wait for the peer's next message (`idleTimeoutMs`), and the one at
    /// which we last sent `ping`; a message received since the last tick moves the first.
    var heardAt: UInt64 = 0
    var pingedAt: UInt64 = 0
    var heardSinceTick = false
    /// The peer listed `keepalive` in its hello.
    var peerKeepsAlive = false
    /// The peer listed `blobs` in its hello.
    public internal(set) var peerServesBlobs = false
    /// The last tick at which we withheld all credit from the peer: its answers could not come.
    var creditWithheldAt: UInt64 = 0
    var nextRequestID: UInt64 = 1
    var outstandingAnswers = 0
    /// Batches handed out as `.ingest`, oldest first, each until the driver calls `ingested(_:)`.
    var awaitingIngests: [PendingIngest] = []
    /// Messages that came while batches waited to be ingested and must wait for them (any
    /// but `mayHandleBeforeIngested`): handled in order once no batch waits.
    var held: [(message: SyncMessage, size: Int)] = []
    /// The most batches handed out before the driver answers the first: past it, messages wait.
    public static let maxPendingIngests = 64
    var ignored = 0
    /// Receipts from the peer that failed verification in this session (`maxInvalidItems`).
    var invalidReceived = 0
    /// The session ended because the peer passed `maxInvalidItems`: the node refuses the device a
    /// while (`PeerPenalties`).
    public var endedForInvalidItems: Bool { invalidReceived > limits.maxInvalidItems }
    /// The peer listed `commits` in its hello.
    var sendsCommits = false
    /// The peer listed `prevote` in its hello.
    var peerPreVotes = false
    /// The peer listed `envelope_runs` in its hello.
    var peerReadsRuns = false
    /// The peer listed `snapshots` in its hello.
    var peerReadsSnapshots = false
    /// The peer's hello lists `snapshot_blobs`: a snapshot too big for a message goes as a blob.
    var peerReadsSnapshotBlobs = false
    /// The peer listed `encrypted_groups` in its hello.
    var peerReadsEncrypted = false
    /// Encrypted groups withdrawn from a peer without `encrypted_groups`: not offered again in
    /// this session (it is told once).
    var cannotFollow = Set<GroupID>()

    /// What this end offers and how it behaves; set before `start()` (`options.autoGrant` may change later).
    public var options: Options

    /// What a session offers in its hello and how it paces the peer. The defaults are what a
    /// current node does; the `offers…` switches go off only to act as a peer of an earlier
    /// version (the tests do).
    public struct Options: Sendable {
        /// Whether our hello lists `keepalive` (off only to act as a peer from before keepalives).
        public var offersKeepalive = true
        /// Whether our hello lists `blobs`.
        public var offersBlobs = true
        /// Whether our hello lists `snapshots` (off only to act as a peer from before snapshots).
        public var offersSnapshots = true
        /// Whether our hello lists `encrypted_groups` (off only to act as a peer from before them).
        public var offersEncryptedGroups = true
        /// The node trusts this peer to start a group the replica holds nothing of from its snapshot
        /// (its identity is ours, or named by `allow` or a pairing: docs/SECURITY.md "Snapshots").
        /// Set before `start()`. A replica that holds the group checks a snapshot against its own
        /// committed authority instead, whoever sends it.
        public var trustsPeerForBootstrap = false
        /// Whether our hello lists `commits` (set before `start()`; off only to exercise the
        /// `receipts` + `envelopes` pairs an older peer would get).
        public var offersCommits = true
        /// Whether our hello lists `prevote` (set before `start()`; off only to act as a peer
        /// from before pre-vote).
        public var offersPreVote = true
        /// Whether our hello lists `envelope_runs` (off only to act as a peer from before batched envelopes).
        public var offersEnvelopeRuns = true
        /// Grant one credit back after each ingested batch. A node applying backpressure turns this
        /// off and calls `grant(_:)` itself; the peer then stalls once its credit is spent.
        public var autoGrant = true
        /// The groups the hello may offer (set before `start()`; nil: every group the store
        /// holds). A node that keeps who is in each group passes the peer's, so a hello costs
        /// the groups shared with that peer, not every group held (a relay's thousands). Each
        /// is still checked (`syncSharing`); one the list misses is offered by `localChanged`
        /// or `membershipChanged` once the node sees it change.
        public var offerCandidates: [GroupID]? = nil
        /// How a receipt item of a batch is decoded: a node that decoded it already, as it
        /// arrived, passes what it kept (the same bytes decode to the same receipt).
        public var decodeReceipt: @Sendable ([UInt8]) throws -> Receipt = { try Receipt(encoded: $0) }

        /// The defaults.
        public init() {}
    }

    /// A session of `local` with the device `peer` (its certificate, from the secure channel),
    /// reading `store`, under `limits` (the §15.3 defaults unless given). Nothing is sent until
    /// `start()` (or the first `receive`, which starts it).
    public init(
        local: LocalDevice, peer: DeviceCertificate, store: any SyncStore, limits: SyncLimits = .init(),
        options: Options = .init()
    ) {
        self.options = options
        self.local = local
        self.peer = peer
        self.store = store
        self.limits = limits
    }

    /// Hello (offering the groups shared with the peer), then the initial credit.
    public func start() -> [SyncAction] {
        guard phase == .idle else { return [] }
        phase = .started
        var out = [SyncAction]()
        run(&out) { out in
            let groups = try
                (options.offerCandidates.map { try $0.filter { try store.syncSharing($0, with: peer).offers } }
                ?? store.syncOfferedGroups(to: peer)).sorted()
            offered = Set(groups)
            let offers: [(Bool, String)] = [
                (options.offersCommits, Self.commitsCapability), (options.offersPreVote, Self.preVoteCapability),
                (options.offersEnvelopeRuns, Self.envelopeRunsCapability),
                (options.offersSnapshots, Self.snapshotsCapability),
                (options.offersEncryptedGroups, Self.encryptedGroupsCapability),
                (options.offersKeepalive, Self.keepaliveCapability),
                (options.offersBlobs, Self.blobsCapability),
                (options.offersBlobs && options.offersSnapshots, Self.snapshotBlobsCapability),
            ]
            let capabilities = offers.filter(\.0).map(\.1)
            send(
                .hello(
                    versions: Self.versions, capabilities: capabilities,
                    groups: Array(groups.prefix(limits.maxGroupsPerHello))), into: &out)
            granted = limits.initialCredit
            send(.credit(limits.initialCredit), into: &out)
            sendRevocations(try store.syncRevocations(for: peer), into: &out)
        }
        return out
    }

    /// One message from the peer. A batch ends the returned actions with `.ingest`: the
    /// driver answers each `.ingest` with ``ingested(_:)``, in the order they came, and calls
    /// nothing else before the last is answered but `receive` for the peer's next messages.
    /// Their batches are handed out too, so a driver can write several in one transaction
    /// (`Replica.ingest(parts:)`); what else they carry waits for the batches before it, or
    /// (`credit`, `caught_up`, a vector of a synced group) comes out at once. A driver
    /// performs the actions `receive` returned in order, each `.ingest` answered in its place:
    /// an event then never runs before the batches the peer sent ahead of it are written.
    public func receive(_ message: [UInt8]) -> [SyncAction] {
        guard phase != .closed else { return [] }
        heardSinceTick = true
        var out = phase == .idle ? start() : []
        run(&out) { out in
            let m: SyncMessage
            do { m = try SyncMessage.decode(message, limits: limits) } catch let e as SyncCodecError {
                throw SyncFailure(e.code.wireName, e.detail)
            }
            guard awaitingIngests.isEmpty || (held.isEmpty && mayHandleBeforeIngested(m)) else {
                held.append((m, message.count))
                return
            }
            try handle(m, size: message.count, into: &out)
            if awaitingIngests.isEmpty { try pump(into: &out) }
        }
        return out
    }

    /// Whether `m` may be handled while batches wait to be ingested: another batch (up to
    /// `maxPendingIngests`, none of them a snapshot), or a message whose handling reads nothing
    /// those batches write. Everything else waits in `held`.
    func mayHandleBeforeIngested(_ m: SyncMessage) -> Bool {
        guard awaitingIngests.count < Self.maxPendingIngests, !awaitingIngests.contains(where: \.snapshot) else {
            return false
        }
        switch m {
        case .receipts, .envelopes, .commits, .credit, .ping, .caughtUp, .done: return true
        case .vector(let g, _, _): return groups[g] != nil
        default: return false
        }
    }

    /// The outcome of the last `.ingest`: the rest of that message's work (events, `refused`,
    /// credit, backfill requests, what the peer now lacks). A failure to write ends the
    /// session with an `internal` error, as any failure of the local store does.
    public func ingested(_ outcome: Result<IngestReport, any Error>) -> [SyncAction] {
        guard !awaitingIngests.isEmpty else {
            preconditionFailure("ingested(_:) without an .ingest action pending")
        }
        let pending = awaitingIngests.removeFirst()
        guard phase != .closed else {
            held = []
            return []
        }
        var out = [SyncAction]()
        run(&out) { out in
            try afterIngest(pending, report: outcome.get(), into: &out)
            // What waited for the batches, in order, until one is a batch again.
            while awaitingIngests.isEmpty, !held.isEmpty, phase != .closed {
                let (m, size) = held.removeFirst()
                try handle(m, size: size, into: &out)
            }
            if awaitingIngests.isEmpty { try pump(into: &out) }
        }
        return out
    }

    /// The blob of a snapshot the peer sent as one (an `.ingest` whose bundle has a `blob`,
    /// which the driver does not ingest) was fetched: its `bytes` (nil when it could not be,
    /// which refuses it) are ingested now, as an inline snapshot would have been. Nothing when
    /// no such snapshot waits for `group`.
    public func snapshotBlobFetched(group: GroupID, bytes: [UInt8]?) -> [SyncAction] {
        requireNoIngestPending()
        guard phase != .closed, let deferred = groups[group]?.deferredSnapshot, let b = deferred.ingest.snapshot
        else { return [] }
        groups[group]!.deferredSnapshot = nil
        awaitingIngests.append(deferred.pending)
        var ingest = deferred.ingest
        ingest.snapshot = SnapshotBundle(
            snapshot: bytes ?? [], anchorEnvelope: b.anchorEnvelope, anchorReceipt: b.anchorReceipt,
            keyHistory: b.keyHistory, authorityHistory: b.authorityHistory)
        return [.ingest(ingest)]
    }

    /// The driver must answer `.ingest` before anything else: what follows depends on it.
    func requireNoIngestPending() {
        precondition(awaitingIngests.isEmpty, "SyncSession: call ingested(_:) for the pending .ingest actions first")
    }

    /// The local replica changed `group` (a write or an ingest from another peer): push what the
    /// peer lacks, or offer the group if it has just become shared (e.g. the peer was invited).
    public func localChanged(group: GroupID) -> [SyncAction] {
        requireNoIngestPending()
        guard phase == .open else { return [] }
        var out = [SyncAction]()
        run(&out) { out in
            if groups[group] != nil {
                groups[group]!.dirty = true
                if !groups[group]!.serves { groups[group]!.serves = try store.syncSharing(group, with: peer).serves }
            } else if !unsharedByPeer.contains(group), try store.syncSharing(group, with: peer).offers {
                offerAnew(group, into: &out)
            }
            try pump(into: &out)
        }
        return out
    }

    /// Membership or authority may have changed (a group operation was stored or committed):
    /// re-checks `changed` groups (nil: every group) against the local view (§15.2.10). A group
    /// the peer may no longer have is withdrawn ("unshared" with the reason): nothing more is
    /// pushed, served or accepted for it. A group that became shared is offered. Naming the
    /// groups keeps the work per group operation independent of how many groups are synced.
    public func membershipChanged(groups changed: [GroupID]? = nil) -> [SyncAction] {
        requireNoIngestPending()
        guard phase == .open else { return [] }
        var out = [SyncAction]()
        run(&out) { out in
            let recheck = changed.map { $0.filter { groups[$0] != nil } } ?? order
            for g in recheck where !groups[g]!.closing {
                let sharing = try store.syncSharing(g, with: peer)
                if !sharing.acceptsOffer {
                    let why =
                        sharing.open
                        ? "\(peer.identity) is not a member of group \(g) in the sender's view"
                        : "group \(g) was deleted"
                    if sharing.open, try sendDeparture(g, reason: why) { continue }
                    withdraw(g, reason: why, into: &out)
                } else if sharing.serves != groups[g]!.serves {
                    groups[g]!.serves = sharing.serves
                    groups[g]!.dirty = true
                }
            }
            let unsynced = { (g: GroupID) in self.groups[g] == nil && !self.unsharedByPeer.contains(g) }
            let newlyShared =
                try changed.map { try $0.filter { try unsynced($0) && store.syncSharing($0, with: peer).offers } }
                ?? store.syncOfferedGroups(to: peer).filter(unsynced)
            for g in newlyShared { offerAnew(g, into: &out) }
            try pump(into: &out)
        }
        return out
    }

    /// Turns replica backfill actions (e.g. from `Replica.retryPending()`) into requests to this peer.
    public func requestBackfill(_ actions: [ReplicaAction]) -> [SyncAction] {
        requireNoIngestPending()
        guard phase == .open else { return [] }
        var out = [SyncAction]()
        request(actions, into: &out)
        return out
    }

    /// Sends an election message for a group shared with this peer (no credit needed).
    ///
    /// A peer without the `prevote` capability would close the session on a pre-vote kind,
    /// and never answers one: its grant is returned at once as if it had sent it
    /// (PROTOCOL.md §18.3). Such a voter has no pre-vote protection itself, so the
    /// pre-candidate then treats it as plain Raft would: its real vote still decides.
    public func sendElection(group: GroupID, _ message: SequencerMessage<CID>) -> [SyncAction] {
        requireNoIngestPending()
        guard phase == .open, groups[group] != nil || offered.contains(group) else { return [] }
        guard message.isPreVote, !peerPreVotes else {
            return [.send(SyncMessage.election(group: group, message).encoded())]
        }
        guard case .preVoteRequest(let term, _, _) = message else { return [] }
        return [.event(.election(group: group, from: peer.device, .preVote(term: term, granted: true)))]
    }

    /// Sends device revocations (docs/PROTOCOL.md §15.1) in messages of at most
    /// `maxRevocationsPerMessage`: a node calls it when it stores a new one.
    public func sendRevocations(_ items: [[UInt8]]) -> [SyncAction] {
        requireNoIngestPending()
        guard phase != .closed, phase != .idle else { return [] }
        var out = [SyncAction]()
        sendRevocations(items, into: &out)
        return out
    }

    func sendRevocations(_ items: [[UInt8]], into out: inout [SyncAction]) {
        var rest = items[...]
        while !rest.isEmpty {
            let chunk = rest.prefix(max(1, limits.maxRevocationsPerMessage))
            send(.revocations(items: Array(chunk)), into: &out)
            rest = rest.dropFirst(chunk.count)
        }
    }

    /// Lets the peer send `n` more batches (for nodes that manage credit with `options.autoGrant` off).
    public func grant(_ n: UInt64) -> [SyncAction] {
        requireNoIngestPending()
        guard phase != .closed, n > 0 else { return [] }
        granted += n
        return [.send(SyncMessage.credit(n).encoded())]
    }

    /// Whether this session syncs `group` with the peer now (both offered it, neither withdrew).
    public func syncs(_ group: GroupID) -> Bool { phase == .open && groups[group] != nil }

    /// The groups this session syncs now (no store reads: the node asks on every tick).
    public var syncedGroups: Set<GroupID> { phase == .open ? synced : [] }

    /// Counters and marks for the node's status (§15.4). A group's local mark is read from the
    /// store, falling back on the session's own when the read fails; with `readingStore` false
    /// it is the session's own (the last the session read), and nothing is read: a node that
    /// reads its groups' marks itself, once for all sessions, asks so.
    public func status(readingStore: Bool = true) -> SyncSessionStatus {
        let list = order.map { g in
            let s = groups[g]!
            let localMark = readingStore ? (try? store.vector(of: g).committed) ?? s.localCommitted : s.localCommitted
            return SyncGroupStatus(
                group: g, peerCommitted: s.peerVectorKnown ? s.sent.committed : nil, localCommitted: localMark,
                sent: s.sentTraffic, received: s.receivedTraffic, caughtUpSent: s.caughtUpSent,
                caughtUpReceived: s.caughtUpReceived)
        }
        return SyncSessionStatus(
            version: version, groups: list, creditAvailable: credit, creditGranted: granted,
            queuedBatches: queue.count { $0.isBatch }, requestsInFlight: inFlight.count, ignoredMessages: ignored,
            closed: phase == .closed)
    }

    // MARK: Plumbing

    /// Runs `body`; a failure sends "error" and closes.
    func run(_ out: inout [SyncAction], _ body: (inout [SyncAction]) throws -> Void) {
        do { try body(&out) } catch let f as SyncFailure {
            fail(f, into: &out)
        } catch {
            fail(SyncFailure("internal", "local store: \(error)"), into: &out)
        }
    }

    func fail(_ f: SyncFailure, into out: inout [SyncAction]) {
        guard phase != .closed else { return }
        phase = .closed
        queue.removeAll()
        out.append(
            .send(
                SyncMessage.error(
                    code: f.code, message: String(f.message.utf8.prefix(limits.maxErrorMessageBytes)) ?? f.code
                ).encoded()))
        out.append(.close(reason: "\(f.code): \(f.message)"))
        out.append(.event(.protocolError("\(f.code): \(f.message)")))
    }

    func send(_ m: SyncMessage, into out: inout [SyncAction]) { out.append(.send(m.encoded())) }

    /// Offers a group that became shared after hello, by our vector.
    func offerAnew(_ group: GroupID, into out: inout [SyncAction]) {
        guard !cannotFollow.contains(group) else { return }
        offered.insert(group)
        withdrawn[group] = nil
        run(&out) { out in try accept(group, serves: true, into: &out) }
    }

    /// Accepts a group: sends our vector, after which the peer may send items for it. `serves`:
    /// we also send it what it lacks (it is a member in our view).
    func accept(_ group: GroupID, serves: Bool, into out: inout [SyncAction]) throws {
        if !peerReadsEncrypted, try store.syncSharing(group, with: peer).encrypted {
            // A peer from before §22 would refuse the group's first receipt and stall at it.
            guard cannotFollow.insert(group).inserted else { return }
            withdraw(
                group,
                reason:
                    "group \(group) is end-to-end encrypted and this peer does not list the encrypted_groups capability: upgrade it to sync this group",
                into: &out)
            return
        }
        let v = try store.vector(of: group)
        var s = GroupSync()
        s.serves = serves
        s.localCommitted = v.committed
        groups[group] = s
        synced.insert(group)
        order.append(group)
        send(
            .vector(
                group: group, committed: v.committed,
                authors: v.authors.map { AuthorCounter(author: $0.0, counter: $0.1) }), into: &out)
    }

    /// A member removed (or gone) in our committed view is sent the committed positions it lacks
    /// up to its departure, so it holds the signed receipt that removed it and knows, then
    /// `unshared` (queued after them: it leaves once they have). False when that is more than one
    /// batch (or nothing): the caller withdraws at once, and the peer learns it from any member.
    func sendDeparture(_ g: GroupID, reason: String) throws -> Bool {
        guard var s = groups[g], s.peerVectorKnown, let departure = try store.syncDepartureSeq(g, of: peer.identity),
            departure > s.planned.committed, departure - s.planned.committed <= UInt64(limits.maxBatchItems)
        else { return false }
        guard
            try committedChunk(
                g, from: s.planned.committed + 1, through: departure, knowledge: &s.planned, answer: false)
                == departure
        else { return false }
        s.closing = true
        groups[g] = s
        queue.append(
            Outgoing(
                bytes: unshared(g, reason: reason).encoded(), group: g, isBatch: false, answer: false,
                withdraws: reason))
        return true
    }

    /// Stops syncing a group with this peer and tells it why.
    func withdraw(_ group: GroupID, reason: String, into out: inout [SyncAction]) {
        forget(group)
        send(unshared(group, reason: reason), into: &out)
        withdrew(group, reason: reason, into: &out)
    }

    /// The "unshared" telling the peer why, within `maxErrorMessageBytes`.
    func unshared(_ group: GroupID, reason: String) -> SyncMessage {
        .unshared(group: group, reason: String(reason.utf8.prefix(limits.maxErrorMessageBytes)) ?? "unshared")
    }

    /// Records a group as withdrawn once its "unshared" has left (late messages are ignored).
    func withdrew(_ group: GroupID, reason: String, into out: inout [SyncAction]) {
        withdrawn[group] = reason
        out.append(.event(.withdrew(group: group, reason: reason)))
    }

    /// Drops everything the session holds for a group: its state, queued messages, answers owed
    /// and requests in flight.
    func forget(_ group: GroupID) {
        if let s = groups.removeValue(forKey: group) { outstandingAnswers -= s.answers.count }
        if synced.remove(group) != nil { order.removeAll { $0 == group } }
        offered.remove(group)
        queue.removeAll { $0.group == group }
        for (key, request) in inFlight where key.group == group {
            inFlight[key] = nil
            inFlightByID[request.id] = nil
        }
    }
}
