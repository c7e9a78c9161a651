import Foundation
import PeerlogNode
import Synchronization

/// Samples the node's status once per `interval` while a page is open, records it in the
/// metrics, and hands the newest document to each live page's event stream. A subscriber holds at most one document
/// (the newest), so a client that reads slowly costs one status, not a backlog.
final class StatusFeed: Sendable {
    /// The most event streams open at once; more get 503 (each holds a connection and a task).
    static let maxSubscribers = 16

    private let node: PeerlogNode
    private let metrics: NodeMetrics
    private let interval: Duration
    private let state = Mutex<State>(State())

    private struct State {
        var subscribers: [UInt64: AsyncStream<[UInt8]>.Continuation] = [:]
        var next: UInt64 = 0
        var latest: [UInt8]?
        var finished = false
    }

    init(node: PeerlogNode, metrics: NodeMetrics, interval: Duration) {
        self.node = node
        self.metrics = metrics
        self.interval = interval
    }

    /// A stream of status documents (one line of JSON each), starting with the newest; nil when
    /// `maxSubscribers` are open or the feed has stopped.
    func subscribe() -> AsyncStream<[UInt8]>? {
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id: UInt64? = state.withLock { s in
            guard !s.finished, s.subscribers.count < Self.maxSubscribers else { return nil }
            s.next += 1
            s.subscribers[s.next] = continuation
            if let latest = s.latest { continuation.yield(latest) }
            return s.next
        }
        guard let id else { return nil }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Samples until `finish()` or cancellation, then ends every stream. The first sample sets
    /// the commit counter's baseline; after that a sample is taken only while a page is open
    /// (a scrape records its own), so an unwatched node does no status reads.
    func run() async {
        defer { finish() }
        var first = true
        while !Task.isCancelled, !state.withLock({ $0.finished }) {
            if first || hasSubscribers() { await sample() }
            first = false
            try? await Task.sleep(for: interval)
        }
    }

    /// Whether a page is open; when none is, the newest document is dropped, so the next page
    /// never starts from a stale one.
    private func hasSubscribers() -> Bool {
        state.withLock { s in
            if s.subscribers.isEmpty { s.latest = nil }
            return !s.subscribers.isEmpty
        }
    }

    /// Ends every stream and refuses new ones.
    func finish() {
        let ended = state.withLock { s in
            s.finished = true
            defer { s.subscribers = [:] }
            return Array(s.subscribers.values)
        }
        for continuation in ended { continuation.finish() }
    }

    private func sample() async {
        let status = await node.currentStatus()
        metrics.record(status)
        guard let document = try? status.document(pretty: false) else { return }
        let targets = state.withLock { s in
            s.latest = document
            return Array(s.subscribers.values)
        }
        for continuation in targets { continuation.yield(document) }
    }
}
