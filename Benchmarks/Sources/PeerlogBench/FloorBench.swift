import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSync

/// `peerlog-bench floor [UPDATES]` (issue 18's figures, one run):
/// - a fresh device joins a group of UPDATES committed updates over 10k keys: from the newest
///   snapshot plus the tail, against a full catch-up of the log (target ≥ 10×);
/// - store size after UPDATES updates over 1k keys, retention on against off (target ≤ 0.1).
/// Everything goes through real file stores and two in-process sync sessions.
func floorBench(updates: Int) throws {
    let dir = NSTemporaryDirectory() + "peerlog-bench-floor-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let owner = try LocalDevice.generate(name: "owner", createdAt: 1)
    let joiner = try LocalDevice.generate(name: "joiner", createdAt: 1)
    let interval = ReplicaLimits().snapshotInterval
    print("updates: \(format(Double(updates))); snapshots every \(interval) commits")

    // Join: the group holds `updates` updates over 10k keys plus half an interval of tail.
    let source = try Replica(path: dir + "/source.sqlite", device: owner)
    let group = try source.createGroup(name: "year")
    try source.append(.memberAdded(identity: joiner.identity, role: .member), to: group)
    let writeSeconds = try timed { try write(source, group, count: updates + Int(interval) / 2, keys: 10_000) }
    figure("writes to build the group (committed)", format(Double(updates) / writeSeconds) + " /s")
    let newest = try source.snapshots(of: group).first
    figure("newest snapshot: seq / bytes", "\(newest?.seq ?? 0) / \(newest?.bytes ?? 0)")

    func join(snapshots: Bool, name: String) throws -> (seconds: Double, bytes: Int) {
        let target = try Replica(path: dir + "/\(name).sqlite", device: joiner)
        let a = SyncSession(local: owner, peer: joiner.certificate, store: source)
        let b = SyncSession(local: joiner, peer: owner.certificate, store: target)
        b.options.offersSnapshots = snapshots
        var bytes = 0
        let seconds = timed {
            var toA = [[UInt8]]()
            var toB = [[UInt8]]()
            func route(_ actions: [SyncAction], _ inbox: inout [[UInt8]]) {
                for case .send(let m) in actions {
                    inbox.append(m)
                    bytes += m.count
                }
            }
            route(a.start(), &toB)
            route(b.start(), &toA)
            while !toA.isEmpty || !toB.isEmpty {
                if !toB.isEmpty { route(b.settle(b.receive(toB.removeFirst()), with: target), &toA) }
                if !toA.isEmpty { route(a.settle(a.receive(toA.removeFirst()), with: source), &toB) }
            }
        }
        let same = try target.stateHash(of: group, view: .committed) == source.stateHash(of: group, view: .committed)
        precondition(same, "\(name): the joiner's state differs from the source's")
        let usedSnapshot = try target.floor(of: group) != nil
        precondition(usedSnapshot == snapshots, "\(name): a snapshot was \(usedSnapshot ? "" : "not ")used")
        return (seconds, bytes)
    }
    let full = try join(snapshots: false, name: "full")
    let fromSnapshot = try join(snapshots: true, name: "snapshot")
    figure("join by full catch-up", String(format: "%.2f s, %.1f MiB", full.seconds, Double(full.bytes) / 1_048_576))
    figure(
        "join from snapshot + tail",
        String(format: "%.2f s, %.1f MiB", fromSnapshot.seconds, Double(fromSnapshot.bytes) / 1_048_576))
    ratio("join: full catch-up / snapshot + tail (time)", full.seconds / fromSnapshot.seconds, target: 10)

    // Size: the same updates over 1k keys into two stores, retention on in one.
    var sizes = [Bool: Int64]()
    for retention in [false, true] {
        let path = dir + "/size-\(retention).sqlite"
        let r = try Replica(path: path, device: owner)
        let g = try r.createGroup(name: "sized")
        if retention { try r.setRetention(of: g, minAgeMillis: 0) }
        let seconds = try timed { try write(r, g, count: updates, keys: 1_000) }
        figure("writes, retention \(retention ? "on" : "off")", format(Double(updates) / seconds) + " /s")
        let replayed = try r.replayedStateHash(of: g) == r.stateHash(of: g, view: .committed)
        precondition(replayed, "the replay from the floor differs from the materialized state")
        sizes[retention] = fileBytes(path)
        figure(
            "store, retention \(retention ? "on" : "off")",
            String(format: "%.1f MiB", Double(sizes[retention]!) / 1_048_576))
    }
    let sizeRatio = Double(sizes[true]!) / Double(sizes[false]!)
    print(
        pad("store size: retention on / off", 46) + pad(String(format: "%.3f", sizeRatio), 16, left: false)
            + (sizeRatio <= 0.1 ? "   (target ≤ 0.1: met)" : "   (target ≤ 0.1: NOT met)"))
}

/// `count` committed puts over `keys` keys, 10,000 a transaction, each value 40 bytes.
private func write(_ r: Replica, _ g: GroupID, count: Int, keys: Int) throws {
    var done = 0
    while done < count {
        let n = min(10_000, count - done)
        let ops: [GroupOperation] = (done..<(done + n)).map { i in
            .entityPut(
                key: "key-\(i % keys)", value: .textMap(["n": .int(Int64(i)), "note": .text("an update of 20 b")]))
        }
        _ = try r.appendBatch(ops, to: g)
        done += n
    }
}

/// The database file with its WAL, as `ls` would add them up.
private func fileBytes(_ path: String) -> Int64 {
    [path, path + "-wal"].reduce(0) { total, p in
        total + ((try? FileManager.default.attributesOfItem(atPath: p)[.size] as? Int64) ?? 0)
    }
}
