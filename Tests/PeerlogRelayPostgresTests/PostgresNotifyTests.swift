#if PostgreSQL
import Foundation
import Logging
import PeerlogModel
import PeerlogRelayPostgres
import PeerlogTestSupport
import Synchronization
import Testing

/// §19.3: an insert into the log, by any store, notifies its group to every listener.
@Suite(.serialized)
struct PostgresNotifyTests {
    @Test func anInsertByAnotherStoreNotifiesItsGroup() async throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let writer = try PostgresRelayStore(url: database.url, logger: Logger(label: "test"), limits: .patient)
        let listener = try PostgresRelayStore(url: database.url, logger: Logger(label: "test"), limits: .patient)
        try await writer.start()
        try await listener.start()
        try await withRunning([writer]) {
            try await anInsertByAnotherStoreNotifiesItsGroup(writer: writer, listener: listener)
        }
    }

    func anInsertByAnotherStoreNotifiesItsGroup(writer: PostgresRelayStore, listener: PostgresRelayStore) async throws {
        let heard = Mutex<Set<GroupID>>([])
        let listening = Task { await listener.listen { groups in heard.withLock { $0.formUnion(groups ?? []) } } }
        defer { listening.cancel() }
        let gate = PostgresGateTests()
        let group = GroupID.random()
        // LISTEN starts on its own connection: insert until one is heard (a notification sent
        // before LISTEN took effect is lost, which the follower's slow pass covers).
        var seq: UInt64 = 0
        while !heard.withLock({ $0.contains(group) }), seq < 20 {
            seq += 1
            #expect(try await gate.reserve(writer, try gate.receipt(group, seq), seq: seq) == .reserved)
            for _ in 0..<50 where !heard.withLock({ $0.contains(group) }) {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        #expect(heard.withLock { $0.contains(group) }, "no notification after \(seq) inserts")
    }
}
#endif
