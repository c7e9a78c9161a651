import Dispatch
import Foundation
import Logging
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import PeerlogSync

/// Owns the replica and every connection's sync session. All of it runs on one serial queue:
/// the replica does blocking SQLite work, which must stay off the event loops, and sessions
/// are not thread-safe.
final class NodeHub: @unchecked Sendable {
    let replica: Replica
    let device: LocalDevice
    let logger: Logger
    private let queue = DispatchQueue(label: "peerlog.node.hub")
    private let extraAllowed: Set<IdentityID>
    private let allowed: LockedValue<Set<IdentityID>>
    /// Let in any device whose certificate checks out (a relay open to new groups).
    private let openAdmission: Bool
    /// Relays our groups name: their keys are let in, and the node keeps them connected.
    private let relays = LockedValue<Set<RelayEndpoint>>([])

    /// Where tap records go when a capture runs.
    let capture: CaptureControl
    /// Set by the node before it starts.
    let listening = LockedValue<String?>(nil)
    let dialerStatus = LockedValue<@Sendable () -> [PeerStatus]>({ [] })
    let discoveryState = LockedValue<(enabled: Bool, unavailable: String?)>((false, nil))
    /// Called (on the hub queue) when the set of identities we let in changed.
    let onMembershipChange = LockedValue<@Sendable () -> Void>({})
    /// Called (on the hub queue) when the relays our groups name changed.
    let onRelaysChange = LockedValue<@Sendable (Set<RelayEndpoint>) -> Void>({ _ in })

    // Queue-confined state.
    /// This device's part in the elected sequencers of its groups.
    let election: ElectedSequencerDriver
    private var electionTimer: DispatchSourceTimer?
    private var connections: [UInt64: ConnectionRef] = [:]
    private var sessions: [UInt64: SyncSession] = [:]
    private var lastStamp: [Int64] = []
    private var lastGroupOperations: [Int64] = []
    private var pollTimer: DispatchSourceTimer?
    private var closedRecently: [ClosedConnection] = []
    private var lastRetry: UInt64 = 0
    private var refusals: [RefusalStatus] = []
    private var rejections: [RejectionStatus] = []
    /// Items refused from peers since the node started.
    private(set) var rejectedTotal = 0

    struct ClosedConnection: Sendable {
        let peer: DeviceID?
        let remote: String
        let reason: String
        let at: UInt64
    }

    init(replica: Replica, device: LocalDevice, allow: Set<IdentityID>, openAdmission: Bool = false, logger: Logger) {
        self.replica = replica
        self.device = device
        self.logger = logger
        self.capture = CaptureControl(logger: logger)
        self.election = ElectedSequencerDriver(replica: replica, seed: UInt64.random(in: 0...UInt64.max))
        self.extraAllowed = allow.union([device.identity])
        self.allowed = LockedValue(extraAllowed)
        self.openAdmission = openAdmission
    }

    // MARK: Authorization (called from event loops during handshakes)

    /// Whether a device of this identity would be let in (for dialing discovered peers).
    func mayConnect(identity: IdentityID) -> Bool { allowed.value.contains(identity) }

    func authorize(_ certificate: DeviceCertificate) -> AuthorizationDecision {
        if openAdmission || allowed.value.contains(certificate.identity) { return .allow }
        if relays.value.contains(where: { $0.key == certificate.device }) { return .allow }
        return .deny("identity \(certificate.identity) is not ours, not a member of a group we hold, not a relay of one, and not allowed for pairing")
    }

    private func refreshAllowed() {
        do {
            let members = try replica.knownMemberIdentities()
            let now = extraAllowed.union(members)
            if now != allowed.value {
                allowed.value = now
                onMembershipChange.value()
            }
            let named = try replica.relayEndpoints()
            if named != relays.value {
                relays.value = named
                onRelaysChange.value(named)
            }
        } catch {
            logger.error("cannot read group members: \(error)")
        }
    }

    // MARK: Lifecycle

    func start(pollInterval: Duration, electionTick: Duration) {
        queue.sync {
            refreshAllowed()
            lastStamp = (try? replica.changeStamp()) ?? []
            election.refresh()
        }
        let ticker = DispatchSource.makeTimerSource(queue: queue)
        let tickMs = Self.milliseconds(electionTick)
        ticker.schedule(deadline: .now() + .milliseconds(tickMs), repeating: .milliseconds(max(tickMs, 10)))
        ticker.setEventHandler { [weak self] in
            guard let self else { return }
            self.route(self.election.tick())
        }
        ticker.resume()
        electionTimer = ticker
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let ms = Self.milliseconds(pollInterval)
        timer.schedule(deadline: .now() + .milliseconds(ms), repeating: .milliseconds(max(ms, 10)))
        timer.setEventHandler { [weak self] in self?.poll() }
        timer.resume()
        pollTimer = timer
    }

