import Dispatch
import Foundation
import PeerlogEngine
import PeerlogModel
import Synchronization

/// `ingest N [--single]`: only the committed ingest of the replica figure (N receipts from 10
/// authors with batched envelopes, or single ones), small enough to run under
/// `valgrind --tool=callgrind` and see what bounds it.
func ingestProfileBench(count: Int, single: Bool) throws {
    let dir = NSTemporaryDirectory() + "peerlog-ingest-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let owner = try LocalDevice.generate(name: "sequencer", createdAt: 1)
    let authors = try (0..<10).map { try owner.additionalDevice(name: "author-\($0)", createdAt: 1) }
    let group = GroupID.random()
    let created = try owner.sign(
        Receipt.Draft(
            group: group, type: "group.created", counter: 1, hlc: HLCTimestamp(physical: 1, logical: 0),
            body: GroupOperation.created(name: "bench", maxMembers: 12).body))
    let perAuthor = max(1, count / authors.count)
    let signed = Mutex([[Receipt]](repeating: [], count: authors.count))
    DispatchQueue.concurrentPerform(iterations: authors.count) { a in
        var chain = [Receipt]()
        for i in 0..<perAuthor {
            let op = GroupOperation.entityPut(
                key: "a\(a)-k\(i % 1000)",
                value: .textMap(["n": .int(Int64(i)), "pad": .bytes([UInt8](repeating: 7, count: 48))]))
            chain.append(
                try! authors[a].sign(
                    Receipt.Draft(
                        group: group, type: op.receiptType, counter: UInt64(i + 1),
                        parents: [chain.last?.cid ?? created.cid],
                        hlc: HLCTimestamp(physical: 1_000 + UInt64(i), logical: UInt16(a)), body: op.body)))
        }
        signed.withLock { $0[a] = chain }
    }
    let chains = signed.withLock { $0 }
    var receipts = [created]
    for i in 0..<perAuthor { for a in 0..<authors.count { receipts.append(chains[a][i]) } }
    let cids = receipts.map(\.cid)
    let envelopes =
        single
        ? try signInParallel(
            cids.enumerated().map { (UInt64($0.offset + 1), $0.element) }, group: group, key: owner.signingKey)
        : try EnvelopeRun.signRuns(
            group: group, firstSeq: 1, receipts: cids, term: 0, receivedAt: 1, key: owner.signingKey)
    let replica = try Replica(path: dir + "/committed.sqlite", device: LocalDevice.generate(name: "c", createdAt: 1))
    let t = try timed { _ = try replica.ingest(receipts: receipts, envelopes: envelopes) }
    let committed = try replica.vector(of: group).committed
    precondition(committed == UInt64(receipts.count))
    figure(
        "ingest \(receipts.count) receipts, \(single ? "single" : "batched") envelopes",
        format(Double(receipts.count) / t) + " /s")
}
