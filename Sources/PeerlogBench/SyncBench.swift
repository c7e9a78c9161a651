import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSync

/// Catch-up through two sync sessions in one process versus a plain `Replica.ingest` of the
/// same receipts and envelopes (both into fresh file-backed replicas).
func syncCatchUpBench(count: Int) throws {
    let dir = NSTemporaryDirectory() + "peerlog-syncbench-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }

    // The owner's group, with the receiving identity invited (so the source offers it),
    // then `count` entity writes from 4 author devices of the owner, all committed.
    let owner = try LocalDevice.generate(name: "sequencer", createdAt: 1)
    let receiver = try LocalDevice.generate(name: "receiver", createdAt: 1)
    let authors = try (0..<4).map { try owner.additionalDevice(name: "author-\($0)", createdAt: 1) }
    let group = GroupID.random()
    func sign(_ device: LocalDevice, _ counter: UInt64, _ op: GroupOperation, _ parent: CID?, _ hlc: UInt64) throws -> Receipt {
        try device.sign(Receipt.Draft(group: group, type: op.receiptType, counter: counter, parents: parent.map { [$0] } ?? [],
                                      hlc: HLCTimestamp(physical: hlc, logical: 0), body: op.body))
    }
    var receipts = [try sign(owner, 1, .created(name: "bench", maxMembers: 12), nil, 1)]
    receipts.append(try sign(owner, 2, .memberAdded(identity: receiver.identity, role: .member), receipts[0].cid, 2))
    var last = [CID](repeating: receipts[1].cid, count: authors.count)
    for i in 0..<count {
        let a = i % authors.count
        let op = GroupOperation.entityPut(key: "k\(i % 1000)", value: .textMap(["n": .int(Int64(i)), "pad": .bytes([UInt8](repeating: 7, count: 48))]))
        let r = try sign(authors[a], UInt64(i / authors.count + 1), op, last[a], 10 + UInt64(i))
        last[a] = r.cid
        receipts.append(r)
    }
    let envelopes = try signInParallel(receipts.enumerated().map { (UInt64($0.offset + 1), $0.element.cid) }, group: group, key: owner.signingKey)

    let source = try Replica(path: dir + "/source.sqlite", device: owner)
    _ = try source.ingest(receipts: receipts, envelopes: envelopes)
    let sourceCommitted = try source.vector(of: group).committed
    precondition(sourceCommitted == UInt64(receipts.count))

    let plain = try Replica(path: dir + "/plain.sqlite", device: receiver)
    let plainTime = try timed { _ = try plain.ingest(receipts: receipts, envelopes: envelopes) }

    let target = try Replica(path: dir + "/target.sqlite", device: receiver)
    let a = SyncSession(local: owner, peer: receiver.certificate, store: source)
    let b = SyncSession(local: receiver, peer: owner.certificate, store: target)
    var messages = 0, bytes = 0
    let syncTime = timed {
        var toA = [[UInt8]](), toB = [[UInt8]]()
        func route(_ actions: [SyncAction], toOther inbox: inout [[UInt8]]) {
            for case .send(let m) in actions {
                inbox.append(m)
                messages += 1
                bytes += m.count
            }
        }
        route(a.start(), toOther: &toB)
        route(b.start(), toOther: &toA)
        while !toA.isEmpty || !toB.isEmpty {
            if !toB.isEmpty { route(b.receive(toB.removeFirst()), toOther: &toA) }
            if !toA.isEmpty { route(a.receive(toA.removeFirst()), toOther: &toB) }
        }
    }
    let converged = try target.vector(of: group) == source.vector(of: group)
    let sameState = try target.stateHash(of: group, view: .committed) == source.stateHash(of: group, view: .committed)
    precondition(converged && sameState, "sync did not converge")

    let plainRate = Double(receipts.count) / plainTime, syncRate = Double(receipts.count) / syncTime
    figure("plain ingest \(format(Double(receipts.count))) receipts + envelopes", format(plainRate) + " /s")
    figure("sync catch-up, two sessions", format(syncRate) + " /s")
    figure("sync messages / MiB", "\(messages) / " + String(format: "%.1f", Double(bytes) / 1_048_576))
    ratio("sync catch-up / plain ingest", syncRate / plainRate)
}