    static func milliseconds(_ d: Duration) -> Int {
        Int(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
    }

    func stop(reason: String) {
        queue.sync {
            pollTimer?.cancel()
            pollTimer = nil
            electionTimer?.cancel()
            electionTimer = nil
            for c in connections.values { c.close(reason) }
        }
    }

    // MARK: Connection events (from event loops)

    /// A handshake finished: keep the connection unless one to the same device already runs
    /// and the tie-break prefers that one.
    func established(_ connection: ConnectionRef) {
        queue.async { [self] in
            if let existing = connections.values.first(where: { $0.peer.device == connection.peer.device }) {
                if TieBreak.keepNew(local: device.device, peer: connection.peer.device, newIsOutbound: connection.outbound, existingIsOutbound: existing.outbound) {
                    logger.info("replacing connection \(existing.id) to \(connection.peer.device.short) with \(connection.id) (tie-break)")
                    drop(existing.id)
                    existing.close("duplicate connection (tie-break)")
                } else {
                    logger.info("closing duplicate connection \(connection.id) to \(connection.peer.device.short) (tie-break)")
                    connection.close("duplicate connection (tie-break)")
                    return
                }
            }
            connections[connection.id] = connection
            let session = SyncSession(local: device, peer: connection.peer, store: replica)
            sessions[connection.id] = session
            logger.info("connected to device \(connection.peer.device) (\(connection.peer.name)) at \(connection.remote), \(connection.outbound ? "outbound" : "inbound")")
            perform(session.start(), on: connection)
        }
    }

    /// `processed` runs once the message was handled (the handler's read backpressure).
    func received(_ message: [UInt8], on id: UInt64, processed: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            defer { processed() }
            guard let session = sessions[id], let connection = connections[id] else { return }
            perform(session.receive(message), on: connection)
        }
    }

    func closed(_ id: UInt64, peer: DeviceID?, remote: String, reason: String) {
        queue.async { [self] in
            drop(id)
            closedRecently.append(ClosedConnection(peer: peer, remote: remote, reason: reason, at: WallClock.nowMillis()))
            if closedRecently.count > 32 { closedRecently.removeFirst(closedRecently.count - 32) }
        }
    }

    func isConnected(device: DeviceID) -> Bool {
        queue.sync { connections.values.contains { $0.peer.device == device } }
    }

    private func drop(_ id: UInt64) {
        connections[id] = nil
        sessions[id] = nil
    }

    // MARK: Sync

    private func perform(_ actions: [SyncAction], on connection: ConnectionRef) {
        // The session's writes (what the peer sent, its vectors) go to the replica first.
        for action in sessions[connection.id]?.settle(actions, with: replica) ?? actions {
            switch action {
            case .send(let bytes):
                connection.send(bytes)
            case .close(let reason):
                logger.warning("closing connection to \(connection.peer.device): \(reason)")
                drop(connection.id)
                connection.close(reason)
                return
            case .event(let event):
                handle(event, from: connection)
            case .ingest, .recordPeerVector:
                break  // settled above while the session lives; nothing to write for a dropped one
            }
        }
    }

    private func handle(_ event: SyncEvent, from connection: ConnectionRef) {
        switch event {
        case .ingested(let group, let report):
            // Membership first: nothing is pushed to a peer that what arrived just removed.
            if report.touchesGroupOperations { noticeGroupOperations() }
            fanOut(group: group, except: connection.id)
        case .ignoredOffer(let group):
            logger.notice("\(connection.peer.device.short) offered group \(group), which we hold and do not share with it: not synced")
        case .withdrew(let group, let why):
            logger.notice("stopped syncing group \(group) with \(connection.peer.device.short): \(why)")
        case .unsharedByPeer(let group, let why):
            logger.warning("\(connection.peer.device.short) stopped syncing group \(group) with us: \(why)")
        case .caughtUp(let group):
            logger.debug("caught up with \(connection.peer.device.short) on group \(group)")
        case .protocolError(let why):
            logger.warning("protocol error from \(connection.peer.device): \(why)")
        case .ignoredUnknownMessage(let type):
            logger.notice("ignored unknown message type \"\(type)\" from \(connection.peer.device.short)")
        case .election(let group, let from, let message):
            route(election.receive(group: group, from: from, message))
        case .rejected(let group, let items):
            noteRejections(group: group, items: items, from: connection.peer)
        case .refusedByPeer(let group, let items):
            for item in items {
                logger.warning("\(connection.peer.device.short) refused receipt \(item.cid) of group \(group): \(item.reason)")
                refusals.append(RefusalStatus(group: group.string, cid: item.cid.string, by: connection.peer.device.string, reason: item.reason, at: WallClock.nowMillis()))
            }
            if refusals.count > 32 { refusals.removeFirst(refusals.count - 32) }
        default:
            break
        }
    }

