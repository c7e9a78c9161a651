import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import PeerlogSync

/// The node's policy as a value: which connections live (the tie-break), whom a change is
/// offered to (fan-out), when to retry, poll and tick, who is let in, where election messages
/// go, and what `status` remembers. Connections, session events, observations of the replica
/// and `tick(now:)` come in; `NodeAction`s come out. No sockets, queues, clock or replica:
/// `NodeHub` is the loop that feeds it and performs what it returns, the way swift-nio-ssh's
/// `NIOSSHHandler` drives `SSHConnectionStateMachine`.
struct NodeStateMachine: Sendable {
    /// How often things happen, in milliseconds of the `now` fed to `tick(now:)`.
    struct Cadence: Sendable, Equatable {
        /// Looking for writes by other processes (the change stamp).
        var poll: UInt64 = 250
        /// One tick of the elected sequencers.
        var election: UInt64 = 100
        /// Retrying the pending queue (checked on poll ticks).
        var retry: UInt64 = 5_000
    }

    /// What `status` keeps of the last connections that ended, refusals and rejections.
    static let recentLimit = 32
    /// Lines logged per rejected batch (the rest is one summary line).
    static let rejectionLogLines = 3

    let local: DeviceID
    let cadence: Cadence
    private(set) var admission: NodeAdmission
    /// Established connections that have a session, by connection id.
    private(set) var connections: [UInt64: NodeConnection] = [:]
    private(set) var recentlyClosed: [ClosedConnection] = []
    var refusals: [RefusalStatus] = []
    var rejections: [RejectionStatus] = []
    /// Items refused from peers since the node started.
    var rejectedTotal = 0

    var lastStamp: [Int64] = []
    var lastGroupOperations: [Int64] = []
    var nextPoll: UInt64 = 0
    var nextElectionTick: UInt64 = 0
    /// nil until the first poll, which retries at once.
    var lastRetry: UInt64?

    struct ClosedConnection: Sendable, Equatable {
        let peer: DeviceID?
        let remote: String
        let reason: String
        let at: UInt64
    }

    init(local: DeviceID, admission: NodeAdmission, cadence: Cadence = Cadence()) {
        self.local = local
        self.admission = admission
        self.cadence = cadence
    }

    /// The node starts: remember the stamps it starts from and read who is let in (the read
    /// covers every group operation up to `groupOperations`, so the first poll need not see
    /// them as moved).
    mutating func start(now: UInt64, stamp: [Int64], groupOperations: [Int64] = []) -> [NodeAction] {
        lastStamp = stamp
        lastGroupOperations = groupOperations
        nextPoll = now + cadence.poll
        nextElectionTick = now + cadence.election
        return [.refreshMembership(groups: nil)]
    }

    /// The node stops: every connection closes with a close record.
    mutating func stop() -> [NodeAction] {
        let all = liveConnections
        connections = [:]
        return all.map { .close($0.id, .shuttingDown) }
    }

    // MARK: Connections

    /// Live connections in id order (the order sessions are served in).
    var liveConnections: [NodeConnection] { connections.values.sorted { $0.id < $1.id } }

    /// The ids of `liveConnections`, in the same order (cheaper: every poll asks).
    var liveConnectionIDs: [UInt64] { connections.keys.sorted() }

    func isConnected(device: DeviceID) -> Bool { connections.values.contains { $0.peer.device == device } }

    func connection(_ id: UInt64) -> NodeConnection? { connections[id] }

