import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// `peerlog-bench batch [BATCHES] [SIZE]`: `Replica.appendBatch` on a file store, against raw
/// Ed25519 signing in the same run (issue 14's figure: ≥ 0.35 × raw sign).
func batchBench(batches: Int, size: Int) throws {
    let dir = NSTemporaryDirectory() + "peerlog-bench-batch-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let owner = try LocalDevice.generate(name: "owner", createdAt: 1)
    let message = SecureRandom.bytes(200)
    let rawSign = rate("ed25519 sign (200-byte message)") { _ in _ = owner.signingKey.signature(for: message) }

    func ops(_ batch: Int) -> [GroupOperation] {
        (0..<size).map { i in
            .entityPut(
                key: "k\((batch * size + i) % 10_000)",
                value: .textMap(["n": .int(Int64(i)), "pad": .bytes([UInt8](repeating: 7, count: 48))]))
        }
    }

    // Solo group: this device is the sequencer, so each receipt is committed in the same
    // transaction (a second signature: its envelope).
    let solo = try Replica(path: dir + "/solo.sqlite", device: owner)
    let soloGroup = try solo.createGroup(name: "solo")
    _ = try solo.appendBatch(ops(0), to: soloGroup)  // warm-up
    var soloSeconds = 0.0
    for b in 0..<batches {
        soloSeconds += try timed {
            let committed = try solo.appendBatch(ops(b), to: soloGroup).last?.seq != nil
            precondition(committed)
        }
    }
    let soloRate = Double(batches * size) / soloSeconds
    figure("batched append, solo group (committed)", format(soloRate) + " /s")
    // The same operations one `append` (one transaction) each, for comparison.
    let singles = ops(0)
    let singleSeconds = try timed { for op in singles { try solo.append(op, to: soloGroup) } }
    let singleRate = Double(singles.count) / singleSeconds
    figure("single appends, solo group (committed)", format(singleRate) + " /s")

    // A member that is not the sequencer: receipts stay tentative. Between batches (not timed)
    // the owner commits them and the member takes the envelopes, so the backlog stays empty.
    let member = try owner.additionalDevice(name: "member", createdAt: 1)
    let sequencer = try Replica(
        path: dir + "/sequencer.sqlite", device: try LocalDevice.generate(name: "sequencer", createdAt: 1))
    let group = try sequencer.createGroup(name: "shared")
    try sequencer.append(.memberAdded(identity: member.identity, role: .member), to: group)
    let writer = try Replica(path: dir + "/member.sqlite", device: member)
    func catchUp() throws {
        let have = try writer.vector(of: group).committed
        let items = try sequencer.syncCommitted(group: group, fromSeq: have + 1, limit: .max)
        _ = try writer.ingest(
            receipts: try items.map { try Receipt(encoded: $0.receipt.encoded) },
            envelopes: try items.map { try Envelope(encoded: $0.envelope) })
    }
    try catchUp()
    _ = try sequencer.ingest(receipts: [try writer.append(.inviteAccepted, to: group).receipt])
    try catchUp()
    var memberSeconds = 0.0
    for b in 0..<batches {
        var results = [AppendResult]()
        memberSeconds += try timed { results = try writer.appendBatch(ops(b), to: group) }
        precondition(results.allSatisfy { $0.seq == nil })
        _ = try sequencer.ingest(receipts: results.map(\.receipt))
        try catchUp()
    }
    let backlog = try writer.tentativeCount(of: group)
    precondition(backlog == 0)
    let memberRate = Double(batches * size) / memberSeconds
    figure("batched append, member (tentative)", format(memberRate) + " /s")

    print("")
    print(pad("(\(batches) batches of \(size) entity.put)", 46))
    ratio("batched / single appends, solo", soloRate / singleRate)
    ratio("batched append solo / raw sign", soloRate / rawSign, target: 0.35)
    ratio("batched append member / raw sign", memberRate / rawSign, target: 0.35)
}
