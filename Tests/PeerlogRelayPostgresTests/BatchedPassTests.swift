#if PostgreSQL
import Foundation
import Logging
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogRelayPostgres
import PeerlogStore
import PeerlogTestSupport
import Synchronization
import Testing

/// Relay passes reserved as one batch in PostgreSQL (§19.3), with two relay replicas (one key,
/// separate SQLite files, one database): a batch partly taken by the other process is refused
/// whole and leaves nothing locally; catching up from the table then commits the rest; and
/// both replicas racing with large batches still give every seq exactly once.
@Suite(.serialized)
struct BatchedPassTests {
    /// Records the size of every batch asked and how many were refused.
    final class BatchGate: SequenceGate {
        let inner: PostgresRelayStore
        let sizes = Mutex<[Int]>([])
        let taken = Atomic<Int>(0)
        init(_ inner: PostgresRelayStore) { self.inner = inner }
        func reserve(_ batch: [(envelope: Envelope, receipt: Receipt)]) async throws -> SequenceReservation {
            sizes.withLock { $0.append(batch.count) }
            let answer = try await inner.reserve(batch)
            if answer == .taken { taken.add(1, ordering: .relaxed) }
            return answer
        }
    }

    /// Two relay replicas on one database, holding Alice's relayed group with three members.
    struct Setup {
        let database: PostgresTestDatabase
        let dir: String
        let stores: [PostgresRelayStore]
        let gates: [BatchGate]
        let relays: [Replica]
        let followers: [PostgresRelayFollower]
        let alice: TestReplica
        let members: [TestReplica]
        let group: GroupID
        let base: UInt64

