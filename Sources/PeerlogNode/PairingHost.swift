import Logging
import NIOCore
import NIOPosix
import PeerlogDiscovery
import PeerlogEngine
import PeerlogModel
import PeerlogPairing
import Synchronization

/// The pairing sessions a node hosts (`peerlog device link`, `peerlog invite create`): each
/// code gets its own listener and, with discovery on, its own DNS-SD service
/// `_peerlog-pair._tcp` (docs/PROTOCOL.md §20.9). The PAKE and the code's life (attempts,
/// expiry, single use) are `PairingOffer`'s; this class only does the I/O around it, and what
/// a granted session does (`PairingGrants`).
final class PairingHost: Sendable {
    /// Newest pairing events kept for `status`.
    static let recentLimit = 20
    /// Most sessions open at once (codes handed out and not yet used, expired or exhausted).
    static let maxOpenSessions = 16

    private struct Session {
        var offer: PairingOffer
        let request: PairingOpenRequest
        let server: any Channel
        let advert: Discovery?
        /// A guest's exchange runs; a second connection meanwhile is turned away.
        var busy = false
        var ticket: PairingTicket
    }

    private struct State {
        var sessions: [Int: Session] = [:]
        var events: [PairingEventStatus] = []
        var group: (any EventLoopGroup)?
        var listening: PeerAddress?
    }

    private let state = Mutex(State())
    private let grants: PairingGrants
    private let logger: Logger
    private let networkID: String
    private let discovery: Bool
    private let limits = PairingLimits()

    init(grants: PairingGrants, logger: Logger, networkID: String, discovery: Bool) {
        self.grants = grants
        self.logger = logger
        self.networkID = networkID
        self.discovery = discovery
    }

    /// Called by the node once its event loops run and its listener is bound (nil: none).
    func attach(_ group: any EventLoopGroup, listening: PeerAddress?) {
        state.withLock {
            $0.group = group
            $0.listening = listening
        }
    }

