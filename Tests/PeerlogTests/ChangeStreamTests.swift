import Foundation
import Peerlog
import PeerlogStore
import PeerlogTestSupport
import Synchronization
import Testing

/// Collects a change stream in a task, so a test can write and then look.
final class Collector: Sendable {
    final class Received: Sendable {
        let list = Mutex<[PeerlogChange]>([])
    }

    private let received = Received()
    private let task: Task<Void, Never>

    init(_ stream: PeerlogChanges) {
        let received = received
        task = Task {
            do { for try await c in stream { received.list.withLock { $0.append(c) } } } catch {}
        }
    }

    /// What arrived so far, in order.
    var all: [PeerlogChange] { received.list.withLock { $0 } }

    var entities: [EntityChange] {
        all.compactMap { if case .entity(let e) = $0.event { e } else { nil } }
    }

    /// Waits (bounded) until `condition` holds for what arrived. Generous, and waited only by a
    /// failing test: the facade's calls run off the cooperative pool, but the suite's synchronous
    /// tests (CLI tests waiting on processes) can hold both of its threads on 2 cores for a while,
    /// and the stream's iterator needs one.
    @discardableResult
    func wait(timeout: Duration = .seconds(120), until condition: ([PeerlogChange]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(all) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition(all)
    }

    func stop() { task.cancel() }
    deinit { stop() }
}

@Suite struct ChangeStreamTests {
    @Test func localWritesArriveInOrderOnceEach() async throws {
        let log = try await Peerlog.temporary()
        let group = try await log.createGroup(named: "notes")
        let seen = Collector(log.changes(in: group, after: try await log.latestChangeCursor()))
        try await log.put("a", "one", in: group)
        try await log.put("a", "two", in: group)
        try await log.delete("a", in: group)
        try await log.put("b", 42, in: group)
        #expect(await seen.wait { $0.count >= 8 })
        let entities = seen.entities
        #expect(entities.map(\.key) == ["a", "a", "a", "b"])
        #expect(try entities.prefix(3).map { try $0.newValue(as: String.self) } == ["one", "two", nil])
        #expect(try entities[3].newValue(as: Int.self) == 42)
        #expect(try entities[1].oldValue(as: String.self) == "one")
        #expect(entities.allSatisfy { !$0.isTentative }, "the creator sequences its group: each write commits at once")
        let cursors = seen.all.map(\.cursor)
        #expect(cursors == cursors.sorted() && Set(cursors).count == cursors.count)
        // Nothing more arrives: each change came once. A later write is the barrier: once it is
        // in, anything the first four could still bring would be too (the stream is in order).
        try await log.put("z", "barrier", in: group)
        #expect(await seen.wait { $0.contains { if case .entity(let e) = $0.event { e.key == "z" } else { false } } })
        #expect(seen.entities.map(\.key) == ["a", "a", "a", "b", "z"])
    }

    @Test func aStreamResumesFromItsCursorAcrossARestartAndMissesNothing() async throws {
        let home = try TestSupport.temporaryDirectory()
        var cursor: ChangeCursor
        let group: GroupID
        do {
            let log = try await Peerlog.open(home: home, deviceName: "resume")
            group = try await log.createGroup(named: "g")
            try await log.put("k", 1, in: group)
            let seen = Collector(log.changes(in: group, after: ChangeCursor(rawValue: 0)))
            #expect(await seen.wait { $0.contains { if case .entity = $0.event { true } else { false } } })
            cursor = seen.all.last!.cursor
            seen.stop()
        }
        // While the app is down, the CLI (another process) writes to the same home.
        _ = try TestSupport.peerlogOK(["put", group.description, "k", "--json-value", "2", "--home", home])
        _ = try TestSupport.peerlogOK(["put", group.description, "j", "x", "--home", home])
        let log = try await Peerlog.open(home: home)
        let seen = Collector(log.changes(after: cursor))
        #expect(await seen.wait { c in c.filter { if case .entity = $0.event { true } else { false } }.count >= 2 })
        #expect(seen.entities.map(\.key) == ["k", "j"])
        #expect(try seen.entities[0].oldValue(as: Int.self) == 1 && seen.entities[0].newValue(as: Int.self) == 2)
        cursor = seen.all.last!.cursor
        #expect(cursor > ChangeCursor(rawValue: 0))
    }

    @Test func writesByAnotherProcessArriveWhileStreaming() async throws {
        let home = try TestSupport.temporaryDirectory()
        let log = try await Peerlog.open(home: home, deviceName: "app")
        let group = try await log.createGroup(named: "shared")
        let seen = Collector(log.changes())
        _ = try TestSupport.peerlogOK(["put", group.description, "from-cli", "hello", "--home", home])
        #expect(await seen.wait { _ in seen.entities.contains { $0.key == "from-cli" } })
        #expect(try seen.entities.first { $0.key == "from-cli" }?.newValue(as: String.self) == "hello")
    }

    @Test func aConsumerFurtherBehindThanTheLogKeepsGetsOneGap() async throws {
        let home = try TestSupport.temporaryDirectory()
        let log = try await Peerlog.open(home: home, deviceName: "gap")
        let group = try await log.createGroup(named: "g")
        let start = try await log.latestChangeCursor()
        // Filling the 100,000-row window would take long (the engine tests retention itself):
        // here the rows after the cursor are pruned by hand.
        try await log.putBatch((0..<50).map { (i: Int) -> (key: String, value: Int?) in ("k\(i)", i) }, in: group)
        try dropChangeRows(home: home, through: start.rawValue + 10)
        let seen = Collector(log.changes(after: start))
        #expect(await seen.wait { $0.count >= 1 })
        #expect(seen.all.first?.event == .gap)
        // After the gap the stream goes on from the newest change.
        try await log.put("after", true, in: group)
        #expect(await seen.wait { _ in seen.entities.contains { $0.key == "after" } })
        #expect(seen.all.filter { $0.event == .gap }.count == 1)
        #expect(seen.entities.map(\.key) == ["after"], "the pruned changes are not replayed after the gap")
    }

    @Test func cancellingTheIteratingTaskEndsTheStream() async throws {
        let log = try await Peerlog.temporary()
        let ended = Mutex(false)
        let task = Task {
            for try await _ in log.changes() {}
            ended.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(300))
        task.cancel()
        _ = try? await task.value
        #expect(ended.withLock { $0 })
    }
}

/// Deletes change-log rows up to `id`, as retention would (a second connection to the store).
func dropChangeRows(home: String, through id: Int64) throws {
    let store = try Store(path: home + "/replica.sqlite")
    try store.write { try $0.execute(rawSQL: "DELETE FROM change_log WHERE id <= \(id)") }
}
