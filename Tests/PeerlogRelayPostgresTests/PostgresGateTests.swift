#if PostgreSQL
import Foundation
import Logging
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogRelayPostgres
import PeerlogStore
import PeerlogTestSupport
import Testing

/// The gate against a real PostgreSQL server: one receipt per (group, seq), one seq per
/// (group, receipt), and a retried reservation of the same row counts as made.
@Suite(.serialized)
struct PostgresGateTests {
    static let relay = try! LocalDevice.deterministic(seed: Array("gate-relay".utf8), name: "relay", createdAt: 1)
    static let author = try! LocalDevice.deterministic(seed: Array("gate-author".utf8), name: "author", createdAt: 1)

    func receipt(_ group: GroupID, _ counter: UInt64) throws -> Receipt {
        try Self.author.sign(
            Receipt.Draft(
                group: group, type: "entity.put", counter: counter, parents: [],
                hlc: HLCTimestamp(physical: 1_000 + counter, logical: 0),
                body: GroupOperation.entityPut(key: "k\(counter)", value: "v").body))
    }

    func envelope(_ r: Receipt, seq: UInt64) throws -> Envelope {
        try Envelope.sign(group: r.group, seq: seq, receipt: r.cid, term: 0, receivedAt: 1, key: Self.relay.signingKey)
    }

    func reserve(_ store: PostgresRelayStore, _ r: Receipt, seq: UInt64) async throws -> SequenceReservation {
        try await store.reserve(try envelope(r, seq: seq), receipt: r)
    }

