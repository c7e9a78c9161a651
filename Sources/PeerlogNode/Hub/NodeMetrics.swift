import CoreMetrics
import PeerlogChannel
import PeerlogSync
import Synchronization

/// The node's metrics through swift-metrics (names in docs/TOOLS.md#metrics). `peerlog daemon
/// --http` and `relay run --http` hand it a Prometheus registry's factory; an app embedding the
/// node gets whatever backend it bootstrapped (none: every call is a no-op).
///
/// Event counters are bumped where the event happens (a connection's handler, the hub); the
/// per-group gauges and the commit counter are set from a status document (`record(_:)`), so
/// nothing runs per write that grows with the number of groups.
public final class NodeMetrics: Sendable {
    private let factory: any MetricsFactory
    private let receiptsIngested: Counter
    private let bytesIn: Counter
    private let bytesOut: Counter
    private let roundTrips: Counter
    private let requestsRepeated: Counter
    private let commits: Counter
    private let rejectedInvalid: Counter
    private let rejectedRefused: Counter
    /// Each group's committed mark when last recorded: the commit counter grows by the difference.
    private let lastCommitted = Mutex<[String: UInt64]>([:])

    /// Metrics made by `factory` (default: the process's bootstrapped backend).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        receiptsIngested = Counter(label: "peerlog_receipts_ingested_total", factory: factory)
        bytesIn = Counter(label: "peerlog_bytes_received_total", factory: factory)
        bytesOut = Counter(label: "peerlog_bytes_sent_total", factory: factory)
        roundTrips = Counter(label: "peerlog_sync_round_trips_total", factory: factory)
        requestsRepeated = Counter(label: "peerlog_sync_requests_repeated_total", factory: factory)
        commits = Counter(label: "peerlog_commits_total", factory: factory)
        rejectedInvalid = Counter(
            label: "peerlog_items_rejected_total", dimensions: [("reason", "invalid")], factory: factory)
        rejectedRefused = Counter(
            label: "peerlog_items_rejected_total", dimensions: [("reason", "refused")], factory: factory)
        // Every series exists from the start, at 0, so a scrape shows what can be counted.
        for reason in Self.handshakeFailureKinds { handshakeFailures(reason).increment(by: 0) }
        for outbound in [false, true] { opened(outbound).increment(by: 0) }
    }

    /// The `reason` label values of `peerlog_handshake_failures_total`.
    static let handshakeFailureKinds = ["timeout", "protocol", "unauthorized", "truncated", "resource_limit", "closed"]

    private func handshakeFailures(_ kind: String) -> Counter {
        Counter(label: "peerlog_handshake_failures_total", dimensions: [("reason", kind)], factory: factory)
    }

    private func opened(_ outbound: Bool) -> Counter {
        Counter(
            label: "peerlog_connections_opened_total", dimensions: [("direction", outbound ? "outbound" : "inbound")],
            factory: factory)
    }

    /// Bytes read from or written to a peer's socket (frames with their headers).
    func bytes(received: Int = 0, sent: Int = 0) {
        if received > 0 { bytesIn.increment(by: Int64(received)) }
        if sent > 0 { bytesOut.increment(by: Int64(sent)) }
    }

    /// A handshake finished: the connection counts as opened in its direction.
    func connectionOpened(outbound: Bool) { opened(outbound).increment() }

    /// A connection closed; before its handshake finished, that is a handshake failure, counted
    /// by the kind of reason (`timeout`, `protocol`, `unauthorized`, `truncated`,
    /// `resource_limit`, `closed`).
    func connectionClosed(established: Bool, reason: ChannelCloseReason) {
        guard !established else { return }
        handshakeFailures(Self.kind(of: reason)).increment()
    }

    /// What a sync session reported.
    func record(_ event: SyncEvent) {
        switch event {
        case .ingested(_, let report): receiptsIngested.increment(by: Int64(report.stored))
        case .caughtUp: roundTrips.increment()
        case .requestRepeated: requestsRepeated.increment()
        case .rejected(_, let items):
            let invalid = items.count(where: \.invalid)
            if invalid > 0 { rejectedInvalid.increment(by: Int64(invalid)) }
            if items.count > invalid { rejectedRefused.increment(by: Int64(items.count - invalid)) }
        default: break
        }
    }

    /// Sets the gauges from a status document: per group the committed mark, the tentative
    /// backlog and the lag behind the most advanced connected peer; live connections by
    /// direction. Commits seen since the previous call (or since the first, which only sets the
    /// baseline) go to `peerlog_commits_total`.
    public func record(_ status: NodeStatus) {
        var gained: UInt64 = 0
        lastCommitted.withLock { last in
            for group in status.groups {
                if let before = last[group.id], group.committed > before { gained += group.committed - before }
                last[group.id] = group.committed
            }
        }
        if gained > 0 { commits.increment(by: Int64(clamping: gained)) }
        for group in status.groups {
            let labels = [("group", group.id)]
            gauge("peerlog_group_committed_seq", labels).record(Int64(clamping: group.committed))
            gauge("peerlog_group_tentative", labels).record(Int64(group.tentative))
            gauge("peerlog_group_lag", labels).record(Int64(clamping: group.peers.map(\.behind).max() ?? 0))
        }
        if let blobs = status.blobs {
            gauge("peerlog_blob_bytes_received", []).record(Int64(clamping: blobs.receivedBytes))
            gauge("peerlog_blob_bytes_served", []).record(Int64(clamping: blobs.servedBytes))
            gauge("peerlog_blob_fetches", []).record(Int64(blobs.fetching.count))
            gauge("peerlog_blob_bytes_held", []).record(Int64(clamping: blobs.heldBytes))
            gauge("peerlog_blob_cache_bytes", []).record(Int64(clamping: blobs.cachedBytes))
            gauge("peerlog_blob_cache_limit_bytes", []).record(Int64(clamping: blobs.cacheLimitBytes))
            gauge("peerlog_blob_fetch_bytes_held", []).record(
                Int64(clamping: blobs.fetching.reduce(0) { $0 + $1.heldBytes }))
            gauge("peerlog_blob_fetch_bytes_total", []).record(
                Int64(clamping: blobs.fetching.reduce(0) { $0 + $1.size }))
        }
        let connected = status.peers.filter { $0.state == .connected }
        for direction in [PeerStatus.Direction.inbound, .outbound] {
            gauge("peerlog_connections", [("direction", direction.rawValue)])
                .record(Int64(connected.count { $0.direction == direction }))
        }
    }

    private func gauge(_ label: String, _ dimensions: [(String, String)]) -> Gauge {
        Gauge(label: label, dimensions: dimensions, factory: factory)
    }

    /// The label value of a close reason: its kind, never its free text (bounded cardinality).
    static func kind(of reason: ChannelCloseReason) -> String {
        switch reason {
        case .handshakeTimeout: "timeout"
        case .protocolError: "protocol"
        case .unauthorized: "unauthorized"
        case .truncated: "truncated"
        case .resourceLimit: "resource_limit"
        case .local, .remote: "closed"
        }
    }
}
