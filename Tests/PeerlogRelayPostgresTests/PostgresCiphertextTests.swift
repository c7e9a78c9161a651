#if PostgreSQL
import Foundation
import Logging
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogRelayPostgres
import PeerlogTestSupport
import Testing

/// A relay with the PostgreSQL store of record sequences an encrypted group (docs/PROTOCOL.md
/// §22): a dump of the whole database holds the receipts, and none of the written keys and
/// values, neither as text nor as the hex of their bytes.
@Suite(.serialized)
struct PostgresCiphertextTests {
    @Test func theStoreOfRecordHoldsOnlyCiphertext() async throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var logger = Logger(label: "ciphertext")
        logger.logLevel = .warning
        let store = try PostgresRelayStore(url: database.url, logger: logger, limits: .patient)
        try await store.start()
        try await withRunning([store]) {
            let relayDevice = try LocalDevice.deterministic(
                seed: Array("ciphertext/relay".utf8), name: "relay", createdAt: 1)
            let relay = try Replica(path: dir + "/relay.sqlite", device: relayDevice, sequenceGate: store)
            let alice = try TestReplica("alice", keySeed: "ciphertext/alice")
            let group = try alice.replica.createGroup(
                name: "diary", encryption: GroupEncryptionSettings(history: false))
            try alice.replica.append(
                .sequencerChanged(.relay(key: relayDevice.device, address: "127.0.0.1:1")), to: group)
            let history = try alice.holdings(group)
            _ = try relay.ingest(receipts: history.receipts, envelopes: history.envelopes)
            let canaries = ["canary-key-pg-3c3c", "canary-value-pg-8d8d"]
            let put = try alice.replica.append(.entityPut(key: canaries[0], value: .text(canaries[1])), to: group)
                .receipt
            _ = try relay.ingest(receipts: [put])
            #expect(try await relay.sequenceThroughGate().committed == 1)

            let dump = try TestSupport.run("/usr/bin/pg_dump", ["--data-only", database.url])
            #expect(dump.status == 0, "\(dump.stderr)")
            #expect(dump.stdout.contains(TestSupport.hex(put.payload)), "the dump does not hold the sealed receipt")
            for canary in canaries {
                #expect(!dump.stdout.contains(canary), "the database holds \(canary)")
                #expect(
                    !dump.stdout.contains(TestSupport.hex(Array(canary.utf8))), "the database holds \(canary) as bytes")
            }
        }
    }
}
#endif