        init(_ name: String) async throws {
            let database = try PostgresTestDatabase()
            let dir = try TestSupport.temporaryDirectory()
            var logger = Logger(label: name)
            logger.logLevel = .warning
            let stores = try (0..<2).map { _ in
                try PostgresRelayStore(url: database.url, logger: logger, limits: .patient)
            }
            for s in stores { try await s.start() }
            let relayDevice = try LocalDevice.deterministic(
                seed: Array("\(name)/relay".utf8), name: "relay", createdAt: 1)
            let gates = stores.map(BatchGate.init)
            let relays = try (0..<2).map {
                try Replica(path: "\(dir)/relay\($0).sqlite", device: relayDevice, sequenceGate: gates[$0])
            }
            let alice = try TwoRelayReplicasTests.member("\(name)-alice")
            let members = try ["bob", "carol", "dave"].map { try TwoRelayReplicasTests.member("\(name)-\($0)") }
            let group = try alice.replica.createGroup(name: name)
            for m in members {
                try alice.replica.append(.memberAdded(identity: m.device.identity, role: .member), to: group)
            }
            for m in members {
                let h = try TwoRelayReplicasTests.committed(alice.replica, group)
                _ = try m.replica.ingest(receipts: h.receipts, envelopes: h.envelopes)
                _ = try alice.replica.ingest(receipts: [try m.replica.append(.inviteAccepted, to: group).receipt])
            }
            _ = try alice.replica.append(
                .sequencerChanged(.relay(key: relayDevice.device, address: "127.0.0.1:1")), to: group)
            let history = try TwoRelayReplicasTests.committed(alice.replica, group)
            for r in relays + members.map(\.replica) {
                _ = try await TwoRelayReplicasTests.offPool {
                    try r.ingest(receipts: history.receipts, envelopes: history.envelopes)
                }
            }
            (self.database, self.dir, self.stores, self.gates, self.relays) = (database, dir, stores, gates, relays)
            followers = (0..<2).map { PostgresRelayFollower(replica: relays[$0], store: stores[$0], logger: logger) }
            (self.alice, self.members, self.group, base) = (alice, members, group, UInt64(history.envelopes.count))
            for r in relays + members.map(\.replica) { #expect(try r.committedSeq(of: group) == base) }
        }

        func close() {
            database.drop()
            try? FileManager.default.removeItem(atPath: dir)
        }

        /// The relay's rows of the table (seqs above the history), seq → CID.
        func table() async throws -> [UInt64: CID] {
            var out = [UInt64: CID]()
            for row in try await stores[0].entries(group: group, after: base, limit: 100_000) {
                out[row.seq] = try Receipt(encoded: row.receipt).cid
            }
            return out
        }

        /// The table holds seqs base+1…base+`count` each once, every receipt once, and each
        /// relay's committed log above the history is exactly the table.
        func expectAgreement(count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let table = try await table()
            #expect(table.keys.sorted() == Array((base + 1)...(base + UInt64(count))), sourceLocation: sourceLocation)
            #expect(Set(table.values).count == table.count, "a receipt holds two seqs", sourceLocation: sourceLocation)
            for (i, relay) in relays.enumerated() {
                let log = try relay.log(of: group, view: .committed)
                #expect(log.count == Int(base) + count, "relay \(i) holds \(log.count)", sourceLocation: sourceLocation)
                let differing = log.enumerated().filter {
                    UInt64($0.offset + 1) > base && table[UInt64($0.offset + 1)] != $0.element.receipt.cid
                }
                #expect(
                    differing.isEmpty, "relay \(i) differs from the table at \(differing.map { $0.offset + 1 })",
                    sourceLocation: sourceLocation)
                #expect(try relay.tentativeCount(of: group) == 0, sourceLocation: sourceLocation)
                #expect(
                    try relay.replayedStateHash(of: group) == relay.stateHash(of: group, view: .committed),
                    sourceLocation: sourceLocation)
                #expect(try relay.checkTentativeOverlay(of: group) == .matches, sourceLocation: sourceLocation)
            }
        }
    }

    @Test func aBatchPartlyTakenByAnotherProcessIsRefusedWholeThenTheRestCommits() async throws {
        let s = try await Setup("partly-taken")
        defer { s.close() }
        try await withRunning(s.stores) { try await Self.partlyTaken(s) }
    }

    static func partlyTaken(_ s: Setup) async throws {
        let group = s.group
        let writes = try (1...10).map {
            try s.alice.replica.append(.entityPut(key: "w\($0)", value: .unsigned(UInt64($0))), to: group).receipt
        }
        let strangers = try (1...2).map {
            try s.members[0].replica.append(.entityPut(key: "s\($0)", value: "x"), to: group).receipt
        }
        // Relay 1 takes base+1…base+4: Alice's first two writes and two receipts relay 0 has never seen.
        _ = try await TwoRelayReplicasTests.offPool {
            try s.relays[1].ingest(receipts: Array(writes.prefix(2)) + strangers)
        }
        let first = try await s.relays[1].sequenceThroughGate()
        #expect(first.committed == 4 && first.contended.isEmpty)
        #expect(s.gates[1].sizes.withLock { $0 } == [4])

        // Relay 0's pass over all ten writes asks for base+1…base+10 at once and is refused whole.
        let logged = try s.relays[0].changeLogBounds().last
        _ = try await TwoRelayReplicasTests.offPool { try s.relays[0].ingest(receipts: writes) }
        let refused = try await s.relays[0].sequenceThroughGate()
        #expect(refused.contended == [group] && refused.committed == 0)
        #expect(!refused.events.contains { if case .committed = $0 { true } else { false } })
        #expect(s.gates[0].sizes.withLock { $0 } == [10] && s.gates[0].taken.load(ordering: .relaxed) == 1)
        #expect(try s.relays[0].committedSeq(of: group) == s.base)
        #expect(try s.relays[0].changes(after: logged, limit: 100_000).filter { $0.kind == "committed" }.isEmpty)
        #expect(try s.relays[0].tentativeCount(of: group) == 10)
        #expect(try s.relays[0].checkTentativeOverlay(of: group) == .matches)
        // Nothing of the refused batch reached the table (its free seqs base+5…base+10 included).
        #expect(try await s.table().keys.sorted() == Array((s.base + 1)...(s.base + 4)))

        // Caught up from the table, relay 0 assigns the eight writes left in one batch.
        try await s.followers[0].catchUp()
        try await s.relays[0].sequenceThroughGate()
        #expect(try s.relays[0].committedSeq(of: group) == s.base + 12)
        #expect(s.gates[0].sizes.withLock { $0 } == [10, 8])
        try await s.followers[1].catchUp()
        try await s.expectAgreement(count: 12)
        // The full passes also published the history before the relay (seqs 1…base) in one statement.
        let all = try await s.stores[0].entries(group: group, after: 0, limit: 1_000)
        #expect(all.map(\.seq) == Array(1...(s.base + 12)))
        let history = try TwoRelayReplicasTests.committed(s.alice.replica, group).envelopes.map(\.receipt)
        #expect(try all.prefix(Int(s.base)).map { try Receipt(encoded: $0.receipt).cid } == history)
        let committed = Set(try s.relays[0].log(of: group, view: .committed).map(\.receipt.cid))
        #expect(committed.isSuperset(of: (writes + strangers).map(\.cid)))
    }

    @Test func twoRelaysRacingWithLargeBatchesTakeEverySeqOnce() async throws {
        let s = try await Setup("racing")
        defer { s.close() }
        try await withRunning(s.stores) { try await Self.racing(s) }
    }

    static func racing(_ s: Setup) async throws {
        let group = s.group
        // 4 writers × 150 receipts, written first; each relay is then handed all of them, in
        // chunks of different sizes and writer order, while both followers run.
        let writers = [s.alice] + s.members
        let perWriter = 150
        let written = try writers.enumerated().map { w, m in
            try (0..<perWriter).map {
                try m.replica.append(.entityPut(key: "w\(w)-\($0 % 40)", value: .unsigned(UInt64($0))), to: group)
                    .receipt
            }
        }
        let runs = s.followers.map { f in Task { await f.run() } }
        let relays = s.relays
        try await TwoRelayReplicasTests.concurrently(2) { i in
            let chunk = i == 0 ? 60 : 45
            let order = i == 0 ? written : written.reversed()
            for start in stride(from: 0, to: perWriter, by: chunk) {
                let receipts = order.flatMap { $0[start..<min(start + chunk, perWriter)] }
                _ = try relays[i].ingest(receipts: Array(receipts))
            }
        }
        let total = writers.count * perWriter
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            let seqs = try s.relays.map { try $0.committedSeq(of: group) }
            if seqs.allSatisfy({ $0 == s.base + UInt64(total) }), try await s.table().count == total { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        for f in s.followers { f.stop() }
        for r in runs { await r.value }
        try await s.expectAgreement(count: total)
        #expect(Set(try await s.table().values) == Set(written.flatMap { $0 }.map(\.cid)))
        let sizes = s.gates.flatMap { $0.sizes.withLock { $0 } }
        #expect(sizes.contains { $0 > 1 }, "no batch of more than one: \(sizes)")
        #expect(sizes.reduce(0, +) >= total)
        // Whether a batch lost the race depends on how the two were scheduled (under
        // `stress-ng --cpu 2` both reserved and neither lost: they took turns), so it is not
        // asserted; what must hold whatever the timing is above: every seq taken once, every
        // receipt committed once.
    }
}
#endif
