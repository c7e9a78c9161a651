import Foundation
import Logging
import NIOCore
import NIOPosix
import PeerlogCapture
import PeerlogChannel
import PeerlogDiscovery
import PeerlogEngine
import PeerlogModel
import PeerlogQuickCalls
import ServiceLifecycle
import Synchronization

/// A running Peerlog node: listens, dials static peers, syncs every shared group, answers the
/// control socket. Embed it in a `ServiceGroup` (graceful shutdown closes every connection
/// with a close record) or use `peerlog daemon`.
public final class PeerlogNode: Service, Sendable {
    /// The home directory: keys, `replica.sqlite` and, by default, the control socket.
    public let home: String
    /// The configuration the node was made with.
    public let configuration: NodeConfiguration
    /// This node's device (keys and certificate), from `home` or the given replica.
    public let device: LocalDevice
    /// The replica the node syncs: the one given to `init`, or `HOME/replica.sqlite`.
    public let replica: Replica
    private let logger: Logger
    private let hub: NodeHub
    private let tap: Tap?
    private let nextConnectionID = Atomic<UInt64>(0)
    private let boundAddress = Mutex<PeerAddress?>(nil)
    /// Connections not closed yet, with how to close each on its event loop.
    private let openConnections = Mutex<[UInt64: (channel: any Channel, close: @Sendable () -> Void)]>([:])
    private let dialers: [Dialer]
    private let admission: ConnectionAdmission
    /// Called once the listener is bound (with the actual port when 0 was asked for).
    private let onListening: (@Sendable (PeerAddress?) -> Void)?
    /// The pairing sessions this node hosts (`device link`, `invite create`).
    private let pairing: PairingHost
    /// Starts a dialer while the node runs (set by `run`).
    private let adoptDialer = Mutex<(@Sendable (Dialer) -> Void)?>(nil)
    /// The LAN peers and relay links while `run` runs (the hub asks them through its delegate).
    private let links = Mutex<(lan: LanPeers, relays: RelayLinks)?>(nil)
    /// Groups whose invitation is accepted as soon as it arrives (`invite join`).
    private let autoAccept: Mutex<Set<GroupID>>
    /// Who writes the control socket's `put` requests (the facade that owns the node); unset,
    /// they are refused and the CLI writes itself.
    private let controlWriter = Mutex<(@Sendable (ControlPut) async -> [UInt8])?>(nil)

    /// Has `writer` answer the control socket's `put` requests: it writes and returns the reply
    /// document (`ControlPut`).
    package func takeControlWrites(_ writer: @escaping @Sendable (ControlPut) async -> [UInt8]) {
        controlWriter.withLock { $0 = writer }
    }

    /// `replica`: the home's replica when the caller has it open already (an app embedding the
    /// node shares its replica, so its own writes reach peers at once); it must have been
    /// opened with `configuration.sequenceGate`. `onListening` is called once the listener is
    /// bound, with the actual address (port 0 asks for any).
    public init(
        home: String, configuration: NodeConfiguration, logger: Logger, tap: Tap? = nil, replica: Replica? = nil,
        onListening: (@Sendable (PeerAddress?) -> Void)? = nil
    ) throws {
        self.home = home
        self.onListening = onListening
        self.configuration = configuration
        self.logger = logger
        self.tap = tap
        device = try replica?.local ?? LocalDevice.load(home: home)
        self.replica =
            try replica
            ?? Replica(path: HomeLayout.store(home), device: device, sequenceGate: configuration.sequenceGate)
        // A store from before the maintained tentative view (or written by an older binary since)
        // gets it now, so sync and status reads do not fold every waiting receipt meanwhile.
        let built = try self.replica.buildMissingTentativeViews()
        if built > 0 { logger.info("built the tentative view of \(built) group(s) with receipts waiting") }
        let cadence = NodeStateMachine.Cadence(
            poll: NodeHub.milliseconds(configuration.pollInterval),
            election: NodeHub.milliseconds(configuration.electionTick))
        hub = NodeHub(
            replica: self.replica, device: device, allow: configuration.allow,
            openAdmission: configuration.openAdmission, logger: logger, cadence: cadence,
            metrics: configuration.metrics ?? NodeMetrics(), syncLimits: configuration.syncLimits,
            blobKeeping: .init(
                cacheBytes: configuration.blobCacheBytes, graceMs: NodeHub.milliseconds(configuration.blobGrace),
                relayQuotaBytes: configuration.relayBlobQuotaBytes))
        dialers = configuration.peers.map { Dialer(address: $0) }
        pairing = PairingHost(
            grants: PairingGrants(device: device, replica: self.replica), logger: logger,
            networkID: configuration.channel.networkID, discovery: configuration.discovery)
        autoAccept = Mutex(configuration.autoAccept)
        admission = ConnectionAdmission(
            limits: configuration.limits, fileDescriptorLimit: FileDescriptorLimit.raiseToHard())
    }

