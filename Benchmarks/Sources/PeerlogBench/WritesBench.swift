import Dispatch
import Foundation
import Peerlog
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Synchronization

/// Issue 36's figures (docs/PROTOCOL.md §9.7): a conditional write against a plain one through
/// the library, committed ingest of a mix of conditions and merges against plain puts, and the
/// property schedules (`EntityWriteSchedule`), `schedules` of them on every core.
func writesBench(schedules: Int) async throws {
    let dir = NSTemporaryDirectory() + "peerlog-writes-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }

    // 1. One write at a time through the facade, on a file store where this device sequences (each
    // commits at once): `put` against `put(…, if: .absent)` on fresh keys, alternating rounds.
    let peerlog = try await Peerlog.open(home: dir + "/library", create: true)
    let group = try await peerlog.createGroup(named: "bench", encrypted: false)
    var plainTime = 0.0
    var conditionalTime = 0.0
    let perRound = 500
    let clock = ContinuousClock()
    for round in 0..<8 {
        var start = clock.now
        for i in 0..<perRound { try await peerlog.put("p\(round)-\(i)", i, in: group) }
        plainTime += seconds(clock.now - start)
        start = clock.now
        for i in 0..<perRound { try await peerlog.put("c\(round)-\(i)", i, in: group, if: .absent) }
        conditionalTime += seconds(clock.now - start)
    }
    let writes = Double(8 * perRound)
    figure("library put, solo (commits at once)", format(writes / plainTime) + " /s")
    figure("library put if absent, solo", format(writes / conditionalTime) + " /s")
    let singleRatio = plainTime / conditionalTime

    // The same through the engine as a member whose writes wait for the sequencer (the overlay's
    // append path), 4,000 each with 4,000 already waiting.
    let owner = try LocalDevice.generate(name: "owner", createdAt: 1)
    let member = try owner.additionalDevice(name: "member", createdAt: 1)
    let ownerReplica = try Replica(path: dir + "/owner.sqlite", device: owner)
    let memberReplica = try Replica(path: dir + "/member.sqlite", device: member)
    let waiting = try ownerReplica.createGroup(name: "waiting")
    let held = try TestReplica.holdings(waiting, of: ownerReplica)
    _ = try memberReplica.ingest(receipts: held.receipts, envelopes: held.envelopes)
    var memberPlain = 0.0
    var memberConditional = 0.0
    var conditionalRounds = [Double]()
    var plainRounds = [Double]()
    for round in 0..<8 {
        let plain = try timed {
            for i in 0..<perRound {
                try memberReplica.append(.entityPut(key: "p\(round)-\(i)", value: .int(Int64(i))), to: waiting)
            }
        }
        memberPlain += plain
        plainRounds.append(plain)
        let conditional = try timed {
            for i in 0..<perRound {
                let key = "c\(round)-\(i)"
                try memberReplica.append(
                    .entityWrite(
                        EntityWrite(conditions: [.absent(key: key)], changes: [.put(key: key, value: .int(Int64(i)))])),
                    to: waiting)
            }
        }
        memberConditional += conditional
        conditionalRounds.append(conditional)
    }
    let stillWaiting = try memberReplica.tentativeCount(of: waiting)
    guard stillWaiting >= 16 * perRound else {
        throw BenchError("the member's writes should all wait for the sequencer: \(stillWaiting) do")
    }
    figure("engine append, member (tentative)", format(writes / memberPlain) + " /s")
    figure("engine append if absent, member (tentative)", format(writes / memberConditional) + " /s")
    // Growth: the last round writes behind 7,500 waiting receipts, the first behind 500.
    let growth = conditionalRounds[0] / conditionalRounds[7]
    let plainGrowth = plainRounds[0] / plainRounds[7]

    // 2. Committed ingest: 20,000 plain puts against 20,000 of a mix (a third conditional puts,
    // some failing, a third counter adds, a third set inserts and field merges), 10 authors.
    let plainRate = try mixIngest(dir: dir, name: "plain", mixed: false)
    let mixRate = try mixIngest(dir: dir, name: "mix", mixed: true)

    // 3. The property schedules, on every core.
    let started = clock.now
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let tally = Mutex((writes: 0, rejected: 0, failures: [String]()))
    DispatchQueue.concurrentPerform(iterations: cores) { core in
        for seed in stride(from: UInt64(core + 1), through: UInt64(schedules), by: cores) {
            do {
                var schedule = try EntityWriteSchedule(seed: seed)
                try schedule.run(steps: 40)
                tally.withLock {
                    $0.writes += schedule.writeCount
                    $0.rejected += schedule.rejectedCount
                }
            } catch {
                tally.withLock { $0.failures.append("seed \(seed): \(error)") }
            }
        }
    }
    let t = tally.withLock { $0 }
    figure(
        "property schedules (\(schedules), 40 steps)",
        String(format: "%.0f s, %d writes, %d rejected", seconds(clock.now - started), t.writes, t.rejected))
    if let first = t.failures.first { throw BenchError("\(t.failures.count) schedules failed; first: \(first)") }

    print("")
    ratio("conditional single write / plain, library", singleRatio, target: 0.9)
    ratio("conditional / plain append, member (tentative)", memberPlain / memberConditional)
    ratio("committed ingest, mix / plain", mixRate / plainRate, target: 0.85)
    ratio("conditional append rate, 7,500 waiting / 500 waiting", growth)
    ratio("plain append rate, 7,000 waiting / 0 waiting", plainGrowth)
}

