import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import PeerlogNode
import Prometheus
import ServiceLifecycle

/// Why the status server stopped.
public enum StatusServerError: Error, CustomStringConvertible {
    /// The address could not be bound (in use, not an address of this machine, …).
    case cannotListen(String, String)

    /// One line for the CLI.
    public var description: String {
        switch self {
        case .cannotListen(let address, let why): "cannot serve --http on \(address): \(why)"
        }
    }
}

/// Node metrics that count into a Prometheus registry, which `/metrics` prints.
public struct StatusMetrics: Sendable {
    /// What the node counts into (`NodeConfiguration.metrics`).
    public let node: NodeMetrics
    let registry: PrometheusCollectorRegistry

    /// A fresh registry (the process's global swift-metrics backend is left alone).
    public init() {
        registry = PrometheusCollectorRegistry()
        node = NodeMetrics(factory: PrometheusMetricsFactory(registry: registry))
    }
}

/// `--http HOST:PORT` of `peerlog daemon` and `peerlog relay run` (docs/TOOLS.md#status-page):
///
/// - `/`: the status page, one self-contained HTML file that follows `/events`;
/// - `/api/status`: the status document of `peerlog status --json`;
/// - `/events`: server-sent events, one `status` event (that document on one line) per second;
/// - `/metrics`: Prometheus text format.
///
/// Anything else is 404; a request without the token (when one is set) is 401 whatever its path.
public final class StatusServer: Service, Sendable {
    /// Connections served at once; more wait in the listen backlog.
    public static let maxConnections = 64
    /// A connection that has not sent a whole request (or a next one) for this long is closed:
    /// a client trickling its headers holds a slot no longer.
    public static let idleTimeout: TimeAmount = .seconds(10)
    /// The largest request head read (headers together); larger ones are refused.
    public static let maxHeaderBytes = 16 * 1024

    private let address: PeerAddress
    private let access: HTTPAccess
    private let node: PeerlogNode
    private let metrics: StatusMetrics
    private let feed: StatusFeed
    private let logger: Logger
    private let onListening: @Sendable (String) -> Void
    private let startAfter: AsyncStream<Void>?

    /// A server for `node` on `address`. `metrics.node` must be what the node counts into
    /// (`NodeConfiguration.metrics`); `onListening` gets the bound `HOST:PORT` (the real port
    /// when 0 was asked for). With `startAfter`, nothing is bound before it yields (the daemon
    /// waits for its node's listener, so its "listening on" line stays the first it prints).
    public init(
        address: PeerAddress, access: HTTPAccess, node: PeerlogNode, metrics: StatusMetrics,
        interval: Duration = .seconds(1), startAfter: AsyncStream<Void>? = nil, logger: Logger,
        onListening: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.address = address
        self.access = access
        self.node = node
        self.metrics = metrics
        self.logger = logger
        self.onListening = onListening
        self.startAfter = startAfter
        feed = StatusFeed(node: node, metrics: metrics.node, interval: interval)
    }

    /// Serves until graceful shutdown or cancellation; open event streams end first.
    public func run() async throws {
        if let startAfter {
            for await _ in startAfter.cancelOnGracefulShutdown() { break }
            guard !Task.isCancelled, !Task.isShuttingDownGracefully else { return }
        }
        let router = Router(context: StatusRequestContext.self)
        router.get("/") { _, _ in Self.response(StatusPage.html, type: "text/html; charset=utf-8") }
        router.get("/api/status") { [node] _, _ in
            Self.response(try await node.currentStatus().document(), type: "application/json")
        }
        router.get("/metrics") { [node, metrics] _, _ in
            metrics.node.record(await node.currentStatus())
            return Self.response(metrics.registry.emitToBuffer(), type: "text/plain; version=0.0.4; charset=utf-8")
        }
        router.get("/events") { [feed] _, context in Self.events(feed, channel: context.channel) }
        let onListening = onListening
        let started = Flag()
        let address = address
        let app = Application(
            responder: Guarded(access: access, inner: router.buildResponder()),
            server: .http1(
                configuration: .init(
                    idleTimeout: Self.idleTimeout,
                    httpDecoderConfiguration: .init(
                        maxHeaderFieldSize: Self.maxHeaderBytes, maxHeaderListSize: Self.maxHeaderBytes,
                        maxHeaderFieldCount: 100))),
            configuration: .init(
                address: .hostname(address.host, port: address.port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(Self.maxConnections, logger: logger)),
            onServerRunning: { channel in
                started.set()
                let bound = channel.localAddress
                let host = bound?.ipAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "?"
                onListening("\(host):\(bound?.port ?? 0)")
            },
            logger: logger
        )
        let feed = feed
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await feed.run() }
            group.addTask {
                // Open event streams end when shutdown starts, so open pages do not hold it up;
                // the sampler stops with the server, however it ends.
                defer { feed.finish() }
                do {
                    try await withGracefulShutdownHandler {
                        try await app.run()
                    } onGracefulShutdown: {
                        feed.finish()
                    }
                } catch  where !started.isSet {
                    throw StatusServerError.cannotListen(address.description, "\(error)")
                }
            }
        }
    }
}
