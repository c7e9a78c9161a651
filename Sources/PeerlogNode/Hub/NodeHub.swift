import Dispatch
import Logging
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import Synchronization

/// The loop around `NodeStateMachine`: it feeds the machine connection events, session
/// events, observations of the replica and ticks, and performs the actions it returns. It
/// owns what the machine must not: the replica, every connection's sync session, the elected
/// sequencers and the connections' send and close. All of it runs on one executor: a serial
/// queue in the daemon (the replica does blocking SQLite work, which must stay off the event
/// loops, and sessions are not thread-safe), the caller's thread in the socket-free harness.
final class NodeHub: @unchecked Sendable {
    /// Where the hub's work runs.
    enum Executor: Sendable {
        /// A serial dispatch queue, with a timer driving `tick()`.
        case queue(DispatchQueue)
        /// The calling thread, at once; no timer (the caller calls `tick()`). For tests that
        /// pump nodes into each other without sockets.
        case inline

        var isInline: Bool { if case .inline = self { true } else { false } }
    }

    let replica: Replica
    let device: LocalDevice
    /// Every session's limits (the §15.3 defaults, with the configured idle timeout).
    let syncLimits: SyncLimits
    let logger: Logger
    private let executor: Executor
    let clock: @Sendable () -> UInt64
    /// The machine's admission, copied for event loops deciding handshakes.
    private let admission: Mutex<NodeAdmission>
    /// The devices with a live connection, as the hub last published them (`isConnected`).
    private let connectedDevices = Mutex<Set<DeviceID>>([])
    /// Status requests sharing builds and not waiting long for a busy queue.
    let statusRequests = StatusRequests()
    /// Devices refused for a while after sending receipts that fail verification.
    private let penalties = Mutex(PeerPenalties())
    /// Blob requests and fetches, on a queue of their own.
    let blobs: BlobTransfers
    /// Batch messages' signatures, checked as they arrive, ahead of their ingest.
    let checkAhead: CheckAhead
    /// A `wrote` from the control socket is waiting for the queue (later ones join it).
    let lookPending = Atomic<Bool>(false)

    /// Where tap records go when a capture runs.
    let capture: CaptureControl
    let metrics: NodeMetrics
    /// Set by the node before it starts.
    let listening = Mutex<String?>(nil)
    let discoveryState = Mutex<(enabled: Bool, unavailable: String?)>((false, nil))
    /// The node around the hub; set once, before `start` (weak: the node owns the hub).
    private let delegateSlot = Mutex<WeakDelegate>(WeakDelegate())
    private struct WeakDelegate { weak var value: (any NodeHubDelegate)? }
    var delegate: (any NodeHubDelegate)? {
        get { delegateSlot.withLock { $0.value } }
        set { delegateSlot.withLock { $0.value = newValue } }
    }

    // Executor-confined state.
    private(set) var machine: NodeStateMachine
    /// This device's part in the elected sequencers of its groups.
    let election: ElectedSequencerDriver
    private var links: [UInt64: ConnectionRef] = [:]
    private var sessions: [UInt64: SyncSession] = [:]
    /// Messages read from the connections, waiting for the executor.
    let inbox = Inbox()
    /// Snapshot ingests held until their blob is here (NodeHub+SnapshotBlobs).
    var awaitingSnapshotBlobs: [SnapshotAwaitingBlob] = []
    /// Items each device's ended sessions moved, per group, so `status` counts a peer's
    /// traffic since the daemon started and a reconnection (a tie-break, a closed lid) does
    /// not zero it. At most `pastTrafficDevices` devices are kept.
    private(set) var pastTraffic: [DeviceID: [GroupID: (received: Int, sent: Int)]] = [:]
    static let pastTrafficDevices = 1024
    private var timer: DispatchSourceTimer?
    /// Each held group's members and named relay, re-read only for groups whose group
    /// operations changed; their union is who the node lets in.
    private var membership: [GroupID: GroupMembershipSummary] = [:]
    /// The groups in `membership` naming each identity a member and each relay: their keys are
    /// who is let in, and a new session may offer its peer those naming it (`offerCandidates`).
    private var groupsByMember: [IdentityID: Set<GroupID>] = [:]
    private var groupsByRelay: [RelayEndpoint: Set<GroupID>] = [:]
    /// Whether `membership` was read whole once (until then a session looks at every group).
    private var membershipRead = false
    /// The folded part of each group's status facts, as the last status read them; a group's
    /// is dropped when a group operation of it is observed (`forgetStatusFolds`), so a status
    /// folds only the groups whose operations changed.
    var statusFolds: [GroupID: GroupStatusFacts.Folded] = [:]
    /// The revocation stamp last read and the revoked devices known then.
    private var revocationStamp: Int64 = -1
    /// The store's write count when changes were last observed (`observeChanges`).
    private var observedAtWrite = -1
    private var knownRevocations: Set<RevokedDevice> = []

