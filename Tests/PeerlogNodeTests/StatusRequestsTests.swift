import Dispatch
import Synchronization
import Testing

@testable import PeerlogNode

/// Status requests while the hub is busy (issue 33: reads must not wait for the writer): builds
/// are shared, a waiting request is served between two messages, and one not served within the
/// patience gets the newest status built, its off-queue parts refreshed.
struct StatusRequestsTests {
    /// A hub queue that runs nothing until told: a hub busy with a long log.
    final class StalledQueue: Sendable {
        let held = Mutex<[@Sendable () -> Void]>([])
        func enqueue(_ body: @escaping @Sendable () -> Void) { held.withLock { $0.append(body) } }
        func runAll() {
            for body in held.withLock({ h in
                defer { h = [] }
                return h
            }) { body() }
        }
    }

    final class Delivered: Sendable {
        let statuses = Mutex<[NodeStatus]>([])
        let arrived = DispatchSemaphore(value: 0)
        func callAsFunction(_ status: NodeStatus) {
            statuses.withLock { $0.append(status) }
            arrived.signal()
        }
        func wait() -> Bool { arrived.wait(timeout: .now() + 10) == .success }
    }

    static func status(_ name: String, builtAt: UInt64) -> NodeStatus {
        NodeStatus(
            device: "d", identity: "i", name: name, listening: nil, peers: [], groups: [], recentlyClosed: [],
            discoveryUnavailable: nil, discovery: false, capture: nil, refusals: nil, rejected: nil,
            rejectedTotal: nil, pairing: nil, builtAt: builtAt)
    }

    @Test func requestsShareABuildAndABusyHubAnswersWithTheNewest() throws {
        let requests = StatusRequests()
        let queue = StalledQueue()
        let builds = Mutex(0)
        let build: @Sendable () -> NodeStatus = {
            let n = builds.withLock { b in
                b += 1
                return b
            }
            return Self.status("build \(n)", builtAt: UInt64(n))
        }
        let refresh: @Sendable (NodeStatus) -> NodeStatus = { s in
            var s = s
            s.listening = "refreshed"
            return s
        }
        // The first requests: one build queued for both; nothing to answer with until it runs.
        let first = Delivered()
        let second = Delivered()
        requests.request(enqueue: queue.enqueue, build: build, refresh: refresh, deliver: first.callAsFunction)
        requests.request(enqueue: queue.enqueue, build: build, refresh: refresh, deliver: second.callAsFunction)
        #expect(queue.held.withLock { $0.count } == 1, "two queued builds for requests made together")
        queue.runAll()
        #expect(first.wait() && second.wait())
        #expect(first.statuses.withLock { $0.map(\.name) } == ["build 1"])
        #expect(second.statuses.withLock { $0.map(\.name) } == ["build 1"])

        // The hub is busy: the request gets build 1 after the patience, its off-queue parts fresh.
        let busy = Delivered()
        requests.request(enqueue: queue.enqueue, build: build, refresh: refresh, deliver: busy.callAsFunction)
        #expect(busy.wait(), "no answer while the hub was busy")
        #expect(busy.statuses.withLock { $0.map(\.name) } == ["build 1"])
        #expect(busy.statuses.withLock { $0.first?.listening } == "refreshed")

        // Between two messages the hub serves a waiting request with a fresh build. (Its patience
        // is long: a thread descheduled for 200 ms between these two lines would race it.)
        let between = Delivered()
        requests.request(
            enqueue: queue.enqueue, build: build, refresh: refresh, deliver: between.callAsFunction,
            patience: .seconds(3_600))
        requests.serveWaiting(build)
        #expect(between.wait())
        #expect(between.statuses.withLock { $0.map(\.name) } == ["build 2"])
        // The queued build runs late and answers nobody twice.
        queue.runAll()
        #expect(busy.statuses.withLock { $0.count } == 1 && between.statuses.withLock { $0.count } == 1)
    }
}
