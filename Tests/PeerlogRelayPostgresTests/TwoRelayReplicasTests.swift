#if PostgreSQL
import Dispatch
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

/// Two relay replicas in one process (one relay key, separate SQLite files, each with its own
/// `PostgresRelayStore` on one database as its gate) take concurrent writes from four members,
/// each receipt sent to one relay or to both. The table ends with every seq once and every
/// receipt once, and both replicas with the same committed log as the table.
@Suite(.serialized)
struct TwoRelayReplicasTests {
    /// Counts the gate's answers (a test asserts a contention really happened, or none) and the
    /// receipts handed over. With `leasing` false it lends every group to every caller, so the
    /// processes race through `UNIQUE(group, seq)`; with true it forwards the store's lease.
    final class CountingGate: SequenceGate {
        let inner: PostgresRelayStore
        let leasing: Bool
        let reserved = Atomic<Int>(0)
        let taken = Atomic<Int>(0)
        let handedOver = Atomic<Int>(0)
        init(_ inner: PostgresRelayStore, leasing: Bool = false) {
            self.inner = inner
            self.leasing = leasing
        }
        func reserve(_ batch: [(envelope: Envelope, receipt: Receipt)]) async throws -> SequenceReservation {
            let answer = try await inner.reserve(batch)
            if answer == .taken { taken.add(1, ordering: .relaxed) } else { reserved.add(1, ordering: .relaxed) }
            return answer
        }
        func mayAssign(in group: GroupID) async throws -> Bool { leasing ? try await inner.mayAssign(in: group) : true }
        func handOver(_ receipts: [Receipt], of group: GroupID) async throws {
            handedOver.add(receipts.count, ordering: .relaxed)
            try await inner.handOver(receipts, of: group)
        }
    }

    /// A member with an in-memory replica.
    static func member(_ name: String) throws -> TestReplica { try TestReplica(name, keySeed: "two-replicas/\(name)") }

    /// The committed receipts and envelopes of a group, in seq order.
    static func committed(_ replica: Replica, _ group: GroupID) throws -> (receipts: [Receipt], envelopes: [Envelope]) {
        try replica.store.read { db in
            (
                try db.committedLog(group: group).map(\.receipt),
                try db.envelopes(group: group, from: 1, to: UInt64(Int64.max)).map(\.envelope)
            )
        }
    }

