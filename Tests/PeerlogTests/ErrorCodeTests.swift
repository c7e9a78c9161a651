import Foundation
import Peerlog
import PeerlogTestSupport
import Testing

/// An app switches on `PeerlogError.code`, never on the text; the text never echoes a value.
@Suite struct ErrorCodeTests {
    enum Reaction: Equatable { case openAnotherGroup, askForAnInvitation, storeElsewhere, archive, showText }

    /// What an app does, decided by the code alone (with a `default:`, as codes may be added).
    static func reaction(to error: PeerlogError) -> Reaction {
        switch error.code {
        case .groupNotFound: .openAnotherGroup
        case .notAMember: .askForAnInvitation
        case .payloadTooLarge: .storeElsewhere
        case .groupDeleted: .archive
        default: .showText
        }
    }

    static func failure(_ body: () async throws -> Void) async -> PeerlogError? {
        do { try await body() } catch let error as PeerlogError { return error } catch {
            Issue.record("not a PeerlogError: \(error)")
        }
        return nil
    }

    /// Review B9: exporting a compacted group says the log is incomplete, not that a rule refused.
    @Test func exportingACompactedGroupIsLogIncompleteNotRefused() async throws {
        let alice = try await Peerlog.temporary(deviceName: "alice")
        let group = try await alice.createGroup(named: "compacted")
        for i in 0..<20 { _ = try await alice.put("k\(i % 3)", i, in: group) }
        _ = try await alice.makeSnapshot(of: group)
        let compaction = try await alice.compact(group)
        let floor = try await alice.floor(of: group)
        #expect(compaction != nil && floor > 0)
        let file = NSTemporaryDirectory() + "peerlog-compacted-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let export = await Self.failure { _ = try await alice.export(group: group, to: file) }
        #expect(export?.code == .logIncomplete, "\(String(describing: export))")
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    @Test func anAppSwitchesOnTheCodesOfRealFailures() async throws {
        let alice = try await Peerlog.temporary(deviceName: "alice")
        let bob = try await Peerlog.temporary(deviceName: "bob")
        let group = try await alice.createGroup(named: "shared")
        let secret = "s3cret-value-\(UUID().uuidString)"

        let unknown = await Self.failure { try await bob.put("k", secret, in: group) }
        #expect(unknown.map(Self.reaction) == .openAnotherGroup, "\(String(describing: unknown))")

        // Bob holds the group (imported) but was never invited.
        let file = NSTemporaryDirectory() + "peerlog-codes-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: file) }
        _ = try await alice.export(group: group, to: file)
        _ = try await bob.import(from: file)
        let outsider = await Self.failure { try await bob.put("k", secret, in: group) }
        #expect(outsider.map(Self.reaction) == .askForAnInvitation, "\(String(describing: outsider))")

        let huge = secret + String(repeating: "x", count: Peerlog.maxPayloadBytes)
        let tooLarge = await Self.failure { try await alice.put("k", huge, in: group) }
        #expect(tooLarge.map(Self.reaction) == .storeElsewhere, "\(String(describing: tooLarge))")
        let batch = await Self.failure {
            try await alice.putBatch([.put(key: "a", value: .int(1)), .put(key: "b", value: .text(huge))], in: group)
        }
        #expect(batch?.code == .payloadTooLarge && batch?.batchEntry?.index == 1, "\(String(describing: batch))")

        try await alice.deleteGroup(group)
        let deleted = await Self.failure { try await alice.put("k", secret, in: group) }
        #expect(deleted.map(Self.reaction) == .archive, "\(String(describing: deleted))")

        for error in [unknown, outsider, tooLarge, batch, deleted] {
            #expect(
                error.map { !"\($0)".contains("s3cret") } == true,
                "a description never echoes the value: \(String(describing: error))")
        }
    }

    @Test func equalityIsOnTheCodeAlone() {
        let one = PeerlogError(.notAMember, "one sentence")
        let other = PeerlogError(.notAMember, "another sentence")
        #expect(one == other && one.line != other.line && one.file.hasSuffix("ErrorCodeTests.swift"))
        #expect(one != PeerlogError(.groupDeleted, "one sentence"))
        #expect(Set([one, other]).count == 1)
        #expect(PeerlogError.Code.payloadTooLarge.description == "payloadTooLarge")
    }
}
