import Logging
import NIOCore
import NIOPosix
import PeerlogDiscovery
import PeerlogEngine
import PeerlogModel
import PeerlogPairing
import Synchronization

/// The pairing sessions a node hosts (`peerlog device link`, `peerlog invite create`): guests
/// reach them on the node's own port (the guest's preamble names the session; `InboundSniffer`
/// hands such connections over), or on a listener of the session's own when the node does not
/// listen; with discovery on, each session has its DNS-SD service `_peerlog-pair._tcp`
/// (docs/PROTOCOL.md §20.9). The PAKE and the code's life (attempts, expiry, single use) are
/// `PairingOffer`'s; this class does the I/O around it, the per-source spacing of failed
/// guesses, and what a granted session does (`PairingGrants`).
final class PairingHost: Sendable {
    /// Newest pairing events kept for `status`.
    static let recentLimit = 20
    /// Most sessions open at once (codes handed out and not yet used, expired or exhausted).
    static let maxOpenSessions = 16
    /// Most guest connections at once over all sessions (each lives at most `exchangeTimeout`).
    static let maxGuestConnections = 32
    /// Ended sessions remembered, so a late guest hears "used", "expired" or "exhausted".
    static let endedLimit = 64
    /// A source address whose guess failed waits this long before its next guess is taken
    /// (the guess is held, not refused).
    static let failureSpacingMillis: UInt64 = 1000

    /// What `spend` says of a guest's share.
    enum Spend: Equatable {
        /// Take it: one attempt is spent and the session is this guest's until it ends.
        case go
        /// Hold it this many milliseconds (this source failed a guess just now), then ask again.
        case wait(UInt64)
        /// Refuse it (nothing spent): send the error and close.
        case refused(PairingError)
    }

    private struct Session {
        var offer: PairingOffer
        let request: PairingOpenRequest
        /// Its own listener, when the node does not listen (nil: the node's port serves it).
        let server: (any Channel)?
        let advert: Discovery?
        /// A guest's share was taken and its exchange runs; another share meanwhile is turned away.
        var busy = false
        var ticket: PairingTicket
    }

    private struct State {
        var sessions: [Int: Session] = [:]
        var events: [PairingEventStatus] = []
        var group: (any EventLoopGroup)?
        var listening: PeerAddress?
        /// How each ended session ended, by nameplate, oldest first in `endedOrder`.
        var ended: [Int: PairingOffer.State] = [:]
        var endedOrder: [Int] = []
        /// When a guess from each source address last failed.
        var lastFailure: [String: UInt64] = [:]
        var guests = 0
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

    /// Opens a session: a new code, served on the node's port (or a listener of its own on
    /// `host`, port 0, when the node does not listen), an advert. Throws
    /// `NodeError.pairing` when the node does not run, the lifetime is out of range, or too
    /// many sessions are open.
    func open(_ request: PairingOpenRequest, host: String, now: UInt64) async throws -> PairingTicket {
        guard (1...PairingOpenRequest.maxLifetimeSeconds).contains(request.lifetimeSeconds) else {
            throw NodeError.pairing("expires must be 1...\(PairingOpenRequest.maxLifetimeSeconds) seconds")
        }
        try grants.check(request)
        closeDead(now: now)
        let (group, nameplate, listening) = try state.withLock { s -> ((any EventLoopGroup)?, Int, PeerAddress?) in
            guard s.sessions.count < Self.maxOpenSessions else {
                throw NodeError.pairing("\(Self.maxOpenSessions) pairing sessions are open already")
            }
            // A nameplate that ended recently is reused last: its late guests would spend the new code's attempts.
            let unused = (1...999).filter { s.sessions[$0] == nil && s.ended[$0] == nil }
            let free = unused.isEmpty ? (1...999).filter { s.sessions[$0] == nil } : unused
            return (s.group, free.randomElement() ?? 1, s.listening)
        }
        guard let group else { throw NodeError.pairing("the node is not running") }
        let code = PairingCode.generate(nameplate: nameplate)
        let expiresAt = now + UInt64(request.lifetimeSeconds) * 1000
        var server: (any Channel)?
        if listening == nil {
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { [self] channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(makeHandler())
                    }
                }
                .bind(host: host, port: 0).get()
        }
        let port = listening?.port ?? server?.localAddress?.port ?? 0
        let ticket = PairingTicket(
            code: code.description, nameplate: nameplate, purpose: request.purpose.rawValue, expiresAt: expiresAt,
            address: PeerAddress(host: host, port: port).description, group: request.group?.string,
            role: request.role?.rawValue)
        let advert = discovery ? advertise(nameplate: nameplate, purpose: request.purpose, port: port) : nil
        advert?.start()
        state.withLock {
            $0.ended[nameplate] = nil
            $0.sessions[nameplate] = Session(
                offer: PairingOffer(code: code, purpose: request.purpose, expiresAt: expiresAt, limits: limits),
                request: request, server: server, advert: advert, ticket: ticket)
        }
        // The code dies at its expiry even if no guest ever comes: its advert (and listener) go.
        group.any().scheduleTask(in: .seconds(Int64(request.lifetimeSeconds))) { [self] in
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
            session.server?.close(promise: nil)
        }
    }

