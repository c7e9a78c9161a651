import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// The streaming import (docs/PROTOCOL.md §13.2) at its limits, and what it counts.
struct ExportImportTests {
    /// Alice's group with `puts` committed writes, and its export lines.
    static func exported(puts: Int) throws -> (alice: TestReplica, group: GroupID, lines: [String]) {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        for i in 0..<puts { try alice.replica.append(.entityPut(key: "k\(i)", value: .int(Int64(i))), to: group) }
        var lines = [String]()
        try alice.replica.export(group: group) { lines.append($0) }
        return (alice, group, lines)
    }

    static func forged(_ r: Receipt) throws -> Receipt {
        var signature = r.signature
        signature[3] ^= 0x01
        return try Receipt(payload: r.payload, signature: signature, certificate: r.certificate)
    }

    static func line(_ r: Receipt) -> String {
        JSON.object([
            ("kind", .string("receipt")), ("cid", .string(r.cid.string)), ("type", .string(r.type)),
            ("data", .string(hexString(r.encoded))),
        ]).serialized()
    }

    @Test func chunksOfAnySizeImportTheSameAndCountEverythingTaken() throws {
        let (alice, group, lines) = try Self.exported(puts: 7)
        for chunk in [1, 2, 5, 100] {
            var limits = ReplicaLimits()
            limits.importChunkItems = chunk
            let bob = try TestReplica("bob", limits: limits)
            let tally = try bob.replica.importExport(lines: lines)
            #expect(tally.receiptLines == 8 && tally.envelopeLines == 8)
            #expect(tally.stored == 8 && tally.committed == 8 && tally.everythingTaken, "chunk \(chunk): \(tally)")
            #expect(try bob.hashes(group) == alice.hashes(group))
        }
        // A byte budget smaller than one receipt: one item a chunk, the same result.
        var limits = ReplicaLimits()
        limits.importChunkBytes = 1
        let carol = try TestReplica("carol", limits: limits)
        #expect(try carol.replica.importExport(lines: lines).committed == 8)
        #expect(try carol.hashes(group) == alice.hashes(group))
    }

    /// A chunk boundary inside a batched run waits for the run's last item (§13.1), so an
    /// importer keeps each run's leaves at once and no item row ever holds its path (§10).
    @Test func aChunkTakesTheRestOfABatchedRun() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        try alice.replica.appendBatch((0..<300).map { .entityPut(key: "k\($0)", value: .int(Int64($0))) }, to: group)
        var lines = [String]()
        try alice.replica.export(group: group) { lines.append($0) }
        var limits = ReplicaLimits()
        limits.importChunkItems = 50
        let bob = try TestReplica("bob", limits: limits)
        try bob.countPathsDropped()
        #expect(try bob.replica.importExport(lines: lines).everythingTaken)
        #expect(try bob.hashes(group) == alice.hashes(group))
        let (runs, withLeaves) = try bob.replica.store.read { db in
            (
                try db.count(rawSQL: "SELECT COUNT(*) FROM envelope_runs"),
                try db.count(rawSQL: "SELECT COUNT(*) FROM envelope_runs WHERE leaves IS NOT NULL")
            )
        }
        #expect(runs == 2 && withLeaves == 2)
        #expect(try bob.pathsDropped() == 0)
        #expect(try bob.holdings(group).envelopes.map(\.encoded) == alice.holdings(group).envelopes.map(\.encoded))
    }

    /// `maxImportLineBytes` at the longest line's length N: N and N+1 import, N-1 refuses the
    /// whole file naming the line, before anything is written.
    @Test func theLongestLineAtTheLineLimit() throws {
        let (_, group, lines) = try Self.exported(puts: 2)
        let longest = lines.map(\.utf8.count).max()!
        let at = lines.firstIndex { $0.utf8.count == longest }! + 1
        for (limit, accepted) in [(longest - 1, false), (longest, true), (longest + 1, true)] {
            var limits = ReplicaLimits()
            limits.maxImportLineBytes = limit
            let bob = try TestReplica("bob", limits: limits)
            if accepted {
                #expect(try bob.replica.importExport(lines: lines).committed == 3, "limit \(limit)")
            } else {
                let error = #expect(throws: ReplicaError.self) { try bob.replica.importExport(lines: lines) }
                #expect(error?.code == .invalidImport && error?.description.contains("import line \(at)") == true)
                #expect(try bob.replica.groupIDs().contains(group) == false, "nothing written")
            }
        }
    }

    /// Refusals are all counted; `maxListedImportRefusals` of them listed (N-1, N, N+1 forged).
    @Test func refusalsAreCountedAndListedUpToTheLimit() throws {
        let (_, _, lines) = try Self.exported(puts: 4)
        // The put lines (group.created stays genuine).
        let receiptLines = lines.indices.filter { lines[$0].contains(#""kind":"receipt""#) }.dropFirst()
        #expect(receiptLines.count == 4)
        var limits = ReplicaLimits()
        limits.maxListedImportRefusals = 3
        for forgedCount in [2, 3, 4] {
            var copy = lines
            for i in receiptLines.suffix(forgedCount) {  // the newest: nothing after them waits
                guard case .string(let hex)? = try JSON.parse(copy[i])["data"], let data = bytes(fromHex: hex) else {
                    Issue.record("no data in line \(i)")
                    return
                }
                copy[i] = Self.line(try Self.forged(try Receipt(encoded: data)))
            }
            let bob = try TestReplica("bob", limits: limits)
            let tally = try bob.replica.importExport(lines: copy)
            #expect(tally.refused == forgedCount && tally.invalid == forgedCount && !tally.everythingTaken)
            #expect(tally.refusals.count == min(forgedCount, 3), "\(forgedCount) forged: \(tally.refusals)")
            #expect(tally.stored == 5 - forgedCount)
            // A CID remembered as invalid is verified again (docs/PROTOCOL.md §10.1, §13.2): a
            // second import refuses the forgeries again and takes nothing new; the others and
            // their envelopes are held (the forgeries' envelopes wait, uncounted, as before).
            let again = try bob.replica.importExport(lines: copy)
            #expect(again.refused == forgedCount && again.stored == 0, "\(again)")
            #expect(again.duplicates == 2 * (5 - forgedCount), "\(again)")
        }
    }

    @Test func aFileThatChangesBetweenThePassesStopsTheSecond() throws {
        let (_, _, lines) = try Self.exported(puts: 3)
        var limits = ReplicaLimits()
        limits.importChunkItems = 2
        let bob = try TestReplica("bob", limits: limits)
        var pass = 0
        let error = #expect(throws: ReplicaError.self) {
            try bob.replica.importExport { _, take in
                pass += 1
                for (i, line) in lines.enumerated() { try take(pass == 2 && i == 6 ? "{not json" : line) }
            }
        }
        #expect(error?.description.contains("changed after it was checked") == true, "\(String(describing: error))")
        // The chunks before the change were taken; a clean import completes the rest.
        let rest = try bob.replica.importExport(lines: lines)
        #expect(rest.duplicates > 0 && rest.everythingTaken)
    }
}
