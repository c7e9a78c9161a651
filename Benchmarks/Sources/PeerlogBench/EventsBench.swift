import Dispatch
import Foundation
import Peerlog
import PeerlogEngine
import PeerlogModel

/// Issue 15's figure: committed ingest with and without a change-stream consumer, same run.
/// Each round ingests `count` receipts with their envelopes into a fresh home twice (alone,
/// then with a `Peerlog.changes()` consumer iterating on the other core), in alternating order.
func eventsBench(count: Int, rounds: Int) async throws {
    let owner = try LocalDevice.generate(name: "sequencer", createdAt: 1)
    let author = try owner.additionalDevice(name: "author", createdAt: 1)
    let group = GroupID.random()
    let created = try owner.sign(
        Receipt.Draft(
            group: group, type: "group.created", counter: 1, hlc: HLCTimestamp(physical: 1, logical: 0),
            body: GroupOperation.created(name: "bench", maxMembers: 12).body))
    var receipts = [created]
    for i in 0..<count {
        let op = GroupOperation.entityPut(key: "k\(i % 1_000)", value: .textMap(["n": .int(Int64(i))]))
        receipts.append(
            try author.sign(
                Receipt.Draft(
                    group: group, type: op.receiptType, counter: UInt64(i + 1), parents: [receipts.last!.cid],
                    hlc: HLCTimestamp(physical: 1_000 + UInt64(i), logical: 0), body: op.body)))
    }
    let envelopes = try signInParallel(
        receipts.enumerated().map { (UInt64($0.offset + 1), $0.element.cid) }, group: group, key: owner.signingKey)

    /// One ingest into a fresh home; with `consume`, a stream reads every change meanwhile.
    /// Returns the ingest rate and how long after the ingest the consumer had seen everything.
    func run(consume: Bool) async throws -> (rate: Double, lag: Double) {
        let home = NSTemporaryDirectory() + "peerlog-events-\(getpid())-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: home) }
        let app = try await Peerlog.open(home: home, deviceName: "app")
        let replica = try Replica(path: home + "/replica.sqlite", device: LocalDevice.load(home: home))
        let last = UInt64(receipts.count)
        let consumer: Task<Void, any Error>? =
            consume
            ? Task.detached {
                for try await change in app.changes() {
                    if case .committed(_, let seqs) = change.event, seqs.upperBound == last { return }
                }
            } : nil
        let start = ContinuousClock.now
        _ = try replica.ingest(receipts: receipts, envelopes: envelopes)
        let ingest = (ContinuousClock.now - start).seconds
        let committed = try replica.vector(of: group).committed
        precondition(committed == UInt64(receipts.count))
        try await consumer?.value
        let lag = (ContinuousClock.now - start).seconds - ingest
        return (Double(receipts.count) / ingest, consume ? lag : 0)
    }

    var alone = [Double]()
    var with = [Double]()
    var lags = [Double]()
    for round in 0..<rounds {
        if round % 2 == 0 {
            alone.append(try await run(consume: false).rate)
            let r = try await run(consume: true)
            with.append(r.rate)
            lags.append(r.lag)
        } else {
            let r = try await run(consume: true)
            with.append(r.rate)
            lags.append(r.lag)
            alone.append(try await run(consume: false).rate)
        }
    }
    func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
    figure("committed ingest of \(count) receipts, no consumer (median of \(rounds))", format(median(alone)) + " /s")
    figure("same, a change-stream consumer reading every change", format(median(with)) + " /s")
    figure("consumer caught up after the ingest ended (median)", String(format: "%.3f s", median(lags)))
    print("")
    ratio("ingest with a consumer / without", median(with) / median(alone), target: 0.9)
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