    @Test func oneReceiptPerSeqAndOneSeqPerReceipt() async throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let store = try PostgresRelayStore(url: database.url, logger: Logger(label: "test"), limits: .patient)
        try await store.start()
        try await withRunning([store]) { try await oneReceiptPerSeqAndOneSeqPerReceipt(store) }
    }

    func oneReceiptPerSeqAndOneSeqPerReceipt(_ store: PostgresRelayStore) async throws {
        let group = GroupID.random()
        let a = try receipt(group, 1)
        let b = try receipt(group, 2)
        #expect(try await reserve(store, a, seq: 1) == .reserved)
        #expect(try await reserve(store, b, seq: 1) == .taken)  // seq 1 is a's
        #expect(try await reserve(store, a, seq: 2) == .taken)  // a already holds seq 1
        #expect(try await reserve(store, a, seq: 1) == .reserved)  // the same row again
        #expect(try await reserve(store, b, seq: 2) == .reserved)
        // Another group's seq 1 is free.
        let other = try receipt(.random(), 1)
        #expect(try await reserve(store, other, seq: 1) == .reserved)
        let heads = try await store.heads()
        #expect(
            heads.count == 2 && heads[group]?.first == 1 && heads[group]?.last == 2 && heads[other.group]?.last == 1)
        let rows = try await store.entries(group: group, after: 0, limit: 10)
        #expect(rows.map(\.seq) == [1, 2])
        #expect(try rows.map { try Receipt(encoded: $0.receipt).cid } == [a.cid, b.cid])
        #expect(try await store.entries(group: group, after: 1, limit: 10).map(\.seq) == [2])
    }

    /// A batch of (receipt, seq) reserved in one call.
    func reserve(_ store: PostgresRelayStore, _ batch: [(Receipt, UInt64)]) async throws -> SequenceReservation {
        try await store.reserve(try batch.map { (envelope: try envelope($0.0, seq: $0.1), receipt: $0.0) })
    }

    @Test func aBatchIsStoredWholeOrNotAtAll() async throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let store = try PostgresRelayStore(url: database.url, logger: Logger(label: "test"), limits: .patient)
        try await store.start()
        try await withRunning([store]) { try await aBatchIsStoredWholeOrNotAtAll(store, database) }
    }

    func aBatchIsStoredWholeOrNotAtAll(_ store: PostgresRelayStore, _ database: PostgresTestDatabase) async throws {
        let group = GroupID.random()
        let (a, b, c, d) = (try receipt(group, 1), try receipt(group, 2), try receipt(group, 3), try receipt(group, 4))
        func table() async throws -> [UInt64: CID] {
            var out = [UInt64: CID]()
            for row in try await store.entries(group: group, after: 0, limit: 100) {
                out[row.seq] = try Receipt(encoded: row.receipt).cid
            }
            return out
        }
        // Another process holds seq 3: a batch over seqs 1…3 is refused, and its free seqs stay free.
        #expect(try await reserve(store, d, seq: 3) == .reserved)
        #expect(try await reserve(store, [(a, 1), (b, 2), (c, 3)]) == .taken)
        #expect(try await table() == [3: d.cid])
        // Refused too when a receipt of the batch already holds another seq.
        #expect(try await reserve(store, [(a, 1), (d, 2)]) == .taken)
        #expect(try await table() == [3: d.cid])
        // Stored whole; the same batch again (a retry whose answer was lost) counts as made.
        #expect(try await reserve(store, [(a, 1), (b, 2)]) == .reserved)
        #expect(try await reserve(store, [(a, 1), (b, 2)]) == .reserved)
        #expect(try await table() == [1: a.cid, 2: b.cid, 3: d.cid])
        // Not when only part of it is there, or a seq holds another receipt.
        #expect(try await reserve(store, [(a, 1), (b, 2), (c, 4)]) == .taken)
        #expect(try await reserve(store, [(b, 1), (a, 2)]) == .taken)
        #expect(try await table() == [1: a.cid, 2: b.cid, 3: d.cid])
        // In the end every seq holds one receipt and every receipt one seq.
        #expect(try await reserve(store, [(c, 4)]) == .reserved)
        #expect(
            try database.query("SELECT count(DISTINCT cid), count(*), min(seq), max(seq) FROM peerlog_relay_log") == [
                ["4", "4", "1", "4"]
            ])
    }

    @Test func badURLsGetOneClearError() {
        for (url, words) in [
            ("mysql://u@h/db", "postgres://"), ("postgres://127.0.0.1:55432/db", "no user"),
            ("postgres://u@127.0.0.1:55432/", "no database"), ("not a url at all", "is not a URL"),
            ("postgres://u:hunter2@127.0.0.1:5432/", "no database"),
        ] {
            do {
                _ = try PostgresRelayStore(url: url, logger: Logger(label: "test"))
                Issue.record("accepted \(url)")
            } catch {
                #expect("\(error)".contains(words), "\(url): \(error)")
                #expect(
                    (error as? RelayStoreError)?.code == .invalidURL && !"\(error)".contains("hunter2"),
                    "\(url): \(error)")
            }
        }
    }

    @Test func aVersionOneDatabaseGainsTheLeaseTablesAndKeepsItsRows() async throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        _ = try database.query(
            """
            CREATE TABLE peerlog_relay_schema (version INT NOT NULL); INSERT INTO peerlog_relay_schema VALUES (1);
            CREATE TABLE peerlog_relay_log (
              group_id BYTEA NOT NULL, seq BIGINT NOT NULL, cid BYTEA NOT NULL,
              envelope BYTEA NOT NULL, receipt BYTEA NOT NULL, stored_at TIMESTAMPTZ NOT NULL DEFAULT now(),
              PRIMARY KEY (group_id, seq), UNIQUE (group_id, cid));
            INSERT INTO peerlog_relay_log (group_id, seq, cid, envelope, receipt) VALUES ('\\x01', 1, '\\x02', '\\x03', '\\x04')
            """)
        let store = try PostgresRelayStore(url: database.url, logger: Logger(label: "test"), limits: .patient)
        try await store.start()
        #expect(try database.query("SELECT version FROM peerlog_relay_schema") == [["2"]])
        #expect(try database.query("SELECT count(*) FROM peerlog_relay_log") == [["1"]])
        #expect(try database.query("SELECT count(*) FROM peerlog_relay_lease") == [["0"]])
        #expect(try database.query("SELECT count(*) FROM peerlog_relay_inbox") == [["0"]])
        #expect(
            try database.query("SELECT tgname FROM pg_trigger WHERE tgname LIKE 'peerlog_relay%' ORDER BY tgname") == [
                ["peerlog_relay_inbox_notify"], ["peerlog_relay_notify"],
            ])
    }

    @Test func aNewerSchemaIsRefused() async throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        _ = try database.query(
            "CREATE TABLE peerlog_relay_schema (version INT NOT NULL); INSERT INTO peerlog_relay_schema VALUES (99)")
        let store = try PostgresRelayStore(url: database.url, logger: Logger(label: "test"), limits: .patient)
        do {
            try await store.start()
            Issue.record("started on a newer schema")
        } catch {
            #expect("\(error)".contains("schema version 99"), "\(error)")
        }
    }
}
#endif
