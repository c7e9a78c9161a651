import Foundation
import Logging
import PeerlogNode
import Synchronization

/// How a `Peerlog` node connects: the same settings as `peerlog daemon` and its
/// `daemon.conf` (docs/TOOLS.md).
public struct NetworkOptions: Sendable {
    /// Where to accept connections; nil: dial only. The default accepts only this machine
    /// (127.0.0.1:7300); give `PeerAddress(host: "0.0.0.0", port: 7300)` to sync over the LAN.
    public var listen: PeerAddress? = PeerAddress(host: "127.0.0.1", port: NodeConfiguration.defaultPort)
    /// Peers to keep connected to, redialed with backoff.
    public var peers: [PeerAddress] = []
    /// Identities let in besides this one and the members of groups held here: a device you
    /// expect an invitation from (its groups are not held here yet).
    public var allow: Set<IdentityID> = []
    /// Where to reach a relay instead of the address its groups name (keyed by the relay's key).
    public var relayAddresses: [DeviceID: PeerAddress] = [:]
    /// Advertise and browse `_peerlog._tcp` over DNS-SD (mDNS on the LAN).
    public var discovery = true
    /// Only devices presenting the same network id connect (default: Peerlog's own).
    public var networkID: String?
    /// How often the node looks for writes by other processes to push them. Writes through this
    /// `Peerlog`, and by `peerlog` commands on the same home, are pushed at once.
    public var pollInterval: Duration = .milliseconds(250)
    /// One tick of the elected sequencers, and of the node's other timed work (tests stretch it
    /// to show what happens without ticks).
    package var electionTick: Duration = .milliseconds(100)
    /// The most bytes of blobs fetched from peers the node keeps (16 GiB); over it the least
    /// recently used are evicted, and fetched again when read. Blobs put here are not counted.
    public var blobCacheBytes: UInt64 = 16 << 30
    /// How long a blob no value references is kept before the node deletes it (24 hours).
    public var blobGrace: Duration = .seconds(86_400)
    /// How long a connection may carry nothing before it is closed (10 s…1 h; default 90 s). The
    /// node sends a keepalive every third of it, so a peer that vanished (a closed lid, a cable
    /// pulled) is noticed within it (docs/PROTOCOL.md §15.2.12).
    public var idleTimeout: Duration = .seconds(90)
    /// The node's log level (the app's `LoggingSystem` decides where lines go).
    public var logLevel: Logger.Level = .notice
    /// The control socket `peerlog status` talks to; default `HOME/peerlog.sock`.
    public var controlSocket: String?
    /// Where the node counts what it does (`--http`'s Prometheus registry); nil: the process's
    /// swift-metrics backend.
    package var metrics: NodeMetrics?

    /// The defaults above.
    public init() {}

    /// Applies a configuration file on top: one `key = value` per line (`listen`, `peer`,
    /// `allow`, `network`, `control`, `log-level`, `discovery`, `idle-timeout`; docs/TOOLS.md). The error names
    /// the line.
    public mutating func load(file path: String) throws {
        var c = configuration
        do { try c.load(file: path) } catch { throw PeerlogError(.network, "\(error)") }
        self = NetworkOptions(c)
    }

    /// `peerlog daemon`'s settings before its options: log level info, then `file`, or
    /// `HOME/daemon.conf` when none is given and it exists.
    package static func daemon(home: String, file: String? = nil) throws -> NetworkOptions {
        var options = NetworkOptions()
        options.logLevel = .info
        let defaultFile = home + "/daemon.conf"
        if let file {
            try options.load(file: file)
        } else if FileManager.default.fileExists(atPath: defaultFile) {
            try options.load(file: defaultFile)
        }
        return options
    }

    var configuration: NodeConfiguration {
        var c = NodeConfiguration()
        c.listen = listen
        c.peers = peers
        c.allow = allow
        c.relayAddresses = relayAddresses
        c.discovery = discovery
        if let networkID { c.channel.networkID = networkID }
        c.pollInterval = pollInterval
        c.electionTick = electionTick
        c.blobCacheBytes = blobCacheBytes
        c.blobGrace = blobGrace
        c.controlSocket = controlSocket
        c.logLevel = logLevel
        c.metrics = metrics
        c.idleTimeout = idleTimeout
        return c
    }

    init(_ c: NodeConfiguration) {
        listen = c.listen
        peers = c.peers
        allow = c.allow
        relayAddresses = c.relayAddresses
        discovery = c.discovery
        networkID = c.channel.networkID == NodeConfiguration().channel.networkID ? nil : c.channel.networkID
        pollInterval = c.pollInterval
        blobCacheBytes = c.blobCacheBytes
        blobGrace = c.blobGrace
        controlSocket = c.controlSocket
        logLevel = c.logLevel
        metrics = c.metrics
        idleTimeout = c.idleTimeout
    }
}

extension Peerlog {
    /// Runs the node inside the app until the calling task is cancelled (or, in a
    /// `ServiceGroup`, until graceful shutdown): listens, finds peers on the LAN, dials
    /// `options.peers` and the groups' relays, and syncs every shared group. Cancelling closes
    /// every connection with a close record and returns. One `run` at a time per instance, and
    /// per home (a daemon on the same home makes this throw).
    /// `onListening` gets the bound address (useful with port 0).
    public func run(
        _ options: NetworkOptions = NetworkOptions(), onListening: (@Sendable (PeerAddress?) -> Void)? = nil
    ) async throws {
        let service = try service(options, onListening: onListening)
        try await service.run()
    }

    /// What the running node is doing (peers, each group's committed seq and tentative count,
    /// discovery); nil while `run` is not running. Built on the node's queue and awaited: no
    /// thread waits for it.
    public var networkStatus: NodeStatus? {
        get async {
            guard let node = running.withLock({ $0 }) else { return nil }
            return await node.currentStatus()
        }
    }

    /// `networkStatus` every `interval` while this stream is iterated (nothing while the node
    /// is not running). Ends when the iterating task is cancelled.
    public func statusUpdates(every interval: Duration = .seconds(1)) -> AsyncStream<NodeStatus> {
        let started = Atomic(false)
        return AsyncStream(unfolding: { [self] in
            // The first status at once, then one per interval; a stopped node yields nothing.
            while !Task.isCancelled {
                if started.exchange(true, ordering: .relaxed) {
                    do { try await Task.sleep(for: interval) } catch { return nil }
                }
                if let status = await networkStatus { return status }
            }
            return nil
        })
    }
}
