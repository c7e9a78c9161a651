import Logging
import NIOCore
import NIOPosix
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import Synchronization

/// Keeps one static peer connected: dial, wait for the connection to end, back off, redial.
final class Dialer: Sendable {
    /// Dials once; the callbacks report the handshake and the end of the connection.
    typealias Connect =
        @Sendable (
            PeerAddress, @escaping @Sendable (DeviceCertificate) -> Void,
            @escaping @Sendable (ChannelCloseReason) -> Void
        ) async throws -> Channel

    /// How one attempt ended.
    private enum Outcome: Sendable {
        case closed(ChannelCloseReason)
        case cannotConnect(String)

        var description: String {
            switch self {
            case .closed(let reason): "\(reason)"
            case .cannotConnect(let error): "cannot connect: \(error)"
            }
        }
    }

    /// What the callbacks of one dial report.
    private final class Attempt: Sendable {
        let established = Atomic<Bool>(false)
        /// When the handshake completed (ms).
        let establishedAt = Atomic<UInt64>(0)
        let outcome = Mutex<Outcome?>(nil)
    }

    /// A connection that ends sooner than this after its handshake (ms) does not reset the
    /// backoff: a peer that refuses us after the handshake (we were removed, revoked, or are not
    /// admitted) is redialed like an unreachable one, 1 s to 60 s with jitter, not every second.
    static let healthyAfterMillis: UInt64 = 10_000

    let address: PeerAddress
    private let state: Mutex<PeerStatus>
    private let device: Mutex<DeviceID?>
    private let retryAt = Mutex<UInt64?>(nil)
    /// Fired once, by `stop`: ends the backoff at once.
    private let stopped = AsyncSignal()

    /// `expectedDevice`: known in advance for discovered peers, so the dialer waits while that
    /// device is connected some other way (its own dial, a static peer).
    init(address: PeerAddress, source: PeerStatus.Source = .static, expectedDevice: DeviceID? = nil) {
        self.address = address
        state = Mutex(
            PeerStatus(address: address.description, state: .connecting, direction: .outbound, source: source))
        device = Mutex(expectedDevice)
    }

    var status: PeerStatus {
        var s = state.withLock { $0 }
        if s.state == .backoff, let at = retryAt.withLock({ $0 }) {
            let now = WallClock.nowMillis()
            s.retryInMs = at > now ? at - now : 0
        }
        return s
    }

    /// Ends `run` once the connection in progress (if any) ends; a backoff ends at once.
    func stop() { stopped.fire() }

    /// Runs until stopped or cancelled.
    func run(hub: NodeHub, connect: Connect, logger: Logger) async {
        var backoff = Backoff()
        while !Task.isCancelled && !stopped.hasFired {
            if let known = device.withLock({ $0 }), hub.isConnected(device: known) {
                // Connected through the peer's own dial (the tie-break kept that one).
                state.withLock { $0.state = .connected }
                await stopped.wait(after: 0, timeout: .seconds(1))
                continue
            }
            state.withLock { $0.state = .connecting }
            let attempt = Attempt()
            do {
                let channel = try await connect(
                    address,
                    { [self] certificate in
                        attempt.established.store(true, ordering: .relaxed)
                        attempt.establishedAt.store(WallClock.nowMillis(), ordering: .relaxed)
                        device.withLock { $0 = certificate.device }
                        state.withLock {
                            $0.state = .connected
                            $0.device = certificate.device.string
                            $0.name = certificate.name
                            $0.connectedSince = WallClock.nowMillis()
                            $0.lastError = nil
                        }
                    }, { reason in attempt.outcome.withLock { $0 = .closed(reason) } })
                try await channel.closeFuture.get()
            } catch {
                attempt.outcome.withLock { $0 = .cannotConnect("\(error)") }
            }
            let wasEstablished = attempt.established.load(ordering: .relaxed)
            let ended = attempt.outcome.withLock { $0 }
            // A connection the tie-break dropped is not an error: the peer's own dial lives on.
            let tieBreak =
                if case .closed(let reason) = ended { NodeCloseReason.isDuplicateConnection(reason) } else { false }
            let lived = WallClock.nowMillis() &- attempt.establishedAt.load(ordering: .relaxed)
            let refusedAfterHandshake = wasEstablished && !tieBreak && lived < Self.healthyAfterMillis
            if wasEstablished && !refusedAfterHandshake { backoff.reset() }
            state.withLock { $0.connectedSince = nil }
            if let ended, !wasEstablished || !tieBreak {
                state.withLock { $0.lastError = ended.description }
            }
            let delay = backoff.nextDelay()
            let ms = NodeHub.milliseconds(delay)
            retryAt.withLock { $0 = WallClock.nowMillis() + ms }
            state.withLock { $0.state = .backoff }
            if !wasEstablished || refusedAfterHandshake {
                // Once per backoff step, so a refusal that lasts costs a line a minute at most.
                logger.info("peer \(address): \(ended?.description ?? "closed"); retrying in \(ms) ms")
            }
            await stopped.wait(after: 0, timeout: delay)
        }
    }
}