    /// Replica work (SQLite, which blocks its thread) runs off the cooperative pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async { c.resume(with: Result { try body() }) }
        }
    }

    /// Every writer appends `perWriter` entity writes at once, each on its own thread, and sends
    /// each write to relay 0, relay 1 or both (in either order), as drawn from a generator seeded
    /// with `seed` plus the writer's index.
    static func writeAtOnce(
        _ writers: [TestReplica], to relays: [Replica], group: GroupID, perWriter: Int, seed: UInt64
    ) async throws {
        try await concurrently(writers.count) { w in
            var rng = SeededRandom(seed: seed + UInt64(w))
            for i in 0..<perWriter {
                let r = try writers[w].replica.append(
                    .entityPut(key: "w\(w)-\(i)", value: .unsigned(UInt64(i))), to: group
                ).receipt
                switch rng.next() % 3 {
                case 0: _ = try relays[0].ingest(receipts: [r])
                case 1: _ = try relays[1].ingest(receipts: [r])
                default:
                    for relay in (rng.next() % 2 == 0 ? relays : relays.reversed()) {
                        _ = try relay.ingest(receipts: [r])
                    }
                }
            }
        }
    }

    /// Runs `count` bodies at once on their own threads and waits for all of them.
    static func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) async throws {
        let failures = Mutex<[String]>([])
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let group = DispatchGroup()
            for i in 0..<count {
                group.enter()
                Thread {
                    do { try body(i) } catch { failures.withLock { $0.append("thread \(i): \(error)") } }
                    group.leave()
                }.start()
            }
            group.notify(queue: .global()) { c.resume() }
        }
        let problems = failures.withLock { $0 }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// Alice's group with Bob, Carol and Dave, handed to the relay; its committed history is
    /// ingested by both relay replicas and every member. Returns the members, Alice first.
    static func sharedGroup(
        relays: [Replica], relayDevice: LocalDevice
    ) async throws -> (GroupID, [TestReplica], (receipts: [Receipt], envelopes: [Envelope])) {
        let alice = try Self.member("alice")
        let members = try ["bob", "carol", "dave"].map(Self.member)
        let group = try alice.replica.createGroup(name: "shared")
        for m in members {
            try alice.replica.append(.memberAdded(identity: m.device.identity, role: .member), to: group)
        }
        for m in members {
            let h = try Self.committed(alice.replica, group)
            _ = try m.replica.ingest(receipts: h.receipts, envelopes: h.envelopes)
            let accepted = try m.replica.append(.inviteAccepted, to: group).receipt
            #expect(try alice.replica.ingest(receipts: [accepted]).committed == 1)
        }
        #expect(
            try alice.replica.append(
                .sequencerChanged(.relay(key: relayDevice.device, address: "127.0.0.1:1")), to: group
            ).seq != nil)
        let history = try Self.committed(alice.replica, group)
        let base = UInt64(history.envelopes.count)
        for r in relays + members.map(\.replica) {
            _ = try await Self.offPool { try r.ingest(receipts: history.receipts, envelopes: history.envelopes) }
            #expect(try r.committedSeq(of: group) == base)
        }
        return (group, [alice] + members, history)
    }

    @Test func twoRelayReplicasOnOneDatabaseAgreeOnEverySeq() async throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var logger = Logger(label: "two-replicas")
        logger.logLevel = .warning

        let stores = try (0..<2).map { _ in try PostgresRelayStore(url: database.url, logger: logger, limits: .patient)
        }
        for s in stores { try await s.start() }
        try await withRunning(stores) { try await Self.agreeOnEverySeq(stores: stores, dir: dir, logger: logger) }
    }

    static func agreeOnEverySeq(stores: [PostgresRelayStore], dir: String, logger: Logger) async throws {
        let relayDevice = try LocalDevice.deterministic(
            seed: Array("two-replicas/relay".utf8), name: "relay", createdAt: 1)
        let gates = stores.map { CountingGate($0) }
        let relays = try (0..<2).map {
            try Replica(path: "\(dir)/relay\($0).sqlite", device: relayDevice, sequenceGate: gates[$0])
        }
        let followers = (0..<2).map { PostgresRelayFollower(replica: relays[$0], store: stores[$0], logger: logger) }
        let (group, members, history) = try await Self.sharedGroup(relays: relays, relayDevice: relayDevice)
        let alice = members[0]
        let base = UInt64(history.envelopes.count)
        let writers = members

        // A deterministic contention first: relay 0 takes base+1; relay 1, offered another
        // receipt for base+1, is refused by the table and stops until it catches up.
        let first = try alice.replica.append(.entityPut(key: "first", value: "a"), to: group).receipt
        let second = try members[1].replica.append(.entityPut(key: "second", value: "b"), to: group).receipt
        _ = try await Self.offPool { try relays[0].ingest(receipts: [first]) }
        #expect(try await relays[0].sequenceThroughGate().committed == 1)
        _ = try await Self.offPool { try relays[1].ingest(receipts: [second]) }
        let refused = try await relays[1].sequenceThroughGate()
        #expect(refused.contended == [group])
        #expect(try relays[1].committedSeq(of: group) == base)
        #expect(gates[1].taken.load(ordering: .relaxed) == 1)
        try await followers[1].catchUp()
        try await relays[1].sequenceThroughGate()
        #expect(try relays[1].committedSeq(of: group) == base + 2, "relay 1 caught up with base+1 and then took base+2")
        try await followers[0].catchUp()
        #expect(try relays[0].committedSeq(of: group) == base + 2)

        // Then everyone writes at once; each receipt goes to relay 0, relay 1 or both, from
        // its writer's thread, while both followers poll the table and run their relay's gate.
        let perWriter = 30
        let runs = followers.map { f in Task { await f.run() } }
        try await Self.writeAtOnce(writers, to: relays, group: group, perWriter: perWriter, seed: 1)
        let total = base + 2 + UInt64(writers.count * perWriter)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let seqs = try relays.map { try $0.committedSeq(of: group) }
            let tentative = try relays.map { try $0.tentativeCount(of: group) }
            if seqs == [total, total], tentative == [0, 0], try await stores[0].heads()[group]?.last == total {
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        for f in followers { f.stop() }
        for r in runs { await r.value }

        // The table: one row per seq without a gap, one seq per receipt, each row consistent.
        let rows = try await stores[0].entries(group: group, after: 0, limit: 100_000)
        let relaySeqs = rows.map(\.seq).filter { $0 > base }
        #expect(relaySeqs == Array((base + 1)...total), "the relay's seqs in the table: \(relaySeqs)")
        var tableLog = [UInt64: CID]()
        for row in rows {
            let e = try Envelope(encoded: row.envelope)
            let r = try Receipt(encoded: row.receipt)
            #expect(
                e.seq == row.seq && e.receipt == r.cid && e.group == group, "row \(row.seq) disagrees with its envelope"
            )
            tableLog[row.seq] = r.cid
        }
        let tableCIDs = rows.filter { $0.seq > base }.compactMap { tableLog[$0.seq] }
        #expect(Set(tableCIDs).count == tableCIDs.count, "a receipt holds two seqs")
        let written = Set(try writers.flatMap { try $0.replica.log(of: group, view: .tentative) }.map(\.receipt.cid))
            .subtracting(history.receipts.map(\.cid))
        #expect(
            Set(tableCIDs) == written,
            "receipts missing from the table: \(written.subtracting(tableCIDs).count), unknown in it: \(Set(tableCIDs).subtracting(written).count)"
        )

        // Both replicas: the table's log, the same state, nothing left tentative.
        for (i, relay) in relays.enumerated() {
            let log = try relay.log(of: group, view: .committed)
            #expect(log.count == Int(total), "relay \(i) holds \(log.count) of \(total) seqs")
            #expect(
                log.enumerated().allSatisfy { $0.element.status == .committed(seq: UInt64($0.offset + 1)) },
                "relay \(i): a gap in the committed log")
            let mismatched = log.enumerated().filter {
                UInt64($0.offset + 1) > base && tableLog[UInt64($0.offset + 1)] != $0.element.receipt.cid
            }
            #expect(mismatched.isEmpty, "relay \(i) differs from the table at seqs \(mismatched.map { $0.offset + 1 })")
            #expect(try relay.tentativeCount(of: group) == 0)
            #expect(try relay.replayedStateHash(of: group) == relay.stateHash(of: group, view: .committed))
        }
        #expect(
            try relays[0].log(of: group, view: .committed).map(\.receipt.cid)
                == relays[1].log(of: group, view: .committed).map(\.receipt.cid))
        #expect(
            try relays[0].stateHash(of: group, view: .committed) == relays[1].stateHash(of: group, view: .committed))
        #expect(gates.map { $0.taken.load(ordering: .relaxed) }.reduce(0, +) >= 1)

        // A member that syncs with both relays accepts both sets of envelopes without conflict.
        let bob = members[1].replica
        for relay in relays {
            let h = try Self.committed(relay, group)
            let report = try bob.ingest(receipts: h.receipts, envelopes: h.envelopes)
            #expect(report.rejected.isEmpty, "\(report.rejected.map(\.reason))")
        }
        #expect(try bob.committedSeq(of: group) == total)
        #expect(try bob.stateHash(of: group, view: .committed) == relays[0].stateHash(of: group, view: .committed))
    }
}
#endif