    init(
        replica: Replica, device: LocalDevice, allow: Set<IdentityID>, openAdmission: Bool = false, logger: Logger,
        cadence: NodeStateMachine.Cadence = .init(), clock: @escaping @Sendable () -> UInt64 = WallClock.nowMillis,
        executor: Executor = .queue(DispatchQueue(label: "peerlog.node.hub")), metrics: NodeMetrics = NodeMetrics(),
        syncLimits: SyncLimits = SyncLimits(), blobKeeping: BlobTransfers.Keeping = .init()
    ) {
        self.syncLimits = syncLimits
        checkAhead = CheckAhead(replica: replica, limits: syncLimits)
        self.metrics = metrics
        self.replica = replica
        self.device = device
        self.logger = logger
        self.clock = clock
        self.executor = executor
        self.capture = CaptureControl(logger: logger)
        self.blobs = BlobTransfers(replica: replica, logger: logger, clock: clock, keeping: blobKeeping)
        self.election = ElectedSequencerDriver(replica: replica, seed: UInt64.random(in: 0...UInt64.max))
        let admission = NodeAdmission(configured: allow.union([device.identity]), open: openAdmission)
        self.admission = Mutex(admission)
        machine = NodeStateMachine(local: device.device, admission: admission, cadence: cadence)
    }

    private func async(_ body: @escaping @Sendable () -> Void) {
        switch executor {
        case .queue(let queue): queue.async(execute: body)
        case .inline: body()
        }
    }

