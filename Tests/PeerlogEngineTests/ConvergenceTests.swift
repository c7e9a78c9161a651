import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// Invariant 4: replicas holding the same receipts and envelopes have identical state,
/// whatever the arrival order, duplication, delay or interleaving.
struct ConvergenceTests {
    /// A history with concurrent writers, a removal, an unauthorized stranger, an equivocation,
    /// a rename and a role change, partly committed by the sequencer (alice), partly tentative.
    static func history(
        seed: UInt64, carolEquivocates: Bool = false
    ) throws -> (group: GroupID, receipts: [Receipt], envelopes: [Envelope], sequencer: TestReplica) {
        var rng = SeededRandom(seed: seed)
        let alice = try TestReplica("alice", seed: seed)
        let bob = try TestReplica("bob", seed: seed)
        let carol = try TestReplica("carol", seed: seed)
        let dave = try TestReplica("dave", seed: seed)
        let group = try groupWith(
            owner: alice, members: [bob, carol],
            id: GroupID(bytes: Array(SHA256.hash(Array("group \(seed)".utf8)).prefix(16))))
        let writers = [alice, bob, carol]
        let keys = ["a", "b", "c", "d"]
        var extra = [Receipt]()
        for round in 0..<12 {
            for w in writers where Bool.random(using: &rng) {
                w.clock.advance(UInt64.random(in: 0...50, using: &rng))
                let key = keys.randomElement(using: &rng)!
                let op: GroupOperation =
                    Int.random(in: 0..<5, using: &rng) == 0
                    ? .entityDelete(key: key) : .entityPut(key: key, value: .int(Int64(round)))
                _ = try? w.replica.append(op, to: group)
            }
            if round == 3 { try alice.replica.append(.roleChanged(identity: carol.identity, role: .admin), to: group) }
            if round == 5 { try alice.replica.append(.renamed(name: "renamed"), to: group) }
            if round == 7 { try alice.replica.append(.memberRemoved(identity: bob.identity), to: group) }
            if round == 4 {
                // A stranger's write, and an equivocation by carol.
                extra.append(
                    try handmade(dave.device, group: group, counter: 1, op: .entityPut(key: "a", value: "dave")))
                let cheat = carolEquivocates ? carol : bob
                let next = try cheat.replica.vector(of: group).authors.first { $0.0 == cheat.device.device }!.1 + 1
                extra.append(
                    try handmade(
                        cheat.device, group: group, counter: next, op: .entityPut(key: "b", value: "twin"),
                        hlc: 1_700_000_000_000 + next))
            }
            // Random one-way syncs; alice (the sequencer) commits whatever reaches her.
            for _ in 0..<3 {
                let from = writers.randomElement(using: &rng)!
                let to = writers.randomElement(using: &rng)!
                if from.device.device != to.device.device { try from.send(group, to: to) }
            }
        }
        // Writes after the last sync stay tentative everywhere.
        for w in writers {
            _ = try? w.replica.append(.entityPut(key: "late", value: .text(w.device.certificate.name)), to: group)
        }
        var receipts = [CID: Receipt]()
        var envelopes = [UInt64: Envelope]()
        for w in writers {
            let h = try w.holdings(group)
            for r in h.receipts { receipts[r.cid] = r }
            for e in h.envelopes { envelopes[e.seq] = e }
        }
        for r in extra { receipts[r.cid] = r }
        return (group, receipts.values.sorted { $0.cid < $1.cid }, envelopes.values.sorted { $0.seq < $1.seq }, alice)
    }

    struct Outcome: Equatable {
        let committed: [UInt8]
        let tentative: [UInt8]
        let log: [CID]
        var detail = ""
        static func == (l: Outcome, r: Outcome) -> Bool {
            l.committed == r.committed && l.tentative == r.tentative && l.log == r.log
        }
    }

    /// Delivers everything in a seeded random order, with duplicates, in random batches, with
    /// retry passes and clock jumps in between.
    static func replay(
        _ h: (group: GroupID, receipts: [Receipt], envelopes: [Envelope], sequencer: TestReplica), schedule: UInt64
    ) throws -> Outcome {
        var rng = SeededRandom(seed: schedule)
        let observer = try TestReplica("observer")
        enum Item {
            case r(Receipt)
            case e(Envelope)
        }
        var items: [Item] = h.receipts.map(Item.r) + h.envelopes.map(Item.e)
        items += items.filter { _ in Int.random(in: 0..<4, using: &rng) == 0 }
        items.shuffle(using: &rng)
        var i = 0
        var retries = 0
        while i < items.count {
            let n = min(items.count - i, Int.random(in: 1...12, using: &rng))
            var rs = [Receipt]()
            var es = [Envelope]()
            for item in items[i..<i + n] {
                switch item {
                case .r(let r): rs.append(r)
                case .e(let e): es.append(e)
                }
            }
            _ = try observer.replica.ingest(receipts: rs, envelopes: es)
            i += n
            if retries < 5, Int.random(in: 0..<10, using: &rng) == 0 {
                observer.clock.advance(UInt64.random(in: 0...20_000, using: &rng))
                _ = try observer.replica.retryPending()
                retries += 1
            }
        }
        return Outcome(
            committed: try observer.replica.stateHash(of: h.group, view: .committed),
            tentative: try observer.replica.stateHash(of: h.group, view: .tentative),
            log: try observer.replica.log(of: h.group, view: .committed).map(\.receipt.cid),
            detail:
                "pending: \(try observer.replica.pending().map { "\($0.kind) \($0.seqOrCounter) \($0.reason)" }); dead: \(try observer.replica.deadLetters().map(\.reason))"
        )
    }

    /// Four histories (two kinds), run in parallel; 2,000 schedules in all by default
    /// (`PEERLOG_SCHEDULES` changes it; `PEERLOG_SEED` reruns one schedule).
    @Test(arguments: 1...4)
    func randomSchedulesConverge(historySeed: UInt64) throws {
        let env = ProcessInfo.processInfo.environment
        let schedules = (Int(env["PEERLOG_SCHEDULES"] ?? "") ?? 2000) / 4
        let only = env["PEERLOG_SEED"].flatMap(UInt64.init)
        if let only, only >> 32 != historySeed { return }
        // Odd histories: the equivocator is later removed; even ones: an admin equivocates and stays.
        let h = try Self.history(seed: historySeed, carolEquivocates: historySeed % 2 == 0)
        #expect(
            h.envelopes.count > 10 && h.receipts.count > h.envelopes.count,
            "the history has committed and tentative parts")
        let reference = try Self.replay(h, schedule: 0)
        #expect(
            reference.committed == (try h.sequencer.replica.stateHash(of: h.group, view: .committed)),
            "history \(historySeed): observer and sequencer agree")
        if historySeed % 2 == 1 {
            #expect(
                reference.committed != reference.tentative,
                "history \(historySeed): the tentative tail changes something")
        }
        for s in 1...UInt64(max(1, schedules)) {
            let schedule = historySeed << 32 | s
            if let only, only != schedule { continue }
            let outcome = try Self.replay(h, schedule: schedule)
            if outcome != reference {
                Issue.record(
                    "schedule seed \(schedule) diverged (rerun with PEERLOG_SEED=\(schedule)): committed \(outcome.committed == reference.committed), tentative \(outcome.tentative == reference.tentative), log \(outcome.log.count) vs \(reference.log.count) \(outcome.detail)"
                )
                return
            }
        }
    }
}