    /// Offers what just arrived to every other connected peer.
    private func fanOut(group: GroupID, except: UInt64?) {
        for (id, session) in sessions.sorted(by: { $0.key < $1.key }) where id != except {
            guard let connection = connections[id] else { continue }
            perform(session.localChanged(group: group), on: connection)
        }
    }

    /// Membership and authorities change only with group operations: skip the folds (over every
    /// tentative receipt) when none changed, e.g. during a catch-up. When one did, every live
    /// session re-checks its groups (a removed member is sent nothing more and told why), and a
    /// peer whose identity no longer shares anything with us is disconnected.
    private func noticeGroupOperations() {
        guard let ops = try? replica.groupOperationStamp(), ops != lastGroupOperations else { return }
        lastGroupOperations = ops
        refreshAllowed()
        election.refresh()
        for (id, session) in sessions.sorted(by: { $0.key < $1.key }) {
            guard let connection = connections[id] else { continue }
            perform(session.membershipChanged(), on: connection)
            if sessions[id] != nil, case .deny(let why) = authorize(connection.peer) {
                logger.notice("disconnecting \(connection.peer.device.short): no longer admitted (\(why))")
                drop(id)
                connection.close("no longer admitted: \(why)")
            }
        }
    }

    /// How often queued receipts and envelopes are retried (and aged into dead letters).
    static let retryInterval: UInt64 = 5_000

    /// Notices writes by other processes (the CLI) and membership changes; retries the queue.
    private func poll() {
        let now = WallClock.nowMillis()
        if now - lastRetry >= Self.retryInterval {
            lastRetry = now
            retryQueued()
        }
        guard let stamp = try? replica.changeStamp(), stamp != lastStamp else { return }
        lastStamp = stamp
        noticeGroupOperations()
        guard !sessions.isEmpty, let groups = try? replica.groupIDs() else { return }
        for group in groups { fanOut(group: group, except: nil) }
    }

    /// Retries what waits in the pending queue; backfill it still needs is asked of one
    /// connected peer that syncs the group (the session skips groups it does not sync).
    private func retryQueued() {
        // What it applies changes the stamp, so the poll below pushes it.
        guard let report = try? replica.retryPending(), !report.actions.isEmpty, let (id, session) = sessions.min(by: { $0.key < $1.key }), let connection = connections[id] else { return }
        perform(session.requestBackfill(report.actions), on: connection)
    }

    /// Logs what our replica refused from a peer (a few lines per batch, so a flood cannot
    /// flood the log) and keeps the newest 32 for `status`. Invalid signatures and certificates
    /// are warnings: they are evidence of a forgery attempt.
    private func noteRejections(group: GroupID, items: [RejectedItem], from peer: DeviceCertificate) {
        let now = WallClock.nowMillis()
        for (i, item) in items.enumerated() {
            if i < 3 {
                let what = item.invalid ? "invalid receipt" : "receipt"
                let claims = item.author.map { " claiming author \($0) of identity \(item.identity?.string ?? "?")" } ?? ""
                logger.warning("rejected \(what) \(item.cid) of group \(group)\(claims) from peer \(peer.device) (identity \(peer.identity)): \(item.reason)")
            }
            rejections.append(RejectionStatus(group: group.string, cid: item.cid.string, author: item.author?.string, identity: item.identity?.string,
                                              from: peer.device.string, reason: item.reason, invalid: item.invalid, at: now))
        }
        if items.count > 3 { logger.warning("… and \(items.count - 3) more rejected from \(peer.device) in the same batch") }
        if rejections.count > 32 { rejections.removeFirst(rejections.count - 32) }
        rejectedTotal += items.count
    }

    // MARK: Elections (queue-confined)

    /// Sends election messages to the voters that are connected (Raft tolerates the loss of
    /// the others), pushes envelopes just signed, and logs what went wrong.
    private func route(_ sends: [ElectedSequencerDriver.Send]) {
        for send in sends {
            for (id, session) in sessions where connections[id]?.peer.device == send.to {
                perform(session.sendElection(group: send.group, send.message), on: connections[id]!)
            }
        }
        for group in election.takeSigned() { fanOut(group: group, except: nil) }
        for problem in election.takeProblems() { logger.warning("\(problem)") }
    }

    // MARK: Status helpers (queue-confined)

    func queueAsync(_ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }

    func sessionsSnapshot() -> [(ConnectionRef, SyncSessionStatus)] {
        sessions.sorted { $0.key < $1.key }.compactMap { id, session in connections[id].map { ($0, session.status()) } }
    }

    func recentCloses() -> [ClosedConnection] { closedRecently }

    func recentRefusals() -> [RefusalStatus] { refusals }

    func recentRejections() -> [RejectionStatus] { rejections }
}

/// A value behind a lock, for the few things event loops read while the hub writes.
final class LockedValue<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func mutate<R>(_ body: (inout T) -> R) -> R { lock.withLock { body(&stored) } }
}