    /// The handler for a guest's connection (the node's port hands one over, see `InboundSniffer`).
    func makeHandler() -> PairingHostHandler { PairingHostHandler(host: self, maxBytes: limits.maxMessageBytes) }

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

    /// A guest connection begins: false when `maxGuestConnections` are open already.
    func guestConnected() -> Bool {
        state.withLock { s in
            guard s.guests < Self.maxGuestConnections else { return false }
            s.guests += 1
            return true
        }
    }

    func guestDisconnected() { state.withLock { $0.guests -= 1 } }

    /// A guest named session `nameplate`: its exchange (no attempt spent yet), or why not, in
    /// words a person can act on.
    func begin(nameplate: Int, now: UInt64, remote: String) -> Result<PairingHostExchange, PairingError> {
        let result = state.withLock { s -> Result<PairingHostExchange, PairingError> in
            guard let session = s.sessions[nameplate] else { return .failure(Self.closed(nameplate, s)) }
            return session.offer.openExchange(now: now)
        }
        if case .failure(let error) = result {
            record(nameplate, remote: remote, outcome: "refused", reason: "\(error)")
        }
        return result
    }

    /// A guest's share arrived: spend an attempt, hold it (its source failed a guess within
    /// `failureSpacingMillis`), or refuse it (another guest's exchange runs, or the code died).
    func spend(nameplate: Int, source: String, now: UInt64) -> Spend {
        state.withLock { s in
            guard var session = s.sessions[nameplate] else { return .refused(Self.closed(nameplate, s)) }
            if let refusal = session.offer.refusal(now: now) { return .refused(refusal) }
            guard !session.busy else {
                return .refused(
                    PairingError(.refused, "another device is pairing with this code right now; try again in a moment"))
            }
            if let last = s.lastFailure[source], now < last + Self.failureSpacingMillis {
                return .wait(last + Self.failureSpacingMillis - now)
            }
            if let refusal = session.offer.spendAttempt(now: now) { return .refused(refusal) }
            session.busy = true
            s.sessions[nameplate] = session
            return .go
        }
    }

    /// Why session `nameplate` takes no guest: how it ended, or that there is none.
    private static func closed(_ nameplate: Int, _ s: State) -> PairingError {
        s.ended[nameplate].flatMap(PairingOffer.refusal)
            ?? PairingError(
                .refused, "no pairing session \(nameplate) is open on this device: check the code, or ask for a new one"
            )
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

    /// An exchange ended: on success the code is used up and its advert (and listener) go; on
    /// failure the next guest may try while attempts are left. `spent`: this exchange held the
    /// session (its share was taken); `record`: the outcome goes to `status` and the log.
    func finished(
        nameplate: Int, remote: String, source: String, spent: Bool, outcome: Result<String, PairingError>,
        record: Bool = true, now: UInt64
    ) {
        state.withLock { s in
            if spent, case .failure = outcome {
                if s.lastFailure.count >= 1024 {
                    s.lastFailure = s.lastFailure.filter { now < $0.value + Self.failureSpacingMillis }
                }
                s.lastFailure[source] = now
            }
            guard var session = s.sessions[nameplate] else { return }
            if spent { session.busy = false }
            if case .success = outcome { session.offer.markUsed() }
            s.sessions[nameplate] = session
        }
        if record {
            switch outcome {
            case .success(let summary): self.record(nameplate, remote: remote, outcome: "paired", reason: summary)
            case .failure(let error):
                self.record(nameplate, remote: remote, outcome: spent ? "failed" : "refused", reason: "\(error)")
            }
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
            for (key, session) in dead {
                s.sessions[key] = nil
                s.ended[key] = session.offer.state(now: now)
                s.endedOrder.removeAll { $0 == key }
                s.endedOrder.append(key)
            }
            while s.endedOrder.count > Self.endedLimit { s.ended[s.endedOrder.removeFirst()] = nil }
            return Array(dead.values)
        }
        for session in dead {
            session.advert?.stop()
            session.server?.close(promise: nil)
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
