import Foundation
import PeerlogChannel
import PeerlogDiscovery
import PeerlogModel
import PeerlogPairing
import Synchronization

/// The guest side of a pairing session (`peerlog init --join`, `peerlog invite join`): finds
/// the session (at `peer`, or over DNS-SD by the code's nameplate), runs the
/// `PairingGuestExchange` over one TCP connection and returns the host's payload. The socket
/// work runs on its own thread, so the calling task only awaits.
public enum PairingGuest {
    /// How long a guest looks for the session on the LAN before giving up.
    public static let defaultSearchTimeout: Duration = .seconds(15)

    /// A finished exchange.
    public struct Outcome: Sendable {
        /// What the host answered (a `LinkGrant` or `InviteGrant`, encoded).
        public let hostPayload: [UInt8]
        /// The short string both sides can compare.
        public let confirmation: String
        /// What the payload signatures of this exchange cover.
        public let transcriptHash: [UInt8]
        /// Where the session was reached.
        public let address: PeerAddress
    }

    /// Runs the guest side of `code`'s session for `purpose`. `payload` gets the transcript hash
    /// once the PAKE succeeded and returns what the guest sends (a `LinkRequest` or
    /// `InviteRequest`, encoded). Throws `PairingError` for a wrong, expired or used code and a
    /// refusal, `NodeError` (`pairing`) when the session cannot be found or reached.
    public static func run(
        code: PairingCode, purpose: PairingPurpose, peer: PeerAddress?, networkID: String = "",
        searchTimeout: Duration = defaultSearchTimeout,
        payload: @escaping @Sendable ([UInt8]) throws -> [UInt8]
    ) async throws -> Outcome {
        let candidates: [PeerAddress]
        if let peer {
            candidates = [peer]
        } else {
            candidates = try await find(code: code, purpose: purpose, networkID: networkID, timeout: searchTimeout)
        }
        return try await onThread {
            var lastError: any Error = NodeError.pairing("no address to try")
            for address in candidates {
                do {
                    return try exchange(code: code, purpose: purpose, address: address, payload: payload)
                } catch let error as PairingError {
                    throw error
                } catch {
                    lastError = error
                }
            }
            throw lastError
        }
    }

    /// Looks for `_peerlog-pair._tcp` services whose TXT names this nameplate, purpose and
    /// network; the first one found (its addresses) wins.
    static func find(
        code: PairingCode, purpose: PairingPurpose, networkID: String, timeout: Duration
    ) async throws -> [PeerAddress] {
        let found = Mutex<[PeerAddress]?>(nil)
        let unavailable = Mutex<String?>(nil)
        let discovery = Discovery(advertise: nil, browse: true, type: PairingDNSSD.type) { event in
            switch event {
            case .found(let service):
                guard service.txt["v"] == "1", service.txt["np"] == String(code.nameplate),
                    service.txt["p"] == purpose.rawValue, (service.txt["net"] ?? "") == networkID
                else { return }
                found.withLock { $0 = $0 ?? service.addresses.map { PeerAddress(host: $0, port: service.port) } }
            case .unavailable(let why):
                unavailable.withLock { $0 = why }
            default: break
            }
        }
        discovery.start()
        defer { discovery.stop() }
        let clock = ContinuousClock()
        let end = clock.now + timeout
        while clock.now < end {
            if let addresses = found.withLock({ $0 }) { return addresses }
            try await Task.sleep(for: .milliseconds(100))
        }
        let why = unavailable.withLock { $0 }.map { " (\($0))" } ?? ""
        throw NodeError.pairing(
            "no pairing session \(code.nameplate) for \(purpose.rawValue) found on the LAN within \(timeout)\(why); pass --peer HOST:PORT as the host printed it"
        )
    }

    /// One connection: frames out and in until the exchange is done or failed.
    static func exchange(
        code: PairingCode, purpose: PairingPurpose, address: PeerAddress,
        payload: ([UInt8]) throws -> [UInt8]
    ) throws -> Outcome {
        let limits = PairingLimits()
        let socket: BlockingSocket
        do { socket = try BlockingSocket(host: address.host, port: address.port) } catch {
            throw NodeError.pairing(
                "cannot reach the host at \(address): \(error) (is its daemon running, and is this its address?)")
        }
        // The preamble names the session, so the host's own port can serve it (§20.9).
        try send(socket, raw: PairingPreamble.bytes(nameplate: code.nameplate), address)
        // `exchangeTimeout` for each of the host's messages (§20.7), not for the whole exchange.
        let wait = Double(limits.exchangeTimeout.components.seconds)
        var deadline = Date(timeIntervalSinceNow: wait)
        var heard = false
        var frames = PairingFrames(maxBytes: limits.maxMessageBytes)
        var guest = PairingGuestExchange(code: code, purpose: purpose, limits: limits)
        var pending: [[UInt8]] = []
        while true {
            if pending.isEmpty {
                guard socket.waitReadable(until: deadline) else {
                    throw NodeError.pairing("the host at \(address) did not answer within \(limits.exchangeTimeout)")
                }
                let chunk: [UInt8]
                do { chunk = try socket.receive() } catch {
                    throw NodeError.pairing("reading from \(address): \(error)")
                }
                guard !chunk.isEmpty else {
                    throw NodeError.pairing(
                        heard
                            ? "the host at \(address) closed the connection in the middle of the exchange"
                            : "the host at \(address) closed the connection without a word (is it a peerlog node of a version that pairs on its own port?)"
                    )
                }
                pending = try frames.append(chunk)
                if !pending.isEmpty {
                    heard = true
                    deadline = Date(timeIntervalSinceNow: wait)
                }
                continue
            }
            let message = pending.removeFirst()
            switch guest.receive(message) {
            case .send(let reply):
                try send(socket, reply, address)
            case .readyForPayload:
                let mine = try payload(guest.transcriptHash ?? [])
                try send(socket, try guest.send(guestPayload: mine), address)
            case .done(let hostPayload):
                return Outcome(
                    hostPayload: hostPayload, confirmation: guest.confirmation ?? "",
                    transcriptHash: guest.transcriptHash ?? [], address: address)
            case .failed(let error):
                // Tell the host why (a wrong code, say), so its status shows it.
                if let message = guest.failureMessage { try? socket.send(PairingFrames.frame(message)) }
                throw error
            }
        }
    }

    private static func send(_ socket: BlockingSocket, _ message: [UInt8], _ address: PeerAddress) throws {
        try send(socket, raw: PairingFrames.frame(message), address)
    }

    private static func send(_ socket: BlockingSocket, raw bytes: [UInt8], _ address: PeerAddress) throws {
        do { try socket.send(bytes) } catch {
            throw NodeError.pairing("writing to \(address): \(error)")
        }
    }

    /// Runs blocking socket work on a thread of its own, not on the cooperative pool.
    private static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try body() }) }
            thread.name = "peerlog-pairing"
            thread.start()
        }
    }
}