    /// Starts recording every decrypted message in and out to a pcapng file (docs/TOOLS.md),
    /// replacing a capture in progress. The file holds decrypted traffic.
    package func startCapture(path: String, options: CaptureWriter.Options) throws {
        try hub.capture.start(path: path, options: options)
    }

    /// Stops the capture in progress; returns what it wrote, or nil if none ran.
    @discardableResult
    package func stopCapture() -> CaptureStatus? { hub.capture.stop() }

    /// The app wrote to the replica: offer it to peers now rather than at the next poll.
    package func offerWrites() { hub.lookNow() }

    /// What the node is doing now: peers, groups with their lag, discovery, capture. Built on the
    /// hub's queue, like the control socket's answer (the sessions live there), and awaited
    /// without blocking a thread. While the hub is busy (a long catch-up) it is the newest status
    /// built (`builtAt`).
    public func currentStatus() async -> NodeStatus {
        await withCheckedContinuation { done in hub.requestStatus { done.resume(returning: $0) } }
    }

    /// The address the listener is bound to, once running.
    public var listeningAddress: PeerAddress? { boundAddress.withLock { $0 } }

    /// Listens, serves the control socket, dials and syncs until graceful shutdown or
    /// cancellation, then closes every connection with a close record and removes the socket.
    /// Throws `NodeError.alreadyRunning` when a daemon already answers on the control socket, and
    /// the bind error when the listen address or the socket cannot be bound.
    public func run() async throws {
        let controlPath = configuration.controlSocketPath(home: home)
        if ControlClient.isAnswering(socketPath: controlPath) { throw NodeError.alreadyRunning(controlPath) }
        unlink(controlPath)  // a stale socket of a daemon that was killed

        if let keyLog = KeyLogFile.path {
            logger.warning(
                "\(KeyLogEntry.environmentVariable) is set: writing every connection's transport keys to \(keyLog); anyone with that file can decrypt captured traffic"
            )
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var servers: [Channel] = []
        do {
            if let listen = configuration.listen {
                let server = try await ServerBootstrap(group: group)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                    .childChannelInitializer { [self] channel in
                        channel.eventLoop.makeCompletedFuture {
                            try addHandler(to: channel, outbound: false)
                        }
                    }
                    .bind(host: listen.host, port: listen.port).get()
                servers.append(server)
                boundAddress.withLock {
                    $0 = PeerAddress(host: listen.host, port: server.localAddress?.port ?? listen.port)
                }
            }
            let control = try await ServerBootstrap(group: group)
                .childChannelInitializer { [hub] channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ControlHandler(answer: { line, reply in hub.answer(line, reply: reply) }))
                    }
                }
                .bind(unixDomainSocketPath: controlPath, cleanupExistingSocketFile: true).get()
            chmod(controlPath, 0o600)
            servers.append(control)
        } catch {
            for s in servers { try? await s.close() }
            try? await group.shutdownGracefully()
            throw error
        }
        hub.listening.withLock { $0 = boundAddress.withLock { $0 }?.description }
        // Dialers found later (LAN peers, relays our groups name) run in the task group below.
        let (found, startDialer) = AsyncStream.makeStream(of: Dialer.self)
        let lan = LanPeers(local: device, network: configuration.channel.networkID, hub: hub, logger: logger) {
            startDialer.yield($0)
        }
        let relays = RelayLinks(logger: logger, overrides: configuration.relayAddresses) { startDialer.yield($0) }
        links.withLock { $0 = (lan, relays) }
        adoptDialer.withLock { $0 = { startDialer.yield($0) } }
        pairing.attach(group, listening: boundAddress.withLock { $0 })
        hub.delegate = self
        await hub.start()
        let discovery = configuration.discovery ? startDiscovery(lan) : nil
        logger.info(
            "device \(device.device) (\(device.certificate.name)) listening on \(boundAddress.withLock { $0 }?.description ?? "nothing (dial only)"), control socket \(controlPath)"
        )
        onListening?(boundAddress.withLock { $0 })

