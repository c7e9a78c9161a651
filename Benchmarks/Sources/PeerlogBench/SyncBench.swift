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

    let f = try CatchUpFixture(count: count)
    let (owner, receiver, group, receipts, envelopes) = (f.owner, f.receiver, f.group, f.receipts, f.envelopes)
    let source = try Replica(path: dir + "/source.sqlite", device: owner)
    _ = try source.ingest(receipts: receipts, envelopes: envelopes)
    let sourceCommitted = try source.vector(of: group).committed
    precondition(sourceCommitted == UInt64(receipts.count))

    let plain = try Replica(path: dir + "/plain.sqlite", device: receiver)
    let plainTime = try timed { _ = try plain.ingest(receipts: receipts, envelopes: envelopes) }

    let target = try Replica(path: dir + "/target.sqlite", device: receiver)
    let a = SyncSession(local: owner, peer: receiver.certificate, store: source)
    let b = SyncSession(local: receiver, peer: owner.certificate, store: target)
    var messages = 0
    var bytes = 0
    let syncTime = timed {
        var toA = [[UInt8]]()
        var toB = [[UInt8]]()
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
            if !toB.isEmpty { route(b.settle(b.receive(toB.removeFirst()), with: target), toOther: &toA) }
            if !toA.isEmpty { route(a.settle(a.receive(toA.removeFirst()), with: source), toOther: &toB) }
        }
    }
    let converged = try target.vector(of: group) == source.vector(of: group)
    let sameState = try target.stateHash(of: group, view: .committed) == source.stateHash(of: group, view: .committed)
    precondition(converged && sameState, "sync did not converge")

    let plainRate = Double(receipts.count) / plainTime
    let syncRate = Double(receipts.count) / syncTime
    figure("plain ingest \(format(Double(receipts.count))) receipts + envelopes", format(plainRate) + " /s")
    figure("sync catch-up, two sessions", format(syncRate) + " /s")
    figure("sync messages / MiB", "\(messages) / " + String(format: "%.1f", Double(bytes) / 1_048_576))
    ratio("sync catch-up / plain ingest", syncRate / plainRate)
}
