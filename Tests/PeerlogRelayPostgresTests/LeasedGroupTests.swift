#if PostgreSQL
import Foundation
import Logging
import PeerlogEngine
import PeerlogModel
import PeerlogRelayPostgres
import PeerlogTestSupport
import Testing

/// Two relay replicas on one database with the stores themselves as gates: a group is lent to
/// one process at a time (§19.3), the other hands its receipts over through the table, and no
/// reservation is ever refused. A holder that stops leaves the group to the other once its
/// lease ends.
@Suite(.serialized)
struct LeasedGroupTests {
    static func waitUntil(
        _ what: String, seconds: Int = 60, _ done: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while try await !done() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func oneProcessAssignsAGroupAndTheOtherHandsItsReceiptsOver() async throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var logger = Logger(label: "leased-group")
        logger.logLevel = .warning
        var limits = RelayStoreLimits.patient
        limits.leaseTerm = .seconds(3)
        let stores = try (0..<2).map { _ in try PostgresRelayStore(url: database.url, logger: logger, limits: limits) }
        for s in stores { try await s.start() }
        try await withRunning(stores) {
            let relayDevice = try LocalDevice.deterministic(
                seed: Array("leased-group/relay".utf8), name: "relay", createdAt: 1)
            let gates = stores.map { TwoRelayReplicasTests.CountingGate($0, leasing: true) }
            let relays = try (0..<2).map {
                try Replica(path: "\(dir)/relay\($0).sqlite", device: relayDevice, sequenceGate: gates[$0])
            }
            let followers = (0..<2).map {
                PostgresRelayFollower(replica: relays[$0], store: stores[$0], logger: logger)
            }
            let (group, writers, history) = try await TwoRelayReplicasTests.sharedGroup(
                relays: relays, relayDevice: relayDevice)
            let base = UInt64(history.envelopes.count)
            func inbox() throws -> Int { Int(try database.query("SELECT count(*) FROM peerlog_relay_inbox")[0][0])! }

            // Relay 0 assigns first and so holds the lease; relay 1 hands its receipt over.
            let first = try writers[0].replica.append(.entityPut(key: "first", value: "a"), to: group).receipt
            let second = try writers[1].replica.append(.entityPut(key: "second", value: "b"), to: group).receipt
            _ = try await TwoRelayReplicasTests.offPool { try relays[0].ingest(receipts: [first]) }
            #expect(try await relays[0].sequenceThroughGate().committed == 1)
            _ = try await TwoRelayReplicasTests.offPool { try relays[1].ingest(receipts: [second]) }
            #expect(try await stores[0].mayAssign(in: group))
            let handing = try await relays[1].sequenceThroughGate()
            #expect(handing.committed == 0 && handing.contended.isEmpty)
            #expect(gates[1].handedOver.load(ordering: .relaxed) == 1)
            #expect(try inbox() == 1)
            // Handed over once: a second pass passes nothing again.
            _ = try await TwoRelayReplicasTests.offPool { try relays[1].resequence([group]) }
            try await relays[1].sequenceThroughGate()
            #expect(gates[1].handedOver.load(ordering: .relaxed) == 1)
            // The holder takes it in and assigns it; the row leaves the table in the statement
            // that reserves its seq.
            try await followers[0].catchUp()
            try await relays[0].sequenceThroughGate()
            #expect(try relays[0].committedSeq(of: group) == base + 2)
            #expect(try inbox() == 0)
            try await followers[1].catchUp()
            #expect(try relays[1].committedSeq(of: group) == base + 2)
            #expect(try relays[1].isCommitted(second.cid))

            // One write at a time through each relay, both followers running, each awaited until
            // both relays hold it committed: whichever relay holds the lease, the other hands
            // every single write over (a write stored just as a pass starts included).
            let runs = followers.map { f in Task { await f.run() } }
            var single = base + 2
            for i in 0..<30 {
                let r = try writers[i % writers.count].replica.append(
                    .entityPut(key: "one-\(i)", value: .unsigned(UInt64(i))), to: group
                ).receipt
                _ = try await TwoRelayReplicasTests.offPool { try relays[i % 2].ingest(receipts: [r]) }
                try await Self.waitUntil("single write \(i) committed on both relays") {
                    try relays.allSatisfy { try $0.isCommitted(r.cid) }
                }
                single += 1
            }
            #expect(try relays.map { try $0.committedSeq(of: group) } == [single, single])

            // Everyone writes at once, each receipt to one relay or both, with both followers
            // running: every receipt is assigned once and no reservation is refused.
            let perWriter = 30
            try await TwoRelayReplicasTests.writeAtOnce(
                writers, to: relays, group: group, perWriter: perWriter, seed: 11)
            let total = single + UInt64(writers.count * perWriter)
            try await Self.waitUntil("both relays to commit every write") {
                try relays.allSatisfy { try $0.committedSeq(of: group) == total && $0.tentativeCount(of: group) == 0 }
            }
            for f in followers { f.stop() }
            for r in runs { await r.value }
            #expect(gates.map { $0.taken.load(ordering: .relaxed) } == [0, 0], "a reservation was refused")
            #expect(gates.map { $0.handedOver.load(ordering: .relaxed) }.reduce(0, +) > 1)
            #expect(try inbox() == 0)
            #expect(
                try relays[0].log(of: group, view: .committed).map(\.receipt.cid)
                    == relays[1].log(of: group, view: .committed).map(\.receipt.cid))
            let rows = try await stores[0].entries(group: group, after: base, limit: 100_000)
            #expect(rows.map(\.seq) == Array((base + 1)...total))
            #expect(Set(rows.map(\.receipt)).count == rows.count, "a receipt holds two seqs")

            // The holder stops: relay 0 takes the lease and is never heard of again. Relay 1
            // hands its next receipt over, then takes the group in once the lease has ended.
            try await Self.waitUntil("relay 0 to take the lease back") { try await stores[0].mayAssign(in: group) }
            let late = try writers[3].replica.append(.entityPut(key: "late", value: "d"), to: group).receipt
            _ = try await TwoRelayReplicasTests.offPool { try relays[1].ingest(receipts: [late]) }
            try await relays[1].sequenceThroughGate()
            #expect(try inbox() == 1)
            try await Self.waitUntil("relay 1 to take the group over") {
                try await followers[1].catchUp()
                try await relays[1].sequenceThroughGate()
                return try relays[1].isCommitted(late.cid)
            }
            #expect(try relays[1].committedSeq(of: group) == total + 1)
            #expect(try inbox() == 0)
            #expect(!stores[0].holdsLease(group))
            try await followers[0].catchUp()
            #expect(try relays[0].committedSeq(of: group) == total + 1)
            #expect(gates.map { $0.taken.load(ordering: .relaxed) } == [0, 0])
        }
    }
}
#endif
