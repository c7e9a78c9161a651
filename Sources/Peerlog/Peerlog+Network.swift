import Logging
import PeerlogNode

/// How `Peerlog.run` connects: the same settings as `peerlog daemon` (docs/TOOLS.md).
public struct NetworkOptions: Sendable {
    /// Where to accept connections; nil: dial only. The default accepts only this machine
    /// (127.0.0.1:7300); give `PeerAddress(host: "0.0.0.0", port: 7300)` to sync over the LAN.
    public var listen: PeerAddress? = PeerAddress(host: "127.0.0.1", port: NodeConfiguration.defaultPort)
    /// Peers to keep connected to, redialed with backoff.
    public var peers: [PeerAddress] = []
    /// Identities let in besides this one and the members of groups held here: a device you
    /// expect an invitation from (its groups are not held here yet).
    public var allow: Set<IdentityID> = []
    /// Advertise and browse `_peerlog._tcp` over DNS-SD (mDNS on the LAN).
    public var discovery = true
    /// Only devices presenting the same network id connect (default: Peerlog's own).
    public var networkID: String?
    /// How often the node looks for writes by other processes (the CLI) to push them; writes
    /// through this `Peerlog` are looked for as often.
    public var pollInterval: Duration = .milliseconds(250)
    /// The node's log level (the app's `LoggingSystem` decides where lines go).
    public var logLevel: Logger.Level = .notice
    /// The control socket `peerlog status` talks to; default `HOME/peerlog.sock`.
    public var controlSocket: String?

    /// The defaults above.
    public init() {}
}

extension Peerlog {
    /// Runs the node inside the app until the calling task is cancelled (or, in a
    /// `ServiceGroup`, until graceful shutdown): listens, finds peers on the LAN, dials
    /// `options.peers` and the groups' relays, and syncs every shared group. Cancelling closes
    /// every connection with a close record and returns. One `run` at a time per instance, and
    /// per home (a daemon on the same home makes this throw).
    /// `onListening` gets the bound address (useful with port 0).
    public func run(_ options: NetworkOptions = NetworkOptions(), onListening: (@Sendable (PeerAddress?) -> Void)? = nil) async throws {
        var configuration = NodeConfiguration()
        configuration.listen = options.listen
        configuration.peers = options.peers
        configuration.discovery = options.discovery
        configuration.allow = options.allow
        if let id = options.networkID { configuration.channel.networkID = id }
        configuration.pollInterval = options.pollInterval
        configuration.controlSocket = options.controlSocket
        configuration.logLevel = options.logLevel
        var logger = Logger(label: "peerlog")
        logger.logLevel = options.logLevel
        let node: PeerlogNode
        do { node = try PeerlogNode(home: home, configuration: configuration, logger: logger, replica: replica) } catch {
            throw PeerlogError(.network, "cannot start the node: \(error)")
        }
        node.onListening = onListening
        let started = running.withLock { current -> Bool in
            guard current == nil else { return false }
            current = node
            return true
        }
        guard started else { throw PeerlogError(.network, "this Peerlog is running its node already") }
        defer { running.withLock { $0 = nil } }
        do { try await node.run() } catch {
            throw PeerlogError(.network, "\(error)")
        }
    }

    /// What the running node is doing (peers, each group's committed seq and tentative count,
    /// discovery); nil while `run` is not running.
    public var networkStatus: NodeStatus? { running.withLock { $0 }?.status }

    /// `networkStatus` every `interval` while this stream is iterated (nothing while the node
    /// is not running). Ends when the iterating task is cancelled.
    public func statusUpdates(every interval: Duration = .seconds(1)) -> AsyncStream<NodeStatus> {
        AsyncStream { continuation in
            let task = Task {
                while !Task.isCancelled {
                    if let status = self.networkStatus { continuation.yield(status) }
                    try? await Task.sleep(for: interval)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
