import Dispatch
import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import Synchronization

/// `scale W1,W2,…`: a local append (library call) with W receipts waiting for a seq, in a group
/// whose sequencer is a relay out of reach, so nothing commits. The backlog is written by a
/// second device of the same identity (signed in parallel, ingested in batches); the timed
/// appends land at the end of the tentative order, as a user's writes do. All stores are built
/// first, then timed in interleaved rounds of 100 appends, so a change in the machine's load
/// during the run weighs on every W alike.
/// `appends`: a fixed number of timed appends per W (for instruction counts under callgrind);
/// nil: 20 rounds (2,000 appends per W).
func scaleBench(waiting: [Int], appends: Int? = nil) throws {
    let dir = NSTemporaryDirectory() + "peerlog-scale-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    print("\n== scale: single append with W receipts waiting (relay sequencer out of reach)")
    var stores = [(w: Int, replica: Replica, group: GroupID)]()
    for w in waiting {
        let owner = try LocalDevice.generate(name: "owner", createdAt: 1)
        let laptop = try owner.additionalDevice(name: "laptop", createdAt: 1)
        let path = dir + "/scale-\(w).sqlite"
        var replica: Replica! = try Replica(path: path, device: owner)
        let group = try replica.createGroup(name: "scale")
        let relay = try LocalDevice.generate(name: "relay", createdAt: 1)
        try replica.append(.sequencerChanged(.relay(key: relay.device, address: "127.0.0.1:9")), to: group)
        let head = try replica.log(of: group, view: .committed).last!.receipt
        var built = 0.0
        let backlog = try timed {
            let receipts = signBacklog(count: w, group: group, after: head, device: laptop)
            built = try timed {
                for start in stride(from: 0, to: w, by: 20_000) {
                    _ = try replica.ingest(receipts: Array(receipts[start..<min(start + 20_000, w)]))
                }
            }
        }
        let held = try replica.tentativeCount(of: group)
        precondition(held == w, "backlog: \(held) of \(w) tentative")
        figure("W=\(w): backlog signed + ingested", String(format: "%.1f s (ingest %.1f s)", backlog, built))
        // Closing checkpoints the ingest's WAL, so no background checkpoint runs under the timing.
        replica = nil
        stores.append((w, try Replica(path: path, device: owner), group))
    }

    let perRound = min(100, appends ?? 100)
    let rounds = appends.map { ($0 + perRound - 1) / perRound } ?? 20
    let rates = try interleavedAppends(stores, rounds: rounds, perRound: perRound)
    // W=0, when listed, is the reference for the machine's own tail; ratios start at the first W > 0.
    guard let first = rates.first(where: { $0.w > 0 }) ?? rates.first, let last = rates.last else { return }
    print("")
    ratio("append rate W=\(last.w) / W=\(first.w)", last.rate / first.rate, target: 0.8)
    ratio("append p50 W=\(first.w) / W=\(last.w)", first.p50 / last.p50)
    let worst = rates.filter { $0.w > 0 }.map(\.p99).max() ?? 0
    print(
        pad("append p99 target < 2 ms at every W", 46)
            + pad(worst < 2 ? "met" : String(format: "NOT met (%.2f ms)", worst), 16, left: false))
}

/// `count` entity writes in 8 offline chains (one device of the identity each, every receipt
/// the child of the previous one), with HLCs after `after`'s, signed on all cores. A chain's
/// parents need its CIDs, so each chain is signed in order on its own core.
private func signBacklog(count: Int, group: GroupID, after: Receipt, device: LocalDevice) -> [Receipt] {
    let out = Mutex([Receipt?](repeating: nil, count: count))
    let chunks = 8
    let per = (count + chunks - 1) / chunks
    let devices = (0..<chunks).map { c in
        c == 0 ? device : try! device.additionalDevice(name: "laptop-\(c)", createdAt: 1)
    }
    DispatchQueue.concurrentPerform(iterations: chunks) { c in
        var previous = after.cid
        var local = [(Int, Receipt)]()
        for j in 0..<per {
            let i = c * per + j
            guard i < count else { break }
            let op = GroupOperation.entityPut(key: "b\(i % 1000)", value: .int(Int64(i)))
            let hlc = HLCTimestamp(physical: after.hlc.physical + 1 + UInt64(i / 60_000), logical: UInt16(i % 60_000))
            let r = try! devices[c].sign(
                Receipt.Draft(
                    group: group, type: op.receiptType, counter: UInt64(j + 1), parents: [previous], hlc: hlc,
                    body: op.body))
            previous = r.cid
            local.append((i, r))
        }
        out.withLock { for (i, r) in local { $0[i] = r } }
    }
    // In HLC order, so each device's counters arrive contiguously.
    return out.withLock { $0.map { $0! } }.sorted { $0.hlc < $1.hlc }
}

/// Times `rounds` rounds of `perRound` single appends on each store in turn (so the machine's
/// load weighs on every W alike) and prints each store's rate and p50 / p99 (ms).
func interleavedAppends(
    _ stores: [(w: Int, replica: Replica, group: GroupID)], rounds: Int, perRound: Int
) throws -> [(w: Int, rate: Double, p50: Double, p99: Double)] {
    var latencies = [[Double]](repeating: [], count: stores.count)
    for _ in 0..<rounds {
        for (s, store) in stores.enumerated() {
            for _ in 0..<perRound {
                let i = latencies[s].count
                latencies[s].append(
                    try timed {
                        try store.replica.append(.entityPut(key: "k\(i % 100)", value: .int(Int64(i))), to: store.group)
                    })
            }
        }
    }
    var rates = [(w: Int, rate: Double, p50: Double, p99: Double)]()
    for (s, store) in stores.enumerated() {
        let sorted = latencies[s].sorted()
        let rate = Double(sorted.count) / sorted.reduce(0, +)
        let p50 = sorted[sorted.count / 2] * 1000
        let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)] * 1000
        figure("W=\(store.w): append rate", (rate < 10 ? String(format: "%.2f", rate) : format(rate)) + " /s")
        figure("W=\(store.w): append p50 / p99 (\(sorted.count))", String(format: "%.3f / %.3f ms", p50, p99))
        rates.append((store.w, rate, p50, p99))
    }
    return rates
}
