import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Batched envelopes through the replica (docs/PROTOCOL.md §3.5): a solo sequencer signs one
/// run per pass, receivers commit from it, forks and tampering are refused.
struct BatchedEnvelopeTests {
    @Test func soloSequencerSignsOneRunPerPassAndPeersCommitFromIt() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try groupWith(owner: owner, members: [reader])
        try owner.replica.appendBatch((0..<300).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        let envelopes = try owner.holdings(group).envelopes
        let batch = envelopes.suffix(300)
        // 300 seqs committed in one pass: runs of 256 and 44, two signatures.
        #expect(batch.allSatisfy { $0.run != nil && $0.verify() == .valid })
        #expect(Set(batch.map(\.signature)).count == 2)
        let report = try owner.send(group, to: reader)
        #expect(report.rejected.isEmpty)
        #expect(try reader.replica.vector(of: group).committed == owner.replica.vector(of: group).committed)
        #expect(try reader.hashes(group) == owner.hashes(group))
        #expect(
            try reader.replica.replayedStateHash(of: group) == reader.replica.stateHash(of: group, view: .committed))
        // What the reader stored serves each seq alone, byte for byte the sequencer's items.
        #expect(try reader.holdings(group).envelopes.map(\.encoded) == envelopes.map(\.encoded))
    }

    /// Migration 0018: a run's header and signature are stored once, its items' paths only
    /// until every seq of the run is held; what is served is still each item, byte for byte.
    @Test func runsAreStoredOnceAndItemsServedByteForByte() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try groupWith(owner: owner, members: [reader])
        let before = try owner.holdings(group).envelopes.count
        try owner.replica.appendBatch((0..<300).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        let h = try owner.holdings(group)
        let items = Array(h.envelopes.suffix(300))
        // The sequencer: two run rows with their leaves; no item row keeps a path or signature.
        #expect(try rowCounts(owner) == .init(runs: 2, runsWithLeaves: 2, items: 300, itemsWithPath: 0))
        // A reader given the first 100 seqs of the 256-seq run keeps their paths.
        let report = try reader.replica.ingest(receipts: h.receipts, envelopes: Array(h.envelopes.prefix(before + 100)))
        #expect(report.rejected.isEmpty)
        #expect(try rowCounts(reader) == .init(runs: 1, runsWithLeaves: 0, items: 100, itemsWithPath: 100))
        #expect(try reader.holdings(group).envelopes.map(\.encoded) == h.envelopes.prefix(before + 100).map(\.encoded))
        // The rest: the run is whole, its leaves are kept and the paths dropped.
        try owner.send(group, to: reader)
        #expect(try rowCounts(reader) == .init(runs: 2, runsWithLeaves: 2, items: 300, itemsWithPath: 0))
        let served = try reader.holdings(group).envelopes
        #expect(served.map(\.encoded) == h.envelopes.map(\.encoded))
        #expect(served.suffix(300).allSatisfy { $0.verify() == .valid })
        #expect(items.first?.run?.count == 256)
    }

    /// A run's items spread over several batches of one call (the batches an ingest splits its
    /// input into, or the parts of one `ingest(parts:)`, as a sync drain writes them) are
    /// stored with the run's leaves at once: no item row is written with its path first.
    @Test func aRunSpreadOverTheBatchesOfOneCallIsStoredOnce() throws {
        let owner = try TestReplica("owner")
        let group = try owner.replica.createGroup(name: "g")
        try owner.replica.appendBatch((0..<300).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        let h = try owner.holdings(group)
        // Batches of 100 envelopes: the 256-seq run would end in the third.
        var limits = ReplicaLimits()
        limits.ingestBatchSize = 100
        let batched = try TestReplica("batched", limits: limits)
        _ = try batched.replica.ingest(receipts: h.receipts)
        try batched.countPathsDropped()
        #expect(try batched.replica.ingest(receipts: [], envelopes: h.envelopes).rejected.isEmpty)
        #expect(try batched.pathsDropped() == 0)
        #expect(try batched.holdings(group).envelopes.map(\.encoded) == h.envelopes.map(\.encoded))
        // The same envelopes in three parts of one call.
        let parted = try TestReplica("parted")
        _ = try parted.replica.ingest(receipts: h.receipts)
        try parted.countPathsDropped()
        let thirds = [h.envelopes[..<100], h.envelopes[100..<200], h.envelopes[200...]]
        let reports = try parted.replica.ingest(parts: thirds.map { IngestPart(receipts: [], envelopes: Array($0)) })
        #expect(reports.allSatisfy { $0.rejected.isEmpty })
        #expect(try parted.pathsDropped() == 0)
        #expect(try parted.holdings(group).envelopes.map(\.encoded) == h.envelopes.map(\.encoded))
        #expect(try parted.hashes(group) == owner.hashes(group))
    }

    /// A store written before migration 0018 holds each item whole, with no run row: it reads
    /// and serves those rows as before.
    @Test func itemsStoredWholeBeforeTheMigrationAreServedAsBefore() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try groupWith(owner: owner, members: [reader])
        try owner.replica.appendBatch((0..<10).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        let h = try owner.holdings(group)
        try owner.replica.store.write { db in
            for e in h.envelopes where e.run != nil {
                try db.execute(
                    rawSQL: """
                        UPDATE envelopes SET run_id = NULL, payload = x'\(hexString(e.payload))',
                          signature = x'\(hexString(e.signature))'
                        WHERE seq = \(e.seq)
                        """)
            }
            try db.execute(rawSQL: "DELETE FROM envelope_runs")
        }
        #expect(try rowCounts(owner) == .init(runs: 0, runsWithLeaves: 0, items: 0, itemsWithPath: 0))
        #expect(try owner.holdings(group).envelopes.map(\.encoded) == h.envelopes.map(\.encoded))
        try owner.send(group, to: reader)
        #expect(try reader.holdings(group).envelopes.map(\.encoded) == h.envelopes.map(\.encoded))
        #expect(try reader.hashes(group) == owner.hashes(group))
    }

    struct RowCounts: Equatable {
        let runs, runsWithLeaves, items, itemsWithPath: Int
    }

    private func rowCounts(_ r: TestReplica) throws -> RowCounts {
        try r.replica.store.read { db in
            RowCounts(
                runs: try db.count(rawSQL: "SELECT COUNT(*) FROM envelope_runs"),
                runsWithLeaves: try db.count(rawSQL: "SELECT COUNT(*) FROM envelope_runs WHERE leaves IS NOT NULL"),
                items: try db.count(rawSQL: "SELECT COUNT(*) FROM envelopes WHERE run_id IS NOT NULL"),
                itemsWithPath: try db.count(
                    rawSQL: "SELECT COUNT(*) FROM envelopes WHERE run_id IS NOT NULL AND length(payload) > 0"))
        }
    }

    @Test func aForkedRunIsRejectedLikeAForkedSingleEnvelope() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try owner.replica.createGroup(name: "g")
        try owner.replica.appendBatch((0..<3).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        try owner.send(group, to: reader)
        let h = try owner.holdings(group)
        // The sequencer's key signs a second run claiming another receipt at seq 3.
        let rogue = try handmade(owner.device, group: group, counter: 9, op: .entityPut(key: "x", value: .int(1)))
        let fork = try EnvelopeRun.sign(
            group: group, firstSeq: 2, receipts: [h.envelopes[1].receipt, rogue.cid], term: 0, receivedAt: 1,
            key: owner.device.signingKey)
        #expect(fork.allSatisfy { $0.verify() == .valid })
        let report = try reader.replica.ingest(receipts: [rogue], envelopes: fork)
        #expect(report.rejected.contains { $0.reason.contains("conflicting envelope") })
        #expect(report.duplicates >= 1)
        #expect(try reader.replica.log(of: group, view: .committed).map(\.receipt.cid) == h.envelopes.map(\.receipt))
    }

    @Test func aTamperedRunItemIsRejectedAndTheRestCommit() throws {
        let owner = try TestReplica("owner")
        let reader = try TestReplica("reader")
        let group = try owner.replica.createGroup(name: "g")
        try owner.replica.appendBatch((0..<4).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        let h = try owner.holdings(group)
        var envelopes = h.envelopes
        // Seq 5 claims seq 4's receipt under its own path.
        let e = envelopes[4]
        let forged = try Envelope(
            payload: CBOREncoder.encode(
                .textMap([
                    "v": 1, "run": .bytes(e.run!.payload), "seq": .unsigned(e.seq),
                    "cid": envelopes[3].receipt.cborLink, "path": .array(e.path.map(CBOR.bytes)),
                ])),
            signature: e.signature)
        envelopes[4] = forged
        let report = try reader.replica.ingest(receipts: h.receipts, envelopes: envelopes)
        #expect(report.rejected.contains { $0.reason.contains("Merkle root") })
        #expect(try reader.replica.vector(of: group).committed == 4)
        try owner.send(group, to: reader)
        #expect(try reader.replica.vector(of: group).committed == 5)
    }
}
