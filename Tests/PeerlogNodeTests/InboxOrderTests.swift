import Dispatch
import Logging
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import Synchronization
import Testing

@testable import PeerlogNode
@testable import PeerlogSync

/// A connection's first messages can reach the hub's inbox before the queue has run its
/// `established` (a drain scheduled earlier is still ahead of it). They must wait for it, not
/// be dropped: a dropped hello left a relay's connection silent for a minute (CI, 2026-12-02).
struct InboxOrderTests {
    /// Bytes a hub sends on one connection.
    final class Sent: Sendable {
        let messages = Mutex<[[UInt8]]>([])
        let closes = Mutex<[NodeCloseReason]>([])
    }

    static func ref(id: UInt64, outbound: Bool, peer: LocalDevice, sent: Sent) -> ConnectionRef {
        ConnectionRef(
            info: NodeConnection(id: id, outbound: outbound, remote: "test-\(id)", peer: peer.certificate, since: 1),
            send: { bytes in sent.messages.withLock { $0.append(bytes) } },
            close: { reason in sent.closes.withLock { $0.append(reason) } })
    }

    /// Runs `body` on `queue` once everything queued before it has run.
    static func onQueue<T: Sendable>(_ queue: DispatchQueue, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { done in queue.async { done.resume(returning: body()) } }
    }

    /// A device dials the relay twice at once (two dialers for one address). The relay's
    /// queue is busy while the first connection's hello schedules a drain, the second
    /// connection's handshake ends and its hello arrives: the drain takes the first and leaves
    /// the second, whose session opens with it once `established` has run.
    @Test func aHelloThatArrivesBeforeItsConnectionIsEstablishedWaitsForIt() async throws {
        var logger = Logger(label: "inbox-order")
        logger.logLevel = .critical
        let alice = try LocalDevice.deterministic(seed: Array("inbox/alice".utf8), name: "alice", createdAt: 1)
        let relay = try LocalDevice.deterministic(seed: Array("inbox/relay".utf8), name: "relay", createdAt: 1)

        // Alice's hello, as her session sends it first.
        let aliceHub = NodeHub(
            replica: Replica(store: try Store(), device: alice), device: alice, allow: [relay.identity],
            logger: logger, executor: .inline)
        aliceHub.startInline()
        let fromAlice = Sent()
        aliceHub.established(Self.ref(id: 1, outbound: true, peer: relay, sent: fromAlice))
        let hello = try #require(fromAlice.messages.withLock { $0.first })

        // The relay's clock stands still: on a busy machine this test can wait longer than
        // idleTimeoutMs between two steps, and a tick must not close a connection still
        // waiting for its hello (CI, 2026-12-02: "no hello within idleTimeoutMs").
        let queue = DispatchQueue(label: "inbox-order.relay")
        let relayHub = NodeHub(
            replica: Replica(store: try Store(), device: relay), device: relay, allow: [alice.identity],
            logger: logger, clock: { 1_000 }, executor: .queue(queue))
        await relayHub.start()
        let (first, second) = (Sent(), Sent())
        relayHub.established(Self.ref(id: 1, outbound: false, peer: alice, sent: first))
        _ = await Self.onQueue(queue) {}

        queue.suspend()
        relayHub.received(hello, on: 1, processed: {})  // schedules a drain
        relayHub.established(Self.ref(id: 2, outbound: false, peer: alice, sent: second))
        relayHub.received(hello, on: 2, processed: {})  // joins the scheduled drain's inbox
        queue.resume()
        // The drain, `established`, the drain it left the second hello to.
        for _ in 0..<3 { _ = await Self.onQueue(queue) {} }

        let phase = await Self.onQueue(queue) { relayHub.session(2)?.phase }
        #expect(phase == .open, "the second connection's hello was dropped")
        #expect(first.closes.withLock { $0 } == [.duplicateConnection], "the tie-break keeps the newer connection")
        #expect(second.closes.withLock { $0 }.isEmpty)
        #expect(!relayHub.inbox.holds(2))
        await relayHub.stop()
    }
}
