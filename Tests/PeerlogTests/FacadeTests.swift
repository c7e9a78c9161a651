import Foundation
import Peerlog
import PeerlogTestSupport
import Testing

@Suite struct FacadeTests {
    struct Note: Codable, Equatable {
        var title: String
        var done: Bool
        var tags: [String]
    }

    @Test func codableValuesRoundTripAndFloatsAreRefusedWithOneClearError() async throws {
        let log = try await Peerlog.temporary()
        let group = try await log.createGroup(named: "notes")
        let note = Note(title: "milk", done: false, tags: ["shop"])
        try await log.put("note/1", note, in: group)
        #expect(try await log.get("note/1", as: Note.self, in: group) == note)
        let refused = await #expect(throws: PeerlogError.self) { try await log.put("price", 1.5, in: group) }
        #expect(refused?.code == .invalidValue)
        #expect(refused?.description.contains("floating-point") == true)
        #expect(try await log.keys(in: group) == ["note/1"], "nothing was written")
        await #expect(throws: PeerlogError.self) { _ = try await log.get("note/1", as: Int.self, in: group) }
    }

    @Test func keysAndPrefixScansAreInKeyOrder() async throws {
        let log = try await Peerlog.temporary()
        let group = try await log.createGroup(named: "g")
        try await log.putBatch(
            [(key: "b/2", value: 2), (key: "a/1", value: 1), (key: "b/1", value: 3), (key: "c", value: nil as Int?)],
            in: group)
        #expect(try await log.keys(in: group) == ["a/1", "b/1", "b/2"])
        #expect(try await log.entries(in: group, prefix: "b/").map(\.key) == ["b/1", "b/2"])
        #expect(try await log.entries(in: group, prefix: "b/").allSatisfy { !$0.isTentative && $0.seq != nil })
    }

    @Test func unknownGroupsAndRefusedWritesSayWhy() async throws {
        let log = try await Peerlog.temporary()
        let other = try await Peerlog.temporary()
        let theirs = try await other.createGroup(named: "theirs")
        let missing = await #expect(throws: PeerlogError.self) { try await log.put("k", "v", in: theirs) }
        #expect(missing?.code == .groupNotFound)
        let group = try await log.createGroup(named: "mine")
        try await log.deleteGroup(group)
        let refused = await #expect(throws: PeerlogError.self) { try await log.put("k", "v", in: group) }
        #expect(refused?.code == .groupDeleted)
        let absent = await #expect(throws: PeerlogError.self) {
            _ = try await Peerlog.open(home: NSTemporaryDirectory() + "no-such-\(UUID())", create: false)
        }
        #expect(absent?.code == .home)
    }

    @Test func aDeviceNameOverTheLimitIsOneClearErrorAndCreatesNothing() async throws {
        let home = NSTemporaryDirectory() + "peerlog-name-\(UUID())"
        defer { try? FileManager.default.removeItem(atPath: home) }
        // 63 ASCII bytes then a 4-byte character: 67 bytes, over the 64 a certificate holds.
        let name = String(repeating: "a", count: 63) + "🙂"
        let refused = await #expect(throws: PeerlogError.self) {
            _ = try await Peerlog.open(home: home, deviceName: name)
        }
        #expect(refused?.code == .home)
        #expect(!FileManager.default.fileExists(atPath: home + "/replica.sqlite"))
        let log = try await Peerlog.open(home: home, deviceName: String(repeating: "a", count: 60) + "🙂")
        #expect(log.deviceName.utf8.count == 64)
    }

    @Test func groupsListNamesRolesAndCounts() async throws {
        let log = try await Peerlog.temporary()
        let group = try await log.createGroup(named: "team")
        try await log.put("k", 1, in: group)
        let listed = try await log.groups()  // seq 3: created, the first epoch key, the put
        #expect(listed.map(\.name) == ["team"])
        #expect(
            listed.first?.role == .owner && listed.first?.memberCount == 1 && listed.first?.committedSeq == 3
                && listed.first?.tentativeCount == 0)
        #expect(try await log.group("team").id == group)
    }
}