    /// Opens a session: a new code, a listener on `host` (port 0), an advert. Throws
    /// `NodeError.pairing` when the node does not run, the lifetime is out of range, or too
    /// many sessions are open.
    func open(_ request: PairingOpenRequest, host: String, now: UInt64) async throws -> PairingTicket {
        guard (1...PairingOpenRequest.maxLifetimeSeconds).contains(request.lifetimeSeconds) else {
            throw NodeError.pairing("expires must be 1...\(PairingOpenRequest.maxLifetimeSeconds) seconds")
        }
        try grants.check(request)
        closeDead(now: now)
        let (group, nameplate) = try state.withLock { s -> ((any EventLoopGroup)?, Int) in
            guard s.sessions.count < Self.maxOpenSessions else {
                throw NodeError.pairing("\(Self.maxOpenSessions) pairing sessions are open already")
            }
            let free = (1...999).filter { s.sessions[$0] == nil }
            return (s.group, free.randomElement() ?? 1)
        }
        guard let group else { throw NodeError.pairing("the node is not running") }
        let code = PairingCode.generate(nameplate: nameplate)
        let expiresAt = now + UInt64(request.lifetimeSeconds) * 1000
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        PairingHostHandler(host: self, nameplate: nameplate, maxBytes: limits.maxMessageBytes))
                }
            }
            .bind(host: host, port: 0).get()
        let port = server.localAddress?.port ?? 0
        let ticket = PairingTicket(
            code: code.description, nameplate: nameplate, purpose: request.purpose.rawValue, expiresAt: expiresAt,
            address: PeerAddress(host: host, port: port).description, group: request.group?.string,
            role: request.role?.rawValue)
        let advert = discovery ? advertise(nameplate: nameplate, purpose: request.purpose, port: port) : nil
        advert?.start()
        state.withLock {
            $0.sessions[nameplate] = Session(
                offer: PairingOffer(code: code, purpose: request.purpose, expiresAt: expiresAt, limits: limits),
                request: request, server: server, advert: advert, ticket: ticket)
        }
        // The code dies at its expiry even if no guest ever comes: its listener and advert go.
        server.eventLoop.scheduleTask(in: .seconds(Int64(request.lifetimeSeconds))) { [self] in
            closeDead(now: expiresAt)
        }
        logger.notice("pairing session \(nameplate) (\(request.purpose.rawValue)) open on port \(port)")
        return ticket
    }

    /// Closes every session (node shutdown).
    func stopAll() {
        let sessions = state.withLock { s in
            defer { s.sessions = [:] }
            return Array(s.sessions.values)
        }
        for session in sessions {
            session.advert?.stop()
            session.server.close(promise: nil)
        }
    }

    /// Sessions still open and the newest events, for `status`.
    func status(now: UInt64) -> PairingStatus {
        closeDead(now: now)
        return state.withLock { s in
            PairingStatus(
                open: s.sessions.values.map {
                    PairingSessionStatus(
                        nameplate: $0.ticket.nameplate, purpose: $0.ticket.purpose, expiresAt: $0.ticket.expiresAt,
                        attemptsLeft: $0.offer.attemptsLeft, address: $0.ticket.address, group: $0.ticket.group)
                }.sorted { $0.nameplate < $1.nameplate },
                recent: s.events)
        }
    }

    // MARK: For the connection handler

    /// A guest connected to session `nameplate`: its exchange (an attempt counted), or why not.
    func begin(nameplate: Int, now: UInt64, remote: String) -> Result<PairingHostExchange, PairingError> {
        let result = state.withLock { s -> Result<PairingHostExchange, PairingError> in
            guard var session = s.sessions[nameplate] else {
                return .failure(PairingError(.expired, "this pairing session is closed"))
            }
            guard !session.busy else {
                return .failure(PairingError(.refused, "another device is pairing with this code right now"))
            }
            let result = session.offer.beginExchange(now: now)
            if case .success = result { session.busy = true }
            s.sessions[nameplate] = session
            return result
        }
        if case .failure(let error) = result {
            record(nameplate, remote: remote, outcome: "refused", reason: "\(error)")
        }
        return result
    }

    /// The guest's payload of a session whose PAKE succeeded: what the host answers, or why it
    /// refuses.
    func grant(
        nameplate: Int, guestPayload: [UInt8], transcriptHash: [UInt8], localHost: String?
    ) throws -> PairingGrants.Granted {
        guard
            let (request, listening) = state.withLock({ s in s.sessions[nameplate].map { ($0.request, s.listening) } })
        else {
            throw PairingError(.expired, "this pairing session is closed")
        }
        return try grants.grant(
            request, guestPayload: guestPayload, transcriptHash: transcriptHash, listening: listening,
            localHost: localHost)
    }

    /// An exchange ended: on success the code is used up and its listener closes; on failure
    /// the next guest may try while attempts are left.
    func finished(nameplate: Int, remote: String, outcome: Result<String, PairingError>, now: UInt64) {
        state.withLock { s in
            guard var session = s.sessions[nameplate] else { return }
            session.busy = false
            if case .success = outcome { session.offer.markUsed() }
            s.sessions[nameplate] = session
        }
        switch outcome {
        case .success(let summary): record(nameplate, remote: remote, outcome: "paired", reason: summary)
        case .failure(let error): record(nameplate, remote: remote, outcome: "failed", reason: "\(error)")
        }
        closeDead(now: now)
    }

    // MARK: Internals

    private func record(_ nameplate: Int, remote: String, outcome: String, reason: String) {
        let event = PairingEventStatus(
            at: WallClock.nowMillis(), nameplate: nameplate, remote: remote, outcome: outcome, detail: reason)
        state.withLock { s in
            s.events.append(event)
            if s.events.count > Self.recentLimit { s.events.removeFirst(s.events.count - Self.recentLimit) }
        }
        if outcome == "paired" {
            logger.notice("pairing session \(nameplate): paired with \(remote): \(reason)")
        } else {
            logger.warning("pairing session \(nameplate): \(outcome) (\(remote)): \(reason)")
        }
    }

    /// Closes the listener and advert of every session that is used, expired or exhausted.
    private func closeDead(now: UInt64) {
        let dead = state.withLock { s in
            let dead = s.sessions.filter { !$0.value.busy && $0.value.offer.state(now: now) != .open }
            for key in dead.keys { s.sessions[key] = nil }
            return Array(dead.values)
        }
        for session in dead {
            session.advert?.stop()
            session.server.close(promise: nil)
        }
    }

    private func advertise(nameplate: Int, purpose: PairingPurpose, port: Int) -> Discovery {
        Discovery(
            advertise: ServiceAdvertisement(
                name: "peerlog pairing \(nameplate)", port: port,
                txt: PairingDNSSD.txt(
                    nameplate: nameplate, purpose: purpose, identity: grants.device.identity.string, network: networkID)
            ),
            browse: false, type: PairingDNSSD.type
        ) { [logger] event in
            if case .unavailable(let why) = event { logger.warning("pairing session \(nameplate): \(why)") }
        }
    }
}

extension PairingOpenRequest {
    var group: GroupID? {
        if case .invite(let group, _) = kind { return group }
        return nil
    }
    var role: Role? {
        if case .invite(_, let role) = kind { return role }
        return nil
    }
}

/// How a pairing session appears in DNS-SD (docs/PROTOCOL.md §20.9).
enum PairingDNSSD {
    static let type = "_peerlog-pair._tcp"

    /// TXT keys: "v" ("1"), "np" nameplate, "p" purpose, "id" the host's identity, "net" network
    /// id (omitted when empty).
    static func txt(nameplate: Int, purpose: PairingPurpose, identity: String, network: String) -> [String: String] {
        var txt = ["v": "1", "np": String(nameplate), "p": purpose.rawValue, "id": identity]
        if !network.isEmpty { txt["net"] = network }
        return txt
    }
}