    /// Runs `body` on the executor and returns when it has run, without blocking the caller's
    /// thread (a task's cooperative thread must not wait on the hub's queue).
    private func onExecutor(_ body: @escaping @Sendable () -> Void) async {
        switch executor {
        case .queue(let queue):
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                queue.async {
                    body()
                    done.resume()
                }
            }
        case .inline: body()
        }
    }

    // MARK: Authorization (called from event loops during handshakes)

    /// Whether a device of this identity would be let in (for dialing discovered peers).
    func mayConnect(identity: IdentityID) -> Bool { admission.withLock { $0.mayConnect(identity: identity) } }

    func authorize(_ certificate: DeviceCertificate) -> AuthorizationDecision {
        let now = clock()
        if let why = penalties.withLock({ $0.refusal(of: certificate.device, now: now) }) { return .deny(why) }
        return admission.withLock { $0.decide(certificate) }
    }

    // MARK: Lifecycle

    /// Starts the hub: the machine, a revocation check, a first status and the tick timer.
    func start() async {
        beginStart()
        await onExecutor { [self] in startOnExecutor() }
        endStart()
    }

    /// `start()` for a hub whose executor is inline (tests drive it and its clock by hand).
    func startInline() {
        precondition(executor.isInline, "startInline() is for inline hubs; call start()")
        beginStart()
        startOnExecutor()
        endStart()
    }

    private func beginStart() {
        // Set before any blob traffic: a snapshot sent as a blob waits for it.
        blobs.onWhole = { [weak self] in self?.queueAsync { [weak self] in self?.settleSnapshotBlobs() } }
    }

    private func startOnExecutor() {
        perform(
            machine.start(
                now: clock(), stamp: (try? replica.changeStamp()) ?? [],
                groupOperations: (try? replica.groupOperationStamp()) ?? []))
        checkRevocations()
    }

    private func endStart() {
        // A first status, so a request while the hub is busy has one to answer with.
        requestStatus { _ in }
        guard case .queue(let queue) = executor else { return }
        let period = max(min(machine.cadence.poll, machine.cadence.election), 10)
        let ticker = DispatchSource.makeTimerSource(queue: queue)
        ticker.schedule(deadline: .now() + .milliseconds(Int(period)), repeating: .milliseconds(Int(period)))
        ticker.setEventHandler { [weak self] in self?.tickNow() }
        ticker.resume()
        timer = ticker
    }

    static func milliseconds(_ d: Duration) -> UInt64 {
        UInt64(max(0, d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000))
    }

    /// Stops the timer and closes every connection with a close record.
    func stop() async {
        await onExecutor { [self] in
            timer?.cancel()
            timer = nil
            perform(machine.stop())
        }
    }

    /// Time passed (the timer's tick, or a test's). On the executor.
    func tickNow() {
        perform(machine.tick(now: clock()))
        publishBlobPeers()
        settleSnapshotBlobs()
    }

    /// Connection `id`'s session, nil once it ended.
    func session(_ id: UInt64) -> SyncSession? { sessions[id] }

    /// Values that reference blobs may have arrived: the blob transfers get the connections as
    /// they are now (not as the last tick left them: a value that arrives right after a session
    /// opened is fetched at once, not a tick later) and look for new wants.
    func wakeBlobs() { blobs.valuesArrived(peers: blobPeers()) }

    /// Replaces one group's members and relay in `membership` and in the indexes over all groups.
    private func updateMembership(_ group: GroupID, to summary: GroupMembershipSummary?) {
        func index<K: Hashable>(_ index: inout [K: Set<GroupID>], _ key: K, adding: Bool) {
            if adding {
                index[key, default: []].insert(group)
            } else {
                index[key]?.remove(group)
                if index[key]?.isEmpty == true { index[key] = nil }
            }
        }
        if let old = membership[group] {
            for m in old.members { index(&groupsByMember, m, adding: false) }
            if let r = old.relay { index(&groupsByRelay, r, adding: false) }
        }
        membership[group] = summary
        if let summary {
            for m in summary.members { index(&groupsByMember, m, adding: true) }
            if let r = summary.relay { index(&groupsByRelay, r, adding: true) }
        }
    }

    /// The groups a session with `peer` may offer in its hello: those naming the peer's identity
    /// a member or its device their relay, as of the last observed stamp, and every group
    /// written since (read from the rows added since, as the poll reads them). Nil, every
    /// group, until the members were read or when rows were deleted or a group operation
    /// removed since. `SyncSession` still checks each.
    private func offerCandidates(for peer: DeviceCertificate) -> [GroupID]? {
        guard membershipRead, let seen = try? replica.observeChanges(since: machine.lastStamp),
            let changes = seen.changes,
            seen.groupOperations == machine.lastGroupOperations || !changes.groupOperations.isEmpty
        else { return nil }
        var candidates = groupsByMember[peer.identity, default: []].union(changes.groups)
        for (relay, groups) in groupsByRelay where relay.key == peer.device { candidates.formUnion(groups) }
        return Array(candidates)
    }

    /// Tells the blob transfers which groups each live session syncs now.
    private func publishBlobPeers() { blobs.publish(blobPeers()) }

    private func blobPeers() -> [UInt64: BlobTransfers.Peer] {
        var peers: [UInt64: BlobTransfers.Peer] = [:]
        for c in machine.liveConnections {
            guard let session = sessions[c.id], let link = links[c.id] else { continue }
            peers[c.id] = BlobTransfers.Peer(
                link: link, groups: session.syncedGroups, servesBlobs: session.peerServesBlobs)
        }
        return peers
    }

    // MARK: Connection events (from event loops)

    func established(_ connection: ConnectionRef) {
        // Before the connection reads anything: a drain queued earlier leaves its messages.
        inbox.expect(connection.id)
        async { [self] in
            defer { inbox.opened(connection.id) }
            links[connection.id] = connection
            if connection.peer.identity == device.identity {
                // Another device of our identity: `peerlog device list` shows it.
                do {
                    // A device met for the first time (restored from a backup, or linked while
                    // this one was away) gets the keys of the identity's encrypted groups.
                    if try replica.recordDevice(connection.peer) { try replica.shareEpochKeys(with: connection.peer) }
                } catch {
                    logger.warning("cannot record device \(connection.peer.device): \(error)")
                }
            }
            perform(machine.established(connection.info))
            publishConnected()
        }
    }

    /// `processed` runs once the message was handled (the handler's read backpressure). The
    /// messages that arrive while the executor is busy are handled together (`drainInbox`).
    func received(_ message: [UInt8], on id: UInt64, processed: @escaping @Sendable () -> Void) {
        if inbox.add(InboxMessage(connection: id, bytes: message, processed: processed)) {
            async { [self] in drainInbox() }
        } else {
            // Messages wait for the queue: check this one's receipts meanwhile. (One that
            // finds the inbox empty is handled next; checking it too would only double the
            // work of a live write.)
            checkAhead.received(message)
        }
    }

    func closed(_ id: UInt64, peer: DeviceID?, remote: String, reason: String) {
        async { [self] in
            // What the connection read before it closed is handled first, as it came first.
            // (Each drain takes some: a message ahead of this one's is of a connection whose
            // `established`, queued before this close, has run.)
            while inbox.holds(id), drainInbox() {}
            perform(machine.connectionClosed(id, peer: peer, remote: remote, reason: reason, now: clock()))
            publishConnected()
        }
    }

    /// Lets `identity` in from now on (a pairing).
    func admit(_ identity: IdentityID) {
        async { [self] in
            perform(machine.admitted(identity))
            let now = machine.admission
            admission.withLock { $0 = now }
        }
    }

    /// Whether a connection to `device` is established; read without waiting for the hub's queue
    /// (a dialer asks once a second from a cooperative thread), from what the hub last published.
    func isConnected(device: DeviceID) -> Bool { connectedDevices.withLock { $0.contains(device) } }

    /// Publishes the devices with a live connection, after the machine's connections changed.
    private func publishConnected() {
        let devices = Set(machine.liveConnections.map(\.peer.device))
        connectedDevices.withLock { $0 = devices }
    }

    // MARK: Performing

    /// Performs the machine's actions in order; some feed it again (observations, session output).
    func perform(_ actions: [NodeAction]) {
        for action in actions { perform(action) }
    }

    private func perform(_ action: NodeAction) {
        switch action {
        case .startSession(let id):
            guard let link = links[id] else { return }
            let session = SyncSession(local: device, peer: link.peer, store: replica, limits: syncLimits)
            session.options.trustsPeerForBootstrap = machine.admission.trustsForBootstrap(link.peer.identity)
            session.options.offerCandidates = offerCandidates(for: link.peer)
            session.options.decodeReceipt = { [checkAhead] in try checkAhead.receipt($0) }
            sessions[id] = session
            perform(session.start(), on: id)
        case .close(let id, let reason):
            retireSession(id)
            links.removeValue(forKey: id)?.close(reason)
        case .dropSession(let id):
            retireSession(id)
            links[id] = nil
        case .offerChange(let group, let id):
            if let session = sessions[id] { perform(session.localChanged(group: group), on: id) }
        case .offerAllGroups(let ids):
            guard let groups = try? replica.groupIDs() else { return }
            perform(.offerChanges(groups, to: ids))
        case .offerChanges(let groups, let ids):
            for group in groups {
                for id in ids { perform(.offerChange(group, to: id)) }
            }
        case .recheckMembership(let id, let groups):
            guard let session = sessions[id] else { return }
            perform(session.membershipChanged(groups: groups), on: id)
            perform(machine.membershipRechecked(id))
        case .sendElection(let group, let message, let id):
            if let session = sessions[id] { perform(session.sendElection(group: group, message), on: id) }
        case .receiveElection(let group, let from, let message):
            route(election.receive(group: group, from: from, message))
        case .tickElection:
            route(election.tick())
        case .pollChangeStamp:
            checkRevocations()
            observeChanges()
        case .observeChanges:
            // Asked after each batch with group operations; a drain writes all its batches
            // before it performs the first, so one read finds what they all changed.
            if replica.store.writeCount != observedAtWrite { observeChanges() }
        case .tickSessions(let ids, let now):
            for id in ids {
                if let session = sessions[id] { perform(session.tick(now: now), on: id) }
            }
        case .refreshMembership(let groups):
            do {
                let fresh = try replica.membership(of: groups ?? replica.groupIDs())
                var relaysChanged = [GroupID: DeviceID?]()
                for group in groups ?? Array(Set(membership.keys).union(fresh.keys)) {
                    let before = membership[group]?.relay?.key
                    updateMembership(group, to: fresh[group])
                    if fresh[group]?.relay?.key != before { relaysChanged[group] = fresh[group]?.relay?.key }
                }
                if groups == nil { membershipRead = true }
                blobs.relaysUpdated(relaysChanged)
                let observed = machine.membershipObserved(
                    members: Set(groupsByMember.keys), relays: Set(groupsByRelay.keys))
                let now = machine.admission
                admission.withLock { $0 = now }
                perform(observed)
            } catch {
                logger.error("cannot read group members: \(error)")
            }
            election.refresh(groups: groups)
            delegate?.groupOperationsChanged()
        case .admissionChanged:
            delegate?.membershipChanged()
        case .relaysChanged(let relays):
            delegate?.relaysChanged(relays)
        case .retryQueued(let via):
            // What it applies changes the stamp, so the poll that follows pushes it.
            let report = try? replica.retryPending()
            for skipped in report?.maintenanceSkipped ?? [] {
                logger.warning("snapshot/compaction skipped again: \(skipped.reason)")
            }
            guard let report, !report.actions.isEmpty, let via, let session = sessions[via] else { return }
            perform(session.requestBackfill(report.actions), on: via)
        case .log(let level, let message):
            logger.log(level: level, "\(message)")
        }
    }

    /// Reads what changed since the last stamp (this process's writes and others') and acts on it.
    private func observeChanges() {
        observedAtWrite = replica.store.writeCount
        guard let seen = try? replica.observeChanges(since: machine.lastStamp) else { return }
        forgetStatusFolds(seen.changes, groupOperations: seen.groupOperations)
        let actions = machine.changesObserved(
            stamp: seen.stamp, groupOperations: seen.groupOperations, changes: seen.changes)
        // A write by another process (a blob put, say): the blob transfers look too.
        if !actions.isEmpty { wakeBlobs() }
        perform(actions)
    }

    /// Performs one session's output: bytes go to its connection, events to the machine.
    func perform(_ actions: [SyncAction], on id: UInt64) {
        performSettled(settle(actions, on: id, with: replica), on: id)
    }

    /// A session's output with its writes done through `writer`: what the peer sent ingested
    /// (each `.ingest` answered in its place), its vectors recorded. Returns what is left to
    /// perform (`performSettled`).
    func settle(_ actions: [SyncAction], on id: UInt64, with writer: some SyncWriter) -> [SyncAction] {
        // A snapshot sent as a blob waits for its blob; the rest of the session's writes (what
        // the peer sent, its vectors) go to the replica first.
        let actions = actions.contains(where: \.holdsSnapshotBlob) ? holdSnapshotBlobs(actions, on: id) : actions
        return sessions[id]?.settle(actions, with: writer) ?? actions
    }

    /// Performs a session's settled output: bytes go to its connection, events to the machine.
    func performSettled(_ settled: [SyncAction], on id: UInt64) {
        // A forger is refused before its session's "error" leaves: it cannot redial in between.
        let closes = settled.contains(where: \.closes)
        if closes, sessions[id]?.endedForInvalidItems == true, let peer = machine.connection(id)?.peer.device {
            let now = clock()
            let ms = penalties.withLock { $0.strike(peer, now: now) }
            logger.warning("refusing \(peer) for \(ms / 1000) s: it sent receipts that fail verification")
        }
        for action in settled {
            switch action {
            case .send(let bytes):
                links[id]?.send(bytes)
            case .close(let reason):
                perform(machine.sessionClosing(id, reason: reason))
                return
            case .event(.revocations(let revocations, let invalid)):
                storeRevocations(revocations, invalid: invalid, from: id)
            case .event(.blob(let message)):
                guard let session = sessions[id], let link = links[id] else { break }
                blobs.received(
                    message, from: id,
                    peer: BlobTransfers.Peer(
                        link: link, groups: session.syncedGroups, servesBlobs: session.peerServesBlobs))
            case .event(let event):
                if case .ingested = event { wakeBlobs() }
                metrics.record(event)
                perform(machine.sessionEvent(event, on: id, now: clock()))
            case .ingest, .recordPeerVector:
                break  // settled above while the session lives; nothing to write for a dropped one
            }
        }
    }

    /// Stores what a peer sent; new ones are pushed on and enforced at once.
    private func storeRevocations(_ revocations: [DeviceRevocation], invalid: Int, from id: UInt64) {
        let peer = machine.connection(id)?.peer.device.short ?? "a peer"
        if invalid > 0 { logger.warning("\(peer) sent \(invalid) revocation(s) whose signature does not verify") }
        var stored = false
        // Only of identities we let in (our own, members of our groups, --allow): others concern
        // no one we talk to, and would let any peer fill our store.
        for revocation in revocations
        where !knownRevocations.contains(RevokedDevice(revocation))
            && machine.admission.mayConnect(identity: revocation.identity)
        {
            do { stored = try replica.storeRevocation(revocation) || stored } catch {
                logger.warning("cannot store a revocation from \(peer): \(error)")
            }
        }
        if stored { checkRevocations() }
    }

    /// Reads the replica's revocations when they changed (another process, a peer): new ones
    /// go to every live session, admission refuses the revoked devices and their live
    /// connections are closed with the reason.
    private func checkRevocations() {
        guard let stamp = try? replica.revocationStamp(), stamp != revocationStamp,
            let all = try? replica.revocations()
        else { return }
        revocationStamp = stamp
        let new = all.filter { !knownRevocations.contains(RevokedDevice($0)) }
        guard !new.isEmpty else { return }
        knownRevocations.formUnion(new.map(RevokedDevice.init))
        for revocation in new {
            if revocation.device == device.device && revocation.identity == device.identity {
                logger.error("this device was revoked: \(revocation.reason)")
            } else {
                logger.notice("revocation stored: \(revocation.reason)")
            }
        }
        let items = new.map(\.encoded)
        for connection in machine.liveConnections {
            guard let session = sessions[connection.id] else { continue }
            perform(session.sendRevocations(items), on: connection.id)
        }
        perform(
            machine.revocationsObserved(
                Dictionary(all.map { (RevokedDevice($0), $0.reason) }, uniquingKeysWith: { first, _ in first })))
        let now = machine.admission
        admission.withLock { $0 = now }
    }

    /// Hands what the elected sequencers produced to the machine for routing.
    private func route(_ sends: [ElectedSequencerDriver.Send]) {
        perform(
            machine.electionOutput(
                sends: sends.map { ElectionSend(to: $0.to, group: $0.group, message: $0.message) },
                signed: election.takeSigned(), problems: election.takeProblems()
            ))
    }

    /// Drops a session, keeping what it moved in `pastTraffic`.
    private func retireSession(_ id: UInt64) {
        guard let session = sessions.removeValue(forKey: id), let peer = links[id]?.peer.device else { return }
        if pastTraffic[peer] == nil, pastTraffic.count >= Self.pastTrafficDevices, let any = pastTraffic.keys.first {
            pastTraffic[any] = nil
        }
        for g in session.status(readingStore: false).groups {
            let past = pastTraffic[peer, default: [:]][g.group] ?? (0, 0)
            pastTraffic[peer, default: [:]][g.group] = (past.received + g.received.items, past.sent + g.sent.items)
        }
    }

    // MARK: Status helpers (executor-confined)

    func queueAsync(_ body: @escaping @Sendable () -> Void) { async(body) }

    /// The status, built on the hub's queue, or the newest one built when the hub is busy for
    /// longer than `StatusRequests.patience` (`StatusRequests`). `deliver` is called once, off
    /// the caller's thread.
    func requestStatus(_ deliver: @escaping @Sendable (NodeStatus) -> Void) {
        statusRequests.request(
            enqueue: { body in async(body) }, build: { [self] in buildStatus() },
            refresh: { [self] in refreshedOffQueueParts($0) }, deliver: deliver)
    }

    func sessionsSnapshot() -> [(NodeConnection, SyncSessionStatus)] {
        machine.liveConnections.compactMap { c in sessions[c.id].map { (c, $0.status(readingStore: false)) } }
    }

    func recentCloses() -> [NodeStateMachine.ClosedConnection] { machine.recentlyClosed }

    func recentRefusals() -> [RefusalStatus] { machine.refusals }

    func recentRejections() -> [RejectionStatus] { machine.rejections }

    var rejectedTotal: Int { machine.rejectedTotal }
}