/// Committed ingest rate of 20,000 receipts (plain puts, or the mix) with their envelopes into a
/// fresh file store; checks the replay.
private func mixIngest(dir: String, name: String, mixed: Bool) throws -> Double {
    let owner = try LocalDevice.generate(name: "sequencer", createdAt: 1)
    let authors = try (0..<10).map { try owner.additionalDevice(name: "author-\($0)", createdAt: 1) }
    let group = GroupID.random()
    let perAuthor = 2_000
    let created = try owner.sign(
        Receipt.Draft(
            group: group, type: "group.created", counter: 1, hlc: HLCTimestamp(physical: 1, logical: 0),
            body: GroupOperation.created(name: "bench", maxMembers: 12).body))
    let signed = Mutex([[Receipt]](repeating: [], count: authors.count))
    DispatchQueue.concurrentPerform(iterations: authors.count) { a in
        var chain = [Receipt]()
        for i in 0..<perAuthor {
            let key = "k\(i % 500)"
            let op: GroupOperation
            if !mixed {
                op = .entityPut(key: "a\(a)-\(key)", value: .int(Int64(i)))
            } else {
                switch i % 3 {
                case 0:
                    // Claims: the first of each key wins, the later ones are rejected at commit.
                    op = .entityWrite(
                        EntityWrite(
                            conditions: [.absent(key: "claim-\(key)")],
                            changes: [.put(key: "claim-\(key)", value: .int(Int64(a)))]))
                case 1: op = .entityWrite(EntityWrite(changes: [.add(key: "n-\(key)", by: Int64(i))]))
                default:
                    op = .entityWrite(
                        EntityWrite(changes: [
                            .insert(key: "s-\(key)", elements: [.int(Int64(a))]),
                            .setFields(key: "r-\(key)", fields: ["a\(a)": .int(Int64(i))]),
                        ]))
                }
            }
            let draft = Receipt.Draft(
                group: group, type: op.receiptType, counter: UInt64(i + 1),
                parents: chain.last.map { [$0.cid] } ?? [created.cid],
                hlc: HLCTimestamp(physical: 1_000 + UInt64(i), logical: UInt16(a)), body: op.body)
            chain.append(try! authors[a].sign(draft))
        }
        signed.withLock { $0[a] = chain }
    }
    let chains = signed.withLock { $0 }
    var receipts = [created]
    for i in 0..<perAuthor { for a in 0..<authors.count { receipts.append(chains[a][i]) } }
    let runs = try EnvelopeRun.signRuns(
        group: group, firstSeq: 1, receipts: receipts.map(\.cid), term: 0, receivedAt: 1, key: owner.signingKey)
    let replica = try Replica(path: dir + "/\(name).sqlite", device: LocalDevice.generate(name: name, createdAt: 1))
    let time = try timed { _ = try replica.ingest(receipts: receipts, envelopes: runs) }
    guard try replica.vector(of: group).committed == UInt64(receipts.count),
        try replica.stateHash(of: group, view: .committed) == replica.replayedStateHash(of: group)
    else { throw BenchError("\(name): not all committed, or the replay differs") }
    let rate = Double(receipts.count) / time
    figure("committed ingest 20k, \(mixed ? "mix of conditions and merges" : "plain puts")", format(rate) + " /s")
    return rate
}
