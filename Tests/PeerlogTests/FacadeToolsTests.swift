import Foundation
import Peerlog
import PeerlogTestSupport
import Synchronization
import Testing

/// The facade calls the CLI's data and group commands stand on: writes with their receipts,
/// raw batches, check, export and import, sequencer authorities from words.
@Suite struct FacadeToolsTests {
    static func scratchFile(_ name: String) -> String {
        NSTemporaryDirectory() + "peerlog-\(name)-\(UUID().uuidString)"
    }

    @Test func writesReportTheirReceiptAndGroupsResolveByName() async throws {
        let log = try await Peerlog.temporary()
        let group = try await log.createGroup(named: "team", maxMembers: 5)
        let write = try await log.put("k", cbor: .text("v"), in: group)
        #expect(write.type == "entity.put" && write.seq != nil && !write.isTentative)
        let entry = try #require(try await log.entry("k", in: group))
        #expect(entry.cid == write.cid && entry.seq == write.seq)
        #expect(try await log.groupID("team") == group)
        #expect(try await log.groupID(group.string) == group)
        let unknown = await #expect(throws: PeerlogError.self) { _ = try await log.groupID("nope") }
        #expect(unknown?.code == .groupNotFound)
        let other = try await Peerlog.temporary().createGroup(named: "elsewhere")
        let missing = await #expect(throws: PeerlogError.self) { _ = try await log.groupID(other.string) }
        #expect(missing?.description == "this replica holds no group \(other) (import an export of it first)")

        let summary = try #require(try await log.group(group, view: .committed))
        #expect(
            summary.maxMembers == 5 && summary.createdBy == log.identity && summary.sequencer == .solo(log.deviceID))
        let progress = try await log.progress(of: group)
        // group.created, the first epoch key (groups are encrypted by default), the put.
        #expect(progress.committedSeq == 3 && progress.tentativeCount == 0)
        let items = try await log.log(of: group)
        #expect(items.map(\.type) == ["group.created", "group.key", "entity.put"])
        #expect(items.map(\.counter) == [1, 2, 3] && items.last?.plaintext != nil && items.allSatisfy { $0.time > 0 })
        #expect(try await log.members(of: group).map(\.seq) == [1])
        #expect(try await log.stateHash(of: group, view: .committed).count == 32)
        #expect(try await log.deadLetters().isEmpty)
        #expect(try await log.invalidReceipts().isEmpty)
    }

    @Test func aRefusedRawBatchNamesItsOperationAndWritesNothing() async throws {
        let log = try await Peerlog.temporary()
        let group = try await log.createGroup(named: "g")
        let big = CBOR.text(String(repeating: "x", count: Peerlog.maxPayloadBytes))
        let refused = await #expect(throws: PeerlogError.self) {
            try await log.putBatch(
                [.put(key: "a", value: .int(1)), .put(key: "b", value: big), .delete(key: "c")], in: group)
        }
        #expect(refused?.code == .payloadTooLarge && refused?.batchEntry?.index == 1)
        #expect(refused?.description.hasPrefix("b: ") == true)
        #expect(try await log.keys(in: group).isEmpty)
        let writes = try await log.putBatch([.put(key: "a", value: .int(1)), .delete(key: "a")], in: group)
        #expect(writes.map(\.type) == ["entity.put", "entity.delete"] && writes.allSatisfy { $0.seq != nil })
    }

    @Test func checkFindsAConsistentStore() async throws {
        let log = try await Peerlog.temporary()
        let first = try await log.createGroup(named: "one")
        let second = try await log.createGroup(named: "two")
        try await log.put("k", 1, in: first)
        try await log.putBatch([(key: "a", value: "x"), (key: "b", value: nil)], in: second)
        let report = try await log.check()
        #expect(report.integrity == "ok" && report.isConsistent)
        #expect(Set(report.groups.map(\.group)) == [first, second])
        for g in report.groups {
            #expect(g.committedMatches && g.materialized.count == 32 && g.isConsistent)
            if case .mismatch = g.tentative { Issue.record("tentative view differs: \(g.tentative)") }
        }
        #expect(report.groups.first { $0.group == first }?.committedSeq == 3, "created, key, put")
        #expect(report.parentLinkMismatch == nil)
    }

    @Test func exportAndImportCarryAGroupToAnotherReplica() async throws {
        let alice = try await Peerlog.temporary(deviceName: "alice")
        let bob = try await Peerlog.temporary(deviceName: "bob")
        // Plaintext: Bob, invited but not a member yet, reads it (an encrypted group's values wait
        // for a key: EncryptedGroupCLITests).
        let group = try await alice.createGroup(named: "shared", encrypted: false)
        try await alice.invite(bob.identity, to: group, as: .admin)
        try await alice.put("k", "v", in: group)
        let file = Self.scratchFile("export")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let counts = try await alice.export(group: group, to: file)
        #expect(counts.receipts == 3 && counts.envelopes == 3)
        let again = await #expect(throws: PeerlogError.self) { _ = try await alice.export(group: group, to: file) }
        #expect(again?.code == .file && again?.description == "\(file) already exists; refusing to overwrite it")

        let report = try await bob.import(from: file)
        #expect(
            report.stored == 3 && report.committed == 3 && report.duplicates == 0 && report.everythingTaken,
            "\(report)")
        #expect(try await bob.invitations().map(\.invitedRole) == [.admin])
        for view in [View.committed, .tentative] {
            let (theirs, mine) = (
                try await bob.stateHash(of: group, view: view), try await alice.stateHash(of: group, view: view)
            )
            #expect(theirs == mine)
        }
        #expect(try await bob.get("k", as: String.self, in: group) == "v")
        let twice = try await bob.import(from: file)
        #expect(twice.stored == 0 && twice.duplicates > 0, "\(twice)")
    }

    /// Progress reaches the end of each phase: the export's lines, then the file's bytes twice
    /// (checked, then applied).
    @Test func exportAndImportReportProgressToTheEndOfEachPhase() async throws {
        let alice = try await Peerlog.temporary()
        let bob = try await Peerlog.temporary()
        let group = try await alice.createGroup(named: "g")
        try await alice.put("k", 1, in: group)
        let file = Self.scratchFile("progress")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let seen = Mutex<[PeerlogTransferProgress]>([])
        let counts = try await alice.export(group: group, to: file) { p in seen.withLock { $0.append(p) } }
        let lines = 1 + counts.receipts + counts.envelopes
        #expect(seen.withLock { $0.map(\.phase) } == [.exporting])
        #expect(seen.withLock { $0.map(\.completed) } == [lines] && seen.withLock { $0.map(\.total) } == [lines])
        seen.withLock { $0 = [] }
        let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? -1
        let report = try await bob.import(from: file) { p in seen.withLock { $0.append(p) } }
        #expect(report.everythingTaken && report.receipts == counts.receipts && report.envelopes == counts.envelopes)
        #expect(seen.withLock { $0.map(\.phase) } == [.checking, .applying])
        #expect(
            seen.withLock { $0.map(\.completed) } == [size, size] && seen.withLock { $0.map(\.total) } == [size, size])
    }

    @Test func aMalformedImportIsRefusedWholeWithItsLineNumber() async throws {
        let alice = try await Peerlog.temporary()
        let bob = try await Peerlog.temporary()
        let group = try await alice.createGroup(named: "g")
        try await alice.put("k", 1, in: group)
        let good = Self.scratchFile("good")
        let bad = Self.scratchFile("bad")
        defer { for f in [good, bad] { try? FileManager.default.removeItem(atPath: f) } }
        _ = try await alice.export(group: group, to: good)
        var lines = try String(contentsOfFile: good, encoding: .utf8).components(separatedBy: "\n")
        lines.insert("", at: 1)  // an empty line still counts
        lines[3] = "{not json"
        try lines.joined(separator: "\n").write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = await #expect(throws: PeerlogError.self) { _ = try await bob.import(from: bad) }
        #expect(
            refused?.code == .file && refused?.description.hasPrefix(bad + ": ") == true
                && refused?.description.contains("line 4") == true)
        #expect(try await bob.groupIDs().isEmpty)
        let absent = await #expect(throws: PeerlogError.self) { _ = try await bob.import(from: bad + ".missing") }
        #expect(absent?.code == .file)
    }

    @Test func sequencerAuthoritiesFromWords() async throws {
        let a = try await Peerlog.temporary()
        let b = try await Peerlog.temporary()
        let (x, y) = (a.deviceID, b.deviceID)
        #expect(try SequencerAuthority(kind: "solo", arguments: [x.string]) == .solo(x))
        #expect(
            try SequencerAuthority(kind: "elected", arguments: [y.string, x.string])
                == .elected(voters: [x, y].sorted()))
        #expect(
            try SequencerAuthority(kind: "relay", arguments: ["127.0.0.1:7400", y.string])
                == .relay(key: y, address: "127.0.0.1:7400"))
        #expect(try SequencerAuthority.elected(among: [y, x]) == .elected(voters: [x, y].sorted()))
        let cases: [(String, [String], String)] = [
            ("elected", [x.string, x.string], "a voter is listed twice"),
            ("elected", [], "elected takes 1 to \(Peerlog.maxVoters) voter devices"),
            (
                "elected", Array(repeating: x.string, count: Peerlog.maxVoters + 1),
                "elected takes 1 to \(Peerlog.maxVoters) voter devices"
            ),
            ("solo", [], "solo takes one device"),
            ("relay", [x.string], "relay takes ADDRESS KEY"),
            ("leader", [x.string], "the sequencer is solo, elected or relay, not leader"),
        ]
        for (kind, words, message) in cases {
            let error = #expect(throws: PeerlogError.self) { _ = try SequencerAuthority(kind: kind, arguments: words) }
            #expect(error?.code == .invalidValue && error?.description == message, "\(kind) \(words)")
        }
        let notDevice = #expect(throws: PeerlogError.self) {
            _ = try SequencerAuthority(kind: "solo", arguments: ["nope"])
        }
        #expect(notDevice?.description.hasPrefix("nope is not a device id") == true)
        #expect(throws: PeerlogError.self) { _ = try SequencerAuthority.elected(among: [x, x]) }

        let group = try await a.createGroup(named: "g")
        try await a.setSequencer(of: group, to: try SequencerAuthority(kind: "elected", arguments: [x.string]))
        #expect(try await a.group(group)?.sequencer == .elected(voters: [x]))
    }
}
