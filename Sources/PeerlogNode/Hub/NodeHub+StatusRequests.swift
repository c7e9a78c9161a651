import Dispatch
import PeerlogModel
import Synchronization

/// Status requests that never wait long for a busy hub. A status is built on the hub's queue
/// (the sessions live there); while the hub takes in a long log its queue holds seconds of
/// work, and `peerlog status`, `group show` or `/api/status` waited for all of it. Now requests
/// that arrive while a build is queued share that build; the hub also builds one between two
/// messages it processes when a request waits (`serveWaiting`), so a request is answered
/// after the message in hand, not after the backlog. One not answered within `patience`
/// gets the newest status built instead, its hub parts as of `builtAt`, with the parts kept
/// off the queue (pairing, capture, discovery) read afresh.
final class StatusRequests: Sendable {
    /// How long a request waits for a fresh build before it takes the newest one.
    static let patience: DispatchTimeInterval = .milliseconds(200)

    private struct State {
        var latest: NodeStatus?
        var building = false
        var waiters: [OneReply] = []
    }

    /// A reply that happens once, whichever of the fresh build and the deadline comes first.
    final class OneReply: Sendable {
        private let deliver: Mutex<(@Sendable (NodeStatus) -> Void)?>
        init(_ deliver: @escaping @Sendable (NodeStatus) -> Void) { self.deliver = Mutex(deliver) }
        func callAsFunction(_ status: NodeStatus) {
            let once = deliver.withLock { d in
                defer { d = nil }
                return d
            }
            once?(status)
        }
    }

    private let state = Mutex(State())

    /// On the hub's queue, between two pieces of work: builds a status when a request waits.
    func serveWaiting(_ build: () -> NodeStatus) {
        guard state.withLock({ !$0.waiters.isEmpty }) else { return }
        publish(build())
    }

    private func publish(_ status: NodeStatus) {
        let waiters = state.withLock { s in
            s.latest = status
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter(status) }
    }

    /// Asks for a status: `build` runs on the hub (`enqueue`) unless a build is already queued;
    /// `refresh` updates a stale status's off-queue parts. `deliver` is called once. `patience`
    /// is `StatusRequests.patience` but for tests that must not race the deadline.
    func request(
        enqueue: (@escaping @Sendable () -> Void) -> Void, build: @escaping @Sendable () -> NodeStatus,
        refresh: @escaping @Sendable (NodeStatus) -> NodeStatus, deliver: @escaping @Sendable (NodeStatus) -> Void,
        patience: DispatchTimeInterval = StatusRequests.patience
    ) {
        let reply = OneReply(deliver)
        let startBuild = state.withLock { s in
            s.waiters.append(reply)
            defer { s.building = true }
            return !s.building
        }
        if startBuild {
            enqueue { [self] in
                state.withLock { $0.building = false }
                serveWaiting(build)
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + patience) { [self] in
            guard let latest = state.withLock({ $0.latest }) else { return }
            reply(refresh(latest))
        }
    }
}
