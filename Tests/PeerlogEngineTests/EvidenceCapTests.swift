import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// A flood of forged receipts costs bounded space: invalid receipts are kept as evidence up to
/// `maxEvidencePerPeer` per sending peer and `maxEvidence` in all, the newest kept.
@Suite struct EvidenceCapTests {
    /// `n` distinct receipts by `author` with random signatures (all fail verification).
    func forgeries(_ n: Int, by author: TestReplica, group: GroupID, from first: UInt64) throws -> [Receipt] {
        try (0..<n).map { i in
            let payload = try Receipt.payload(
                of: Receipt.Draft(
                    group: group, type: "entity.put", counter: first + UInt64(i),
                    hlc: HLCTimestamp(physical: 1_000, logical: 0),
                    body: .textMap(["key": .text("k"), "value": .int(Int64(i))])),
                certificate: author.device.certificate)
            return try Receipt(
                payload: payload, signature: SecureRandom.bytes(64), certificate: author.device.certificate)
        }
    }

    @Test func evidenceIsCappedPerPeerAndInTotalKeepingTheNewest() throws {
        var limits = ReplicaLimits()
        limits.maxEvidencePerPeer = 30
        limits.maxEvidence = 50
        let bob = try TestReplica("bob", limits: limits)
        let mallory = try TestReplica("mallory")
        let eve = try TestReplica("eve")
        let group = GroupID(bytes16: 9)
        // Mallory's device sends 100 in four batches: only her newest 30 stay.
        let fromMallory = try forgeries(100, by: mallory, group: group, from: 1)
        for start in stride(from: 0, to: 100, by: 25) {
            bob.clock.advance(1)
            let report = try bob.replica.ingest(
                receipts: Array(fromMallory[start..<start + 25]), envelopes: [], from: mallory.device.device)
            #expect(report.invalid.count == 25)
        }
        var kept = try bob.replica.invalidReceipts(limit: 1_000)
        #expect(kept.count == 30)
        // The newest: all of the last batch, the rest from the one before (one write stamps a
        // batch with one time; within it the order is by CID).
        #expect(Set(fromMallory.suffix(25).map(\.cid)).isSubset(of: Set(kept.map(\.cid))))
        #expect(Set(kept.map(\.cid)).isSubset(of: Set(fromMallory.suffix(50).map(\.cid))))
        // Eve's device sends 40: hers are capped at 30 too, and all together at 50, the newest.
        let fromEve = try forgeries(40, by: eve, group: group, from: 1)
        bob.clock.advance(1)
        _ = try bob.replica.ingest(receipts: fromEve, envelopes: [], from: eve.device.device)
        kept = try bob.replica.invalidReceipts(limit: 1_000)
        #expect(kept.count == 50)
        #expect(kept.filter { $0.peer == eve.device.device }.count == 30)
        #expect(kept.filter { $0.peer == mallory.device.device }.count == 20)
    }
}