    /// A handshake finished: keep the connection unless one to the same device already runs
    /// and the tie-break prefers that one.
    mutating func established(_ new: NodeConnection) -> [NodeAction] {
        var actions: [NodeAction] = []
        if let existing = connections.values.first(where: { $0.peer.device == new.peer.device }) {
            if TieBreak.keepNew(
                local: local, peer: new.peer.device, newIsOutbound: new.outbound, existingIsOutbound: existing.outbound)
            {
                actions.append(
                    .log(
                        .info,
                        "replacing connection \(existing.id) to \(new.peer.device.short) with \(new.id) (tie-break)"))
                connections[existing.id] = nil
                actions.append(.close(existing.id, .duplicateConnection))
            } else {
                actions.append(
                    .log(.info, "closing duplicate connection \(new.id) to \(new.peer.device.short) (tie-break)"))
                actions.append(.close(new.id, .duplicateConnection))
                return actions
            }
        }
        connections[new.id] = new
        actions.append(
            .log(
                .info,
                "connected to device \(new.peer.device) (\(new.peer.name)) at \(new.remote), \(new.outbound ? "outbound" : "inbound")"
            ))
        actions.append(.startSession(new.id))
        return actions
    }

    /// A session asked to close its connection (protocol error, limit).
    mutating func sessionClosing(_ id: UInt64, reason: String) -> [NodeAction] {
        guard let connection = connections.removeValue(forKey: id) else { return [] }
        return [
            .log(.warning, "closing connection to \(connection.peer.device): \(reason)"), .close(id, .session(reason)),
        ]
    }

    /// The transport reports a connection gone (whoever closed it); `status` remembers why.
    mutating func connectionClosed(
        _ id: UInt64, peer: DeviceID?, remote: String, reason: String, now: UInt64
    ) -> [NodeAction] {
        Self.remember(&recentlyClosed, ClosedConnection(peer: peer, remote: remote, reason: reason, at: now))
        return connections.removeValue(forKey: id) == nil ? [] : [.dropSession(id)]
    }

    /// Appends, keeping the newest `recentLimit`.
    static func remember<T>(_ list: inout [T], _ items: some Sequence<T>) {
        list.append(contentsOf: items)
        if list.count > recentLimit { list.removeFirst(list.count - recentLimit) }
    }

    static func remember<T>(_ list: inout [T], _ item: T) { remember(&list, CollectionOfOne(item)) }

    // MARK: Admission

    /// Asked from event loops during handshakes (through the hub's copy of `admission`).
    func authorize(_ certificate: DeviceCertificate) -> AuthorizationDecision { admission.decide(certificate) }

    /// The replica's members and named relays, read after `.refreshMembership`. Every live
    /// session re-checks its groups (a removed member is sent nothing more and told why).
    mutating func membershipObserved(members: Set<IdentityID>, relays: Set<RelayEndpoint>) -> [NodeAction] {
        let changed = admission.update(members: members, relays: relays)
        var actions: [NodeAction] = []
        if changed.members { actions.append(.admissionChanged) }
        if changed.relays { actions.append(.relaysChanged(relays)) }
        return actions
    }

    /// A pairing admitted `identity` (`invite join`): it is let in like an `allow`ed one.
    mutating func admitted(_ identity: IdentityID) -> [NodeAction] {
        admission.admit(identity) ? [.admissionChanged] : []
    }

    /// The replica's revocations (device → reason), read after `.checkRevocations` when they
    /// changed. A live connection of a revoked device is closed with the reason (its session
    /// has been sent the revocations first, so the revoked device learns why).
    mutating func revocationsObserved(_ revoked: [RevokedDevice: String]) -> [NodeAction] {
        guard admission.update(revoked: revoked) else { return [] }
        var actions: [NodeAction] = []
        for connection in liveConnections {
            guard let why = revoked[RevokedDevice(connection.peer)] else { continue }
            connections[connection.id] = nil
            actions.append(.log(.notice, "disconnecting \(connection.peer.device.short): \(why)"))
            actions.append(.close(connection.id, .revoked(why)))
        }
        return actions
    }

    /// After a session re-checked its groups: a peer whose identity no longer shares anything
    /// with us is disconnected.
    mutating func membershipRechecked(_ id: UInt64) -> [NodeAction] {
        guard let connection = connections[id], case .deny(let why) = admission.decide(connection.peer) else {
            return []
        }
        connections[id] = nil
        return [
            .log(.notice, "disconnecting \(connection.peer.device.short): no longer admitted (\(why))"),
            .close(id, .noLongerAdmitted(why)),
        ]
    }
}
