import PeerlogEngine
import PeerlogModel
import PeerlogSync
import Synchronization

/// One message read from a connection, waiting for the executor.
struct InboxMessage: Sendable {
    let connection: UInt64
    let bytes: [UInt8]
    /// Runs once the message was handled (the handler's read backpressure).
    let processed: @Sendable () -> Void
}

/// The messages the connections read while the executor was busy. The first one schedules a
/// drain; the ones that come before it runs are handled by the same drain.
///
/// A connection's first messages can arrive before the executor has run its `established`
/// (queued behind a drain scheduled earlier). A drain must not take them then: with no session
/// yet they would be dropped, the peer's hello among them, and the connection would stay
/// silent until the peer's next message fails as "before hello". So a connection is
/// `expect`ed (synchronously, when its handshake ends) until its session is `opened`, and a
/// drain stops before its first message; the next drain, queued after `established`, takes it.
final class Inbox: Sendable {
    private let state = Mutex((messages: [InboxMessage](), scheduled: false, unopened: Set<UInt64>()))

    /// Adds `message`; true when the caller must schedule a drain (none is scheduled).
    func add(_ message: InboxMessage) -> Bool {
        state.withLock { s in
            s.messages.append(message)
            defer { s.scheduled = true }
            return !s.scheduled
        }
    }

    /// `connection`'s handshake finished and its `established` is queued: none of its messages
    /// is taken until it is `opened`.
    func expect(_ connection: UInt64) {
        state.withLock { _ = $0.unopened.insert(connection) }
    }

    /// `connection`'s `established` ran (it has a session, or was closed by the tie-break).
    func opened(_ connection: UInt64) {
        state.withLock { _ = $0.unopened.remove(connection) }
    }

    /// Whether a message of `connection` waits.
    func holds(_ connection: UInt64) -> Bool {
        state.withLock { s in s.messages.contains { $0.connection == connection } }
    }

    /// Takes the oldest messages, up to `maxMessages` and `maxBytes` (at least one) and
    /// stopping before one of a connection not yet opened (then none may be taken), and whether
    /// more wait (then the drain stays scheduled: the caller schedules the next).
    func take(maxMessages: Int, maxBytes: Int) -> (messages: [InboxMessage], more: Bool) {
        state.withLock { s in
            var n = 0
            var bytes = 0
            while n < min(s.messages.count, maxMessages), n == 0 || bytes + s.messages[n].bytes.count <= maxBytes,
                !s.unopened.contains(s.messages[n].connection)
            {
                bytes += s.messages[n].bytes.count
                n += 1
            }
            let taken = Array(s.messages.prefix(n))
            s.messages.removeFirst(n)
            if s.messages.isEmpty { s.scheduled = false }
            return (taken, !s.messages.isEmpty)
        }
    }
}

/// A message of a connection still open, with its session.
private struct Received {
    let message: InboxMessage
    let session: SyncSession
}

extension NodeHub {
    /// The most messages one drain handles, and the bytes they may hold together (past either,
    /// the rest goes to the next drain, after what else waits for the executor): one
    /// transaction stays small enough to fit where the disk has little room left.
    static let maxMessagesPerDrain = 64
    /// (A catch-up's full batches, up to 1 MiB each, so go one per drain, as before.)
    static let maxBytesPerDrain = 512 << 10

    /// Handles the messages that arrived since the last drain. Each goes to its session; the
    /// batches they carry (from one peer or several) are written in one transaction
    /// (`SyncSession.receive(_:writingWith:)`): a catch-up of many small groups pays one commit
    /// per drain, not one per group. Every session's ingests are answered before any output is
    /// performed.
    /// Returns whether it took any message (none while the oldest waits for its connection's
    /// `established`, which is queued ahead of the next drain).
    @discardableResult
    func drainInbox() -> Bool {
        let (messages, more) = inbox.take(maxMessages: Self.maxMessagesPerDrain, maxBytes: Self.maxBytesPerDrain)
        defer {
            for m in messages { m.processed() }
            statusRequests.serveWaiting { buildStatus() }
            if more { queueAsync { [self] in drainInbox() } }
        }
        // Messages of connections closed meanwhile are dropped.
        let live = messages.compactMap { m in session(m.connection).map { Received(message: m, session: $0) } }
        let results = SyncSession.receive(live.map { ($0.session, $0.message.bytes) }, writingWith: replica)
        let settled = zip(live, results).map { m, r in
            (connection: m.message.connection, actions: settle(r.actions, on: m.message.connection, with: r.writer))
        }
        var closed = Set<UInt64>()
        for m in settled where !closed.contains(m.connection) {
            performSettled(m.actions, on: m.connection)
            if session(m.connection) == nil || m.actions.contains(where: \.closes) { closed.insert(m.connection) }
        }
        return !messages.isEmpty
    }
}
