import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// `offline W1,W2,…`: a local append (library call) with W of this device's own writes waiting
/// for a seq, in a group whose sequencer is a relay out of reach: a laptop offline for a week.
/// Every local write checks the offline limits (docs/PROTOCOL.md §10.6) against that backlog,
/// so its cost must not grow with W. The backlog is signed by the writing device itself (its
/// next counters, each receipt the child of the one before) and ingested; the limits are
/// raised above W so the timed appends are allowed. All stores are built first, then timed in
/// interleaved rounds of 100 appends, so a change in the machine's load weighs on every W alike.
func offlineBench(waiting: [Int], appends: Int? = nil) throws {
    let dir = NSTemporaryDirectory() + "peerlog-offline-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    print("\n== offline: single append with W of this device's own writes waiting (sequencer out of reach)")
    let perRound = min(100, appends ?? 100)
    let rounds = appends.map { ($0 + perRound - 1) / perRound } ?? 20
    var stores = [(w: Int, replica: Replica, group: GroupID)]()
    for w in waiting {
        let laptop = try LocalDevice.generate(name: "laptop", createdAt: 1)
        let path = dir + "/offline-\(w).sqlite"
        let limits = offlineLimits(room: w + perRound * rounds)
        var replica: Replica! = try Replica(path: path, device: laptop, limits: limits)
        let group = try replica.createGroup(name: "offline")
        let relay = try LocalDevice.generate(name: "relay", createdAt: 1)
        try replica.append(.sequencerChanged(.relay(key: relay.device, address: "127.0.0.1:9")), to: group)
        let head = try replica.log(of: group, view: .committed).last!.receipt
        var built = 0.0
        let backlog = try timed {
            let receipts = try ownBacklog(count: w, group: group, after: head, device: laptop)
            built = try timed {
                for start in stride(from: 0, to: w, by: 20_000) {
                    _ = try replica.ingest(receipts: Array(receipts[start..<min(start + 20_000, w)]))
                }
            }
        }
        let held = try replica.tentativeCount(of: group)
        precondition(held == w, "backlog: \(held) of \(w) tentative")
        figure("W=\(w): own backlog signed + ingested", String(format: "%.1f s (ingest %.1f s)", backlog, built))
        // Closing checkpoints the ingest's WAL, so no background checkpoint runs under the timing.
        replica = nil
        stores.append((w, try Replica(path: path, device: laptop, limits: limits), group))
    }

    let rates = try interleavedAppends(stores, rounds: rounds, perRound: perRound)
    offlineCheckFigures(stores.map { ($0.w, $0.replica, $0.group) })
    guard let first = rates.first, let last = rates.last else { return }
    print("")
    ratio("append rate W=\(last.w) / W=\(first.w)", last.rate / first.rate, target: 0.8)
    ratio("append p50 W=\(first.w) / W=\(last.w)", first.p50 / last.p50)
}

/// `count` entity writes by `device` itself, its next counters after `after`'s author's (the
/// group's creator: `after` is its latest receipt), each the child of the one before, with
/// HLCs after `after`'s. One chain, so signed in order.
private func ownBacklog(count: Int, group: GroupID, after: Receipt, device: LocalDevice) throws -> [Receipt] {
    var previous = after.cid
    var out = [Receipt]()
    out.reserveCapacity(count)
    for i in 0..<count {
        let op = GroupOperation.entityPut(key: "b\(i % 1000)", value: .int(Int64(i)))
        let hlc = HLCTimestamp(physical: after.hlc.physical + 1 + UInt64(i / 60_000), logical: UInt16(i % 60_000))
        let r = try device.sign(
            Receipt.Draft(
                group: group, type: op.receiptType, counter: after.counter + 1 + UInt64(i), parents: [previous],
                hlc: hlc, body: op.body))
        previous = r.cid
        out.append(r)
    }
    return out
}