        await withTaskGroup(of: Void.self) { tasks in
            for dialer in dialers {
                tasks.addTask { [self] in await runDialer(dialer, group: group) }
            }
            // Graceful shutdown (or cancellation, which also ends the loop below) ends the node.
            tasks.addTask {
                try? await gracefulShutdown()
                startDialer.finish()
            }
            for await dialer in found {
                tasks.addTask { [self] in await runDialer(dialer, group: group) }
            }
            logger.info("shutting down")
            adoptDialer.withLock { $0 = nil }
            pairing.stopAll()
            discovery?.stop()
            lan.stopAll()
            relays.stopAll()
            links.withLock { $0 = nil }
            for dialer in dialers { dialer.stop() }
            // A close record on every connection; a dialer's run ends with its connection.
            await hub.stop()
            await closeConnections()
            tasks.cancelAll()
        }

        for s in servers { try? await s.close() }
        hub.capture.stop()
        unlink(controlPath)
        try? await group.shutdownGracefully()
    }

    /// Opens a pairing session on the listen host (127.0.0.1 when the node does not listen);
    /// the reply is the ticket or an error document.
    public func openPairing(_ request: PairingOpenRequest) async throws -> PairingTicket {
        let host = configuration.listen?.host ?? "127.0.0.1"
        return try await pairing.open(request, host: host, now: WallClock.nowMillis())
    }

    private func answerPairingOpen(_ request: PairingOpenRequest) async -> [UInt8] {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return Array(try encoder.encode(try await openPairing(request)))
        } catch {
            return ControlReply.error("\(error)")
        }
    }

    /// Takes a finished `invite join` in: admits the inviter, dials it, and accepts the
    /// invitation once it arrives. Throws `NodeError` (`pairing`) when the node does not run.
    public func adoptPairing(_ adoption: PairingAdoption) throws {
        guard let start = adoptDialer.withLock({ $0 }) else { throw NodeError.pairing("the node is not running") }
        hub.admit(adoption.identity)
        if let group = adoption.accept { autoAccept.withLock { _ = $0.insert(group) } }
        if !dialers.contains(where: { $0.address == adoption.address }) { start(Dialer(address: adoption.address)) }
        logger.notice("pairing: admitting \(adoption.identity), dialing \(adoption.address)")
        hub.queueAsync { [self] in acceptInvitations() }
    }

    private func adopt(_ adoption: PairingAdoption) -> [UInt8] {
        do {
            try adoptPairing(adoption)
            return Array(#"{"ok":true}"#.utf8)
        } catch {
            return ControlReply.error("\(error)")
        }
    }

    /// Accepts every awaited invitation that has arrived (on the hub's executor). An accepted
    /// group leaves `HOME/pairings.conf`, so a later invitation is a person's choice again.
    private func acceptInvitations() {
        for group in autoAccept.withLock({ $0 }) {
            guard let state = try? replica.state(of: group, view: .tentative) else { continue }
            let status = state.member(device.identity)?.status
            if status == .pending {
                do {
                    _ = try replica.append(.inviteAccepted, to: group)
                    logger.notice("accepted the invitation to \(state.name) (\(group)) as paired")
                } catch {
                    logger.error("cannot accept the invitation to \(group): \(error)")
                    continue
                }
            } else if status != .active {
                continue
            }
            autoAccept.withLock { _ = $0.remove(group) }
            do { try PairingsFile(home: home).remove(accept: group) } catch {
                logger.warning("cannot update \(PairingsFile(home: home).path): \(error)")
            }
        }
    }

    private func runDialer(_ dialer: Dialer, group: EventLoopGroup) async {
        await dialer.run(
            hub: hub,
            connect: { [self] address, established, closed in
                try await dial(address, group: group, established: established, closed: closed)
            }, logger: logger)
    }

    /// Advertises our listener (when there is one) and browses for peers.
    private func startDiscovery(_ lan: LanPeers) -> Discovery {
        hub.discoveryState.withLock { $0 = (true, nil) }
        let advertisement = boundAddress.withLock { $0 }.map { address in
            ServiceAdvertisement(
                name: configuration.serviceName ?? "\(device.certificate.name.prefix(40)) (\(device.device.short))",
                port: address.port,
                txt: PeerlogDNSSD.txt(
                    device: device.device.string, identity: device.identity.string,
                    network: configuration.channel.networkID)
            )
        }
        let hub = hub
        let discovery = Discovery(advertise: advertisement, browse: true) { event in
            switch event {
            case .unavailable(let why): hub.discoveryState.withLock { $0 = (true, why) }
            case .registered: hub.discoveryState.withLock { $0 = (true, nil) }
            default: break
            }
            lan.handle(event)
        }
        discovery.start()
        return discovery
    }

    /// Puts a `PeerHandler` on a new connection's pipeline and keeps the connection (until it
    /// closes) for `closeConnections()`. On the connection's event loop.
    private func addHandler(
        to channel: Channel, outbound: Bool, established: @escaping @Sendable (DeviceCertificate) -> Void = { _ in },
        closed: @escaping @Sendable (ChannelCloseReason) -> Void = { _ in }
    ) throws {
        let id = nextConnectionID.add(1, ordering: .relaxed).newValue
        let handler = PeerHandler(
            id: id, outbound: outbound, hub: hub, configuration: configuration.channel, admission: admission, tap: tap,
            logger: logger,
            onEstablished: established, onClosed: closed)
        if !outbound {
            try channel.pipeline.syncOperations.addHandler(
                InboundSniffer(peer: handler, pairing: { [pairing] in pairing.makeHandler() }))
        }
        try channel.pipeline.syncOperations.addHandler(handler)
        let loopBound = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        let close: @Sendable () -> Void = {
            channel.eventLoop.execute { loopBound.value.close(reason: NodeCloseReason.shuttingDown.description) }
        }
        openConnections.withLock { $0[id] = (channel, close) }
        channel.closeFuture.whenComplete { [self] _ in _ = openConnections.withLock { $0.removeValue(forKey: id) } }
    }

    /// At shutdown: closes every connection still open (those in their handshake; the hub
    /// closed the established ones) and waits until each has sent its close record and closed,
    /// for at most `closeTimeout` (a peer that stopped reading cannot hold the node).
    private func closeConnections() async {
        let open = openConnections.withLock { Array($0.values) }
        var deadlines: [Scheduled<Void>] = []
        for (channel, close) in open {
            close()
            deadlines.append(channel.eventLoop.scheduleTask(in: Self.closeTimeout) { channel.close(promise: nil) })
        }
        // Not cancellable: close records go out even when the node's task was cancelled.
        for (channel, _) in open { try? await channel.closeFuture.get() }
        for deadline in deadlines { deadline.cancel() }
    }

    static let closeTimeout: TimeAmount = .seconds(2)

    private func dial(
        _ address: PeerAddress, group: EventLoopGroup, established: @escaping @Sendable (DeviceCertificate) -> Void,
        closed: @escaping @Sendable (ChannelCloseReason) -> Void
    ) async throws -> Channel {
        try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try addHandler(to: channel, outbound: true, established: established, closed: closed)
                }
            }
            .connect(host: address.host, port: address.port).get()
    }
}

extension PeerlogNode: NodeHubDelegate {
    func peerStatus() -> [PeerStatus] {
        let links = links.withLock { $0 }
        return dialers.map(\.status) + (links?.relays.status ?? []) + (links?.lan.status ?? [])
    }

    func membershipChanged() { links.withLock { $0 }?.lan.recheck() }

    func relaysChanged(_ relays: Set<RelayEndpoint>) { links.withLock { $0 }?.relays.reconcile(relays) }

    func groupOperationsChanged() { acceptInvitations() }

    func pairingStatus() -> PairingStatus? { pairing.status(now: WallClock.nowMillis()) }

    func pairingOpen(_ request: PairingOpenRequest) async -> [UInt8] { await answerPairingOpen(request) }

    func pairingAdopt(_ adoption: PairingAdoption) -> [UInt8] { adopt(adoption) }

    func controlPut(_ put: ControlPut) async -> [UInt8] {
        guard let writer = controlWriter.withLock({ $0 }) else {
            return ControlReply.error("this node takes no writes on its control socket")
        }
        return await writer(put)
    }
}
